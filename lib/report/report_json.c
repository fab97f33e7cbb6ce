/* SPDX-License-Identifier: MIT */
/* The JSON summary of a report, for scripts and CI: counters, filters, functions, stacks. */
#include "report/views.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_ROWS 25
#define DEFAULT_STACKS 5
#define JSON_VERSION 1

/* Each string goes through one scratch buffer: escaped, written, reset. */
struct json {
	FILE *out;
	struct sp_buf b;
	int err;
};

static void put_str(struct json *j, const char *s)
{
	j->b.len = 0;
	if (!j->err)
		j->err = sp_json_put_string(&j->b, s ? s : "");
	if (!j->err)
		fwrite(j->b.data, 1, j->b.len, j->out);
}

/* "KEY":"VALUE" (null for NULL), with a leading comma unless first. */
static void put_key_str(struct json *j, const char *key, const char *val, bool first)
{
	fprintf(j->out, "%s\"%s\":", first ? "" : ",", key);
	if (val)
		put_str(j, val);
	else
		fputs("null", j->out);
}

static void put_key_u64(struct json *j, const char *key, uint64_t v)
{
	fprintf(j->out, ",\"%s\":%" PRIu64, key, v);
}

/* Shares are percent of the report's samples, with 4 decimals. */
static void put_key_share(struct json *j, const char *key, uint64_t part, uint64_t whole)
{
	fprintf(j->out, ",\"%s\":%.4f", key, sp_text_pct(part, whole));
}

static void put_ids(struct json *j, const char *key, const int32_t *ids, size_t n)
{
	fprintf(j->out, ",\"%s\":[", key);
	for (size_t i = 0; i < n; i++)
		fprintf(j->out, "%s%" PRId32, i ? "," : "", ids[i]);
	fputc(']', j->out);
}

static void put_meta(struct json *j, const struct sp_agg *a, const struct sp_report_opts *opts)
{
	const struct sp_spool_meta *m = sp_spool_meta(a->spool);
	fputs("\"spool\":{", j->out);
	put_key_str(j, "path", opts->spool_path, true);
	put_key_str(j, "command", m ? m->command : NULL, false);
	put_key_str(j, "hostname", m ? m->hostname : NULL, false);
	put_key_str(j, "kernel_release", m ? m->kernel_release : NULL, false);
	struct sp_sample_unit u;
	sp_sample_unit_of(a->spool, &u);
	put_key_str(j, "event", u.event, false);
	put_key_u64(j, "frequency_hz", m ? m->frequency_hz : 0);
	put_key_u64(j, "sample_period", m ? m->sample_period : 0);
	fprintf(j->out, ",\"system_wide\":%s", u.system_wide ? "true" : "false");
	/* What the counts below are, where they are not samples (docs/DESIGN.md, decision 12). */
	if (a->metric != SP_METRIC_CPU)
		fprintf(j->out, ",\"metric\":\"%s\",\"unit\":\"microseconds\"",
			a->metric == SP_METRIC_WALL ? "wall" : "off-cpu");
	else if (u.weighted)
		fputs(",\"metric\":\"cpu\",\"unit\":\"events\"", j->out);
	put_key_u64(j, "start_unix_us", m ? m->start_timestamp_us : 0);
	fprintf(j->out, ",\"duration_s\":%.6f", (double)(a->last_ns - a->first_ns) / 1e9);
	/* a spool still being written has no trailer yet: not cut short, growing */
	bool growing = opts && opts->growing && !sp_spool_summary(a->spool);
	fprintf(j->out, ",\"growing\":%s", growing ? "true" : "false");
	fprintf(j->out, ",\"truncated\":%s}",
		!growing && (sp_spool_truncated(a->spool) || !sp_spool_summary(a->spool)) ? "true"
											  : "false");
}

/*
 * The spool's counters, as the text header has them (every sample, before
 * filters); the recorder's are null when the spool has no summary trailer.
 */
static void put_counters(struct json *j, const struct sp_agg *a)
{
	const struct sp_summary *sum = sp_spool_summary(a->spool);
	fprintf(j->out, ",\n\"counters\":{\"samples\":%" PRIu64, a->all_samples);
	put_key_u64(j, "lost", sp_spool_lost_total(a->spool));
	if (!sum) {
		fputs(",\"sample_events\":null,\"written\":null,\"errors\":null,"
		      "\"stop_reasons\":null,\"error_kinds\":null}", j->out);
		return;
	}
	uint64_t errors = 0;
	for (unsigned i = 0; i < SP_ERR_COUNT_; i++)
		errors = sp_u64_add_sat(errors, sum->error_stats[i]);
	put_key_u64(j, "sample_events", sum->sample_events);
	put_key_u64(j, "written", sum->samples);
	put_key_u64(j, "errors", errors);
	fputs(",\"stop_reasons\":{", j->out);
	bool first = true;
	for (unsigned i = 0; i < SP_STOP_COUNT_; i++) {
		if (i == SP_STOP_ROOT || !sum->stop_reasons[i])
			continue;
		fprintf(j->out, "%s\"%s\":%" PRIu64, first ? "" : ",", sp_stop_reason_name(i),
			sum->stop_reasons[i]);
		first = false;
	}
	fputs("},\"error_kinds\":{", j->out);
	first = true;
	for (unsigned i = 0; i < SP_ERR_COUNT_; i++) {
		if (!sum->error_stats[i])
			continue;
		fprintf(j->out, "%s\"%s\":%" PRIu64, first ? "" : ",", sp_error_kind_name(i),
			sum->error_stats[i]);
		first = false;
	}
	fputs("}}", j->out);
}

