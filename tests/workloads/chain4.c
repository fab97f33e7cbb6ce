// SPDX-License-Identifier: MIT
/* Workload with a known 4-deep call chain: main -> level1 -> level2 -> level3 -> level4 (hot). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
/* Keeps the compiler from merging, inlining or tail-calling across a level. */
#define BARRIER() __asm__ __volatile__("" ::: "memory")

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

/* The hot loop: all the CPU time is spent here, polling a flag set by SIGVTALRM. */
NOINLINE unsigned long level4(unsigned long seed)
{
	unsigned long x = seed;
	while (!stop) {
		for (int i = 0; i < 4096; i++) {
			x = x * 6364136223846793005UL + 1442695040888963407UL;
			__asm__ __volatile__("" : "+r"(x));
		}
	}
	BARRIER();
	return x;
}

NOINLINE unsigned long level3(unsigned long seed)
{
	unsigned long r = level4(seed + 3);
	BARRIER();
	return r ^ 3;
}

NOINLINE unsigned long level2(unsigned long seed)
{
	unsigned long r = level3(seed + 2);
	BARRIER();
	return r ^ 2;
}

NOINLINE unsigned long level1(unsigned long seed)
{
	unsigned long r = level2(seed + 1);
	BARRIER();
	return r ^ 1;
}

static void usage(void)
{
	fprintf(stderr, "usage: chain4 [-t SECONDS]\n"
			"Spins in main > level1 > level2 > level3 > level4 for SECONDS of CPU\n"
			"time (default 2).\n");
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

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGVTALRM, &sa, NULL);
	struct itimerval run = {{0, 0}, {seconds, 0}};
	setitimer(ITIMER_VIRTUAL, &run, NULL);

	unsigned long r = level1(42);
	BARRIER();
	/* Print the result so the computation is observable and cannot be dropped. */
	printf("chain4: done %lx\n", r & 0xff);
	return 0;
}
