/* SPDX-License-Identifier: MIT */
/* `stackpulse annotate`: options into struct sp_annotate_opts, then read, symbolize and annotate. */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum {
	OPT_FORMAT = 0x100,
	OPT_ROWS,
	OPT_SOURCE_DIR,
	OPT_NO_DEMANGLE,
};

#define MAX_FUNCTIONS 256 /* -s values */

struct annotate_args {
	const char *spool_path;
	const char *output;
	struct sp_annotate_opts opts;
	struct sp_symbolizer_opts sym;
	const char *functions[MAX_FUNCTIONS];
};

static const struct argp_option options[] = {
	{NULL, 0, NULL, 0, "What to annotate:", 1},
	{"function", 's', "FUNCTION", 0,
	 "annotate FUNCTION (its name as report shows it, or a shell pattern: * ? [...]); "
	 "repeat for more (default: the --rows functions with the most self samples)", 1},
	{"rows", OPT_ROWS, "N", 0,
	 "annotate the N functions with the most self samples (default 5); with -s, at most N "
	 "of those matched", 1},
	{NULL, 0, NULL, 0, "Output:", 2},
	{"output", 'o', "FILE", 0, "write to FILE instead of standard output", 2},
	{"format", OPT_FORMAT, "FORMAT", 0,
	 "text (default): each function's source lines with samples, then its disassembly "
	 "with the samples of each instruction and the source lines between; json: the same "
	 "for scripts, per function \"lines\" and \"instructions\"", 2},
	{"source-dir", OPT_SOURCE_DIR, "DIR", 0,
	 "look for source files in DIR first (DIR/PATH, then DIR/BASENAME), before the path "
	 "the debug information names, its compilation directory and the module file's "
	 "directory", 2},
	{NULL, 0, NULL, 0, "Symbols:", 3},
	{"no-demangle", OPT_NO_DEMANGLE, NULL, 0,
	 "show C++ and Rust names as they are in the symbol table", 3},
	{NULL, 0, NULL, 0, NULL, 0},
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct annotate_args *a = state->input;
	switch (key) {
	case 'o':
		a->output = arg;
		break;
	case 's':
		if (a->opts.nfunctions == MAX_FUNCTIONS)
			argp_error(state, "too many functions: at most %d -s options", MAX_FUNCTIONS);
		a->functions[a->opts.nfunctions++] = arg;
		break;
	case OPT_ROWS: {
		char *end;
		errno = 0;
		unsigned long v = strtoul(arg, &end, 10);
		if (errno || end == arg || *end || arg[0] == '-' || v == 0 || v > 100000)
			argp_error(state, "invalid row count '%.*s%s': expected a number from 1 to "
				   "100000", SP_CLI_ECHO(arg));
		a->opts.max_functions = (uint32_t)v;
		break;
	}
	case OPT_FORMAT:
		if (!strcmp(arg, "text"))
			a->opts.format = SP_ANNOTATE_TEXT;
		else if (!strcmp(arg, "json"))
			a->opts.format = SP_ANNOTATE_JSON;
		else
			argp_error(state, "unknown format '%.*s%s': expected text or json",
				   SP_CLI_ECHO(arg));
		break;
	case OPT_SOURCE_DIR:
		a->opts.source_dir = arg;
		break;
	case OPT_NO_DEMANGLE:
		a->sym.no_demangle = true;
		break;
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &a->sym;
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
	"Show where in a function the samples of a spool (default profile.spool) fell: its "
	"source lines with their self samples (inlined code on its own lines, under the line "
	"that called it), then its disassembly with each instruction's samples and the source "
	"lines interleaved, as perf annotate lays it out.  The functions with the most self "
	"samples, or those named with -s.  Names and lines take the symbols stored in the "
	"spool when it has them; the code is read from the recorded module files, each "
	"proven to be the file that was recorded.  A sample lands where the program counter "
	"was: for a software clock event (cpu-clock), usually the instruction after the one "
	"that took the time."
	SP_CLI_EXIT_DOC,
	children, NULL, NULL,
};

/* Say once what could not be read: the output names it in place too. */
static void warn_result(const struct sp_annotate_result *res)
{
	if (res->functions_unmatched)
		sp_cli_warn("%zu of the -s functions matched no function with self samples",
			    res->functions_unmatched);
	if (res->modules_unreadable)
		sp_cli_warn("no disassembly from %zu module file%s: cannot read '%s': %s",
			    res->modules_unreadable, res->modules_unreadable == 1 ? "" : "s",
			    res->module_unreadable, res->module_unreadable_why);
	if (res->sources_missing)
		sp_cli_warn("source file '%s'%s not found: lines are shown without their text "
			    "(give --source-dir DIR)", res->source_missing,
			    res->sources_missing > 1 ? " and others" : "");
}

int cmd_annotate(int argc, char **argv)
{
	struct annotate_args a = {.spool_path = "profile.spool"};
	argp_parse(&argp, argc, argv, 0, NULL, &a);
	a.opts.functions = a.functions;
	a.opts.spool_path = a.spool_path;

	struct sp_spool *spool = NULL;
	struct sp_symbolizer *sym = NULL;
	struct sp_annotate_result res = {0};
	FILE *out = NULL;
	int rc = SP_EXIT_FAILURE;
	int err = sp_cli_open_spool(a.spool_path, 0, 0, &spool, NULL);
	if (err) {
		rc = sp_cli_error("cannot open spool '%s': %s", a.spool_path, sp_strerror(err));
		goto out;
	}
	if (sp_spool_truncated(spool) || !sp_spool_summary(spool))
		sp_cli_warn("spool '%s' is truncated or still being written; annotating its "
			    "intact prefix", a.spool_path);
	err = sp_symbolizer_new(spool, &a.sym, &sym);
	if (err) {
		rc = sp_cli_error("cannot set up symbolization of '%s': %s", a.spool_path,
				  sp_strerror(err));
		goto out;
	}
	out = sp_cli_open_output(a.output);
	if (!out)
		goto out;
	err = sp_annotate_write(spool, sym, &a.opts, out, &res);
	rc = sp_cli_close_output(out, a.output);
	if (err)
		rc = sp_cli_error("cannot annotate '%s': %s", a.spool_path, sp_strerror(err));
	else
		warn_result(&res);
	if (!err) {
		struct sp_symbolizer_stats st;
		sp_symbolizer_stats(sym, &st);
		sp_cli_warn_symbol_sources(&st, &a.sym);
	}
out:
	sp_annotate_result_release(&res);
	sp_symbolizer_free(sym);
	sp_spool_free(spool);
	return rc;
}
