/* SPDX-License-Identifier: MIT */
/* Pacing of re-reads of files a target keeps growing (perf maps, jitdumps): a tenth of the reader's time at most. */
#include "util/util.h"

#include <time.h>

uint64_t sp_monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

bool sp_pace_begin(const struct sp_pace *p, uint64_t *start_ns)
{
	*start_ns = sp_monotonic_ns();
	return *start_ns >= p->next_ns;
}

void sp_pace_end(struct sp_pace *p, uint64_t start_ns)
{
	uint64_t end = sp_monotonic_ns();
	p->next_ns = end + SP_PACE_SPACING * (end - start_ns);
}
