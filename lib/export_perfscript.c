/* SPDX-License-Identifier: MIT */
/* perf-script export: the text `perf script` prints for call-graph samples, for its importers. */
#include "report_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/*
 * Write n bytes of s with control characters as '_', and spaces too when
 * no_spaces: importers split a frame line at " (" before the module, and a
 * sample at its blank line, so neither may appear inside a field.
 */
static void put_field(FILE *out, const char *s, size_t n, bool no_spaces)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		putc(c < 0x20 || c == 0x7f || (no_spaces && c == ' ') ? '_' : c, out);
	}
}

#define DELETED_SUFFIX " (deleted)"

/* The module column: the file's path as perf shows it, else the symbolizer's module name. */
static void put_module(FILE *out, const struct sp_spool *s, const struct sp_frame *fr,
		       const struct sp_resolved_frame *rf)
{
	const struct sp_module *m =
		fr->module_id < sp_spool_module_count(s) ? sp_spool_module(s, fr->module_id) : NULL;
	const char *text = rf->module && rf->module[0] ? rf->module : "[unknown]";
	if (m && !(m->flags & (SP_MODULE_KERNEL | SP_MODULE_ANON)) && m->path &&
	    m->path[0] == '/' && rf->origin != SP_ORIGIN_PERF_MAP)
		text = m->path;
	size_t n = strlen(text), k = strlen(DELETED_SUFFIX);
	/* perf keeps the kernel's suffix of a deleted file; importers take it for the symbol. */
	if (n > k && !strcmp(text + n - k, DELETED_SUFFIX))
		n -= k;
	fputs(" (", out);
	put_field(out, text, n, true);
	fputs(")\n", out);
}

static const struct sp_resolved_frame truncated = {.name = "[truncated]", .module = "[unknown]"};

/* One frame line per function, leaf first; inlined functions before the one holding them. */
static int put_frame(FILE *out, struct sp_agg *a, uint32_t frame_id)
{
	const struct sp_frame *fr = sp_spool_frame(a->spool, frame_id);
	const struct sp_resolved_frame *lines = &truncated;
	size_t n = 1;
	if (fr->mode != SP_FRAME_TRUNCATED) {
		int err = sp_symbolizer_resolve_all(a->sym, frame_id, &lines, &n);
		if (err)
			return err;
	}
	for (size_t j = 0; j < n; j++) {
		const struct sp_resolved_frame *rf = &lines[j];
		fprintf(out, "\t%16" PRIx64 " ", fr->mode == SP_FRAME_TRUNCATED ? 0 : fr->abs_ip);
		put_field(out, rf->name, strlen(rf->name), false);
		/* The ELF symbol is the outermost line's: only it has an offset. */
		if (j + 1 == n && rf->origin != SP_ORIGIN_ADDRESS_ONLY &&
		    fr->mode != SP_FRAME_TRUNCATED)
			fprintf(out, "+0x%" PRIx64, rf->symbol_offset);
		put_module(out, a->spool, fr, rf);
	}
	return 0;
}

int sp_export_perf_script(struct sp_agg *a, FILE *out)
{
	const struct sp_spool *s = a->spool;
	const char *event =
		sp_spool_meta(s)->event_source == SP_EVENT_CYCLES ? "cycles" : "cpu-clock";
	uint64_t period = sp_export_period_ns(s);
	uint32_t *order;
	int err = sp_export_time_order(s, &order);
	if (err)
		return err;
	size_t n = sp_spool_sample_count(s);
	for (size_t i = 0; !err && i < n; i++) {
		if (!sp_agg_kept(a, order[i]))
			continue; /* filtered out */
		const struct sp_sample *smp = sp_spool_sample(s, order[i]);
		const struct sp_thread *t = sp_spool_thread(s, smp->thread);
		/* perf's "COMM PID/TID SECONDS.MICROS: PERIOD EVENT:", in CLOCK_MONOTONIC time. */
		if (t && t->name[0])
			put_field(out, t->name, strlen(t->name), false);
		else
			fprintf(out, ":%" PRId32, t ? t->tid : -1);
		fprintf(out, " %5" PRId32 "/%-5" PRId32 " %5" PRIu64 ".%06" PRIu64 ": %10" PRIu64
			     " %s:\n",
			t ? t->pid : -1, t ? t->tid : -1, smp->timestamp_ns / 1000000000u,
			smp->timestamp_ns % 1000000000u / 1000u, period, event);
		const uint32_t *fr;
		uint32_t sid = smp->stack_id < a->nstacks ? smp->stack_id : 0;
		size_t depth = sp_agg_stack_frames(a, sid, &fr);
		for (size_t k = 0; !err && k < depth; k++)
			err = put_frame(out, a, fr[k]);
		putc('\n', out);
		if (ferror(out))
			err = -EIO;
	}
	free(order);
	return err;
}
