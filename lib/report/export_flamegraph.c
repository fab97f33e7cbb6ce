/* SPDX-License-Identifier: MIT */
/* Flame graph export: one self-contained interactive SVG (inline CSS and script) of the merged stacks. */
#include "report/export.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/*
 * Geometry, in SVG user units (px at 100% zoom).  Text is monospace, so a
 * label's width is its character count times CHAR_W, here and in the script.
 */
#define IMAGE_W 1200
#define PAD 10
#define FRAME_H 16
#define HEAD_H 96   /* title, two header lines, legend and controls */
#define FOOT_H 34   /* details line */
#define FONT_PX 12
#define CHAR_W 7.3  /* an average monospace glyph at FONT_PX (0.6 em, rounded up) */
#define MIN_W 0.1   /* frames narrower than this at full width are left out */

/* Node keys beside function ids. */
#define KEY_ROOT UINT32_MAX
#define KEY_TRUNCATED (UINT32_MAX - 1)
#define KEY_EMPTY (UINT32_MAX - 2)
#define NO_NODE UINT32_MAX

/* Frame kinds, as CSS class names; the legend lists them in this order. */
enum fg_kind { FG_NATIVE, FG_KERNEL, FG_PYTHON, FG_JIT, FG_INLINE, FG_UNKNOWN, FG_TRUNCATED,
	       FG_EMPTY, FG_ROOT, FG_GROUP };

static const struct {
	const char *cls, *label;
	uint8_t lo[3], hi[3]; /* colour range: a frame's name picks a point in it */
} kinds[] = {
	[FG_NATIVE] = {"native", "native", {205, 60, 40}, {250, 130, 90}},
	[FG_KERNEL] = {"kernel", "kernel", {225, 140, 0}, {250, 190, 40}},
	[FG_PYTHON] = {"python", "Python", {70, 130, 215}, {130, 190, 250}},
	[FG_JIT] = {"jit", "JIT", {60, 180, 60}, {120, 225, 110}},
	[FG_INLINE] = {"inline", "inline", {60, 195, 195}, {120, 230, 230}},
	[FG_UNKNOWN] = {"unknown", "unknown", {165, 150, 190}, {195, 180, 220}},
	[FG_TRUNCATED] = {"truncated", "truncated", {150, 150, 150}, {150, 150, 150}},
	[FG_EMPTY] = {"empty", "no stack", {205, 205, 205}, {205, 205, 205}},
	[FG_ROOT] = {"root", "all", {225, 225, 225}, {225, 225, 225}},
	/* --group-by's roots; the legend names them "process" or "thread" */
	[FG_GROUP] = {"group", "process", {150, 170, 205}, {185, 200, 230}},
};

/* A frame of the merged tree: a function (or marker) under its parent, with the samples below it. */
struct node {
	uint32_t parent; /* NO_NODE for the root */
	uint32_t key;    /* function id, or KEY_* */
	uint32_t depth;  /* the root is 0 */
	uint64_t count;  /* samples whose stack passes through this frame */
	uint64_t start;  /* layout: samples left of this frame at its depth */
};

struct flamegraph {
	struct sp_agg *a;
	/*
	 * With --group-by, the root's children are the processes or threads,
	 * each one's key its index i in groups.v, its name at group_off[i].
	 */
	struct sp_agg_groups groups;
	bool grouped;
	struct sp_buf group_text; /* the groups' names, NUL-terminated, back to back */
	size_t *group_off;        /* by group: its name's offset in group_text */
	struct node *nodes;
	size_t n, cap;
	struct sp_map index;  /* hash(parent, key) -> node */
	uint8_t *func_kind;   /* by function id: enum fg_kind */
	uint32_t *order;      /* every node but the root, children sorted after their parent */
	uint32_t *first;      /* by node: its first child's position in order, or NO_NODE */
	uint32_t *nchildren;  /* by node */
	uint32_t max_depth;
	struct sp_buf text;   /* scratch */
	struct sp_buf label;  /* scratch: a frame's label */
};

static uint64_t node_hash(uint32_t parent, uint32_t key)
{
	return sp_hash64(((uint64_t)parent << 32 | key) ^ 0x9e3779b97f4a7c15ULL);
}

/* The child of parent with key, made when new; count samples are added to it. */
static int child(struct flamegraph *fg, uint32_t parent, uint32_t key, uint64_t count,
		 uint32_t *out)
{
	uint64_t h = node_hash(parent, key);
	uint32_t v;
	while (sp_map_get(&fg->index, h, &v)) {
		if (fg->nodes[v].parent == parent && fg->nodes[v].key == key)
			goto found;
		h = sp_hash64(h + 1);
	}
	if (fg->n >= UINT32_MAX - 1)
		return -ENOMEM;
	int err = sp_array_reserve((void **)&fg->nodes, &fg->cap, fg->n + 1, sizeof(*fg->nodes));
	if (!err)
		err = sp_map_put(&fg->index, h, (uint32_t)fg->n);
	if (err)
		return err;
	v = (uint32_t)fg->n++;
	uint32_t depth = fg->nodes[parent].depth + 1;
	fg->nodes[v] = (struct node){.parent = parent, .key = key, .depth = depth};
	if (depth > fg->max_depth)
		fg->max_depth = depth;
found:
	fg->nodes[v].count += count;
	*out = v;
	return 0;
}

