/* SPDX-License-Identifier: MIT */
/* Starting a command suspended before execve, so events can switch on at its exec. */
#include "record/record.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct sp_launch {
	pid_t pid;
	int go_fd;   /* write end: one byte lets the child exec */
	int err_fd;  /* read end: the child's execve errno, or EOF on success */
	bool started, reaped;
	int status; /* wait(2) status once reaped */
};

int sp_launch_suspended(char *const argv[], struct sp_launch **out)
{
	int go[2], err[2];
	if (!argv || !argv[0])
		return -SP_E_BAD_ARG;
	struct sp_launch *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	if (pipe2(go, O_CLOEXEC)) {
		free(l);
		return -errno;
	}
	if (pipe2(err, O_CLOEXEC)) {
		int e = -errno;
		close(go[0]);
		close(go[1]);
		free(l);
		return e;
	}
	pid_t pid = fork();
	if (pid < 0) {
		int e = -errno;
		close(go[0]);
		close(go[1]);
		close(err[0]);
		close(err[1]);
		free(l);
		return e;
	}
	if (pid == 0) {
		/* Child: wait for the go byte; EOF means the parent gave up. */
		char c;
		close(go[1]);
		close(err[0]);
		ssize_t n;
		do
			n = read(go[0], &c, 1);
		while (n < 0 && errno == EINTR);
		if (n != 1)
			_exit(127);
		execvp(argv[0], argv);
		int e = errno;
		ssize_t w = write(err[1], &e, sizeof(e));
		(void)w;
		_exit(127);
	}
	close(go[0]);
	close(err[1]);
	l->pid = pid;
	l->go_fd = go[1];
	l->err_fd = err[0];
	*out = l;
	return 0;
}

pid_t sp_launch_pid(const struct sp_launch *l)
{
	return l->pid;
}

int sp_launch_start(struct sp_launch *l)
{
	char c = 1;
	if (l->started)
		return 0;
	l->started = true;
	ssize_t n = write(l->go_fd, &c, 1);
	close(l->go_fd);
	l->go_fd = -1;
	if (n != 1)
		return -EPIPE;
	/* The error pipe closes on a successful exec (CLOEXEC). */
	int e = 0;
	do
		n = read(l->err_fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(l->err_fd);
	l->err_fd = -1;
	return n == (ssize_t)sizeof(e) ? -e : 0;
}

int sp_launch_try_wait(struct sp_launch *l, int *status)
{
	if (!l->reaped) {
		pid_t r;
		do
			r = waitpid(l->pid, &l->status, WNOHANG);
		while (r < 0 && errno == EINTR);
		if (r < 0)
			return -errno;
		if (r == 0)
			return 0;
		l->reaped = true;
	}
	if (status)
		*status = l->status;
	return 1;
}

void sp_launch_free(struct sp_launch *l)
{
	if (!l)
		return;
	if (!l->started && !l->reaped) {
		kill(l->pid, SIGKILL);
		waitpid(l->pid, NULL, 0);
	}
	if (l->go_fd >= 0)
		close(l->go_fd);
	if (l->err_fd >= 0)
		close(l->err_fd);
	free(l);
}
