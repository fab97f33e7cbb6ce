/* SPDX-License-Identifier: MIT */
/* Unit tests of jitdump reading: complete records only, bounds, malformed files, names as a perf map. */
#include <criterion/criterion.h>

#include "formats/formats.h"
#include "jitdump_builder.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char path[64];
static struct jd_bytes bytes;

static void setup(void)
{
	strcpy(path, "/tmp/sp-jitdump-XXXXXX");
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
	memset(&bytes, 0, sizeof(bytes));
}

static void teardown(void)
{
	unlink(path);
	free(bytes.p);
}

TestSuite(jitdump, .init = setup, .fini = teardown);

/* Write bytes[from, to) at from, mode 0644; returns an fd open for reading. */
static int write_range(size_t from, size_t to)
{
	int fd = open(path, O_RDWR);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pwrite(fd, bytes.p + from, to - from, (off_t)from), (ssize_t)(to - from));
	cr_assert_eq(fchmod(fd, 0644), 0);
	return fd;
}

Test(jitdump, reads_unwinding_info_and_code_loads)
{
	static const uint8_t insns[] = {0x41, 0x0e, 0x10};
	jd_header(&bytes, 0x4A695444, 1);
	jd_unwinding(&bytes, 30, insns, sizeof(insns));
	jd_load(&bytes, 0x7f0000001000, 30, "JS:*hot app.js:1");
	int fd = write_range(0, bytes.len);
	struct sp_jitdump_reader rd;
	struct sp_jitdump_rec rec;
	struct sp_jitdump_unwind u;
	struct sp_jitdump_load ld;
	sp_jitdump_reader_init(&rd, fd, 0);
	cr_assert_eq(sp_jitdump_reader_next(&rd, &rec), 1);
	cr_assert_eq(rec.id, SP_JIT_CODE_UNWINDING_INFO);
	cr_assert(sp_jitdump_unwinding(&rec, &u));
	cr_assert_eq(u.eh_frame_len, 24 + 4 + 16);
	cr_assert_eq(u.eh_frame[0], 20, "the .eh_frame starts with the CIE");
	cr_assert_eq(sp_jitdump_reader_next(&rd, &rec), 1);
	cr_assert(sp_jitdump_code_load(&rec, &ld));
	cr_assert_eq(ld.code_addr, 0x7f0000001000);
	cr_assert_eq(ld.code_size, 30);
	cr_assert_str_eq(ld.name, "JS:*hot app.js:1");
	cr_assert_eq(sp_jitdump_reader_next(&rd, &rec), 0);
	cr_assert(!rd.bad && !rd.limited);
	sp_jitdump_reader_release(&rd);
	close(fd);
}

Test(jitdump, a_record_is_returned_only_once_complete)
{
	jd_header(&bytes, 0x4A695444, 1);
	size_t head = bytes.len;
	jd_load(&bytes, 0x1000, 64, "f");
	int fd = write_range(0, head + 20);
	struct sp_jitdump_reader rd;
	struct sp_jitdump_rec rec;
	sp_jitdump_reader_init(&rd, fd, 0);
	cr_assert_eq(sp_jitdump_reader_next(&rd, &rec), 0, "half a record is not returned");
	cr_assert(!rd.bad);
	close(write_range(head + 20, bytes.len));
	cr_assert_eq(sp_jitdump_reader_next(&rd, &rec), 1, "the rest appended: the record comes");
	cr_assert_eq(rec.id, SP_JIT_CODE_LOAD);
	cr_assert_eq(rec.body_len, 40 + 2 + 64);
	sp_jitdump_reader_release(&rd);
	close(fd);
}

Test(jitdump, other_magics_versions_and_short_records_are_bad)
{
	static const uint32_t magic[] = {0x4454694A, 0x4A695444, 0x4A695444};
	static const uint32_t version[] = {1, 2, 1};
	for (int i = 0; i < 3; i++) {
		bytes.len = 0;
		jd_header(&bytes, magic[i], version[i]);
		if (i == 2) {
			jd_u32(&bytes, 0);
			jd_u32(&bytes, 8); /* shorter than a record header */
			jd_u64(&bytes, 0);
		}
		int fd = write_range(0, bytes.len);
		struct sp_jitdump_reader rd;
		struct sp_jitdump_rec rec;
		sp_jitdump_reader_init(&rd, fd, 0);
		cr_assert_eq(sp_jitdump_reader_next(&rd, &rec), 0);
		cr_assert(rd.bad, "case %d is refused", i);
		sp_jitdump_reader_release(&rd);
		close(fd);
	}
}

Test(jitdump, oversized_records_are_passed_over_unread)
{
	jd_header(&bytes, 0x4A695444, 1);
	size_t big = bytes.len;
	jd_u32(&bytes, 0);
	jd_u32(&bytes, SP_JITDUMP_RECORD_MAX + 16);
	jd_u64(&bytes, 0);
	int fd = write_range(0, bytes.len);
	/* The next record, after the oversized one's claimed end (a sparse file). */
	struct jd_bytes next = {0};
	jd_load(&next, 0x2000, 8, "after");
	cr_assert_eq(pwrite(fd, next.p, next.len, (off_t)(big + SP_JITDUMP_RECORD_MAX + 16)),
		     (ssize_t)next.len);
	struct sp_jitdump_reader rd;
	struct sp_jitdump_rec rec;
	struct sp_jitdump_load ld;
	sp_jitdump_reader_init(&rd, fd, 0);
	cr_assert_eq(sp_jitdump_reader_next(&rd, &rec), 1);
	cr_assert(sp_jitdump_code_load(&rec, &ld));
	cr_assert_str_eq(ld.name, "after");
	cr_assert_eq(rd.skipped, 1);
	cr_assert_lt(rd.cap, 1u << 20, "the oversized record was not buffered (%zu)", rd.cap);
	sp_jitdump_reader_release(&rd);
	free(next.p);
	close(fd);
}

