/* SPDX-License-Identifier: MIT */
/* sp_annotate_write: count leaf samples, choose the functions, build each one's view, render it. */
#include "report/annotate.h"

#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_FUNCTIONS 5

/* Module files opened for one annotation, each once. */
struct image_slot {
	const struct sp_module *module; /* the first module record naming the file */
	struct sp_ann_image *img;       /* NULL when it could not be read */
	const char *why;
};

struct images {
	struct image_slot *slots;
	size_t n, cap;
};

static bool same_file(const struct sp_module *x, const struct sp_module *y)
{
	if (x == y)
		return true;
	if (!x->path || !y->path || x->build_id_len != y->build_id_len ||
	    memcmp(x->build_id, y->build_id, x->build_id_len) || strcmp(x->path, y->path))
		return false;
	/* Without a build-id, only the same recorded file (inode, mtime) of the same process. */
	return x->build_id_len || (x->inode == y->inode && x->mtime_ns == y->mtime_ns &&
				   x->pid == y->pid);
}

static struct image_slot *image_get(struct images *c, const struct sp_module *m,
				    struct sp_annotate_result *res)
{
	for (size_t i = 0; i < c->n; i++)
		if (same_file(c->slots[i].module, m))
			return &c->slots[i];
	if (sp_array_reserve((void **)&c->slots, &c->cap, c->n + 1, sizeof(*c->slots)))
		return NULL;
	struct image_slot *s = &c->slots[c->n++];
	*s = (struct image_slot){.module = m};
	if (sp_ann_image_open(m, &s->img, &s->why) && res) {
		res->modules_unreadable++;
		if (!res->module_unreadable) {
			res->module_unreadable = strdup(m->path ? m->path : "?");
			res->module_unreadable_why = strdup(s->why ? s->why : "?");
		}
	}
	return s;
}

static void images_release(struct images *c)
{
	for (size_t i = 0; i < c->n; i++)
		sp_ann_image_free(c->slots[i].img);
	free(c->slots);
}

/* The functions to annotate, as indexes of p->funcs in p's order, into sel (*n of them). */
static int choose(const struct sp_ann_profile *p, const struct sp_annotate_opts *o, size_t **sel,
		  size_t *n, struct sp_annotate_result *res)
{
	*n = 0;
	*sel = malloc((p->nfuncs ? p->nfuncs : 1) * sizeof(**sel));
	bool *used = calloc(o->nfunctions + 1, 1);
	if (!*sel || !used) {
		free(used);
		return -ENOMEM;
	}
	size_t max = o->max_functions ? o->max_functions : DEFAULT_FUNCTIONS;
	for (size_t i = 0; i < p->nfuncs; i++) {
		const char *name = p->funcs[i].name;
		bool take = !o->nfunctions && *n < max;
		for (size_t k = 0; k < o->nfunctions; k++)
			if (!strcmp(o->functions[k], name) || !fnmatch(o->functions[k], name, 0)) {
				take = used[k] = true;
			}
		if (take && o->nfunctions && *n >= max && o->max_functions)
			take = false;
		if (take)
			(*sel)[(*n)++] = i;
	}
	for (size_t k = 0; res && k < o->nfunctions; k++)
		res->functions_unmatched += !used[k];
	free(used);
	return 0;
}

/* Per-instruction arrays of one view, and what they borrow. */
struct view_parts {
	struct sp_ann_code code;
	struct sp_ann_listing listing;
	uint64_t *samples;
	const char **file;
	uint32_t *line;
	const char **target;
	struct sp_ann_row *rows;
	size_t nrows;
	struct sp_arena labels;
};

static void parts_release(struct view_parts *vp)
{
	sp_ann_listing_release(&vp->listing);
	free(vp->samples);
	free(vp->file);
	free(vp->line);
	free(vp->target);
	free(vp->rows);
	sp_arena_release(&vp->labels);
}

/* The instruction holding addr, or SIZE_MAX. */
static size_t insn_at(const struct sp_ann_listing *l, uint64_t addr)
{
	size_t i = sp_partition_point(l->n, I, l->insns[I].addr <= addr);
	if (!i || addr - l->insns[i - 1].addr >= l->insns[i - 1].size)
		return SIZE_MAX;
	return i - 1;
}

