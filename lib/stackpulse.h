/* SPDX-License-Identifier: MIT */
/* stackpulse: the public API of the recording, spool and symbolization library. */
#ifndef STACKPULSE_H
#define STACKPULSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SP_VERSION "0.1.0"

/*
 * Errors.  Every fallible function returns 0 on success, -errno for a system
 * failure, or -SP_E_* for a domain failure.  One table yields codes and
 * messages; sp_strerror() accepts either kind of negative code.
 */
#define SP_ERRORS(X)                                                           \
	X(SPOOL_MAGIC, "not a stackpulse spool (bad magic)")                   \
	X(SPOOL_VERSION, "unsupported spool format version")                   \
	X(SPOOL_CORRUPT, "corrupt spool record")                               \
	X(SPOOL_TRUNCATED, "spool ends before its header is complete")         \
	X(ELF_MALFORMED, "malformed or unsupported ELF file")                  \
	X(NO_CFI, "no call-frame information")                                 \
	X(FREQ_LIMIT, "frequency above kernel.perf_event_max_sample_rate")     \
	X(STACK_SIZE, "stack size out of range")                               \
	X(NO_EVENT, "no usable perf event source")                             \
	X(NO_PROCESS, "no such process")                                       \
	X(BAD_ARG, "invalid argument")                                         \
	X(RING_CORRUPT, "corrupt perf ring buffer record")                     \
	X(LAUNCH, "cannot start the command")                                  \
	X(SPOOL_TOO_DEEP, "corrupt spool: a stack deeper than the 2049 frames "  \
			  "a recorder writes")                                   \
	X(NOT_REGULAR, "not a regular file")                                   \
	X(NO_HW_EVENT, "this machine's CPU exposes no such hardware event")    \
	X(BAD_CPU, "no such CPU online")                                        \
	X(SPOOL_BUSY, "another recording is writing it")

enum sp_error {
	SP_E_FIRST_ = 4096,
#define SP_X_ENUM(name, msg) SP_E_##name,
	SP_ERRORS(SP_X_ENUM)
#undef SP_X_ENUM
	SP_E_LAST_
};

/* Message for a negative return code (-errno or -SP_E_*).  Static storage. */
const char *sp_strerror(int err);

/*
 * Why a stack ended.  Every unwound stack ends with exactly one reason; every
 * reason but ROOT also puts a truncation marker frame at the root end of the
 * stack.  Short names are used by `dump` and the summary.
 */
#define SP_STOP_REASONS(X)                                                     \
	X(ROOT, "root", "root frame reached")                                  \
	X(STACK_EXHAUSTED, "stack-exhausted", "stack copy exhausted")          \
	X(NO_UNWIND_INFO, "no-unwind-info", "no call-frame information")       \
	X(UNMAPPED, "unmapped", "address in no known module")                  \
	X(BAD_RULE, "bad-rule", "unsupported or invalid CFI rule")             \
	X(NO_PROGRESS, "no-progress", "stack pointer did not advance")         \
	X(MAX_DEPTH, "max-depth", "frame limit reached")                       \
	X(NO_REGS, "no-regs", "sample carries no user registers")

enum sp_stop_reason {
#define SP_X_ENUM(name, s, l) SP_STOP_##name,
	SP_STOP_REASONS(SP_X_ENUM)
#undef SP_X_ENUM
	SP_STOP_COUNT_
};

/* Short ("stack-exhausted") and long names of a stop reason; "?" if out of range. */
const char *sp_stop_reason_name(unsigned reason);
const char *sp_stop_reason_text(unsigned reason);

/*
 * Per-kind sample error counters, indexed by enum sp_error_kind.  Unwind stop
 * reasons other than ROOT are counted in sp_summary.stop_reasons; these are
 * failures of records and state around the unwind.
 */
#define SP_ERROR_KINDS(X)                                                      \
	X(RECORD_MALFORMED, "record-malformed", "malformed perf record skipped") \
	X(UNKNOWN_PROCESS, "unknown-process", "sample from an untracked process") \
	X(NO_STACK_COPY, "no-stack-copy", "sample without a user stack copy")  \
	X(MODULE_UNREADABLE, "module-unreadable", "module file unreadable for CFI") \
	X(SPOOL_WRITE, "spool-write", "spool write failed")                    \
	X(THREAD_LIST, "thread-list", "thread list could not be read")

enum sp_error_kind {
#define SP_X_ENUM(name, s, l) SP_ERR_##name,
	SP_ERROR_KINDS(SP_X_ENUM)
#undef SP_X_ENUM
	SP_ERR_COUNT_
};

const char *sp_error_kind_name(unsigned kind);
const char *sp_error_kind_text(unsigned kind);

/* Counters of one recording, as record's summary prints them.  Stored in the spool trailer. */
struct sp_summary {
	uint64_t sample_events;       /* PERF_RECORD_SAMPLE records seen */
	uint64_t samples;             /* samples written to the spool */
	uint64_t lost_events;         /* sum of PERF_RECORD_LOST counts */
	bool kernel_enabled;          /* kernel frames stayed on after attach */
	uint64_t missing_pid_samples;
	uint64_t missing_tid_samples;
	uint64_t idle_tid_samples;
	uint64_t missing_timestamp_samples;
	uint64_t empty_stack_samples; /* samples that produced no usable frame */
	uint64_t truncated_frame_markers;
	uint64_t ignored_user_callchain_frames;
	uint64_t spliced_stacks;      /* DWARF stopped early; the frame-pointer chain went on */
	uint64_t code_frames;         /* frames in code without CFI proven from its bytes */
	uint64_t fp_frames;           /* frames found by frame pointers where no CFI was, kept */
	uint64_t stop_reasons[SP_STOP_COUNT_]; /* where DWARF unwinding stopped, per reason */
	uint64_t error_stats[SP_ERR_COUNT_];   /* per-kind sample errors */
	/*
	 * The recorder's own, not stored: stacks cut because the whole copy
	 * (PERF_SAMPLE_STACK_USER's size, dyn_size equal to it) was used up, so a
	 * larger --stack-size would have gone further.  A copy the kernel ended
	 * short, at the top of the stack (a process just exec'd, the dynamic
	 * loader), is not counted: a larger one would end at the same place.
	 */
	uint64_t stacks_cut_by_copy;
	/*
	 * The recorder's own, not stored: samples taken while execve replaced the
	 * image, whose one frame is the calling program's (its old pc).
	 */
	uint64_t exec_samples;
	/*
	 * The recorder's own, not stored: frames of JIT code unwound with the
	 * unwinding information its runtime wrote into a jitdump (counted in
	 * code_frames too).
	 */
	uint64_t jitdump_frames;
	uint64_t jitdumps;            /* jitdumps whose unwinding information was read */
	/*
	 * The recorder's own, not stored: processes in a container (another
	 * mount or PID namespace) running JIT code or a Python runtime, whose
	 * perf map, in the container's /tmp, was kept open to name their frames
	 * at the end; those that had none (or one not to be trusted); and the
	 * frames named from the kept maps (stored in the spool as symbol records).
	 */
	uint64_t container_perf_maps;
	uint64_t container_perf_maps_missing;
	uint64_t container_perf_map_frames;
	/*
	 * The recorder's own, not stored (system-wide recordings): samples of
	 * kernel threads and idle CPUs, kernel frames only; processes already
	 * running whose modules were read from /proc at their first sample.
	 */
	uint64_t kernel_task_samples;
	uint64_t processes_discovered;
	/*
	 * The recorder's own, not stored: processes gone for good whose modules
	 * it dropped, and module files no process mapped any more that it closed
	 * (their CFI tables freed), so memory follows the live processes.
	 */
	uint64_t processes_forgotten;
	uint64_t files_closed;
};

/* Total of error_stats plus the non-ROOT stop reasons of stacks not spliced. */
uint64_t sp_summary_error_total(const struct sp_summary *s);

/*
 * Write the NUL-terminated s to f as text a terminal cannot obey or misread:
 * every byte of a C0 or C1 control character, DEL, a bidirectional mark,
 * embedding, override or isolate, an invisible character (U+200B-U+200D,
 * U+2028-U+2029, U+2060-U+206F, U+FEFF, U+FFF9-U+FFFB, U+E0000-U+E007F), a
 * backslash (so every \xHH shown is an escape) or a byte that is not
 * well-formed UTF-8 as \xHH, the rest unchanged.  For names a target or
 * another user chose (thread names, symbols, module and perf-map paths, the
 * recorded command) on their way to root's terminal.  On allocation failure
 * writes "[unprintable]", never the raw bytes.  (lib/util/escape.c; the
 * symbolizer's resolved names are already escaped this way: escape a string
 * once.)
 */
void sp_fputs_printable(const char *s, FILE *f);

/* ---------------------------------------------------------------------- */
/* Spool data model                                                       */

#define SP_NO_MODULE UINT32_MAX
#define SP_BUILD_ID_MAX 32
/*
 * The deepest stack a spool may hold: the recorder's 1,024 user frames, as
 * many kernel frames and a truncation marker.  A STACK node deeper than this
 * makes a spool corrupt (stackpulse-spool(5)), so no reader ever expands a
 * stack longer than it, whatever a hostile file chains together.
 */
#define SP_SPOOL_MAX_DEPTH 2049u

enum sp_frame_mode {
	SP_FRAME_USER = 0,
	SP_FRAME_KERNEL = 1,
	SP_FRAME_TRUNCATED = 2, /* marker: unwinding stopped before the root */
};

