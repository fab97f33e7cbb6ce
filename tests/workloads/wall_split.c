// SPDX-License-Identifier: MIT
/*
 * Workload of known wall-clock split (record --off-cpu, e2e 73): the main
 * thread loops
 *   burn_cpu      20 ms on CPU (a clock loop),
 *   sleep_nano    40 ms in nanosleep,
 *   wait_pipe     20 ms blocked reading a pipe a helper thread writes,
 * so its wall time is 25% burn_cpu, 50% sleep_nano, 25% wait_pipe.  Runs
 * for -t SECONDS (default 2).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define BARRIER() __asm__ __volatile__("" ::: "memory")

static int pipe_fd[2];

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

NOINLINE unsigned long burn_cpu(uint64_t ns)
{
	uint64_t until = now_ns() + ns;
	unsigned long x = 1;
	while (now_ns() < until)
		for (int i = 0; i < 1000; i++) {
			x = x * 6364136223846793005UL + 1442695040888963407UL;
			__asm__ __volatile__("" : "+r"(x));
		}
	return x;
}

NOINLINE void sleep_nano(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
	while (nanosleep(&ts, &ts))
		;
	BARRIER();
}

NOINLINE void wait_pipe(void)
{
	char c;
	while (read(pipe_fd[0], &c, 1) < 0)
		;
	BARRIER();
}

/* The helper: 20 ms after each request, one byte down the pipe. */
static int req_fd[2];

static void *helper(void *arg)
{
	(void)arg;
	char c;
	while (read(req_fd[0], &c, 1) == 1) {
		struct timespec ts = {0, 20000000};
		nanosleep(&ts, NULL);
		if (write(pipe_fd[1], &c, 1) != 1)
			break;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = 2;
	for (int i = 1; i < argc; i++)
		if (argv[i][0] == '-' && argv[i][1] == 't' && i + 1 < argc)
			secs = atof(argv[++i]);
	if (pipe(pipe_fd) || pipe(req_fd))
		return 1;
	pthread_t t;
	if (pthread_create(&t, NULL, helper, NULL))
		return 1;
	uint64_t until = now_ns() + (uint64_t)(secs * 1e9);
	unsigned long x = 0;
	while (now_ns() < until) {
		x += burn_cpu(20000000);
		sleep_nano(40000000);
		char c = 'x';
		if (write(req_fd[1], &c, 1) != 1)
			return 1;
		wait_pipe();
	}
	close(req_fd[1]);
	pthread_join(t, NULL);
	return x == 42; /* never: keeps burn_cpu's result alive */
}
