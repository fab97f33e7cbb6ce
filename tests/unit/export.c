/* SPDX-License-Identifier: MIT */
/* Unit tests of the exports: pprof decoded back, speedscope and perf-script output exact, on a known spool. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "report/report.h"

#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "self_module.h"

/* Functions the fixture's stacks point into; bodies big enough for +4 and +8. */
__attribute__((noinline)) int exp_alpha(int x)
{
	volatile int acc = x;
	for (int i = 0; i < x; i++)
		acc = acc * 3 + i;
	return acc;
}

__attribute__((noinline)) int exp_beta(int x)
{
	volatile int acc = x;
	for (int i = 0; i < x; i++)
		acc = acc ^ (i * 7);
	return acc + exp_alpha(x);
}

__attribute__((noinline)) int exp_root(int x)
{
	volatile int acc = x;
	for (int i = 0; i < x; i++)
		acc -= i;
	return acc + exp_beta(x);
}

#define PERIOD 1001001u   /* 1e9 / 999 Hz, rounded */
#define T0 2000500000ull  /* first sample: 2.000500 s CLOCK_MONOTONIC */
#define MS 1000000ull
#define START_US 1700000000000000ull
#define WEIRD_NAME "wor\"ker\n\xff"

static char spool_path[64];
static struct sp_spool_writer *writer;
static struct sp_spool *spool;
static uint32_t t0, t1;
static struct sp_module self;
static uint32_t self_id;

static void setup(void)
{
	strcpy(spool_path, "/tmp/sp-export-XXXXXX");
	int fd = mkstemp(spool_path);
	cr_assert_geq(fd, 0);
	close(fd);
	struct sp_spool_meta meta = {.frequency_hz = 999, .event_source = SP_EVENT_CPU_CLOCK,
				     .start_monotonic_ns = T0 - 500000,
				     .start_timestamp_us = START_US, .command = "./prog \"x\"",
				     .hostname = "h", .kernel_release = "k"};
	cr_assert_eq(sp_spool_writer_open(spool_path, &meta, &writer), 0);
	cr_assert_eq(sp_spool_writer_intern_thread(writer, 10, 10, &t0), 0);
	cr_assert_eq(sp_spool_writer_set_thread_name(writer, t0, "prog"), 0);
	cr_assert_eq(sp_spool_writer_intern_thread(writer, 10, 11, &t1), 0);
	cr_assert_eq(sp_spool_writer_set_thread_name(writer, t1, WEIRD_NAME), 0);
}

static void teardown(void)
{
	sp_spool_free(spool);
	sp_spool_writer_free(writer);
	unlink(spool_path);
	spool = NULL;
	writer = NULL;
}

TestSuite(export, .init = setup, .fini = teardown);

static uint64_t fn(int (*f)(int))
{
	return (uint64_t)(uintptr_t)f;
}

