/* SPDX-License-Identifier: MIT */
/* report --diff: how each function's self and total changed from a base spool, and the gate. */
#include "report/diff.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_ROWS 25
#define LEFT_COLUMNS 45 /* base, new, ratio, points; the other measure's ratio */
#define COUNT_COLUMNS 16 /* with -n: both sample counts */
#define MODULE_MAX 14
#define NAME_MIN 16

static double mag(double x)
{
	return x < 0 ? -x : x;
}

/* Identity across spools: by name and module, or by name alone when the builds differ. */
static int ident_cmp(const struct sp_diff *d, const struct sp_agg_func *x,
		     const struct sp_agg_func *y)
{
	if (!d->by_name)
		return sp_text_name_cmp(x, y);
	struct sp_agg_func a = *x, b = *y;
	a.module = b.module = "";
	return sp_text_name_cmp(&a, &b);
}

struct sort_ctx {
	const struct sp_diff *d;
	const struct sp_agg *a;
};

static int by_ident(const void *pa, const void *pb, void *ctx)
{
	const struct sort_ctx *c = ctx;
	return ident_cmp(c->d, &c->a->funcs[*(const uint32_t *)pa],
			 &c->a->funcs[*(const uint32_t *)pb]);
}

static int by_change(const void *pa, const void *pb, void *ctx)
{
	const struct sp_diff *d = ctx;
	const struct sp_diff_row *x = pa, *y = pb;
	if (x->regressed != y->regressed)
		return x->regressed ? -1 : 1;
	const struct sp_diff_measure *kx = sp_diff_key(d, x), *ky = sp_diff_key(d, y);
	const struct sp_diff_measure *ox = kx == &x->self ? &x->total : &x->self;
	const struct sp_diff_measure *oy = ky == &y->self ? &y->total : &y->self;
	double x1 = mag(kx->cur - kx->base), y1 = mag(ky->cur - ky->base);
	double x2 = mag(ox->cur - ox->base), y2 = mag(oy->cur - oy->base);
	if (d->key != SP_SORT_NAME + 1) {
		if (x1 != y1)
			return x1 < y1 ? 1 : -1;
		if (x2 != y2)
			return x2 < y2 ? 1 : -1;
	}
	return sp_text_name_cmp(sp_diff_row_func(d, x), sp_diff_row_func(d, y));
}

static uint32_t *sorted_ids(const struct sp_diff *d, const struct sp_agg *a)
{
	uint32_t *ids = malloc((a->nfuncs ? a->nfuncs : 1) * sizeof(*ids));
	if (!ids)
		return NULL;
	for (size_t i = 0; i < a->nfuncs; i++)
		ids[i] = (uint32_t)i;
	struct sort_ctx c = {d, a};
	qsort_r(ids, a->nfuncs, sizeof(*ids), by_ident, &c);
	return ids;
}

/* One side of a measure from the aggregated value v of side s. */
static void measure_side(const struct sp_diff *d, int side, uint64_t v, double *val, double *n,
			 double *pct)
{
	const struct sp_diff_side *s = &d->side[side];
	*n = (double)v * s->scale / s->per_sample;
	*pct = s->whole > 0 ? 100.0 * (double)v / s->whole : 0;
	if (*pct > 100)
		*pct = 100;
	*val = d->shares ? *pct : (double)v * s->scale;
}

static void fill_row(const struct sp_diff *d, struct sp_diff_row *r)
{
	const struct sp_agg *b = d->side[0].a, *c = d->side[1].a;
	struct sp_diff_measure *m[2] = {&r->self, &r->total};
	for (int k = 0; k < 2; k++) {
		*m[k] = (struct sp_diff_measure){0};
		if (r->base != SP_AGG_NO_FUNC)
			measure_side(d, 0, k ? b->funcs[r->base].total : b->funcs[r->base].self,
				     &m[k]->base, &m[k]->base_n, &m[k]->base_pct);
		if (r->cur != SP_AGG_NO_FUNC)
			measure_side(d, 1, k ? c->funcs[r->cur].total : c->funcs[r->cur].self,
				     &m[k]->cur, &m[k]->cur_n, &m[k]->cur_pct);
		sp_diff_interval(m[k], d->side[0].whole * d->side[0].scale / d->side[0].per_sample,
				 d->side[1].whole * d->side[1].scale / d->side[1].per_sample,
				 d->shares);
	}
}

