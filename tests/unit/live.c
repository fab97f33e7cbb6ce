/* SPDX-License-Identifier: MIT */
/* Unit tests of the live view over a growing spool (lib/report/live.c). */
#include <inttypes.h>

#include "self_module.h"
#include "spool_fixture.h"

TestSuite(live, .init = tmp_setup, .fini = tmp_teardown);

#define SEC 1000000000ull
#define T0 (1000 * SEC) /* the recording's start, CLOCK_MONOTONIC */

/* Three addresses outside every module: each its own function ("0x..."). */
static const uint64_t ips[3] = {0x1000, 0x2000, 0x3000};

struct fixture {
	struct sp_spool_writer *w;
	uint32_t thread, stack_a, stack_b; /* a: ips[0] under ips[1]; b: ips[2] under ips[1] */
	struct sp_tail *t;
	struct sp_symbolizer *sym;
	struct sp_live *live;
};

static void open_fixture_metric(struct fixture *f, uint32_t window, uint32_t metric)
{
	struct sp_spool_meta m = small_meta;
	m.start_monotonic_ns = T0;
	m.flags |= metric != SP_METRIC_CPU ? SP_META_OFF_CPU : 0;
	cr_assert_eq(sp_spool_writer_open(tmp_path("live.spool"), &m, &f->w), 0);
	uint32_t ids[3];
	for (int i = 0; i < 3; i++) {
		struct sp_frame fr = {.module_id = SP_NO_MODULE, .mode = SP_FRAME_USER, .abs_ip = ips[i]};
		cr_assert_eq(sp_spool_writer_intern_frame(f->w, &fr, &ids[i]), 0);
	}
	uint32_t a[] = {ids[0], ids[1]}, b[] = {ids[2], ids[1]};
	cr_assert_eq(sp_spool_writer_intern_stack(f->w, a, 2, &f->stack_a), 0);
	cr_assert_eq(sp_spool_writer_intern_stack(f->w, b, 2, &f->stack_b), 0);
	cr_assert_eq(sp_spool_writer_intern_thread(f->w, 77, 77, &f->thread), 0);
	cr_assert_eq(sp_spool_writer_set_thread_name(f->w, f->thread, "prog"), 0);
	cr_assert_eq(sp_spool_writer_flush(f->w), 0);
	cr_assert_eq(sp_tail_open(tmp_path("live.spool"), &f->t), 0);
	struct sp_tail_batch batch;
	cr_assert_eq(sp_tail_poll(f->t, &batch), 0);
	const struct sp_symbolizer_opts o = {.no_kernel_symbols = true,
					     .perf_map_policy = SP_PERF_MAPS_NONE};
	cr_assert_eq(sp_tail_symbolizer(f->t, &o, &f->sym), 0);
	struct sp_live_opts lo = {.window_s = window, .metric = metric};
	cr_assert_eq(sp_live_new(f->t, f->sym, &lo, &f->live), 0);
}

static void open_fixture(struct fixture *f, uint32_t window)
{
	open_fixture_metric(f, window, SP_METRIC_CPU);
}

/* n samples of stack at second sec (spread over it), flushed. */
static void samples(struct fixture *f, uint32_t stack, uint64_t sec, int n)
{
	for (int i = 0; i < n; i++)
		cr_assert_eq(sp_spool_writer_append_sample(f->w, f->thread, stack,
							   T0 + sec * SEC + (uint64_t)i * (SEC / 100)),
			     0);
	cr_assert_eq(sp_spool_writer_flush(f->w), 0);
}

static void close_fixture(struct fixture *f)
{
	sp_live_free(f->live);
	sp_symbolizer_free(f->sym);
	sp_tail_free(f->t);
	sp_spool_writer_free(f->w);
}

/* The row of the function at address ip, or NULL. */
static const struct sp_live_row *row_of(const struct sp_live_row *rows, size_t n, uint64_t ip)
{
	char want[32];
	snprintf(want, sizeof(want), "%" PRIx64, ip);
	for (size_t i = 0; i < n; i++)
		if (strstr(rows[i].name, want))
			return &rows[i];
	return NULL;
}

