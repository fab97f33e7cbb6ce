/* SPDX-License-Identifier: MIT */
/* Folded stacks (flamegraph.pl input): "root;...;leaf COUNT", one line per stack by names. */
#include "report/views.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char marker[] = "[truncated]";

/*
 * A frame's text in folded stacks: the function name, ":LINE" with lines,
 * and "_[i]" for an inlined function: the annotation flamegraph.pl's
 * --colors=java palette shows in its own colour, as stackcollapse-perf.pl
 * writes it.
 */
struct labels {
	struct sp_buf text;  /* NUL-terminated labels, back to back */
	size_t *off;         /* by label id */
	size_t n, cap;
	struct sp_map index; /* hash of the text -> label id */
	uint32_t *of_func;   /* by function id: its label id */
};

static uint64_t hash_text(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ULL;
	return sp_hash64(h);
}

static const char *label_text(const struct labels *l, uint32_t id)
{
	return (const char *)l->text.data + l->off[id];
}

/* The id of the label in l->text from offset start (just appended), merging equal texts. */
static int intern_label(struct labels *l, size_t start, uint32_t *id)
{
	int err = sp_buf_append(&l->text, "", 1);
	if (err)
		return err;
	const char *s = (const char *)l->text.data + start;
	uint64_t h = hash_text(s);
	uint32_t v;
	while (sp_map_get(&l->index, h, &v)) {
		if (!strcmp(label_text(l, v), s)) {
			l->text.len = start; /* a duplicate: dropped */
			*id = v;
			return 0;
		}
		h = sp_hash64(h + 1);
	}
	if (sp_array_reserve((void **)&l->off, &l->cap, l->n + 1,
			     sizeof(*l->off)))
		return -ENOMEM;
	if ((err = sp_map_put(&l->index, h, (uint32_t)l->n)))
		return err;
	l->off[l->n] = start;
	*id = (uint32_t)l->n++;
	return 0;
}

/*
 * ';' separates frames and a newline ends the record, so neither may appear
 * inside a name; spaces may (flamegraph.pl splits the count at the last one).
 */
static void fold_safe(struct sp_buf *b, size_t start)
{
	for (size_t i = start; i < b->len; i++)
		if (b->data[i] == ';' || b->data[i] < 0x20 || b->data[i] == 0x7f)
			b->data[i] = '_';
}

static int append_name(struct sp_buf *b, const char *name)
{
	size_t start = b->len;
	int err = sp_buf_append(b, name, strlen(name));
	if (!err)
		fold_safe(b, start);
	return err;
}

/* Label every function; the marker is label 0. */
static int build_labels(const struct sp_agg *a, struct labels *l)
{
	uint32_t id;
	int err = sp_buf_append(&l->text, marker, strlen(marker));
	if (!err)
		err = intern_label(l, 0, &id);
	if (!err && !(l->of_func = malloc((a->nfuncs ? a->nfuncs : 1) * sizeof(*l->of_func))))
		err = -ENOMEM;
	for (size_t i = 0; i < a->nfuncs && !err; i++) {
		const struct sp_agg_func *f = &a->funcs[i];
		size_t start = l->text.len;
		char tail[32];
		int n = 0;
		if (f->line)
			n = snprintf(tail, sizeof(tail), ":%" PRIu32, f->line);
		snprintf(tail + n, sizeof(tail) - (size_t)n, "%s", f->is_inline ? "_[i]" : "");
		err = append_name(&l->text, f->name);
		if (!err)
			err = sp_buf_append(&l->text, tail, strlen(tail));
		if (!err)
			err = intern_label(l, start, &l->of_func[i]);
	}
	return err;
}

static void release_labels(struct labels *l)
{
	sp_buf_release(&l->text);
	free(l->off);
	free(l->of_func);
	sp_map_release(&l->index);
}

/* Stacks merged by labels: a tree over a->nodes, where functions with one label meet. */
struct lnode {
	uint32_t parent, label;
	uint32_t child, next; /* first child, next sibling; 0 ends (node 0 is the root) */
	uint64_t count;       /* samples whose stack is exactly this path */
};

/*
 * One entry of a sibling set in output order: the node's own line ("P;label")
 * or the lines below it ("P;label;..."), which sort apart: strcmp puts
 * "a;x" after "a!" but "a" before it.
 */
struct item {
	uint32_t node;
	bool below;
	size_t path_len; /* the parent's path text length */
};

