/* SPDX-License-Identifier: MIT */
/* stackpulse top: record as record does, and show a live table of where the CPU goes. */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

enum {
	OPT_WINDOW = 0x200,
	OPT_BATCH,
	OPT_ROWS,
	OPT_SORT,
	OPT_GROUP_BY,
	OPT_DURATION,
	OPT_OFF_CPU,
};

struct top {
	struct sp_cli_record_args rec;
	struct sp_symbolizer_opts sym_opts;
	double delay_s;   /* between refreshes */
	uint32_t window_s;
	bool batch;       /* a fresh table per interval, no keys (not a terminal, or --batch) */
	bool off_cpu;     /* --off-cpu: off-CPU time, not CPU samples */
	size_t rows;      /* rows of a batch table (the screen's height otherwise) */
	struct sp_live_view view;
	/* while running */
	struct sp_tail *tail;
	struct sp_symbolizer *sym;
	struct sp_live *live;
	double start_s, next_refresh_s;
	double next_count_s;    /* counting between refreshes keeps the tables current */
	uint64_t last_all;      /* samples at the last refresh, for the rate */
	double last_refresh_s;
	double rate;            /* samples per second over the last interval */
	bool paused, neighbours, raw;
	bool annotate; /* a: the selected function's annotated lines in place of its neighbours */
	size_t selected;
	struct termios saved;
	char status[160];       /* a message shown until the next key */
};

static const struct argp_option options[] = {
	{NULL, 0, NULL, 0, "Display:", 3},
	{"delay", 'd', "SECONDS", 0, "refresh every SECONDS (default 1)", 3},
	{"window", OPT_WINDOW, "SECONDS", 0, "the sliding window the first shares cover "
					     "(default 5; the last ones cover everything since "
					     "the start)", 3},
	{"sort", OPT_SORT, "KEY", 0, "self (default) or total: the window's share to sort by", 3},
	{"group-by", OPT_GROUP_BY, "WHAT", 0, "none (default) or process: a row per function and "
					      "process", 3},
	{"batch", OPT_BATCH, NULL, 0, "print a fresh table every interval instead of a screen "
				      "(the default when standard output is not a terminal)", 3},
	{"rows", OPT_ROWS, "N", 0, "functions per batch table (default 20)", 3},
	{"duration", OPT_DURATION, "SECONDS", 0, "stop after SECONDS", 3},
	{"off-cpu", OPT_OFF_CPU, NULL, 0, "record off-CPU intervals as 'record --off-cpu' does and "
					  "show where threads wait: seconds off CPU per function "
					  "(blocked, sleeping or preempted), not CPU shares", 3},
	{NULL, 0, NULL, 0, "Output:", 4},
	{"output", 'o', "FILE", 0, "write the spool to FILE (default top.spool): 'stackpulse "
				   "report FILE' reads it afterwards", 4},
	{"quiet", 'q', NULL, 0, "print no recording summary at the end", 4},
	{NULL, 0, NULL, 0, NULL, 0},
};

static const struct argp_child children[] = {
	{&sp_cli_record_argp, 0, NULL, 0},
	{NULL, 0, NULL, 0},
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct top *t = state->input;
	char *end;
	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &t->rec;
		return 0;
	case 'd':
		if (sp_cli_parse_seconds(arg, &t->delay_s) || t->delay_s < 0.1)
			argp_error(state, "invalid delay '%s' (seconds, at least 0.1)", arg);
		return 0;
	case OPT_WINDOW: {
		unsigned long v = strtoul(arg, &end, 10);
		if (end == arg || *end || arg[0] == '-' || v < 1 || v > 3600)
			argp_error(state, "invalid window '%s' (whole seconds, 1 to 3600)", arg);
		t->window_s = (uint32_t)v;
		return 0;
	}
	case OPT_SORT:
		if (!strcmp(arg, "self"))
			t->view.sort = SP_LIVE_SORT_SELF;
		else if (!strcmp(arg, "total"))
			t->view.sort = SP_LIVE_SORT_TOTAL;
		else
			argp_error(state, "invalid sort key '%.*s%s' (self or total)", SP_CLI_ECHO(arg));
		return 0;
	case OPT_GROUP_BY:
		if (!strcmp(arg, "process"))
			t->view.by_process = true;
		else if (!strcmp(arg, "none"))
			t->view.by_process = false;
		else
			argp_error(state, "invalid grouping '%.*s%s' (none or process)", SP_CLI_ECHO(arg));
		return 0;
	case OPT_BATCH:
		t->batch = true;
		return 0;
	case OPT_ROWS: {
		unsigned long v = strtoul(arg, &end, 10);
		if (end == arg || *end || arg[0] == '-' || v < 1 || v > 100000)
			argp_error(state, "invalid row count '%s' (1 to 100000)", arg);
		t->rows = v;
		return 0;
	}
	case OPT_OFF_CPU:
		t->off_cpu = true;
		t->rec.opts.off_cpu = true;
		return 0;
	case OPT_DURATION:
		if (sp_cli_parse_seconds(arg, &t->rec.duration_s))
			argp_error(state, "invalid duration '%s' (seconds, e.g. 30)", arg);
		return 0;
	case 'o':
		t->rec.output = arg;
		return 0;
	case 'q':
		t->rec.quiet = true;
		return 0;
	default:
		return ARGP_ERR_UNKNOWN;
	}
}