/* The flame graph's key for a node of the merged stacks. */
static uint32_t agg_key(const struct sp_agg *a, uint32_t agg_node)
{
	uint32_t func = a->nodes[agg_node].func;
	return func < a->nfuncs ? func : KEY_TRUNCATED;
}

/*
 * Merge every sampled stack into the tree, root first.  Each frame gives its
 * containing function, then the functions inlined into it, innermost last
 * (as the folded view does); a truncation marker is a frame of its own, so a
 * truncated stack never merges with one that reached its real root.
 */
static int merge_stacks(struct flamegraph *fg)
{
	struct sp_agg *a = fg->a;
	int err = 0;
	/* The aggregation's merged stacks, node for node (node v is map[v]). */
	uint32_t *map = malloc((a->nnodes ? a->nnodes : 1) * sizeof(*map));
	if (!map)
		return -ENOMEM;
	map[0] = 0;
	fg->nodes[0].count = a->nnodes ? a->nodes[0].total : 0;
	for (size_t v = 1; v < a->nnodes && !err; v++)
		err = child(fg, map[a->nodes[v].parent], agg_key(a, (uint32_t)v), a->nodes[v].total,
			    &map[v]);
	free(map);
	if (err)
		return err;
	/* Samples without a stack stay visible: a graph without them overstates every share. */
	if (a->empty_samples) {
		uint32_t e;
		fg->nodes[0].count += a->empty_samples;
		if ((err = child(fg, 0, KEY_EMPTY, a->empty_samples, &e)))
			return err;
	}
	return 0;
}

static int graft_child(void *ctx, uint32_t parent, uint32_t agg_node, uint32_t *made)
{
	struct flamegraph *fg = ctx;
	return child(fg, parent, agg_key(fg->a, agg_node), 0, made);
}

/* The groups' root frames, named. */
static int group_roots(struct flamegraph *fg, uint32_t *root)
{
	const struct sp_agg_groups *g = &fg->groups;
	if (!(fg->group_off = malloc((g->n ? g->n : 1) * sizeof(*fg->group_off))))
		return -ENOMEM;
	int err = 0;
	for (size_t i = 0; !err && i < g->n && g->v[i].samples; i++) {
		fg->group_off[i] = fg->group_text.len;
		if (!(err = sp_agg_group_label(g, i, &fg->group_text)) &&
		    !(err = sp_buf_append(&fg->group_text, "", 1)))
			err = child(fg, 0, (uint32_t)i, 0, &root[i]);
	}
	return err;
}

/*
 * --group-by: the merged stacks again under one frame per process or
 * thread, their samples without a stack an [empty] frame on it.  Counts are
 * the samples that end at each frame first, then summed rootward: a parent
 * is made before its children, so node ids order parents first.
 */
static int build_grouped(struct flamegraph *fg, uint32_t kind)
{
	struct sp_agg_graft gr;
	struct sp_agg_group_count *counts = NULL;
	uint32_t *root = NULL;
	size_t n = 0;
	sp_agg_graft_init(&gr, fg->a, graft_child, fg);
	fg->grouped = true;
	int err = sp_agg_groups_build(&fg->groups, fg->a, kind);
	if (!err && !(root = malloc((fg->groups.n ? fg->groups.n : 1) * sizeof(*root))))
		err = -ENOMEM;
	if (!err)
		err = group_roots(fg, root);
	if (!err)
		err = sp_agg_group_counts(fg->a, &fg->groups, &counts, &n);
	for (size_t i = 0; !err && i < n; i++) {
		uint32_t at, g = counts[i].group;
		err = counts[i].node ? sp_agg_graft(&gr, g, root[g], counts[i].node, &at)
				     : child(fg, root[g], KEY_EMPTY, 0, &at);
		if (!err)
			fg->nodes[at].count += counts[i].count;
	}
	for (size_t v = fg->n; !err && v-- > 1;)
		fg->nodes[fg->nodes[v].parent].count += fg->nodes[v].count;
	free(counts);
	free(root);
	sp_agg_graft_release(&gr);
	return err;
}

/* The tree of the merged stacks, or with group_by of each group's. */
static int build_tree(struct flamegraph *fg, uint32_t group_by)
{
	int err = sp_array_reserve((void **)&fg->nodes, &fg->cap, 1, sizeof(*fg->nodes));
	if (err)
		return err;
	fg->nodes[0] = (struct node){.parent = NO_NODE, .key = KEY_ROOT};
	fg->n = 1;
	return group_by != SP_GROUP_NONE ? build_grouped(fg, group_by) : merge_stacks(fg);
}

