/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for pidfd exit watchers, sp_pid_exists with zombies and exited
 * leaders, signals, and where a process's perf map is (sp_pid_perf_map_path).
 */
#include <criterion/criterion.h>

#include "stackpulse.h"
#include "util/util.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Above PID_MAX_LIMIT (4194304): no process ever has it. */
#define NEVER_A_PID 4194399

/* A child that sleeps until killed (or 30 s, so a failed test leaves nothing behind). */
static pid_t sleeper(void)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		signal(SIGINT, SIG_DFL); /* whatever the test runner did with it */
		alarm(30);
		for (;;)
			pause();
	}
	return pid;
}

static char proc_state(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = '\0';
	char *p = strrchr(buf, ')');
	return p && p[1] ? p[2] : 0;
}

/* Wait (up to 5 s) until pid's leader is a zombie, without reaping it. */
static void await_zombie(pid_t pid)
{
	for (int i = 0; i < 500 && proc_state(pid) != 'Z'; i++)
		usleep(10000);
	cr_assert_eq(proc_state(pid), 'Z', "pid %d never became a zombie", (int)pid);
}

/* Block (up to 5 s) until the watcher's pidfd is readable. */
static bool await_readable(struct sp_exit_watcher *w)
{
	struct pollfd p = {.fd = sp_exit_watcher_fd(w), .events = POLLIN};
	return poll(&p, 1, 5000) == 1;
}

Test(liveness, watcher_sees_exit_before_reaping)
{
	pid_t pid = sleeper();
	struct sp_exit_watcher *w;
	cr_assert_eq(sp_exit_watcher_new(pid, &w), 0);
	cr_assert_geq(sp_exit_watcher_fd(w), 0);
	cr_expect_eq(sp_exit_watcher_poll(w), 0);
	cr_expect_eq(sp_exit_watcher_poll(w), 0, "polling twice changes nothing");
	cr_assert_eq(kill(pid, SIGKILL), 0);
	cr_assert(await_readable(w));
	/* A zombie runs nothing: exited, although nobody has reaped it yet. */
	cr_expect_eq(proc_state(pid), 'Z');
	cr_expect_eq(sp_exit_watcher_poll(w), 1);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	cr_expect_eq(sp_exit_watcher_poll(w), 1, "still exited once reaped");
	sp_exit_watcher_free(w);
	sp_exit_watcher_free(NULL);
}

Test(liveness, watcher_needs_a_process)
{
	struct sp_exit_watcher *w = NULL;
	cr_expect_eq(sp_exit_watcher_new(NEVER_A_PID, &w), -ESRCH);
	cr_expect_null(w);
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	cr_expect_eq(sp_exit_watcher_new(pid, &w), -ESRCH);
	cr_expect_eq(sp_exit_watcher_new(0, &w), -SP_E_BAD_ARG);
	cr_expect_eq(sp_exit_watcher_new(-1, &w), -SP_E_BAD_ARG);
	cr_expect_null(w);
}

/* ---- a leader that calls pthread_exit while another thread runs for 1 s ---- */

static int ready_pipe[2];

static void *sleep_one_second(void *arg)
{
	sleep(1);
	return arg; /* the last thread: the process exits with status 0 */
}

static pid_t exited_leader(void)
{
	cr_assert_eq(pipe(ready_pipe), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		pthread_t th;
		if (pthread_create(&th, NULL, sleep_one_second, NULL))
			_exit(2);
		char c = 1;
		if (write(ready_pipe[1], &c, 1) != 1)
			_exit(3);
		pthread_exit(NULL);
	}
	close(ready_pipe[1]);
	char c;
	cr_assert_eq(read(ready_pipe[0], &c, 1), 1);
	close(ready_pipe[0]);
	return pid;
}

Test(liveness, exited_leader_with_running_thread_is_running)
{
	pid_t pid = exited_leader();
	struct sp_exit_watcher *w;
	cr_assert_eq(sp_exit_watcher_new(pid, &w), 0);
	await_zombie(pid);
	/* The leader is a zombie, but its thread runs: neither counts it exited. */
	cr_expect_eq(sp_exit_watcher_poll(w), 0);
	cr_expect(sp_pid_exists(pid), "a process with a running thread exists");
	/* Once the thread ends, the whole group has exited. */
	cr_assert(await_readable(w), "pidfd not readable after the last thread ended");
	cr_expect_eq(sp_exit_watcher_poll(w), 1);
	cr_expect_not(sp_pid_exists(pid), "an unreaped zombie does not exist");
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x", status);
	sp_exit_watcher_free(w);
}

