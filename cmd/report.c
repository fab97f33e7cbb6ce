/* SPDX-License-Identifier: MIT */
/* `stackpulse report`: options into struct sp_report_opts, then read, symbolize and write a view. */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum {
	OPT_FORMAT = 0x100,
	OPT_ROWS,
	OPT_STACKS,
	OPT_NO_DEMANGLE,
	OPT_NO_INLINE,
	OPT_LINES,
	OPT_SORT,
	OPT_TREE,
	OPT_INVERTED,
	OPT_PERCENT_LIMIT,
	OPT_GROUP_BY,
	OPT_WIDTH,
	OPT_PID,
	OPT_TID,
	OPT_COMM,
	OPT_MODULE,
	OPT_FOCUS,
	OPT_EXCLUDE,
	OPT_TIME,
	OPT_DIFF,
	OPT_SHOW_RUNTIME,
	OPT_FOLLOW,
	OPT_WINDOW,
	OPT_BY,
	OPT_MAX_INCREASE,
	OPT_MAX_INCREASE_OF,
	OPT_MIN_SHARE,
	OPT_DIFF_NORMALIZE,
	OPT_DIFF_MATCH,
	OPT_STDIO,
	OPT_CHILDREN,
	OPT_NO_CHILDREN,
	OPT_HEADER,
	OPT_METRIC,
};

/* report --diff --max-increase: a function grew beyond the gate. */
#define SP_EXIT_REGRESSED 3

#define MAX_IDS 1024 /* --pid values, all lists together; --tid's likewise */
#define MIN_WIDTH 80
#define MAX_WIDTH 1000

