/* SPDX-License-Identifier: MIT */
/*
 * lib/spool/: the spool file (private, not installed).
 *
 * Owns: the format, version 1 (stackpulse-spool(5)): its constants and the
 * reader's tables (this header); the writer the recorder appends to
 * (spool_writer.c), the validating reader that keeps a damaged file's intact
 * prefix (spool_reader.c), the symbol records, encoded and decoded
 * (spool_symrec.c), following a spool as it is written (spool_tail.c),
 * stack expansion over the prefix tree (spool_stack.c), the names of the
 * sampling events, in perf's spelling (event_names.c), and the
 * record-by-record dump (spool_dump.c), segment directories: their layout,
 * publication and retention (segments.c) and reading one as a spool
 * (segment_read.c).
 * May call: util only.
 */
#ifndef SP_SPOOL_H
#define SP_SPOOL_H

#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* "SPSPOOL" plus a NUL, so `file` and `head` show what the file is. */
#define SP_SPOOL_MAGIC "SPSPOOL"
#define SP_SPOOL_MAGIC_LEN 8
#define SP_SPOOL_VERSION 1
/* Magic plus the little-endian u16 version. */
#define SP_SPOOL_HEADER_LEN (SP_SPOOL_MAGIC_LEN + 2)
/* A uvarint of a 64-bit value never takes more than this many bytes. */
#define SP_VARINT_MAX 10

/*
 * Record types.  0 is never written: a zero type byte is what a crash leaves
 * in a preallocated or zero-filled tail, so the reader treats it as damage.
 * Types above SP_REC_LAST_ are unknown to this version and are skipped.
 */
enum sp_spool_record {
	SP_REC_INVALID = 0,
	SP_REC_META = 1,
	SP_REC_MODULE = 2,
	SP_REC_FRAME = 3,
	SP_REC_STACK = 4,
	SP_REC_THREAD = 5,
	SP_REC_THREAD_NAME = 6,
	SP_REC_SAMPLE = 7,
	SP_REC_EXEC = 8,
	SP_REC_LOST = 9,
	SP_REC_SUMMARY = 10,
	/* Symbol records, written by `stackpulse symbolize` and at record end (lib/spool/spool_symrec.c). */
	SP_REC_SYM_STRINGS = 11,
	SP_REC_SYM_FRAME = 12,
	SP_REC_SYM_KERNEL = 13,
	SP_REC_SYM_PERF_MAP = 14,
	/* Written by the recorder: a process's effective uid (perf-map owner checks). */
	SP_REC_OWNER = 15,
	/* Written by record --off-cpu: an interval a thread spent off CPU (docs/DESIGN.md, decision 12). */
	SP_REC_OFFCPU = 16,
	SP_REC_LAST_ = SP_REC_OFFCPU,
};

/* String ids of optional strings are stored plus one; 0 is "none". */
#define SP_SYM_NO_STRING UINT32_MAX

/* EXEC flags; bits a reader does not know are ignored. */
#define SP_EXEC_PYTHON 1u

