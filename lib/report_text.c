/* SPDX-License-Identifier: MIT */
/* The text report: header, flat function table (or a call tree), heaviest complete stacks. */
#include "report_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_ROWS 25
#define DEFAULT_STACKS 5
#define LINE_COLUMNS SP_TEXT_COLUMNS /* the header's width */
#define LEFT_COLUMNS 27 /* "  Self%  Total%   Samples  " */
#define COUNT_COLUMNS 10 /* -n: "    Total " */
#define MODULE_MAX 20
#define FUNCTION_MIN 24

double sp_text_pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

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
	fputs(text, l->out);
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
static void write_counters(const struct sp_summary *sum, FILE *out)
{
	struct item_list l = {.out = out, .col = HEADER_INDENT};
	fputs("Counters:   ", out);
	put_count(&l, sum->sample_events, "sample event", "sample events");
	put_item(&l, "%" PRIu64 " written", sum->samples);
	put_item(&l, "%" PRIu64 " lost", sum->lost_events);
	put_item(&l, "kernel frames %s", sum->kernel_enabled ? "on" : "off");
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
		stopped += sum->stop_reasons[i];
	}
	for (unsigned i = 0; i < SP_ERR_COUNT_; i++) {
		if (!sum->error_stats[i])
			continue;
		kinds[nkinds++] = (struct count_row){sum->error_stats[i], sp_error_kind_name(i),
						     sp_error_kind_text(i)};
		failed += sum->error_stats[i];
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
			put_count(&l, sum->spliced_stacks, "stack continued by frame pointers",
				  "stacks continued by frame pointers");
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
	if (f->has_start && f->has_end)
		put_item(&l, "time %g-%g s", (double)f->start_ns / 1e9, (double)f->end_ns / 1e9);
	else if (f->has_start)
		put_item(&l, "time from %g s", (double)f->start_ns / 1e9);
	else if (f->has_end)
		put_item(&l, "time until %g s", (double)f->end_ns / 1e9);
	fprintf(out, "\nKept:       %" PRIu64 " of %" PRIu64 " samples (%.1f%%)\n", a->samples,
		a->all_samples, pct(a->samples, a->all_samples));
}

void sp_text_header(const struct sp_agg *a, const struct sp_report_opts *opts, FILE *out)
{
	const struct sp_spool *s = a->spool;
	const struct sp_spool_meta *meta = sp_spool_meta(s);
	const struct sp_summary *sum = sp_spool_summary(s);
	struct sp_symbolizer_stats st;
	sp_symbolizer_stats(a->sym, &st);

	fprintf(out, "Spool:      %s\n", opts->spool_path ? opts->spool_path : "(buffer)");
	fprintf(out, "Command:    %s\n", meta && meta->command && *meta->command ? meta->command
									: "(unknown)");
	fprintf(out, "Event:      %s", meta && meta->event_source == SP_EVENT_CYCLES ? "cycles"
										: "cpu-clock");
	if (meta && meta->frequency_hz)
		fprintf(out, " at %" PRIu32 " Hz", meta->frequency_hz);
	fputc('\n', out);
	double secs = (double)(a->last_ns - a->first_ns) / 1e9;
	fprintf(out, "Duration:   %.3f s\n", secs);
	fprintf(out, "Samples:    %" PRIu64 " (lost %" PRIu64 ")\n", a->samples,
		sp_spool_lost_total(s));
	sp_text_filters(a, opts, out);
	fprintf(out, "Empty:      %.1f%% of samples had no stack (%" PRIu64 ")\n",
		pct(a->empty_samples, a->samples), a->empty_samples);
	fprintf(out, "Truncated:  %.1f%% of samples had a truncated stack (%" PRIu64 ")\n",
		pct(a->truncated_samples, a->samples), a->truncated_samples);
	/* A recording cut short has no summary trailer: its counters were never written. */
	if (sum) {
		write_counters(sum, out);
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
			     " module file's\n", st.debug_files_mismatched);
	if (sp_spool_truncated(s) || !sum)
		fprintf(out, "Note:       the recording was cut short; only its intact prefix"
			     " is shown\n");
}

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

