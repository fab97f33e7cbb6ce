/* SPDX-License-Identifier: MIT */
/*
 * Aggregation of a spool by stack id, sample filters, and stacks merged by
 * names: what every view and export of lib/report/ reads (private).
 * Below the views and exports; never includes report/report.h.
 */
#ifndef SP_REPORT_AGGREGATE_H
#define SP_REPORT_AGGREGATE_H

#include "spool/spool.h"

/* ---- sample filters (report_filter.c) ---------------------------------- */

/* Whether any filter is set. */
bool sp_filter_active(const struct sp_report_filter *f);
/* Whether samples of thread t may pass (pid, tid, comm). */
bool sp_filter_thread(const struct sp_report_filter *f, const struct sp_thread *t);
/* Whether a timestamp lies in the time window; origin_ns is the recording's start. */
bool sp_filter_time(const struct sp_report_filter *f, uint64_t ts_ns, uint64_t origin_ns);
/*
 * Whether a stack of frames[0..n) (frame ids of s) passes f's module, focus
 * and exclude, its frames resolved through sym.  0 with *pass set, or a
 * resolve error.
 */
int sp_filter_stack(const struct sp_report_filter *f, const struct sp_spool *s,
		    struct sp_symbolizer *sym, const uint32_t *frames, size_t n, bool *pass);
/* The recording's start for time windows: the header's monotonic start, else the first sample. */
uint64_t sp_filter_origin_ns(const struct sp_spool *s);

/* ---- the name a frame's module is shown under (module_names.c) -------- */

/* A build-id met, and the module name its functions go by. */
struct sp_module_build {
	uint8_t id[SP_BUILD_ID_MAX]; /* a copy: a growing spool moves its modules */
	uint8_t len;                /* 0: a group of files of the same bytes, no build-id */
	uint32_t same_bytes_as;     /* then the group's (struct sp_module's same_bytes_as) */
	const char *module;         /* borrowed from the symbolizer */
};

/*
 * Identical code is one function, in the report's aggregation and in the
 * live view alike: modules of one build-id (copies of a program run from
 * many paths), or without one, of one group of files the recorder found to
 * hold the same bytes, go by the first module name met for it.  Embedded
 * by its user: sp_module_names_init, then sp_module_names_release.
 */
struct sp_module_names {
	struct sp_module_build *builds;
	size_t nbuilds, builds_cap;
	struct sp_map index;        /* build-id (or group) hash -> index in builds */
	uint64_t merged;            /* module names that took another's */
};

void sp_module_names_init(struct sp_module_names *n);
void sp_module_names_release(struct sp_module_names *n);
/*
 * *out: the module name the functions of frame frame_id of s go by, name
 * (the symbolizer's module name of that frame, borrowed for as long as n
 * lives) or the first name met for its build-id or group of same bytes;
 * name itself for a module of neither.  0 or -ENOMEM.
 */
int sp_module_name_of(struct sp_module_names *n, const struct sp_spool *s, uint32_t frame_id,
		      const char *name, const char **out);

/* ---- aggregation of a spool by stack id (aggregate.c) ------------------ */

/*
 * A function of the flat table: one (name, module, inline) triple, and with
 * opts->lines one source position of it: (name, module, inline, file, line).
 */
struct sp_agg_func {
	const char *name, *module; /* borrowed from the symbolizer */
	const char *file;          /* with lines: the source file, or NULL; else NULL */
	uint32_t line;             /* with lines: the line, or 0; else 0 */
	bool is_inline;            /* an inlined function (SP_RFRAME_INLINE) */
	uint64_t self;             /* samples whose innermost function is this one */
	uint64_t total;            /* samples whose stack contains it (once per stack) */
	uint32_t name_id;          /* interned name alone (folded output merges by name) */
};

/* ---- what one sample stands for (sample_unit.c) ------------------------ */

/*
 * The spool's event and what one of its samples weighs, as every report
 * labels it (the header, pprof's sample types, speedscope's unit, perf
 * script's event and period).
 */
