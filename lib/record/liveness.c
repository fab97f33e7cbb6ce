/* SPDX-License-Identifier: MIT */
/* Whether a process still runs (pidfd exit watchers, /proc state) and signalling it. */
#include "record/record.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434 /* the same number on every architecture (Linux 5.3) */
#endif

struct sp_exit_watcher {
	int fd;
};

int sp_exit_watcher_new(pid_t pid, struct sp_exit_watcher **out)
{
	/* pidfd_open(0) and negative pids are EINVAL; say what the caller did wrong. */
	if (pid <= 0 || !out)
		return -SP_E_BAD_ARG;
	struct sp_exit_watcher *w = malloc(sizeof(*w));
	if (!w)
		return -ENOMEM;
	/* The kernel sets O_CLOEXEC on every pidfd. */
	long fd = syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0) {
		int err = -errno;
		free(w);
		return err;
	}
	w->fd = (int)fd;
	*out = w;
	return 0;
}

int sp_exit_watcher_poll(struct sp_exit_watcher *w)
{
	/*
	 * The kernel marks a pidfd readable once the whole thread group has
	 * exited (pidfd_poll: thread_group_exited), not when the leader alone
	 * has: a leader that called pthread_exit leaves its process running.
	 */
	struct pollfd p = {.fd = w->fd, .events = POLLIN};
	int r;
	do
		r = poll(&p, 1, 0);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	return r > 0 && (p.revents & (POLLIN | POLLHUP)) ? 1 : 0;
}

int sp_exit_watcher_fd(const struct sp_exit_watcher *w)
{
	return w->fd;
}

void sp_exit_watcher_free(struct sp_exit_watcher *w)
{
	if (!w)
		return;
	close(w->fd);
	free(w);
}

/* The state letter of /proc/PID[/task/TID]/stat: after the last ')', as comm may hold one. */
static char stat_state(const char *path)
{
	char buf[1024];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH ? 'X' : '?';
	ssize_t n;
	do
		n = read(fd, buf, sizeof(buf) - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n <= 0)
		return n < 0 && errno == ESRCH ? 'X' : '?';
	buf[n] = '\0';
	char *close_paren = strrchr(buf, ')');
	if (!close_paren || close_paren[1] != ' ' || !close_paren[2])
		return '?';
	return close_paren[2];
}

static bool dead_state(char s)
{
	return s == 'Z' || s == 'X' || s == 'x';
}

/*
 * A zombie leader may head threads that still run (it called pthread_exit):
 * the process is alive while any other thread's state is not dead.
 */
static bool other_thread_alive(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return false;
	bool alive = false;
	struct dirent *de;
	while (!alive && (de = readdir(d))) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);
		if (*end || tid <= 0 || tid == pid)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%ld/stat", (int)pid, tid);
		alive = !dead_state(stat_state(path));
	}
	closedir(d);
	return alive;
}

bool sp_pid_exists(pid_t pid)
{
	/* kill() reads 0 and negative pids as process groups: never ask about those. */
	if (pid <= 0)
		return false;
	/* EPERM: the process exists but belongs to someone we may not signal. */
	if (kill(pid, 0) != 0 && errno != EPERM)
		return false;
	/* kill() succeeds on zombies, which run nothing; /proc tells them apart. */
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	char s = stat_state(path);
	if (s == '?')
		return true; /* no readable /proc: kill()'s word is all there is */
	if (!dead_state(s))
		return true;
	return s == 'Z' && other_thread_alive(pid);
}

/* kill(2) with a guard: 0 and negative pids would signal whole process groups. */
static int send_signal(pid_t pid, int sig)
{
	if (pid <= 0)
		return -SP_E_BAD_ARG;
	return kill(pid, sig) ? -errno : 0;
}

int sp_pid_interrupt(pid_t pid)
{
	return send_signal(pid, SIGINT);
}

int sp_pid_kill(pid_t pid)
{
	return send_signal(pid, SIGKILL);
}