/* ... in process pid, rows by process. */
static const struct sp_live_row *row_in(const struct sp_live_row *rows, size_t n, uint64_t ip,
					int32_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (rows[i].pid == pid && row_of(&rows[i], 1, ip))
			return &rows[i];
	return NULL;
}

/* The live view's time since the start and in the window, and the part of each preempted (µs). */
static void assert_times(struct sp_live *l, uint64_t all, uint64_t win, uint64_t pall, uint64_t pwin)
{
	uint64_t w, a, pw, pa;
	sp_live_counts(l, &w, &a);
	sp_live_preempted(l, &pw, &pa);
	cr_assert(a == all && w == win && pa == pall && pw == pwin,
		  "all %" PRIu64 " window %" PRIu64 ", preempted %" PRIu64 " and %" PRIu64, a, w, pa, pw);
}

/* A recursive stack (ips[0] called by ips[1] called by ips[0]) and a thread of process 88. */
static void recursion_fixture(struct fixture *f, uint32_t *rec, uint32_t *other)
{
	uint32_t ids[2];
	for (int i = 0; i < 2; i++) {
		struct sp_frame fr = {.module_id = SP_NO_MODULE, .mode = SP_FRAME_USER, .abs_ip = ips[i]};
		cr_assert_eq(sp_spool_writer_intern_frame(f->w, &fr, &ids[i]), 0);
	}
	uint32_t chain[] = {ids[0], ids[1], ids[0]};
	cr_assert_eq(sp_spool_writer_intern_stack(f->w, chain, 3, rec), 0);
	cr_assert_eq(sp_spool_writer_intern_thread(f->w, 88, 88, other), 0);
}

/*
 * Stack a for seconds 0-4, stack b for 5-9, a 3 s window: since the start
 * both leaves have half, the window only b's; the shared caller is on every
 * stack; each update counts only the new samples.
 */
Test(live, window_and_since_start)
{
	struct fixture f;
	open_fixture(&f, 3);
	size_t got, total = 0;
	for (uint64_t s = 0; s < 10; s++) {
		samples(&f, s < 5 ? f.stack_a : f.stack_b, s, 10);
		cr_assert_eq(sp_live_update(f.live, 0, &got), 0);
		cr_assert_eq(got, 10, "second %" PRIu64 ": only the new samples are counted", s);
		total += got;
	}
	uint64_t win, all;
	sp_live_counts(f.live, &win, &all);
	cr_assert_eq(all, 100);
	cr_assert_eq(win, 30, "the window holds seconds 7-9");
	struct sp_live_view v = {.sort = SP_LIVE_SORT_SELF};
	struct sp_live_row *rows;
	size_t n = sp_live_rows(f.live, &v, &rows);
	cr_assert_eq(n, 3);
	const struct sp_live_row *a = row_of(rows, n, ips[0]), *b = row_of(rows, n, ips[2]),
				 *caller = row_of(rows, n, ips[1]);
	cr_assert(a && b && caller);
	cr_assert_eq(a->self_all, 50);
	cr_assert_eq(a->self_win, 0, "a left the window with seconds 0-4");
	cr_assert_eq(b->self_win, 30);
	cr_assert_eq(b->self_all, 50);
	cr_assert_eq(caller->self_all, 0);
	cr_assert_eq(caller->total_all, 100);
	cr_assert_eq(caller->total_win, 30);
	cr_assert_eq(rows[0].self_win, 30, "sorted by the window's self: b first");
	/* the caller's callees in the window: b alone */
	struct sp_live_row *callers, *callees;
	size_t ncallers, ncallees;
	cr_assert_eq(sp_live_neighbours(f.live, caller, &callers, &ncallers, &callees, &ncallees), 0);
	cr_assert_eq(ncallers, 0, "the caller is the stacks' root");
	cr_assert_eq(ncallees, 1);
	cr_assert_eq(callees[0].total_win, 30);
	cr_assert(strstr(callees[0].name, "3000"));
	free(callers);
	free(callees);
	free(rows);
	/* By process: one process here, so the same rows with its pid. */
	v.by_process = true;
	n = sp_live_rows(f.live, &v, &rows);
	cr_assert_eq(n, 3);
	cr_assert_eq(rows[0].pid, 77);
	cr_assert_str_eq(rows[0].process, "prog");
	free(rows);
	close_fixture(&f);
}

