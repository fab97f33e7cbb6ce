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
	/* Most have none: each row asks, so no snprintf for the mark alone. */
	static const char mark[] = " [inline]";
	int n = f->is_inline && cap >= sizeof(mark) ? (int)sizeof(mark) - 1 : 0;
	memcpy(buf, mark, (size_t)n);
	buf[n] = '\0';
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

/*
 * The start of the escape \xHH holding s[i] (names are escaped: every
 * backslash begins one, the backslash itself being \x5c), else i; never
 * before lo.  A cut there keeps the escape whole or drops it whole: cut
 * inside, "\x5c" would leave a lone backslash before the "...".
 */
static size_t escape_start(const char *s, size_t i, size_t lo)
{
	for (size_t j = i; j > lo && i - j < 3; j--)
		if (s[j - 1] == '\\' && s[j] == 'x')
			return j - 1;
	return i;
}

/*
 * Back from i to the start of the UTF-8 character or the escape holding
 * s[i] (never past lo).
 */
static size_t char_start(const char *s, size_t i, size_t lo)
{
	while (i > lo && ((unsigned char)s[i] & 0xc0) == 0x80)
		i--;
	return escape_start(s, i, lo);
}

size_t sp_text_cut(char *buf, size_t cap, const char *s, size_t w, size_t diff_at)
{
	size_t n = strlen(s), head, tail_from;
	if (!cap)
		return 0;
	if (n <= w || w < 5) {
		size_t k = n < w || w < 5 ? n : w;
		k = k < cap ? k : cap - 1;
		memcpy(buf, s, k);
		buf[k] = '\0';
		return k;
	}
	if (diff_at < n && diff_at >= (w - 3 + 1) / 2 && n - diff_at > (w - 3) / 2) {
		/*
		 * What tells s from a neighbour lies in the part a middle cut
		 * drops: keep its end from there when it fits, else a window
		 * around it between two cuts.
		 */
		if (n - diff_at <= w - 3 || w < 7) { /* two cuts need room for one character */
			head = 0;
			tail_from = n - (w - 3);
		} else {
			size_t room = w - 6, from = diff_at > room / 2 ? diff_at - room / 2 : 0;
			from = char_start(s, from, 0);
			size_t to = char_start(s, from + room, from);
			int k = snprintf(buf, cap, "...%.*s...", (int)(to - from), s + from);
			return k < 0 ? 0 : (size_t)k < cap ? (size_t)k : cap - 1;
		}
	} else {
		/* Both ends stay: a name's start says where it lives, its end which one it is. */
		head = (w - 3 + 1) / 2;
		tail_from = n - (w - 3 - head);
	}
	head = char_start(s, head, 0);
	while (tail_from < n && ((unsigned char)s[tail_from] & 0xc0) == 0x80)
		tail_from++;
	/* Inside an escape: on past its end. */
	size_t e = escape_start(s, tail_from, 0);
	if (e < tail_from)
		tail_from = e + 4 < n ? e + 4 : n;
	int k = snprintf(buf, cap, "%.*s...%s", (int)head, s, s + tail_from);
	return k < 0 ? 0 : (size_t)k < cap ? (size_t)k : cap - 1;
}

/* Print s in a column of width w, cut in the middle with "..." so lines stay in bounds. */
void sp_text_put_cell(FILE *out, const char *s, size_t w, bool pad)
{
	char buf[1024];
	if (strlen(s) > w && w > 3 && w < sizeof(buf)) {
		sp_text_cut(buf, sizeof(buf), s, w, SIZE_MAX);
		if (pad)
			fprintf(out, "%-*s", (int)w, buf);
		else
			fputs(buf, out);
	} else if (pad) {
		fprintf(out, "%-*s", (int)w, s);
	} else {
		fputs(s, out);
	}
}

#define put_cell sp_text_put_cell