static size_t func_width(const struct sp_agg_func *f)
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

#define put_func sp_text_put_func

static double table_limit(const struct sp_report_opts *opts)
{
	return opts->percent_limit > 0 ? opts->percent_limit : 0;
}

static size_t text_width(const struct sp_report_opts *opts)
{
	return opts->width >= SP_TEXT_MIN_COLUMNS ? opts->width : SP_TEXT_COLUMNS;
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
	double limit = table_limit(opts);
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

static int write_table(const struct sp_agg *a, const struct sp_report_opts *opts, FILE *out)
{
	uint32_t max_rows = opts->max_rows ? opts->max_rows : DEFAULT_ROWS;
	uint32_t *order;
	size_t shown;
	int err = sp_text_func_order(a, opts, &order, &shown);
	if (err)
		return err;
	double limit = table_limit(opts);
	size_t rows = shown < max_rows ? shown : max_rows;

	size_t fw = strlen("Function"), mw = strlen("Module");
	for (size_t i = 0; i < rows; i++) {
		const struct sp_agg_func *f = &a->funcs[order[i]];
		size_t n = func_width(f), m = strlen(f->module);
		fw = n > fw ? n : fw;
		mw = m > mw ? m : mw;
	}
	size_t width = text_width(opts), left = LEFT_COLUMNS + (opts->show_counts ? COUNT_COLUMNS : 0);
	size_t module_max = MODULE_MAX + (width - SP_TEXT_COLUMNS) / 3;
	mw = mw > module_max ? module_max : mw;
	size_t room = width - left - 2 - mw;
	if (room < FUNCTION_MIN) { /* -n: the module column gives way */
		mw -= FUNCTION_MIN - room;
		room = FUNCTION_MIN;
	}
	fw = fw > room ? room : fw;
	fw = fw < FUNCTION_MIN ? FUNCTION_MIN : fw;

	if (opts->show_counts)
		fprintf(out, "\n  Self%%  Total%%      Self     Total  %-*s  Module\n", (int)fw,
			"Function");
	else
		fprintf(out, "\n  Self%%  Total%%   Samples  %-*s  Module\n", (int)fw, "Function");
	for (size_t i = 0; i < rows; i++) {
		const struct sp_agg_func *f = &a->funcs[order[i]];
		fprintf(out, "%6.1f%% %6.1f%% %9" PRIu64 " ", pct(f->self, a->whole),
			pct(f->total, a->whole), f->self);
		if (opts->show_counts)
			fprintf(out, "%9" PRIu64 " ", f->total);
		fputc(' ', out);
		put_func(out, f, fw, true);
		fputs("  ", out);
		put_cell(out, f->module, mw, false);
		fputc('\n', out);
	}
	if (shown > rows)
		fprintf(out, "(%zu more function%s not shown)\n", shown - rows,
			shown - rows == 1 ? "" : "s");
	if (a->nfuncs > shown && limit > 0)
		fprintf(out, "(%zu functions under %.2g%% not shown)\n", a->nfuncs - shown, limit);
	free(order);
	return 0;
}

struct stack_sort {
	const struct sp_agg *agg;
	const struct sp_seq_groups *groups;
};

static int by_count(const void *pa, const void *pb, void *ctx)
{
	const struct stack_sort *c = ctx;
	const struct sp_seq_group *x = &c->groups->groups[*(const uint32_t *)pa];
	const struct sp_seq_group *y = &c->groups->groups[*(const uint32_t *)pb];
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	const uint32_t *xi = c->groups->ids + x->off, *yi = c->groups->ids + y->off;
	for (uint32_t i = 0; i < x->len && i < y->len; i++) {
		int d = name_cmp(&c->agg->funcs[xi[i]], &c->agg->funcs[yi[i]]);
		if (d)
			return d;
	}
	return x->len < y->len ? -1 : x->len > y->len;
}

/* Complete stacks merged by their function sequence: ids differ when addresses do. */
int sp_agg_heaviest(struct sp_agg *a, struct sp_seq_groups *g, uint32_t **order_out)
{
	uint32_t *seq = NULL, *order = NULL;
	size_t seq_cap = 0;
	int err = 0;
	for (size_t sid = 1; sid < a->nstacks; sid++) {
		if (!a->stack_count[sid] || a->stack_truncated[sid])
			continue;
		const uint32_t *fr;
		size_t n = sp_agg_stack_frames(a, (uint32_t)sid, &fr);
		if (n > seq_cap) {
			free(seq);
			seq_cap = n * 2;
			if (!(seq = malloc(seq_cap * sizeof(*seq)))) {
				err = -ENOMEM;
				goto out;
			}
		}
		uint32_t len = 0;
		for (size_t i = 0; i < n; i++) {
			const uint32_t *funcs;
			size_t k = sp_agg_frame_funcs(a, fr[i], &funcs);
			if (len + k > seq_cap) {
				seq_cap = (len + k) * 2;
				uint32_t *bigger = realloc(seq, seq_cap * sizeof(*seq));
				if (!bigger) {
					err = -ENOMEM;
					goto out;
				}
				seq = bigger;
			}
			/* A marker inside a damaged stack has no functions (and no array). */
			if (k)
				memcpy(seq + len, funcs, k * sizeof(*seq));
			len += (uint32_t)k;
		}
		if (len && (err = sp_seq_groups_add(g, seq, len, a->stack_count[sid])))
			goto out;
	}
	if (!(order = malloc((g->ngroups ? g->ngroups : 1) * sizeof(*order)))) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < g->ngroups; i++)
		order[i] = (uint32_t)i;
	struct stack_sort ctx = {.agg = a, .groups = g};
	qsort_r(order, g->ngroups, sizeof(*order), by_count, &ctx);
	*order_out = order;
	order = NULL;
out:
	free(seq);
	free(order);
	return err;
}

