/* SPDX-License-Identifier: MIT */
/*
 * The exports (private): pprof, speedscope, perf-script text, the flame
 * graph, and what they share (lib/report/export.c: time order, interning
 * tables; export_flamegraph.c: XML text; what a sample stands for is
 * report/aggregate.h's sp_sample_unit).  Above
 * aggregation, beside the views; the dispatcher calls the entry points.
 */
#ifndef SP_REPORT_EXPORT_H
#define SP_REPORT_EXPORT_H

#include "report/aggregate.h"

#include <stdio.h>

int sp_export_pprof(struct sp_agg *a, const struct sp_report_opts *opts, FILE *out);
int sp_export_speedscope(struct sp_agg *a, const struct sp_report_opts *opts, FILE *out);
int sp_export_perf_script(struct sp_agg *a, FILE *out);
/* The interactive flame graph: one self-contained SVG, described in stackpulse-report(1). */
int sp_export_flamegraph(struct sp_agg *a, const struct sp_report_opts *opts, FILE *out);

/* ---- shared by the exports (export.c) ---------------------------------- */

/*
 * What the exports that write every sample's stack in full (perf-script,
 * speedscope) may write of samples, a time metric's off-CPU intervals
 * alike: 80 MiB, and 64 bytes more per byte of the spool past its first MiB
 * (a real recording's text is 40-180 times its spool; a hostile one's, 7 GB
 * for 1 MB: 100,000 distinct stacks 2,048 deep).  Past it the rest are left
 * out, and the output says how many.
 */
#define SP_EXPORT_OUTPUT_MIN ((uint64_t)80 << 20)
uint64_t sp_export_output_budget(const struct sp_spool *s);

/*
 * Sample indexes sorted by timestamp, ties in file order: a malloc'd array
 * of sp_spool_sample_count() entries the caller frees.  0 or -ENOMEM.
 */
int sp_export_time_order(const struct sp_spool *s, uint32_t **order);

/*
 * A time metric's events in time order (docs/DESIGN.md, decision 12): the
 * intervals with time that the filters keep, by their start, and with wall
 * time the kept samples, merged.  Each entry is a sample index, or an
 * interval's index with SP_EXPORT_INTERVAL set; *events malloc'd (the caller
 * frees), *n entries.  0 or -ENOMEM.
 */
#define SP_EXPORT_INTERVAL (1ull << 32)
int sp_export_time_events(struct sp_agg *a, uint64_t **events, size_t *n);

/* The cause frame a time metric puts under an interval's stack: "[blocked]" or "[preempted]". */
static inline const char *sp_export_cause(const struct sp_offcpu *o)
{
	return o->flags & SP_OFFCPU_PREEMPTED ? "[preempted]" : "[blocked]";
}

/* Byte strings interned to dense ids 0, 1, ... in first-seen order. */
struct sp_intern {
	struct sp_map index; /* hash -> id */
	struct sp_buf keys;  /* every key, back to back */
	size_t *off;         /* key i is keys[off[i], off[i + 1]) */
	size_t n, cap;
};

void sp_intern_init(struct sp_intern *t);
void sp_intern_release(struct sp_intern *t);
/* The id of key[0..len), added when new (*added, may be NULL).  0 or -ENOMEM. */
int sp_intern(struct sp_intern *t, const void *key, size_t len, uint32_t *id, bool *added);
/* The bytes of id; valid until the next sp_intern. */
const void *sp_intern_key(const struct sp_intern *t, uint32_t id, size_t *len);

/*
 * (export_flamegraph.c) Append s as XML text (character data or an attribute value): non-UTF-8
 * bytes and the control characters XML 1.0 forbids as U+FFFD, & < > " ' as
 * entities.  0 or -ENOMEM.
 */
int sp_xml_put_text(struct sp_buf *b, const char *s);

#endif