/*
 * Both function lists merged by identity.  Matched by name alone, a name
 * met twice on one side (two modules) pairs in order; the rest stand alone.
 */
static int merge(struct sp_diff *d)
{
	const struct sp_agg *b = d->side[0].a, *c = d->side[1].a;
	uint32_t *bi = sorted_ids(d, b), *ci = sorted_ids(d, c);
	struct sp_diff_row *rows = malloc((b->nfuncs + c->nfuncs + 1) * sizeof(*rows));
	if (!bi || !ci || !rows) {
		free(bi);
		free(ci);
		free(rows);
		return -ENOMEM;
	}
	size_t i = 0, j = 0, n = 0;
	while (i < b->nfuncs || j < c->nfuncs) {
		int cmp = i == b->nfuncs ? 1 : j == c->nfuncs ? -1
			  : ident_cmp(d, &b->funcs[bi[i]], &c->funcs[ci[j]]);
		struct sp_diff_row r = {.base = cmp <= 0 ? bi[i++] : SP_AGG_NO_FUNC,
					.cur = cmp >= 0 ? ci[j++] : SP_AGG_NO_FUNC};
		fill_row(d, &r);
		rows[n++] = r;
	}
	free(bi);
	free(ci);
	d->rows = rows;
	d->nrows = n;
	return 0;
}

static int by_alone_name(const void *pa, const void *pb, void *ctx)
{
	const struct sp_diff *d = ctx;
	const struct sp_diff_row *x = pa, *y = pb;
	bool xb = x->cur == SP_AGG_NO_FUNC, yb = y->cur == SP_AGG_NO_FUNC;
	if (xb != yb)
		return xb ? -1 : 1;
	struct sp_agg_func a = *sp_diff_row_func(d, x), b = *sp_diff_row_func(d, y);
	a.module = b.module = "";
	return sp_text_name_cmp(&a, &b);
}

/*
 * Rows still alone after matching by name and module: a base function and a
 * new one of the same name (inline mark, line) pair, each name once on
 * either side, so a renamed binary (suite_before, suite_after) diffs per
 * function while a name in two libraries of one side stays apart.
 */
static void pair_alone(struct sp_diff *d)
{
	size_t nb = 0, nc = 0, n = 0;
	for (size_t i = 0; i < d->nrows; i++) {
		struct sp_diff_row *r = &d->rows[i];
		if (r->base == SP_AGG_NO_FUNC || r->cur == SP_AGG_NO_FUNC) {
			nb += r->cur == SP_AGG_NO_FUNC;
			nc += r->base == SP_AGG_NO_FUNC;
			struct sp_diff_row t = d->rows[n];
			d->rows[n++] = *r;
			*r = t;
		}
	}
	if (!nb || !nc)
		return;
	/* the alone rows, base-only first, each part by name */
	qsort_r(d->rows, n, sizeof(*d->rows), by_alone_name, d);
	struct sp_diff_row *b = d->rows, *c = d->rows + nb;
	size_t i = 0, j = 0;
	while (i < nb && j < nc) {
		struct sp_agg_func x = d->side[0].a->funcs[b[i].base];
		struct sp_agg_func y = d->side[1].a->funcs[c[j].cur];
		x.module = y.module = "";
		int cmp = sp_text_name_cmp(&x, &y);
		bool once = (i + 1 == nb || by_alone_name(&b[i], &b[i + 1], d)) &&
			    (j + 1 == nc || by_alone_name(&c[j], &c[j + 1], d));
		if (cmp < 0) {
			i++;
		} else if (cmp > 0) {
			j++;
		} else {
			if (once) {
				const char *from = d->side[0].a->funcs[b[i].base].module;
				const char *to = d->side[1].a->funcs[c[j].cur].module;
				if (!d->cross++) {
					d->cross_from = from;
					d->cross_to = to;
				} else if (strcmp(from, d->cross_from) || strcmp(to, d->cross_to)) {
					d->cross_more = true;
				}
				b[i].cur = c[j].cur;
				c[j].base = SP_AGG_NO_FUNC;
				c[j].cur = SP_AGG_NO_FUNC; /* dropped below */
				fill_row(d, &b[i]);
			}
			i++;
			j++;
		}
	}
	size_t k = 0;
	for (size_t m = 0; m < d->nrows; m++)
		if (d->rows[m].base != SP_AGG_NO_FUNC || d->rows[m].cur != SP_AGG_NO_FUNC)
			d->rows[k++] = d->rows[m];
	d->nrows = k;
}

