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

/* -e and -c: perf's names (and aliases) give the event's type and config; a period replaces the frequency. */
Test(perf_event, events_by_name_and_period)
{
	struct sp_events e;
	struct sp_record_opts o = {.event = "page-faults", .period = 100};
	cr_assert_eq(sp_events_init(&e, &o, false, false, false), 0);
	cr_assert_eq(e.attr.type, PERF_TYPE_SOFTWARE);
	cr_assert_eq(e.attr.config, PERF_COUNT_SW_PAGE_FAULTS);
	cr_assert_eq(e.attr.freq, 0);
	cr_assert_eq(e.attr.sample_period, 100);
	cr_assert_eq(e.source, SP_EVENT_PAGE_FAULTS);
	cr_assert(e.source_chosen, "a named event never falls back");
	sp_events_release(&e);

	o = (struct sp_record_opts){.event = "cs"};
	cr_assert_eq(sp_events_init(&e, &o, false, false, false), 0);
	cr_assert_eq(e.attr.config, PERF_COUNT_SW_CONTEXT_SWITCHES);
	cr_assert_eq(e.attr.freq, 1);
	cr_assert_eq(e.attr.sample_freq, SP_DEFAULT_FREQUENCY);
	sp_events_release(&e);

	o = (struct sp_record_opts){.event = "instructions"};
	cr_assert_eq(sp_events_init(&e, &o, false, false, false), 0);
	cr_assert_eq(e.attr.type, PERF_TYPE_HARDWARE);
	cr_assert_eq(e.attr.config, PERF_COUNT_HW_INSTRUCTIONS);
	sp_events_release(&e);

	o = (struct sp_record_opts){.event = "cpu-cycle"};
	cr_assert_eq(sp_events_init(&e, &o, false, false, false), -SP_E_BAD_ARG);
	sp_events_release(&e);

	/* The default: cycles, which may still fall back to cpu-clock. */
	o = (struct sp_record_opts){0};
	cr_assert_eq(sp_events_init(&e, &o, false, false, false), 0);
	cr_assert_eq(e.source, SP_EVENT_CYCLES);
	cr_assert_not(e.source_chosen);
	sp_events_release(&e);
}

/* A period high enough for any frequency limit is not refused by it. */
Test(perf_event, a_period_is_not_held_to_the_rate_limit)
{
	uint32_t max = sp_max_sample_rate();
	if (!max || max == UINT32_MAX)
		cr_skip_test("no readable kernel.perf_event_max_sample_rate");
	struct sp_events e;
	struct sp_record_opts o = {.frequency_hz = max + 1, .period = 1000000};
	cr_assert_eq(sp_events_init(&e, &o, false, false, false), 0);
	sp_events_release(&e);
}

/* -C keeps the CPUs named, once each; a CPU not online is refused. */
Test(perf_event, cpu_lists)
{
	struct sp_events e;
	const int first[] = {0, 0};
	struct sp_record_opts o = {.cpus = first, .ncpus = 2};
	cr_assert_eq(sp_events_init(&e, &o, false, false, true), 0);
	cr_assert_eq(e.ncpus, 1);
	cr_assert_eq(e.cpus[0], 0);
	cr_assert_eq(e.rings[0].cpu, 0);
	/* system-wide: no inheritance (a CPU's event sees every task), idle CPUs sampled */
	cr_assert_eq(e.attr.inherit, 0);
	cr_assert_eq(e.attr.exclude_idle, 0);
	sp_events_release(&e);

	const int absent[] = {65535};
	o = (struct sp_record_opts){.cpus = absent, .ncpus = 1};
	cr_assert_eq(sp_events_init(&e, &o, false, false, false), -SP_E_BAD_CPU);
	sp_events_release(&e);

	o = (struct sp_record_opts){0};
	cr_assert_eq(sp_events_init(&e, &o, false, false, false), 0);
	cr_assert_eq(e.ncpus, (int)sysconf(_SC_NPROCESSORS_ONLN));
	cr_assert_eq(e.attr.inherit, 1);
	cr_assert_eq(e.attr.exclude_idle, 1);
	sp_events_release(&e);
}

/* Every event has perf's name, and the name parses back to it. */
Test(perf_event, event_names_round_trip)
{
	for (uint32_t i = 0; i < SP_EVENT_COUNT_; i++) {
		const char *name = sp_event_name(i);
		cr_assert_not_null(name, "event %u has no name", i);
		enum sp_event_source back;
		cr_assert_eq(sp_event_parse(name, &back), 0, "%s", name);
		cr_assert_eq(back, i, "%s", name);
	}
	cr_assert_null(sp_event_name(SP_EVENT_COUNT_));
	cr_assert(sp_event_counts_time(SP_EVENT_TASK_CLOCK));
	cr_assert_not(sp_event_counts_time(SP_EVENT_PAGE_FAULTS));
	cr_assert(sp_event_is_hardware(SP_EVENT_REF_CYCLES));
	cr_assert_not(sp_event_is_hardware(SP_EVENT_CPU_CLOCK));
}
