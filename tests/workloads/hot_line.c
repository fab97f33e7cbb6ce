// SPDX-License-Identifier: MIT
/*
 * Workload for annotate: divide() has one clearly hot line (a division whose
 * divisor the compiler cannot know) among cheap ones, and mix() calls an
 * inlined helper, scramble(), whose own hot line is a division too.
 * main -> divide, main -> mix -> scramble (inlined).  -t SECONDS of CPU time.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>

#define NOINLINE __attribute__((noinline))

static volatile sig_atomic_t stop;
static volatile unsigned long divisor = 7, sink;

static void on_alarm(int sig)
{
	(void)sig;
	stop = 1;
}

/* Hot line: the 64-bit division; the addition and the loop around it are cheap. */
NOINLINE unsigned long divide(unsigned long n)
{
	unsigned long acc = 0, d = divisor;
	for (unsigned long i = 1; i <= n; i++) {
		acc += i;
		acc = acc / (d + (i & 1)) + (i << 3); /* HOT_DIVIDE */
	}
	return acc;
}

/* Inlined into mix(): its hot line is the division. */
static inline __attribute__((always_inline)) unsigned long scramble(unsigned long x, unsigned long d)
{
	x ^= x >> 7;
	return (x / d) * 0x9e3779b97f4a7c15UL; /* HOT_INLINE */
}

NOINLINE unsigned long mix(unsigned long n)
{
	unsigned long acc = 1, d = divisor + 2;
	for (unsigned long i = 0; i < n; i++)
		acc += scramble(acc + i, d + (i & 3)); /* CALL_INLINE */
	return acc;
}

int main(int argc, char **argv)
{
	double seconds = 2;
	for (int i = 1; i + 1 < argc; i++)
		if (argv[i][0] == '-' && argv[i][1] == 't')
			seconds = atof(argv[i + 1]);
	signal(SIGVTALRM, on_alarm);
	struct itimerval it = {.it_value = {(time_t)seconds,
					    (suseconds_t)((seconds - (time_t)seconds) * 1e6)}};
	setitimer(ITIMER_VIRTUAL, &it, NULL);
	unsigned long total = 0;
	while (!stop) {
		total += divide(200000);
		total += mix(100000);
	}
	sink = total;
	printf("hot_line: %lu\n", total & 0xff);
	return 0;
}
