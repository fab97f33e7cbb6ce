/* SPDX-License-Identifier: MIT */
/*
 * report --diff (private): each function of two spools matched, its self and
 * total measured in both, the ratio's noise bound, and the gate
 * (report_diff.c, the text table; report_diff_json.c; diff_stats.c).
 */
#ifndef SP_REPORT_DIFF_H
#define SP_REPORT_DIFF_H

#include "report/views.h"

/* One measure (self or total) of one function in both spools. */
struct sp_diff_measure {
	double base, cur;         /* in the diff's unit: ns or events, or percent with shares */
	double base_n, cur_n;     /* the samples they stand for */
	double base_pct, cur_pct; /* share of each spool's whole, percent */
	double ratio;             /* cur / base: INFINITY when only cur, NAN when neither */
	double low, high;         /* the ratio's 95% interval */
	bool beyond_noise;        /* the interval excludes 1 */
};

/* One function of either spool (ids SP_AGG_NO_FUNC where absent). */
struct sp_diff_row {
	uint32_t base, cur;
	struct sp_diff_measure self, total;
	bool regressed; /* grew beyond the gate */
};

/* One spool's side: what an aggregated value stands for. */
struct sp_diff_side {
	const struct sp_agg *a;
	struct sp_sample_unit unit;
	/*
	 * The unit (ns or events) one aggregated value stands for, and one
	 * sample: today the aggregation counts samples, so both are the
	 * period; an aggregation summing weights makes scale 1.
	 */
	double scale, per_sample;
	double whole; /* the denominator of shares, in aggregated values */
};

/*
 * Fill m's ratio, interval and beyond_noise from its values and sample
 * counts; shares: m compares proportions of whole0 and whole1 samples.
 * (diff_stats.c; the test is named in stackpulse-report(1)).
 */
void sp_diff_interval(struct sp_diff_measure *m, double whole0_n, double whole1_n, bool shares);

/* The comparison as built for a view. */
struct sp_diff {
	struct sp_diff_side side[2];  /* base, new */
	bool shares;                  /* measures are shares (normalised, or units differ) */
	bool units_differ;            /* the spools' units cannot be compared as measures */
	bool by_name;                 /* functions matched by name alone (SP_DIFF_MATCH_NAME) */
	size_t cross;                 /* pairs matched by name across modules (SP_DIFF_MATCH_AUTO) */
	const char *cross_from, *cross_to; /* the modules of the first such pair */
	bool cross_more;              /* other pairs of modules too */
	uint32_t key;                 /* SP_SORT_SELF or SP_SORT_TOTAL: the measure shown first */
	struct sp_diff_row *rows;     /* regressed first, then by the key's change */
	size_t nrows, regressed;
	const char *base_path, *path;
};

static inline const struct sp_diff_measure *sp_diff_key(const struct sp_diff *d,
							const struct sp_diff_row *r)
{
	return d->key == SP_SORT_TOTAL ? &r->total : &r->self;
}

/* The row's function: the new spool's, else the base's. */
static inline const struct sp_agg_func *sp_diff_row_func(const struct sp_diff *d,
							 const struct sp_diff_row *r)
{
	return r->cur != SP_AGG_NO_FUNC ? &d->side[1].a->funcs[r->cur]
					: &d->side[0].a->funcs[r->base];
}

/* The JSON form (report_diff_json.c). */
int sp_report_diff_json(const struct sp_diff *d, const struct sp_report_opts *opts, FILE *out);

#endif
