/* SPDX-License-Identifier: MIT */
/* Unit tests of JIT functions' CFI from a jitdump: rows per function, shared tables, a growing file. */
#include <criterion/criterion.h>

#include "unwind/unwind.h"
#include "formats/formats.h"
#include "jitdump_builder.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char path[64];
static struct jd_bytes bytes;
static struct sp_jitdump_cfi *cfi;

/* push %rbp (1 byte); mov %rsp,%rbp (3 bytes): CFA = rsp+16, rbp at CFA-16, then CFA = rbp+16. */
static const uint8_t framed[] = {0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06};

static void setup(void)
{
	strcpy(path, "/tmp/sp-jitcfi-XXXXXX");
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(fchmod(fd, 0644), 0);
	close(fd);
	memset(&bytes, 0, sizeof(bytes));
	cfi = NULL;
}

static void teardown(void)
{
	sp_jitdump_cfi_free(cfi);
	unlink(path);
	free(bytes.p);
}

TestSuite(jitdump_cfi, .init = setup, .fini = teardown);

static void flush_bytes(void)
{
	int fd = open(path, O_WRONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pwrite(fd, bytes.p, bytes.len, 0), (ssize_t)bytes.len);
	close(fd);
}

static void open_cfi(void)
{
	flush_bytes();
	cr_assert_eq(sp_jitdump_cfi_open(path, SP_PERF_MAP_OWNER_UNKNOWN, 0, &cfi), 0);
}

Test(jitdump_cfi, rows_follow_the_functions_eh_frame)
{
	jd_header(&bytes, 0x4A695444, 1);
	jd_unwinding(&bytes, 45, framed, sizeof(framed));
	jd_load(&bytes, 0x7f0000010000, 45, "hot");
	open_cfi();
	struct sp_cfi_row row;
	const struct sp_cfi_row *r = sp_jitdump_cfi_row(cfi, 0x7f0000010000, false, &row);
	cr_assert_not_null(r, "the entry has a row");
	cr_assert_eq(r->kind, SP_CFI_CFA_REG);
	cr_assert_eq(r->cfa_reg, SP_DW_RSP);
	cr_assert_eq(r->cfa_off, 8);
	r = sp_jitdump_cfi_row(cfi, 0x7f0000010002, false, &row);
	cr_assert_eq(r->cfa_reg, SP_DW_RSP);
	cr_assert_eq(r->cfa_off, 16, "after the push");
	r = sp_jitdump_cfi_row(cfi, 0x7f0000010020, false, &row);
	cr_assert_eq(r->cfa_reg, SP_DW_RBP);
	cr_assert_eq(r->cfa_off, 16, "after the frame is set up");
	/* A return address just past the function's end belongs to it: looked up at ra - 1. */
	r = sp_jitdump_cfi_row(cfi, 0x7f000001002d, true, &row);
	cr_assert_not_null(r);
	cr_assert_eq(r->cfa_reg, SP_DW_RBP);
	cr_assert_null(sp_jitdump_cfi_row(cfi, 0x7f000001002d, false, &row), "past its end: nothing");
	cr_assert_eq(sp_jitdump_cfi_stats(cfi)->with_cfi, 1);
}

Test(jitdump_cfi, functions_with_equal_eh_frames_share_a_table)
{
	jd_header(&bytes, 0x4A695444, 1);
	for (uint64_t i = 0; i < 50; i++) {
		jd_unwinding(&bytes, 11, framed, sizeof(framed));
		jd_load(&bytes, 0x7f0000020000 + 0x110 * i, 11, "py::f:x.py");
	}
	open_cfi();
	struct sp_cfi_row row;
	for (uint64_t i = 0; i < 50; i++)
		cr_assert_not_null(sp_jitdump_cfi_row(cfi, 0x7f0000020000 + 0x110 * i + 4, false, &row));
	const struct sp_jitdump_cfi_stats *st = sp_jitdump_cfi_stats(cfi);
	cr_assert_eq(st->functions, 50);
	cr_assert_eq(st->with_cfi, 50);
	cr_assert_eq(st->tables, 1, "one table for 50 copies (%lu)", (unsigned long)st->tables);
}

Test(jitdump_cfi, code_without_unwinding_info_has_no_row)
{
	jd_header(&bytes, 0x4A695444, 1);
	jd_unwinding(&bytes, 32, framed, sizeof(framed));
	jd_load(&bytes, 0x7f0000030000, 32, "with");
	jd_load(&bytes, 0x7f0000040000, 32, "without");
	/* Later code over the first function's addresses, without unwinding information. */
	jd_load(&bytes, 0x7f0000030000, 32, "replaced");
	open_cfi();
	struct sp_cfi_row row;
	cr_assert_null(sp_jitdump_cfi_row(cfi, 0x7f0000040004, false, &row));
	cr_assert_null(sp_jitdump_cfi_row(cfi, 0x7f0000030004, false, &row),
		       "the replacing load has no unwinding information");
}

Test(jitdump_cfi, functions_appended_later_are_found)
{
	jd_header(&bytes, 0x4A695444, 1);
	open_cfi();
	struct sp_cfi_row row;
	cr_assert_null(sp_jitdump_cfi_row(cfi, 0x7f0000050004, false, &row));
	jd_unwinding(&bytes, 32, framed, sizeof(framed));
	jd_load(&bytes, 0x7f0000050000, 32, "late");
	flush_bytes();
	const struct sp_cfi_row *r = NULL;
	/* Reads are spaced (a tenth of the time at most): try for a while. */
	for (int i = 0; i < 200 && !r; i++) {
		r = sp_jitdump_cfi_row(cfi, 0x7f0000050004, false, &row);
		if (!r)
			nanosleep(&(struct timespec){0, 1000000}, NULL);
	}
	cr_assert_not_null(r, "the function appended after the first read is found");
	cr_assert_eq(r->cfa_reg, SP_DW_RBP);
}

Test(jitdump_cfi, a_garbled_eh_frame_gives_no_row)
{
	static const uint8_t junk[] = {0xff, 0xff, 0xff};
	jd_header(&bytes, 0x4A695444, 1);
	jd_unwinding(&bytes, 32, junk, sizeof(junk));
	size_t at = bytes.len - 8 - 44 + 24; /* the FDE's length field: claim more than there is */
	bytes.p[at] = 0xf0;
	jd_load(&bytes, 0x7f0000060000, 32, "junk");
	open_cfi();
	struct sp_cfi_row row;
	cr_assert_null(sp_jitdump_cfi_row(cfi, 0x7f0000060004, false, &row));
}

Test(jitdump_cfi, files_others_can_write_are_refused)
{
	jd_header(&bytes, 0x4A695444, 1);
	flush_bytes();
	cr_assert_eq(chmod(path, 0666), 0);
	cr_assert_eq(sp_jitdump_cfi_open(path, SP_PERF_MAP_OWNER_UNKNOWN, 0, &cfi), -EPERM);
	cr_assert_null(cfi);
}
