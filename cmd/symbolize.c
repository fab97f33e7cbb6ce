/* SPDX-License-Identifier: MIT */
/* `stackpulse symbolize`: options into struct sp_symbolizer_opts, then store the spool's symbols in it. */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct symbolize_args {
	const char *spool_path;
	const char *output;
	struct sp_symbolizer_opts sym;
};

static const struct argp_option options[] = {
	{NULL, 0, NULL, 0, "Output:", 1},
	{"output", 'o', "FILE", 0,
	 "write the symbolized spool to FILE and leave SPOOL alone (default: update SPOOL "
	 "in place, by writing a new file beside it and renaming it over SPOOL); FILE is "
	 "a new path or a regular file, whose owner and mode the new one keeps", 1},
	{NULL, 0, NULL, 0, "Symbols:", 3},
	{NULL, 0, NULL, 0, NULL, 0},
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct symbolize_args *a = state->input;
	switch (key) {
	case 'o':
		/* A spool is rewritten in place (a temporary file renamed over it): no pipe. */
		if (!strcmp(arg, "-"))
			argp_error(state, "-o -: symbolize writes a spool file, not standard output;"
					  " name a file (use ./- for a file called '-')");
		a->output = arg;
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
	"Resolve every frame the samples of a spool (default profile.spool) use, as "
	"'stackpulse report' would, and store the names in the spool, so that later "
	"reports need none of the module files, debug files, kallsyms or perf maps.  "
	"Frames an earlier run stored keep their names; address-only ones are tried "
	"again.  Prints what could not be resolved, with every place looked."
	"\vExit status: 0 when the spool was written (even with frames left "
	"unresolved), 1 when it could not be read or written, 2 on a usage error.",
	children, NULL, NULL,
};

static void print_build_id(const struct sp_unresolved *u)
{
	if (!u->build_id_len)
		return;
	fputs(" build-id ", stdout);
	for (unsigned i = 0; i < u->build_id_len; i++)
		printf("%02x", u->build_id[i]);
}

static void print_result(const struct sp_symbolize_result *r, const char *path)
{
	printf("%s: %" PRIu64 " frames resolved: %" PRIu64 " named, %" PRIu64 " address-only; "
	       "%" PRIu64 " kernel (%" PRIu64 " named); %" PRIu64 " named from perf maps; %" PRIu64
	       " already stored\n", path, r->frames, r->frames_named, r->frames_address_only,
	       r->kernel_frames, r->kernel_frames_named, r->perf_map_frames_named,
	       r->frames_stored_before);
	printf("%s: stored %" PRIu64 " frames, %" PRIu64 " kernel symbols, %" PRIu64
	       " perf map lines (%" PRIu64 " bytes)\n", path, r->frames_written,
	       r->kernel_symbols_written, r->perf_map_lines_written, r->bytes_written);
	if (!r->nunresolved)
		return;
	printf("Unresolved:\n");
	for (size_t i = 0; i < r->nunresolved; i++) {
		const struct sp_unresolved *u = &r->unresolved[i];
		/* Module paths come from the spool: escaped like every name. */
		fputs("  ", stdout);
		sp_fputs_printable(u->what, stdout);
		print_build_id(u);
		printf(": %" PRIu64 " frame%s, %s\n", u->frames, u->frames == 1 ? "" : "s", u->why);
		for (size_t k = 0; k < u->nplaces; k++) {
			fputs("    looked in ", stdout);
			sp_fputs_printable(u->places[k], stdout);
			fputc('\n', stdout);
		}
	}
}

/* What path is when it exists and is not a regular file ("a FIFO"), else NULL. */
static const char *not_regular(const char *path)
{
	struct stat st;
	if (lstat(path, &st) || S_ISREG(st.st_mode))
		return NULL;
	switch (st.st_mode & S_IFMT) {
	case S_IFLNK:
		return "a symbolic link";
	case S_IFDIR:
		return "a directory";
	case S_IFIFO:
		return "a FIFO";
	case S_IFCHR:
		return "a character device";
	case S_IFBLK:
		return "a block device";
	case S_IFSOCK:
		return "a socket";
	}
	return "not a regular file";
}

int cmd_symbolize(int argc, char **argv)
{
	struct symbolize_args a = {
		.spool_path = "profile.spool",
		/* Names stored earlier stand; address-only frames get another chance. */
		.sym = {.stored_symbols = SP_STORED_NAMED},
	};
	argp_parse(&argp, argc, argv, 0, NULL, &a);
	const char *out = a.output ? a.output : a.spool_path;
	/* Say which side failed: the spool read, or the file written. */
	if (access(a.spool_path, R_OK))
		return sp_cli_error("cannot open spool '%s': %s", a.spool_path, strerror(errno));
	struct sp_symbolize_result r;
	int err = sp_spool_symbolize(a.spool_path, a.output, &a.sym, &r);
	if (err) {
		sp_symbolize_result_release(&r);
		/* The library refuses such an output before anything else: say what it is. */
		const char *kind = not_regular(out);
		if (kind && a.output)
			return sp_cli_error("refusing to write over '%s': it is %s; give -o a "
					    "regular file or a new path", out, kind);
		if (kind)
			return sp_cli_error("refusing to update spool '%s' in place: it is %s; "
					    "give -o a regular file or a new path", out, kind);
		if (err == -SP_E_SPOOL_BUSY)
			return sp_cli_error("refusing to write '%s': a recording still writes it; "
					    "symbolize it when the recording ends, or now into another "
					    "file with -o", out);
		return sp_cli_error("cannot symbolize '%s' into '%s': %s", a.spool_path, out,
				    sp_strerror(err));
	}
	if (sp_spool_is_growing(a.spool_path))
		sp_cli_note("spool '%s' is still being written: what was written so far is in '%s'",
			    a.spool_path, out);
	else if (r.input_truncated)
		sp_cli_warn("spool '%s' is truncated (the recording was cut short); its intact "
			    "prefix was kept", a.spool_path);
	print_result(&r, out);
	sp_cli_warn_symbol_sources(&r.stats, &a.sym);
	sp_symbolize_result_release(&r);
	return SP_EXIT_OK;
}
