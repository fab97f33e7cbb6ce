/* SPDX-License-Identifier: MIT */
/* Cells of the text views: percentages, function names with their marks, the flat table's order. */
#include "report/views.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

double sp_text_pct(uint64_t part, uint64_t whole)
{
	if (!whole)
		return 0.0;
	return part >= whole ? 100.0 : 100.0 * (double)part / (double)whole;
}

#define pct sp_text_pct

int sp_text_name_cmp(const struct sp_agg_func *x, const struct sp_agg_func *y)
{
	int c = strcmp(x->name, y->name);
	if (!c)
		c = strcmp(x->module, y->module);
	if (!c && x->is_inline != y->is_inline)
		c = x->is_inline ? 1 : -1;
	if (!c)
		c = strcmp(x->file ? x->file : "", y->file ? y->file : "");
	if (!c && x->line != y->line)
		c = x->line < y->line ? -1 : 1;
	return c;
}

#define name_cmp sp_text_name_cmp

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s && s[1] ? s + 1 : p;
}

/* What follows a function's name: " [inline]", and with lines " (file.c:12)". */
static size_t func_suffix(const struct sp_agg_func *f, char *buf, size_t cap)
{
	int n = snprintf(buf, cap, "%s", f->is_inline ? " [inline]" : "");
	if (f->file && f->line)
		n += snprintf(buf + n, cap - (size_t)n, " (%s:%" PRIu32 ")", base_name(f->file),
			      f->line);
	return (size_t)n < cap ? (size_t)n : cap - 1;
}

#define SUFFIX_MAX 128

size_t sp_text_func_width(const struct sp_agg_func *f)
{
	char suffix[SUFFIX_MAX];
	return strlen(f->name) + func_suffix(f, suffix, sizeof(suffix));
}

int sp_text_func_cmp(const struct sp_agg *a, uint32_t x_id, uint32_t y_id, uint32_t sort)
{
	const struct sp_agg_func *x = &a->funcs[x_id], *y = &a->funcs[y_id];
	uint64_t x1 = x->self, y1 = y->self, x2 = x->total, y2 = y->total;
	if (sort == SP_SORT_TOTAL) {
		x1 = x->total, y1 = y->total, x2 = x->self, y2 = y->self;
	} else if (sort == SP_SORT_NAME) {
		x1 = y1 = x2 = y2 = 0;
	}
	if (x1 != y1)
		return x1 < y1 ? 1 : -1;
	if (x2 != y2)
		return x2 < y2 ? 1 : -1;
	return name_cmp(x, y);
}

struct func_sort {
	const struct sp_agg *agg;
	uint32_t sort;
};

static int by_key(const void *pa, const void *pb, void *ctx)
{
	const struct func_sort *c = ctx;
	return sp_text_func_cmp(c->agg, *(const uint32_t *)pa, *(const uint32_t *)pb, c->sort);
}

/* Print s in a column of width w, cutting long text with "..." so lines stay in bounds. */
void sp_text_put_cell(FILE *out, const char *s, size_t w, bool pad)
{
	size_t n = strlen(s);
	if (n > w && w > 3)
		fprintf(out, "%.*s...", (int)(w - 3), s);
	else if (pad)
		fprintf(out, "%-*s", (int)w, s);
	else
		fputs(s, out);
}

#define put_cell sp_text_put_cell

/* A function in a column of width w: a long name is cut before its suffix, which stays. */
void sp_text_put_func(FILE *out, const struct sp_agg_func *f, size_t w, bool pad)
{
	char suffix[SUFFIX_MAX];
	size_t k = func_suffix(f, suffix, sizeof(suffix)), n = strlen(f->name);
	if (n + k <= w || w < k + 4) {
		char label[512];
		snprintf(label, sizeof(label), "%s%s", f->name, suffix);
		put_cell(out, n + k < sizeof(label) ? label : f->name, w, pad);
		return;
	}
	fprintf(out, "%.*s...%s", (int)(w - k - 3), f->name, suffix);
}


int sp_text_func_order(const struct sp_agg *a, const struct sp_report_opts *opts,
		       uint32_t **order_out, size_t *shown_out)
{
	uint32_t *order = malloc((a->nfuncs ? a->nfuncs : 1) * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < a->nfuncs; i++)
		order[i] = (uint32_t)i;
	struct func_sort ctx = {.agg = a, .sort = opts->sort};
	qsort_r(order, a->nfuncs, sizeof(*order), by_key, &ctx);
	/* --percent-limit: the share the table is sorted by (total when by name). */
	size_t shown = 0;
	double limit = sp_text_limit(opts);
	for (size_t i = 0; i < a->nfuncs; i++) {
		const struct sp_agg_func *f = &a->funcs[order[i]];
		uint64_t key = opts->sort == SP_SORT_SELF ? f->self : f->total;
		if (!f->total || pct(key, a->whole) < limit)
			continue;
		order[shown++] = order[i];
	}
	*order_out = order;
	*shown_out = shown;
	return 0;
}