struct report_args {
	const char *spool_path;
	const char *output;
	const char *diff_path;
	double follow_s;    /* --follow: a fresh table every follow_s seconds; 0: once */
	const char *follow_dir;  /* --follow DIR: the directory whose segment is followed */
	const char *follow_name; /* its final name, "DIR/NAME", shown in the headers */
	uint32_t window_s;  /* --window, with --follow */
	bool gate_of_given, min_share_given;
	const char *format_name; /* --format's word, for an error */
	bool spool_given;        /* SPOOL or -i */
	struct sp_report_opts report;
	struct sp_symbolizer_opts sym;
	int32_t pids[MAX_IDS], tids[MAX_IDS];
	/* --time's sides given as wall-clock times (µs since the epoch), not seconds from the start */
	bool wall_start, wall_end;
	uint64_t wall_start_us, wall_end_us;
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
	 "flamegraph: an interactive flame graph, one self-contained SVG for a browser; "
	 "json: a summary for scripts (counters, filters, top functions, heaviest stacks)", 1},
	{NULL, 0, NULL, 0, "Text report:", 2},
	{"rows", OPT_ROWS, "N", 0, "show N functions in the table (default 25)", 2},
	{"stacks", OPT_STACKS, "N", 0, "show the N heaviest stacks (default 5; 0 hides the "
				       "section)", 2},
	{"show-nr-samples", 'n', NULL, 0, "show sample counts beside the shares", 2},
	{"sort", OPT_SORT, "KEY", 0,
	 "order the table by self (default: self share, then total), total (total share, "
	 "then self) or name; ties always by name; perf's sym and dso,sym are the "
	 "function table (by self)", 2},
	{"by", OPT_BY, "ROW", 0,
	 "what a row of the table is: function (default) or line, a source line across "
	 "functions (inlined code on its own line) with its self share, as perf report "
	 "--sort srcline; see also stackpulse annotate", 2},
	{"metric", OPT_METRIC, "WHAT", 0,
	 "what is counted: cpu (default: the samples, CPU time or the event's count), "
	 "off-cpu (time off CPU: record --off-cpu's intervals, blocked and preempted) or "
	 "wall (both: CPU time plus off-CPU time); time in ms in text, microseconds in "
	 "folded values, nanoseconds in pprof", 2},
	{"tree", OPT_TREE, NULL, 0,
	 "a top-down call tree instead of the table: callees indented under callers, "
	 "with total and self share", 2},
	{"inverted", OPT_INVERTED, NULL, 0,
	 "a bottom-up tree instead of the table: each leaf function with its self share, "
	 "its callers indented under it", 2},
	{"percent-limit", OPT_PERCENT_LIMIT, "PCT", 0,
	 "hide table rows and tree entries under PCT percent of the samples (default: 0 for "
	 "the table, 0.5 for trees)", 2},
	{"group-by", OPT_GROUP_BY, "WHAT", 0,
	 "none (default), process or thread: a section per process or thread, busiest "
	 "first, each with its own table or tree and stacks; with --format=folded or "
	 "flamegraph, a root frame 'NAME (pid P)' or 'NAME (pid P, tid T)' under every stack",
	 2},
	{"width", OPT_WIDTH, "N", 0,
	 "lay text out in N columns, 80 to 1000 (default 80): long names are cut less", 2},
	{"diff", OPT_DIFF, "BASE", 0,
	 "compare with the spool BASE: each function's self and total in both (CPU time in "
	 "ms, or events), the ratio new/base, the change of its share in points, and whether "
	 "the change is beyond sampling noise; largest change first (text or --format=json)", 2},
	{"diff-normalize", OPT_DIFF_NORMALIZE, "HOW", 0,
	 "with --diff: none (default) compares the measures themselves; total compares each "
	 "function's share of its spool's whole", 2},
	{"diff-match", OPT_DIFF_MATCH, "HOW", 0,
	 "with --diff, how functions of the two spools pair: auto (default: by name and "
	 "module, then those left by name alone, with a notice: a renamed build), name, or "
	 "module (name and module only)", 2},
	{"max-increase", OPT_MAX_INCREASE, "PCT", 0,
	 "with --diff, a gate for CI: exit 3 when a function's self (or --max-increase-of) "
	 "grew by more than PCT percent and beyond sampling noise; those are listed first", 2},
	{"max-increase-of", OPT_MAX_INCREASE_OF, "WHAT", 0,
	 "the measure the gate checks: self (default) or total", 2},
	{"min-share", OPT_MIN_SHARE, "PCT", 0,
	 "the gate ignores functions under PCT percent of both spools' samples (default 1)", 2},
	{NULL, 0, NULL, 0, "Filters (every view and format; a sample must pass all):", 4},
	{"follow", OPT_FOLLOW, "SECONDS", OPTION_ARG_OPTIONAL,
	 "follow a spool still being written: print a fresh table every SECONDS (default 1) "
	 "with the last --window seconds' shares and those since the start (with "
	 "--metric=off-cpu or wall, seconds of time), until the recording ends or Ctrl-C; of a "
	 "segment directory, the segment being written, then the next", 2},
	{"window", OPT_WINDOW, "SECONDS", 0, "with --follow, the sliding window of the first "
					     "shares (default 5)", 2},
	{"pid", OPT_PID, "PID[,PID...]", 0, "only samples of these processes", 4},
	{"tid", OPT_TID, "TID[,TID...]", 0, "only samples of these threads", 4},
	{"comm", OPT_COMM, "NAME", 0, "only samples of threads named NAME (exactly)", 4},
	{"module", OPT_MODULE, "NAME", 0,
	 "only stacks with a frame in module NAME (its file's basename, as the Module "
	 "column shows it)", 4},
	{"focus", OPT_FOCUS, "FUNC", 0,
	 "only stacks through a function named FUNC exactly, or matching it as a shell "
	 "pattern (fnmatch: * ? [...])", 4},
	{"exclude", OPT_EXCLUDE, "FUNC", 0,
	 "drop stacks through a function named FUNC (matched as --focus)", 4},
	{"time", OPT_TIME, "START,END", 0,
	 "only samples from START to END seconds after the recording started; either may "
	 "be empty (e.g. '2,4', '5,' or ',1.5'); or wall-clock times: ISO 8601 "
	 "('2024-05-01T03:12:00', with Z or +HH:MM for a zone other than the local one), "
	 "'HH:MM[:SS]' today, or '-10m' before now ('-10m,-5m', '03:10,03:15'); of a "
	 "segment directory only the segments needed are read", 4},
	{NULL, 0, NULL, 0, "perf's spellings, accepted:", 5},
	{"input", 'i', "FILE", 0, "the spool to read, as the SPOOL argument", 5},
	{"stdio", OPT_STDIO, NULL, 0, "text on standard output: the default here", 5},
	{"children", OPT_CHILDREN, NULL, 0, "sort by total (children included): --sort=total", 5},
	{"no-children", OPT_NO_CHILDREN, NULL, 0, "sorts by self: --sort=self (the default); the Total column stays", 5},
	{NULL, 'g', "caller|callee", 0, "caller: the top-down --tree; callee: the bottom-up "
					 "--inverted", 5},
	{"header", OPT_HEADER, NULL, 0, "the text report always starts with its header", 5},
	{NULL, 0, NULL, 0, "Symbols:", 3},
	{"no-demangle", OPT_NO_DEMANGLE, NULL, 0,
	 "show C++ and Rust names as they are in the symbol table (ignores stored symbols, "
	 "which are demangled)", 3},
	{"no-inline", OPT_NO_INLINE, NULL, 0,
	 "fold inlined functions into the function they were inlined into "
	 "(default: each is a frame of its own, marked inline)", 3},
	{"lines", OPT_LINES, NULL, 0,
	 "tell source lines apart: 'function (file:line)' in the text report, "
	 "'function:line' in folded stacks", 3},
	{"show-runtime", OPT_SHOW_RUNTIME, NULL, 0,
	 "show all of the Python runtime's native frames: by default, where its perf map "
	 "names the Python functions, the interpreter's machinery around them (eval loop, "
	 "call dispatch, start-up) is hidden and the C code they call shows", 3},
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

/* A percentage from 0 to max. */
static double parse_percent(const char *arg, const char *what, double max,
			    struct argp_state *state)
{
	char *end;
	errno = 0;
	double v = strtod(arg, &end);
	if (errno || end == arg || *end || !isfinite(v) || v < 0 || v > max)
		argp_error(state, "invalid %s '%.*s%s': expected a number from 0 to %g", what,
			   SP_CLI_ECHO(arg), max);
	return v;
}

