/* SPDX-License-Identifier: MIT */
/* Unit tests of segment directories (lib/spool/segments.c, segment_read.c) and their units (lib/util/units.c). */
#include <sys/stat.h>

#include "spool_fixture.h"

TestSuite(segments, .init = tmp_setup, .fini = tmp_teardown);
TestSuite(units);

Test(units, durations_and_sizes)
{
	uint64_t ns, b;
	cr_assert_eq(sp_parse_duration_ns("2", &ns), 0);
	cr_assert_eq(ns, 2000000000ull);
	cr_assert_eq(sp_parse_duration_ns("1.5s", &ns), 0);
	cr_assert_eq(ns, 1500000000ull);
	cr_assert_eq(sp_parse_duration_ns("10m", &ns), 0);
	cr_assert_eq(ns, 600000000000ull);
	cr_assert_eq(sp_parse_duration_ns("1d", &ns), 0);
	cr_assert_eq(ns, 86400000000000ull);
	cr_assert_eq(sp_parse_size_bytes("500K", &b), 0);
	cr_assert_eq(b, 512000);
	cr_assert_eq(sp_parse_size_bytes("2G", &b), 0);
	cr_assert_eq(b, 2ull << 30);
	cr_assert_eq(sp_parse_size_bytes("3MiB", &b), 0);
	cr_assert_eq(b, 3ull << 20);
	const char *bad[] = {"", "0", "-1", "1x", "1mm", "s", "1e400", "10 m", "9999999999d"};
	for (size_t i = 0; i < SP_ARRAY_SIZE(bad); i++)
		cr_assert_neq(sp_parse_duration_ns(bad[i], &ns), 0, "'%s'", bad[i]);
	cr_assert_eq(sp_parse_duration_or_size("20M", &ns, &b), 0);
	cr_assert(ns == 0 && b == 20ull << 20);
	cr_assert_eq(sp_parse_duration_or_size("20m", &ns, &b), 0);
	cr_assert(ns == 1200000000000ull && b == 0);
	cr_assert_neq(sp_parse_duration_or_size("20q", &ns, &b), 0);
}

static uint64_t wall(const char *s, uint64_t now_us)
{
	uint64_t us = 0;
	int err = sp_parse_wall_time_us(s, strlen(s), now_us, &us);
	cr_assert_eq(err, 0, "'%s': %s", s, sp_strerror(err));
	return us;
}

Test(units, wall_clock_times)
{
	/* 2024-05-01T03:12:00Z */
	uint64_t t = 1714533120ull * 1000000;
	cr_assert_eq(wall("2024-05-01T03:12:00Z", 0), t);
	cr_assert_eq(wall("2024-05-01T03:12Z", 0), t);
	cr_assert_eq(wall("2024-05-01T05:12:00+02:00", 0), t);
	cr_assert_eq(wall("2024-05-01T03:12:00.250Z", 0), t + 250000);
	cr_assert_eq(wall("-10m", t), t - 600000000ull);
	cr_assert_eq(wall("now", t), t);
	/* a time of day alone is today's */
	cr_assert_eq(wall("03:12Z", t + 3600000000ull), t);
	uint64_t us;
	const char *bad[] = {"", "yesterday", "2024-13-01", "2024-05-01T25:00", "03:12:00Q",
			     "-", "2024-05-01T03:12:00+2:00x"};
	for (size_t i = 0; i < SP_ARRAY_SIZE(bad); i++)
		cr_assert_neq(sp_parse_wall_time_us(bad[i], strlen(bad[i]), t, &us), 0, "'%s'",
			      bad[i]);
}

Test(segments, names_of_the_layout)
{
	bool partial;
	uint64_t seq, ms;
	cr_assert(sp_segment_name_parse("stackpulse-20240501T031200.250Z-000042.spool", &partial,
					&seq, &ms));
	cr_assert(!partial && seq == 42 && ms == 1714533120250ull);
	cr_assert(sp_segment_name_parse(".stackpulse-20240501T031200.250Z-7.spool.partial",
					&partial, &seq, &ms));
	cr_assert(partial && seq == 7);
	const char *bad[] = {"stackpulse-20240501T031200Z-000042.spool", "profile.spool",
			     "stackpulse-20240501T031200.250Z-.spool",
			     "stackpulse-20240501T031200.250Z-1.spool.partial",
			     ".stackpulse-20240501T031200.250Z-1.spool",
			     "stackpulse-20240501T031200.250Z-1x.spool"};
	for (size_t i = 0; i < SP_ARRAY_SIZE(bad); i++)
		cr_assert_not(sp_segment_name_parse(bad[i], &partial, &seq, &ms), "'%s'", bad[i]);
}