struct folded {
	const struct sp_agg *a;
	struct lnode *nodes;
	size_t n, cap;
	struct sp_map index; /* parent << 32 | label -> node */
	const struct labels *lab;
	const char *empty;   /* the "[empty]" pseudo-label, at the root only */
};

static const char *item_label(const struct folded *fo, const struct item *it)
{
	return it->node == UINT32_MAX ? fo->empty : label_text(fo->lab, fo->nodes[it->node].label);
}

/* The order strcmp gives the lines: own line as "label\0", lines below as "label;". */
static int by_text(const void *pa, const void *pb, void *ctx)
{
	const struct folded *fo = ctx;
	const struct item *x = pa, *y = pb;
	const unsigned char *s = (const unsigned char *)item_label(fo, x);
	const unsigned char *t = (const unsigned char *)item_label(fo, y);
	for (;; s++, t++) {
		int c = *s ? *s : x->below ? ';' : 0;
		int d = *t ? *t : y->below ? ';' : 0;
		if (c != d)
			return c - d;
		if (!*s || !*t)
			return 0;
	}
}

static int lchild(struct folded *fo, uint32_t parent, uint32_t label, uint32_t *id)
{
	uint64_t key = (uint64_t)parent << 32 | label;
	if (sp_map_get(&fo->index, key, id))
		return 0;
	int err = sp_array_reserve((void **)&fo->nodes, &fo->cap, fo->n + 1, sizeof(*fo->nodes));
	if (!err)
		err = sp_map_put(&fo->index, key, (uint32_t)fo->n);
	if (err)
		return err;
	fo->nodes[fo->n] = (struct lnode){.parent = parent, .label = label,
					  .next = fo->nodes[parent].child};
	fo->nodes[parent].child = *id = (uint32_t)fo->n++;
	return 0;
}

/* Push node's children (and the empty line at the root) as items, in reverse text order. */
static int push_children(struct folded *fo, uint32_t node, uint64_t empty, size_t path_len,
			 struct item **stack, size_t *sp, size_t *cap)
{
	size_t base = *sp;
	for (uint32_t c = fo->nodes[node].child; c; c = fo->nodes[c].next)
		for (int below = 0; below < 2; below++) {
			if (below ? !fo->nodes[c].child : !fo->nodes[c].count)
				continue;
			if (sp_array_reserve((void **)stack, cap, *sp + 1, sizeof(**stack)))
				return -ENOMEM;
			(*stack)[(*sp)++] = (struct item){c, below, path_len};
		}
	if (empty) {
		if (sp_array_reserve((void **)stack, cap, *sp + 1, sizeof(**stack)))
			return -ENOMEM;
		(*stack)[(*sp)++] = (struct item){UINT32_MAX, false, 0};
	}
	if (*sp - base < 2)
		return 0;
	qsort_r(*stack + base, *sp - base, sizeof(**stack), by_text, fo);
	for (size_t i = base, j = *sp - 1; i < j; i++, j--) {
		struct item t = (*stack)[i];
		(*stack)[i] = (*stack)[j];
		(*stack)[j] = t;
	}
	return 0;
}

/* The label of a node of the merged stacks: its function's, or the marker's (label 0). */
static uint32_t node_label(const struct folded *fo, uint32_t agg_node)
{
	const struct sp_agg_node *nd = &fo->a->nodes[agg_node];
	return nd->func < fo->a->nfuncs ? fo->lab->of_func[nd->func] : 0;
}

/*
 * Each frame gives its containing function, then the functions inlined
 * into it, innermost last; a truncated stack starts with "[truncated]"
 * (label 0), so it never merges with one that reached its real root.
 */
static int merge_stacks(struct folded *fo)
{
	const struct sp_agg *a = fo->a;
	uint32_t *lnode = malloc((a->nnodes ? a->nnodes : 1) * sizeof(*lnode));
	int err = lnode ? 0 : -ENOMEM;
	if (!err)
		lnode[0] = 0;
	for (size_t v = 1; !err && v < a->nnodes; v++) {
		if (!(err = lchild(fo, lnode[a->nodes[v].parent], node_label(fo, (uint32_t)v),
				   &lnode[v])))
			fo->nodes[lnode[v]].count =
				sp_u64_add_sat(fo->nodes[lnode[v]].count, a->nodes[v].count);
	}
	free(lnode);
	return err;
}

