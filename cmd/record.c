/* SPDX-License-Identifier: MIT */
/* stackpulse record: options into a recording session (sp_session_run), its messages and summary. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum {
	OPT_STACK_SIZE = 0x100,
	OPT_DESCENDANTS,
	OPT_NO_INHERIT,
	OPT_REALTIME,
	OPT_STOP_ATTACH,
	OPT_CALL_GRAPH,
	OPT_OFF_CPU,
	OPT_SEGMENTS,
	OPT_SEGMENT,
	OPT_RETAIN,
	OPT_ROLLING,
};

static const struct argp_option common_options[] = {
	{NULL, 0, NULL, 0, "Target:", 1},
	{"pid", 'p', "PID[,PID...]", 0, "record running processes and all their threads", 1},
	{"all-cpus", 'a', NULL, 0, "record every process on every CPU (system-wide; needs root "
				   "or CAP_PERFMON); with a COMMAND, until it exits", 1},
	{"cpu", 'C', "CPU-LIST", 0, "sample only on these CPUs (\"0,2-3\"); system-wide unless "
				    "-p or a COMMAND is given", 1},
	{"descendants", OPT_DESCENDANTS, NULL, 0, "with -p, also record every process already "
						 "descended from the given ones", 1},
	{"no-inherit", OPT_NO_INHERIT, NULL, 0, "do not follow threads and processes the "
					       "targets start while recording", 1},
	{"stop-attach", OPT_STOP_ATTACH, NULL, 0,
	 "with -p, stop each process (SIGSTOP, then SIGCONT) while its events open, as "
	 "earlier versions did; by default the processes are never signalled", 1},
	{NULL, 0, NULL, 0, "Sampling:", 2},
	{"freq", 'F', "HZ", 0, "samples per second per thread (default 999; at most "
			       "kernel.perf_event_max_sample_rate, which 'max' asks for)", 2},
	{"event", 'e', "EVENT", 0, "sample on EVENT, in perf's spelling: cycles, instructions, "
				   "cache-misses, branch-misses, ref-cycles (hardware, where the CPU "
				   "exposes them), cpu-clock, task-clock, page-faults, major-faults, "
				   "context-switches, cpu-migrations (default: cycles, or cpu-clock "
				   "where there is no PMU); perf's :u is accepted, :k adds kernel "
				   "frames as -k does", 2},
	{"count", 'c', "PERIOD", 0, "sample every PERIOD events (nanoseconds for cpu-clock and "
				    "task-clock) instead of -F's frequency", 2},
	{"stack-size", OPT_STACK_SIZE, "BYTES", 0,
	 "user stack bytes copied per sample, a multiple of 8 up to 65528 (default 32768); "
	 "raise it when stacks come out truncated", 2},
	{"realtime", OPT_REALTIME, "PRIO", 0, "drain the rings at SCHED_FIFO priority PRIO (1-99; "
					      "needs root or CAP_SYS_NICE): no samples lost to a "
					      "recorder waiting for a CPU when the target keeps "
					      "every CPU busy", 2},
	{"kernel", 'k', NULL, 0, "add kernel frames from the kernel callchain (falls back to "
				 "user-only, saying so, when kernel sampling is denied)", 2},
	{NULL, 0, NULL, 0, "perf's spellings, accepted:", 4},
	{NULL, 'g', NULL, 0, "perf's -g: stacks are always unwound here (from a copy of the "
			     "user stack, DWARF CFI and frame pointers): a no-op", 4},
	{"call-graph", OPT_CALL_GRAPH, "dwarf[,SIZE]|fp", 0,
	 "perf's spelling: stacks are always unwound here; dwarf,SIZE sets --stack-size SIZE", 4},
	{NULL, 0, NULL, 0, NULL, 0},
};

static const struct argp_option record_options[] = {
	{"duration", 'd', "SECONDS", 0, "stop after SECONDS (a launched command is then "
					"sent SIGTERM)", 2},
	{"off-cpu", OPT_OFF_CPU, NULL, 0, "also record every interval a thread spends off CPU: "
					  "switch-out to switch-in, the stack it left with (needs "
					  "kernel sampling: root, CAP_PERFMON or "
					  "kernel.perf_event_paranoid <= 1; without it a blocked "
					  "thread's stack is read while it sleeps, a preempted one "
					  "takes its last CPU sample's) and whether it was preempted "
					  "or blocked/slept; see report --metric", 2},
	{NULL, 0, NULL, 0, "Output:", 3},
	{"output", 'o', "FILE", 0, "write the spool to FILE (default profile.spool)", 3},
	{"quiet", 'q', NULL, 0, "print no summary", 3},
	{"rolling", OPT_ROLLING, "SECONDS", 0,
	 "flight recorder: keep only the last SECONDS of samples in memory and write "
	 "nothing until SIGUSR2 (kill -USR2 PID) asks for a spool of them, named from -o "
	 "and the time (profile-YYYYMMDDTHHMMSS.mmmZ.spool), recording on; Ctrl-C or the "
	 "end writes the last one (units as --segment: 30s, 10m)", 3},
	{"segments", OPT_SEGMENTS, "DIR", 0,
	 "instead of one spool, write a new complete spool (a segment) into DIR every "
	 "--segment, each renamed into place once finished; 'report DIR' reads them as one "
	 "profile", 3},
	{"segment", OPT_SEGMENT, "SECONDS|SIZE", 0,
	 "with --segments, start a new segment after this long (a bare number is seconds, "
	 "or 30s, 10m, 1h) or once it holds SIZE bytes (500K, 20M, 1G) (default 60s)", 3},
	{"retain", OPT_RETAIN, "DURATION|SIZE", 0,
	 "with --segments, delete the oldest segments this recording's layout wrote once "
	 "they ended more than DURATION ago (3600, 10m, 1d) or while all together exceed "
	 "SIZE (2G) (default: keep all)", 3},
	{NULL, 0, NULL, 0, NULL, 0},
};

static int parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < min || v > max)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int add_pids(struct sp_cli_record_args *a, const char *list, struct argp_state *state)
{
	const char *p = list;
	do {
		char *end;
		errno = 0;
		long v = strtol(p, &end, 10);
		if (errno || end == p || v <= 0 || v > INT_MAX || (*end && *end != ',') ||
		    (*end == ',' && !end[1])) {
			argp_error(state, "invalid process id list '%.*s%s' (PID[,PID...])",
				   SP_CLI_ECHO(list));
			return EINVAL;
		}
		pid_t *n = realloc(a->pids, (a->npids + 1) * sizeof(*n));
		if (!n)
			return ENOMEM;
		a->pids = n;
		a->pids[a->npids++] = (pid_t)v;
		p = *end ? end + 1 : end;
	} while (*p);
	return 0;
}

/* -C's "0,2-3": every CPU listed, in order; duplicates are harmless. */
static int add_cpus(struct sp_cli_record_args *a, const char *list, struct argp_state *state)
{
	const char *p = list;
	do {
		char *end;
		errno = 0;
		long lo = strtol(p, &end, 10), hi = lo;
		if (!errno && end != p && *end == '-') {
			const char *q = end + 1;
			hi = strtol(q, &end, 10);
			if (end == q)
				hi = -1;
		}
		if (errno || end == p || lo < 0 || hi < lo || hi > 65535 || hi - lo > 65535 ||
		    (*end && *end != ',') || (*end == ',' && !end[1])) {
			argp_error(state, "invalid CPU list '%.*s%s' (e.g. 0,2-3)", SP_CLI_ECHO(list));
			return EINVAL;
		}
		for (long c = lo; c <= hi; c++) {
			int *n = realloc(a->cpus, (a->ncpus + 1) * sizeof(*n));
			if (!n)
				return ENOMEM;
			a->cpus = n;
			a->cpus[a->ncpus++] = (int)c;
		}
		p = *end ? end + 1 : end;
	} while (*p);
	a->cpu_list = list;
	return 0;
}