/* Each function's kind, from the symbolizer's frames (cached) that the aggregation mapped to it. */
static int classify(struct flamegraph *fg)
{
	struct sp_agg *a = fg->a;
	if (!(fg->func_kind = calloc(a->nfuncs ? a->nfuncs : 1, 1)))
		return -ENOMEM;
	for (size_t fid = 0; fid < a->nframes; fid++) {
		const uint32_t *funcs;
		size_t k = sp_agg_frame_funcs(a, (uint32_t)fid, &funcs);
		if (!k)
			continue;
		const struct sp_resolved_frame *rf;
		size_t n;
		int err = sp_symbolizer_resolve_all(a->sym, (uint32_t)fid, &rf, &n);
		if (err)
			return err;
		for (size_t j = 0; j < k && j < n; j++) {
			enum fg_kind c = FG_NATIVE;
			if (rf[j].flags & SP_RFRAME_INLINE)
				c = FG_INLINE;
			else if (rf[j].flags & SP_RFRAME_JIT)
				c = FG_JIT;
			else if (rf[j].kind == SP_KIND_PYTHON)
				c = FG_PYTHON;
			else if (rf[j].kind == SP_KIND_KERNEL)
				c = FG_KERNEL;
			else if (rf[j].kind == SP_KIND_UNKNOWN)
				c = FG_UNKNOWN;
			fg->func_kind[funcs[j]] = (uint8_t)c;
		}
	}
	return 0;
}

struct label {
	const char *name, *module, *file;
	uint32_t line;
	bool is_inline;
	enum fg_kind kind;
};

static struct label node_label(const struct flamegraph *fg, const struct node *nd)
{
	if (fg->grouped && nd->parent == 0)
		return (struct label){.name = (const char *)fg->group_text.data +
					      fg->group_off[nd->key],
				      .module = "", .kind = FG_GROUP};
	switch (nd->key) {
	case KEY_ROOT:
		return (struct label){.name = "all", .module = "", .kind = FG_ROOT};
	case KEY_TRUNCATED:
		return (struct label){.name = "[truncated]", .module = "", .kind = FG_TRUNCATED};
	case KEY_EMPTY:
		return (struct label){.name = "[empty]", .module = "", .kind = FG_EMPTY};
	}
	const struct sp_agg_func *f = &fg->a->funcs[nd->key];
	return (struct label){.name = f->name, .module = f->module, .file = f->file,
			      .line = f->line, .is_inline = f->is_inline,
			      .kind = (enum fg_kind)fg->func_kind[nd->key]};
}

/* Siblings left to right by name, then module, inline, source position (flamegraph.pl sorts by name). */
static int by_parent_then_label(const void *pa, const void *pb, void *ctx)
{
	const struct flamegraph *fg = ctx;
	const struct node *x = &fg->nodes[*(const uint32_t *)pa];
	const struct node *y = &fg->nodes[*(const uint32_t *)pb];
	if (x->parent != y->parent)
		return x->parent < y->parent ? -1 : 1;
	struct label lx = node_label(fg, x), ly = node_label(fg, y);
	int c = strcmp(lx.name, ly.name);
	if (!c)
		c = strcmp(lx.module, ly.module);
	if (!c && lx.is_inline != ly.is_inline)
		c = lx.is_inline ? 1 : -1;
	if (!c)
		c = strcmp(lx.file ? lx.file : "", ly.file ? ly.file : "");
	if (!c && lx.line != ly.line)
		c = lx.line < ly.line ? -1 : 1;
	if (!c && x->key != y->key) /* equal labels cannot happen: keys keep it total */
		c = x->key < y->key ? -1 : 1;
	return c;
}

/*
 * Sort siblings, then give each frame its start: its parent's plus the
 * samples of the siblings left of it.  A parent is made before its children,
 * so node ids order parents first.
 */
static int layout(struct flamegraph *fg)
{
	size_t n = fg->n;
	fg->order = malloc(n * sizeof(*fg->order));
	fg->first = malloc(n * sizeof(*fg->first));
	fg->nchildren = calloc(n, sizeof(*fg->nchildren));
	if (!fg->order || !fg->first || !fg->nchildren)
		return -ENOMEM;
	for (size_t i = 1; i < n; i++)
		fg->order[i - 1] = (uint32_t)i;
	qsort_r(fg->order, n - 1, sizeof(*fg->order), by_parent_then_label, fg);
	for (size_t i = 0; i < n; i++)
		fg->first[i] = NO_NODE;
	for (size_t i = 0; i + 1 < n; i++) {
		uint32_t p = fg->nodes[fg->order[i]].parent;
		if (fg->first[p] == NO_NODE)
			fg->first[p] = (uint32_t)i;
		fg->nchildren[p]++;
	}
	for (size_t p = 0; p < n; p++) {
		uint64_t at = fg->nodes[p].start;
		for (uint32_t i = 0; i < fg->nchildren[p]; i++) {
			struct node *c = &fg->nodes[fg->order[fg->first[p] + i]];
			c->start = at;
			at += c->count;
		}
	}
	return 0;
}

/*
 * Append s as XML character data or attribute text: well-formed UTF-8 (other
 * bytes become U+FFFD), the five markup characters as entities, and control
 * characters, which XML 1.0 does not allow, as U+FFFD.
 */
