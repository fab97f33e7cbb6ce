/* SPDX-License-Identifier: MIT */
/* Call trees of the text report: top-down (callers above callees) and bottom-up (callers of each leaf). */
#include "report/views.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define TREE_LIMIT_DEFAULT 0.5 /* percent: perf's default call-graph threshold */
#define INDENT 2
#define NAME_MIN 16
#define NAME_WANT 24 /* a name's own columns the module gives way to, down to 6 */
#define MODULE_MAX 20
#define ROOT UINT32_MAX
#define MARKER UINT32_MAX /* the function id of a truncation marker's node */

struct node {
	uint32_t func;    /* function id, or MARKER */
	uint32_t parent;  /* node id, or ROOT */
	uint32_t child, next; /* first child, next sibling: node ids, or ROOT */
	uint64_t total;   /* samples through this path */
	uint64_t self;    /* samples whose path ends here */
};

struct tree {
	struct sp_agg *agg;
	struct node *nodes;
	size_t n, cap;
	struct sp_map index; /* (parent + 1) << 32 | func -> node id */
	uint32_t first_root;
};

static int child_of(struct tree *t, uint32_t parent, uint32_t func, uint32_t *id)
{
	uint64_t key = ((uint64_t)(parent == ROOT ? 0 : parent + 1) << 32) | func;
	if (sp_map_get(&t->index, key, id))
		return 0;
	int err = sp_array_reserve((void **)&t->nodes, &t->cap, t->n + 1, sizeof(*t->nodes));
	if (!err)
		err = sp_map_put(&t->index, key, (uint32_t)t->n);
	if (err)
		return err;
	uint32_t *head = parent == ROOT ? &t->first_root : &t->nodes[parent].child;
	t->nodes[t->n] = (struct node){.func = func, .parent = parent, .child = ROOT,
				       .next = *head};
	*head = *id = (uint32_t)t->n++;
	return 0;
}

static uint32_t func_of(const struct sp_agg *a, uint32_t node)
{
	return a->nodes[node].func < a->nfuncs ? a->nodes[node].func : MARKER;
}

/* Top-down: the aggregation's merged stacks themselves (node v + 1 is tree node v). */
static int build_top_down(struct tree *t)
{
	struct sp_agg *a = t->agg;
	for (size_t v = 1; v < a->nnodes; v++) {
		uint32_t id, p = a->nodes[v].parent;
		int err = child_of(t, p ? p - 1 : ROOT, func_of(a, (uint32_t)v), &id);
		if (err)
			return err;
		t->nodes[id].total = a->nodes[v].total;
		t->nodes[id].self = a->nodes[v].count;
	}
	return 0;
}

static int by_weight(const void *pa, const void *pb, void *ctx)
{
	const struct tree *t = ctx;
	const struct node *x = &t->nodes[*(const uint32_t *)pa], *y = &t->nodes[*(const uint32_t *)pb];
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	if (x->func == MARKER || y->func == MARKER)
		return (x->func == MARKER) - (y->func == MARKER);
	return sp_text_name_cmp(&t->agg->funcs[x->func], &t->agg->funcs[y->func]);
}

/* Where a node's line puts things: columns before the name, its indentation, name and module widths. */
struct layout {
	size_t left, indent, room, mw;
	bool mark; /* the indentation stops: "[depth] " says how deep */
};

static struct layout layout_of(const struct tree *t, uint32_t func, size_t depth, bool inverted,
			       const struct sp_report_opts *opts)
{
	struct layout l = {.left = inverted ? 9 : 17};
	size_t width = opts->width >= SP_TEXT_MIN_COLUMNS ? opts->width : SP_TEXT_COLUMNS;
	if (opts->show_counts)
		l.left += inverted ? 10 : 20;
	/* Deep stacks: the indentation stops at 2/5 of the line; a depth mark says how deep. */
	size_t cap = (width - l.left) * 2 / 5;
	size_t keep = NAME_MIN + 3 + 8 + 7; /* a name, a cut module, a mark "[12345] " */
	cap = cap + keep > width - l.left ? width - l.left - keep : cap;
	l.indent = depth * INDENT;
	if (l.indent > cap) {
		char mark[32];
		int n = snprintf(mark, sizeof(mark), "[%zu] ", depth);
		l.indent = cap + (n > 0 ? (size_t)n : 0);
		l.mark = true;
	}
	if (func == MARKER)
		return l;
	const struct sp_agg_func *f = &t->agg->funcs[func];
	l.mw = strlen(f->module) < MODULE_MAX ? strlen(f->module) : MODULE_MAX;
	size_t avail = width - l.left - l.indent; /* at least 3/5 of the line less a depth mark */
	/* NAME_WANT columns of the name itself, past its marks (" [inline]", a line). */
	size_t fw = sp_text_func_width(f), need = NAME_WANT + (fw - strlen(f->name));
	need = need < fw ? need : fw;
	if (avail < need + 3 + l.mw) /* the module gives way first, down to 6 columns */
		l.mw = avail > need + 3 + 6 ? avail - need - 3 : 6;
	size_t m = l.mw + 3; /* " (module)" */
	l.room = avail > m + NAME_MIN ? avail - m : NAME_MIN;
	return l;
}