static int graft_child(void *ctx, uint32_t parent, uint32_t agg_node, uint32_t *made)
{
	struct folded *fo = ctx;
	return lchild(fo, parent, node_label(fo, agg_node), made);
}

/*
 * --group-by: the same stacks under one root frame per process or thread,
 * "NAME (pid P)" or "NAME (pid P, tid T)"; samples without a stack are
 * "[empty]" above their group's root.
 */
static int merge_grouped(struct folded *fo, struct labels *lab, uint32_t kind)
{
	struct sp_agg_groups g;
	struct sp_agg_graft gr;
	struct sp_agg_group_count *counts = NULL;
	uint32_t *root = NULL, empty;
	size_t n = 0, start = lab->text.len;
	sp_agg_graft_init(&gr, fo->a, graft_child, fo);
	int err = sp_agg_groups_build(&g, fo->a, kind);
	if (!err && !(err = sp_buf_append(&lab->text, fo->empty, strlen(fo->empty))))
		err = intern_label(lab, start, &empty);
	if (!err && !(root = malloc((g.n ? g.n : 1) * sizeof(*root))))
		err = -ENOMEM;
	for (size_t i = 0; !err && i < g.n && g.v[i].samples; i++) {
		uint32_t label;
		start = lab->text.len;
		if (!(err = sp_agg_group_label(&g, i, &lab->text))) {
			fold_safe(&lab->text, start);
			err = intern_label(lab, start, &label);
		}
		if (!err)
			err = lchild(fo, 0, label, &root[i]);
	}
	if (!err)
		err = sp_agg_group_counts(fo->a, &g, &counts, &n);
	for (size_t i = 0; !err && i < n; i++) {
		uint32_t at;
		if (counts[i].node)
			err = sp_agg_graft(&gr, counts[i].group, root[counts[i].group], counts[i].node,
					   &at);
		else
			err = lchild(fo, root[counts[i].group], empty, &at);
		if (!err)
			fo->nodes[at].count = sp_u64_add_sat(fo->nodes[at].count, counts[i].count);
	}
	free(counts);
	free(root);
	sp_agg_graft_release(&gr);
	sp_agg_groups_release(&g);
	return err;
}

/*
 * Every stack by labels, root first, in the order of their text, written
 * depth first with one path buffer: time proportional to the output.
 */
int sp_report_folded(struct sp_agg *a, const struct sp_report_opts *opts, FILE *out)
{
	struct labels lab = {0};
	struct folded fo = {.a = a, .lab = &lab, .empty = "[empty]"};
	struct sp_buf path;
	struct item *stack = NULL;
	size_t sp = 0, cap = 0;
	bool grouped = opts && opts->group_by != SP_GROUP_NONE;
	int err;
	sp_buf_init(&path);
	sp_buf_init(&lab.text);
	sp_map_init(&lab.index);
	sp_map_init(&fo.index);
	if ((err = build_labels(a, &lab)))
		goto out;
	if (sp_array_reserve((void **)&fo.nodes, &fo.cap, 1, sizeof(*fo.nodes))) {
		err = -ENOMEM;
		goto out;
	}
	fo.nodes[0] = (struct lnode){0};
	fo.n = 1;
	if ((err = grouped ? merge_grouped(&fo, &lab, opts->group_by) : merge_stacks(&fo)))
		goto out;
	/* Empty stacks stay visible: a flame graph without them overstates every share. */
	if ((err = push_children(&fo, 0, grouped ? 0 : a->empty_samples, 0, &stack, &sp, &cap)))
		goto out;
	while (sp) {
		struct item it = stack[--sp];
		const char *text = item_label(&fo, &it);
		path.len = it.path_len;
		if ((path.len && (err = sp_buf_append(&path, ";", 1))) ||
		    (err = sp_buf_append(&path, text, strlen(text))))
			goto out;
		if (it.below) {
			if ((err = push_children(&fo, it.node, 0, path.len, &stack, &sp, &cap)))
				goto out;
			continue;
		}
		uint64_t count = it.node == UINT32_MAX ? a->empty_samples : fo.nodes[it.node].count;
		fwrite(path.data, 1, path.len, out);
		fprintf(out, " %" PRIu64 "\n", count);
	}
	err = 0;
out:
	free(stack);
	free(fo.nodes);
	sp_map_release(&fo.index);
	sp_buf_release(&path);
	release_labels(&lab);
	return err;
}