/* Two segments: stacks a and b in the first, only b (and the exec) in the second. */
static struct sp_segments *write_two(const char *dir, struct small_ids *ids, uint64_t retain_bytes)
{
	struct sp_segments_opts o = {.segment_ns = 1000000000ull, .retain_bytes = retain_bytes};
	struct sp_segments *g;
	cr_assert_eq(sp_segments_open(dir, &o, &g), 0);
	struct sp_spool_writer *w;
	cr_assert_eq(sp_segments_begin(g, &small_meta, &w), 0);
	for (uint32_t i = 0; i < SP_ARRAY_SIZE(small_modules); i++) {
		uint32_t id;
		cr_assert_eq(sp_spool_writer_add_module(w, &small_modules[i], &id), 0);
	}
	for (uint32_t i = 0; i < SP_ARRAY_SIZE(small_frames); i++) {
		uint32_t id;
		cr_assert_eq(sp_spool_writer_intern_frame(w, &small_frames[i], &id), 0);
	}
	cr_assert_eq(sp_spool_writer_append_exec(w, &small_exec), 0);
	cr_assert_eq(sp_spool_writer_intern_thread(w, 4242, 4242, &ids->t0), 0);
	cr_assert_eq(sp_spool_writer_set_thread_name(w, ids->t0, "chain4"), 0);
	cr_assert_eq(sp_spool_writer_intern_thread(w, 4242, 4243, &ids->t1), 0);
	cr_assert_eq(sp_spool_writer_set_thread_name(w, ids->t1, "worker"), 0);
	cr_assert_eq(sp_spool_writer_intern_stack(w, small_stack_a, 4, &ids->stack_a), 0);
	cr_assert_eq(sp_spool_writer_intern_stack(w, small_stack_b, 3, &ids->stack_b), 0);
	cr_assert_eq(sp_spool_writer_append_sample(w, ids->t0, ids->stack_a, small_times[0]), 0);
	cr_assert_eq(sp_spool_writer_append_sample(w, ids->t1, ids->stack_b, small_times[1]), 0);
	struct sp_summary total = {.samples = 2, .sample_events = 2};
	cr_assert_eq(sp_segments_rotate(g, w, &total, small_meta.start_monotonic_ns + 1000000000), 0);
	cr_assert_eq(sp_spool_writer_append_sample(w, ids->t1, ids->stack_b, small_times[3]), 0);
	cr_assert_eq(sp_spool_writer_set_thread_name(w, ids->t0, "renamed"), 0);
	total.samples = total.sample_events = 3;
	cr_assert_eq(sp_segments_finish(g, w, &total), 0);
	sp_spool_writer_free(w);
	return g;
}

static size_t list(const char *dir, struct sp_segment_entry **v)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	cr_assert_geq(fd, 0);
	size_t n = 0;
	cr_assert_eq(sp_segment_list(fd, v, &n), 0);
	close(fd);
	return n;
}

static struct sp_spool *open_in(const char *dir, const char *name)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	struct sp_spool *s = NULL;
	int err = sp_spool_open(path, &s);
	cr_assert_eq(err, 0, "%s: %s", path, sp_strerror(err));
	return s;
}