static const struct argp argp = {
	options, parse_opt, "-- COMMAND [ARGS...]\n-p PID[,PID...]\n-a [-C CPU-LIST]",
	"Record like 'stackpulse record' and show where the CPU goes while it runs: a "
	"table of functions refreshed every second, with their self and total shares over "
	"the last few seconds and since the start.\v"
	"Keys: s sorts by self, t by total; p shows a row per function and process; up/down "
	"(or k/j) select a row and Enter (or c) shows its callers and callees, a its annotated "
	"lines (as 'stackpulse annotate', refreshed); space pauses "
	"the display (recording goes on); q quits. Ctrl-C quits too.\n\n"
	"The recording is written to the spool as 'record' writes it (-o, default "
	"top.spool) and is complete when top ends: 'stackpulse report top.spool' reads it. "
	"When standard output is not a terminal (or with --batch) a fresh table is printed "
	"every interval, for scripts and CI logs. Recording ends at q, Ctrl-C, --duration, "
	"or when the command (or every process given with -p) exits.\n\n"
	"Exit status: as 'stackpulse record'.",
	children, NULL, NULL,
};

/* ---- the terminal ---------------------------------------------------------- */

static struct termios *saved_termios;

static void restore_terminal(void)
{
	if (saved_termios) {
		tcsetattr(STDIN_FILENO, TCSANOW, saved_termios);
		/* main screen back, cursor shown */
		fputs("\033[?25h\033[?1049l", stdout);
		fflush(stdout);
		saved_termios = NULL;
	}
}

/* Keys one by one without echo (Ctrl-C still signals); the alternate screen. */
static void raw_terminal(struct top *t)
{
	if (tcgetattr(STDIN_FILENO, &t->saved))
		return;
	struct termios raw = t->saved;
	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	raw.c_cc[VMIN] = 0;
	raw.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSANOW, &raw))
		return;
	saved_termios = &t->saved;
	t->raw = true;
	atexit(restore_terminal);
	fputs("\033[?1049h\033[?25l", stdout);
	fflush(stdout);
}

static void screen_size(size_t *rows, size_t *cols)
{
	struct winsize ws;
	*rows = 24;
	*cols = 80;
	if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_row && ws.ws_col) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
	}
}

/* ---- drawing ------------------------------------------------------------- */

/* The event sampled, as the spool's header names it ("cpu-clock", "page-faults"). */
static const char *event_of(const struct top *t)
{
	if (t->off_cpu)
		return "off-CPU time in seconds";
	const struct sp_spool *s = sp_tail_spool(t->tail);
	const char *name = s ? sp_event_name(sp_spool_meta(s)->event_source) : NULL;
	return name ? name : "samples";
}

/*
 * What the live view counted: "N samples (R/s), W" or, with --off-cpu,
 * "T s off CPU (P s preempted; R s/s), W s", for "... in the last K s";
 * without window, the counts since the start alone (no ", W").
 */
static void amount_text(const struct top *t, bool rate, bool window, char *buf, size_t cap)
{
	uint64_t win, all, pwin, pall;
	sp_live_counts(t->live, &win, &all);
	int n;
	if (!t->off_cpu) {
		if (rate)
			n = snprintf(buf, cap, "%" PRIu64 " samples (%.0f/s)", all, t->rate);
		else
			n = snprintf(buf, cap, "%" PRIu64 " samples", all);
		if (window && n > 0 && (size_t)n < cap)
			snprintf(buf + n, cap - (size_t)n, ", %" PRIu64, win);
		return;
	}
	sp_live_preempted(t->live, &pwin, &pall);
	n = snprintf(buf, cap, "%.3f s off CPU (%.3f s preempted", (double)all / 1e6,
		     (double)pall / 1e6);
	if (rate && n > 0 && (size_t)n < cap)
		n += snprintf(buf + n, cap - (size_t)n, "; %.2f s/s", t->rate / 1e6);
	if (n > 0 && (size_t)n < cap)
		n += snprintf(buf + n, cap - (size_t)n, ")");
	if (window && n > 0 && (size_t)n < cap)
		snprintf(buf + n, cap - (size_t)n, ", %.3f s", (double)win / 1e6);
}