static error_t parse_common(int key, char *arg, struct argp_state *state)
{
	struct sp_cli_record_args *a = state->input;
	switch (key) {
	case 'p':
		return add_pids(a, arg, state);
	case 'a':
		a->system_wide = true;
		return 0;
	case 'C':
		return add_cpus(a, arg, state);
	case 'e': {
		enum sp_event_source ev;
		/* perf's modifiers: :u is what is sampled anyway, :k adds kernel frames (-k) */
		char *colon = strrchr(arg, ':');
		if (colon && colon[1] && strspn(colon + 1, "uk") == strlen(colon + 1)) {
			if (strchr(colon + 1, 'k'))
				a->opts.include_kernel = true;
			*colon = '\0';
		}
		if (sp_event_parse(arg, &ev))
			argp_error(state, "unknown event '%.*s%s' (one of cycles, instructions, "
					  "cache-misses, branch-misses, ref-cycles, cpu-clock, task-clock, "
					  "page-faults, major-faults, context-switches, cpu-migrations)",
				   SP_CLI_ECHO(arg));
		a->opts.event = arg;
		return 0;
	}
	case 'c': {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(arg, &end, 10);
		if (errno || end == arg || *end || arg[0] == '-' || v == 0 || v > (1ull << 62))
			argp_error(state, "invalid period '%.*s%s' (a number of events from 1 to 2^62, "
					  "4611686018427387904)", SP_CLI_ECHO(arg));
		a->opts.period = v;
		return 0;
	}
	case OPT_STOP_ATTACH:
		a->stop_attach = true;
		return 0;
	case OPT_DESCENDANTS:
		a->descendants = true;
		return 0;
	case OPT_NO_INHERIT:
		a->opts.no_inherit = true;
		return 0;
	case 'k':
		a->opts.include_kernel = true;
		return 0;
	case 'g':
		return 0;
	case OPT_CALL_GRAPH:
		if (!strncmp(arg, "dwarf,", 6)) {
			if (parse_u32(arg + 6, 8, SP_MAX_SAMPLE_USER_STACK, &a->opts.stack_size) ||
			    a->opts.stack_size % 8)
				argp_error(state, "invalid stack size in '--call-graph=%.*s%s' (a "
					   "multiple of 8 from 8 to %u)", SP_CLI_ECHO(arg),
					   SP_MAX_SAMPLE_USER_STACK);
		} else if (strcmp(arg, "dwarf") && strcmp(arg, "fp")) {
			argp_error(state, "unknown call graph '%.*s%s': expected dwarf[,SIZE] or fp "
				   "(stacks are always unwound here; lbr has no counterpart)",
				   SP_CLI_ECHO(arg));
		}
		return 0;
	case 'F':
		a->freq_given = true;
		if (!strcmp(arg, "max")) {
			/* perf's -F max: the kernel's limit */
			a->opts.frequency_hz = sp_max_sample_rate();
			if (!a->opts.frequency_hz)
				argp_error(state, "-F max: cannot read "
					   "/proc/sys/kernel/perf_event_max_sample_rate");
			return 0;
		}
		if (parse_u32(arg, 1, 1000000, &a->opts.frequency_hz))
			argp_error(state, "invalid frequency '%s' (an integer number of Hz)", arg);
		return 0;
	case OPT_STACK_SIZE:
		if (parse_u32(arg, 8, SP_MAX_SAMPLE_USER_STACK, &a->opts.stack_size) ||
		    a->opts.stack_size % 8)
			argp_error(state, "invalid stack size '%s' (a multiple of 8 from 8 to %u)",
				   arg, SP_MAX_SAMPLE_USER_STACK);
		return 0;
	case OPT_REALTIME: {
		uint32_t prio;
		if (parse_u32(arg, 1, 99, &prio))
			argp_error(state, "invalid real-time priority '%s' (1 to 99)", arg);
		a->realtime = (int)prio;
		return 0;
	}
	case ARGP_KEY_ARG:
		/* The command and its arguments: stop option parsing here. */
		a->command = &state->argv[state->next - 1];
		state->next = state->argc;
		return 0;
	case ARGP_KEY_END:
		/* -C alone samples those CPUs system-wide, as perf's does */
		if (a->ncpus && !a->command && !a->npids)
			a->system_wide = true;
		if (!a->command && !a->npids && !a->system_wide)
			argp_error(state, "nothing to record: give -p PID, -a, or -- COMMAND [ARGS...]");
		if (a->command && a->npids)
			argp_error(state, "give either -p PID or a COMMAND, not both");
		if (a->system_wide && a->npids)
			argp_error(state, "-a records every process already: give -a or -p, not both");
		if (a->system_wide && a->opts.no_inherit)
			argp_error(state, "--no-inherit goes with -p or a COMMAND (-a follows every "
					  "process anyway)");
		if (a->freq_given && a->opts.period)
			argp_error(state, "give either -F (a frequency) or -c (a period), not both");
		if (a->descendants && !a->npids)
			argp_error(state, "--descendants goes with -p");
		if (a->stop_attach && !a->npids)
			argp_error(state, "--stop-attach goes with -p (a launched command is never "
					  "stopped)");
		return 0;
	default:
		return ARGP_ERR_UNKNOWN;
	}
}

