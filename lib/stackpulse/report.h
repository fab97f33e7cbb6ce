/* SPDX-License-Identifier: MIT */
/* stackpulse's public API, reports, exports and annotation of a spool.  Include <stackpulse.h>, not this file. */
#ifndef STACKPULSE_REPORT_H
#define STACKPULSE_REPORT_H

#ifndef STACKPULSE_H
#error "include stackpulse.h, which includes this file"
#endif

/* ---------------------------------------------------------------------- */
/* Reports                                                                */

enum sp_report_format {
	SP_REPORT_TEXT = 0,
	SP_REPORT_FOLDED = 1,
	SP_REPORT_PPROF = 2,       /* gzip'd profile.proto (go tool pprof, Pyroscope, Parca) */
	SP_REPORT_SPEEDSCOPE = 3,  /* speedscope's JSON file format, one profile per thread */
	SP_REPORT_PERF_SCRIPT = 4, /* the text of `perf script` (Firefox Profiler, speedscope) */
	SP_REPORT_FLAMEGRAPH = 5,  /* an interactive flame graph: one self-contained SVG */
	SP_REPORT_JSON = 6,        /* a JSON summary for scripts: counters, functions, stacks */
};

/* Text views: what the flat table is sorted by (ties by name, always). */
enum sp_report_sort {
	SP_SORT_SELF = 0,  /* self share, then total share */
	SP_SORT_TOTAL = 1, /* total share, then self share */
	SP_SORT_NAME = 2,  /* function name, then module */
};

/*
 * One section per process or per thread in the text views, each with its own
 * views; in folded stacks and the flame graph, a root frame per process or
 * thread under its stacks.
 */
enum sp_report_group {
	SP_GROUP_NONE = 0,
	SP_GROUP_PROCESS = 1,
	SP_GROUP_THREAD = 2,
};

/*
 * Which samples a report counts; zero-initialised keeps every sample.  A
 * sample is kept when it passes every filter that is set.  Strings and
 * arrays are borrowed for the duration of the report call.
 */
struct sp_report_filter {
	const int32_t *pids; /* keep samples of these processes (npids > 0) */
	size_t npids;
	const int32_t *tids; /* keep samples of these threads (ntids > 0) */
	size_t ntids;
	const char *comm;    /* keep samples of threads with exactly this name */
	/* keep stacks with a frame in this module: its basename as reports show it */
	const char *module;
	/*
	 * Function names: a stack passes focus when one of its functions
	 * (inlined ones included) is named exactly focus or matches it as an
	 * fnmatch(3) pattern; a stack through exclude the same way is dropped.
	 */
	const char *focus;
	const char *exclude;
	/*
	 * Time window [start, end) in ns from the recording's start (the spool
	 * header's monotonic start time, else the first sample), each bound
	 * used when its has_ flag is set.
	 */
	bool has_start, has_end;
	uint64_t start_ns, end_ns;
	/*
	 * For the header of a segment directory's report (segments_listed > 0):
	 * the window's wall-clock sides given (us since the epoch, UTC; 0: that
	 * side relative or open) and the segments read of those listed.
	 */
	uint64_t wall_start_us, wall_end_us;
	size_t segments_read, segments_listed;
};