Test(segments, each_segment_reports_alone)
{
	const char *dir = tmp_path("segs");
	struct small_ids ids;
	sp_segments_free(write_two(dir, &ids, 0));
	struct sp_segment_entry *v;
	size_t n = list(dir, &v);
	cr_assert_eq(n, 2);
	cr_assert(!v[0].partial && !v[1].partial && v[0].seq == 1 && v[1].seq == 2);

	struct sp_spool *s = open_in(dir, v[1].name);
	/* only what stack b and thread t1 need: frames 4, 1, 2; modules 0 and 1 */
	cr_assert_eq(sp_spool_sample_count(s), 1);
	cr_assert_eq(sp_spool_thread_count(s), 1);
	cr_assert_str_eq(sp_spool_thread(s, 0)->name, "worker");
	cr_assert_eq(sp_spool_frame_count(s), 3);
	cr_assert_eq(sp_spool_module_count(s), 2);
	cr_assert_eq(sp_spool_exec_count(s), 1, "the process's exec is restated");
	const struct sp_sample *x = sp_spool_sample(s, 0);
	cr_assert_eq(x->timestamp_ns, small_times[3]);
	struct sp_stack_iter it;
	struct sp_frame_context c;
	sp_spool_stack_iter_init(&it, s, x->stack_id);
	for (size_t i = 0; i < SP_ARRAY_SIZE(small_stack_b); i++) {
		cr_assert(sp_spool_stack_iter_next(&it, &c));
		cr_assert_eq(c.frame->abs_ip, small_frames[small_stack_b[i]].abs_ip);
		cr_assert_eq(c.rel_ip, small_frames[small_stack_b[i]].rel_ip);
	}
	cr_assert_not(sp_spool_stack_iter_next(&it, &c));
	cr_assert_eq(sp_spool_summary(s)->samples, 1, "the segment's own counts");
	cr_assert_eq(sp_spool_meta(s)->start_monotonic_ns, small_meta.start_monotonic_ns + 1000000000);
	sp_spool_free(s);
	s = open_in(dir, v[0].name);
	cr_assert_eq(sp_spool_sample_count(s), 2);
	cr_assert_eq(sp_spool_summary(s)->samples, 2);
	sp_spool_free(s);
	free(v);
}

Test(segments, a_restart_goes_on_and_the_directory_reads_as_one)
{
	const char *dir = tmp_path("segs");
	struct small_ids ids;
	sp_segments_free(write_two(dir, &ids, 0));
	sp_segments_free(write_two(dir, &ids, 0));
	struct sp_segment_entry *v;
	size_t n = list(dir, &v);
	cr_assert_eq(n, 4);
	cr_assert_eq(v[3].seq, 4);
	free(v);

	struct sp_spool *s = NULL;
	struct sp_segments_read_stats st;
	cr_assert_eq(sp_spool_open_segments(dir, NULL, &s, &st), 0);
	cr_assert_eq(st.read, 4);
	cr_assert_eq(sp_spool_sample_count(s), 6);
	cr_assert_eq(sp_spool_module_count(s), 3, "equal modules merge");
	cr_assert_eq(sp_spool_thread_count(s), 2);
	cr_assert_eq(sp_spool_summary(s)->samples, 6, "the segments' counts summed");
	sp_spool_free(s);
}

static int notes;
static void count_note(void *ctx, const char *name, enum sp_segment_note what, int err)
{
	(void)name;
	(void)err;
	notes += what == *(enum sp_segment_note *)ctx;
}

/* A symlink to /etc/passwd under segment number seq's name in dir; its path into path. */
static void link_segment(const char *dir, unsigned seq, char *path, size_t size)
{
	snprintf(path, size, "%s/stackpulse-20240501T031200.250Z-%06u.spool", dir, seq);
	cr_assert_eq(symlink("/etc/passwd", path), 0);
}

Test(segments, damaged_and_foreign_files_are_skipped)
{
	const char *dir = tmp_path("segs");
	struct small_ids ids;
	sp_segments_free(write_two(dir, &ids, 0));
	char path[512];
	snprintf(path, sizeof(path), "%s/stackpulse-20240501T031200.250Z-000009.spool", dir);
	FILE *f = fopen(path, "w");
	fputs("not a spool", f);
	fclose(f);
	link_segment(dir, 10, path, sizeof(path));
	enum sp_segment_note want = SP_SEGMENT_DAMAGED;
	struct sp_segments_read_opts o = {.note = count_note, .ctx = &want};
	struct sp_spool *s = NULL;
	struct sp_segments_read_stats st;
	notes = 0;
	cr_assert_eq(sp_spool_open_segments(dir, &o, &s, &st), 0);
	cr_assert_eq(st.read, 2);
	cr_assert_eq(st.skipped, 2);
	cr_assert_eq(notes, 1);
	cr_assert_eq(sp_spool_sample_count(s), 3);
	sp_spool_free(s);
	/* retention leaves the symlink and the other file alone: they are not ours to judge */
	struct sp_segments_opts so = {.segment_ns = 1, .retain_bytes = 1};
	struct sp_segments *g;
	cr_assert_eq(sp_segments_open(dir, &so, &g), 0);
	sp_segments_free(g);
	cr_assert_eq(lstat(path, &(struct stat){0}), 0);
}

/* sp_segments_each: the segments read, oldest first, by name; skipped ones noted, none visited. */
struct visited {
	char names[4][128];
	size_t samples[4], n;
};