/*
 * One raw frame.  abs_ip is the lookup address: the sampled IP for the leaf
 * and for the frame after a signal frame, the return address minus one for
 * every other caller frame.  rel_ip is in the module's file-offset space:
 * abs_ip - module.start + module.file_offset.  A truncation marker has
 * module_id SP_NO_MODULE, abs_ip = the stop reason, rel_ip 0.
 */
struct sp_frame {
	uint32_t module_id; /* SP_NO_MODULE when no module covers abs_ip */
	uint8_t mode;       /* enum sp_frame_mode */
	uint64_t abs_ip;
	uint64_t rel_ip;
};

enum sp_module_flags {
	SP_MODULE_KERNEL = 1u << 0,
	SP_MODULE_ANON = 1u << 1,     /* no backing file ([anon], JIT) */
	SP_MODULE_DELETED = 1u << 2,  /* backing file deleted at record time */
	SP_MODULE_HAS_BIAS = 1u << 3, /* load_bias was computed from PT_LOAD */
};

/*
 * A mapped code range and its backing file (a MODULE record).
 * load_bias is avma - svma for this mapping, computed from the PT_LOAD
 * segment that contains file_offset (docs/DESIGN.md, decision 7), so a symbolizer
 * looks up svma = abs_ip - load_bias.  Identity: build-id when present, else
 * inode + size + mtime.
 */
struct sp_module {
	uint32_t id;
	int32_t pid;          /* owning process; -1 for kernel ranges */
	uint64_t start, end;  /* runtime range [start, end) */
	uint64_t file_offset; /* file offset that start maps */
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	uint64_t load_bias;
	uint64_t file_size;   /* bytes, 0 when unknown */
	int64_t mtime_ns;     /* 0 when unknown */
	uint32_t flags;       /* enum sp_module_flags */
	uint8_t build_id_len; /* 0 when the file has no NT_GNU_BUILD_ID */
	uint8_t build_id[SP_BUILD_ID_MAX];
	const char *path;     /* owned by the writer's caller / the reader */
};

/* A thread interned by (pid, tid). */
struct sp_thread {
	int32_t pid, tid;
	const char *name; /* latest comm seen, never NULL ("" when unknown) */
};

/* One observation of one thread.  stack_id 0 is the empty stack. */
struct sp_sample {
	uint64_t timestamp_ns; /* CLOCK_MONOTONIC, ns */
	uint32_t thread;       /* index into the spool's thread table */
	uint32_t stack_id;     /* leaf node of the prefix tree */
};

/* Process exec marker (an EXEC record): a process's exec, and whether it runs Python. */
struct sp_exec {
	uint64_t timestamp_ns;
	int32_t pid;
	bool is_python_runtime;
};

/*
 * Who a process ran as: its effective uid (/proc/PID/status "Uid:") when the
 * recorder first saw it or saw it exec.  A perf map is believed only when it
 * belongs to that user or root (docs/DESIGN.md, decision 9).
 */
struct sp_owner {
	uint64_t timestamp_ns; /* CLOCK_MONOTONIC, ns; 0 when read at attach */
	int32_t pid;
	uint32_t uid;
};

/*
 * The sampling event (perf_event_open(2) type and config), stored in the
 * spool header.  Values are part of the spool format: append only.
 */
enum sp_event_source {
	SP_EVENT_CYCLES = 0,           /* PERF_COUNT_HW_CPU_CYCLES */
	SP_EVENT_CPU_CLOCK = 1,        /* PERF_COUNT_SW_CPU_CLOCK (period in ns) */
	SP_EVENT_INSTRUCTIONS = 2,     /* PERF_COUNT_HW_INSTRUCTIONS */
	SP_EVENT_CACHE_MISSES = 3,     /* PERF_COUNT_HW_CACHE_MISSES */
	SP_EVENT_BRANCH_MISSES = 4,    /* PERF_COUNT_HW_BRANCH_MISSES */
	SP_EVENT_REF_CYCLES = 5,       /* PERF_COUNT_HW_REF_CPU_CYCLES */
	SP_EVENT_TASK_CLOCK = 6,       /* PERF_COUNT_SW_TASK_CLOCK (period in ns) */
	SP_EVENT_PAGE_FAULTS = 7,      /* PERF_COUNT_SW_PAGE_FAULTS */
	SP_EVENT_MAJOR_FAULTS = 8,     /* PERF_COUNT_SW_PAGE_FAULTS_MAJ */
	SP_EVENT_CONTEXT_SWITCHES = 9, /* PERF_COUNT_SW_CONTEXT_SWITCHES */
	SP_EVENT_CPU_MIGRATIONS = 10,  /* PERF_COUNT_SW_CPU_MIGRATIONS */
	SP_EVENT_COUNT_
};

/* perf's name of an event ("cpu-clock", "page-faults"), or NULL for a value outside the enum. */
const char *sp_event_name(uint32_t source);

/*
 * The event perf's spelling names (perf list: "cycles", "cpu-cycles",
 * "instructions", "cache-misses", "branch-misses", "ref-cycles",
 * "cpu-clock", "task-clock", "page-faults"/"faults", "major-faults",
 * "context-switches"/"cs", "cpu-migrations"/"migrations") into *out.
 * 0, or -SP_E_BAD_ARG for a name outside that list.
 */
int sp_event_parse(const char *name, enum sp_event_source *out);

/* True for the PMU's events (cycles ... ref-cycles), which a VM may lack. */
bool sp_event_is_hardware(uint32_t source);

/* True when the event counts time, its period being nanoseconds (cpu-clock, task-clock). */
bool sp_event_counts_time(uint32_t source);

/* sp_spool_meta.flags */
#define SP_META_SYSTEM_WIDE 1u /* record -a / -C: every process on the recorded CPUs */

/* Spool header metadata.  Strings are owned by whoever filled the struct. */
struct sp_spool_meta {
	uint64_t start_timestamp_us; /* timeline anchor (wall clock, µs since epoch) */
	uint64_t sample_interval_us; /* 1e6 / frequency, 0 if unknown */
	uint64_t start_monotonic_ns; /* CLOCK_MONOTONIC at record start */
	uint32_t frequency_hz;
	uint32_t stack_size;         /* bytes of user stack requested per sample */
	uint32_t event_source;       /* enum sp_event_source */
	/*
	 * Events per sample when sampling by period (record -c; ns for the
	 * clocks); 0 when sampling by frequency (frequency_hz).  Spools from
	 * before it read 0.
	 */
	uint64_t sample_period;
	uint32_t flags;              /* SP_META_* */
	const char *command;         /* the recorded command line, or "" */
	const char *hostname;
	const char *kernel_release;
};

/* ---------------------------------------------------------------------- */
/* Spool writer                                                           */

struct sp_spool_writer;

/*
 * Create (truncate) the spool at path and write its header.  Records are
 * buffered and written whole, so a killed recorder leaves a readable prefix.
 * On success *out owns the open file.  Errors: -errno from open/write.
 */
int sp_spool_writer_open(const char *path, const struct sp_spool_meta *meta,
			 struct sp_spool_writer **out);

/* Append a module record.  m->id is ignored; the new id is stored in *id. */
int sp_spool_writer_add_module(struct sp_spool_writer *w, const struct sp_module *m,
			       uint32_t *id);

/* Intern a frame: an identical frame returns its existing id without writing. */
int sp_spool_writer_intern_frame(struct sp_spool_writer *w, const struct sp_frame *f,
				 uint32_t *id);

/*
 * Intern a stack given frame ids leaf first (frames[0] is the leaf).  Writes
 * the prefix-tree nodes not yet known and stores the leaf node in *stack_id.
 * n == 0 gives stack 0, the empty stack.
 */
int sp_spool_writer_intern_stack(struct sp_spool_writer *w, const uint32_t *frames,
				 size_t n, uint32_t *stack_id);

/* Intern a thread by (pid, tid); *index receives its table index. */
int sp_spool_writer_intern_thread(struct sp_spool_writer *w, int32_t pid, int32_t tid,
				  uint32_t *index);

/* Record a thread's name (comm); a later name replaces an earlier one. */
int sp_spool_writer_set_thread_name(struct sp_spool_writer *w, uint32_t index,
				    const char *name);

/* Append a sample; timestamps are stored as signed deltas. */
int sp_spool_writer_append_sample(struct sp_spool_writer *w, uint32_t thread,
				  uint32_t stack_id, uint64_t timestamp_ns);

int sp_spool_writer_append_exec(struct sp_spool_writer *w, const struct sp_exec *e);
/* Record who process o->pid runs as (OWNER record, stackpulse-spool(5)).  0 or -errno. */
int sp_spool_writer_append_owner(struct sp_spool_writer *w, const struct sp_owner *o);

/* Record a PERF_RECORD_LOST: count samples lost at timestamp_ns. */
int sp_spool_writer_append_lost(struct sp_spool_writer *w, uint64_t count,
				uint64_t timestamp_ns);

/* Write buffered records to the file (record boundaries only). */
int sp_spool_writer_flush(struct sp_spool_writer *w);

/* Bytes written to the file so far (after the last flush). */
uint64_t sp_spool_writer_bytes(const struct sp_spool_writer *w);

/*
 * Append the summary trailer, flush, fsync and close.  The writer stays
 * allocated; free it with sp_spool_writer_free().
 */
int sp_spool_writer_finish(struct sp_spool_writer *w, const struct sp_summary *s);

/* Flush what is buffered (no trailer), close and free.  NULL is a no-op. */
void sp_spool_writer_free(struct sp_spool_writer *w);

