/* SPDX-License-Identifier: MIT */
/* The text report: the flat function table (or a call tree), the heaviest complete stacks, --group-by sections. */
#include "report/views.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_ROWS 25
#define DEFAULT_STACKS 5
#define LEFT_COLUMNS 27 /* "  Self%  Total%   Samples  " */
#define COUNT_COLUMNS 10 /* -n: "    Total " */
#define MODULE_MAX 20
#define FUNCTION_MIN 24

#define pct sp_text_pct
#define put_cell sp_text_put_cell
#define put_func sp_text_put_func

static int write_table(const struct sp_agg *a, const struct sp_report_opts *opts, FILE *out)
{
	uint32_t max_rows = opts->max_rows ? opts->max_rows : DEFAULT_ROWS;
	uint32_t *order;
	size_t shown;
	int err = sp_text_func_order(a, opts, &order, &shown);
	if (err)
		return err;
	double limit = sp_text_limit(opts);
	size_t rows = shown < max_rows ? shown : max_rows;

	size_t fw = strlen("Function"), mw = strlen("Module");
	for (size_t i = 0; i < rows; i++) {
		const struct sp_agg_func *f = &a->funcs[order[i]];
		size_t n = sp_text_func_width(f), m = strlen(f->module);
		fw = n > fw ? n : fw;
		mw = m > mw ? m : mw;
	}
	size_t width = sp_text_width(opts), left = LEFT_COLUMNS + (opts->show_counts ? COUNT_COLUMNS : 0);
	size_t module_max = MODULE_MAX + (width - SP_TEXT_COLUMNS) / 3;
	mw = mw > module_max ? module_max : mw;
	size_t room = width - left - 2 - mw;
	if (room < FUNCTION_MIN) { /* -n: the module column gives way */
		mw -= FUNCTION_MIN - room;
		room = FUNCTION_MIN;
	}
	fw = fw > room ? room : fw;
	fw = fw < FUNCTION_MIN ? FUNCTION_MIN : fw;

	/* Different functions must not print alike when their names are cut. */
	size_t *diff = NULL;
	if (sp_text_name_diffs(a, order, rows, fw, &diff)) {
		free(order);
		return -ENOMEM;
	}
	if (opts->show_counts)
		fprintf(out, "\n  Self%%  Total%%      Self     Total  %-*s  Module\n", (int)fw,
			"Function");
	else
		fprintf(out, "\n  Self%%  Total%% %s  %-*s  Module\n", SP_COUNT_HEADING(a),
			(int)fw, "Function");
	for (size_t i = 0; i < rows; i++) {
		const struct sp_agg_func *f = &a->funcs[order[i]];
		char cell[32];
		SP_COUNT_CELL(a, f->self, cell);
		fprintf(out, "%6.1f%% %6.1f%% %s ", pct(f->self, a->whole), pct(f->total, a->whole),
			cell);
		if (opts->show_counts) {
			SP_COUNT_CELL(a, f->total, cell);
			fprintf(out, "%s ", cell);
		}
		fputc(' ', out);
		sp_text_put_func_at(out, f, fw, true, diff[i]);
		fputs("  ", out);
		put_cell(out, f->module, mw, false);
		fputc('\n', out);
	}
	free(diff);
	if (shown > rows)
		fprintf(out, "(%zu more function%s not shown)\n", shown - rows,
			shown - rows == 1 ? "" : "s");
	if (a->nfuncs > shown && limit > 0)
		fprintf(out, "(%zu functions under %.2g%% not shown)\n", a->nfuncs - shown, limit);
	free(order);
	return 0;
}

/* "    function [marks] (module)": the name's and the module's widths in a line of width. */
static void stack_line_widths(const struct sp_agg_func *f, size_t width, size_t *room, size_t *mw)
{
	size_t module_max = MODULE_MAX + (width - SP_TEXT_COLUMNS) / 3;
	size_t fw = sp_text_func_width(f);
	*mw = strlen(f->module) < module_max ? strlen(f->module) : module_max;
	size_t r = width - 4 - *mw - 3;
	*room = fw < r ? fw : r;
}

/*
 * Where each function the shown stacks print parts from another whose name
 * would be cut alike: *diff_at by function id (SIZE_MAX: nowhere), for the
 * functions of paths; malloc'd.
 */
static int stack_name_diffs(const struct sp_agg *a, const uint32_t *top, size_t ntop, size_t width,
			    size_t **diff_at)
{
	size_t *by_func = malloc((a->nfuncs ? a->nfuncs : 1) * sizeof(*by_func));
	const struct sp_agg_func **funcs = NULL;
	uint32_t *path = NULL, *ids = NULL;
	size_t *widths = NULL, *d = NULL, n = 0, cap = 0, wcap = 0, icap = 0, path_cap = 0;
	int err = by_func ? 0 : -ENOMEM;
	for (size_t i = 0; i < a->nfuncs && by_func; i++)
		by_func[i] = SIZE_MAX;
	for (size_t i = 0; i < ntop && !err; i++) {
		size_t len = sp_agg_node_path(a, top[i], &path, &path_cap);
		for (size_t j = 0; j < len && !err; j++) {
			uint32_t fn = path[j];
			if (fn >= a->nfuncs || by_func[fn] != SIZE_MAX)
				continue;
			by_func[fn] = n; /* its place in funcs[] for now */
			if ((err = sp_array_reserve((void **)&funcs, &cap, n + 1, sizeof(*funcs))) ||
			    (err = sp_array_reserve((void **)&widths, &wcap, n + 1, sizeof(*widths))) ||
			    (err = sp_array_reserve((void **)&ids, &icap, n + 1, sizeof(*ids))))
				break;
			size_t mw;
			stack_line_widths(&a->funcs[fn], width, &widths[n], &mw);
			funcs[n] = &a->funcs[fn];
			ids[n++] = fn;
		}
	}
	if (!err && n)
		err = sp_text_name_diffs_each(funcs, widths, n, &d);
	for (size_t k = 0; !err && k < n; k++)
		by_func[ids[k]] = d[k];
	free(d);
	free(funcs);
	free(ids);
	free(widths);
	free(path);
	if (err) {
		free(by_func);
		return err;
	}
	*diff_at = by_func;
	return 0;
}

