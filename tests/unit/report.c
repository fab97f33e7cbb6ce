/* SPDX-License-Identifier: MIT */
/* Unit tests of the reports: exact folded output and the text report's shares on a known spool. */
#include <criterion/criterion.h>

#include "report_internal.h"

#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "self_module.h"

/* Functions the fixture's stacks point into; bodies big enough for +4 and +8. */
__attribute__((noinline)) int sp_test_known_alpha(int x)
{
	volatile int acc = x;
	for (int i = 0; i < x; i++)
		acc = acc * 3 + i;
	return acc;
}

__attribute__((noinline)) int sp_test_known_beta(int x)
{
	volatile int acc = x;
	for (int i = 0; i < x; i++)
		acc = acc ^ (i * 7);
	return acc + sp_test_known_alpha(x);
}

__attribute__((noinline)) int sp_test_root(int x)
{
	volatile int acc = x;
	for (int i = 0; i < x; i++)
		acc -= i;
	return acc + sp_test_known_beta(x);
}

/*
 * A known inline chain (as in tests/unit/symbolizer.c): inner and middle are
 * always inlined into sp_test_inline_outer; inner returns the address of an
 * instruction of its inlined body, and each records the line that matters.
 */
static int inline_line[3];

static inline __attribute__((always_inline)) uint64_t sp_test_inline_inner(void)
{
	uint64_t pc;
	__asm__ volatile("1: lea 1b(%%rip), %0" : "=r"(pc));
	inline_line[0] = __LINE__ - 1;
	return pc;
}

static inline __attribute__((always_inline)) uint64_t sp_test_inline_middle(void)
{
	uint64_t pc = sp_test_inline_inner();
	inline_line[1] = __LINE__ - 1;
	return pc ^ 1;
}

__attribute__((noinline)) uint64_t sp_test_inline_outer(void)
{
	uint64_t pc = sp_test_inline_middle();
	inline_line[2] = __LINE__ - 1;
	return pc ^ 1;
}

static char spool_path[64];
static struct sp_spool_writer *writer;
static struct sp_spool *spool;
static uint32_t thread;
static uint64_t now_ns;

static void setup(void)
{
	strcpy(spool_path, "/tmp/sp-report-XXXXXX");
	int fd = mkstemp(spool_path);
	cr_assert_geq(fd, 0);
	close(fd);
	struct sp_spool_meta meta = {.frequency_hz = 999, .event_source = SP_EVENT_CPU_CLOCK,
				     .start_monotonic_ns = 1000000000, .command = "./prog --fast",
				     .hostname = "h", .kernel_release = "k"};
	now_ns = meta.start_monotonic_ns;
	cr_assert_eq(sp_spool_writer_open(spool_path, &meta, &writer), 0);
	cr_assert_eq(sp_spool_writer_intern_thread(writer, 10, 10, &thread), 0);
}

static void teardown(void)
{
	sp_spool_free(spool);
	sp_spool_writer_free(writer);
	unlink(spool_path);
	spool = NULL;
	writer = NULL;
}

TestSuite(report, .init = setup, .fini = teardown);

static uint32_t frame(uint32_t mid, const struct sp_module *m, uint64_t addr)
{
	struct sp_frame f = {.module_id = mid, .mode = SP_FRAME_USER, .abs_ip = addr,
			     .rel_ip = addr - m->start + m->file_offset};
	uint32_t id;
	cr_assert_eq(sp_spool_writer_intern_frame(writer, &f, &id), 0);
	return id;
}

static uint32_t marker(void)
{
	struct sp_frame f = {.module_id = SP_NO_MODULE, .mode = SP_FRAME_TRUNCATED,
			     .abs_ip = SP_STOP_STACK_EXHAUSTED};
	uint32_t id;
	cr_assert_eq(sp_spool_writer_intern_frame(writer, &f, &id), 0);
	return id;
}

