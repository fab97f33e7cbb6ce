/* SPDX-License-Identifier: MIT */
/* A string arena: many small strings with one owner, freed together. */
#include "util/util.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK_BYTES 65536

struct sp_arena_block {
	struct sp_arena_block *next;
	size_t used, cap;
	char data[];
};

void sp_arena_init(struct sp_arena *a)
{
	a->blocks = NULL;
}

void sp_arena_release(struct sp_arena *a)
{
	struct sp_arena_block *b = a->blocks;
	while (b) {
		struct sp_arena_block *next = b->next;
		free(b);
		b = next;
	}
	a->blocks = NULL;
}

static char *arena_alloc(struct sp_arena *a, size_t n)
{
	struct sp_arena_block *b = a->blocks;
	if (!b || b->cap - b->used < n) {
		/* Oversized strings get a block of their own; the head keeps filling. */
		size_t cap = n > BLOCK_BYTES / 4 ? n : BLOCK_BYTES;
		struct sp_arena_block *nb = malloc(sizeof(*nb) + cap);
		if (!nb)
			return NULL;
		nb->used = 0;
		nb->cap = cap;
		if (b && cap != BLOCK_BYTES) {
			nb->next = b->next;
			b->next = nb;
		} else {
			nb->next = b;
			a->blocks = nb;
		}
		b = nb;
	}
	char *p = b->data + b->used;
	b->used += n;
	return p;
}

const char *sp_arena_strndup(struct sp_arena *a, const char *s, size_t n)
{
	char *p = arena_alloc(a, n + 1);
	if (!p)
		return NULL;
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

const char *sp_arena_printf(struct sp_arena *a, const char *fmt, ...)
{
	char small[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	if ((size_t)n < sizeof(small))
		return sp_arena_strndup(a, small, (size_t)n);
	char *p = arena_alloc(a, (size_t)n + 1);
	if (!p)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}
