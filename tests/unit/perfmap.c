/* SPDX-License-Identifier: MIT */
/* Unit tests of perf map parsing (later lines win, bad lines, limits) and of the file checks. */
#include <criterion/criterion.h>
#include <inttypes.h>

#include "formats/formats.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static char dir[64];
static struct sp_perf_map map;

static void setup(void)
{
	strcpy(dir, "/tmp/sp-perfmap-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	sp_perf_map_init(&map);
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(p);
}

static void teardown(void)
{
	sp_perf_map_release(&map);
	nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static const char *file_of(int pid)
{
	static char p[128];
	snprintf(p, sizeof(p), "%s/perf-%d.map", dir, pid);
	return p;
}

static void write_file(const char *p, const char *text, size_t len, mode_t mode)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);
	cr_assert_geq(fd, 0, "%s: %s", p, strerror(errno));
	cr_assert_eq(write(fd, text, len), (ssize_t)len);
	cr_assert_eq(fchmod(fd, mode), 0);
	close(fd);
}

/* Parse text as a perf map with the given limits (NULL: defaults). */
static void parse_n(const char *text, size_t len, const struct sp_perf_map_limits *lim)
{
	write_file(file_of(1), text, len, 0600);
	int fd = open(file_of(1), O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(sp_perf_map_read_fd(&map, fd, lim), 0);
	close(fd);
}

static void parse(const char *text)
{
	parse_n(text, strlen(text), NULL);
}

static const char *name_at(uint64_t addr)
{
	const struct sp_perf_map_range *r = sp_perf_map_find(&map, addr);
	return r ? sp_perf_map_name(&map, r) : NULL;
}

TestSuite(perfmap, .init = setup, .fini = teardown);

Test(perfmap, parses_start_size_name)
{
	parse("7f0000001000 20 py::work:/srv/app.py\n"
	      "0x7f0000002000 0x10 LazyCompile:~main file.js:1:2\n"
	      "7F0000003000\t8\tUPPER hex and tabs\n");
	cr_expect_eq(map.stats.lines, 3);
	cr_expect_eq(map.stats.entries, 3);
	cr_expect_str_eq(name_at(0x7f0000001000), "py::work:/srv/app.py");
	cr_expect_str_eq(name_at(0x7f000000101f), "py::work:/srv/app.py");
	cr_expect_null(name_at(0x7f0000001020));
	/* The name runs to the end of the line, spaces included. */
	cr_expect_str_eq(name_at(0x7f0000002008), "LazyCompile:~main file.js:1:2");
	cr_expect_str_eq(name_at(0x7f0000003007), "UPPER hex and tabs");
	cr_expect_null(name_at(0x7f0000000fff));
	const struct sp_perf_map_range *r = sp_perf_map_find(&map, 0x7f0000002008);
	cr_assert_not_null(r);
	cr_expect_eq(r->sym_start, 0x7f0000002000);
	cr_expect_eq(r->sym_size, 0x10);
}

Test(perfmap, a_later_line_wins_where_it_overlaps)
{
	parse("1000 100 old_big\n"
	      "1080 10 new_inside\n"
	      "1000 100 replaced_whole\n" /* same range again: the newest name */
	      "1040 10 newest_inside\n"
	      "2000 100 left\n"
	      "2080 100 right_over_left_tail\n"
	      "3000 10 first\n"
	      "2ff8 20 covers_first_entirely\n");
	cr_expect_str_eq(name_at(0x1000), "replaced_whole");
	cr_expect_str_eq(name_at(0x1085), "replaced_whole");
	cr_expect_str_eq(name_at(0x1040), "newest_inside");
	cr_expect_str_eq(name_at(0x104f), "newest_inside");
	cr_expect_str_eq(name_at(0x1050), "replaced_whole");
	cr_expect_str_eq(name_at(0x10ff), "replaced_whole");
	cr_expect_null(name_at(0x1100));
	cr_expect_str_eq(name_at(0x207f), "left");
	cr_expect_str_eq(name_at(0x2080), "right_over_left_tail");
	cr_expect_str_eq(name_at(0x217f), "right_over_left_tail");
	cr_expect_str_eq(name_at(0x3008), "covers_first_entirely");
	cr_expect_null(name_at(0x3018));
	/* A remnant of an earlier function keeps that function's start. */
	const struct sp_perf_map_range *r = sp_perf_map_find(&map, 0x1050);
	cr_assert_not_null(r);
	cr_expect_eq(r->sym_start, 0x1000);
	cr_expect_eq(r->start, 0x1050);
	cr_expect_eq(r->end, 0x1100);
	/* Ranges are sorted and disjoint. */
	for (size_t i = 1; i < map.n; i++)
		cr_expect_leq(map.ranges[i - 1].end, map.ranges[i].start);
}

/* keep_arg: addresses (ascending, 0-terminated); keeps a line covering one of them. */
static bool keep_covering(void *arg, uint64_t start, uint64_t end)
{
	for (const uint64_t *a = arg; *a; a++)
		if (*a >= start && *a < end)
			return true;
	return false;
}

Test(perfmap, a_filtered_read_keeps_the_lines_covering_the_wanted_addresses)
{
	static const char text[] =
		"1000 100 old_big\n"
		"1080 10 new_inside\n"
		"1040 10 newest_inside\n"
		"2000 100 unwanted\n"
		"zz 10 bad_start\n"
		"3000 10 first\n"
		"2ff8 20 covers_first_entirely\n"
		"4000 10 also_unwanted\n";
	/* Where lines overlap, every line covering a wanted address is kept: the later still wins. */
	static uint64_t want[] = {0x1044, 0x1050, 0x1085, 0x3008, 0};
	const char *expect[] = {"newest_inside", "old_big", "new_inside", "covers_first_entirely"};
	struct sp_perf_map_limits lim = {.keep = keep_covering, .keep_arg = want};
	parse_n(text, sizeof(text) - 1, &lim);
	/* Every line is still read and counted. */
	cr_expect_eq(map.stats.lines, 8);
	cr_expect_eq(map.stats.entries, 7);
	cr_expect_eq(map.stats.malformed, 1);
	for (size_t i = 0; want[i]; i++) {
		cr_expect_str_eq(name_at(want[i]), expect[i], "at %#" PRIx64, want[i]);
		const struct sp_perf_map_range *r = sp_perf_map_find(&map, want[i]);
		cr_assert_not_null(r);
		/* The same function as the whole map gives: its own start and size. */
		cr_expect_eq(r->sym_start, i == 1 ? 0x1000 : i == 3 ? 0x2ff8 : want[i] & ~0xfull);
	}
	cr_expect_null(name_at(0x2000), "a line covering no wanted address is not stored");
	cr_expect_null(name_at(0x4000));
	/* The line the winner covers entirely is kept (it covers 0x3008) but named nowhere. */
	cr_expect_null(name_at(0x3018));
	/* Only the kept lines' names are stored. */
	cr_expect_null(memmem(map.names, map.names_len, "unwanted", 8));
}

Test(perfmap, malformed_lines_are_skipped_and_counted)
{
	static const char text[] =
		"1000 10 good\n"
		"zz 10 bad_start\n"
		"1000\n"
		"1000 10\n"
		"1000 10 \n"
		"1000 0 size_zero\n"
		"0x 10 bare_prefix\n"
		"1000 -10 negative\n"
		"10000000000000000 10 seventeen_digits\n"
		"\n"
		"2000 10 name\0with_nul\n"
		"3000 10 good_two\r\n"
		"4000 10 cut_by_the_wri";
	parse_n(text, sizeof(text) - 1, NULL);
	cr_expect_eq(map.stats.lines, 13);
	cr_expect_eq(map.stats.entries, 2);
	cr_expect_eq(map.stats.malformed, 11, "malformed %lu", (unsigned long)map.stats.malformed);
	cr_expect_str_eq(name_at(0x1000), "good");
	cr_expect_str_eq(name_at(0x3000), "good_two");
	cr_expect_null(name_at(0x2000));
	/* The process may be writing the last line: without its newline it is not trusted. */
	cr_expect_null(name_at(0x4000));
}

Test(perfmap, ranges_that_wrap_past_the_top_are_rejected)
{
	parse("ffffffffffffff00 100 ends_at_2_64\n"
	      "ffffffffffffff00 200 wraps\n"
	      "ffffffffffffff00 ff fits\n"
	      "1 ffffffffffffffff wraps_too\n");
	cr_expect_eq(map.stats.overflow, 3);
	cr_expect_eq(map.stats.entries, 1);
	cr_expect_str_eq(name_at(0xfffffffffffffffe), "fits");
	cr_expect_null(name_at(0xffffffffffffffff));
	cr_expect_null(name_at(0x10));
}

Test(perfmap, huge_files_are_read_only_to_the_limits)
{
	/* 100000 lines of 16 bytes: far more than the limits below allow. */
	size_t nlines = 100000;
	char *text = malloc(nlines * 32);
	cr_assert_not_null(text);
	size_t len = 0;
	for (size_t i = 0; i < nlines; i++)
		len += (size_t)sprintf(text + len, "%zx 10 f%zu\n", 0x10000 + i * 0x10, i);
	struct sp_perf_map_limits bytes = {.max_bytes = 4096};
	parse_n(text, len, &bytes);
	cr_expect(map.stats.limited);
	cr_expect_lt(map.stats.lines, 4096 / 10);
	cr_expect_gt(map.stats.entries, 100);
	cr_expect_eq(map.stats.malformed, 0, "a line cut by the limit is not counted as bad");
	cr_expect_str_eq(name_at(0x10000), "f0");
	cr_expect_null(name_at(0x10000 + (nlines - 1) * 0x10));

	sp_perf_map_release(&map);
	struct sp_perf_map_limits lines = {.max_lines = 1000};
	parse_n(text, len, &lines);
	cr_expect(map.stats.limited);
	cr_expect_eq(map.stats.lines, 1000);
	cr_expect_eq(map.stats.entries, 1000);
	cr_expect_str_eq(name_at(0x10000 + 999 * 0x10), "f999");
	cr_expect_null(name_at(0x10000 + 1000 * 0x10));

	sp_perf_map_release(&map);
	parse_n(text, len, NULL);
	cr_expect_not(map.stats.limited);
	cr_expect_eq(map.stats.entries, nlines);
	cr_expect_eq(map.n, nlines);
	free(text);
}

Test(perfmap, overlong_lines_are_skipped)
{
	size_t big = 100000;
	char *text = malloc(big + 64);
	cr_assert_not_null(text);
	size_t len = (size_t)sprintf(text, "1000 10 before\n2000 10 ");
	memset(text + len, 'n', big);
	len += big;
	len += (size_t)sprintf(text + len, "\n3000 10 after\n");
	parse_n(text, len, NULL);
	free(text);
	cr_expect_eq(map.stats.lines, 3);
	cr_expect_eq(map.stats.malformed, 1);
	cr_expect_str_eq(name_at(0x1000), "before");
	cr_expect_null(name_at(0x2000));
	cr_expect_str_eq(name_at(0x3000), "after");
}

/* Random maps against painting every line, in order, over a small address space. */
/* Lines at base + k * unit for k in [start, start + size): painted over cells of one unit. */
static void agrees_with_painting(uint64_t base, uint64_t unit)
{
	enum { SPACE = 512, LINES = 300 };
	uint64_t x = 12345;
	for (int round = 0; round < 30; round++) {
		int painted[SPACE];
		for (int i = 0; i < SPACE; i++)
			painted[i] = -1;
		char *text = malloc(LINES * 48);
		cr_assert_not_null(text);
		size_t len = 0;
		for (int i = 0; i < LINES; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			unsigned start = (unsigned)(x >> 33) % SPACE;
			unsigned size = 1 + (unsigned)(x >> 20) % 40;
			if (start + size > SPACE)
				size = SPACE - start;
			for (unsigned a = start; a < start + size; a++)
				painted[a] = i;
			len += (size_t)sprintf(text + len, "%" PRIx64 " %" PRIx64 " n%d\n",
					       base + start * unit, size * unit, i);
		}
		sp_perf_map_release(&map);
		parse_n(text, len, NULL);
		free(text);
		for (int a = 0; a < SPACE; a++) {
			/* a cell's first and last address */
			uint64_t first = base + a * unit, last = first + unit - 1;
			for (uint64_t at = first; at <= last; at = at == last ? last + 1 : last) {
				const char *got = name_at(at);
				if (painted[a] < 0) {
					cr_assert_null(got, "%#" PRIx64 ": %s", at, got);
					continue;
				}
				char want[16];
				snprintf(want, sizeof(want), "n%d", painted[a]);
				cr_assert_not_null(got, "%#" PRIx64 ": want %s", at, want);
				cr_assert_str_eq(got, want, "at %#" PRIx64, at);
			}
		}
	}
}

Test(perfmap, agrees_with_painting_on_random_maps)
{
	agrees_with_painting(0x1000, 1);
}

/* Boundaries that differ in many bytes, as JIT code spread over the address space gives. */
Test(perfmap, agrees_with_painting_where_addresses_differ_in_every_byte)
{
	agrees_with_painting(0x7f1200000000ull, 0x1010101010ull);
}

/* ---- sp_perf_map_load: which files are believed ----------------------------- */

static unsigned load_owned(int pid, int64_t owner, uint64_t not_before_us)
{
	unsigned verdict = 99;
	sp_perf_map_release(&map);
	cr_assert_eq(sp_perf_map_load(&map, dir, pid, owner, not_before_us, NULL, &verdict), 0);
	return verdict;
}

static unsigned load_verdict(int pid, uint64_t not_before_us)
{
	return load_owned(pid, SP_PERF_MAP_OWNER_UNKNOWN, not_before_us);
}

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

Test(perfmap, a_fresh_private_file_is_used)
{
	write_file(file_of(42), "1000 10 jit_fn\n", 15, 0600);
	cr_expect_eq(load_verdict(42, 0), SP_PERF_MAP_USED);
	cr_expect_str_eq(name_at(0x1008), "jit_fn");
	/* Written just now: not older than a process that started a minute ago. */
	cr_expect_eq(load_verdict(42, now_us() - 60000000), SP_PERF_MAP_USED);
	write_file(file_of(43), "1000 10 jit_fn\n", 15, 0644);
	cr_expect_eq(load_verdict(43, 0), SP_PERF_MAP_USED);
}

/* docs/DESIGN.md, decision 9: anyone can write /tmp/perf-PID.map for any pid. */
Test(perfmap, only_the_process_user_or_root_may_name_its_code)
{
	if (geteuid() != 0)
		cr_skip_test("giving a file to another user (chown) needs root");
	const uid_t other = 65534; /* nobody */
	write_file(file_of(60), "1000 10 planted\n", 16, 0644);
	cr_assert_eq(chown(file_of(60), other, (gid_t)-1), 0);
	/* A root process, or one of another user: the planted map is refused. */
	cr_expect_eq(load_owned(60, 0, 0), SP_PERF_MAP_FOREIGN);
	cr_expect_null(name_at(0x1000));
	cr_expect_eq(load_owned(60, 1000, 0), SP_PERF_MAP_FOREIGN);
	/* The process's own user wrote it. */
	cr_expect_eq(load_owned(60, other, 0), SP_PERF_MAP_USED);
	cr_expect_str_eq(name_at(0x1000), "planted");
	/* Owner unknown (an older spool): root's or the caller's files only. */
	cr_expect_eq(load_verdict(60, 0), SP_PERF_MAP_FOREIGN);
	/* Root's map names anyone's code (a runtime run by root for them). */
	write_file(file_of(61), "1000 10 by_root\n", 16, 0644);
	cr_expect_eq(load_owned(61, other, 0), SP_PERF_MAP_USED);
}

Test(perfmap, missing_files_are_missing)
{
	cr_expect_eq(load_verdict(44, 0), SP_PERF_MAP_MISSING);
	cr_expect_eq(map.n, 0);
}

Test(perfmap, files_others_can_write_are_refused)
{
	write_file(file_of(45), "1000 10 planted\n", 16, 0666);
	cr_expect_eq(load_verdict(45, 0), SP_PERF_MAP_INSECURE);
	cr_expect_null(name_at(0x1000));
	write_file(file_of(46), "1000 10 planted\n", 16, 0620);
	cr_expect_eq(load_verdict(46, 0), SP_PERF_MAP_INSECURE);
}

Test(perfmap, symlinks_and_non_files_are_refused)
{
	char target[160];
	snprintf(target, sizeof(target), "%s/elsewhere", dir);
	write_file(target, "1000 10 elsewhere\n", 18, 0600);
	cr_assert_eq(symlink(target, file_of(47)), 0);
	cr_expect_eq(load_verdict(47, 0), SP_PERF_MAP_INSECURE);
	cr_assert_eq(mkdir(file_of(48), 0700), 0);
	cr_expect_eq(load_verdict(48, 0), SP_PERF_MAP_INSECURE);
	cr_assert_eq(mkfifo(file_of(49), 0600), 0);
	cr_expect_eq(load_verdict(49, 0), SP_PERF_MAP_INSECURE, "a FIFO must not hang the reader");
}

Test(perfmap, files_older_than_the_process_are_stale)
{
	write_file(file_of(50), "1000 10 from_an_earlier_process\n", 32, 0600);
	/* The process started a minute after the file was written: pid reuse. */
	cr_expect_eq(load_verdict(50, now_us() + 60000000), SP_PERF_MAP_STALE);
	cr_expect_null(name_at(0x1000));
	/* Within the margin: file clocks are coarse. */
	cr_expect_eq(load_verdict(50, now_us() + SP_PERF_MAP_TIME_MARGIN_US / 2), SP_PERF_MAP_USED);
	/* An old modification time alone is enough (a copy made with cp -p keeps it). */
	struct timespec old[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};
	cr_assert_eq(utimensat(AT_FDCWD, file_of(50), old, 0), 0);
	cr_expect_eq(load_verdict(50, now_us() - 60000000), SP_PERF_MAP_STALE);
	/* Without a known process start there is nothing to compare with. */
	cr_expect_eq(load_verdict(50, 0), SP_PERF_MAP_USED);
}

/*
 * A runtime that got a reused pid rewrites the map the earlier process left:
 * the file keeps its birth time, its last write is the new process's.  (The
 * process here "starts" 3 s after the file was made, the rewrite 4 s after.)
 */
Test(perfmap, a_map_rewritten_by_a_reused_pid_is_used)
{
	write_file(file_of(51), "1000 10 from_the_new_process\n", 29, 0600);
	uint64_t made = now_us();
	struct timespec later[2] = {{.tv_sec = (time_t)(made / 1000000) + 4},
				    {.tv_sec = (time_t)(made / 1000000) + 4}};
	cr_assert_eq(utimensat(AT_FDCWD, file_of(51), later, 0), 0);
	cr_expect_eq(load_verdict(51, made + 3000000), SP_PERF_MAP_USED);
}