/* The gate: grew by more than the limit, beyond sampling noise, over the floor in either spool. */
static bool regressed(const struct sp_report_opts *opts, const struct sp_diff_row *r)
{
	const struct sp_diff_measure *m = opts->diff_gate_of == SP_SORT_TOTAL ? &r->total : &r->self;
	if (!opts->diff_gate || !m->beyond_noise || !(m->low > 1))
		return false;
	if (m->base_pct < opts->diff_min_share && m->cur_pct < opts->diff_min_share)
		return false;
	return m->ratio > 1 + opts->diff_max_increase / 100;
}

/* The unit shown: "ms", "s", "events", "k events" ... or "%", and its factor from measures. */
static const char *display_unit(const struct sp_diff *d, double *div)
{
	double max = 0;
	*div = 1;
	if (d->shares)
		return "%";
	for (size_t i = 0; i < d->nrows; i++) {
		const struct sp_diff_measure *m = sp_diff_key(d, &d->rows[i]);
		max = m->base > max ? m->base : max;
		max = m->cur > max ? m->cur : max;
	}
	if (d->side[0].unit.time) {
		*div = max >= 1e16 ? 1e9 : 1e6;
		return *div == 1e9 ? "s" : "ms";
	}
	static const char *const ev[] = {"events", "k events", "M events", "G events"};
	size_t k = 0;
	for (; k < 3 && max >= 1e7 * *div; k++)
		*div *= 1000;
	return ev[k];
}

/* What a diff compares, for its first line. */
static const char *what_compared(const struct sp_diff *d)
{
	if (d->shares)
		return "share of the samples";
	if (d->side[0].a->metric == SP_METRIC_OFF_CPU)
		return "off-CPU time";
	if (d->side[0].a->metric == SP_METRIC_WALL)
		return "wall time";
	return d->side[0].unit.time ? "CPU time" : "events";
}

/* "3.11x", "new", "gone" or "-", then '*' beyond noise, in 7 columns. */
static void put_ratio(FILE *out, const struct sp_diff_measure *m)
{
	char buf[16];
	if (isnan(m->ratio))
		snprintf(buf, sizeof(buf), "%s", m->base > 0 ? "?" : "-");
	else if (isinf(m->ratio))
		snprintf(buf, sizeof(buf), "new");
	else if (m->cur <= 0)
		snprintf(buf, sizeof(buf), "gone");
	else if (m->ratio < 10)
		snprintf(buf, sizeof(buf), "%.2fx", m->ratio);
	else if (m->ratio < 1000)
		snprintf(buf, sizeof(buf), "%.1fx", m->ratio);
	else
		snprintf(buf, sizeof(buf), ">999x");
	fprintf(out, "%6s%c", buf, m->beyond_noise ? '*' : ' ');
}

static void put_value(FILE *out, double v, double div)
{
	v /= div;
	fprintf(out, v < 1e7 ? "%9.1f" : "%9.0f", v);
}

/* A row's name and module widths ("module+0xOFFSET" names its module: mw 0, the room is the name's). */
static void row_widths(const struct sp_agg_func *f, size_t width, size_t left, size_t *room,
		       size_t *mw)
{
	size_t avail = width > left + NAME_MIN ? width - left : NAME_MIN;
	size_t ml = strlen(f->module);
	if (!ml || (!strncmp(f->name, f->module, ml) && f->name[ml] == '+')) {
		*room = avail;
		*mw = 0;
		return;
	}
	if (avail < NAME_MIN + 3 + 6) { /* no room for a module beside the name */
		*room = avail;
		*mw = 0;
		return;
	}
	*mw = ml < MODULE_MAX ? ml : MODULE_MAX;
	if (avail < NAME_MIN + 3 + *mw)
		*mw = avail >= NAME_MIN + 3 + 6 ? avail - NAME_MIN - 3 : 6;
	*room = avail > *mw + 3 + NAME_MIN ? avail - *mw - 3 : NAME_MIN;
}

/* Is the row listed: its key's change in share points at least the limit (gated rows always)? */
static bool row_listed(const struct sp_diff *d, const struct sp_diff_row *r, double limit)
{
	const struct sp_diff_measure *m = sp_diff_key(d, r);
	return r->regressed || mag(m->cur_pct - m->base_pct) >= limit;
}

