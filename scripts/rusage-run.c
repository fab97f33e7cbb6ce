/* SPDX-License-Identifier: MIT */
/*
 * Runs a command and reports what it cost: wall time, user and system CPU and
 * peak resident memory (getrusage's ru_maxrss, from wait4), for
 * scripts/bench and scripts/bench-report where GNU time may be missing.  The
 * figures go to FILE as one line "wall_s=W user_s=U sys_s=S maxrss_kib=K status=N"
 * (microseconds: a warm report takes a few milliseconds).
 *
 * The command is started with posix_spawnp (a vfork-like clone, not a copy
 * of this process) and the clock runs from just before the spawn to just
 * after wait4: what is timed is the command, not a shell or this tool
 * starting up.
 *
 * Built by `make scripts/rusage-run`.
 * Usage: rusage-run FILE COMMAND [ARG...]; exits with the command's status.
 */
#include <errno.h>
#include <spawn.h>
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

/* FILE's line; 0, or 1 when it cannot be written. */
static int write_figures(const char *path, double wall, const struct rusage *ru, int code)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "rusage-run: cannot create '%s': %s\n", path, strerror(errno));
		return 1;
	}
	fprintf(f, "wall_s=%.6f user_s=%.6f sys_s=%.6f maxrss_kib=%ld status=%d\n", wall,
		seconds(ru->ru_utime), seconds(ru->ru_stime), ru->ru_maxrss, code);
	if (fclose(f)) {
		fprintf(stderr, "rusage-run: cannot write '%s': %s\n", path, strerror(errno));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: rusage-run FILE COMMAND [ARG...]\n");
		return 2;
	}
	extern char **environ;
	struct timespec t0, t1;
	struct rusage ru = {0};
	pid_t pid;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int err = posix_spawnp(&pid, argv[2], NULL, NULL, argv + 2, environ);
	if (err) {
		/* As a shell says of a command it cannot run: status 127. */
		fprintf(stderr, "rusage-run: cannot run '%s': %s\n", argv[2], strerror(err));
		return write_figures(argv[1], 0, &ru, 127) ? 1 : 127;
	}
	int status;
	while (wait4(pid, &status, 0, &ru) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "rusage-run: wait4: %s\n", strerror(errno));
			return 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	return write_figures(argv[1], wall, &ru, code) ? 1 : code;
}
