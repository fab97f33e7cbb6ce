// SPDX-License-Identifier: MIT
/*
 * A hot spot that moves: main -> phase_one spins for the first half of -t
 * SECONDS of wall time (default 6), then main -> phase_two for the second half
 * (stackpulse top must show the change, e2e 71).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define BARRIER() __asm__ __volatile__("" ::: "memory")

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The hot loop, written into each phase so each is its own leaf (no inlined helper). */
#define SPIN_UNTIL(until, seed)                                                          \
	({                                                                               \
		unsigned long x_ = (seed);                                               \
		while (now_s() < (until))                                                \
			for (int i_ = 0; i_ < 4096; i_++) {                              \
				x_ = x_ * 6364136223846793005UL + 1442695040888963407UL; \
				__asm__ __volatile__("" : "+r"(x_));                     \
			}                                                                \
		x_;                                                                      \
	})

NOINLINE unsigned long phase_one(double until)
{
	unsigned long x = SPIN_UNTIL(until, 1);
	BARRIER();
	return x;
}

NOINLINE unsigned long phase_two(double until)
{
	unsigned long x = SPIN_UNTIL(until, 2);
	BARRIER();
	return x;
}

int main(int argc, char **argv)
{
	double seconds = 6;
	int c;
	while ((c = getopt(argc, argv, "t:")) != -1) {
		if (c != 't') {
			fprintf(stderr, "usage: two_phases [-t SECONDS]\n");
			return 2;
		}
		seconds = strtod(optarg, NULL);
	}
	double start = now_s();
	unsigned long x = phase_one(start + seconds / 2);
	x ^= phase_two(start + seconds);
	printf("two_phases: %lx\n", x & 0xff);
	return 0;
}