struct sp_sample_unit {
	char event[24];        /* perf's name of the event ("cpu-clock"), or "event-N" for one
				  this build does not know */
	/*
	 * A sample stands for CPU time, period in ns: the clock events, and
	 * cycles sampled at a frequency (the kernel keeps frequency_hz samples
	 * per second of CPU time).
	 */
	bool time;
	bool by_period;        /* sampled every period events (record -c), not at a frequency */
	uint32_t frequency_hz; /* when not by_period: the frequency asked for, 0 if unknown */
	/*
	 * Events one sample stands for: ns with time; 1 for an event counted
	 * at a frequency, where the period the kernel chose is not recorded.
	 * Never 0.
	 */
	uint64_t period;
	bool system_wide;      /* every process on the recorded CPUs (record -a, -C) */
	/*
	 * Views count events, not samples (sp_sample_weight): a counted event
	 * whose spool stores periods or was sampled every -c events.
	 */
	bool weighted;
};

void sp_sample_unit_of(const struct sp_spool *s, struct sp_sample_unit *u);
/*
 * What smp adds to a view's counts (docs/DESIGN.md, decision 12): 1 for a
 * time event, whose every sample is u->period ns (the kernel turns a clock
 * event's frequency into a fixed period, so counting is exact), else the
 * events it stands for: its period, or u->period for a spool that stored
 * none.  Never 0.
 */
uint64_t sp_sample_weight(const struct sp_sample_unit *u, const struct sp_sample *smp);
/* What n of a view's counts are called: "sample(s)", or "event(s)" when u->weighted. */
const char *sp_sample_unit_noun(const struct sp_sample_unit *u, uint64_t n);
/* A count column's cell, 9 wide: the count, or ms with a time metric (counts in µs). */
#define SP_COUNT_CELL(a, n, buf)                                                           \
	((a)->metric != SP_METRIC_CPU ? snprintf((buf), sizeof(buf), "%9.1f", (double)(n) / 1000.0) \
				      : snprintf((buf), sizeof(buf), "%9" PRIu64, (uint64_t)(n)))
/*
 * Count n of a view as text into buf: the number, or with a time metric
 * (a->metric, counts in microseconds) milliseconds with a unit ("12.3 ms").
 */
struct sp_agg;
/*
 * A spool of record --off-cpu: the header's off-CPU lines, the totals and
 * each busiest thread's on-CPU, off-CPU (blocked or sleeping, preempted) and
 * incomplete time (metric.c).
 */
void sp_text_offcpu_header(const struct sp_agg *a, FILE *out);
void sp_agg_format_count(const struct sp_agg *a, uint64_t n, char *buf, size_t cap);
/* The same with its unit: "12 samples", "5 events" or "12.3 ms". */
void sp_agg_format_amount(const struct sp_agg *a, uint64_t n, char *buf, size_t cap);
/*
 * Count the off-CPU intervals of a time metric into a's stacks (metric.c):
 * each kept one (thread and time filters, scope) adds its microseconds.
 */
struct sp_agg_scope;
int sp_agg_count_intervals(struct sp_agg *a, const struct sp_report_filter *f,
			   const struct sp_agg_scope *scope);
/*
 * After the stack filters: add the kept intervals (their stacks not
 * dropped) to a->samples, nintervals and the time span.  (metric.c)
 */
void sp_agg_total_intervals(struct sp_agg *a, const struct sp_report_filter *f,
			    const struct sp_agg_scope *scope);
/* Whether an exporter walking intervals keeps o (a's filters; its stack not dropped). */
bool sp_agg_interval_kept(const struct sp_agg *a, const struct sp_offcpu *o);
/* The same while a is built: a's filters and scope. */
bool sp_agg_interval_in(const struct sp_agg *a, const struct sp_offcpu *o);
/* What smp adds to a's counts: sp_sample_weight, or its CPU time in µs with a time metric. */
uint64_t sp_agg_weight(const struct sp_agg *a, const struct sp_sample *smp);
/* Whether samples of thread (t its entry) lie in scope (NULL: every sample). */
bool sp_agg_in_scope(const struct sp_agg_scope *scope, uint32_t thread, const struct sp_thread *t);
/*
 * The count column's heading, 9 wide: "  Samples", "   Events" when
 * a->unit.weighted, "  Time ms" with a time metric.
 */
#define SP_COUNT_HEADING(a)                                                      \
	((a)->metric != SP_METRIC_CPU ? "  Time ms" : (a)->unit.weighted ? "   Events" : "  Samples")
/*
 * The event and how it was sampled, as the text header and the flame graph
 * print it: "cpu-clock at 999 Hz", "cpu-clock every 100000 ns",
 * "page-faults every 1000 events", or the name alone; then ", system-wide"
 * when it was.  NUL-terminated in buf (cap bytes, 80 are enough).
 */