/* A comma-separated list of ids appended to ids[*n...]: 0 is the idle task of system-wide spools. */
static void parse_ids(const char *arg, const char *what, int32_t *ids, size_t *n,
		      struct argp_state *state)
{
	/* The count, not the list, goes in the error: the list may be thousands long. */
	size_t given = *n + 1;
	for (const char *c = strchr(arg, ','); c; c = strchr(c + 1, ','))
		given++;
	const char *p = arg;
	for (;;) {
		char *end;
		errno = 0;
		long v = *p >= '0' && *p <= '9' ? strtol(p, &end, 10) : -1;
		if (v < 0 || errno || v > INT32_MAX || (*end && *end != ','))
			argp_error(state, "invalid %s list '%.*s%s': expected numbers (0 for [idle]) "
				   "separated by commas", what, SP_CLI_ECHO(arg));
		if (*n == MAX_IDS)
			argp_error(state, "too many %ss: %zu given, at most %d (all --%s options "
				   "together)", what, given, MAX_IDS, what);
		ids[(*n)++] = (int32_t)v;
		if (!*end)
			return;
		p = end + 1;
	}
}

/* Seconds as a decimal number from 0 to a year; the result in ns. */
static bool parse_seconds(const char *s, size_t len, uint64_t *ns)
{
	char buf[64], *end;
	if (!len || len >= sizeof(buf) || (!(*s >= '0' && *s <= '9') && *s != '.'))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	errno = 0;
	double v = strtod(buf, &end);
	if (errno || *end || !isfinite(v) || v < 0 || v > 366.0 * 86400)
		return false;
	*ns = (uint64_t)(v * 1e9 + 0.5);
	return true;
}

/* One side of --time: seconds after the start, or a wall-clock time (*wall set). */
static bool parse_time_side(const char *s, size_t len, uint64_t now_us, uint64_t *ns, bool *wall,
			    uint64_t *wall_us)
{
	*wall = false;
	if (parse_seconds(s, len, ns))
		return true;
	*wall = !sp_parse_wall_time_us(s, len, now_us, wall_us);
	return *wall;
}

static void parse_time(const char *arg, struct report_args *a, struct argp_state *state)
{
	struct sp_report_filter *f = &a->report.filter;
	const char *comma = strchr(arg, ',');
	size_t n1 = comma ? (size_t)(comma - arg) : 0, n2 = comma ? strlen(comma + 1) : 0;
	f->has_start = n1 > 0;
	f->has_end = n2 > 0;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	uint64_t now_us = (uint64_t)now.tv_sec * 1000000 + (uint64_t)now.tv_nsec / 1000;
	a->wall_start = a->wall_end = false;
	if (!comma || (!n1 && !n2) ||
	    (n1 && !parse_time_side(arg, n1, now_us, &f->start_ns, &a->wall_start,
				    &a->wall_start_us)) ||
	    (n2 && !parse_time_side(comma + 1, n2, now_us, &f->end_ns, &a->wall_end,
				    &a->wall_end_us)))
		argp_error(state, "invalid time window '%s': expected START,END in seconds after "
			   "the recording started, one side may be empty (e.g. '2,4', '5,' or ',1.5'), "
			   "or wall-clock times (2024-05-01T03:12:00, 03:12, -10m)", arg);
	if (n1 && n2 && a->wall_start == a->wall_end &&
	    (a->wall_start ? a->wall_end_us <= a->wall_start_us : f->end_ns <= f->start_ns))
		argp_error(state, "invalid time window '%s': END must be after START", arg);
}

/* --time's wall-clock sides as times after the start of spool s (the filter's clock). */
static void place_wall_time(struct report_args *a, const struct sp_spool *s)
{
	uint64_t start_us = sp_spool_meta(s)->start_timestamp_us;
	struct sp_report_filter *f = &a->report.filter;
	if (a->wall_start)
		f->start_ns = a->wall_start_us > start_us ? (a->wall_start_us - start_us) * 1000 : 0;
	if (a->wall_end)
		f->end_ns = a->wall_end_us > start_us ? (a->wall_end_us - start_us) * 1000 : 0;
}

static bool filter_given(const struct sp_report_filter *f)
{
	return f->npids || f->ntids || f->comm || f->module || f->focus || f->exclude ||
	       f->has_start || f->has_end;
}

/*
 * perf report's --sort keys without a table of their own here: what to type
 * instead, for the first of a list (comm,dso) that has one; NULL for none.
 */
