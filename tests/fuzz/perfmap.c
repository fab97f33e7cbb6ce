/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: the perf map parser over an untrusted /tmp/perf-PID.map, with default and tight limits, whole and filtered. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "formats/formats.h"
#include "check.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The parser reads an fd, as it reads the profiled process's file: a memory file stands in. */
static int memfd = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	memfd = memfd_create("perfmap", MFD_CLOEXEC);
	if (memfd < 0)
		abort();
	return 0;
}

static void check_find(const struct sp_perf_map *m, uint64_t addr)
{
	const struct sp_perf_map_range *r = sp_perf_map_find(m, addr);
	if (r)
		CHECK(r >= m->ranges && r < m->ranges + m->n && r->start <= addr && addr < r->end);
}

/*
 * Ranges are sorted, disjoint and non-empty, each inside the line that named
 * it, with a name inside the name table; lookups at every boundary agree.
 */
static void check_map(const struct sp_perf_map *m)
{
	CHECK(m->stats.entries <= m->stats.lines);
	CHECK(m->n <= 2 * m->stats.entries);
	for (size_t i = 0; i < m->n; i++) {
		const struct sp_perf_map_range *r = &m->ranges[i];
		CHECK(r->start < r->end);
		CHECK(i == 0 || m->ranges[i - 1].end <= r->start);
		CHECK(r->sym_start <= r->start && r->sym_size > 0);
		CHECK(r->end - r->sym_start <= r->sym_size);
		CHECK(r->name < m->names_len);
		const char *name = sp_perf_map_name(m, r);
		size_t left = m->names_len - r->name;
		CHECK(memchr(name, '\0', left) != NULL && name[0] != '\0');
		CHECK(sp_perf_map_find(m, r->start) == r);
		CHECK(sp_perf_map_find(m, r->end - 1) == r);
		check_find(m, r->end);
		if (r->start)
			check_find(m, r->start - 1);
	}
	check_find(m, 0);
	check_find(m, UINT64_MAX);
}

/* Parse the memory file into m (initialised here): 0 when read, and checked. */
static int parse_into(struct sp_perf_map *m, const struct sp_perf_map_limits *lim)
{
	sp_perf_map_init(m);
	if (lseek(memfd, 0, SEEK_SET) != 0)
		abort();
	int err = sp_perf_map_read_fd(m, memfd, lim);
	if (!err) {
		check_map(m);
		if (lim && lim->max_lines)
			CHECK(m->stats.lines <= lim->max_lines);
	}
	return err;
}

static void parse(const struct sp_perf_map_limits *lim)
{
	struct sp_perf_map m;
	parse_into(&m, lim);
	sp_perf_map_release(&m);
}

#define MAX_WANTED 64

/* Addresses a filtered read is asked to keep (ascending). */
struct wanted {
	uint64_t addr[MAX_WANTED];
	size_t n;
};

static bool keep_wanted(void *arg, uint64_t start, uint64_t end)
{
	const struct wanted *w = arg;
	for (size_t i = 0; i < w->n; i++)
		if (w->addr[i] >= start && w->addr[i] < end)
			return true;
	return false;
}

/*
 * A read that keeps only the lines covering some addresses (a report's:
 * docs/DESIGN.md, decision 9) names each of them as the whole map does, and
 * counts the same lines.
 */
static void check_filtered(const struct sp_perf_map *full)
{
	struct wanted w = {.n = 0};
	for (size_t i = 0; i < full->n && w.n + 2 <= MAX_WANTED; i += 2) {
		w.addr[w.n++] = full->ranges[i].start;
		if (full->ranges[i].end - 1 > full->ranges[i].start)
			w.addr[w.n++] = full->ranges[i].end - 1;
	}
	struct sp_perf_map_limits lim = {.keep = keep_wanted, .keep_arg = &w};
	struct sp_perf_map m;
	if (!parse_into(&m, &lim)) {
		CHECK(m.stats.lines == full->stats.lines && m.stats.entries == full->stats.entries);
		CHECK(m.stats.malformed == full->stats.malformed &&
		      m.stats.overflow == full->stats.overflow);
		for (size_t i = 0; i < w.n; i++) {
			const struct sp_perf_map_range *a = sp_perf_map_find(full, w.addr[i]);
			const struct sp_perf_map_range *b = sp_perf_map_find(&m, w.addr[i]);
			CHECK(a && b && a->sym_start == b->sym_start && a->sym_size == b->sym_size);
			CHECK(!strcmp(sp_perf_map_name(full, a), sp_perf_map_name(&m, b)));
		}
	}
	sp_perf_map_release(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (ftruncate(memfd, 0) || pwrite(memfd, data, size, 0) != (ssize_t)size)
		abort();
	struct sp_perf_map full;
	if (!parse_into(&full, NULL))
		check_filtered(&full);
	sp_perf_map_release(&full);
	/* Tight limits cut lines and files mid-way: what is kept must still be consistent. */
	struct sp_perf_map_limits tight = {
		.max_bytes = size / 2 + 1,
		.max_lines = 5,
		.max_line = 24,
	};
	parse(&tight);
	return 0;
}
