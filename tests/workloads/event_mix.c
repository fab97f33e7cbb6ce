// SPDX-License-Identifier: MIT
/*
 * Workload for the sampling events other than CPU time (record -e):
 *   -f  main -> fault_loop -> touch_fresh: maps fresh anonymous memory and
 *       writes one byte per page, so nearly every page fault is there;
 *   -n  main -> nap_loop -> take_nap -> nanosleep: sleeps 2 ms at a time, so
 *       nearly every context switch is there.
 * Runs for -t SECONDS of wall time (default 2).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define BARRIER() __asm__ __volatile__("" ::: "memory")
#define REGION (8u << 20)

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One write per page of a fresh mapping: a page fault each. */
NOINLINE unsigned long touch_fresh(size_t page)
{
	volatile char *p = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				-1, 0);
	if (p == MAP_FAILED)
		return 0;
	unsigned long pages = 0;
	for (size_t off = 0; off < REGION; off += page, pages++)
		p[off] = 1;
	munmap((void *)p, REGION);
	BARRIER();
	return pages;
}

NOINLINE unsigned long fault_loop(double until)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	unsigned long pages = 0;
	while (now_s() < until)
		pages += touch_fresh(page);
	BARRIER();
	return pages;
}

NOINLINE void take_nap(void)
{
	struct timespec ts = {0, 2000000};
	nanosleep(&ts, NULL);
	BARRIER();
}

NOINLINE unsigned long nap_loop(double until)
{
	unsigned long naps = 0;
	while (now_s() < until) {
		take_nap();
		naps++;
	}
	BARRIER();
	return naps;
}

int main(int argc, char **argv)
{
	double seconds = 2;
	int mode = 0, c;
	while ((c = getopt(argc, argv, "fnt:")) != -1) {
		if (c == 'f' || c == 'n')
			mode = c;
		else if (c == 't')
			seconds = strtod(optarg, NULL);
		else
			mode = -1;
	}
	if (mode <= 0 || !(seconds > 0)) {
		fprintf(stderr, "usage: event_mix -f|-n [-t SECONDS]\n"
				"-f touches fresh pages in touch_fresh, -n sleeps in take_nap.\n");
		return 2;
	}
	double until = now_s() + seconds;
	unsigned long n = mode == 'f' ? fault_loop(until) : nap_loop(until);
	printf("event_mix: %lu %s\n", n, mode == 'f' ? "pages" : "naps");
	return 0;
}
