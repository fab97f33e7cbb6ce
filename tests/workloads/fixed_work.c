// SPDX-License-Identifier: MIT
/*
 * Fixed amount of work, for measuring how much a profiler slows a program down:
 * main -> fw_descend (DEPTH frames) -> fw_leaf, which the deepest fw_descend calls
 * UNITS times.  The other workloads run for a span of CPU time; this one does the
 * same work every run, so its wall time is what a profiler's overhead stretches.
 * With the default depth of 25 a sample in fw_leaf is 30 frames deep: fw_leaf,
 * 25 fw_descend, main, __libc_start_call_main, __libc_start_main, _start.
 * Prints nothing unless -r is given (then the work's wall and CPU seconds, on stderr).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))
/* Keeps the compiler from merging, inlining or tail-calling across a frame. */
#define BARRIER() __asm__ __volatile__("" ::: "memory")
#define LEAF_STEPS 65536

/* One unit of work: a dependent chain of multiply-adds (about 0.1 ms). */
NOINLINE unsigned long fw_leaf(unsigned long x)
{
	for (int i = 0; i < LEAF_STEPS; i++) {
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		__asm__ __volatile__("" : "+r"(x));
	}
	BARRIER();
	return x;
}

/* depth frames of fw_descend; the deepest runs the units (forever when units is 0). */
NOINLINE unsigned long fw_descend(unsigned depth, unsigned long units, unsigned long x)
{
	unsigned long r;

	if (depth > 1) {
		r = fw_descend(depth - 1, units, x + depth);
	} else {
		r = x;
		for (unsigned long i = 0; units == 0 || i < units; i++)
			r = fw_leaf(r);
	}
	BARRIER();
	return r ^ depth;
}

static volatile unsigned long sink;

static double now(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	unsigned long units = 10000;
	unsigned depth = 25;
	int report = 0, forever = 0, c;
	char *end;

	while ((c = getopt(argc, argv, "n:d:frh")) != -1) {
		switch (c) {
		case 'n':
			units = strtoul(optarg, &end, 10);
			if (*end || units == 0)
				goto usage;
			break;
		case 'd':
			depth = (unsigned)strtoul(optarg, &end, 10);
			if (*end || depth == 0 || depth > 10000)
				goto usage;
			break;
		case 'f': forever = 1; break;
		case 'r': report = 1; break;
		default: goto usage;
		}
	}
	if (optind != argc)
		goto usage;

	double t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
	unsigned long r = fw_descend(depth, forever ? 0 : units, 42);
	double t1 = now(CLOCK_MONOTONIC), c1 = now(CLOCK_PROCESS_CPUTIME_ID);
	sink = r; /* the result is stored, so the work cannot be dropped */
	if (report)
		fprintf(stderr, "elapsed %.6f cpu %.6f\n", t1 - t0, c1 - c0);
	return 0;
usage:
	fprintf(stderr, "usage: fixed_work [-n UNITS] [-d DEPTH] [-f] [-r]\n"
			"Does UNITS (default 10000) units of about 0.1 ms of work in fw_leaf,\n"
			"DEPTH (default 25) fw_descend frames below main; -f: forever (for\n"
			"attaching); -r: print the work's wall and CPU time on stderr\n"
			"(\"elapsed SECONDS cpu SECONDS\").\n"
			"Prints nothing otherwise.\n");
	return 2;
}
