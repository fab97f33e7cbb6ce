/* SPDX-License-Identifier: MIT */
/*
 * The symbolizer made and freed, the order in which a frame's sources of names
 * are asked (stored, kernel, perf maps, native plug-in, module files), a frame
 * resolved again when its sources changed, and the stats.
 */
#include "symbols/symbolizer.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sp_symbolizer_new(const struct sp_spool *s, const struct sp_symbolizer_opts *opts,
		      struct sp_symbolizer **out)
{
	if (!s || !out || (opts && (opts->perf_map_policy > SP_PERF_MAPS_PIDS ||
				    opts->stored_symbols > SP_STORED_NONE)))
		return -SP_E_BAD_ARG;
	struct sp_symbolizer *sym = calloc(1, sizeof(*sym));
	if (!sym)
		return -ENOMEM;
	int err = -ENOMEM;
	sym->spool = s;
	if (opts)
		sym->opts = *opts;
	sp_arena_init(&sym->strings);
	sym->chains.inline_frames = &sym->stats.inline_frames;
	sym->chains.inline_cut = &sym->stats.inline_frames_cut;
	sp_sym_elf_init(&sym->elf, s, &sym->opts, &sym->strings, &sym->stats);
	sp_sym_stored_init(&sym->stored_names, s, &sym->opts, &sym->stats, &sym->chains);
	sp_sym_perf_maps_init(&sym->perf_maps, s, &sym->opts, &sym->strings, &sym->stats,
			      &sym->follow);
	sp_map_init(&sym->elf.file_keys);
	sp_pid_ids_init(&sym->follow.modules);
	sp_pid_ids_init(&sym->follow.map_deps);
	/* The caller's strings need not outlive this call. */
	if (sym->opts.kallsyms_path &&
	    !(sym->opts.kallsyms_path = sp_arena_strndup(&sym->strings, sym->opts.kallsyms_path,
							  strlen(sym->opts.kallsyms_path))))
		goto fail;
	sp_sym_kernel_init(&sym->kernel, s, &sym->opts, &sym->strings, &sym->stats);
	if (!sym->opts.perf_map_dir)
		sym->opts.perf_map_dir = DEFAULT_PERF_MAP_DIR;
	else if (!(sym->opts.perf_map_dir = sp_arena_strndup(&sym->strings,
							       sym->opts.perf_map_dir,
							       strlen(sym->opts.perf_map_dir))))
		goto fail;
	sym->nsamples = sp_spool_sample_count(s);
	sym->nstacks = sp_spool_stack_count(s);
	if (sp_sym_take_frames(sym, sp_spool_frame_count(s)))
		goto fail;
	/* Stored names are demangled: --no-demangle needs the files. */
	if (sym->opts.stored_symbols != SP_STORED_NONE && !sym->opts.no_demangle &&
	    sp_symstore_index(s, &sym->stored_names.by_frame))
		goto fail;