void sp_sample_unit_describe(const struct sp_sample_unit *u, char *buf, size_t cap);

/*
 * Sampled stacks merged by functions: a tree whose root is node 0 and whose
 * every other node is one function called from its parent's, so each
 * distinct function sequence (root first) is one path.  Built once per
 * aggregation in time proportional to the spool's stack nodes, never to the
 * sum of the stacks' depths: views walk it instead of expanding every stack.
 */
#define SP_AGG_MARKER (UINT32_MAX - 2) /* the func of a truncation marker's node */

struct sp_agg_node {
	uint32_t parent;   /* node id; the root is its own parent */
	uint32_t func;     /* function id, SP_AGG_MARKER, or SP_AGG_NO_FUNC at the root */
	uint32_t depth;    /* 0 at the root */
	bool truncated;    /* the path starts at a truncation marker */
	uint64_t count;    /* kept samples whose stack is exactly this path */
	uint64_t total;    /* kept samples through this node: its count and its descendants' */
};

/*
 * A spool aggregated on interned ids: sample counts per stack id, every frame
 * used by a sampled stack resolved once (sp_symbolizer_resolve_all) and
 * mapped to its function ids: the inlined functions at its address, innermost
 * first, then the function that holds them.  Marker frames (truncation) map
 * to no function and count in none.
 */
#define SP_AGG_NO_FUNC UINT32_MAX

/*
 * Frames of the Python runtime (SP_RFRAME_HIDDEN_DEFAULT, unless
 * show_runtime) are the interpreter's machinery where Python frames stand in
 * for them: in a stack holding a Python frame, those rootward of its
 * innermost Python frame are hidden (the eval loop, call dispatch, start-up)
 * but for the stack's root (_start, the root every stack of the process
 * shares), and leafward of it only the eval loop running that Python
 * function is: the native code it calls (a regex engine, a hash, memmove)
 * shows, as py-spy --native shows it.  sp_agg_python_view.
 */
enum sp_agg_hidden {
	SP_AGG_VISIBLE = 0,
	SP_AGG_HIDDEN,       /* no functions interned (yet) */
	SP_AGG_HIDDEN_SHOWN, /* functions interned: some stack shows it */
	SP_AGG_STAND_IN,     /* a Python frame: its stack hides the machinery around it */
};

struct sp_agg {
	const struct sp_spool *spool;
	struct sp_symbolizer *sym;
	/*
	 * What the views count, empty samples included: samples of a time
	 * event, the events counted samples stand for (sp_sample_weight); all
	 * counts below are in this unit.
	 */
	uint64_t samples;
	uint64_t nsampled;          /* kept samples */
	struct sp_sample_unit unit; /* what a sample stands for */
	uint32_t metric;            /* enum sp_report_metric: not CPU, counts are microseconds */
	uint64_t nintervals;        /* off-CPU intervals counted (time metrics) */
	const struct sp_agg_scope *scope; /* the scope built for, NULL: all (valid while building) */
	uint32_t cause_func[2];     /* time metrics: the [blocked] and [preempted] functions */
	uint64_t empty_samples;     /* stack id 0 */
	uint64_t truncated_samples; /* root-end frame is a truncation marker */
	uint64_t first_ns, last_ns; /* sample timestamps, 0 when no samples */
	uint64_t all_samples;       /* samples in the spool, before filters and scope */
	uint64_t whole;             /* the denominator of shares: samples, or the report's */
	uint64_t *keep;             /* by sample index: bit set when kept; NULL keeps all */
	const struct sp_report_filter *filter; /* the filters applied, NULL when none */
	size_t nstacks, nframes;
	uint64_t *stack_count;      /* by stack id */
	uint8_t *stack_truncated;   /* by stack id, valid where stack_count > 0 */
	bool lines;                 /* functions are told apart by source line too */
	bool show_runtime;          /* keep SP_RFRAME_HIDDEN_DEFAULT frames in stacks */
	bool unknown_rows;          /* frames no source names: one function per module (intern_func) */
	struct sp_arena unknown_names; /* their "[unknown] in MODULE" names */
	bool any_stand_in;          /* some frame is SP_AGG_STAND_IN: stacks may hide frames */
	uint8_t *frame_hidden;      /* by frame id: enum sp_agg_hidden */
	uint8_t *frame_eval;        /* by frame id: 1 for the Python eval loop (hidden leafward too) */
	uint32_t *frame_func;       /* by frame id: containing function id or SP_AGG_NO_FUNC */
	uint32_t *frame_first;      /* by frame id: its first function in chain */
	uint32_t *frame_nfuncs;     /* by frame id: its functions in chain (0: none, a marker) */
	uint32_t *chain;            /* function ids of every frame, innermost first */
	size_t nchain, chain_cap;
	struct sp_agg_func *funcs;
	size_t nfuncs, funcs_cap;
	const char **names;         /* by name id */
	size_t nnames, names_cap;
	struct sp_map func_index, name_index; /* content hash -> id */
	uint32_t *path;             /* scratch: one stack's frame ids, leaf first */
	size_t path_cap;
	struct sp_agg_node *nodes;  /* the merged stacks; nodes[0] is the root */
	size_t nnodes, nodes_cap;
	struct sp_map node_index;   /* parent << 32 | func -> node id */
	uint32_t *stack_canon;      /* by sampled stack id: the first stack id with the same
				       frames (hidden ones left out), so stacks a writer
				       spelled twice merge */
	uint32_t *stack_node;       /* by stack id: the node its kept samples end at, 0 for
				       none (views that split the samples again, by process) */
	struct sp_module_names module_names; /* identical code is one function */
};