static int visit_segment(void *ctx, const char *name, const struct sp_spool *s)
{
	struct visited *v = ctx;
	if (v->n == 4)
		return -E2BIG;
	snprintf(v->names[v->n], sizeof(v->names[v->n]), "%s", name);
	v->samples[v->n++] = sp_spool_sample_count(s);
	return 0;
}

static int stop_visiting(void *ctx, const char *name, const struct sp_spool *s)
{
	(void)name;
	(void)s;
	++*(int *)ctx;
	return -EPIPE;
}

Test(segments, each_segment_is_visited_in_order)
{
	const char *dir = tmp_path("segs");
	struct small_ids ids;
	sp_segments_free(write_two(dir, &ids, 0));
	char path[512];
	link_segment(dir, 9, path, sizeof(path));
	struct sp_segment_entry *v;
	size_t n = list(dir, &v);
	cr_assert_eq(n, 3);
	enum sp_segment_note want = SP_SEGMENT_REFUSED;
	struct sp_segments_read_opts o = {.note = count_note, .ctx = &want};
	struct sp_segments_read_stats st;
	struct visited seen = {0};
	notes = 0;
	cr_assert_eq(sp_segments_each(dir, &o, visit_segment, &seen, &st), 0);
	cr_assert_eq(seen.n, 2);
	cr_assert_str_eq(seen.names[0], v[0].name);
	cr_assert_str_eq(seen.names[1], v[1].name);
	cr_assert_eq(seen.samples[0] + seen.samples[1], 3);
	cr_assert_eq(st.read, 2);
	cr_assert_eq(st.skipped, 1);
	cr_assert_eq(notes, 1);
	free(v);
	/* what visit returns stops the walk */
	int calls = 0;
	cr_assert_eq(sp_segments_each(dir, NULL, stop_visiting, &calls, &st), -EPIPE);
	cr_assert_eq(calls, 1);
	/* a directory without segments */
	const char *empty = tmp_path("empty");
	cr_assert_eq(mkdir(empty, 0700), 0);
	cr_assert_eq(sp_segments_each(empty, NULL, visit_segment, &seen, &st), -SP_E_NO_SEGMENTS);
	cr_assert_eq(st.listed, 0);
}

Test(segments, retention_by_size_keeps_the_newest)
{
	const char *dir = tmp_path("segs");
	struct small_ids ids;
	struct sp_segments *g = write_two(dir, &ids, 1);
	struct sp_segments_stats st;
	sp_segments_stats(g, &st);
	cr_assert_eq(st.published, 2);
	cr_assert_eq(st.deleted, 1);
	cr_assert_eq(st.kept, 1);
	sp_segments_free(g);
	struct sp_segment_entry *v;
	cr_assert_eq(list(dir, &v), 1);
	cr_assert_eq(v[0].seq, 2);
	free(v);
}

Test(segments, a_shared_directory_is_refused)
{
	const char *dir = tmp_path("shared");
	cr_assert_eq(mkdir(dir, 0700), 0);
	cr_assert_eq(chmod(dir, 0777), 0);
	struct sp_segments_opts o = {.segment_ns = 1};
	struct sp_segments *g = NULL;
	cr_assert_eq(sp_segments_open(dir, &o, &g), -SP_E_SEGMENT_DIR_SHARED);
	cr_assert_null(g);
	char link[512];
	snprintf(link, sizeof(link), "%s/link", tmp_dir);
	cr_assert_eq(symlink(dir, link), 0);
	cr_assert_eq(sp_segments_open(link, &o, &g), -ENOTDIR);
}

/*
 * A flight recorder of a 1 s window over the small dictionaries: modules,
 * frames, (the exec,) one thread named name and stack a.
 */
static struct sp_spool_writer *small_rolling(bool exec, const char *name, uint32_t *t,
					     uint32_t *stack)
{
	struct sp_spool_writer *w;
	cr_assert_eq(sp_spool_writer_open_rolling(&small_meta, 1000000000ull, &w), 0);
	uint32_t id;
	for (uint32_t i = 0; i < SP_ARRAY_SIZE(small_modules); i++)
		cr_assert_eq(sp_spool_writer_add_module(w, &small_modules[i], &id), 0);
	for (uint32_t i = 0; i < SP_ARRAY_SIZE(small_frames); i++)
		cr_assert_eq(sp_spool_writer_intern_frame(w, &small_frames[i], &id), 0);
	if (exec)
		cr_assert_eq(sp_spool_writer_append_exec(w, &small_exec), 0);
	cr_assert_eq(sp_spool_writer_intern_thread(w, 4242, 4242, t), 0);
	cr_assert_eq(sp_spool_writer_set_thread_name(w, *t, name), 0);
	cr_assert_eq(sp_spool_writer_intern_stack(w, small_stack_a, 4, stack), 0);
	return w;
}

