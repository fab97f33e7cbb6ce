/* SPDX-License-Identifier: MIT */
/*
 * Streamed stacks: a sample's or a (pid, stack id) pair's resolved frames, leaf
 * first, with the frame ids of each pair kept for its next walk.
 */
#include "symbols/symbolizer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * First walk of a pair: resolve every frame (so errors surface before
 * anything is kept) and keep the frame ids.  The entry's index in *entry.
 */
static int walk_stack(struct sp_symbolizer *sym, struct sp_stack_cache *c, uint64_t key,
		      uint32_t stack_id, uint32_t *entry)
{
	size_t start = c->nids;
	struct sp_stack_iter it;
	struct sp_frame_context fc;
	int err = 0;
	sp_spool_stack_iter_init(&it, sym->spool, stack_id);
	while (!err && sp_spool_stack_iter_next(&it, &fc)) {
		const struct sp_resolved_frame *f;
		size_t n;
		err = sp_array_reserve((void **)&c->ids, &c->ids_cap, c->nids + 1, sizeof(*c->ids));
		if (!err)
			err = sp_symbolizer_resolve_all(sym, fc.frame_id, &f, &n);
		if (!err)
			c->ids[c->nids++] = fc.frame_id;
	}
	if (!err && c->nids - start > UINT32_MAX)
		err = -ENOMEM;
	if (!err)
		err = sp_array_reserve((void **)&c->entries, &c->entries_cap, c->nentries + 1,
			   sizeof(*c->entries));
	if (!err)
		err = sp_map_put(&c->index, key, (uint32_t)c->nentries);
	if (err) {
		c->nids = start;
		return err;
	}
	c->entries[c->nentries] = (struct stack_entry){.off = (uint32_t)start,
						       .len = (uint32_t)(c->nids - start)};
	*entry = (uint32_t)c->nentries++;
	c->misses++;
	return 0;
}

int sp_symbolizer_for_each_stack_frame(struct sp_symbolizer *sym, int32_t pid, uint32_t stack_id,
				       int (*visit)(const struct sp_resolved_frame *frame,
						    void *arg),
				       void *arg)
{
	if (!sym || !visit || stack_id >= sym->nstacks)
		return -SP_E_BAD_ARG;
	if (!stack_id)
		return 0;
	struct sp_stack_cache **slot = &sym->stacks;
	if (!*slot) {
		if (!(*slot = calloc(1, sizeof(**slot))))
			return -ENOMEM;
		sp_map_init(&(*slot)->index);
	}
	struct sp_stack_cache *c = *slot;
	uint64_t key = (uint64_t)(uint32_t)pid << 32 | stack_id;
	uint32_t e;
	if (sp_map_get(&c->index, key, &e)) {
		c->hits++;
	} else {
		int err = walk_stack(sym, c, key, stack_id, &e);
		if (err)
			return err;
	}
	/* Indexes, not pointers: a visit that streams another stack may move c->ids. */
	uint32_t off = c->entries[e].off, len = c->entries[e].len;
	for (uint32_t i = 0; i < len; i++) {
		const struct sp_resolved_frame *f;
		size_t n;
		int rc = sp_symbolizer_resolve_all(sym, c->ids[off + i], &f, &n);
		for (size_t j = 0; !rc && j < n; j++)
			rc = visit(&f[j], arg);
		if (rc)
			return rc;
	}
	return 0;
}

int sp_symbolizer_for_each_sample_frame(struct sp_symbolizer *sym, const struct sp_sample *sample,
					int (*visit)(const struct sp_resolved_frame *frame,
						     void *arg),
					void *arg)
{
	const struct sp_thread *t =
		sym && sample ? sp_spool_thread(sym->spool, sample->thread) : NULL;
	if (!t)
		return -SP_E_BAD_ARG;
	return sp_symbolizer_for_each_stack_frame(sym, t->pid, sample->stack_id, visit, arg);
}
