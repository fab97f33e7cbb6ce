/* SPDX-License-Identifier: MIT */
/* report --by=line: the flat table of self samples by source line, across functions. */
#include "report/annotate.h"
#include "report/views.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_ROWS 25
#define LINE_MIN 24

/* One row: a source line (or a function without one) and the functions its samples ran in. */
struct line_row {
	const struct sp_agg_func *first; /* the function with the most self samples on it */
	uint64_t self;
	size_t nfuncs;
};

static int cmp_str(const char *x, const char *y)
{
	if (!x || !y)
		return (x != NULL) - (y != NULL);
	return strcmp(x, y);
}

/* The row key: file and line when known, else the function itself. */
static int by_key(const void *pa, const void *pb)
{
	const struct sp_agg_func *x = *(const struct sp_agg_func *const *)pa;
	const struct sp_agg_func *y = *(const struct sp_agg_func *const *)pb;
	bool xl = x->file && x->line, yl = y->file && y->line;
	if (xl != yl)
		return xl ? -1 : 1;
	int c = xl ? cmp_str(x->file, y->file) : cmp_str(x->name, y->name);
	if (!c)
		c = xl ? (x->line > y->line) - (x->line < y->line) : cmp_str(x->module, y->module);
	return c;
}

static int by_self(const void *pa, const void *pb)
{
	const struct line_row *x = pa, *y = pb;
	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	return by_key(&x->first, &y->first);
}

/* "file:line" (its basename), or the function's name for code without a line. */
static const char *row_label(const struct line_row *r, char *buf, size_t cap)
{
	const struct sp_agg_func *f = r->first;
	if (!f->file || !f->line)
		return "(no line)";
	const char *base = strrchr(f->file, '/');
	snprintf(buf, cap, "%s:%" PRIu32, base ? base + 1 : f->file, f->line);
	return buf;
}

static int write_rows(const struct sp_agg *a, const struct sp_report_opts *opts,
		      struct line_row *rows, size_t n, FILE *out)
{
	size_t max = opts->max_rows ? opts->max_rows : DEFAULT_ROWS, shown = 0;
	double limit = sp_text_limit(opts);
	size_t width = sp_text_width(opts), lw = strlen("Source line");
	char buf[4096];
	for (size_t i = 0; i < n && i < max; i++) {
		size_t w = strlen(row_label(&rows[i], buf, sizeof(buf)));
		lw = w > lw ? w : lw;
	}
	size_t room = (width - 20) / 2;
	lw = lw > room ? room : lw < LINE_MIN ? LINE_MIN : lw;
	size_t fw = width - 20 - lw - 2;
	fprintf(out, "\n  Self%% %s  %-*s  Function (module)\n", SP_COUNT_HEADING(a), (int)lw,
		"Source line");
	for (size_t i = 0; i < n && shown < max; i++) {
		const struct line_row *r = &rows[i];
		if (!r->self || (limit > 0 && sp_text_pct(r->self, a->whole) < limit))
			continue;
		fprintf(out, "%6.1f%% %9" PRIu64 "  ", sp_text_pct(r->self, a->whole), r->self);
		sp_text_put_cell(out, row_label(r, buf, sizeof(buf)), lw, true);
		fputs("  ", out);
		char *cell = NULL;
		if (asprintf(&cell, "%s%s (%s)%s", r->first->name, r->first->is_inline ? " [inline]" : "",
			     r->first->module, r->nfuncs > 1 ? " +more" : "") < 0)
			return -ENOMEM;
		sp_text_put_cell(out, cell, fw, false);
		free(cell);
		fputc('\n', out);
		shown++;
	}
	size_t rest = 0;
	for (size_t i = 0; i < n; i++)
		rest += rows[i].self > 0;
	if (rest > shown)
		fprintf(out, "(%zu more line%s not shown)\n", rest - shown, rest - shown == 1 ? "" : "s");
	return 0;
}

int sp_report_lines(struct sp_agg *a, const struct sp_report_opts *opts, FILE *out)
{
	sp_text_header(a, opts, out);
	if (!a->samples) {
		fprintf(out, "\nNo samples.\n");
		return 0;
	}
	const struct sp_agg_func **funcs = malloc((a->nfuncs ? a->nfuncs : 1) * sizeof(*funcs));
	struct line_row *rows = calloc(a->nfuncs ? a->nfuncs : 1, sizeof(*rows));
	int err = funcs && rows ? 0 : -ENOMEM;
	size_t n = 0;
	for (size_t i = 0; !err && i < a->nfuncs; i++)
		funcs[i] = &a->funcs[i];
	if (!err && a->nfuncs)
		qsort(funcs, a->nfuncs, sizeof(*funcs), by_key);
	for (size_t i = 0; !err && i < a->nfuncs; i++) {
		if (!n || by_key(&rows[n - 1].first, &funcs[i]))
			rows[n++] = (struct line_row){.first = funcs[i]};
		struct line_row *r = &rows[n - 1];
		r->self += funcs[i]->self;
		r->nfuncs += funcs[i]->self > 0;
		if (funcs[i]->self > r->first->self)
			r->first = funcs[i];
	}
	if (!err && n)
		qsort(rows, n, sizeof(*rows), by_self);
	if (!err)
		err = write_rows(a, opts, rows, n, out);
	free(funcs);
	free(rows);
	return err;
}