/* ---------------------------------------------------------------------- */
/* Spool reader                                                           */

struct sp_spool;

/*
 * Read and validate a whole spool.  Every byte is untrusted: sizes, indexes
 * and references are checked.  A file that ends mid-record yields its intact
 * prefix with sp_spool_truncated() true.  Errors: -errno, -SP_E_SPOOL_MAGIC,
 * -SP_E_SPOOL_VERSION, -SP_E_SPOOL_TRUNCATED (header incomplete),
 * -SP_E_SPOOL_CORRUPT (a record references something that does not exist;
 * the reader keeps what precedes it and reports truncated instead when the
 * damaged record is the last one), -SP_E_SPOOL_TOO_DEEP (a stack node more
 * than SP_SPOOL_MAX_DEPTH frames from its root: only a hostile file chains
 * so far, and its readers' work would grow with the square of the depth),
 * -SP_E_NOT_REGULAR (a FIFO, device or socket: never opened, as its read
 * could wait or never end).  A symlink is followed.  The file is read up to
 * its size when opened: a spool still being written yields its prefix.
 */
int sp_spool_open(const char *path, struct sp_spool **out);

/*
 * Open path for writing an output (a spool, a report), created with mode
 * (less the umask) or truncated.  A regular file is written; a symlink,
 * FIFO or device only when root or the caller owns it (what a symlink names
 * under the same rule): another user's is refused without being opened
 * (-ELOOP for a symlink, which would make root write where it points;
 * -SP_E_NOT_REGULAR for a FIFO, which would hang it), and a directory is
 * -EISDIR.  So `-o /dev/null` and a FIFO of one's own still work.  Returns
 * the descriptor (O_CLOEXEC, blocking), or -errno.  The caller closes it.
 */
int sp_output_create(const char *path, unsigned int mode);

/*
 * True when the file at path starts with the spool magic (stackpulse-spool(5)),
 * whatever follows: the CLI refuses to write a report over a recording.
 * False when it cannot be read.
 */
bool sp_file_is_spool(const char *path);

/* Same as sp_spool_open over a caller's buffer (copied). */
int sp_spool_open_buffer(const void *data, size_t len, struct sp_spool **out);

void sp_spool_free(struct sp_spool *s);

const struct sp_spool_meta *sp_spool_meta(const struct sp_spool *s);

/* True when the file ended mid-record and only the intact prefix was kept. */
bool sp_spool_truncated(const struct sp_spool *s);

/* The summary trailer, or NULL when the recording was cut short. */
const struct sp_summary *sp_spool_summary(const struct sp_spool *s);

size_t sp_spool_module_count(const struct sp_spool *s);
const struct sp_module *sp_spool_module(const struct sp_spool *s, uint32_t id);
size_t sp_spool_frame_count(const struct sp_spool *s);
const struct sp_frame *sp_spool_frame(const struct sp_spool *s, uint32_t id);
size_t sp_spool_thread_count(const struct sp_spool *s);
const struct sp_thread *sp_spool_thread(const struct sp_spool *s, uint32_t index);
size_t sp_spool_sample_count(const struct sp_spool *s);
const struct sp_sample *sp_spool_sample(const struct sp_spool *s, size_t index);
size_t sp_spool_exec_count(const struct sp_spool *s);
const struct sp_exec *sp_spool_exec(const struct sp_spool *s, size_t index);
size_t sp_spool_owner_count(const struct sp_spool *s);
const struct sp_owner *sp_spool_owner(const struct sp_spool *s, size_t index);
/*
 * The uid process pid last ran as (its latest OWNER record) into *uid: 0, or
 * -ENOENT when the spool says nothing (spools of stackpulse before 0.1.0's
 * owner records, a process gone before the recorder read its status).
 */
int sp_spool_process_uid(const struct sp_spool *s, int32_t pid, uint32_t *uid);
/* Sum of the lost records' counts. */
uint64_t sp_spool_lost_total(const struct sp_spool *s);

/* Number of stack ids (prefix-tree nodes + 1 for the empty stack 0). */
size_t sp_spool_stack_count(const struct sp_spool *s);
/* Frame id of a stack's leaf node, and the node's parent (0 = none). */
uint32_t sp_spool_stack_frame(const struct sp_spool *s, uint32_t stack_id);
uint32_t sp_spool_stack_parent(const struct sp_spool *s, uint32_t stack_id);
/* Number of frames in a stack, leaf to root (at most SP_SPOOL_MAX_DEPTH); O(1). */
uint32_t sp_spool_stack_depth(const struct sp_spool *s, uint32_t stack_id);

/*
 * A sample's offset on the profile timeline, in µs: (its timestamp_ns - the
 * first sample's timestamp_ns) / 1000, 0 for a sample earlier than the first.
 * The timeline's origin sits at meta.start_timestamp_us on the wall clock;
 * sp_spool_sample_time_us gives the sum: the sample's place on the timeline.
 */
uint64_t sp_spool_timestamp_us(const struct sp_spool *s, const struct sp_sample *sample);

/*
 * A sample's time on the profile timeline, as stackpulse-spool(5) defines
 * it: meta.start_timestamp_us (the anchor stored in the header, µs since the
 * epoch unless the recording set another clock) plus sp_spool_timestamp_us.
 * Use it to line samples up with an external clock or trace.
 */
uint64_t sp_spool_sample_time_us(const struct sp_spool *s, const struct sp_sample *sample);

/*
 * Kernel code addresses of the interned frames, one per call, in frame id
 * order (the symbolizer reads kallsyms for this set only, keeping no other
 * symbol).  Start with *cursor = 0; each call stores the
 * next kernel frame's abs_ip in *addr and returns true, or returns false at
 * the end.  A kernel frame is one recorded in kernel mode or in a module
 * flagged SP_MODULE_KERNEL.  Interned frames are distinct, so an address
 * repeats only when it was recorded in several modes.
 */
bool sp_spool_kernel_frame_next(const struct sp_spool *s, size_t *cursor, uint64_t *addr);

/*
 * One raw frame with the module context the recorder bound it to, for raw
 * replay of a spool.  No symbolization happens: this is for
 * callers that bring their own symbolizer.  frame and module are borrowed
 * from the spool and live as long as it.  module is NULL for a truncation
 * marker and for an address no recorded module covered.  rel_ip is the
 * module-relative address in the module's file-offset space
 * (abs_ip - module->start + module->file_offset, as recorded); a module with
 * SP_MODULE_HAS_BIAS also gives the static address abs_ip - module->load_bias.
 * No pid is needed to find a frame's module: the module record carries its
 * owning pid.
 */
struct sp_frame_context {
	uint32_t frame_id;
	const struct sp_frame *frame;
	const struct sp_module *module;
	uint64_t rel_ip; /* 0 when module is NULL */
};

/*
 * The context of interned frame frame_id into *out.  Errors: -SP_E_BAD_ARG
 * for an unknown frame id (*out untouched).
 */
int sp_spool_frame_context(const struct sp_spool *s, uint32_t frame_id,
			   struct sp_frame_context *out);

/*
 * Walks one stack's frames leaf to root without copying, each with its
 * frame context (struct sp_frame_context): each step follows the prefix
 * tree to the parent node.  Fields are private; the struct lives on the
 * caller's stack and needs no release.
 */
struct sp_stack_iter {
	const struct sp_spool *spool;
	uint32_t node; /* next node to visit; 0 at the end */
	uint32_t left; /* steps allowed, a bound against a damaged tree */
};

/*
 * Start walking stack_id (a sample's stack_id, or any id below
 * sp_spool_stack_count).  Stack 0 (the empty stack) and unknown ids walk
 * nothing.  The spool must outlive the iterator.
 */
void sp_spool_stack_iter_init(struct sp_stack_iter *it, const struct sp_spool *s,
			      uint32_t stack_id);

/*
 * The next frame, leaf first, with its module context, into *out: returns
 * true, or false when the root has been passed.  A truncated stack's last
 * frame is its truncation marker (SP_FRAME_TRUNCATED, abs_ip = the
 * enum sp_stop_reason).
 */
bool sp_spool_stack_iter_next(struct sp_stack_iter *it, struct sp_frame_context *out);

/*
 * Is path a Python runtime's module: does the basename of path (a module path,
 * " (deleted)" suffix allowed) name a Python executable or libpython?
 * "python", "python3", "/usr/bin/python3.12", "python3.12d", "python3.13t",
 * "libpython3.so" and "libpython3.12.so.1.0" do; "python3-config",
 * "pythonista", "libpython.so" and NULL do not.  The recorder marks a process
 * a Python runtime when it maps such a module.
 */
bool sp_is_python_module(const char *path);

/*
 * The display name of a module path, as reports
 * show modules: its basename without the " (deleted)" suffix, "[anon]" for
 * NULL, "" and perf's "//anon"; a path ending in '/' is kept whole.  Writes
 * at most size bytes to buf, NUL included (snprintf's contract: buf may be
 * NULL when size is 0) and returns the name's full length.
 */
size_t sp_path_to_name(const char *path, char *buf, size_t size);

/*
 * Print every record in file order, one per line, in the stable text form
 * documented in stackpulse-dump(1).  Returns 0 or -errno from out.
 */
int sp_spool_dump_text(const struct sp_spool *s, FILE *out);