int sp_xml_put_text(struct sp_buf *b, const char *s)
{
	struct sp_buf u;
	sp_buf_init(&u);
	int err = sp_buf_put_utf8(&u, s);
	for (size_t i = 0; !err && i < u.len; i++) {
		uint8_t c = u.data[i];
		switch (c) {
		case '&':
			err = sp_buf_append(b, "&amp;", 5);
			break;
		case '<':
			err = sp_buf_append(b, "&lt;", 4);
			break;
		case '>':
			err = sp_buf_append(b, "&gt;", 4);
			break;
		case '"':
			err = sp_buf_append(b, "&quot;", 6);
			break;
		case '\'':
			err = sp_buf_append(b, "&apos;", 6);
			break;
		default:
			if (c < 0x20 || c == 0x7f)
				err = sp_buf_append(b, "\xef\xbf\xbd", 3);
			else
				err = sp_buf_append(b, &c, 1);
		}
	}
	sp_buf_release(&u);
	return err;
}

/* Write s escaped. */
static int put_xml(struct flamegraph *fg, const char *s, FILE *out)
{
	fg->text.len = 0;
	int err = sp_xml_put_text(&fg->text, s);
	if (!err && fg->text.len && fwrite(fg->text.data, 1, fg->text.len, out) != fg->text.len)
		err = -EIO;
	return err;
}

/* Write s as the spool or command line has it (not a resolved name): \xHH escapes first. */
static int put_raw_xml(struct flamegraph *fg, const char *s, FILE *out)
{
	if (sp_text_is_printable(s))
		return put_xml(fg, s, out);
	struct sp_buf t;
	sp_buf_init(&t);
	int err = sp_buf_put_printable(&t, s);
	err = err ? err : sp_buf_append(&t, "", 1);
	err = err ? err : put_xml(fg, (const char *)t.data, out);
	sp_buf_release(&t);
	return err;
}

/* Bytes of the first max characters of UTF-8 text s, or strlen(s) when it has no more. */
static size_t utf8_prefix(const char *s, size_t max)
{
	size_t i = 0, chars = 0;
	while (s[i] && chars < max) {
		i++;
		while (((uint8_t)s[i] & 0xc0) == 0x80)
			i++;
		chars++;
	}
	return i;
}

static size_t utf8_chars(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += ((uint8_t)*s & 0xc0) != 0x80;
	return n;
}

/*
 * The label of a frame w px wide: the whole name, or its head and "..",
 * or nothing below three characters; the script fits names the same way
 * when a zoom changes widths.
 */
static int put_fitted(struct flamegraph *fg, const char *name, double w, FILE *out)
{
	struct sp_buf u;
	sp_buf_init(&u);
	int err = sp_buf_put_utf8(&u, name);
	if (!err)
		err = sp_buf_append(&u, "", 1);
	if (err) {
		sp_buf_release(&u);
		return err;
	}
	const char *s = (const char *)u.data;
	double room = (w - 6) / CHAR_W;
	size_t fit = room > 0 ? (size_t)room : 0;
	size_t chars = utf8_chars(s);
	if (fit >= 3 && chars > fit)
		u.data[utf8_prefix(s, fit - 2)] = 0;
	if (fit >= 3) {
		err = put_xml(fg, s, out);
		if (!err && chars > fit)
			fputs("..", out);
	}
	sp_buf_release(&u);
	return err;
}

/* The colour of a frame: a point of its kind's range picked by its name, so a name keeps its colour. */
static void put_fill(enum fg_kind k, const char *name, FILE *out)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (const char *p = name; *p; p++)
		h = (h ^ (uint8_t)*p) * 0x100000001b3ULL;
	h = sp_hash64(h);
	unsigned v[3];
	for (int i = 0; i < 3; i++) {
		unsigned span = (unsigned)(kinds[k].hi[i] - kinds[k].lo[i]);
		/* Mostly one shared step, a little of each channel's own: shades, not noise. */
		unsigned t = (unsigned)(h & 0xff), own = (unsigned)((h >> (8 + 8 * i)) & 0xff);
		v[i] = kinds[k].lo[i] + (span * (3 * t + own)) / (4 * 255);
	}
	fprintf(out, "rgb(%u,%u,%u)", v[0], v[1], v[2]);
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

struct geometry {
	uint64_t total;   /* samples under the root */
	double scale;     /* px per sample at full width */
	unsigned height;  /* of the image */
	unsigned bottom;  /* y of the root frame */
};