struct sp_report_opts {
	uint32_t format;      /* enum sp_report_format */
	/*
	 * Text and folded views: one row or frame per source line, not per
	 * function, shown as "function (file:line)" in text and as
	 * "function:line" in folded stacks.
	 */
	bool lines;
	uint32_t max_rows;    /* flat table rows, 0 = default (25) */
	uint32_t max_stacks;  /* heaviest stacks shown, 0 = default (5) */
	bool hide_stacks;     /* text and json: no heaviest stacks (report --stacks 0) */
	const char *spool_path; /* for the header, may be NULL */
	/*
	 * The spool is still being written (sp_spool_is_growing): headers say
	 * the recording goes on, not that it was cut short; json's "growing".
	 */
	bool growing;
	/* Text views (the flat table, trees and diff; json uses max_rows and max_stacks). */
	uint32_t sort;        /* enum sp_report_sort */
	uint32_t group_by;    /* enum sp_report_group: text, folded and flame graph */
/*
 * Text sections of group_by: at most this many, the busiest; the rest are
 * counted in one closing line (each section is a pass over the samples and a
 * full set of views: 2,000 threads of one deep stack wrote 140 MB).
 */
#define SP_REPORT_SECTIONS_MAX 100
	bool show_counts;     /* sample counts beside the shares (perf's -n) */
	bool tree;            /* top-down call tree instead of the flat table */
	bool inverted;        /* bottom-up tree: the callers of each leaf function */
	/*
	 * Hide rows and tree nodes under this share, in percent; negative: the
	 * default, 0 for the flat table and 0.5 for trees.
	 */
	double percent_limit;
	uint32_t width;       /* text columns, 0 or under 80 = the default, 80 */
	struct sp_report_filter filter;
	/*
	 * Show frames flagged SP_RFRAME_HIDDEN_DEFAULT (the Python runtime's
	 * native frames) in every view and export; by default they are left
	 * out of each stack that holds a Python frame (SP_KIND_PYTHON), which
	 * then takes their self time.
	 */
	bool show_runtime;
	/*
	 * The text format's flat table has a row per source line, not per
	 * function (report --by=line): the innermost source position of each
	 * sample's leaf (inlined code on its own line), merged across
	 * functions, with its self share; frames without a line are one row per
	 * function.  Text only (other formats ignore it); not with tree or
	 * inverted.
	 */
	bool by_line;
	/* report --diff (sp_report_diff_gate): zero-initialised compares absolute measures. */
	uint32_t diff_normalize; /* enum sp_diff_normalize */
	/*
	 * The gate: with diff_gate, a function whose diff_gate_of measure
	 * (SP_SORT_SELF or SP_SORT_TOTAL) grew by more than diff_max_increase
	 * percent and beyond sampling noise regressed; functions under
	 * diff_min_share percent of both spools' whole are never gated.
	 */
	bool diff_gate;
	double diff_max_increase;
	uint32_t diff_gate_of;
	double diff_min_share;
	uint32_t diff_match; /* enum sp_diff_match */
	/*
	 * What the views count (docs/DESIGN.md, decision 12), enum
	 * sp_report_metric: CPU samples (the default), the off-CPU intervals'
	 * time, or both as wall-clock time.  The time metrics count
	 * microseconds (folded values), shown in ms in text.
	 */
	uint32_t metric;
};

/* How report --diff pairs a function of the base with one of the new spool. */
enum sp_diff_match {
	/*
	 * By name and module (its basename); then a function left alone on
	 * each side pairs by name, once per name: a renamed build of one
	 * program diffs per function (the notice counts them).
	 */
	SP_DIFF_MATCH_AUTO = 0,
	SP_DIFF_MATCH_NAME = 1,   /* by name alone, whatever the module */
	SP_DIFF_MATCH_MODULE = 2, /* by name and module only */
};

/* How report --diff compares a function's self and total (stackpulse-report(1)). */
enum sp_diff_normalize {
	SP_DIFF_ABSOLUTE = 0, /* the measures themselves: time (ns) or events */
	SP_DIFF_SHARES = 1,   /* each spool's share of its whole, percent */
};

enum sp_report_metric {
	SP_METRIC_CPU = 0,
	SP_METRIC_OFF_CPU = 1, /* record --off-cpu's intervals */
	SP_METRIC_WALL = 2,    /* CPU time (a clock event's samples) plus the intervals */
};

/*
 * Aggregate the spool and write one report in the chosen format to out (the
 * layouts are described in stackpulse-report(1)).  sym may be NULL: a default
 * symbolizer is then made for this call.  SP_REPORT_PPROF writes binary
 * (gzip) data.  opts->filter chooses the samples every format counts; the
 * text views (tree, inverted, group_by, sort, ...) apply to SP_REPORT_TEXT,
 * group_by also to SP_REPORT_FOLDED and SP_REPORT_FLAMEGRAPH (other formats
 * ignore it).
 * The same spool and options always give the same bytes.
 * Returns 0, -SP_E_BAD_ARG for an unknown format, -ENOMEM, or -errno (-EIO)
 * when writing to out failed.
 */
int sp_report_write(const struct sp_spool *s, struct sp_symbolizer *sym,
		    const struct sp_report_opts *opts, FILE *out);

/*
 * Write the text table of how each function's self and total changed from
 * the spool base to the spool s, largest absolute change first (by
 * opts->sort: self or total change), as measures (opts->diff_normalize),
 * ratios and share points, the filters applied to both spools; layout in
 * stackpulse-report(1) (sp_report_diff_gate without an outcome).  base_path names the base
 * in the header (may be NULL).  Symbolizers may be NULL as in
 * sp_report_write.  Returns 0, -SP_E_BAD_ARG, -ENOMEM or -errno from out.
 */
int sp_report_diff(const struct sp_spool *base, struct sp_symbolizer *base_sym,
		   const char *base_path, const struct sp_spool *s, struct sp_symbolizer *sym,
		   const struct sp_report_opts *opts, FILE *out);

/* What the gate of a comparison found (sp_report_diff_gate). */
struct sp_diff_outcome {
	size_t regressed;   /* functions that grew beyond the gate */
	/*
	 * The first of them (the largest growth), as the table names it ("[unknown]
	 * in MODULE" for a module's unnamed code), cut to fit; "" when none.
	 */
	char first_name[256];
	/* its new / base measure: INFINITY when the base had none of it */
	double first_ratio;
};