/*
 * Print every record in file order as JSON Lines (RFC 8259 objects, one per
 * line, "\n"-terminated), for scripts; the form is documented in
 * stackpulse-dump(1).  Each object has a "type" (the text dump's record kind:
 * "meta", "module", "frame", ...) and the text dump's fields under the same
 * names.  Counts, ids, pids, sizes and times are JSON numbers; addresses,
 * offsets and load biases are "0x..." hex strings and inode and mtime_ns
 * decimal strings, because they are compared exactly and may exceed 2^53,
 * where readers that use doubles (JavaScript, jq 1.6) lose digits.  Absent
 * ids are null.  Strings are JSON-escaped, the characters sp_fputs_printable
 * escapes as \uXXXX, and a byte that is not UTF-8 as the text \xHH (JSON
 * "\\xHH").  A truncated spool ends with {"type":"truncated","records":N},
 * one without a summary trailer with {"type":"cut-short"}.  Returns 0,
 * -errno from out, or -ENOMEM.
 */
int sp_spool_dump_json(const struct sp_spool *s, FILE *out);

/* ---------------------------------------------------------------------- */
/* Symbolizer                                                             */

enum sp_frame_kind {
	SP_KIND_NATIVE = 0,
	SP_KIND_KERNEL = 1,
	SP_KIND_PYTHON = 2,
	SP_KIND_UNKNOWN = 3,
	SP_KIND_TRUNCATED = 4,
};

enum sp_symbol_origin {
	SP_ORIGIN_ELF = 0,
	SP_ORIGIN_PERF_MAP = 1,
	SP_ORIGIN_KERNEL_SYMBOLS = 2,
	SP_ORIGIN_ADDRESS_ONLY = 3,
};

/* Flags of a resolved frame: what views may do with it. */
enum sp_resolved_flags {
	/* A native frame of the Python runtime (see sp_symbolizer_resolve). */
	SP_RFRAME_PYTHON_RUNTIME = 1u << 0,
	/* Views hide it by default (sp_report_opts.show_runtime shows it). */
	SP_RFRAME_HIDDEN_DEFAULT = 1u << 1,
	SP_RFRAME_JIT = 1u << 2,       /* named from a perf map, not a py:: entry */
	SP_RFRAME_INLINE = 1u << 3,    /* an inlined function (sp_symbolizer_resolve_all) */
	SP_RFRAME_TRUNCATED = 1u << 4, /* the truncation marker */
};

/*
 * A displayable frame.  Strings live as long as the symbolizer.  A native
 * frame whose module has DWARF carries its source position: for the
 * innermost function of a raw frame, the line of the sampled (or calling)
 * instruction; for a function that an inlined function was inlined into,
 * the line of that inlined call.
 */
struct sp_resolved_frame {
	const char *name;   /* function, or "module+0xOFFSET", or "[truncated]" */
	const char *module; /* display name of the module (basename), or "" */
	const char *file;   /* source file (as DWARF names it, usually absolute), or NULL */
	uint32_t line;      /* 0 when unknown */
	uint8_t kind;       /* enum sp_frame_kind */
	uint8_t origin;     /* enum sp_symbol_origin */
	uint32_t flags;     /* enum sp_resolved_flags; SP_RFRAME_INLINE: an inlined function */
	uint64_t pc;        /* abs_ip of the raw frame */
	uint64_t symbol_offset; /* pc - symbol start, when named; 0 for inline frames */
};

/* Which processes' perf maps (/tmp/perf-PID.map) may name their anonymous code. */
enum sp_perf_map_policy {
	SP_PERF_MAPS_ALL = 0,    /* every process (the default) */
	SP_PERF_MAPS_PYTHON = 1, /* processes whose latest exec marker says Python runtime */
	SP_PERF_MAPS_NONE = 2,   /* none: anonymous code keeps its address form */
	SP_PERF_MAPS_PIDS = 3,   /* the processes listed in opts.perf_map_pids only */
};

/*
 * A module as a native symbolizer plug-in sees it:
 * one file-backed user module of the process group, its runtime range and
 * its image base, so the plug-in needs no /proc and no layout parsing.
 */
struct sp_sym_module {
	const struct sp_module *module; /* the recorded module (build-id, inode, ...), borrowed */
	const char *path;               /* file path, without the " (deleted)" suffix */
	uint64_t avma_start, avma_end;  /* runtime addresses [start, end) */
	/*
	 * avma - svma for this mapping (its image base), from the
	 * PT_LOAD segment the recorder found for it: svma = addr - image_base.
	 * Without has_image_base (the recorder could not read the file), use
	 * the file offset: addr - avma_start + module->file_offset.
	 */
	uint64_t image_base;
	bool has_image_base;
};

/* One function a plug-in found at an address; strings need only last until its next call. */
struct sp_native_symbol {
	const char *name;       /* required: a plug-in entry without a name is ignored */
	const char *file;       /* source file, or NULL */
	uint32_t line;          /* 0 when unknown */
	uint64_t symbol_offset; /* svma - the function's start, 0 when unknown */
};

/*
 * A native symbolizer plug-in (a factory of per-module-group instances):
 * it names the addresses of file-backed user modules in place of the
 * built-in ELF/DWARF backend, while kernel frames (kallsyms), perf-map
 * frames and the address fallback stay built in.  The
 * symbolizer makes one instance per module group: the file-backed modules
 * of one process that do not overlap (a mapping recorded over an earlier one
 * starts a new group), so each instance sees one consistent address space.
 * Instances are made on the group's first frame, called from the thread
 * that resolves, and freed with the symbolizer.  A callback returning
 * non-zero (e.g. -errno) leaves the frames it concerns in the address form
 * and is counted in stats.native_backend_errors; -ENOMEM fails the resolve.
 */
struct sp_native_backend {
	void *ctx; /* passed to create, owned by the caller; must outlive the symbolizer */
	/* The factory: a new instance for a group of pid's modules into *instance.  0 or -errno. */
	int (*create)(void *ctx, int32_t pid, void **instance);
	/*
	 * The group's modules (n >= 1), once, before any symbolize_one.  The
	 * array and its strings are borrowed for this call only; the module
	 * pointers live as long as the spool.
	 */
	int (*set_modules)(void *instance, const struct sp_sym_module *modules, size_t n);
	/*
	 * Name addr (a runtime address, abs_ip of the raw frame, inside one of
	 * the group's modules): up to max functions into out, the innermost
	 * inlined function first and the function that holds the code last;
	 * *n = how many (0: nothing known, the frame keeps the module+0xOFFSET
	 * form).  Called once per distinct frame; results are copied.
	 */
	int (*symbolize_one)(void *instance, uint64_t addr, struct sp_native_symbol *out,
			     size_t max, size_t *n);
	void (*free)(void *instance); /* may be NULL */
};

/* Which symbol records stored in the spool (stackpulse symbolize) a symbolizer uses. */
enum sp_stored_symbols {
	SP_STORED_ALL = 0,   /* every stored frame (the default) */
	SP_STORED_NAMED = 1, /* named ones; address-only frames are resolved again */
	SP_STORED_NONE = 2,  /* none: every frame is resolved from the files */
};

/* Zero-initialised options are the defaults.  Strings are copied by sp_symbolizer_new. */
struct sp_symbolizer_opts {
	bool no_demangle;
	bool no_kernel_symbols;    /* kernel frames keep the [kernel]+0xADDRESS form */
	/*
	 * A saved kallsyms file of the recording's boot; NULL reads
	 * /proc/kallsyms, and only when the running kernel's release is the
	 * recorded one (a reboot into the same release is not detected: the
	 * kernel's load address changes, so use a copy saved at recording time).
	 */
	const char *kallsyms_path;
	const char *perf_map_dir;  /* where perf-PID.map files are read; NULL: /tmp */
	uint32_t perf_map_policy;  /* enum sp_perf_map_policy */
	/*
	 * Inlined functions are not frames of their own: sp_symbolizer_resolve_all
	 * gives the containing function alone, at the line where the inlined
	 * code sits in it.
	 */
	bool no_inline;
	/*
	 * Colon-separated absolute directories searched first for separate
	 * debug files; NULL reads $STACKPULSE_DEBUG_DIRS.
	 */
	const char *debug_dirs;
	/*
	 * Where decompressed copies of debug files with compressed DWARF are
	 * kept (DIR/debug/BUILDID.debug, made on first use); NULL reads
	 * $STACKPULSE_CACHE_DIR, else $XDG_CACHE_HOME/stackpulse, else
	 * $HOME/.cache/stackpulse; "" keeps no copies.
	 */
	const char *cache_dir;
	/*
	 * The cache's largest total size in bytes (its debug/ and symbols/
	 * files): least recently used files go first when a new one would
	 * exceed it.  0 reads $STACKPULSE_CACHE_SIZE, else SP_CACHE_DEFAULT_MAX
	 * (2 GiB).
	 */
	uint64_t cache_max_bytes;
	/*
	 * With SP_PERF_MAPS_PIDS, the only processes whose perf maps are read
	 * npids pids, copied.  See sp_spool_python_pids for the pids a
	 * spool records as Python runtimes.
	 */
	const int32_t *perf_map_pids;
	size_t perf_map_npids;
	/*
	 * A native symbolizer plug-in in place of the built-in ELF/DWARF backend
	 * (the struct is copied; its ctx is not).  NULL: the built-in backend,
	 * which debug_dirs and no_inline configure.
	 */
	const struct sp_native_backend *native;
	/*
	 * enum sp_stored_symbols.  A stored frame is used as stored, without
	 * opening any file, except where these options exclude its source:
	 * no_demangle ignores every stored frame (they hold demangled names),
	 * no_kernel_symbols the kallsyms-named ones, a perf_map_policy other
	 * than ALL the perf-map-named ones; no_inline keeps a stored chain's
	 * last frame.
	 */
	uint32_t stored_symbols;
};

