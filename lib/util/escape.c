/* SPDX-License-Identifier: MIT */
/* Strings made safe for UTF-8 and JSON output: malformed bytes replaced, JSON escapes. */
#include "util/util.h"

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