static uint32_t frame(uint64_t addr)
{
	struct sp_frame f = {.module_id = self_id, .mode = SP_FRAME_USER, .abs_ip = addr,
			     .rel_ip = addr - self.start + self.file_offset};
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

static uint32_t stack(const uint32_t *frames, size_t n)
{
	uint32_t sid;
	cr_assert_eq(sp_spool_writer_intern_stack(writer, frames, n, &sid), 0);
	return sid;
}

static void finish(void)
{
	cr_assert_eq(sp_spool_writer_finish(writer, &(struct sp_summary){.samples = 6}), 0);
	sp_spool_writer_free(writer);
	writer = NULL;
	cr_assert_eq(sp_spool_open(spool_path, &spool), 0);
}

/*
 * Six samples in file order (not time order):
 *   t0 alpha<-beta<-root @0, t1 beta<-root @5ms, t0 alpha<-beta<-root @10ms,
 *   t0 alpha<-[truncated] @30ms, t0 beta<-root @20ms, t1 empty @25ms.
 */
static void known_profile(void)
{
	self_id = sp_test_self_module(writer, &self, fn(exp_alpha));
	uint32_t a = frame(fn(exp_alpha) + 4), b = frame(fn(exp_beta) + 8);
	uint32_t r = frame(fn(exp_root) + 8), t = marker();
	uint32_t s1 = stack((uint32_t[]){a, b, r}, 3);
	uint32_t s2 = stack((uint32_t[]){b, r}, 2);
	uint32_t s3 = stack((uint32_t[]){a, t}, 2);
	cr_assert_eq(sp_spool_writer_append_sample(writer, t0, s1, T0), 0);
	cr_assert_eq(sp_spool_writer_append_sample(writer, t1, s2, T0 + 5 * MS), 0);
	cr_assert_eq(sp_spool_writer_append_sample(writer, t0, s1, T0 + 10 * MS), 0);
	cr_assert_eq(sp_spool_writer_append_sample(writer, t0, s3, T0 + 30 * MS), 0);
	cr_assert_eq(sp_spool_writer_append_sample(writer, t0, s2, T0 + 20 * MS), 0);
	cr_assert_eq(sp_spool_writer_append_sample(writer, t1, 0, T0 + 25 * MS), 0);
	finish();
}

/*
 * Two samples of t0 (alpha<-beta<-root @0, beta<-root @20ms) and, written
 * as they end, two intervals of t0: 3 ms preempted with no stack from
 * 10 ms, and 8 ms blocked in alpha<-beta<-root from 1 ms.
 */
static void off_cpu_profile(void)
{
	self_id = sp_test_self_module(writer, &self, fn(exp_alpha));
	uint32_t a = frame(fn(exp_alpha) + 4), b = frame(fn(exp_beta) + 8);
	uint32_t r = frame(fn(exp_root) + 8);
	uint32_t s1 = stack((uint32_t[]){a, b, r}, 3), s2 = stack((uint32_t[]){b, r}, 2);
	cr_assert_eq(sp_spool_writer_append_sample(writer, t0, s1, T0), 0);
	cr_assert_eq(sp_spool_writer_append_sample(writer, t0, s2, T0 + 20 * MS), 0);
	struct sp_offcpu pre = {.start_ns = T0 + 10 * MS, .duration_ns = 3 * MS, .thread = t0,
				.flags = SP_OFFCPU_PREEMPTED | SP_OFFCPU_NO_STACK};
	struct sp_offcpu blk = {.start_ns = T0 + 1 * MS, .duration_ns = 8 * MS, .thread = t0,
				.stack_id = s1};
	cr_assert_eq(sp_spool_writer_append_offcpu(writer, &pre), 0);
	cr_assert_eq(sp_spool_writer_append_offcpu(writer, &blk), 0);
	finish();
}

/* One export with opts into a malloc'd buffer (*len bytes, NUL-terminated for text). */
static char *export_with(struct sp_report_opts opts, size_t *len)
{
	char *data = NULL;
	size_t n = 0;
	FILE *out = open_memstream(&data, &n);
	cr_assert_not_null(out);
	struct sp_symbolizer *sym;
	cr_assert_eq(sp_symbolizer_new(spool, NULL, &sym), 0);
	opts.spool_path = "/x/known.spool";
	cr_assert_eq(sp_report_write(spool, sym, &opts, out), 0);
	fclose(out);
	sp_symbolizer_free(sym);
	if (len)
		*len = n;
	return data;
}

static char *export_opts(uint32_t format, bool lines, size_t *len)
{
	return export_with((struct sp_report_opts){.format = format, .lines = lines}, len);
}

static char *export(uint32_t format, size_t *len)
{
	return export_opts(format, false, len);
}

/* What the symbolizer says about the frame at addr: the "file" speedscope shows. */
static const char *speedscope_file(uint64_t addr)
{
	static char buf[8][PATH_MAX];
	static int next;
	struct sp_symbolizer *sym;
	cr_assert_eq(sp_symbolizer_new(spool, NULL, &sym), 0);
	const struct sp_resolved_frame *rf = NULL;
	for (uint32_t i = 0; i < sp_spool_frame_count(spool); i++)
		if (sp_spool_frame(spool, i)->abs_ip == addr)
			cr_assert_eq(sp_symbolizer_resolve(sym, i, &rf), 0);
	cr_assert_not_null(rf);
	char *out = buf[next++ % 8];
	snprintf(out, PATH_MAX, "%s", rf->file ? rf->file : rf->module);
	sp_symbolizer_free(sym);
	return out;
}

/* ---- helpers ------------------------------------------------------------------ */

Test(export, period_from_the_header)
{
	finish();
	struct sp_sample_unit u;
	sp_sample_unit_of(spool, &u);
	cr_expect_eq(u.period, PERIOD);
	cr_expect(u.time);
	struct sp_spool_meta m = *sp_spool_meta(spool);
	struct sp_spool *s2;
	struct sp_spool_writer *w;
	m.frequency_hz = 0;
	m.sample_interval_us = 250;
	cr_assert_eq(sp_spool_writer_open(spool_path, &m, &w), 0);
	sp_spool_writer_free(w);
	cr_assert_eq(sp_spool_open(spool_path, &s2), 0);
	sp_sample_unit_of(s2, &u);
	cr_expect_eq(u.period, 250000);
	sp_spool_free(s2);
}

/* ---- the event's unit ----------------------------------------------------------- */

/* Arrays, not pointers: Criterion copies parameters into the test's own process. */
struct unit_case {
	uint32_t event, frequency_hz, flags;
	uint64_t sample_period;
	char event_line[64];  /* the text header's, after "Event:      " */
	char name[24];        /* the event's name everywhere else */
	bool time;            /* pprof cpu/nanoseconds, speedscope nanoseconds */
	uint64_t per;         /* what one sample weighs */
};

static const struct unit_case unit_cases[] = {
	{SP_EVENT_CYCLES, 999, 0, 0, "cycles at 999 Hz", "cycles", true, PERIOD},
	{SP_EVENT_CPU_CLOCK, 999, 0, 0, "cpu-clock at 999 Hz", "cpu-clock", true, PERIOD},
	{SP_EVENT_CPU_CLOCK, 0, 0, 250000, "cpu-clock every 250000 ns", "cpu-clock", true, 250000},
	{SP_EVENT_TASK_CLOCK, 99, 0, 0, "task-clock at 99 Hz", "task-clock", true, 10101010},
	{SP_EVENT_PAGE_FAULTS, 0, 0, 1000, "page-faults every 1000 events", "page-faults", false,
	 1000},
	{SP_EVENT_INSTRUCTIONS, 999, 0, 0, "instructions at 999 Hz", "instructions", false, 1},
	{SP_EVENT_CYCLES, 0, 0, 100000, "cycles every 100000 events", "cycles", false, 100000},
	{SP_EVENT_CONTEXT_SWITCHES, 0, SP_META_SYSTEM_WIDE, 1,
	 "context-switches on every event, system-wide", "context-switches", false, 1},
	{SP_EVENT_CPU_CLOCK, 999, SP_META_SYSTEM_WIDE, 0, "cpu-clock at 999 Hz, system-wide",
	 "cpu-clock", true, PERIOD},
	/* a later build's event: named by number, counted, never taken for time */
	{99, 999, 0, 0, "event-99 at 999 Hz", "event-99", false, 1},
};

ParameterizedTestParameters(export, every_output_names_the_event)
{
	return cr_make_param_array(struct unit_case, unit_cases, SP_ARRAY_SIZE(unit_cases));
}

static void expect_pprof_unit(const struct unit_case *c);

/* The known profile recorded with c's event, period or frequency, and flags. */
ParameterizedTest(const struct unit_case *c, export, every_output_names_the_event)
{
	sp_spool_writer_free(writer);
	struct sp_spool_meta meta = {.frequency_hz = c->frequency_hz, .event_source = c->event,
				     .sample_period = c->sample_period, .flags = c->flags,
				     .start_monotonic_ns = T0 - 500000,
				     .start_timestamp_us = START_US, .command = "./prog \"x\""};
	cr_assert_eq(sp_spool_writer_open(spool_path, &meta, &writer), 0);
	cr_assert_eq(sp_spool_writer_intern_thread(writer, 10, 10, &t0), 0);
	cr_assert_eq(sp_spool_writer_set_thread_name(writer, t0, "prog"), 0);
	cr_assert_eq(sp_spool_writer_intern_thread(writer, 10, 11, &t1), 0);
	known_profile();
	char want[256];

	char *text = export(SP_REPORT_TEXT, NULL);
	snprintf(want, sizeof(want), "\nEvent:      %s\n", c->event_line);
	cr_expect_not_null(strstr(text, want), "no '%s' in\n%s", want, text);
	free(text);

	text = export(SP_REPORT_PERF_SCRIPT, NULL);
	snprintf(want, sizeof(want), "prog    10/10        2.000500: %10" PRIu64 " %s:\n", c->per,
		 c->name);
	cr_expect_eq(strncmp(text, want, strlen(want)), 0, "want '%s' in\n%s", want, text);
	free(text);

	text = export(SP_REPORT_JSON, NULL);
	snprintf(want, sizeof(want), "\"event\":\"%s\",\"frequency_hz\":%" PRIu32
		 ",\"sample_period\":%" PRIu64 ",\"system_wide\":%s,", c->name, c->frequency_hz,
		 c->sample_period, c->flags ? "true" : "false");
	cr_expect_not_null(strstr(text, want), "no '%s' in\n%s", want, text);
	free(text);

	/* speedscope: thread 10/10's four samples, in ns from its first or as counts from 0 */
	text = export(SP_REPORT_SPEEDSCOPE, NULL);
	snprintf(want, sizeof(want), "\"unit\":\"%s\",\"startValue\":0,\"endValue\":%" PRIu64
		 ",\n", c->time ? "nanoseconds" : "none", 4 * c->per);
	cr_expect_not_null(strstr(text, want), "no '%s' in\n%s", want, text);
	snprintf(want, sizeof(want), "\"weights\":[%" PRIu64 ",%" PRIu64 "]}", c->per, c->per);
	cr_expect_not_null(strstr(text, want), "no '%s' in\n%s", want, text);
	free(text);

	text = export(SP_REPORT_FLAMEGRAPH, NULL);
	snprintf(want, sizeof(want), "Flame graph%s%s</text>", c->time ? "" : ": ",
		 c->time ? "" : c->name);
	cr_expect_not_null(strstr(text, want), "no '%s' in\n%s", want, text);
	snprintf(want, sizeof(want), "   Event: %s</text>", c->event_line);
	cr_expect_not_null(strstr(text, want), "no '%s' in\n%s", want, text);
	free(text);

	expect_pprof_unit(c);
}

/* Arrays, not pointers: Criterion copies parameters into the test's own process. */
struct text_case {
	char in[16], json[64], utf8[48], term[64];
};

static const struct text_case text_cases[] = {
	{"plain", "\"plain\"", "plain", "plain"},
	{"", "\"\"", "", ""},
	/* A backslash: JSON's own escape; \x5c on a terminal, so no name spells an escape. */
	{"q\"b\\s/", "\"q\\\"b\\\\s/\"", "q\"b\\s/", "q\"b\\x5cs/"},
	{"\\x41", "\"\\\\x41\"", "\\x41", "\\x5cx41"},
	{"\n\t\r\x01\x1f\x7f", "\"\\n\\t\\r\\u0001\\u001f\\u007f\"", "\n\t\r\x01\x1f\x7f",
	 "\\x0a\\x09\\x0d\\x01\\x1f\\x7f"},
	/* Well-formed UTF-8 of 2, 3 and 4 bytes passes through. */
	{"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"",
	 "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"},
	/*
	 * Stray bytes, a cut sequence, overlong, surrogate, past U+10FFFF: one U+FFFD
	 * per byte in UTF-8 text, \xHH per byte for a terminal and (its backslash
	 * escaped) in JSON, which cannot hold the byte.
	 */
	{"a\xff", "\"a\\\\xff\"", "a\xef\xbf\xbd", "a\\xff"},
	{"\xc3", "\"\\\\xc3\"", "\xef\xbf\xbd", "\\xc3"},
	{"\xc0\xaf", "\"\\\\xc0\\\\xaf\"", "\xef\xbf\xbd\xef\xbf\xbd", "\\xc0\\xaf"},
	{"\xed\xa0\x80", "\"\\\\xed\\\\xa0\\\\x80\"", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd",
	 "\\xed\\xa0\\x80"},
	{"\xf4\x90\x80\x80z", "\"\\\\xf4\\\\x90\\\\x80\\\\x80z\"",
	 "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdz", "\\xf4\\x90\\x80\\x80z"},
	{"\xe2\x82", "\"\\\\xe2\\\\x82\"", "\xef\xbf\xbd\xef\xbf\xbd", "\\xe2\\x82"},
	/* What a terminal obeys: ESC and BEL, a C1 CSI, bidirectional overrides; not NBSP. */
	{"\x1b]0;x\x07", "\"\\u001b]0;x\\u0007\"", "\x1b]0;x\x07", "\\x1b]0;x\\x07"},
	{"\xc2\x9b" "1m\xc2\xa0", "\"\\u009b" "1m\xc2\xa0\"", "\xc2\x9b" "1m\xc2\xa0",
	 "\\xc2\\x9b" "1m\xc2\xa0"},
	{"a\xe2\x80\xae" "b\xe2\x81\xa9", "\"a\\u202eb\\u2069\"", "a\xe2\x80\xae" "b\xe2\x81\xa9",
	 "a\\xe2\\x80\\xae" "b\\xe2\\x81\\xa9"},
	/* Bidirectional marks: RLM, LRM, ALM. */
	{"\xe2\x80\x8f\xe2\x80\x8e\xd8\x9c", "\"\\u200f\\u200e\\u061c\"",
	 "\xe2\x80\x8f\xe2\x80\x8e\xd8\x9c", "\\xe2\\x80\\x8f\\xe2\\x80\\x8e\\xd8\\x9c"},
	/* Invisible: zero-width space and (non-)joiners, separators, BOM, word joiner, tags. */
	{"a\xe2\x80\x8b" "b\xe2\x80\x8c\xe2\x80\x8d", "\"a\\u200bb\\u200c\\u200d\"",
	 "a\xe2\x80\x8b" "b\xe2\x80\x8c\xe2\x80\x8d", "a\\xe2\\x80\\x8b" "b\\xe2\\x80\\x8c\\xe2\\x80\\x8d"},
	{"\xe2\x80\xa8\xe2\x80\xa9\xef\xbb\xbf", "\"\\u2028\\u2029\\ufeff\"",
	 "\xe2\x80\xa8\xe2\x80\xa9\xef\xbb\xbf", "\\xe2\\x80\\xa8\\xe2\\x80\\xa9\\xef\\xbb\\xbf"},
	{"\xe2\x81\xa0\xe2\x81\xa4", "\"\\u2060\\u2064\"", "\xe2\x81\xa0\xe2\x81\xa4",
	 "\\xe2\\x81\\xa0\\xe2\\x81\\xa4"},
	{"x\xf3\xa0\x80\x81", "\"x\\udb40\\udc01\"", "x\xf3\xa0\x80\x81", "x\\xf3\\xa0\\x80\\x81"},
	/* Their neighbours are text: U+200A, U+2010, U+2027, U+202F; U+205F, U+2070, U+061B, U+FEFE. */
	{"\xe2\x80\x8a\xe2\x80\x90\xe2\x80\xa7\xe2\x80\xaf",
	 "\"\xe2\x80\x8a\xe2\x80\x90\xe2\x80\xa7\xe2\x80\xaf\"",
	 "\xe2\x80\x8a\xe2\x80\x90\xe2\x80\xa7\xe2\x80\xaf",
	 "\xe2\x80\x8a\xe2\x80\x90\xe2\x80\xa7\xe2\x80\xaf"},
	{"\xe2\x81\x9f\xe2\x81\xb0\xd8\x9b\xef\xbb\xbe",
	 "\"\xe2\x81\x9f\xe2\x81\xb0\xd8\x9b\xef\xbb\xbe\"",
	 "\xe2\x81\x9f\xe2\x81\xb0\xd8\x9b\xef\xbb\xbe",
	 "\xe2\x81\x9f\xe2\x81\xb0\xd8\x9b\xef\xbb\xbe"},
};

ParameterizedTestParameters(export, text_is_escaped)
{
	return cr_make_param_array(struct text_case, (void *)text_cases, SP_ARRAY_SIZE(text_cases));
}

/* want with every "\x5c" as the backslash it stands for: what a stored name keeps. */
static void unescape_backslashes(const char *want, char *out)
{
	while (*want)
		if (!strncmp(want, "\\x5c", 4)) {
			*out++ = '\\';
			want += 4;
		} else {
			*out++ = *want++;
		}
	*out = '\0';
}

ParameterizedTest(struct text_case *c, export, text_is_escaped)
{
	struct sp_buf b;
	sp_buf_init(&b);
	cr_assert_eq(sp_json_put_string(&b, c->in), 0);
	cr_expect(b.len == strlen(c->json) && !memcmp(b.data, c->json, b.len),
		  "json of '%s': got '%.*s', want '%s'", c->in, (int)b.len, (char *)b.data, c->json);
	b.len = 0;
	cr_assert_eq(sp_buf_put_utf8(&b, c->in), 0);
	cr_expect(b.len == strlen(c->utf8) && (!b.len || !memcmp(b.data, c->utf8, b.len)),
		  "utf8 of '%s': got '%.*s'", c->in, (int)b.len, (char *)b.data);
	b.len = 0;
	cr_assert_eq(sp_buf_put_printable(&b, c->in), 0);
	cr_expect(b.len == strlen(c->term) && (!b.len || !memcmp(b.data, c->term, b.len)),
		  "terminal text of '%s': got '%.*s', want '%s'", c->in, (int)b.len, (char *)b.data,
		  c->term);
	bool plain = !strcmp(c->in, c->term);
	cr_expect_eq(sp_text_is_printable(c->in), plain);
	/* Escaped text is escaped again (its backslashes): escape once. */
	cr_expect_eq(sp_text_is_printable(c->term), plain, "'%s'", c->term);
	struct sp_arena arena;
	sp_arena_init(&arena);
	const char *copy = sp_arena_printable(&arena, c->in);
	cr_assert(copy);
	cr_expect_str_eq(copy, c->term);
	cr_expect_eq(copy == c->in, plain, "a printable name is not copied");
	/* A stored name was escaped when stored: it reads the same, unless it kept raw bytes. */
	copy = sp_arena_printable_escaped(&arena, c->term);
	cr_expect(copy == c->term, "stored '%s' escaped again: '%s'", c->term, copy);
	char keep[64];
	unescape_backslashes(c->term, keep);
	copy = sp_arena_printable_escaped(&arena, c->in);
	cr_assert(copy);
	cr_expect_str_eq(copy, keep);
	sp_arena_release(&arena);
	sp_buf_release(&b);
}

Test(export, terminal_text_to_a_file)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	cr_assert(f);
	sp_fputs_printable("ok ", f);
	sp_fputs_printable("\x1b[2J\x07", f);
	sp_fputs_printable("\n", f);
	sp_fputs_printable("\\x1b\xe2\x80\x8f", f);
	cr_assert_eq(fclose(f), 0);
	cr_expect_str_eq(text, "ok \\x1b[2J\\x07\\x0a\\x5cx1b\\xe2\\x80\\x8f");
	free(text);
}

