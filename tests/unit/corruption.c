/* SPDX-License-Identifier: MIT */
/*
 * Every single-byte corruption and every truncation of the small fixture spool
 * (tests/fixtures/small.spool), in-process: the reader either refuses the bytes
 * with an error or hands out a spool whose dump and every report format are
 * written without a crash.  A crash or hang here is a Criterion failure (the
 * suite has a time limit).  tests/e2e/32-corrupt-spool.sh does the CLI side.
 */
#include <criterion/criterion.h>

#include "spool_fixture.h"

static FILE *devnull;
static size_t opened, refused;

static void open_devnull(void)
{
	devnull = fopen("/dev/null", "w");
	cr_assert_not_null(devnull);
	opened = refused = 0;
}

static void close_devnull(void)
{
	fclose(devnull);
}

/* Read one variant like dump and report do; counts whether the reader took it. */
static void read_variant(const uint8_t *data, size_t len, const char *what, size_t at,
			 unsigned value)
{
	struct sp_spool *s;
	int err = sp_spool_open_buffer(data, len, &s);
	if (err) {
		cr_assert_lt(err, 0, "%s %zu (0x%02x): error %d is not negative", what, at, value);
		cr_assert_not_null(sp_strerror(err));
		refused++;
		return;
	}
	opened++;
	cr_assert_eq(sp_spool_dump_text(s, devnull), 0, "%s %zu (0x%02x): dump failed", what, at,
		     value);
	/* Nothing from the machine: no kallsyms, perf maps or debug files. */
	const struct sp_symbolizer_opts so = {
		.kallsyms_path = "/nonexistent/kallsyms",
		.perf_map_dir = "/nonexistent",
		.debug_dirs = "/nonexistent",
	};
	struct sp_symbolizer *sym;
	cr_assert_eq(sp_symbolizer_new(s, &so, &sym), 0, "%s %zu (0x%02x): symbolizer", what, at,
		     value);
	for (uint32_t f = SP_REPORT_TEXT; f <= SP_REPORT_PERF_SCRIPT; f++) {
		struct sp_report_opts ro = {.format = f, .lines = f == SP_REPORT_FOLDED};
		cr_assert_eq(sp_report_write(s, sym, &ro, devnull), 0,
			     "%s %zu (0x%02x): report format %u failed", what, at, value, f);
	}
	sp_symbolizer_free(sym);
	sp_spool_free(s);
}

TestSuite(corruption, .init = open_devnull, .fini = close_devnull, .timeout = 120);

/* Each offset gets the values most likely to matter: zero, all ones, flipped bits, off by one. */
Test(corruption, every_byte_of_the_fixture)
{
	size_t len;
	uint8_t *orig = slurp(fixture_path("small.spool"), &len);
	cr_assert_not_null(orig, "no fixture %s", fixture_path("small.spool"));
	uint8_t *d = malloc(len);
	cr_assert_not_null(d);
	size_t variants = 0;
	for (size_t off = 0; off < len; off++) {
		uint8_t b = orig[off];
		const unsigned values[] = {0x00, 0xff, 0x7f, 0x80, b ^ 0x80u, b ^ 0x01u, b ^ 0x40u,
					   (b + 1) & 0xffu, (b - 1) & 0xffu};
		for (size_t v = 0; v < sizeof(values) / sizeof(values[0]); v++) {
			if (values[v] == b)
				continue;
			memcpy(d, orig, len);
			d[off] = (uint8_t)values[v];
			read_variant(d, len, "byte", off, values[v]);
			variants++;
		}
	}
	cr_log_info("%zu variants of %zu bytes: %zu read, %zu refused", variants, len, opened,
		    refused);
	/* A sweep in which nothing is ever refused, or nothing read, tested nothing. */
	cr_expect_gt(opened, 0);
	cr_expect_gt(refused, 0);
	free(d);
	free(orig);
}

/* Every prefix: the reader recovers what is intact, or says why not. */
Test(corruption, every_truncation_of_the_fixture)
{
	size_t len;
	uint8_t *orig = slurp(fixture_path("small.spool"), &len);
	cr_assert_not_null(orig);
	for (size_t n = 0; n < len; n++) {
		/* A copy of exactly n bytes, so reading past the end is a sanitizer error. */
		uint8_t *d = malloc(n ? n : 1);
		cr_assert_not_null(d);
		memcpy(d, orig, n);
		read_variant(d, n, "length", n, 0);
		free(d);
	}
	cr_log_info("%zu truncations: %zu read, %zu refused", len, opened, refused);
	cr_expect_gt(opened, 0);
	cr_expect_gt(refused, 0);
	free(orig);
}