int sp_cli_parse_seconds(const char *arg, double *out)
{
	char *end;
	double v = strtod(arg, &end);
	if (end == arg || *end || !(v > 0) || v > 1e7)
		return -1;
	*out = v;
	return 0;
}

const struct argp sp_cli_record_argp = {common_options, parse_common, NULL, NULL, NULL, NULL, NULL};

static const struct argp_child record_children[] = {
	{&sp_cli_record_argp, 0, NULL, 0},
	{NULL, 0, NULL, 0},
};

static error_t parse_record(int key, char *arg, struct argp_state *state)
{
	struct sp_cli_record_args *a = state->input;
	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = a;
		return 0;
	case 'd':
		if (sp_cli_parse_seconds(arg, &a->duration_s))
			argp_error(state, "invalid duration '%s' (seconds, e.g. 2.5)", arg);
		return 0;
	case 'o':
		a->output = arg;
		a->output_given = true;
		return 0;
	case OPT_SEGMENTS:
		if (!*arg)
			argp_error(state, "--segments needs a directory");
		a->segments_dir = arg;
		return 0;
	case OPT_SEGMENT:
		if (sp_parse_duration_or_size(arg, &a->segments.segment_ns,
					      &a->segments.segment_bytes))
			argp_error(state, "invalid segment length '%.*s%s': seconds (2, 30s, 10m, 1h) "
				   "or a size (500K, 20M, 1G)", SP_CLI_ECHO(arg));
		if (a->segments.segment_ns && a->segments.segment_ns < 100000000)
			argp_error(state, "segment length '%.*s%s' is under 0.1 s: segments end "
				   "between drains, about every 100 ms", SP_CLI_ECHO(arg));
		if (a->segments.segment_bytes && a->segments.segment_bytes < 4096)
			argp_error(state, "segment size '%.*s%s' is under 4K", SP_CLI_ECHO(arg));
		a->segment_given = true;
		return 0;
	case OPT_RETAIN:
		if (sp_parse_duration_or_size(arg, &a->segments.retain_ns,
					      &a->segments.retain_bytes))
			argp_error(state, "invalid retention '%.*s%s': a duration (3600, 10m, 1d) "
				   "or a size (500M, 2G)", SP_CLI_ECHO(arg));
		a->retain_given = true;
		return 0;
	case OPT_ROLLING:
		if (sp_parse_duration_ns(arg, &a->opts.rolling_ns) || a->opts.rolling_ns < 100000000)
			argp_error(state, "invalid window '%.*s%s': seconds, at least 0.1 (30, 30s, 10m)",
				   SP_CLI_ECHO(arg));
		return 0;
	case ARGP_KEY_END:
		if (a->opts.rolling_ns && a->segments_dir)
			argp_error(state, "--rolling keeps a window in memory, --segments writes "
				   "everything: give one");
		if ((a->segment_given || a->retain_given) && !a->segments_dir)
			argp_error(state, "--segment and --retain go with --segments DIR");
		if (a->segments_dir && a->output_given)
			argp_error(state, "--segments writes into its DIR: give it or -o FILE, not both");
		if (a->segments_dir && !a->segment_given)
			a->segments.segment_ns = 60 * 1000000000ull;
		return 0;
	case 'q':
		a->quiet = true;
		return 0;
	case OPT_OFF_CPU:
		a->opts.off_cpu = true;
		return 0;
	default:
		return ARGP_ERR_UNKNOWN;
	}
}

