/* SPDX-License-Identifier: MIT */
/*
 * lib/report/: from a symbolized spool to what a person reads (private,
 * not installed).
 *
 * Owns, bottom up: aggregation by stack id and the sample filters
 * (aggregate.c, report_filter.c; report/aggregate.h); the text views
 * (text_cells.c, text_header.c, heaviest.c, report_tree.c, report_text.c),
 * folded stacks, the JSON summary and the comparison of two spools
 * (report_folded.c, report_json.c, report_diff.c): report/views.h; beside them the exports
 * (export.c and export_*.c): report/export.h, and annotation (annotate*.c, the public
 * sp_annotate_write; report_lines.c, report --by=line): report/annotate.h; on top, the dispatcher
 * (report.c) that aggregates once and calls one view or export.  Views and
 * exports include their own header (which includes report/aggregate.h),
 * never this one: only the dispatcher does.
 * May call: symbols, spool and util.  Never record or unwind.
 */
#ifndef SP_REPORT_H
#define SP_REPORT_H

#include "report/export.h"
#include "report/views.h"

#endif
