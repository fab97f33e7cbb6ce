/* SPDX-License-Identifier: MIT */
/* Unit tests of the spool writer and the round trip through the reader (lib/spool/spool_writer.c). */
#include <signal.h>
#include <sys/wait.h>

#include "spool_fixture.h"

TestSuite(spool_roundtrip, .init = tmp_setup, .fini = tmp_teardown);
TestSuite(spool_writer, .init = tmp_setup, .fini = tmp_teardown);

static struct sp_spool *open_ok(const char *path)
{
	struct sp_spool *s = NULL;
	int err = sp_spool_open(path, &s);
	cr_assert_eq(err, 0, "sp_spool_open: %s", sp_strerror(err));
	return s;
}

static void assert_stack(const struct sp_spool *s, uint32_t id, const uint32_t *frames,
			 size_t n)
{
	cr_assert_eq(sp_spool_stack_depth(s, id), n);
	for (size_t i = 0; i < n; i++, id = sp_spool_stack_parent(s, id))
		cr_assert_eq(sp_spool_stack_frame(s, id), frames[i], "frame %zu", i);
	cr_assert_eq(id, 0, "stack continues past its root");
}

Test(spool_roundtrip, every_record_kind)
{
	struct small_ids ids;
	write_small(tmp_path("rt.spool"), &ids);
	struct sp_spool *s = open_ok(tmp_path("rt.spool"));
	cr_assert_not(sp_spool_truncated(s));

	const struct sp_spool_meta *m = sp_spool_meta(s);
	cr_assert_eq(m->start_timestamp_us, small_meta.start_timestamp_us);
	cr_assert_eq(m->sample_interval_us, small_meta.sample_interval_us);
	cr_assert_eq(m->start_monotonic_ns, small_meta.start_monotonic_ns);
	cr_assert_eq(m->frequency_hz, small_meta.frequency_hz);
	cr_assert_eq(m->stack_size, small_meta.stack_size);
	cr_assert_eq(m->event_source, small_meta.event_source);
	cr_assert_str_eq(m->command, small_meta.command);
	cr_assert_str_eq(m->hostname, small_meta.hostname);
	cr_assert_str_eq(m->kernel_release, small_meta.kernel_release);

	cr_assert_eq(sp_spool_module_count(s), SP_ARRAY_SIZE(small_modules));
	for (uint32_t i = 0; i < SP_ARRAY_SIZE(small_modules); i++) {
		const struct sp_module *a = sp_spool_module(s, i), *e = &small_modules[i];
		cr_assert_eq(a->id, i);
		cr_assert_eq(a->pid, e->pid);
		cr_assert_eq(a->start, e->start);
		cr_assert_eq(a->end, e->end);
		cr_assert_eq(a->file_offset, e->file_offset);
		cr_assert_eq(a->inode, e->inode);
		cr_assert_eq(a->dev_major, e->dev_major);
		cr_assert_eq(a->dev_minor, e->dev_minor);
		cr_assert_eq(a->load_bias, e->load_bias);
		cr_assert_eq(a->file_size, e->file_size);
		cr_assert_eq(a->mtime_ns, e->mtime_ns);
		cr_assert_eq(a->flags, e->flags);
		cr_assert_eq(a->build_id_len, e->build_id_len);
		cr_assert_arr_eq(a->build_id, e->build_id, e->build_id_len);
		cr_assert_str_eq(a->path, e->path);
	}
	cr_assert_null(sp_spool_module(s, SP_ARRAY_SIZE(small_modules)));

	cr_assert_eq(sp_spool_frame_count(s), SP_ARRAY_SIZE(small_frames));
	for (uint32_t i = 0; i < SP_ARRAY_SIZE(small_frames); i++) {
		const struct sp_frame *a = sp_spool_frame(s, i), *e = &small_frames[i];
		cr_assert_eq(a->module_id, e->module_id, "frame %u", i);
		cr_assert_eq(a->mode, e->mode, "frame %u", i);
		cr_assert_eq(a->abs_ip, e->abs_ip, "frame %u", i);
		cr_assert_eq(a->rel_ip, e->rel_ip, "frame %u", i);
	}
	cr_assert_null(sp_spool_frame(s, SP_ARRAY_SIZE(small_frames)));

	assert_stack(s, ids.stack_a, small_stack_a, 4);
	assert_stack(s, ids.stack_b, small_stack_b, 3);
	assert_stack(s, ids.stack_c, small_stack_c, 2);
	cr_assert_eq(sp_spool_stack_depth(s, 0), 0);

	cr_assert_eq(sp_spool_thread_count(s), 2);
	const struct sp_thread *t0 = sp_spool_thread(s, ids.t0), *t1 = sp_spool_thread(s, ids.t1);
	cr_assert_eq(t0->pid, 4242);
	cr_assert_eq(t0->tid, 4242);
	cr_assert_str_eq(t0->name, "chain4-main", "the latest name wins");
	cr_assert_eq(t1->pid, 4242);
	cr_assert_eq(t1->tid, 4243);
	cr_assert_str_eq(t1->name, "wor\"ker\n");

	const uint32_t threads[] = {ids.t0, ids.t1, ids.t0, ids.t1};
	const uint32_t stacks[] = {ids.stack_a, ids.stack_b, 0, ids.stack_c};
	cr_assert_eq(sp_spool_sample_count(s), SMALL_NSAMPLES);
	for (size_t i = 0; i < SMALL_NSAMPLES; i++) {
		const struct sp_sample *x = sp_spool_sample(s, i);
		cr_assert_eq(x->timestamp_ns, small_times[i], "sample %zu", i);
		cr_assert_eq(x->thread, threads[i], "sample %zu", i);
		cr_assert_eq(x->stack_id, stacks[i], "sample %zu", i);
	}
	cr_assert_null(sp_spool_sample(s, SMALL_NSAMPLES));

	cr_assert_eq(sp_spool_exec_count(s), 1);
	cr_assert_eq(sp_spool_exec(s, 0)->timestamp_ns, small_exec.timestamp_ns);
	cr_assert_eq(sp_spool_exec(s, 0)->pid, small_exec.pid);
	cr_assert_eq(sp_spool_exec(s, 0)->is_python_runtime, true);
	cr_assert_eq(sp_spool_lost_total(s), 7);

	const struct sp_summary *sum = sp_spool_summary(s);
	struct sp_summary want = small_summary();
	cr_assert_not_null(sum);
	cr_assert_eq(memcmp(sum, &want, sizeof(want)), 0, "summary differs");
	sp_spool_free(s);
}