/* Time moves the window on when no sample comes: an idle target's shares fade. */
Test(live, the_window_moves_with_the_clock)
{
	struct fixture f;
	open_fixture(&f, 2);
	samples(&f, f.stack_a, 0, 10);
	cr_assert_eq(sp_live_update(f.live, T0 + SEC / 2, NULL), 0);
	uint64_t win, all;
	sp_live_counts(f.live, &win, &all);
	cr_assert_eq(win, 10);
	cr_assert_eq(sp_live_update(f.live, T0 + 5 * SEC, NULL), 0);
	sp_live_counts(f.live, &win, &all);
	cr_assert_eq(win, 0, "5 s later, nothing in a 2 s window");
	cr_assert_eq(all, 10);
	/* a whole second and the one still filling */
	char label[16];
	cr_assert_str_eq(sp_live_window_label(f.live, label, sizeof(label)), "1-2 s");
	close_fixture(&f);
}

/* The text table: a header naming the window, a row per function, shares of the window. */
Test(live, table_text)
{
	struct fixture f;
	open_fixture(&f, 5);
	samples(&f, f.stack_a, 0, 3);
	samples(&f, f.stack_b, 1, 1);
	cr_assert_eq(sp_live_update(f.live, 0, NULL), 0);
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	struct sp_live_view v = {.sort = SP_LIVE_SORT_SELF};
	cr_assert_eq(sp_live_write_table(f.live, &v, 2, 100, m), 0);
	fclose(m);
	cr_assert(strstr(text, "last 4-5 s"), "%s", text);
	cr_assert(strstr(text, "since start"), "%s", text);
	cr_assert(strstr(text, " 75.0%"), "a has 3 of 4 samples: %s", text);
	size_t lines = 0;
	for (char *p = text; *p; p++)
		lines += *p == '\n';
	cr_assert_eq(lines, 4, "two header lines and max_rows rows: %s", text);
	free(text);
	close_fixture(&f);
}

__attribute__((noinline)) int sp_test_live_hot(int x)
{
	volatile int acc = x;
	for (int i = 0; i < 3; i++)
		acc += i * x;
	return acc;
}

/*
 * Identical code is one function, as in the report: this binary and a copy
 * of it under another path (one build-id), each sampled in its own process,
 * are one row; rows by process keep the two processes apart.
 */
Test(live, identical_modules_are_one_function)
{
	struct sp_spool_meta meta = small_meta;
	meta.start_monotonic_ns = T0;
	char spool[128], copy_path[128];
	snprintf(spool, sizeof(spool), "%s", tmp_path("copies.spool"));
	snprintf(copy_path, sizeof(copy_path), "%s", tmp_path("copy.test"));
	struct sp_spool_writer *w;
	cr_assert_eq(sp_spool_writer_open(spool, &meta, &w), 0);
	uint64_t hot = (uint64_t)(uintptr_t)&sp_test_live_hot;
	struct sp_module self, copy;
	uint32_t mid[2], frame[2], stack[2], thread[2];
	mid[0] = sp_test_self_module(w, &self, hot);
	size_t len = 0;
	uint8_t *bytes = slurp(self.path, &len);
	FILE *out = fopen(copy_path, "wb");
	cr_assert(out && fwrite(bytes, 1, len, out) == len);
	fclose(out);
	free(bytes);
	copy = self;
	copy.path = copy_path;
	copy.pid = 78;
	cr_assert_eq(sp_spool_writer_add_module(w, &copy, &mid[1]), 0);
	for (int i = 0; i < 2; i++) {
		struct sp_frame fr = {.module_id = mid[i], .mode = SP_FRAME_USER, .abs_ip = hot + 4,
				      .rel_ip = hot + 4 - self.start + self.file_offset};
		cr_assert_eq(sp_spool_writer_intern_frame(w, &fr, &frame[i]), 0);
		cr_assert_eq(sp_spool_writer_intern_stack(w, &frame[i], 1, &stack[i]), 0);
		cr_assert_eq(sp_spool_writer_intern_thread(w, 77 + i, 77 + i, &thread[i]), 0);
		for (int k = 0; k < 2 + i; k++)
			cr_assert_eq(sp_spool_writer_append_sample(w, thread[i], stack[i],
								   T0 + (uint64_t)k * (SEC / 100)),
				     0);
	}
	cr_assert_eq(sp_spool_writer_flush(w), 0);
	struct sp_tail *t;
	cr_assert_eq(sp_tail_open(spool, &t), 0);
	struct sp_tail_batch batch;
	cr_assert_eq(sp_tail_poll(t, &batch), 0);
	const struct sp_symbolizer_opts o = {.no_kernel_symbols = true,
					     .perf_map_policy = SP_PERF_MAPS_NONE};
	struct sp_symbolizer *sym;
	cr_assert_eq(sp_tail_symbolizer(t, &o, &sym), 0);
	struct sp_live *live;
	cr_assert_eq(sp_live_new(t, sym, &(struct sp_live_opts){.window_s = 5}, &live), 0);
	cr_assert_eq(sp_live_update(live, 0, NULL), 0);
	struct sp_live_row *rows;
	size_t n = sp_live_rows(live, &(struct sp_live_view){.sort = SP_LIVE_SORT_SELF}, &rows);
	cr_assert_eq(n, 1, "one row for both copies, not %zu (%s in %s)", n, n ? rows[0].name : "",
		     n ? rows[0].module : "");
	cr_expect_str_eq(rows[0].name, "sp_test_live_hot");
	cr_expect_eq(rows[0].self_all, 5);
	free(rows);
	n = sp_live_rows(live, &(struct sp_live_view){.sort = SP_LIVE_SORT_SELF, .by_process = true},
			 &rows);
	cr_expect_eq(n, 2, "a row per process");
	free(rows);
	sp_live_free(live);
	sp_symbolizer_free(sym);
	sp_tail_free(t);
	sp_spool_writer_free(w);
}

