/* SPDX-License-Identifier: MIT */
/*
 * Names already found, kept by build-id and the file they came from:
 * CACHE_DIR/symbols/HEXBUILDID-WITNESS.sym (sp_symcache_witness).
 *
 * A warm report of a 10 s recording spent three quarters of its time on two
 * frames of libc: building libc's sorted symbol table (7 M instructions) and
 * libdw's address ranges, which intern every one of libc's 2,085 compile
 * units before the first DIE can be read (7 M more, and 2 MB of heap).  What
 * those lookups produce depends only on the file's contents, which its
 * build-id proves, once the file has full DWARF: a later debug file cannot
 * say more.  So the symbolizer writes each such file's results here and
 * reads them back before it builds anything.
 *
 * The file is untrusted input like any other.  It is read only when it is a
 * regular file of this user that group and others cannot write, no larger
 * than SYMCACHE_MAX_BYTES, with the right magic, format and CRC-32; then
 * every length, count and value is checked as it is read, and reading stops
 * at the first that does not (the entries before it are whole and kept).
 *
 *   "SPSYMC" u16 format (little-endian)
 *   u8 source: where the DWARF was (enum sp_symcache_source)
 *   uvarint count
 *   count x entry:
 *     uvarint svma, uvarint offset, str name, uvarint nsrc (<= SYMCACHE_MAX_SRC)
 *     nsrc x (str name, str file, uvarint line (< 2^32), u8 is_inline (0 or 1))
 *   u32 CRC-32 (zlib) of everything before it, little-endian
 *
 * where str is uvarint 0 for none, else uvarint length + 1 and the bytes
 * (no NUL inside).  Any change to how names are made bumps the format.
 */
#include "symbols/symbols.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define SYMCACHE_MAGIC "SPSYMC"
#define SYMCACHE_FORMAT 6 /* 2: PLT entries named NAME@plt; 3: CUs found without .debug_aranges; 4: Rust names (symbols, inline frames) demangled; 5: signal restorers named; 6: witness keyed on ctime too */
#define SYMCACHE_HEADER 9
#define SYMCACHE_MAX_BYTES (64u << 20)
#define SYMCACHE_MAX_STR (1u << 20)

uint64_t sp_symcache_witness(const struct stat *st)
{
	uint64_t id[] = {(uint64_t)st->st_dev, (uint64_t)st->st_ino, (uint64_t)st->st_size,
			 (uint64_t)st->st_mtim.tv_sec, (uint64_t)st->st_mtim.tv_nsec,
			 (uint64_t)st->st_ctim.tv_sec, (uint64_t)st->st_ctim.tv_nsec};
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < SP_ARRAY_SIZE(id); i++)
		h = sp_hash64(h ^ id[i]);
	return h ? h : 1;
}

