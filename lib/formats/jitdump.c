/* SPDX-License-Identifier: MIT */
/* jitdump files (jit-PID.dump): bounded reading of records appended by a live runtime, and their names as a perf map. */
#include "formats/formats.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define JITDUMP_MAGIC 0x4A695444u /* "JiTD" in the writer's byte order: ours */
#define HEADER_MIN 40             /* magic version total_size elf_mach pad1 pid timestamp flags */
#define HEADER_MAX 4096
#define REC_HEADER 16             /* id total_size timestamp */
#define LOAD_FIXED 40             /* pid tid vma code_addr code_size code_index */
#define UNWIND_FIXED 24           /* unwinding_size eh_frame_hdr_size mapped_size */
#define READ_CHUNK 65536
#define DEFAULT_MAX_BYTES (1ull << 30)
#define LOADS_MAX (1u << 20) /* code loads named, as perf maps' lines (sp_jitdump_load) */

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

void sp_jitdump_reader_init(struct sp_jitdump_reader *rd, int fd, uint64_t max_bytes)
{
	memset(rd, 0, sizeof(*rd));
	rd->fd = fd;
	rd->max_bytes = max_bytes ? max_bytes : DEFAULT_MAX_BYTES;
}

void sp_jitdump_reader_release(struct sp_jitdump_reader *rd)
{
	free(rd->buf);
	rd->buf = NULL;
	rd->len = rd->off = rd->cap = 0;
}

/*
 * Have need bytes from buf[off] on: 1, 0 when the file does not hold them
 * yet (or the byte bound stops it), -ENOMEM.  The runtime appends while we
 * read, so a short read is not an error: the rest comes on a later call.
 */
static int fill(struct sp_jitdump_reader *rd, size_t need)
{
	if (rd->len - rd->off >= need)
		return 1;
	if (rd->off) {
		memmove(rd->buf, rd->buf + rd->off, rd->len - rd->off);
		rd->pos += rd->off;
		rd->len -= rd->off;
		rd->off = 0;
	}
	if (need + READ_CHUNK > rd->cap) {
		size_t cap = need + READ_CHUNK;
		uint8_t *p = realloc(rd->buf, cap);
		if (!p)
			return -ENOMEM;
		rd->buf = p;
		rd->cap = cap;
	}
	while (rd->len < need) {
		uint64_t at = rd->pos + rd->len;
		if (at >= rd->max_bytes) {
			rd->limited = true;
			return 0;
		}
		size_t room = rd->cap - rd->len;
		if (room > rd->max_bytes - at)
			room = (size_t)(rd->max_bytes - at);
		ssize_t k = pread(rd->fd, rd->buf + rd->len, room, (off_t)at);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return 0;
		rd->len += (size_t)k;
	}
	return 1;
}

int sp_jitdump_reader_next(struct sp_jitdump_reader *rd, struct sp_jitdump_rec *rec)
{
	int rc;
	while (!rd->bad && !rd->limited) {
		if (!rd->header_read) {
			if ((rc = fill(rd, 12)) <= 0)
				return rc;
			const uint8_t *h = rd->buf + rd->off;
			uint32_t size = get32(h + 8);
			/* Version 1 is the only one written; a byte-swapped magic is another machine's file. */
			if (get32(h) != JITDUMP_MAGIC || get32(h + 4) != 1 || size < HEADER_MIN ||
			    size > HEADER_MAX) {
				rd->bad = true;
				return 0;
			}
			if ((rc = fill(rd, size)) <= 0)
				return rc;
			rd->off += size;
			rd->header_read = true;
		}
		if ((rc = fill(rd, REC_HEADER)) <= 0)
			return rc;
		const uint8_t *h = rd->buf + rd->off;
		uint32_t size = get32(h + 4);
		if (size < REC_HEADER) {
			rd->bad = true;
			return 0;
		}
		if (size > SP_JITDUMP_RECORD_MAX) {
			/* Passed over unread: the next record begins after it, once written. */
			rd->pos += rd->off + size;
			rd->len = rd->off = 0;
			rd->skipped++;
			continue;
		}
		if ((rc = fill(rd, size)) <= 0)
			return rc;
		h = rd->buf + rd->off;
		rec->id = get32(h);
		rec->body = h + REC_HEADER;
		rec->body_len = size - REC_HEADER;
		rd->off += size;
		return 1;
	}
	return 0;
}

