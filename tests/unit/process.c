/* SPDX-License-Identifier: MIT */
/* Unit tests for module maps, the process table, callchain splits, thread roots and names. */
#include <criterion/criterion.h>

#include "record/record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Five modules visited in turns, more than the four remembered: every answer the search's. */
Test(process, recent_modules_answer_as_the_search)
{
	struct sp_process p = {0};
	for (uint32_t i = 0; i < 5; i++) {
		struct sp_proc_module m = mod(0x10000 * (i + 1), 0x10000 * (i + 1) + 0x1000, 0, i + 1);
		cr_assert_eq(sp_process_add_module(&p, &m), 0);
	}
	static const unsigned order[] = {0, 1, 0, 2, 3, 4, 0, 4, 1, 1, 3, 2, 0, 4, 4, 2};
	for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
		uint64_t pc = 0x10000 * (order[k] + 1) + 0x800;
		struct sp_proc_module *m = sp_process_find(&p, pc);
		cr_assert_not_null(m, "step %zu", k);
		cr_assert_eq(m->module_id, order[k] + 1, "step %zu", k);
		/* between two modules: none, whatever was found last */
		cr_assert_null(sp_process_find(&p, pc + 0x1000), "step %zu", k);
	}
	/* a module replaced after it was found: the new one answers */
	struct sp_proc_module n = mod(0x30000, 0x30800, 0, 9);
	cr_assert_eq(sp_process_add_module(&p, &n), 0);
	cr_assert_eq(sp_process_find(&p, 0x30400)->module_id, 9);
	cr_assert_eq(sp_process_find(&p, 0x30900)->module_id, 3);
	sp_process_release(&p);
}

/* The process found last answers first; a table that lost processes still finds by pid. */
Test(process, table_finds_by_pid_in_turns)
{
	struct sp_process_table t;
	sp_process_table_init(&t);
	for (pid_t pid = 100; pid < 110; pid++)
		cr_assert_not_null(sp_process_table_add(&t, pid));
	for (int k = 0; k < 40; k++) {
		pid_t pid = 100 + (k * 7) % 10;
		struct sp_process *p = sp_process_table_find(&t, pid);
		cr_assert(p && p->pid == pid, "pid %d", (int)pid);
		cr_assert_null(sp_process_table_find(&t, 200 + k));
	}
	/* the processes after the one found last move down, as when others are forgotten */
	cr_assert_eq(sp_process_table_find(&t, 108)->pid, 108);
	struct sp_process *gone = t.all[0];
	memmove(&t.all[0], &t.all[1], (t.n - 1) * sizeof(t.all[0]));
	t.n--;
	sp_map_release(&t.index);
	sp_map_init(&t.index);
	for (size_t i = 0; i < t.n; i++)
		cr_assert_eq(sp_map_put(&t.index, (uint64_t)(uint32_t)t.all[i]->pid, (uint32_t)i), 0);
	cr_assert_eq(sp_process_table_find(&t, 108)->pid, 108);
	cr_assert_eq(sp_process_table_find(&t, 109)->pid, 109);
	cr_assert_null(sp_process_table_find(&t, 100));
	sp_process_release(gone);
	free(gone);
	sp_process_table_release(&t);
}

/* ---- the kernel's callchain, thread roots, thread names --------------------------- */

Test(callchain, splits_kernel_and_user_parts)
{
	const uint64_t K = (uint64_t)PERF_CONTEXT_KERNEL, U = (uint64_t)PERF_CONTEXT_USER;
	const uint64_t chain[] = {K, 0xffff1000, 0xffff2000, U, 0x401000, 0x402000, 0x403000};
	struct sp_perf_sample s = {.nr_callchain = 7, .callchain = chain};
	uint64_t kpcs[8];
	const uint64_t *user;
	size_t nuser;

	cr_assert_eq(sp_callchain_split(&s, kpcs, 8, &user, &nuser), 2);
	cr_assert_eq(kpcs[0], 0xffff1000, "the sampled kernel pc is exact");
	cr_assert_eq(kpcs[1], 0xffff2000 - 1);
	cr_assert_eq(user, &chain[4]);
	cr_assert_eq(nuser, 3);
	/* at most max kernel frames */
	cr_assert_eq(sp_callchain_split(&s, kpcs, 1, &user, &nuser), 1);
	cr_assert_eq(nuser, 3);

	/* the user part ends at a later marker; a second user part replaces the first */
	const uint64_t two[] = {U, 0x401000, 0x402000, (uint64_t)PERF_CONTEXT_GUEST, 0x5000,
				U, 0x404000};
	s = (struct sp_perf_sample){.nr_callchain = 7, .callchain = two};
	cr_assert_eq(sp_callchain_split(&s, kpcs, 8, &user, &nuser), 0);
	cr_assert_eq(user, &two[6]);
	cr_assert_eq(nuser, 1);
	s.nr_callchain = 5;
	sp_callchain_split(&s, kpcs, 8, &user, &nuser);
	cr_assert_eq(user, &two[1]);
	cr_assert_eq(nuser, 2);
	/* a user marker last: an empty chain; none at all: no chain */
	s.nr_callchain = 1;
	sp_callchain_split(&s, kpcs, 8, &user, &nuser);
	cr_assert_eq(user, &two[1]);
	cr_assert_eq(nuser, 0);
	s.nr_callchain = 0;
	sp_callchain_split(&s, kpcs, 8, &user, &nuser);
	cr_assert_null(user);
	cr_assert_eq(nuser, 0);
}