static void put_filters(struct json *j, const struct sp_agg *a, const struct sp_report_filter *f)
{
	fputs(",\n\"filters\":{", j->out);
	put_key_str(j, "comm", f->comm, true);
	put_key_str(j, "module", f->module, false);
	put_key_str(j, "focus", f->focus, false);
	put_key_str(j, "exclude", f->exclude, false);
	put_ids(j, "pid", f->pids, f->npids);
	put_ids(j, "tid", f->tids, f->ntids);
	fputs(",\"time_s\":[", j->out);
	if (f->has_start)
		fprintf(j->out, "%.9g", (double)f->start_ns / 1e9);
	else
		fputs("null", j->out);
	if (f->has_end)
		fprintf(j->out, ",%.9g]", (double)f->end_ns / 1e9);
	else
		fputs(",null]", j->out);
	put_key_u64(j, "kept", a->samples);
	fputc('}', j->out);
}

static void put_func(struct json *j, const struct sp_agg_func *f)
{
	put_key_str(j, "name", f->name, true);
	put_key_str(j, "module", f->module, false);
	fprintf(j->out, ",\"inline\":%s", f->is_inline ? "true" : "false");
	if (f->file) {
		put_key_str(j, "file", f->file, false);
		put_key_u64(j, "line", f->line);
	}
}

static int put_functions(struct json *j, const struct sp_agg *a, const struct sp_report_opts *opts)
{
	uint32_t max_rows = opts->max_rows ? opts->max_rows : DEFAULT_ROWS;
	uint32_t *order;
	size_t n;
	int err = sp_text_func_order(a, opts, &order, &n);
	if (err)
		return err;
	fputs(",\n\"functions\":[", j->out);
	size_t shown = 0;
	for (size_t i = 0; i < n && shown < max_rows; i++) {
		const struct sp_agg_func *f = &a->funcs[order[i]];
		fputs(shown++ ? ",\n{" : "\n{", j->out);
		put_func(j, f);
		put_key_u64(j, "self", f->self);
		put_key_u64(j, "total", f->total);
		put_key_share(j, "self_percent", f->self, a->whole);
		put_key_share(j, "total_percent", f->total, a->whole);
		fputc('}', j->out);
	}
	fprintf(j->out, "],\n\"functions_total\":%zu", a->nfuncs);
	free(order);
	return 0;
}

static int put_stacks(struct json *j, struct sp_agg *a, const struct sp_report_opts *opts)
{
	uint32_t max_stacks = opts->max_stacks ? opts->max_stacks : DEFAULT_STACKS;
	uint32_t *top = NULL, *path = NULL;
	size_t ntop = 0, path_cap = 0;
	int err = opts->hide_stacks ? 0 : sp_agg_heaviest(a, max_stacks, &top, &ntop);
	if (!err) {
		fputs(",\n\"stacks\":[", j->out);
		for (size_t i = 0; !err && i < ntop; i++) {
			uint64_t count = a->nodes[top[i]].count;
			size_t len = sp_agg_node_path(a, top[i], &path, &path_cap);
			if (!len) {
				err = -ENOMEM;
				break;
			}
			fprintf(j->out, "%s{\"samples\":%" PRIu64, i ? ",\n" : "\n", count);
			put_key_share(j, "percent", count, a->whole);
			fputs(",\"frames\":[", j->out);
			for (size_t k = 0, shown = 0; k < len; k++) {
				if (path[k] >= a->nfuncs)
					continue; /* a marker inside a damaged stack */
				fputs(shown++ ? ",{" : "{", j->out);
				put_func(j, &a->funcs[path[k]]);
				fputc('}', j->out);
			}
			fputs("]}", j->out);
		}
		fputc(']', j->out);
	}
	free(top);
	free(path);
	return err;
}

int sp_report_json(struct sp_agg *a, const struct sp_report_opts *opts, FILE *out)
{
	struct json j = {.out = out};
	sp_buf_init(&j.b);
	fprintf(out, "{\"stackpulse_report\":%d,\n", JSON_VERSION);
	put_meta(&j, a, opts);
	put_counters(&j, a);
	put_filters(&j, a, &opts->filter);
	/* What the views count: the samples the filters kept. */
	fprintf(out, ",\n\"samples\":%" PRIu64 ",\"empty\":%" PRIu64 ",\"truncated\":%" PRIu64,
		a->samples, a->empty_samples, a->truncated_samples);
	int err = put_functions(&j, a, opts);
	if (!err)
		err = put_stacks(&j, a, opts);
	fputs("}\n", out);
	sp_buf_release(&j.b);
	if (!err)
		err = j.err;
	return err ? err : ferror(out) ? -EIO : 0;
}