static const struct argp argp = {
	record_options, parse_record, "-- COMMAND [ARGS...]\n-p PID[,PID...]\n-a [-C CPU-LIST] [-d SECONDS] [-- COMMAND...]",
	"Sample the CPU stacks of a command, of running processes, or of the whole machine "
	"into a spool file."
	"\vThe command is started suspended and sampling switches on when it calls execve, "
	"so nothing of its start-up is missed. Each sample's user stack is unwound with "
	"DWARF call-frame information while recording; the spool holds interned frames "
	"and stacks, not raw stack bytes. Recording ends when the command (or every "
	"process given with -p) exits, when -d expires, or on Ctrl-C; the spool is "
	"always finished. 'stackpulse report' reads it.\n\n"
	"-a samples every process on every CPU (or on -C's CPUs), including kernel threads "
	"and idle CPUs (\"[idle]\"), until Ctrl-C, -d, or the COMMAND given with it exits; "
	"'report --group-by=process' splits it by process.\n\n"
	"-e picks the event (page-faults: where memory is touched first; context-switches: "
	"where threads block) and -c samples every PERIOD events instead of -F's rate. "
	"Where the CPU exposes no hardware events (most VMs), cycles and the other hardware "
	"events fail: use cpu-clock.\n\n"
	"When -d ends a launched command (SIGTERM), record exits 0 if the command then "
	"ends of that signal. A SIGINT or SIGTERM sent to record alone finishes the "
	"spool and sends SIGTERM to a launched command still running; a second one "
	"sends SIGKILL.\n\n"
	"Exit status: with a COMMAND, the command's exit status (128+N when it was "
	"killed by signal N; 127 when it cannot be found, 126 when it cannot be run); "
	"with -p, 0 on success; 1 when recording fails, 2 on a usage error.",
	record_children, NULL, NULL,
};

/* How many SIGUSR2 arrived: each asks a flight recorder (--rolling) for a snapshot. */
static volatile sig_atomic_t snapshot_requests;

static void on_snapshot_signal(int sig)
{
	(void)sig;
	snapshot_requests++;
}

/* How many SIGINT/SIGTERM arrived: the first finishes, the second hurries the command. */
static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
	(void)sig;
	if (stop_requested < 100)
		stop_requested++;
}

/*
 * The spool could not be written: say so with what is left and what to do.
 * Once recording ran, the writer has stopped at the first failure, so the
 * file holds whole records up to it and perhaps part of one, a prefix
 * report and dump read.
 */
static int spool_write_error(const char *path, int err, bool started)
{
	const char *hint = "check the file system";
	if (err == -ENOSPC || err == -EDQUOT)
		hint = "free space there or record to another file system with -o";
	else if (err == -EFBIG)
		hint = "record for a shorter time (-d) or to another file system with -o";
	return sp_cli_error("cannot write spool '%s': %s; %s%s", path, sp_strerror(err),
			    started ? "recording stopped, the spool keeps the samples written "
				      "before (report and dump read them); " : "",
			    hint);
}

/*
 * Whether the spool itself refuses to be created (EACCES, EPERM, EROFS: an
 * immutable file, sysfs, a read-only mount), which the checks before the
 * start cannot all foresee: 0, or the errno.  Called after attaching failed,
 * when nothing was written: a file made to find out is removed again.
 */