/* count samples of the stack frames[0..n) (leaf first), 10 ms apart. */
static void samples(const uint32_t *frames, size_t n, unsigned count)
{
	uint32_t sid;
	cr_assert_eq(sp_spool_writer_intern_stack(writer, frames, n, &sid), 0);
	for (unsigned i = 0; i < count; i++) {
		cr_assert_eq(sp_spool_writer_append_sample(writer, thread, sid, now_ns), 0);
		now_ns += 10000000;
	}
}

static uint64_t fn(int (*f)(int))
{
	return (uint64_t)(uintptr_t)f;
}

/*
 * 13 samples: alpha<-beta<-root x5, the same names at other addresses x1,
 * beta<-root x3, alpha<-alpha<-root x2 (recursion), alpha<-[truncated] x1,
 * empty x1.
 */
static void known_profile_summary(const struct sp_summary *sum)
{
	struct sp_module m;
	uint32_t mid = sp_test_self_module(writer, &m, fn(sp_test_known_alpha));
	uint32_t a = frame(mid, &m, fn(sp_test_known_alpha) + 4);
	uint32_t a2 = frame(mid, &m, fn(sp_test_known_alpha) + 8);
	uint32_t b = frame(mid, &m, fn(sp_test_known_beta) + 4);
	uint32_t b2 = frame(mid, &m, fn(sp_test_known_beta) + 8);
	uint32_t r = frame(mid, &m, fn(sp_test_root) + 4);
	uint32_t t = marker();
	samples((uint32_t[]){a, b, r}, 3, 5);
	samples((uint32_t[]){a2, b2, r}, 3, 1);
	samples((uint32_t[]){b, r}, 2, 3);
	samples((uint32_t[]){a, a2, r}, 3, 2);
	samples((uint32_t[]){a, t}, 2, 1);
	samples(NULL, 0, 1);
	if (sum) {
		cr_assert_eq(sp_spool_writer_finish(writer, sum), 0);
	} else {
		cr_assert_eq(sp_spool_writer_flush(writer), 0);
	}
	sp_spool_writer_free(writer);
	writer = NULL;
	cr_assert_eq(sp_spool_open(spool_path, &spool), 0);
}

static void known_profile(bool finish)
{
	struct sp_summary sum = {.sample_events = 13, .samples = 13};
	known_profile_summary(finish ? &sum : NULL);
}

static char *report(uint32_t format, uint32_t rows, uint32_t stacks)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cr_assert_not_null(out);
	struct sp_symbolizer *sym;
	cr_assert_eq(sp_symbolizer_new(spool, NULL, &sym), 0);
	struct sp_report_opts opts = {.format = format, .max_rows = rows, .max_stacks = stacks,
				      .spool_path = "known.spool"};
	cr_assert_eq(sp_report_write(spool, sym, &opts, out), 0);
	fclose(out);
	sp_symbolizer_free(sym);
	return text;
}

static bool has_line(const char *text, const char *line);
static const char *basename_of_self(void);

/* 4 samples in the inline chain, 2 in sp_test_known_beta, called from sp_test_root. */
static void inline_profile(void)
{
	uint64_t pc = sp_test_inline_outer();
	struct sp_module m;
	uint32_t mid = sp_test_self_module(writer, &m, pc);
	uint32_t in = frame(mid, &m, pc);
	uint32_t b = frame(mid, &m, fn(sp_test_known_beta) + 4);
	uint32_t r = frame(mid, &m, fn(sp_test_root) + 4);
	samples((uint32_t[]){in, r}, 2, 4);
	samples((uint32_t[]){b, r}, 2, 2);
	cr_assert_eq(sp_spool_writer_finish(writer, &(struct sp_summary){.samples = 6}), 0);
	sp_spool_writer_free(writer);
	writer = NULL;
	cr_assert_eq(sp_spool_open(spool_path, &spool), 0);
}

static char *report_with(const struct sp_report_opts *ro, const struct sp_symbolizer_opts *so)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cr_assert_not_null(out);
	struct sp_symbolizer *sym;
	cr_assert_eq(sp_symbolizer_new(spool, so, &sym), 0);
	cr_assert_eq(sp_report_write(spool, sym, ro, out), 0);
	fclose(out);
	sp_symbolizer_free(sym);
	return text;
}

