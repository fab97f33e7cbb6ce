/* SPDX-License-Identifier: MIT */
/* Attaching the recorder: to running processes, to a launched command, to every CPU; its roots. */
#include "record/record.h"
#include "spool/spool.h"
#include "symbols/symbols.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

static void raise_nofile_limit(void)
{
	struct rlimit rl;
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static char process_state(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* The state follows the last ')' since comm may contain parentheses. */
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

/* Open events for every thread of pid not yet opened; returns how many were new. */
static int open_threads(struct sp_recorder *r, pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return errno == ENOENT ? -SP_E_NO_PROCESS : -errno;
	int added = 0, err = 0;
	struct dirent *de;
	while (!err && (de = readdir(d))) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);
		uint32_t dummy;
		if (*end || tid <= 0 || sp_map_get(&r->opened_tids, (uint64_t)tid, &dummy))
			continue;
		err = sp_events_open_task(&r->events, (pid_t)tid);
		if (err == -ESRCH) { /* the thread exited meanwhile */
			err = 0;
			continue;
		}
		if (!err)
			err = sp_map_put(&r->opened_tids, (uint64_t)tid, (uint32_t)pid);
		added++;
	}
	closedir(d);
	return err ? err : added;
}

/* Thread names from /proc for every opened thread of pid. */
static void name_threads(struct sp_recorder *r, pid_t pid)
{
	const struct sp_map *m = &r->opened_tids;
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->slots[i].used || m->slots[i].val != (uint32_t)pid)
			continue;
		char path[96], name[64] = "";
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)m->slots[i].key);
		FILE *f = fopen(path, "re");
		if (f) {
			if (fgets(name, sizeof(name), f))
				name[strcspn(name, "\n")] = '\0';
			fclose(f);
		}
		uint32_t idx;
		if (!sp_spool_writer_intern_thread(r->spool, pid, (int32_t)m->slots[i].key, &idx) &&
		    !sp_spool_writer_set_thread_name(r->spool, idx, name))
			sp_thread_names_remember(&r->names, (uint32_t)pid, (uint32_t)m->slots[i].key, name, true);
	}
}

static int watch_root(struct sp_attached_roots *a, pid_t pid)
{
	pid_t *roots = realloc(a->pids, (a->n + 1) * sizeof(*roots));
	if (!roots)
		return -ENOMEM;
	a->pids = roots;
	int *fds = realloc(a->pidfds, (a->n + 1) * sizeof(*fds));
	if (!fds)
		return -ENOMEM;
	a->pidfds = fds;
	a->pids[a->n] = pid;
	a->pidfds[a->n] = (int)syscall(SYS_pidfd_open, pid, 0);
	a->n++;
	return 0;
}

static int open_spool(struct sp_recorder *r, const char *path, const struct sp_record_opts *opts)
{
	struct timespec mono, real;
	struct utsname uts;
	char host[256] = "";
	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_REALTIME, &real);
	gethostname(host, sizeof(host) - 1);
	bool have_uts = uname(&uts) == 0;
	uint32_t freq = sp_record_opts_frequency(opts);
	/* by period, only a clock's samples have a known interval (its period, ns) */
	uint64_t interval_us = freq ? 1000000 / freq
			       : sp_event_counts_time(r->events.source) ? opts->period / 1000 : 0;
	struct sp_spool_meta meta = {
		.start_timestamp_us = opts->start_timestamp_us
					      ? opts->start_timestamp_us
					      : (uint64_t)real.tv_sec * 1000000 + (uint64_t)real.tv_nsec / 1000,
		.sample_interval_us = opts->sample_interval_us ? opts->sample_interval_us
							       : interval_us,
		.start_monotonic_ns = (uint64_t)mono.tv_sec * 1000000000 + (uint64_t)mono.tv_nsec,
		.frequency_hz = freq,
		.sample_period = opts->period,
		.flags = (r->system_wide ? SP_META_SYSTEM_WIDE : 0) |
			 (r->events.off_cpu ? SP_META_OFF_CPU : 0),
		.stack_size = sp_record_opts_stack_size(opts),
		.event_source = r->events.source,
		.command = opts->command ? opts->command : "",
		.hostname = host,
		.kernel_release = have_uts ? uts.release : "",
	};
	r->offcpu.start_ns = meta.start_monotonic_ns;
	r->spool_path = strdup(path);
	if (!r->spool_path)
		return -ENOMEM;
	r->segments = opts->segments;
	r->rolling = opts->rolling_ns != 0;
	if (r->rolling)
		return sp_spool_writer_open_rolling(&meta, opts->rolling_ns, &r->spool);
	if (r->segments)
		return sp_segments_begin(r->segments, &meta, &r->spool);
	return sp_spool_writer_open(path, &meta, &r->spool);
}

/*
 * First half of attaching: stop the process (STOP mode) and open events for
 * its threads, or for the suspended child (EXEC mode).  *stopped says whether
 * we sent SIGSTOP, so the caller resumes it whatever happens next.
 */
/* Listings of a running process's threads after its events are on (ENABLE_THEN_SCAN). */
#define SCAN_ROUNDS 16

