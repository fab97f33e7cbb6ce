/* SPDX-License-Identifier: MIT */
/*
 * Names stored in the spool by `symbolize` or at record end: a source with a
 * context of its own (struct stored_names).
 */
#include "symbols/symbolizer.h"

#include <errno.h>

void sp_sym_stored_init(struct stored_names *st, const struct sp_spool *s,
			const struct sp_symbolizer_opts *opts, struct sp_symbolizer_stats *stats,
			struct inline_chains *chains)
{
	*st = (struct stored_names){.spool = s, .opts = opts, .stats = stats, .chains = chains};
}

/* Does a stored frame stand, given the options?  (struct sp_symbolizer_opts.stored_symbols) */
static bool stored_usable(const struct stored_names *st, const struct sp_resolved_frame *c,
			  size_t n)
{
	/* Markers are never stored: a file claiming one is not believed. */
	for (size_t i = 0; i < n; i++)
		if (c[i].kind == SP_KIND_TRUNCATED || (c[i].flags & SP_RFRAME_TRUNCATED))
			return false;
	const struct sp_resolved_frame *last = &c[n - 1];
	switch (last->origin) {
	case SP_ORIGIN_ADDRESS_ONLY:
		return st->opts->stored_symbols == SP_STORED_ALL;
	case SP_ORIGIN_KERNEL_SYMBOLS:
		return !st->opts->no_kernel_symbols;
	case SP_ORIGIN_PERF_MAP:
		return st->opts->perf_map_policy == SP_PERF_MAPS_ALL;
	default:
		return true;
	}
}

/*
 * Take frame_id's chain from the spool's symbol records, opening no file:
 * *done true when it was used, counted in the stats as a live one would be.
 */
int sp_sym_resolve_stored(struct stored_names *st, uint32_t frame_id,
			  struct sp_resolved_frame *rf, uint8_t *src, bool *done)
{
	*done = false;
	size_t n = sp_symstore_get(st->spool, st->by_frame, frame_id, NULL, 0);
	if (!n)
		return 0;
	struct sp_resolved_frame *c = sp_sym_chain_alloc(st->chains, n);
	if (!c)
		return -ENOMEM;
	sp_symstore_get(st->spool, st->by_frame, frame_id, c, n);
	if (!stored_usable(st, c, n)) {
		*src = SP_FRAME_SRC_RESOLVED_AGAIN;
		return 0;
	}
	*rf = c[n - 1];
	if (n > 1 && !st->opts->no_inline) {
		sp_sym_chain_set(st->chains, frame_id, c, n);
	}
	if (rf->file && rf->line)
		st->stats->frames_with_lines++;
	if (rf->kind == SP_KIND_KERNEL && rf->origin == SP_ORIGIN_KERNEL_SYMBOLS)
		st->stats->kernel_frames_named++;
	else if (rf->kind == SP_KIND_KERNEL)
		st->stats->kernel_frames_unnamed++;
	if (rf->origin == SP_ORIGIN_PERF_MAP)
		st->stats->perf_map_frames_named++;
	st->stats->frames_stored++;
	*src = SP_FRAME_SRC_STORED;
	*done = true;
	return 0;
}
