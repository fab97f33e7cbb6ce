/* SPDX-License-Identifier: MIT */
/* The symbolizer's cache of streamed (pid, stack id) pairs: freed and counted with the symbolizer (filled by symbolizer_api.c). */
#include "symbols/symbolizer.h"

#include <stdlib.h>

void sp_stack_cache_free(struct sp_stack_cache *c)
{
	if (!c)
		return;
	sp_map_release(&c->index);
	free(c->entries);
	free(c->ids);
	free(c);
}

void sp_stack_cache_add_stats(const struct sp_stack_cache *c, struct sp_symbolizer_stats *st)
{
	if (c) {
		st->stack_cache_hits += c->hits;
		st->stack_cache_misses += c->misses;
	}
}
