/* SPDX-License-Identifier: MIT */
/* The stackpulse dispatcher: command table, global options, one error path, stdout check. */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *sp_cli_subcommand = NULL;

const char *argp_program_version = "stackpulse " SP_VERSION;
const char *argp_program_bug_address = NULL;

static void vmessage(const char *level, const char *fmt, va_list ap)
{
	fflush(stdout);
	if (sp_cli_subcommand)
		fprintf(stderr, "stackpulse %s: %s", sp_cli_subcommand, level);
	else
		fprintf(stderr, "stackpulse: %s", level);
	/* Messages name paths and names from spools and targets: escaped, never obeyed. */
	char *text = NULL;
	if (vasprintf(&text, fmt, ap) >= 0) {
		sp_fputs_printable(text, stderr);
		free(text);
	} else {
		fputs("(out of memory)", stderr);
	}
	fputc('\n', stderr);
}

const char *sp_cli_echo(const char *s)
{
	static char *ring[8];
	static unsigned next;
	char **slot = &ring[next++ % 8];
	free(*slot);
	*slot = NULL;
	size_t len = 0;
	FILE *f = open_memstream(slot, &len);
	if (!f)
		return "(out of memory)";
	sp_fputs_printable(s, f);
	if (fclose(f) || !*slot)
		return "(out of memory)";
	if (len <= SP_CLI_ECHO_MAX)
		return *slot;
	/* Cut before a character's continuation bytes and before an escape's \xHH. */
	size_t cut = SP_CLI_ECHO_MAX;
	while (cut && ((unsigned char)(*slot)[cut] & 0xc0) == 0x80)
		cut--;
	for (size_t j = cut; j && cut - j < 3; j--)
		if ((*slot)[j - 1] == '\\' && (*slot)[j] == 'x') {
			cut = j - 1;
			break;
		}
	memcpy(*slot + cut, "...", 4);
	return *slot;
}

int sp_cli_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmessage("", fmt, ap);
	va_end(ap);
	return SP_EXIT_FAILURE;
}

void sp_cli_note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmessage("", fmt, ap);
	va_end(ap);
}

void sp_cli_perf_spellings(int argc, char **argv, const struct sp_cli_spelling *table,
			   bool stop_at_operand)
{
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		if (!strcmp(arg, "--") || (stop_at_operand && arg[0] != '-'))
			return;
		for (const struct sp_cli_spelling *t = table; t->perf; t++) {
			size_t n = strlen(t->perf);
			if (!strncmp(arg, t->perf, n) && (!arg[n] || arg[n] == '=')) {
				sp_cli_note("unrecognized option '%s' (perf's): stackpulse spells this "
					    "%s", t->perf, t->ours);
				/* argp's own "Try `... --help' or `... --usage'" line, and its exit */
				static const struct argp none = {0};
				argp_help(&none, stderr, ARGP_HELP_SEE | ARGP_HELP_EXIT_ERR, argv[0]);
				exit(SP_EXIT_USAGE);
			}
		}
	}
}

void sp_cli_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmessage("warning: ", fmt, ap);
	va_end(ap);
}

void sp_cli_segment_note(void *ctx, const char *name, enum sp_segment_note what, int err)
{
	const char *dir = ctx;
	switch (what) {
	case SP_SEGMENT_GROWING:
		sp_cli_note("segment '%s/%s' is still being written: read as far as it is complete",
			    dir, name);
		break;
	case SP_SEGMENT_CUT:
		sp_cli_warn("segment '%s/%s' was cut short (a recorder killed while writing it): "
			    "its intact prefix is read", dir, name);
		break;
	case SP_SEGMENT_DAMAGED:
		sp_cli_warn("segment '%s/%s' skipped: %s", dir, name, sp_strerror(err));
		break;
	case SP_SEGMENT_VANISHED:
		sp_cli_note("segment '%s/%s' was deleted (retention) while the directory was read: "
			    "skipped", dir, name);
		break;
	case SP_SEGMENT_REFUSED:
		sp_cli_warn("segment '%s/%s' skipped: not a regular file (a symlink, FIFO or "
			    "device is never opened)", dir, name);
		break;
	}
}

int sp_cli_open_spool(const char *path, uint64_t start_us, uint64_t end_us, struct sp_spool **out,
		      struct sp_segments_read_stats *counts)
{
	struct stat st;
	struct sp_segments_read_stats rs = {0};
	if (counts)
		*counts = rs;
	if (stat(path, &st) || !S_ISDIR(st.st_mode))
		return sp_spool_open(path, out);
	struct sp_segments_read_opts o = {start_us, end_us, sp_cli_segment_note, (void *)path};
	int err = sp_spool_open_segments(path, &o, out, &rs);
	if (counts)
		*counts = rs;
	if ((err == -SP_E_NO_SEGMENTS || !err) && rs.outside && rs.outside == rs.listed)
		sp_cli_note("none of the %zu segments of '%s' lies in the --time window", rs.listed,
			    path);
	else if (!err && (rs.skipped || rs.outside))
		sp_cli_note("read %zu of the %zu segments of '%s' (%zu skipped, %zu outside "
			    "--time)", rs.read, rs.listed, path, rs.skipped, rs.outside);
	return err;
}

