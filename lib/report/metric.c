// SPDX-License-Identifier: MIT
/*
 * The time metrics of report --metric (docs/DESIGN.md, decision 12): off-CPU
 * time from record --off-cpu's intervals, and wall time, a clock event's
 * samples as CPU time plus those intervals.  Both count microseconds.
 */
#include "report/aggregate.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

bool sp_agg_in_scope(const struct sp_agg_scope *scope, uint32_t thread, const struct sp_thread *t)
{
	if (!scope || scope->kind == SP_GROUP_NONE)
		return true;
	if (scope->kind == SP_GROUP_THREAD)
		return thread == scope->thread;
	return t && t->pid == scope->pid;
}

uint64_t sp_agg_weight(const struct sp_agg *a, const struct sp_sample *smp)
{
	if (a->metric == SP_METRIC_CPU)
		return sp_sample_weight(&a->unit, smp);
	if (a->metric == SP_METRIC_OFF_CPU)
		return 0;
	/* A clock's sample is one period of CPU time (ns), counted in µs. */
	return (a->unit.period + 500) / 1000;
}

static bool interval_kept(const struct sp_agg *a, const struct sp_report_filter *f,
			  const struct sp_agg_scope *scope, const struct sp_offcpu *o,
			  uint64_t origin)
{
	const struct sp_thread *t = sp_spool_thread(a->spool, o->thread);
	return t && sp_agg_in_scope(scope, o->thread, t) && (!f || sp_filter_thread(f, t)) &&
	       (!f || sp_filter_time(f, o->start_ns, origin));
}

static uint32_t interval_stack(const struct sp_agg *a, const struct sp_offcpu *o)
{
	return o->stack_id < a->nstacks ? o->stack_id : 0;
}

int sp_agg_count_intervals(struct sp_agg *a, const struct sp_report_filter *f,
			   const struct sp_agg_scope *scope)
{
	const struct sp_spool *s = a->spool;
	uint64_t origin = sp_filter_origin_ns(s);
	for (size_t i = 0; i < sp_spool_offcpu_count(s); i++) {
		const struct sp_offcpu *o = sp_spool_offcpu(s, i);
		if (interval_kept(a, f, scope, o, origin)) {
			uint32_t sid = interval_stack(a, o);
			a->stack_count[sid] = sp_u64_add_sat(a->stack_count[sid], o->duration_ns / 1000);
		}
	}
	return 0;
}

void sp_agg_total_intervals(struct sp_agg *a, const struct sp_report_filter *f,
			    const struct sp_agg_scope *scope)
{
	const struct sp_spool *s = a->spool;
	uint64_t origin = sp_filter_origin_ns(s);
	for (size_t i = 0; i < sp_spool_offcpu_count(s); i++) {
		const struct sp_offcpu *o = sp_spool_offcpu(s, i);
		uint32_t sid = interval_stack(a, o);
		if (!interval_kept(a, f, scope, o, origin) || !a->stack_count[sid])
			continue;
		a->samples = sp_u64_add_sat(a->samples, o->duration_ns / 1000);
		uint64_t end = sp_u64_add_sat(o->start_ns, o->duration_ns);
		if (!a->nsampled && !a->nintervals)
			a->first_ns = o->start_ns, a->last_ns = end;
		if (o->start_ns < a->first_ns)
			a->first_ns = o->start_ns;
		if (end > a->last_ns)
			a->last_ns = end;
		a->nintervals++;
	}
}

bool sp_agg_interval_kept(const struct sp_agg *a, const struct sp_offcpu *o)
{
	uint32_t sid = interval_stack(a, o);
	return interval_kept(a, a->filter, NULL, o, sp_filter_origin_ns(a->spool)) &&
	       a->stack_count[sid];
}

bool sp_agg_interval_in(const struct sp_agg *a, const struct sp_offcpu *o)
{
	uint32_t sid = interval_stack(a, o);
	return interval_kept(a, a->filter, a->scope, o, sp_filter_origin_ns(a->spool)) &&
	       a->stack_count[sid];
}

void sp_agg_format_count(const struct sp_agg *a, uint64_t n, char *buf, size_t cap)
{
	if (a->metric == SP_METRIC_CPU)
		snprintf(buf, cap, "%" PRIu64, n);
	else
		snprintf(buf, cap, "%.1f ms", (double)n / 1000.0);
}

/* One thread's times for the header, ns. */
struct thread_time {
	uint32_t thread;
	uint64_t on, blocked, preempted, incomplete_ns, incomplete;
};

static int by_wall(const void *x, const void *y)
{
	const struct thread_time *a = x, *b = y;
	uint64_t wa = a->on + a->blocked + a->preempted, wb = b->on + b->blocked + b->preempted;
	if (wa != wb)
		return wa < wb ? 1 : -1;
	return a->thread < b->thread ? -1 : a->thread > b->thread;
}