/* The fields appended to the header: a period and the system-wide flag come back. */
Test(spool_roundtrip, meta_period_and_flags)
{
	struct sp_spool_meta m = small_meta;
	m.event_source = SP_EVENT_PAGE_FAULTS;
	m.frequency_hz = 0;
	m.sample_period = 123456789012ull;
	m.flags = SP_META_SYSTEM_WIDE;
	struct sp_spool_writer *w;
	cr_assert_eq(sp_spool_writer_open(tmp_path("meta.spool"), &m, &w), 0);
	struct sp_summary sum = {0};
	cr_assert_eq(sp_spool_writer_finish(w, &sum), 0);
	sp_spool_writer_free(w);
	struct sp_spool *s = open_ok(tmp_path("meta.spool"));
	const struct sp_spool_meta *r = sp_spool_meta(s);
	cr_assert_eq(r->event_source, SP_EVENT_PAGE_FAULTS);
	cr_assert_eq(r->sample_period, 123456789012ull);
	cr_assert_eq(r->flags, SP_META_SYSTEM_WIDE);
	cr_assert_str_eq(r->kernel_release, small_meta.kernel_release);
	sp_spool_free(s);
	/* A spool from before them reads 0 for both. */
	s = open_ok(fixture_path("small-before-fp-frames.spool"));
	cr_assert_eq(sp_spool_meta(s)->sample_period, 0);
	cr_assert_eq(sp_spool_meta(s)->flags, 0);
	sp_spool_free(s);
}