/* Lines of text (a memstream's buffer) written to the screen, row `hl` in reverse video. */
static void put_lines(const char *text, size_t max, size_t cols, long hl)
{
	size_t row = 0;
	for (const char *p = text; *p && row < max; row++) {
		size_t len = strcspn(p, "\n");
		if (len > cols)
			len = cols;
		if ((long)row == hl)
			fputs("\033[7m", stdout);
		fwrite(p, 1, len, stdout);
		if ((long)row == hl)
			fputs("\033[0m", stdout);
		fputs("\033[K\n", stdout);
		p += strcspn(p, "\n");
		if (*p)
			p++;
	}
}

static void put_neighbours(struct top *t, const struct sp_live_row *row, size_t cols, size_t max)
{
	struct sp_live_row *callers, *callees;
	size_t ncallers, ncallees;
	uint64_t win, all;
	sp_live_counts(t->live, &win, &all);
	if (sp_live_neighbours(t->live, row, &callers, &ncallers, &callees, &ncallees))
		return;
	struct {
		const char *title;
		struct sp_live_row *rows;
		size_t n;
	} parts[] = {{"called from", callers, ncallers}, {"calls", callees, ncallees}};
	for (size_t k = 0; k < 2 && max > 1; k++) {
		char label[16];
		printf("  %s (last %s):\033[K\n", parts[k].title,
		       sp_live_window_label(t->live, label, sizeof(label)));
		max--;
		if (!parts[k].n) {
			printf("    (nothing%s)\033[K\n", k ? ": it is the leaf" : ": it is a root");
			max--;
		}
		for (size_t i = 0; i < parts[k].n && i < 5 && max > 1; i++, max--) {
			char line[512];
			snprintf(line, sizeof(line), "    %5.1f%%  %s  %s",
				 win ? 100.0 * (double)parts[k].rows[i].total_win / (double)win : 0.0,
				 parts[k].rows[i].name, parts[k].rows[i].module);
			printf("%.*s\033[K\n", (int)(cols < sizeof(line) ? cols : sizeof(line)), line);
		}
	}
	free(callers);
	free(callees);
}

/* The selected function annotated (stackpulse annotate's text), its first max lines. */
static void put_annotation(struct top *t, const struct sp_live_row *row, size_t cols, size_t max)
{
	const char *names[1] = {row->name};
	struct sp_annotate_opts o = {.format = SP_ANNOTATE_TEXT, .functions = names,
				     .nfunctions = 1};
	struct sp_annotate_result res = {0};
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	if (!m)
		return;
	int err = sp_annotate_write(sp_tail_spool(t->tail), t->sym, &o, m, &res);
	fclose(m);
	if (err)
		printf("cannot annotate: %s\033[K\n", sp_strerror(err));
	else
		put_lines(text, max, cols, -1);
	sp_annotate_result_release(&res);
	free(text);
}

