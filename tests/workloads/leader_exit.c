// SPDX-License-Identifier: MIT
/*
 * Workload whose main thread leaves early: main starts N workers, lets them run,
 * spins in main -> leader_work -> leader_leaf for a while, then calls pthread_exit.
 * The workers go on spinning in worker_main -> worker_spin -> worker_leaf; the
 * process exits (status 0) when the last of them returns.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define BARRIER() __asm__ __volatile__("" ::: "memory")
#define MAX_THREADS 64

static atomic_int go;
static double worker_ms = 800;
static volatile unsigned long sink;

/* CPU time of the calling thread (see forker.c); read between rounds of ~0.1 ms. */
static double thread_cpu_ms(void)
{
	struct timespec ts;
	syscall(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void nap_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0)
		;
}

NOINLINE unsigned long worker_leaf(unsigned long x)
{
	for (int i = 0; i < (1 << 20); i++) { /* ~1 ms: the clock syscall stays ~0.1% */
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		__asm__ __volatile__("" : "+r"(x));
	}
	BARRIER();
	return x;
}

NOINLINE unsigned long worker_spin(double ms, unsigned long x)
{
	double end = thread_cpu_ms() + ms;
	while (thread_cpu_ms() < end)
		x = worker_leaf(x);
	BARRIER();
	return x;
}

NOINLINE void *worker_main(void *arg)
{
	while (!atomic_load(&go))
		nap_ms(5);
	sink = worker_spin(worker_ms, (unsigned long)(size_t)arg);
	return NULL;
}

NOINLINE unsigned long leader_leaf(unsigned long x)
{
	for (int i = 0; i < (1 << 20); i++) { /* ~1 ms: the clock syscall stays ~0.1% */
		x = x * 2862933555777941757UL + 3037000493UL;
		__asm__ __volatile__("" : "+r"(x));
	}
	BARRIER();
	return x;
}

NOINLINE unsigned long leader_work(double ms, unsigned long x)
{
	double end = thread_cpu_ms() + ms;
	while (thread_cpu_ms() < end)
		x = leader_leaf(x);
	BARRIER();
	return x;
}

static void usage(void)
{
	fprintf(stderr, "usage: leader_exit [-n WORKERS] [-l LEADER_MS] [-m WORKER_MS] [-g FILE] [-P]\n"
			"Starts WORKERS (default 2) threads, then (once FILE exists, with -g) lets\n"
			"them spin WORKER_MS (default 800) CPU milliseconds each while main spins\n"
			"LEADER_MS (default 200) and calls pthread_exit.  -P prints 'pid PID' once\n"
			"the workers exist.\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned nworkers = 2;
	double leader_ms = 200;
	const char *gate = NULL;
	int print = 0, c;
	while ((c = getopt(argc, argv, "n:l:m:g:Ph")) != -1) {
		switch (c) {
		case 'n': nworkers = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'l': leader_ms = strtod(optarg, NULL); break;
		case 'm': worker_ms = strtod(optarg, NULL); break;
		case 'g': gate = optarg; break;
		case 'P': print = 1; break;
		default: usage();
		}
	}
	if (optind != argc || nworkers == 0 || nworkers > MAX_THREADS)
		usage();

	for (unsigned i = 0; i < nworkers; i++) {
		pthread_t t;
		int err = pthread_create(&t, NULL, worker_main, (void *)(size_t)(i + 1));
		if (err) {
			fprintf(stderr, "leader_exit: pthread_create: %s\n", strerror(err));
			return 1;
		}
		pthread_detach(t);
	}
	if (print) {
		printf("pid %ld\n", (long)getpid());
		fflush(stdout);
	}
	if (gate)
		while (access(gate, F_OK) != 0)
			nap_ms(10);
	atomic_store(&go, 1);
	sink = leader_work(leader_ms, 3);
	/* The process lives on in the workers; its exit status is then 0. */
	pthread_exit(NULL);
}
