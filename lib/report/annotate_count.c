/* SPDX-License-Identifier: MIT */
/* Annotation's counting: leaf samples per function, leaf frame and source line. */
#include "report/annotate.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* strcmp with NULL first. */
static int str_cmp(const char *x, const char *y)
{
	if (!x || !y)
		return (x != NULL) - (y != NULL);
	return strcmp(x, y);
}

static uint64_t str_hash(const char *s, uint64_t h)
{
	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return sp_hash64(h);
}

static int line_cmp(const void *pa, const void *pb)
{
	const struct sp_ann_line *x = pa, *y = pb;
	int c = str_cmp(x->file, y->file);
	if (!c)
		c = (x->line > y->line) - (x->line < y->line);
	if (!c)
		c = str_cmp(x->inl_func, y->inl_func);
	if (!c)
		c = str_cmp(x->inl_file, y->inl_file);
	if (!c)
		c = (x->inl_line > y->inl_line) - (x->inl_line < y->inl_line);
	return c;
}

static int func_cmp(const void *pa, const void *pb)
{
	const struct sp_ann_func *x = pa, *y = pb;
	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	int c = str_cmp(x->name, y->name);
	return c ? c : str_cmp(x->module, y->module);
}

/* The function named name in module, added when new: its index, or -ENOMEM. */
static long func_get(struct sp_ann_profile *p, struct sp_map *index, const char *name,
		     const char *module)
{
	uint64_t key = str_hash(module, str_hash(name, 0xcbf29ce484222325ULL));
	uint32_t at;
	if (sp_map_get(index, key, &at) && !str_cmp(p->funcs[at].name, name) &&
	    !str_cmp(p->funcs[at].module, module))
		return at;
	/* A hash shared by two functions: the slow way, never wrong. */
	for (size_t i = 0; i < p->nfuncs; i++)
		if (!str_cmp(p->funcs[i].name, name) && !str_cmp(p->funcs[i].module, module))
			return (long)i;
	if (sp_array_reserve((void **)&p->funcs, &p->funcs_cap, p->nfuncs + 1, sizeof(*p->funcs)))
		return -ENOMEM;
	p->funcs[p->nfuncs] = (struct sp_ann_func){.name = name, .module = module};
	if (sp_map_put(index, key, (uint32_t)p->nfuncs))
		return -ENOMEM;
	return (long)p->nfuncs++;
}

/* One leaf frame's samples to its function: the frame, and its source position. */
static int attribute(struct sp_ann_func *f, uint32_t frame_id, uint64_t samples,
		     const struct sp_resolved_frame *chain, size_t n)
{
	const struct sp_resolved_frame *outer = &chain[n - 1], *inner = &chain[0];
	if (sp_array_reserve((void **)&f->frames, &f->frames_cap, f->nframes + 1, sizeof(*f->frames)) ||
	    sp_array_reserve((void **)&f->lines, &f->lines_cap, f->nlines + 1, sizeof(*f->lines)))
		return -ENOMEM;
	f->frames[f->nframes++] = (struct sp_ann_frame){frame_id, samples};
	struct sp_ann_line *l = &f->lines[f->nlines++];
	*l = (struct sp_ann_line){.file = outer->file, .line = outer->line, .samples = samples};
	if (n > 1) {
		l->inl_func = inner->name;
		l->inl_file = inner->file;
		l->inl_line = inner->line;
	}
	f->samples += samples;
	return 0;
}

/* Sort a function's lines and merge equal positions. */
static void merge_lines(struct sp_ann_func *f)
{
	if (!f->nlines)
		return;
	qsort(f->lines, f->nlines, sizeof(*f->lines), line_cmp);
	size_t k = 0;
	for (size_t i = 1; i < f->nlines; i++) {
		if (!line_cmp(&f->lines[k], &f->lines[i]))
			f->lines[k].samples += f->lines[i].samples;
		else
			f->lines[++k] = f->lines[i];
	}
	f->nlines = k + 1;
}

int sp_ann_count(struct sp_ann_profile *p, const struct sp_spool *s, struct sp_symbolizer *sym)
{
	memset(p, 0, sizeof(*p));
	size_t nframes = sp_spool_frame_count(s), nsamples = sp_spool_sample_count(s);
	uint64_t *per_frame = calloc(nframes ? nframes : 1, sizeof(*per_frame));
	struct sp_map index;
	sp_map_init(&index);
	if (!per_frame)
		return -ENOMEM;
	p->samples = nsamples;
	for (size_t i = 0; i < nsamples; i++) {
		uint32_t stack = sp_spool_sample(s, i)->stack_id;
		uint32_t fid = stack ? sp_spool_stack_frame(s, stack) : UINT32_MAX;
		if (fid < nframes)
			per_frame[fid]++;
	}
	int err = 0;
	for (uint32_t fid = 0; fid < nframes && !err; fid++) {
		const struct sp_frame *fr = sp_spool_frame(s, fid);
		if (!per_frame[fid] || !fr || fr->mode == SP_FRAME_TRUNCATED)
			continue;
		const struct sp_resolved_frame *chain;
		size_t n;
		err = sp_symbolizer_resolve_all(sym, fid, &chain, &n);
		if (err || !n || (chain[n - 1].flags & SP_RFRAME_TRUNCATED))
			continue;
		long at = func_get(p, &index, chain[n - 1].name, chain[n - 1].module);
		err = at < 0 ? (int)at : attribute(&p->funcs[at], fid, per_frame[fid], chain, n);
	}
	for (size_t i = 0; i < p->nfuncs; i++)
		merge_lines(&p->funcs[i]);
	if (p->nfuncs)
		qsort(p->funcs, p->nfuncs, sizeof(*p->funcs), func_cmp);
	sp_map_release(&index);
	free(per_frame);
	return err;
}

void sp_ann_profile_release(struct sp_ann_profile *p)
{
	for (size_t i = 0; i < p->nfuncs; i++) {
		free(p->funcs[i].frames);
		free(p->funcs[i].lines);
	}
	free(p->funcs);
	memset(p, 0, sizeof(*p));
}