Test(spool_roundtrip, timeline_starts_at_first_sample)
{
	write_small(tmp_path("t.spool"), &(struct small_ids){0});
	struct sp_spool *s = open_ok(tmp_path("t.spool"));
	cr_assert_eq(sp_spool_timestamp_us(s, sp_spool_sample(s, 0)), 0);
	cr_assert_eq(sp_spool_timestamp_us(s, sp_spool_sample(s, 1)), 1001);
	cr_assert_eq(sp_spool_timestamp_us(s, sp_spool_sample(s, 2)), 999);
	cr_assert_eq(sp_spool_timestamp_us(s, sp_spool_sample(s, 3)), 2000);
	sp_spool_free(s);
}

Test(spool_roundtrip, extreme_timestamp_deltas)
{
	const uint64_t times[] = {0, UINT64_MAX, 1, 1ull << 63, (1ull << 63) - 1, 42, 42, 7};
	struct sp_spool_meta meta = small_meta;
	meta.start_monotonic_ns = UINT64_MAX - 3;
	struct sp_spool_writer *w;
	uint32_t t;
	cr_assert_eq(sp_spool_writer_open(tmp_path("ts.spool"), &meta, &w), 0);
	cr_assert_eq(sp_spool_writer_intern_thread(w, 1, 1, &t), 0);
	for (size_t i = 0; i < SP_ARRAY_SIZE(times); i++)
		cr_assert_eq(sp_spool_writer_append_sample(w, t, 0, times[i]), 0);
	cr_assert_eq(sp_spool_writer_finish(w, NULL), 0);
	sp_spool_writer_free(w);

	struct sp_spool *s = open_ok(tmp_path("ts.spool"));
	cr_assert_eq(sp_spool_sample_count(s), SP_ARRAY_SIZE(times));
	for (size_t i = 0; i < SP_ARRAY_SIZE(times); i++)
		cr_assert_eq(sp_spool_sample(s, i)->timestamp_ns, times[i], "sample %zu", i);
	cr_assert_not_null(sp_spool_summary(s), "finish(NULL) writes a zero summary");
	sp_spool_free(s);
}

Test(spool_writer, interns_frames_exactly)
{
	struct sp_spool_writer *w;
	cr_assert_eq(sp_spool_writer_open(tmp_path("f.spool"), &small_meta, &w), 0);
	uint32_t mod, a, b, c, d;
	cr_assert_eq(sp_spool_writer_add_module(w, &small_modules[0], &mod), 0);
	struct sp_frame f = {mod, SP_FRAME_USER, 0x555555555100, 0x1100};
	cr_assert_eq(sp_spool_writer_intern_frame(w, &f, &a), 0);
	cr_assert_eq(sp_spool_writer_intern_frame(w, &f, &b), 0);
	cr_assert_eq(a, b, "the same frame twice gets one id");
	struct sp_frame g = f;
	g.mode = SP_FRAME_KERNEL;
	cr_assert_eq(sp_spool_writer_intern_frame(w, &g, &c), 0);
	cr_assert_neq(c, a, "mode is part of a frame's identity");
	g = f;
	g.module_id = SP_NO_MODULE;
	g.rel_ip = 0;
	cr_assert_eq(sp_spool_writer_intern_frame(w, &g, &d), 0);
	cr_assert_neq(d, a);
	cr_assert_neq(d, c);
	/* Many frames: hash-chained lookups stay exact as the table grows. */
	for (uint64_t i = 0; i < 5000; i++) {
		struct sp_frame h = {mod, SP_FRAME_USER, 0x555555555000 + i, 0x1000 + i};
		uint32_t id1, id2;
		cr_assert_eq(sp_spool_writer_intern_frame(w, &h, &id1), 0);
		cr_assert_eq(sp_spool_writer_intern_frame(w, &h, &id2), 0);
		cr_assert_eq(id1, id2);
	}
	cr_assert_eq(sp_spool_writer_finish(w, NULL), 0);
	sp_spool_writer_free(w);

	struct sp_spool *s = open_ok(tmp_path("f.spool"));
	/* 0x...5100 recurs in the loop as the same frame as a. */
	cr_assert_eq(sp_spool_frame_count(s), 3 + 5000 - 1);
	sp_spool_free(s);
}

