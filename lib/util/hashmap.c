/* SPDX-License-Identifier: MIT */
/* Open-addressing hash map from 64-bit keys to 32-bit values (interning tables). */
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>

void sp_map_init(struct sp_map *m)
{
	m->slots = NULL;
	m->cap = m->len = 0;
}

void sp_map_release(struct sp_map *m)
{
	free(m->slots);
	sp_map_init(m);
}

static size_t slot_of(const struct sp_map *m, uint64_t key)
{
	size_t mask = m->cap - 1;
	size_t i = (size_t)sp_hash64(key) & mask;
	while (m->slots[i].used && m->slots[i].key != key)
		i = (i + 1) & mask;
	return i;
}

int sp_map_get(const struct sp_map *m, uint64_t key, uint32_t *val)
{
	if (!m->cap)
		return 0;
	size_t i = slot_of(m, key);
	if (!m->slots[i].used)
		return 0;
	*val = m->slots[i].val;
	return 1;
}

static int grow(struct sp_map *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	struct sp_map n = {
		.slots = calloc(cap, sizeof(struct sp_map_slot)),
		.cap = cap,
	};
	if (!n.slots)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->slots[i].used)
			continue;
		n.slots[slot_of(&n, m->slots[i].key)] = m->slots[i];
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
	if (!m->slots[i].used) {
		m->slots[i].used = 1;
		m->slots[i].key = key;
		m->len++;
	}
	m->slots[i].val = val;
	return 0;
}
