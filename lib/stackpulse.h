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
	X(SPOOL_BUSY, "another recording is writing it")                      \
	X(OUTPUT_NOT_OURS, "another user's file, which a private output "       \
			   "neither enters nor can replace")                      \
	X(SEGMENT_DIR_SHARED, "other users may write in this directory, or "    \
			      "another user owns it")                             \
	X(NO_SEGMENTS, "no segment spools in this directory")

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

/*
 * Runtimes whose generated code or interpreted functions have no names
 * without a perf map: record's summary and report's header say what to
 * run (sp_summary's no_perf_map counts, by this index).
 */
enum sp_name_hint {
	SP_NAME_HINT_PYTHON, /* a Python runtime: -X perf (3.12+), -X perf_jit (3.13+) */
	SP_NAME_HINT_JVM,    /* JIT code of a JVM (libjvm.so): -XX:+DumpPerfMapAtExit, an agent */
	SP_NAME_HINT_NODE,   /* JIT code of node: --perf-basic-prof */
	SP_NAME_HINT_COUNT_
};

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
	 * The recorder's own, not stored (system-wide): processes already
	 * running whose first sample was drained after they exited, their
	 * modules and name taken from the list of /proc made at the start; and
	 * those with no such entry either (they started after the list, from a
	 * parent not in it), whose samples hold addresses only, and those samples.
	 */
	uint64_t processes_from_start_list;
	uint64_t processes_unread;
	uint64_t unread_samples;
	/*
	 * The recorder's own, not stored: processes gone for good whose modules
	 * it dropped, and module files no process mapped any more that it closed
	 * (their CFI tables freed), so memory follows the live processes.
	 */
	uint64_t processes_forgotten;
	uint64_t files_closed;
	/*
	 * The recorder's own, not stored: sampled processes, by enum
	 * sp_name_hint, that ran Python code or JIT code with no perf map in
	 * /tmp (nor a jitdump) when they exited or the recording ended, and the
	 * first such process's pid.  Processes in containers are counted in
	 * container_perf_maps_missing instead.
	 */
	uint64_t no_perf_map[SP_NAME_HINT_COUNT_];
	int32_t no_perf_map_pid[SP_NAME_HINT_COUNT_];
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

/*
 * The rest of the API, one header per part of the pipeline, in its order (each
 * uses only the ones before it).
 */
#include "stackpulse/spool.h"
#include "stackpulse/symbolizer.h"
#include "stackpulse/live.h"
#include "stackpulse/report.h"
#include "stackpulse/record.h"

#ifdef __cplusplus
}
#endif
#endif
