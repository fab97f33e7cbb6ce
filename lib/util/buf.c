/* SPDX-License-Identifier: MIT */
/* Growable byte buffers and bounded varint readers for spool bytes. */
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void sp_buf_init(struct sp_buf *b)
{
	b->data = NULL;
	b->len = b->cap = 0;
}

void sp_buf_release(struct sp_buf *b)
{
	free(b->data);
	sp_buf_init(b);
}

int sp_buf_reserve(struct sp_buf *b, size_t n)
{
	if (n <= b->cap - b->len)
		return 0;
	if (n > SIZE_MAX / 2 - b->len)
		return -ENOMEM;
	size_t cap = b->cap ? b->cap : 256;
	while (cap - b->len < n)
		cap *= 2;
	uint8_t *p = realloc(b->data, cap);
	if (!p)
		return -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

int sp_buf_append(struct sp_buf *b, const void *p, size_t n)
{
	int err = sp_buf_reserve(b, n);
	if (err)
		return err;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

int sp_buf_put_uvarint(struct sp_buf *b, uint64_t v)
{
	int err = sp_buf_reserve(b, 10);
	if (err)
		return err;
	uint8_t *p = b->data + b->len;
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	b->len = (size_t)(p - b->data);
	return 0;
}

int sp_buf_put_svarint(struct sp_buf *b, int64_t v)
{
	return sp_buf_put_uvarint(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

int sp_buf_put_str(struct sp_buf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	int err = sp_buf_put_uvarint(b, n);
	return err ? err : sp_buf_append(b, s, n);
}

int sp_get_uvarint_long(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t out = 0;
	const uint8_t *q = *p;
	for (unsigned shift = 0; q < end; shift += 7) {
		uint8_t byte = *q++;
		if (shift == 63 && byte > 1)
			return -SP_E_SPOOL_CORRUPT;
		out |= (uint64_t)(byte & 0x7f) << shift;
		if (!(byte & 0x80)) {
			*p = q;
			*v = out;
			return 0;
		}
		if (shift == 63)
			return -SP_E_SPOOL_CORRUPT;
	}
	return -SP_E_SPOOL_CORRUPT;
}

int sp_array_reserve(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap > 64 ? *cap : 64;
	while (n < need) {
		if (n > SIZE_MAX / 2)
			return -ENOMEM;
		n *= 2;
	}
	if (elem && n > SIZE_MAX / elem)
		return -ENOMEM;
	void *q = realloc(*p, n * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

int sp_write_all(int fd, const void *p, size_t n)
{
	const uint8_t *q = p;
	while (n) {
		ssize_t k = write(fd, q, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		q += k;
		n -= (size_t)k;
	}
	return 0;
}
