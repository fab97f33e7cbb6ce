/* SPDX-License-Identifier: MIT */
/* Resolve a spool's interned frames to names: libdwfl per proven module file, else address forms. */
#include "report_internal.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NO_FILE UINT32_MAX
#define DEFAULT_DEBUG_PATH ":.debug:/usr/lib/debug"

enum file_state {
	FILE_UNOPENED = 0,
	FILE_PROVEN,     /* symbols usable */
	FILE_UNPROVEN,   /* opened, but not the recorded file: never use its symbols */
	FILE_UNREADABLE, /* missing, unreadable, not ELF, or libdwfl refused it */
};

/* Cached result of one (file, svma) lookup. */
struct sym_hit {
	const char *name; /* NULL: no symbol covers the address */
	uint64_t offset;  /* svma - symbol start */
};

/*
 * One module file, shared by every module (in any process) that maps it.
 * Keyed by build-id when recorded, else by path + inode + dev + size + mtime
 * (so that a module is proven exactly when its file entry is).
 */
struct file_entry {
	const struct sp_module *rep; /* first module seen with this key: path and identity */
	const char *open_path;       /* rep->path without a " (deleted)" suffix */
	uint8_t state;               /* enum file_state */
	Dwfl *dwfl;                  /* one handle per file, base 0: addresses are svmas */
	Dwfl_Module *mod;
	struct sp_elf_info info;     /* PT_LOAD segments, for modules without a recorded bias */
	struct sp_symtab symtab;     /* built on the first lookup */
	bool symtab_built;
	struct sp_map cache;         /* svma -> index into sym->hits */
};

struct sp_symbolizer {
	const struct sp_spool *spool;
	struct sp_symbolizer_opts opts;
	struct sp_arena strings;
	Dwfl_Callbacks callbacks;    /* must outlive every Dwfl */
	char *debuginfo_path;        /* pointed to by callbacks */
	struct file_entry *files;
	size_t nfiles;
	uint32_t *module_file;       /* by module id: file index or NO_FILE */
	const char **module_name;    /* by module id: display basename */
	size_t nmodules;
	struct sp_resolved_frame *frames; /* by frame id */
	uint8_t *resolved;                /* by frame id: frames[i] is filled */
	size_t nframes;
	struct sym_hit *hits;
	size_t nhits, hits_cap;
	struct sp_symbolizer_stats stats;
};

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL; /* FNV-1a */
	return h;
}

static uint64_t file_key_hash(const struct sp_module *m)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	if (m->build_id_len)
		return sp_hash64(hash_bytes(h ^ 1, m->build_id, m->build_id_len));
	const char *path = m->path ? m->path : "";
	h = hash_bytes(h, path, strlen(path));
	uint64_t ids[] = {m->inode, m->dev_major, m->dev_minor, m->file_size,
			  (uint64_t)m->mtime_ns};
	return sp_hash64(hash_bytes(h, ids, sizeof(ids)));
}

static bool same_file_key(const struct sp_module *a, const struct sp_module *b)
{
	if (a->build_id_len || b->build_id_len)
		return a->build_id_len == b->build_id_len &&
		       !memcmp(a->build_id, b->build_id, a->build_id_len);
	return a->inode == b->inode && a->dev_major == b->dev_major &&
	       a->dev_minor == b->dev_minor && a->file_size == b->file_size &&
	       a->mtime_ns == b->mtime_ns && !strcmp(a->path ? a->path : "", b->path ? b->path : "");
}

static bool has_file(const struct sp_module *m)
{
	if (m->flags & (SP_MODULE_KERNEL | SP_MODULE_ANON))
		return false;
	/* Pseudo-paths ([vdso], [heap], anon:...) name no file to open. */
	return m->path && m->path[0] == '/';
}

#define DELETED_SUFFIX " (deleted)"

/* Length of a module path without the " (deleted)" the kernel appends in maps. */
static size_t path_len(const char *p)
{
	size_t n = strlen(p), k = strlen(DELETED_SUFFIX);
	return n > k && !strcmp(p + n - k, DELETED_SUFFIX) ? n - k : n;
}

static const char *display_name(struct sp_arena *a, const struct sp_module *m)
{
	if (m->flags & SP_MODULE_KERNEL)
		return "[kernel]";
	const char *p = m->path;
	if (!p || !*p)
		return "[anon]";
	size_t n = path_len(p);
	const char *slash = memrchr(p, '/', n);
	if (slash && (size_t)(slash - p) + 1 < n) {
		n -= (size_t)(slash - p) + 1;
		p = slash + 1;
	}
	return sp_arena_strndup(a, p, n);
}