Test(report, inline_frames_in_folded_stacks)
{
	inline_profile();
	struct sp_report_opts ro = {.format = SP_REPORT_FOLDED};
	char *text = report_with(&ro, NULL);
	cr_expect_str_eq(text, "sp_test_root;sp_test_inline_outer;sp_test_inline_middle_[i];"
			       "sp_test_inline_inner_[i] 4\n"
			       "sp_test_root;sp_test_known_beta 2\n");
	free(text);

	/* --no-inline: the containing function alone, as symbol tables show it. */
	text = report_with(&ro, &(struct sp_symbolizer_opts){.no_inline = true});
	cr_expect_str_eq(text, "sp_test_root;sp_test_inline_outer 4\n"
			       "sp_test_root;sp_test_known_beta 2\n");
	free(text);
}

Test(report, lines_in_folded_stacks)
{
	inline_profile();
	struct sp_report_opts ro = {.format = SP_REPORT_FOLDED, .lines = true};
	char *text = report_with(&ro, NULL);
	char want[256];
	snprintf(want, sizeof(want), ";sp_test_inline_outer:%d;sp_test_inline_middle:%d_[i];"
		 "sp_test_inline_inner:%d_[i] 4\n", inline_line[2], inline_line[1],
		 inline_line[0]);
	cr_expect_not_null(strstr(text, want), "no '%s' in\n%s", want, text);
	cr_expect_eq(strncmp(text, "sp_test_root:", 13), 0, "%s", text);
	free(text);

	text = report_with(&ro, &(struct sp_symbolizer_opts){.no_inline = true});
	snprintf(want, sizeof(want), ";sp_test_inline_outer:%d 4\n", inline_line[2]);
	cr_expect_not_null(strstr(text, want), "no '%s' in\n%s", want, text);
	free(text);
}

Test(report, inline_frames_and_lines_in_the_text_report)
{
	inline_profile();
	const char *mod = basename_of_self();
	char want[256];
	struct sp_report_opts ro = {.format = SP_REPORT_TEXT, .spool_path = "inline.spool"};
	char *text = report_with(&ro, NULL);
	/* Self time is the innermost inlined function's; its callers have total only. */
	const char *w = "sp_test_inline_middle [inline]"; /* the widest: the column's width */
	snprintf(want, sizeof(want), "  66.7%%   66.7%%         4  %-*s  %s", (int)strlen(w),
		 "sp_test_inline_inner [inline]", mod);
	cr_expect(has_line(text, want), "missing '%s' in\n%s", want, text);
	snprintf(want, sizeof(want), "   0.0%%   66.7%%         0  %s  %s", w, mod);
	cr_expect(has_line(text, want), "missing '%s' in\n%s", want, text);
	snprintf(want, sizeof(want), "   0.0%%   66.7%%         0  %-*s  %s", (int)strlen(w),
		 "sp_test_inline_outer", mod);
	cr_expect(has_line(text, want), "missing '%s' in\n%s", want, text);
	/* The heaviest stack, leaf first: the chain innermost first, then its callers. */
	snprintf(want, sizeof(want), "    sp_test_inline_inner [inline] (%s)\n"
				     "    sp_test_inline_middle [inline] (%s)\n"
				     "    sp_test_inline_outer (%s)\n"
				     "    sp_test_root (%s)\n", mod, mod, mod, mod);
	cr_expect_not_null(strstr(text, want), "no '%s' in\n%s", want, text);
	free(text);

	ro.lines = true;
	text = report_with(&ro, NULL);
	snprintf(want, sizeof(want), "  66.7%%   66.7%%         4  sp_test_inline_inner [inline]"
		 " (report.c:%d)", inline_line[0]);
	cr_expect_not_null(strstr(text, want), "no '%s' in\n%s", want, text);
	snprintf(want, sizeof(want), "    sp_test_inline_inner [inline] (report.c:%d) (%s)\n"
				     "    sp_test_inline_middle [inline] (report.c:%d) (%s)\n"
				     "    sp_test_inline_outer (report.c:%d) (%s)\n",
		 inline_line[0], mod, inline_line[1], mod, inline_line[2], mod);
	cr_expect_not_null(strstr(text, want), "no '%s' in\n%s", want, text);
	/* The table stays within 80 columns, the marks kept when names are cut. */
	const char *table = strstr(text, "  Self%");
	const char *end = table ? strstr(table, "\nHeaviest") : NULL;
	cr_assert(table && end, "%s", text);
	for (const char *p = table; p < end;) {
		size_t n = strcspn(p, "\n");
		cr_expect_leq(n, 80, "line too long: %.*s", (int)n, p);
		p += n + 1;
	}
	free(text);
}

