/* SPDX-License-Identifier: MIT */
/* stackpulse's public API, the spool: its data model, the writer and the validating reader.  Include <stackpulse.h>, not this file. */
#ifndef STACKPULSE_SPOOL_H
#define STACKPULSE_SPOOL_H

#ifndef STACKPULSE_H
#error "include stackpulse.h, which includes this file"
#endif

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
	/*
	 * Files without a build-id that hold the same bytes: 1 + the id of the
	 * first module record of the group (0: none known).  The writer takes it
	 * as given; the reader points every member at the group's first record,
	 * that record at itself.  Appended to the MODULE payload, only when set.
	 */
	uint32_t same_bytes_as;
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
	/*
	 * Events the sample stands for (PERF_SAMPLE_PERIOD; ns for the clock
	 * events): the stored period, else the header's sample_period (a
	 * spool of record -c written before periods were stored), else 0:
	 * unknown (a frequency-mode spool written before samples stored periods).
	 */
	uint64_t period;
};

/*
 * An interval a thread spent off CPU (an OFFCPU record;
 * docs/DESIGN.md, decision 12): from its switch-out to its next switch-in, with the user
 * stack it left the CPU with and the cause the kernel reported.  An interval
 * the recording's ends or lost records cut is kept with a flag and only the
 * time actually seen (0 when unknown), never stretched.
 */
enum sp_offcpu_flags {
	SP_OFFCPU_PREEMPTED = 1u << 0, /* switched out while runnable (PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) */
	SP_OFFCPU_START_CUT = 1u << 1, /* off CPU when the recording began: start is the recording's */
	SP_OFFCPU_END_CUT = 1u << 2,   /* still off CPU when the recording ended: end is the recording's */
	SP_OFFCPU_LOST = 1u << 3,      /* its switch-out or switch-in was lost: duration unknown (0) */
	SP_OFFCPU_NO_STACK = 1u << 4,  /* no stack at switch-out (kernel sampling denied, or lost) */
	/*
	 * Kernel sampling denied: the stack was unwound from the user SP and PC
	 * /proc/PID/task/TID/syscall gave and a copy of the stack, both read
	 * while the thread was still off CPU (the registers the DWARF unwind
	 * starts from are those two alone)
	 */
	SP_OFFCPU_PROC_STACK = 1u << 5,
	/*
	 * Kernel sampling denied, preempted: the stack of the thread's last CPU
	 * sample since it last came on the CPU (no records lost since), the
	 * code it was running up to a sampling period before the preemption
	 */
	SP_OFFCPU_SAMPLE_STACK = 1u << 6,
};
#define SP_OFFCPU_INCOMPLETE (SP_OFFCPU_START_CUT | SP_OFFCPU_END_CUT | SP_OFFCPU_LOST)