	/*
	 * Separate debug files are looked for by find_debuginfo below, which
	 * counts the candidates it refuses; libdwfl's own search (this path:
	 * the user's directories, beside the file, .debug/, /usr/lib/debug)
	 * serves only DWARF alternate files (dwz) and, when DEBUGINFOD_URLS is
	 * set, debuginfod.
	 */
	const char *dirs = sym->opts.debug_dirs ? sym->opts.debug_dirs
						: getenv("STACKPULSE_DEBUG_DIRS");
	if (dirs && *dirs) {
		if (!(sym->elf.debug_dirs = sp_arena_strndup(&sym->strings, dirs, strlen(dirs))))
			goto fail;
		if (asprintf(&sym->elf.debuginfo_path, "%s:%s", dirs, DEFAULT_DEBUG_PATH) < 0) {
			sym->elf.debuginfo_path = NULL;
			goto fail;
		}
	} else if (!(sym->elf.debuginfo_path = strdup(DEFAULT_DEBUG_PATH))) {
		goto fail;
	}
	sym->opts.debug_dirs = sym->elf.debug_dirs;
	sym->elf.cache_dir = sp_debug_cache_dir(sym->opts.cache_dir);
	sym->opts.cache_dir = NULL;
	const char *invalid;
	sym->stats.cache_max_bytes = sym->elf.cache_max =
		sp_cache_max_bytes(sym->opts.cache_max_bytes, &invalid);
	if (invalid &&
	    !(sym->stats.cache_size_invalid = sp_arena_strndup(&sym->strings, invalid,
								strlen(invalid))))
		goto fail;
	/*
	 * Root must not read or write through another user's directory: the
	 * cache and the subdirectories already in it are checked before any use.
	 */
	if (sym->elf.cache_dir) {
		static const char *const sub[] = {"symbols", "debug"};
		const char *why = NULL;
		size_t which;
		int r = sp_cache_dir_check_tree(sym->elf.cache_dir, sub, SP_ARRAY_SIZE(sub), &which,
						&why);
		if (r && r != -ENOENT) {
			char *path = NULL;
			if (asprintf(&path, "%s%s%s", sym->elf.cache_dir, which ? "/" : "",
				     which ? sub[which - 1] : "") < 0)
				goto fail;
			sym->stats.cache_dir_refused = sym->elf.cache_dir_refused = path;
			sym->stats.cache_dir_refusal = why ? why : "cannot be read";
			free(sym->elf.cache_dir);
			sym->elf.cache_dir = NULL;
		}
	}
	const char *urls = getenv("DEBUGINFOD_URLS");
#ifdef SP_NO_DEBUGINFOD
	(void)urls; /* built with configure --disable-debuginfod */
	sym->elf.debuginfod = false;
#else
	sym->elf.debuginfod = urls && *urls;
#endif
	sym->elf.callbacks = (Dwfl_Callbacks){
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = sp_sym_find_debuginfo,
		.section_address = dwfl_offline_section_address,
		.debuginfo_path = &sym->elf.debuginfo_path,
	};
	err = sp_sym_take_modules(sym, sp_spool_module_count(s));
	if (!err)
		err = sp_sym_setup_perf_map_pids(&sym->perf_maps, &sym->opts);
	if (!err)
		err = sp_sym_setup_native(&sym->native, s, &sym->opts, &sym->strings, &sym->stats,
					  &sym->chains, sym->nmodules);
	if (err)
		goto fail;
	sp_elf_init();
	*out = sym;
	return 0;
fail:
	sp_symbolizer_free(sym);
	return err;
}

void sp_symbolizer_free(struct sp_symbolizer *sym)
{
	if (!sym)
		return;
	for (size_t i = 0; i < sym->elf.nfiles; i++) {
		struct file_entry *f = &sym->elf.files[i];
		if (f->symcache_new)
			sp_sym_symcache_save(&sym->elf, f);
		free(f->fhits);
		if (f->dwfl)
			dwfl_end(f->dwfl);
		sp_elf_info_release(&f->info);
		sp_symtab_release(&f->symtab);
		sp_map_release(&f->cache);
		sp_map_release(&f->cu_index);
		free(f->cu_ranges);
		if (f->given_fd)
			close(f->given_fd - 1);
		free(f->map_files);
		free(f->go);
	}
	/* Its files closed, what they inflated is no longer held. */
	sp_budget_account_release(&sym->elf.budget);
	for (size_t i = 0; i < sym->elf.ncus; i++)
		free(sym->elf.cus[i].r);
	free(sym->elf.cus);
	free(sym->elf.files);
	sp_map_release(&sym->elf.file_keys);
	free(sym->module_file);
	free(sym->module_name);
	for (size_t i = 0; i < sym->nframe_blocks; i++)
		free(sym->frame_blocks[i]);
	free(sym->frame_blocks);
	free(sym->resolved);
	free(sym->chains.by_frame);
	free(sym->chains.len);
	for (struct chain_block *b = sym->chains.blocks, *next; b; b = next) {
		next = b->next;
		free(b);
	}
	free(sym->elf.hits);
	free(sym->elf.src);
	sp_sym_kernel_release(&sym->kernel);
	sp_sym_perf_maps_release(&sym->perf_maps);
	free(sym->frame_pid);
	free(sym->stack_pid);
	sp_pid_ids_release(&sym->follow.modules);
	sp_pid_ids_release(&sym->follow.map_deps);
	free(sym->follow.counted);
	sp_native_groups_free(sym->native.groups);
	sp_stack_cache_free(sym->stacks);
	free(sym->stored_names.by_frame);
	free(sym->frame_src);
	free(sym->elf.debuginfo_path);
	free(sym->elf.cache_dir);
	free(sym->elf.cache_dir_refused);
	sp_arena_release(&sym->strings);
	free(sym);
}