Test(report, folded_output_is_exact)
{
	known_profile(true);
	char *text = report(SP_REPORT_FOLDED, 0, 0);
	cr_expect_str_eq(text, "[empty] 1\n"
			       "[truncated];sp_test_known_alpha 1\n"
			       "sp_test_root;sp_test_known_alpha;sp_test_known_alpha 2\n"
			       "sp_test_root;sp_test_known_beta 3\n"
			       "sp_test_root;sp_test_known_beta;sp_test_known_alpha 6\n");
	free(text);
}

static bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	for (const char *p = text; (p = strstr(p, line)); p++)
		if ((p == text || p[-1] == '\n') && (p[n] == '\n' || !p[n]))
			return true;
	return false;
}

static const char *basename_of_self(void)
{
	static char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	cr_assert_gt(n, 0);
	buf[n] = '\0';
	return strrchr(buf, '/') + 1;
}

Test(report, text_report_shares)
{
	known_profile(true);
	char *text = report(SP_REPORT_TEXT, 0, 0);
	const char *mod = basename_of_self();
	char want[256];

	cr_expect(has_line(text, "Spool:      known.spool"), "%s", text);
	cr_expect(has_line(text, "Command:    ./prog --fast"), "%s", text);
	cr_expect(has_line(text, "Event:      cpu-clock at 999 Hz"), "%s", text);
	cr_expect(has_line(text, "Duration:   0.120 s"), "%s", text);
	cr_expect(has_line(text, "Samples:    13 (lost 0)"), "%s", text);
	cr_expect(has_line(text, "Empty:      7.7% of samples had no stack (1)"), "%s", text);
	cr_expect(has_line(text, "Truncated:  7.7% of samples had a truncated stack (1)"),
		  "%s", text);
	cr_expect_null(strstr(text, "cut short"), "%s", text);
	/* alpha: self 9 (leaf of 5+1+2+1), total 9 (recursion counted once). */
	snprintf(want, sizeof(want), "  69.2%%   69.2%%         9  %-24s  %s",
		 "sp_test_known_alpha", mod);
	cr_expect(has_line(text, want), "missing '%s' in\n%s", want, text);
	snprintf(want, sizeof(want), "  23.1%%   69.2%%         3  %-24s  %s",
		 "sp_test_known_beta", mod);
	cr_expect(has_line(text, want), "missing '%s' in\n%s", want, text);
	snprintf(want, sizeof(want), "   0.0%%   84.6%%         0  %-24s  %s", "sp_test_root",
		 mod);
	cr_expect(has_line(text, want), "missing '%s' in\n%s", want, text);
	/* Heaviest: two stack ids with the same names merge into 6 samples. */
	cr_expect(has_line(text, " 46.2% (6 samples)"), "%s", text);
	snprintf(want, sizeof(want), "    sp_test_known_beta (%s)", mod);
	cr_expect(has_line(text, want), "%s", text);
	cr_expect(has_line(text, " 23.1% (3 samples)"), "%s", text);
	cr_expect(has_line(text, " 15.4% (2 samples)"), "%s", text);
	/* The truncated stack is not among the heaviest complete stacks. */
	cr_expect_null(strstr(text, "(1 sample)"), "%s", text);
	cr_expect(strstr(text, "(6 samples)") < strstr(text, "(3 samples)"));
	free(text);
}

