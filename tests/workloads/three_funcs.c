// SPDX-License-Identifier: MIT
/*
 * Three functions doing fixed amounts of work, for report --diff and its gate:
 * main -> tf_run -> parse_input, compute_hash, write_output, each UNITS units
 * (about 0.1 ms of CPU each), compute_hash FACTOR times as many (-x FACTOR,
 * default 1): "a build where compute_hash became FACTOR times slower".
 * Fixed work, not a span of time, so its CPU time is the same under load.
 * Usage: three_funcs [-n UNITS] [-x FACTOR]   (defaults 2000 and 1)
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))
#define BARRIER() __asm__ __volatile__("" ::: "memory")
#define UNIT_STEPS 65536

static NOINLINE unsigned long unit(unsigned long x)
{
	for (int i = 0; i < UNIT_STEPS; i++) {
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		__asm__ __volatile__("" : "+r"(x));
	}
	BARRIER();
	return x;
}

NOINLINE unsigned long parse_input(unsigned long units, unsigned long x)
{
	for (unsigned long i = 0; i < units; i++) {
		for (int k = 0; k < UNIT_STEPS; k++) {
			x = x * 2862933555777941757UL + 3037000493UL;
			__asm__ __volatile__("" : "+r"(x));
		}
	}
	BARRIER();
	return x;
}

NOINLINE unsigned long compute_hash(unsigned long units, unsigned long x)
{
	for (unsigned long i = 0; i < units; i++) {
		for (int k = 0; k < UNIT_STEPS; k++) {
			x = (x ^ (x >> 13)) * 0x9E3779B97F4A7C15UL;
			__asm__ __volatile__("" : "+r"(x));
		}
	}
	BARRIER();
	return x;
}

NOINLINE unsigned long write_output(unsigned long units, unsigned long x)
{
	for (unsigned long i = 0; i < units; i++)
		x = unit(x) + i;
	BARRIER();
	return x;
}

NOINLINE unsigned long tf_run(unsigned long units, unsigned long factor)
{
	unsigned long x = 1, r = 12345;
	/*
	 * Interleaved in slices, so a short recording still sees all three.  The slices are
	 * 1 to 19 units long in a fixed pseudo-random order: equal slices (10 units, about
	 * 1 ms each) made the rounds periodic at a multiple of a 999 Hz sampler's period, and
	 * the samples then fell on the same phase run after run, moving 20% of one function's
	 * samples to another between two identical runs.
	 */
	for (unsigned long done = 0, n; done < units; done += n) {
		r = r * 6364136223846793005UL + 1442695040888963407UL;
		n = 1 + (r >> 33) % 19;
		if (n > units - done)
			n = units - done;
		x = parse_input(n, x);
		x = compute_hash(n * factor, x);
		x = write_output(n, x);
	}
	BARRIER();
	return x;
}

static volatile unsigned long sink;

int main(int argc, char **argv)
{
	unsigned long units = 2000, factor = 1;
	int c;
	while ((c = getopt(argc, argv, "n:x:")) != -1) {
		char *end;
		unsigned long v = strtoul(optarg, &end, 10);
		if (*end || !v || v > 1000000) {
			fprintf(stderr, "three_funcs: bad -%c '%s'\n", c, optarg);
			return 2;
		}
		if (c == 'n')
			units = v;
		else
			factor = v;
	}
	if (optind != argc) {
		fprintf(stderr, "usage: three_funcs [-n UNITS] [-x FACTOR]\n");
		return 2;
	}
	sink = tf_run(units, factor);
	return 0;
}
