/* SPDX-License-Identifier: MIT */
/* Messages for error codes, stop reasons and error kinds, from the X-macro tables. */
#include "util/util.h"

#include <string.h>

static const char *const error_msgs[] = {
#define SP_X_MSG(name, msg) msg,
	SP_ERRORS(SP_X_MSG)
#undef SP_X_MSG
};

const char *sp_strerror(int err)
{
	if (err < 0)
		err = -err;
	if (err > SP_E_FIRST_ && err < SP_E_LAST_)
		return error_msgs[err - SP_E_FIRST_ - 1];
	return strerror(err);
}

static const char *const stop_names[] = {
#define SP_X_NAME(name, s, l) s,
	SP_STOP_REASONS(SP_X_NAME)
#undef SP_X_NAME
};
static const char *const stop_texts[] = {
#define SP_X_TEXT(name, s, l) l,
	SP_STOP_REASONS(SP_X_TEXT)
#undef SP_X_TEXT
};
static const char *const kind_names[] = {
#define SP_X_NAME(name, s, l) s,
	SP_ERROR_KINDS(SP_X_NAME)
#undef SP_X_NAME
};
static const char *const kind_texts[] = {
#define SP_X_TEXT(name, s, l) l,
	SP_ERROR_KINDS(SP_X_TEXT)
#undef SP_X_TEXT
};

const char *sp_stop_reason_name(unsigned r)
{
	return r < SP_STOP_COUNT_ ? stop_names[r] : "?";
}

const char *sp_stop_reason_text(unsigned r)
{
	return r < SP_STOP_COUNT_ ? stop_texts[r] : "?";
}

const char *sp_error_kind_name(unsigned k)
{
	return k < SP_ERR_COUNT_ ? kind_names[k] : "?";
}

const char *sp_error_kind_text(unsigned k)
{
	return k < SP_ERR_COUNT_ ? kind_texts[k] : "?";
}

uint64_t sp_summary_error_total(const struct sp_summary *s)
{
	/* The counters come from spools: sums saturate rather than wrap. */
	uint64_t t = 0;
	for (unsigned i = 0; i < SP_ERR_COUNT_; i++)
		t = sp_u64_add_sat(t, s->error_stats[i]);
	uint64_t early = 0;
	for (unsigned i = 0; i < SP_STOP_COUNT_; i++)
		if (i != SP_STOP_ROOT)
			early = sp_u64_add_sat(early, s->stop_reasons[i]);
	/* A stack the frame-pointer chain continued reached past where DWARF stopped. */
	return sp_u64_add_sat(t, early > s->spliced_stacks ? early - s->spliced_stacks : 0);
}