static char *cache_path(const char *cache_dir, const uint8_t *build_id, size_t len,
			uint64_t witness, bool dir_only)
{
	char hex[2 * SP_BUILD_ID_MAX + 1];
	if (!cache_dir || !len || len > SP_BUILD_ID_MAX || !witness)
		return NULL;
	for (size_t i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", build_id[i]);
	char *p;
	int n = dir_only ? asprintf(&p, "%s/symbols", cache_dir)
			 : asprintf(&p, "%s/symbols/%s-%016" PRIx64 ".sym", cache_dir, hex, witness);
	return n < 0 ? NULL : p;
}

/* ---- writing ----------------------------------------------------------- */

static int put_str(struct sp_buf *b, const char *s)
{
	if (!s)
		return sp_buf_put_uvarint(b, 0);
	size_t n = strlen(s);
	if (n >= SYMCACHE_MAX_STR)
		return -E2BIG;
	int err = sp_buf_put_uvarint(b, n + 1);
	return err ? err : sp_buf_append(b, s, n);
}

int sp_symcache_put(struct sp_buf *b, const struct sp_symcache_hit *h)
{
	if (h->nsrc > SYMCACHE_MAX_SRC)
		return -E2BIG;
	size_t mark = b->len;
	int err = sp_buf_put_uvarint(b, h->svma);
	if (!err)
		err = sp_buf_put_uvarint(b, h->offset);
	if (!err)
		err = put_str(b, h->name);
	if (!err)
		err = sp_buf_put_uvarint(b, h->nsrc);
	for (uint32_t i = 0; i < h->nsrc && !err; i++) {
		const struct sp_symcache_src *s = &h->src[i];
		uint8_t inl = s->is_inline;
		err = put_str(b, s->name);
		if (!err)
			err = put_str(b, s->file);
		if (!err)
			err = sp_buf_put_uvarint(b, s->line);
		if (!err)
			err = sp_buf_append(b, &inl, 1);
	}
	if (err)
		b->len = mark; /* a name too long for the format: that entry is left out */
	return err;
}

int sp_symcache_write(const char *cache_dir, const uint8_t *build_id, size_t build_id_len,
		      uint64_t witness, uint8_t source, const struct sp_buf *entries,
		      size_t count)
{
	char *dir = cache_path(cache_dir, build_id, build_id_len, witness, true);
	char *path = cache_path(cache_dir, build_id, build_id_len, witness, false);
	char *tmp = NULL;
	struct sp_buf b;
	sp_buf_init(&b);
	int err = -ENOMEM;
	uint16_t format = SYMCACHE_FORMAT;
	uint8_t fmt_le[2] = {(uint8_t)format, (uint8_t)(format >> 8)};
	if (!dir || !path || sp_buf_append(&b, SYMCACHE_MAGIC, 6) || sp_buf_append(&b, fmt_le, 2) ||
	    sp_buf_append(&b, &source, 1) || sp_buf_put_uvarint(&b, count) ||
	    (entries->len && sp_buf_append(&b, entries->data, entries->len)))
		goto out;
	uint32_t crc = (uint32_t)crc32(0L, b.data, (uInt)b.len);
	uint8_t crc_le[4] = {(uint8_t)crc, (uint8_t)(crc >> 8), (uint8_t)(crc >> 16),
			     (uint8_t)(crc >> 24)};
	if (sp_buf_append(&b, crc_le, 4))
		goto out;
	err = -E2BIG;
	if (b.len > SYMCACHE_MAX_BYTES)
		goto out;
	err = sp_cache_make_dirs(dir);
	if (err)
		goto out;
	if (asprintf(&tmp, "%s/.sym.XXXXXX", dir) < 0) {
		tmp = NULL;
		err = -ENOMEM;
		goto out;
	}
	/* Written beside its final name and renamed: readers see a whole file or the old one. */
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	err = sp_write_all(fd, b.data, b.len);
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
out:
	sp_buf_release(&b);
	free(tmp);
	free(path);
	free(dir);
	return err;
}

/* ---- reading ----------------------------------------------------------- */

static int get_str(const uint8_t **p, const uint8_t *end, const char **s, size_t *len)
{
	uint64_t v;
	if (sp_get_uvarint(p, end, &v))
		return -SP_E_SPOOL_CORRUPT;
	*s = NULL;
	*len = 0;
	if (!v)
		return 0;
	v--;
	if (v >= SYMCACHE_MAX_STR || v > (uint64_t)(end - *p) || memchr(*p, '\0', v))
		return -SP_E_SPOOL_CORRUPT;
	*s = (const char *)*p;
	*len = (size_t)v;
	*p += v;
	return 0;
}

/* The file's bytes when it is one we may trust, else NULL. */
static uint8_t *read_trusted(const char *path, size_t *len)
{
	struct stat st;
	int fd = sp_cache_open_own(path, &st);
	if (fd < 0)
		return NULL;
	uint8_t *data = NULL;
	if (st.st_size < SYMCACHE_HEADER + 5 || (uint64_t)st.st_size > SYMCACHE_MAX_BYTES)
		goto out;
	size_t n = (size_t)st.st_size, done = 0;
	data = malloc(n);
	while (data && done < n) {
		ssize_t r = read(fd, data + done, n - done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		done += (size_t)r;
	}
	if (data && done != n) {
		free(data);
		data = NULL;
	}
	if (data)
		sp_cache_touch(fd, &st);
	*len = n;
out:
	close(fd);
	return data;
}

int sp_symcache_open(const char *cache_dir, const uint8_t *build_id, size_t build_id_len,
		     uint64_t witness, struct sp_symcache_file *out)
{
	*out = (struct sp_symcache_file){0};
	char *path = cache_path(cache_dir, build_id, build_id_len, witness, false);
	if (!path)
		return cache_dir && build_id_len && build_id_len <= SP_BUILD_ID_MAX && witness
			       ? -ENOMEM
			       : -ENOENT;
	size_t len = 0;
	uint8_t *data = read_trusted(path, &len);
	free(path);
	if (!data)
		return -ENOENT;
	const uint8_t *end = data + len - 4;
	uint32_t crc = (uint32_t)end[0] | (uint32_t)end[1] << 8 | (uint32_t)end[2] << 16 |
		       (uint32_t)end[3] << 24;
	if (memcmp(data, SYMCACHE_MAGIC, 6) || (data[6] | data[7] << 8) != SYMCACHE_FORMAT ||
	    data[8] > SP_SYMCACHE_SEPARATE || crc != (uint32_t)crc32(0L, data, (uInt)(len - 4))) {
		free(data);
		return -SP_E_SPOOL_CORRUPT;
	}
	*out = (struct sp_symcache_file){.data = data, .len = len, .source = data[8]};
	return 0;
}

void sp_symcache_close(struct sp_symcache_file *cf)
{
	free(cf->data);
	*cf = (struct sp_symcache_file){0};
}

int sp_symcache_each(const struct sp_symcache_file *cf, struct sp_arena *a,
		     int (*fn)(void *ctx, const struct sp_symcache_hit *h), void *ctx)
{
	const uint8_t *p = cf->data + SYMCACHE_HEADER, *end = cf->data + cf->len - 4;
	uint64_t count;
	if (sp_get_uvarint(&p, end, &count) || count > cf->len)
		return -SP_E_SPOOL_CORRUPT;
	struct sp_symcache_src src[SYMCACHE_MAX_SRC];
	for (uint64_t i = 0; i < count; i++) {
		struct sp_symcache_hit h = {.src = src};
		uint64_t nsrc;
		const char *s;
		size_t n;
		if (sp_get_uvarint(&p, end, &h.svma) || sp_get_uvarint(&p, end, &h.offset) ||
		    get_str(&p, end, &s, &n))
			return -SP_E_SPOOL_CORRUPT;
		if (s && !(h.name = sp_arena_strndup(a, s, n)))
			return -ENOMEM;
		if (sp_get_uvarint(&p, end, &nsrc) || nsrc > SYMCACHE_MAX_SRC)
			return -SP_E_SPOOL_CORRUPT;
		h.nsrc = (uint32_t)nsrc;
		for (uint32_t k = 0; k < h.nsrc; k++) {
			uint64_t line;
			src[k] = (struct sp_symcache_src){0};
			if (get_str(&p, end, &s, &n))
				return -SP_E_SPOOL_CORRUPT;
			if (s && !(src[k].name = sp_arena_strndup(a, s, n)))
				return -ENOMEM;
			if (get_str(&p, end, &s, &n))
				return -SP_E_SPOOL_CORRUPT;
			if (s && !(src[k].file = sp_arena_strndup(a, s, n)))
				return -ENOMEM;
			if (sp_get_uvarint(&p, end, &line) || line > UINT32_MAX || p >= end ||
			    *p > 1)
				return -SP_E_SPOOL_CORRUPT;
			src[k].line = (uint32_t)line;
			src[k].is_inline = *p++;
		}
		int err = fn(ctx, &h);
		if (err)
			return err;
	}
	return p == end ? 0 : -SP_E_SPOOL_CORRUPT;
}
