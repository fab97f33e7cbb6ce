/* SPDX-License-Identifier: MIT */
/* stackpulse's public API, following a spool while it is written (a tail) and the live view of top and report --follow.  Include <stackpulse.h>, not this file. */
#ifndef STACKPULSE_LIVE_H
#define STACKPULSE_LIVE_H

#ifndef STACKPULSE_H
#error "include stackpulse.h, which includes this file"
#endif

/* ---------------------------------------------------------------------- */
/* Following a spool while it is written (a tail)                         */

struct sp_tail;
struct sp_recorder;

/*
 * What one sp_tail_poll added to the tail's spool: half-open ranges of
 * indexes (sp_spool_sample, sp_spool_module, sp_spool_frame, stack ids,
 * sp_spool_thread).  Only whole records are ever read: a record the writer
 * has not finished is left for a later poll.
 */
struct sp_tail_batch {
	size_t first_sample, end_sample;
	size_t first_module, end_module;
	size_t first_frame, end_frame;
	size_t first_stack, end_stack;
	size_t first_thread, end_thread;
	size_t first_exec, end_exec; /* exec markers (a process started a new image) */
	bool has_more;  /* complete records were left for the next poll (SP_TAIL_BATCH_BYTES) */
	bool finished;  /* the summary trailer was read: nothing more will come */
};

/* Bytes of records one poll reads at most: the rest waits for the next (has_more). */
#define SP_TAIL_BATCH_BYTES (4u << 20)

/*
 * Follow the spool at path as another process writes it.  The header and
 * the records already complete are read by the first sp_tail_poll, not
 * here.  The same checks as sp_spool_open (a regular file; a symlink is
 * followed).  Only the module paths recorded in the spool are there to be
 * symbolized: a deleted or replaced file's frames stay addresses.  Errors:
 * -errno, -SP_E_NOT_REGULAR.
 */
int sp_tail_open(const char *path, struct sp_tail **out);

/*
 * Follow r's spool as r writes it, once per recorder.  Besides
 * what sp_tail_open gives, each poll takes from r a copy of the open file
 * of every new module whose file was deleted or replaced, so its frames are
 * named from the image that was sampled.  r's spool must be flushed
 * (sp_recorder_flush) for a poll to see its latest samples; r must outlive
 * the polls or be freed first (the tail then reads on, without images).
 * Errors: -SP_E_BAD_ARG (a second tail), as sp_tail_open.
 */
int sp_recorder_tail(struct sp_recorder *r, struct sp_tail **out);

/*
 * Read the records completed since the last poll into the tail's spool and
 * describe them in *out (all ranges empty when nothing new came).  The work
 * is proportional to the new bytes.  Errors: the reader's (a corrupt
 * complete record: -SP_E_SPOOL_CORRUPT, ...; the spool keeps what came
 * before it), -SP_E_SPOOL_TRUNCATED while even the header is incomplete
 * (poll again), -errno.
 */
int sp_tail_poll(struct sp_tail *t, struct sp_tail_batch *out);

/*
 * The spool read so far, growing with each poll (its arrays may move:
 * pointers from sp_spool_sample and the like hold until the next poll).
 * NULL before the header has been read.  Owned by the tail.
 */
const struct sp_spool *sp_tail_spool(const struct sp_tail *t);

/*
 * The open image of module_id handed over by the recorder (sp_recorder_tail),
 * or -1.  Owned by the tail.
 */
int sp_tail_image_fd(const struct sp_tail *t, uint32_t module_id);

/* Close and free (the spool and the symbolizers built on it must be freed first).  NULL ok. */
void sp_tail_free(struct sp_tail *t);

/*
 * True when a process is still writing the spool at path: the recorder
 * holds a write lock on it (an open file description lock, fcntl(2)
 * F_OFD_SETLK with F_WRLCK, seen through F_OFD_GETLK) from its creation to its
 * summary trailer.  False when it is finished, abandoned or unreadable.
 */
bool sp_spool_is_growing(const char *path);

