/* SPDX-License-Identifier: MIT */
/* Annotation as JSON: one object per function, its "lines" and "instructions" (stackpulse-annotate(1)). */
#include "report/annotate.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Append a string literal. */
#define put_lit(b, lit) sp_buf_append((b), (lit), sizeof(lit) - 1)

static int put(struct sp_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int put(struct sp_buf *b, const char *fmt, ...)
{
	char tmp[160];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -ENOMEM;
	return sp_buf_append(b, tmp, (size_t)n);
}

/* "key":STRING or "key":null. */
static int put_str(struct sp_buf *b, const char *key, const char *s)
{
	int err = put(b, "\"%s\":", key);
	if (!err)
		err = s ? sp_json_put_string(b, s) : put_lit(b, "null");
	return err;
}

/* The counts of a row: samples, share of the function and of the profile. */
static int put_counts(struct sp_buf *b, const struct sp_ann_view *v, uint64_t n)
{
	return put(b, ",\"samples\":%" PRIu64 ",\"percent\":%.2f,\"profile_percent\":%.2f", n,
		   sp_ann_pct(n, v->func->samples), sp_ann_pct(n, v->profile_samples));
}

static int put_lines(const struct sp_ann_view *v, struct sp_buf *b)
{
	const struct sp_ann_func *f = v->func;
	int err = put_lit(b, "\"lines\":[");
	bool first = true, missing;
	for (size_t i = 0; i < f->nlines && !err; i++) {
		const struct sp_ann_line *l = &f->lines[i];
		if (!l->samples)
			continue;
		const char *file = l->inl_func ? l->inl_file : l->file;
		uint32_t line = l->inl_func ? l->inl_line : l->line;
		const char *text = sp_ann_source_line(v->sources, file, line, v->comp_dir,
						      v->module_path, &missing);
		err = sp_buf_append(b, first ? "{" : ",{", first ? 1 : 2);
		first = false;
		if (!err)
			err = put_str(b, "file", file);
		if (!err)
			err = put(b, ",\"line\":%" PRIu32, line);
		if (!err)
			err = put_counts(b, v, l->samples);
		if (!err)
			err = put_lit(b, ",");
		if (!err)
			err = put_str(b, "text", text);
		if (!err)
			err = put_lit(b, ",");
		if (!err)
			err = put_str(b, "inlined_function", l->inl_func);
		if (!err && l->inl_func) {
			err = put_lit(b, ",");
			if (!err)
				err = put_str(b, "call_file", l->file);
			if (!err)
				err = put(b, ",\"call_line\":%" PRIu32, l->line);
		}
		if (!err)
			err = put_lit(b, "}");
	}
	return err ? err : put_lit(b, "]");
}

/* Digits of v in base (10 or 16) at the end of buf; returns where they start. */
static char *digits(uint64_t v, unsigned base, char *end)
{
	do {
		*--end = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	return end;
}

/*
 * Instructions are most of a large function's output (a 1 MB function has
 * about 250,000): an instruction without samples, most of them, is put
 * together without printf, a file name is escaped once for the run of
 * instructions that share it, and what is ready goes to out every 64 KiB,
 * so the output is never held whole.
 */
static int put_insns(const struct sp_ann_view *v, struct sp_buf *b, FILE *out)
{
	const struct sp_ann_listing *l = v->listing;
	struct sp_buf file;
	const char *last = NULL;
	char num[32], *end = num + sizeof(num);
	sp_buf_init(&file);
	int err = put_lit(b, "\"instructions\":[");
	for (size_t i = 0; l && i < l->n && !err; i++) {
		const struct sp_ann_insn *in = &l->insns[i];
		uint64_t n = v->insn_samples[i];
		if (n) {
			err = put(b, "%s{\"address\":\"0x%" PRIx64 "\",\"samples\":%" PRIu64
				  ",\"percent\":%.2f,\"profile_percent\":%.2f,\"text\":",
				  i ? "," : "", in->addr, n, sp_ann_pct(n, v->func->samples),
				  sp_ann_pct(n, v->profile_samples));
		} else {
			char *p = digits(in->addr, 16, end);
			err = i ? put_lit(b, ",{\"address\":\"0x") : put_lit(b, "{\"address\":\"0x");
			if (!err)
				err = sp_buf_append(b, p, (size_t)(end - p));
			if (!err)
				err = put_lit(b, "\",\"samples\":0,\"percent\":0.00,"
						 "\"profile_percent\":0.00,\"text\":");
		}
		if (!err)
			err = sp_json_put_string(b, l->text + in->text);
		if (!err && v->insn_target[i]) {
			err = put_lit(b, ",\"target\":");
			if (!err)
				err = sp_json_put_string(b, v->insn_target[i]);
		}
		if (!err && (v->insn_file[i] != last || !i)) {
			last = v->insn_file[i];
			file.len = 0;
			err = last ? sp_json_put_string(&file, last) : put_lit(&file, "null");
		}
		if (!err)
			err = put_lit(b, ",\"file\":");
		if (!err)
			err = sp_buf_append(b, file.data, file.len);
		if (!err)
			err = put_lit(b, ",\"line\":");
		char *p = digits(v->insn_line[i], 10, end);
		if (!err)
			err = sp_buf_append(b, p, (size_t)(end - p));
		if (!err)
			err = put_lit(b, "}");
		if (!err && b->len >= (64u << 10)) {
			err = fwrite(b->data, 1, b->len, out) == b->len ? 0 : -EIO;
			b->len = 0;
		}
	}
	sp_buf_release(&file);
	return err ? err : put_lit(b, "]");
}

int sp_ann_write_json(const struct sp_ann_view *v, struct sp_buf *b, FILE *out)
{
	const struct sp_ann_func *f = v->func;
	int err = put_lit(b, "{");
	if (!err)
		err = put_str(b, "name", f->name);
	if (!err)
		err = put_lit(b, ",");
	if (!err)
		err = put_str(b, "module", f->module);
	if (!err)
		err = put(b, ",\"samples\":%" PRIu64 ",\"profile_percent\":%.2f,", f->samples,
			  sp_ann_pct(f->samples, v->profile_samples));
	if (!err)
		err = put_str(b, "module_file", v->module_path);
	if (!err)
		err = put_lit(b, ",");
	if (!err)
		err = put_str(b, "disassembly_error", v->unreadable);
	if (!err && v->code && !v->unreadable)
		err = put(b, ",\"start\":\"0x%" PRIx64 "\",\"end\":\"0x%" PRIx64 "\"", v->code->start,
			  v->code->end);
	if (!err)
		err = put(b, ",\"unplaced_samples\":%" PRIu64 ",", v->unplaced);
	if (!err)
		err = put_lines(v, b);
	if (!err)
		err = put_lit(b, ",");
	if (!err)
		err = put_insns(v, b, out);
	if (!err)
		err = put_lit(b, "}");
	if (!err && fwrite(b->data, 1, b->len, out) != b->len)
		err = -EIO;
	b->len = 0;
	return err;
}
