// SPDX-License-Identifier: MIT
/*
 * Workload calling back from the C library: main -> sort_many -> qsort -> compare_slow.
 * The comparator is made expensive so samples land in it, below glibc's qsort internals.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define BARRIER() __asm__ __volatile__("" ::: "memory")

#define N_ITEMS 512
/* Rounds of mixing per comparison: the comparator dominates qsort's own work. */
#define ROUNDS 4000

/*
 * Durations are CPU time (ITIMER_VIRTUAL), not wall time: the profiler samples CPU
 * time, so a run yields about the same number of samples however busy the machine is.
 */
static volatile sig_atomic_t stop;

static void on_alarm(int sig)
{
	(void)sig;
	stop = 1;
}

/* The hot callback: derive each key from a slow hash, then compare. */
NOINLINE int compare_slow(const void *pa, const void *pb)
{
	unsigned a = *(const unsigned *)pa, b = *(const unsigned *)pb;
	for (int i = 0; i < ROUNDS; i++) {
		a = a * 2654435761u + 0x9e3779b9u;
		b = b * 2654435761u + 0x9e3779b9u;
		__asm__ __volatile__("" : "+r"(a), "+r"(b));
	}
	BARRIER();
	return (a > b) - (a < b);
}

NOINLINE unsigned long sort_many(unsigned *items, size_t n)
{
	unsigned long rounds = 0;
	unsigned seed = 12345;
	while (!stop) {
		/* Refill deterministically so every round sorts unsorted input. */
		for (size_t i = 0; i < n; i++) {
			seed = seed * 1103515245u + 12345u;
			items[i] = seed >> 8;
		}
		qsort(items, n, sizeof(items[0]), compare_slow);
		rounds++;
	}
	BARRIER();
	return rounds;
}

static void usage(void)
{
	fprintf(stderr, "usage: qsort_cb [-t SECONDS]\n"
			"Sorts with an expensive comparator for SECONDS of CPU time (default 2).\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned seconds = 2;
	int c;
	while ((c = getopt(argc, argv, "t:h")) != -1) {
		if (c == 't')
			seconds = (unsigned)strtoul(optarg, NULL, 10);
		else
			usage();
	}
	if (optind != argc || seconds == 0)
		usage();

	static unsigned items[N_ITEMS];
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGVTALRM, &sa, NULL);
	struct itimerval run = {{0, 0}, {seconds, 0}};
	setitimer(ITIMER_VIRTUAL, &run, NULL);

	unsigned long rounds = sort_many(items, N_ITEMS);
	BARRIER();
	printf("qsort_cb: %s\n", rounds > 0 ? "done" : "no sort finished");
	return 0;
}