static int open_events(struct sp_recorder *r, pid_t pid, enum sp_attach_mode mode,
		       bool *stopped)
{
	*stopped = false;
	r->events.attr.enable_on_exec = mode == SP_ATTACH_ENABLE_ON_EXEC;
	r->events.side_attr.enable_on_exec = r->events.attr.enable_on_exec;
	if (mode == SP_ATTACH_ENABLE_ON_EXEC) {
		int err = sp_events_open_task(&r->events, pid);
		return err ? err : sp_map_put(&r->opened_tids, (uint64_t)pid, (uint32_t)pid);
	}
	char state = process_state(pid);
	if (!state)
		return -SP_E_NO_PROCESS;
	/* A process someone else stopped stays stopped: don't SIGCONT it. */
	if (mode == SP_ATTACH_STOP_ENABLE_RESUME && state != 'T' && state != 't') {
		if (kill(pid, SIGSTOP))
			return -errno;
		*stopped = true;
		for (int i = 0; i < 200 && process_state(pid) != 'T'; i++)
			usleep(1000);
	}
	/*
	 * Re-list until no new thread shows up: threads may start until the stop
	 * lands, or, not stopped, all along (a bounded number of rounds then:
	 * threads started later inherit their maker's events).
	 */
	int added, rounds = 0;
	do
		added = open_threads(r, pid);
	while (added > 0 && (mode == SP_ATTACH_STOP_ENABLE_RESUME || ++rounds < SCAN_ROUNDS));
	return added < 0 ? added : 0;
}

/* Second half: the process's state and modules, then sampling on (STOP mode). */
static int register_process(struct sp_recorder *r, pid_t pid, enum sp_attach_mode mode,
			    size_t first_fd)
{
	struct sp_process *p = sp_process_table_add(&r->procs, pid);
	if (!p)
		return -ENOMEM;
	if (mode == SP_ATTACH_STOP_ENABLE_RESUME) {
		sp_recorder_note_owner(r, p, NULL, 0);
		int err = sp_recorder_read_maps(r, p);
		if (err)
			return err;
		name_threads(r, pid);
		err = sp_events_enable(&r->events, first_fd);
		if (err)
			return err;
	} else if (mode == SP_ATTACH_ENABLE_THEN_SCAN) {
		/*
		 * A process with code in anonymous memory (a JIT) or a Python
		 * runtime has its perf map read before sampling goes on, not by
		 * the drain loop at the first JIT frame: there a large map (8 MiB:
		 * 12 ms of parsing here, more on a busy machine) held the rings up.
		 * With the recorder held to 5% of a CPU, 0-140 of about 2,800
		 * samples were lost in each of 5 runs that way (79-169 with the
		 * read just after sampling went on); none when read here.  Other
		 * processes are left alone: no map is looked for (nor through
		 * /proc/PID/root, which CAP_PERFMON alone may not read).
		 */
		if (!p->jit && sp_pid_may_have_perf_map(pid) && (p->jit = sp_jit_code_new(pid)) &&
		    !sp_jit_code_read_map(p->jit)) {
			sp_jit_code_free(p->jit);
			p->jit = NULL;
		}
		/*
		 * Sampling first, then what /proc says: an mmap2, comm or fork
		 * record from here on is in the rings, and what happened before is
		 * in maps and task; the records merge with the scan when drained.
		 */
		int err = sp_events_enable(&r->events, first_fd);
		for (int round = 0; !err && round < SCAN_ROUNDS; round++) {
			size_t from = r->events.nfds;
			int added = open_threads(r, pid);
			if (added <= 0) {
				err = added;
				break;
			}
			err = sp_events_enable(&r->events, from);
		}
		sp_recorder_note_owner(r, p, NULL, 0);
		err = err ? err : sp_recorder_read_maps(r, p);
		if (err)
			return err;
		name_threads(r, pid);
	} else if (mode == SP_ATTACH_ENABLE_ON_EXEC) {
		/*
		 * The child waits to exec the command: its image is still a copy
		 * of the caller's.  Known, it becomes the pre-exec image, which
		 * names the samples taken inside that exec (sampling starts there,
		 * after the address space was replaced).  Best effort.
		 */
		(void)sp_recorder_read_maps(r, p);
	}
	return watch_root(&r->roots, pid);
}

/* A recorder with nothing open yet (libelf set up, RLIMIT_NOFILE raised). */
static struct sp_recorder *recorder_new(void)
{
	sp_elf_init();
	raise_nofile_limit();
	struct sp_recorder *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	sp_process_table_init(&r->procs);
	sp_map_init(&r->opened_tids);
	sp_map_init(&r->sample_origin);
	sp_map_init(&r->offcpu.by_tid);
	sp_root_chains_init(&r->root_chains);
	sp_thread_names_init(&r->names);
	sp_stack_cache_init(&r->stacks);
	sp_modfile_cache_init(&r->files);
	return r;
}

/* A recording that could not start: no half-made spool is left behind. */
static void abandon(struct sp_recorder *r, const char *spool_path)
{
	if (r->spool) {
		sp_spool_writer_free(r->spool);
		r->spool = NULL;
		unlink(spool_path);
	}
	sp_recorder_free(r);
}