/* An interval of stack off CPU from second `from` for `ms` milliseconds, flushed. */
static void interval(struct fixture *f, uint32_t stack, uint64_t from_ms, uint64_t ms,
		     uint32_t flags)
{
	struct sp_offcpu o = {.start_ns = T0 + from_ms * 1000000, .duration_ns = ms * 1000000,
			      .thread = f->thread, .stack_id = stack, .flags = flags};
	cr_assert_eq(sp_spool_writer_append_offcpu(f->w, &o), 0);
	cr_assert_eq(sp_spool_writer_flush(f->w), 0);
}

/*
 * Off-CPU time live: intervals count their microseconds under their stack,
 * the window only the part of each that its seconds hold, the preempted
 * part apart; CPU samples count nothing; the table says seconds.
 */
Test(live, off_cpu_time)
{
	struct fixture f;
	open_fixture_metric(&f, 2, SP_METRIC_OFF_CPU);
	samples(&f, f.stack_a, 0, 10); /* CPU samples: no off-CPU time */
	interval(&f, f.stack_a, 500, 3000, 0);                    /* 0.5-3.5 s, blocked */
	interval(&f, f.stack_b, 3600, 200, SP_OFFCPU_PREEMPTED);  /* 3.6-3.8 s */
	size_t got;
	cr_assert_eq(sp_live_update(f.live, 0, &got), 0);
	cr_assert_eq(got, 2, "two intervals counted");
	uint64_t win, all, pwin, pall;
	sp_live_counts(f.live, &win, &all);
	sp_live_preempted(f.live, &pwin, &pall);
	cr_assert_eq(all, 3200000, "3.2 s in µs: %" PRIu64, all);
	/* the window holds seconds 2-3: 1.5 s of the long interval and the short one */
	cr_assert_eq(win, 1700000, "window %" PRIu64, win);
	cr_assert_eq(pall, 200000);
	cr_assert_eq(pwin, 200000);
	struct sp_live_view v = {.sort = SP_LIVE_SORT_SELF};
	struct sp_live_row *rows;
	size_t n = sp_live_rows(f.live, &v, &rows);
	const struct sp_live_row *a = row_of(rows, n, ips[0]), *b = row_of(rows, n, ips[2]),
				 *caller = row_of(rows, n, ips[1]);
	cr_assert(a && b && caller);
	cr_assert_eq(a->self_all, 3000000);
	cr_assert_eq(a->self_win, 1500000);
	cr_assert_eq(b->self_win, 200000);
	cr_assert_eq(caller->total_all, 3200000);
	/* the caller's callees over the window, by time */
	struct sp_live_row *callers, *callees;
	size_t ncallers, ncallees;
	cr_assert_eq(sp_live_neighbours(f.live, caller, &callers, &ncallers, &callees, &ncallees), 0);
	cr_assert_eq(ncallees, 2);
	cr_assert_eq(callees[0].total_win, 1500000, "%" PRIu64, callees[0].total_win);
	cr_assert_eq(callees[1].total_win, 200000);
	free(callers);
	free(callees);
	free(rows);
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	cr_assert_eq(sp_live_write_table(f.live, &v, 0, 100, m), 0);
	fclose(m);
	cr_assert(strstr(text, "Self s Total s"), "%s", text);
	cr_assert(strstr(text, "  1.500   1.500   3.000   3.000  "), "a's row in seconds: %s", text);
	free(text);
	/* 3 s later the window is empty; the time since the start stays */
	cr_assert_eq(sp_live_update(f.live, T0 + 7 * SEC, NULL), 0);
	sp_live_counts(f.live, &win, &all);
	sp_live_preempted(f.live, &pwin, &pall);
	cr_assert_eq(win, 0);
	cr_assert_eq(pwin, 0);
	cr_assert_eq(all, 3200000);
	close_fixture(&f);
}

