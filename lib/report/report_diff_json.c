/* SPDX-License-Identifier: MIT */
/* report --diff --format=json: the comparison and the gate for scripts (schema in stackpulse-report(1)). */
#include "report/diff.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

#define DEFAULT_ROWS 25
#define JSON_VERSION 1

/* A JSON string, escaped (names come from the target); the first error stays in *err. */
static void put_str(FILE *out, const char *s, int *err)
{
	struct sp_buf b;
	sp_buf_init(&b);
	if (!*err)
		*err = sp_json_put_string(&b, s ? s : "");
	if (!*err)
		fwrite(b.data, 1, b.len, out);
	sp_buf_release(&b);
}

/* ,"KEY":NUMBER, null for NaN and infinities (JSON has neither) */
static void put_num(FILE *out, const char *key, double v)
{
	if (isfinite(v))
		fprintf(out, ",\"%s\":%.6g", key, v);
	else
		fprintf(out, ",\"%s\":null", key);
}

static void put_measure(FILE *out, const char *key, const struct sp_diff_measure *m)
{
	fprintf(out, ",\"%s\":{\"beyond_noise\":%s", key, m->beyond_noise ? "true" : "false");
	put_num(out, "base", m->base);
	put_num(out, "new", m->cur);
	put_num(out, "ratio", m->ratio);
	put_num(out, "ratio_low", m->low);
	put_num(out, "ratio_high", m->high);
	put_num(out, "base_percent", m->base_pct);
	put_num(out, "new_percent", m->cur_pct);
	put_num(out, "points", m->cur_pct - m->base_pct);
	put_num(out, "base_samples", m->base_n);
	put_num(out, "new_samples", m->cur_n);
	fputc('}', out);
}

static void put_side(FILE *out, const struct sp_diff *d, int i, int *err)
{
	const struct sp_diff_side *s = &d->side[i];
	char how[96];
	sp_sample_unit_describe(&s->unit, how, sizeof(how));
	fprintf(out, ",\n\"%s\":{\"path\":", i ? "new" : "base");
	put_str(out, i ? d->path : d->base_path, err);
	fputs(",\"event\":", out);
	put_str(out, s->unit.event, err);
	fputs(",\"sampling\":", out);
	put_str(out, how, err);
	fprintf(out, ",\"samples\":%" PRIu64 ",\"kept_samples\":%" PRIu64, s->a->all_samples,
		s->a->samples);
	put_num(out, "measure", (double)s->a->samples * s->per_sample);
	put_num(out, "sample_weight", s->per_sample);
	fputc('}', out);
}

int sp_report_diff_json(const struct sp_diff *d, const struct sp_report_opts *opts, FILE *out)
{
	int err = 0;
	uint32_t max_rows = opts->max_rows ? opts->max_rows : DEFAULT_ROWS;
	fprintf(out, "{\"diff_version\":%d,\"compares\":\"%s\",\"unit\":\"%s\","
		     "\"matched_by\":\"%s\",\"noise_test\":\"%s\",\"confidence\":0.95",
		JSON_VERSION, d->shares ? "shares" : "measures",
		d->shares ? "percent" : d->side[0].unit.time ? "ns" : "events",
		d->by_name ? "name" : opts->diff_match == SP_DIFF_MATCH_MODULE ? "name and module"
									: "name and module, then name",
		d->shares ? "ratio of two proportions" : "Poisson rate ratio");
	fprintf(out, ",\"matched_across_modules\":%zu", d->cross);
	put_side(out, d, 0, &err);
	put_side(out, d, 1, &err);
	fputs(",\n\"gate\":", out);
	if (opts->diff_gate) {
		fprintf(out, "{\"of\":\"%s\"", opts->diff_gate_of == SP_SORT_TOTAL ? "total" : "self");
		put_num(out, "max_increase_percent", opts->diff_max_increase);
		put_num(out, "min_share_percent", opts->diff_min_share);
		fprintf(out, ",\"passed\":%s,\"regressed\":[", d->regressed ? "false" : "true");
		for (size_t i = 0; i < d->regressed; i++) {
			fputs(i ? "," : "", out);
			put_str(out, sp_diff_row_func(d, &d->rows[i])->name, &err);
		}
		fputs("]}", out);
	} else {
		fputs("null", out);
	}
	fputs(",\n\"functions\":[", out);
	size_t shown = 0;
	for (size_t i = 0; i < d->nrows && !err; i++) {
		const struct sp_diff_row *r = &d->rows[i];
		if (!r->regressed && shown >= max_rows)
			break;
		const struct sp_agg_func *f = sp_diff_row_func(d, r);
		fputs(shown++ ? ",\n{\"name\":" : "\n{\"name\":", out);
		put_str(out, f->name, &err);
		fputs(",\"module\":", out);
		put_str(out, f->module, &err);
		fprintf(out, ",\"inline\":%s,\"in_base\":%s,\"in_new\":%s,\"regressed\":%s",
			f->is_inline ? "true" : "false", r->base != SP_AGG_NO_FUNC ? "true" : "false",
			r->cur != SP_AGG_NO_FUNC ? "true" : "false", r->regressed ? "true" : "false");
		put_measure(out, "self", &r->self);
		put_measure(out, "total", &r->total);
		fputc('}', out);
	}
	fprintf(out, "],\n\"functions_not_shown\":%zu}\n", d->nrows - shown);
	return err;
}
