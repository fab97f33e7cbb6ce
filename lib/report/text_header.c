/* SPDX-License-Identifier: MIT */
/* The text report's header: the spool, counters, error statistics, symbol sources, filters. */
#include "report/views.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LINE_COLUMNS SP_TEXT_COLUMNS /* the header's width */
#define pct sp_text_pct

#define HEADER_INDENT 12 /* "Counters:   " */
#define ROW_INDENT 14

/* A ", "-separated list that wraps at LINE_COLUMNS onto lines indented like the header. */
struct item_list {
	FILE *out;
	size_t col;
	unsigned n;
};

static void __attribute__((format(printf, 2, 3))) put_item(struct item_list *l, const char *fmt,
							    ...)
{
	char text[96];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	size_t n = strlen(text);
	if (!l->n) {
		l->col += n;
	} else if (l->col + 2 + n + 1 > LINE_COLUMNS) { /* +1: room for a comma after it */
		fprintf(l->out, ",\n%*s", HEADER_INDENT, "");
		l->col = HEADER_INDENT + n;
	} else {
		fputs(", ", l->out);
		l->col += 2 + n;
	}
	sp_fputs_printable(text, l->out); /* --comm and --focus patterns may hold escapes */
	l->n++;
}

/* "N things", or "1 thing" when one is singular. */
static void put_count(struct item_list *l, uint64_t n, const char *one, const char *many)
{
	put_item(l, "%" PRIu64 " %s", n, n == 1 ? one : many);
}

/*
 * The recorder's own counters.  The first four always show; the rest are
 * problems and show only when non-zero, so a clean recording takes one line.
 */
static void write_counters(const struct sp_summary *sum, bool system_wide, FILE *out)
{
	struct item_list l = {.out = out, .col = HEADER_INDENT};
	fputs("Counters:   ", out);
	put_count(&l, sum->sample_events, "sample event", "sample events");
	put_item(&l, "%" PRIu64 " written", sum->samples);
	put_item(&l, "%" PRIu64 " lost", sum->lost_events);
	/* without -k, a system-wide spool's kernel threads still show the kernel function sampled */
	put_item(&l, "kernel frames %s", sum->kernel_enabled ? "on"
				       : system_wide ? "off (kernel threads and idle CPUs: the function sampled)"
						     : "off");
	const struct {
		uint64_t n;
		const char *one, *many;
	} problems[] = {
		{sum->missing_pid_samples, "missing pid", "missing pid"},
		{sum->missing_tid_samples, "missing tid", "missing tid"},
		{sum->missing_timestamp_samples, "missing timestamp", "missing timestamp"},
		{sum->idle_tid_samples, "idle tid", "idle tid"},
		{sum->empty_stack_samples, "empty stack", "empty stacks"},
		{sum->truncated_frame_markers, "truncation marker", "truncation markers"},
		/* not a problem: where there was no CFI (record's summary says so too) */
		{sum->fp_frames, "frame found by frame pointers", "frames found by frame pointers"},
	};
	for (size_t i = 0; i < SP_ARRAY_SIZE(problems); i++)
		if (problems[i].n)
			put_count(&l, problems[i].n, problems[i].one, problems[i].many);
	fputc('\n', out);
}

/* One line of the error breakdown: a stop reason or an error kind. */
struct count_row {
	uint64_t n;
	const char *name, *text;
};

/* Heaviest first; the tables' own order among equals (insertion sort is stable). */
static void sort_rows(struct count_row *v, size_t n)
{
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && v[j - 1].n < v[j].n; j--) {
			struct count_row x = v[j];
			v[j] = v[j - 1];
			v[j - 1] = x;
		}
}

static void write_rows(const struct count_row *v, size_t n, int name_w, int count_w,
		       uint64_t whole, FILE *out)
{
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%*s%-*s  %*" PRIu64 " %6.1f%%  %s\n", ROW_INDENT, "", name_w, v[i].name,
			count_w, v[i].n, pct(v[i].n, whole), v[i].text);
}

/*
 * Why stacks ended early and which samples failed, by stop reason and by
 * error kind, with shares of the sample events.  Printed only when some count
 * is non-zero.
 */
