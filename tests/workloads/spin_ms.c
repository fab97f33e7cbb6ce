// SPDX-License-Identifier: MIT
/*
 * Short-lived workload: spins MS CPU milliseconds in main -> spin_outer -> spin_leaf
 * and exits.  Many of them in a row (forker -x) make a stream of short processes,
 * each with its own image.  With -w it first waits for SIGUSR1: started before a
 * recording and signalled once it runs, it is sampled only in its last moments.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define BARRIER() __asm__ __volatile__("" ::: "memory")

/* CPU time, not wall time (see forker.c); read between rounds of ~0.1 ms. */
static double cpu_ms(void)
{
	struct timespec ts;
	syscall(SYS_clock_gettime, CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

NOINLINE unsigned long spin_leaf(unsigned long x)
{
	for (int i = 0; i < (1 << 20); i++) { /* ~1 ms: the clock syscall stays ~0.1% */
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		__asm__ __volatile__("" : "+r"(x));
	}
	BARRIER();
	return x;
}

NOINLINE unsigned long spin_outer(double ms, unsigned long x)
{
	double end = cpu_ms() + ms;
	while (cpu_ms() < end)
		x = spin_leaf(x);
	BARRIER();
	return x;
}

int main(int argc, char **argv)
{
	bool wait = argc > 1 && !strcmp(argv[1], "-w");
	argc -= wait;
	argv += wait;
	double ms = argc > 1 ? strtod(argv[1], NULL) : 20;
	if (argc > 2 || ms <= 0) {
		fprintf(stderr, "usage: spin_ms [-w] [MS]\n"
				"Spins MS (default 20) CPU milliseconds in spin_outer > spin_leaf;\n"
				"with -w, once SIGUSR1 has come.\n");
		return 2;
	}
	sigset_t usr1;
	int sig;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	if (wait && (sigprocmask(SIG_BLOCK, &usr1, NULL) || sigwait(&usr1, &sig)))
		return 1;
	unsigned long r = spin_outer(ms, 42);
	BARRIER();
	return (int)(r == 1); /* 0 unless the LCG lands on 1; keeps r observable */
}
