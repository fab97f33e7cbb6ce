// SPDX-License-Identifier: MIT
/*
 * Workload whose samples land in a signal handler: a profiling timer interrupts
 * main -> spin_outer -> spin_inner, and on_signal -> handler_work does the heavy work,
 * so the expected stack is handler_work <- on_signal <- __restore_rt <- spin_inner
 * <- spin_outer <- main.
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

/*
 * Durations are CPU time (ITIMER_VIRTUAL), not wall time: the profiler samples CPU
 * time, so a run yields about the same number of samples however busy the machine is.
 */
static volatile sig_atomic_t stop;
static volatile unsigned long handled, last_work;
static unsigned long work_iterations = 3000000;

/* SIGVTALRM ends the run.  It also disarms the profiling timer: when the handler runs
 * longer than the timer period a SIGPROF is always pending, and spin_inner would
 * never get to see the flag. */
static void on_alarm(int sig)
{
	static const struct itimerval off;
	(void)sig;
	setitimer(ITIMER_PROF, &off, NULL);
	stop = 1;
}

NOINLINE unsigned long handler_work(unsigned long n)
{
	unsigned long x = n;
	for (unsigned long i = 0; i < n; i++) {
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		__asm__ __volatile__("" : "+r"(x));
	}
	BARRIER();
	return x;
}

/* SIGPROF handler.  The timer asks for 1 ms but fires on the kernel's tick (every
 * 4 ms at HZ=250); a few ms of work per signal keeps most of the CPU time in here, and
 * where the work outlasts the period the next signal is pending when it returns. */
NOINLINE void on_signal(int sig)
{
	(void)sig;
	handled++;
	last_work = handler_work(work_iterations);
	BARRIER();
}

NOINLINE unsigned long spin_inner(unsigned long seed)
{
	unsigned long x = seed;
	while (!stop) {
		x = x * 2862933555777941757UL + 3037000493UL;
		__asm__ __volatile__("" : "+r"(x));
	}
	BARRIER();
	return x;
}

NOINLINE unsigned long spin_outer(unsigned long seed)
{
	unsigned long r = spin_inner(seed + 1);
	BARRIER();
	return r ^ 1;
}

static void usage(void)
{
	fprintf(stderr, "usage: sighandler [-t SECONDS] [-n HANDLER_ITERATIONS]\n"
			"Spins for SECONDS of CPU time (default 2) under a 1 ms ITIMER_PROF whose\n"
			"SIGPROF handler does HANDLER_ITERATIONS (default 3000000) of busy work.\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned seconds = 2;
	int c;
	while ((c = getopt(argc, argv, "t:n:h")) != -1) {
		if (c == 't')
			seconds = (unsigned)strtoul(optarg, NULL, 10);
		else if (c == 'n')
			work_iterations = strtoul(optarg, NULL, 10);
		else
			usage();
	}
	if (optind != argc || seconds == 0)
		usage();

	/* Each handler blocks the other signal, so they never nest: every handler stack is
	 * exactly handler <- __restore_rt <- spin_inner.  (Unblocked, a SIGPROF pending
	 * during on_alarm's setitimer call runs on top of on_alarm.) */
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGPROF);
	sigaction(SIGVTALRM, &sa, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGVTALRM);
	sigaction(SIGPROF, &sa, NULL);

	struct itimerval prof = {{0, 1000}, {0, 1000}};
	setitimer(ITIMER_PROF, &prof, NULL);
	struct itimerval run = {{0, 0}, {seconds, 0}};
	setitimer(ITIMER_VIRTUAL, &run, NULL);

	unsigned long r = spin_outer(7);
	BARRIER();
	printf("sighandler: %s (%lx)\n", handled ? "handled" : "no signal", (r ^ last_work) & 0xff);
	return 0;
}