/*
 * One node's line: shares, counts with -n, the indented function and its
 * module; diff_at keeps in view where its name parts from a sibling's that
 * would be cut alike (sp_text_name_diffs_each).
 */
static void put_node(const struct tree *t, const struct node *nd, size_t depth, bool inverted,
		     const struct sp_report_opts *opts, size_t diff_at, FILE *out)
{
	const struct sp_agg *a = t->agg;
	struct layout l = layout_of(t, nd->func, depth, inverted, opts);
	if (inverted)
		fprintf(out, "%6.1f%% ", sp_text_pct(nd->total, a->whole));
	else
		fprintf(out, "%6.1f%% %6.1f%% ", sp_text_pct(nd->total, a->whole),
			sp_text_pct(nd->self, a->whole));
	if (opts->show_counts) {
		fprintf(out, "%9" PRIu64 " ", nd->total);
		if (!inverted)
			fprintf(out, "%9" PRIu64 " ", nd->self);
	}
	fputc(' ', out);
	if (l.mark) {
		char mark[32];
		int n = snprintf(mark, sizeof(mark), "[%zu] ", depth);
		fprintf(out, "%*s%s", (int)(l.indent - (n > 0 ? (size_t)n : 0)), "", mark);
	} else {
		fprintf(out, "%*s", (int)l.indent, "");
	}
	if (nd->func == MARKER) {
		fputs("[truncated]\n", out);
		return;
	}
	const struct sp_agg_func *f = &a->funcs[nd->func];
	sp_text_put_func_at(out, f, l.room, false, diff_at);
	fputs(" (", out);
	sp_text_put_cell(out, f->module, l.mw, false);
	fputs(")\n", out);
}

/*
 * Where each of the siblings shown (their functions kid_funcs[0, nk), MARKER
 * for a marker, at depth) parts from another whose name would be cut alike,
 * into diff (SIZE_MAX: nowhere).
 */
static int sibling_diffs(const struct tree *t, const uint32_t *kid_funcs, size_t nk, size_t depth,
			 bool inverted, const struct sp_report_opts *opts, size_t *diff)
{
	const struct sp_agg_func **funcs = malloc((nk ? nk : 1) * sizeof(*funcs));
	size_t *widths = malloc((nk ? nk : 1) * sizeof(*widths)), *d = NULL, n = 0, *at = NULL;
	at = malloc((nk ? nk : 1) * sizeof(*at));
	int err = funcs && widths && at ? 0 : -ENOMEM;
	for (size_t i = 0; i < nk && !err; i++) {
		diff[i] = SIZE_MAX;
		if (kid_funcs[i] == MARKER)
			continue;
		widths[n] = layout_of(t, kid_funcs[i], depth, inverted, opts).room;
		funcs[n] = &t->agg->funcs[kid_funcs[i]];
		at[n++] = i;
	}
	if (!err && n > 1 && !(err = sp_text_name_diffs_each(funcs, widths, n, &d)))
		for (size_t j = 0; j < n; j++)
			diff[at[j]] = d[j];
	free(d);
	free(funcs);
	free(widths);
	free(at);
	return err;
}