/* Samples of f's frames onto instructions; those outside the code counted in v->unplaced. */
static void place_samples(const struct sp_spool *s, struct images *c, const struct sp_ann_func *f,
			  const struct image_slot *slot, struct view_parts *vp, struct sp_ann_view *v)
{
	for (size_t k = 0; k < f->nframes; k++) {
		struct sp_frame_context ctx;
		uint64_t svma;
		size_t at = SIZE_MAX;
		if (!sp_spool_frame_context(s, f->frames[k].frame_id, &ctx) && ctx.module &&
		    image_get(c, ctx.module, NULL) == slot &&
		    sp_ann_image_svma(slot->img, ctx.module, ctx.frame, &svma))
			at = insn_at(&vp->listing, svma);
		if (at == SIZE_MAX)
			v->unplaced += f->frames[k].samples;
		else
			vp->samples[at] += f->frames[k].samples;
	}
}

/* Each instruction's source position (the line table row in force) and branch target label. */
static int label_insns(struct sp_ann_image *img, struct view_parts *vp)
{
	const struct sp_ann_listing *l = &vp->listing;
	size_t r = 0;
	const char *own = NULL;
	uint64_t own_off;
	own = sp_ann_image_symbol(img, vp->code.start, &own_off);
	for (size_t i = 0; i < l->n; i++) {
		const struct sp_ann_insn *in = &l->insns[i];
		while (r < vp->nrows && vp->rows[r].addr <= in->addr)
			r++;
		if (r) {
			vp->file[i] = vp->rows[r - 1].file;
			vp->line[i] = vp->rows[r - 1].line;
		}
		if (!in->has_target)
			continue;
		uint64_t off;
		const char *name;
		if (in->target >= vp->code.start && in->target < vp->code.end && own && !own_off) {
			name = own;
			off = in->target - vp->code.start;
		} else {
			name = sp_ann_image_symbol(img, in->target, &off);
		}
		if (!name)
			continue;
		vp->target[i] = off ? sp_arena_printf(&vp->labels, "<%s+0x%" PRIx64 ">", name, off)
				    : sp_arena_printf(&vp->labels, "<%s>", name);
		if (!vp->target[i])
			return -ENOMEM;
	}
	return 0;
}

/* The disassembly part of f's view: its code read, decoded, counted and labelled. */
static int build_code(const struct sp_spool *s, struct images *c, const struct sp_ann_func *f,
		      struct view_parts *vp, struct sp_ann_view *v, struct sp_annotate_result *res)
{
	/* The frame with the most samples names the module file and the function's code. */
	size_t best = 0;
	for (size_t k = 1; k < f->nframes; k++)
		if (f->frames[k].samples > f->frames[best].samples)
			best = k;
	struct sp_frame_context ctx;
	if (!f->nframes || sp_spool_frame_context(s, f->frames[best].frame_id, &ctx) || !ctx.module) {
		v->unreadable = "no module covers its addresses";
		return 0;
	}
	struct image_slot *slot = image_get(c, ctx.module, res);
	if (!slot)
		return -ENOMEM;
	v->module_path = ctx.module->path;
	if (!slot->img) {
		v->unreadable = slot->why;
		return 0;
	}
	v->module_path = sp_ann_image_path(slot->img);
	uint64_t svma;
	if (!sp_ann_image_svma(slot->img, ctx.module, ctx.frame, &svma) ||
	    sp_ann_image_code(slot->img, svma, &vp->code)) {
		v->unreadable = "no symbol or DWARF function holds the sampled address";
		return 0;
	}
	int err = sp_ann_disasm(&vp->code, &vp->listing);
	if (err == -ENOTSUP) {
		v->unreadable = "no disassembler for this machine";
		return 0;
	}
	if (err == -ELIBACC) {
		v->unreadable = "capstone's library could not be loaded (apt-get install libcapstone4)";
		return 0;
	}
	size_t n = vp->listing.n ? vp->listing.n : 1;
	if (!err && (!(vp->samples = calloc(n, sizeof(*vp->samples))) ||
		     !(vp->file = calloc(n, sizeof(*vp->file))) ||
		     !(vp->line = calloc(n, sizeof(*vp->line))) ||
		     !(vp->target = calloc(n, sizeof(*vp->target)))))
		err = -ENOMEM;
	if (!err)
		err = sp_ann_image_rows(slot->img, vp->code.start, vp->code.end, &vp->rows,
					&vp->nrows, &v->comp_dir);
	if (!err)
		err = label_insns(slot->img, vp);
	if (err)
		return err;
	place_samples(s, c, f, slot, vp, v);
	v->code = &vp->code;
	v->listing = &vp->listing;
	v->insn_samples = vp->samples;
	v->insn_file = vp->file;
	v->insn_line = vp->line;
	v->insn_target = vp->target;
	return 0;
}