/*
 * The function holding a frame of a sampled stack (the last of its inline
 * chain); SP_AGG_NO_FUNC for markers and bad ids.
 */
static inline uint32_t sp_agg_frame_func(const struct sp_agg *a, uint32_t frame_id)
{
	uint32_t f = frame_id < a->nframes ? a->frame_func[frame_id] : SP_AGG_NO_FUNC;
	return f < a->nfuncs ? f : SP_AGG_NO_FUNC;
}

/*
 * Every function of a frame of a sampled stack, innermost inlined function
 * first, the containing function last, into *funcs (borrowed from a);
 * returns how many: 0 for markers and bad ids.
 */
static inline size_t sp_agg_frame_funcs(const struct sp_agg *a, uint32_t frame_id,
					const uint32_t **funcs)
{
	*funcs = NULL;
	if (frame_id >= a->nframes || a->frame_func[frame_id] >= a->nfuncs)
		return 0;
	*funcs = a->chain + a->frame_first[frame_id];
	return a->frame_nfuncs[frame_id];
}

/*
 * Count, resolve and attribute every sample that passes opts->filter
 * (sp_agg_build_scoped without a scope).  opts (may be NULL) gives lines,
 * show_runtime and the filters.  0, -ENOMEM or a resolve error.
 */
int sp_agg_build(struct sp_agg *a, const struct sp_spool *s, struct sp_symbolizer *sym,
		 const struct sp_report_opts *opts);

/* A part of the samples: one process or one thread (the sections of --group-by). */
struct sp_agg_scope {
	uint32_t kind;  /* enum sp_report_group; SP_GROUP_NONE: every sample */
	int32_t pid;    /* with SP_GROUP_PROCESS */
	uint32_t thread; /* with SP_GROUP_THREAD: index in the spool's thread table */
};

/*
 * sp_agg_build counting only the samples that pass opts->filter (opts may be
 * NULL) and lie in scope (may be NULL).  Every count, stack_count included,
 * is of kept samples; views and exports that walk samples themselves skip
 * those sp_agg_kept refuses.
 */
int sp_agg_build_scoped(struct sp_agg *a, const struct sp_spool *s, struct sp_symbolizer *sym,
			const struct sp_report_opts *opts, const struct sp_agg_scope *scope);

/* Whether the sample at index i of the spool counts in a. */
static inline bool sp_agg_kept(const struct sp_agg *a, size_t i)
{
	return !a->keep || (a->keep[i / 64] >> (i % 64) & 1);
}
void sp_agg_release(struct sp_agg *a);
/*
 * Frame ids of stack_id, leaf first, into a->path, as the Python view shows
 * them (sp_agg_python_view); returns the depth.  The pointer is valid until
 * the next call.
 */
size_t sp_agg_stack_frames(struct sp_agg *a, uint32_t stack_id, const uint32_t **frames);

/*
 * The Python view of path[0, n) (frame ids, leaf first): the runtime's
 * frames a stack with Python frames hides (enum sp_agg_hidden) removed in
 * place; returns how many are left.
 */
