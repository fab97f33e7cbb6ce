/* SPDX-License-Identifier: MIT */
/* Shared by the spool unit tests: a small spool with every record kind, and byte helpers. */
#ifndef SP_TEST_SPOOL_FIXTURE_H
#define SP_TEST_SPOOL_FIXTURE_H

#include <criterion/criterion.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spool/spool.h"

/* ---- a scratch directory per test ---------------------------------------- */

static char tmp_dir[64];

static inline void tmp_setup(void)
{
	strcpy(tmp_dir, "/tmp/sp-spool-test-XXXXXX");
	cr_assert_not_null(mkdtemp(tmp_dir), "mkdtemp: %s", strerror(errno));
}

static inline int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static inline void tmp_teardown(void)
{
	if (tmp_dir[0])
		nftw(tmp_dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static inline const char *tmp_path(const char *name)
{
	static char path[128];
	snprintf(path, sizeof(path), "%s/%s", tmp_dir, name);
	return path;
}

/* The whole file in a malloc'd buffer (NUL-terminated for text). */
static inline uint8_t *slurp(const char *path, size_t *len)
{
	struct sp_buf b;
	sp_buf_init(&b);
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char chunk[4096];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		cr_assert_eq(sp_buf_append(&b, chunk, n), 0);
	fclose(f);
	cr_assert_eq(sp_buf_append(&b, "", 1), 0);
	*len = b.len - 1;
	return b.data;
}

/* The fixtures directory, found from this source file's path (tests run from the top). */
static inline const char *fixture_path(const char *name)
{
	static char path[512];
	const char *dir = getenv("SP_FIXTURES");
	if (dir) {
		snprintf(path, sizeof(path), "%s/%s", dir, name);
	} else {
		const char *slash = strrchr(__FILE__, '/');
		int n = slash ? (int)(slash - __FILE__) : 1;
		snprintf(path, sizeof(path), "%.*s/../fixtures/%s", n, slash ? __FILE__ : ".", name);
	}
	return path;
}

/* ---- the small spool ------------------------------------------------------ */

static const struct sp_spool_meta small_meta = {
	.start_timestamp_us = 1700000000123456ull,
	.sample_interval_us = 1001,
	.start_monotonic_ns = 5000000000ull,
	.frequency_hz = 999,
	.stack_size = 32768,
	.event_source = SP_EVENT_CPU_CLOCK,
	.command = "./chain4 \"a b\"",
	.hostname = "testhost",
	.kernel_release = "6.1.0-test",
};

static const struct sp_module small_modules[] = {
	{.pid = 4242, .start = 0x555555555000, .end = 0x555555556000, .file_offset = 0x1000,
	 .inode = 1234567, .dev_major = 8, .dev_minor = 1, .load_bias = 0x555555554000,
	 .file_size = 16400, .mtime_ns = 1699999999123456789ll, .flags = SP_MODULE_HAS_BIAS,
	 .build_id_len = 20,
	 .build_id = {0xde, 0xad, 0xbe, 0xef, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
		      0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f},
	 .path = "/opt/demo/chain4"},
	{.pid = 4242, .start = 0x7ffff7dd0000, .end = 0x7ffff7f25000, .file_offset = 0x26000,
	 .inode = 0x40123, .dev_major = 254, .dev_minor = 0, .load_bias = 0x7ffff7daa000,
	 .file_size = 1922136, .mtime_ns = -5, .flags = SP_MODULE_HAS_BIAS | SP_MODULE_DELETED,
	 .path = "/usr/lib/x86_64-linux-gnu/libc.so.6 (deleted)\x01\xc3\xa9"},
	{.pid = -1, .start = 0xffffffff81000000, .end = 0xffffffff82000000,
	 .flags = SP_MODULE_KERNEL | (1u << 9), .path = "[kernel.kallsyms]"},
};

static const struct sp_frame small_frames[] = {
	{0, SP_FRAME_USER, 0x555555555100, 0x1100},
	{0, SP_FRAME_USER, 0x555555555200, 0x1200},
	{1, SP_FRAME_USER, 0x7ffff7df9d8f, 0x7ffff7df9d8f - 0x7ffff7dd0000 + 0x26000},
	{2, SP_FRAME_KERNEL, 0xffffffff81a0b0c0, 0xa0b0c0},
	{SP_NO_MODULE, SP_FRAME_USER, 0x12345, 0},
	{SP_NO_MODULE, SP_FRAME_TRUNCATED, SP_STOP_STACK_EXHAUSTED, 0},
	/* A rel_ip off the usual formula must still round-trip exactly. */
	{0, SP_FRAME_USER, 0x555555555300, 0xdeadbeef},
};

/* Stacks as frame ids, leaf first. */
static const uint32_t small_stack_a[] = {3, 0, 1, 2};
static const uint32_t small_stack_b[] = {4, 1, 2}; /* shares (1, 2) with a */
static const uint32_t small_stack_c[] = {6, 5};

struct small_ids {
	uint32_t stack_a, stack_b, stack_c;
	uint32_t t0, t1;
};

static const struct sp_exec small_exec = {.timestamp_ns = 5000500000ull, .pid = 4242,
					  .is_python_runtime = true};

static inline struct sp_summary small_summary(void)
{
	struct sp_summary s = {
		.sample_events = 11, .samples = 4, .lost_events = 7, .kernel_enabled = true,
		.missing_pid_samples = 1, .missing_tid_samples = 2, .idle_tid_samples = 3,
		.missing_timestamp_samples = 4, .empty_stack_samples = 1,
		.truncated_frame_markers = 1, .ignored_user_callchain_frames = 9,
	};
	for (unsigned i = 0; i < SP_STOP_COUNT_; i++)
		s.stop_reasons[i] = 100 + i;
	for (unsigned i = 0; i < SP_ERR_COUNT_; i++)
		s.error_stats[i] = 200 + i;
	return s;
}

/* Expected samples: thread index, stack (resolved after interning), timestamp. */
#define SMALL_NSAMPLES 4
static const uint64_t small_times[SMALL_NSAMPLES] = {
	5001000000ull, 5002001001ull, 5001999000ull /* earlier than the previous one */,
	5003000000ull,
};

/* Write the small spool to path with every record kind; fills ids. */
static inline void write_small(const char *path, struct small_ids *ids)
{
	struct sp_spool_writer *w;
	cr_assert_eq(sp_spool_writer_open(path, &small_meta, &w), 0);
	for (uint32_t i = 0; i < SP_ARRAY_SIZE(small_modules); i++) {
		uint32_t id;
		cr_assert_eq(sp_spool_writer_add_module(w, &small_modules[i], &id), 0);
		cr_assert_eq(id, i);
	}
	for (uint32_t i = 0; i < SP_ARRAY_SIZE(small_frames); i++) {
		uint32_t id;
		cr_assert_eq(sp_spool_writer_intern_frame(w, &small_frames[i], &id), 0);
		cr_assert_eq(id, i);
	}
	cr_assert_eq(sp_spool_writer_intern_thread(w, 4242, 4242, &ids->t0), 0);
	cr_assert_eq(sp_spool_writer_set_thread_name(w, ids->t0, "chain4"), 0);
	cr_assert_eq(sp_spool_writer_intern_stack(w, small_stack_a, 4, &ids->stack_a), 0);
	cr_assert_eq(sp_spool_writer_append_sample(w, ids->t0, ids->stack_a, small_times[0]), 0);
	cr_assert_eq(sp_spool_writer_append_exec(w, &small_exec), 0);
	cr_assert_eq(sp_spool_writer_intern_thread(w, 4242, 4243, &ids->t1), 0);
	cr_assert_eq(sp_spool_writer_set_thread_name(w, ids->t1, "wor\"ker\n"), 0);
	cr_assert_eq(sp_spool_writer_intern_stack(w, small_stack_b, 3, &ids->stack_b), 0);
	cr_assert_eq(sp_spool_writer_append_sample(w, ids->t1, ids->stack_b, small_times[1]), 0);
	cr_assert_eq(sp_spool_writer_append_sample(w, ids->t0, 0, small_times[2]), 0);
	cr_assert_eq(sp_spool_writer_append_lost(w, 7, 5002500000ull), 0);
	cr_assert_eq(sp_spool_writer_set_thread_name(w, ids->t0, "chain4-main"), 0);
	cr_assert_eq(sp_spool_writer_intern_stack(w, small_stack_c, 2, &ids->stack_c), 0);
	cr_assert_eq(sp_spool_writer_append_sample(w, ids->t1, ids->stack_c, small_times[3]), 0);
	struct sp_summary sum = small_summary();
	cr_assert_eq(sp_spool_writer_finish(w, &sum), 0);
	sp_spool_writer_free(w);
}

/* The small spool's bytes (malloc'd). */
static inline uint8_t *small_bytes(size_t *len, struct small_ids *ids)
{
	struct small_ids local;
	write_small(tmp_path("small.spool"), ids ? ids : &local);
	uint8_t *data = slurp(tmp_path("small.spool"), len);
	cr_assert_not_null(data);
	return data;
}

/* Dump a spool into a malloc'd string. */
static inline char *dump_string_with(const struct sp_spool *s,
				     int (*dump)(const struct sp_spool *, FILE *))
{
	char *text = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&text, &n);
	cr_assert_not_null(f);
	cr_assert_eq(dump(s, f), 0);
	fclose(f);
	return text;
}

/* The text dump (sp_spool_dump_text) in a malloc'd string. */
static inline char *dump_string(const struct sp_spool *s)
{
	return dump_string_with(s, sp_spool_dump_text);
}

/* The JSON Lines dump (sp_spool_dump_json) in a malloc'd string. */
static inline char *dump_json_string(const struct sp_spool *s)
{
	return dump_string_with(s, sp_spool_dump_json);
}

/*
 * Use everything a consumer would reach from an accepted spool: a corrupt
 * file that the reader accepts must still be internally consistent.
 */
static inline void check_consistent(const struct sp_spool *s)
{
	for (size_t i = 0; i < sp_spool_frame_count(s); i++) {
		const struct sp_frame *f = sp_spool_frame(s, (uint32_t)i);
		cr_assert_not_null(f);
		if (f->module_id != SP_NO_MODULE)
			cr_assert_not_null(sp_spool_module(s, f->module_id));
	}
	for (size_t i = 0; i < sp_spool_module_count(s); i++)
		cr_assert_not_null(sp_spool_module(s, (uint32_t)i)->path);
	for (size_t i = 0; i < sp_spool_thread_count(s); i++)
		cr_assert_not_null(sp_spool_thread(s, (uint32_t)i)->name);
	for (size_t i = 0; i < sp_spool_sample_count(s); i++) {
		const struct sp_sample *x = sp_spool_sample(s, i);
		cr_assert_not_null(sp_spool_thread(s, x->thread));
		uint32_t depth = 0;
		for (uint32_t id = x->stack_id; id; id = sp_spool_stack_parent(s, id)) {
			cr_assert_lt(sp_spool_stack_parent(s, id), id);
			cr_assert_not_null(sp_spool_frame(s, sp_spool_stack_frame(s, id)));
			depth++;
		}
		cr_assert_eq(depth, sp_spool_stack_depth(s, x->stack_id));
		(void)sp_spool_timestamp_us(s, x);
		struct sp_stack_iter it;
		struct sp_frame_context fc;
		uint32_t walked = 0;
		sp_spool_stack_iter_init(&it, s, x->stack_id);
		while (sp_spool_stack_iter_next(&it, &fc))
			walked++;
		cr_assert_eq(walked, depth);
	}
	free(dump_string(s));
	free(dump_json_string(s));
}

/* Append one record (type, uvarint length, payload) to b. */
static inline void put_record(struct sp_buf *b, uint8_t type, const void *payload, size_t n)
{
	cr_assert_eq(sp_buf_append(b, &type, 1), 0);
	cr_assert_eq(sp_buf_put_uvarint(b, n), 0);
	cr_assert_eq(sp_buf_append(b, payload, n), 0);
}

/* Header + META of an otherwise empty spool, into b. */
static inline void empty_prefix(struct sp_buf *b)
{
	struct sp_spool_writer *w;
	cr_assert_eq(sp_spool_writer_open(tmp_path("empty.spool"), &small_meta, &w), 0);
	sp_spool_writer_free(w);
	size_t len;
	uint8_t *data = slurp(tmp_path("empty.spool"), &len);
	cr_assert_not_null(data);
	sp_buf_init(b);
	cr_assert_eq(sp_buf_append(b, data, len), 0);
	free(data);
}

#endif
