/* SPDX-License-Identifier: MIT */
/* Pacing of re-reads of files a target keeps growing (perf maps, jitdumps). */
#include "util/util.h"

#include <time.h>

uint64_t sp_monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

/* CPU time of the calling thread, in ns. */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

bool sp_pace_begin(const struct sp_pace *p, uint64_t *start)
{
	*start = thread_cpu_ns();
	return p->next_ns <= sp_monotonic_ns();
}

void sp_pace_end(struct sp_pace *p, uint64_t start)
{
	uint64_t used = thread_cpu_ns() - start;
	p->next_ns = sp_monotonic_ns() + SP_PACE_SPACING * used;
}