int sp_recorder_attach(pid_t pid, const char *spool_path, enum sp_attach_mode mode,
		       const struct sp_record_opts *opts, struct sp_recorder **out)
{
	bool stopped = false;
	int err;

	static const struct sp_record_opts defaults;
	if (pid <= 0 || !spool_path)
		return -SP_E_BAD_ARG;
	if (!opts)
		opts = &defaults;
	struct sp_recorder *r = recorder_new();
	if (!r)
		return -ENOMEM;
	err = sp_events_init(&r->events, opts, mode == SP_ATTACH_ENABLE_ON_EXEC,
			     mode == SP_ATTACH_ENABLE_THEN_SCAN, false);
	if (err)
		goto fail;
	/* The spool's header names the event source, known once an event is open. */
	err = open_events(r, pid, mode, &stopped);
	if (err)
		goto fail;
	r->summary.kernel_enabled = r->events.kernel_enabled;
	err = open_spool(r, spool_path, opts);
	if (err)
		goto fail;
	err = register_process(r, pid, mode, 0);
	if (err)
		goto fail;
	if (stopped)
		kill(pid, SIGCONT);
	*out = r;
	return 0;
fail:
	if (stopped)
		kill(pid, SIGCONT);
	abandon(r, spool_path);
	return err;
}

int sp_recorder_attach_system(const char *spool_path, const struct sp_record_opts *opts,
			      struct sp_recorder **out)
{
	static const struct sp_record_opts defaults;
	if (!spool_path || !out)
		return -SP_E_BAD_ARG;
	if (!opts)
		opts = &defaults;
	struct sp_recorder *r = recorder_new();
	if (!r)
		return -ENOMEM;
	r->system_wide = true;
	int err = sp_events_init(&r->events, opts, false, false, true);
	if (!err)
		err = sp_events_open_cpus(&r->events);
	r->summary.kernel_enabled = r->events.kernel_enabled;
	if (!err)
		err = open_spool(r, spool_path, opts);
	/*
	 * On from here: a process that starts now comes with fork, comm and
	 * mmap2 records; one already running is read from /proc at its first
	 * sample (discover_process), so the spool holds only what was sampled.
	 * That sample may be drained after the process exited (a wakeup is up
	 * to 100 ms away): what /proc says of every process is kept in memory
	 * for those, read just before the events go on, so that none running
	 * then can end before the list has it (best effort: without the list
	 * they stay addresses).
	 */
	if (!err)
		(void)sp_start_snapshot_take(&r->snapshot);
	if (!err)
		err = sp_events_enable(&r->events, 0);
	if (err) {
		abandon(r, spool_path);
		return err;
	}
	*out = r;
	return 0;
}

int sp_recorder_open_process(struct sp_recorder *r, pid_t pid, enum sp_attach_mode mode)
{
	bool stopped = false;
	if (pid <= 0)
		return -SP_E_BAD_ARG;
	for (size_t i = 0; i < r->roots.n; i++)
		if (r->roots.pids[i] == pid)
			return 0;
	size_t first_fd = r->events.nfds;
	int err = open_events(r, pid, mode, &stopped);
	if (!err)
		err = register_process(r, pid, mode, first_fd);
	if (stopped)
		kill(pid, SIGCONT);
	return err;
}

int sp_recorder_refresh_threads(struct sp_recorder *r, pid_t pid)
{
	size_t first_fd = r->events.nfds;
	r->events.attr.enable_on_exec = 0;
	r->events.side_attr.enable_on_exec = 0;
	int added = open_threads(r, pid);
	if (added > 0) {
		name_threads(r, pid);
		int err = sp_events_enable(&r->events, first_fd);
		if (err)
			return err;
	}
	return added;
}

/* Is root i alive?  A pidfd turns readable once the whole thread group has exited. */
static bool root_alive(const struct sp_attached_roots *a, size_t i)
{
	if (a->pidfds[i] < 0)
		return kill(a->pids[i], 0) == 0 || errno == EPERM;
	struct pollfd pfd = {.fd = a->pidfds[i], .events = POLLIN};
	return poll(&pfd, 1, 0) == 0;
}

bool sp_recorder_process_is_active(const struct sp_recorder *r, pid_t pid)
{
	for (size_t i = 0; i < r->roots.n; i++)
		if ((pid <= 0 || r->roots.pids[i] == pid) && root_alive(&r->roots, i))
			return true;
	return false;
}

size_t sp_recorder_active_processes(const struct sp_recorder *r, pid_t *out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < r->roots.n; i++) {
		if (!root_alive(&r->roots, i))
			continue;
		if (out && n < max)
			out[n] = r->roots.pids[i];
		n++;
	}
	return n;
}

bool sp_recorder_has_active_processes_except(const struct sp_recorder *r, pid_t pid)
{
	for (size_t i = 0; i < r->roots.n; i++)
		if (r->roots.pids[i] != pid && root_alive(&r->roots, i))
			return true;
	return false;
}