Test(segments, flight_recorder_writes_its_window)
{
	uint32_t t, stack;
	struct sp_spool_writer *w = small_rolling(true, "chain4", &t, &stack);
	/* 30 samples over 3 s: the 1 s window ending at the last holds 11 */
	uint64_t t0 = small_meta.start_monotonic_ns;
	for (int i = 0; i < 30; i++)
		cr_assert_eq(sp_spool_writer_append_sample(w, t, stack, t0 + (uint64_t)i * 100000000), 0);
	cr_assert_eq(sp_spool_writer_flush(w), 0, "nothing to write between snapshots");
	for (int round = 0; round < 2; round++) {
		char name[64];
		snprintf(name, sizeof(name), "snap%d.spool", round);
		int fd = open(tmp_path(name), O_WRONLY | O_CREAT | O_EXCL, 0600);
		cr_assert_geq(fd, 0);
		struct sp_summary win;
		cr_assert_eq(sp_spool_writer_snapshot(w, fd, t0 + 2900000000ull, 1700000003000000ull,
						      false, &win), 0);
		cr_assert_eq(win.samples, 11);
		struct sp_spool *s = NULL;
		cr_assert_eq(sp_spool_open(tmp_path(name), &s), 0);
		cr_assert_eq(sp_spool_sample_count(s), 11);
		cr_assert_eq(sp_spool_sample(s, 0)->timestamp_ns, t0 + 1900000000ull);
		cr_assert_eq(sp_spool_exec_count(s), 1);
		cr_assert_eq(sp_spool_module_count(s), 3);
		cr_assert_str_eq(sp_spool_thread(s, 0)->name, "chain4");
		cr_assert_eq(sp_spool_meta(s)->start_monotonic_ns, t0 + 1900000000ull);
		cr_assert_eq(sp_spool_meta(s)->start_timestamp_us, 1700000002000000ull);
		cr_assert_not_null(sp_spool_summary(s));
		sp_spool_free(s);
	}
	uint64_t ring, n, dict;
	sp_spool_writer_memory(w, &ring, &n, &dict);
	cr_assert_eq(n, 11, "older samples left the ring");
	cr_assert_gt(dict, 0);
	sp_spool_writer_free(w);
}

/* A snapshot's summary says how its window's stacks ended, from their truncation markers. */
Test(segments, flight_recorder_snapshot_says_why_stacks_ended)
{
	uint32_t t, rooted, cut;
	struct sp_spool_writer *w = small_rolling(false, "deep", &t, &rooted);
	cr_assert_eq(sp_spool_writer_intern_stack(w, small_stack_c, 2, &cut), 0);
	uint64_t t0 = small_meta.start_monotonic_ns;
	uint32_t stacks[] = {rooted, cut, rooted, 0, cut, rooted};
	for (size_t i = 0; i < SP_ARRAY_SIZE(stacks); i++)
		cr_assert_eq(sp_spool_writer_append_sample(w, t, stacks[i], t0 + i * 1000000), 0);
	int fd = open(tmp_path("why.spool"), O_WRONLY | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0);
	struct sp_summary win;
	cr_assert_eq(sp_spool_writer_snapshot(w, fd, t0 + 10000000, 1700000003000000ull, false, &win),
		     0);
	cr_assert_eq(win.samples, 6);
	cr_assert_eq(win.stop_reasons[SP_STOP_ROOT], 3);
	cr_assert_eq(win.stop_reasons[SP_STOP_STACK_EXHAUSTED], 2);
	cr_assert_eq(win.truncated_frame_markers, 2);
	cr_assert_eq(win.empty_stack_samples, 1);
	struct sp_spool *s = NULL;
	cr_assert_eq(sp_spool_open(tmp_path("why.spool"), &s), 0);
	const struct sp_summary *stored = sp_spool_summary(s);
	cr_assert_not_null(stored);
	cr_assert_eq(stored->stop_reasons[SP_STOP_STACK_EXHAUSTED], 2, "the trailer holds them");
	cr_assert_eq(stored->truncated_frame_markers, 2);
	sp_spool_free(s);
	sp_spool_writer_free(w);
}

