/* SPDX-License-Identifier: MIT */
/* stackpulse's public API, recording: the recorder, processes and launched commands, the recording session, system facts.  Include <stackpulse.h>, not this file. */
#ifndef STACKPULSE_RECORD_H
#define STACKPULSE_RECORD_H

#ifndef STACKPULSE_H
#error "include stackpulse.h, which includes this file"
#endif

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
	/*
	 * Record off-CPU intervals too (docs/DESIGN.md, decision 12): the
	 * kernel's switch records (perf_event_attr.context_switch) give each
	 * switch-out, its cause and the switch-in; where kernel sampling is
	 * allowed, a context-switches event sampling every switch gives the
	 * stack at switch-out; where it is not, a blocked thread's stack is
	 * read from the thread after a drain (SP_OFFCPU_PROC_STACK) and a
	 * preempted one takes its last CPU sample's (SP_OFFCPU_SAMPLE_STACK).
	 */
	bool off_cpu;
	/*
	 * Write segments into this directory instead of one spool
	 * (sp_segments_open; docs/DESIGN.md, decision 13): the recorder begins
	 * the first, rotates when one is due after a drain, and finishes the
	 * last.  Borrowed; it must outlive the recorder.  NULL: one spool.
	 */
	struct sp_segments *segments;
	/*
	 * Flight recorder (docs/DESIGN.md, decision 13): keep only the samples
	 * of the last rolling_ns in memory and write nothing until
	 * sp_recorder_snapshot, or the finish, writes the window as a spool
	 * named from the spool path and the time.  0: record to the spool.
	 */
	uint64_t rolling_ns;
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

/*
 * Wait up to timeout_ms for ring data (epoll); at most 10 ms when recording
 * off-CPU intervals without kernel sampling, whose blocked threads' stacks
 * are read after each drain (sp_recorder_consume_available).  Returns 1
 * ready, 0 timeout, -errno.
 */
int sp_recorder_wait(struct sp_recorder *r, int timeout_ms);

/*
 * Drain every ring, merge by timestamp, apply, unwind, write; with off-CPU
 * intervals and no kernel sampling, then read the stack of each thread
 * blocked since (its user SP and PC from /proc/PID/task/TID/syscall, its
 * stack with process_vm_readv(2); docs/DESIGN.md, decision 12).  0 or -errno.
 */
int sp_recorder_consume_available(struct sp_recorder *r);

/* Stop sampling on every event (the rings can still be drained). */
void sp_recorder_disable(struct sp_recorder *r);

/* Copy of the counters so far. */
void sp_recorder_summary(const struct sp_recorder *r, struct sp_summary *out);

/* Event source actually opened. */
enum sp_event_source sp_recorder_event_source(const struct sp_recorder *r);

/*
 * record --off-cpu: the off-CPU intervals written so far into *intervals,
 * and into *incomplete those of them cut by the recording's start or end or
 * by lost records (their time is the part seen).  Both 0 without --off-cpu.
 */
void sp_recorder_offcpu_counts(const struct sp_recorder *r, uint64_t *intervals,
			       uint64_t *incomplete);

/*
 * Compressed .debug_frame sections the recorder left unread because they
 * claim to inflate past SP_INFLATE_SECTION_MAX (or SP_INFLATE_FILE_MAX, or
 * what is left of the process's SP_INFLATE_RUN_MAX):
 * their modules unwind with .eh_frame alone.  No other debug section is
 * ever inflated while recording.  *first (may be NULL) gets the first such
 * module file's path, borrowed from r, or NULL.
 */
uint64_t sp_recorder_sections_not_inflated(const struct sp_recorder *r, const char **first);
/*
 * Of those, the sections left unread for SP_INFLATE_UNTRUSTED_RUN_MAX alone:
 * module files another user can influence (owned by a user other than root,
 * or in a directory such a user can write).  *first and *why (may be NULL)
 * get the first such file's path and the reason ("owned by uid 1000"),
 * borrowed from r, or NULL.
 */
uint64_t sp_recorder_sections_untrusted(const struct sp_recorder *r, const char **first,
					const char **why);
/*
 * Targets' perf maps read only to their first 8 MiB (or 131,072 lines)
 * while recording, because they grew past that: memory per process stays
 * bounded and re-reading never starves the recorder; the JIT functions past
 * the cut are unwound without their entries (the report still names them
 * from the whole map, within its own bound).
 */
uint64_t sp_recorder_perf_maps_cut(const struct sp_recorder *r);

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

/*
 * Flight recorder: write the window as a complete spool named from the
 * spool path and the time now (sp_snapshot_create's form) without stopping;
 * the name goes to path (size bytes), its samples and losses to *window
 * (may be NULL).  0, -SP_E_BAD_ARG when not a flight recorder, or -errno.
 * sp_recorder_finish writes the last one.
 */
int sp_recorder_snapshot(struct sp_recorder *r, char *path, size_t size,
			 struct sp_summary *window);
/* The last snapshot's path ("" before the first). */
const char *sp_recorder_snapshot_path(const struct sp_recorder *r);
/*
 * A flight recorder's memory: its window's ring in bytes and the samples in
 * it, and about how many bytes the dictionaries (modules, frames, stacks,
 * threads) hold.  Zeros when not a flight recorder.
 */
void sp_recorder_window_memory(const struct sp_recorder *r, uint64_t *window_bytes,
			       uint64_t *window_samples, uint64_t *dict_bytes);
/*
 * How many times an always-on recording (segments, flight recorder) dropped
 * the dictionary entries only gone processes needed (docs/DESIGN.md, decision 14).
 */
uint64_t sp_recorder_compactions(const struct sp_recorder *r);

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
	/*
	 * The samples the recorder's CPU went to, when not those written (a
	 * flight recorder writes only its window's); 0: the samples written.
	 */
	uint64_t samples_taken;
	bool off_cpu;                 /* record --off-cpu: the intervals below are said */
	/* Off-CPU intervals written, and of them incomplete (sp_recorder_offcpu_counts). */
	uint64_t offcpu_intervals, offcpu_incomplete;
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

#endif