Test(export, interning_is_dense_and_first_seen)
{
	struct sp_intern t;
	sp_intern_init(&t);
	uint32_t id;
	bool added;
	cr_assert_eq(sp_intern(&t, "", 0, &id, &added), 0);
	cr_expect(added && id == 0);
	cr_assert_eq(sp_intern(&t, "a\0b", 3, &id, &added), 0);
	cr_expect(added && id == 1);
	cr_assert_eq(sp_intern(&t, "a\0c", 3, &id, &added), 0);
	cr_expect(added && id == 2);
	cr_assert_eq(sp_intern(&t, "a\0b", 3, &id, &added), 0);
	cr_expect(!added && id == 1);
	cr_assert_eq(sp_intern(&t, "", 0, &id, &added), 0);
	cr_expect(!added && id == 0);
	for (unsigned i = 0; i < 5000; i++) {
		char k[16];
		int n = snprintf(k, sizeof(k), "k%u", i);
		cr_assert_eq(sp_intern(&t, k, (size_t)n, &id, NULL), 0);
		cr_assert_eq(id, 3 + i);
	}
	size_t len;
	const char *k = sp_intern_key(&t, 1, &len);
	cr_expect(len == 3 && !memcmp(k, "a\0b", 3));
	k = sp_intern_key(&t, 3 + 4321, &len);
	cr_expect(len == 5 && !memcmp(k, "k4321", 5));
	sp_intern_release(&t);
}

/* ---- perf-script -------------------------------------------------------------- */

Test(export, perf_script_is_exact)
{
	known_profile();
	char *text = export(SP_REPORT_PERF_SCRIPT, NULL);
	const char *path = self.path;
	char a[PATH_MAX + 64], b[PATH_MAX + 64], r[PATH_MAX + 64], *want;
	snprintf(a, sizeof(a), "\t%16" PRIx64 " exp_alpha+0x4 (%s)\n", fn(exp_alpha) + 4, path);
	snprintf(b, sizeof(b), "\t%16" PRIx64 " exp_beta+0x8 (%s)\n", fn(exp_beta) + 8, path);
	snprintf(r, sizeof(r), "\t%16" PRIx64 " exp_root+0x8 (%s)\n", fn(exp_root) + 8, path);
	/* Time order; the second thread's comm escaped as names are: \xHH for newline and \xff. */
	int n = asprintf(&want,
			 "prog    10/10        2.000500:    1001001 cpu-clock:\n%s%s%s\n"
			 "wor\"ker\\x0a\\xff    10/11        2.005500:    1001001 cpu-clock:\n%s%s\n"
			 "prog    10/10        2.010500:    1001001 cpu-clock:\n%s%s%s\n"
			 "prog    10/10        2.020500:    1001001 cpu-clock:\n%s%s\n"
			 "wor\"ker\\x0a\\xff    10/11        2.025500:    1001001 cpu-clock:\n\n"
			 "prog    10/10        2.030500:    1001001 cpu-clock:\n%s"
			 "\t               0 [truncated] ([unknown])\n\n",
			 a, b, r, b, r, a, b, r, b, r, a);
	cr_assert_gt(n, 0);
	cr_expect_str_eq(text, want);
	free(want);
	free(text);
}

