/* SPDX-License-Identifier: MIT */
/* Golden tests of the spool text and JSON dumps and of the committed fixture spool (lib/spool/spool_dump.c). */
#include "spool_fixture.h"

TestSuite(spool_dump, .init = tmp_setup, .fini = tmp_teardown);

static void write_fixture(const char *name, const void *data, size_t len)
{
	FILE *f = fopen(fixture_path(name), "wb");
	cr_assert_not_null(f, "%s: %s", fixture_path(name), strerror(errno));
	cr_assert_eq(fwrite(data, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
}

/*
 * SP_UPDATE_GOLDEN=1 rewrites tests/fixtures/small.spool, small.dump and
 * small.jsonl from the writer; review the diff before committing it, since a
 * changed small.spool means the format changed.
 */
static void maybe_update_golden(const uint8_t *spool, size_t spool_len, const struct sp_spool *s)
{
	if (!getenv("SP_UPDATE_GOLDEN"))
		return;
	write_fixture("small.spool", spool, spool_len);
	char *text = dump_string(s), *json = dump_json_string(s);
	write_fixture("small.dump", text, strlen(text));
	write_fixture("small.jsonl", json, strlen(json));
	free(json);
	free(text);
}

/* got must equal the committed fixture name, byte for byte. */
static void assert_golden(const char *got, const char *name)
{
	size_t golden_len;
	char *golden = (char *)slurp(fixture_path(name), &golden_len);
	cr_assert_not_null(golden, "missing %s", fixture_path(name));
	cr_assert_str_eq(got, golden, "differs from %s (SP_UPDATE_GOLDEN=1 rewrites it)", name);
	free(golden);
}

Test(spool_dump, matches_golden_text)
{
	size_t len;
	uint8_t *data = small_bytes(&len, NULL);
	struct sp_spool *s;
	cr_assert_eq(sp_spool_open_buffer(data, len, &s), 0);
	maybe_update_golden(data, len, s);
	char *text = dump_string(s);
	assert_golden(text, "small.dump");
	free(text);
	sp_spool_free(s);
	free(data);
}

Test(spool_dump, matches_golden_json)
{
	size_t len;
	uint8_t *data = small_bytes(&len, NULL);
	struct sp_spool *s;
	cr_assert_eq(sp_spool_open_buffer(data, len, &s), 0);
	char *json = dump_json_string(s);
	assert_golden(json, "small.jsonl");
	free(json);
	sp_spool_free(s);
	free(data);
}

static size_t count_lines(const char *text)
{
	size_t n = 0;
	for (const char *p = text; (p = strchr(p, '\n')); p++)
		n++;
	return n;
}

/* One object per record, in the text dump's order and kinds. */
Test(spool_dump, json_follows_text_line_for_line)
{
	size_t len;
	uint8_t *data = small_bytes(&len, NULL);
	struct sp_spool *s;
	cr_assert_eq(sp_spool_open_buffer(data, len, &s), 0);
	char *text = dump_string(s), *json = dump_json_string(s);
	cr_assert_eq(count_lines(json), count_lines(text));
	cr_assert_eq(count_lines(json), s->nlog);
	char *tl = text, *jl = json;
	for (size_t i = 0; i < s->nlog; i++) {
		char kind[32], want[48];
		cr_assert_eq(sscanf(tl, "%31s", kind), 1);
		snprintf(want, sizeof(want), "{\"type\":\"%s\"", kind);
		cr_assert_eq(strncmp(jl, want, strlen(want)), 0, "line %zu: %.60s", i + 1, jl);
		cr_assert(strchr(jl, '\n')[-1] == '}', "line %zu does not end with }", i + 1);
		tl = strchr(tl, '\n') + 1;
		jl = strchr(jl, '\n') + 1;
	}
	free(json);
	free(text);
	sp_spool_free(s);
	free(data);
}

/*
 * The committed small.spool was written by an earlier build: reading it
 * proves old files stay readable, and equal bytes prove the writer did not
 * change the format by accident.
 */
Test(spool_dump, committed_fixture_is_stable)
{
	size_t len, fixture_len;
	uint8_t *data = small_bytes(&len, NULL);
	uint8_t *fixture = slurp(fixture_path("small.spool"), &fixture_len);
	cr_assert_not_null(fixture, "missing %s", fixture_path("small.spool"));
	cr_assert_eq(fixture_len, len, "the writer's output changed size");
	cr_assert_eq(memcmp(fixture, data, len), 0, "the writer's output changed");

	struct sp_spool *s;
	cr_assert_eq(sp_spool_open(fixture_path("small.spool"), &s), 0);
	char *text = dump_string(s), *json = dump_json_string(s);
	assert_golden(text, "small.dump");
	assert_golden(json, "small.jsonl");
	free(json);
	free(text);
	sp_spool_free(s);
	free(fixture);
	free(data);
}

Test(spool_dump, marks_truncated_spool)
{
	size_t len;
	uint8_t *data = small_bytes(&len, NULL);
	struct sp_spool *s;
	cr_assert_eq(sp_spool_open_buffer(data, len - 3, &s), 0);
	char *text = dump_string(s);
	char want[96];
	snprintf(want, sizeof(want), "\n# truncated: the spool ends mid-record; %zu records kept\n",
		 s->nlog);
	size_t n = strlen(text), w = strlen(want);
	cr_assert(n > w && !strcmp(text + n - w, want), "%s", text);
	cr_assert_null(strstr(text, "\nsummary "));
	free(text);
	sp_spool_free(s);
	free(data);
}

Test(spool_dump, json_marks_truncated_spool)
{
	size_t len;
	uint8_t *data = small_bytes(&len, NULL);
	struct sp_spool *s;
	cr_assert_eq(sp_spool_open_buffer(data, len - 3, &s), 0);
	char *json = dump_json_string(s);
	char want[96];
	snprintf(want, sizeof(want), "\n{\"type\":\"truncated\",\"records\":%zu}\n", s->nlog);
	size_t n = strlen(json), w = strlen(want);
	cr_assert(n > w && !strcmp(json + n - w, want), "%s", json);
	cr_assert_null(strstr(json, "\"type\":\"summary\""));
	cr_assert_eq(count_lines(json), s->nlog + 1);
	free(json);
	sp_spool_free(s);
	free(data);
}

/* A recorder killed between two flushes: intact records, but no summary. */
Test(spool_dump, json_marks_missing_summary)
{
	struct sp_spool_writer *w;
	cr_assert_eq(sp_spool_writer_open(tmp_path("cut.spool"), &small_meta, &w), 0);
	uint32_t thread;
	cr_assert_eq(sp_spool_writer_intern_thread(w, 10, 11, &thread), 0);
	cr_assert_eq(sp_spool_writer_append_sample(w, thread, 0, 5000000000ull), 0);
	sp_spool_writer_free(w);
	struct sp_spool *s;
	cr_assert_eq(sp_spool_open(tmp_path("cut.spool"), &s), 0);
	cr_assert_not(sp_spool_truncated(s));
	char *json = dump_json_string(s), *text = dump_string(s);
	const char *want = "{\"type\":\"sample\",\"thread\":0,\"stack\":null,"
			   "\"time_ns\":5000000000}\n{\"type\":\"cut-short\"}\n";
	size_t n = strlen(json);
	cr_assert(n > strlen(want) && !strcmp(json + n - strlen(want), want), "%s", json);
	cr_assert_not_null(strstr(text, "# cut short"));
	free(text);
	free(json);
	sp_spool_free(s);
}

Test(spool_dump, reports_write_errors)
{
	size_t len;
	uint8_t *data = small_bytes(&len, NULL);
	struct sp_spool *s;
	cr_assert_eq(sp_spool_open_buffer(data, len, &s), 0);
	FILE *full = fopen("/dev/full", "w");
	if (!full)
		cr_skip_test("no /dev/full");
	cr_assert_lt(sp_spool_dump_text(s, full), 0);
	clearerr(full);
	cr_assert_lt(sp_spool_dump_json(s, full), 0);
	fclose(full);
	sp_spool_free(s);
	free(data);
}
