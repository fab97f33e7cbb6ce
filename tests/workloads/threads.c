// SPDX-License-Identifier: MIT
/*
 * Multi-threaded workload: main starts N named threads running
 * worker -> worker_step -> worker_leaf (busy) and joins them.  With -f the workers
 * run until the process is killed, for attaching with record -p.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define BARRIER() __asm__ __volatile__("" ::: "memory")
#define MAX_THREADS 64

/*
 * Durations are CPU time (ITIMER_VIRTUAL), not wall time: the profiler samples CPU
 * time, so a run yields about the same number of samples however busy the machine is.
 */
static volatile sig_atomic_t stop;

static void on_alarm(int sig)
{
	(void)sig;
	stop = 1;
}

NOINLINE unsigned long worker_leaf(unsigned long x)
{
	for (int i = 0; i < 4096; i++) {
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		__asm__ __volatile__("" : "+r"(x));
	}
	BARRIER();
	return x;
}

NOINLINE unsigned long worker_step(unsigned long x)
{
	while (!stop)
		x = worker_leaf(x);
	BARRIER();
	return x;
}

NOINLINE void *worker(void *arg)
{
	unsigned long x = worker_step((unsigned long)(size_t)arg);
	BARRIER();
	return (void *)(size_t)(x & 1);
}

static void usage(void)
{
	fprintf(stderr, "usage: threads [-n THREADS] [-t SECONDS | -f] [-P]\n"
			"Runs THREADS (default 3) busy worker threads named worker-N for SECONDS\n"
			"of CPU time, all threads together (default 2), or forever with -f.\n"
			"-P prints 'pid PID' once all threads run.\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned seconds = 2, nthreads = 3;
	int forever = 0, print_pid = 0, c;
	while ((c = getopt(argc, argv, "n:t:fPh")) != -1) {
		switch (c) {
		case 'n': nthreads = (unsigned)strtoul(optarg, NULL, 10); break;
		case 't': seconds = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'f': forever = 1; break;
		case 'P': print_pid = 1; break;
		default: usage();
		}
	}
	if (optind != argc || nthreads == 0 || nthreads > MAX_THREADS || (!forever && seconds == 0))
		usage();

	if (!forever) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_alarm;
		sigaction(SIGVTALRM, &sa, NULL);
		struct itimerval run = {{0, 0}, {seconds, 0}};
		setitimer(ITIMER_VIRTUAL, &run, NULL);
	}

	pthread_t tids[MAX_THREADS];
	for (unsigned i = 0; i < nthreads; i++) {
		int err = pthread_create(&tids[i], NULL, worker, (void *)(size_t)(i + 1));
		if (err) {
			fprintf(stderr, "threads: pthread_create: %s\n", strerror(err));
			return 1;
		}
		char name[16];
		snprintf(name, sizeof(name), "worker-%u", i);
		pthread_setname_np(tids[i], name);
	}
	if (print_pid) {
		printf("pid %ld\n", (long)getpid());
		fflush(stdout);
	}
	unsigned long ones = 0;
	for (unsigned i = 0; i < nthreads; i++) {
		void *ret;
		pthread_join(tids[i], &ret);
		ones += (size_t)ret;
	}
	printf("threads: %u joined (%lu)\n", nthreads, ones > nthreads ? 0UL : 1UL);
	return 0;
}