FILE *sp_cli_open_output(const char *path)
{
	if (!path || !strcmp(path, "-"))
		return stdout;
	/* A report written over a recording would lose it: `report -o x.spool` is a slip. */
	if (sp_file_is_spool(path)) {
		sp_cli_error("refusing to overwrite spool '%s' with output: give -o another "
			     "file (or remove the spool first)", path);
		return NULL;
	}
	int fd = sp_output_create(path, 0666);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (fd >= 0 && !f)
		close(fd);
	if (!f)
		sp_cli_error("cannot create '%s': %s%s", path, sp_strerror(fd < 0 ? fd : -errno),
			     sp_cli_output_hint(fd));
	return f;
}

const char *sp_cli_output_hint(int err)
{
	if (err == -ELOOP)
		return " (another user's symbolic link, which is not followed: give the path it "
		       "names, or remove it)";
	if (err == -SP_E_NOT_REGULAR)
		return " (another user's FIFO, device or socket: outputs go to regular files, or "
		       "to your own)";
	if (err == -SP_E_OUTPUT_NOT_OURS)
		return " (a file another user made there in advance, in a sticky directory: "
		       "give another -o, or remove it as root)";
	if (err == -SP_E_SPOOL_BUSY)
		return " (a stackpulse record or top still running writes it: give another -o, or "
		       "wait for it to end)";
	return "";
}

int sp_cli_close_output(FILE *f, const char *path)
{
	if (f == stdout)
		return fflush(f) ? sp_cli_error("cannot write output: %s", strerror(errno)) : 0;
	int bad = ferror(f);
	if (fclose(f) || bad)
		return sp_cli_error("cannot write '%s': %s", path, strerror(errno));
	return 0;
}

struct subcommand {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct subcommand commands[] = {
	{"record", cmd_record, "sample a command or running processes into a spool"},
	{"report", cmd_report, "print where CPU time went, or export to other tools"},
	{"annotate", cmd_annotate, "show a function's hot source lines and instructions"},
	{"symbolize", cmd_symbolize, "resolve a spool's frames now and store the names in it"},
	{"top", cmd_top, "record and show the busiest functions live, refreshed every second"},
	{"dump", cmd_dump, "print every record of a spool"},
};

static void usage(FILE *out)
{
	fprintf(out, "Usage: stackpulse [--help] [--version] SUBCOMMAND [OPTION...] [ARG...]\n"
		     "A sampling CPU profiler: complete DWARF-unwound stacks, compact spools.\n\n"
		     "Subcommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\nRun 'stackpulse SUBCOMMAND --help' for a subcommand's options.\n"
		     "Quick start: stackpulse record -- ./prog ARGS; stackpulse report\n\n"
		     "Exit status: 0 on success, 1 when the operation fails, 2 on a usage error;\n"
		     "'record -- COMMAND' exits with COMMAND's status.\n"
		     "Manual: stackpulse(1), stackpulse-record(1), stackpulse-top(1),\n"
		     "stackpulse-report(1), stackpulse-annotate(1), stackpulse-dump(1),\n"
		     "stackpulse-symbolize(1), stackpulse-spool(5).\n");
}

int main(int argc, char **argv)
{
	argp_err_exit_status = SP_EXIT_USAGE;
	if (argc < 2) {
		usage(stderr);
		return SP_EXIT_USAGE;
	}
	const char *name = argv[1];
	if (!strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help")) {
		usage(stdout);
		return fflush(stdout) ? SP_EXIT_FAILURE : SP_EXIT_OK;
	}
	if (!strcmp(name, "--version") || !strcmp(name, "-V")) {
		printf("%s\n", argp_program_version);
		return fflush(stdout) ? SP_EXIT_FAILURE : SP_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(name, commands[i].name))
			continue;
		sp_cli_subcommand = commands[i].name;
		/* argp prints "stackpulse record" in usage lines. */
		char prog[64];
		snprintf(prog, sizeof(prog), "stackpulse %s", commands[i].name);
		argv[1] = prog;
		/*
		 * -h asks for help, as in perf and most tools (argp knows only -?):
		 * among the leading options, before "--" or a launched command.
		 */
		static char help[] = "--help";
		for (int a = 2; a < argc && argv[a][0] == '-' && strcmp(argv[a], "--"); a++)
			if (!strcmp(argv[a], "-h"))
				argv[a] = help;
		int rc = commands[i].fn(argc - 1, argv + 1);
		if (fflush(stdout) || ferror(stdout)) {
			sp_cli_error("cannot write standard output: %s", strerror(errno));
			return SP_EXIT_FAILURE;
		}
		return rc;
	}
	fprintf(stderr, "stackpulse: unknown subcommand '%s'\n", name);
	usage(stderr);
	return SP_EXIT_USAGE;
}