/* Wall time: the samples and, in time order, each interval as perf's offcpu-time sample in ns. */
Test(export, perf_script_wall_time)
{
	off_cpu_profile();
	char *text = export_with((struct sp_report_opts){.format = SP_REPORT_PERF_SCRIPT,
							  .metric = SP_METRIC_WALL},
				 NULL);
	const char *path = self.path;
	char a[PATH_MAX + 64], b[PATH_MAX + 64], r[PATH_MAX + 64], *want;
	snprintf(a, sizeof(a), "\t%16" PRIx64 " exp_alpha+0x4 (%s)\n", fn(exp_alpha) + 4, path);
	snprintf(b, sizeof(b), "\t%16" PRIx64 " exp_beta+0x8 (%s)\n", fn(exp_beta) + 8, path);
	snprintf(r, sizeof(r), "\t%16" PRIx64 " exp_root+0x8 (%s)\n", fn(exp_root) + 8, path);
	int n = asprintf(&want,
			 "prog    10/10        2.000500:    1001001 cpu-clock:\n%s%s%s\n"
			 "prog    10/10        2.001500:    8000000 offcpu-time:\n"
			 "\t               0 [blocked] ([unknown])\n%s%s%s\n"
			 "prog    10/10        2.010500:    3000000 offcpu-time:\n"
			 "\t               0 [preempted] ([unknown])\n\n"
			 "prog    10/10        2.020500:    1001001 cpu-clock:\n%s%s\n",
			 a, b, r, a, b, r, b, r);
	cr_assert_gt(n, 0);
	cr_expect_str_eq(text, want);
	free(want);
	free(text);
	/* off-CPU time: the intervals alone */
	text = export_with((struct sp_report_opts){.format = SP_REPORT_PERF_SCRIPT,
						    .metric = SP_METRIC_OFF_CPU},
			   NULL);
	cr_expect(!strstr(text, "cpu-clock"), "%s", text);
	cr_expect(strstr(text, "8000000 offcpu-time:"), "%s", text);
	free(text);
}

/* Off-CPU time in speedscope: the intervals in ns, each under its cause frame, in time order. */
Test(export, speedscope_off_cpu_time)
{
	off_cpu_profile();
	char *text = export_with((struct sp_report_opts){.format = SP_REPORT_SPEEDSCOPE,
							  .metric = SP_METRIC_OFF_CPU},
				 NULL);
	char buf[3 * PATH_MAX + 2048];
	snprintf(buf, sizeof(buf),
		 "\"shared\":{\"frames\":[\n"
		 "{\"name\":\"exp_root\",\"file\":\"%s\"},\n"
		 "{\"name\":\"exp_beta\",\"file\":\"%s\"},\n"
		 "{\"name\":\"exp_alpha\",\"file\":\"%s\"},\n"
		 "{\"name\":\"[blocked]\"},\n"
		 "{\"name\":\"[preempted]\"}\n"
		 "]},\n"
		 "\"profiles\":[\n"
		 "{\"type\":\"sampled\",\"name\":\"prog (pid 10, tid 10)\",\"unit\":\"nanoseconds\","
		 "\"startValue\":0,\"endValue\":11000000,\n"
		 "\"samples\":[\n[0,1,2,3],\n[4]\n],\n"
		 "\"weights\":[8000000,3000000]}\n"
		 "]}\n",
		 speedscope_file(fn(exp_root) + 8),
		 speedscope_file(fn(exp_beta) + 8), speedscope_file(fn(exp_alpha) + 4));
	cr_expect(strstr(text, buf), "%s", text);
	free(text);
	/* wall time: the samples too, each its period; the thread's time adds up */
	text = export_with((struct sp_report_opts){.format = SP_REPORT_SPEEDSCOPE,
						    .metric = SP_METRIC_WALL},
			   NULL);
	cr_expect(strstr(text, "\"samples\":[\n[0,1,2],\n[0,1,2,3],\n[4],\n[0,1]\n],\n"
			       "\"weights\":[1001001,8000000,3000000,1001001]}"),
		  "%s", text);
	cr_expect(strstr(text, "\"startValue\":0,\"endValue\":13002002,"), "%s", text);
	free(text);
}

/* The folding every perf-script importer does: frames leaf first after each header. */
Test(export, perf_script_folds_like_stackcollapse)
{
	known_profile();
	char *text = export(SP_REPORT_PERF_SCRIPT, NULL);
	unsigned samples = 0, alpha_leaf = 0, frames = 0;
	bool first_frame = false;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		if (line[0] != '\t') {
			samples++;
			first_frame = true;
			continue;
		}
		frames++;
		/* "\tADDR SYMBOL+0xOFF (MODULE)": the symbol is between the address and " (". */
		char *sym = line + strspn(line, "\t ");
		sym += strcspn(sym, " ") + 1;
		if (first_frame && !strncmp(sym, "exp_alpha+0x", 12))
			alpha_leaf++;
		first_frame = false;
	}
	cr_expect_eq(samples, 6);
	cr_expect_eq(alpha_leaf, 3);
	cr_expect_eq(frames, 3 + 2 + 3 + 2 + 2);
	free(text);
}

/* ---- speedscope --------------------------------------------------------------- */

Test(export, speedscope_is_exact)
{
	known_profile();
	char *text = export(SP_REPORT_SPEEDSCOPE, NULL);
	char want[3 * PATH_MAX + 2048];
	snprintf(want, sizeof(want),
		 "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n"
		 "\"exporter\":\"stackpulse " SP_VERSION "\",\n"
		 "\"name\":\"./prog \\\"x\\\"\",\n"
		 "\"activeProfileIndex\":0,\n"
		 "\"shared\":{\"frames\":[\n"
		 "{\"name\":\"exp_root\",\"file\":\"%s\"},\n"
		 "{\"name\":\"exp_beta\",\"file\":\"%s\"},\n"
		 "{\"name\":\"exp_alpha\",\"file\":\"%s\"},\n"
		 "{\"name\":\"[truncated]\"}\n"
		 "]},\n"
		 "\"profiles\":[\n"
		 "{\"type\":\"sampled\",\"name\":\"prog (pid 10, tid 10)\",\"unit\":\"nanoseconds\","
		 "\"startValue\":0,\"endValue\":4004004,\n"
		 "\"samples\":[\n[0,1,2],\n[0,1,2],\n[0,1],\n[3,2]\n],\n"
		 "\"weights\":[1001001,1001001,1001001,1001001]},\n"
		 "{\"type\":\"sampled\",\"name\":\"wor\\\"ker\\n\\\\xff (pid 10, tid 11)\","
		 "\"unit\":\"nanoseconds\",\"startValue\":5000000,\"endValue\":7002002,\n"
		 "\"samples\":[\n[0,1],\n[]\n],\n"
		 "\"weights\":[1001001,1001001]}\n"
		 "]}\n",
		 speedscope_file(fn(exp_root) + 8), speedscope_file(fn(exp_beta) + 8),
		 speedscope_file(fn(exp_alpha) + 4));
	cr_expect_str_eq(text, want);
	free(text);
}

/* --lines: a frame per source line, with its "line" (when the test binary's DWARF has it). */
Test(export, speedscope_lines)
{
	known_profile();
	struct sp_symbolizer *sym;
	cr_assert_eq(sp_symbolizer_new(spool, NULL, &sym), 0);
	const struct sp_resolved_frame *rf = NULL;
	for (uint32_t i = 0; i < sp_spool_frame_count(spool); i++)
		if (sp_spool_frame(spool, i)->abs_ip == fn(exp_alpha) + 4)
			cr_assert_eq(sp_symbolizer_resolve(sym, i, &rf), 0);
	cr_assert_not_null(rf);
	char want[PATH_MAX + 64];
	snprintf(want, sizeof(want), "{\"name\":\"exp_alpha\",\"file\":\"%s\",\"line\":%u}",
		 rf->file ? rf->file : rf->module, (unsigned)rf->line);
	char *plain = export(SP_REPORT_SPEEDSCOPE, NULL);
	char *lines = export_opts(SP_REPORT_SPEEDSCOPE, true, NULL);
	cr_expect_null(strstr(plain, "\"line\":"), "%s", plain);
	if (rf->line)
		cr_expect_not_null(strstr(lines, want), "no '%s' in %s", want, lines);
	else
		cr_expect_str_eq(lines, plain);
	free(plain);
	free(lines);
	sp_symbolizer_free(sym);
}