Test(jitdump, reading_stops_at_the_byte_bound)
{
	jd_header(&bytes, 0x4A695444, 1);
	for (int i = 0; i < 100; i++)
		jd_load(&bytes, 0x1000 + 64 * (uint64_t)i, 64, "f");
	int fd = write_range(0, bytes.len);
	struct sp_jitdump_reader rd;
	struct sp_jitdump_rec rec;
	sp_jitdump_reader_init(&rd, fd, 1000);
	int n = 0;
	while (sp_jitdump_reader_next(&rd, &rec) == 1)
		n++;
	cr_assert(rd.limited);
	cr_assert_eq(n, (1000 - 40) / (16 + 40 + 2 + 64));
	sp_jitdump_reader_release(&rd);
	close(fd);
}

Test(jitdump, malformed_bodies_are_refused)
{
	uint8_t body[64] = {0};
	struct sp_jitdump_rec rec = {.id = SP_JIT_CODE_LOAD, .body = body, .body_len = sizeof(body)};
	struct sp_jitdump_load ld;
	memset(body + 40, 'x', 24);
	cr_assert(!sp_jitdump_code_load(&rec, &ld), "a name without its NUL");
	body[50] = 0;
	uint64_t addr = UINT64_MAX - 4, size = 16;
	memcpy(body + 16, &addr, 8);
	memcpy(body + 24, &size, 8);
	cr_assert(!sp_jitdump_code_load(&rec, &ld), "a code range that wraps");
	struct sp_jitdump_unwind u;
	uint64_t f[2] = {16, 32};
	rec = (struct sp_jitdump_rec){.id = SP_JIT_CODE_UNWINDING_INFO, .body = body, .body_len = 40};
	memcpy(body, f, sizeof(f));
	cr_assert(!sp_jitdump_unwinding(&rec, &u), "a header larger than the data");
	f[0] = 17, f[1] = 0;
	memcpy(body, f, sizeof(f));
	cr_assert(!sp_jitdump_unwinding(&rec, &u), "data past the record");
	f[0] = 16;
	memcpy(body, f, sizeof(f));
	cr_assert(sp_jitdump_unwinding(&rec, &u));
	cr_assert_eq(u.eh_frame_len, 16);
}

Test(jitdump, names_are_jit_dash_digits_dot_dump)
{
	cr_assert(sp_jitdump_is_path("jit-12.dump"));
	cr_assert(sp_jitdump_is_path("/home/u/app/jit-4242.dump"));
	cr_assert(!sp_jitdump_is_path("/tmp/jit-.dump"));
	cr_assert(!sp_jitdump_is_path("/tmp/jit-12.dump.old"));
	cr_assert(!sp_jitdump_is_path("/tmp/xjit-12.dump"));
	cr_assert(!sp_jitdump_is_path("/tmp/jit-1a.dump"));
}

Test(jitdump, loads_name_code_and_a_later_load_wins)
{
	jd_header(&bytes, 0x4A695444, 1);
	jd_load(&bytes, 0x1000, 0x100, "old");
	jd_load(&bytes, 0x1080, 0x40, "new");
	close(write_range(0, bytes.len));
	struct sp_perf_map m;
	unsigned verdict;
	sp_perf_map_init(&m);
	cr_assert_eq(sp_jitdump_load(&m, path, SP_PERF_MAP_OWNER_UNKNOWN, 0, &verdict), 0);
	cr_assert_eq(verdict, SP_PERF_MAP_USED);
	cr_assert_eq(m.stats.entries, 2);
	cr_assert_str_eq(sp_perf_map_name(&m, sp_perf_map_find(&m, 0x1010)), "old");
	cr_assert_str_eq(sp_perf_map_name(&m, sp_perf_map_find(&m, 0x1090)), "new");
	cr_assert_str_eq(sp_perf_map_name(&m, sp_perf_map_find(&m, 0x10f0)), "old");
	cr_assert_null(sp_perf_map_find(&m, 0x1100));
	sp_perf_map_release(&m);
}

Test(jitdump, files_others_can_write_name_nothing)
{
	jd_header(&bytes, 0x4A695444, 1);
	jd_load(&bytes, 0x1000, 0x100, "f");
	close(write_range(0, bytes.len));
	cr_assert_eq(chmod(path, 0666), 0);
	struct sp_perf_map m;
	unsigned verdict;
	sp_perf_map_init(&m);
	cr_assert_eq(sp_jitdump_load(&m, path, SP_PERF_MAP_OWNER_UNKNOWN, 0, &verdict), 0);
	cr_assert_eq(verdict, SP_PERF_MAP_INSECURE);
	cr_assert_eq(m.n, 0);
	sp_perf_map_release(&m);
}
