/* SPDX-License-Identifier: MIT */
/* Unit tests of the live view over a growing spool (lib/report/live.c). */
#include <inttypes.h>

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

static void open_fixture(struct fixture *f, uint32_t window)
{
	struct sp_spool_meta m = small_meta;
	m.start_monotonic_ns = T0;
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
	struct sp_live_opts lo = {.window_s = window};
	cr_assert_eq(sp_live_new(f->t, f->sym, &lo, &f->live), 0);
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
	uint32_t ids[2], rec, other;
	for (int i = 0; i < 2; i++) {
		struct sp_frame fr = {.module_id = SP_NO_MODULE, .mode = SP_FRAME_USER, .abs_ip = ips[i]};
		cr_assert_eq(sp_spool_writer_intern_frame(f.w, &fr, &ids[i]), 0);
	}
	uint32_t chain[] = {ids[0], ids[1], ids[0]};
	cr_assert_eq(sp_spool_writer_intern_stack(f.w, chain, 3, &rec), 0);
	cr_assert_eq(sp_spool_writer_intern_thread(f.w, 88, 88, &other), 0);
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
	bool seen77 = false, seen88 = false;
	for (size_t i = 0; i < n; i++) {
		if (!strstr(rows[i].name, "1000"))
			continue;
		if (rows[i].pid == 77)
			seen77 = rows[i].total_all == 4 && rows[i].self_all == 4;
		if (rows[i].pid == 88)
			seen88 = rows[i].total_all == 6 && rows[i].self_all == 6;
	}
	cr_assert(seen77 && seen88, "ips[0] has 4 samples in process 77, 6 in 88");
	free(rows);
	close_fixture(&f);
}