Test(report, cut_short_recording_is_said)
{
	known_profile(false);
	cr_assert_null(sp_spool_summary(spool));
	char *text = report(SP_REPORT_TEXT, 0, 0);
	cr_expect(has_line(text, "Note:       the recording was cut short; only its intact prefix"
				 " is shown"), "%s", text);
	free(text);
}

Test(report, limits_rows_and_stacks)
{
	known_profile(true);
	char *text = report(SP_REPORT_TEXT, 1, 1);
	cr_expect_not_null(strstr(text, "sp_test_known_alpha"));
	cr_expect(has_line(text, "(2 more functions not shown)"), "%s", text);
	cr_expect(has_line(text, " 46.2% (6 samples)"), "%s", text);
	cr_expect_null(strstr(text, "(3 samples)"), "%s", text);
	free(text);
}

Test(report, long_names_stay_within_80_columns)
{
	/* Unreadable module with a long name: fallback names are long too. */
	char path[200];
	memset(path, 'x', sizeof(path));
	memcpy(path, "/nonexistent/", 13);
	path[sizeof(path) - 1] = '\0';
	struct sp_module m = {.start = 0x1000, .end = 0x2000, .path = path};
	uint32_t mid;
	cr_assert_eq(sp_spool_writer_add_module(writer, &m, &mid), 0);
	uint32_t f = frame(mid, &m, 0x1234);
	samples(&f, 1, 2);
	cr_assert_eq(sp_spool_writer_finish(writer, &(struct sp_summary){0}), 0);
	sp_spool_writer_free(writer);
	writer = NULL;
	cr_assert_eq(sp_spool_open(spool_path, &spool), 0);
	char *text = report(SP_REPORT_TEXT, 0, 0);
	const char *table = strstr(text, "  Self%");
	cr_assert_not_null(table, "%s", text);
	const char *end = strstr(table, "\nHeaviest");
	for (const char *p = table; p < end;) {
		size_t n = strcspn(p, "\n");
		cr_expect_leq(n, 80, "line too long: %.*s", (int)n, p);
		p += n + 1;
	}
	cr_expect(has_line(text, "Unreadable: 1 module file missing or not ELF; shown as"
				 " module+offset"), "%s", text);
	free(text);
}

Test(report, empty_spool)
{
	cr_assert_eq(sp_spool_writer_finish(writer, &(struct sp_summary){0}), 0);
	sp_spool_writer_free(writer);
	writer = NULL;
	cr_assert_eq(sp_spool_open(spool_path, &spool), 0);
	char *text = report(SP_REPORT_TEXT, 0, 0);
	cr_expect(has_line(text, "No samples."), "%s", text);
	free(text);
	text = report(SP_REPORT_FOLDED, 0, 0);
	cr_expect_str_eq(text, "");
	free(text);
}

Test(report, rejects_unknown_format)
{
	known_profile(true);
	struct sp_report_opts opts = {.format = 7};
	cr_expect_eq(sp_report_write(spool, NULL, &opts, stdout), -SP_E_BAD_ARG);
}

/* ---- the header's counters and error breakdown ------------------------------ */

Test(report, clean_counters_take_one_line)
{
	known_profile(true);
	char *text = report(SP_REPORT_TEXT, 0, 0);
	cr_expect(has_line(text, "Counters:   13 sample events, 13 written, 0 lost, kernel frames off"),
		  "%s", text);
	cr_expect_null(strstr(text, "Unwinding:"), "%s", text);
	cr_expect_null(strstr(text, "Errors:"), "%s", text);
	cr_expect_null(strstr(text, "missing"), "%s", text);
	cr_expect_null(strstr(text, "callchain"), "%s", text);
	/* The counters belong to the header: before the table. */
	cr_expect(strstr(text, "Counters:") < strstr(text, "  Self%"), "%s", text);
	free(text);
}

