/* SPDX-License-Identifier: MIT */
/* The sampling events a spool may name, in perf's spelling. */
#include "spool/spool.h"

#include <string.h>

static const char *const names[SP_EVENT_COUNT_] = {
	[SP_EVENT_CYCLES] = "cycles",
	[SP_EVENT_CPU_CLOCK] = "cpu-clock",
	[SP_EVENT_INSTRUCTIONS] = "instructions",
	[SP_EVENT_CACHE_MISSES] = "cache-misses",
	[SP_EVENT_BRANCH_MISSES] = "branch-misses",
	[SP_EVENT_REF_CYCLES] = "ref-cycles",
	[SP_EVENT_TASK_CLOCK] = "task-clock",
	[SP_EVENT_PAGE_FAULTS] = "page-faults",
	[SP_EVENT_MAJOR_FAULTS] = "major-faults",
	[SP_EVENT_CONTEXT_SWITCHES] = "context-switches",
	[SP_EVENT_CPU_MIGRATIONS] = "cpu-migrations",
};

/* perf list's other spellings of the same events */
static const struct {
	const char *alias;
	enum sp_event_source source;
} aliases[] = {
	{"cpu-cycles", SP_EVENT_CYCLES},
	{"faults", SP_EVENT_PAGE_FAULTS},
	{"cs", SP_EVENT_CONTEXT_SWITCHES},
	{"migrations", SP_EVENT_CPU_MIGRATIONS},
};

const char *sp_event_name(uint32_t source)
{
	return source < SP_EVENT_COUNT_ ? names[source] : NULL;
}

int sp_event_parse(const char *name, enum sp_event_source *out)
{
	if (!name || !out)
		return -SP_E_BAD_ARG;
	for (unsigned i = 0; i < SP_EVENT_COUNT_; i++)
		if (!strcmp(name, names[i])) {
			*out = (enum sp_event_source)i;
			return 0;
		}
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (!strcmp(name, aliases[i].alias)) {
			*out = aliases[i].source;
			return 0;
		}
	return -SP_E_BAD_ARG;
}

bool sp_event_is_hardware(uint32_t source)
{
	return source == SP_EVENT_CYCLES || source == SP_EVENT_INSTRUCTIONS ||
	       source == SP_EVENT_CACHE_MISSES || source == SP_EVENT_BRANCH_MISSES ||
	       source == SP_EVENT_REF_CYCLES;
}

bool sp_event_counts_time(uint32_t source)
{
	return source == SP_EVENT_CPU_CLOCK || source == SP_EVENT_TASK_CLOCK;
}