struct sp_offcpu {
	uint64_t start_ns;    /* CLOCK_MONOTONIC of the switch-out */
	uint64_t duration_ns; /* to the switch-in */
	uint32_t thread;      /* index into the spool's thread table */
	uint32_t stack_id;    /* the user (and with -k kernel) stack at switch-out; 0: none */
	uint32_t flags;       /* enum sp_offcpu_flags */
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
#define SP_META_OFF_CPU 2u     /* record --off-cpu: OFFCPU records hold the off-CPU intervals */

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
/*
 * Append a sample with its weight: period, the events it stands for
 * (perf_event_open(2)'s PERF_SAMPLE_PERIOD; ns for the clock events).  The
 * period is stored only when it differs from the previous sample's, so a
 * fixed period costs nothing (docs/DESIGN.md, decision 12); 0 stores none
 * (the sample weighs what the previous one did).  0 or -errno.
 */
int sp_spool_writer_append_weighted_sample(struct sp_spool_writer *w, uint32_t thread,
					   uint32_t stack_id, uint64_t timestamp_ns,
					   uint64_t period);

/* Append an off-CPU interval (OFFCPU record, stackpulse-spool(5)).  0 or -errno. */
int sp_spool_writer_append_offcpu(struct sp_spool_writer *w, const struct sp_offcpu *o);

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

/* SAMPLE, OFFCPU and LOST records written into the file (a segment's, since its start). */
uint64_t sp_spool_writer_events(const struct sp_spool_writer *w);

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
/* The off-CPU intervals (record --off-cpu), in file order. */
size_t sp_spool_offcpu_count(const struct sp_spool *s);
const struct sp_offcpu *sp_spool_offcpu(const struct sp_spool *s, size_t index);
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
/* Segment directories: continuous recording (docs/DESIGN.md, decision 13) */
/* (lib/spool/segments.c writes them, lib/spool/segment_read.c reads)      */

/*
 * A directory of segments: complete spools named
 * stackpulse-YYYYMMDDTHHMMSSZ-SEQ.spool (the UTC start, then a sequence
 * number that goes on across restarts), each written as
 * .NAME.partial and renamed once finished, so an incomplete segment never
 * has a final name.  Every segment holds the dictionary records its samples
 * need and reports alone.
 */
struct sp_segments_opts {
	uint64_t segment_ns;    /* a new segment after this long (0: by size alone) */
	uint64_t segment_bytes; /* ... or once the segment holds this many bytes (0: by time alone) */
	uint64_t retain_ns;     /* delete segments that ended more than this long ago; 0: keep */
	uint64_t retain_bytes;  /* delete the oldest while all together exceed this; 0: keep */
};

struct sp_segments_stats {
	uint64_t published;       /* segments finished and renamed by this recording */
	uint64_t published_bytes; /* their bytes */
	uint64_t deleted;         /* old segments retention deleted */
	uint64_t kept, kept_bytes; /* published segments in the directory after the last retention */
	int retention_error;      /* the last deletion that failed (-errno), else 0 */
};

struct sp_segments;

/*
 * Open (creating it, mode 0700, when missing: one level) the segment
 * directory dir for a recording with o's rotation and retention.  The
 * directory must be the caller's (or root's) and writable by no other user:
 * retention deletes files in it.  The next segment takes the sequence after
 * the highest found (a restart goes on).  Errors: -errno, -ENOTDIR,
 * -SP_E_SEGMENT_DIR_SHARED, -SP_E_BAD_ARG (neither a time nor a size).
 */
int sp_segments_open(const char *dir, const struct sp_segments_opts *o, struct sp_segments **out);
/*
 * Create the first segment (.NAME.partial, O_EXCL, mode 0600 for a
 * system-wide meta, else 0666 less the umask) and a writer in segment mode
 * on it with meta (copied; its times name the segment).  0 or -errno.
 */
int sp_segments_begin(struct sp_segments *g, const struct sp_spool_meta *meta,
		      struct sp_spool_writer **w);
/* True when the segment being written has reached its time or size (now_ns: CLOCK_MONOTONIC). */
bool sp_segments_due(const struct sp_segments *g, const struct sp_spool_writer *w, uint64_t now_ns);
/*
 * Finish the current segment with the counters gathered since it began
 * (total: the recording's so far), publish it (rename), start the next, and
 * apply retention.  0 or -errno (the writer's state: as
 * sp_spool_writer_rotate).
 */
int sp_segments_rotate(struct sp_segments *g, struct sp_spool_writer *w,
		       const struct sp_summary *total, uint64_t now_ns);
/*
 * Finish and publish the last segment (sp_spool_writer_finish), then
 * retention; a last segment with no SAMPLE, OFFCPU or LOST record (a stop
 * just after a rotation) is removed instead, unless it is the recording's
 * only one.  0 or -errno.
 */
int sp_segments_finish(struct sp_segments *g, struct sp_spool_writer *w,
		       const struct sp_summary *total);
void sp_segments_stats(const struct sp_segments *g, struct sp_segments_stats *out);
/* The directory, as given. */
const char *sp_segments_dir(const struct sp_segments *g);
/* Free; a segment begun and never finished (a recording that failed to start) is removed.  NULL ok. */
void sp_segments_free(struct sp_segments *g);

/* What reading a segment directory met, segment by segment (struct sp_segments_read_opts.note). */
enum sp_segment_note {
	SP_SEGMENT_GROWING,  /* a segment being written: read as far as it is complete */
	SP_SEGMENT_CUT,      /* a partial segment no recorder writes (one killed): its intact prefix */
	SP_SEGMENT_DAMAGED,  /* unreadable or corrupt (err): skipped */
	SP_SEGMENT_VANISHED, /* deleted (retention) between listing and reading: skipped */
	SP_SEGMENT_REFUSED,  /* not a regular file (a symlink, FIFO): skipped */
};

struct sp_segments_read_opts {
	/*
	 * Wall-clock window, µs since the epoch (0: open): only segments that
	 * may hold samples in [start_us, end_us) are read.
	 */
	uint64_t start_us, end_us;
	void (*note)(void *ctx, const char *name, enum sp_segment_note what, int err);
	void *ctx;
};

struct sp_segments_read_stats {
	size_t listed;  /* segments in the directory (published and partial) */
	size_t read;    /* read into the profile */
	size_t skipped; /* damaged, vanished or refused */
	size_t outside; /* left out by the time window */
};

/*
 * Read the segments of dir, oldest first, as one spool: the modules, frames,
 * stacks and threads of all merged (equal ones once), samples and intervals
 * in order, timestamps on the first segment's clock (a segment of another
 * boot is placed by its wall-clock start), summaries summed.  The header is
 * the first segment's.  Each segment is opened without following symlinks
 * and validated as sp_spool_open does.  A window that misses every segment
 * reads the first (counted in st->outside and st->read): a profile with no
 * sample in the window, as a spool gives.  Errors: -errno for dir,
 * -SP_E_NO_SEGMENTS when none could be read.
 */
int sp_spool_open_segments(const char *dir, const struct sp_segments_read_opts *o,
			   struct sp_spool **out, struct sp_segments_read_stats *st);

/*
 * The newest segment of dir, as "dir/NAME", into path (size bytes): the one
 * being written (*writing true: its .NAME.partial, renamed when finished),
 * else the last published.  0, -SP_E_NO_SEGMENTS, -errno.
 */
int sp_segments_newest(const char *dir, char *path, size_t size, bool *writing);

/* A segment read by sp_segments_each: name its file's in the directory; 0, or -errno to stop. */
typedef int (*sp_segment_visit_fn)(void *ctx, const char *name, const struct sp_spool *s);
/*
 * Each segment of dir that sp_spool_open_segments would read with o (NULL:
 * every one), oldest first, read and validated as it reads them, to
 * visit(ctx, name, s): name is the final name, or ".NAME.partial" for a
 * segment being written or cut short (o->note says which); s is borrowed
 * for the call.  Segments skipped are noted and counted in st as there.
 * 0, -SP_E_NO_SEGMENTS when none was read, -errno for dir, or what visit
 * returned (which stops the walk).
 */
int sp_segments_each(const char *dir, const struct sp_segments_read_opts *o,
		     sp_segment_visit_fn visit, void *ctx, struct sp_segments_read_stats *st);

/*
 * Durations and sizes as perf's --switch-output spells them: a bare number
 * is seconds, or ends in s, m, h or d ("2.5", "30s", "10m", "1d"); a size
 * ends in B, K, M, G or T (powers of 1024: "500K", "2G").  Each is
 * positive.  0 or -SP_E_BAD_ARG.  sp_parse_duration_or_size sets the one
 * given, the other to 0.  (lib/util/units.c)
 */
int sp_parse_duration_ns(const char *s, uint64_t *ns);
int sp_parse_size_bytes(const char *s, uint64_t *bytes);
int sp_parse_duration_or_size(const char *s, uint64_t *ns, uint64_t *bytes);
/*
 * A wall-clock time, s[0, len), into µs since the epoch: "now", "-10m"
 * (that long before now_us, units as above), ISO 8601
 * "2024-05-01T03:12:00" with optional fractional seconds and a zone ("Z",
 * "+02:00"; local time without one), a date alone (its midnight), or
 * "HH:MM[:SS]" (today).  0 or -SP_E_BAD_ARG.
 */
int sp_parse_wall_time_us(const char *s, size_t len, uint64_t now_us, uint64_t *us);

#endif
