/* SPDX-License-Identifier: MIT */
/* Unit tests of the reports: exact folded output and the text report's shares on a known spool. */
#include <criterion/criterion.h>

#include "report/diff.h"
#include "report/report.h"

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

/* m's file copied to path, recorded as m's mapping in process pid (by build-id or by its stat). */
static struct sp_module copy_module(const struct sp_module *m, const char *path, int32_t pid,
				    bool with_build_id)
{
	FILE *in = fopen(m->path, "rb"), *out = fopen(path, "wb");
	cr_assert(in && out);
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		cr_assert_eq(fwrite(buf, 1, n, out), n);
	fclose(in);
	fclose(out);
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	struct sp_module c = *m;
	c.path = path;
	c.inode = st.st_ino;
	c.pid = pid;
	if (!with_build_id) {
		/* the symbolizer proves such a file by inode, size and mtime */
		c.build_id_len = 0;
		c.file_size = (uint64_t)st.st_size;
		c.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	}
	return c;
}

/*
 * Byte-identical copies of a program under other names are one function: one
 * build-id, or without one the group of files of the same bytes the
 * recorder named (same_bytes_as).
 */
static void identical_copy_is_one_function(bool with_build_id)
{
	struct sp_module self;
	uint32_t mid = sp_test_self_module(writer, &self, fn(sp_test_known_alpha));
	/* copies of this binary under other names, mapped at the same place in other processes */
	/* beside this test's spool: tests run in parallel, and a file rewritten while mapped is SIGBUS */
	char copy[sizeof(spool_path) + 16], copy2[sizeof(spool_path) + 16];
	snprintf(copy, sizeof(copy), "%s.copy", spool_path);
	snprintf(copy2, sizeof(copy2), "%s.copy2", spool_path);
	struct sp_module m = self, m2 = copy_module(&self, copy, 11, with_build_id);
	if (!with_build_id) {
		m = copy_module(&self, copy2, 12, false);
		cr_assert_eq(sp_spool_writer_add_module(writer, &m, &mid), 0);
		m2.same_bytes_as = mid + 1;
	}
	uint32_t mid2;
	cr_assert_eq(sp_spool_writer_add_module(writer, &m2, &mid2), 0);
	uint32_t a = frame(mid, &m, fn(sp_test_known_alpha) + 4);
	uint32_t a2 = frame(mid2, &m2, fn(sp_test_known_alpha) + 4);
	samples(&a, 1, 3);
	samples(&a2, 1, 2);
	cr_assert_eq(sp_spool_writer_finish(writer, &(struct sp_summary){0}), 0);
	sp_spool_writer_free(writer);
	writer = NULL;
	cr_assert_eq(sp_spool_open(spool_path, &spool), 0);
	char *text = report(SP_REPORT_TEXT, 0, 0);
	unlink(copy);
	unlink(copy2);
	/* one row of 5 samples, not two of 3 and 2 */
	const char *row = strstr(text, "sp_test_known_alpha");
	cr_assert_not_null(row, "%s", text);
	cr_expect_null(strstr(row + 1, "sp_test_known_alpha  "), "%s", text);
	cr_expect_not_null(strstr(text, "100.0%  100.0%         5  sp_test_known_alpha"), "%s", text);
	free(text);
}

Test(report, identical_modules_merge)
{
	identical_copy_is_one_function(true);
}