Test(spool_writer, stacks_share_suffix_nodes)
{
	struct sp_spool_writer *w;
	cr_assert_eq(sp_spool_writer_open(tmp_path("s.spool"), &small_meta, &w), 0);
	uint32_t f[5];
	for (uint32_t i = 0; i < 5; i++) {
		struct sp_frame fr = {SP_NO_MODULE, SP_FRAME_USER, 0x1000 + i, 0};
		cr_assert_eq(sp_spool_writer_intern_frame(w, &fr, &f[i]), 0);
	}
	const uint32_t a[] = {f[0], f[1], f[2]}; /* main=f2 -> f1 -> leaf f0 */
	const uint32_t b[] = {f[3], f[1], f[2]}; /* shares f2, f1 */
	const uint32_t c[] = {f[1], f[2]};       /* a prefix of both: no new node */
	const uint32_t d[] = {f[4]};
	uint32_t sa, sb, sc, sa2, sd, se;
	cr_assert_eq(sp_spool_writer_intern_stack(w, a, 3, &sa), 0);
	cr_assert_eq(sp_spool_writer_intern_stack(w, b, 3, &sb), 0);
	cr_assert_eq(sp_spool_writer_intern_stack(w, c, 2, &sc), 0);
	cr_assert_eq(sp_spool_writer_intern_stack(w, a, 3, &sa2), 0);
	cr_assert_eq(sp_spool_writer_intern_stack(w, d, 1, &sd), 0);
	cr_assert_eq(sp_spool_writer_intern_stack(w, NULL, 0, &se), 0);
	cr_assert_eq(sa, sa2);
	cr_assert_eq(se, 0, "no frames is the empty stack");
	cr_assert_neq(sa, sb);
	cr_assert_eq(sp_spool_writer_finish(w, NULL), 0);
	sp_spool_writer_free(w);

	struct sp_spool *s = open_ok(tmp_path("s.spool"));
	/* Nodes: f2, f2>f1, f2>f1>f0, f2>f1>f3, f4 — plus stack 0. */
	cr_assert_eq(sp_spool_stack_count(s), 1 + 5);
	cr_assert_eq(sp_spool_stack_parent(s, sa), sc);
	cr_assert_eq(sp_spool_stack_parent(s, sb), sc);
	assert_stack(s, sa, a, 3);
	assert_stack(s, sb, b, 3);
	assert_stack(s, sc, c, 2);
	assert_stack(s, sd, d, 1);
	cr_assert_eq(sp_spool_stack_frame(s, 0), UINT32_MAX, "the empty stack has no frame");
	cr_assert_eq(sp_spool_stack_depth(s, 999), 0);
	sp_spool_free(s);
}

Test(spool_writer, interns_threads)
{
	struct sp_spool_writer *w;
	cr_assert_eq(sp_spool_writer_open(tmp_path("th.spool"), &small_meta, &w), 0);
	uint32_t a, b, c, d;
	cr_assert_eq(sp_spool_writer_intern_thread(w, 10, 10, &a), 0);
	cr_assert_eq(sp_spool_writer_intern_thread(w, 10, 11, &b), 0);
	cr_assert_eq(sp_spool_writer_intern_thread(w, 11, 10, &c), 0);
	cr_assert_eq(sp_spool_writer_intern_thread(w, 10, 11, &d), 0);
	cr_assert_eq(a, 0);
	cr_assert_eq(b, 1);
	cr_assert_eq(c, 2);
	cr_assert_eq(d, b);
	cr_assert_eq(sp_spool_writer_finish(w, NULL), 0);
	sp_spool_writer_free(w);
	struct sp_spool *s = open_ok(tmp_path("th.spool"));
	cr_assert_eq(sp_spool_thread_count(s), 3);
	cr_assert_str_eq(sp_spool_thread(s, 2)->name, "", "no name is the empty string");
	cr_assert_eq(sp_spool_thread(s, 2)->pid, 11);
	sp_spool_free(s);
}

