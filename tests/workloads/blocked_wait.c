// SPDX-License-Identifier: MIT
/*
 * A program that treats EINTR as an error, as many do: one thread spins in
 * busy_leaf (something to sample) while main waits in epoll_wait for -t
 * SECONDS on an epoll set nothing will ever wake.  A stop and continue
 * (SIGSTOP, SIGCONT) makes epoll_wait return EINTR even though no handler
 * ran: the program then says so and exits 3.  Prints "pid PID" first.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile int done;

NOINLINE static unsigned long busy_leaf(unsigned long x)
{
	for (int i = 0; i < 4096; i++) {
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		__asm__ __volatile__("" : "+r"(x));
	}
	return x;
}

static void *spin(void *arg)
{
	unsigned long x = (unsigned long)(size_t)arg;
	while (!done)
		x = busy_leaf(x);
	return (void *)(size_t)(x & 1);
}

int main(int argc, char **argv)
{
	int seconds = 5;
	int c;
	while ((c = getopt(argc, argv, "t:")) != -1) {
		if (c != 't' || (seconds = atoi(optarg)) <= 0) {
			fprintf(stderr, "usage: blocked_wait [-t SECONDS]\n"
					"Waits SECONDS in epoll_wait (a thread spins meanwhile); "
					"exits 3 if the wait is interrupted (EINTR).\n");
			return 2;
		}
	}
	printf("pid %ld\n", (long)getpid());
	fflush(stdout);
	pthread_t t;
	if (pthread_create(&t, NULL, spin, (void *)7))
		return 1;
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		return 1;
	struct epoll_event ev;
	int n = epoll_wait(ep, &ev, 1, seconds * 1000);
	done = 1;
	pthread_join(t, NULL);
	if (n < 0) {
		printf("blocked_wait: epoll_wait: %s\n", strerror(errno));
		return errno == EINTR ? 3 : 1;
	}
	printf("blocked_wait: waited %d s undisturbed\n", seconds);
	return 0;
}