static int write_stacks(struct sp_agg *a, const struct sp_report_opts *opts, FILE *out)
{
	uint32_t max_stacks = opts->max_stacks ? opts->max_stacks : DEFAULT_STACKS;
	uint32_t *top = NULL, *path = NULL;
	size_t ntop = 0, path_cap = 0, *diff_at = NULL;
	size_t width = sp_text_width(opts);
	int err = sp_agg_heaviest(a, max_stacks, &top, &ntop);
	if (!err)
		err = stack_name_diffs(a, top, ntop, width, &diff_at);
	if (err)
		goto out;
	fprintf(out, "\nHeaviest stacks (complete stacks, leaf first)\n");
	if (!ntop)
		fprintf(out, "  (no complete stacks)\n");
	for (size_t i = 0; i < ntop; i++) {
		uint64_t count = a->nodes[top[i]].count;
		size_t len = sp_agg_node_path(a, top[i], &path, &path_cap);
		if (!len) {
			err = -ENOMEM;
			goto out;
		}
		char n[48];
		sp_agg_format_amount(a, count, n, sizeof(n));
		fprintf(out, "\n%5.1f%% (%s)\n", pct(count, a->whole), n);
		for (size_t j = 0; j < len; j++) {
			if (path[j] >= a->nfuncs) {
				fputs("    [truncated]\n", out); /* a marker inside a damaged stack */
				continue;
			}
			const struct sp_agg_func *f = &a->funcs[path[j]];
			/* "    function [marks] (module)", both cut to the width. */
			size_t room, mw;
			stack_line_widths(f, width, &room, &mw);
			fputs("    ", out);
			sp_text_put_func_at(out, f, room, false, diff_at[path[j]]);
			fputs(" (", out);
			put_cell(out, f->module, mw, false);
			fputs(")\n", out);
		}
	}
out:
	free(top);
	free(path);
	free(diff_at);
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
	if (!err && !opts->hide_stacks)
		err = write_stacks(a, opts, out);
	return err;
}

/*
 * One section per process (named by its main thread) or per thread, busiest
 * first, each with its own views; shares stay of all the report's samples,
 * so sections add up.
 */
static int write_sections(struct sp_agg *a, const struct sp_report_opts *opts, FILE *out)
{
	struct sp_agg_groups g;
	int err = sp_agg_groups_build(&g, a, opts->group_by);
	double limit = sp_text_limit(opts);
	uint64_t rest = 0, rest_samples = 0, over = 0, over_samples = 0, shown = 0;
	for (size_t i = 0; !err && i < g.n && g.v[i].samples; i++) {
		const struct sp_agg_group *sec = &g.v[i];
		struct sp_agg part;
		/* --percent-limit leaves small sections out too, counted at the end */
		if (limit > 0 && pct(sec->samples, a->whole) < limit) {
			rest++;
			rest_samples += sec->samples;
			continue;
		}
		/* Each section costs a pass and a full set of views: the busiest only. */
		if (shown++ >= SP_REPORT_SECTIONS_MAX) {
			over++;
			over_samples += sec->samples;
			continue;
		}
		if (g.kind == SP_GROUP_PROCESS)
			fprintf(out, "\n== Process %" PRId32 " (", sec->pid);
		else
			fprintf(out, "\n== Thread %" PRId32 "/%" PRId32 " (", sec->pid, sec->tid);
		/* The target names its threads: never raw to a terminal. */
		sp_fputs_printable(sec->name[0] ? sec->name : "[unknown]", out);
		char amount[48];
		sp_agg_format_amount(a, sec->samples, amount, sizeof(amount));
		fprintf(out, "): %.1f%% (%s)\n", pct(sec->samples, a->whole), amount);
		err = sp_agg_build_scoped(&part, a->spool, a->sym, opts, &sec->scope);
		if (!err) {
			part.whole = a->whole;
			err = write_views(&part, opts, out);
		}
		sp_agg_release(&part);
	}
	if (!err && over) {
		char over_amount[48];
		sp_agg_format_amount(a, over_samples, over_amount, sizeof(over_amount));
		fprintf(out, "\n(%" PRIu64 " more %s past the busiest %d, left out: %.1f%%, %s)\n",
			over,
			g.kind == SP_GROUP_PROCESS ? (over == 1 ? "process" : "processes")
						   : (over == 1 ? "thread" : "threads"),
			SP_REPORT_SECTIONS_MAX, pct(over_samples, a->whole), over_amount);
	}
	char rest_amount[48];
	sp_agg_format_amount(a, rest_samples, rest_amount, sizeof(rest_amount));
	if (!err && rest)
		fprintf(out, "\n(%" PRIu64 " more %s under %.1f%% each: %.1f%%, %s)\n",
			rest, g.kind == SP_GROUP_PROCESS ? (rest == 1 ? "process" : "processes")
							 : (rest == 1 ? "thread" : "threads"),
			limit, pct(rest_samples, a->whole), rest_amount);
	sp_agg_groups_release(&g);
	return err;
}

int sp_report_text(struct sp_agg *a, const struct sp_report_opts *opts, FILE *out)
{
	sp_text_header(a, opts, out);
	if (a->samples && opts->group_by != SP_GROUP_NONE)
		return write_sections(a, opts, out);
	return write_views(a, opts, out);
}
