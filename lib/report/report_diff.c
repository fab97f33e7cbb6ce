/* SPDX-License-Identifier: MIT */
/* report --diff: how each function's self and total shares changed from a base spool. */
#include "report/views.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_ROWS 25
#define LEFT_COLUMNS 51 /* six share columns */
#define MODULE_MAX 14
#define NAME_MIN 16

/* One function of either spool: the two aggregations' ids (SP_AGG_NO_FUNC where absent). */
struct row {
	uint32_t base, cur;
	double self[2], total[2]; /* shares, base then current */
};

struct diff {
	const struct sp_agg *base, *cur;
	uint32_t sort;
};

static double mag(double x)
{
	return x < 0 ? -x : x;
}

static const struct sp_agg_func *row_func(const struct diff *d, const struct row *r)
{
	return r->cur != SP_AGG_NO_FUNC ? &d->cur->funcs[r->cur] : &d->base->funcs[r->base];
}

static int by_name(const void *pa, const void *pb, void *ctx)
{
	const struct sp_agg *a = ctx;
	return sp_text_name_cmp(&a->funcs[*(const uint32_t *)pa], &a->funcs[*(const uint32_t *)pb]);
}

static int by_change(const void *pa, const void *pb, void *ctx)
{
	const struct diff *d = ctx;
	const struct row *x = pa, *y = pb;
	double x1 = mag(x->self[1] - x->self[0]), y1 = mag(y->self[1] - y->self[0]);
	double x2 = mag(x->total[1] - x->total[0]), y2 = mag(y->total[1] - y->total[0]);
	if (d->sort == SP_SORT_TOTAL) {
		double t = x1;
		x1 = x2, x2 = t, t = y1, y1 = y2, y2 = t;
	}
	if (d->sort != SP_SORT_NAME) {
		if (x1 != y1)
			return x1 < y1 ? 1 : -1;
		if (x2 != y2)
			return x2 < y2 ? 1 : -1;
	}
	return sp_text_name_cmp(row_func(d, x), row_func(d, y));
}

static uint32_t *sorted_ids(const struct sp_agg *a)
{
	uint32_t *ids = malloc((a->nfuncs ? a->nfuncs : 1) * sizeof(*ids));
	if (!ids)
		return NULL;
	for (size_t i = 0; i < a->nfuncs; i++)
		ids[i] = (uint32_t)i;
	qsort_r(ids, a->nfuncs, sizeof(*ids), by_name, (void *)a);
	return ids;
}

/* Both function lists merged by identity (name, module, inline, line). */
static int merge(const struct diff *d, struct row **out, size_t *nrows)
{
	const struct sp_agg *b = d->base, *c = d->cur;
	uint32_t *bi = sorted_ids(b), *ci = sorted_ids(c);
	struct row *rows = malloc((b->nfuncs + c->nfuncs + 1) * sizeof(*rows));
	if (!bi || !ci || !rows) {
		free(bi);
		free(ci);
		free(rows);
		return -ENOMEM;
	}
	size_t i = 0, j = 0, n = 0;
	while (i < b->nfuncs || j < c->nfuncs) {
		int cmp = i == b->nfuncs ? 1 : j == c->nfuncs ? -1
			  : sp_text_name_cmp(&b->funcs[bi[i]], &c->funcs[ci[j]]);
		struct row r = {.base = cmp <= 0 ? bi[i++] : SP_AGG_NO_FUNC,
				.cur = cmp >= 0 ? ci[j++] : SP_AGG_NO_FUNC};
		if (r.base != SP_AGG_NO_FUNC) {
			r.self[0] = sp_text_pct(b->funcs[r.base].self, b->whole);
			r.total[0] = sp_text_pct(b->funcs[r.base].total, b->whole);
		}
		if (r.cur != SP_AGG_NO_FUNC) {
			r.self[1] = sp_text_pct(c->funcs[r.cur].self, c->whole);
			r.total[1] = sp_text_pct(c->funcs[r.cur].total, c->whole);
		}
		rows[n++] = r;
	}
	free(bi);
	free(ci);
	*out = rows;
	*nrows = n;
	return 0;
}

/* A row's name and module widths ("module+0xOFFSET" names its module: mw 0, the room is the name's). */
static void row_widths(const struct sp_agg_func *f, size_t width, size_t *room, size_t *mw)
{
	size_t avail = width > LEFT_COLUMNS + NAME_MIN ? width - LEFT_COLUMNS : NAME_MIN;
	size_t ml = strlen(f->module);
	if (!ml || (!strncmp(f->name, f->module, ml) && f->name[ml] == '+')) {
		*room = avail;
		*mw = 0;
		return;
	}
	*mw = ml < MODULE_MAX ? ml : MODULE_MAX;
	if (avail < NAME_MIN + 3 + *mw)
		*mw = avail >= NAME_MIN + 3 + 6 ? avail - NAME_MIN - 3 : 6;
	*room = avail > *mw + 3 + NAME_MIN ? avail - *mw - 3 : NAME_MIN;
}

/* Is row i listed (over the limit), and shown (within max_rows of the listed)? */
static bool row_listed(const struct diff *d, const struct row *r, double limit)
{
	double key = d->sort == SP_SORT_TOTAL ? r->total[1] - r->total[0] : r->self[1] - r->self[0];
	if (d->sort == SP_SORT_NAME)
		key = mag(key) > mag(r->total[1] - r->total[0]) ? key : r->total[1] - r->total[0];
	return mag(key) >= limit;
}

