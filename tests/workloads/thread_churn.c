// SPDX-License-Identifier: MIT
/*
 * Workload that keeps starting short-lived threads: N threads in all, at most J at a
 * time, each spinning MS CPU milliseconds in churn_thread -> churn_step -> churn_leaf
 * and exiting.  main only creates and joins them.
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
#define MAX_JOBS 64

static double thread_ms = 10;

/* CPU time of the calling thread (see forker.c); read between rounds of ~0.1 ms. */
static double thread_cpu_ms(void)
{
	struct timespec ts;
	syscall(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

NOINLINE unsigned long churn_leaf(unsigned long x)
{
	for (int i = 0; i < (1 << 20); i++) { /* ~1 ms: the clock syscall stays ~0.1% */
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		__asm__ __volatile__("" : "+r"(x));
	}
	BARRIER();
	return x;
}

NOINLINE unsigned long churn_step(double ms, unsigned long x)
{
	double end = thread_cpu_ms() + ms;
	while (thread_cpu_ms() < end)
		x = churn_leaf(x);
	BARRIER();
	return x;
}

NOINLINE void *churn_thread(void *arg)
{
	unsigned long x = churn_step(thread_ms, (unsigned long)(size_t)arg);
	BARRIER();
	return (void *)(size_t)(x & 1);
}

static void usage(void)
{
	fprintf(stderr, "usage: thread_churn [-n THREADS] [-j JOBS] [-m MS]\n"
			"Runs THREADS (default 200) threads, JOBS (default 2) at a time, each\n"
			"spinning MS (default 10) CPU milliseconds in churn_thread > churn_step >\n"
			"churn_leaf.\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned nthreads = 200, jobs = 2;
	int c;
	while ((c = getopt(argc, argv, "n:j:m:h")) != -1) {
		switch (c) {
		case 'n': nthreads = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'j': jobs = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'm': thread_ms = strtod(optarg, NULL); break;
		default: usage();
		}
	}
	if (optind != argc || nthreads == 0 || jobs == 0 || jobs > MAX_JOBS || thread_ms <= 0)
		usage();

	unsigned long ones = 0;
	for (unsigned done = 0; done < nthreads;) {
		pthread_t t[MAX_JOBS];
		unsigned batch = nthreads - done < jobs ? nthreads - done : jobs;
		for (unsigned i = 0; i < batch; i++) {
			int err = pthread_create(&t[i], NULL, churn_thread, (void *)(size_t)(done + i + 1));
			if (err) {
				fprintf(stderr, "thread_churn: pthread_create: %s\n", strerror(err));
				return 1;
			}
		}
		for (unsigned i = 0; i < batch; i++) {
			void *ret;
			pthread_join(t[i], &ret);
			ones += (size_t)ret;
		}
		done += batch;
	}
	printf("thread_churn: %u threads joined (%lu)\n", nthreads, ones & 1);
	return 0;
}