Test(callchain, root_chains_of_threads_in_turns)
{
	struct sp_root_chains rc;
	sp_root_chains_init(&rc);
	/* tid 0 (the idle task's) is a thread like any other: not another's before it is seen */
	uint64_t first[3] = {0x105, 0x205, 0x305}, cut[SP_RECORD_MAX_FRAMES] = {0x999, 0x205};
	size_t ncut = 2;
	sp_root_chains_remember(&rc, 5, first, 3);
	cr_assert_not(sp_root_chains_complete(&rc, 0, cut, &ncut));
	for (uint32_t tid = 0; tid < 4; tid++) {
		uint64_t pcs[3] = {0x100 + tid, 0x200 + tid, 0x300 + tid};
		sp_root_chains_remember(&rc, tid, pcs, 3);
	}
	for (int k = 0; k < 12; k++) {
		uint32_t tid = (uint32_t)(k * 3) % 4;
		uint64_t pcs[SP_RECORD_MAX_FRAMES] = {0x999, 0x200 + tid};
		size_t n = 2;
		cr_assert(sp_root_chains_complete(&rc, tid, pcs, &n), "tid %u", tid);
		cr_assert_eq(n, 3);
		cr_assert_eq(pcs[2], 0x300 + tid);
		/* another thread's chain does not hold this frame */
		n = 2;
		cr_assert_not(sp_root_chains_complete(&rc, (tid + 1) % 4, pcs, &n));
	}
	uint64_t pcs[SP_RECORD_MAX_FRAMES] = {0x999, 0x202};
	size_t n = 2;
	sp_root_chains_forget(&rc, 2);
	cr_assert_not(sp_root_chains_complete(&rc, 2, pcs, &n));
	n = 2;
	cr_assert_not(sp_root_chains_complete(&rc, 7, pcs, &n), "a thread never seen");
	sp_root_chains_release(&rc);
}

static bool keep_odd(void *ctx, uint32_t pid, uint32_t tid, bool *written)
{
	(void)ctx, (void)pid, (void)written;
	return tid % 2;
}

Test(thread_names, found_in_turns_and_after_a_filter)
{
	struct sp_thread_names t;
	sp_thread_names_init(&t);
	cr_assert_null(sp_thread_names_find(&t, 0, 0));
	for (uint32_t tid = 0; tid < 6; tid++) {
		char name[16];
		snprintf(name, sizeof(name), "t%u", tid);
		sp_thread_names_remember(&t, 10, tid, name, false);
	}
	cr_assert_null(sp_thread_names_find(&t, 0, 0), "pid 0 tid 0 was never named");
	for (int k = 0; k < 12; k++) {
		uint32_t tid = (uint32_t)(k * 5) % 6;
		struct sp_task_comm *c = sp_thread_names_find(&t, 10, tid);
		char want[16];
		snprintf(want, sizeof(want), "t%u", tid);
		cr_assert(c && !strcmp(c->name, want), "tid %u", tid);
		cr_assert_null(sp_thread_names_find(&t, 11, tid));
	}
	cr_assert_str_eq(sp_thread_names_find(&t, 10, 2)->name, "t2");
	/* the even threads go, the odd ones move down (t5 to where t2 was) */
	sp_thread_names_filter(&t, keep_odd, NULL);
	cr_assert_null(sp_thread_names_find(&t, 10, 2));
	cr_assert_null(sp_thread_names_find(&t, 10, 4));
	cr_assert_str_eq(sp_thread_names_find(&t, 10, 5)->name, "t5");
	cr_assert_str_eq(sp_thread_names_find(&t, 10, 1)->name, "t1");
	sp_thread_names_remember(&t, 10, 1, "renamed", false);
	cr_assert_str_eq(sp_thread_names_find(&t, 10, 1)->name, "renamed");
	sp_thread_names_release(&t);
}
