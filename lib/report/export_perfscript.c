/* SPDX-License-Identifier: MIT */
/* perf-script export: the text `perf script` prints for call-graph samples, for its importers. */
#include "report/export.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/*
 * Append n bytes of s, text already escaped (sp_buf_put_printable), with
 * spaces as '_' when no_spaces: importers split a frame line at " (" before
 * the module, and a sample at its blank line, so neither may appear inside a
 * field.  (A control character, which escaped text never holds, becomes '_'.)
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

/* Append s, as the spool has it (a thread name), escaped like the frame names. */
static int put_raw_field(struct sp_buf *b, const char *s)
{
	if (sp_text_is_printable(s))
		return put_field(b, s, strlen(s), false);
	struct sp_buf t;
	sp_buf_init(&t);
	int err = sp_buf_put_printable(&t, s);
	err = err ? err : put_field(b, (const char *)t.data, t.len, false);
	sp_buf_release(&t);
	return err;
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
	struct sp_buf path; /* the path from the spool, escaped as the module name was */
	sp_buf_init(&path);
	int err = 0;
	if (m && !(m->flags & (SP_MODULE_KERNEL | SP_MODULE_ANON)) && m->path &&
	    m->path[0] == '/' && rf->origin != SP_ORIGIN_PERF_MAP) {
		err = sp_buf_put_printable(&path, m->path);
		err = err ? err : sp_buf_append(&path, "", 1);
		text = (const char *)path.data;
	}
	size_t n = err ? 0 : strlen(text), k = strlen(DELETED_SUFFIX);
	/* perf keeps the kernel's suffix of a deleted file; importers take it for the symbol. */
	if (n > k && !strcmp(text + n - k, DELETED_SUFFIX))
		n -= k;
	err = err ? err : put_str(b, " (");
	err = err ? err : put_field(b, text, n, true);
	err = err ? err : put_str(b, ")\n");
	sp_buf_release(&path);
	return err;
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

/* Stack texts are kept up to this many bytes; past it samples are built from frame texts. */
#define STACK_CACHE_MAX (16u << 20)

/*
 * Text formatted once and copied per sample: a million samples repeat the
 * same few thousand frames, stacks and threads, and copying their text makes
 * this format's cost the size of its output.  Offsets into text, SIZE_MAX
 * until formatted.
 */
struct text_cache {
	struct sp_buf text;
	size_t *frame_at, *frame_len; /* per frame id: its lines */
	size_t *stack_at, *stack_len; /* per stack id: every frame's lines, leaf first */
	size_t *thread_at, *thread_len; /* per thread index: "COMM PID/TID" */
	char tail[64];                /* ": PERIOD EVENT:\n" */
	size_t tail_len;
};

static int frame_text(struct text_cache *c, struct sp_agg *a, uint32_t frame_id)
{
	if (c->frame_at[frame_id] != SIZE_MAX)
		return 0;
	size_t at = c->text.len;
	int err = put_frame(&c->text, a, frame_id);
	if (err)
		return err;
	c->frame_at[frame_id] = at;
	c->frame_len[frame_id] = c->text.len - at;
	return 0;
}

/* Append a stack's frame lines to out, from the cache or else frame by frame. */
static int put_stack(struct text_cache *c, struct sp_agg *a, uint32_t sid, struct sp_buf *out)
{
	if (c->stack_at[sid] == SIZE_MAX) {
		const uint32_t *fr;
		size_t depth = sp_agg_stack_frames(a, sid, &fr), total = 0;
		for (size_t k = 0; k < depth; k++) {
			int err = frame_text(c, a, fr[k]);
			if (err)
				return err;
			total += c->frame_len[fr[k]];
		}
		/* A spool whose samples are all different stacks must not hold its output twice. */
		bool keep = c->text.len + total <= STACK_CACHE_MAX;
		struct sp_buf *dst = keep ? &c->text : out;
		size_t at = dst->len;
		int err = sp_buf_reserve(dst, total);
		if (err)
			return err;
		/* Offsets, not pointers: the reserve may have moved c->text. */
		for (size_t k = 0; k < depth; k++) {
			memcpy(dst->data + dst->len, c->text.data + c->frame_at[fr[k]],
			       c->frame_len[fr[k]]);
			dst->len += c->frame_len[fr[k]];
		}
		if (!keep)
			return 0;
		c->stack_at[sid] = at;
		c->stack_len[sid] = total;
	}
	return sp_buf_append(out, c->text.data + c->stack_at[sid], c->stack_len[sid]);
}

static int thread_text(struct text_cache *c, const struct sp_spool *s, uint32_t index)
{
	const struct sp_thread *t = sp_spool_thread(s, index);
	size_t at = c->text.len;
	int err;
	if (t && t->name[0])
		err = put_raw_field(&c->text, t->name);
	else
		err = put_fmt(&c->text, ":%" PRId32, t ? t->tid : -1);
	err = err ? err : put_fmt(&c->text, " %5" PRId32 "/%-5" PRId32, t ? t->pid : -1,
				  t ? t->tid : -1);
	c->thread_at[index] = at;
	c->thread_len[index] = c->text.len - at;
	return err;
}

/* " SECONDS.MICROS" with the seconds at least 5 wide, as perf prints it. */
static int put_time(struct sp_buf *b, uint64_t ns)
{
	char tmp[32], *p = tmp + sizeof(tmp);
	uint64_t us = ns % 1000000000u / 1000u, sec = ns / 1000000000u;
	for (int i = 0; i < 6; i++, us /= 10)
		*--p = (char)('0' + us % 10);
	*--p = '.';
	int digits = 0;
	do {
		*--p = (char)('0' + sec % 10);
		sec /= 10;
		digits++;
	} while (sec);
	while (digits++ < 5)
		*--p = ' ';
	*--p = ' ';
	return sp_buf_append(b, p, (size_t)(tmp + sizeof(tmp) - p));
}

/* "COMM PID/TID" of thread t, formatted once. */
static int put_thread(struct text_cache *c, const struct sp_spool *s, uint32_t t, struct sp_buf *b)
{
	int err = 0;
	if (t >= sp_spool_thread_count(s))
		return put_fmt(b, ":-1 %5d/%-5d", -1, -1);
	if (c->thread_at[t] == SIZE_MAX)
		err = thread_text(c, s, t);
	return err ? err : sp_buf_append(b, c->text.data + c->thread_at[t], c->thread_len[t]);
}

/*
 * An off-CPU interval as the sample perf's own off-CPU profile writes
 * (perf record --off-cpu): event "offcpu-time", its period the time off CPU
 * in ns, stamped at the switch-out; its stack under a [blocked] or
 * [preempted] frame, as the other views show it (docs/DESIGN.md, decision 12).
 */
static int put_interval(struct text_cache *c, struct sp_agg *a, const struct sp_offcpu *o,
			struct sp_buf *b)
{
	int err = put_thread(c, a->spool, o->thread, b);
	err = err ? err : put_time(b, o->start_ns);
	err = err ? err : put_fmt(b, ": %10" PRIu64 " offcpu-time:\n", o->duration_ns);
	err = err ? err : put_fmt(b, "\t%16x %s ([unknown])\n", 0, sp_export_cause(o));
	uint32_t sid = o->stack_id < a->nstacks ? o->stack_id : 0;
	err = err ? err : put_stack(c, a, sid, b);
	return err ? err : put_str(b, "\n");
}

static void *alloc_offsets(size_t n)
{
	size_t *v = malloc((n ? n : 1) * sizeof(*v));
	for (size_t i = 0; v && i < n; i++)
		v[i] = SIZE_MAX;
	return v;
}

static int write_block(struct sp_buf *b, FILE *out)
{
	if (fwrite(b->data, 1, b->len, out) != b->len)
		return errno ? -errno : -EIO;
	b->len = 0;
	return 0;
}

int sp_export_perf_script(struct sp_agg *a, FILE *out)
{
	const struct sp_spool *s = a->spool;
	struct sp_sample_unit u;
	sp_sample_unit_of(s, &u);
	size_t nframes = sp_spool_frame_count(s), nthreads = sp_spool_thread_count(s);
	struct text_cache c = {
		.frame_at = alloc_offsets(nframes), .frame_len = alloc_offsets(nframes),
		.stack_at = alloc_offsets(a->nstacks), .stack_len = alloc_offsets(a->nstacks),
		.thread_at = alloc_offsets(nthreads), .thread_len = alloc_offsets(nthreads),
	};
	/*
	 * perf's "COMM PID/TID SECONDS.MICROS: PERIOD EVENT:" line, in
	 * CLOCK_MONOTONIC time; PERIOD the events a sample stands for.
	 */
	c.tail_len = (size_t)snprintf(c.tail, sizeof(c.tail), ": %10" PRIu64 " %s:\n", u.period,
				      u.event);
	struct sp_buf b;
	sp_buf_init(&c.text);
	sp_buf_init(&b);
	uint32_t *order = NULL;
	uint64_t *events = NULL; /* a time metric's samples and intervals */
	size_t n = 0;
	int err = c.frame_at && c.frame_len && c.stack_at && c.stack_len && c.thread_at &&
			  c.thread_len ? 0 : -ENOMEM;
	if (!err && a->metric != SP_METRIC_CPU)
		err = sp_export_time_events(a, &events, &n);
	else if (!err && !(err = sp_export_time_order(s, &order)))
		n = sp_spool_sample_count(s);
	/* Samples and intervals alike count against the budget: kept[1], left_out[1] intervals. */
	uint64_t budget = sp_export_output_budget(s), used = 0;
	size_t left_out[2] = {0, 0}, kept[2] = {0, 0};
	for (size_t i = 0; !err && i < n; i++) {
		bool interval = events && (events[i] & SP_EXPORT_INTERVAL);
		if (!events && !sp_agg_kept(a, order[i]))
			continue; /* filtered out */
		kept[interval]++;
		if (used + b.len >= budget) {
			left_out[interval]++;
			continue;
		}
		if (interval) {
			err = put_interval(&c, a, sp_spool_offcpu(s, (uint32_t)events[i]), &b);
		} else {
			const struct sp_sample *smp =
				sp_spool_sample(s, events ? (uint32_t)events[i] : order[i]);
			err = put_thread(&c, s, smp->thread, &b);
			err = err ? err : put_time(&b, smp->timestamp_ns);
			/*
			 * A counted event's own period (docs/DESIGN.md, decision 12); the one
			 * line of a fixed period.
			 */
			if (!err && u.weighted && sp_sample_weight(&u, smp) != u.period)
				err = put_fmt(&b, ": %10" PRIu64 " %s:\n", sp_sample_weight(&u, smp),
					      u.event);
			else
				err = err ? err : sp_buf_append(&b, c.tail, c.tail_len);
			uint32_t sid = smp->stack_id < a->nstacks ? smp->stack_id : 0;
			err = err ? err : put_stack(&c, a, sid, &b);
			err = err ? err : put_str(&b, "\n");
		}
		/* Write in blocks of about 64 KiB. */
		if (!err && b.len >= 65536) {
			used += b.len;
			err = write_block(&b, out);
		}
	}
	/* A comment, which perf script's importers pass over (lines starting with '#'). */
	if (!err && (left_out[0] || left_out[1])) {
		if (left_out[0])
			err = put_fmt(&b, "# %zu of %zu samples ", left_out[0], kept[0]);
		if (!err && left_out[1])
			err = put_fmt(&b, "%s%zu of %zu off-CPU intervals ",
				      left_out[0] ? "and " : "# ", left_out[1], kept[1]);
		err = err ? err : put_fmt(&b, "left out: output stops past %" PRIu64 " MiB ", budget >> 20);
		err = err ? err : put_str(&b, "for this spool's size (stackpulse-report(1), SECURITY)\n");
	}
	/* The rest, also when the last samples were filtered out. */
	if (!err && b.len)
		err = write_block(&b, out);
	free(order);
	free(events);
	free(c.frame_at);
	free(c.frame_len);
	free(c.stack_at);
	free(c.stack_len);
	free(c.thread_at);
	free(c.thread_len);
	sp_buf_release(&c.text);
	sp_buf_release(&b);
	return err;
}