/*
 * sp_report_diff with opts->format SP_REPORT_TEXT or SP_REPORT_JSON (the
 * schema in stackpulse-report(1)), opts->diff_* applied, and the gate's
 * findings in *outcome (may be NULL).  Each function's measure is its
 * aggregated value at the spool's sample unit (ns of CPU time or events);
 * noise is a 95% interval of the ratio from the sample counts (a Poisson
 * rate ratio; with SP_DIFF_SHARES, a ratio of two proportions).  Returns
 * as sp_report_diff; -SP_E_BAD_ARG for another format.
 */
int sp_report_diff_gate(const struct sp_spool *base, struct sp_symbolizer *base_sym,
			const char *base_path, const struct sp_spool *s,
			struct sp_symbolizer *sym, const struct sp_report_opts *opts,
			struct sp_diff_outcome *outcome, FILE *out);

/* ---------------------------------------------------------------------- */
/* Annotation: where in a function the samples fell (stackpulse annotate) */

enum sp_annotate_format {
	SP_ANNOTATE_TEXT = 0, /* source lines, then the disassembly with the lines interleaved */
	SP_ANNOTATE_JSON = 1, /* one JSON object: per function, "lines" and "instructions" */
};

/*
 * What to annotate and how.  Zero-initialised options annotate the 5
 * functions with the most self samples as text.  Strings and arrays are
 * borrowed for the duration of the call.
 */
struct sp_annotate_opts {
	uint32_t format;        /* enum sp_annotate_format */
	/*
	 * Functions to annotate, nfunctions of them: each the name a report
	 * shows, or an fnmatch(3) pattern of it; a function matching several
	 * is annotated once.  nfunctions 0: the max_functions functions with
	 * the most self samples.
	 */
	const char *const *functions;
	size_t nfunctions;
	uint32_t max_functions; /* 0: 5 */
	/*
	 * A directory searched first for source files: DIR/PATH (PATH as DWARF
	 * names it, without its leading '/'), then DIR/BASENAME.  NULL: none.
	 */
	const char *source_dir;
	const char *spool_path; /* named in the text header, may be NULL */
};

/*
 * What an annotation could not read, for the caller to say once.  Strings
 * are owned by the struct (sp_annotate_result_release; NULL ok).
 */
struct sp_annotate_result {
	size_t functions;          /* functions annotated */
	size_t functions_unmatched; /* opts->functions entries that matched no sampled function */
	size_t modules_unreadable; /* module files whose code could not be read */
	char *module_unreadable;   /* the first one's path, or NULL */
	char *module_unreadable_why; /* and why ("No such file or directory", "another build-id") */
	size_t sources_missing;    /* source files not found (their lines print without text) */
	char *source_missing;      /* the first one's path as DWARF names it, or NULL */
};

void sp_annotate_result_release(struct sp_annotate_result *res);

/*
 * Annotate the functions of a spool: for each, the source lines its leaf
 * samples (self samples) fell on and its disassembly, each instruction with
 * its samples (layouts in stackpulse-annotate(1)).
 *
 * Lines come from the symbolizer (sym, which may be NULL: a default one is
 * made for the call), so a spool whose symbols are stored (stackpulse
 * symbolize, or a recording that saw its binary deleted) gives them without
 * its binaries; samples in inlined code count on the inlined function's own
 * line, shown under the line of the function that called it.  Instructions
 * come from the module file itself, opened and proven to be the recorded
 * one (build-id, else inode + size + mtime), through /proc/PID/map_files
 * while the process runs when the path now names another file; its line
 * table (DWARF .debug_line, read for the one compilation unit holding the
 * function) puts the source line each belongs to between them; the code is
 * decoded with capstone (x86-64 in AT&T syntax, AArch64), and a branch's
 * target is shown as symbol+offset.  Work grows with the annotated
 * functions' code and their compilation units, not with the binary.
 * Source text is read from opts->source_dir, the path DWARF names (joined
 * to the compilation directory when relative), and beside the module file;
 * a file not found leaves its lines numbered without text.  Module files or
 * sources that could not be read are not errors: the output says so where
 * they would be, and *res (may be NULL; released by the caller, also on
 * failure) counts them.  A sample counts where the event left the program
 * counter: for a software clock event, usually the instruction after the one
 * that took the time (skid).  The same spool and options always give the
 * same bytes.  Not thread-safe, like every symbolizer call.  Returns 0,
 * -SP_E_BAD_ARG (no spool, options or output, an unknown format), -ENOMEM,
 * resolve errors, or -errno (-EIO) when writing to out failed.
 */
int sp_annotate_write(const struct sp_spool *s, struct sp_symbolizer *sym,
		      const struct sp_annotate_opts *opts, FILE *out, struct sp_annotate_result *res);

#endif