Test(report, problem_counters_and_breakdown)
{
	struct sp_summary sum = {
		.sample_events = 20, .samples = 13, .lost_events = 2, .kernel_enabled = true,
		.missing_pid_samples = 1, .idle_tid_samples = 3, .empty_stack_samples = 1,
		.truncated_frame_markers = 1, .spliced_stacks = 2,
		.ignored_user_callchain_frames = 40,
	};
	sum.stop_reasons[SP_STOP_ROOT] = 9;
	sum.stop_reasons[SP_STOP_NO_UNWIND_INFO] = 1;
	sum.stop_reasons[SP_STOP_STACK_EXHAUSTED] = 3;
	sum.error_stats[SP_ERR_RECORD_MALFORMED] = 1;
	sum.error_stats[SP_ERR_UNKNOWN_PROCESS] = 2;
	known_profile_summary(&sum);
	char *text = report(SP_REPORT_TEXT, 0, 0);

	/* Only the non-zero problems, wrapped within 80 columns. */
	cr_expect(has_line(text, "Counters:   20 sample events, 13 written, 2 lost, kernel frames on,"),
		  "%s", text);
	cr_expect(has_line(text, "            1 missing pid, 3 idle tid, 1 empty stack,"
				 " 1 truncation marker"), "%s", text);
	cr_expect_null(strstr(text, "missing tid"), "%s", text);
	cr_expect_null(strstr(text, "missing timestamp"), "%s", text);

	/* Stop reasons heaviest first, ROOT never; shares of the 20 sample events. */
	cr_expect(has_line(text, "Unwinding:  4 stacks where DWARF unwinding stopped early"
				 " (20.0% of samples)"), "%s", text);
	const char *exhausted = "              stack-exhausted   3   15.0%  stack copy exhausted";
	const char *no_cfi = "              no-unwind-info    1    5.0%  no call-frame information";
	cr_expect(has_line(text, exhausted), "%s", text);
	cr_expect(has_line(text, no_cfi), "%s", text);
	cr_expect(strstr(text, exhausted) < strstr(text, no_cfi), "%s", text);
	cr_expect_null(strstr(text, "  root "), "%s", text);
	cr_expect(has_line(text, "            2 stacks continued by frame pointers,"
				 " 40 callchain frames unused"), "%s", text);

	const char *unknown = "              unknown-process   2   10.0%"
			      "  sample from an untracked process";
	const char *malformed = "              record-malformed  1    5.0%"
				"  malformed perf record skipped";
	cr_expect(has_line(text, "Errors:     3 sample errors (15.0% of samples)"), "%s", text);
	cr_expect(has_line(text, unknown), "%s", text);
	cr_expect(has_line(text, malformed), "%s", text);
	cr_expect(strstr(text, unknown) < strstr(text, malformed), "%s", text);
	cr_expect(strstr(text, "Unwinding:") < strstr(text, "Errors:"), "%s", text);

	/* Every header line fits in 80 columns. */
	const char *end = strstr(text, "\n  Self%");
	cr_assert_not_null(end, "%s", text);
	for (const char *p = text; p < end;) {
		size_t n = strcspn(p, "\n");
		cr_expect_leq(n, 80, "line too long: %.*s", (int)n, p);
		p += n + 1;
	}
	free(text);
}

Test(report, error_kinds_alone)
{
	struct sp_summary sum = {.sample_events = 13, .samples = 13};
	sum.stop_reasons[SP_STOP_ROOT] = 13;
	sum.error_stats[SP_ERR_SPOOL_WRITE] = 1;
	known_profile_summary(&sum);
	char *text = report(SP_REPORT_TEXT, 0, 0);
	cr_expect(has_line(text, "Counters:   13 sample events, 13 written, 0 lost, kernel frames off"),
		  "%s", text);
	cr_expect_null(strstr(text, "Unwinding:"), "%s", text);
	cr_expect(has_line(text, "Errors:     1 sample error (7.7% of samples)"), "%s", text);
	cr_expect(has_line(text, "              spool-write  1    7.7%  spool write failed"), "%s",
		  text);
	free(text);
}

Test(report, cut_short_recording_has_no_counters)
{
	known_profile(false);
	char *text = report(SP_REPORT_TEXT, 0, 0);
	cr_expect_null(strstr(text, "Counters:"), "%s", text);
	free(text);
}