void sp_symbolizer_renew_budgets(struct sp_symbolizer *sym)
{
	if (sym)
		sp_budget_account_renew(&sym->elf.budget);
}

void sp_symbolizer_stats(const struct sp_symbolizer *sym, struct sp_symbolizer_stats *out)
{
	*out = sym->stats;
	out->debug_files_over_crc_budget = sym->elf.budget.crc_refused;
	out->debug_files_over_untrusted_crc_budget = sym->elf.budget.crc_refused_untrusted;
	out->debug_file_untrusted_why = sym->elf.budget.crc_refused_untrusted
						? sym->elf.budget.crc_untrusted_why : NULL;
	sp_stack_cache_add_stats(sym->stacks, out);
}

/*
 * Give a named native frame what DWARF knows of its address: the source
 * position of the containing function (rf), and unless no_inline, the
 * chain of inlined functions before it.
 */
static int attach_source(struct sp_symbolizer *sym, uint32_t frame_id,
			 struct sp_resolved_frame *rf, const struct sym_hit *hit)
{
	if (!hit->nsrc)
		return 0;
	const struct src_entry *src = &sym->elf.src[hit->src];
	size_t n = hit->nsrc;
	rf->file = src[n - 1].file;
	rf->line = src[n - 1].line;
	if (rf->file && rf->line)
		sym->stats.frames_with_lines++;
	if (n == 1 || sym->opts.no_inline)
		return 0;
	struct sp_resolved_frame *c = sp_sym_chain_alloc(&sym->chains, n);
	if (!c)
		return -ENOMEM;
	for (size_t i = 0; i + 1 < n; i++) {
		c[i] = *rf;
		c[i].name = src[i].name;
		c[i].file = src[i].file;
		c[i].line = src[i].line;
		c[i].flags |= SP_RFRAME_INLINE;
		c[i].symbol_offset = 0;
	}
	c[n - 1] = *rf;
	sp_sym_chain_set(&sym->chains, frame_id, c, n);
	return 0;
}

