// SPDX-License-Identifier: MIT
/*
 * Workload that forks children while it runs.  Without -x each child keeps running
 * the parent's image (no exec) and spins in main -> child_work -> child_leaf; with
 * -x each child execs PROG instead.  The parent spins in main -> parent_work ->
 * parent_leaf for its own share of CPU time, then reaps every child.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define BARRIER() __asm__ __volatile__("" ::: "memory")

/*
 * Durations are CPU time of the calling thread, not wall time: the profiler samples
 * CPU time, so a run yields about the same number of samples however busy the
 * machine is.  The clock is read between rounds of ~0.1 ms, so samples in the clock
 * call itself stay well under 1%; it is read with the raw system call because the
 * vDSO only forwards CPU-time clocks to it anyway, and a vDSO frame would be the one
 * frame of the expected chain outside this program and the C library.
 */
static double thread_cpu_ms(void)
{
	struct timespec ts;
	syscall(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

NOINLINE unsigned long child_leaf(unsigned long x)
{
	for (int i = 0; i < (1 << 20); i++) { /* ~1 ms: the clock syscall stays ~0.1% */
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		__asm__ __volatile__("" : "+r"(x));
	}
	BARRIER();
	return x;
}

/* Spins for ms CPU milliseconds (forever when ms < 0). */
NOINLINE unsigned long child_work(double ms, unsigned long x)
{
	double end = thread_cpu_ms() + ms;
	while (ms < 0 || thread_cpu_ms() < end)
		x = child_leaf(x);
	BARRIER();
	return x;
}

NOINLINE unsigned long parent_leaf(unsigned long x)
{
	for (int i = 0; i < (1 << 20); i++) { /* ~1 ms: the clock syscall stays ~0.1% */
		x = x * 2862933555777941757UL + 3037000493UL;
		__asm__ __volatile__("" : "+r"(x));
	}
	BARRIER();
	return x;
}

NOINLINE unsigned long parent_work(double ms, unsigned long x)
{
	double end = thread_cpu_ms() + ms;
	while (thread_cpu_ms() < end)
		x = parent_leaf(x);
	BARRIER();
	return x;
}

/* Keeps the children's result observable so the work cannot be dropped. */
static volatile unsigned long sink;

static void usage(void)
{
	fprintf(stderr,
		"usage: forker [-n CHILDREN] [-j JOBS] [-m CHILD_MS | -f] [-p PARENT_MS] [-P]\n"
		"       forker [-n CHILDREN] [-j JOBS] [-p PARENT_MS] [-P] -x PROG [ARG...]\n"
		"Forks CHILDREN (default 4) children, at most JOBS (default all) at a time.\n"
		"Each spins CHILD_MS (default 500) CPU milliseconds in child_work > child_leaf\n"
		"without exec (-f: until killed), or with -x execs PROG ARG... instead.\n"
		"The parent spins PARENT_MS (default 0) in parent_work > parent_leaf once\n"
		"the first children run, then reaps them all; it exits 1 when a child failed.\n"
		"Children die with the parent.  -P prints 'pid PID' and 'child PID' lines.\n");
	exit(2);
}

static pid_t spawn(double child_ms, char **prog, unsigned long seed)
{
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "forker: fork: %s\n", strerror(errno));
		exit(1);
	}
	if (pid > 0)
		return pid;
	/* A killed parent must not leave spinning children behind. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (prog) {
		execvp(prog[0], prog);
		fprintf(stderr, "forker: cannot run '%s': %s\n", prog[0], strerror(errno));
		_exit(127);
	}
	sink = child_work(child_ms, seed);
	_exit(0);
}

static int reap_one(void)
{
	int st;
	pid_t p;
	while ((p = wait(&st)) < 0 && errno == EINTR)
		;
	if (p < 0)
		return -1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	unsigned nchildren = 4, jobs = 0;
	double child_ms = 500, parent_ms = 0;
	int print = 0, c;
	char **prog = NULL;
	while ((c = getopt(argc, argv, "+n:j:m:fp:Pxh")) != -1) {
		switch (c) {
		case 'n': nchildren = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'j': jobs = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'm': child_ms = strtod(optarg, NULL); break;
		case 'f': child_ms = -1; break;
		case 'p': parent_ms = strtod(optarg, NULL); break;
		case 'P': print = 1; break;
		case 'x': prog = argv + optind; break;
		default: usage();
		}
		if (prog)
			break;
	}
	if (prog ? !prog[0] : optind != argc)
		usage();
	if (nchildren == 0)
		usage();
	if (jobs == 0 || jobs > nchildren)
		jobs = nchildren;
	if (print) {
		printf("pid %ld\n", (long)getpid());
		fflush(stdout);
	}

	unsigned started = 0, running = 0, failed = 0;
	unsigned long r = 0;
	while (started < nchildren) {
		while (running < jobs && started < nchildren) {
			pid_t pid = spawn(child_ms, prog, started + 1);
			if (print) {
				printf("child %ld\n", (long)pid);
				fflush(stdout);
			}
			started++;
			running++;
		}
		if (parent_ms > 0) {
			r ^= parent_work(parent_ms, 7);
			parent_ms = 0;
		}
		if (started < nchildren) {
			failed += reap_one() != 0;
			running--;
		}
	}
	while (running > 0) {
		failed += reap_one() != 0;
		running--;
	}
	printf("forker: %u children, %u failed (%lx)\n", nchildren, failed, r & 0xf);
	return failed ? 1 : 0;
}
