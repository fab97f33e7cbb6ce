/* SPDX-License-Identifier: MIT */
/* Shared declarations of the command-line front end: subcommands and the error path. */
#ifndef SP_CLI_H
#define SP_CLI_H

#include <argp.h>
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
int cmd_dump(int argc, char **argv);
int cmd_symbolize(int argc, char **argv);

/*
 * Print "stackpulse SUBCOMMAND: MESSAGE" to stderr and return SP_EXIT_FAILURE,
 * so callers write `return sp_cli_error("cannot open spool '%s': %s", ...)`.
 */
int sp_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Same, as a warning: prints and returns nothing. */
void sp_cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Same, as a plain message ("stackpulse record: ..."): prints and returns nothing. */
void sp_cli_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * An argument echoed in a message, cut at SP_CLI_ECHO_MAX characters with
 * "...", so a list of thousands of pids does not fill the terminal:
 * argp_error(state, "invalid list '%.*s%s'", SP_CLI_ECHO(arg)).
 */
#define SP_CLI_ECHO_MAX 60
#define SP_CLI_ECHO(s) SP_CLI_ECHO_MAX, (s), strlen(s) > SP_CLI_ECHO_MAX ? "..." : ""

/* The running subcommand's name, for messages ("record"). */
extern const char *sp_cli_subcommand;

/* Open -o FILE for writing (NULL or "-" means stdout).  NULL on error, reported. */
FILE *sp_cli_open_output(const char *path);
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