/* One frame: <g> with its data for the script, the rectangle, the fitted label. */
static int write_frame(struct flamegraph *fg, const struct geometry *g, uint32_t id, FILE *out)
{
	const struct node *nd = &fg->nodes[id];
	struct label l = node_label(fg, nd);
	double x = PAD + (double)nd->start * g->scale, w = (double)nd->count * g->scale;
	unsigned y = g->bottom - nd->depth * FRAME_H;
	fprintf(out, "<g class=\"f %s\" data-s=\"%" PRIu64 "\" data-c=\"%" PRIu64 "\" data-d=\"%" PRIu32
		"\" data-n=\"", kinds[l.kind].cls, nd->start, nd->count, nd->depth);
	int err = put_xml(fg, l.name, out);
	if (err)
		return err;
	if (l.module[0]) {
		fputs("\" data-m=\"", out);
		if ((err = put_xml(fg, l.module, out)))
			return err;
	}
	if (l.file && l.line) {
		const char *base = strrchr(l.file, '/');
		fputs("\" data-l=\"", out);
		if ((err = put_xml(fg, base && base[1] ? base + 1 : l.file, out)))
			return err;
		fprintf(out, ":%" PRIu32, l.line);
	}
	fprintf(out, "\"><rect x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%u\" fill=\"", x, y, w,
		FRAME_H - 1);
	put_fill(l.kind, l.name, out);
	fprintf(out, "\"/><text x=\"%.2f\" y=\"%u\">", x + 3, y + FRAME_H - 4);
	/* With --lines the label is "function:line", as in folded stacks. */
	const char *text = l.name;
	if (l.file && l.line) {
		fg->label.len = 0;
		char num[16];
		int n = snprintf(num, sizeof(num), ":%" PRIu32, l.line);
		if ((err = sp_buf_append(&fg->label, l.name, strlen(l.name))) ||
		    (err = sp_buf_append(&fg->label, num, (size_t)n + 1)))
			return err;
		text = (const char *)fg->label.data;
	}
	if ((err = put_fitted(fg, text, w, out)))
		return err;
	fputs("</text></g>\n", out);
	return ferror(out) ? -EIO : 0;
}

/* Every frame wide enough to see, depth first, siblings left to right. */
static int write_frames(struct flamegraph *fg, const struct geometry *g, FILE *out)
{
	uint32_t *stack = malloc(fg->n * sizeof(*stack));
	if (!stack)
		return -ENOMEM;
	size_t top = 0;
	int err = 0;
	stack[top++] = 0;
	while (top && !err) {
		uint32_t id = stack[--top];
		if (id && (double)fg->nodes[id].count * g->scale < MIN_W)
			continue; /* nor its children, narrower still */
		err = write_frame(fg, g, id, out);
		for (uint32_t i = fg->nchildren[id]; i-- > 0;)
			stack[top++] = fg->order[fg->first[id] + i];
	}
	free(stack);
	return err;
}

static const char style[] =
	"text{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:12px;fill:#000}\n"
	"#title{font-size:17px;font-family:sans-serif}\n"
	".head{fill:#333;white-space:pre}\n"
	".f{cursor:pointer}\n"
	".f text{pointer-events:none}\n"
	".f:hover rect{stroke:#000;stroke-width:0.8}\n"
	".f.truncated rect{stroke:#555;stroke-dasharray:3 2}\n"
	".f.anc rect{opacity:0.55}\n"
	".f.hide{display:none}\n"
	".f.hl rect{fill:rgb(230,0,230)}\n"
	".btn{cursor:pointer}\n"
	".btn rect{fill:#f4f4f4;stroke:#999}\n"
	".btn:hover rect{fill:#ddd}\n"
	".off{display:none}\n"
	"#tip{pointer-events:none}\n"
	"#tip rect{fill:#fffff0;stroke:#666;opacity:0.96}\n"
	"#tip .tn{font-weight:bold}\n";

/*
 * The script: zoom (click a frame; click the root or "Reset zoom" to undo),
 * search (the "Search" button, Ctrl+F or '/': a regular expression, or a
 * plain substring when it is not a valid one; Escape clears), tooltips.
 * Frames carry their samples (data-s start, data-c count, data-d depth), so
 * a zoom is arithmetic on them.  No "]]>" may appear in it (CDATA).
 */
static const char script[] =
	"'use strict';\n"
	"(function () {\n"
	"var svg = document.documentElement;\n"
	"function num(n) { return +svg.getAttribute('data-' + n); }\n"
	"var X0 = num('x0'), W = num('w'), CW = num('cw'), TOTAL = num('total');\n"
	"var $ = function (id) { return document.getElementById(id); };\n"
	"var frames = [], byG = new Map();\n"
	"Array.prototype.forEach.call(document.querySelectorAll('g.f'), function (g) {\n"
	"  var f = {g: g, rect: g.firstElementChild, text: g.lastElementChild,\n"
	"    s: +g.getAttribute('data-s'), c: +g.getAttribute('data-c'), d: +g.getAttribute('data-d'),\n"
	"    n: g.getAttribute('data-n'), m: g.getAttribute('data-m') || '',\n"
	"    l: g.getAttribute('data-l') || '', k: g.getAttribute('class').split(' ')[1]};\n"
	"  f.label = f.l ? f.n + ':' + f.l.slice(f.l.lastIndexOf(':') + 1) : f.n;\n"
	"  frames.push(f); byG.set(g, f);\n"
	"});\n"
	"var root = frames[0], zoomed = root;\n"
	"function fit(f, w) {\n"
	"  var room = Math.floor((w - 6) / CW), ch = Array.from(f.label);\n"
	"  if (room < 3) return '';\n"
	"  return ch.length > room ? ch.slice(0, room - 2).join('') + '..' : f.label;\n"
	"}\n"
	"function place(f, x, w) {\n"
	"  f.rect.setAttribute('x', x.toFixed(2)); f.rect.setAttribute('width', w.toFixed(2));\n"
	"  f.text.setAttribute('x', (x + 3).toFixed(2)); f.text.textContent = fit(f, w);\n"
	"}\n"
	"function zoom(z) {\n"
	"  zoomed = z;\n"
	"  var end = z.s + z.c;\n"
	"  frames.forEach(function (f) {\n"
	"    var cl = f.g.classList;\n"
	"    if (f.d < z.d && f.s <= z.s && f.s + f.c >= end) {\n"
	"      cl.remove('hide'); cl.add('anc'); place(f, X0, W);\n"
	"    } else if (f.d >= z.d && f.s >= z.s && f.s + f.c <= end) {\n"
	"      cl.remove('hide'); cl.remove('anc'); place(f, X0 + (f.s - z.s) / z.c * W, f.c / z.c * W);\n"
	"    } else {\n"
	"      cl.add('hide');\n"
	"    }\n"
	"  });\n"
	"  $('reset').classList.toggle('off', z === root);\n"
	"}\n"
	"/* Small shares keep two decimals, so 7 of 17165 reads 0.04%, not 0.0%. */\n"
	"function pct(n, of) { var p = of ? 100 * n / of : 0; return p.toFixed(p > 0 && p < 1 ? 2 : 1) + '%'; }\n";