struct sp_symbolizer;

/*
 * Build a symbolizer for a loaded spool.  Module files are opened lazily,
 * once per file (libdwfl), and proven to be the recorded file (build-id, or
 * inode + size + mtime) before their symbols are used.  Symbols and DWARF
 * come from the file itself or from its separate debug file, looked for in
 * opts->debug_dirs (else $STACKPULSE_DEBUG_DIRS) by build-id
 * (DIR/.build-id/xx/rest.debug) and by .gnu_debuglink name (DIR/LINK,
 * DIR/FILEDIR/LINK), then in /usr/lib/debug/.build-id, then by debug link
 * beside the file, in its .debug/ and under /usr/lib/debug/FILEDIR; last,
 * when $DEBUGINFOD_URLS is set, from debuginfod servers (libdw loads
 * libdebuginfod.so.1 at run time).  A debug file is used only when its
 * build-id is the module file's (the debug link's CRC-32 when the file has
 * no build-id); others are refused and counted in the stats.  The spool
 * must outlive the symbolizer; opts may be NULL (defaults).  Errors:
 * -SP_E_BAD_ARG (no spool, an unknown perf_map_policy), -ENOMEM.
 */
int sp_symbolizer_new(const struct sp_spool *s, const struct sp_symbolizer_opts *opts,
		      struct sp_symbolizer **out);

/*
 * Resolve one interned frame (cached per frame id).  *out is borrowed and
 * lives as long as the symbolizer.  Resolution order (docs/DESIGN.md, decision 9):
 * a frame in anonymous code (an SP_MODULE_ANON module, or no module) is
 * looked up in its process's perf map, allowed by the policy and checked
 * (a regular file, not writable by group or others, not older than the
 * process when the recording saw its exec); "py::FUNC:FILE" entries give
 * SP_KIND_PYTHON frames, others SP_RFRAME_JIT ones, both SP_ORIGIN_PERF_MAP.
 * A file-backed frame gets the ELF symbols of its proven module file (or,
 * when they have none for the address, its DWARF subprogram's name), and
 * its source position from DWARF; when the address is inlined code, *out is
 * the function that holds it, the last of sp_symbolizer_resolve_all's
 * frames.  A kernel frame gets its kallsyms name (SP_ORIGIN_KERNEL_SYMBOLS, module
 * "[kernel.kallsyms]" or "[MODULE]"); kallsyms is read once, on the first
 * kernel frame, keeping only the symbols the spool's kernel frames need.
 * Otherwise the module+0xOFFSET, [kernel]+0xADDRESS or [unknown]+0xADDRESS
 * fallback.  With opts.native, a file-backed frame is named by the plug-in
 * instead of ELF/DWARF (struct sp_native_backend).  A native frame of a
 * module sp_is_python_module names, in a process an exec marker ever showed
 * as a Python runtime and whose perf map the policy allows and could be read,
 * gets SP_RFRAME_PYTHON_RUNTIME | SP_RFRAME_HIDDEN_DEFAULT (views may
 * hide it): its py:: frames stand in for the interpreter's, while without
 * a perf map nothing could, so nothing is flagged.  Errors: -SP_E_BAD_ARG for an unknown frame id, -ENOMEM.  An
 * unreadable kallsyms or perf map is not an error: it is counted in the
 * stats and its frames keep the fallback form.
 */
int sp_symbolizer_resolve(struct sp_symbolizer *sym, uint32_t frame_id,
			  const struct sp_resolved_frame **out);

/*
 * Resolve one interned frame into every function it stands for: *frames is
 * a borrowed array of *n >= 1 frames that lives as long as the symbolizer,
 * cached per frame id.  When the module's DWARF (its own, or a separate
 * debug file's) shows the address inside inlined code, the array holds the
 * inline chain: the innermost inlined function first, each flagged
 * SP_RFRAME_INLINE and named from DWARF (C++ linkage names demangled), and
 * the containing function last, named as sp_symbolizer_resolve names it
 * (which returns that last frame).  Otherwise, and with opts.no_inline,
 * *n is 1.  Source file and line: see struct sp_resolved_frame.  The chain
 * follows DWARF's DW_TAG_inlined_subroutine scopes and their DW_AT_call_file
 * and DW_AT_call_line (DWARF 5, section 3.3.8).  Errors as
 * sp_symbolizer_resolve.
 */
int sp_symbolizer_resolve_all(struct sp_symbolizer *sym, uint32_t frame_id,
			      const struct sp_resolved_frame **frames, size_t *n);

void sp_symbolizer_free(struct sp_symbolizer *sym);

/*
 * Bounds on compressed sections (SHF_COMPRESSED, GNU .zdebug_*; Debian's
 * -dbg packages, gcc and clang -gz).  A section is inflated only when its
 * compression header claims at most SP_INFLATE_SECTION_MAX bytes, and the
 * sections of one file together at most SP_INFLATE_FILE_MAX (in section
 * order); the claims are read before anything is inflated, and a section
 * past them is skipped and counted, never inflated (deflate inflates up to
 * about 1,032 times: a 4 MB library can claim gigabytes).
 */
#define SP_INFLATE_SECTION_MAX ((uint64_t)256 << 20)
#define SP_INFLATE_FILE_MAX ((uint64_t)1 << 30)
/*
 * MiniDebugInfo (.gnu_debugdata: an xz-compressed ELF file holding only a
 * symbol table, which libdwfl unpacks whole for a stripped module): xz's
 * sizes are claims its decoder checks only at the end, so the section is
 * decoded once, into scratch, up to this bound, with a dictionary of at most
 * SP_XZ_MEMLIMIT; past either it is skipped like a compressed section.
 */
#define SP_INFLATE_DEBUGDATA_MAX ((uint64_t)64 << 20)
#define SP_XZ_MEMLIMIT ((uint64_t)64 << 20)
/* The cache's size bound (DIR/debug and DIR/symbols) unless opts or STACKPULSE_CACHE_SIZE say. */
#define SP_CACHE_DEFAULT_MAX ((uint64_t)2 << 30)

/* What a symbolizer could and could not use, counted as it resolves. */
struct sp_symbolizer_stats {
	uint64_t files_proven;        /* module files opened and proven the recorded file */
	uint64_t files_unproven;      /* build-id, or inode + size + mtime, differ */
	uint64_t files_unreadable;    /* missing, unreadable or not ELF */
	uint64_t frames_named;        /* distinct frames named (ELF, kallsyms or perf map) */
	uint64_t frames_address_only; /* distinct frames given the address form */
	uint64_t frames_with_lines;   /* distinct frames given a source file and line (DWARF) */
	uint64_t inline_frames;       /* inlined-function frames those frames expanded into */
	/* Separate debug files, looked for once per module file without its own DWARF or symbols. */
	uint64_t debug_files_used;    /* found and used (build-id or debug link CRC matched) */
	/* Of those, found by libdwfl's own search once DEBUGINFOD_URLS is set (debuginfod). */
	uint64_t debug_files_debuginfod;
	/* Of those, read from a decompressed copy in the cache (cache_dir); written now. */
	uint64_t debug_files_cached, debug_files_cache_written;
	/*
	 * The cache directory when it was refused (a symlink on the way, owned by
	 * another user, writable by others; sp_cache_dir_check) and why; the
	 * cache is then off.  Both NULL when it was used or there was none.
	 */
	const char *cache_dir_refused, *cache_dir_refusal;
	uint64_t debug_files_mismatched; /* refused: another build-id, wrong CRC, not trusted */
	const char *debug_file_mismatched; /* the first refused candidate's path, or NULL */
	/*
	 * Compressed sections of module and debug files skipped, never
	 * inflated: over SP_INFLATE_SECTION_MAX or SP_INFLATE_FILE_MAX (names,
	 * inline chains or lines they held are missing).  The first such
	 * file's path, or NULL.
	 */
	uint64_t sections_not_inflated;
	const char *section_not_inflated_file;
	/*
	 * The cache's size bound in bytes (cache_max_bytes, STACKPULSE_CACHE_SIZE
	 * or SP_CACHE_DEFAULT_MAX); cache_size_invalid is STACKPULSE_CACHE_SIZE
	 * when it could not be read (the default was used), else NULL.  Files
	 * removed to keep the cache within it (least recently used first), and
	 * copies not kept because they alone would not fit.
	 */
	uint64_t cache_max_bytes;
	const char *cache_size_invalid;
	uint64_t cache_files_evicted, cache_files_too_large;
	/* Kernel symbols: kallsyms is read once, for every kernel frame of the spool. */
	int kallsyms_error;           /* 0, or -errno why kallsyms could not be read */
	bool kallsyms_read;           /* a kallsyms file was read */
	bool kallsyms_restricted;     /* it showed every address as 0 (kernel.kptr_restrict) */
	bool kallsyms_other_kernel;   /* /proc/kallsyms not used: the recording ran another kernel release */
	uint64_t kallsyms_lines;      /* lines read */
	uint64_t kallsyms_kept;       /* symbols kept: only those nearest below a kernel frame */
	uint64_t kallsyms_malformed;  /* lines skipped as malformed */
	uint64_t kernel_frames_named; /* distinct kernel frames named from kallsyms */
	uint64_t kernel_frames_unnamed; /* distinct kernel frames left as addresses */
	/* Perf maps, read once per process that has a frame in anonymous code. */
	uint64_t perf_maps_read;      /* map files read */
	uint64_t jitdumps_read;       /* of those, jitdumps read for a process without a perf map */
	uint64_t perf_maps_missing;   /* processes with anonymous-code frames and no map file */
	uint64_t perf_maps_stale;     /* map files older than their process (pid reuse): ignored */
	uint64_t perf_maps_insecure;  /* not a regular file, or writable by group or others: ignored */
	/* owned by neither the process's user (its OWNER record) nor root: ignored */
	uint64_t perf_maps_foreign;
	uint64_t perf_maps_limited;   /* map files read only in part (size or line limits) */
	uint64_t perf_map_lines_malformed; /* lines skipped (bad numbers or names, wrapping ranges) */
	uint64_t perf_map_frames_named;    /* distinct frames named from a perf map */
	uint64_t perf_map_frames_denied;   /* distinct frames of processes the policy excludes */
	/* distinct frames in anonymous code of processes with no usable perf map (missing, stale, insecure) */
	uint64_t perf_map_frames_unmapped;
	/* Distinct native frames of a Python runtime flagged PYTHON_RUNTIME | HIDDEN_DEFAULT. */
	uint64_t python_runtime_frames;
	uint64_t native_backend_errors;    /* plug-in callbacks that failed (create, set_modules, symbolize_one) */
	/* sp_symbolizer_for_each_*: stacks streamed from the (pid, stack id) cache, and first walks. */
	uint64_t stack_cache_hits;
	uint64_t stack_cache_misses;
	uint64_t frames_stored;       /* distinct frames taken from the spool's symbol records */
};