/* Depth-first, heaviest child first, skipping nodes under the limit (and all below them). */
static int print(struct tree *t, double limit, bool inverted, const struct sp_report_opts *opts,
		 FILE *out)
{
	struct todo {
		uint32_t node;
		uint32_t depth;
		size_t diff_at;
	} *stack = NULL;
	uint32_t *kids = NULL, *kid_funcs = NULL, parent = ROOT, d = 0;
	size_t sp = 0, cap = 0, kids_cap = 0, printed = 0, *diffs = NULL, diffs_cap = 0, kf_cap = 0;
	int err = 0;
	for (;;) {
		/* Push parent's children, heaviest last so it pops first. */
		size_t nk = 0;
		for (uint32_t c = parent == ROOT ? t->first_root : t->nodes[parent].child; c != ROOT;
		     c = t->nodes[c].next) {
			if (sp_text_pct(t->nodes[c].total, t->agg->whole) < limit)
				continue;
			if ((err = sp_array_reserve((void **)&kids, &kids_cap, nk + 1, sizeof(*kids))))
				goto out;
			kids[nk++] = c;
		}
		if (nk > 1)
			qsort_r(kids, nk, sizeof(*kids), by_weight, t);
		uint32_t kd = parent == ROOT ? 0 : d + 1;
		if ((err = sp_array_reserve((void **)&stack, &cap, sp + nk, sizeof(*stack))) ||
		    (err = sp_array_reserve((void **)&diffs, &diffs_cap, nk ? nk : 1, sizeof(*diffs))) ||
		    (err = sp_array_reserve((void **)&kid_funcs, &kf_cap, nk ? nk : 1, sizeof(*kid_funcs))))
			goto out;
		for (size_t i = 0; i < nk; i++)
			kid_funcs[i] = t->nodes[kids[i]].func;
		if ((err = sibling_diffs(t, kid_funcs, nk, kd, inverted, opts, diffs)))
			goto out;
		for (size_t i = nk; i > 0; i--)
			stack[sp++] = (struct todo){kids[i - 1], kd, diffs[i - 1]};
		if (!sp)
			break;
		sp--;
		parent = stack[sp].node;
		d = stack[sp].depth;
		put_node(t, &t->nodes[parent], d, inverted, opts, stack[sp].diff_at, out);
		printed++;
	}
	if (!printed && limit > 0)
		fprintf(out, "  (no stack over %.2g%% of the samples)\n", limit);
	else if (!printed)
		fprintf(out, "  (no stacks)\n");
out:
	free(stack);
	free(kids);
	free(kid_funcs);
	free(diffs);
	return err;
}

/*
 * Bottom-up, printed as it is built, depth first: each entry holds the
 * merged-stack nodes that reach it (cursors), and only an entry the print
 * shows (over the limit) moves its cursors one caller up, into its
 * children, and lets go of them.  Each sampled stack is one cursor in one
 * list at a time, so memory stays with the merged stacks however much is
 * printed, and the work follows what is shown.
 */
struct cursor {
	uint32_t func;  /* while grouping: the function of node */
	uint32_t node;  /* a node of a->nodes */
	uint64_t count;
};

struct entry {
	uint32_t func;
	uint32_t depth;
	uint64_t total;
	struct cursor *cur; /* malloc'd, owned until expanded */
	size_t ncur;
	size_t diff_at;     /* where its name parts from a sibling's cut alike (put_node) */
};

static int by_func(const void *pa, const void *pb)
{
	const struct cursor *x = pa, *y = pb;
	return (x->func > y->func) - (x->func < y->func);
}

static int entry_weight(const void *pa, const void *pb, void *ctx)
{
	const struct sp_agg *a = ctx;
	const struct entry *x = pa, *y = pb;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	if (x->func == MARKER || y->func == MARKER)
		return (x->func == MARKER) - (y->func == MARKER);
	return sp_text_name_cmp(&a->funcs[x->func], &a->funcs[y->func]);
}

/*
 * Group cur[0..n) (each already moved to the node it stands for, func set)
 * by function into entries over the limit, pushed onto *stack lightest
 * first so the heaviest pops first.  Takes cur: freed here, or split into
 * the entries' own lists.
 */
