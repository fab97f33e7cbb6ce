/* SPDX-License-Identifier: MIT */
/* What one sample of a spool stands for: its event, the period, CPU time or a count. */
#include "report/aggregate.h"

#include <inttypes.h>
#include <stdio.h>

void sp_sample_unit_of(const struct sp_spool *s, struct sp_sample_unit *u)
{
	const struct sp_spool_meta *m = sp_spool_meta(s);
	const char *name = sp_event_name(m->event_source);
	if (name)
		snprintf(u->event, sizeof(u->event), "%s", name);
	else
		snprintf(u->event, sizeof(u->event), "event-%" PRIu32, m->event_source);
	u->by_period = m->sample_period != 0;
	u->frequency_hz = u->by_period ? 0 : m->frequency_hz;
	u->system_wide = m->flags & SP_META_SYSTEM_WIDE;
	/*
	 * Sampled at a frequency, the kernel adjusts the period to give
	 * frequency_hz samples per second the event counts; for cycles that
	 * is per second of CPU time, so their samples have always been
	 * reported as time, like the cpu-clock the recorder falls back to.
	 */
	u->time = sp_event_counts_time(m->event_source) ||
		  (m->event_source == SP_EVENT_CYCLES && !u->by_period);
	if (u->by_period)
		u->period = m->sample_period;
	else if (!u->time)
		u->period = 1;
	else if (m->frequency_hz)
		u->period = (1000000000ull + m->frequency_hz / 2) / m->frequency_hz;
	else if (m->sample_interval_us)
		u->period = m->sample_interval_us * 1000;
	else /* a header without either: the recorder's default frequency */
		u->period = (1000000000ull + SP_DEFAULT_FREQUENCY / 2) / SP_DEFAULT_FREQUENCY;
	if (!u->period)
		u->period = 1; /* an untrusted header's interval of 0 */
	u->weighted = !u->time && (u->by_period || s->periods_stored);
}

uint64_t sp_sample_weight(const struct sp_sample_unit *u, const struct sp_sample *smp)
{
	if (u->time)
		return 1;
	return smp->period ? smp->period : u->period;
}

void sp_sample_unit_describe(const struct sp_sample_unit *u, char *buf, size_t cap)
{
	int n;
	if (u->by_period && u->time)
		n = snprintf(buf, cap, "%s every %" PRIu64 " ns", u->event, u->period);
	else if (u->by_period && u->period == 1)
		n = snprintf(buf, cap, "%s on every event", u->event);
	else if (u->by_period)
		n = snprintf(buf, cap, "%s every %" PRIu64 " events", u->event, u->period);
	else if (u->frequency_hz)
		n = snprintf(buf, cap, "%s at %" PRIu32 " Hz", u->event, u->frequency_hz);
	else
		n = snprintf(buf, cap, "%s", u->event);
	if (u->system_wide && n >= 0 && (size_t)n < cap)
		snprintf(buf + n, cap - (size_t)n, ", system-wide");
}

const char *sp_sample_unit_noun(const struct sp_sample_unit *u, uint64_t n)
{
	if (u->weighted)
		return n == 1 ? "event" : "events";
	return n == 1 ? "sample" : "samples";
}
