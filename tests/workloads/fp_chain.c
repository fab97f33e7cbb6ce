// SPDX-License-Identifier: MIT
/*
 * Workload without call-frame information: built (see the Makefile) with frame
 * pointers and without .eh_frame or .debug_frame, like code from toolchains or
 * build flags that emit no unwind tables.  Only a frame-pointer walk finds its
 * callers: main -> fp_level1 -> fp_level2 -> fp_level3 -> fp_leaf (hot).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
/* Keeps the compiler from merging, inlining or tail-calling across a level. */
#define BARRIER() __asm__ __volatile__("" ::: "memory")

/* Durations are CPU time (ITIMER_VIRTUAL), as in chain4. */
static volatile sig_atomic_t stop;

static void on_alarm(int sig)
{
	(void)sig;
	stop = 1;
}

/*
 * Called between rounds so that fp_leaf is no leaf: compilers omit the frame
 * of a leaf even with -fno-omit-frame-pointer (GCC 12 ignores
 * -mno-omit-leaf-frame-pointer here).  Its own rare samples are in a
 * function without a frame, which no frame-pointer walk can prove.
 */
NOINLINE unsigned long fp_round(unsigned long x)
{
	__asm__ __volatile__("" : "+r"(x));
	return x ^ (x >> 17);
}

NOINLINE unsigned long fp_leaf(unsigned long seed)
{
	unsigned long x = seed;
	while (!stop) {
		for (int i = 0; i < 4096; i++) {
			x = x * 6364136223846793005UL + 1442695040888963407UL;
			__asm__ __volatile__("" : "+r"(x));
		}
		x = fp_round(x);
	}
	BARRIER();
	return x;
}

NOINLINE unsigned long fp_level3(unsigned long seed)
{
	unsigned long r = fp_leaf(seed + 3);
	BARRIER();
	return r ^ 3;
}

NOINLINE unsigned long fp_level2(unsigned long seed)
{
	unsigned long r = fp_level3(seed + 2);
	BARRIER();
	return r ^ 2;
}

NOINLINE unsigned long fp_level1(unsigned long seed)
{
	unsigned long r = fp_level2(seed + 1);
	BARRIER();
	return r ^ 1;
}

int main(int argc, char **argv)
{
	unsigned seconds = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 2;
	if (argc > 2 || seconds == 0) {
		fprintf(stderr, "usage: fp_chain [SECONDS]\n"
				"Spins in main > fp_level1 > fp_level2 > fp_level3 > fp_leaf for\n"
				"SECONDS of CPU time (default 2), in code without unwind tables.\n");
		return 2;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGVTALRM, &sa, NULL);
	struct itimerval run = {{0, 0}, {seconds, 0}};
	setitimer(ITIMER_VIRTUAL, &run, NULL);

	unsigned long r = fp_level1(42);
	BARRIER();
	printf("fp_chain: done %lx\n", r & 0xff);
	return 0;
}
