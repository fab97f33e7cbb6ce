/* SPDX-License-Identifier: MIT */
/* The recorder's stack-key cache: a stack seen before gets its stack id without interning again. */
#include "record/record.h"

#include <stdlib.h>
#include <string.h>

/* A cached stack: its key's words in words, and the stack id they gave. */
struct sp_stack_key {
	size_t off;
	uint32_t len;
	uint32_t stack_id;
};

/* Keys are kept up to this many words (32 MiB); past it new stacks are not cached. */
#define STACK_CACHE_MAX_WORDS (4u << 20)

void sp_stack_cache_init(struct sp_stack_cache *c)
{
	memset(c, 0, sizeof(*c));
	sp_map_init(&c->map);
}

void sp_stack_cache_release(struct sp_stack_cache *c)
{
	sp_map_release(&c->map);
	free(c->keys);
	free(c->words);
}

/*
 * Two words a step, each multiplied in by an odd constant, the high half
 * folded down after each step.  A key is hashed at every sample: this takes
 * half the instructions of a step per word (the FNV-1a it replaced).  A
 * collision only costs the key its place in the cache (the key is compared).
 */
uint64_t sp_stack_cache_hash(const uint64_t *w, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ n;
	size_t i = 0;
	for (; i + 2 <= n; i += 2) {
		h = (h ^ w[i]) * 0x9e3779b97f4a7c15ULL;
		h = (h ^ w[i + 1]) * 0xc2b2ae3d27d4eb4fULL;
		h ^= h >> 32;
	}
	if (i < n) {
		h = (h ^ w[i]) * 0x9e3779b97f4a7c15ULL;
		h ^= h >> 32;
	}
	return h;
}

bool sp_stack_cache_find(const struct sp_stack_cache *c, const uint64_t *key, size_t n, uint64_t h,
			 uint32_t *stack_id)
{
	uint32_t idx;
	if (!sp_map_get(&c->map, h, &idx))
		return false;
	const struct sp_stack_key *k = &c->keys[idx];
	if (k->len != n || memcmp(c->words + k->off, key, n * sizeof(*key)))
		return false; /* another key with the same hash: not cached */
	*stack_id = k->stack_id;
	return true;
}

void sp_stack_cache_put(struct sp_stack_cache *c, const uint64_t *key, size_t n, uint64_t h,
			uint32_t stack_id)
{
	uint32_t idx;
	if (sp_map_get(&c->map, h, &idx) || c->nwords + n > STACK_CACHE_MAX_WORDS ||
	    sp_array_reserve((void **)&c->words, &c->words_cap, c->nwords + n, sizeof(*c->words)) ||
	    sp_array_reserve((void **)&c->keys, &c->keys_cap, c->nkeys + 1, sizeof(*c->keys)) ||
	    sp_map_put(&c->map, h, (uint32_t)c->nkeys))
		return;
	memcpy(c->words + c->nwords, key, n * sizeof(*key));
	c->keys[c->nkeys++] =
		(struct sp_stack_key){.off = c->nwords, .len = (uint32_t)n, .stack_id = stack_id};
	c->nwords += n;
}
