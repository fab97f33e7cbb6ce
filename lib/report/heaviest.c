/* SPDX-License-Identifier: MIT */
/* The heaviest complete stacks, merged by function sequence (the text report, the JSON summary). */
#include "report/views.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int func_cmp(const struct sp_agg *a, uint32_t x, uint32_t y)
{
	if (x >= a->nfuncs || y >= a->nfuncs)
		return (x >= a->nfuncs) - (y >= a->nfuncs);
	return sp_text_name_cmp(&a->funcs[x], &a->funcs[y]);
}

/*
 * Heaviest first; ties by names, leaf first, then the shorter stack.  The
 * walk stops where the two paths meet, so comparing two stacks costs their
 * own nodes, never the depth they share.
 */
static int by_weight(const struct sp_agg *a, uint32_t x, uint32_t y)
{
	const struct sp_agg_node *nx = &a->nodes[x], *ny = &a->nodes[y];
	if (nx->count != ny->count)
		return nx->count < ny->count ? 1 : -1;
	while (x != y && x && y) {
		int d = func_cmp(a, a->nodes[x].func, a->nodes[y].func);
		if (d)
			return d;
		x = a->nodes[x].parent;
		y = a->nodes[y].parent;
	}
	return x == y ? 0 : x ? 1 : -1;
}

int sp_agg_heaviest(struct sp_agg *a, size_t max, uint32_t **out, size_t *nout)
{
	uint32_t *top = malloc((max ? max : 1) * sizeof(*top));
	size_t n = 0;
	if (!top)
		return -ENOMEM;
	/* A bounded selection: each candidate costs a comparison or a binary search. */
	for (size_t v = 1; v < a->nnodes && max; v++) {
		const struct sp_agg_node *nd = &a->nodes[v];
		if (!nd->count || nd->truncated)
			continue;
		if (n == max && by_weight(a, (uint32_t)v, top[n - 1]) >= 0)
			continue;
		size_t lo = sp_partition_point(n, i, by_weight(a, (uint32_t)v, top[i]) >= 0);
		if (n < max)
			n++;
		memmove(top + lo + 1, top + lo, (n - 1 - lo) * sizeof(*top));
		top[lo] = (uint32_t)v;
	}
	*out = top;
	*nout = n;
	return 0;
}