static void draw_screen(struct top *t, double now)
{
	size_t rows, cols;
	screen_size(&rows, &cols);
	struct sp_live_row *list;
	size_t n = sp_live_rows(t->live, &t->view, &list);
	if (t->selected >= n)
		t->selected = n ? n - 1 : 0;
	fputs("\033[H", stdout);
	char head[512], label[16], amount[160];
	amount_text(t, true, true, amount, sizeof(amount));
	snprintf(head, sizeof(head), "stackpulse top: %s, %.0f s, %s in the last %s%s%s%s",
		 event_of(t), now - t->start_s, amount,
		 sp_live_window_label(t->live, label, sizeof(label)), t->paused ? "  [paused]" : "",
		 sp_live_behind(t->live) ? "  [catching up]" : "",
		 sp_live_finished(t->live) ? "  [recording over]" : "");
	printf("%.*s\033[K\n", (int)cols, head);
	/* quit first, so a narrow terminal never cuts it off */
	snprintf(head, sizeof(head), "q quit  space pause  s/t sort (%s)  p per process (%s)  "
				     "up/down select  Enter callers/callees  a annotate",
		 t->view.sort == SP_LIVE_SORT_TOTAL ? "total" : "self", t->view.by_process ? "on" : "off");
	printf("%.*s\033[K\n", (int)cols, t->status[0] ? t->status : head);
	size_t room = rows > 4 ? rows - 3 : 1;
	size_t detail = (t->neighbours || t->annotate) && n ? (room > 20 ? 14 : room / 2) : 0;
	size_t table_rows = room - detail > 2 ? room - detail - 2 : 1;
	/* keep the selected row in view: the table starts where it must */
	size_t first = t->selected >= table_rows ? t->selected - table_rows + 1 : 0;
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	if (m) {
		struct sp_live_view v = t->view;
		sp_live_write_table(t->live, &v, first + table_rows, cols, m);
		fclose(m);
		/* the two header lines, then the rows from `first` */
		const char *p = text;
		put_lines(p, 2, cols, -1);
		for (int k = 0; k < 2 && *p; k++)
			p += strcspn(p, "\n") + (p[strcspn(p, "\n")] != 0);
		for (size_t k = 0; k < first && *p; k++)
			p += strcspn(p, "\n") + (p[strcspn(p, "\n")] != 0);
		put_lines(p, table_rows, cols, n ? (long)(t->selected - first) : -1);
		for (size_t k = n - first < table_rows ? n - first : table_rows; k < table_rows; k++)
			fputs("\033[K\n", stdout);
		free(text);
	}
	if (detail && n) {
		const struct sp_live_row *r = &list[t->selected];
		char title[512];
		snprintf(title, sizeof(title), "%s%s (%s)%s", r->name,
			 r->is_inline ? " [inline]" : "", r->module,
			 t->view.by_process ? "" : ", every process");
		printf("\033[1m%.*s\033[0m\033[K\n", (int)cols, title);
		if (t->annotate)
			put_annotation(t, r, cols, detail - 1);
		else
			put_neighbours(t, r, cols, detail - 1);
	}
	fputs("\033[J", stdout);
	fflush(stdout);
	free(list);
}

/*
 * A batch table, as wide as the terminal (80 columns into a pipe or file).
 * Its line "--- stackpulse top: EVENT, S s, AMOUNT in the last K s" keeps to
 * 80 columns with the default event and window in the first 1000 s while
 * the counts have up to 7 digits: a last table or one still catching up
 * says so instead of the window's count (the table's columns still give the
 * window's shares).
 */
static void print_batch(struct top *t, double now, bool last)
{
	size_t rows, cols;
	screen_size(&rows, &cols);
	char label[16], amount[160];
	const char *state = last ? "recording over" : sp_live_behind(t->live) ? "catching up" : NULL;
	amount_text(t, false, !state, amount, sizeof(amount));
	if (state)
		printf("--- stackpulse top: %s, %.1f s, %s, %s\n", event_of(t), now - t->start_s,
		       amount, state);
	else
		printf("--- stackpulse top: %s, %.1f s, %s in the last %s\n", event_of(t),
		       now - t->start_s, amount, sp_live_window_label(t->live, label, sizeof(label)));
	sp_live_write_table(t->live, &t->view, t->rows, cols, stdout);
	fflush(stdout);
}

/* ---- keys ---------------------------------------------------------------- */

/* Keys typed since the last tick; 1 when q asks to quit. */
static int read_keys(struct top *t, bool *redraw)
{
	unsigned char buf[64];
	ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
	for (ssize_t i = 0; i < n; i++) {
		*redraw = true;
		t->status[0] = '\0';
		switch (buf[i]) {
		case 'q':
		case 'Q':
			return 1;
		case 's':
			t->view.sort = SP_LIVE_SORT_SELF;
			break;
		case 't':
			t->view.sort = SP_LIVE_SORT_TOTAL;
			break;
		case 'p':
			t->view.by_process = !t->view.by_process;
			t->selected = 0;
			break;
		case ' ':
			t->paused = !t->paused;
			break;
		case 'j':
			t->selected++;
			break;
		case 'k':
			if (t->selected)
				t->selected--;
			break;
		case '\n':
		case '\r':
		case 'c':
			t->neighbours = !t->neighbours;
			t->annotate = false;
			break;
		case 'a':
			t->annotate = !t->annotate;
			t->neighbours = false;
			break;
		case 033: /* ESC [ A (up), ESC [ B (down) */
			if (i + 2 < n && buf[i + 1] == '[') {
				if (buf[i + 2] == 'A' && t->selected)
					t->selected--;
				else if (buf[i + 2] == 'B')
					t->selected++;
				i += 2;
			} else {
				t->neighbours = false;
				t->annotate = false;
			}
			break;
		default:
			snprintf(t->status, sizeof(t->status),
				 "keys: s t (sort), p (per process), up down j k, Enter c (callers/callees), "
				 "a (annotate), space (pause), q (quit)");
			break;
		}
	}
	return 0;
}

