/* SPDX-License-Identifier: MIT */
/* The recording defaults, in one place: what a 0 in struct sp_record_opts stands for. */
#include "util/util.h"

uint32_t sp_record_opts_frequency(const struct sp_record_opts *opts)
{
	if (opts->period)
		return 0;
	return opts->frequency_hz ? opts->frequency_hz : SP_DEFAULT_FREQUENCY;
}

uint32_t sp_record_opts_stack_size(const struct sp_record_opts *opts)
{
	return opts->stack_size ? opts->stack_size : SP_DEFAULT_STACK_SIZE;
}
