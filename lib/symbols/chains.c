/* SPDX-License-Identifier: MIT */
/* Resolved frames' inline chains, in blocks that never move. */
#include "symbols/symbolizer.h"

#include <stdlib.h>

struct sp_resolved_frame *sp_sym_chain_alloc(struct sp_symbolizer *sym, size_t n)
{
	struct chain_block *b = sym->chain_blocks;
	if (!b || b->cap - b->used < n) {
		size_t cap = n > 256 ? n : 256;
		struct chain_block *nb = malloc(sizeof(*nb) + cap * sizeof(nb->f[0]));
		if (!nb)
			return NULL;
		nb->used = 0;
		nb->cap = cap;
		nb->next = b;
		sym->chain_blocks = b = nb;
	}
	struct sp_resolved_frame *f = b->f + b->used;
	b->used += n;
	return f;
}

void sp_sym_chain_set(struct sp_symbolizer *sym, uint32_t frame_id, struct sp_resolved_frame *c,
		      size_t n)
{
	sym->chain[frame_id] = c;
	sym->chain_len[frame_id] = (uint32_t)n;
	sym->stats.inline_frames += n - 1;
}
