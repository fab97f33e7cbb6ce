/* SPDX-License-Identifier: MIT */
/* `stackpulse report`: options into struct sp_report_opts, then read, symbolize and write a view. */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
	OPT_FORMAT = 0x100,
	OPT_ROWS,
	OPT_STACKS,
	OPT_NO_DEMANGLE,
	OPT_NO_INLINE,
	OPT_LINES,
	OPT_SHOW_RUNTIME,
};

struct report_args {
	const char *spool_path;
	const char *output;
	struct sp_report_opts report;
	struct sp_symbolizer_opts sym;
};

static const struct argp_option options[] = {
	{NULL, 0, NULL, 0, "Output:", 1},
	{"output", 'o', "FILE", 0, "write the report to FILE instead of standard output", 1},
	{"format", OPT_FORMAT, "FORMAT", 0,
	 "text (default): header, function table, heaviest stacks; "
	 "folded: one 'root;...;leaf COUNT' line per stack, for flamegraph.pl; "
	 "pprof: gzip'd profile.proto for go tool pprof (binary: use -o); "
	 "speedscope: speedscope's JSON, one profile per thread; "
	 "perf-script: the text of 'perf script'", 1},
	{NULL, 0, NULL, 0, "Text report:", 2},
	{"rows", OPT_ROWS, "N", 0, "show N functions in the table (default 25)", 2},
	{"stacks", OPT_STACKS, "N", 0, "show the N heaviest stacks (default 5)", 2},
	{NULL, 0, NULL, 0, "Symbols:", 3},
	{"no-demangle", OPT_NO_DEMANGLE, NULL, 0,
	 "show C++ names as they are in the symbol table (ignores stored symbols, "
	 "which are demangled)", 3},
	{"no-inline", OPT_NO_INLINE, NULL, 0,
	 "fold inlined functions into the function they were inlined into "
	 "(default: each is a frame of its own, marked inline)", 3},
	{"lines", OPT_LINES, NULL, 0,
	 "tell source lines apart: 'function (file:line)' in the text report, "
	 "'function:line' in folded stacks", 3},
	{"show-runtime", OPT_SHOW_RUNTIME, NULL, 0,
	 "show the Python runtime's native frames (the interpreter's C functions), hidden "
	 "by default where its perf map names the Python functions", 3},
	{NULL, 0, NULL, 0, NULL, 0},
};

static uint32_t parse_count(const char *arg, const char *what, struct argp_state *state)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || v == 0 || v > 1000000)
		argp_error(state, "invalid %s '%s': expected a number from 1 to 1000000", what, arg);
	return (uint32_t)v;
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct report_args *a = state->input;
	switch (key) {
	case 'o':
		a->output = arg;
		break;
	case OPT_FORMAT:
		if (!strcmp(arg, "text"))
			a->report.format = SP_REPORT_TEXT;
		else if (!strcmp(arg, "folded"))
			a->report.format = SP_REPORT_FOLDED;
		else if (!strcmp(arg, "pprof"))
			a->report.format = SP_REPORT_PPROF;
		else if (!strcmp(arg, "speedscope"))
			a->report.format = SP_REPORT_SPEEDSCOPE;
		else if (!strcmp(arg, "perf-script"))
			a->report.format = SP_REPORT_PERF_SCRIPT;
		else
			argp_error(state, "unknown format '%s': expected text, folded, pprof, "
				   "speedscope or perf-script", arg);
		break;
	case OPT_ROWS:
		a->report.max_rows = parse_count(arg, "row count", state);
		break;
	case OPT_STACKS:
		a->report.max_stacks = parse_count(arg, "stack count", state);
		break;
	case OPT_NO_DEMANGLE:
		a->sym.no_demangle = true;
		break;
	case OPT_NO_INLINE:
		a->sym.no_inline = true;
		break;
	case OPT_LINES:
		a->report.lines = true;
		break;
	case OPT_SHOW_RUNTIME:
		a->report.show_runtime = true;
		break;
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &a->sym;
		break;
	case ARGP_KEY_END:
		/* gzip data on a terminal helps nobody (gzip(1) refuses the same way). */
		if (a->report.format == SP_REPORT_PPROF &&
		    (!a->output || !strcmp(a->output, "-")) && isatty(STDOUT_FILENO))
			argp_error(state, "pprof output is binary: write it with -o FILE or "
				   "redirect standard output");
		break;
	case ARGP_KEY_ARG:
		if (state->arg_num > 0)
			argp_error(state, "too many arguments: one SPOOL at most");
		a->spool_path = arg;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp_child children[] = {
	{&sp_cli_symbol_argp, 0, NULL, 3},
	{NULL, 0, NULL, 0},
};

static const struct argp argp = {
	options, parse_opt, "[SPOOL]",
	"Print where CPU time went in a spool (default profile.spool), or export it "
	"for other tools: folded stacks, pprof, speedscope, perf script.  Frames take "
	"the symbols 'stackpulse symbolize' stored in the spool; the others are "
	"symbolized on the fly from the recorded module files, each proven to be the "
	"file that was recorded."
	SP_CLI_EXIT_DOC,
	children, NULL, NULL,
};

static void warn_symbols(const struct sp_symbolizer *sym, const struct sp_symbolizer_opts *o)
{
	struct sp_symbolizer_stats st;
	sp_symbolizer_stats(sym, &st);
	sp_cli_warn_symbol_sources(&st, o);
}

int cmd_report(int argc, char **argv)
{
	struct report_args a = {
		.spool_path = "profile.spool",
		.output = NULL,
		.report = {.format = SP_REPORT_TEXT, .max_rows = 25, .max_stacks = 5},
		.sym = {.no_demangle = false, .perf_map_policy = SP_PERF_MAPS_ALL},
	};
	argp_parse(&argp, argc, argv, 0, NULL, &a);
	a.report.spool_path = a.spool_path;

	struct sp_spool *spool = NULL;
	struct sp_symbolizer *sym = NULL;
	FILE *out = NULL;
	int rc = SP_EXIT_FAILURE;
	int err = sp_spool_open(a.spool_path, &spool);
	if (err)
		return sp_cli_error("cannot open spool '%s': %s", a.spool_path, sp_strerror(err));
	if (sp_spool_truncated(spool) || !sp_spool_summary(spool))
		sp_cli_warn("spool '%s' is truncated (the recording was cut short); "
			    "reporting its intact prefix", a.spool_path);
	err = sp_symbolizer_new(spool, &a.sym, &sym);
	if (err) {
		sp_cli_error("cannot set up symbolization: %s", sp_strerror(err));
		goto out;
	}
	/* Opened last, so a spool that fails to load leaves no empty report behind. */
	out = sp_cli_open_output(a.output);
	if (!out)
		goto out;
	err = sp_report_write(spool, sym, &a.report, out);
	rc = sp_cli_close_output(out, a.output);
	if (err)
		rc = sp_cli_error("cannot write report: %s", sp_strerror(err));
	else
		warn_symbols(sym, &a.sym);
out:
	sp_symbolizer_free(sym);
	sp_spool_free(spool);
	return rc;
}