/*
 * A thread renamed between two snapshots (its COMM record drained while the
 * flight recorder holds no file): kept for the next snapshot, not written to
 * the closed one, which failed with EBADF and stopped the recording.
 */
Test(segments, flight_recorder_renames_between_snapshots)
{
	uint32_t t, stack;
	struct sp_spool_writer *w = small_rolling(false, "before", &t, &stack);
	uint64_t t0 = small_meta.start_monotonic_ns;
	cr_assert_eq(sp_spool_writer_append_sample(w, t, stack, t0), 0);
	for (int round = 0; round < 2; round++) {
		char name[64];
		snprintf(name, sizeof(name), "rename%d.spool", round);
		int fd = open(tmp_path(name), O_WRONLY | O_CREAT | O_EXCL, 0600);
		cr_assert_geq(fd, 0);
		struct sp_summary win;
		cr_assert_eq(sp_spool_writer_snapshot(w, fd, t0 + 500000000ull, 1700000003000000ull,
						      false, &win), 0);
		struct sp_spool *s = NULL;
		cr_assert_eq(sp_spool_open(tmp_path(name), &s), 0);
		cr_assert_str_eq(sp_spool_thread(s, 0)->name, round ? "after" : "before");
		sp_spool_free(s);
		if (!round) {
			cr_assert_eq(sp_spool_writer_set_thread_name(w, t, "after"), 0);
			cr_assert_eq(sp_spool_writer_append_sample(w, t, stack, t0 + 1), 0);
		}
	}
	sp_spool_writer_free(w);
}

/* Segments, begun, of a recording that stops at once or just after a rotation. */
static size_t stop_after(const char *dir, bool one_sample, bool rotate)
{
	struct sp_segments_opts o = {.segment_ns = 1000000000ull};
	struct sp_segments *g;
	cr_assert_eq(sp_segments_open(dir, &o, &g), 0);
	struct sp_spool_writer *w;
	cr_assert_eq(sp_segments_begin(g, &small_meta, &w), 0);
	struct sp_summary total = {0};
	if (one_sample) {
		uint32_t t, m, f, st;
		cr_assert_eq(sp_spool_writer_add_module(w, &small_modules[0], &m), 0);
		cr_assert_eq(sp_spool_writer_intern_frame(w, &small_frames[0], &f), 0);
		cr_assert_eq(sp_spool_writer_intern_thread(w, 4242, 4242, &t), 0);
		cr_assert_eq(sp_spool_writer_intern_stack(w, &f, 1, &st), 0);
		cr_assert_eq(sp_spool_writer_append_sample(w, t, st, small_times[0]), 0);
		total.samples = total.sample_events = 1;
	}
	if (rotate)
		cr_assert_eq(sp_segments_rotate(g, w, &total, small_meta.start_monotonic_ns + 1000000000), 0);
	cr_assert_eq(sp_segments_finish(g, w, &total), 0);
	sp_spool_writer_free(w);
	struct sp_segments_stats stats;
	sp_segments_stats(g, &stats);
	sp_segments_free(g);
	struct sp_segment_entry *v;
	size_t n = list(dir, &v);
	for (size_t i = 0; i < n; i++)
		cr_assert(!v[i].partial, "%s is left", v[i].name);
	cr_assert_eq(stats.published, n);
	free(v);
	return n;
}

Test(segments, an_empty_last_segment_is_not_published)
{
	cr_assert_eq(stop_after(tmp_path("rotated"), true, true), 1, "the empty one is removed");
	cr_assert_eq(stop_after(tmp_path("only"), false, false), 1, "an only one stays, empty");
	cr_assert_eq(stop_after(tmp_path("two_empty"), false, true), 1, "the first stays");
}

/* A module, frame and thread of process 777, gone by the compaction. */
static const struct sp_module gone_module = {.pid = 777, .start = 0x400000, .end = 0x401000,
					     .inode = 99, .file_size = 4096,
					     .path = "/tmp/fresh1 (deleted)"};
static const struct sp_frame gone_frame = {3, SP_FRAME_USER, 0x400100, 0x100};

