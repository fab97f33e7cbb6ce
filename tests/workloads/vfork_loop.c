// SPDX-License-Identifier: MIT
/*
 * Workload for the odd frames of process creation: main -> spawn_round ->
 * vfork, whose child _exits at once, and -> exec_round -> a forked child
 * that execs itself with "-x" (exits at once), so samples land in glibc's
 * __vfork (its return address lives in rdi across the syscall) and inside
 * execve (the registers still hold the old image's pc).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static NOINLINE void spawn_round(void)
{
	pid_t pid = vfork();
	if (pid == 0)
		_exit(0);
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

static NOINLINE void exec_round(const char *self)
{
	pid_t pid = fork();
	if (pid == 0) {
		execl(self, self, "-x", (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "-x"))
		return 0;
	double seconds = argc > 1 ? atof(argv[1]) : 1;
	if (argc > 2 || seconds <= 0) {
		fprintf(stderr, "usage: vfork_loop [SECONDS]\n"
				"vforks and forks + execs itself in a loop for SECONDS of wall\n"
				"time (default 1).\n");
		return 2;
	}
	unsigned rounds = 0;
	for (double end = now() + seconds; now() < end; rounds++) {
		spawn_round();
		exec_round("/proc/self/exe");
	}
	printf("vfork_loop: %u rounds\n", rounds);
	return 0;
}
