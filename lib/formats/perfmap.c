/* SPDX-License-Identifier: MIT */
/* Perf map files (/tmp/perf-PID.map): bounded parsing into a table where later lines win. */
#include "formats/formats.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_MAX_BYTES (64ull << 20)
#define DEFAULT_MAX_LINES (1u << 20)
#define DEFAULT_MAX_LINE 4096

void sp_perf_map_init(struct sp_perf_map *m)
{
	memset(m, 0, sizeof(*m));
}

void sp_perf_map_release(struct sp_perf_map *m)
{
	free(m->ranges);
	free(m->names);
	sp_perf_map_init(m);
}

/* "START SIZE NAME": 1 ok, 0 malformed, -1 START + SIZE wraps. */
static int parse_line(const char *p, size_t len, uint64_t *start, uint64_t *size,
		      const char **name, size_t *name_len)
{
	const char *end = p + len;
	if (end > p && end[-1] == '\r')
		end--;
	if (!sp_text_parse_hex(&p, end, start) || p == end || !sp_text_is_blank(*p))
		return 0;
	while (p < end && sp_text_is_blank(*p))
		p++;
	if (!sp_text_parse_hex(&p, end, size) || p == end || !sp_text_is_blank(*p))
		return 0;
	while (p < end && sp_text_is_blank(*p))
		p++;
	if (p == end || memchr(p, '\0', (size_t)(end - p)) || *size == 0)
		return 0;
	/* end == 2^64 is not representable either: the range must end below it. */
	if (*size > UINT64_MAX - *start)
		return -1;
	*name = p;
	*name_len = (size_t)(end - p);
	return 1;
}

int sp_perf_map_add_name(struct sp_perf_map *m, const char *s, size_t n, uint32_t *off)
{
	if (m->names_len + n + 1 > UINT32_MAX)
		return -ENOMEM;
	if (sp_array_reserve((void **)&m->names, &m->names_cap, m->names_len + n + 1, 1))
		return -ENOMEM;
	memcpy(m->names + m->names_len, s, n);
	m->names[m->names_len + n] = '\0';
	*off = (uint32_t)m->names_len;
	m->names_len += n + 1;
	return 0;
}

/*
 * idx[0..n) ordered by keys[idx[i] * stride]: an LSD radix sort, a byte a
 * pass, skipping the bytes all keys share.  Node's 2,463-line map cost a
 * report 1.65 million instructions in qsort (of the 8.3 million it took).
 * Stable, though neither caller needs it: equal boundaries merge, and lines
 * starting at one address all enter the heap at once.  tmp holds n indices.
 */
static void sort_by_key(uint32_t *idx, uint32_t *tmp, size_t n, const uint64_t *keys,
			size_t stride)
{
	uint32_t *src = idx, *dst = tmp;
	for (unsigned shift = 0; shift < 64; shift += 8) {
		size_t count[256] = {0};
		for (size_t i = 0; i < n; i++)
			count[(keys[src[i] * stride] >> shift) & 0xff]++;
		if (count[(keys[src[0] * stride] >> shift) & 0xff] == n)
			continue;
		for (size_t b = 0, sum = 0; b < 256; b++) {
			size_t c = count[b];
			count[b] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[count[(keys[src[i] * stride] >> shift) & 0xff]++] = src[i];
		uint32_t *t = src;
		src = dst;
		dst = t;
	}
	if (src != idx)
		memcpy(idx, src, n * sizeof(*idx));
}

/* A max-heap of line indices: the newest line on top. */
static void heap_push(uint32_t *h, size_t *n, uint32_t v)
{
	size_t i = (*n)++;
	while (i > 0 && h[(i - 1) / 2] < v) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = v;
}

static void heap_pop(uint32_t *h, size_t *n)
{
	uint32_t v = h[--*n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1] > h[c])
			c++;
		if (h[c] <= v)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = v;
}

/*
 * Paint the lines in file order, each over the earlier ones: sweep the
 * sorted range boundaries with a heap of the lines covering the current
 * point, the newest on top.  O(n log n) for n lines.
 */
