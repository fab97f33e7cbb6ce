/* SPDX-License-Identifier: MIT */
/* Golden tests of the spool text dump and of the committed fixture spool (lib/spool_dump.c). */
#include "spool_fixture.h"

TestSuite(spool_dump, .init = tmp_setup, .fini = tmp_teardown);

/*
 * SP_UPDATE_GOLDEN=1 rewrites tests/fixtures/small.spool and small.dump from
 * the writer; review the diff before committing it, since a changed
 * small.spool means the format changed.
 */
static void maybe_update_golden(const uint8_t *spool, size_t spool_len, const char *dump)
{
	if (!getenv("SP_UPDATE_GOLDEN"))
		return;
	FILE *f = fopen(fixture_path("small.spool"), "wb");
	cr_assert_not_null(f, "%s: %s", fixture_path("small.spool"), strerror(errno));
	cr_assert_eq(fwrite(spool, 1, spool_len, f), spool_len);
	cr_assert_eq(fclose(f), 0);
	f = fopen(fixture_path("small.dump"), "w");
	cr_assert_not_null(f);
	cr_assert_eq(fputs(dump, f) >= 0, true);
	cr_assert_eq(fclose(f), 0);
}

Test(spool_dump, matches_golden_text)
{
	size_t len, golden_len;
	uint8_t *data = small_bytes(&len, NULL);
	struct sp_spool *s;
	cr_assert_eq(sp_spool_open_buffer(data, len, &s), 0);
	char *text = dump_string(s);
	maybe_update_golden(data, len, text);
	char *golden = (char *)slurp(fixture_path("small.dump"), &golden_len);
	cr_assert_not_null(golden, "missing %s", fixture_path("small.dump"));
	cr_assert_str_eq(text, golden);
	free(golden);
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
	size_t len, fixture_len, golden_len;
	uint8_t *data = small_bytes(&len, NULL);
	uint8_t *fixture = slurp(fixture_path("small.spool"), &fixture_len);
	cr_assert_not_null(fixture, "missing %s", fixture_path("small.spool"));
	cr_assert_eq(fixture_len, len, "the writer's output changed size");
	cr_assert_eq(memcmp(fixture, data, len), 0, "the writer's output changed");

	struct sp_spool *s;
	cr_assert_eq(sp_spool_open(fixture_path("small.spool"), &s), 0);
	char *text = dump_string(s);
	char *golden = (char *)slurp(fixture_path("small.dump"), &golden_len);
	cr_assert_not_null(golden);
	cr_assert_str_eq(text, golden);
	free(golden);
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
	fclose(full);
	sp_spool_free(s);
	free(data);
}