static int write_stacks(struct sp_agg *a, const struct sp_report_opts *opts, FILE *out)
{
	uint32_t max_stacks = opts->max_stacks ? opts->max_stacks : DEFAULT_STACKS;
	struct sp_seq_groups g;
	uint32_t *order = NULL;
	sp_seq_groups_init(&g);
	int err = sp_agg_heaviest(a, &g, &order);
	if (err)
		goto out;
	fprintf(out, "\nHeaviest stacks (complete stacks, leaf first)\n");
	if (!g.ngroups)
		fprintf(out, "  (no complete stacks)\n");
	size_t width = text_width(opts);
	for (size_t i = 0; i < g.ngroups && i < max_stacks; i++) {
		const struct sp_seq_group *grp = &g.groups[order[i]];
		fprintf(out, "\n%5.1f%% (%" PRIu64 " sample%s)\n", pct(grp->count, a->whole),
			grp->count, grp->count == 1 ? "" : "s");
		for (uint32_t j = 0; j < grp->len; j++) {
			const struct sp_agg_func *f = &a->funcs[g.ids[grp->off + j]];
			/* "    function [marks] (module)", both cut to the width. */
			size_t module_max = MODULE_MAX + (width - SP_TEXT_COLUMNS) / 3;
			size_t mw = strlen(f->module), fw = func_width(f);
			mw = mw < module_max ? mw : module_max;
			size_t room = width - 4 - mw - 3;
			fputs("    ", out);
			put_func(out, f, fw < room ? fw : room, false);
			fputs(" (", out);
			put_cell(out, f->module, mw, false);
			fputs(")\n", out);
		}
	}
out:
	free(order);
	sp_seq_groups_release(&g);
	return err;
}