/* Wall time: a clock's samples as their period of CPU time, plus the intervals. */
Test(live, wall_time)
{
	struct fixture f;
	open_fixture_metric(&f, 5, SP_METRIC_WALL);
	samples(&f, f.stack_a, 0, 10);
	interval(&f, f.stack_b, 200, 100, 0);
	cr_assert_eq(sp_live_update(f.live, 0, NULL), 0);
	uint64_t win, all;
	sp_live_counts(f.live, &win, &all);
	/* 10 samples at 999 Hz: 1001 µs each */
	cr_assert_eq(all, 10 * 1001 + 100000, "%" PRIu64, all);
	cr_assert_eq(win, all);
	struct sp_live_opts bad = {.metric = 7};
	struct sp_live *l = NULL;
	cr_assert_eq(sp_live_new(f.t, f.sym, &bad, &l), -SP_E_BAD_ARG);
	close_fixture(&f);
}

/* An interval whose last second holds less than a microsecond still moves the window to it. */
Test(live, interval_ending_just_past_a_second)
{
	struct fixture f;
	open_fixture_metric(&f, 2, SP_METRIC_OFF_CPU);
	struct sp_offcpu o = {.start_ns = T0 + SEC / 2, .duration_ns = 5 * SEC / 2 + 500,
			      .thread = f.thread, .stack_id = f.stack_a};
	cr_assert_eq(sp_spool_writer_append_offcpu(f.w, &o), 0);
	cr_assert_eq(sp_spool_writer_flush(f.w), 0);
	cr_assert_eq(sp_live_update(f.live, 0, NULL), 0);
	uint64_t win, all;
	sp_live_counts(f.live, &win, &all);
	cr_assert_eq(all, 2500000);
	/* seconds 2-3 of a 2 s window: second 2 whole, second 3 under a microsecond */
	cr_assert_eq(win, 1000000, "window %" PRIu64, win);
	close_fixture(&f);
}

/*
 * Counted per stack node and folded over the prefix tree: a recursive stack
 * (ips[0] called by ips[1] called by ips[0]) gives ips[0] its samples once as
 * total, however often it is on the stack; a second process on the same
 * stacks has rows of its own by process, and the functions' sums otherwise.
 */