/*
 * The script's plural(): n of the widths with their unit, as the header says
 * them (milliseconds of a time metric's microseconds, as the text views).
 * Between script and script_end.
 */
static const char plural_samples[] =
	"function plural(n) { return n + (n === 1 ? ' sample' : ' samples'); }\n";
static const char plural_events[] =
	"function plural(n) { return n + (n === 1 ? ' event' : ' events'); }\n";
static const char plural_time[] =
	"function plural(n) { return (n / 1000).toFixed(1) + ' ms'; }\n";

static const char script_end[] =
	"var term = '';\n"
	"function search(t) {\n"
	"  term = t || '';\n"
	"  var re = null;\n"
	"  if (term) { try { re = new RegExp(term); } catch (e) { re = null; } }\n"
	"  var hits = [];\n"
	"  frames.forEach(function (f) {\n"
	"    var hit = !!term && f !== root && (re ? re.test(f.label) : f.label.indexOf(term) >= 0);\n"
	"    f.g.classList.toggle('hl', hit);\n"
	"    if (hit) hits.push(f);\n"
	"  });\n"
	"  /* Samples under any match: the union of the matches' sample ranges. */\n"
	"  hits.sort(function (a, b) { return a.s - b.s || b.c - a.c; });\n"
	"  var n = 0, end = -1;\n"
	"  hits.forEach(function (f) {\n"
	"    var e = f.s + f.c;\n"
	"    if (f.s >= end) { n += f.c; end = e; } else if (e > end) { n += e - end; end = e; }\n"
	"  });\n"
	"  $('matched').textContent = term ? 'Matched: ' + pct(n, TOTAL) + ' (' + plural(n) + ')' : '';\n"
	"  $('matched').setAttribute('data-samples', n);\n"
	"  $('clear').classList.toggle('off', !term);\n"
	"  $('search').classList.toggle('off', !!term);\n"
	"}\n"
	"function ask() {\n"
	"  var t = window.prompt('Search frames (a regular expression, or plain text):', term);\n"
	"  if (t !== null) search(t);\n"
	"}\n"
	"var tip = $('tip'), tipBox = tip.firstElementChild, tipLines = tip.querySelectorAll('text');\n"
	"function describe(f) {\n"
	"  var share = plural(f.c) + ', ' + pct(f.c, TOTAL) + ' of all';\n"
	"  if (zoomed !== root) share += ', ' + pct(f.c, zoomed.c) + ' of the zoomed frame';\n"
	"  return [f.label, 'module: ' + (f.m || '-') + (f.l ? '  at ' + f.l : ''), 'kind: ' + f.k, share];\n"
	"}\n"
	"function showTip(f, ev) {\n"
	"  var lines = describe(f), w = 0;\n"
	"  for (var i = 0; i < tipLines.length; i++) {\n"
	"    tipLines[i].textContent = lines[i];\n"
	"    w = Math.max(w, Array.from(lines[i]).length * CW);\n"
	"  }\n"
	"  tipBox.setAttribute('width', (w + 12).toFixed(0));\n"
	"  var p = svg.createSVGPoint(); p.x = ev.clientX; p.y = ev.clientY;\n"
	"  var m = svg.getScreenCTM(); if (m) p = p.matrixTransform(m.inverse());\n"
	"  var x = p.x + 12, y = p.y + 16, bw = w + 12, bh = +tipBox.getAttribute('height');\n"
	"  var vb = svg.viewBox.baseVal;\n"
	"  if (x + bw > vb.width) x = Math.max(0, p.x - bw - 12);\n"
	"  if (y + bh > vb.height) y = Math.max(0, p.y - bh - 8);\n"
	"  tip.setAttribute('transform', 'translate(' + x.toFixed(0) + ',' + y.toFixed(0) + ')');\n"
	"  tip.classList.remove('off');\n"
	"  $('details').textContent = f.label + ' (' + (f.m || '-') + '): ' + lines[3];\n"
	"}\n"
	"function frameOf(ev) {\n"
	"  var g = ev.target.closest ? ev.target.closest('g.f') : null;\n"
	"  return g ? byG.get(g) : null;\n"
	"}\n"
	"var all = $('frames');\n"
	"all.addEventListener('click', function (ev) {\n"
	"  var f = frameOf(ev); if (f) zoom(f);\n"
	"});\n"
	"all.addEventListener('mousemove', function (ev) { var f = frameOf(ev); if (f) showTip(f, ev); });\n"
	"all.addEventListener('mouseout', function (ev) {\n"
	"  if (!ev.relatedTarget || !all.contains(ev.relatedTarget)) {\n"
	"    tip.classList.add('off'); $('details').textContent = ' ';\n"
	"  }\n"
	"});\n"
	"$('reset').addEventListener('click', function () { zoom(root); });\n"
	"$('search').addEventListener('click', ask);\n"
	"$('clear').addEventListener('click', function () { search(''); });\n"
	"window.addEventListener('keydown', function (ev) {\n"
	"  if ((ev.ctrlKey || ev.metaKey) && ev.key === 'f' || ev.key === '/') { ev.preventDefault(); ask(); }\n"
	"  else if (ev.key === 'Escape') { search(''); zoom(root); }\n"
	"});\n"
	"/* A search given in the address: FILE.svg?s=TERM */\n"
	"var q = /[?&]s=([^&]*)/.exec(window.location.search || '');\n"
	"if (q) { try { search(decodeURIComponent(q[1])); } catch (e) {} }\n"
	"window.flamegraph = {zoom: function (f) { zoom(f ? byG.get(f) : root); }, search: search};\n"
	"})();\n";