static void write_error_stats(const struct sp_summary *sum, FILE *out)
{
	struct count_row stops[SP_STOP_COUNT_], kinds[SP_ERR_COUNT_];
	size_t nstops = 0, nkinds = 0;
	uint64_t stopped = 0, failed = 0, top = 0;
	int name_w = 0;
	for (unsigned i = 0; i < SP_STOP_COUNT_; i++) {
		if (i == SP_STOP_ROOT || !sum->stop_reasons[i])
			continue;
		stops[nstops++] = (struct count_row){sum->stop_reasons[i], sp_stop_reason_name(i),
						     sp_stop_reason_text(i)};
		stopped = sp_u64_add_sat(stopped, sum->stop_reasons[i]);
	}
	for (unsigned i = 0; i < SP_ERR_COUNT_; i++) {
		if (!sum->error_stats[i])
			continue;
		kinds[nkinds++] = (struct count_row){sum->error_stats[i], sp_error_kind_name(i),
						     sp_error_kind_text(i)};
		failed = sp_u64_add_sat(failed, sum->error_stats[i]);
	}
	if (!nstops && !nkinds)
		return;
	sort_rows(stops, nstops);
	sort_rows(kinds, nkinds);
	for (size_t i = 0; i < nstops + nkinds; i++) {
		const struct count_row *r = i < nstops ? &stops[i] : &kinds[i - nstops];
		int w = (int)strlen(r->name);
		name_w = w > name_w ? w : name_w;
		top = r->n > top ? r->n : top;
	}
	char digits[24];
	int count_w = snprintf(digits, sizeof(digits), "%" PRIu64, top);
	/* Stop reasons count every unwound sample; error kinds can strike before a sample is one. */
	uint64_t whole = sum->sample_events ? sum->sample_events : sum->samples;

	if (nstops) {
		fprintf(out, "Unwinding:  %" PRIu64 " stack%s where DWARF unwinding stopped early"
			     " (%.1f%% of samples)\n", stopped, stopped == 1 ? "" : "s",
			pct(stopped, whole));
		write_rows(stops, nstops, name_w, count_w, whole, out);
		/* Where DWARF stopped early, the kernel's frame-pointer chain may go on. */
		if (sum->spliced_stacks || sum->ignored_user_callchain_frames) {
			struct item_list l = {.out = out, .col = HEADER_INDENT};
			fprintf(out, "%*s", HEADER_INDENT, "");
			put_count(&l, sum->spliced_stacks, "stack continued by the kernel's chain",
				  "stacks continued by the kernel's chain");
			put_count(&l, sum->ignored_user_callchain_frames, "callchain frame unused",
				  "callchain frames unused");
			fputc('\n', out);
		}
	}
	if (nkinds) {
		fprintf(out, "Errors:     %" PRIu64 " sample error%s (%.1f%% of samples)\n", failed,
			failed == 1 ? "" : "s", pct(failed, whole));
		write_rows(kinds, nkinds, name_w, count_w, whole, out);
	}
}

/* A list of ids as "1,2,3" into buf (cut when long). */
static void put_ids(char *buf, size_t cap, const int32_t *ids, size_t n)
{
	size_t len = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n && len + 1 < cap; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%s%" PRId32, i ? "," : "", ids[i]);
}

/* us since the epoch as UTC ISO 8601 with ms, into buf (40 bytes). */
static const char *utc(uint64_t us, char *buf)
{
	time_t secs = (time_t)(us / 1000000);
	struct tm tm;
	if (!gmtime_r(&secs, &tm))
		return "?";
	size_t n = strftime(buf, 40, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, 40 - n, ".%03uZ", (unsigned)(us / 1000 % 1000));
	return buf;
}

void sp_text_filters(const struct sp_agg *a, const struct sp_report_opts *opts, FILE *out)
{
	const struct sp_report_filter *f = &opts->filter;
	if (!sp_filter_active(f))
		return;
	struct item_list l = {.out = out, .col = HEADER_INDENT};
	char ids[64];
	fputs("Filters:    ", out);
	if (f->npids) {
		put_ids(ids, sizeof(ids), f->pids, f->npids);
		put_item(&l, "pid %s", ids);
	}
	if (f->ntids) {
		put_ids(ids, sizeof(ids), f->tids, f->ntids);
		put_item(&l, "tid %s", ids);
	}
	if (f->comm)
		put_item(&l, "comm '%.60s'", f->comm);
	if (f->module)
		put_item(&l, "module '%.60s'", f->module);
	if (f->focus)
		put_item(&l, "focus '%.60s'", f->focus);
	if (f->exclude)
		put_item(&l, "exclude '%.60s'", f->exclude);
	char from[40], to[40];
	if (f->segments_listed && (f->wall_start_us || f->wall_end_us) &&
	    (!f->has_start || f->wall_start_us) && (!f->has_end || f->wall_end_us))
		put_item(&l, "time %s%s%s%s (%zu of %zu segments read)",
			 f->has_end ? "" : "from ", f->has_start ? utc(f->wall_start_us, from) : "",
			 f->has_end ? (f->has_start ? " to " : "until ") : "",
			 f->has_end ? utc(f->wall_end_us, to) : "", f->segments_read,
			 f->segments_listed);
	else if (f->has_start && f->has_end)
		put_item(&l, "time %g-%g s", (double)f->start_ns / 1e9, (double)f->end_ns / 1e9);
	else if (f->has_start)
		put_item(&l, "time from %g s", (double)f->start_ns / 1e9);
	else if (f->has_end)
		put_item(&l, "time until %g s", (double)f->end_ns / 1e9);
	if (a->metric == SP_METRIC_CPU && !a->unit.weighted) {
		fprintf(out, "\nKept:       %" PRIu64 " of %" PRIu64 " samples (%.1f%%)\n", a->samples,
			a->all_samples, pct(a->samples, a->all_samples));
		return;
	}
	/* Events or time kept are no count of samples: both, in their own units. */
	char amount[64];
	sp_agg_format_amount(a, a->samples, amount, sizeof(amount));
	fprintf(out, "\nKept:       %s", amount);
	if (a->metric != SP_METRIC_OFF_CPU)
		fprintf(out, " (%" PRIu64 " of %" PRIu64 " samples%s", a->nsampled, a->all_samples,
			a->metric == SP_METRIC_WALL ? ", " : ")");
	else
		fputs(" (", out);
	if (a->metric != SP_METRIC_CPU)
		fprintf(out, "%" PRIu64 " off-CPU intervals)", a->nintervals);
	fputc('\n', out);
}

