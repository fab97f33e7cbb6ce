// SPDX-License-Identifier: MIT
/*
 * Workload with a stack deeper than any copied stack window: main -> deep_recurse
 * (DEPTH frames, each holding a 1.5 KiB local array) -> deep_leaf, which spins.
 * 60 frames of 1.5 KiB is about 90 KiB of stack between the leaf and main.
 * tests/e2e/18-deep.sh builds it with and without frame pointers.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define BARRIER() __asm__ __volatile__("" ::: "memory")
#define FRAME_BYTES 1536

/* Durations are CPU time (ITIMER_VIRTUAL), as in chain4.c. */
static volatile sig_atomic_t stop;

static void on_alarm(int sig)
{
	(void)sig;
	stop = 1;
}

/* Writes into a frame's array through a call, so the array must exist on the stack. */
NOINLINE void fill(char *a, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i += 64)
		a[i] = (char)(seed + i);
	BARRIER();
}

NOINLINE unsigned long deep_leaf(unsigned long x)
{
	while (!stop) {
		for (int i = 0; i < 4096; i++) {
			x = x * 6364136223846793005UL + 1442695040888963407UL;
			__asm__ __volatile__("" : "+r"(x));
		}
	}
	BARRIER();
	return x;
}

/* depth frames of deep_recurse, then the leaf; the array is read after the call,
 * so the call is not a tail call and the frame stays. */
NOINLINE unsigned long deep_recurse(unsigned depth, unsigned long x)
{
	char frame[FRAME_BYTES];
	fill(frame, sizeof(frame), depth);
	unsigned long r = depth > 1 ? deep_recurse(depth - 1, x + depth) : deep_leaf(x);
	BARRIER();
	return r + (unsigned char)frame[(depth * 64) % FRAME_BYTES];
}

int main(int argc, char **argv)
{
	unsigned seconds = 1, depth = 60;
	int c;
	while ((c = getopt(argc, argv, "t:d:h")) != -1) {
		switch (c) {
		case 't': seconds = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'd': depth = (unsigned)strtoul(optarg, NULL, 10); break;
		default: goto usage;
		}
	}
	if (optind != argc || seconds == 0 || depth == 0 || depth > 10000)
		goto usage;

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGVTALRM, &sa, NULL);
	struct itimerval run = {{0, 0}, {seconds, 0}};
	setitimer(ITIMER_VIRTUAL, &run, NULL);

	unsigned long r = deep_recurse(depth, 42);
	BARRIER();
	printf("deep_recursion: depth %u done %lx\n", depth, r & 0xff);
	return 0;
usage:
	fprintf(stderr, "usage: deep_recursion [-t SECONDS] [-d DEPTH]\n"
			"Recurses DEPTH (default 60) frames of 1.5 KiB deep through deep_recurse\n"
			"and spins in deep_leaf for SECONDS (default 1) of CPU time.\n");
	return 2;
}
