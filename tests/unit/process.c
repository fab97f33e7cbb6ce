/* SPDX-License-Identifier: MIT */
/* Unit tests for per-process module maps: overlap trimming, splitting, lookup, copies. */
#include <criterion/criterion.h>

#include "record/record.h"

static struct sp_proc_module mod(uint64_t s, uint64_t e, uint64_t off, uint32_t id)
{
	return (struct sp_proc_module){.start = s, .end = e, .file_offset = off, .module_id = id};
}

Test(process, finds_modules_by_address)
{
	struct sp_process p = {0};
	struct sp_proc_module a = mod(0x1000, 0x2000, 0, 1), b = mod(0x3000, 0x4000, 0, 2);
	cr_assert_eq(sp_process_add_module(&p, &b), 0);
	cr_assert_eq(sp_process_add_module(&p, &a), 0);
	cr_assert_eq(sp_process_find(&p, 0x1000)->module_id, 1);
	cr_assert_eq(sp_process_find(&p, 0x1fff)->module_id, 1);
	cr_assert_null(sp_process_find(&p, 0x2000));
	cr_assert_eq(sp_process_find(&p, 0x3800)->module_id, 2);
	cr_assert_null(sp_process_find(&p, 0x4000));
	sp_process_release(&p);
}

Test(process, new_mapping_splits_old_one)
{
	struct sp_process p = {0};
	struct sp_proc_module a = mod(0x1000, 0x9000, 0x100000, 1), b = mod(0x3000, 0x4000, 0, 2);
	sp_process_add_module(&p, &a);
	sp_process_add_module(&p, &b);
	cr_assert_eq(p.nmods, 3);
	cr_assert_eq(sp_process_find(&p, 0x2fff)->module_id, 1);
	cr_assert_eq(sp_process_find(&p, 0x3000)->module_id, 2);
	struct sp_proc_module *tail = sp_process_find(&p, 0x4000);
	cr_assert_eq(tail->module_id, 1);
	/* The right part keeps mapping the same file bytes. */
	cr_assert_eq(tail->file_offset, 0x100000 + 0x3000);
	cr_assert_eq(tail->um.start, 0x4000);
	sp_process_release(&p);
}

/*
 * Issue 28: a split of a module with others above it moved those up by one
 * slot for two new ones, so the next module was overwritten and the last
 * slot counted without being written (a file pointer of whatever the heap
 * held there: 0xbebebebe... under AddressSanitizer).
 */
Test(process, split_keeps_the_modules_above_it)
{
	struct sp_process p = {0};
	/* the last one lies inside the first, below the other two */
	const struct sp_proc_module maps[] = {mod(0x1000, 0x9000, 0, 1), mod(0xa000, 0xb000, 0, 2),
					      mod(0xc000, 0xd000, 0, 3), mod(0x3000, 0x4000, 0, 9)};
	for (size_t i = 0; i < 4; i++)
		cr_assert_eq(sp_process_add_module(&p, &maps[i]), 0);
	cr_assert_eq(p.nmods, 5);
	static const uint64_t starts[] = {0x1000, 0x3000, 0x4000, 0xa000, 0xc000};
	static const uint32_t ids[] = {1, 9, 1, 2, 3};
	for (size_t i = 0; i < p.nmods; i++) {
		cr_assert_eq(p.mods[i].start, starts[i], "module %zu", i);
		cr_assert_eq(p.mods[i].module_id, ids[i], "module %zu", i);
		cr_assert_eq(p.mods[i].um.start, p.mods[i].start, "module %zu", i);
	}
	cr_assert_eq(sp_process_find(&p, 0xa800)->module_id, 2);
	cr_assert_eq(sp_process_find(&p, 0xc800)->module_id, 3);
	sp_process_release(&p);
}

/*
 * Mappings of random pages, one after another, against a page-by-page
 * model: after each, the modules are sorted, non-empty and apart, and every
 * page finds the module that mapped it last.
 */
Test(process, random_mappings_match_a_page_model)
{
	enum { PAGES = 48, ROUNDS = 3000, STEPS = 10 };
	uint64_t seed = 28;
	for (int round = 0; round < ROUNDS; round++) {
		struct sp_process p = {0};
		uint32_t model[PAGES] = {0};
		for (uint32_t id = 1; id <= STEPS; id++) {
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			uint64_t x = (seed >> 33) % PAGES, y = (seed >> 45) % PAGES + 1;
			struct sp_proc_module m = mod(x < y ? x : y, x < y ? y : x + 1, 0, id);
			cr_assert_eq(sp_process_add_module(&p, &m), 0);
			for (uint64_t pg = m.start; pg < m.end; pg++)
				model[pg] = id;
			for (size_t i = 0; i < p.nmods; i++) {
				cr_assert_lt(p.mods[i].start, p.mods[i].end, "round %d", round);
				cr_assert(i == 0 || p.mods[i - 1].end <= p.mods[i].start, "round %d",
					  round);
			}
			for (uint64_t pg = 0; pg < PAGES; pg++) {
				const struct sp_proc_module *f = sp_process_find(&p, pg);
				cr_assert_eq(f ? f->module_id : 0, model[pg], "round %d, page %llu",
					     round, (unsigned long long)pg);
			}
		}
		sp_process_release(&p);
	}
}