static int resolve_user(struct sp_symbolizer *sym, uint32_t frame_id, const struct sp_frame *fr,
			struct sp_resolved_frame *rf)
{
	if (fr->module_id == SP_NO_MODULE || fr->module_id >= sym->nmodules) {
		/* Code outside every recorded mapping may still be a runtime's, named in its map. */
		if (!sym->frame_pid) {
			int err = sp_sym_compute_frame_pids(sym);
			if (err)
				return err;
		}
		int32_t pid = sym->frame_pid[frame_id];
		if (pid != PID_NONE && pid != PID_MANY) {
			int err = sp_sym_resolve_perf_map(&sym->perf_maps, pid, frame_id, fr, false, rf);
			if (err || rf->origin == SP_ORIGIN_PERF_MAP)
				return err;
		}
		rf->kind = SP_KIND_UNKNOWN;
		rf->module = "[unknown]";
		rf->name = sp_arena_printf(&sym->strings, "[unknown]+0x%" PRIx64, fr->abs_ip);
		return rf->name ? 0 : -ENOMEM;
	}
	const struct sp_module *m = sp_spool_module(sym->spool, fr->module_id);
	if (m && (m->flags & SP_MODULE_KERNEL))
		return sp_sym_resolve_kernel(&sym->kernel, sym->nframes, frame_id, fr, rf);
	rf->module = sym->module_name[fr->module_id];
	if (m && (m->flags & SP_MODULE_ANON)) {
		int err = sp_sym_resolve_perf_map(&sym->perf_maps, m->pid, frame_id, fr, true, rf);
		if (err || rf->origin == SP_ORIGIN_PERF_MAP)
			return err;
	}
	if (sym->native.groups && m && sp_sym_has_file(m)) {
		int err = sp_sym_resolve_native(&sym->native, frame_id, fr, rf);
		if (err || rf->origin == SP_ORIGIN_ELF)
			return err;
	}
	/* A plug-in replaces the built-in ELF/DWARF backend for every module. */
	uint32_t fi = sym->native.groups ? NO_FILE : sym->module_file[fr->module_id];
	if (m && fi != NO_FILE) {
		struct file_entry *f = &sym->elf.files[fi];
		if (f->state == FILE_UNOPENED)
			sp_sym_open_file(&sym->elf, f);
		uint64_t svma;
		if (f->state == FILE_PROVEN && sp_sym_frame_svma(m, f, fr, &svma)) {
			const struct sym_hit *hit;
			int err = sp_sym_lookup_symbol(&sym->elf, f, svma, &hit);
			if (err)
				return err;
			if (hit->name) {
				rf->name = hit->name;
				rf->symbol_offset = hit->offset;
				rf->origin = SP_ORIGIN_ELF;
				return attach_source(sym, frame_id, rf, hit);
			}
		}
	}
	/* Module-relative, so the same code reads the same in every process. */
	rf->name = sp_arena_printf(&sym->strings, "%s+0x%" PRIx64, rf->module, fr->rel_ip);
	return rf->name ? 0 : -ENOMEM;
}

/*
 * Names from symbol tables, perf maps and spools are chosen by whoever wrote
 * them and go on to terminals: escape control characters once, here, so every
 * view and export shows the same safe text (util.h, sp_arena_printable).
 * Names stored in the spool were escaped when `symbolize` stored them: their
 * backslashes are kept (sp_arena_printable_escaped), not escaped a second time.
 */
static int printable_frame(struct sp_symbolizer *sym, struct sp_resolved_frame *rf, bool stored)
{
	const char **text[] = {&rf->name, &rf->module, &rf->file};
	for (size_t i = 0; i < SP_ARRAY_SIZE(text); i++) {
		const char *t = *text[i];
		/*
		 * Module names and source files come back frame after frame: a
		 * string found printable is remembered by address (what the
		 * symbolizer hands out keeps its address and bytes until it is
		 * freed), so it is read once.  Only sp_arena_printable's verdict
		 * is remembered: a stored name's backslash would not pass it.
		 */
		size_t slot = ((uintptr_t)t >> 3) % SP_ARRAY_SIZE(sym->printable_seen);
		if (!t || sym->printable_seen[slot] == t)
			continue;
		*text[i] = stored ? sp_arena_printable_escaped(&sym->strings, t)
				  : sp_arena_printable(&sym->strings, t);
		if (!*text[i])
			return -ENOMEM;
		if (*text[i] == t && !stored)
			sym->printable_seen[slot] = t;
	}
	return 0;
}

