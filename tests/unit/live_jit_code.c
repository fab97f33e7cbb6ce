/* SPDX-License-Identifier: MIT */
/* Unit tests for lib/unwind/live_jit_code.c: entries of generated code in this process, from arenas and perf maps. */
#include "unwind/unwind.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define REGION 4096
/* CPython's -X perf trampoline: sub $8,%rsp; call *%rcx; add $8,%rsp; ret */
static const uint8_t tramp[] = {0x48, 0x83, 0xec, 0x08, 0xff, 0xd1, 0x48, 0x83, 0xc4, 0x08, 0xc3};

static uint8_t *region;
static char map_path[64];

static void setup(void)
{
	region = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(region, MAP_FAILED);
	snprintf(map_path, sizeof(map_path), "/tmp/perf-%d.map", (int)getpid());
	unlink(map_path);
}

static void teardown(void)
{
	munmap(region, REGION);
	unlink(map_path);
}

TestSuite(live_jit_code, .init = setup, .fini = teardown);

/* Fill the region with copies of tramp at stride, padded with zeros (3.13) or not (3.12). */
static void fill_arena(size_t stride)
{
	memset(region, 0, REGION);
	for (size_t at = 0; at + sizeof(tramp) <= REGION; at += stride)
		memcpy(region + at, tramp, sizeof(tramp));
}

static const struct sp_cfi_row *row_at(struct sp_jit_code *j, size_t off, bool after_call,
				       struct sp_cfi_row *out)
{
	uint64_t start = (uint64_t)(uintptr_t)region;
	return sp_jit_code_row(j, start, start + REGION, start + off, after_call, out);
}

ParameterizedTestParameters(live_jit_code, trampoline_arena_without_perf_map)
{
	static size_t strides[] = {11, 16};
	return cr_make_param_array(size_t, strides, 2);
}

ParameterizedTest(size_t *stride, live_jit_code, trampoline_arena_without_perf_map)
{
	fill_arena(*stride);
	struct sp_jit_code *j = sp_jit_code_new(getpid());
	struct sp_cfi_row row;
	/* the return address in copy 37: entry + 6, after the call */
	const struct sp_cfi_row *r = row_at(j, 37 * *stride + 6, true, &row);
	cr_assert_not_null(r, "stride %zu: no row", *stride);
	cr_assert_eq(r->cfa_reg, SP_DW_RSP);
	cr_assert_eq(r->cfa_off, 16);
	/* inside copy 3's call instruction: nothing */
	cr_assert_null(row_at(j, 3 * *stride + 5, false, &row));
	/* in the padding of a 16-byte stride: no copy holds that pc */
	if (*stride == 16)
		cr_assert_null(row_at(j, 16 + 12, false, &row));
	sp_jit_code_free(j);
}

Test(live_jit_code, an_altered_copy_proves_nothing)
{
	fill_arena(11);
	region[5 * 11] = 0x90; /* copy 5 no longer matches the template */
	struct sp_jit_code *j = sp_jit_code_new(getpid());
	struct sp_cfi_row row;
	cr_assert_null(row_at(j, 5 * 11 + 6, true, &row));
	cr_assert_not_null(row_at(j, 6 * 11 + 6, true, &row));
	sp_jit_code_free(j);
}

Test(live_jit_code, a_pc_proves_the_same_until_the_code_is_forgotten)
{
	fill_arena(11);
	region[5 * 11] = 0x90;
	struct sp_jit_code *j = sp_jit_code_new(getpid());
	struct sp_cfi_row row;
	const struct sp_cfi_row *r;
	/* asked again (the row cache answers), the altered copy still proves nothing */
	for (int i = 0; i < 3; i++)
		cr_assert_null(row_at(j, 5 * 11 + 6, true, &row));
	/*
	 * A return address and the same pc sampled exactly are two questions: the
	 * call under way proves the frame, a call returned (rsp moved?) does not.
	 */
	r = row_at(j, 6 * 11 + 6, true, &row);
	cr_assert_not_null(r);
	cr_assert_eq(r->cfa_off, 16);
	for (int i = 0; i < 2; i++)
		cr_assert_null(row_at(j, 6 * 11 + 6, false, &row));
	cr_assert_not_null(row_at(j, 6 * 11 + 6, true, &row), "the cache mixed the two up");
	/* repaired in place: the bytes read are kept, so is the answer */
	memcpy(region + 5 * 11, tramp, sizeof(tramp));
	cr_assert_null(row_at(j, 5 * 11 + 6, true, &row));
	/* a new mapping over the region: read again, now it proves the frame */
	sp_jit_code_invalidate(j, (uint64_t)(uintptr_t)region, (uint64_t)(uintptr_t)region + REGION);
	r = row_at(j, 5 * 11 + 6, true, &row);
	cr_assert_not_null(r);
	cr_assert_eq(r->cfa_reg, SP_DW_RSP);
	cr_assert_eq(r->cfa_off, 16);
	sp_jit_code_free(j);
}

Test(live_jit_code, region_that_is_not_an_arena)
{
	/* one function followed by different code: no stride is proven */
	memset(region, 0xcc, REGION);
	memcpy(region, tramp, sizeof(tramp));
	struct sp_jit_code *j = sp_jit_code_new(getpid());
	struct sp_cfi_row row;
	cr_assert_null(row_at(j, 11 + 6, true, &row));
	sp_jit_code_free(j);
}