/* Give every module its file entry, merging modules that share a key. */
static int index_modules(struct sp_symbolizer *sym)
{
	struct sp_map by_key;
	int err = 0;
	sp_map_init(&by_key);
	for (size_t i = 0; i < sym->nmodules; i++) {
		const struct sp_module *m = sp_spool_module(sym->spool, (uint32_t)i);
		sym->module_file[i] = NO_FILE;
		sym->module_name[i] = m ? display_name(&sym->strings, m) : "[unknown]";
		if (!sym->module_name[i]) {
			err = -ENOMEM;
			goto out;
		}
		if (!m || !has_file(m))
			continue;
		/* Probe past hash collisions: the key hash is not the key. */
		uint64_t h = file_key_hash(m);
		uint32_t idx;
		while (sp_map_get(&by_key, h, &idx) && !same_file_key(sym->files[idx].rep, m))
			h = sp_hash64(h + 1);
		if (!sp_map_get(&by_key, h, &idx)) {
			idx = (uint32_t)sym->nfiles++;
			sym->files[idx].rep = m;
			/*
			 * A deleted file is looked for at its old path: whatever
			 * is there now is used only if the proof below holds.
			 */
			sym->files[idx].open_path = sp_arena_strndup(&sym->strings, m->path,
								     path_len(m->path));
			if (!sym->files[idx].open_path) {
				err = -ENOMEM;
				goto out;
			}
			sp_map_init(&sym->files[idx].cache);
			err = sp_map_put(&by_key, h, idx);
			if (err)
				goto out;
		}
		sym->module_file[i] = idx;
	}
out:
	sp_map_release(&by_key);
	return err;
}

int sp_symbolizer_new(const struct sp_spool *s, const struct sp_symbolizer_opts *opts,
		      struct sp_symbolizer **out)
{
	if (!s || !out)
		return -SP_E_BAD_ARG;
	struct sp_symbolizer *sym = calloc(1, sizeof(*sym));
	if (!sym)
		return -ENOMEM;
	int err = -ENOMEM;
	sym->spool = s;
	if (opts)
		sym->opts = *opts;
	sp_arena_init(&sym->strings);
	sym->nmodules = sp_spool_module_count(s);
	sym->nframes = sp_spool_frame_count(s);
	sym->files = calloc(sym->nmodules ? sym->nmodules : 1, sizeof(*sym->files));
	sym->module_file = calloc(sym->nmodules ? sym->nmodules : 1, sizeof(*sym->module_file));
	sym->module_name = calloc(sym->nmodules ? sym->nmodules : 1, sizeof(*sym->module_name));
	sym->frames = calloc(sym->nframes ? sym->nframes : 1, sizeof(*sym->frames));
	sym->resolved = calloc(sym->nframes ? sym->nframes : 1, 1);
	if (!sym->files || !sym->module_file || !sym->module_name || !sym->frames ||
	    !sym->resolved)
		goto fail;

	/*
	 * Separate debug files: STACKPULSE_DEBUG_DIRS first, then libdwfl's
	 * default (next to the file, .debug/, /usr/lib/debug with its
	 * .build-id tree).  libdwfl checks a debug file's build-id or CRC
	 * before using it, and asks debuginfod only when DEBUGINFOD_URLS is set.
	 */
	const char *dirs = getenv("STACKPULSE_DEBUG_DIRS");
	if (dirs && *dirs) {
		if (asprintf(&sym->debuginfo_path, "%s%s", dirs, DEFAULT_DEBUG_PATH) < 0) {
			sym->debuginfo_path = NULL;
			goto fail;
		}
	} else if (!(sym->debuginfo_path = strdup(DEFAULT_DEBUG_PATH))) {
		goto fail;
	}
	sym->callbacks = (Dwfl_Callbacks){
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.section_address = dwfl_offline_section_address,
		.debuginfo_path = &sym->debuginfo_path,
	};
	err = index_modules(sym);
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
	for (size_t i = 0; i < sym->nfiles; i++) {
		struct file_entry *f = &sym->files[i];
		if (f->dwfl)
			dwfl_end(f->dwfl);
		sp_elf_info_release(&f->info);
		sp_symtab_release(&f->symtab);
		sp_map_release(&f->cache);
	}
	free(sym->files);
	free(sym->module_file);
	free(sym->module_name);
	free(sym->frames);
	free(sym->resolved);
	free(sym->hits);
	free(sym->debuginfo_path);
	sp_arena_release(&sym->strings);
	free(sym);
}