void sp_symbolizer_stats(const struct sp_symbolizer *sym, struct sp_symbolizer_stats *out);

/*
 * Stream the resolved frames of stack_id as sampled in process pid to visit,
 * leaf to root, each raw frame's inline chain innermost first (exactly the
 * frames sp_symbolizer_resolve_all gives, frame after frame), with arg.
 * Streamed stacks are cached: the first walk of a (pid, stack id) pair
 * resolves its frames and keeps their compact frame ids (4 bytes a frame,
 * no copies of resolved frames), so a repeated stack is streamed from
 * that list without walking the prefix tree again (counted in
 * stats.stack_cache_hits / stack_cache_misses).  The frames passed are
 * borrowed and live as long as the symbolizer; every frame is passed,
 * SP_RFRAME_HIDDEN_DEFAULT ones too: display policy is the caller's.  A
 * non-zero return from visit stops the walk and is returned.  Stack 0
 * visits nothing.  Errors: -SP_E_BAD_ARG for an unknown stack id, -ENOMEM,
 * and resolve errors.  Not thread-safe, like every symbolizer call.
 */
int sp_symbolizer_for_each_stack_frame(struct sp_symbolizer *sym, int32_t pid, uint32_t stack_id,
				       int (*visit)(const struct sp_resolved_frame *frame,
						    void *arg),
				       void *arg);

/* The same for one sample: its thread's pid and its stack_id.  -SP_E_BAD_ARG for a bad thread. */
int sp_symbolizer_for_each_sample_frame(struct sp_symbolizer *sym, const struct sp_sample *sample,
					int (*visit)(const struct sp_resolved_frame *frame,
						     void *arg),
					void *arg);

/*
 * The pids a spool's exec markers record as Python runtimes, sorted, into
 * *pids (malloc'd, the caller frees; NULL when *n is 0).  ever false: those
 * whose latest marker says Python (a pid reused by a later process that is
 * not Python is left out); ever true: those ever marked Python, the broader
 * set sp_symbolizer_new_recorded_python uses.  0 or -ENOMEM.
 */
int sp_spool_python_pids(const struct sp_spool *s, bool ever, int32_t **pids, size_t *n);

/*
 * A symbolizer for a spool's recorded Python runtimes: sp_symbolizer_new
 * with opts (may be NULL) except that perf maps are read only for the
 * processes ever recorded as Python runtimes (SP_PERF_MAPS_PIDS with
 * sp_spool_python_pids(s, true, ...)).  SP_PERF_MAPS_PYTHON is the strict
 * form (latest marker).  Errors as sp_symbolizer_new.
 */
int sp_symbolizer_new_recorded_python(const struct sp_spool *s,
				      const struct sp_symbolizer_opts *opts,
				      struct sp_symbolizer **out);

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
 * holds an advisory lock on it (flock(2), LOCK_EX) from its creation to its
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
};

/*
 * Count the samples of the tail's spool as they come, per function and
 * process, since the start and over the last opts->window_s seconds of
 * sample time, names from sym (a sp_tail_symbolizer of t).  Borrows t and
 * sym, which must outlive it.  0, -ENOMEM, -SP_E_BAD_ARG.
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

/* Samples in the window and since the start: the shares' denominators. */
void sp_live_counts(const struct sp_live *l, uint64_t *window, uint64_t *all);

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
 * since the start, function, module, and with by_process the process.
 * Names are escaped for a terminal.  0 or -errno from out.
 */
int sp_live_write_table(struct sp_live *l, const struct sp_live_view *v, size_t max_rows,
			size_t width, FILE *out);

void sp_live_free(struct sp_live *l);

/* ---------------------------------------------------------------------- */
/* Storing symbols in a spool (stackpulse symbolize)                      */

/* Frames of one module file (or of the kernel, or of anonymous code) left address-only. */
struct sp_unresolved {
	const char *what;     /* the module file's recorded path, "[kernel]", "perf-PID.map", ... */
	uint8_t build_id_len; /* the recorded build-id, 0 when none */
	uint8_t build_id[SP_BUILD_ID_MAX];
	uint64_t frames;      /* distinct frames left in the address form */
	const char *why;      /* why it gave no names */
	char **places;        /* every place looked, in order: file, map_files, debug files, ... */
	size_t nplaces;
};

struct sp_symbolize_result {
	uint64_t frames;              /* distinct frames the samples use (truncation markers aside) */
	uint64_t frames_named;        /* of those, named (ELF/DWARF, kallsyms or perf map) */
	uint64_t frames_address_only; /* of those, left as module+offset or an address */
	uint64_t kernel_frames, kernel_frames_named;
	uint64_t perf_map_frames_named;
	uint64_t frames_stored_before; /* taken from symbol records the spool already had */
	uint64_t frames_written;      /* SYM_FRAME records appended */
	uint64_t kernel_symbols_written, perf_map_lines_written;
	uint64_t bytes_written;       /* bytes of symbol records appended */
	bool input_truncated;         /* the input ended mid-record: its intact prefix was kept */
	struct sp_symbolizer_stats stats;
	struct sp_unresolved *unresolved; /* owned, by module file in first-seen order */
	size_t nunresolved;
};

/*
 * Resolve every frame the samples of the spool at spool_path use, exactly
 * as a report would (opts as for sp_symbolizer_new; stored_symbols
 * SP_STORED_NAMED retries address-only frames an earlier run stored), and
 * append what was resolved now as symbol records (stackpulse-spool(5),
 * types 11 to 14): each frame's chain, and the kallsyms symbols and perf map
 * lines used.  The output (out_path, or NULL: spool_path itself) is written
 * whole beside its final name and renamed over it, so a reader never sees a
 * half-written spool; it is left alone when in place and nothing is new.
 * The output must be absent or a regular file (lstat(2), before any work):
 * -ELOOP for a symbolic link, -EISDIR for a directory, -EINVAL for a FIFO,
 * device node or socket, which rename(2) would replace.  A replaced file
 * keeps its owner (when the caller may chown(2) it) and mode; -EEXIST when
 * the output was created or replaced by someone else while this ran;
 * -SP_E_SPOOL_BUSY when a recording still writes the output (in place, the
 * rest of the recording would be lost: sp_spool_is_growing).
 * res (released with sp_symbolize_result_release, also on failure) gets the
 * counts and the unresolved frames by module.  Returns 0, or -errno and the
 * reader's -SP_E_* errors; frames left unresolved are not an error.
 */
int sp_spool_symbolize(const char *spool_path, const char *out_path,
		       const struct sp_symbolizer_opts *opts, struct sp_symbolize_result *res);
void sp_symbolize_result_release(struct sp_symbolize_result *res);

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
	const char *spool_path; /* for the header, may be NULL */
	/*
	 * The spool is still being written (sp_spool_is_growing): headers say
	 * the recording goes on, not that it was cut short; json's "growing".
	 */
	bool growing;
	/* Text views (the flat table, trees and diff; json uses max_rows and max_stacks). */
	uint32_t sort;        /* enum sp_report_sort */
	uint32_t group_by;    /* enum sp_report_group: text, folded and flame graph */
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
 * Write the text table of how each function's self and total shares changed
 * from the spool base to the spool s, largest absolute change first (by
 * opts->sort: self or total change), both shares shown, the filters applied
 * to both spools; layout in stackpulse-report(1).  base_path names the base
 * in the header (may be NULL).  Symbolizers may be NULL as in
 * sp_report_write.  Returns 0, -SP_E_BAD_ARG, -ENOMEM or -errno from out.
 */
int sp_report_diff(const struct sp_spool *base, struct sp_symbolizer *base_sym,
		   const char *base_path, const struct sp_spool *s, struct sp_symbolizer *sym,
		   const struct sp_report_opts *opts, FILE *out);

/* ---------------------------------------------------------------------- */
/* Recorder                                                               */

