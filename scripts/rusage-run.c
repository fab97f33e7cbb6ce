/* SPDX-License-Identifier: MIT */
/*
 * Runs a command and reports what it cost: wall time, user and system CPU and
 * peak resident memory (getrusage's ru_maxrss, from wait4), for
 * scripts/bench-report where GNU time may be missing.  The figures go to FILE
 * as one line "wall_s=W user_s=U sys_s=S maxrss_kib=K status=N".
 *
 * Built by `make scripts/rusage-run`.
 * Usage: rusage-run FILE COMMAND [ARG...]; exits with the command's status.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double seconds(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: rusage-run FILE COMMAND [ARG...]\n");
		return 2;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "rusage-run: cannot fork: %s\n", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		fprintf(stderr, "rusage-run: cannot run '%s': %s\n", argv[2], strerror(errno));
		_exit(127);
	}
	int status;
	struct rusage ru;
	while (wait4(pid, &status, 0, &ru) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "rusage-run: wait4: %s\n", strerror(errno));
			return 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	FILE *f = fopen(argv[1], "w");
	if (!f) {
		fprintf(stderr, "rusage-run: cannot create '%s': %s\n", argv[1], strerror(errno));
		return 1;
	}
	fprintf(f, "wall_s=%.3f user_s=%.3f sys_s=%.3f maxrss_kib=%ld status=%d\n",
		(double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
		seconds(ru.ru_utime), seconds(ru.ru_stime), ru.ru_maxrss, code);
	if (fclose(f)) {
		fprintf(stderr, "rusage-run: cannot write '%s': %s\n", argv[1], strerror(errno));
		return 1;
	}
	return code;
}