/* ---- the hooks ------------------------------------------------------------ */

static int top_begin(void *ctx, struct sp_recorder *rec)
{
	struct top *t = ctx;
	int err = sp_recorder_tail(rec, &t->tail);
	struct sp_tail_batch b;
	if (!err)
		err = sp_tail_poll(t->tail, &b);
	if (!err)
		err = sp_tail_symbolizer(t->tail, &t->sym_opts, &t->sym);
	/* symbolizing a burst of new stacks (a whole machine's) must not stop the drain */
	struct sp_live_opts lo = {.window_s = t->window_s, .budget_ms = 40,
				  .metric = t->off_cpu ? SP_METRIC_OFF_CPU : SP_METRIC_CPU};
	if (!err)
		err = sp_live_new(t->tail, t->sym, &lo, &t->live);
	if (err)
		return sp_cli_error("cannot follow the spool '%s': %s", t->rec.output, sp_strerror(err));
	t->start_s = t->last_refresh_s = (double)sp_monotonic_ns() / 1e9;
	t->next_refresh_s = t->start_s + t->delay_s;
	if (!t->batch)
		raw_terminal(t);
	return 0;
}

static int refresh(struct top *t, struct sp_recorder *rec, double now)
{
	if (!t->paused) {
		sp_recorder_flush(rec);
		int err = sp_live_update(t->live, sp_monotonic_ns(), NULL);
		if (err) {
			snprintf(t->status, sizeof(t->status), "reading the spool: %s", sp_strerror(err));
			return 0;
		}
		uint64_t win, all;
		sp_live_counts(t->live, &win, &all);
		if (now > t->last_refresh_s)
			t->rate = (double)(all - t->last_all) / (now - t->last_refresh_s);
		t->last_all = all;
		t->last_refresh_s = now;
	}
	if (t->batch)
		print_batch(t, now, false);
	else
		draw_screen(t, now);
	return 0;
}

static int top_tick(void *ctx, struct sp_recorder *rec, double now)
{
	struct top *t = ctx;
	bool redraw = false;
	if (t->raw && read_keys(t, &redraw))
		return 1;
	/*
	 * samples the last update left to count, a budget's worth between two
	 * drains; and what was written since, every quarter second, so a
	 * refresh (the first one above all) finds little left to count
	 */
	if (!t->paused && (sp_live_behind(t->live) || now >= t->next_count_s)) {
		if (!sp_live_behind(t->live)) {
			sp_recorder_flush(rec);
			t->next_count_s = now + 0.25;
		}
		sp_live_update(t->live, sp_monotonic_ns(), NULL);
	}
	if (now >= t->next_refresh_s) {
		t->next_refresh_s = now + t->delay_s;
		return refresh(t, rec, now);
	}
	if (redraw)
		draw_screen(t, now);
	return 0;
}

static void top_end(void *ctx, struct sp_recorder *rec)
{
	struct top *t = ctx;
	(void)rec;
	bool was_raw = t->raw;
	restore_terminal();
	/* the last table stays: batch prints it, a screen leaves it on the main screen */
	if ((t->batch || was_raw) && t->live) {
		/* what came after the last table, the trailer included */
		do
			sp_live_update(t->live, 0, NULL);
		while (sp_live_behind(t->live));
		print_batch(t, (double)sp_monotonic_ns() / 1e9, true);
	}
	sp_live_free(t->live);
	sp_symbolizer_free(t->sym);
	sp_tail_free(t->tail);
	t->live = NULL;
	t->sym = NULL;
	t->tail = NULL;
}

int cmd_top(int argc, char **argv)
{
	struct top t = {.rec = {.output = "top.spool"}, .delay_s = 1.0,
			.window_s = SP_LIVE_WINDOW_DEFAULT, .rows = 20};
	argp_parse(&argp, argc, argv, 0, NULL, &t);
	if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO))
		t.batch = true;
	struct sp_cli_live_hooks hooks = {&t, top_begin, top_tick, top_end};
	return sp_cli_record_run(&t.rec, &hooks);
}