/*
 * A header value the recording or the user chose (the spool's path, the
 * command line), made printable (sp_buf_put_printable) and cut in the middle
 * to w columns: its start and its end say what it is.
 */
static void put_value(const char *s, size_t w, FILE *out)
{
	struct sp_buf b;
	sp_buf_init(&b);
	if (sp_buf_put_printable(&b, s) || sp_buf_append(&b, "", 1)) {
		sp_buf_release(&b);
		sp_fputs_printable(s, out);
		return;
	}
	char cut[1024];
	const char *text = (const char *)b.data;
	if (b.len - 1 > w && w < sizeof(cut)) {
		sp_text_cut(cut, sizeof(cut), text, w, SIZE_MAX);
		text = cut;
	}
	fputs(text, out);
	sp_buf_release(&b);
}

#define BUSIEST_MAX 5   /* processes the header names */
#define BUSIEST_NAME 24 /* columns of a process's name there, at most */

/*
 * With samples of more than one process (a system-wide recording, a
 * program that starts others): how many, and the busiest by kept samples,
 * as many as fit the width, each "NAME[PID] SHARE" ("NAME SHARE" for pid 0).
 */
static void write_processes(const struct sp_agg *a, const struct sp_report_opts *opts, FILE *out)
{
	struct sp_agg_groups g;
	struct sp_buf name;
	sp_buf_init(&name);
	size_t n = 0, w = sp_text_width(opts);
	if (sp_agg_groups_build(&g, a, SP_GROUP_PROCESS))
		goto out; /* no memory: the report goes on without the line */
	while (n < g.n && g.v[n].samples)
		n++;
	if (n < 2)
		goto out;
	char items[BUSIEST_MAX][BUSIEST_NAME + 40];
	size_t shown = 0, len = (size_t)snprintf(NULL, 0, "Processes:  %zu (busiest: ", n);
	for (; shown < n && shown < BUSIEST_MAX; shown++) {
		const struct sp_agg_group *p = &g.v[shown];
		char cut[BUSIEST_NAME + 1];
		name.len = 0;
		if (sp_buf_put_printable(&name, p->name[0] ? p->name : "[unknown]") ||
		    sp_buf_append(&name, "", 1))
			break;
		sp_text_cut(cut, sizeof(cut), (const char *)name.data, BUSIEST_NAME, SIZE_MAX);
		/* pid 0 is no process but the idle task of a system-wide recording: "[idle]" */
		int k = p->pid ? snprintf(items[shown], sizeof(items[shown]), "%s[%" PRId32 "] %.1f%%",
					  cut, p->pid, pct(p->samples, a->samples))
			       : snprintf(items[shown], sizeof(items[shown]), "%s %.1f%%", cut,
					  pct(p->samples, a->samples));
		/* ", " between, ")" after; the first one goes in whatever the width */
		if (shown && len + 2 + (size_t)k + 1 > w)
			break;
		len += (size_t)k + (shown ? 2 : 0);
	}
	fprintf(out, "Processes:  %zu (%s", n, shown < n ? "busiest: " : "");
	for (size_t i = 0; i < shown; i++)
		fprintf(out, "%s%s", i ? ", " : "", items[i]);
	fputs(")\n", out);
out:
	sp_buf_release(&name);
	sp_agg_groups_release(&g);
}