static int push_groups(const struct tree *t, const struct sp_report_opts *opts, struct cursor *cur,
		       size_t n, uint32_t depth, double limit, struct entry **stack, size_t *sp,
		       size_t *cap)
{
	struct sp_agg *a = t->agg;
	int err = 0;
	size_t base = *sp;
	if (n > 1)
		qsort(cur, n, sizeof(*cur), by_func);
	for (size_t i = 0, j; !err && i < n; i = j) {
		uint64_t total = 0;
		for (j = i; j < n && cur[j].func == cur[i].func; j++)
			total = sp_u64_add_sat(total, cur[j].count);
		if (sp_text_pct(total, a->whole) < limit)
			continue;
		struct cursor *own = malloc((j - i) * sizeof(*own));
		if (!own || (err = sp_array_reserve((void **)stack, cap, *sp + 1, sizeof(**stack)))) {
			free(own);
			err = err ? err : -ENOMEM;
			break;
		}
		memcpy(own, cur + i, (j - i) * sizeof(*own));
		(*stack)[(*sp)++] = (struct entry){cur[i].func, depth, total, own, j - i, SIZE_MAX};
	}
	free(cur);
	if (*sp - base > 1) {
		qsort_r(*stack + base, *sp - base, sizeof(**stack), entry_weight, a);
		for (size_t x = base, y = *sp - 1; x < y; x++, y--) {
			struct entry e = (*stack)[x];
			(*stack)[x] = (*stack)[y];
			(*stack)[y] = e;
		}
	}
	/* Siblings: the entries pushed now. */
	size_t nk = *sp - base;
	uint32_t *funcs = nk > 1 && !err ? malloc(nk * sizeof(*funcs)) : NULL;
	size_t *diffs = funcs ? malloc(nk * sizeof(*diffs)) : NULL;
	if (nk > 1 && !err && !diffs)
		err = -ENOMEM;
	for (size_t i = 0; diffs && i < nk; i++)
		funcs[i] = (*stack)[base + i].func;
	if (diffs && !(err = sibling_diffs(t, funcs, nk, depth, true, opts, diffs)))
		for (size_t i = 0; i < nk; i++)
			(*stack)[base + i].diff_at = diffs[i];
	free(funcs);
	free(diffs);
	return err;
}

static int print_inverted(struct sp_agg *a, double limit, const struct sp_report_opts *opts,
			  FILE *out)
{
	struct tree t = {.agg = a};
	struct entry *stack = NULL;
	size_t sp = 0, cap = 0, printed = 0, n = 0;
	struct cursor *cur = NULL;
	int err = 0;
	/* The leaf functions: every node a stack ends at. */
	for (size_t v = 1; v < a->nnodes; v++)
		n += a->nodes[v].count ? 1 : 0;
	if (!(cur = malloc((n ? n : 1) * sizeof(*cur))))
		return -ENOMEM;
	n = 0;
	for (size_t v = 1; v < a->nnodes; v++)
		if (a->nodes[v].count)
			cur[n++] = (struct cursor){func_of(a, (uint32_t)v), (uint32_t)v,
						   a->nodes[v].count};
	err = push_groups(&t, opts, cur, n, 0, limit, &stack, &sp, &cap);
	while (!err && sp) {
		struct entry e = stack[--sp];
		struct node line = {.func = e.func, .total = e.total};
		put_node(&t, &line, e.depth, true, opts, e.diff_at, out);
		printed++;
		/* Its callers: each cursor one node up; a stack whose root this is ends. */
		size_t k = 0;
		for (size_t i = 0; i < e.ncur; i++) {
			uint32_t up = a->nodes[e.cur[i].node].parent;
			if (up)
				e.cur[k++] = (struct cursor){func_of(a, up), up, e.cur[i].count};
		}
		if (k)
			err = push_groups(&t, opts, e.cur, k, e.depth + 1, limit, &stack, &sp, &cap);
		else
			free(e.cur);
	}
	while (sp)
		free(stack[--sp].cur);
	free(stack);
	if (!err && !printed && limit > 0)
		fprintf(out, "  (no stack over %.2g%% of the samples)\n", limit);
	else if (!err && !printed)
		fprintf(out, "  (no stacks)\n");
	return err;
}

int sp_report_tree(struct sp_agg *a, const struct sp_report_opts *opts, FILE *out)
{
	struct tree t = {.agg = a, .first_root = ROOT};
	sp_map_init(&t.index);
	double limit = opts->percent_limit >= 0 ? opts->percent_limit : TREE_LIMIT_DEFAULT;
	bool inverted = opts->inverted;
	int err = 0;
	if (inverted) {
		fprintf(out, "\nCallers (bottom-up: each leaf function, then its callers)\n"
			     "  Self%%%s  Function (module)\n",
			opts->show_counts ? (a->unit.weighted ? "    Events" : "   Samples") : "");
		err = print_inverted(a, limit, opts, out);
	} else if (!(err = build_top_down(&t))) {
		fprintf(out, "\nCall tree (top-down: callees indented under callers)\n"
			     " Total%%   Self%%%s  Function (module)\n",
			opts->show_counts ? "     Total      Self" : "");
		err = print(&t, limit, false, opts, out);
	}
	if (!err && limit > 0)
		fprintf(out, "(entries under %.2g%% not shown)\n", limit);
	sp_map_release(&t.index);
	free(t.nodes);
	return err;
}