static const char *perf_sort_hint(const char *keys)
{
	static const struct sp_cli_spelling hints[] = {
		{"comm", "--group-by=process (a section per process, named by its "
			 "command) or --group-by=thread"},
		{"pid", "--group-by=process (a section per process)"},
		{"tid", "--group-by=thread (a section per thread)"},
		{"dso", "--module NAME (one module's functions); no table per module: "
			"the function table names each one's module (--sort=dso,sym)"},
		{"srcline", "--by=line"},
		{NULL, NULL},
	};
	for (const char *k = keys; *k;) {
		size_t n = strcspn(k, ",");
		for (const struct sp_cli_spelling *h = hints; h->perf; h++)
			if (strlen(h->perf) == n && !strncmp(k, h->perf, n))
				return h->ours;
		k += n + (k[n] == ',');
	}
	return NULL;
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct report_args *a = state->input;
	switch (key) {
	case 'o':
		a->output = arg;
		break;
	case OPT_FORMAT:
		a->format_name = arg;
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
		else if (!strcmp(arg, "json"))
			a->report.format = SP_REPORT_JSON;
		else
			argp_error(state, "unknown format '%s': expected text, folded, pprof, "
				   "speedscope, perf-script, flamegraph or json", arg);
		break;
	case OPT_ROWS:
		a->report.max_rows = parse_count(arg, "row count", state);
		break;
	case OPT_STACKS:
		if (!strcmp(arg, "0")) {
			a->report.hide_stacks = true;
			break;
		}
		a->report.max_stacks = parse_count(arg, "stack count", state);
		break;
	case 'i':
		if (a->spool_given)
			argp_error(state, "too many arguments: one SPOOL at most");
		a->spool_path = arg;
		a->spool_given = true;
		break;
	case OPT_STDIO:
	case OPT_HEADER:
		break;
	case OPT_CHILDREN:
		a->report.sort = SP_SORT_TOTAL;
		break;
	case OPT_NO_CHILDREN:
		a->report.sort = SP_SORT_SELF;
		break;
	case 'g':
		if (!strcmp(arg, "caller"))
			a->report.tree = true;
		else if (!strcmp(arg, "callee"))
			a->report.inverted = true;
		else
			argp_error(state, "unknown call graph '%.*s%s': expected caller or callee",
				   SP_CLI_ECHO(arg));
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
	case 'n':
		a->report.show_counts = true;
		break;
	case OPT_SORT:
		if (!strcmp(arg, "self"))
			a->report.sort = SP_SORT_SELF;
		else if (!strcmp(arg, "total"))
			a->report.sort = SP_SORT_TOTAL;
		else if (!strcmp(arg, "name"))
			a->report.sort = SP_SORT_NAME;
		else if (!strcmp(arg, "sym") || !strcmp(arg, "dso,sym"))
			a->report.sort = SP_SORT_SELF; /* perf's keys: the function table */
		else if (perf_sort_hint(arg))
			argp_error(state, "unknown sort key '%.*s%s' (perf's): stackpulse spells this %s",
				   SP_CLI_ECHO(arg), perf_sort_hint(arg));
		else
			argp_error(state, "unknown sort key '%.*s%s': expected self, total or name",
				   SP_CLI_ECHO(arg));
		break;
	case OPT_BY:
		if (!strcmp(arg, "function"))
			a->report.by_line = false;
		else if (!strcmp(arg, "line"))
			a->report.by_line = true;
		else
			argp_error(state, "unknown row '%.*s%s': expected function or line",
				   SP_CLI_ECHO(arg));
		break;
	case OPT_METRIC:
		if (!strcmp(arg, "cpu"))
			a->report.metric = SP_METRIC_CPU;
		else if (!strcmp(arg, "off-cpu"))
			a->report.metric = SP_METRIC_OFF_CPU;
		else if (!strcmp(arg, "wall"))
			a->report.metric = SP_METRIC_WALL;
		else
			argp_error(state, "unknown metric '%.*s%s': expected cpu, off-cpu or wall",
				   SP_CLI_ECHO(arg));
		break;
	case OPT_TREE:
		a->report.tree = true;
		break;
	case OPT_INVERTED:
		a->report.inverted = true;
		break;
	case OPT_PERCENT_LIMIT:
		a->report.percent_limit = parse_percent(arg, "percent limit", 100, state);
		break;
	case OPT_FOLLOW:
		a->follow_s = 1.0;
		if (arg && (sp_cli_parse_seconds(arg, &a->follow_s) || a->follow_s < 0.1))
			argp_error(state, "invalid interval '%s' (seconds, at least 0.1)", arg);
		break;
	case OPT_WINDOW: {
		char *end;
		unsigned long v = strtoul(arg, &end, 10);
		if (end == arg || *end || arg[0] == '-' || v < 1 || v > 3600)
			argp_error(state, "invalid window '%s' (whole seconds, 1 to 3600)", arg);
		a->window_s = (uint32_t)v;
		break;
	}
	case OPT_GROUP_BY:
		if (!strcmp(arg, "none"))
			a->report.group_by = SP_GROUP_NONE;
		else if (!strcmp(arg, "process"))
			a->report.group_by = SP_GROUP_PROCESS;
		else if (!strcmp(arg, "thread"))
			a->report.group_by = SP_GROUP_THREAD;
		else
			argp_error(state, "unknown grouping '%s': expected process, thread or none",
				   arg);
		break;
	case OPT_WIDTH: {
		/* Its own range, so the message states the one accepted. */
		char *end;
		errno = 0;
		unsigned long v = strtoul(arg, &end, 10);
		if (errno || end == arg || *end || arg[0] == '-' || v < MIN_WIDTH || v > MAX_WIDTH)
			argp_error(state, "invalid width '%.*s%s': expected a number from %d to %d",
				   SP_CLI_ECHO(arg), MIN_WIDTH, MAX_WIDTH);
		a->report.width = (uint32_t)v;
		break;
	}
	case OPT_PID:
		parse_ids(arg, "pid", a->pids, &a->report.filter.npids, state);
		break;
	case OPT_TID:
		parse_ids(arg, "tid", a->tids, &a->report.filter.ntids, state);
		break;
	case OPT_COMM:
		a->report.filter.comm = arg;
		break;
	case OPT_MODULE:
		a->report.filter.module = arg;
		break;
	case OPT_FOCUS:
		a->report.filter.focus = arg;
		break;
	case OPT_EXCLUDE:
		a->report.filter.exclude = arg;
		break;
	case OPT_TIME:
		parse_time(arg, a, state);
		break;
	case OPT_DIFF:
		a->diff_path = arg;
		break;
	case OPT_DIFF_NORMALIZE:
		if (!strcmp(arg, "none"))
			a->report.diff_normalize = SP_DIFF_ABSOLUTE;
		else if (!strcmp(arg, "total"))
			a->report.diff_normalize = SP_DIFF_SHARES;
		else
			argp_error(state, "unknown normalisation '%.*s%s': expected none or total",
				   SP_CLI_ECHO(arg));
		break;
	case OPT_DIFF_MATCH:
		if (!strcmp(arg, "auto"))
			a->report.diff_match = SP_DIFF_MATCH_AUTO;
		else if (!strcmp(arg, "name"))
			a->report.diff_match = SP_DIFF_MATCH_NAME;
		else if (!strcmp(arg, "module"))
			a->report.diff_match = SP_DIFF_MATCH_MODULE;
		else
			argp_error(state, "unknown matching '%.*s%s': expected auto, name or module",
				   SP_CLI_ECHO(arg));
		break;
	case OPT_MAX_INCREASE:
		a->report.diff_gate = true;
		a->report.diff_max_increase = parse_percent(arg, "increase", 1e6, state);
		break;
	case OPT_MAX_INCREASE_OF:
		if (!strcmp(arg, "self"))
			a->report.diff_gate_of = SP_SORT_SELF;
		else if (!strcmp(arg, "total"))
			a->report.diff_gate_of = SP_SORT_TOTAL;
		else
			argp_error(state, "unknown measure '%.*s%s': expected self or total",
				   SP_CLI_ECHO(arg));
		a->gate_of_given = true;
		break;
	case OPT_MIN_SHARE:
		a->report.diff_min_share = parse_percent(arg, "minimum share", 100, state);
		a->min_share_given = true;
		break;
	case ARGP_KEY_END:
		if (a->follow_s && (a->report.format != SP_REPORT_TEXT || a->report.tree ||
				    a->report.inverted || a->diff_path || filter_given(&a->report.filter) ||
				    a->report.group_by == SP_GROUP_THREAD))
			argp_error(state, "--follow prints the function table alone: with --rows, "
				   "--sort self|total, --group-by=process and --window, not with "
				   "other formats, views or filters");
		if (a->window_s && !a->follow_s)
			argp_error(state, "--window goes with --follow");
		if (a->report.format != SP_REPORT_TEXT && (a->report.tree || a->report.inverted))
			argp_error(state, "--tree and --inverted are text views: "
				   "use them without --format, or with --format=text");
		if (a->diff_path && a->report.format != SP_REPORT_TEXT &&
		    a->report.format != SP_REPORT_JSON)
			argp_error(state, "--diff writes text or json: not --format=%s",
				   a->format_name);
		if (!a->diff_path && (a->report.diff_gate || a->gate_of_given ||
				      a->min_share_given || a->report.diff_normalize ||
				      a->report.diff_match))
			argp_error(state, "--max-increase, --max-increase-of, --min-share, "
				   "--diff-normalize and --diff-match go with --diff BASE");
		if (a->report.group_by && a->report.format != SP_REPORT_TEXT &&
		    a->report.format != SP_REPORT_FOLDED && a->report.format != SP_REPORT_FLAMEGRAPH)
			argp_error(state, "--group-by applies to the text, folded and flamegraph "
				   "formats: pprof, speedscope and perf-script keep each sample's "
				   "pid and tid, json has no stacks by process");
		if (a->report.by_line && (a->report.format != SP_REPORT_TEXT || a->report.tree ||
					  a->report.inverted || a->diff_path || a->follow_s ||
					  a->report.group_by))
			argp_error(state, "--by=line is the text format's flat table: not with "
				   "--format, --tree, --inverted, --diff, --follow or --group-by");
		if (a->report.tree && a->report.inverted)
			argp_error(state, "--tree and --inverted are two views: give one");
		if (a->diff_path && (a->report.tree || a->report.inverted || a->report.group_by))
			argp_error(state, "--diff compares function tables: not with --tree, "
				   "--inverted or --group-by");
		/* gzip data on a terminal helps nobody (gzip(1) refuses the same way). */
		if (a->report.format == SP_REPORT_PPROF &&
		    (!a->output || !strcmp(a->output, "-")) && isatty(STDOUT_FILENO))
			argp_error(state, "pprof output is binary: write it with -o FILE or "
				   "redirect standard output");
		break;
	case ARGP_KEY_ARG:
		if (state->arg_num > 0 || a->spool_given)
			argp_error(state, "too many arguments: one SPOOL at most");
		a->spool_path = arg;
		a->spool_given = true;
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
	"Print where the time went in a spool (default profile.spool: CPU samples, or with "
	"--metric off-CPU or wall time) as a function table, a call tree or a comparison "
	"with another spool, or export it for other tools: folded stacks, pprof, speedscope, "
	"perf script, an interactive flame graph, a JSON summary.  Frames take "
	"the symbols 'stackpulse symbolize' stored in the spool; the others are "
	"symbolized on the fly from the recorded module files, each proven to be the "
	"file that was recorded."
	"\vExit status: 0 on success, 1 when the operation fails, 2 on a usage error, "
	"3 when report --diff --max-increase finds a function that grew beyond the gate.",
	children, NULL, NULL,
};

static void warn_symbols(const struct sp_symbolizer *sym, const struct sp_symbolizer_opts *o)
{
	struct sp_symbolizer_stats st;
	sp_symbolizer_stats(sym, &st);
	sp_cli_warn_symbol_sources(&st, o);
}

/*
 * Open a spool (or a segment directory) and its symbolizer, warning when it
 * was cut short, with --time's wall-clock sides placed on its timeline.
 * 0 or SP_EXIT_FAILURE.
 */
static int open_spool(const char *path, struct report_args *a, struct sp_spool **spool,
		      struct sp_symbolizer **sym)
{
	const struct sp_symbolizer_opts *so = &a->sym;
	struct sp_segments_read_stats rs;
	int err = sp_cli_open_spool(path, a->wall_start ? a->wall_start_us : 0,
				    a->wall_end ? a->wall_end_us : 0, spool, &rs);
	if (err == -SP_E_NO_SEGMENTS)
		return sp_cli_error("cannot read '%s': %s", path, sp_strerror(err));
	if (err)
		return sp_cli_error("cannot open spool '%s': %s", path, sp_strerror(err));
	place_wall_time(a, *spool);
	/* a directory's header names --time's wall-clock window and the segments read */
	if (rs.listed) {
		a->report.filter.wall_start_us = a->wall_start ? a->wall_start_us : 0;
		a->report.filter.wall_end_us = a->wall_end ? a->wall_end_us : 0;
		a->report.filter.segments_read = rs.read;
		a->report.filter.segments_listed = rs.listed;
	}
	if (!sp_spool_summary(*spool) && sp_spool_is_growing(path))
		sp_cli_note("spool '%s' is still being written (a recording is running): reporting "
			    "the %zu samples written so far; --follow keeps up with it",
			    path, sp_spool_sample_count(*spool));
	else if (sp_spool_truncated(*spool) || !sp_spool_summary(*spool))
		sp_cli_warn("spool '%s' is truncated (the recording was cut short); "
			    "reporting its intact prefix", path);
	err = sp_symbolizer_new(*spool, so, sym);
	if (err)
		return sp_cli_error("cannot set up symbolization of '%s': %s", path,
				    sp_strerror(err));
	return 0;
}

/* report --diff BASE: both spools opened and symbolized alike, then one table. */
static int report_diff(struct report_args *a)
{
	struct sp_spool *spool[2] = {NULL, NULL};
	struct sp_symbolizer *sym[2] = {NULL, NULL};
	FILE *out = NULL;
	int rc = open_spool(a->diff_path, a, &spool[0], &sym[0]);
	if (!rc)
		rc = open_spool(a->spool_path, a, &spool[1], &sym[1]);
	if (!rc && !(out = sp_cli_open_output(a->output)))
		rc = SP_EXIT_FAILURE;
	if (!rc) {
		struct sp_diff_outcome res;
		int err = sp_report_diff_gate(spool[0], sym[0], a->diff_path, spool[1], sym[1],
					      &a->report, &res, out);
		rc = sp_cli_close_output(out, a->output);
		if (err) {
			rc = sp_cli_error("cannot write report: %s", sp_strerror(err));
		} else {
			warn_symbols(sym[1], &a->sym);
			if (res.regressed && !rc) {
				char ratio[32];
				if (isinf(res.first_ratio))
					snprintf(ratio, sizeof(ratio), "none in the base");
				else
					snprintf(ratio, sizeof(ratio), "%.2fx", res.first_ratio);
				sp_cli_note("%zu function%s grew more than %g%% beyond sampling noise, "
					    "first '%s' (%s)", res.regressed, res.regressed == 1 ? "" : "s",
					    a->report.diff_max_increase, res.first_name, ratio);
				rc = SP_EXIT_REGRESSED;
			}
		}
	}
	for (int i = 0; i < 2; i++) {
		sp_symbolizer_free(sym[i]);
		sp_spool_free(spool[i]);
	}
	return rc;
}

/* The width of --follow's tables: --width, a terminal's, else the text views' default (80). */
static size_t follow_width(const struct report_args *a, FILE *out)
{
	struct winsize ws;
	if (a->report.width)
		return a->report.width;
	if (out == stdout && isatty(STDOUT_FILENO) && !ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) &&
	    ws.ws_col >= MIN_WIDTH)
		return ws.ws_col;
	return MIN_WIDTH;
}

