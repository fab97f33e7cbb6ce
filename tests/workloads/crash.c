// SPDX-License-Identifier: MIT
/*
 * Crashing workload: spins MS CPU milliseconds (default 500) in
 * main -> crash_work -> crash_hot, then writes through a NULL pointer in
 * crash_now and dies of SIGSEGV.  Records of it must keep the samples up to the
 * crash and report the command's fate.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define BARRIER() __asm__ __volatile__("" ::: "memory")

/* CPU time, not wall time: the sample count does not depend on the machine's load. */
static double cpu_ms(void)
{
	struct timespec ts;
	syscall(SYS_clock_gettime, CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

NOINLINE unsigned long crash_hot(unsigned long x)
{
	for (int i = 0; i < (1 << 18); i++) {
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		__asm__ __volatile__("" : "+r"(x));
	}
	BARRIER();
	return x;
}

NOINLINE unsigned long crash_work(double ms, unsigned long x)
{
	double end = cpu_ms() + ms;
	while (cpu_ms() < end)
		x = crash_hot(x);
	BARRIER();
	return x;
}

/* The pointer goes through an asm barrier so the compiler cannot see it is NULL. */
NOINLINE void crash_now(unsigned long x)
{
	volatile unsigned long *p = NULL;
	__asm__ __volatile__("" : "+r"(p));
	*p = x;
}

int main(int argc, char **argv)
{
	double ms = argc > 1 ? strtod(argv[1], NULL) : 500;
	if (argc > 2 || ms < 0) {
		fprintf(stderr, "usage: crash [MS]\n"
				"Spins MS (default 500) CPU milliseconds in crash_work > crash_hot,\n"
				"then dies of SIGSEGV writing through a NULL pointer.\n");
		return 2;
	}
	unsigned long x = crash_work(ms, (unsigned long)getpid());
	fflush(stdout);
	crash_now(x);
	return 0;
}
