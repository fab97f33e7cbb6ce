/* SPDX-License-Identifier: MIT */
/* Regression tests for the crashes the fuzzers found (tests/fuzz/), one per bug, on hand-made inputs. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stackpulse.h"

/*
 * Most of these crash only under the sanitizers (make check-sanitize): the
 * bugs were undefined behaviour that happens to do no harm in a normal
 * build, so a plain run checks the output and the sanitizer run checks the
 * rest.
 */

static char spool_path[64];

static void tmp_setup(void)
{
	const char *dir = getenv("TMPDIR");
	snprintf(spool_path, sizeof(spool_path), "%s/sp-fuzzreg-XXXXXX", dir && *dir ? dir : "/tmp");
	int fd = mkstemp(spool_path);
	cr_assert(fd >= 0, "mkstemp");
	close(fd);
}

static void tmp_teardown(void)
{
	unlink(spool_path);
}

/* Write a spool of module-less frames and one sample per stack (frame indexes, leaf first). */
static struct sp_spool *spool_of(const struct sp_frame *frames, size_t nframes,
				 const uint32_t *const *stacks, const size_t *depths, size_t nstacks)
{
	const struct sp_spool_meta meta = {
		.start_monotonic_ns = 1000, .frequency_hz = 99, .command = "fuzz",
		.hostname = "h", .kernel_release = "",
	};
	struct sp_spool_writer *w;
	cr_assert_eq(sp_spool_writer_open(spool_path, &meta, &w), 0);
	uint32_t ids[16], thread;
	cr_assert(nframes <= 16);
	for (size_t i = 0; i < nframes; i++)
		cr_assert_eq(sp_spool_writer_intern_frame(w, &frames[i], &ids[i]), 0);
	cr_assert_eq(sp_spool_writer_intern_thread(w, 1, 1, &thread), 0);
	for (size_t s = 0; s < nstacks; s++) {
		uint32_t fr[16], stack;
		for (size_t i = 0; i < depths[s]; i++)
			fr[i] = ids[stacks[s][i]];
		cr_assert_eq(sp_spool_writer_intern_stack(w, fr, depths[s], &stack), 0);
		cr_assert_eq(sp_spool_writer_append_sample(w, thread, stack, 2000 + s), 0);
	}
	struct sp_summary sum = {.sample_events = nstacks, .samples = nstacks};
	cr_assert_eq(sp_spool_writer_finish(w, &sum), 0);
	sp_spool_writer_free(w);
	struct sp_spool *sp;
	cr_assert_eq(sp_spool_open(spool_path, &sp), 0);
	return sp;
}

/* The report of s in format, as a malloc'd string. */
static char *report_of(const struct sp_spool *s, uint32_t format)
{
	/* Nothing outside the spool: no perf maps, no kallsyms. */
	struct sp_symbolizer_opts so = {.no_kernel_symbols = true,
					.perf_map_policy = SP_PERF_MAPS_NONE};
	struct sp_symbolizer *sym;
	cr_assert_eq(sp_symbolizer_new(s, &so, &sym), 0);
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cr_assert_not_null(out);
	struct sp_report_opts ro = {.format = format};
	cr_assert_eq(sp_report_write(s, sym, &ro, out), 0);
	fclose(out);
	sp_symbolizer_free(sym);
	return text;
}

/*
 * A truncation marker anywhere but at the root end of a stack (only a
 * hand-made or damaged spool has one there): the text report's heaviest
 * stacks copied the marker's function list, empty and with an unset
 * pointer, through memcpy (lib/report/heaviest.c; UBSan: null pointer
 * passed as argument 2).  Reproducer: tests/fuzz/corpus/report/marker-inside-stack.spool.
 */
Test(fuzz_regressions, report_marker_inside_stack, .init = tmp_setup, .fini = tmp_teardown)
{
	const struct sp_frame frames[] = {
		{SP_NO_MODULE, SP_FRAME_USER, 0x1000, 0},
		{SP_NO_MODULE, SP_FRAME_TRUNCATED, SP_STOP_STACK_EXHAUSTED, 0},
		{SP_NO_MODULE, SP_FRAME_USER, 0x2000, 0},
	};
	static const uint32_t mid[] = {0, 1, 2}, leaf[] = {1, 2};
	const uint32_t *const stacks[] = {mid, leaf};
	const size_t depths[] = {3, 2};
	struct sp_spool *s = spool_of(frames, 3, stacks, depths, 2);
	char *text = report_of(s, SP_REPORT_TEXT);
	/* The text views name address-only frames by module: "[unknown]" outside every one. */
	cr_expect(strstr(text, "[truncated]\n    [unknown] ([unknown])") != NULL, "text report:\n%s",
		  text);
	free(text);
	char *folded = report_of(s, SP_REPORT_FOLDED);
	cr_expect(strstr(folded, "[unknown]+0x2000") != NULL, "folded report:\n%s", folded);
	free(folded);
	sp_spool_free(s);
}