static int output_refused(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		close(fd);
		unlink(path);
		return 0;
	}
	if (errno != EEXIST)
		return errno;
	fd = open(path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

static int segments_error(const char *dir, int err);

/* An attach failure with what to do about it. */
static int attach_error(int err, const struct sp_cli_record_args *a, pid_t pid)
{
	uint32_t freq = sp_record_opts_frequency(&a->opts);
	/* a segment directory refused its first segment: not a perf-events failure */
	if (a->segments_dir && (-err == EACCES || -err == EPERM || -err == EROFS)) {
		int dfd = open(a->segments_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int derr = dfd < 0 || faccessat(dfd, ".", W_OK | X_OK, AT_EACCESS) ? -errno : 0;
		if (dfd >= 0)
			close(dfd);
		if (derr)
			return segments_error(a->segments_dir, derr);
	}
	int out_err = (-err == EACCES || -err == EPERM || -err == EROFS) && !a->segments_dir
			      ? output_refused(a->output) : 0;
	if (out_err == EACCES || out_err == EPERM || out_err == EROFS)
		return sp_cli_error("cannot create spool '%s': %s; record to another place with -o",
				    a->output, strerror(out_err));
	switch (-err) {
	case EACCES:
	case EPERM: {
		if (pid < 0)
			return sp_cli_error("cannot open system-wide perf events (-a): %s; run as root, "
					    "grant CAP_PERFMON, or set kernel.perf_event_paranoid to 0 or "
					    "less (sysctl -w kernel.perf_event_paranoid=0)",
					    strerror(-err));
		char proc[32];
		struct stat st;
		snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
		if (geteuid() != 0 && !stat(proc, &st) && st.st_uid != geteuid())
			return sp_cli_error("cannot record pid %d: it belongs to another user (uid %u); "
					    "record it as that user, as root, or with CAP_PERFMON",
					    (int)pid, (unsigned)st.st_uid);
		return sp_cli_error("cannot open perf events for pid %d: %s; run as root, grant "
				    "CAP_PERFMON, or lower kernel.perf_event_paranoid "
				    "(sysctl -w kernel.perf_event_paranoid=1)",
				    (int)pid, strerror(-err));
	}
	case EMFILE:
	case ENFILE:
		return sp_cli_error("out of file descriptors opening perf events (one per thread "
				    "per CPU): raise RLIMIT_NOFILE (ulimit -n)");
	case ENOMEM:
		return sp_cli_error("cannot map perf ring buffers: raise RLIMIT_MEMLOCK (ulimit -l) "
				    "or kernel.perf_event_mlock_kb, or lower --stack-size");
	case SP_E_FREQ_LIMIT:
		return sp_cli_error("frequency %u Hz is above kernel.perf_event_max_sample_rate "
				    "(%u): use -F %u or less, or raise the limit "
				    "(sysctl -w kernel.perf_event_max_sample_rate=%u)",
				    freq, sp_max_sample_rate(), sp_max_sample_rate(), freq);
	case SP_E_NO_PROCESS:
	case ESRCH:
		return sp_cli_error("no process with pid %d", (int)pid);
	case ENOSPC:
	case EDQUOT:
	case EFBIG:
	case EIO:
		return spool_write_error(a->output, err, false);
	case SP_E_NO_HW_EVENT:
		return sp_cli_error("cannot sample on '%s': this machine's CPU exposes no such "
				    "hardware event (no PMU, as in most virtual machines); use "
				    "-e cpu-clock (time on CPU) instead", a->opts.event);
	case SP_E_BAD_CPU: {
		char online[256];
		if (sp_online_cpus_text(online, sizeof(online)))
			snprintf(online, sizeof(online), "?");
		return sp_cli_error("-C %s names a CPU that is not online (online: %s)",
				    a->cpu_list ? a->cpu_list : "", online);
	}
	case SP_E_NO_EVENT:
		if (pid < 0)
			return sp_cli_error("no usable perf event on any CPU");
		return sp_cli_error("no usable perf event (neither cycles nor cpu-clock) for "
				    "pid %d", (int)pid);
	default:
		if (pid < 0)
			return sp_cli_error("cannot record system-wide into '%s': %s%s", a->output,
					    sp_strerror(err), sp_cli_output_hint(err));
		if (a->command)
			return sp_cli_error("cannot record '%s' into '%s': %s%s", a->command[0],
					    a->output, sp_strerror(err), sp_cli_output_hint(err));
		return sp_cli_error("cannot record pid %d into '%s': %s%s", (int)pid, a->output,
				    sp_strerror(err), sp_cli_output_hint(err));
	}
}

/* The summary of a finished recording, with what this process spent on it. */
static void print_summary(const struct sp_cli_record_args *a, const char *path,
			  const struct sp_summary *s, const struct sp_recorder *rec, double elapsed)
{
	enum sp_event_source source = sp_recorder_event_source(rec);
	bool counts_kernel_time = sp_recorder_counts_kernel_time(rec);
	struct sp_summary_text t = {
		.subcommand = sp_cli_subcommand,
		.spool_path = path,
		.elapsed_s = elapsed,
		.source = source,
		.counts_kernel_time = counts_kernel_time,
		.opts = &a->opts,
		.realtime = a->realtime != 0,
		.system_wide = a->system_wide,
		.cpu_list = a->cpu_list,
		.cpu_s = -1,
		.with_display = !strcmp(sp_cli_subcommand, "top"),
		.samples_taken = a->opts.rolling_ns ? s->sample_events : 0,
		.off_cpu = a->opts.off_cpu,
	};
	sp_recorder_offcpu_counts(rec, &t.offcpu_intervals, &t.offcpu_incomplete);
	struct stat st;
	if (a->opts.segments) {
		struct sp_segments_stats sst;
		sp_segments_stats(a->opts.segments, &sst);
		t.spool_bytes = sst.published_bytes;
	} else if (!stat(path, &st)) {
		t.spool_bytes = (uint64_t)st.st_size;
	}
	/* ru_maxrss is in KiB */
	struct rusage ru;
	if (!getrusage(RUSAGE_SELF, &ru)) {
		t.cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
			  (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
		t.peak_mib = (double)ru.ru_maxrss / 1024.0;
	}
	sp_summary_write_text(s, &t, stderr);
}

/* Append one word, single-quoted when a shell would split or expand it. */
static size_t append_word(char *buf, size_t cap, size_t used, const char *w, bool first)
{
	bool plain = *w != '\0' && strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					      "0123456789_-+=/.,:@%") == strlen(w);
	if (!first && used + 1 < cap)
		buf[used++] = ' ';
	if (!plain && used + 1 < cap)
		buf[used++] = '\'';
	for (; *w && used + 6 < cap; w++) {
		if (*w == '\'' && !plain) {
			/* Close, a quote in double quotes, reopen: no backslash, which reports escape. */
			memcpy(buf + used, "'\"'\"'", 5);
			used += 5;
		} else {
			buf[used++] = *w;
		}
	}
	if (!plain && used + 1 < cap)
		buf[used++] = '\'';
	buf[used] = '\0';
	return used;
}

/* The recorded command line: the launched argv, or the -p target's /proc cmdline. */
static void describe_target(struct sp_cli_record_args *a)
{
	size_t used = 0;
	a->cmdline[0] = '\0';
	if (a->system_wide) {
		used = (size_t)snprintf(a->cmdline, sizeof(a->cmdline), "system-wide%s%.100s%s",
					a->cpu_list ? " (CPUs " : "", a->cpu_list ? a->cpu_list : "",
					a->cpu_list ? ")" : "");
		if (a->command && used + 4 < sizeof(a->cmdline)) {
			memcpy(a->cmdline + used, " -- ", 5);
			used += 4;
			for (char **p = a->command; *p; p++)
				used = append_word(a->cmdline, sizeof(a->cmdline), used, *p, p == a->command);
		}
		return;
	}
	if (a->command) {
		for (char **p = a->command; *p; p++)
			used = append_word(a->cmdline, sizeof(a->cmdline), used, *p, p == a->command);
		return;
	}
	char raw[1024];
	size_t n = sp_pid_cmdline(a->pids[0], raw, sizeof(raw));
	for (size_t i = 0; i < n; i += strlen(raw + i) + 1)
		used = append_word(a->cmdline, sizeof(a->cmdline), used, raw + i, i == 0);
	if (!used)
		snprintf(a->cmdline, sizeof(a->cmdline), "pid %d", (int)a->pids[0]);
	if (a->npids > 1 && used + 32 < sizeof(a->cmdline))
		snprintf(a->cmdline + used, sizeof(a->cmdline) - used, " (and %zu more process%s)",
			 a->npids - 1, a->npids > 2 ? "es" : "");
}

/* --segments DIR cannot be used: why, and what to do. */
static int segments_error(const char *dir, int err)
{
	const char *hint = "";
	if (err == -SP_E_SEGMENT_DIR_SHARED)
		hint = ": retention deletes files there, so it must be a directory of your own "
		       "that no one else may write (mkdir -m 700 DIR)";
	else if (err == -ENOTDIR)
		hint = ": give a directory (not a symlink to one, nor a file)";
	else if (err == -EACCES || err == -EPERM || err == -EROFS)
		hint = ": choose a directory you may write";
	else if (err == -ENOENT)
		hint = ": its parent directory must exist";
	return sp_cli_error("cannot record segments into '%s': %s%s", dir, sp_strerror(err), hint);
}

/* What a continuous recording left in its directory. */
static void print_segments(const struct sp_segments *g)
{
	struct sp_segments_stats st;
	sp_segments_stats(g, &st);
	fprintf(stderr, "  segments: %" PRIu64 " written into '%s' (%.1f KiB), %" PRIu64
		" deleted by --retain, %" PRIu64 " there now (%.1f KiB)\n",
		st.published, sp_segments_dir(g), (double)st.published_bytes / 1024, st.deleted,
		st.kept, (double)st.kept_bytes / 1024);
	if (st.retention_error)
		sp_cli_warn("retention could not delete an old segment: %s",
			    sp_strerror(st.retention_error));
}

/* Can the spool be created?  Checked before a command starts or a process stops. */
static int output_error(const char *path)
{
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	struct stat st;
	/* Another user's link would make root write where it points; their FIFO, hang. */
	if (!lstat(path, &st) && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && st.st_uid &&
	    st.st_uid != geteuid())
		return S_ISLNK(st.st_mode) ? -ELOOP : -SP_E_NOT_REGULAR;
	if (!stat(path, &st) && S_ISDIR(st.st_mode))
		return -EISDIR;
	/* another record or top is writing it: this one must not truncate it */
	if (sp_spool_is_growing(path))
		return -SP_E_SPOOL_BUSY;
	if (stat(dir, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	return access(dir, W_OK) ? -errno : 0;
}

/* How a launched command ended, when it did not simply exit 0. */
static void print_fate(const char *name, int status, int rc)
{
	if (WIFSIGNALED(status))
		sp_cli_note("command '%s' killed by signal %d (%s)%s; exit status %d", name,
			    WTERMSIG(status), strsignal(WTERMSIG(status)),
			    WCOREDUMP(status) ? ", core dumped" : "", rc);
	else if (WIFEXITED(status) && WEXITSTATUS(status))
		sp_cli_note("command '%s' exited with status %d", name, WEXITSTATUS(status));
}

static void print_status(const struct sp_recorder *rec, double elapsed)
{
	struct sp_summary s;
	sp_recorder_summary(rec, &s);
	fprintf(stderr, "\r\033[K  recording: %.0f s, %" PRIu64 " samples (%.0f/s), %" PRIu64 " lost",
		elapsed, s.samples, elapsed > 0 ? (double)s.samples / elapsed : 0.0, s.lost_events);
	fflush(stderr);
}

/* perf record's options without a spelling here, and what stackpulse has instead. */
static const struct sp_cli_spelling perf_spellings[] = {
	{"-t", "-p PID (every thread of the process is recorded)"},
	{"--tid", "-p PID (every thread of the process is recorded)"},
	{"--kernel-callchains", "-k (kernel frames added to the user stacks)"},
	{"--user-callchains", "nothing: user stacks are always recorded (-k adds kernel frames)"},
	{"-T", "nothing: every sample has its timestamp"},
	{"--timestamp", "nothing: every sample has its timestamp"},
	{NULL, NULL},
};

int cmd_record(int argc, char **argv)
{
	struct sp_cli_record_args a = {.output = "profile.spool"};
	sp_cli_perf_spellings(argc, argv, perf_spellings, true);
	argp_parse(&argp, argc, argv, 0, NULL, &a);
	return sp_cli_record_run(&a, NULL);
}


/* The CLI's side of a recording session: the status line, a live view, messages, the summary. */
struct cli_session {
	const struct sp_cli_record_args *a;
	unsigned snapshots;      /* written on SIGUSR2 */
	sig_atomic_t snapshots_asked;
	const struct sp_cli_live_hooks *live;
	bool status_line;
	uint64_t start_ns, next_status_ns;
};

#define NS_PER_S 1000000000ull

static int session_started(void *ctx, struct sp_recorder *rec)
{
	struct cli_session *c = ctx;
	if (!sp_recorder_counts_kernel_time(rec))
		sp_cli_warn("kernel-mode sampling denied (kernel.perf_event_paranoid is %d): time "
			    "spent in system calls is not sampled%s; run as root or grant "
			    "CAP_PERFMON to count it",
			    sp_perf_event_paranoid(), c->a->opts.include_kernel ? " and -k is off" : "");
	c->start_ns = sp_monotonic_ns();
	c->next_status_ns = c->start_ns + NS_PER_S;
	return c->live ? c->live->begin(c->live->ctx, rec) : 0;
}

/* A flight recorder's window and memory, after its last snapshot. */
static void print_window(const struct sp_cli_record_args *a, const struct sp_recorder *rec,
			 unsigned snapshots)
{
	uint64_t ring, samples, dict;
	sp_recorder_window_memory(rec, &ring, &samples, &dict);
	fprintf(stderr, "  flight recorder: the last %.1f s kept in memory, %" PRIu64 " samples "
		"(ring %.1f KiB, dictionaries about %.1f KiB); %u snapshot%s on SIGUSR2 before "
		"the last\n", (double)a->opts.rolling_ns / 1e9, samples, (double)ring / 1024,
		(double)dict / 1024, snapshots, snapshots == 1 ? "" : "s");
}

/* SIGUSR2 asked a flight recorder for its window: write it, recording on. */
static void take_snapshots(struct cli_session *c, struct sp_recorder *rec)
{
	sig_atomic_t asked = snapshot_requests;
	if (asked == c->snapshots_asked)
		return;
	c->snapshots_asked = asked;
	char path[4096];
	struct sp_summary w;
	int err = sp_recorder_snapshot(rec, path, sizeof(path), &w);
	if (err) {
		sp_cli_warn("cannot write a snapshot of the last %.1f s next to '%s': %s; "
			    "recording goes on", (double)c->a->opts.rolling_ns / 1e9, c->a->output,
			    sp_strerror(err));
		return;
	}
	c->snapshots++;
	if (c->status_line)
		fputs("\r\033[K", stderr);
	sp_cli_note("snapshot of the last %.1f s: '%s' (%" PRIu64 " samples)",
		    (double)c->a->opts.rolling_ns / 1e9, path, w.samples);
}

static int session_drained(void *ctx, struct sp_recorder *rec, uint64_t now_ns)
{
	struct cli_session *c = ctx;
	if (c->a->opts.rolling_ns)
		take_snapshots(c, rec);
	if (c->status_line && now_ns >= c->next_status_ns) {
		print_status(rec, (double)(now_ns - c->start_ns) / 1e9);
		c->next_status_ns = sp_monotonic_ns() + NS_PER_S;
	}
	/* the live view: keys and refreshes; it may end the recording (q) */
	return c->live && c->live->tick(c->live->ctx, rec, (double)now_ns / 1e9);
}

static void session_finished(void *ctx, struct sp_recorder *rec, const struct sp_session_result *res)
{
	struct cli_session *c = ctx;
	const struct sp_cli_record_args *a = c->a;
	if (c->status_line)
		fputs("\r\033[K", stderr);
	/* the view's last refresh, with the trailer read; its screen gives way to the summary */
	if (c->live)
		c->live->end(c->live->ctx, rec);
	struct sp_summary s = res->summary;
	if (a->opts.rolling_ns) {
		/* what the last snapshot holds, of all the samples taken */
		uint64_t ring, dict;
		sp_recorder_window_memory(rec, &ring, &s.samples, &dict);
	}
	if (res->error && res->end != SP_SESSION_DRAIN_FAILED)
		spool_write_error(a->output, res->error, true);
	else if (!res->error && !a->quiet)
		print_summary(a, a->opts.rolling_ns ? sp_recorder_snapshot_path(rec) : a->output,
			      &s, rec, (double)res->elapsed_ns / 1e9);
	if (!res->error && !a->quiet && a->opts.rolling_ns)
		print_window(a, rec, c->snapshots);
	uint64_t compactions = sp_recorder_compactions(rec);
	if (!res->error && !a->quiet && compactions)
		fprintf(stderr, "  dictionaries compacted %" PRIu64 " time%s: entries only gone "
			"processes needed were dropped\n", compactions, compactions == 1 ? "" : "s");
	uint64_t maps_cut = sp_recorder_perf_maps_cut(rec);
	if (maps_cut)
		sp_cli_warn("%" PRIu64 " perf map%s read only to %s first 8 MiB (131072 lines) while "
			    "recording: %s grew past it; JIT frames past the cut may end stacks",
			    maps_cut, maps_cut == 1 ? "" : "s", maps_cut == 1 ? "its" : "their",
			    maps_cut == 1 ? "it" : "they");
	const char *bomb;
	uint64_t not_inflated = sp_recorder_sections_not_inflated(rec, &bomb);
	if (not_inflated)
		sp_cli_warn("%" PRIu64 " compressed .debug_frame section%s not inflated, first in "
			    "'%s': %s more than %" PRIu64 " MiB, or more than was left of the "
			    "%" PRIu64 " MiB all modules of a run may inflate; %s unwound with "
			    ".eh_frame alone",
			    not_inflated, not_inflated == 1 ? "" : "s", bomb ? bomb : "?",
			    not_inflated == 1 ? "it claims" : "each claims",
			    SP_INFLATE_SECTION_MAX >> 20, SP_INFLATE_RUN_MAX >> 20,
			    not_inflated == 1 ? "its module was" : "their modules were");
	const char *untrusted_file, *untrusted_why;
	uint64_t untrusted = sp_recorder_sections_untrusted(rec, &untrusted_file, &untrusted_why);
	if (untrusted)
		sp_cli_warn("%" PRIu64 " of those for the %" PRIu64 " MiB that module files another "
			    "user can influence may inflate together in a run, first '%s' (%s; "
			    "root's files in root's directories have %" PRIu64 " MiB)",
			    untrusted, SP_INFLATE_UNTRUSTED_RUN_MAX >> 20,
			    untrusted_file ? untrusted_file : "?",
			    untrusted_why ? untrusted_why : "?", SP_INFLATE_RUN_MAX >> 20);
}

static void session_notice(void *ctx, enum sp_session_notice what, pid_t pid, int err)
{
	const struct sp_cli_record_args *a = ((struct cli_session *)ctx)->a;
	switch (what) {
	case SP_SESSION_NOTICE_DRAIN_FAILED:
		spool_write_error(a->output, err, true);
		break;
	case SP_SESSION_NOTICE_NO_DESCENDANTS:
		sp_cli_warn("cannot list the descendants of pid %d: %s", (int)pid, sp_strerror(err));
		break;
	case SP_SESSION_NOTICE_TERM_WAIT:
		sp_cli_warn("waiting for '%s' to exit after SIGTERM (SIGKILL in 4 s; "
			    "Ctrl-C again to kill it now)", a->command[0]);
		break;
	case SP_SESSION_NOTICE_KILL_SENT:
		sp_cli_warn("'%s' did not exit 5 s after SIGTERM: sending SIGKILL", a->command[0]);
		break;
	}
}

/* A session that could not start: what failed, and the exit status. */
static int start_error(int err, const struct sp_cli_record_args *a,
		       const struct sp_session_result *res)
{
	switch (res->failed_stage) {
	case SP_SESSION_STAGE_LAUNCH:
		return sp_cli_error("cannot start '%s': %s", a->command[0], sp_strerror(err));
	case SP_SESSION_STAGE_ATTACH:
		return attach_error(err, a, res->failed_pid);
	case SP_SESSION_STAGE_EXEC:
		sp_cli_error("cannot run '%s': %s", a->command[0], sp_strerror(err));
		return -err == ENOENT ? 127 : 126;
	default:
		return sp_cli_error("cannot record into '%s': %s", a->output, sp_strerror(err));
	}
}

/* The session's end on the command line: the command's fate, the exit status. */
static int session_status(const struct sp_cli_record_args *a, const struct sp_session_result *res)
{
	int rc = res->exit_status;
	if (res->command_pid < 0) {
		if (res->error)
			fprintf(stderr, "stackpulse %s: the recorded processes keep running\n",
				sp_cli_subcommand);
		return rc;
	}
	if (res->error && !res->command_exited)
		fprintf(stderr, "stackpulse %s: command '%s' was ended (SIGTERM) as "
				"recording failed\n", sp_cli_subcommand, a->command[0]);
	else if (!res->command_ended_by_stop)
		print_fate(a->command[0], res->command_status, rc);
	return rc;
}

int sp_cli_record_run(struct sp_cli_record_args *args, const struct sp_cli_live_hooks *hooks)
{
	struct sp_cli_record_args a = *args;
	int rc = SP_EXIT_FAILURE, err;

	describe_target(&a);
	a.opts.command = a.cmdline;

	/* Fail before anything starts, so a mistake never clobbers the last spool. */
	struct sp_segments *segs = NULL;
	if (a.segments_dir) {
		err = sp_segments_open(a.segments_dir, &a.segments, &segs);
		if (err) {
			free(a.pids);
			return segments_error(a.segments_dir, err);
		}
		a.output = a.segments_dir;
		a.opts.segments = segs;
	}
	err = segs ? 0 : output_error(a.output);
	if (err) {
		free(a.pids);
		return sp_cli_error("cannot create spool '%s': %s%s", a.output, sp_strerror(err),
				    sp_cli_output_hint(err));
	}
	if (a.command && (err = sp_command_runnable(a.command[0]))) {
		sp_cli_error("cannot run '%s': %s", a.command[0], strerror(-err));
		sp_segments_free(segs);
		return err == -ENOENT ? 127 : 126;
	}
	/* perf would attach, and the spool would hold no sample: say why instead. */
	for (size_t i = 0; i < a.npids; i++) {
		if (sp_pid_is_kernel_thread(a.pids[i]) == 1) {
			sp_cli_error("cannot record pid %d: it is a kernel thread, which runs no "
				     "user code and has no user stack to sample; -p takes user "
				     "processes only", (int)a.pids[i]);
			sp_segments_free(segs);
			free(a.pids);
			return SP_EXIT_FAILURE;
		}
	}

	/*
	 * Before anything starts, so a refusal changes nothing.  The command
	 * and any other child start with the normal policy (reset on fork).
	 */
	if (a.realtime) {
		struct sched_param sp = {.sched_priority = a.realtime};
		if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp)) {
			sp_segments_free(segs);
			free(a.pids);
			return sp_cli_error("cannot use SCHED_FIFO priority %d (--realtime): %s; "
					    "run as root or with CAP_SYS_NICE, or leave --realtime "
					    "out", a.realtime, strerror(errno));
		}
	}

	/* The handler only counts; the session polls the count (lib/ installs no handler). */
	struct sigaction sa = {.sa_handler = on_stop_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (a.opts.rolling_ns) {
		struct sigaction su = {.sa_handler = on_snapshot_signal, .sa_flags = SA_RESTART};
		sigemptyset(&su.sa_mask);
		sigaction(SIGUSR2, &su, NULL);
	}

	a.opts.cpus = a.cpus;
	a.opts.ncpus = a.ncpus;
	/* One refreshed status line on a terminal; nothing in logs, with -q, or under a live view. */
	struct cli_session c = {.a = &a, .live = hooks,
				.status_line = !a.quiet && !hooks && isatty(STDERR_FILENO)};
	struct sp_session_opts so = {
		.record = a.opts,
		.spool_path = a.output,
		.command = a.command,
		.pids = a.pids,
		.npids = a.npids,
		.descendants = a.descendants,
		.system_wide = a.system_wide,
		.attach_mode = a.stop_attach ? SP_ATTACH_STOP_ENABLE_RESUME
					     : SP_ATTACH_ENABLE_THEN_SCAN,
		.duration_ns = a.duration_s > 0 ? (uint64_t)(a.duration_s * 1e9) : 0,
		.stop_requests = &stop_requested,
		.hooks = {&c, session_started, session_drained, session_finished, session_notice},
	};
	struct sp_session_result res;
	err = sp_session_run(&so, &res);
	if (err < 0)
		rc = start_error(err, &a, &res);
	else if (err > 0)
		rc = err; /* the live view could not start */
	else
		rc = session_status(&a, &res);
	if (segs && !err && !a.quiet)
		print_segments(segs);
	sp_segments_free(segs);
	free(a.pids);
	free(a.cpus);
	return rc;
}
