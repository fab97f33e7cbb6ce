/* SPDX-License-Identifier: MIT */
/* Shared declarations of the command-line front end: subcommands and the error path. */
#ifndef SP_CLI_H
#define SP_CLI_H

#include <argp.h>
#include <limits.h>
#include <string.h>

#include "stackpulse.h"

/* Exit statuses shared by every subcommand (documented in --help and stackpulse(1)). */
enum {
	SP_EXIT_OK = 0,
	SP_EXIT_FAILURE = 1, /* the operation failed; the message says why */
	SP_EXIT_USAGE = 2,   /* bad option or argument */
};

/* The argp doc text's closing lines about exit statuses, shared by all subcommands. */
#define SP_CLI_EXIT_DOC                                                        \
	"\vExit status: 0 on success, 1 when the operation fails, 2 on a usage error."

int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_annotate(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_symbolize(int argc, char **argv);
int cmd_top(int argc, char **argv);

/* What record and top record, and how (cmd/record.c). */
struct sp_cli_record_args {
	struct sp_record_opts opts;
	const char *output;
	double duration_s; /* 0 = until the target exits */
	bool quiet;
	int realtime;      /* SCHED_FIFO priority for the recorder, 0 = none */
	pid_t *pids;       /* -p PID,... in order, npids of them */
	size_t npids;
	bool descendants;
	bool stop_attach;  /* -p with SIGSTOP/SIGCONT around the attach (the old way) */
	bool system_wide;  /* -a, or -C without a target */
	int *cpus;         /* -C LIST, ncpus of them */
	size_t ncpus;
	const char *cpu_list;
	bool freq_given;
	char **command;    /* argv of the command to launch, or NULL */
	char cmdline[1024];
	const char *segments_dir; /* record --segments DIR, or NULL */
	struct sp_segments_opts segments; /* --segment, --retain */
	bool segment_given, retain_given, output_given;
};

/*
 * The target and sampling options of record and top (-p, -a, -C, -F, -e,
 * -c, -k, ... and the COMMAND), as an argp child whose input is a struct
 * sp_cli_record_args.
 */
extern const struct argp sp_cli_record_argp;

/* A live view riding on a recording (top): called from the drain loop. */
struct sp_cli_live_hooks {
	void *ctx;
	/* Recording has started: 0, or an exit status to stop with. */
	int (*begin)(void *ctx, struct sp_recorder *rec);
	/* After each drain (about every 100 ms): non-zero ends the recording. */
	int (*tick)(void *ctx, struct sp_recorder *rec, double now_s);
	/* The recording is finished (its trailer written): the last refresh. */
	void (*end)(void *ctx, struct sp_recorder *rec);
};

/*
 * Record as args say through sp_session_run (attach or launch, drain,
 * finish, stop the command), printing the status line, the summary and the
 * command's fate, with hooks (may be NULL) along.  Returns the exit status.
 * Takes args' pids and cpus (freed).
 */
int sp_cli_record_run(struct sp_cli_record_args *args, const struct sp_cli_live_hooks *hooks);

/* A positive number of seconds ("2.5"), at most 1e7.  0, or -1 when invalid. */
int sp_cli_parse_seconds(const char *arg, double *out);

/*
 * Print "stackpulse SUBCOMMAND: MESSAGE" to stderr and return SP_EXIT_FAILURE,
 * so callers write `return sp_cli_error("cannot open spool '%s': %s", ...)`.
 */
int sp_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Same, as a warning: prints and returns nothing. */
void sp_cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Same, as a plain message ("stackpulse record: ..."): prints and returns nothing. */
void sp_cli_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One of perf's options stackpulse does not take, and what to type instead. */
struct sp_cli_spelling {
	const char *perf; /* "--dsos", "-S": matched alone or as "--dsos=..." */
	const char *ours; /* "--module NAME" */
};
/*
 * Before argp sees them: an argument of argv[1, argc) (up to "--", and with
 * stop_at_operand up to the first argument not starting with '-') that is
 * one of perf's in table (ending with {NULL, NULL}) is a usage error that
 * says "stackpulse spells this ...": exits with SP_EXIT_USAGE.
 */
void sp_cli_perf_spellings(int argc, char **argv, const struct sp_cli_spelling *table,
			   bool stop_at_operand);

/*
 * An argument echoed in a message, cut at SP_CLI_ECHO_MAX characters with
 * "...", so a list of thousands of pids does not fill the terminal:
 * argp_error(state, "invalid list '%.*s%s'", SP_CLI_ECHO(arg)).  Escaped
 * first (sp_fputs_printable: argp_error prints as it is given), and cut
 * between escapes and characters, never inside one.
 */
#define SP_CLI_ECHO_MAX 60
#define SP_CLI_ECHO(s) INT_MAX, sp_cli_echo(s), ""
/* For sp_cli_error, _warn and _note, which escape the whole message: cut only. */
#define SP_CLI_CUT(s) SP_CLI_ECHO_MAX, (s), strlen(s) > SP_CLI_ECHO_MAX ? "..." : ""
/* s escaped and cut as SP_CLI_ECHO says; valid until the eighth call after. */
const char *sp_cli_echo(const char *s);

/* The running subcommand's name, for messages ("record"). */
extern const char *sp_cli_subcommand;

/* Open -o FILE for writing (NULL or "-" means stdout).  NULL on error, reported. */
FILE *sp_cli_open_output(const char *path);
/* What reading a segment directory met, as warnings and notes naming ctx (the directory). */
void sp_cli_segment_note(void *ctx, const char *name, enum sp_segment_note what, int err);
/*
 * Open a spool, or a segment directory (record --segments) as one profile,
 * reading only the segments that may hold [start_us, end_us) (wall clock,
 * 0: open) and saying which were skipped and why; a directory's counts into
 * *rs (NULL: not wanted; zeroed for a spool).  0 or -errno / -SP_E_*.
 */
int sp_cli_open_spool(const char *path, uint64_t start_us, uint64_t end_us, struct sp_spool **out,
		      struct sp_segments_read_stats *rs);
/* What to add to an error creating an output: why a symlink or FIFO is refused; else "". */
const char *sp_cli_output_hint(int err);
/* Close an output from sp_cli_open_output, reporting write errors.  0 or SP_EXIT_FAILURE. */
int sp_cli_close_output(FILE *f, const char *path);

/*
 * The symbol options of report and symbolize (cmd/symopts.c), as an argp
 * child whose input is a struct sp_symbolizer_opts.
 */
extern const struct argp sp_cli_symbol_argp;
/* Say once why kernel or perf-map names are missing, from a symbolizer's stats. */
void sp_cli_warn_symbol_sources(const struct sp_symbolizer_stats *st,
				const struct sp_symbolizer_opts *o);

#endif