void sp_symbolizer_stats(const struct sp_symbolizer *sym, struct sp_symbolizer_stats *out)
{
	*out = sym->stats;
}

/*
 * DESIGN decision 7: a path names whatever is there now, so the file must be
 * shown to be the recorded one.  Build-id when the module recorded one (a
 * file without a build-id then fails); otherwise inode + size + mtime, and a
 * recording that did not capture them cannot be proven.
 */
static bool file_is_recorded(const struct sp_module *m, const struct stat *st,
			     const struct sp_elf_info *info)
{
	if (m->build_id_len)
		return info->build_id_len == m->build_id_len &&
		       !memcmp(info->build_id, m->build_id, m->build_id_len);
	int64_t mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	return m->inode != 0 && m->file_size != 0 && m->mtime_ns != 0 &&
	       (uint64_t)st->st_ino == m->inode && (uint64_t)st->st_size == m->file_size &&
	       mtime_ns == m->mtime_ns;
}

/* Open, prove and hand a file to libdwfl, once; the outcome is remembered in f->state. */
static void open_file(struct sp_symbolizer *sym, struct file_entry *f)
{
	const struct sp_module *m = f->rep;
	f->state = FILE_UNREADABLE;
	/* O_NONBLOCK: a path that now names a FIFO must not hang the report. */
	int fd = open(f->open_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		goto unreadable;
	struct stat st;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		goto close_fd;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		goto close_fd;
	int err = sp_elf_info_read(elf, &f->info);
	elf_end(elf);
	if (err)
		goto close_fd;
	if (!file_is_recorded(m, &st, &f->info)) {
		f->state = FILE_UNPROVEN;
		sym->stats.files_unproven++;
		close(fd);
		return;
	}
	f->dwfl = dwfl_begin(&sym->callbacks);
	if (!f->dwfl)
		goto close_fd;
	dwfl_report_begin(f->dwfl);
	/*
	 * Base 0 with add_p_vaddr places the file at its own p_vaddrs (bias 0),
	 * so lookups take static addresses whatever the file type.  The same
	 * fd is the one that was proven; libdwfl consumes it on success.
	 */
	f->mod = dwfl_report_elf(f->dwfl, f->open_path, f->open_path, fd, 0, true);
	if (!f->mod || dwfl_report_end(f->dwfl, NULL, NULL)) {
		if (!f->mod)
			close(fd);
		dwfl_end(f->dwfl);
		f->dwfl = NULL;
		f->mod = NULL;
		goto unreadable;
	}
	f->state = FILE_PROVEN;
	sym->stats.files_proven++;
	return;
close_fd:
	close(fd);
unreadable:
	sp_elf_info_release(&f->info);
	sym->stats.files_unreadable++;
}

/* Static address of a frame in its module's file, or false when it has none. */
static bool frame_svma(const struct sp_module *m, const struct file_entry *f,
		       const struct sp_frame *fr, uint64_t *svma)
{
	if (m->flags & SP_MODULE_HAS_BIAS) {
		*svma = fr->abs_ip - m->load_bias;
		return true;
	}
	/* No recorded bias: rel_ip is a file offset; the PT_LOAD holding it maps it. */
	for (size_t i = 0; i < f->info.nsegs; i++) {
		const struct sp_load_segment *s = &f->info.segs[i];
		if (fr->rel_ip >= s->offset && fr->rel_ip - s->offset < s->filesz) {
			*svma = s->vaddr + (fr->rel_ip - s->offset);
			return true;
		}
	}
	return false;
}

/* Name of svma in a proven file, cached per (file, svma). */
static int lookup_symbol(struct sp_symbolizer *sym, struct file_entry *f, uint64_t svma,
			 const struct sym_hit **out)
{
	uint32_t idx;
	if (sp_map_get(&f->cache, svma, &idx)) {
		*out = &sym->hits[idx];
		return 0;
	}
	if (sym->nhits == sym->hits_cap) {
		size_t cap = sym->hits_cap ? sym->hits_cap * 2 : 256;
		struct sym_hit *h = realloc(sym->hits, cap * sizeof(*h));
		if (!h)
			return -ENOMEM;
		sym->hits = h;
		sym->hits_cap = cap;
	}
	if (!f->symtab_built) {
		int err = sp_symtab_build(&f->symtab, f->mod);
		if (err)
			return err;
		f->symtab_built = true;
	}
	struct sym_hit hit = {0};
	const struct sp_symtab_entry *se = sp_symtab_find(&f->symtab, svma);
	if (se) {
		const char *name = se->name;
		/*
		 * libdwfl appends the symbol version of .dynsym names
		 * ("__libc_start_main@@GLIBC_2.34"): noise in a profile, and
		 * the demangler rejects it, so it is cut off first.
		 */
		const char *at = strchr(name + 1, '@');
		const char *bare = at ? sp_arena_strndup(&sym->strings, name, (size_t)(at - name))
				      : name;
		char *dem = !bare || sym->opts.no_demangle ? NULL : sp_demangle(bare);
		if (dem)
			hit.name = sp_arena_strndup(&sym->strings, dem, strlen(dem));
		else if (bare && bare != name)
			hit.name = bare;
		else if (bare)
			hit.name = sp_arena_strndup(&sym->strings, name, strlen(name));
		free(dem);
		if (!hit.name)
			return -ENOMEM;
		hit.offset = svma - se->addr;
	}
	idx = (uint32_t)sym->nhits;
	int err = sp_map_put(&f->cache, svma, idx);
	if (err)
		return err;
	sym->hits[sym->nhits++] = hit;
	*out = &sym->hits[idx];
	return 0;
}

static int resolve_user(struct sp_symbolizer *sym, const struct sp_frame *fr,
			struct sp_resolved_frame *rf)
{
	if (fr->module_id == SP_NO_MODULE || fr->module_id >= sym->nmodules) {
		rf->kind = SP_KIND_UNKNOWN;
		rf->module = "[unknown]";
		rf->name = sp_arena_printf(&sym->strings, "[unknown]+0x%" PRIx64, fr->abs_ip);
		return rf->name ? 0 : -ENOMEM;
	}
	const struct sp_module *m = sp_spool_module(sym->spool, fr->module_id);
	rf->module = sym->module_name[fr->module_id];
	if (m && (m->flags & SP_MODULE_KERNEL)) {
		rf->kind = SP_KIND_KERNEL;
		rf->name = sp_arena_printf(&sym->strings, "[kernel]+0x%" PRIx64, fr->abs_ip);
		return rf->name ? 0 : -ENOMEM;
	}
	uint32_t fi = sym->module_file[fr->module_id];
	if (m && fi != NO_FILE) {
		struct file_entry *f = &sym->files[fi];
		if (f->state == FILE_UNOPENED)
			open_file(sym, f);
		uint64_t svma;
		if (f->state == FILE_PROVEN && frame_svma(m, f, fr, &svma)) {
			const struct sym_hit *hit;
			int err = lookup_symbol(sym, f, svma, &hit);
			if (err)
				return err;
			if (hit->name) {
				rf->name = hit->name;
				rf->symbol_offset = hit->offset;
				rf->origin = SP_ORIGIN_ELF;
				return 0;
			}
		}
	}
	/* Module-relative, so the same code reads the same in every process. */
	rf->name = sp_arena_printf(&sym->strings, "%s+0x%" PRIx64, rf->module, fr->rel_ip);
	return rf->name ? 0 : -ENOMEM;
}

int sp_symbolizer_resolve(struct sp_symbolizer *sym, uint32_t frame_id,
			  const struct sp_resolved_frame **out)
{
	if (frame_id >= sym->nframes)
		return -SP_E_BAD_ARG;
	struct sp_resolved_frame *rf = &sym->frames[frame_id];
	if (sym->resolved[frame_id]) {
		*out = rf;
		return 0;
	}
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
	switch (fr->mode) {
	case SP_FRAME_TRUNCATED:
		rf->name = "[truncated]";
		rf->kind = SP_KIND_TRUNCATED;
		rf->flags = SP_RFRAME_TRUNCATED;
		break;
	case SP_FRAME_KERNEL:
		/* kallsyms is not read yet: kernel frames keep their address. */
		rf->kind = SP_KIND_KERNEL;
		rf->module = "[kernel]";
		rf->name = sp_arena_printf(&sym->strings, "[kernel]+0x%" PRIx64, fr->abs_ip);
		if (!rf->name)
			err = -ENOMEM;
		break;
	default:
		err = resolve_user(sym, fr, rf);
		break;
	}
	if (err)
		return err;
	if (rf->kind != SP_KIND_TRUNCATED) {
		if (rf->origin == SP_ORIGIN_ELF)
			sym->stats.frames_named++;
		else
			sym->stats.frames_address_only++;
	}
	sym->resolved[frame_id] = 1;
	*out = rf;
	return 0;
}