Test(export, speedscope_opens_the_busiest_thread)
{
	self_id = sp_test_self_module(writer, &self, fn(exp_alpha));
	uint32_t a = frame(fn(exp_alpha) + 4);
	uint32_t s = stack(&a, 1);
	cr_assert_eq(sp_spool_writer_append_sample(writer, t0, s, T0), 0);
	for (unsigned i = 0; i < 3; i++)
		cr_assert_eq(sp_spool_writer_append_sample(writer, t1, s, T0 + i * MS), 0);
	finish();
	char *text = export(SP_REPORT_SPEEDSCOPE, NULL);
	cr_expect_not_null(strstr(text, "\n\"activeProfileIndex\":1,\n"), "%s", text);
	free(text);
}

Test(export, weights_break_lines)
{
	self_id = sp_test_self_module(writer, &self, fn(exp_alpha));
	uint32_t a = frame(fn(exp_alpha) + 4);
	uint32_t s = stack(&a, 1);
	for (unsigned i = 0; i < 17; i++)
		cr_assert_eq(sp_spool_writer_append_sample(writer, t0, s, T0 + i * MS), 0);
	finish();
	char *text = export(SP_REPORT_SPEEDSCOPE, NULL);
	cr_expect_not_null(strstr(text, ",1001001,\n1001001]}"), "%s", text);
	free(text);
}

/* ---- pprof: a small protobuf reader over the gunzipped bytes --------------------- */

struct pb {
	const uint8_t *p, *end;
};

static uint64_t pb_uvarint(struct pb *m)
{
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		cr_assert_lt(m->p, m->end, "varint runs past its message");
		uint8_t c = *m->p++;
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return v;
	}
	cr_assert_fail("varint longer than 10 bytes");
	return 0;
}

/* Next field of m: its number, and a value (varint) or a sub-range (length-delimited). */
static bool pb_field(struct pb *m, unsigned *field, uint64_t *v, struct pb *sub)
{
	if (m->p >= m->end)
		return false;
	uint64_t key = pb_uvarint(m);
	*field = (unsigned)(key >> 3);
	switch (key & 7) {
	case 0:
		*v = pb_uvarint(m);
		sub->p = sub->end = NULL;
		break;
	case 2: {
		uint64_t n = pb_uvarint(m);
		cr_assert_leq(n, (uint64_t)(m->end - m->p), "length past the message");
		sub->p = m->p;
		sub->end = m->p + n;
		m->p += n;
		*v = 0;
		break;
	}
	default:
		cr_assert_fail("wire type %u is not used by profile.proto", (unsigned)(key & 7));
	}
	return true;
}

/* A repeated varint field: packed (length-delimited) or one value. */
static size_t pb_repeated(uint64_t v, struct pb *sub, uint64_t *out, size_t max, size_t n)
{
	if (!sub->p) {
		cr_assert_lt(n, max);
		out[n++] = v;
		return n;
	}
	while (sub->p < sub->end) {
		cr_assert_lt(n, max);
		out[n++] = pb_uvarint(sub);
	}
	return n;
}

#define MAXN 64

struct p_label {
	uint64_t key, str, num;
	bool has_num;
};
struct p_sample {
	uint64_t loc[MAXN], value[4];
	size_t nloc, nvalue;
	struct p_label label[8];
	size_t nlabel;
};
struct p_line {
	uint64_t function, line;
};
struct p_location {
	uint64_t id, mapping, address;
	struct p_line line[8];
	size_t nline;
};
struct p_function {
	uint64_t id, name, system_name, filename;
};
struct p_mapping {
	uint64_t id, start, limit, offset, filename, build_id;
	bool has_functions;
};
struct profile {
	uint8_t *raw;
	size_t nraw;
	struct pb strings[MAXN];
	size_t nstrings;
	uint64_t sample_type[4][2], period_type[2], period, time_nanos, duration, comment[4];
	uint64_t default_type;
	size_t nsample_type, ncomment;
	struct p_sample sample[MAXN];
	struct p_location location[MAXN];
	struct p_function function[MAXN];
	struct p_mapping mapping[MAXN];
	size_t nsample, nlocation, nfunction, nmapping;
};

static void value_type(struct pb m, uint64_t vt[2])
{
	unsigned f;
	uint64_t v;
	struct pb sub;
	while (pb_field(&m, &f, &v, &sub))
		if (f == 1 || f == 2)
			vt[f - 1] = v;
}

static void decode(struct profile *p, const uint8_t *gz, size_t len)
{
	memset(p, 0, sizeof(*p));
	cr_assert_geq(len, 18);
	cr_assert(gz[0] == 0x1f && gz[1] == 0x8b, "not gzip");
	z_stream z;
	memset(&z, 0, sizeof(z));
	/* windowBits 15 + 32: gzip or zlib header detected. */
	cr_assert_eq(inflateInit2(&z, 15 + 32), Z_OK);
	size_t cap = 1 << 20;
	p->raw = malloc(cap);
	z.next_in = (Bytef *)gz;
	z.avail_in = (uInt)len;
	z.next_out = p->raw;
	z.avail_out = (uInt)cap;
	cr_assert_eq(inflate(&z, Z_FINISH), Z_STREAM_END, "gzip stream incomplete");
	cr_assert_eq(z.avail_in, 0, "bytes after the gzip stream");
	p->nraw = cap - z.avail_out;
	inflateEnd(&z);

	struct pb m = {p->raw, p->raw + p->nraw}, sub, s2;
	unsigned f, f2;
	uint64_t v, v2;
	while (pb_field(&m, &f, &v, &sub)) {
		switch (f) {
		case 1:
			value_type(sub, p->sample_type[p->nsample_type++]);
			break;
		case 2: {
			struct p_sample *s = &p->sample[p->nsample++];
			while (pb_field(&sub, &f2, &v2, &s2)) {
				if (f2 == 1)
					s->nloc = pb_repeated(v2, &s2, s->loc, MAXN, s->nloc);
				else if (f2 == 2)
					s->nvalue = pb_repeated(v2, &s2, s->value, 4, s->nvalue);
				else if (f2 == 3) {
					struct p_label *l = &s->label[s->nlabel++];
					unsigned f3;
					uint64_t v3;
					struct pb s3;
					while (pb_field(&s2, &f3, &v3, &s3)) {
						if (f3 == 1)
							l->key = v3;
						else if (f3 == 2)
							l->str = v3;
						else if (f3 == 3)
							l->num = v3, l->has_num = true;
					}
				}
			}
			break;
		}
		case 3: {
			struct p_mapping *mp = &p->mapping[p->nmapping++];
			while (pb_field(&sub, &f2, &v2, &s2)) {
				uint64_t *fields[] = {NULL, &mp->id, &mp->start, &mp->limit, &mp->offset,
						      &mp->filename, &mp->build_id};
				if (f2 >= 1 && f2 <= 6)
					*fields[f2] = v2;
				else if (f2 == 7)
					mp->has_functions = v2;
			}
			break;
		}
		case 4: {
			struct p_location *l = &p->location[p->nlocation++];
			while (pb_field(&sub, &f2, &v2, &s2)) {
				if (f2 == 1)
					l->id = v2;
				else if (f2 == 2)
					l->mapping = v2;
				else if (f2 == 3)
					l->address = v2;
				else if (f2 == 4) {
					struct p_line *ln = &l->line[l->nline++];
					uint64_t vt[2] = {0, 0};
					value_type(s2, vt); /* same shape: fields 1 and 2 */
					ln->function = vt[0];
					ln->line = vt[1];
				}
			}
			break;
		}
		case 5: {
			struct p_function *fu = &p->function[p->nfunction++];
			while (pb_field(&sub, &f2, &v2, &s2)) {
				uint64_t *fields[] = {NULL, &fu->id, &fu->name, &fu->system_name,
						      &fu->filename};
				if (f2 >= 1 && f2 <= 4)
					*fields[f2] = v2;
			}
			break;
		}
		case 6:
			cr_assert_lt(p->nstrings, MAXN);
			p->strings[p->nstrings++] = sub;
			break;
		case 9:
			p->time_nanos = v;
			break;
		case 10:
			p->duration = v;
			break;
		case 11:
			value_type(sub, p->period_type);
			break;
		case 12:
			p->period = v;
			break;
		case 13:
			p->ncomment = pb_repeated(v, &sub, p->comment, 4, p->ncomment);
			break;
		case 14:
			p->default_type = v;
			break;
		default:
			cr_assert_fail("unexpected Profile field %u", f);
		}
	}
}

/* The spool's pprof export, decoded into p (free p->raw). */
static void decode_export(struct profile *p)
{
	size_t len;
	uint8_t *gz = (uint8_t *)export(SP_REPORT_PPROF, &len);
	decode(p, gz, len);
	free(gz);
}