/* Resolve frame_id into its place (sp_sym_frame, and sym->chains), once. */
static int resolve_frame(struct sp_symbolizer *sym, uint32_t frame_id)
{
	struct sp_resolved_frame *rf = sp_sym_frame(sym, frame_id);
	const struct sp_frame *fr = sp_spool_frame(sym->spool, frame_id);
	if (!fr)
		return -SP_E_BAD_ARG;
	*rf = (struct sp_resolved_frame){
		.module = "",
		.kind = SP_KIND_NATIVE,
		.origin = SP_ORIGIN_ADDRESS_ONLY,
		.pc = fr->abs_ip,
	};
	int err = 0;
	bool stored = false;
	if (fr->mode != SP_FRAME_TRUNCATED && sym->stored_names.by_frame) {
		err = sp_sym_resolve_stored(&sym->stored_names, frame_id, rf, &sym->frame_src[frame_id],
					    &stored);
		if (err)
			return err;
	}
	if (!sym->frame_src[frame_id])
		sym->frame_src[frame_id] = SP_FRAME_SRC_LIVE;
	if (fr->mode == SP_FRAME_TRUNCATED) {
		rf->name = "[truncated]";
		rf->kind = SP_KIND_TRUNCATED;
		rf->flags = SP_RFRAME_TRUNCATED;
	} else if (!stored) {
		err = fr->mode == SP_FRAME_KERNEL
			      ? sp_sym_resolve_kernel(&sym->kernel, sym->nframes, frame_id, fr, rf)
			      : resolve_user(sym, frame_id, fr, rf);
	}
	if (!err && rf->kind == SP_KIND_NATIVE)
		err = sp_sym_flag_python_runtime(sym, frame_id, fr);
	err = err ? err : printable_frame(sym, rf, stored);
	for (size_t i = 0; !err && sym->chains.by_frame[frame_id] && i < sym->chains.len[frame_id];
	     i++)
		err = printable_frame(sym, &sym->chains.by_frame[frame_id][i], stored);
	if (err)
		return err;
	if (rf->kind != SP_KIND_TRUNCATED) {
		if (rf->origin != SP_ORIGIN_ADDRESS_ONLY)
			sym->stats.frames_named++;
		else
			sym->stats.frames_address_only++;
	}
	sym->resolved[frame_id] = 1;
	return 0;
}

int sp_symbolizer_resolve_all(struct sp_symbolizer *sym, uint32_t frame_id,
			      const struct sp_resolved_frame **frames, size_t *n)
{
	if (frame_id >= sym->nframes)
		return -SP_E_BAD_ARG;
	if (!sym->resolved[frame_id]) {
		int err = resolve_frame(sym, frame_id);
		if (err)
			return err;
	}
	if (sym->chains.by_frame[frame_id]) {
		*frames = sym->chains.by_frame[frame_id];
		*n = sym->chains.len[frame_id];
	} else {
		*frames = sp_sym_frame(sym, frame_id);
		*n = 1;
	}
	return 0;
}