Test(process, new_mapping_replaces_covered_and_trims_neighbours)
{
	struct sp_process p = {0};
	struct sp_proc_module m1 = mod(0x1000, 0x3000, 0, 1), m2 = mod(0x3000, 0x4000, 0, 2),
			      m3 = mod(0x4000, 0x6000, 0, 3), big = mod(0x2000, 0x5000, 0, 9);
	sp_process_add_module(&p, &m1);
	sp_process_add_module(&p, &m2);
	sp_process_add_module(&p, &m3);
	sp_process_add_module(&p, &big);
	cr_assert_eq(p.nmods, 3);
	cr_assert_eq(sp_process_find(&p, 0x1fff)->module_id, 1);
	cr_assert_eq(sp_process_find(&p, 0x2000)->module_id, 9);
	cr_assert_eq(sp_process_find(&p, 0x4fff)->module_id, 9);
	cr_assert_eq(sp_process_find(&p, 0x5000)->module_id, 3);
	cr_assert_eq(sp_process_find(&p, 0x5000)->file_offset, 0x1000);
	sp_process_release(&p);
}

Test(process, copy_and_clear)
{
	struct sp_process p = {0}, c = {0};
	struct sp_proc_module a = mod(0x1000, 0x2000, 0, 1);
	sp_process_add_module(&p, &a);
	cr_assert_eq(sp_process_copy_modules(&c, &p), 0);
	cr_assert_eq(sp_process_find(&c, 0x1800)->module_id, 1);
	sp_process_clear_modules(&c);
	cr_assert_null(sp_process_find(&c, 0x1800));
	cr_assert_eq(sp_process_find(&p, 0x1800)->module_id, 1);
	sp_process_release(&p);
	sp_process_release(&c);
}

/* An exec moves the modules aside until the new image runs; a second exec drops the first's. */
Test(process, exec_keeps_the_old_image_aside)
{
	struct sp_process p = {0};
	struct sp_proc_module a = mod(0x1000, 0x2000, 0, 1), b = mod(0x5000, 0x6000, 0, 2),
			      c = mod(0x8000, 0x9000, 0, 3);
	sp_process_add_module(&p, &a);
	uint64_t gen = p.gen;
	sp_process_begin_exec(&p);
	cr_assert_neq(p.gen, gen, "the module set changed");
	cr_assert_eq(p.nmods, 0);
	cr_assert_null(sp_process_find(&p, 0x1800));
	cr_assert_eq(sp_process_find_pre_exec(&p, 0x1800)->module_id, 1);
	cr_assert_null(sp_process_find_pre_exec(&p, 0x2000));
	sp_process_add_module(&p, &b);
	cr_assert_eq(sp_process_find(&p, 0x5800)->module_id, 2);
	cr_assert_eq(sp_process_find_pre_exec(&p, 0x1800)->module_id, 1);
	sp_process_begin_exec(&p);
	sp_process_add_module(&p, &c);
	cr_assert_null(sp_process_find_pre_exec(&p, 0x1800), "the first image is gone");
	cr_assert_eq(sp_process_find_pre_exec(&p, 0x5800)->module_id, 2);
	sp_process_end_exec(&p);
	cr_assert_null(p.pre_exec);
	cr_assert_null(sp_process_find_pre_exec(&p, 0x5800));
	cr_assert_eq(sp_process_find(&p, 0x8800)->module_id, 3);
	sp_process_begin_exec(&p);
	sp_process_release(&p);
	cr_assert_null(p.pre_exec, "release frees the old image too");
}

Test(process, python_module_names)
{
	cr_assert(sp_is_python_module("/usr/bin/python3.11"));
	cr_assert(sp_is_python_module("python3"));
	cr_assert(sp_is_python_module("/usr/lib/x86_64-linux-gnu/libpython3.12.so.1.0"));
	cr_assert_not(sp_is_python_module("/usr/bin/python3-config"));
	cr_assert_not(sp_is_python_module("/usr/lib/libc.so.6"));
	cr_assert_not(sp_is_python_module("/usr/bin/pythonista"));
}