/* Unchecked LEB128 encoders for callers that reserved SP_VARINT_MAX bytes per value. */
static inline uint8_t *sp_enc_uvarint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static inline uint8_t *sp_enc_svarint(uint8_t *p, int64_t v)
{
	return sp_enc_uvarint(p, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

/*
 * Room for element n of an array of elem-byte elements: returns the
 * (possibly moved) array, or NULL on overflow or ENOMEM with arr untouched.
 * Doubling keeps appends amortized O(1).
 */
static inline void *sp_grow_array(void *arr, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return arr;
	size_t c = *cap ? *cap * 2 : 16;
	if (c > SIZE_MAX / elem)
		return NULL;
	void *q = realloc(arr, c * elem);
	if (q)
		*cap = c;
	return q;
}

/* Grow arr (a typed pointer lvalue) to hold element n; 0 or -ENOMEM. */
#define SP_GROW(arr, n, cap)                                                   \
	__extension__({                                                        \
		void *q_ = sp_grow_array((arr), &(cap), (n), sizeof(*(arr)));  \
		if (q_)                                                        \
			(arr) = q_;                                            \
		q_ ? 0 : -ENOMEM;                                              \
	})

/* ---- the reader's tables, shared with the dump (spool_dump.c) ---------- */

/* One record in file order: its type (SP_REC_INVALID for an unknown type) and table index. */
struct sp_spool_log {
	uint32_t index;
	uint8_t type;
};

struct sp_spool_unknown {
	uint8_t type;
	bool damaged; /* a symbol record that did not parse, or followed one that did not */
	uint64_t length;
};

/* One function of a stored inline chain (a SYM_FRAME entry); strings are ids into sym_strings. */
struct sp_spool_sym {
	uint8_t kind, origin;
	uint32_t flags;
	uint32_t name, module;
	uint32_t file; /* SP_SYM_NO_STRING when none */
	uint32_t line;
	uint64_t symbol_offset;
};

/* A SYM_FRAME record: the chain of frame, innermost first, at syms[first..first+n). */
struct sp_spool_symframe {
	uint32_t frame, first, n;
};

/* A SYM_KERNEL record: a kallsyms symbol a stored kernel frame was named from. */
struct sp_spool_ksym {
	uint64_t addr, size; /* size 0: unknown */
	uint32_t name;
	uint32_t module;     /* SP_SYM_NO_STRING for vmlinux */
};

/* A SYM_PERF_MAP record: a perf map line a stored frame was named from. */
struct sp_spool_pmline {
	int32_t pid;
	uint64_t start, size;
	uint32_t name;
};

/* A THREAD_NAME record; the thread's name points at the latest one's string. */
struct sp_spool_name {
	uint32_t thread;
	char *name;
};

struct sp_spool_lost {
	uint64_t count, timestamp_ns;
};

struct sp_spool {
	struct sp_spool_meta meta; /* strings point at the owned copies below */
	char *command, *hostname, *kernel_release;
	uint16_t version;
	bool truncated;
	uint64_t last_timestamp_ns; /* base of the next sample's delta */
	uint64_t last_period;       /* the period of a sample that stores none */
	bool periods_stored;        /* some SAMPLE record stored a period */

	struct sp_module *modules; /* paths owned */
	size_t nmodules, modules_cap;
	struct sp_frame *frames;
	size_t nframes, frames_cap;
	/* Stack node id -> parent, frame and depth; entry 0 is the empty stack. */
	uint32_t *stack_parent, *stack_frame;
	uint16_t *stack_depth;
	size_t nstacks, stacks_cap, depth_cap;
	struct sp_thread *threads;
	size_t nthreads, threads_cap;
	struct sp_spool_name *names;
	size_t nnames, names_cap;
	struct sp_sample *samples;
	size_t nsamples, samples_cap;
	struct sp_exec *execs;
	size_t nexecs, execs_cap;
	struct sp_owner *owners;
	size_t nowners, owners_cap;
	struct sp_offcpu *offcpus;
	size_t noffcpus, offcpus_cap;
	uint64_t last_offcpu_ns; /* base of the next OFFCPU's start delta */
	struct sp_spool_lost *losts;
	size_t nlosts, losts_cap;
	uint64_t lost_total;
	/* Every SUMMARY record; the last one is the spool's summary. */
	struct sp_summary *summaries;
	size_t nsummaries, summaries_cap;
	struct sp_spool_unknown *unknowns;
	size_t nunknowns, unknowns_cap;
	/* Symbol records: every SYM_STRINGS string in order, then what refers to them. */
	char **sym_strings;
	size_t nsym_strings, sym_strings_cap;
	uint32_t *strrec_first; /* per SYM_STRINGS record: its first string id */
	size_t nstrrecs, strrecs_cap;
	struct sp_spool_sym *syms;
	size_t nsyms, syms_cap;
	struct sp_spool_symframe *symframes; /* a later one for a frame replaces an earlier */
	size_t nsymframes, symframes_cap;
	struct sp_spool_ksym *ksyms;
	size_t nksyms, ksyms_cap;
	struct sp_spool_pmline *pmlines;
	size_t npmlines, pmlines_cap;
	bool sym_damaged; /* symbol records from the first damaged one on are ignored */
	size_t intact_len; /* bytes of the file up to the end of the last record kept */
	struct sp_spool_log *log;
	size_t nlog, log_cap;
};

/* ---- decoding records (spool_reader.c, spool_symrec.c) ----------------- */

/* A bounded cursor over one record's payload. */
struct sp_cur {
	const uint8_t *p, *end;
};

static inline int sp_cur_u64(struct sp_cur *c, uint64_t *v)
{
	return sp_get_uvarint(&c->p, c->end, v);
}

static inline int sp_cur_u32(struct sp_cur *c, uint32_t *v)
{
	uint64_t u;
	if (sp_get_uvarint(&c->p, c->end, &u) || u > UINT32_MAX)
		return -SP_E_SPOOL_CORRUPT;
	*v = (uint32_t)u;
	return 0;
}

static inline int sp_cur_i32(struct sp_cur *c, int32_t *v)
{
	int64_t s;
	if (sp_get_svarint(&c->p, c->end, &s) || s < INT32_MIN || s > INT32_MAX)
		return -SP_E_SPOOL_CORRUPT;
	*v = (int32_t)s;
	return 0;
}

/*
 * A length-prefixed string, copied and NUL-terminated.  The length is checked
 * against the payload before anything is allocated; embedded NULs are
 * rejected because a C string would silently cut them.
 */
static inline int sp_cur_str(struct sp_cur *c, char **out)
{
	uint64_t n;
	if (sp_cur_u64(c, &n) || n > (uint64_t)(c->end - c->p) || memchr(c->p, 0, (size_t)n))
		return -SP_E_SPOOL_CORRUPT;
	char *s = strndup((const char *)c->p, (size_t)n);
	if (!s)
		return -ENOMEM;
	c->p += n;
	*out = s;
	return 0;
}

/* Note that type's index-th record came next in the file (s->log).  0 or -ENOMEM. */
static inline int sp_spool_log_record(struct sp_spool *s, uint8_t type, size_t index)
{
	int err = SP_GROW(s->log, s->nlog, s->log_cap);
	if (err)
		return err;
	s->log[s->nlog].type = type;
	s->log[s->nlog].index = (uint32_t)index;
	s->nlog++;
	return 0;
}
/*
 * Decode one symbol record (SYM_STRINGS, SYM_FRAME, SYM_KERNEL or
 * SYM_PERF_MAP, by type) into s's tables.  0; -SP_E_SPOOL_CORRUPT (s keeps
 * none of it); -ENOMEM.  (spool_symrec.c)
 */
int sp_spool_parse_symrec(struct sp_spool *s, uint8_t type, struct sp_cur *c);

/* ---- symbol records: encoding and finding by frame (spool_symrec.c) --- */

/*
 * Encodes resolved frames as the spool's symbol records (stackpulse-spool(5),
 * types 11 to 14), to be appended after the records of s.  Strings are
 * interned, reusing those s already stores.  s must outlive the encoder.
 */
struct sp_symenc;

int sp_symenc_new(const struct sp_spool *s, struct sp_symenc **out);
void sp_symenc_free(struct sp_symenc *e);
/* One SYM_FRAME record: the n >= 1 frames of frame_id's chain, innermost first. */
int sp_symenc_add_frame(struct sp_symenc *e, uint32_t frame_id,
			const struct sp_resolved_frame *chain, size_t n);
/* A kallsyms symbol a frame was named from (size 0: unknown; module NULL: vmlinux). */
int sp_symenc_add_kernel_symbol(struct sp_symenc *e, uint64_t addr, uint64_t size,
				const char *name, const char *module);
/* A perf map line a frame was named from, as the map wrote it. */
int sp_symenc_add_perf_map_line(struct sp_symenc *e, int32_t pid, uint64_t start,
				uint64_t size, const char *name);
uint64_t sp_symenc_frames(const struct sp_symenc *e);
/* Append every record to out: the strings first, then the rest.  0 or -ENOMEM. */
int sp_symenc_finish(struct sp_symenc *e, struct sp_buf *out);

/*
 * Index of the stored chains of s by frame id (*by_frame malloc'd, NULL
 * when s stores none; the latest record of a frame wins).  0 or -ENOMEM.
 */
int sp_symstore_index(const struct sp_spool *s, uint32_t **by_frame);
/*
 * The stored chain of frame_id into out[0..min(n, max)), innermost first;
 * returns n, the chain's length (0: nothing stored).  Strings are the spool's.
 */
size_t sp_symstore_get(const struct sp_spool *s, const uint32_t *by_frame, uint32_t frame_id,
		       struct sp_resolved_frame *out, size_t max);

/* ---- reading a spool as it grows (spool_reader.c, spool_tail.c) ------- */

/*
 * Append fd's next bytes to b until b holds limit bytes or the file ends
 * (a spool being written grows: sp_spool_open reads up to its size when
 * opened, a tail a batch at a time).  0 or -errno.
 */
int sp_spool_read_into(int fd, struct sp_buf *b, size_t limit);

/* An empty spool (stack 0 only) for sp_spool_feed.  0 or -ENOMEM. */
int sp_spool_new_empty(struct sp_spool **out);
/*
 * Parse data[0, len), the bytes that follow what s has read: the header
 * first (until s->version is set), then every record that lies whole in
 * them; *used gets the bytes consumed.  A record cut short is left for the
 * next call.  0, or the reader's errors (a corrupt whole record:
 * -SP_E_SPOOL_CORRUPT; s keeps the records before it).
 */
int sp_spool_feed(struct sp_spool *s, const uint8_t *data, size_t len, size_t *used);

/*
 * The recorder's hand-over of module images to its tail: called by each
 * poll with the range of modules it read, it gives each one deleted or
 * replaced an fd of its own (sp_tail_put_image).
 */
typedef void (*sp_tail_images_fn)(void *ctx, struct sp_tail *t, size_t first_module,
				  size_t end_module);
/* on_free(ctx) is called when the tail is freed first, so its source forgets it. */
void sp_tail_set_images(struct sp_tail *t, sp_tail_images_fn fn, void (*on_free)(void *ctx),
			void *ctx);
/* Module id's image (the tail takes fd, closing any earlier one).  0 or -ENOMEM (fd closed). */
int sp_tail_put_image(struct sp_tail *t, uint32_t module_id, int fd);

/* ---- segment directories (segments.c) ---------------------------------- */

/* The counters a SUMMARY record stores, besides its arrays: X(field) each (segments sum and split them). */
#define SP_SUMMARY_COUNTERS(X)                                                 \
	X(sample_events) X(samples) X(lost_events) X(missing_pid_samples)      \
	X(missing_tid_samples) X(idle_tid_samples) X(missing_timestamp_samples) \
	X(empty_stack_samples) X(truncated_frame_markers)                      \
	X(ignored_user_callchain_frames) X(spliced_stacks) X(code_frames)      \
	X(fp_frames)

/* d's stored counters plus (or, subtract, minus: at least 0) s's, saturating. */
void sp_summary_counters_add(struct sp_summary *d, const struct sp_summary *s, bool subtract);

/* Room for a segment's final name and its NUL. */
#define SP_SEGMENT_NAME_MAX 96

/* One file of a segment directory's layout (sp_segment_list). */
struct sp_segment_entry {
	char name[SP_SEGMENT_NAME_MAX + 16];
	uint64_t seq, start_ms; /* from the name: sequence, UTC start in ms since the epoch */
	bool partial;           /* .NAME.partial: being written, or left by a killed recorder */
	bool regular;           /* a regular file (lstat: a symlink is not) */
	uint32_t uid;
	uint64_t size;
};

/*
 * Is name one of the layout's (stackpulse-YYYYMMDDTHHMMSS.mmmZ-SEQ.spool, or
 * it as .NAME.partial)?  Its parts into the out-parameters.
 */
bool sp_segment_name_parse(const char *name, bool *partial, uint64_t *seq, uint64_t *start_ms);
/* The layout's files in dirfd, by sequence (a partial after its final name).  0 or -errno. */
int sp_segment_list(int dirfd, struct sp_segment_entry **out, size_t *n);

/*
 * Create a flight recorder's snapshot named from tmpl and the wall clock:
 * "run.spool" gives "run-YYYYMMDDTHHMMSS.mmmZ.spool" (other names get the
 * stamp appended), "-2" and so on when that exists; O_EXCL, no symlink
 * followed, mode 0600 when private_file, else 0666 less the umask.  The
 * name goes to path (size bytes).  The fd, or -errno.
 */
int sp_snapshot_create(const char *tmpl, uint64_t wall_us, bool private_file, char *path,
		       size_t size);

/* ---- writer extras: segments, symbol records (spool_writer.c) ---------- */

/*
 * A writer on fd (a new, empty file open for writing; the writer owns it from
 * now on, closing it on failure too).  With segments, the writer keeps
 * every module, frame, stack node, thread and process fact it is given and
 * writes each into a file only when that file's first record needs it, under
 * the file's own ids: sp_spool_writer_rotate then starts a new file that
 * reports alone (docs/DESIGN.md, decision 13).  Callers hold the ids the
 * writer returned, whatever file they land in.  0 or -errno.
 */
int sp_spool_writer_open_fd(int fd, const struct sp_spool_meta *meta, bool segments,
			    struct sp_spool_writer **out);
/*
 * A flight recorder's writer (docs/DESIGN.md, decision 13): segment mode
 * with no file; samples, off-CPU intervals and losses are kept in memory
 * for the last window_ns (by their timestamps), exec and owner facts per
 * process, until sp_spool_writer_snapshot writes them.  meta is copied.
 * 0 or -errno.
 */
int sp_spool_writer_open_rolling(const struct sp_spool_meta *meta, uint64_t window_ns,
				 struct sp_spool_writer **out);
/*
 * Write the window ending at now_ns (CLOCK_MONOTONIC; now_us the wall
 * clock then) into fd (taken) as a complete spool: header (its start the
 * window's), the dictionary records the window needs, its records, and a
 * summary of its samples and losses (*window).  With keep_open the file
 * stays the writer's for more records and sp_spool_writer_finish, else it
 * is finished and the writer goes back to its window.  0 or -errno.
 */
int sp_spool_writer_snapshot(struct sp_spool_writer *w, int fd, uint64_t now_ns, uint64_t now_us,
			     bool keep_open, struct sp_summary *window);
/*
 * A flight recorder's memory: the window's ring (bytes and samples in it)
 * and, about, the dictionaries (modules, frames, stack nodes, threads).
 */
void sp_spool_writer_memory(const struct sp_spool_writer *w, uint64_t *window_bytes,
			    uint64_t *window_samples, uint64_t *dict_bytes);
/* The stack node (parent, frame), interned as sp_spool_writer_intern_stack's are.  0 or -errno. */
int sp_spool_writer_intern_node(struct sp_spool_writer *w, uint32_t parent, uint32_t frame,
				uint32_t *node);
/*
 * Segment mode: finish the current file with summary s (as
 * sp_spool_writer_finish), then go on in fd (taken, closed on failure) with
 * meta's header and empty dictionaries.  0 or -errno.
 */
int sp_spool_writer_rotate(struct sp_spool_writer *w, int fd, const struct sp_spool_meta *meta,
			   const struct sp_summary *s);

/*
 * Compaction (docs/DESIGN.md, decision 14): a writer in segment or rolling
 * mode drops the dictionary entries nothing needs any more and renumbers the
 * rest, so that a recorder running for days holds what its live processes
 * and its window use, not all it ever saw.  Due (compact_due) when the
 * dictionaries grew by as many entries as the last compaction kept (65,536
 * at least), and only where no record of a file refers to them: a segment
 * mode writer just after sp_spool_writer_rotate (its file holds no
 * dictionary record yet), a flight recorder between snapshots.  Then:
 * compact_begin (marks the window's threads and stacks), keep_* for what the
 * caller still uses (a stack keeps its ancestors, frames and their modules;
 * a pid keeps its threads, exec and owner facts), compact_end, which
 * renumbers; compacted_* give each old id's new one (SP_COMPACT_DROPPED:
 * gone) until compact_release, which every compact_begin that returned 0
 * needs.  On an error of compact_end nothing changed and compacted_* give
 * the ids back unchanged.  0 or -errno (-SP_E_BAD_ARG: not in such a mode,
 * or a file refers to the dictionaries).
 */
#define SP_COMPACT_DROPPED UINT32_MAX
bool sp_spool_writer_compact_due(const struct sp_spool_writer *w);
int sp_spool_writer_compact_begin(struct sp_spool_writer *w);
void sp_spool_writer_keep_stack(struct sp_spool_writer *w, uint32_t stack_id);
void sp_spool_writer_keep_module(struct sp_spool_writer *w, uint32_t module_id);
void sp_spool_writer_keep_pid(struct sp_spool_writer *w, int32_t pid);
int sp_spool_writer_compact_end(struct sp_spool_writer *w);
uint32_t sp_spool_writer_compacted_module(const struct sp_spool_writer *w, uint32_t module_id);
uint32_t sp_spool_writer_compacted_stack(const struct sp_spool_writer *w, uint32_t stack_id);
void sp_spool_writer_compact_release(struct sp_spool_writer *w);
/* The writer has thread (pid, tid) interned. */
bool sp_spool_writer_has_thread(const struct sp_spool_writer *w, int32_t pid, int32_t tid);

/* Append whole, already encoded records (sp_symenc_finish's output).  0 or -errno. */
int sp_spool_writer_append_records(struct sp_spool_writer *w, const void *records, size_t len);
/* Flush, then read the spool written so far back into *out.  0 or -errno. */
int sp_spool_writer_read_back(struct sp_spool_writer *w, struct sp_spool **out);

#endif