/* A control: a labelled box the script finds by id. */
static void put_button(FILE *out, const char *id, const char *label, double x, unsigned y,
		       bool hidden)
{
	double w = (double)strlen(label) * CHAR_W + 12;
	fprintf(out, "<g id=\"%s\" class=\"btn%s\"><rect x=\"%.1f\" y=\"%u\" width=\"%.1f\" "
		     "height=\"18\" rx=\"3\"/><text x=\"%.1f\" y=\"%u\">%s</text></g>\n",
		id, hidden ? " off" : "", x, y, w, x + 6, y + 13, label);
}

static int write_header(struct flamegraph *fg, const struct geometry *g,
			const struct sp_report_opts *opts, FILE *out)
{
	const struct sp_agg *a = fg->a;
	const struct sp_spool_meta *meta = sp_spool_meta(a->spool);
	const char *command = meta && meta->command && meta->command[0] ? meta->command
									  : "(unknown)";
	struct sp_sample_unit u;
	char event[80];
	sp_sample_unit_of(a->spool, &u);
	sp_sample_unit_describe(&u, event, sizeof(event));
	/* Widths are CPU time, unless the title says which event or time metric they count. */
	const char *what = a->metric == SP_METRIC_WALL	   ? "wall time in microseconds"
			   : a->metric == SP_METRIC_OFF_CPU ? "off-CPU time in microseconds"
			   : u.time			   ? NULL
							   : u.event;
	fprintf(out, "<text id=\"title\" x=\"%d\" y=\"24\" text-anchor=\"middle\">Flame graph%s%s"
		     "</text>\n", IMAGE_W / 2, what ? ": " : "", what ? what : "");
	fprintf(out, "<text class=\"head\" xml:space=\"preserve\" x=\"%d\" y=\"44\">Command: ", PAD);
	int err = put_raw_xml(fg, command, out);
	if (err)
		return err;
	if (opts->spool_path) {
		fputs("   Spool: ", out);
		if ((err = put_raw_xml(fg, opts->spool_path, out)))
			return err;
	}
	fputs("</text>\n", out);
	/* Every amount in the unit of the widths: samples, events or a time metric's ms. */
	const char *quantity = a->metric == SP_METRIC_WALL	 ? "Wall time"
			    : a->metric == SP_METRIC_OFF_CPU ? "Off-CPU time"
			    : u.weighted		      ? "Events"
							      : "Samples";
	char total[40], truncated[40], empty[40];
	sp_agg_format_count(a, a->samples, total, sizeof(total));
	sp_agg_format_count(a, a->truncated_samples, truncated, sizeof(truncated));
	sp_agg_format_count(a, a->empty_samples, empty, sizeof(empty));
	fprintf(out,
		"<text class=\"head\" xml:space=\"preserve\" x=\"%d\" y=\"62\">Duration: %.3f s   %s: %s",
		PAD, (double)(a->last_ns - a->first_ns) / 1e9, quantity, total);
	if (a->metric != SP_METRIC_CPU)
		fprintf(out, " (%" PRIu64 " off-CPU interval%s, lost %" PRIu64 ")", a->nintervals,
			a->nintervals == 1 ? "" : "s", sp_spool_lost_total(a->spool));
	else
		fprintf(out, " (lost %" PRIu64 ")", sp_spool_lost_total(a->spool));
	fprintf(out, "   Truncated: %.1f%% (%s)   Empty: %.1f%% (%s)   Event: %s",
		pct(a->truncated_samples, a->samples), truncated,
		pct(a->empty_samples, a->samples), empty, event);
	if (g->total != a->samples) {
		sp_agg_format_count(a, g->total, total, sizeof(total));
		fprintf(out, "   Shown: %s", total);
	}
	fputs("</text>\n", out);

	/* Legend: one swatch per kind, in the middle of each range. */
	double x = PAD;
	for (int k = FG_NATIVE; k <= FG_GROUP; k++) {
		if (k == FG_ROOT || (k == FG_GROUP && !fg->grouped))
			continue;
		const char *label = k == FG_GROUP && fg->groups.kind == SP_GROUP_THREAD ? "thread"
											: kinds[k].label;
		fprintf(out, "<rect x=\"%.1f\" y=\"72\" width=\"12\" height=\"12\" fill=\"rgb(%u,%u,%u)"
			     "\"/><text x=\"%.1f\" y=\"82\">%s</text>\n", x,
			(kinds[k].lo[0] + kinds[k].hi[0]) / 2u, (kinds[k].lo[1] + kinds[k].hi[1]) / 2u,
			(kinds[k].lo[2] + kinds[k].hi[2]) / 2u, x + 16, label);
		x += 16 + (double)strlen(label) * CHAR_W + 14;
	}
	put_button(out, "reset", "Reset zoom", IMAGE_W - PAD - 240, 69, true);
	put_button(out, "search", "Search", IMAGE_W - PAD - 62, 69, false);
	put_button(out, "clear", "Clear search", IMAGE_W - PAD - 100, 69, true);
	return ferror(out) ? -EIO : 0;
}