int sp_perf_map_build(struct sp_perf_map *m, const struct sp_perf_map_entry *e, size_t n)
{
	if (n == 0)
		return 0;
	if (n > UINT32_MAX / 2)
		return -ENOMEM; /* boundaries are indexed in 32 bits */
	/* bounds: each line's start and end; pos: them sorted, each once */
	uint64_t *bounds = malloc(2 * n * sizeof(*bounds)), *pos = malloc(2 * n * sizeof(*pos));
	uint32_t *idx = malloc(2 * n * sizeof(*idx)), *tmp = malloc(2 * n * sizeof(*tmp));
	uint32_t *order = malloc(n * sizeof(*order));
	uint32_t *heap = malloc(n * sizeof(*heap));
	/* Each boundary starts at most one range. */
	m->ranges = malloc(2 * n * sizeof(*m->ranges));
	int err = -ENOMEM;
	if (!bounds || !pos || !idx || !tmp || !order || !heap || !m->ranges)
		goto out;
	for (size_t i = 0; i < n; i++) {
		bounds[2 * i] = e[i].start;
		bounds[2 * i + 1] = e[i].end;
		idx[2 * i] = (uint32_t)(2 * i);
		idx[2 * i + 1] = (uint32_t)(2 * i + 1);
		order[i] = (uint32_t)i;
	}
	sort_by_key(idx, tmp, 2 * n, bounds, 1);
	size_t npos = 0;
	for (size_t i = 0; i < 2 * n; i++)
		if (npos == 0 || bounds[idx[i]] != pos[npos - 1])
			pos[npos++] = bounds[idx[i]];
	sort_by_key(order, tmp, n, bounds, 2); /* by start */
	size_t next = 0, nheap = 0;
	for (size_t i = 0; i + 1 < npos; i++) {
		uint64_t p = pos[i];
		while (next < n && e[order[next]].start == p)
			heap_push(heap, &nheap, order[next++]);
		while (nheap && e[heap[0]].end <= p)
			heap_pop(heap, &nheap);
		if (!nheap)
			continue;
		const struct sp_perf_map_entry *w = &e[heap[0]];
		struct sp_perf_map_range *last = m->n ? &m->ranges[m->n - 1] : NULL;
		if (last && last->end == p && last->sym_start == w->start &&
		    last->name == w->name) {
			last->end = pos[i + 1];
			continue;
		}
		m->ranges[m->n++] = (struct sp_perf_map_range){
			.start = p, .end = pos[i + 1],
			.sym_start = w->start, .sym_size = w->end - w->start, .name = w->name,
		};
	}
	err = 0;
out:
	free(bounds);
	free(pos);
	free(idx);
	free(tmp);
	free(order);
	free(heap);
	return err;
}

int sp_perf_map_read_fd(struct sp_perf_map *m, int fd, const struct sp_perf_map_limits *lim)
{
	struct sp_perf_map_limits l = lim ? *lim : (struct sp_perf_map_limits){0};
	if (!l.max_bytes)
		l.max_bytes = DEFAULT_MAX_BYTES;
	if (!l.max_lines)
		l.max_lines = DEFAULT_MAX_LINES;
	if (!l.max_line)
		l.max_line = DEFAULT_MAX_LINE;
	struct sp_line_reader r;
	int err = sp_line_reader_init(&r, fd, l.max_line, l.max_bytes);
	if (err)
		return err;
	struct sp_perf_map_entry *e = NULL;
	size_t n = 0, cap = 0;
	const char *line;
	size_t len;
	unsigned flags;
	while ((err = sp_line_reader_next(&r, &line, &len, &flags)) == 1) {
		if (m->stats.lines == l.max_lines) {
			m->stats.limited = true;
			break;
		}
		m->stats.lines++;
		uint64_t start, size;
		const char *name;
		size_t name_len;
		/*
		 * The process appends while we read: a last line without its
		 * newline may be cut anywhere, even inside a number.
		 */
		int ok = flags ? 0 : parse_line(line, len, &start, &size, &name, &name_len);
		if (ok <= 0) {
			if (ok < 0)
				m->stats.overflow++;
			else
				m->stats.malformed++;
			continue;
		}
		m->stats.entries++;
		if (l.keep && !l.keep(l.keep_arg, start, start + size))
			continue;
		if (sp_array_reserve((void **)&e, &cap, n + 1, sizeof(*e))) {
			err = -ENOMEM;
			break;
		}
		e[n].start = start;
		e[n].end = start + size;
		if ((err = sp_perf_map_add_name(m, name, name_len, &e[n].name)))
			break;
		n++;
	}
	if (r.limited)
		m->stats.limited = true;
	sp_line_reader_release(&r);
	if (err >= 0)
		err = sp_perf_map_build(m, e, n);
	free(e);
	return err < 0 ? err : 0;
}

