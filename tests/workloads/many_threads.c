// SPDX-License-Identifier: MIT
/*
 * Many threads alive together: main starts N threads (default 1000); each waits
 * until all exist, spins MS CPU milliseconds (default 10) in many_work >
 * many_leaf, then waits again until all have spun, so every thread is alive for
 * the whole busy phase.  Thread stacks are small (64 KiB) so 1,000 fit anywhere.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define BARRIER() __asm__ __volatile__("" ::: "memory")

static double spin_ms = 10;
static pthread_barrier_t all_started, all_done;

/* This thread's CPU time, read with the raw system call (see forker.c). */
static double thread_cpu_ms(void)
{
	struct timespec ts;
	syscall(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

NOINLINE unsigned long many_leaf(unsigned long x)
{
	for (int i = 0; i < (1 << 16); i++) {
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		__asm__ __volatile__("" : "+r"(x));
	}
	BARRIER();
	return x;
}

NOINLINE void *many_work(void *arg)
{
	unsigned long x = (unsigned long)(size_t)arg;
	pthread_barrier_wait(&all_started);
	double end = thread_cpu_ms() + spin_ms;
	while (thread_cpu_ms() < end)
		x = many_leaf(x);
	pthread_barrier_wait(&all_done);
	BARRIER();
	return (void *)(size_t)(x & 1);
}

int main(int argc, char **argv)
{
	int n = 1000, c;
	while ((c = getopt(argc, argv, "n:m:")) != -1) {
		if (c == 'n')
			n = atoi(optarg);
		else if (c == 'm')
			spin_ms = strtod(optarg, NULL);
		else
			n = -1;
	}
	if (n < 1 || n > 100000 || spin_ms < 0 || optind != argc) {
		fprintf(stderr, "usage: many_threads [-n THREADS] [-m MS]\n"
				"Starts THREADS (default 1000) threads that wait for each other, each\n"
				"spin MS (default 10) CPU milliseconds in many_work > many_leaf, and\n"
				"wait for each other again before exiting.\n");
		return 2;
	}
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	pthread_attr_t attr;
	if (!t || pthread_attr_init(&attr) || pthread_attr_setstacksize(&attr, 64 * 1024))
		return 1;
	pthread_barrier_init(&all_started, NULL, (unsigned)n + 1);
	pthread_barrier_init(&all_done, NULL, (unsigned)n);
	for (int i = 0; i < n; i++) {
		int err = pthread_create(&t[i], &attr, many_work, (void *)(size_t)(i + 1));
		if (err) {
			fprintf(stderr, "many_threads: thread %d of %d: %s\n", i + 1, n, strerror(err));
			_exit(1);
		}
	}
	pthread_barrier_wait(&all_started);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("many_threads: %d threads joined\n", n);
	free(t);
	return 0;
}