static volatile sig_atomic_t follow_stop;

static void on_follow_signal(int sig)
{
	(void)sig;
	follow_stop = 1;
}

/*
 * A time metric needs record --off-cpu's intervals, and wall time a clock
 * event's samples: 0, or the exit status of the error printed.
 */
static int time_metric_fits(const struct sp_spool *s, const struct report_args *a)
{
	if (a->report.metric == SP_METRIC_CPU || !s)
		return 0;
	const struct sp_spool_meta *m = sp_spool_meta(s);
	if (!(m->flags & SP_META_OFF_CPU))
		return sp_cli_error("'%s' holds no off-CPU intervals: record with --off-cpu for "
				    "--metric=off-cpu or wall", a->spool_path);
	if (a->report.metric == SP_METRIC_WALL && !sp_event_counts_time(m->event_source) &&
	    !(m->event_source == SP_EVENT_CYCLES && !m->sample_period))
		return sp_cli_error("'%s' samples %s, which is no time: --metric=wall adds a clock "
				    "event's samples (record with cpu-clock or cycles); "
				    "--metric=off-cpu shows the intervals alone", a->spool_path,
				    sp_event_name(m->event_source) ? sp_event_name(m->event_source)
								   : "an unknown event");
	return 0;
}

/* --follow's header: samples (events) or, with a time metric, seconds and the preempted part. */
static void follow_amount(const struct sp_live *live, uint32_t metric, uint64_t all, uint64_t win,
			  char *buf, size_t cap)
{
	if (metric == SP_METRIC_CPU) {
		snprintf(buf, cap, "%" PRIu64 " samples, %" PRIu64, all, win);
		return;
	}
	uint64_t pwin, pall;
	sp_live_preempted(live, &pwin, &pall);
	snprintf(buf, cap, "%s time %.3f s (%.3f s preempted), %.3f s",
		 metric == SP_METRIC_WALL ? "wall" : "off-CPU", (double)all / 1e6, (double)pall / 1e6,
		 (double)win / 1e6);
}

