/* SPDX-License-Identifier: MIT */
/* Names made safe to show: \xHH escapes for terminals, well-formed UTF-8, JSON strings. */
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
static const char hex[] = "0123456789abcdef";

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

/* The code point of the well-formed n-byte sequence at p. */
static uint32_t code_point(const uint8_t *p, size_t n)
{
	if (n == 1)
		return p[0];
	uint32_t c = p[0] & (0x7f >> n);
	for (size_t i = 1; i < n; i++)
		c = c << 6 | (p[i] & 0x3f);
	return c;
}

/*
 * Code points a terminal does not show as themselves: C0 and C1 controls and
 * DEL, which it obeys (U+009B is CSI on an 8-bit terminal); the bidirectional
 * marks, embeddings, overrides and isolates (U+061C, U+200E-U+200F,
 * U+202A-U+202E, U+2066-U+2069), which reorder the rest of its line; and
 * the invisible ones (zero-width space and joiners U+200B-U+200D, the line
 * and paragraph separators U+2028-U+2029, the word joiner, invisible
 * operators and deprecated format characters U+2060-U+206F, U+FEFF, the
 * interlinear annotation marks U+FFF9-U+FFFB, the tags U+E0000-U+E007F),
 * with which two different names read the same.
 */
static const struct {
	uint32_t lo, hi;
} refused[] = {
	{0x0000, 0x001f}, {0x007f, 0x009f}, {0x061c, 0x061c}, {0x200b, 0x200f},
	{0x2028, 0x202e}, {0x2060, 0x206f}, {0xfeff, 0xfeff}, {0xfff9, 0xfffb},
	{0xe0000, 0xe007f},
};

static bool is_refused(uint32_t c)
{
	for (size_t i = 0; i < SP_ARRAY_SIZE(refused) && c >= refused[i].lo; i++)
		if (c <= refused[i].hi)
			return true;
	return false;
}

int sp_json_put_string(struct sp_buf *b, const char *s)
{
	const uint8_t *p = (const uint8_t *)s;
	int err = sp_buf_append(b, "\"", 1);
	while (!err && *p) {
		uint8_t c = *p;
		size_t n = utf8_seq(p);
		if (!n) {
			/*
			 * Not UTF-8 (a Latin-1 path, a cut name), which JSON text
			 * cannot hold: the text views' \xHH, its backslash escaped.
			 */
			char esc[6] = {'\\', '\\', 'x', hex[c >> 4], hex[c & 15]};
			err = sp_buf_append(b, esc, 5);
			p++;
			continue;
		}
		uint32_t cp = code_point(p, n);
		if (c == '"' || c == '\\') {
			char esc[2] = {'\\', (char)c};
			err = sp_buf_append(b, esc, 2);
		} else if (c == '\n') {
			err = sp_buf_append(b, "\\n", 2);
		} else if (c == '\t') {
			err = sp_buf_append(b, "\\t", 2);
		} else if (c == '\r') {
			err = sp_buf_append(b, "\\r", 2);
		} else if (is_refused(cp)) {
			/* A reader gets the code point back; a terminal shows the escape. */
			uint32_t units[2] = {cp, 0};
			if (cp > 0xffff) { /* a surrogate pair (RFC 8259, section 7) */
				units[0] = 0xd800 | (cp - 0x10000) >> 10;
				units[1] = 0xdc00 | (cp & 0x3ff);
			}
			for (size_t i = 0; i < 2 && units[i] && !err; i++) {
				uint32_t u = units[i];
				char esc[6] = {'\\', 'u', hex[u >> 12], hex[u >> 8 & 15],
					       hex[u >> 4 & 15], hex[u & 15]};
				err = sp_buf_append(b, esc, 6);
			}
		} else {
			err = sp_buf_append(b, p, n);
		}
		p += n;
	}
	return err ? err : sp_buf_append(b, "\"", 1);
}

/*
 * Bytes at p that a terminal shows as text: a well-formed UTF-8 sequence of
 * a code point not refused above, and not a backslash unless keep_backslash;
 * 0 for anything else.  The backslash is escaped too (as \x5c) so that every
 * \xHH shown is an escape: a name cannot spell one to pass for another.
 */
static size_t printable_seq(const uint8_t *p, bool keep_backslash)
{
	size_t n = utf8_seq(p);
	if (n == 1)
		return p[0] >= 0x20 && p[0] != 0x7f && (p[0] != '\\' || keep_backslash);
	return n && !is_refused(code_point(p, n)) ? n : 0;
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

static bool is_printable(const char *s, bool keep_backslash)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t len = strlen(s);
	if (ascii_printable(p, len))
		return keep_backslash || !memchr(s, '\\', len);
	for (size_t n; *p; p += n)
		if (!(n = printable_seq(p, keep_backslash)))
			return false;
	return true;
}

bool sp_text_is_printable(const char *s)
{
	return is_printable(s, false);
}

static int put_printable(struct sp_buf *b, const char *s, bool keep_backslash)
{
	const uint8_t *p = (const uint8_t *)s;
	int err = 0;
	while (!err && *p) {
		size_t n = printable_seq(p, keep_backslash);
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

int sp_buf_put_printable(struct sp_buf *b, const char *s)
{
	return put_printable(b, s, false);
}

static const char *arena_printable(struct sp_arena *a, const char *s, bool keep_backslash)
{
	if (is_printable(s, keep_backslash))
		return s;
	struct sp_buf b;
	sp_buf_init(&b);
	const char *out = NULL;
	if (!put_printable(&b, s, keep_backslash))
		out = sp_arena_strndup(a, (const char *)b.data, b.len);
	sp_buf_release(&b);
	return out;
}

const char *sp_arena_printable(struct sp_arena *a, const char *s)
{
	return arena_printable(a, s, false);
}

const char *sp_arena_printable_escaped(struct sp_arena *a, const char *s)
{
	return arena_printable(a, s, true);
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