#define HEADER_THREADS 8

void sp_text_offcpu_header(const struct sp_agg *a, FILE *out)
{
	const struct sp_spool *s = a->spool;
	if (!(sp_spool_meta(s)->flags & SP_META_OFF_CPU))
		return;
	size_t nthreads = sp_spool_thread_count(s);
	struct thread_time *t = calloc(nthreads ? nthreads : 1, sizeof(*t));
	if (!t)
		return;
	for (size_t i = 0; i < nthreads; i++)
		t[i].thread = (uint32_t)i;
	uint64_t origin = sp_filter_origin_ns(s);
	/* Only a clock's samples are CPU time. */
	for (size_t i = 0; a->unit.time && i < sp_spool_sample_count(s); i++) {
		const struct sp_sample *smp = sp_spool_sample(s, i);
		if (smp->thread < nthreads && (!a->filter || sp_filter_time(a->filter, smp->timestamp_ns, origin)))
			t[smp->thread].on += a->unit.period;
	}
	uint64_t all_blocked = 0, all_preempted = 0, all_incomplete = 0, n = 0;
	uint64_t proc = 0, proc_ns = 0, last = 0, last_ns = 0, no_stack_ns = 0;
	for (size_t i = 0; i < sp_spool_offcpu_count(s); i++) {
		const struct sp_offcpu *o = sp_spool_offcpu(s, i);
		if (o->thread >= nthreads ||
		    (a->filter && !sp_filter_time(a->filter, o->start_ns, origin)))
			continue;
		struct thread_time *tt = &t[o->thread];
		n++;
		if (o->flags & SP_OFFCPU_PROC_STACK) {
			proc++;
			proc_ns += o->duration_ns;
		} else if (o->flags & SP_OFFCPU_SAMPLE_STACK) {
			last++;
			last_ns += o->duration_ns;
		} else if (!o->stack_id) {
			no_stack_ns += o->duration_ns;
		}
		if (o->flags & SP_OFFCPU_INCOMPLETE) {
			tt->incomplete++;
			tt->incomplete_ns += o->duration_ns;
			all_incomplete++;
		}
		if (o->flags & SP_OFFCPU_PREEMPTED) {
			tt->preempted += o->duration_ns;
			all_preempted += o->duration_ns;
		} else {
			tt->blocked += o->duration_ns;
			all_blocked += o->duration_ns;
		}
	}
	fprintf(out, "Off-CPU:    %" PRIu64 " intervals, %.1f ms blocked or sleeping, %.1f ms preempted;"
		     " %" PRIu64 " incomplete (cut by the recording's ends or lost records)\n",
		n, (double)all_blocked / 1e6, (double)all_preempted / 1e6, all_incomplete);
	/* Kernel sampling denied: stacks read from the threads, or none (docs/DESIGN.md, decision 12). */
	if (proc || last)
		fprintf(out, "            kernel sampling denied: stacks read while blocked for %" PRIu64
			     " intervals (%.1f ms), the last CPU sample's for %" PRIu64 " preempted"
			     " (%.1f ms); %.1f ms without a stack\n",
			proc, (double)proc_ns / 1e6, last, (double)last_ns / 1e6,
			(double)no_stack_ns / 1e6);
	qsort(t, nthreads, sizeof(*t), by_wall);
	for (size_t i = 0; i < nthreads && i < HEADER_THREADS; i++) {
		const struct sp_thread *th = sp_spool_thread(s, t[i].thread);
		if (!th || (!t[i].on && !t[i].blocked && !t[i].preempted && !t[i].incomplete))
			continue;
		fprintf(out, "  %" PRId32 "/%" PRId32 " ", th->pid, th->tid);
		sp_fputs_printable(th->name[0] ? th->name : "[unknown]", out);
		fprintf(out, ": on-CPU %.1f ms, off-CPU %.1f ms (blocked or sleeping %.1f, preempted"
			     " %.1f), incomplete %" PRIu64 " (%.1f ms seen)\n",
			(double)t[i].on / 1e6, (double)(t[i].blocked + t[i].preempted) / 1e6,
			(double)t[i].blocked / 1e6, (double)t[i].preempted / 1e6, t[i].incomplete,
			(double)t[i].incomplete_ns / 1e6);
	}
	free(t);
}

void sp_agg_format_amount(const struct sp_agg *a, uint64_t n, char *buf, size_t cap)
{
	if (a->metric != SP_METRIC_CPU)
		snprintf(buf, cap, "%.1f ms", (double)n / 1000.0);
	else
		snprintf(buf, cap, "%" PRIu64 " %s", n, sp_sample_unit_noun(&a->unit, n));
}