/* The small dictionaries and 777's in w: stack_a of 4242's main thread, stack_c and gone_frame's stack of 777's. */
static void compactable(struct sp_spool_writer *w, struct small_ids *ids, uint32_t *gone_stack)
{
	uint32_t id;
	for (uint32_t i = 0; i < SP_ARRAY_SIZE(small_modules); i++)
		cr_assert_eq(sp_spool_writer_add_module(w, &small_modules[i], &id), 0);
	cr_assert_eq(sp_spool_writer_add_module(w, &gone_module, &id), 0);
	cr_assert_eq(id, 3);
	for (uint32_t i = 0; i < SP_ARRAY_SIZE(small_frames); i++)
		cr_assert_eq(sp_spool_writer_intern_frame(w, &small_frames[i], &id), 0);
	cr_assert_eq(sp_spool_writer_intern_frame(w, &gone_frame, &id), 0);
	cr_assert_eq(sp_spool_writer_append_exec(w, &small_exec), 0);
	struct sp_exec gone_exec = {.timestamp_ns = small_exec.timestamp_ns, .pid = 777};
	cr_assert_eq(sp_spool_writer_append_exec(w, &gone_exec), 0);
	cr_assert_eq(sp_spool_writer_intern_thread(w, 777, 777, &ids->t1), 0);
	cr_assert_eq(sp_spool_writer_set_thread_name(w, ids->t1, "fresh1"), 0);
	cr_assert_eq(sp_spool_writer_intern_thread(w, 4242, 4242, &ids->t0), 0);
	cr_assert_eq(sp_spool_writer_set_thread_name(w, ids->t0, "chain4"), 0);
	uint32_t g[] = {id, 5};
	cr_assert_eq(sp_spool_writer_intern_stack(w, g, 2, gone_stack), 0);
	cr_assert_eq(sp_spool_writer_intern_stack(w, small_stack_c, 2, &ids->stack_c), 0);
	cr_assert_eq(sp_spool_writer_intern_stack(w, small_stack_a, 4, &ids->stack_a), 0);
}

/* s's stack_id holds small_stack_a's frames, leaf first. */
static void assert_stack_a(const struct sp_spool *s, uint32_t stack_id)
{
	cr_assert_eq(sp_spool_stack_depth(s, stack_id), 4);
	for (size_t i = 0; i < 4; i++, stack_id = sp_spool_stack_parent(s, stack_id)) {
		const struct sp_frame *f = sp_spool_frame(s, sp_spool_stack_frame(s, stack_id));
		cr_assert_eq(f->abs_ip, small_frames[small_stack_a[i]].abs_ip);
		cr_assert_eq(f->rel_ip, small_frames[small_stack_a[i]].rel_ip);
		const struct sp_module *m = sp_spool_module(s, f->module_id);
		cr_assert_str_eq(m->path, small_modules[small_frames[small_stack_a[i]].module_id].path);
	}
}

Test(segments, compaction_drops_what_gone_processes_needed)
{
	struct sp_segments_opts o = {.segment_ns = 1000000000ull};
	struct sp_segments *g;
	char dir[512];
	snprintf(dir, sizeof(dir), "%s", tmp_path("segs"));
	cr_assert_eq(sp_segments_open(dir, &o, &g), 0);
	struct sp_spool_writer *w;
	cr_assert_eq(sp_segments_begin(g, &small_meta, &w), 0);
	struct small_ids ids;
	uint32_t gone_stack;
	compactable(w, &ids, &gone_stack);
	cr_assert_eq(sp_spool_writer_append_sample(w, ids.t1, gone_stack, small_times[0]), 0);
	cr_assert_eq(sp_spool_writer_compact_begin(w), -SP_E_BAD_ARG,
		     "the file refers to the dictionaries");
	cr_assert_not(sp_spool_writer_compact_due(w));
	struct sp_summary total = {.samples = 1, .sample_events = 1};
	cr_assert_eq(sp_segments_rotate(g, w, &total, small_meta.start_monotonic_ns + 1000000000), 0);

	cr_assert_eq(sp_spool_writer_compact_begin(w), 0);
	sp_spool_writer_keep_pid(w, 4242);
	sp_spool_writer_keep_stack(w, ids.stack_a);
	cr_assert_eq(sp_spool_writer_compact_end(w), 0);
	cr_assert_eq(sp_spool_writer_compacted_module(w, 3), SP_COMPACT_DROPPED);
	for (uint32_t m = 0; m < 3; m++)
		cr_assert_eq(sp_spool_writer_compacted_module(w, m), m, "module %u kept in place", m);
	cr_assert_eq(sp_spool_writer_compacted_stack(w, gone_stack), SP_COMPACT_DROPPED);
	cr_assert_eq(sp_spool_writer_compacted_stack(w, ids.stack_c), SP_COMPACT_DROPPED);
	uint32_t stack_a = sp_spool_writer_compacted_stack(w, ids.stack_a);
	cr_assert_eq(stack_a, 4, "stack_a's four nodes are all that is left");
	sp_spool_writer_compact_release(w);
	cr_assert_not(sp_spool_writer_has_thread(w, 777, 777));
	cr_assert(sp_spool_writer_has_thread(w, 4242, 4242));

	/* interning again finds the kept entries under their new ids */
	uint32_t id, t0, again;
	cr_assert_eq(sp_spool_writer_intern_frame(w, &small_frames[3], &id), 0);
	cr_assert_eq(sp_spool_writer_intern_stack(w, small_stack_a, 4, &again), 0);
	cr_assert_eq(again, stack_a);
	cr_assert_eq(sp_spool_writer_intern_thread(w, 4242, 4242, &t0), 0);
	cr_assert_eq(sp_spool_writer_append_sample(w, t0, stack_a, small_times[3]), 0);
	total.samples = total.sample_events = 2;
	cr_assert_eq(sp_segments_finish(g, w, &total), 0);
	sp_spool_writer_free(w);

	struct sp_segment_entry *v;
	cr_assert_eq(list(dir, &v), 2);
	struct sp_spool *s = open_in(dir, v[1].name);
	cr_assert_eq(sp_spool_sample_count(s), 1);
	cr_assert_eq(sp_spool_thread(s, sp_spool_sample(s, 0)->thread)->pid, 4242);
	cr_assert_str_eq(sp_spool_thread(s, sp_spool_sample(s, 0)->thread)->name, "chain4");
	assert_stack_a(s, sp_spool_sample(s, 0)->stack_id);
	cr_assert_eq(sp_spool_exec_count(s), 1, "only 4242's exec is restated");
	sp_spool_free(s);
	free(v);
	sp_segments_free(g);
}

