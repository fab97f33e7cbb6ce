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

/*
 * Bottom-up, one level at a time: each tree node keeps the merged-stack
 * nodes that reach it (cursors), and only a node the print shows (over the
 * limit) moves its cursors one caller up to make its children.  Two cursors
 * of one tree node are never the same merged node, so the work is bounded by
 * what is shown, not by the stacks' depths.
 */
struct cursor {
	uint32_t tree_node; /* while grouping: the child it goes to */
	uint32_t node;      /* a node of a->nodes */
	uint64_t count;
};

static int by_tree_node(const void *pa, const void *pb)
{
	const struct cursor *x = pa, *y = pb;
	return (x->tree_node > y->tree_node) - (x->tree_node < y->tree_node);
}

static int build_inverted(struct tree *t, double limit)
{
	struct sp_agg *a = t->agg;
	struct cursor *pool = NULL, *next = NULL;
	size_t npool = 0, pool_cap = 0, nnext = 0, next_cap = 0;
	size_t *off = NULL, *len = NULL, off_cap = 0, len_cap = 0;
	int err = 0;
	/* Level 1: the leaf functions. */
	for (size_t v = 1; !err && v < a->nnodes; v++) {
		if (!a->nodes[v].count)
			continue;
		uint32_t id;
		if ((err = child_of(t, ROOT, func_of(a, (uint32_t)v), &id)) ||
		    (err = sp_array_reserve((void **)&next, &next_cap, nnext + 1, sizeof(*next))))
			break;
		t->nodes[id].total += a->nodes[v].count;
		next[nnext++] = (struct cursor){id, (uint32_t)v, a->nodes[v].count};
	}
	for (size_t done = 0; !err;) {
		/* Hand the grouped cursors to their tree nodes. */
		if (nnext > 1)
			qsort(next, nnext, sizeof(*next), by_tree_node);
		if ((err = sp_array_reserve((void **)&off, &off_cap, t->n, sizeof(*off))) ||
		    (err = sp_array_reserve((void **)&len, &len_cap, t->n, sizeof(*len))) ||
		    (err = sp_array_reserve((void **)&pool, &pool_cap, npool + nnext, sizeof(*pool))))
			break;
		for (size_t i = 0; i < nnext; i++) {
			uint32_t id = next[i].tree_node;
			if (!i || next[i - 1].tree_node != id) {
				off[id] = npool;
				len[id] = 0;
			}
			pool[npool++] = next[i];
			len[id]++;
		}
		nnext = 0;
		size_t level_end = t->n;
		/* Expand the nodes made by the last level that the print will show. */
		for (; !err && done < level_end; done++) {
			struct node *nd = &t->nodes[done];
			if (sp_text_pct(nd->total, a->whole) < limit)
				continue;
			for (size_t i = 0; !err && i < len[done]; i++) {
				struct cursor c = pool[off[done] + i];
				uint32_t up = a->nodes[c.node].parent, id;
				if (!up) {
					t->nodes[done].self += c.count; /* the stack's root */
					continue;
				}
				if ((err = child_of(t, (uint32_t)done, func_of(a, up), &id)) ||
				    (err = sp_array_reserve((void **)&next, &next_cap, nnext + 1,
							    sizeof(*next))))
					break;
				t->nodes[id].total += c.count;
				next[nnext++] = (struct cursor){id, up, c.count};
			}
		}
		if (!nnext)
			break;
	}
	free(pool);
	free(next);
	free(off);
	free(len);
	return err;
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

/* One node's line: shares, counts with -n, the indented function and its module. */
static void put_node(const struct tree *t, const struct node *nd, size_t depth, bool inverted,
		     const struct sp_report_opts *opts, FILE *out)
{
	const struct sp_agg *a = t->agg;
	size_t width = opts->width >= SP_TEXT_MIN_COLUMNS ? opts->width : SP_TEXT_COLUMNS;
	size_t left = inverted ? 9 : 17;
	if (inverted)
		fprintf(out, "%6.1f%% ", sp_text_pct(nd->total, a->whole));
	else
		fprintf(out, "%6.1f%% %6.1f%% ", sp_text_pct(nd->total, a->whole),
			sp_text_pct(nd->self, a->whole));
	if (opts->show_counts) {
		fprintf(out, "%9" PRIu64 " ", nd->total);
		left += 10;
		if (!inverted) {
			fprintf(out, "%9" PRIu64 " ", nd->self);
			left += 10;
		}
	}
	fputc(' ', out);
	/* Deep stacks: the indentation stops at 2/5 of the line; a depth mark says how deep. */
	size_t indent = depth * INDENT, cap = (width - left) * 2 / 5;
	size_t keep = NAME_MIN + 3 + 8 + 7; /* a name, a cut module, a mark "[12345] " */
	cap = cap + keep > width - left ? width - left - keep : cap;
	if (indent > cap) {
		int n = fprintf(out, "%*s[%zu] ", (int)cap, "", depth);
		indent = n > 0 ? (size_t)n : cap;
	} else {
		fprintf(out, "%*s", (int)indent, "");
	}
	if (nd->func == MARKER) {
		fputs("[truncated]\n", out);
		return;
	}
	const struct sp_agg_func *f = &a->funcs[nd->func];
	size_t mw = strlen(f->module) < MODULE_MAX ? strlen(f->module) : MODULE_MAX;
	size_t avail = width - left - indent; /* at least 3/5 of the line less a depth mark */
	if (avail < NAME_MIN + 3 + mw) /* the module gives way first */
		mw = avail > NAME_MIN + 3 + 8 ? avail - NAME_MIN - 3 : 8;
	size_t m = mw + 3; /* " (module)" */
	size_t room = avail > m + NAME_MIN ? avail - m : NAME_MIN;
	sp_text_put_func(out, f, room, false);
	fputs(" (", out);
	sp_text_put_cell(out, f->module, mw, false);
	fputs(")\n", out);
}

/* Depth-first, heaviest child first, skipping nodes under the limit (and all below them). */
static int print(struct tree *t, double limit, bool inverted, const struct sp_report_opts *opts,
		 FILE *out)
{
	struct todo {
		uint32_t node;
		uint32_t depth;
	} *stack = NULL;
	uint32_t *kids = NULL, parent = ROOT, d = 0;
	size_t sp = 0, cap = 0, kids_cap = 0, printed = 0;
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
		if ((err = sp_array_reserve((void **)&stack, &cap, sp + nk, sizeof(*stack))))
			goto out;
		for (size_t i = nk; i > 0; i--)
			stack[sp++] = (struct todo){kids[i - 1], parent == ROOT ? 0 : d + 1};
		if (!sp)
			break;
		sp--;
		parent = stack[sp].node;
		d = stack[sp].depth;
		put_node(t, &t->nodes[parent], d, inverted, opts, out);
		printed++;
	}
	if (!printed && limit > 0)
		fprintf(out, "  (no stack over %.2g%% of the samples)\n", limit);
	else if (!printed)
		fprintf(out, "  (no stacks)\n");
out:
	free(stack);
	free(kids);
	return err;
}

int sp_report_tree(struct sp_agg *a, const struct sp_report_opts *opts, FILE *out)
{
	struct tree t = {.agg = a, .first_root = ROOT};
	sp_map_init(&t.index);
	double limit = opts->percent_limit >= 0 ? opts->percent_limit : TREE_LIMIT_DEFAULT;
	bool inverted = opts->inverted;
	int err = inverted ? build_inverted(&t, limit) : build_top_down(&t);
	if (!err) {
		if (inverted)
			fprintf(out, "\nCallers (bottom-up: each leaf function, then its callers)\n"
				     "  Self%%%s  Function (module)\n",
				opts->show_counts ? "   Samples" : "");
		else
			fprintf(out, "\nCall tree (top-down: callees indented under callers)\n"
				     " Total%%   Self%%%s  Function (module)\n",
				opts->show_counts ? "     Total      Self" : "");
		err = print(&t, limit, inverted, opts, out);
	}
	if (!err && limit > 0)
		fprintf(out, "(entries under %.2g%% not shown)\n", limit);
	sp_map_release(&t.index);
	free(t.nodes);
	return err;
}
