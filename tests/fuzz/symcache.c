/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness: the symbol cache reader (lib/symbols/symcache.c) over untrusted
 * entries.  The input is the file's body after its header, checksum bypassed
 * (a CRC stops only accidents).  Every entry it passes on must encode, and
 * those encodings must read back to the same entries (encode(read(x)) is a
 * fixed point).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/symbols.h"
#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct seen {
	struct sp_buf again; /* the entries passed on, encoded again */
	size_t n;
};

static int entry(void *ctx, const struct sp_symcache_hit *h)
{
	struct seen *s = ctx;
	CHECK(h->nsrc <= SYMCACHE_MAX_SRC);
	for (uint32_t i = 0; i < h->nsrc; i++)
		CHECK(!h->src[i].is_inline || h->src[i].is_inline == 1);
	CHECK(sp_symcache_put(&s->again, h) == 0);
	s->n++;
	return 0;
}

/* Read body (entries after a count of n) as a whole file; the entries, encoded again, into out. */
static int read_body(const uint8_t *body, size_t size, uint64_t n, struct seen *out,
		     struct sp_arena *a)
{
	struct sp_buf file;
	sp_buf_init(&file);
	uint8_t crc[4] = {0};
	if (sp_buf_append(&file, "SPSYMC\1\0\0", 9) || sp_buf_put_uvarint(&file, n) ||
	    (size && sp_buf_append(&file, body, size)) || sp_buf_append(&file, crc, 4))
		abort();
	struct sp_symcache_file cf = {.data = file.data, .len = file.len, .source = 0};
	int err = sp_symcache_each(&cf, a, entry, out);
	sp_buf_release(&file);
	return err;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	uint64_t count;
	if (sp_get_uvarint(&p, end, &count))
		return 0;
	struct sp_arena a;
	sp_arena_init(&a);
	struct seen first = {0}, second = {0};
	sp_buf_init(&first.again);
	sp_buf_init(&second.again);
	int err = read_body(p, (size_t)(end - p), count, &first, &a);
	CHECK(err == 0 || err == -SP_E_SPOOL_CORRUPT);
	CHECK(first.n <= count);
	/* What was passed on reads back, whole, to the same entries. */
	err = read_body(first.again.data, first.again.len, first.n, &second, &a);
	CHECK(err == 0);
	CHECK(second.n == first.n && second.again.len == first.again.len);
	CHECK(!first.again.len || !memcmp(second.again.data, first.again.data, first.again.len));
	sp_buf_release(&first.again);
	sp_buf_release(&second.again);
	sp_arena_release(&a);
	return 0;
}
