// SPDX-License-Identifier: MIT
/*
 * What the JIT workloads (jit_perfmap, jit_dump) share: main -> run_jit ->
 * call_jit calls the generated function again and again, handing it
 * jit_callback, until stop_after's SECONDS of CPU time have passed
 * (ITIMER_VIRTUAL).
 * The caller defines jit_callback.
 */
#ifndef SP_WORKLOAD_JIT_COMMON_H
#define SP_WORKLOAD_JIT_COMMON_H

#include <signal.h>
#include <string.h>
#include <sys/time.h>

#define NOINLINE __attribute__((noinline))

typedef int (*jit_fn)(void (*callback)(void));

void jit_callback(void);

static volatile sig_atomic_t stop;

static void on_alarm(int sig)
{
	(void)sig;
	stop = 1;
}

NOINLINE unsigned long call_jit(jit_fn fn)
{
	unsigned long calls = 0;
	while (!stop) {
		calls += fn(jit_callback) == 0;
		__asm__ __volatile__("" ::: "memory");
	}
	return calls;
}

NOINLINE unsigned long run_jit(jit_fn fn)
{
	unsigned long calls = call_jit(fn);
	__asm__ __volatile__("" ::: "memory");
	return calls;
}

/* Make call_jit return after seconds of CPU time. */
static void stop_after(double seconds)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGVTALRM, &sa, NULL);
	long us = (long)(seconds * 1e6);
	struct itimerval run = {{0, 0}, {us / 1000000, us % 1000000}};
	setitimer(ITIMER_VIRTUAL, &run, NULL);
}

#endif
