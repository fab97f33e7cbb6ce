/* SPDX-License-Identifier: MIT */
/*
 * The views (private): the text report and what its parts share (column
 * widths, percentages, function cells, the flat table's order, the header,
 * the heaviest stacks: lib/report/text_cells.c, text_header.c, heaviest.c),
 * call trees (printed inside the text report's sections), folded stacks,
 * the JSON summary; and the comparison of two spools (report_diff.c, the
 * public sp_report_diff, which cmd/report.c calls itself).  Above
 * aggregation; the dispatcher calls the entry points.
 */
#ifndef SP_REPORT_VIEWS_H
#define SP_REPORT_VIEWS_H

#include "report/aggregate.h"

#include <stdio.h>

/* ---- views (report_text.c, report_tree.c, report_folded.c, report_json.c) --- */

int sp_report_text(struct sp_agg *a, const struct sp_report_opts *opts, FILE *out);
/* Call trees (lib/report/report_tree.c): top-down, or bottom-up with opts->inverted. */
int sp_report_tree(struct sp_agg *a, const struct sp_report_opts *opts, FILE *out);
/* Folded stacks (lib/report/report_folded.c); opts->group_by roots them per process or thread. */
int sp_report_folded(struct sp_agg *a, const struct sp_report_opts *opts, FILE *out);
/* JSON summary (lib/report/report_json.c). */
int sp_report_json(struct sp_agg *a, const struct sp_report_opts *opts, FILE *out);

/* ---- shared by the text views ------------------------------------------ */

#define SP_TEXT_COLUMNS 80
#define SP_TEXT_MIN_COLUMNS 80
/* The table's share limit: opts->percent_limit, 0 when unset. */
static inline double sp_text_limit(const struct sp_report_opts *opts)
{
	return opts->percent_limit > 0 ? opts->percent_limit : 0;
}
/* The text views' width: opts->width, at least SP_TEXT_MIN_COLUMNS, else SP_TEXT_COLUMNS. */
static inline size_t sp_text_width(const struct sp_report_opts *opts)
{
	return opts->width >= SP_TEXT_MIN_COLUMNS ? opts->width : SP_TEXT_COLUMNS;
}
/*
 * 100 * part / whole, 0 when whole is 0, 100 when part is larger: a spool's
 * summary counters are untrusted, and a share above the whole is nonsense.
 */
double sp_text_pct(uint64_t part, uint64_t whole);
/* The order of the flat table (opts->sort), ties by name. */
int sp_text_func_cmp(const struct sp_agg *a, uint32_t x, uint32_t y, uint32_t sort);
/*
 * The functions of the flat table in order (opts->sort, ties by name), those
 * under opts->percent_limit left out: a malloc'd array of *shown ids.
 */
int sp_text_func_order(const struct sp_agg *a, const struct sp_report_opts *opts,
		       uint32_t **order, size_t *shown);
/* By name, module, inline, file and line: the identity of a function across spools. */
int sp_text_name_cmp(const struct sp_agg_func *x, const struct sp_agg_func *y);
/*
 * s cut to at most w bytes into buf (cap bytes, NUL-terminated; returns the
 * label's length): s itself when it fits, else its start and its end around
 * "..." (cut at UTF-8 character boundaries).  diff_at (SIZE_MAX: none) is
 * where s parts from a neighbour whose cut would read the same: the label
 * then keeps that place in view.
 */
size_t sp_text_cut(char *buf, size_t cap, const char *s, size_t w, size_t diff_at);
/* A function (name and marks) in a column of width w, its name cut in the middle when longer. */
void sp_text_put_func(FILE *out, const struct sp_agg_func *f, size_t w, bool pad);
/* The same, the cut keeping the name's byte diff_at in view (sp_text_name_diffs). */
void sp_text_put_func_at(FILE *out, const struct sp_agg_func *f, size_t w, bool pad,
			 size_t diff_at);
/*
 * For the functions rows[0, n) of a shown in a column of w bytes: where each
 * name parts from another whose cut would print the same, or SIZE_MAX;
 * *diff_out malloc'd, n entries.  0 or -ENOMEM.
 */
int sp_text_name_diffs(const struct sp_agg *a, const uint32_t *rows, size_t n, size_t w,
		       size_t **diff_out);
/*
 * The same for the functions funcs[0, n) (of one aggregation or two), funcs[i]
 * in a column of widths[i] bytes (the tree's siblings, each beside its module).
 */
int sp_text_name_diffs_each(const struct sp_agg_func *const *funcs, const size_t *widths, size_t n,
			    size_t **diff_out);
/* Columns a function's name and marks take. */
size_t sp_text_func_width(const struct sp_agg_func *f);
void sp_text_put_cell(FILE *out, const char *s, size_t w, bool pad);
/* The header: spool, counters, filters. */
void sp_text_header(const struct sp_agg *a, const struct sp_report_opts *opts, FILE *out);
/* Print the filters set and how many samples they kept; nothing when none is. */
void sp_text_filters(const struct sp_agg *a, const struct sp_report_opts *opts, FILE *out);

/* (lib/report/name_hints.c) What would name frames that have none. */
enum {
	SP_HINT_PYTHON = 1u << SP_NAME_HINT_PYTHON, /* eval-loop frames, no Python frames: no perf map */
	SP_HINT_JVM = 1u << SP_NAME_HINT_JVM,       /* [anon] code in a process with libjvm.so */
	SP_HINT_NODE = 1u << SP_NAME_HINT_NODE,     /* [anon] code in a process of node */
};
uint32_t sp_agg_name_hints(const struct sp_agg *a);
/* One "Hint:" line per hint, for the text header; nothing when none. */
void sp_text_name_hints(const struct sp_agg *a, FILE *out);
/*
 * Hint kind's text (enum sp_name_hint): its first line after first, the
 * others after cont, tail (may be NULL) at the end of the last, then '\n'.
 * The one wording report's header and record's summary share.
 */
void sp_name_hint_write(unsigned kind, const char *first, const char *cont, const char *tail,
			FILE *out);

/* (lib/report/heaviest.c) */
/*
 * The max heaviest complete stacks of a (nodes of a->nodes that samples end
 * at, none truncated), heaviest first, ties by names leaf first, into a
 * malloc'd *nodes of *n entries.  Time proportional to a's nodes (times
 * log max), never to the stacks' depths.  0 or -ENOMEM.
 */
int sp_agg_heaviest(struct sp_agg *a, size_t max, uint32_t **nodes, size_t *n);

#endif