/*
 * What a caller keeping its own resolved stacks must forget after an update
 * (for a stack cache of its own, beside the symbolizer's): every stack of the
 * processes in pids (a new image: an exec marker, or a module mapped over
 * an earlier module of the process), and every stack holding a frame in
 * frames (resolved before, now named differently: a perf map or jitdump
 * that grew or appeared, names the recorder stored at its end, a frame
 * outside every module that a second process's samples now hold).  Both
 * sorted, without repeats.  Arrays owned by the struct
 * (sp_invalidation_release, which leaves it empty; NULL ok).
 */
struct sp_invalidation {
	int32_t *pids;
	size_t npids;
	uint32_t *frames;
	size_t nframes;
};

void sp_invalidation_release(struct sp_invalidation *inv);

/*
 * A symbolizer over the tail's spool (sp_symbolizer_new's opts), to be
 * brought up to date with sp_symbolizer_update after each poll; it takes in
 * what the spool holds when it is built.  It uses copies of the images the
 * recorder handed over (sp_tail_image_fd).  Free it before t.  Errors as
 * sp_symbolizer_new; -SP_E_BAD_ARG before the first poll read the header.
 */
int sp_tail_symbolizer(struct sp_tail *t, const struct sp_symbolizer_opts *opts,
		       struct sp_symbolizer **out);

/*
 * Take in what the polls since the last update added to sym's spool (b: the
 * last poll's batch; everything the spool holds is taken in, so a batch
 * skipped is too): new modules and frames become resolvable (images the
 * recorder handed over used), and *inv (may be NULL) gets what a caller's
 * own stack cache must drop.  Frames whose sources changed are resolved
 * again at once: those of the processes with new samples whose perf map or
 * jitdump file changed (size, mtime or inode; every process's once b says
 * the spool is finished), or whose exec markers, owner records, jitdump
 * mappings or stored perf map lines came; those that stored names came for;
 * those outside every module that a second process's samples now hold.
 * Names of frames resolved before change only for frames listed in inv, in
 * place: what
 * sp_symbolizer_resolve handed out stays valid (strings and chains live as
 * long as the symbolizer; a frame's chain after the change is another
 * array).  The symbolizer's own stack cache keeps frame ids, not names, so
 * it streams the new names with nothing to drop.  The work is proportional
 * to the new records and to the frames resolved again, besides one read of
 * a perf map that changed, and one read of kallsyms when new kernel frames
 * no symbol kept holds are first resolved.  A symbolizer updated batch by
 * batch resolves every frame as one built on the finished spool does, but
 * for a native plug-in (opts.native): an instance that has its modules
 * takes no more, so a process's later modules go to a new one, and the
 * module pointers it is given live until the next poll.  0, -ENOMEM (what
 * was taken in stays, inv is empty: drop every cached stack), or
 * -SP_E_BAD_ARG when sym was not built on a tail.
 */
int sp_symbolizer_update(struct sp_symbolizer *sym, const struct sp_tail_batch *b,
			 struct sp_invalidation *inv);

/* Write the recorder's buffered records to its spool now, so a tail sees them.  0 or -errno. */
int sp_recorder_flush(struct sp_recorder *r);

/* ---------------------------------------------------------------------- */
/* The live view (stackpulse top, report --follow)                        */

struct sp_live;

#define SP_LIVE_WINDOW_DEFAULT 5 /* seconds */

struct sp_live_opts {
	uint32_t window_s;  /* the sliding window, seconds; 0 = SP_LIVE_WINDOW_DEFAULT */
	bool show_runtime;  /* count the runtime's frames hidden by default (SP_RFRAME_HIDDEN_DEFAULT) */
	/*
	 * An update counts samples for at most this long (ms; 0: no limit) and
	 * leaves the rest to the next (sp_live_behind), so a caller that also
	 * drains a recorder (top) keeps draining while new stacks are symbolized.
	 */
	uint32_t budget_ms;
	/*
	 * enum sp_report_metric: CPU samples (0, the default), or record
	 * --off-cpu's intervals as off-CPU time, or those plus a clock event's
	 * samples as wall time (a counted event's samples then add nothing).
	 * With a time metric every count of the view is microseconds, and an
	 * interval counts once it has ended (the thread ran again), whole since
	 * the start and in the window by the part of it each second holds.
	 */
	uint32_t metric;
};

