/* SPDX-License-Identifier: MIT */
/* Names of kernel frames, from kallsyms: a source with a context of its own (struct kernel_names). */
#include "symbols/symbolizer.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

static bool is_kernel_frame(const struct sp_spool *s, const struct sp_frame *fr)
{
	if (fr->mode == SP_FRAME_KERNEL)
		return true;
	const struct sp_module *m = fr->module_id == SP_NO_MODULE ? NULL
								 : sp_spool_module(s, fr->module_id);
	return fr->mode == SP_FRAME_USER && m && (m->flags & SP_MODULE_KERNEL);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

void sp_sym_kernel_init(struct kernel_names *k, const struct sp_spool *s,
			const struct sp_symbolizer_opts *opts, struct sp_arena *strings,
			struct sp_symbolizer_stats *stats)
{
	*k = (struct kernel_names){
		.spool = s,
		.kallsyms_path = opts->kallsyms_path,
		.off = opts->no_kernel_symbols,
		.strings = strings,
		.stats = stats,
	};
}

void sp_sym_kernel_release(struct kernel_names *k)
{
	sp_kallsyms_free(k->ksyms);
	for (size_t i = 0; i < k->nmore; i++)
		sp_kallsyms_free(k->more[i]);
	free(k->more);
}

/* The symbol holding addr in any of the sets read, or NULL. */
static const struct sp_ksym *find_ksym(const struct kernel_names *k, uint64_t addr)
{
	const struct sp_ksym *ks = k->ksyms ? sp_kallsyms_find(k->ksyms, addr) : NULL;
	for (size_t i = 0; !ks && i < k->nmore; i++)
		ks = sp_kallsyms_find(k->more[i], addr);
	return ks;
}

/*
 * The addresses, sorted and distinct, of the kernel frames from k->upto to
 * nframes that no set read holds yet.  NULL and 0 when none; -ENOMEM.
 */
static int needed_addrs(const struct kernel_names *k, size_t nframes, uint64_t **out,
			size_t *nout)
{
	*out = NULL;
	*nout = 0;
	size_t first = k->upto, n = 0;
	if (first >= nframes)
		return 0;
	uint64_t *addrs = malloc((nframes - first) * sizeof(*addrs));
	if (!addrs)
		return -ENOMEM;
	for (size_t i = first; i < nframes; i++) {
		const struct sp_frame *fr = sp_spool_frame(k->spool, (uint32_t)i);
		if (fr && is_kernel_frame(k->spool, fr) && !find_ksym(k, fr->abs_ip))
			addrs[n++] = fr->abs_ip;
	}
	qsort(addrs, n, sizeof(*addrs), cmp_u64);
	size_t u = 0;
	for (size_t i = 0; i < n; i++)
		if (u == 0 || addrs[i] != addrs[u - 1])
			addrs[u++] = addrs[i];
	if (!u) {
		free(addrs);
		addrs = NULL;
	}
	*out = addrs;
	*nout = u;
	return 0;
}

/*
 * Read kallsyms once, for every kernel address of the spool at once: the
 * file is streamed a single time and only the symbols those addresses need
 * are kept (docs/DESIGN.md, decision 9: kallsyms is loaded sparsely, only
 * the addresses the spool needs).  A followed spool's later kernel frames
 * that no symbol kept holds are read for the same way, all those known at
 * their first use at once, into one more set.  Trouble leaves k->state
 * UNUSABLE (at the first read) and is counted; only -ENOMEM is an error.
 */
static int load_kallsyms(struct kernel_names *k, size_t nframes)
{
	bool first = k->state == SOURCE_UNLOADED;
	if (first)
		k->state = SOURCE_UNUSABLE;
	if (k->off)
		return 0;
	const char *path = k->kallsyms_path;
	if (!path) {
		/* The running kernel's symbols name another kernel's addresses wrongly. */
		const struct sp_spool_meta *meta = sp_spool_meta(k->spool);
		struct utsname uts;
		if (meta && meta->kernel_release && *meta->kernel_release &&
		    (uname(&uts) || strcmp(uts.release, meta->kernel_release))) {
			k->stats->kallsyms_other_kernel = true;
			return 0;
		}
		path = DEFAULT_KALLSYMS;
	}
	uint64_t *addrs;
	size_t n;
	int err = needed_addrs(k, nframes, &addrs, &n);
	if (err)
		return err;
	k->upto = nframes;
	if (!first && !n)
		return 0;
	struct sp_kallsyms **more = NULL;
	if (!first && !(more = realloc(k->more, (k->nmore + 1) * sizeof(*k->more)))) {
		free(addrs);
		return -ENOMEM;
	}
	if (more)
		k->more = more;
	struct sp_kallsyms *set;
	err = sp_kallsyms_load(path, addrs, n, &set);
	free(addrs);
	if (err == -ENOMEM)
		return err;
	if (err) {
		k->stats->kallsyms_error = err;
		return 0;
	}
	if (first)
		k->ksyms = set;
	else
		k->more[k->nmore++] = set;
	const struct sp_kallsyms_stats *ks = sp_kallsyms_stats(set);
	k->stats->kallsyms_read = true;
	k->stats->kallsyms_lines += ks->lines;
	k->stats->kallsyms_kept += ks->kept;
	k->stats->kallsyms_malformed += ks->malformed;
	if (first) {
		k->stats->kallsyms_restricted = ks->restricted;
		if (!ks->restricted)
			k->state = SOURCE_LOADED;
	}
	return 0;
}

int sp_sym_resolve_kernel(struct kernel_names *k, size_t nframes, uint32_t frame_id,
			  const struct sp_frame *fr, struct sp_resolved_frame *rf)
{
	rf->kind = SP_KIND_KERNEL;
	rf->module = "[kernel]";
	/* A frame past those asked for at the last read: all such frames, once. */
	if (k->state == SOURCE_UNLOADED ||
	    (k->state == SOURCE_LOADED && frame_id >= k->upto && !find_ksym(k, fr->abs_ip))) {
		int err = load_kallsyms(k, nframes);
		if (err)
			return err;
	}
	const struct sp_ksym *ks = k->state == SOURCE_LOADED ? find_ksym(k, fr->abs_ip) : NULL;
	if (ks) {
		rf->name = ks->name;
		rf->module = ks->module ? sp_arena_printf(k->strings, "[%s]", ks->module)
					: "[kernel.kallsyms]";
		rf->origin = SP_ORIGIN_KERNEL_SYMBOLS;
		rf->symbol_offset = fr->abs_ip - ks->addr;
		k->stats->kernel_frames_named++;
		return rf->module ? 0 : -ENOMEM;
	}
	k->stats->kernel_frames_unnamed++;
	rf->name = sp_arena_printf(k->strings, "[kernel]+0x%" PRIx64, fr->abs_ip);
	return rf->name ? 0 : -ENOMEM;
}

/* The kallsyms symbol a resolved kernel frame was named from. */
int sp_sym_kernel_frame_source(const struct kernel_names *k, const struct sp_frame *fr,
			       struct sp_frame_source *out)
{
	const struct sp_ksym *ks = find_ksym(k, fr->abs_ip);
	if (!ks)
		return 0;
	*out = (struct sp_frame_source){
		.origin = SP_ORIGIN_KERNEL_SYMBOLS,
		.start = ks->addr,
		.size = ks->end == UINT64_MAX ? 0 : ks->end - ks->addr,
		.name = ks->name,
		.module = ks->module,
	};
	return 1;
}
