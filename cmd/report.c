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
	OPT_KALLSYMS,
	OPT_NO_KERNEL_SYMBOLS,
	OPT_PERF_MAP_DIR,
	OPT_PERF_MAPS,
	OPT_NO_INLINE,
	OPT_LINES,
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
	 "perf-script: the text of 'perf script'; "
	 "flamegraph: an interactive flame graph, one self-contained SVG for a browser", 1},
	{NULL, 0, NULL, 0, "Text report:", 2},
	{"rows", OPT_ROWS, "N", 0, "show N functions in the table (default 25)", 2},
	{"stacks", OPT_STACKS, "N", 0, "show the N heaviest stacks (default 5)", 2},
	{NULL, 0, NULL, 0, "Symbols:", 3},
	{"no-demangle", OPT_NO_DEMANGLE, NULL, 0, "show C++ names as they are in the symbol table", 3},
	{"kallsyms", OPT_KALLSYMS, "FILE", 0,
	 "name kernel frames from FILE, a copy of /proc/kallsyms saved while recording "
	 "(default: /proc/kallsyms, when the running kernel is the recorded release)", 3},
	{"no-kernel-symbols", OPT_NO_KERNEL_SYMBOLS, NULL, 0,
	 "show kernel frames as [kernel]+0xADDRESS", 3},
	{"perf-map-dir", OPT_PERF_MAP_DIR, "DIR", 0,
	 "read perf-PID.map files from DIR instead of /tmp", 3},
	{"perf-maps", OPT_PERF_MAPS, "WHICH", 0,
	 "whose perf maps name anonymous code: all (default), python (processes "
	 "recorded as Python runtimes), none", 3},
	{"no-inline", OPT_NO_INLINE, NULL, 0,
	 "fold inlined functions into the function they were inlined into "
	 "(default: each is a frame of its own, marked inline)", 3},
	{"lines", OPT_LINES, NULL, 0,
	 "tell source lines apart: 'function (file:line)' in the text report, "
	 "'function:line' in folded stacks", 3},
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
		else if (!strcmp(arg, "flamegraph"))
			a->report.format = SP_REPORT_FLAMEGRAPH;
		else
			argp_error(state, "unknown format '%s': expected text, folded, pprof, "
				   "speedscope, perf-script or flamegraph", arg);
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
	case OPT_KALLSYMS:
		a->sym.kallsyms_path = arg;
		break;
	case OPT_NO_KERNEL_SYMBOLS:
		a->sym.no_kernel_symbols = true;
		break;
	case OPT_PERF_MAP_DIR:
		a->sym.perf_map_dir = arg;
		break;
	case OPT_NO_INLINE:
		a->sym.no_inline = true;
		break;
	case OPT_LINES:
		a->report.lines = true;
		break;
	case OPT_PERF_MAPS:
		if (!strcmp(arg, "all"))
			a->sym.perf_map_policy = SP_PERF_MAPS_ALL;
		else if (!strcmp(arg, "python"))
			a->sym.perf_map_policy = SP_PERF_MAPS_PYTHON;
		else if (!strcmp(arg, "none"))
			a->sym.perf_map_policy = SP_PERF_MAPS_NONE;
		else
			argp_error(state, "unknown perf map choice '%s': expected all, python or none",
				   arg);
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

static const struct argp argp = {
	options, parse_opt, "[SPOOL]",
	"Print where CPU time went in a spool (default profile.spool), or export it "
	"for other tools: folded stacks, pprof, speedscope, perf script.  Frames are "
	"symbolized on the fly from the recorded module files, each proven to be the "
	"file that was recorded."
	SP_CLI_EXIT_DOC,
	NULL, NULL, NULL,
};

/* Say once why kernel or perf-map names are missing; the report itself stays clean. */
static void warn_symbol_sources(const struct sp_symbolizer *sym,
				const struct sp_symbolizer_opts *o)
{
	struct sp_symbolizer_stats st;
	sp_symbolizer_stats(sym, &st);
	const char *ks = o->kallsyms_path ? o->kallsyms_path : "/proc/kallsyms";
	if (st.kallsyms_other_kernel)
		sp_cli_warn("kernel frames shown as addresses: the recording ran another kernel "
			    "release than this one (give its kallsyms with --kallsyms FILE)");
	else if (st.kallsyms_error)
		sp_cli_warn("kernel frames shown as addresses: cannot read '%s': %s", ks,
			    sp_strerror(st.kallsyms_error));
	else if (st.kallsyms_restricted)
		sp_cli_warn("kernel frames shown as addresses: '%s' shows every address as 0 "
			    "(kernel.kptr_restrict; read it as root)", ks);
	if (st.kallsyms_malformed)
		sp_cli_warn("%" PRIu64 " malformed line%s of '%s' skipped", st.kallsyms_malformed,
			    st.kallsyms_malformed == 1 ? "" : "s", ks);
	const char *dir = o->perf_map_dir ? o->perf_map_dir : "/tmp";
	if (st.perf_maps_stale)
		sp_cli_warn("%" PRIu64 " perf map%s in '%s' ignored: older than the recorded "
			    "process (left by an earlier process with the same pid)",
			    st.perf_maps_stale, st.perf_maps_stale == 1 ? "" : "s", dir);
	if (st.perf_maps_insecure)
		sp_cli_warn("%" PRIu64 " perf map%s in '%s' ignored: a symlink, not a regular "
			    "file, or writable by group or others", st.perf_maps_insecure,
			    st.perf_maps_insecure == 1 ? "" : "s", dir);
	if (st.perf_maps_limited)
		sp_cli_warn("%" PRIu64 " perf map%s in '%s' read only in part (size limit)",
			    st.perf_maps_limited, st.perf_maps_limited == 1 ? "" : "s", dir);
	if (st.perf_map_lines_malformed)
		sp_cli_warn("%" PRIu64 " malformed perf map line%s skipped",
			    st.perf_map_lines_malformed, st.perf_map_lines_malformed == 1 ? "" : "s");
	if (st.debug_files_mismatched)
		sp_cli_warn("%" PRIu64 " debug file%s refused: not built with the module file "
			    "(build-id or CRC differs), first '%s'", st.debug_files_mismatched,
			    st.debug_files_mismatched == 1 ? "" : "s",
			    st.debug_file_mismatched ? st.debug_file_mismatched : "?");
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
		warn_symbol_sources(sym, &a.sym);
out:
	sp_symbolizer_free(sym);
	sp_spool_free(spool);
	return rc;
}
