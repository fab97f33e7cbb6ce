// SPDX-License-Identifier: MIT
/*
 * Workload with a known inline chain: main -> hot_caller (noinline) with mix_outer and
 * mix_inner (always_inline) inlined into it, hot in mix_inner.  Built -O2 -g, so the
 * profile's frames inside hot_caller carry the chain mix_inner < mix_outer < hot_caller.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define ALWAYS_INLINE static inline __attribute__((always_inline))
/* Keeps the compiler from merging or tail-calling across a level. */
#define BARRIER() __asm__ __volatile__("" ::: "memory")

/* Durations are CPU time (ITIMER_VIRTUAL), as in chain4. */
static volatile sig_atomic_t stop;

static void on_alarm(int sig)
{
	(void)sig;
	stop = 1;
}

/* The hot loop body: nearly all the CPU time is spent in these instructions. */
ALWAYS_INLINE unsigned long mix_inner(unsigned long x)
{
	for (int i = 0; i < 4096; i++) {
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		__asm__ __volatile__("" : "+r"(x));
	}
	return x;
}

ALWAYS_INLINE unsigned long mix_outer(unsigned long x)
{
	x = mix_inner(x ^ 0x5bd1e995UL);
	__asm__ __volatile__("" : "+r"(x));
	return x;
}

NOINLINE unsigned long hot_caller(unsigned long seed)
{
	unsigned long x = seed;
	while (!stop)
		x = mix_outer(x);
	BARRIER();
	return x;
}

static void usage(void)
{
	fprintf(stderr, "usage: inline_chain [-t SECONDS]\n"
			"Spins in main > hot_caller, hot in mix_inner inlined through mix_outer,\n"
			"for SECONDS of CPU time (default 2).\n");
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

	unsigned long r = hot_caller(42);
	BARRIER();
	printf("inline_chain: done %lx\n", r & 0xff);
	return 0;
}
