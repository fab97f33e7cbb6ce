/* SPDX-License-Identifier: MIT */
/* Open-addressing hash map from 64-bit keys to 32-bit values (interning tables). */
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>

void sp_map_init(struct sp_map *m)
{
	m->keys = NULL;
	m->vals = NULL;
	m->used = NULL;
	m->cap = m->len = 0;
}

void sp_map_release(struct sp_map *m)
{
	free(m->keys);
	free(m->vals);
	free(m->used);
	sp_map_init(m);
}

static size_t slot_of(const struct sp_map *m, uint64_t key)
{
	size_t mask = m->cap - 1;
	size_t i = (size_t)sp_hash64(key) & mask;
	while (m->used[i] && m->keys[i] != key)
		i = (i + 1) & mask;
	return i;
}

int sp_map_get(const struct sp_map *m, uint64_t key, uint32_t *val)
{
	if (!m->cap)
		return 0;
	size_t i = slot_of(m, key);
	if (!m->used[i])
		return 0;
	*val = m->vals[i];
	return 1;
}

static int grow(struct sp_map *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	struct sp_map n = {
		.keys = malloc(cap * sizeof(uint64_t)),
		.vals = malloc(cap * sizeof(uint32_t)),
		.used = calloc(cap, 1),
		.cap = cap,
	};
	if (!n.keys || !n.vals || !n.used) {
		sp_map_release(&n);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->used[i])
			continue;
		size_t j = slot_of(&n, m->keys[i]);
		n.used[j] = 1;
		n.keys[j] = m->keys[i];
		n.vals[j] = m->vals[i];
	}
	n.len = m->len;
	sp_map_release(m);
	*m = n;
	return 0;
}

int sp_map_put(struct sp_map *m, uint64_t key, uint32_t val)
{
	if ((m->len + 1) * 4 > m->cap * 3) {
		int err = grow(m);
		if (err)
			return err;
	}
	size_t i = slot_of(m, key);
	if (!m->used[i]) {
		m->used[i] = 1;
		m->keys[i] = key;
		m->len++;
	}
	m->vals[i] = val;
	return 0;
}