Test(spool_writer, rejects_dangling_references)
{
	struct sp_spool_writer *w;
	cr_assert_eq(sp_spool_writer_open(tmp_path("bad.spool"), &small_meta, &w), 0);
	uint32_t id, t;
	struct sp_frame f = {0, SP_FRAME_USER, 1, 1};
	cr_assert_eq(sp_spool_writer_intern_frame(w, &f, &id), -SP_E_BAD_ARG, "no module 0 yet");
	f.module_id = SP_NO_MODULE;
	f.mode = 7;
	cr_assert_eq(sp_spool_writer_intern_frame(w, &f, &id), -SP_E_BAD_ARG);
	const uint32_t frames[] = {0};
	cr_assert_eq(sp_spool_writer_intern_stack(w, frames, 1, &id), -SP_E_BAD_ARG);
	cr_assert_eq(sp_spool_writer_append_sample(w, 0, 0, 1), -SP_E_BAD_ARG, "no thread 0");
	cr_assert_eq(sp_spool_writer_set_thread_name(w, 0, "x"), -SP_E_BAD_ARG);
	cr_assert_eq(sp_spool_writer_intern_thread(w, 1, 1, &t), 0);
	cr_assert_eq(sp_spool_writer_append_sample(w, t, 1, 1), -SP_E_BAD_ARG, "no stack 1");
	struct sp_module m = small_modules[0];
	m.end = m.start - 1;
	cr_assert_eq(sp_spool_writer_add_module(w, &m, &id), -SP_E_BAD_ARG);
	/* Refused calls wrote nothing: the file still reads back clean. */
	cr_assert_eq(sp_spool_writer_finish(w, NULL), 0);
	cr_assert_eq(sp_spool_writer_append_sample(w, t, 0, 1), -EBADF, "finished");
	sp_spool_writer_free(w);
	struct sp_spool *s = open_ok(tmp_path("bad.spool"));
	cr_assert_eq(sp_spool_frame_count(s), 0);
	cr_assert_eq(sp_spool_module_count(s), 0);
	cr_assert_eq(sp_spool_sample_count(s), 0);
	sp_spool_free(s);
}

Test(spool_writer, open_reports_errno)
{
	struct sp_spool_writer *w = NULL;
	cr_assert_eq(sp_spool_writer_open("/nonexistent-dir/x.spool", &small_meta, &w), -ENOENT);
	cr_assert_null(w);
	sp_spool_writer_free(NULL);
}

/* A 10 s, 999 Hz profile of two threads over a few dozen distinct stacks. */
Test(spool_writer, samples_are_a_few_bytes)
{
	struct sp_spool_writer *w;
	cr_assert_eq(sp_spool_writer_open(tmp_path("size.spool"), &small_meta, &w), 0);
	uint32_t frames[64], stacks[40], t[2];
	for (uint32_t i = 0; i < 64; i++) {
		struct sp_frame f = {SP_NO_MODULE, SP_FRAME_USER, 0x400000 + 16 * i, 0};
		cr_assert_eq(sp_spool_writer_intern_frame(w, &f, &frames[i]), 0);
	}
	for (uint32_t i = 0; i < 40; i++) {
		uint32_t chain[12];
		for (uint32_t j = 0; j < 12; j++)
			chain[j] = frames[(i * 7 + j * 3) % 64];
		cr_assert_eq(sp_spool_writer_intern_stack(w, chain, 12, &stacks[i]), 0);
	}
	cr_assert_eq(sp_spool_writer_intern_thread(w, 100, 100, &t[0]), 0);
	cr_assert_eq(sp_spool_writer_intern_thread(w, 100, 101, &t[1]), 0);
	cr_assert_eq(sp_spool_writer_flush(w), 0);
	uint64_t before = sp_spool_writer_bytes(w);
	const size_t n = 2 * 9990;
	uint64_t ts = small_meta.start_monotonic_ns;
	for (size_t i = 0; i < n; i++) {
		ts += 500500 + (i * 7919) % 20000; /* two threads interleaved, with jitter */
		cr_assert_eq(sp_spool_writer_append_sample(w, t[i & 1], stacks[i % 40], ts), 0);
	}
	cr_assert_eq(sp_spool_writer_flush(w), 0);
	double per = (double)(sp_spool_writer_bytes(w) - before) / (double)n;
	cr_log_info("bytes per sample record: %.2f", per);
	cr_assert_leq(per, 8.0, "%.2f bytes per sample", per);
	sp_spool_writer_free(w);
}

/*
 * A recorder killed mid-run leaves only whole records behind: the reader gets
 * every flushed sample and no trailer, without even a truncated tail.
 */
