// SPDX-License-Identifier: MIT
/*
 * Workload of known page-fault split (record -e page-faults, e2e 74):
 * main -> fault_loop -> fault_three touches 3 pages for every page
 * main -> fault_loop -> fault_one touches, each in fresh anonymous memory
 * (huge pages refused, so every page is one fault): 75% of the faults are
 * fault_three's, 25% fault_one's.  The pages per round vary (1 to 128), so
 * no sampling period lines up with the rounds and always lands in one
 * function.  Runs for -t SECONDS of wall time
 * (default 1).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
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

/* One write per page of a fresh mapping of n pages: a page fault each. */
static unsigned long touch(size_t page, size_t n)
{
	volatile char *p = mmap(NULL, n * page, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 0;
	madvise((void *)p, n * page, MADV_NOHUGEPAGE);
	for (size_t i = 0; i < n; i++)
		p[i * page] = 1;
	munmap((void *)p, n * page);
	BARRIER();
	return n;
}

NOINLINE unsigned long fault_three(size_t page, size_t pages)
{
	unsigned long n = touch(page, 3 * pages);
	BARRIER();
	return n;
}

NOINLINE unsigned long fault_one(size_t page, size_t pages)
{
	unsigned long n = touch(page, pages);
	BARRIER();
	return n;
}

NOINLINE unsigned long fault_loop(double until)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	unsigned long pages = 0;
	uint32_t x = 12345;
	while (now_s() < until) {
		x = x * 1103515245u + 12345u; /* a fixed sequence: runs repeat */
		size_t n = 1 + (x >> 16) % 128;
		pages += fault_three(page, n);
		pages += fault_one(page, n);
	}
	BARRIER();
	return pages;
}

int main(int argc, char **argv)
{
	double secs = 1;
	for (int i = 1; i < argc; i++)
		if (argv[i][0] == '-' && argv[i][1] == 't' && i + 1 < argc)
			secs = atof(argv[++i]);
	unsigned long pages = fault_loop(now_s() + secs);
	return pages ? 0 : 1;
}