Test(live_jit_code, perf_map_gives_the_entry)
{
	/* push %rbp; mov %rsp,%rbp; call *%rax; pop %rbp; ret at offset 100, named in the map */
	static const uint8_t fn[] = {0x55, 0x48, 0x89, 0xe5, 0xff, 0xd0, 0x5d, 0xc3};
	memset(region, 0xcc, REGION);
	memcpy(region + 100, fn, sizeof(fn));
	FILE *f = fopen(map_path, "w");
	cr_assert_not_null(f);
	fprintf(f, "%lx %zx jit_fn\n", (unsigned long)(uintptr_t)(region + 100), sizeof(fn));
	cr_assert_eq(fclose(f), 0);
	struct sp_jit_code *j = sp_jit_code_new(getpid());
	struct sp_cfi_row row;
	const struct sp_cfi_row *r = row_at(j, 106, true, &row);
	cr_assert_not_null(r);
	cr_assert_eq(r->cfa_off, 16);
	cr_assert_eq((r->saved & 3), SP_CFI_AT_CFA);
	cr_assert_eq(r->saved_off[0], -16);
	/* outside every named function the region is no arena either */
	cr_assert_null(row_at(j, 20, false, &row));

	/* the code changes and a new mapping arrives over it: the bytes are read again */
	region[100] = 0x90; /* nop instead of push %rbp */
	cr_assert_eq(row_at(j, 106, true, &row)->cfa_off, 16, "cached bytes are kept");
	sp_jit_code_invalidate(j, (uint64_t)(uintptr_t)region, (uint64_t)(uintptr_t)region + REGION);
	r = row_at(j, 106, true, &row);
	cr_assert_not_null(r);
	cr_assert_eq(r->cfa_off, 8);
	sp_jit_code_free(j);
}

/* An attach reads the map before sampling: the rows come from that read, with no other. */
Test(live_jit_code, a_map_read_before_sampling_serves_the_first_lookups)
{
	static const uint8_t fn[] = {0x55, 0x48, 0x89, 0xe5, 0xff, 0xd0, 0x5d, 0xc3};
	memset(region, 0xcc, REGION);
	memcpy(region + 100, fn, sizeof(fn));
	struct sp_jit_code *j = sp_jit_code_new(getpid());
	cr_expect(!sp_jit_code_read_map(j), "no map yet, yet one was read");
	sp_jit_code_free(j);
	FILE *f = fopen(map_path, "w");
	cr_assert_not_null(f);
	fprintf(f, "%lx %zx jit_fn\n", (unsigned long)(uintptr_t)(region + 100), sizeof(fn));
	cr_assert_eq(fclose(f), 0);
	j = sp_jit_code_new(getpid());
	cr_assert(sp_jit_code_read_map(j));
	/* gone from /tmp: only the read before can name the function's entry */
	cr_assert_eq(unlink(map_path), 0);
	struct sp_cfi_row row;
	const struct sp_cfi_row *r = row_at(j, 106, true, &row);
	cr_assert_not_null(r, "the map read before sampling was not used");
	cr_expect_eq(r->cfa_off, 16);
	sp_jit_code_free(j);
}

Test(live_jit_code, perf_map_others_can_write_is_ignored)
{
	static const uint8_t fn[] = {0x55, 0xff, 0xd0, 0x5d, 0xc3};
	memset(region, 0xcc, REGION);
	memcpy(region + 100, fn, sizeof(fn));
	FILE *f = fopen(map_path, "w");
	cr_assert_not_null(f);
	fprintf(f, "%lx %zx jit_fn\n", (unsigned long)(uintptr_t)(region + 100), sizeof(fn));
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(chmod(map_path, 0666), 0);
	struct sp_jit_code *j = sp_jit_code_new(getpid());
	struct sp_cfi_row row;
	cr_assert_null(row_at(j, 103, true, &row));
	sp_jit_code_free(j);
}

/*
 * Return addresses in many arena copies, some of them sharing a set of the
 * row cache (two ways), asked in turns: each gets its own row, as many times
 * as it is asked.
 */
Test(live_jit_code, rows_of_pcs_sharing_a_cache_set)
{
	fill_arena(11);
	struct sp_jit_code *j = sp_jit_code_new(getpid());
	struct sp_cfi_row row;
	for (int pass = 0; pass < 3; pass++)
		for (size_t copy = 0; copy < 300; copy++) {
			/* after the call: a row; inside the call: none */
			const struct sp_cfi_row *r = row_at(j, copy * 11 + 6, true, &row);
			cr_assert(r && r->cfa_reg == SP_DW_RSP && r->cfa_off == 16, "copy %zu", copy);
			cr_assert_null(row_at(j, copy * 11 + 5, false, &row), "copy %zu", copy);
			/* the first instruction: CFA = rsp + 8 */
			r = row_at(j, copy * 11, false, &row);
			cr_assert(r && r->cfa_off == 8, "copy %zu", copy);
		}
	sp_jit_code_free(j);
}
