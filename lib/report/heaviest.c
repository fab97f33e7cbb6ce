/* SPDX-License-Identifier: MIT */
/* The heaviest complete stacks, merged by function sequence (the text report, the JSON summary). */
#include "report/views.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define name_cmp sp_text_name_cmp

struct stack_sort {
	const struct sp_agg *agg;
	const struct sp_seq_groups *groups;
};

static int by_count(const void *pa, const void *pb, void *ctx)
{
	const struct stack_sort *c = ctx;
	const struct sp_seq_group *x = &c->groups->groups[*(const uint32_t *)pa];
	const struct sp_seq_group *y = &c->groups->groups[*(const uint32_t *)pb];
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	const uint32_t *xi = c->groups->ids + x->off, *yi = c->groups->ids + y->off;
	for (uint32_t i = 0; i < x->len && i < y->len; i++) {
		int d = name_cmp(&c->agg->funcs[xi[i]], &c->agg->funcs[yi[i]]);
		if (d)
			return d;
	}
	return x->len < y->len ? -1 : x->len > y->len;
}

/* Complete stacks merged by their function sequence: ids differ when addresses do. */
int sp_agg_heaviest(struct sp_agg *a, struct sp_seq_groups *g, uint32_t **order_out)
{
	uint32_t *seq = NULL, *order = NULL;
	size_t seq_cap = 0;
	int err = 0;
	for (size_t sid = 1; sid < a->nstacks; sid++) {
		if (!a->stack_count[sid] || a->stack_truncated[sid])
			continue;
		const uint32_t *fr;
		size_t n = sp_agg_stack_frames(a, (uint32_t)sid, &fr);
		if (n > seq_cap) {
			free(seq);
			seq_cap = n * 2;
			if (!(seq = malloc(seq_cap * sizeof(*seq)))) {
				err = -ENOMEM;
				goto out;
			}
		}
		uint32_t len = 0;
		for (size_t i = 0; i < n; i++) {
			const uint32_t *funcs;
			size_t k = sp_agg_frame_funcs(a, fr[i], &funcs);
			if (len + k > seq_cap) {
				seq_cap = (len + k) * 2;
				uint32_t *bigger = realloc(seq, seq_cap * sizeof(*seq));
				if (!bigger) {
					err = -ENOMEM;
					goto out;
				}
				seq = bigger;
			}
			/* A marker inside a damaged stack has no functions (and no array). */
			if (k)
				memcpy(seq + len, funcs, k * sizeof(*seq));
			len += (uint32_t)k;
		}
		if (len && (err = sp_seq_groups_add(g, seq, len, a->stack_count[sid])))
			goto out;
	}
	if (!(order = malloc((g->ngroups ? g->ngroups : 1) * sizeof(*order)))) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < g->ngroups; i++)
		order[i] = (uint32_t)i;
	struct stack_sort ctx = {.agg = a, .groups = g};
	qsort_r(order, g->ngroups, sizeof(*order), by_count, &ctx);
	*order_out = order;
	order = NULL;
out:
	free(seq);
	free(order);
	return err;
}