Test(report, identical_files_without_build_id_merge)
{
	identical_copy_is_one_function(false);
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
	cr_expect(has_line(text, "            2 stacks continued by the kernel's chain,"), "%s", text);
	cr_expect(has_line(text, "            40 callchain frames unused"), "%s", text);

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

/* A hostile summary trailer: counters that wrap when summed, shares above the whole. */
Test(report, hostile_counters_saturate)
{
	struct sp_summary sum = {.sample_events = 20, .samples = 13};
	sum.stop_reasons[SP_STOP_NO_UNWIND_INFO] = UINT64_MAX - 3;
	sum.stop_reasons[SP_STOP_STACK_EXHAUSTED] = 10;
	sum.error_stats[SP_ERR_RECORD_MALFORMED] = UINT64_MAX - 1;
	sum.error_stats[SP_ERR_UNKNOWN_PROCESS] = 7;
	known_profile_summary(&sum);

	struct sp_report_opts ro = {.format = SP_REPORT_JSON};
	char *json = report_with(&ro, NULL);
	cr_expect_not_null(strstr(json, "\"errors\":18446744073709551615,"), "%s", json);
	free(json);

	/* Every share in the breakdown is at most 100%: none of the rows says 184467...%. */
	char *text = report(SP_REPORT_TEXT, 0, 0);
	cr_expect(has_line(text, "              record-malformed  18446744073709551614  100.0%"
				 "  malformed perf record skipped"), "%s", text);
	cr_expect(has_line(text, "              no-unwind-info    18446744073709551612  100.0%"
				 "  no call-frame information"), "%s", text);
	cr_expect(has_line(text, "              unknown-process                      7   35.0%"
				 "  sample from an untracked process"), "%s", text);
	/* The sums saturate: neither header line wraps to a handful of stacks or errors. */
	cr_expect_not_null(strstr(text, "Unwinding:  18446744073709551615 stacks"), "%s", text);
	cr_expect_not_null(strstr(text, "Errors:     18446744073709551615 sample errors (100.0% of"),
			   "%s", text);
	cr_expect_eq(sp_summary_error_total(&sum), UINT64_MAX);
	for (const char *p = text; (p = strchr(p, '%')); p++) {
		const char *q = p;
		while (q > text && (q[-1] == '.' || (q[-1] >= '0' && q[-1] <= '9')))
			q--;
		cr_expect_leq(strtod(q, NULL), 100.0, "share above 100%%: %.*s", (int)(p - q + 1),
			      q);
	}
	free(text);
}

Test(report, cut_short_recording_has_no_counters)
{
	known_profile(false);
	char *text = report(SP_REPORT_TEXT, 0, 0);
	cr_expect_null(strstr(text, "Counters:"), "%s", text);
	free(text);
}

/* ---- views: trees, sorting, counts, limits ----------------------------------- */

/* text with "MOD" replaced by the module name of this test program. */
static char *with_module(const char *text)
{
	const char *mod = basename_of_self();
	size_t n = 0, k = strlen(mod);
	for (const char *p = text; (p = strstr(p, "MOD")); p += 3)
		n++;
	char *out = malloc(strlen(text) + n * k + 1), *o = out;
	cr_assert_not_null(out);
	for (const char *p = text; *p;) {
		if (!strncmp(p, "MOD", 3)) {
			memcpy(o, mod, k);
			o += k;
			p += 3;
		} else {
			*o++ = *p++;
		}
	}
	*o = '\0';
	return out;
}

/* The part of text from the line starting with from up to (not including) until. */
static char *section(const char *text, const char *from, const char *until)
{
	const char *p = strstr(text, from);
	cr_assert_not_null(p, "no '%s' in\n%s", from, text);
	const char *e = until ? strstr(p, until) : NULL;
	size_t n = e ? (size_t)(e - p) : strlen(p);
	char *s = malloc(n + 1);
	memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

static void expect_section(const char *text, const char *from, const char *until,
			   const char *want_template)
{
	char *got = section(text, from, until), *want = with_module(want_template);
	cr_expect_str_eq(got, want, "got:\n%s\nwant:\n%s", got, want);
	free(got);
	free(want);
}

Test(report, top_down_tree_is_exact)
{
	known_profile(true);
	struct sp_report_opts ro = {.format = SP_REPORT_TEXT, .tree = true, .percent_limit = 0};
	char *text = report_with(&ro, NULL);
	expect_section(text, "Call tree", "\nHeaviest",
		       "Call tree (top-down: callees indented under callers)\n"
		       " Total%   Self%  Function (module)\n"
		       "  84.6%    0.0%  sp_test_root (MOD)\n"
		       "  69.2%   23.1%    sp_test_known_beta (MOD)\n"
		       "  46.2%   46.2%      sp_test_known_alpha (MOD)\n"
		       "  15.4%    0.0%    sp_test_known_alpha (MOD)\n"
		       "  15.4%   15.4%      sp_test_known_alpha (MOD)\n"
		       "   7.7%    0.0%  [truncated]\n"
		       "   7.7%    7.7%    sp_test_known_alpha (MOD)\n");
	cr_expect_null(strstr(text, "  Self%  Total%"), "no flat table with --tree:\n%s", text);
	free(text);

	/* --percent-limit prunes a node and everything under it; -n adds counts. */
	ro.percent_limit = 20;
	ro.show_counts = true;
	text = report_with(&ro, NULL);
	expect_section(text, "Call tree", "\nHeaviest",
		       "Call tree (top-down: callees indented under callers)\n"
		       " Total%   Self%     Total      Self  Function (module)\n"
		       "  84.6%    0.0%        11         0  sp_test_root (MOD)\n"
		       "  69.2%   23.1%         9         3    sp_test_known_beta (MOD)\n"
		       "  46.2%   46.2%         6         6      sp_test_known_alpha (MOD)\n"
		       "(entries under 20% not shown)\n");
	free(text);
}

Test(report, inverted_tree_is_exact)
{
	known_profile(true);
	struct sp_report_opts ro = {.format = SP_REPORT_TEXT, .inverted = true,
				    .percent_limit = -1};
	char *text = report_with(&ro, NULL);
	/* The default limit, 0.5%, hides nothing here but is said. */
	expect_section(text, "Callers", "\nHeaviest",
		       "Callers (bottom-up: each leaf function, then its callers)\n"
		       "  Self%  Function (module)\n"
		       "  69.2%  sp_test_known_alpha (MOD)\n"
		       "  46.2%    sp_test_known_beta (MOD)\n"
		       "  46.2%      sp_test_root (MOD)\n"
		       "  15.4%    sp_test_known_alpha (MOD)\n"
		       "  15.4%      sp_test_root (MOD)\n"
		       "   7.7%    [truncated]\n"
		       "  23.1%  sp_test_known_beta (MOD)\n"
		       "  23.1%    sp_test_root (MOD)\n"
		       "(entries under 0.5% not shown)\n");
	free(text);
}

Test(report, flat_table_sort_counts_and_limit)
{
	known_profile(true);
	struct sp_report_opts ro = {.format = SP_REPORT_TEXT, .sort = SP_SORT_TOTAL,
				    .show_counts = true};
	char *text = report_with(&ro, NULL);
	expect_section(text, "  Self%", "\nHeaviest",
		       "  Self%  Total%      Self     Total  Function                  Module\n"
		       "   0.0%   84.6%         0        11  sp_test_root              MOD\n"
		       "  69.2%   69.2%         9         9  sp_test_known_alpha       MOD\n"
		       "  23.1%   69.2%         3         9  sp_test_known_beta        MOD\n");
	free(text);

	ro = (struct sp_report_opts){.format = SP_REPORT_TEXT, .sort = SP_SORT_NAME};
	text = report_with(&ro, NULL);
	expect_section(text, "  Self%", "\nHeaviest",
		       "  Self%  Total%   Samples  Function                  Module\n"
		       "  69.2%   69.2%         9  sp_test_known_alpha       MOD\n"
		       "  23.1%   69.2%         3  sp_test_known_beta        MOD\n"
		       "   0.0%   84.6%         0  sp_test_root              MOD\n");
	free(text);

	/* The limit applies to the sort key: self share by default. */
	ro = (struct sp_report_opts){.format = SP_REPORT_TEXT, .percent_limit = 50};
	text = report_with(&ro, NULL);
	expect_section(text, "  Self%", "\nHeaviest",
		       "  Self%  Total%   Samples  Function                  Module\n"
		       "  69.2%   69.2%         9  sp_test_known_alpha       MOD\n"
		       "(2 functions under 50% not shown)\n");
	free(text);
}

Test(report, views_fit_the_width_and_widen)
{
	/* A function name longer than any line: cut with "..." in every view. */
	char path[200];
	memset(path, 'y', sizeof(path));
	memcpy(path, "/nonexistent/", 13);
	path[sizeof(path) - 1] = '\0';
	struct sp_module m = {.start = 0x1000, .end = 0x2000, .path = path};
	uint32_t mid;
	cr_assert_eq(sp_spool_writer_add_module(writer, &m, &mid), 0);
	uint32_t f[3] = {frame(mid, &m, 0x1234), frame(mid, &m, 0x1334), frame(mid, &m, 0x1434)};
	samples(f, 3, 2);
	/* A deep recursion: the tree's indentation must stop somewhere. */
	uint32_t deep[60];
	for (size_t i = 0; i < SP_ARRAY_SIZE(deep); i++)
		deep[i] = f[i % 3];
	samples(deep, SP_ARRAY_SIZE(deep), 1);
	cr_assert_eq(sp_spool_writer_finish(writer, &(struct sp_summary){0}), 0);
	sp_spool_writer_free(writer);
	writer = NULL;
	cr_assert_eq(sp_spool_open(spool_path, &spool), 0);
	for (int v = 0; v < 3; v++) {
		for (uint32_t width = 80; width <= 120; width += 40) {
			struct sp_report_opts ro = {.format = SP_REPORT_TEXT, .tree = v == 1,
						    .inverted = v == 2, .show_counts = true,
						    .width = width == 80 ? 0 : width};
			char *text = report_with(&ro, NULL);
			size_t longest = 0;
			for (const char *p = text; *p;) {
				size_t n = strcspn(p, "\n");
				longest = n > longest ? n : longest;
				p += n + (p[n] != '\0');
			}
			cr_expect_leq(longest, width, "view %d: a line over %u columns:\n%s", v,
				      width, text);
			cr_expect_gt(longest, width - 10, "view %d: width %u unused:\n%s", v,
				     width, text);
			cr_expect_not_null(strstr(text, "..."), "%s", text);
			free(text);
		}
	}
}

/* ---- filters and sections on a profile of three threads in two processes ---- */

static uint32_t thread_of(int32_t pid, int32_t tid, const char *name)
{
	uint32_t t;
	cr_assert_eq(sp_spool_writer_intern_thread(writer, pid, tid, &t), 0);
	cr_assert_eq(sp_spool_writer_set_thread_name(writer, t, name), 0);
	return t;
}

/*
 * 9 samples 10 ms apart from the recording's start: alpha<-beta<-root x4 in
 * 10/10 "main", beta<-root x2 in 10/11 "worker", alpha<-root x3 in 20/20
 * "other".
 */
/* Frames of sp_test_known_alpha, sp_test_known_beta and sp_test_root in this test's module. */
static void alpha_beta_root(uint32_t *a, uint32_t *b, uint32_t *r)
{
	struct sp_module m;
	uint32_t mid = sp_test_self_module(writer, &m, fn(sp_test_known_alpha));
	*a = frame(mid, &m, fn(sp_test_known_alpha) + 4);
	*b = frame(mid, &m, fn(sp_test_known_beta) + 4);
	*r = frame(mid, &m, fn(sp_test_root) + 4);
}

static void threads_profile(void)
{
	uint32_t a, b, r;
	alpha_beta_root(&a, &b, &r);
	thread = thread_of(10, 10, "main");
	samples((uint32_t[]){a, b, r}, 3, 4);
	thread = thread_of(10, 11, "worker");
	samples((uint32_t[]){b, r}, 2, 2);
	thread = thread_of(20, 20, "other");
	samples((uint32_t[]){a, r}, 2, 3);
	cr_assert_eq(sp_spool_writer_finish(writer, &(struct sp_summary){.samples = 9}), 0);
	sp_spool_writer_free(writer);
	writer = NULL;
	cr_assert_eq(sp_spool_open(spool_path, &spool), 0);
}

static char *folded_with(const struct sp_report_filter *f)
{
	struct sp_report_opts ro = {.format = SP_REPORT_FOLDED, .filter = *f};
	return report_with(&ro, NULL);
}

#define ABR "sp_test_root;sp_test_known_beta;sp_test_known_alpha"
#define BR "sp_test_root;sp_test_known_beta"
#define AR "sp_test_root;sp_test_known_alpha"

Test(report, filters_keep_exactly_their_samples)
{
	threads_profile();
	const char *self = basename_of_self();
	static const int32_t pid10[] = {10}, tid11_20[] = {11, 20};
	const struct {
		struct sp_report_filter f;
		const char *want;
	} cases[] = {
		{{0}, AR " 3\n" BR " 2\n" ABR " 4\n"},
		{{.pids = pid10, .npids = 1}, BR " 2\n" ABR " 4\n"},
		{{.tids = tid11_20, .ntids = 2}, AR " 3\n" BR " 2\n"},
		{{.pids = pid10, .npids = 1, .tids = tid11_20, .ntids = 2}, BR " 2\n"},
		{{.comm = "other"}, AR " 3\n"},
		{{.comm = "othe"}, ""},
		{{.focus = "sp_test_known_alpha"}, AR " 3\n" ABR " 4\n"},
		{{.focus = "sp_test_known_*"}, AR " 3\n" BR " 2\n" ABR " 4\n"},
		{{.focus = "sp_test_known"}, ""}, /* exact or a pattern, never a substring */
		{{.exclude = "sp_test_known_beta"}, AR " 3\n"},
		{{.focus = "sp_test_root", .exclude = "*alpha"}, BR " 2\n"},
		{{.module = self}, AR " 3\n" BR " 2\n" ABR " 4\n"},
		{{.module = "libc.so.6"}, ""},
		/* Time from the recording's start: samples at 0, 10, ... 80 ms. */
		{{.has_start = true, .start_ns = 15000000, .has_end = true, .end_ns = 55000000},
		 BR " 2\n" ABR " 2\n"},
		{{.has_end = true, .end_ns = 30000000}, ABR " 3\n"},
		{{.has_start = true, .start_ns = 60000000}, AR " 3\n"},
		{{.has_start = true, .start_ns = 60000000, .comm = "main"}, ""},
	};
	for (size_t i = 0; i < SP_ARRAY_SIZE(cases); i++) {
		char *text = folded_with(&cases[i].f);
		cr_expect_str_eq(text, cases[i].want, "case %zu: got\n%s", i, text);
		free(text);
	}
}

Test(report, the_header_says_which_filters_kept_what)
{
	threads_profile();
	static const int32_t pid10[] = {10};
	struct sp_report_opts ro = {.format = SP_REPORT_TEXT,
				    .filter = {.pids = pid10, .npids = 1, .focus = "sp_test_root",
					       .has_end = true, .end_ns = 2500000000}};
	char *text = report_with(&ro, NULL);
	cr_expect(has_line(text, "Filters:    pid 10, focus 'sp_test_root', time until 2.5 s"),
		  "%s", text);
	cr_expect(has_line(text, "Kept:       6 of 9 samples (66.7%)"), "%s", text);
	cr_expect(has_line(text, "Samples:    6 (lost 0)"), "%s", text);
	/* Shares are of the kept samples. */
	char want[128];
	snprintf(want, sizeof(want), "  66.7%%   66.7%%         4  %-24s  %s",
		 "sp_test_known_alpha", basename_of_self());
	cr_expect(has_line(text, want), "missing '%s' in\n%s", want, text);
	free(text);

	ro.filter = (struct sp_report_filter){0};
	text = report_with(&ro, NULL);
	cr_expect_null(strstr(text, "Filters:"), "%s", text);
	cr_expect_null(strstr(text, "Kept:"), "%s", text);
	free(text);
}

static size_t count_of(const char *text, const char *needle)
{
	size_t n = 0;
	for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

Test(report, exports_walking_samples_skip_filtered_ones)
{
	threads_profile();
	static const int32_t pid10[] = {10};
	struct sp_report_opts ro = {.format = SP_REPORT_PERF_SCRIPT,
				    .filter = {.pids = pid10, .npids = 1,
					       .exclude = "sp_test_known_alpha"}};
	char *text = report_with(&ro, NULL);
	cr_expect_eq(count_of(text, "cpu-clock:"), 2, "%s", text);
	cr_expect_eq(count_of(text, "   10/11    "), 2, "%s", text);
	cr_expect_null(strstr(text, "sp_test_known_alpha"), "%s", text);
	free(text);

	ro.format = SP_REPORT_SPEEDSCOPE;
	text = report_with(&ro, NULL);
	cr_expect_eq(count_of(text, "\"type\":\"sampled\""), 1, "one thread's profile:\n%s", text);
	cr_expect_not_null(strstr(text, "worker (pid 10, tid 11)"), "%s", text);
	free(text);
}

Test(report, group_by_thread_and_process)
{
	threads_profile();
	struct sp_report_opts ro = {.format = SP_REPORT_TEXT, .group_by = SP_GROUP_THREAD,
				    .max_rows = 1, .max_stacks = 1};
	char *text = report_with(&ro, NULL);
	const char *s1 = strstr(text, "\n== Thread 10/10 (main): 44.4% (4 samples)\n");
	const char *s2 = strstr(text, "\n== Thread 20/20 (other): 33.3% (3 samples)\n");
	const char *s3 = strstr(text, "\n== Thread 10/11 (worker): 22.2% (2 samples)\n");
	cr_expect(s1 && s2 && s3 && s1 < s2 && s2 < s3, "sections busiest first:\n%s", text);
	/* Each section has its own table; shares stay of all samples. */
	cr_expect_eq(count_of(text, "  Self%  Total%"), 3, "%s", text);
	char want[128];
	snprintf(want, sizeof(want), "  22.2%%   22.2%%         2  %-24s  %s",
		 "sp_test_known_beta", basename_of_self());
	cr_expect(s3 && strstr(s3, want), "missing '%s' in\n%s", want, text);
	free(text);

	ro.group_by = SP_GROUP_PROCESS;
	ro.tree = true;
	text = report_with(&ro, NULL);
	s1 = strstr(text, "\n== Process 10 (main): 66.7% (6 samples)\n");
	s2 = strstr(text, "\n== Process 20 (other): 33.3% (3 samples)\n");
	cr_expect(s1 && s2 && s1 < s2, "%s", text);
	cr_expect_eq(count_of(text, "Call tree"), 2, "%s", text);
	cr_expect_null(strstr(text, "== Thread"), "%s", text);
	/* Same spool, same bytes. */
	char *again = report_with(&ro, NULL);
	cr_expect_str_eq(text, again);
	free(again);
	free(text);
}

/* Folded stacks under a root frame per process or thread, in the order of their text. */
Test(report, group_by_roots_folded_stacks)
{
	threads_profile();
	struct sp_report_opts ro = {.format = SP_REPORT_FOLDED, .group_by = SP_GROUP_PROCESS};
	char *text = report_with(&ro, NULL);
	cr_expect_str_eq(text, "main (pid 10);" BR " 2\n"
			       "main (pid 10);" ABR " 4\n"
			       "other (pid 20);" AR " 3\n");
	free(text);

	ro.group_by = SP_GROUP_THREAD;
	text = report_with(&ro, NULL);
	cr_expect_str_eq(text, "main (pid 10, tid 10);" ABR " 4\n"
			       "other (pid 20, tid 20);" AR " 3\n"
			       "worker (pid 10, tid 11);" BR " 2\n");
	free(text);

	/* Filters first: only the groups with samples they kept. */
	static const int32_t tid11_20[] = {11, 20};
	ro.group_by = SP_GROUP_PROCESS;
	ro.filter = (struct sp_report_filter){.tids = tid11_20, .ntids = 2};
	text = report_with(&ro, NULL);
	cr_expect_str_eq(text, "main (pid 10);" BR " 2\n"
			       "other (pid 20);" AR " 3\n");
	free(text);
}

/*
 * A process's name is its main thread's, whichever thread the recording met
 * first; a name with ';' or control characters stays one frame; samples
 * without a stack are [empty] on their process; truncated stacks
 * [truncated] on it; a process never named is [unknown].
 */
Test(report, group_by_names_processes_safely)
{
	struct sp_module m;
	uint32_t mid = sp_test_self_module(writer, &m, fn(sp_test_known_alpha));
	uint32_t a = frame(mid, &m, fn(sp_test_known_alpha) + 4);
	uint32_t r = frame(mid, &m, fn(sp_test_root) + 4);
	uint32_t t = marker();
	thread = thread_of(30, 31, "helper");
	samples((uint32_t[]){a, r}, 2, 1);
	thread = thread_of(30, 30, "a;b\n");
	samples(NULL, 0, 2);
	samples((uint32_t[]){a, t}, 2, 1);
	cr_assert_eq(sp_spool_writer_intern_thread(writer, 40, 40, &thread), 0);
	samples((uint32_t[]){a, r}, 2, 1);
	cr_assert_eq(sp_spool_writer_finish(writer, &(struct sp_summary){.samples = 5}), 0);
	sp_spool_writer_free(writer);
	writer = NULL;
	cr_assert_eq(sp_spool_open(spool_path, &spool), 0);
	struct sp_report_opts ro = {.format = SP_REPORT_FOLDED, .group_by = SP_GROUP_PROCESS};
	char *text = report_with(&ro, NULL);
	cr_expect_str_eq(text, "[unknown] (pid 40);" AR " 1\n"
			       "a_b\\x0a (pid 30);[empty] 2\n"
			       "a_b\\x0a (pid 30);[truncated];sp_test_known_alpha 1\n"
			       "a_b\\x0a (pid 30);" AR " 1\n");
	free(text);
	/* The same samples as without groups, where the process's stacks merge. */
	ro.group_by = SP_GROUP_NONE;
	text = report_with(&ro, NULL);
	cr_expect_str_eq(text, "[empty] 2\n[truncated];sp_test_known_alpha 1\n" AR " 2\n");
	free(text);
}

/* The header names the busiest processes when there is more than one. */
Test(report, header_lists_the_busiest_processes)
{
	threads_profile();
	struct sp_report_opts ro = {.format = SP_REPORT_TEXT};
	char *text = report_with(&ro, NULL);
	cr_expect(has_line(text, "Processes:  2 (main[10] 66.7%, other[20] 33.3%)"), "%s", text);
	free(text);
	static const int32_t pid20[] = {20};
	ro.filter = (struct sp_report_filter){.pids = pid20, .npids = 1};
	text = report_with(&ro, NULL);
	cr_expect_null(strstr(text, "Processes:"), "one process kept:\n%s", text);
	free(text);
}

/* Past the width, the header keeps the busiest that fit and says so. */
Test(report, header_cuts_the_process_list_to_the_width)
{
	struct sp_module m;
	uint32_t mid = sp_test_self_module(writer, &m, fn(sp_test_known_alpha));
	uint32_t a = frame(mid, &m, fn(sp_test_known_alpha) + 4);
	for (int i = 0; i < 7; i++) {
		char name[32];
		snprintf(name, sizeof(name), "process-number-%d", i);
		thread = thread_of(100 + i, 100 + i, name);
		samples(&a, 1, 7 - (unsigned)i);
	}
	cr_assert_eq(sp_spool_writer_finish(writer, &(struct sp_summary){.samples = 28}), 0);
	sp_spool_writer_free(writer);
	writer = NULL;
	cr_assert_eq(sp_spool_open(spool_path, &spool), 0);
	struct sp_report_opts ro = {.format = SP_REPORT_TEXT};
	char *text = report_with(&ro, NULL);
	cr_expect(has_line(text, "Processes:  7 (busiest: process-number-0[100] 25.0%)"), "%s",
		  text);
	free(text);
	ro.width = 100;
	text = report_with(&ro, NULL);
	cr_expect(has_line(text, "Processes:  7 (busiest: process-number-0[100] 25.0%, "
				 "process-number-1[101] 21.4%)"), "%s", text);
	free(text);
	ro.width = 200;
	text = report_with(&ro, NULL);
	cr_expect(has_line(text, "Processes:  7 (busiest: process-number-0[100] 25.0%, "
				 "process-number-1[101] 21.4%, process-number-2[102] 17.9%, "
				 "process-number-3[103] 14.3%, process-number-4[104] 10.7%)"),
		  "%s", text);
	free(text);
}

Test(report, json_summary)
{
	threads_profile();
	static const int32_t pid10[] = {10};
	struct sp_report_opts ro = {.format = SP_REPORT_JSON, .max_rows = 2, .max_stacks = 1,
				    .spool_path = "t\"s.spool",
				    .filter = {.pids = pid10, .npids = 1}};
	char *text = report_with(&ro, NULL);
	char *want = with_module(
		"\"functions\":[\n"
		"{\"name\":\"sp_test_known_alpha\",\"module\":\"MOD\",\"inline\":false,"
		"\"self\":4,\"total\":4,\"self_percent\":66.6667,\"total_percent\":66.6667},\n"
		"{\"name\":\"sp_test_known_beta\",\"module\":\"MOD\",\"inline\":false,"
		"\"self\":2,\"total\":6,\"self_percent\":33.3333,\"total_percent\":100.0000}],\n"
		"\"functions_total\":3");
	cr_expect_not_null(strstr(text, want), "no '%s' in\n%s", want, text);
	free(want);
	cr_expect_not_null(strstr(text, "\"path\":\"t\\\"s.spool\""), "%s", text);
	cr_expect_not_null(strstr(text, "\"pid\":[10],\"tid\":[],\"time_s\":[null,null],"
				      "\"kept\":6}"), "%s", text);
	cr_expect_not_null(strstr(text, "\"counters\":{\"samples\":9,\"lost\":0,"), "%s", text);
	cr_expect_not_null(strstr(text, "\n\"samples\":6,\"empty\":0,\"truncated\":0"), "%s", text);
	cr_expect_not_null(strstr(text, "\"stacks\":[\n{\"samples\":4,\"percent\":66.6667,"
				      "\"frames\":[{\"name\":\"sp_test_known_alpha\""), "%s", text);
	cr_expect_eq(count_of(text, "\n{\"samples\":"), 1, "one stack (--stacks 1):\n%s", text);
	free(text);
}

/* Write a second spool (the base of a diff) with fill, keeping the test's own spool. */
static struct sp_spool *other_spool(const char *path, void (*fill)(void))
{
	char saved[sizeof(spool_path)];
	struct sp_spool *mine = spool;
	strcpy(saved, spool_path);
	snprintf(spool_path, sizeof(spool_path), "%s", path);
	struct sp_spool_meta meta = {.frequency_hz = 999, .start_monotonic_ns = 1000000000};
	now_ns = meta.start_monotonic_ns;
	cr_assert_eq(sp_spool_writer_open(spool_path, &meta, &writer), 0);
	cr_assert_eq(sp_spool_writer_intern_thread(writer, 10, 10, &thread), 0);
	fill();
	struct sp_spool *other = spool;
	unlink(spool_path);
	strcpy(spool_path, saved);
	spool = mine;
	return other;
}

static void known_profile_finished(void)
{
	known_profile(true);
}

Test(report, diff_is_sorted_by_change)
{
	threads_profile();
	struct sp_spool *base = other_spool("/tmp/sp-report-base.spool", known_profile_finished);
	struct sp_report_opts ro = {.format = SP_REPORT_TEXT, .spool_path = "new.spool"};
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cr_assert_eq(sp_report_diff(base, NULL, "base.spool", spool, NULL, &ro, out), 0);
	fclose(out);
	/* Both spools' samples stand for CPU time (cycles at a frequency, cpu-clock): ms. */
	expect_section(text, "Change", NULL,
		       "Change in each function's CPU time, from base to new\n"
		       "Base:       base.spool: 13 samples, 13.0 ms (cycles at 999 Hz)\n"
		       "New:        new.spool: 9 samples, 9.0 ms (cpu-clock at 999 Hz)\n"
		       "\n"
		       "  Self (ms)\n"
		       "     Base       New  Ratio  Points   Total   Function (module)\n"
		       "      9.0       7.0  0.78x    +8.5   0.78x   sp_test_known_alpha (MOD)\n"
		       "      3.0       2.0  0.67x    -0.9   0.67x   sp_test_known_beta (MOD)\n"
		       "      0.0       0.0      -    +0.0   0.82x   sp_test_root (MOD)\n"
		       "Ratio: new/base.  Points: change of its share of each spool's whole.\n"
		       "* beyond sampling noise: its 95% interval excludes 1 (Poisson rate ratio).\n");
	free(text);

	/* By total change; filters apply to both spools, shares stay of the whole. */
	ro.sort = SP_SORT_TOTAL;
	ro.filter.exclude = "sp_test_known_beta";
	text = NULL;
	out = open_memstream(&text, &len);
	cr_assert_eq(sp_report_diff(base, NULL, "base.spool", spool, NULL, &ro, out), 0);
	fclose(out);
	/* The base keeps its empty sample and those without beta: 4 of 13. */
	char *want = with_module(
		"Base:       base.spool: 4 of 13 samples kept, 4.0 ms (cycles at 999 Hz)\n"
		"New:        new.spool: 3 of 9 samples kept, 3.0 ms (cpu-clock at 999 Hz)\n"
		"Filters:    exclude 'sp_test_known_beta'\n"
		"Kept:       3 of 9 samples (33.3%)\n"
		"Shares:     of each spool's samples before the filters\n"
		"\n"
		"  Total (ms)\n"
		"     Base       New  Ratio  Points    Self   Function (module)\n"
		"      2.0       3.0  1.50x   +17.9       -   sp_test_root (MOD)\n"
		"      3.0       3.0  1.00x   +10.3   1.00x   sp_test_known_alpha (MOD)\n");
	cr_expect_not_null(strstr(text, want), "missing '%s' in\n%s", want, text);
	free(want);
	cr_expect_null(strstr(text, "sp_test_known_beta ("), "%s", text);
	free(text);
	sp_spool_free(base);
}

/* The noise bound of a ratio: Poisson counts, a zero count as half a sample. */
Test(report, diff_noise_interval)
{
	struct {
		double n0, n1;
		bool beyond;
	} cases[] = {{100, 300, true}, {100, 110, false}, {1000, 1100, true}, {0, 10, true},
		     {0, 3, false}, {50, 20, true}, {5, 5, false}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sp_diff_measure m = {.base = cases[i].n0 * 1e6, .cur = cases[i].n1 * 1e6,
					    .base_n = cases[i].n0, .cur_n = cases[i].n1};
		sp_diff_interval(&m, 0, 0, false);
		cr_expect_eq(m.beyond_noise, cases[i].beyond, "%g -> %g: [%g, %g]", cases[i].n0,
			     cases[i].n1, m.low, m.high);
		if (cases[i].n0 > 0)
			cr_expect(m.low <= m.ratio && m.ratio <= m.high, "%g -> %g", cases[i].n0,
				  cases[i].n1);
	}
	/* 100 vs 300 samples: ratio 3, the 95% interval about [2.39, 3.77] */
	struct sp_diff_measure m = {.base = 100, .cur = 300, .base_n = 100, .cur_n = 300};
	sp_diff_interval(&m, 0, 0, false);
	cr_expect(m.ratio == 3 && m.low > 2.3 && m.low < 2.5 && m.high > 3.6 && m.high < 3.9,
		  "[%g, %g]", m.low, m.high);
	/* as shares of 1000 samples each, the interval narrows */
	struct sp_diff_measure p = {.base = 10, .cur = 30, .base_n = 100, .cur_n = 300};
	sp_diff_interval(&p, 1000, 1000, true);
	cr_expect(p.high - p.low < m.high - m.low, "[%g, %g]", p.low, p.high);
}

/* The gate and the JSON form: a function three times heavier regresses. */
Test(report, diff_gate_and_json)
{
	threads_profile();
	struct sp_spool *base = other_spool("/tmp/sp-report-base2.spool", known_profile_finished);
	struct sp_report_opts ro = {.format = SP_REPORT_JSON, .spool_path = "new.spool",
				    .diff_gate = true, .diff_max_increase = 20};
	char *text = NULL;
	size_t len = 0;
	struct sp_diff_outcome res;
	FILE *out = open_memstream(&text, &len);
	cr_assert_eq(sp_report_diff_gate(base, NULL, "base.spool", spool, NULL, &ro, &res, out), 0);
	fclose(out);
	/* a handful of samples is never beyond noise */
	cr_expect_eq(res.regressed, 0);
	cr_expect_not_null(strstr(text, "\"passed\":true,\"regressed\":[]"), "%s", text);
	cr_expect_not_null(strstr(text, "{\"diff_version\":1,\"compares\":\"measures\",\"unit\":\"ns\""),
			   "%s", text);
	cr_expect_not_null(strstr(text, "\"name\":\"sp_test_known_alpha\""), "%s", text);
	free(text);
	ro.format = SP_REPORT_FOLDED;
	out = open_memstream(&text, &len);
	cr_expect_eq(sp_report_diff_gate(base, NULL, "base.spool", spool, NULL, &ro, &res, out),
		     -SP_E_BAD_ARG);
	fclose(out);
	free(text);
	sp_spool_free(base);
}

/* threads_profile's functions, ten times as heavy or more: both regress. */
static void heavy_profile(void)
{
	uint32_t a, b, r;
	alpha_beta_root(&a, &b, &r);
	samples((uint32_t[]){a, b, r}, 3, 90);
	samples((uint32_t[]){b, r}, 2, 60);
	cr_assert_eq(sp_spool_writer_finish(writer, &(struct sp_summary){.samples = 150}), 0);
	sp_spool_writer_free(writer);
	writer = NULL;
	cr_assert_eq(sp_spool_open(spool_path, &spool), 0);
}

/* The gate's line names the functions that regressed, as many as fit in 80 columns. */
Test(report, diff_gate_line_fits_80_columns)
{
	threads_profile();
	struct sp_spool *heavy = other_spool("/tmp/sp-report-heavy.spool", heavy_profile);
	struct sp_report_opts ro = {.format = SP_REPORT_TEXT, .spool_path = "new.spool",
				    .diff_gate = true, .diff_max_increase = 20, .diff_min_share = 1};
	for (int pass = 0; pass < 2; pass++) {
		/* the second pass: alpha alone regresses (focus), a longer limit in the line */
		if (pass)
			ro.filter.focus = "sp_test_known_alpha", ro.diff_max_increase = 12.5;
		char *text = NULL;
		size_t len = 0;
		struct sp_diff_outcome res;
		FILE *out = open_memstream(&text, &len);
		cr_assert_eq(sp_report_diff_gate(spool, NULL, "base.spool", heavy, NULL, &ro, &res,
						  out),
			     0);
		fclose(out);
		cr_expect_eq(res.regressed, pass ? 1u : 2u, "%s", text);
		/* the outcome keeps its own copy of the name: the aggregations are gone */
		if (pass)
			cr_expect_str_eq(res.first_name, "sp_test_known_alpha");
		else
			cr_expect(!strncmp(res.first_name, "sp_test_known_", 14), "'%s'", res.first_name);
		const char *want =
			pass ? "Gate:       self > +12.5% beyond sampling noise, over 1%: 1 function,\n"
			       "            sp_test_known_alpha\n"
			     : "Gate:       self > +20% beyond sampling noise, over 1%: 2 functions,\n"
			       "            sp_test_known_alpha, sp_test_known_beta\n";
		cr_expect_not_null(strstr(text, want), "missing '%s' in\n%s", want, text);
		for (const char *l = text; *l;) {
			const char *e = strchr(l, '\n');
			size_t n = e ? (size_t)(e - l) : strlen(l);
			cr_expect(n <= 80, "a line of %zu columns: %.*s", n, (int)n, l);
			l += n + (e != NULL);
		}
		free(text);
	}
	sp_spool_free(heavy);
}

Test(report, trees_of_samples_without_stacks)
{
	samples(NULL, 0, 2);
	cr_assert_eq(sp_spool_writer_finish(writer, &(struct sp_summary){.samples = 2}), 0);
	sp_spool_writer_free(writer);
	writer = NULL;
	cr_assert_eq(sp_spool_open(spool_path, &spool), 0);
	for (int v = 0; v < 2; v++) {
		struct sp_report_opts ro = {.format = SP_REPORT_TEXT, .tree = !v, .inverted = v,
					    .group_by = SP_GROUP_THREAD};
		char *text = report_with(&ro, NULL);
		cr_expect(has_line(text, "  (no stacks)"), "%s", text);
		cr_expect(has_line(text, "== Thread 10/10 ([unknown]): 100.0% (2 samples)"), "%s",
			  text);
		free(text);
	}
}

/* record's summary: a hint per runtime without a perf map, in the report header's words. */
Test(report, record_summary_names_the_missing_perf_maps)
{
	struct sp_summary s = {.samples = 10, .sample_events = 10};
	s.no_perf_map[SP_NAME_HINT_PYTHON] = 1;
	s.no_perf_map_pid[SP_NAME_HINT_PYTHON] = 42;
	s.no_perf_map[SP_NAME_HINT_JVM] = 3;
	s.no_perf_map_pid[SP_NAME_HINT_JVM] = 7;
	struct sp_record_opts o = {0};
	struct sp_summary_text t = {.subcommand = "record", .spool_path = "x.spool", .opts = &o,
				    .cpu_s = -1};
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cr_assert_not_null(out);
	sp_summary_write_text(&s, &t, out);
	fclose(out);
	cr_expect_not_null(strstr(text, "  hint: Python functions have no names (no perf map): run Python 3.12+\n"
					"        with -X perf, or 3.13+ with -X perf_jit (pid 42)\n"), "%s", text);
	cr_expect_not_null(strstr(text, "  hint: Java's JIT code has no names"), "%s", text);
	cr_expect_not_null(strstr(text, "or a perf-map agent (3 processes, the first pid 7)\n"), "%s", text);
	cr_expect_null(strstr(text, "Node"), "%s", text);
	cr_expect_null(strstr(text, "exited"), "%s", text);
	free(text);
	/* system-wide: processes gone before their first sample was drained */
	s.processes_from_start_list = 2;
	s.processes_unread = 1;
	s.unread_samples = 7;
	out = open_memstream(&text, &len);
	cr_assert_not_null(out);
	sp_summary_write_text(&s, &t, out);
	fclose(out);
	cr_expect_not_null(strstr(text, "  2 processes had exited before their first sample was drained: "
					"their modules and name came from the list of /proc made at the start"),
			   "%s", text);
	cr_expect_not_null(strstr(text, "  7 samples of 1 process that exited before its maps could be "
					"read: their frames are addresses\n"),
			   "%s", text);
	free(text);
}