void sp_text_header(const struct sp_agg *a, const struct sp_report_opts *opts, FILE *out)
{
	const struct sp_spool *s = a->spool;
	const struct sp_spool_meta *meta = sp_spool_meta(s);
	const struct sp_summary *sum = sp_spool_summary(s);
	struct sp_symbolizer_stats st;
	sp_symbolizer_stats(a->sym, &st);

	size_t w = sp_text_width(opts) - 12; /* after "Command:    " */
	fputs("Spool:      ", out);
	put_value(opts->spool_path ? opts->spool_path : "(buffer)", w, out);
	fputs("\nCommand:    ", out);
	put_value(meta && meta->command && *meta->command ? meta->command : "(unknown)", w, out);
	fputc('\n', out);
	struct sp_sample_unit u;
	char event[80];
	sp_sample_unit_of(s, &u);
	sp_sample_unit_describe(&u, event, sizeof(event));
	fprintf(out, "Event:      %s\n", event);
	double secs = (double)(a->last_ns - a->first_ns) / 1e9;
	fprintf(out, "Duration:   %.3f s\n", secs);
	fprintf(out, "Samples:    %" PRIu64 " (lost %" PRIu64 ")\n", a->nsampled,
		sp_spool_lost_total(s));
	/* A time metric counts microseconds, shown as ms (docs/DESIGN.md, decision 12). */
	if (a->metric != SP_METRIC_CPU) {
		char amount[40];
		sp_agg_format_amount(a, a->samples, amount, sizeof(amount));
		fprintf(out, "Metric:     %s time (ms): %s in ", a->metric == SP_METRIC_WALL ? "wall" : "off-CPU",
			amount);
		if (a->metric == SP_METRIC_WALL)
			fprintf(out, "%" PRIu64 " CPU sample%s and %" PRIu64 " off-CPU interval%s\n",
				a->nsampled, a->nsampled == 1 ? "" : "s", a->nintervals,
				a->nintervals == 1 ? "" : "s");
		else
			fprintf(out, "%" PRIu64 " interval%s; CPU samples not counted\n", a->nintervals,
				a->nintervals == 1 ? "" : "s");
	}
	/* docs/DESIGN.md, decision 12: a counted event's samples weigh their periods. */
	if (a->unit.weighted)
		fprintf(out, "Events:     %" PRIu64 " %s (each sample weighs its period;"
			     " counts below are events)\n", a->samples, a->unit.event);
	sp_text_filters(a, opts, out);
	sp_text_offcpu_header(a, out);
	write_processes(a, opts, out);
	const char *of = a->metric != SP_METRIC_CPU ? "the time" : sp_sample_unit_noun(&a->unit, 2);
	char empty[40], truncated[40];
	sp_agg_format_count(a, a->empty_samples, empty, sizeof(empty));
	sp_agg_format_count(a, a->truncated_samples, truncated, sizeof(truncated));
	fprintf(out, "Empty:      %.1f%% of %s had no stack (%s)\n",
		pct(a->empty_samples, a->samples), of, empty);
	fprintf(out, "Truncated:  %.1f%% of %s had a truncated stack (%s)\n",
		pct(a->truncated_samples, a->samples), of, truncated);
	/* A recording cut short has no summary trailer: its counters were never written. */
	if (sum) {
		write_counters(sum, meta && (meta->flags & SP_META_SYSTEM_WIDE), out);
		write_error_stats(sum, out);
	}
	if (st.files_unproven)
		fprintf(out, "Unproven:   %" PRIu64 " module file%s differ%s from the recorded one%s;"
			     " shown as module+offset\n", st.files_unproven,
			st.files_unproven == 1 ? "" : "s", st.files_unproven == 1 ? "s" : "",
			st.files_unproven == 1 ? "" : "s");
	if (st.files_unreadable)
		fprintf(out, "Unreadable: %" PRIu64 " module file%s missing or not ELF;"
			     " shown as module+offset\n", st.files_unreadable,
			st.files_unreadable == 1 ? "" : "s");
	if (st.debug_files_mismatched)
		fprintf(out, "Debug files: %" PRIu64 " refused: build-id or CRC differs from the"
			     " module file's, or not to be trusted\n", st.debug_files_mismatched);
	sp_text_name_hints(a, out);
	if (!sum && opts && opts->growing)
		fprintf(out, "Note:       the recording is still going on; the samples written so"
			     " far are shown\n");
	else if (sp_spool_truncated(s) || !sum)
		fprintf(out, "Note:       the recording was cut short; only its intact prefix"
			     " is shown\n");
}