bool sp_jitdump_code_load(const struct sp_jitdump_rec *r, struct sp_jitdump_load *out)
{
	if (r->id != SP_JIT_CODE_LOAD || r->body_len <= LOAD_FIXED)
		return false;
	const char *name = (const char *)r->body + LOAD_FIXED;
	const char *nul = memchr(name, '\0', r->body_len - LOAD_FIXED);
	if (!nul)
		return false;
	out->code_addr = get64(r->body + 16);
	out->code_size = get64(r->body + 24);
	if (out->code_addr + out->code_size < out->code_addr)
		return false;
	out->name = name;
	out->name_len = (size_t)(nul - name);
	return true;
}

bool sp_jitdump_unwinding(const struct sp_jitdump_rec *r, struct sp_jitdump_unwind *out)
{
	if (r->id != SP_JIT_CODE_UNWINDING_INFO || r->body_len < UNWIND_FIXED)
		return false;
	uint64_t size = get64(r->body), hdr = get64(r->body + 8);
	/*
	 * The data is the .eh_frame, then its .eh_frame_hdr (the order V8,
	 * CPython 3.13 and perf's genelf use, whatever the specification says).
	 */
	if (size > r->body_len - UNWIND_FIXED || hdr > size)
		return false;
	out->eh_frame = r->body + UNWIND_FIXED;
	out->eh_frame_len = (size_t)(size - hdr);
	return true;
}

bool sp_jitdump_is_path(const char *path)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	if (strncmp(b, "jit-", 4))
		return false;
	size_t digits = strspn(b + 4, "0123456789");
	return digits > 0 && !strcmp(b + 4 + digits, ".dump");
}

int sp_jitdump_load(struct sp_perf_map *m, const char *path, int64_t owner,
		    uint64_t not_before_us, unsigned *verdict)
{
	int fd;
	int err = sp_perf_map_open(path, owner, not_before_us, verdict, &fd);
	if (err || fd < 0)
		return err;
	struct sp_jitdump_reader rd;
	struct sp_jitdump_rec rec;
	struct sp_perf_map_entry *e = NULL;
	size_t n = 0, cap = 0;
	sp_jitdump_reader_init(&rd, fd, 0);
	while ((err = sp_jitdump_reader_next(&rd, &rec)) == 1) {
		struct sp_jitdump_load ld;
		if (rec.id != SP_JIT_CODE_LOAD)
			continue;
		if (m->stats.lines == LOADS_MAX) {
			rd.limited = true;
			break;
		}
		m->stats.lines++;
		if (!sp_jitdump_code_load(&rec, &ld) || !ld.code_size || !ld.name_len) {
			m->stats.malformed++;
			continue;
		}
		if ((err = sp_array_reserve((void **)&e, &cap, n + 1, sizeof(*e))) ||
		    (err = sp_perf_map_add_name(m, ld.name, ld.name_len, &e[n].name)))
			break;
		e[n].start = ld.code_addr;
		e[n].end = ld.code_addr + ld.code_size;
		n++;
		m->stats.entries++;
	}
	m->stats.limited = rd.limited;
	m->stats.malformed += rd.bad + rd.skipped;
	sp_jitdump_reader_release(&rd);
	close(fd);
	if (!err)
		err = sp_perf_map_build(m, e, n);
	free(e);
	if (err) {
		sp_perf_map_release(m);
		*verdict = SP_PERF_MAP_MISSING;
	}
	return err;
}
