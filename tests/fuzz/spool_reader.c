/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: the spool reader and every accessor and the dump over untrusted spool bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stackpulse.h"
#include "check.h"

/*
 * The reader promises more than memory safety: every id it hands out names
 * something that exists.  A broken promise is a crash here, so the fuzzer
 * keeps the input, rather than a silent misreport downstream.
 */

static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	devnull = fopen("/dev/null", "w");
	if (!devnull)
		abort();
	return 0;
}

/* Touch every byte of a string the reader returned, so ASan sees a bad one. */
static size_t touch(const char *s)
{
	CHECK(s != NULL);
	return strlen(s);
}

static void walk_modules(const struct sp_spool *s)
{
	size_t n = sp_spool_module_count(s);
	for (size_t i = 0; i < n; i++) {
		const struct sp_module *m = sp_spool_module(s, (uint32_t)i);
		CHECK(m && m->id == i);
		CHECK(m->start <= m->end);
		CHECK(m->build_id_len <= SP_BUILD_ID_MAX);
		touch(m->path);
	}
	CHECK(!sp_spool_module(s, (uint32_t)n));
}

static void walk_frames(const struct sp_spool *s)
{
	size_t n = sp_spool_frame_count(s), nmod = sp_spool_module_count(s);
	for (size_t i = 0; i < n; i++) {
		const struct sp_frame *f = sp_spool_frame(s, (uint32_t)i);
		CHECK(f != NULL);
		CHECK(f->module_id == SP_NO_MODULE || f->module_id < nmod);
		CHECK(f->mode <= SP_FRAME_TRUNCATED);
	}
	CHECK(!sp_spool_frame(s, (uint32_t)n));
}

/*
 * Every stack walks to the root in exactly depth steps through strictly
 * smaller parents, each node naming a real frame.  Stacks are walked from
 * every node, so a long chain costs quadratic time: the walk is capped to
 * keep the fuzzer fast on deep inputs (the reader's own loop is the same).
 */
static void walk_stacks(const struct sp_spool *s)
{
	size_t n = sp_spool_stack_count(s), nframes = sp_spool_frame_count(s);
	uint64_t budget = 1u << 20;
	CHECK(n >= 1);
	CHECK(sp_spool_stack_depth(s, 0) == 0);
	for (size_t id = 1; id < n && budget; id++) {
		uint32_t depth = sp_spool_stack_depth(s, (uint32_t)id), steps = 0;
		CHECK(depth >= 1);
		for (uint32_t node = (uint32_t)id; node; steps++) {
			uint32_t parent = sp_spool_stack_parent(s, node);
			CHECK(parent < node);
			CHECK(sp_spool_stack_frame(s, node) < nframes);
			node = parent;
		}
		CHECK(steps == depth);
		budget = budget > depth ? budget - depth : 0;
	}
	CHECK(sp_spool_stack_frame(s, (uint32_t)n) == UINT32_MAX);
	CHECK(sp_spool_stack_depth(s, (uint32_t)n) == 0);
}

static void walk_threads(const struct sp_spool *s)
{
	size_t n = sp_spool_thread_count(s);
	for (size_t i = 0; i < n; i++) {
		const struct sp_thread *t = sp_spool_thread(s, (uint32_t)i);
		CHECK(t != NULL);
		touch(t->name);
	}
	CHECK(!sp_spool_thread(s, (uint32_t)n));
}

static void walk_samples(const struct sp_spool *s)
{
	size_t n = sp_spool_sample_count(s);
	for (size_t i = 0; i < n; i++) {
		const struct sp_sample *x = sp_spool_sample(s, i);
		CHECK(x != NULL);
		CHECK(x->thread < sp_spool_thread_count(s));
		CHECK(x->stack_id < sp_spool_stack_count(s));
		(void)sp_spool_sample_time_us(s, x);
		/* The raw-replay walk: as deep as the tree says, every module real. */
		struct sp_stack_iter it;
		struct sp_frame_context fc;
		uint32_t depth = 0;
		sp_spool_stack_iter_init(&it, s, x->stack_id);
		while (sp_spool_stack_iter_next(&it, &fc)) {
			CHECK(fc.frame == sp_spool_frame(s, fc.frame_id));
			CHECK(!fc.module || fc.module == sp_spool_module(s, fc.frame->module_id));
			depth++;
		}
		CHECK(depth == sp_spool_stack_depth(s, x->stack_id));
	}
	CHECK(!sp_spool_sample(s, n));
	size_t cur = 0;
	uint64_t addr;
	while (sp_spool_kernel_frame_next(s, &cur, &addr))
		CHECK(cur <= sp_spool_frame_count(s));
}

static void walk_execs(const struct sp_spool *s)
{
	size_t n = sp_spool_exec_count(s);
	for (size_t i = 0; i < n; i++)
		CHECK(sp_spool_exec(s, i) != NULL);
	CHECK(!sp_spool_exec(s, n));
}

static void walk_summary(const struct sp_spool *s)
{
	const struct sp_summary *sum = sp_spool_summary(s);
	if (sum)
		(void)sp_summary_error_total(sum);
	(void)sp_spool_lost_total(s);
	(void)sp_spool_truncated(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_spool *s;
	if (sp_spool_open_buffer(data, size, &s))
		return 0;
	const struct sp_spool_meta *m = sp_spool_meta(s);
	CHECK(m != NULL);
	touch(m->command);
	touch(m->hostname);
	touch(m->kernel_release);
	walk_modules(s);
	walk_frames(s);
	walk_stacks(s);
	walk_threads(s);
	walk_samples(s);
	walk_execs(s);
	walk_summary(s);
	CHECK(sp_spool_dump_text(s, devnull) == 0);
	CHECK(sp_spool_dump_json(s, devnull) == 0);
	sp_spool_free(s);
	return 0;
}
