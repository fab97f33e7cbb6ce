// SPDX-License-Identifier: MIT
/*
 * Workload whose hot function changes with time: phase_one, then phase_two, ... phase_five,
 * each spinning for the same stretch of wall-clock time, with "phase N" printed (and
 * flushed) as each begins.  For the flight recorder: which phases a window holds.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static unsigned long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000 + (unsigned long long)ts.tv_nsec / 1000000;
}

/* Spin until the monotonic clock reaches end_ms. */
#define PHASE(name)                                                              \
	NOINLINE unsigned long name(unsigned long x, unsigned long long end_ms)   \
	{                                                                         \
		while (now_ms() < end_ms) {                                        \
			for (int i = 0; i < 4096; i++) {                           \
				x = x * 6364136223846793005UL + 1442695040888963407UL; \
				__asm__ __volatile__("" : "+r"(x));                \
			}                                                          \
		}                                                                  \
		return x;                                                          \
	}

PHASE(phase_one)
PHASE(phase_two)
PHASE(phase_three)
PHASE(phase_four)
PHASE(phase_five)

int main(int argc, char **argv)
{
	unsigned long ms = 1000;
	int c;
	while ((c = getopt(argc, argv, "m:h")) != -1) {
		if (c == 'm') {
			ms = strtoul(optarg, NULL, 10);
		} else {
			fprintf(stderr, "usage: phases [-m MS]\nSpins in phase_one ... phase_five "
					"for MS ms of wall-clock time each (default 1000).\n");
			return 2;
		}
	}
	unsigned long (*const phase[])(unsigned long, unsigned long long) = {
		phase_one, phase_two, phase_three, phase_four, phase_five};
	unsigned long x = 1;
	unsigned long long start = now_ms();
	for (unsigned i = 0; i < 5; i++) {
		printf("phase %u\n", i + 1);
		fflush(stdout);
		x = phase[i](x, start + (i + 1) * ms);
	}
	printf("phases: done %lu\n", x & 1);
	return 0;
}