Test(spool_writer, sigkill_leaves_readable_prefix)
{
	const char *path = tmp_path("killed.spool");
	const size_t n = 30000;
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct sp_spool_writer *w;
		uint32_t t;
		if (sp_spool_writer_open(path, &small_meta, &w) ||
		    sp_spool_writer_intern_thread(w, 1, 1, &t))
			_exit(1);
		for (size_t i = 0; i < n; i++)
			if (sp_spool_writer_append_sample(w, t, 0, 5000000000ull + i * 1000000))
				_exit(1);
		raise(SIGKILL);
		_exit(1);
	}
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	struct sp_spool *s = open_ok(path);
	cr_assert_not(sp_spool_truncated(s));
	cr_assert_null(sp_spool_summary(s));
	size_t got = sp_spool_sample_count(s);
	cr_assert(got > 0 && got < n, "%zu samples flushed", got);
	for (size_t i = 0; i < got; i++)
		cr_assert_eq(sp_spool_sample(s, i)->timestamp_ns, 5000000000ull + i * 1000000);
	sp_spool_free(s);
}

/* docs/DESIGN.md, decision 12: a period is stored when it changes and read for every sample. */
Test(spool_roundtrip, sample_periods)
{
	struct sp_spool_meta meta = small_meta;
	meta.event_source = SP_EVENT_PAGE_FAULTS;
	struct sp_spool_writer *w;
	cr_assert_eq(sp_spool_writer_open(tmp_path("w.spool"), &meta, &w), 0);
	uint32_t t, stack;
	static const uint32_t frames[] = {0};
	cr_assert_eq(sp_spool_writer_add_module(w, &small_modules[0], &stack), 0);
	cr_assert_eq(sp_spool_writer_intern_frame(w, &small_frames[0], &stack), 0);
	cr_assert_eq(sp_spool_writer_intern_thread(w, 1, 1, &t), 0);
	cr_assert_eq(sp_spool_writer_intern_stack(w, frames, 1, &stack), 0);
	static const uint64_t written[] = {5, 5, 70000, 0, 1};
	static const uint64_t read[] = {5, 5, 70000, 70000, 1};
	for (size_t i = 0; i < SP_ARRAY_SIZE(written); i++)
		cr_assert_eq(sp_spool_writer_append_weighted_sample(w, t, stack, 5000000000ull + i,
								    written[i]), 0);
	cr_assert_eq(sp_spool_writer_finish(w, NULL), 0);
	sp_spool_writer_free(w);
	struct sp_spool *s = open_ok(tmp_path("w.spool"));
	cr_assert_eq(sp_spool_sample_count(s), SP_ARRAY_SIZE(read));
	for (size_t i = 0; i < SP_ARRAY_SIZE(read); i++)
		cr_assert_eq(sp_spool_sample(s, i)->period, read[i], "sample %zu", i);
	char *d = dump_string(s);
	cr_assert_not_null(strstr(d, "period=70000"), "%s", d);
	free(d);
	sp_spool_free(s);
}

/* A spool without stored periods: the header's -c period, else 0 (unknown). */
Test(spool_roundtrip, periods_of_older_spools)
{
	struct small_ids ids;
	write_small(tmp_path("rt.spool"), &ids);
	struct sp_spool *s = open_ok(tmp_path("rt.spool"));
	for (size_t i = 0; i < sp_spool_sample_count(s); i++)
		cr_assert_eq(sp_spool_sample(s, i)->period, small_meta.sample_period);
	char *d = dump_string(s);
	for (char *l = strstr(d, "\nsample "); l; l = strstr(l + 1, "\nsample ")) {
		char *end = strchr(l + 1, '\n');
		cr_assert(!end || !memmem(l, (size_t)(end - l), "period=", 7), "%s", d);
	}
	free(d);
	sp_spool_free(s);
}