/* String i of the table, as a NUL-terminated copy in a static ring. */
static const char *str(const struct profile *p, uint64_t i)
{
	static char ring[8][512];
	static int next;
	cr_assert_lt(i, p->nstrings, "string index %" PRIu64 " out of the table", i);
	char *out = ring[next++ % 8];
	size_t n = (size_t)(p->strings[i].end - p->strings[i].p);
	cr_assert_lt(n, sizeof(ring[0]));
	memcpy(out, p->strings[i].p, n);
	out[n] = '\0';
	return out;
}

static const struct p_location *location(const struct profile *p, uint64_t id)
{
	for (size_t i = 0; i < p->nlocation; i++)
		if (p->location[i].id == id)
			return &p->location[i];
	cr_assert_fail("no location %" PRIu64, id);
	return NULL;
}

static const struct p_function *function(const struct profile *p, uint64_t id)
{
	for (size_t i = 0; i < p->nfunction; i++)
		if (p->function[i].id == id)
			return &p->function[i];
	cr_assert_fail("no function %" PRIu64, id);
	return NULL;
}

/* A sample's stack as "leaf;...;root" function names, and its labels as "k=v ...". */
static void sample_text(const struct profile *p, const struct p_sample *s, char *stack_out,
			char *labels_out)
{
	stack_out[0] = labels_out[0] = '\0';
	for (size_t i = 0; i < s->nloc; i++) {
		const struct p_location *l = location(p, s->loc[i]);
		cr_assert_geq(l->nline, 1);
		const struct p_function *fu = function(p, l->line[l->nline - 1].function);
		if (i)
			strcat(stack_out, ";");
		strcat(stack_out, str(p, fu->name));
	}
	for (size_t i = 0; i < s->nlabel; i++) {
		const struct p_label *l = &s->label[i];
		char one[128];
		if (l->has_num)
			snprintf(one, sizeof(one), "%s%s=%" PRId64, i ? " " : "", str(p, l->key),
				 (int64_t)l->num);
		else
			snprintf(one, sizeof(one), "%s%s='%s'", i ? " " : "", str(p, l->key),
				 str(p, l->str));
		strcat(labels_out, one);
	}
}

static bool has_sample(const struct profile *p, const char *stack_text, const char *labels,
		       uint64_t count)
{
	for (size_t i = 0; i < p->nsample; i++) {
		char st[1024], lb[512];
		sample_text(p, &p->sample[i], st, lb);
		if (!strcmp(st, stack_text) && !strcmp(lb, labels) && p->sample[i].nvalue == 2 &&
		    p->sample[i].value[0] == count && p->sample[i].value[1] == count * PERIOD)
			return true;
	}
	return false;
}