#define SP_MAX_SAMPLE_USER_STACK 65528u /* kernel cap: u16 record size, 8-aligned */
#define SP_DEFAULT_STACK_SIZE 32768u
#define SP_DEFAULT_FREQUENCY 999u

enum sp_attach_mode {
	SP_ATTACH_STOP_ENABLE_RESUME = 0, /* running process: SIGSTOP, open, enable, SIGCONT */
	SP_ATTACH_ENABLE_ON_EXEC = 1,     /* suspended child: events switch on at execve */
	/*
	 * Running process, never signalled (docs/DESIGN.md, decision 11): open and
	 * enable its threads' events, then list its threads again until no new
	 * one shows up and read its maps; mmap2 records that arrived meanwhile
	 * merge with them.  A thread both inherited and opened is sampled once
	 * (sample ids: the first event stream to sample a thread keeps it).
	 */
	SP_ATTACH_ENABLE_THEN_SCAN = 2,
};

struct sp_record_opts {
	uint32_t frequency_hz; /* samples per second per thread; 0 = default */
	uint32_t stack_size;   /* user stack bytes copied per sample; 0 = default */
	bool include_kernel;
	bool no_inherit;       /* do not follow new threads / children */
	/*
	 * The sampling event in perf's spelling (sp_event_parse), NULL for the
	 * default: cycles, falling back to cpu-clock where there is no PMU.  An
	 * event named here never falls back: a missing hardware event is
	 * -SP_E_NO_HW_EVENT.
	 */
	const char *event;
	uint64_t period;       /* sample every period events (perf -c; ns for the clocks); 0 = by frequency */
	/*
	 * CPUs to sample on (perf -C), ncpus of them, borrowed for the call;
	 * NULL = every online CPU.  A CPU not online is -SP_E_BAD_CPU.
	 */
	const int *cpus;
	size_t ncpus;
	uint64_t start_timestamp_us;
	uint64_t sample_interval_us;
	const char *command;   /* stored in the spool header */
};

struct sp_recorder;

/*
 * Create a recorder writing to spool_path and attach to pid with mode.
 * Opens one sampling event per thread per CPU (docs/DESIGN.md, decision 5), with
 * hardware cycles falling back to the software cpu-clock.  Errors: -EACCES /
 * -EPERM (perf_event_paranoid, CAP_PERFMON), -SP_E_FREQ_LIMIT, -EMFILE,
 * -ESRCH, -errno from the spool.
 */
int sp_recorder_attach(pid_t pid, const char *spool_path, enum sp_attach_mode mode,
		       const struct sp_record_opts *opts, struct sp_recorder **out);

/*
 * Create a recorder sampling every process on opts->cpus (all online CPUs
 * when NULL): one event per CPU with pid -1 (perf_event_open(2)'s
 * "all processes on that CPU"), a mapping side band per CPU, the processes
 * and modules already running learned from a /proc scan made after the
 * events are on, the rest from mmap2, comm, fork and exit records.  Kernel
 * threads' and idle CPUs' samples are kept with their kernel frames (-k),
 * or the sampled kernel function alone; the idle task is pid 0, "[idle]".
 * The spool header has SP_META_SYSTEM_WIDE.  Needs root or CAP_PERFMON
 * (or kernel.perf_event_paranoid <= 0).  Errors as sp_recorder_attach,
 * plus -SP_E_BAD_CPU.
 */
int sp_recorder_attach_system(const char *spool_path, const struct sp_record_opts *opts,
			      struct sp_recorder **out);

/* Wait up to timeout_ms for ring data (epoll).  Returns 1 ready, 0 timeout, -errno. */
int sp_recorder_wait(struct sp_recorder *r, int timeout_ms);

/* Drain every ring, merge by timestamp, apply, unwind, write.  0 or -errno. */
int sp_recorder_consume_available(struct sp_recorder *r);

/* Stop sampling on every event (the rings can still be drained). */
void sp_recorder_disable(struct sp_recorder *r);

/* Copy of the counters so far. */
void sp_recorder_summary(const struct sp_recorder *r, struct sp_summary *out);

/* Event source actually opened. */
enum sp_event_source sp_recorder_event_source(const struct sp_recorder *r);

/*
 * Compressed .debug_frame sections the recorder left unread because they
 * claim to inflate past SP_INFLATE_SECTION_MAX (or SP_INFLATE_FILE_MAX):
 * their modules unwind with .eh_frame alone.  No other debug section is
 * ever inflated while recording.  *first (may be NULL) gets the first such
 * module file's path, borrowed from r, or NULL.
 */
uint64_t sp_recorder_sections_not_inflated(const struct sp_recorder *r, const char **first);

/*
 * False when the kernel refused kernel-mode sampling (an unprivileged user
 * under perf_event_paranoid >= 2): time the targets spend in system calls is
 * then not sampled at all, and -k's kernel frames are off too.
 */
bool sp_recorder_counts_kernel_time(const struct sp_recorder *r);

/* True while some attached process has a live thread. */
bool sp_recorder_process_is_active(const struct sp_recorder *r, pid_t pid);

/*
 * Final drain, summary trailer, close.  *out (may be NULL) gets the summary.
 * The recorder is still to be freed with sp_recorder_free().
 */
int sp_recorder_finish(struct sp_recorder *r, struct sp_summary *out);

/* Release (without finishing: the spool keeps its flushed prefix). NULL ok. */
void sp_recorder_free(struct sp_recorder *r);

/* /proc/sys/kernel/perf_event_max_sample_rate, or 0 when unreadable. */
uint32_t sp_max_sample_rate(void);

/*
 * Add another process to the same recording: its threads get events, its
 * modules come from /proc/PID/maps (STOP mode) or from its exec
 * (ENABLE_ON_EXEC mode).  Errors as sp_recorder_attach.
 */
int sp_recorder_open_process(struct sp_recorder *r, pid_t pid, enum sp_attach_mode mode);

/*
 * Open events for threads of pid that /proc/PID/task lists and the recorder
 * has no event for yet (needed only with no_inherit).  Returns the number of
 * threads added, or -errno.
 */
int sp_recorder_refresh_threads(struct sp_recorder *r, pid_t pid);

/* True when some ring holds unread records (drain with consume_available). */
bool sp_recorder_has_pending_events(const struct sp_recorder *r);

/*
 * Attached processes still alive: up to max pids into out (may be NULL when
 * max is 0); returns how many are alive.  "Alive" means some thread of the
 * process has not exited (pidfd), so a leader that called pthread_exit
 * keeps its process active.
 */
size_t sp_recorder_active_processes(const struct sp_recorder *r, pid_t *out, size_t max);

/* True when an attached process other than pid is alive. */
bool sp_recorder_has_active_processes_except(const struct sp_recorder *r, pid_t pid);

/* ---------------------------------------------------------------------- */
/* Processes: descendants and liveness (lib/record/children.c, lib/record/liveness.c)  */

/*
 * Every descendant of root alive now (children, grandchildren, ...), found
 * through /proc/PID/task/TID/children, falling back to scanning the ppid
 * field of every /proc/PID/stat when that file is missing.  *out is a
 * malloc'd array of *n pids (root not included) that the caller frees.
 * Returns 0 or -errno (-SP_E_NO_PROCESS when root does not exist).
 */
int sp_discover_descendants(pid_t root, pid_t **out, size_t *n);

/*
 * Is pid a kernel thread (kthreadd, kworker/...)?  They run no user code, so
 * they have no user stack to sample.  From PF_KTHREAD in the flags field of
 * /proc/PID/stat (proc_pid_stat(5)).  Returns 1 or 0; -SP_E_NO_PROCESS when
 * pid does not exist, -SP_E_BAD_ARG for pid <= 0 or an unreadable stat line,
 * -errno otherwise.
 */
int sp_pid_is_kernel_thread(pid_t pid);

/* Watches one process for exit through a pidfd (pidfd_open(2)). */
struct sp_exit_watcher;

/* -ESRCH when pid does not exist; -ENOSYS on kernels without pidfd_open. */
int sp_exit_watcher_new(pid_t pid, struct sp_exit_watcher **out);
/* Non-blocking: 1 when every thread of the process has exited, 0 while any runs. */
int sp_exit_watcher_poll(struct sp_exit_watcher *w);
/* The pidfd, readable once the process has exited (for poll/epoll loops). */
int sp_exit_watcher_fd(const struct sp_exit_watcher *w);
void sp_exit_watcher_free(struct sp_exit_watcher *w);

/* Does pid name a live (non-zombie) process?  Works for other users' processes too. */
bool sp_pid_exists(pid_t pid);
/* Send SIGINT / SIGKILL.  0 or -errno. */
int sp_pid_interrupt(pid_t pid);
int sp_pid_kill(pid_t pid);

/* ---------------------------------------------------------------------- */
/* Launching a command suspended before execve                            */

struct sp_launch;

/*
 * Fork a child that blocks before execve(argv[0], argv) (PATH searched).
 * The child's pid is valid at once; events opened with
 * SP_ATTACH_ENABLE_ON_EXEC switch on at its execve.  -SP_E_LAUNCH with
 * errno detail is reported by sp_launch_start when execve fails.
 */
int sp_launch_suspended(char *const argv[], struct sp_launch **out);
pid_t sp_launch_pid(const struct sp_launch *l);
/* Let the child execve.  Returns 0, or -errno of a failed execve. */
int sp_launch_start(struct sp_launch *l);
/* Non-blocking reap: 1 and *status (wait(2) form) when exited, 0 when running. */
int sp_launch_try_wait(struct sp_launch *l, int *status);
/* Kill (SIGKILL) a child that has not been started, reap, free.  NULL ok. */
void sp_launch_free(struct sp_launch *l);

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

