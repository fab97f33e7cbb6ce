/* SPDX-License-Identifier: MIT */
/* Unit tests for the event setup: ring sizes and wakeup watermarks for the sampling rate. */
#include <criterion/criterion.h>
#include <unistd.h>

#include "record/record.h"

/* Ring bytes per CPU and the watermark sp_events_init chose for a rate and stack size. */
static void ring_for(uint32_t hz, uint32_t stack, size_t *bytes, uint32_t *watermark)
{
	struct sp_events e;
	struct sp_record_opts o = {.frequency_hz = hz, .stack_size = stack};
	cr_assert_eq(sp_events_init(&e, &o, false, false, false), 0, "sp_events_init at %u Hz", hz);
	*bytes = e.ring_pages * e.page_size;
	*watermark = e.attr.wakeup_watermark;
	cr_assert(e.attr.watermark, "wakeups by watermark");
	sp_events_release(&e);
}

static bool power_of_two(size_t n)
{
	return n && !(n & (n - 1));
}

/*
 * Each sample reserves the requested stack size in the ring: at 10 kHz and
 * 32 KiB that is 330 MB/s per busy CPU, and a ring of 1 MiB filled in 3 ms,
 * losing samples whenever the recorder waited longer for a CPU.
 */
Test(perf_event, rings_hold_about_100_ms_of_samples)
{
	if (geteuid() != 0)
		cr_skip_test("as an unprivileged user the rings shrink to the locked-memory limit");
	size_t bytes;
	uint32_t wm;
	ring_for(999, 32768, &bytes, &wm);
	cr_assert(power_of_two(bytes / (size_t)sysconf(_SC_PAGESIZE)));
	/* 100 samples of 33 KiB (3.3 MB), rounded up to a power of two. */
	cr_assert_eq(bytes, 4u << 20, "999 Hz: %zu bytes", bytes);
	/* Wakeups cost: wake with 50 ms of samples left free, not at a quarter. */
	uint64_t ms50 = (uint64_t)(32768 + 1024) * 999 / 20;
	cr_assert_eq(wm, bytes - ms50, "999 Hz: watermark %u of %zu bytes", wm, bytes);
	cr_assert_gt(wm, bytes / 2);
	ring_for(10000, 32768, &bytes, &wm);
	cr_assert_eq(bytes, 16u << 20, "10 kHz: capped at 16 MiB, got %zu", bytes);
	/* 50 ms would not fit: a quarter, as much headroom as the ring has. */
	cr_assert_eq(wm, bytes / 4);
	/* Slow rates still hold 32 full samples, and wake at three quarters at most. */
	ring_for(99, 32768, &bytes, &wm);
	cr_assert_geq(bytes, 32u * (32768 + 1024), "99 Hz: %zu bytes", bytes);
	cr_assert_eq(wm, bytes / 4 * 3, "99 Hz: watermark %u of %zu bytes", wm, bytes);
	/* A small stack copy needs a small ring, but never under 256 KiB. */
	ring_for(999, 8, &bytes, &wm);
	cr_assert_eq(bytes, 256u << 10, "8-byte copies: %zu bytes", bytes);
}

Test(perf_event, rates_above_the_kernel_limit_are_refused)
{
	uint32_t max = sp_max_sample_rate();
	if (!max || max == UINT32_MAX)
		cr_skip_test("no readable kernel.perf_event_max_sample_rate");
	struct sp_events e;
	struct sp_record_opts o = {.frequency_hz = max + 1};
	cr_assert_eq(sp_events_init(&e, &o, false, false, false), -SP_E_FREQ_LIMIT);
	sp_events_release(&e);
}