static int write_table(const struct sp_diff *d, const struct sp_report_opts *opts, FILE *out)
{
	uint32_t max_rows = opts->max_rows ? opts->max_rows : DEFAULT_ROWS;
	double limit = sp_text_limit(opts), div;
	size_t width = sp_text_width(opts), left = LEFT_COLUMNS + (opts->show_counts ? COUNT_COLUMNS : 0);
	size_t shown = 0, listed = 0, nshow = 0, *diff = NULL, n = d->nrows;
	const char *unit = display_unit(d, &div);
	/* The rows shown, and where their names part from another's cut alike. */
	const struct sp_agg_func **funcs = malloc((n ? n : 1) * sizeof(*funcs));
	size_t *widths = malloc((n ? n : 1) * sizeof(*widths)), mw;
	int err = funcs && widths ? 0 : -ENOMEM;
	for (size_t i = 0; i < n && !err && nshow < max_rows; i++)
		if (row_listed(d, &d->rows[i], limit)) {
			funcs[nshow] = sp_diff_row_func(d, &d->rows[i]);
			row_widths(funcs[nshow], width, left, &widths[nshow], &mw);
			nshow++;
		}
	if (!err)
		err = sp_text_name_diffs_each(funcs, widths, nshow, &diff);
	free(funcs);
	free(widths);
	if (err)
		return err;
	bool total_first = d->key == SP_SORT_TOTAL;
	char head[40];
	snprintf(head, sizeof(head), "%s (%s)", total_first ? "Total" : "Self", unit);
	fprintf(out, "\n  %-*s%s\n%9s %9s %6s  %6s", opts->show_counts ? 33 : 0, head,
		opts->show_counts ? "Samples" : "", "Base", "New", "Ratio", "Points");
	if (opts->show_counts)
		fprintf(out, " %7s %7s", "Base", "New");
	fprintf(out, "  %6s   Function (module)\n", total_first ? "Self" : "Total");
	for (size_t i = 0; i < n; i++) {
		const struct sp_diff_row *r = &d->rows[i];
		if (!row_listed(d, r, limit))
			continue;
		if (listed++ >= max_rows)
			continue;
		const struct sp_diff_measure *k = sp_diff_key(d, r);
		const struct sp_diff_measure *o = k == &r->self ? &r->total : &r->self;
		put_value(out, k->base, div);
		fputc(' ', out);
		put_value(out, k->cur, div);
		fputc(' ', out);
		put_ratio(out, k);
		fprintf(out, " %+6.1f", k->cur_pct - k->base_pct);
		if (opts->show_counts)
			fprintf(out, " %7.0f %7.0f", k->base_n, k->cur_n);
		fputs("  ", out);
		put_ratio(out, o);
		fputs("  ", out);
		const struct sp_agg_func *f = sp_diff_row_func(d, r);
		size_t room;
		row_widths(f, width, left, &room, &mw);
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
	else
		fprintf(out, "Ratio: new/base.  Points: change of its share of each spool's whole.\n"
			     "* beyond sampling noise: its 95%% interval excludes 1 (%s).\n",
			d->shares ? "ratio of two proportions" : "Poisson rate ratio");
	return 0;
}

static void write_side(const struct sp_diff *d, int i, FILE *out)
{
	const struct sp_diff_side *s = &d->side[i];
	const struct sp_agg *a = s->a;
	const char *path = i ? d->path : d->base_path;
	const char *label = i ? "New:" : "Base:";
	char how[96];
	sp_sample_unit_describe(&s->unit, how, sizeof(how));
	/* A time metric or a counted event's events: the amount, then the samples (docs/DESIGN.md, decision 12). */
	if (a->metric != SP_METRIC_CPU || a->unit.weighted) {
		char amount[48];
		sp_agg_format_amount(a, a->samples, amount, sizeof(amount));
		fprintf(out, "%-12s%s: %s (", label, path ? path : "(buffer)", amount);
		if (a->metric != SP_METRIC_OFF_CPU)
			fprintf(out, "%" PRIu64 " of %" PRIu64 " samples%s", a->nsampled,
				a->all_samples, a->metric == SP_METRIC_WALL ? ", " : "");
		if (a->metric != SP_METRIC_CPU)
			fprintf(out, "%" PRIu64 " off-CPU intervals", a->nintervals);
		fputs(")\n", out);
		return;
	}
	fprintf(out, "%-12s%s: %" PRIu64, label, path ? path : "(buffer)", a->samples);
	if (a->samples != a->all_samples)
		fprintf(out, " of %" PRIu64, a->all_samples);
	fprintf(out, " samples%s", a->samples != a->all_samples ? " kept" : "");
	if (s->unit.time)
		fprintf(out, ", %.1f ms", (double)a->samples * s->per_sample / 1e6);
	else
		fprintf(out, ", %.0f events", (double)a->samples * s->per_sample);
	fprintf(out, " (%s)\n", how);
}

static void write_gate(const struct sp_diff *d, const struct sp_report_opts *opts, FILE *out)
{
	if (!opts->diff_gate)
		return;
	int used = fprintf(out, "Gate:       %s > +%g%% beyond sampling noise, over %g%%: ",
			   opts->diff_gate_of == SP_SORT_TOTAL ? "total" : "self",
			   opts->diff_max_increase, opts->diff_min_share);
	if (!d->regressed) {
		fputs("none\n", out);
		return;
	}
	/*
	 * Their names, as many as fit, in the table's order; ", ..." when the rest are only
	 * in the table.  The lines stay within 80 columns: when the first name does not fit
	 * in what is left, the names go on a line of their own, under the values.
	 */
	used += fprintf(out, "%zu function%s,", d->regressed, d->regressed == 1 ? "" : "s");
	size_t col = (size_t)used, i = 0;
	for (; i < d->regressed; i++) {
		const struct sp_agg_func *f = sp_diff_row_func(d, &d->rows[i]);
		/* room kept for ", ..." while names remain after this one */
		size_t w = sp_text_func_width(f), keep = i + 1 < d->regressed ? strlen(", ...") : 0;
		if (i == 0 && col + 1 + w + keep > 80) {
			fputs("\n           ", out);
			col = 11;
		}
		if (col + 1 + w + keep > 80) {
			if (i > 0)
				break;
			w = 80 - col - 1 - keep; /* the first is always named, cut if need be */
		}
		fputs(i ? ", " : " ", out);
		sp_text_put_func(out, f, w, false);
		col += (i ? 2 : 1) + w;
	}
	fputs(i < d->regressed ? ", ...\n" : "\n", out);
}

static void write_text(const struct sp_diff *d, const struct sp_report_opts *opts, FILE *out,
		       int *err)
{
	fprintf(out, "Change in each function's %s, from base to new\n", what_compared(d));
	write_side(d, 0, out);
	write_side(d, 1, out);
	sp_text_filters(d->side[1].a, opts, out);
	if (sp_filter_active(&opts->filter))
		fputs(d->side[1].a->metric == SP_METRIC_CPU
			      ? "Shares:     of each spool's samples before the filters\n"
			      : "Shares:     of each spool's time after the filters\n",
		      out);
	if (d->units_differ)
		fputs("Note:       the spools sample different events: compared as shares\n", out);
	if (d->by_name)
		fputs("Note:       functions matched by name alone, whatever their module\n", out);
	if (d->cross) {
		fprintf(out, "Note:       %zu function%s paired by name across modules (a renamed "
			     "build?):\n            ", d->cross, d->cross == 1 ? "" : "s");
		sp_text_put_cell(out, d->cross_from, 16, false);
		fputs(" -> ", out);
		sp_text_put_cell(out, d->cross_to, 16, false);
		fprintf(out, "%s (--diff-match=module: apart)\n", d->cross_more ? ", ..." : "");
	}
	write_gate(d, opts, out);
	*err = write_table(d, opts, out);
}

/*
 * The side of spool a.  Shares are of the whole recording (samples before the
 * filters), so a focus leaves each function its part of all the time.
 */
static void side_of(struct sp_diff_side *s, const struct sp_agg *a)
{
	s->a = a;
	sp_sample_unit_of(a->spool, &s->unit);
	s->per_sample = (double)s->unit.period;
	s->scale = s->per_sample; /* the aggregation counts samples */
	if (a->metric != SP_METRIC_CPU || a->unit.weighted) {
		/*
		 * The aggregation sums amounts (docs/DESIGN.md, decision 12): µs of time with
		 * a time metric, events with a counted event.  One count is scale ns or
		 * events; a sample stands for the mean amount, which the noise bound uses.
		 */
		s->scale = a->metric != SP_METRIC_CPU ? 1000.0 : 1.0;
		s->unit.time = s->unit.time || a->metric != SP_METRIC_CPU;
		/* The observations: CPU samples, off-CPU intervals, or both for wall time. */
		uint64_t seen = a->metric == SP_METRIC_OFF_CPU ? a->nintervals
				: a->metric == SP_METRIC_WALL  ? a->nsampled + a->nintervals
							       : a->nsampled;
		if (seen)
			s->per_sample = (double)a->samples * s->scale / (double)seen;
		s->whole = (double)a->samples;
		/*
		 * A filter's whole, scaled from the kept samples: exact for equal weights,
		 * an estimate otherwise; the intervals of a time metric are not scaled.
		 */
		if (a->filter && a->metric == SP_METRIC_CPU && a->nsampled)
			s->whole *= (double)a->all_samples / (double)a->nsampled;
		return;
	}
	s->whole = (double)(a->filter ? a->all_samples : a->samples);
}

static bool units_differ(const struct sp_sample_unit *a, const struct sp_sample_unit *b)
{
	return a->time != b->time || (!a->time && strcmp(a->event, b->event));
}

int sp_report_diff_gate(const struct sp_spool *base, struct sp_symbolizer *base_sym,
			const char *base_path, const struct sp_spool *s,
			struct sp_symbolizer *sym, const struct sp_report_opts *opts,
			struct sp_diff_outcome *outcome, FILE *out)
{
	if (!base || !s || !opts || !out ||
	    (opts->format != SP_REPORT_TEXT && opts->format != SP_REPORT_JSON))
		return -SP_E_BAD_ARG;
	struct sp_symbolizer *own[2] = {NULL, NULL};
	struct sp_agg b, c;
	bool built_b = false, built_c = false;
	int err = 0;
	if (outcome)
		*outcome = (struct sp_diff_outcome){0};
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
	struct sp_diff d = {.base_path = base_path, .path = opts->spool_path};
	d.key = opts->sort == SP_SORT_TOTAL || (opts->diff_gate && opts->diff_gate_of == SP_SORT_TOTAL)
			? SP_SORT_TOTAL : SP_SORT_SELF;
	if (!err) {
		side_of(&d.side[0], &b);
		side_of(&d.side[1], &c);
		d.units_differ = units_differ(&d.side[0].unit, &d.side[1].unit);
		d.shares = opts->diff_normalize == SP_DIFF_SHARES || d.units_differ;
		d.by_name = opts->diff_match == SP_DIFF_MATCH_NAME;
		err = merge(&d);
		if (!err && opts->diff_match == SP_DIFF_MATCH_AUTO)
			pair_alone(&d);
	}
	if (!err) {
		for (size_t i = 0; i < d.nrows; i++)
			if ((d.rows[i].regressed = regressed(opts, &d.rows[i])))
				d.regressed++;
		/* by name: the order of the old table; else the key's change */
		struct sp_diff sorter = d;
		if (opts->sort == SP_SORT_NAME)
			sorter.key = SP_SORT_NAME + 1;
		qsort_r(d.rows, d.nrows, sizeof(*d.rows), by_change, &sorter);
		if (opts->format == SP_REPORT_JSON)
			err = sp_report_diff_json(&d, opts, out);
		else
			write_text(&d, opts, out, &err);
	}
	if (!err && outcome && d.regressed) {
		const struct sp_diff_row *r = &d.rows[0];
		outcome->regressed = d.regressed;
		snprintf(outcome->first_name, sizeof(outcome->first_name), "%s",
			 sp_diff_row_func(&d, r)->name);
		outcome->first_ratio = opts->diff_gate_of == SP_SORT_TOTAL ? r->total.ratio
									    : r->self.ratio;
	}
	free(d.rows);
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

int sp_report_diff(const struct sp_spool *base, struct sp_symbolizer *base_sym,
		   const char *base_path, const struct sp_spool *s, struct sp_symbolizer *sym,
		   const struct sp_report_opts *opts, FILE *out)
{
	if (!opts)
		return -SP_E_BAD_ARG;
	struct sp_report_opts o = *opts;
	o.format = SP_REPORT_TEXT;
	return sp_report_diff_gate(base, base_sym, base_path, s, sym, &o, NULL, out);
}
