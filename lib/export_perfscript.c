/* SPDX-License-Identifier: MIT */
/* perf-script export: the text `perf script` prints for call-graph samples, for its importers. */
#include "report_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/*
 * Append n bytes of s with control characters as '_', and spaces too when
 * no_spaces: importers split a frame line at " (" before the module, and a
 * sample at its blank line, so neither may appear inside a field.
 */
static int put_field(struct sp_buf *b, const char *s, size_t n, bool no_spaces)
{
	int err = sp_buf_reserve(b, n);
	if (err)
		return err;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		b->data[b->len++] = c < 0x20 || c == 0x7f || (no_spaces && c == ' ') ? '_' : c;
	}
	return 0;
}

static int put_str(struct sp_buf *b, const char *s)
{
	return sp_buf_append(b, s, strlen(s));
}

static int put_fmt(struct sp_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int put_fmt(struct sp_buf *b, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	return sp_buf_append(b, tmp, n < (int)sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

#define DELETED_SUFFIX " (deleted)"

/* The module column: the file's path as perf shows it, else the symbolizer's module name. */
static int put_module(struct sp_buf *b, const struct sp_spool *s, const struct sp_frame *fr,
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
	int err = put_str(b, " (");
	err = err ? err : put_field(b, text, n, true);
	return err ? err : put_str(b, ")\n");
}

static const struct sp_resolved_frame truncated = {.name = "[truncated]", .module = "[unknown]"};

/* One frame line per function, leaf first; inlined functions before the one holding them. */
static int put_frame(struct sp_buf *b, struct sp_agg *a, uint32_t frame_id)
{
	const struct sp_frame *fr = sp_spool_frame(a->spool, frame_id);
	const struct sp_resolved_frame *lines = &truncated;
	size_t n = 1;
	int err = 0;
	if (fr->mode != SP_FRAME_TRUNCATED)
		err = sp_symbolizer_resolve_all(a->sym, frame_id, &lines, &n);
	for (size_t j = 0; !err && j < n; j++) {
		const struct sp_resolved_frame *rf = &lines[j];
		err = put_fmt(b, "\t%16" PRIx64 " ", fr->mode == SP_FRAME_TRUNCATED ? 0 : fr->abs_ip);
		err = err ? err : put_field(b, rf->name, strlen(rf->name), false);
		/* The ELF symbol is the outermost line's: only it has an offset. */
		if (!err && j + 1 == n && rf->origin != SP_ORIGIN_ADDRESS_ONLY &&
		    fr->mode != SP_FRAME_TRUNCATED)
			err = put_fmt(b, "+0x%" PRIx64, rf->symbol_offset);
		err = err ? err : put_module(b, a->spool, fr, rf);
	}
	return err;
}

/*
 * Every frame's lines, formatted once when first used: a million samples
 * repeat the same few thousand frames, and copying their text is what makes
 * this format's cost the size of its output.
 */
struct frame_cache {
	struct sp_buf text;
	size_t *start; /* per frame id: offset in text, SIZE_MAX until formatted */
	size_t *len;
};

static int frame_text(struct frame_cache *c, struct sp_agg *a, uint32_t frame_id,
		      const uint8_t **p, size_t *n)
{
	if (c->start[frame_id] == SIZE_MAX) {
		size_t at = c->text.len;
		int err = put_frame(&c->text, a, frame_id);
		if (err)
			return err;
		c->start[frame_id] = at;
		c->len[frame_id] = c->text.len - at;
	}
	*p = c->text.data + c->start[frame_id];
	*n = c->len[frame_id];
	return 0;
}

/* perf's "COMM PID/TID SECONDS.MICROS: PERIOD EVENT:" line, in CLOCK_MONOTONIC time. */
static int put_header(struct sp_buf *b, const struct sp_thread *t, uint64_t ns, uint64_t period,
		      const char *event)
{
	int err;
	if (t && t->name[0])
		err = put_field(b, t->name, strlen(t->name), false);
	else
		err = put_fmt(b, ":%" PRId32, t ? t->tid : -1);
	err = err ? err : put_fmt(b, " %5" PRId32 "/%-5" PRId32, t ? t->pid : -1, t ? t->tid : -1);
	err = err ? err : put_fmt(b, " %5" PRIu64 ".%06" PRIu64 ": %10" PRIu64, ns / 1000000000u,
				  ns % 1000000000u / 1000u, period);
	err = err ? err : put_str(b, " ");
	err = err ? err : put_str(b, event);
	return err ? err : put_str(b, ":\n");
}

int sp_export_perf_script(struct sp_agg *a, FILE *out)
{
	const struct sp_spool *s = a->spool;
	const char *event =
		sp_spool_meta(s)->event_source == SP_EVENT_CYCLES ? "cycles" : "cpu-clock";
	uint64_t period = sp_export_period_ns(s);
	size_t nframes = sp_spool_frame_count(s);
	struct frame_cache c = {.start = malloc((nframes + 1) * sizeof(size_t)),
				.len = malloc((nframes + 1) * sizeof(size_t))};
	struct sp_buf b;
	sp_buf_init(&c.text);
	sp_buf_init(&b);
	uint32_t *order = NULL;
	int err = c.start && c.len ? sp_export_time_order(s, &order) : -ENOMEM;
	for (size_t i = 0; !err && i < nframes; i++)
		c.start[i] = SIZE_MAX;
	size_t n = err ? 0 : sp_spool_sample_count(s);
	for (size_t i = 0; !err && i < n; i++) {
		const struct sp_sample *smp = sp_spool_sample(s, order[i]);
		err = put_header(&b, sp_spool_thread(s, smp->thread), smp->timestamp_ns, period,
				 event);
		const uint32_t *fr;
		uint32_t sid = smp->stack_id < a->nstacks ? smp->stack_id : 0;
		size_t depth = sp_agg_stack_frames(a, sid, &fr);
		for (size_t k = 0; !err && k < depth; k++) {
			const uint8_t *p;
			size_t len;
			err = frame_text(&c, a, fr[k], &p, &len);
			err = err ? err : sp_buf_append(&b, p, len);
		}
		err = err ? err : put_str(&b, "\n");
		/* Write in blocks of about 64 KiB. */
		if (!err && (b.len >= 65536 || i + 1 == n)) {
			if (fwrite(b.data, 1, b.len, out) != b.len)
				err = errno ? -errno : -EIO;
			b.len = 0;
		}
	}
	free(order);
	free(c.start);
	free(c.len);
	sp_buf_release(&c.text);
	sp_buf_release(&b);
	return err;
}