void sp_text_put_func_at(FILE *out, const struct sp_agg_func *f, size_t w, bool pad,
			 size_t diff_at)
{
	char suffix[SUFFIX_MAX], buf[1024];
	size_t k = func_suffix(f, suffix, sizeof(suffix)), n = strlen(f->name);
	if (n + k <= w || w < k + 5 || w >= sizeof(buf)) {
		char label[512];
		snprintf(label, sizeof(label), "%s%s", f->name, suffix);
		put_cell(out, n + k < sizeof(label) ? label : f->name, w, pad);
		return;
	}
	/* A long name is cut, its marks stay. */
	size_t len = sp_text_cut(buf, sizeof(buf), f->name, w - k, diff_at);
	fprintf(out, "%s%s", buf, suffix);
	if (pad && len + k < w)
		fprintf(out, "%*s", (int)(w - len - k), "");
}

void sp_text_put_func(FILE *out, const struct sp_agg_func *f, size_t w, bool pad)
{
	sp_text_put_func_at(out, f, w, pad, SIZE_MAX);
}

/* Bytes the names a and b share from the start. */
static size_t common_prefix(const char *a, const char *b)
{
	size_t i = 0;
	while (a[i] && a[i] == b[i])
		i++;
	return i;
}

struct label_row {
	const char *label; /* the row's cut name, as the default cut prints it */
	size_t row;
};

static int by_label(const void *pa, const void *pb)
{
	const struct label_row *a = pa, *b = pb;
	int c = strcmp(a->label, b->label);
	return c ? c : a->row < b->row ? -1 : a->row > b->row;
}

int sp_text_name_diffs(const struct sp_agg *a, const uint32_t *rows, size_t n, size_t w,
		       size_t **diff_out)
{
	size_t *widths = malloc((n ? n : 1) * sizeof(*widths));
	const struct sp_agg_func **funcs = malloc((n ? n : 1) * sizeof(*funcs));
	int err = widths && funcs ? 0 : -ENOMEM;
	for (size_t i = 0; i < n && !err; i++) {
		widths[i] = w;
		funcs[i] = &a->funcs[rows[i]];
	}
	if (!err)
		err = sp_text_name_diffs_each(funcs, widths, n, diff_out);
	free(widths);
	free(funcs);
	return err;
}

int sp_text_name_diffs_each(const struct sp_agg_func *const *funcs, const size_t *widths, size_t n,
			    size_t **diff_out)
{
	size_t w = 0;
	for (size_t i = 0; i < n; i++)
		w = widths[i] > w ? widths[i] : w;
	size_t *diff = malloc((n ? n : 1) * sizeof(*diff));
	struct label_row *lr = malloc((n ? n : 1) * sizeof(*lr));
	char *labels = w <= SIZE_MAX / (n ? n : 1) - 1 ? malloc((n ? n : 1) * (w + 1)) : NULL;
	if (!diff || !lr || !labels) {
		free(diff);
		free(lr);
		free(labels);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		/* The label as sp_text_put_func prints it: the name cut, its marks whole. */
		const struct sp_agg_func *f = funcs[i];
		size_t wi = widths[i];
		char suffix[SUFFIX_MAX], *l = labels + i * (w + 1);
		size_t k = func_suffix(f, suffix, sizeof(suffix));
		size_t len = wi >= k + 5 ? sp_text_cut(l, wi + 1, f->name, wi - k, SIZE_MAX)
					 : sp_text_cut(l, wi + 1, f->name, wi, SIZE_MAX);
		if (wi >= k + 5 && len + k <= wi)
			memcpy(l + len, suffix, k + 1);
		diff[i] = SIZE_MAX;
		lr[i] = (struct label_row){l, i};
	}
	qsort(lr, n, sizeof(*lr), by_label);
	/* Rows whose different names cut alike: each keeps where it parts from the others. */
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		while (j < n && !strcmp(lr[j].label, lr[i].label))
			j++;
		for (size_t x = i; x < j && j - i > 1; x++)
			for (size_t y = i; y < j; y++) {
				const char *p = funcs[lr[x].row]->name;
				const char *q = funcs[lr[y].row]->name;
				if (x == y || !strcmp(p, q))
					continue;
				size_t d = common_prefix(p, q);
				size_t *dx = &diff[lr[x].row];
				*dx = *dx == SIZE_MAX || d > *dx ? d : *dx;
			}
		i = j;
	}
	free(lr);
	free(labels);
	*diff_out = diff;
	return 0;
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