Test(export, pprof_decodes_to_the_profile)
{
	known_profile();
	static struct profile p;
	decode_export(&p);

	cr_assert_geq(p.nstrings, 1);
	cr_expect_str_eq(str(&p, 0), "");
	cr_assert_eq(p.nsample_type, 2);
	cr_expect_str_eq(str(&p, p.sample_type[0][0]), "samples");
	cr_expect_str_eq(str(&p, p.sample_type[0][1]), "count");
	cr_expect_str_eq(str(&p, p.sample_type[1][0]), "cpu");
	cr_expect_str_eq(str(&p, p.sample_type[1][1]), "nanoseconds");
	cr_expect_str_eq(str(&p, p.period_type[0]), "cpu");
	cr_expect_str_eq(str(&p, p.period_type[1]), "nanoseconds");
	cr_expect_str_eq(str(&p, p.default_type), "cpu");
	cr_expect_eq(p.period, PERIOD);
	cr_expect_eq(p.time_nanos, START_US * 1000);
	cr_expect_eq(p.duration, 30 * MS);
	cr_assert_eq(p.ncomment, 1);
	cr_expect_str_eq(str(&p, p.comment[0]), "./prog \"x\"");

	/* Samples grouped by (thread, stack); labels pid, tid (numbers), thread (string). */
	cr_expect_eq(p.nsample, 5);
	const char *main_labels = "pid=10 tid=10 thread='prog'";
	const char *worker = "pid=10 tid=11 thread='wor\"ker\\x0a\\xff'";
	cr_expect(has_sample(&p, "exp_alpha;exp_beta;exp_root", main_labels, 2));
	cr_expect(has_sample(&p, "exp_beta;exp_root", main_labels, 1));
	cr_expect(has_sample(&p, "exp_beta;exp_root", worker, 1));
	cr_expect(has_sample(&p, "exp_alpha;[truncated]", main_labels, 1));
	cr_expect(has_sample(&p, "", worker, 1), "the empty stack keeps its sample");

	/* Locations: ids 1..n, one per (mapping, address), each with a function. */
	cr_expect_eq(p.nlocation, 4);
	for (size_t i = 0; i < p.nlocation; i++) {
		const struct p_location *l = &p.location[i];
		cr_expect_eq(l->id, i + 1);
		cr_expect_eq(l->nline, 1);
		for (size_t j = i + 1; j < p.nlocation; j++)
			cr_expect(l->mapping != p.location[j].mapping ||
				  l->address != p.location[j].address);
		const struct p_function *fu = function(&p, l->line[0].function);
		if (!strcmp(str(&p, fu->name), "[truncated]")) {
			cr_expect_eq(l->mapping, 0);
			cr_expect_eq(l->address, 0);
		} else {
			cr_expect_eq(l->mapping, 1);
			cr_expect_str_eq(str(&p, fu->system_name), str(&p, fu->name));
		}
		if (!strcmp(str(&p, fu->name), "exp_alpha"))
			cr_expect_eq(l->address, fn(exp_alpha) + 4);
	}
	cr_expect_eq(p.nfunction, 4);
	for (size_t i = 0; i < p.nfunction; i++)
		cr_expect_eq(p.function[i].id, i + 1);

	/* The one mapping: this binary, with its build-id in hex. */
	cr_assert_eq(p.nmapping, 1);
	const struct p_mapping *mp = &p.mapping[0];
	char hex[2 * SP_BUILD_ID_MAX + 1] = "";
	for (unsigned i = 0; i < self.build_id_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", self.build_id[i]);
	cr_expect_eq(mp->id, 1);
	cr_expect_eq(mp->start, self.start);
	cr_expect_eq(mp->limit, self.end);
	cr_expect_eq(mp->offset, self.file_offset);
	cr_expect_str_eq(str(&p, mp->filename), self.path);
	cr_expect_str_eq(str(&p, mp->build_id), hex);
	cr_expect(self.build_id_len > 0 && mp->has_functions);

	/* Every string is used once: the table holds no duplicates. */
	for (size_t i = 0; i < p.nstrings; i++)
		for (size_t j = i + 1; j < p.nstrings; j++)
			cr_expect_str_neq(str(&p, i), str(&p, j));
	free(p.raw);
}

/* pprof: samples/count, then CPU time or the event's count, the latter the default. */
static void expect_pprof_unit(const struct unit_case *c)
{
	static struct profile p;
	decode_export(&p);
	const char *type = c->time ? "cpu" : c->name, *unit = c->time ? "nanoseconds" : "count";
	cr_assert_eq(p.nsample_type, 2);
	cr_expect_str_eq(str(&p, p.sample_type[0][0]), "samples");
	cr_expect_str_eq(str(&p, p.sample_type[0][1]), "count");
	cr_expect_str_eq(str(&p, p.sample_type[1][0]), type);
	cr_expect_str_eq(str(&p, p.sample_type[1][1]), unit);
	cr_expect_str_eq(str(&p, p.period_type[0]), type);
	cr_expect_str_eq(str(&p, p.period_type[1]), unit);
	cr_expect_str_eq(str(&p, p.default_type), type);
	cr_expect_eq(p.period, c->per);
	bool found = false;
	for (size_t i = 0; i < p.nsample; i++) {
		char st[1024], lb[512];
		sample_text(&p, &p.sample[i], st, lb);
		if (strcmp(st, "exp_alpha;exp_beta;exp_root"))
			continue;
		found = true;
		cr_expect_eq(p.sample[i].value[0], 2);
		cr_expect_eq(p.sample[i].value[1], 2 * c->per);
	}
	cr_expect(found);
	free(p.raw);
}

/* A time metric in pprof: its values, period type and period are nanoseconds, one a period. */
Test(export, pprof_time_metric_period)
{
	static const struct {
		uint32_t metric;
		const char *type;
	} cases[] = {{SP_METRIC_OFF_CPU, "off-cpu"}, {SP_METRIC_WALL, "wall"}};
	off_cpu_profile();
	for (size_t i = 0; i < SP_ARRAY_SIZE(cases); i++) {
		size_t len;
		uint8_t *gz = (uint8_t *)export_with(
			(struct sp_report_opts){.format = SP_REPORT_PPROF, .metric = cases[i].metric},
			&len);
		static struct profile p;
		memset(&p, 0, sizeof(p));
		decode(&p, gz, len);
		free(gz);
		cr_expect_str_eq(str(&p, p.sample_type[1][0]), cases[i].type);
		cr_expect_str_eq(str(&p, p.sample_type[1][1]), "nanoseconds");
		cr_expect_str_eq(str(&p, p.period_type[0]), cases[i].type);
		cr_expect_str_eq(str(&p, p.period_type[1]), "nanoseconds");
		cr_expect_eq(p.period, 1, "%s: period %" PRIu64, cases[i].type, p.period);
		free(p.raw);
	}
}

Test(export, pprof_of_an_empty_spool)
{
	finish();
	static struct profile p;
	decode_export(&p);
	cr_expect_eq(p.nsample, 0);
	cr_expect_eq(p.nlocation, 0);
	cr_expect_eq(p.nsample_type, 2);
	cr_expect_eq(p.period, PERIOD);
	free(p.raw);
	size_t len;
	char *text = export(SP_REPORT_PERF_SCRIPT, &len);
	cr_expect_eq(len, 0);
	free(text);
	text = export(SP_REPORT_SPEEDSCOPE, &len);
	cr_expect_not_null(strstr(text, "\"shared\":{\"frames\":[]},\n\"profiles\":[]}\n"), "%s", text);
	free(text);
}

/* ---- names as the spool has them ------------------------------------------------ */

/*
 * A name a target chose, with what a terminal would obey or misread: an OSC
 * with ESC and BEL, a C1 CSI, a right-to-left override and mark, a backslash
 * spelling an escape, a byte that is not UTF-8.  Every output shows it as the
 * text views do (SHOWN), or JSON's way (JSON, which decodes to the same code
 * points but for the byte, shown as its \xHH).
 */
#define HOSTILE "\x1b]0;x\x07\xc2\x9b" "1m\xe2\x80\xae\xe2\x80\x8f\\x41\xff"
#define HOSTILE_SHOWN "\\x1b]0;x\\x07\\xc2\\x9b1m\\xe2\\x80\\xae\\xe2\\x80\\x8f\\x5cx41\\xff"
#define HOSTILE_JSON "\\u001b]0;x\\u0007\\u009b1m\\u202e\\u200f\\\\x41\\\\xff"

/* One sample of a thread named HOSTILE in a module at /tmp/HOSTILE.so, recording ./HOSTILE. */
static void hostile_profile(void)
{
	sp_spool_writer_free(writer);
	struct sp_spool_meta meta = {.frequency_hz = 999, .event_source = SP_EVENT_CPU_CLOCK,
				     .start_monotonic_ns = T0 - 500000,
				     .start_timestamp_us = START_US, .command = "./" HOSTILE,
				     .hostname = "h", .kernel_release = "k"};
	cr_assert_eq(sp_spool_writer_open(spool_path, &meta, &writer), 0);
	uint32_t t, mod, fr, sid;
	cr_assert_eq(sp_spool_writer_intern_thread(writer, 10, 10, &t), 0);
	cr_assert_eq(sp_spool_writer_set_thread_name(writer, t, HOSTILE), 0);
	struct sp_module m = {.pid = 10, .start = 0x10000, .end = 0x20000,
			      .path = "/tmp/" HOSTILE ".so"};
	cr_assert_eq(sp_spool_writer_add_module(writer, &m, &mod), 0);
	struct sp_frame f = {.module_id = mod, .mode = SP_FRAME_USER, .abs_ip = 0x10010,
			     .rel_ip = 0x10};
	cr_assert_eq(sp_spool_writer_intern_frame(writer, &f, &fr), 0);
	cr_assert_eq(sp_spool_writer_intern_stack(writer, &fr, 1, &sid), 0);
	cr_assert_eq(sp_spool_writer_append_sample(writer, t, sid, T0), 0);
	finish();
}

Test(export, pprof_escapes_names_from_the_spool)
{
	hostile_profile();
	static struct profile p;
	decode_export(&p);
	cr_assert_eq(p.ncomment, 1);
	cr_expect_str_eq(str(&p, p.comment[0]), "./" HOSTILE_SHOWN);
	cr_assert_eq(p.nmapping, 1);
	cr_expect_str_eq(str(&p, p.mapping[0].filename), "/tmp/" HOSTILE_SHOWN ".so");
	cr_expect(has_sample(&p, HOSTILE_SHOWN ".so+0x10", "pid=10 tid=10 thread='" HOSTILE_SHOWN "'",
			     1), "the thread label and the function as the text views show them");
	free(p.raw);
}

Test(export, perf_script_escapes_names_from_the_spool)
{
	hostile_profile();
	char *text = export(SP_REPORT_PERF_SCRIPT, NULL);
	cr_assert_not_null(text);
	cr_expect_str_eq(text, HOSTILE_SHOWN "    10/10        2.000500:    1001001 cpu-clock:\n"
			       "\t           10010 " HOSTILE_SHOWN ".so+0x10 (/tmp/" HOSTILE_SHOWN ".so)\n\n");
	free(text);
}

Test(export, json_escapes_names_from_the_spool)
{
	hostile_profile();
	char *text = export(SP_REPORT_SPEEDSCOPE, NULL);
	cr_assert_not_null(text);
	cr_expect_not_null(strstr(text, "\n\"name\":\"./" HOSTILE_JSON "\",\n"), "%s", text);
	cr_expect_not_null(strstr(text, "\"name\":\"" HOSTILE_JSON " (pid 10, tid 10)\""), "%s", text);
	/* A resolved name is the text views' (its backslashes JSON-escaped). */
	cr_expect_not_null(strstr(text, "{\"name\":\"" "\\\\x1b]0;x\\\\x07\\\\xc2\\\\x9b1m"), "%s",
			   text);
	free(text);
	text = export(SP_REPORT_JSON, NULL);
	cr_assert_not_null(text);
	cr_expect_not_null(strstr(text, "\"command\":\"./" HOSTILE_JSON "\""), "%s", text);
	free(text);
}

Test(export, flamegraph_and_text_escape_names_from_the_spool)
{
	hostile_profile();
	char *svg = export(SP_REPORT_FLAMEGRAPH, NULL);
	cr_assert_not_null(svg);
	cr_expect_not_null(strstr(svg, "Command: ./" HOSTILE_SHOWN "   Spool: /x/known.spool</text>"),
			   "%s", svg);
	cr_expect_null(strstr(svg, "\xef\xbf\xbd"), "no U+FFFD: every byte is shown as \\xHH");
	free(svg);
	char *text = export(SP_REPORT_TEXT, NULL);
	cr_assert_not_null(text);
	cr_expect_not_null(strstr(text, "Command:    ./" HOSTILE_SHOWN "\n"), "%s", text);
	/*
	 * The table cuts names to fit, in the middle: their escaped heads and tails
	 * stay, and a cut never splits an escape (the frame is named by its address:
	 * "[unknown] in MODULE").
	 */
	cr_expect_not_null(strstr(text, "  [unknown] in ...\\x5cx41\\xff.so "), "%s", text);
	cr_expect_not_null(strstr(text, "[unknown] in \\x1b]0;x\\x07...\\x80\\x8f\\x5cx41\\xff.so"),
			   "%s", text);
	free(text);
}

/* ---- flame graph ---------------------------------------------------------------- */

struct xml_case {
	char in[16], out[64];
};

static const struct xml_case xml_cases[] = {
	{"plain", "plain"},
	{"", ""},
	{"a<b>&c", "a&lt;b&gt;&amp;c"},
	{"\"q'", "&quot;q&apos;"},
	{"std::map<K,V>", "std::map&lt;K,V&gt;"},
	/* Control characters XML 1.0 forbids, even escaped: U+FFFD each. */
	{"\x01\t\n\x1f\x7f", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
	{"\xc3\xa9\xe2\x82\xac", "\xc3\xa9\xe2\x82\xac"},
	/* Bytes that are not UTF-8: U+FFFD each, then escaping goes on. */
	{"\xff<\xc3", "\xef\xbf\xbd&lt;\xef\xbf\xbd"},
};

ParameterizedTestParameters(export, xml_is_escaped)
{
	return cr_make_param_array(struct xml_case, (void *)xml_cases, SP_ARRAY_SIZE(xml_cases));
}

ParameterizedTest(struct xml_case *c, export, xml_is_escaped)
{
	struct sp_buf b;
	sp_buf_init(&b);
	cr_assert_eq(sp_xml_put_text(&b, c->in), 0);
	cr_expect(b.len == strlen(c->out) && (!b.len || !memcmp(b.data, c->out, b.len)),
		  "xml of '%s': got '%.*s', want '%s'", c->in, (int)b.len, (char *)b.data, c->out);
	sp_buf_release(&b);
}

/* The opening tag of a frame, up to its name: kind, start, samples, depth. */
static void expect_frame(const char *svg, const char *kind, unsigned s, unsigned c, unsigned d,
			 const char *name)
{
	char want[256];
	snprintf(want, sizeof(want),
		 "<g class=\"f %s\" data-s=\"%u\" data-c=\"%u\" data-d=\"%u\" data-n=\"%s\"", kind,
		 s, c, d, name);
	cr_expect_not_null(strstr(svg, want), "no frame '%s' in\n%s", want, svg);
}

struct fg_frame {
	const char *kind;
	unsigned s, c, d;
	const char *name;
};

/* Exactly these frames (expect_frame), in any order. */
static void expect_frames(const char *svg, const struct fg_frame *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		expect_frame(svg, v[i].kind, v[i].s, v[i].c, v[i].d, v[i].name);
	size_t frames = 0;
	for (const char *p = svg; (p = strstr(p, "<g class=\"f ")); p++)
		frames++;
	cr_expect_eq(frames, n);
}

/*
 * The known profile merged: all(6) over [empty](1), [truncated](1) over
 * exp_alpha(1), and exp_root(4) over exp_beta(4) over exp_alpha(2); siblings
 * by name ('[' sorts before 'e'), each starting where its left sibling ends.
 */
Test(export, flamegraph_frames)
{
	known_profile();
	char *svg = export(SP_REPORT_FLAMEGRAPH, NULL);
	cr_assert_not_null(svg);
	cr_expect_eq(strncmp(svg, "<?xml version=\"1.0\" encoding=\"UTF-8\"", 36), 0);
	static const struct fg_frame want[] = {
		{"root", 0, 6, 0, "all"},
		{"empty", 0, 1, 1, "[empty]"},
		{"truncated", 1, 1, 1, "[truncated]"},
		{"native", 1, 1, 2, "exp_alpha"},
		{"native", 2, 4, 1, "exp_root"},
		{"native", 2, 4, 2, "exp_beta"},
		{"native", 2, 2, 3, "exp_alpha"},
	};
	expect_frames(svg, want, SP_ARRAY_SIZE(want));
	/* Depth first: a frame's children follow it, left to right. */
	const char *root = strstr(svg, "data-n=\"exp_root\""), *beta = strstr(svg, "data-n=\"exp_beta\"");
	const char *empty = strstr(svg, "data-n=\"[empty]\""), *trunc = strstr(svg, "data-n=\"[truncated]\"");
	cr_expect(empty && trunc && root && beta && empty < trunc && trunc < root && root < beta);
	/* Widths in proportion: 1180 px for 6 samples. */
	cr_expect_not_null(strstr(svg, "data-n=\"exp_root\" data-m=\""));
	cr_expect_not_null(strstr(svg, "<rect x=\"403.33\" y=\"128\" width=\"786.67\" height=\"15\""),
			   "%s", svg);
	/* The header: the command escaped, samples, lost, truncated share. */
	cr_expect_not_null(strstr(svg, "Command: ./prog &quot;x&quot;   Spool: /x/known.spool</text>"),
			   "%s", svg);
	cr_expect_not_null(strstr(svg, "Samples: 6 (lost 0)   Truncated: 16.7% (1)   Empty: 16.7% (1)"),
			   "%s", svg);
	/* Self-contained, and nothing that would end the CDATA sections early. */
	cr_expect_null(strstr(svg, "href="));
	cr_expect_null(strstr(svg, "http://www.w3.org/1999/xlink"));
	const char *cdata = strstr(svg, "<script type=\"text/ecmascript\"><![CDATA[");
	cr_assert_not_null(cdata);
	cr_expect_str_eq(strstr(cdata, "]]>"), "]]></script>\n</svg>\n");
	free(svg);
}

/*
 * --group-by=thread: a frame per thread on the root, each thread's stacks
 * merged on it: prog (4) over [truncated] and exp_root, the worker (2) over
 * [empty] and exp_root; the legend names the group kind.
 */
Test(export, flamegraph_groups_by_thread_and_process)
{
	known_profile();
	struct sp_report_opts opts = {.format = SP_REPORT_FLAMEGRAPH, .group_by = SP_GROUP_THREAD};
	char *svg = export_with(opts, NULL);
	static const struct fg_frame want[] = {
		{"root", 0, 6, 0, "all"},
		{"group", 0, 4, 1, "prog (pid 10, tid 10)"},
		{"truncated", 0, 1, 2, "[truncated]"},
		{"native", 0, 1, 3, "exp_alpha"},
		{"native", 1, 3, 2, "exp_root"},
		{"native", 1, 3, 3, "exp_beta"},
		{"native", 1, 2, 4, "exp_alpha"},
		{"group", 4, 2, 1, "wor&quot;ker\\x0a\\xff (pid 10, tid 11)"},
		{"empty", 4, 1, 2, "[empty]"},
		{"native", 5, 1, 2, "exp_root"},
		{"native", 5, 1, 3, "exp_beta"},
	};
	expect_frames(svg, want, SP_ARRAY_SIZE(want));
	cr_expect_not_null(strstr(svg, ">thread</text>"), "%s", svg);
	free(svg);

	opts.group_by = SP_GROUP_PROCESS;
	svg = export_with(opts, NULL);
	expect_frame(svg, "group", 0, 6, 1, "prog (pid 10)");
	expect_frame(svg, "native", 2, 4, 2, "exp_root");
	cr_expect_not_null(strstr(svg, ">process</text>"), "%s", svg);
	free(svg);

	/* Without groups, the legend has no such kind. */
	svg = export(SP_REPORT_FLAMEGRAPH, NULL);
	cr_expect_null(strstr(svg, ">process</text>"), "%s", svg);
	cr_expect_null(strstr(svg, "class=\"f group\""), "%s", svg);
	free(svg);
}

__attribute__((noinline)) int exp_function_with_a_long_name(int x)
{
	volatile int acc = x;
	for (int i = 0; i < x; i++)
		acc = acc * 5 + i;
	return acc;
}

/* A name longer than its frame is cut to fit and ends in ".."; one that fits is whole. */
Test(export, flamegraph_fits_names)
{
	self_id = sp_test_self_module(writer, &self, fn(exp_alpha));
	uint32_t a = frame(fn(exp_alpha) + 4), l = frame(fn(exp_function_with_a_long_name) + 4);
	uint32_t sa = stack(&a, 1), sl = stack(&l, 1);
	/* 1 of 15 samples: 1180 / 15 = 78.67 px, room for (78.67 - 6) / 7.3 = 9 characters. */
	cr_assert_eq(sp_spool_writer_append_sample(writer, t0, sl, T0), 0);
	for (unsigned i = 1; i < 15; i++)
		cr_assert_eq(sp_spool_writer_append_sample(writer, t0, sa, T0 + i * MS), 0);
	finish();
	char *svg = export(SP_REPORT_FLAMEGRAPH, NULL);
	cr_expect_not_null(strstr(svg, "width=\"78.67\" height=\"15\" fill=\""), "%s", svg);
	cr_expect_not_null(strstr(svg, ">exp_fun..</text>"), "%s", svg);
	cr_expect_not_null(strstr(svg, ">exp_alpha</text>"), "%s", svg);
	free(svg);
}

Test(export, flamegraph_of_an_empty_spool)
{
	finish();
	char *svg = export(SP_REPORT_FLAMEGRAPH, NULL);
	expect_frame(svg, "root", 0, 0, 0, "all");
	cr_expect_not_null(strstr(svg, "Samples: 0 (lost 0)"), "%s", svg);
	cr_expect_not_null(strstr(svg, "</svg>\n"));
	free(svg);
}

/* ---- every format -------------------------------------------------------------- */

Test(export, same_spool_same_bytes)
{
	known_profile();
	uint32_t formats[] = {SP_REPORT_PPROF, SP_REPORT_SPEEDSCOPE, SP_REPORT_PERF_SCRIPT,
			      SP_REPORT_FLAMEGRAPH};
	for (size_t i = 0; i < SP_ARRAY_SIZE(formats); i++) {
		size_t n1, n2;
		char *x = export(formats[i], &n1), *y = export(formats[i], &n2);
		cr_expect(n1 > 0 && n1 == n2 && !memcmp(x, y, n1), "format %u differs", formats[i]);
		free(x);
		free(y);
	}
}

Test(export, write_errors_are_reported)
{
	known_profile();
	uint32_t formats[] = {SP_REPORT_PPROF, SP_REPORT_SPEEDSCOPE, SP_REPORT_PERF_SCRIPT,
			      SP_REPORT_FLAMEGRAPH};
	for (size_t i = 0; i < SP_ARRAY_SIZE(formats); i++) {
		FILE *full = fopen("/dev/full", "w");
		cr_assert_not_null(full);
		struct sp_report_opts opts = {.format = formats[i]};
		int err = sp_report_write(spool, NULL, &opts, full);
		cr_expect(err < 0, "format %u: %d", formats[i], err);
		fclose(full);
	}
}
