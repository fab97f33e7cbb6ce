/* SPDX-License-Identifier: MIT */
/* The processes and threads of a spool as groups of samples: --group-by's sections, roots and the header's busiest. */
#include "report/aggregate.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static int busiest_first(const void *pa, const void *pb, void *ctx)
{
	const struct sp_agg_group *v = ctx;
	const struct sp_agg_group *x = &v[*(const uint32_t *)pa], *y = &v[*(const uint32_t *)pb];
	if (x->samples != y->samples)
		return x->samples < y->samples ? 1 : -1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* g->v sorted busiest first, g->of_thread following. */
static int sort_groups(struct sp_agg_groups *g, size_t nthreads)
{
	size_t n = g->n ? g->n : 1;
	uint32_t *order = malloc(n * sizeof(*order)), *rank = malloc(n * sizeof(*rank));
	struct sp_agg_group *v = malloc(n * sizeof(*v));
	int err = order && rank && v ? 0 : -ENOMEM;
	if (!err) {
		for (size_t i = 0; i < g->n; i++)
			order[i] = (uint32_t)i;
		qsort_r(order, g->n, sizeof(*order), busiest_first, g->v);
		for (size_t i = 0; i < g->n; i++) {
			v[i] = g->v[order[i]];
			rank[order[i]] = (uint32_t)i;
		}
		for (size_t t = 0; t < nthreads; t++)
			g->of_thread[t] = rank[g->of_thread[t]];
		free(g->v);
		g->v = v;
		v = NULL;
	}
	free(order);
	free(rank);
	free(v);
	return err;
}

int sp_agg_groups_build(struct sp_agg_groups *g, const struct sp_agg *a, uint32_t kind)
{
	const struct sp_spool *s = a->spool;
	size_t nthreads = sp_spool_thread_count(s), nsamples = sp_spool_sample_count(s);
	memset(g, 0, sizeof(*g));
	g->kind = kind;
	if (kind != SP_GROUP_PROCESS && kind != SP_GROUP_THREAD)
		return -SP_E_BAD_ARG;
	g->v = calloc(nthreads ? nthreads : 1, sizeof(*g->v));
	g->of_thread = malloc((nthreads ? nthreads : 1) * sizeof(*g->of_thread));
	struct sp_map by_pid;
	sp_map_init(&by_pid);
	int err = g->v && g->of_thread ? 0 : -ENOMEM;
	for (uint32_t t = 0; !err && t < nthreads; t++) {
		const struct sp_thread *th = sp_spool_thread(s, t);
		uint32_t j = (uint32_t)g->n;
		if (kind == SP_GROUP_PROCESS && sp_map_get(&by_pid, (uint32_t)th->pid, &j)) {
			if (!g->v[j].name[0] || th->tid == th->pid)
				g->v[j].name = th->name; /* the main thread names its process */
		} else {
			g->v[g->n++] = (struct sp_agg_group){
				.scope = {.kind = kind, .pid = th->pid, .thread = t},
				.pid = th->pid,
				.tid = kind == SP_GROUP_PROCESS ? th->pid : th->tid,
				.name = th->name,
			};
			if (kind == SP_GROUP_PROCESS)
				err = sp_map_put(&by_pid, (uint32_t)th->pid, j);
		}
		g->of_thread[t] = j;
	}
	sp_map_release(&by_pid);
	for (size_t i = 0; !err && i < nsamples; i++) {
		const struct sp_sample *smp = sp_spool_sample(s, i);
		if (sp_agg_kept(a, i) && smp->thread < nthreads)
			g->v[g->of_thread[smp->thread]].samples += sp_agg_weight(a, smp);
	}
	/* A time metric: the off-CPU intervals' time too (docs/DESIGN.md, decision 12). */
	for (size_t i = 0; !err && a->metric != SP_METRIC_CPU && i < sp_spool_offcpu_count(s); i++) {
		const struct sp_offcpu *o = sp_spool_offcpu(s, i);
		if (o->thread < nthreads && sp_agg_interval_kept(a, o))
			g->v[g->of_thread[o->thread]].samples += o->duration_ns / 1000;
	}
	return err ? err : sort_groups(g, nthreads);
}

void sp_agg_groups_release(struct sp_agg_groups *g)
{
	free(g->v);
	free(g->of_thread);
	memset(g, 0, sizeof(*g));
}

int sp_agg_group_label(const struct sp_agg_groups *g, size_t i, struct sp_buf *b)
{
	const struct sp_agg_group *gr = &g->v[i];
	char ids[48];
	if (g->kind == SP_GROUP_PROCESS)
		snprintf(ids, sizeof(ids), " (pid %" PRId32 ")", gr->pid);
	else
		snprintf(ids, sizeof(ids), " (pid %" PRId32 ", tid %" PRId32 ")", gr->pid, gr->tid);
	int err = sp_buf_put_printable(b, gr->name[0] ? gr->name : "[unknown]");
	return err ? err : sp_buf_append(b, ids, strlen(ids));
}

/* Add w to (group, node)'s count in *v (made on first use, index maps key -> entry). */
static int add_group_count(struct sp_agg_group_count **v, size_t *n, size_t *cap,
			   struct sp_map *index, uint32_t group, uint32_t node, uint64_t w)
{
	uint64_t key = (uint64_t)group << 32 | node;
	uint32_t at;
	int err = 0;
	if (!sp_map_get(index, key, &at)) {
		at = (uint32_t)*n;
		if (!(err = sp_array_reserve((void **)v, cap, *n + 1, sizeof(**v))) &&
		    !(err = sp_map_put(index, key, at)))
			(*v)[(*n)++] = (struct sp_agg_group_count){.group = group, .node = node};
	}
	if (!err)
		(*v)[at].count += w;
	return err;
}

int sp_agg_group_counts(const struct sp_agg *a, const struct sp_agg_groups *g,
			struct sp_agg_group_count **out, size_t *n)
{
	const struct sp_spool *s = a->spool;
	size_t nsamples = sp_spool_sample_count(s), nthreads = sp_spool_thread_count(s), cap = 0;
	struct sp_agg_group_count *v = NULL;
	struct sp_map index;
	sp_map_init(&index);
	int err = 0;
	*n = 0;
	for (size_t i = 0; !err && i < nsamples; i++) {
		const struct sp_sample *smp = sp_spool_sample(s, i);
		if (!sp_agg_kept(a, i) || smp->thread >= nthreads)
			continue;
		uint32_t sid = smp->stack_id < a->nstacks ? smp->stack_id : 0;
		err = add_group_count(&v, n, &cap, &index, g->of_thread[smp->thread],
				      sid ? a->stack_node[sid] : 0, sp_agg_weight(a, smp));
	}
	/*
	 * A time metric: each interval at its [blocked] or [preempted] node
	 * (docs/DESIGN.md, decision 12).
	 */
	for (size_t i = 0; !err && a->metric != SP_METRIC_CPU && i < sp_spool_offcpu_count(s); i++) {
		const struct sp_offcpu *o = sp_spool_offcpu(s, i);
		uint32_t sid = o->stack_id < a->nstacks ? o->stack_id : 0, node;
		uint32_t func = a->cause_func[(o->flags & SP_OFFCPU_PREEMPTED) != 0];
		if (o->thread >= nthreads || !(o->duration_ns / 1000) || !sp_agg_interval_kept(a, o) ||
		    !sp_map_get(&a->node_index, (uint64_t)a->stack_node[sid] << 32 | func, &node))
			continue;
		err = add_group_count(&v, n, &cap, &index, g->of_thread[o->thread], node,
				      o->duration_ns / 1000);
	}
	sp_map_release(&index);
	if (err) {
		free(v);
		*n = 0;
		v = NULL;
	}
	*out = v;
	return err;
}

void sp_agg_graft_init(struct sp_agg_graft *gr, const struct sp_agg *a,
		       int (*child)(void *ctx, uint32_t parent, uint32_t agg_node, uint32_t *made),
		       void *ctx)
{
	memset(gr, 0, sizeof(*gr));
	gr->a = a;
	gr->child = child;
	gr->ctx = ctx;
	sp_map_init(&gr->made);
}

void sp_agg_graft_release(struct sp_agg_graft *gr)
{
	sp_map_release(&gr->made);
	free(gr->path);
	memset(gr, 0, sizeof(*gr));
}

int sp_agg_graft(struct sp_agg_graft *gr, uint32_t group, uint32_t root, uint32_t agg_node,
		 uint32_t *out)
{
	const struct sp_agg *a = gr->a;
	uint64_t base = (uint64_t)group << 32;
	uint32_t at = root, v = agg_node;
	size_t n = 0;
	/* Up to the first ancestor grafted already (or the root), then down making each. */
	while (v && v < a->nnodes && !sp_map_get(&gr->made, base | v, &at)) {
		if (sp_array_reserve((void **)&gr->path, &gr->path_cap, n + 1, sizeof(*gr->path)))
			return -ENOMEM;
		gr->path[n++] = v;
		v = a->nodes[v].parent;
	}
	while (n-- > 0) {
		int err = gr->child(gr->ctx, at, gr->path[n], &at);
		if (!err)
			err = sp_map_put(&gr->made, base | gr->path[n], at);
		if (err)
			return err;
	}
	*out = at;
	return 0;
}