enum sp_live_sort {
	SP_LIVE_SORT_SELF = 0,  /* by self samples in the window, then since the start */
	SP_LIVE_SORT_TOTAL = 1, /* by total samples in the window, then since the start */
};

struct sp_live_view {
	enum sp_live_sort sort;
	bool by_process;        /* a row per function and process, not per function */
};

/* One row of the live table: sample counts (self: the innermost function; total: on the stack). */
struct sp_live_row {
	const char *name, *module; /* borrowed from the symbolizer (escaped) */
	int32_t pid;               /* with by_process, else -1 */
	const char *process;       /* with by_process: the spool's name for it (raw: escape it) */
	uint64_t self_win, total_win, self_all, total_all;
	bool is_inline;            /* an inlined function (SP_RFRAME_INLINE), a row of its own */
};

/*
 * Count the samples of the tail's spool as they come, per function and
 * process, since the start and over the last opts->window_s seconds of
 * sample time, names from sym (a sp_tail_symbolizer of t).  Borrows t and
 * sym, which must outlive it.  0, -ENOMEM, -SP_E_BAD_ARG (also an unknown
 * opts->metric).
 */
int sp_live_new(struct sp_tail *t, struct sp_symbolizer *sym, const struct sp_live_opts *opts,
		struct sp_live **out);

/*
 * Poll the tail (until it has no more), update the symbolizer, count the new
 * samples (work proportional to them: each distinct stack is mapped to its
 * functions once), and move the window to end at now_ns (CLOCK_MONOTONIC, as
 * the samples; 0: at the newest sample), so an idle target's shares fade.
 * *new_samples (may be NULL) gets how many came.  0 or the tail's and the
 * symbolizer's errors.
 */
int sp_live_update(struct sp_live *l, uint64_t now_ns, size_t *new_samples);

/* True once the tail read the summary trailer: the recording is over. */
bool sp_live_finished(const struct sp_live *l);

/* True when the last update stopped at its budget with samples left to count. */
bool sp_live_behind(const struct sp_live *l);

/*
 * What the window holds, "4-5 s" for a window of 5 into buf (size bytes,
 * 16 are enough): its whole seconds of sample time and the newest second,
 * which is still filling, so between K-1 and K seconds. Returns buf.
 */
const char *sp_live_window_label(const struct sp_live *l, char *buf, size_t size);

/*
 * Samples in the window and since the start: the shares' denominators
 * (their weights: events of a counted event; µs with a time metric).
 */
void sp_live_counts(const struct sp_live *l, uint64_t *window, uint64_t *all);

/*
 * A time metric: of sp_live_counts' µs, those the threads spent preempted
 * (switched out while runnable), in the window and since the start; the rest
 * of the off-CPU time they were blocked or sleeping.  Rows do not split it.
 */
void sp_live_preempted(const struct sp_live *l, uint64_t *window, uint64_t *all);

/*
 * Every row with samples, sorted by v (work proportional to the functions
 * seen, not the samples), into *rows (malloc'd, the caller frees; strings
 * borrowed from l's symbolizer and spool until the next update).  Returns
 * how many; 0 with *rows NULL when none (or out of memory).
 */
size_t sp_live_rows(struct sp_live *l, const struct sp_live_view *v, struct sp_live_row **rows);

/*
 * The callers and callees of row's function (in row's process when row->pid
 * >= 0) over the window, each counted in total_win by the samples where it
 * called or was called by the function's innermost occurrence, sorted;
 * arrays malloc'd (the caller frees).  Work proportional to the window's
 * samples, on demand only.  0 or -ENOMEM.
 */
int sp_live_neighbours(struct sp_live *l, const struct sp_live_row *row,
		       struct sp_live_row **callers, size_t *ncallers, struct sp_live_row **callees,
		       size_t *ncallees);

/*
 * The table as text: a header line naming the window, then at most max_rows
 * rows (0: all) cut to width columns (0: 100): window self% and total%, then
 * since the start (with a time metric seconds, not shares: "Self s"),
 * function, module, and with by_process the process.
 * Names are escaped for a terminal.  0 or -errno from out.
 */
int sp_live_write_table(struct sp_live *l, const struct sp_live_view *v, size_t max_rows,
			size_t width, FILE *out);

void sp_live_free(struct sp_live *l);

#endif
