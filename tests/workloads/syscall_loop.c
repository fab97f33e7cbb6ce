// SPDX-License-Identifier: MIT
/*
 * System-call-heavy workload: main -> syscall_loop calls read_zero (1 MiB reads
 * from /dev/zero: the kernel clears the buffer), write_null (64 KiB writes to
 * /dev/null) and get_pid (the raw getpid system call) in turn, so most of its CPU
 * time is spent in the kernel below those functions.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define BARRIER() __asm__ __volatile__("" ::: "memory")
#define READ_SIZE (1 << 20)
#define WRITE_SIZE (1 << 16)

/*
 * Durations are CPU time, user and system together (ITIMER_PROF): this program's
 * time is mostly system time, which ITIMER_VIRTUAL would not count.
 */
static volatile sig_atomic_t stop;
static char *buf;
static int zero_fd, null_fd;

static void on_alarm(int sig)
{
	(void)sig;
	stop = 1;
}

NOINLINE long read_zero(void)
{
	long n = read(zero_fd, buf, READ_SIZE);
	BARRIER();
	return n;
}

NOINLINE long write_null(void)
{
	long n = write(null_fd, buf, WRITE_SIZE);
	BARRIER();
	return n;
}

NOINLINE long get_pid(void)
{
	long n = syscall(SYS_getpid);
	BARRIER();
	return n;
}

NOINLINE unsigned long syscall_loop(void)
{
	unsigned long calls = 0;
	while (!stop) {
		if (read_zero() != READ_SIZE || write_null() != WRITE_SIZE)
			break;
		for (int i = 0; i < 16; i++)
			calls += get_pid() > 0;
		calls += 2;
	}
	BARRIER();
	return calls;
}

int main(int argc, char **argv)
{
	double seconds = 1;
	int c;
	while ((c = getopt(argc, argv, "t:h")) != -1) {
		if (c == 't')
			seconds = strtod(optarg, NULL);
		else
			goto usage;
	}
	if (optind != argc || seconds <= 0)
		goto usage;

	buf = malloc(READ_SIZE);
	zero_fd = open("/dev/zero", O_RDONLY);
	null_fd = open("/dev/null", O_WRONLY);
	if (!buf || zero_fd < 0 || null_fd < 0) {
		perror("syscall_loop: setup");
		return 1;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	long us = (long)(seconds * 1e6);
	struct itimerval run = {{0, 0}, {us / 1000000, us % 1000000}};
	setitimer(ITIMER_PROF, &run, NULL);

	unsigned long calls = syscall_loop();
	printf("syscall_loop: %lu calls\n", calls);
	return 0;
usage:
	fprintf(stderr, "usage: syscall_loop [-t SECONDS]\n"
			"Reads /dev/zero, writes /dev/null and calls getpid for SECONDS\n"
			"(default 1) of CPU time, user and system together.\n");
	return 2;
}
