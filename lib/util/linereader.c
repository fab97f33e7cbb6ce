/* SPDX-License-Identifier: MIT */
/* A line reader with bounded line length and total size, for text files we do not trust. */
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK 65536

int sp_line_reader_init(struct sp_line_reader *r, int fd, size_t max_line, uint64_t max_bytes)
{
	memset(r, 0, sizeof(*r));
	if (max_line == 0 || max_line > SIZE_MAX / 2 - CHUNK)
		return -SP_E_BAD_ARG;
	r->fd = fd;
	r->max_line = max_line;
	r->max_bytes = max_bytes;
	/* Room for a whole line plus a chunk, so that one read always makes progress. */
	r->cap = max_line + 1 + CHUNK;
	r->buf = malloc(r->cap);
	return r->buf ? 0 : -ENOMEM;
}

void sp_line_reader_release(struct sp_line_reader *r)
{
	free(r->buf);
	r->buf = NULL;
}

/* Read more bytes after r->end; 0 (maybe setting eof) or -errno. */
static int fill(struct sp_line_reader *r)
{
	if (r->start > 0) {
		memmove(r->buf, r->buf + r->start, r->end - r->start);
		r->end -= r->start;
		r->start = 0;
	}
	size_t room = r->cap - r->end;
	if (r->max_bytes) {
		uint64_t left = r->max_bytes - r->bytes;
		if (left == 0) {
			/* One byte more tells a file of exactly max_bytes from a longer one. */
			char probe;
			ssize_t k;
			do
				k = read(r->fd, &probe, 1);
			while (k < 0 && errno == EINTR);
			r->limited = k > 0;
			r->eof = true;
			return 0;
		}
		if (left < room)
			room = (size_t)left;
	}
	ssize_t k;
	do
		k = read(r->fd, r->buf + r->end, room);
	while (k < 0 && errno == EINTR);
	if (k < 0)
		return -errno;
	if (k == 0)
		r->eof = true;
	r->end += (size_t)k;
	r->bytes += (uint64_t)k;
	return 0;
}

int sp_line_reader_next(struct sp_line_reader *r, const char **line, size_t *len,
			unsigned *flags)
{
	bool skipping = false;
	size_t seen = 0; /* bytes after r->start known to hold no newline */
	*flags = 0;
	*len = 0;
	for (;;) {
		char *from = r->buf + r->start + seen;
		char *nl = memchr(from, '\n', r->end - r->start - seen);
		if (nl) {
			size_t n = (size_t)(nl - (r->buf + r->start));
			*line = r->buf + r->start;
			r->start += n + 1;
			if (skipping || n > r->max_line) {
				*flags = SP_LINE_TOO_LONG;
				return 1;
			}
			*len = n;
			return 1;
		}
		seen = r->end - r->start;
		if (seen > r->max_line) {
			/* Too long: drop what is buffered and read on to its newline. */
			skipping = true;
			r->start = r->end;
			seen = 0;
		}
		if (r->eof) {
			if (r->limited) {
				/* Cut by the byte limit: the line's real end is unknown. */
				r->start = r->end;
				return 0;
			}
			if (!skipping && seen == 0)
				return 0;
			*line = r->buf + r->start;
			*len = skipping ? 0 : seen;
			*flags = SP_LINE_UNTERMINATED | (skipping ? SP_LINE_TOO_LONG : 0);
			r->start = r->end;
			return 1;
		}
		int err = fill(r);
		if (err)
			return err;
	}
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

bool sp_text_parse_hex(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;
	if (end - s > 2 && s[0] == '0' && (s[1] | 0x20) == 'x' && hexval(s[2]) >= 0)
		s += 2;
	uint64_t x = 0;
	int digits = 0, d;
	for (; s < end && (d = hexval(*s)) >= 0; s++) {
		/* Leading zeros are harmless; a 17th significant digit is not. */
		if (x >> 60)
			return false;
		x = x << 4 | (uint64_t)d;
		digits++;
	}
	if (!digits)
		return false;
	*p = s;
	*v = x;
	return true;
}