/*
 * Whether --follow DIR's segment, finished, has a successor being written
 * (a rotation creates the next before it finishes the last).
 */
static bool next_segment(const struct report_args *a)
{
	char path[4096];
	bool writing = false;
	return a->follow_dir && !sp_segments_newest(a->follow_dir, path, sizeof(path), &writing) &&
	       writing && strcmp(path, a->spool_path);
}

/*
 * report --follow: the spool read as it grows (a tail), a fresh function
 * table every interval, work per table proportional to the new samples,
 * until the trailer comes or Ctrl-C.
 */
static int report_follow(struct report_args *a)
{
	struct sp_tail *t = NULL;
	struct sp_symbolizer *sym = NULL;
	struct sp_live *live = NULL;
	FILE *out = NULL;
	int rc = SP_EXIT_FAILURE;
	int err = sp_tail_open(a->spool_path, &t);
	if (err) {
		rc = sp_cli_error("cannot open spool '%s': %s", a->spool_path, sp_strerror(err));
		goto out;
	}
	struct sigaction sa = {.sa_handler = on_follow_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	struct timespec pause = {(time_t)a->follow_s,
				 (long)((a->follow_s - (double)(time_t)a->follow_s) * 1e9)};
	/* a recording that has only just begun: wait for its header */
	struct sp_tail_batch b;
	while ((err = sp_tail_poll(t, &b)) == -SP_E_SPOOL_TRUNCATED && !follow_stop)
		nanosleep(&pause, NULL);
	if (!err)
		err = sp_tail_symbolizer(t, &a->sym, &sym);
	struct sp_live_opts lo = {.window_s = a->window_s, .metric = a->report.metric};
	int unfit = err ? 0 : time_metric_fits(sp_tail_spool(t), a);
	if (unfit) {
		rc = unfit;
		goto out;
	}
	if (!err)
		err = sp_live_new(t, sym, &lo, &live);
	if (err) {
		if (!follow_stop)
			rc = sp_cli_error("cannot follow spool '%s': %s", a->spool_path, sp_strerror(err));
		else
			rc = SP_EXIT_OK;
		goto out;
	}
	out = sp_cli_open_output(a->output);
	if (!out)
		goto out;
	struct sp_live_view v = {
		.sort = a->report.sort == SP_SORT_TOTAL ? SP_LIVE_SORT_TOTAL : SP_LIVE_SORT_SELF,
		.by_process = a->report.group_by == SP_GROUP_PROCESS,
	};
	bool was_growing = true;
	for (;;) {
		/* the window ends now while a recording writes; else at the last sample */
		bool growing = sp_spool_is_growing(a->spool_path);
		err = sp_live_update(live, growing ? sp_monotonic_ns() : 0, NULL);
		if (err)
			break;
		uint64_t win, all;
		sp_live_counts(live, &win, &all);
		bool over = sp_live_finished(live);
		growing = growing && !over;
		char label[16], amount[96];
		follow_amount(live, a->report.metric, all, win, amount, sizeof(amount));
		fprintf(out, "--- %s: %s in the last %s (%s) ---\n",
			a->follow_name ? a->follow_name : a->spool_path, amount,
			sp_live_window_label(live, label, sizeof(label)),
			over ? (next_segment(a) ? "segment finished" : "recording over")
			     : growing ? "still being written" : "no longer written");
		err = sp_live_write_table(live, &v, a->report.max_rows, follow_width(a, out), out);
		fflush(out);
		/* done with the trailer, or when no writer holds it any more (a killed recorder) */
		if (err || over || (!growing && !was_growing) || follow_stop)
			break;
		was_growing = growing;
		nanosleep(&pause, NULL);
		if (follow_stop)
			break;
	}
	rc = sp_cli_close_output(out, a->output);
	out = NULL;
	if (err)
		rc = sp_cli_error("cannot follow spool '%s': %s", a->spool_path, sp_strerror(err));
out:
	if (out)
		fclose(out);
	sp_live_free(live);
	sp_symbolizer_free(sym);
	sp_tail_free(t);
	return rc;
}

/*
 * report --follow DIR: the segment being written followed as a spool, then
 * the next one, until no segment is being written (the recording ended) or
 * Ctrl-C.  Each segment's table starts afresh, as the segment does.
 */
static int report_follow_dir(struct report_args *a)
{
	const char *dir = a->spool_path;
	char path[4096], last[4096] = "";
	struct timespec pause = {0, 200000000};
	int rc = SP_EXIT_OK;
	for (int idle = 0; !follow_stop;) {
		bool writing = false;
		int err = sp_segments_newest(dir, path, sizeof(path), &writing);
		if (err && err != -SP_E_NO_SEGMENTS)
			return sp_cli_error("cannot follow '%s': %s", dir, sp_strerror(err));
		if (err || !strcmp(path, last) || !writing) {
			/* between segments: the next one appears within a drain; else it is over */
			if (++idle > 25 || (!err && !writing && !last[0])) {
				if (!last[0])
					return err ? sp_cli_error("cannot follow '%s': %s", dir, sp_strerror(err))
						   : sp_cli_error("no segment of '%s' is being written: "
								  "report it without --follow", dir);
				break;
			}
			nanosleep(&pause, NULL);
			continue;
		}
		idle = 0;
		snprintf(last, sizeof(last), "%s", path);
		/* "DIR/.NAME.partial" shown by the name it is published under, "DIR/NAME" */
		char shown[4096];
		const char *base = strrchr(path, '/') + 1;
		snprintf(shown, sizeof(shown), "%.*s%.*s", (int)(base - path), path,
			 (int)(strlen(base) - 1 - strlen(".partial")), base + 1);
		a->spool_path = path;
		a->follow_dir = dir;
		a->follow_name = shown;
		rc = report_follow(a);
		a->spool_path = dir;
		a->follow_dir = a->follow_name = NULL;
		if (rc)
			break;
	}
	return rc;
}

/* perf report's options without a spelling here, and what stackpulse has instead. */
static const struct sp_cli_spelling perf_spellings[] = {
	{"--comms", "--comm NAME"},
	{"--dsos", "--module NAME (a file's basename)"},
	{"-d", "--module NAME (a file's basename)"},
	{"--symbols", "--focus FUNC"},
	{"-S", "--focus FUNC"},
	{"-G", "--inverted (or -g callee)"},
	{"--call-graph", "--tree (-g caller) or --inverted (-g callee)"},
	{"-T", "--group-by=thread"},
	{"--threads", "--group-by=thread"},
	{"-s", "--sort=self|total|name (perf's sym and dso,sym are accepted)"},
	{"--tui", "'stackpulse top' for a live screen; report writes text (--stdio)"},
	{"--gtk", "'stackpulse top' for a live screen; report writes text (--stdio)"},
	{"--vmlinux", "--kallsyms FILE (kernel names)"},
	{"--objdump", "'stackpulse annotate' (its own disassembler)"},
	{"--show-total-period", "-n (sample counts)"},
	{NULL, NULL},
};

int cmd_report(int argc, char **argv)
{
	struct report_args a = {
		.spool_path = "profile.spool",
		.output = NULL,
		.report = {.format = SP_REPORT_TEXT, .max_rows = 25, .max_stacks = 5,
			   .percent_limit = -1, .diff_min_share = 1},
		.sym = {.no_demangle = false, .perf_map_policy = SP_PERF_MAPS_ALL},
	};
	sp_cli_perf_spellings(argc, argv, perf_spellings, false);
	argp_parse(&argp, argc, argv, 0, NULL, &a);
	a.report.spool_path = a.spool_path;
	a.report.filter.pids = a.pids;
	a.report.filter.tids = a.tids;
	if (a.diff_path)
		return report_diff(&a);
	struct stat st;
	if (a.follow_s && !stat(a.spool_path, &st) && S_ISDIR(st.st_mode))
		return report_follow_dir(&a);
	if (a.follow_s)
		return report_follow(&a);

	struct sp_spool *spool = NULL;
	struct sp_symbolizer *sym = NULL;
	FILE *out = NULL;
	int rc = open_spool(a.spool_path, &a, &spool, &sym);
	if (rc)
		goto out;
	a.report.growing = !sp_spool_summary(spool) && sp_spool_is_growing(a.spool_path);
	rc = time_metric_fits(spool, &a);
	if (rc)
		goto out;
	rc = SP_EXIT_FAILURE;
	/* Opened last, so a spool that fails to load leaves no empty report behind. */
	out = sp_cli_open_output(a.output);
	if (!out)
		goto out;
	int err = sp_report_write(spool, sym, &a.report, out);
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