/* An OFFCPU record round-trips: start as a delta, duration, flags; dump shows it. */
Test(spool_roundtrip, offcpu_intervals)
{
	struct sp_spool_meta meta = small_meta;
	meta.flags = SP_META_OFF_CPU;
	struct sp_spool_writer *w;
	cr_assert_eq(sp_spool_writer_open(tmp_path("o.spool"), &meta, &w), 0);
	uint32_t t, id;
	cr_assert_eq(sp_spool_writer_add_module(w, &small_modules[0], &id), 0);
	cr_assert_eq(sp_spool_writer_intern_frame(w, &small_frames[0], &id), 0);
	cr_assert_eq(sp_spool_writer_intern_thread(w, 1, 2, &t), 0);
	uint32_t stack;
	cr_assert_eq(sp_spool_writer_intern_stack(w, (uint32_t[]){0}, 1, &stack), 0);
	const struct sp_offcpu in[] = {
		{.start_ns = 5000100000ull, .duration_ns = 40000000, .thread = t, .stack_id = stack},
		{.start_ns = 5000000000ull, .duration_ns = 7, .thread = t, .stack_id = 0,
		 .flags = SP_OFFCPU_PREEMPTED | SP_OFFCPU_NO_STACK},
		{.start_ns = 5090000000ull, .duration_ns = 0, .thread = t, .stack_id = stack,
		 .flags = SP_OFFCPU_LOST},
	};
	for (size_t i = 0; i < SP_ARRAY_SIZE(in); i++)
		cr_assert_eq(sp_spool_writer_append_offcpu(w, &in[i]), 0);
	struct sp_offcpu bad = in[0];
	bad.thread = 9;
	cr_assert_eq(sp_spool_writer_append_offcpu(w, &bad), -SP_E_BAD_ARG);
	cr_assert_eq(sp_spool_writer_finish(w, NULL), 0);
	sp_spool_writer_free(w);
	struct sp_spool *s = open_ok(tmp_path("o.spool"));
	cr_assert(sp_spool_meta(s)->flags & SP_META_OFF_CPU);
	cr_assert_eq(sp_spool_offcpu_count(s), SP_ARRAY_SIZE(in));
	for (size_t i = 0; i < SP_ARRAY_SIZE(in); i++) {
		const struct sp_offcpu *o = sp_spool_offcpu(s, i);
		cr_assert_eq(o->start_ns, in[i].start_ns, "interval %zu", i);
		cr_assert_eq(o->duration_ns, in[i].duration_ns);
		cr_assert_eq(o->thread, in[i].thread);
		cr_assert_eq(o->stack_id, in[i].stack_id);
		cr_assert_eq(o->flags, in[i].flags);
	}
	cr_assert_null(sp_spool_offcpu(s, SP_ARRAY_SIZE(in)));
	char *d = dump_string(s);
	cr_assert_not_null(strstr(d, "off-cpu thread=0 stack=- start_ns=5000000000 duration_ns=7 flags=17"),
			   "%s", d);
	free(d);
	sp_spool_free(s);
}

/* Files of the same bytes without a build-id: every member reads as the group's first record. */
Test(spool_roundtrip, module_groups_of_same_bytes)
{
	struct sp_spool_writer *w;
	cr_assert_eq(sp_spool_writer_open(tmp_path("same.spool"), &small_meta, &w), 0);
	struct sp_module m = small_modules[0];
	m.build_id_len = 0;
	uint32_t id;
	m.same_bytes_as = 1;
	cr_assert_eq(sp_spool_writer_add_module(w, &m, &id), -SP_E_BAD_ARG, "a record to come");
	uint32_t want[] = {0, 0, 2, 2, 0};
	uint32_t given[] = {0, 0, 2, 2, 0};
	for (size_t i = 0; i < 5; i++) {
		m.same_bytes_as = given[i];
		m.start += 0x10000;
		m.end += 0x10000;
		cr_assert_eq(sp_spool_writer_add_module(w, &m, &id), 0);
		cr_assert_eq(id, i);
	}
	cr_assert_eq(sp_spool_writer_finish(w, NULL), 0);
	sp_spool_writer_free(w);
	struct sp_spool *s = open_ok(tmp_path("same.spool"));
	cr_assert_eq(sp_spool_module_count(s), 5);
	/* module 1 is the group's first record: it names itself once another names it */
	want[1] = 2;
	for (uint32_t i = 0; i < 5; i++)
		cr_expect_eq(sp_spool_module(s, i)->same_bytes_as, want[i], "module %u", i);
	cr_expect_str_eq(sp_spool_module(s, 4)->path, small_modules[0].path);
	sp_spool_free(s);
}