Test(live, recursion_counts_once_and_processes_apart)
{
	struct fixture f;
	open_fixture(&f, 5);
	uint32_t rec, other;
	recursion_fixture(&f, &rec, &other);
	samples(&f, rec, 0, 4);
	for (int i = 0; i < 6; i++)
		cr_assert_eq(sp_spool_writer_append_sample(f.w, other, f.stack_a, T0 + SEC / 2), 0);
	cr_assert_eq(sp_spool_writer_flush(f.w), 0);
	cr_assert_eq(sp_live_update(f.live, 0, NULL), 0);
	struct sp_live_view v = {.sort = SP_LIVE_SORT_TOTAL};
	struct sp_live_row *rows;
	size_t n = sp_live_rows(f.live, &v, &rows);
	const struct sp_live_row *a = row_of(rows, n, ips[0]), *caller = row_of(rows, n, ips[1]);
	cr_assert(a && caller);
	cr_assert_eq(a->total_all, 10, "4 recursive samples count once each, 6 more: %" PRIu64,
		     a->total_all);
	cr_assert_eq(a->self_all, 10);
	cr_assert_eq(caller->total_all, 10);
	cr_assert_eq(caller->self_all, 0);
	cr_assert_eq(a->total_win, 10);
	free(rows);
	v.by_process = true;
	n = sp_live_rows(f.live, &v, &rows);
	cr_assert_eq(n, 4, "two functions in each of two processes");
	const struct sp_live_row *a77 = row_in(rows, n, ips[0], 77), *a88 = row_in(rows, n, ips[0], 88);
	cr_assert(a77 && a88 && a77->total_all == 4 && a77->self_all == 4 && a88->total_all == 6 &&
		  a88->self_all == 6, "ips[0] has 4 samples in process 77, 6 in 88");
	free(rows);
	close_fixture(&f);
}

/*
 * Off-CPU time through the per-node counts: an interval on a recursive
 * stack gives its function its time once as total, each process keeps its
 * own rows, the window's share of each interval leaves with its seconds
 * (the fold made again), and the preempted part is counted apart.
 */
Test(live, off_cpu_time_folds_per_node)
{
	struct fixture f;
	open_fixture_metric(&f, 2, SP_METRIC_OFF_CPU);
	uint32_t rec, other;
	recursion_fixture(&f, &rec, &other);
	interval(&f, rec, 500, 2000, 0); /* process 77, 0.5-2.5 s, blocked */
	struct sp_offcpu o = {.start_ns = T0 + 2200 * 1000000ull, .duration_ns = 400 * 1000000ull,
			      .thread = other, .stack_id = f.stack_a, .flags = SP_OFFCPU_PREEMPTED};
	cr_assert_eq(sp_spool_writer_append_offcpu(f.w, &o), 0);
	cr_assert_eq(sp_spool_writer_flush(f.w), 0);
	cr_assert_eq(sp_live_update(f.live, 0, NULL), 0);
	/* the window holds seconds 1-2: 1.5 s of the long interval, all of the short one */
	assert_times(f.live, 2400000, 1900000, 400000, 400000);
	struct sp_live_view v = {.sort = SP_LIVE_SORT_TOTAL};
	struct sp_live_row *rows;
	size_t n = sp_live_rows(f.live, &v, &rows);
	const struct sp_live_row *a = row_of(rows, n, ips[0]), *caller = row_of(rows, n, ips[1]);
	cr_assert(a && caller);
	cr_assert_eq(a->total_all, 2400000, "recursion counts once: %" PRIu64, a->total_all);
	cr_assert_eq(a->self_all, 2400000);
	cr_assert_eq(a->total_win, 1900000, "%" PRIu64, a->total_win);
	cr_assert_eq(caller->total_all, 2400000);
	cr_assert_eq(caller->self_all, 0);
	free(rows);
	v.by_process = true;
	n = sp_live_rows(f.live, &v, &rows);
	const struct sp_live_row *a77 = row_in(rows, n, ips[0], 77), *a88 = row_in(rows, n, ips[0], 88);
	cr_assert(a77 && a88 && a77->total_all == 2000000 && a77->total_win == 1500000 &&
		  a88->total_all == 400000 && a88->total_win == 400000,
		  "ips[0]: 2 s in process 77 (1.5 in the window), 0.4 s in 88");
	free(rows);
	/* seconds later the window is empty, in the rows too; the time since the start stays */
	cr_assert_eq(sp_live_update(f.live, T0 + 6 * SEC, NULL), 0);
	assert_times(f.live, 2400000, 0, 400000, 0);
	v.by_process = false;
	n = sp_live_rows(f.live, &v, &rows);
	a = row_of(rows, n, ips[0]);
	cr_assert(a);
	cr_assert_eq(a->total_win, 0, "%" PRIu64, a->total_win);
	cr_assert_eq(a->total_all, 2400000);
	free(rows);
	close_fixture(&f);
}