static bool same_text(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static bool same_frame(const struct sp_resolved_frame *a, const struct sp_resolved_frame *b)
{
	return same_text(a->name, b->name) && same_text(a->module, b->module) &&
	       same_text(a->file, b->file) && a->line == b->line && a->kind == b->kind &&
	       a->origin == b->origin && a->flags == b->flags && a->pc == b->pc &&
	       a->symbol_offset == b->symbol_offset;
}

/* Take back what resolving frame_id (rf, its chain of n) added to the stats. */
static void uncount_frame(struct sp_symbolizer *sym, uint32_t frame_id,
			  const struct sp_resolved_frame *rf, size_t n)
{
	struct sp_symbolizer_stats *st = &sym->stats;
	bool stored = sym->frame_src[frame_id] == SP_FRAME_SRC_STORED;
	if (rf->kind != SP_KIND_TRUNCATED) {
		if (rf->origin != SP_ORIGIN_ADDRESS_ONLY)
			st->frames_named--;
		else
			st->frames_address_only--;
	}
	st->inline_frames -= n - 1;
	st->frames_with_lines -= rf->file && rf->line;
	st->frames_stored -= stored;
	st->perf_map_frames_named -= rf->origin == SP_ORIGIN_PERF_MAP;
	st->python_runtime_frames -= (rf->flags & SP_RFRAME_PYTHON_RUNTIME) != 0;
	if (rf->kind == SP_KIND_KERNEL && rf->origin == SP_ORIGIN_KERNEL_SYMBOLS)
		st->kernel_frames_named--;
	else if (rf->kind == SP_KIND_KERNEL)
		st->kernel_frames_unnamed--;
	uint8_t *counted = sym->follow.counted ? &sym->follow.counted[frame_id] : NULL;
	if (counted) {
		st->perf_map_frames_denied -= (*counted & COUNTED_MAP_DENIED) != 0;
		st->perf_map_frames_unmapped -= (*counted & COUNTED_MAP_UNMAPPED) != 0;
		*counted = 0;
	}
}

int sp_sym_resolve_again(struct sp_symbolizer *sym, uint32_t frame_id, bool *changed)
{
	*changed = false;
	if (frame_id >= sym->nframes || !sym->resolved[frame_id])
		return 0;
	/* The old chain stays where it is (chains never move): compare with it. */
	struct sp_resolved_frame before = *sp_sym_frame(sym, frame_id);
	const struct sp_resolved_frame *old_chain = sym->chains.by_frame[frame_id];
	size_t old_n = old_chain ? sym->chains.len[frame_id] : 1;
	uncount_frame(sym, frame_id, &before, old_n);
	sym->resolved[frame_id] = 0;
	sym->chains.by_frame[frame_id] = NULL;
	sym->chains.len[frame_id] = 0;
	sym->frame_src[frame_id] = SP_FRAME_SRC_NONE;
	int err = resolve_frame(sym, frame_id);
	if (err)
		return err;
	const struct sp_resolved_frame *now;
	size_t n;
	sp_symbolizer_resolve_all(sym, frame_id, &now, &n);
	if (n != old_n) {
		*changed = true;
		return 0;
	}
	for (size_t i = 0; i < n && !*changed; i++)
		*changed = !same_frame(old_chain ? &old_chain[i] : &before, &now[i]);
	return 0;
}

int sp_symbolizer_resolve(struct sp_symbolizer *sym, uint32_t frame_id,
			  const struct sp_resolved_frame **out)
{
	const struct sp_resolved_frame *frames;
	size_t n;
	int err = sp_symbolizer_resolve_all(sym, frame_id, &frames, &n);
	if (!err)
		*out = &frames[n - 1];
	return err;
}

unsigned sp_symbolizer_frame_src(const struct sp_symbolizer *sym, uint32_t frame_id)
{
	return frame_id < sym->nframes ? sym->frame_src[frame_id] : SP_FRAME_SRC_NONE;
}

int sp_symbolizer_frame_source(const struct sp_symbolizer *sym, uint32_t frame_id,
			       struct sp_frame_source *out)
{
	*out = (struct sp_frame_source){0};
	if (frame_id >= sym->nframes || !sym->resolved[frame_id] ||
	    sym->frame_src[frame_id] == SP_FRAME_SRC_STORED)
		return 0;
	const struct sp_frame *fr = sp_spool_frame(sym->spool, frame_id);
	const struct sp_resolved_frame *rf = sp_sym_frame(sym, frame_id);
	if (rf->origin == SP_ORIGIN_KERNEL_SYMBOLS)
		return sp_sym_kernel_frame_source(&sym->kernel, fr, out);
	if (rf->origin == SP_ORIGIN_PERF_MAP) {
		const struct sp_module *m = fr->module_id == SP_NO_MODULE
						    ? NULL : sp_spool_module(sym->spool, fr->module_id);
		int32_t pid = m ? m->pid : sym->frame_pid ? sym->frame_pid[frame_id] : PID_NONE;
		return sp_sym_perf_map_frame_source(&sym->perf_maps, pid, fr, out);
	}
	return 0;
}
