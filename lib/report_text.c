/* SPDX-License-Identifier: MIT */
/* The text report: header, flat function table by self share, heaviest complete stacks. */
#include "report_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_ROWS 25
#define DEFAULT_STACKS 5
#define LINE_COLUMNS 80
#define LEFT_COLUMNS 27 /* "  Self%  Total%   Samples  " */
#define MODULE_MAX 20
#define FUNCTION_MIN 24

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

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

static void write_header(const struct sp_agg *a, const struct sp_report_opts *opts, FILE *out)
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

static int name_cmp(const struct sp_agg_func *x, const struct sp_agg_func *y)
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

static int by_self(const void *pa, const void *pb, void *ctx)
{
	const struct sp_agg *a = ctx;
	const struct sp_agg_func *x = &a->funcs[*(const uint32_t *)pa];
	const struct sp_agg_func *y = &a->funcs[*(const uint32_t *)pb];
	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return name_cmp(x, y);
}

/* Print s in a column of width w, cutting long text with "..." so lines stay in bounds. */
static void put_cell(FILE *out, const char *s, size_t w, bool pad)
{
	size_t n = strlen(s);
	if (n > w && w > 3)
		fprintf(out, "%.*s...", (int)(w - 3), s);
	else if (pad)
		fprintf(out, "%-*s", (int)w, s);
	else
		fputs(s, out);
}

/* A function in a column of width w: a long name is cut before its suffix, which stays. */
static void put_func(FILE *out, const struct sp_agg_func *f, size_t w, bool pad)
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

static int write_table(const struct sp_agg *a, uint32_t max_rows, FILE *out)
{
	uint32_t *order = malloc((a->nfuncs ? a->nfuncs : 1) * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < a->nfuncs; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, a->nfuncs, sizeof(*order), by_self, (void *)a);
	size_t rows = a->nfuncs < max_rows ? a->nfuncs : max_rows;

	size_t fw = strlen("Function"), mw = strlen("Module");
	for (size_t i = 0; i < rows; i++) {
		const struct sp_agg_func *f = &a->funcs[order[i]];
		size_t n = func_width(f), m = strlen(f->module);
		fw = n > fw ? n : fw;
		mw = m > mw ? m : mw;
	}
	mw = mw > MODULE_MAX ? MODULE_MAX : mw;
	size_t room = LINE_COLUMNS - LEFT_COLUMNS - 2 - mw;
	fw = fw > room ? room : fw;
	fw = fw < FUNCTION_MIN ? FUNCTION_MIN : fw;

	fprintf(out, "\n  Self%%  Total%%   Samples  %-*s  Module\n", (int)fw, "Function");
	for (size_t i = 0; i < rows; i++) {
		const struct sp_agg_func *f = &a->funcs[order[i]];
		fprintf(out, "%6.1f%% %6.1f%% %9" PRIu64 "  ", pct(f->self, a->samples),
			pct(f->total, a->samples), f->self);
		put_func(out, f, fw, true);
		fputs("  ", out);
		put_cell(out, f->module, mw, false);
		fputc('\n', out);
	}
	if (a->nfuncs > rows)
		fprintf(out, "(%zu more functions not shown)\n", a->nfuncs - rows);
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
static int write_stacks(struct sp_agg *a, uint32_t max_stacks, FILE *out)
{
	struct sp_seq_groups g;
	uint32_t *seq = NULL, *order = NULL;
	size_t seq_cap = 0;
	int err = 0;
	sp_seq_groups_init(&g);
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
		if (len && (err = sp_seq_groups_add(&g, seq, len, a->stack_count[sid])))
			goto out;
	}
	if (!(order = malloc((g.ngroups ? g.ngroups : 1) * sizeof(*order)))) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < g.ngroups; i++)
		order[i] = (uint32_t)i;
	struct stack_sort ctx = {.agg = a, .groups = &g};
	qsort_r(order, g.ngroups, sizeof(*order), by_count, &ctx);

	fprintf(out, "\nHeaviest stacks (complete stacks, leaf first)\n");
	if (!g.ngroups)
		fprintf(out, "  (no complete stacks)\n");
	for (size_t i = 0; i < g.ngroups && i < max_stacks; i++) {
		const struct sp_seq_group *grp = &g.groups[order[i]];
		fprintf(out, "\n%5.1f%% (%" PRIu64 " sample%s)\n", pct(grp->count, a->samples),
			grp->count, grp->count == 1 ? "" : "s");
		for (uint32_t j = 0; j < grp->len; j++) {
			const struct sp_agg_func *f = &a->funcs[g.ids[grp->off + j]];
			char suffix[SUFFIX_MAX];
			func_suffix(f, suffix, sizeof(suffix));
			fprintf(out, "    %s%s (%s)\n", f->name, suffix, f->module);
		}
	}
out:
	free(seq);
	free(order);
	sp_seq_groups_release(&g);
	return err;
}

int sp_report_text(struct sp_agg *a, const struct sp_report_opts *opts, FILE *out)
{
	write_header(a, opts, out);
	if (!a->samples) {
		fprintf(out, "\nNo samples.\n");
		return 0;
	}
	int err = write_table(a, opts->max_rows ? opts->max_rows : DEFAULT_ROWS, out);
	if (!err)
		err = write_stacks(a, opts->max_stacks ? opts->max_stacks : DEFAULT_STACKS, out);
	return err;
}
