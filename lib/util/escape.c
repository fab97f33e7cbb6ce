/* SPDX-License-Identifier: MIT */
/* Strings made safe for UTF-8 and JSON output: malformed bytes replaced, JSON escapes. */
#include "util/util.h"

#include <string.h>

/* Length of the well-formed UTF-8 sequence at p (RFC 3629), 0 when it is not one. */
static size_t utf8_seq(const uint8_t *p)
{
	uint8_t c = p[0];
	if (c < 0x80)
		return 1;
	/* A NUL is never a continuation byte, so these reads stop at the terminator. */
#define CONT(x) ((x) >= 0x80 && (x) <= 0xbf)
	if (c >= 0xc2 && c <= 0xdf)
		return CONT(p[1]) ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		uint8_t lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
		return p[1] >= lo && p[1] <= hi && CONT(p[2]) ? 3 : 0;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		uint8_t lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
		return p[1] >= lo && p[1] <= hi && CONT(p[2]) && CONT(p[3]) ? 4 : 0;
	}
#undef CONT
	return 0;
}

static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */

int sp_buf_put_utf8(struct sp_buf *b, const char *s)
{
	const uint8_t *p = (const uint8_t *)s;
	while (*p) {
		size_t n = utf8_seq(p);
		int err = n ? sp_buf_append(b, p, n) : sp_buf_append(b, replacement, 3);
		if (err)
			return err;
		p += n ? n : 1;
	}
	return 0;
}

int sp_json_put_string(struct sp_buf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const uint8_t *p = (const uint8_t *)s;
	int err = sp_buf_append(b, "\"", 1);
	while (!err && *p) {
		uint8_t c = *p;
		size_t n = utf8_seq(p);
		if (!n) {
			/* Not UTF-8 (a Latin-1 path, a cut name): JSON text must be. */
			err = sp_buf_append(b, "\\ufffd", 6);
			p++;
			continue;
		}
		if (c == '"' || c == '\\') {
			char esc[2] = {'\\', (char)c};
			err = sp_buf_append(b, esc, 2);
		} else if (c == '\n') {
			err = sp_buf_append(b, "\\n", 2);
		} else if (c == '\t') {
			err = sp_buf_append(b, "\\t", 2);
		} else if (c == '\r') {
			err = sp_buf_append(b, "\\r", 2);
		} else if (c < 0x20 || c == 0x7f) {
			char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
			err = sp_buf_append(b, esc, 6);
		} else {
			err = sp_buf_append(b, p, n);
		}
		p += n;
	}
	return err ? err : sp_buf_append(b, "\"", 1);
}

/*
 * Bytes at p that a terminal shows as text: a well-formed UTF-8 sequence that is
 * not a C0 or C1 control, DEL or a bidirectional override; 0 for anything else.
 */
static size_t printable_seq(const uint8_t *p)
{
	size_t n = utf8_seq(p);
	if (n == 1 && (p[0] < 0x20 || p[0] == 0x7f))
		return 0;
	if (n == 2 && p[0] == 0xc2 && p[1] < 0xa0) /* U+0080..U+009F: C1, CSI among them */
		return 0;
	/* U+202A..U+202E and U+2066..U+2069 reorder the rest of a terminal line. */
	if (n == 3 && p[0] == 0xe2 && ((p[1] == 0x80 && p[2] >= 0xaa && p[2] <= 0xae) ||
				       (p[1] == 0x81 && p[2] >= 0xa6 && p[2] <= 0xa9)))
		return 0;
	return n;
}

/*
 * Whether the n bytes at p are all printable ASCII (0x20 to 0x7e), eight at a
 * time: the report checks every name it resolves, nearly all of them ASCII.
 */
static bool ascii_printable(const uint8_t *p, size_t n)
{
	const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t x;
		memcpy(&x, p + i, 8);
		/*
		 * A byte below 0x20 borrows into its high bit; one at 0x7f carries
		 * into it, and one from 0x80 has it.  A borrow or carry reaches the
		 * next byte only from a byte already caught.
		 */
		if (((x - 0x20 * ones) & ~x & highs) | (((x + ones) | x) & highs))
			return false;
	}
	for (; i < n; i++)
		if (p[i] < 0x20 || p[i] >= 0x7f)
			return false;
	return true;
}

bool sp_text_is_printable(const char *s)
{
	const uint8_t *p = (const uint8_t *)s;
	if (ascii_printable(p, strlen(s)))
		return true;
	for (size_t n; *p; p += n)
		if (!(n = printable_seq(p)))
			return false;
	return true;
}

int sp_buf_put_printable(struct sp_buf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const uint8_t *p = (const uint8_t *)s;
	int err = 0;
	while (!err && *p) {
		size_t n = printable_seq(p);
		if (n) {
			err = sp_buf_append(b, p, n);
			p += n;
			continue;
		}
		/* Every byte of a refused sequence, so the escape shows what was there. */
		n = utf8_seq(p);
		for (size_t i = 0; i < (n ? n : 1) && !err; i++) {
			char esc[4] = {'\\', 'x', hex[p[i] >> 4], hex[p[i] & 15]};
			err = sp_buf_append(b, esc, 4);
		}
		p += n ? n : 1;
	}
	return err;
}

const char *sp_arena_printable(struct sp_arena *a, const char *s)
{
	if (sp_text_is_printable(s))
		return s;
	struct sp_buf b;
	sp_buf_init(&b);
	const char *out = NULL;
	if (!sp_buf_put_printable(&b, s))
		out = sp_arena_strndup(a, (const char *)b.data, b.len);
	sp_buf_release(&b);
	return out;
}

void sp_fputs_printable(const char *s, FILE *f)
{
	if (sp_text_is_printable(s)) {
		fputs(s, f);
		return;
	}
	struct sp_buf b;
	sp_buf_init(&b);
	if (!sp_buf_put_printable(&b, s))
		fwrite(b.data, 1, b.len, f);
	else
		fputs("[unprintable]", f); /* out of memory: never the raw bytes */
	sp_buf_release(&b);
}
