/* SPDX-License-Identifier: MIT */
/* Unit tests of lib/util/pace.c: re-reads of a growing file get a tenth of the reader's CPU time. */
#include <criterion/criterion.h>

#include "util/util.h"

#include <time.h>

static void spin_cpu_ms(unsigned ms)
{
	struct timespec a, b;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	do
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	while ((uint64_t)(b.tv_sec - a.tv_sec) * 1000000000 + (uint64_t)b.tv_nsec - (uint64_t)a.tv_nsec <
	       (uint64_t)ms * 1000000);
}

Test(pace, the_first_read_may_start_at_once)
{
	struct sp_pace p = {0};
	uint64_t start;
	cr_expect(sp_pace_begin(&p, &start));
}

/* 20 ms of CPU in a read: no other read for 9 times that. */
Test(pace, a_read_that_used_the_cpu_waits_nine_times_its_cost)
{
	struct sp_pace p = {0};
	uint64_t start;
	cr_assert(sp_pace_begin(&p, &start));
	uint64_t t0 = sp_monotonic_ns();
	spin_cpu_ms(20);
	sp_pace_end(&p, start);
	cr_expect(!sp_pace_begin(&p, &start), "a read at once after a 20 ms one was let in");
	cr_expect_geq(p.next_ns, t0 + 20 * 9 * (uint64_t)1000000, "next read at +%.1f ms",
		      (double)(p.next_ns - t0) / 1e6);
}

/*
 * A read off its CPU (here asleep, on a busy machine waiting for one) costs the
 * reader nothing: the next read is not held back by 9 times the time it waited.
 */
Test(pace, time_off_the_cpu_does_not_hold_the_next_read_back)
{
	struct sp_pace p = {0};
	uint64_t start;
	cr_assert(sp_pace_begin(&p, &start));
	nanosleep(&(struct timespec){0, 100000000}, NULL);
	uint64_t end = sp_monotonic_ns();
	sp_pace_end(&p, start);
	/* 9 x 100 ms would be 900 ms; the sleep's CPU time is far under 10 ms */
	cr_expect_lt(p.next_ns, end + 100 * (uint64_t)1000000, "next read at +%.1f ms",
		     (double)(p.next_ns - end) / 1e6);
}