/* The flat table (or tree) and the heaviest stacks of one aggregation. */
static int write_views(struct sp_agg *a, const struct sp_report_opts *opts, FILE *out)
{
	if (!a->samples) {
		fprintf(out, "\nNo samples.\n");
		return 0;
	}
	int err = opts->tree || opts->inverted ? sp_report_tree(a, opts, out)
						: write_table(a, opts, out);
	if (!err)
		err = write_stacks(a, opts, out);
	return err;
}

/* A section of --group-by: a process or a thread and its kept samples. */
struct section {
	struct sp_agg_scope scope;
	uint64_t samples;
	int32_t pid, tid;
	const char *name;
};

static int by_section(const void *pa, const void *pb)
{
	const struct section *x = pa, *y = pb;
	if (x->samples != y->samples)
		return x->samples < y->samples ? 1 : -1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return strcmp(x->name, y->name);
}

/*
 * One section per process (named by its first thread with a name: the main
 * thread's comm, usually) or per thread, busiest first, each with its own
 * views; shares stay of all the report's samples, so sections add up.
 */
static int write_sections(struct sp_agg *a, const struct sp_report_opts *opts, FILE *out)
{
	const struct sp_spool *s = a->spool;
	size_t nthreads = sp_spool_thread_count(s), nsamples = sp_spool_sample_count(s), n = 0;
	struct section *sec = calloc(nthreads ? nthreads : 1, sizeof(*sec));
	uint32_t *of_thread = malloc((nthreads ? nthreads : 1) * sizeof(*of_thread));
	int err = -ENOMEM;
	if (!sec || !of_thread)
		goto out;
	for (uint32_t t = 0; t < nthreads; t++) {
		const struct sp_thread *th = sp_spool_thread(s, t);
		size_t j = n;
		if (opts->group_by == SP_GROUP_PROCESS)
			for (j = 0; j < n && sec[j].pid != th->pid; j++)
				;
		if (j == n) {
			sec[n++] = (struct section){
				.scope = {.kind = opts->group_by, .pid = th->pid, .thread = t},
				.pid = th->pid,
				.tid = opts->group_by == SP_GROUP_PROCESS ? th->pid : th->tid,
				.name = th->name,
			};
		} else if (!sec[j].name[0] || th->tid == th->pid) {
			sec[j].name = th->name; /* the main thread names its process */
		}
		of_thread[t] = (uint32_t)j;
	}
	for (size_t i = 0; i < nsamples; i++) {
		uint32_t t = sp_spool_sample(s, i)->thread;
		if (sp_agg_kept(a, i) && t < nthreads)
			sec[of_thread[t]].samples++;
	}
	qsort(sec, n, sizeof(*sec), by_section);
	err = 0;
	for (size_t i = 0; !err && i < n && sec[i].samples; i++) {
		struct sp_agg part;
		if (opts->group_by == SP_GROUP_PROCESS)
			fprintf(out, "\n== Process %" PRId32 " (%s): %.1f%% (%" PRIu64 " sample%s)\n",
				sec[i].pid, sec[i].name[0] ? sec[i].name : "[unknown]",
				pct(sec[i].samples, a->whole), sec[i].samples,
				sec[i].samples == 1 ? "" : "s");
		else
			fprintf(out, "\n== Thread %" PRId32 "/%" PRId32 " (%s): %.1f%% (%" PRIu64
				     " sample%s)\n", sec[i].pid, sec[i].tid,
				sec[i].name[0] ? sec[i].name : "[unknown]", pct(sec[i].samples, a->whole),
				sec[i].samples, sec[i].samples == 1 ? "" : "s");
		err = sp_agg_build_scoped(&part, s, a->sym, opts, &sec[i].scope);
		if (!err) {
			part.whole = a->whole;
			err = write_views(&part, opts, out);
		}
		sp_agg_release(&part);
	}
out:
	free(sec);
	free(of_thread);
	return err;
}

int sp_report_text(struct sp_agg *a, const struct sp_report_opts *opts, FILE *out)
{
	sp_text_header(a, opts, out);
	if (a->samples && opts->group_by != SP_GROUP_NONE)
		return write_sections(a, opts, out);
	return write_views(a, opts, out);
}
