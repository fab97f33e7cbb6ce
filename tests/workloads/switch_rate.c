// SPDX-License-Identifier: MIT
/*
 * Workload for the off-CPU benchmark (scripts/bench, record --off-cpu): the
 * main thread and a helper pass a byte back and forth over two pipes, each
 * blocking in read until the other writes, so every pass is a switch-out of
 * one thread.  -r RATE paces the passes to about RATE switch-outs a second
 * (0: as fast as they go); -n COUNT passes (default 20000).  Prints the
 * elapsed seconds.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int to_helper[2], to_main[2];

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *helper(void *arg)
{
	(void)arg;
	char c;
	while (read(to_helper[0], &c, 1) == 1)
		if (write(to_main[1], &c, 1) != 1)
			break;
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long rate = 0, count = 20000;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (argv[i][0] == '-' && argv[i][1] == 'r')
			rate = strtoul(argv[i + 1], NULL, 10);
		else if (argv[i][0] == '-' && argv[i][1] == 'n')
			count = strtoul(argv[i + 1], NULL, 10);
	}
	if (pipe(to_helper) || pipe(to_main))
		return 1;
	pthread_t t;
	if (pthread_create(&t, NULL, helper, NULL))
		return 1;
	/* a round trip is two switch-outs: the main thread's and the helper's */
	uint64_t step = rate ? 2000000000u / rate : 0, start = now_ns(), next = start;
	char c = 'x';
	for (unsigned long i = 0; i < count / 2; i++) {
		if (step) {
			next += step;
			while (now_ns() < next)
				;
		}
		if (write(to_helper[1], &c, 1) != 1 || read(to_main[0], &c, 1) != 1)
			return 1;
	}
	double secs = (double)(now_ns() - start) / 1e9;
	close(to_helper[1]);
	pthread_join(t, NULL);
	printf("%.3f\n", secs);
	return 0;
}