/* A watcher made after the leader exited still waits for the other threads. */
Test(liveness, watcher_opened_on_a_zombie_leader)
{
	pid_t pid = exited_leader();
	await_zombie(pid);
	struct sp_exit_watcher *w;
	cr_assert_eq(sp_exit_watcher_new(pid, &w), 0);
	cr_expect_eq(sp_exit_watcher_poll(w), 0);
	cr_assert(await_readable(w));
	cr_expect_eq(sp_exit_watcher_poll(w), 1);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	sp_exit_watcher_free(w);
}

Test(liveness, pid_exists)
{
	cr_expect(sp_pid_exists(getpid()));
	cr_expect(sp_pid_exists(1), "init exists (EPERM counts as existing for non-root)");
	cr_expect_not(sp_pid_exists(0));
	cr_expect_not(sp_pid_exists(-1));
	cr_expect_not(sp_pid_exists(NEVER_A_PID));

	pid_t pid = sleeper();
	cr_expect(sp_pid_exists(pid));
	cr_assert_eq(kill(pid, SIGKILL), 0);
	await_zombie(pid);
	cr_expect_not(sp_pid_exists(pid), "zombie counted as existing");
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	cr_expect_not(sp_pid_exists(pid), "reaped process counted as existing");
}

Test(liveness, interrupt_sends_sigint)
{
	pid_t pid = sleeper();
	cr_assert_eq(sp_pid_interrupt(pid), 0);
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT, "status %#x", status);
	cr_expect_eq(sp_pid_interrupt(pid), -ESRCH);
	cr_expect_eq(sp_pid_interrupt(NEVER_A_PID), -ESRCH);
}

Test(liveness, kill_sends_sigkill)
{
	/* SIGKILL, not something the child could catch: it ignores SIGINT and SIGTERM. */
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		alarm(30);
		for (;;)
			pause();
	}
	cr_assert_eq(sp_pid_kill(pid), 0);
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "status %#x", status);
	cr_expect_eq(sp_pid_kill(pid), -ESRCH);
}

/* 0 and -1 would signal our process group or every process: refused. */
Test(liveness, never_signals_groups)
{
	cr_expect_eq(sp_pid_interrupt(0), -SP_E_BAD_ARG);
	cr_expect_eq(sp_pid_interrupt(-1), -SP_E_BAD_ARG);
	cr_expect_eq(sp_pid_kill(0), -SP_E_BAD_ARG);
	cr_expect_eq(sp_pid_kill(-1), -SP_E_BAD_ARG);
	cr_expect_eq(sp_pid_kill(-getpid()), -SP_E_BAD_ARG);
}

/* ---- where a perf map is ---------------------------------------------------- */

Test(liveness, own_perf_map_is_in_our_tmp)
{
	char path[128];
	int32_t nspid = -1;
	cr_expect_eq(sp_pid_perf_map_path(getpid(), path, sizeof(path), &nspid), 0);
	cr_expect_eq(nspid, -1, "untouched when the map is the usual /tmp/perf-PID.map");
	cr_expect_eq(sp_pid_perf_map_path(NEVER_A_PID, path, sizeof(path), &nspid), -SP_E_NO_PROCESS);
}

/*
 * A process in a new PID and mount namespace (a container's): its map is in
 * its own /tmp, under its own pid there (1, the namespace's first process).
 */
Test(liveness, perf_map_of_a_process_in_a_container)
{
	int fds[2];
	cr_assert_eq(pipe(fds), 0);
	pid_t child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		pid_t inner = -1;
		if (!unshare(CLONE_NEWPID | CLONE_NEWNS)) {
			inner = fork();
			if (inner == 0) {
				alarm(30);
				for (;;)
					pause();
			}
		}
		/* fork(2) answers with the pid in our namespace: the host's. */
		if (write(fds[1], &inner, sizeof(inner)) != sizeof(inner))
			_exit(1);
		alarm(30);
		for (;;)
			pause();
	}
	pid_t inner = -1;
	cr_assert_eq(read(fds[0], &inner, sizeof(inner)), (ssize_t)sizeof(inner));
	if (inner <= 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		cr_skip_test("unshare(CLONE_NEWPID | CLONE_NEWNS) is refused here (not root, or no namespaces)");
	}
	char path[128];
	int32_t nspid = -1;
	int where = sp_pid_perf_map_path(inner, path, sizeof(path), &nspid);
	char want[128];
	snprintf(want, sizeof(want), "/proc/%d/root/tmp/perf-1.map", (int)inner);
	kill(inner, SIGKILL);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	cr_expect_eq(where, 1);
	cr_expect_eq(nspid, 1);
	cr_expect_str_eq(path, want);
	cr_expect_eq(sp_pid_perf_map_path(getpid(), path, 8, &nspid), 0, "our own map needs no buffer");
}