const struct sp_perf_map_range *sp_perf_map_find(const struct sp_perf_map *m, uint64_t addr)
{
	size_t lo = sp_partition_point(m->n, i, m->ranges[i].start <= addr);
	if (lo == 0 || addr >= m->ranges[lo - 1].end)
		return NULL;
	return &m->ranges[lo - 1];
}

static uint64_t stamp_us(const struct statx_timestamp *t)
{
	return t->tv_sec < 0 ? 0 : (uint64_t)t->tv_sec * 1000000 + t->tv_nsec / 1000;
}

int sp_perf_map_open(const char *path, int64_t owner, uint64_t not_before_us, unsigned *verdict,
		     int *out)
{
	*out = -1;
	*verdict = SP_PERF_MAP_MISSING;
	/*
	 * /tmp is writable by everyone: a symlink planted there must not lead
	 * us elsewhere, nor a FIFO hang us or even be opened (sp_open_regular).
	 */
	int fd = sp_open_regular(path, O_RDONLY | O_NONBLOCK, SP_RESOLVE_NOFOLLOW);
	if (fd < 0) {
		if (errno == ELOOP || errno == EINVAL)
			*verdict = SP_PERF_MAP_INSECURE;
		return errno == ENOMEM ? -ENOMEM : 0;
	}
	struct statx st;
	if (statx(fd, "", AT_EMPTY_PATH,
		  STATX_TYPE | STATX_MODE | STATX_UID | STATX_MTIME, &st))
		goto out; /* counted as missing: nothing can be said about the file */
	if (!S_ISREG(st.stx_mode) || (st.stx_mode & (S_IWGRP | S_IWOTH))) {
		*verdict = SP_PERF_MAP_INSECURE;
		goto out;
	}
	uint32_t expected = owner >= 0 ? (uint32_t)owner : (uint32_t)geteuid();
	if (st.stx_uid != 0 && st.stx_uid != expected) {
		*verdict = SP_PERF_MAP_FOREIGN;
		goto out;
	}
	/*
	 * The last write, not the birth: a runtime whose pid an earlier
	 * process had (pids wrap at kernel.pid_max) truncates and rewrites
	 * the map that process left, keeping its birth time.  Who may have
	 * written it is the owner check's to say.
	 */
	if (sp_perf_map_stale(stamp_us(&st.stx_mtime), not_before_us)) {
		*verdict = SP_PERF_MAP_STALE;
		goto out;
	}
	*verdict = SP_PERF_MAP_USED;
	*out = fd;
	return 0;
out:
	close(fd);
	return 0;
}

int sp_perf_map_load(struct sp_perf_map *m, const char *dir, int32_t pid, int64_t owner,
		     uint64_t not_before_us, const struct sp_perf_map_limits *lim,
		     unsigned *verdict)
{
	char path[4096];
	int fd;
	*verdict = SP_PERF_MAP_MISSING;
	if (snprintf(path, sizeof(path), "%s/perf-%d.map", dir, (int)pid) >= (int)sizeof(path))
		return 0;
	int err = sp_perf_map_open(path, owner, not_before_us, verdict, &fd);
	if (err || fd < 0)
		return err;
	err = sp_perf_map_read_fd(m, fd, lim);
	if (err) {
		sp_perf_map_release(m);
		*verdict = SP_PERF_MAP_MISSING;
	}
	close(fd);
	return err;
}