/* Count the source files the view will not find (the renderers name them in place). */
static void note_sources(const struct sp_ann_view *v, struct sp_annotate_result *res)
{
	for (size_t i = 0; res && i < v->func->nlines; i++) {
		const struct sp_ann_line *l = &v->func->lines[i];
		const char *file = l->inl_func ? l->inl_file : l->file;
		bool missing;
		(void)sp_ann_source_line(v->sources, file, l->inl_func ? l->inl_line : l->line,
					 v->comp_dir, v->module_path, &missing);
		if (missing && (!res->source_missing || strcmp(res->source_missing, file))) {
			res->sources_missing++;
			if (!res->source_missing)
				res->source_missing = strdup(file);
		}
	}
}

static int write_header(const struct sp_spool *s, const struct sp_annotate_opts *o,
			const struct sp_ann_profile *p, size_t n, struct sp_buf *json, FILE *out)
{
	const struct sp_spool_meta *meta = sp_spool_meta(s);
	const char *event = sp_event_name(meta->event_source);
	if (o->format == SP_ANNOTATE_JSON) {
		char tmp[160];
		int err = sp_buf_append(json, "{\"spool\":", 9);
		if (!err)
			err = o->spool_path ? sp_json_put_string(json, o->spool_path)
					    : sp_buf_append(json, "null", 4);
		snprintf(tmp, sizeof(tmp), ",\"event\":\"%s\",\"samples\":%" PRIu64 ",\"functions\":[",
			 event ? event : "?", p->samples);
		return err ? err : sp_buf_append(json, tmp, strlen(tmp));
	}
	fputs("Annotation of ", out);
	sp_fputs_printable(o->spool_path ? o->spool_path : "the spool", out);
	fprintf(out, ": %" PRIu64 " samples (%s), %zu function%s with self samples; %zu shown\n"
		"Shares: Self%% of the function's self samples, Prof%% of every sample.\n\n",
		p->samples, event ? event : "?", p->nfuncs, p->nfuncs == 1 ? "" : "s", n);
	return 0;
}

int sp_annotate_write(const struct sp_spool *s, struct sp_symbolizer *sym,
		      const struct sp_annotate_opts *opts, FILE *out, struct sp_annotate_result *res)
{
	if (res)
		memset(res, 0, sizeof(*res));
	if (!s || !opts || !out || opts->format > SP_ANNOTATE_JSON)
		return -SP_E_BAD_ARG;
	struct sp_symbolizer *own = NULL;
	struct sp_ann_profile p = {0};
	struct sp_ann_sources *sources = NULL;
	struct images images = {0};
	struct sp_buf json;
	size_t *sel = NULL, nsel = 0;
	sp_buf_init(&json);
	int err = sym ? 0 : sp_symbolizer_new(s, NULL, &own);
	if (!sym)
		sym = own;
	if (!err)
		err = sp_ann_count(&p, s, sym);
	if (!err)
		err = choose(&p, opts, &sel, &nsel, res);
	if (!err)
		err = sp_ann_sources_new(opts->source_dir, &sources);
	if (!err)
		err = write_header(s, opts, &p, nsel, &json, out);
	if (!err && json.len && fwrite(json.data, 1, json.len, out) != json.len)
		err = -EIO;
	json.len = 0;
	for (size_t i = 0; i < nsel && !err; i++) {
		struct view_parts vp = {0};
		sp_arena_init(&vp.labels);
		struct sp_ann_view v = {.func = &p.funcs[sel[i]], .profile_samples = p.samples,
					.sources = sources};
		err = build_code(s, &images, v.func, &vp, &v, res);
		if (!err)
			note_sources(&v, res);
		if (!err && opts->format == SP_ANNOTATE_JSON) {
			err = i ? sp_buf_append(&json, ",", 1) : 0;
			if (!err)
				err = sp_ann_write_json(&v, &json, out);
		} else if (!err) {
			err = sp_ann_write_text(&v, out);
		}
		parts_release(&vp);
		if (res && !err)
			res->functions++;
	}
	if (!err && opts->format == SP_ANNOTATE_JSON)
		err = fputs("]}\n", out) < 0 ? -EIO : 0;
	if (!err && nsel == 0 && opts->format == SP_ANNOTATE_TEXT)
		fputs("No function matched: nothing to annotate.\n", out);
	if (!err && fflush(out))
		err = errno ? -errno : -EIO;
	else if (!err && ferror(out))
		err = -EIO;
	sp_buf_release(&json);
	images_release(&images);
	sp_ann_sources_free(sources);
	free(sel);
	sp_ann_profile_release(&p);
	sp_symbolizer_free(own);
	return err;
}

void sp_annotate_result_release(struct sp_annotate_result *res)
{
	if (!res)
		return;
	free(res->module_unreadable);
	free(res->module_unreadable_why);
	free(res->source_missing);
	memset(res, 0, sizeof(*res));
}