size_t sp_agg_python_view(const struct sp_agg *a, uint32_t *path, size_t n);

/*
 * The functions of node's path, leaf first, into *funcs (malloc'd and grown
 * as needed, *cap its capacity): markers as SP_AGG_MARKER.  Returns the
 * length (node's depth), or 0 with *funcs unchanged when memory runs out.
 */
size_t sp_agg_node_path(const struct sp_agg *a, uint32_t node, uint32_t **funcs, size_t *cap);

/* ---- processes and threads (groups.c) ---------------------------------- */

/* A process or a thread of the spool, and its samples an aggregation kept. */
struct sp_agg_group {
	struct sp_agg_scope scope; /* its samples, for sp_agg_build_scoped */
	int32_t pid, tid;          /* a process's tid is its pid */
	/*
	 * The thread's name; a process's main thread's (tid = pid), else its
	 * first named thread's.  Borrowed from the spool, "" when it has none;
	 * as the target chose it: escape before printing.
	 */
	const char *name;
	uint64_t samples;
};

/* The spool's processes or threads (--group-by), busiest first. */
struct sp_agg_groups {
	uint32_t kind;            /* enum sp_report_group: SP_GROUP_PROCESS or SP_GROUP_THREAD */
	struct sp_agg_group *v;   /* by samples, most first, ties by pid, tid and name */
	size_t n;                 /* every one, those without kept samples last */
	uint32_t *of_thread;      /* by spool thread index: its group's index in v */
};

/*
 * The processes (kind SP_GROUP_PROCESS) or threads (SP_GROUP_THREAD) of a's
 * spool, each with the samples a kept, into *g (released with
 * sp_agg_groups_release, also after a failure).  0, -SP_E_BAD_ARG for
 * another kind, or -ENOMEM.
 */
int sp_agg_groups_build(struct sp_agg_groups *g, const struct sp_agg *a, uint32_t kind);
void sp_agg_groups_release(struct sp_agg_groups *g);
/*
 * Append group i's name as a frame of the exports shows it: "NAME (pid P)"
 * for a process, "NAME (pid P, tid T)" for a thread (speedscope's names),
 * "[unknown]" for a name the recording never saw, escaped as text views
 * escape thread names (sp_buf_put_printable).  No NUL.  0 or -ENOMEM.
 */
int sp_agg_group_label(const struct sp_agg_groups *g, size_t i, struct sp_buf *b);

/* Kept samples of one group that end at one node of the merged stacks. */
struct sp_agg_group_count {
	uint32_t group, node; /* index in sp_agg_groups.v; node of a->nodes, 0: no stack */
	uint64_t count;
};

/*
 * a's kept samples counted by (group, node), one entry per pair met, in the
 * order of the first sample of each: a malloc'd *out of *n entries.  Time
 * proportional to the samples.  0 or -ENOMEM.
 */
int sp_agg_group_counts(const struct sp_agg *a, const struct sp_agg_groups *g,
			struct sp_agg_group_count **out, size_t *n);

/*
 * The merged stacks again under one root per group, in a tree of the
 * caller's (folded stacks, the flame graph): sp_agg_graft gives the
 * caller's node for a node of a->nodes within a group, making it and its
 * missing ancestors, rootward first, through child(ctx, parent, agg_node,
 * &made), and remembering each: time proportional to the (group, node)
 * pairs, never to the stacks' depths.
 */
struct sp_agg_graft {
	const struct sp_agg *a;
	int (*child)(void *ctx, uint32_t parent, uint32_t agg_node, uint32_t *made);
	void *ctx;
	struct sp_map made;  /* group << 32 | agg node -> the caller's node */
	uint32_t *path;      /* scratch: agg nodes not yet grafted, leaf first */
	size_t path_cap;
};

void sp_agg_graft_init(struct sp_agg_graft *gr, const struct sp_agg *a,
		       int (*child)(void *ctx, uint32_t parent, uint32_t agg_node, uint32_t *made),
		       void *ctx);
void sp_agg_graft_release(struct sp_agg_graft *gr);
/*
 * The caller's node for agg_node of group into *out; root is the caller's
 * node of the group itself (what agg node 0 grafts to).  0, or -ENOMEM and
 * child's errors.
 */
int sp_agg_graft(struct sp_agg_graft *gr, uint32_t group, uint32_t root, uint32_t agg_node,
		 uint32_t *out);

#endif