static int write_svg(struct flamegraph *fg, const struct sp_report_opts *opts, FILE *out)
{
	struct geometry g = {.total = fg->nodes[0].count};
	double w = IMAGE_W - 2 * PAD;
	g.scale = g.total ? w / (double)g.total : 0;
	g.height = HEAD_H + (fg->max_depth + 1) * FRAME_H + FOOT_H;
	g.bottom = HEAD_H + fg->max_depth * FRAME_H;
	fprintf(out,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%u\" "
		"viewBox=\"0 0 %d %u\" data-x0=\"%d\" data-w=\"%.0f\" data-cw=\"%.1f\" "
		"data-total=\"%" PRIu64 "\">\n"
		"<!-- stackpulse %s flame graph: the root is at the bottom, callees above their "
		"callers; click to zoom, Search/Ctrl+F to highlight -->\n"
		"<style type=\"text/css\"><![CDATA[\n%s]]></style>\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"#fafafa\"/>\n",
		IMAGE_W, g.height, IMAGE_W, g.height, PAD, w, CHAR_W, g.total, SP_VERSION, style);
	int err = write_header(fg, &g, opts, out);
	if (err)
		return err;
	fputs("<g id=\"frames\">\n", out);
	if ((err = write_frames(fg, &g, out)))
		return err;
	fputs("</g>\n", out);
	fprintf(out, "<text id=\"details\" x=\"%d\" y=\"%u\"> </text>\n", PAD, g.height - 12);
	fprintf(out, "<text id=\"matched\" x=\"%d\" y=\"%u\" text-anchor=\"end\"></text>\n",
		IMAGE_W - PAD, g.height - 12);
	fputs("<g id=\"tip\" class=\"off\"><rect width=\"10\" height=\"70\" rx=\"3\"/>", out);
	for (int i = 0; i < 4; i++)
		fprintf(out, "<text x=\"6\" y=\"%d\"%s> </text>", 16 + 16 * i,
			i ? "" : " class=\"tn\"");
	const char *plural = fg->a->metric != SP_METRIC_CPU ? plural_time
			     : fg->a->unit.weighted	    ? plural_events
							    : plural_samples;
	fprintf(out, "</g>\n<script type=\"text/ecmascript\"><![CDATA[\n%s%s%s]]></script>\n</svg>\n",
		script, plural, script_end);
	return ferror(out) ? -EIO : 0;
}

int sp_export_flamegraph(struct sp_agg *a, const struct sp_report_opts *opts, FILE *out)
{
	struct flamegraph fg;
	memset(&fg, 0, sizeof(fg));
	fg.a = a;
	sp_map_init(&fg.index);
	sp_buf_init(&fg.text);
	sp_buf_init(&fg.label);
	sp_buf_init(&fg.group_text);
	int err = build_tree(&fg, opts->group_by);
	if (!err)
		err = classify(&fg);
	if (!err)
		err = layout(&fg);
	if (!err)
		err = write_svg(&fg, opts, out);
	sp_map_release(&fg.index);
	sp_buf_release(&fg.text);
	sp_buf_release(&fg.label);
	sp_buf_release(&fg.group_text);
	sp_agg_groups_release(&fg.groups);
	free(fg.group_off);
	free(fg.nodes);
	free(fg.func_kind);
	free(fg.order);
	free(fg.first);
	free(fg.nchildren);
	return err;
}