/* Recording defaults, the recording session, system facts, clock         */
/* (lib/util/record_defaults.c, lib/record/session.c, lib/util/sysinfo.c, */
/* lib/util/pace.c, lib/report/text_summary.c)                            */

/* opts's sampling frequency in Hz, SP_DEFAULT_FREQUENCY when 0; 0 when opts samples by period. */
uint32_t sp_record_opts_frequency(const struct sp_record_opts *opts);
/* opts's user stack copy in bytes, SP_DEFAULT_STACK_SIZE when 0. */
uint32_t sp_record_opts_stack_size(const struct sp_record_opts *opts);

/* Why a session stopped draining. */
enum sp_session_end {
	SP_SESSION_TARGET_EXITED = 0, /* the command, or every attached process, ended */
	SP_SESSION_DEADLINE,          /* duration_ns passed */
	SP_SESSION_STOP_REQUESTED,    /* *stop_requests became non-zero */
	SP_SESSION_HOOK_STOPPED,      /* the drained hook returned non-zero */
	SP_SESSION_WAIT_FAILED,       /* waiting on the rings failed */
	SP_SESSION_DRAIN_FAILED,      /* a drain failed (the spool could not be written) */
};

/* Where a session that could not record failed (struct sp_session_result.failed_stage). */
enum sp_session_stage {
	SP_SESSION_STAGE_NONE = 0,
	SP_SESSION_STAGE_LAUNCH, /* the command could not be forked (sp_launch_suspended) */
	SP_SESSION_STAGE_ATTACH, /* attaching to failed_pid (-1: system-wide) failed */
	SP_SESSION_STAGE_EXEC,   /* the command could not be run (execve failed) */
};

/* What a session tells its front end while it runs (struct sp_session_hooks.notice). */
enum sp_session_notice {
	/* The spool could not be written (err): draining stops, the spool is finished. */
	SP_SESSION_NOTICE_DRAIN_FAILED,
	/* Listing pid's descendants failed (err): they are not recorded, the rest is. */
	SP_SESSION_NOTICE_NO_DESCENDANTS,
	/* The command (pid) still runs 1 s after SIGTERM: SIGKILL follows 4 s later. */
	SP_SESSION_NOTICE_TERM_WAIT,
	/* The command (pid) did not exit 5 s after SIGTERM: SIGKILL was sent. */
	SP_SESSION_NOTICE_KILL_SENT,
};

struct sp_session_result;

/*
 * Callbacks of a session, each optional (NULL), all called on the caller's
 * thread with ctx.  rec is borrowed for the call.
 */
struct sp_session_hooks {
	void *ctx;
	/*
	 * Recording has started (attached, the command running).  0 goes on;
	 * anything else stops at once: the spool is finished, a launched
	 * command stopped, and sp_session_run returns that value.
	 */
	int (*started)(void *ctx, struct sp_recorder *rec);
	/* After each drain, about every 100 ms (now_ns: CLOCK_MONOTONIC); non-zero stops draining. */
	int (*drained)(void *ctx, struct sp_recorder *rec, uint64_t now_ns);
	/*
	 * The spool is finished (res's summary, elapsed_ns and error are set),
	 * before a launched command still running is stopped.
	 */
	void (*finished)(void *ctx, struct sp_recorder *rec, const struct sp_session_result *res);
	/* A step worth telling the user about (enum sp_session_notice); err is -errno or 0. */
	void (*notice)(void *ctx, enum sp_session_notice what, pid_t pid, int err);
};

/* What a session records and until when; zero-initialise, then set a target. */
struct sp_session_opts {
	struct sp_record_opts record; /* sampling options (defaults where 0) */
	const char *spool_path;       /* the spool to write, created or truncated */
	/* Target: a command (argv, PATH searched), pids, or system_wide (with or without a command). */
	char *const *command;
	const pid_t *pids;            /* npids running processes, borrowed for the call */
	size_t npids;
	bool descendants;             /* with pids: also every process already descended from them */
	bool system_wide;             /* every process on record.cpus (all online CPUs when NULL) */
	enum sp_attach_mode attach_mode; /* for pids: SP_ATTACH_ENABLE_THEN_SCAN or _STOP_ENABLE_RESUME */
	uint64_t duration_ns;         /* stop after this long; 0 = until the target ends or a stop */
	/*
	 * How many stop requests arrived (a front end's SIGINT/SIGTERM handler
	 * counts them), polled between drains; NULL = none.  The first stops
	 * draining; one more while a launched command is being stopped sends
	 * it SIGKILL.  The library installs no signal handler.
	 */
	const volatile sig_atomic_t *stop_requests;
	struct sp_session_hooks hooks;
};

/* How a session went; filled by sp_session_run. */
struct sp_session_result {
	struct sp_summary summary;   /* the finished spool's counters */
	enum sp_session_end end;
	int error;                   /* finishing the spool: 0 or -errno (a drain's write error included) */
	uint64_t elapsed_ns;         /* from the start of sampling to the end of draining */
	enum sp_session_stage failed_stage; /* set when sp_session_run returned < 0 */
	pid_t failed_pid;            /* the process the failed stage was about (-1: none, system-wide) */
	pid_t command_pid;           /* the launched command, or -1 */
	int command_status;          /* its wait(2) status once reaped */
	bool command_exited;         /* it ended by itself while recording */
	bool command_ended_by_stop;  /* our SIGTERM after the deadline (no stop request) ended it */
	/*
	 * The status a front end exits with: 1 when the spool failed (error);
	 * else with a launched command its exit status (128+N when killed by
	 * signal N), 0 when our SIGTERM at the deadline ended it; 0 otherwise.
	 */
	int exit_status;
};

/*
 * Record one session, the loop every front end runs (record, top, an
 * embedding program): launch the command suspended and attach at its exec
 * (SP_ATTACH_ENABLE_ON_EXEC), or attach to pids (and their descendants), or
 * sample every CPU (launching the command, if any, once sampling is on);
 * then drain the rings until the command or every attached process ends,
 * duration_ns passes, *stop_requests turns non-zero, or the drained hook
 * says stop; finish the spool; then stop a launched command still running,
 * as perf does: a moment to exit on its own if a stop was requested (a
 * terminal's Ctrl-C reached it too), SIGTERM, and SIGKILL 5 s later or at
 * one more stop request.  Blocks for the whole session; never prints,
 * never exits, installs no signal handler.
 *
 * Returns 0 when the session recorded (res says how it ended, including a
 * spool error in res->error); a started hook's non-zero value; or -errno /
 * -SP_E_* when it could not start, with res->failed_stage and
 * res->failed_pid saying where (a spool half made by a later attach is
 * removed).  res is filled in every case.  o and everything it points to
 * are borrowed for the call.
 */
int sp_session_run(const struct sp_session_opts *o, struct sp_session_result *res);

/*
 * What a recording's text summary says besides its counters
 * (sp_summary_write_text, lib/report/text_summary.c); the caller measures
 * the costs.
 */
struct sp_summary_text {
	const char *subcommand;       /* "record", "top": the first line's "stackpulse SUBCOMMAND:" */
	const char *spool_path;
	uint64_t spool_bytes;         /* the spool's size */
	double elapsed_s;             /* recording time, s */
	enum sp_event_source source;  /* the event sampled (sp_recorder_event_source) */
	bool counts_kernel_time;      /* sp_recorder_counts_kernel_time */
	const struct sp_record_opts *opts; /* the sampling options recorded with */
	bool realtime;                /* drained at a real-time priority (no --realtime hint) */
	bool system_wide;
	const char *cpu_list;         /* the CPUs named (-C), or NULL */
	double cpu_s;                 /* the recording process's own CPU time, s; < 0: unknown, not shown */
	double peak_mib;              /* its peak resident memory, MiB */
	bool with_display;            /* a live view shared the process (top): its CPU is both */
};

/*
 * Write the summary of a finished recording s as record and top print it:
 * the spool written, the counts, the recorder's cost, the skipped samples,
 * why stacks ended early (only what occurred), hints.  Lines end in '\n'.
 */
void sp_summary_write_text(const struct sp_summary *s, const struct sp_summary_text *t, FILE *out);

/* CLOCK_MONOTONIC in ns. */
uint64_t sp_monotonic_ns(void);

/*
 * The online CPUs as /sys/devices/system/cpu/online lists them ("0-3,5"),
 * without the newline, into buf (size bytes).  0 or -errno.
 */
int sp_online_cpus_text(char *buf, size_t size);
/* kernel.perf_event_paranoid (/proc/sys/kernel/perf_event_paranoid), or -1 when unreadable. */
int sp_perf_event_paranoid(void);
/*
 * pid's command line, /proc/PID/cmdline: its arguments, each NUL-terminated,
 * into buf (at most size - 1 bytes, then a NUL).  Returns the bytes read, 0
 * when the process is gone or has none (a kernel thread, a zombie).
 */
size_t sp_pid_cmdline(pid_t pid, char *buf, size_t size);
/*
 * Would execvp(3) find cmd as an executable regular file (searching PATH,
 * or /usr/local/bin:/usr/bin:/bin without it, when cmd has no '/')?  0, or
 * the -errno the exec would fail with (-ENOENT, -EACCES, ...).
 */
int sp_command_runnable(const char *cmd);

#ifdef __cplusplus
}
#endif
#endif