static int write_table(const struct diff *d, struct row *rows, size_t n,
		       const struct sp_report_opts *opts, FILE *out)
{
	uint32_t max_rows = opts->max_rows ? opts->max_rows : DEFAULT_ROWS;
	double limit = opts->percent_limit > 0 ? opts->percent_limit : 0;
	size_t width = opts->width >= SP_TEXT_MIN_COLUMNS ? opts->width : SP_TEXT_COLUMNS;
	size_t shown = 0, listed = 0, nshow = 0, *diff = NULL;
	/* The rows shown, and where their names part from another's cut alike. */
	const struct sp_agg_func **funcs = malloc((n ? n : 1) * sizeof(*funcs));
	size_t *widths = malloc((n ? n : 1) * sizeof(*widths)), mw;
	int err = funcs && widths ? 0 : -ENOMEM;
	for (size_t i = 0; i < n && !err && nshow < max_rows; i++)
		if (row_listed(d, &rows[i], limit)) {
			funcs[nshow] = row_func(d, &rows[i]);
			row_widths(funcs[nshow], width, &widths[nshow], &mw);
			nshow++;
		}
	if (!err)
		err = sp_text_name_diffs_each(funcs, widths, nshow, &diff);
	free(funcs);
	free(widths);
	if (err)
		return err;
	fprintf(out, "\n  Self%% (base, new, change)  Total%% (base, new, change)\n"
		     "   Base     New  Change     Base     New  Change  Function (module)\n");
	for (size_t i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		if (!row_listed(d, r, limit))
			continue;
		if (listed++ >= max_rows)
			continue;
		fprintf(out, "%6.1f%% %6.1f%% %+6.1f%%  %6.1f%% %6.1f%% %+6.1f%%  ", r->self[0],
			r->self[1], r->self[1] - r->self[0], r->total[0], r->total[1],
			r->total[1] - r->total[0]);
		const struct sp_agg_func *f = row_func(d, r);
		size_t room;
		row_widths(f, width, &room, &mw);
		sp_text_put_func_at(out, f, room, false, diff[shown]);
		if (mw) {
			fputs(" (", out);
			sp_text_put_cell(out, f->module, mw, false);
			fputs(")", out);
		}
		fputs("\n", out);
		shown++;
	}
	free(diff);
	if (listed > shown)
		fprintf(out, "(%zu more function%s not shown)\n", listed - shown,
			listed - shown == 1 ? "" : "s");
	if (!n)
		fprintf(out, "  (no functions in either spool)\n");
	return 0;
}

static void write_side(const char *label, const char *path, const struct sp_agg *a, FILE *out)
{
	/* A time metric or a counted event's events: the amount, then the samples (decision 12). */
	if (a->metric != SP_METRIC_CPU || a->unit.weighted) {
		char amount[48];
		sp_agg_format_amount(a, a->samples, amount, sizeof(amount));
		fprintf(out, "%-12s%s: %s (%" PRIu64 " of %" PRIu64 " samples)\n", label,
			path ? path : "(buffer)", amount, a->nsampled, a->all_samples);
		return;
	}
	fprintf(out, "%-12s%s: %" PRIu64, label, path ? path : "(buffer)", a->samples);
	if (a->samples != a->all_samples)
		fprintf(out, " of %" PRIu64, a->all_samples);
	fprintf(out, " samples%s\n", a->samples != a->all_samples ? " kept" : "");
}

int sp_report_diff(const struct sp_spool *base, struct sp_symbolizer *base_sym,
		   const char *base_path, const struct sp_spool *s, struct sp_symbolizer *sym,
		   const struct sp_report_opts *opts, FILE *out)
{
	if (!base || !s || !opts || !out)
		return -SP_E_BAD_ARG;
	struct sp_symbolizer *own[2] = {NULL, NULL};
	struct sp_agg b, c;
	struct row *rows = NULL;
	size_t n = 0;
	bool built_b = false, built_c = false;
	int err = 0;
	if (!base_sym && !(err = sp_symbolizer_new(base, NULL, &own[0])))
		base_sym = own[0];
	if (!err && !sym && !(err = sp_symbolizer_new(s, NULL, &own[1])))
		sym = own[1];
	if (!err) {
		err = sp_agg_build(&b, base, base_sym, opts);
		built_b = true;
	}
	if (!err) {
		err = sp_agg_build(&c, s, sym, opts);
		built_c = true;
	}
	struct diff d = {.base = &b, .cur = &c, .sort = opts->sort};
	if (!err)
		err = merge(&d, &rows, &n);
	if (!err) {
		qsort_r(rows, n, sizeof(*rows), by_change, &d);
		fputs("Change in each function's share of the samples, from base to new\n", out);
		write_side("Base:", base_path, &b, out);
		write_side("New:", opts->spool_path, &c, out);
		sp_text_filters(&c, opts, out);
		err = write_table(&d, rows, n, opts, out);
	}
	free(rows);
	if (built_b)
		sp_agg_release(&b);
	if (built_c)
		sp_agg_release(&c);
	sp_symbolizer_free(own[0]);
	sp_symbolizer_free(own[1]);
	if (!err && fflush(out))
		err = errno ? -errno : -EIO;
	else if (!err && ferror(out))
		err = -EIO;
	return err;
}