Test(segments, compaction_keeps_a_flight_recorders_window)
{
	struct sp_spool_writer *w;
	cr_assert_eq(sp_spool_writer_open_rolling(&small_meta, 1000000000ull, &w), 0);
	struct small_ids ids;
	uint32_t gone_stack;
	compactable(w, &ids, &gone_stack);
	uint64_t t0 = small_meta.start_monotonic_ns;
	/* 777's samples leave the 1 s window; 4242's stay */
	cr_assert_eq(sp_spool_writer_append_sample(w, ids.t1, gone_stack, t0), 0);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(sp_spool_writer_append_sample(w, ids.t0, ids.stack_a,
							   t0 + 2000000000ull + (uint64_t)i * 1000000),
			     0);
	cr_assert_eq(sp_spool_writer_compact_begin(w), 0);
	cr_assert_eq(sp_spool_writer_compact_end(w), 0);
	cr_assert_eq(sp_spool_writer_compacted_module(w, 3), SP_COMPACT_DROPPED);
	cr_assert_eq(sp_spool_writer_compacted_stack(w, gone_stack), SP_COMPACT_DROPPED);
	cr_assert_neq(sp_spool_writer_compacted_stack(w, ids.stack_a), SP_COMPACT_DROPPED,
		      "the window's stack stays");
	sp_spool_writer_compact_release(w);
	int fd = open(tmp_path("snap.spool"), O_WRONLY | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0);
	struct sp_summary win;
	cr_assert_eq(sp_spool_writer_snapshot(w, fd, t0 + 2100000000ull, 1700000003000000ull, false,
					      &win), 0);
	cr_assert_eq(win.samples, 10);
	struct sp_spool *s = NULL;
	cr_assert_eq(sp_spool_open(tmp_path("snap.spool"), &s), 0);
	cr_assert_eq(sp_spool_sample_count(s), 10);
	cr_assert_str_eq(sp_spool_thread(s, sp_spool_sample(s, 9)->thread)->name, "chain4");
	assert_stack_a(s, sp_spool_sample(s, 9)->stack_id);
	sp_spool_free(s);
	sp_spool_writer_free(w);
}

Test(segments, a_single_spool_is_never_compacted)
{
	struct sp_spool_writer *w;
	cr_assert_eq(sp_spool_writer_open(tmp_path("one.spool"), &small_meta, &w), 0);
	cr_assert_not(sp_spool_writer_compact_due(w));
	cr_assert_eq(sp_spool_writer_compact_begin(w), -SP_E_BAD_ARG);
	sp_spool_writer_free(w);
}
