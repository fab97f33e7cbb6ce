/* SPDX-License-Identifier: MIT */
/* stackpulse dump: print every record of a spool, one line each, in file order. */
#include "cli.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

struct dump_opts {
	const char *spool;  /* SPOOL argument */
	const char *output; /* -o FILE; NULL or "-" is standard output */
	bool json;          /* --json: JSON Lines instead of text */
};

enum { OPT_JSON = 0x100 };

static const struct argp_option options[] = {
	{"json", OPT_JSON, NULL, 0,
	 "print one JSON object per record (JSON Lines) instead of text, for scripts", 0},
	{"output", 'o', "FILE", 0, "write the dump to FILE (default: standard output)", 0},
	{0},
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct dump_opts *o = state->input;
	switch (key) {
	case 'o':
		o->output = arg;
		return 0;
	case OPT_JSON:
		o->json = true;
		return 0;
	case ARGP_KEY_ARG:
		if (state->arg_num > 0)
			argp_error(state, "too many arguments");
		o->spool = arg;
		return 0;
	default:
		return ARGP_ERR_UNKNOWN;
	}
}

static const struct argp argp = {
	.options = options,
	.parser = parse_opt,
	.args_doc = "[SPOOL|DIR]",
	.doc = "Print every record of SPOOL (default: profile.spool) in file order, one line "
	       "per record, in the stable text form of stackpulse-dump(1), or as JSON Lines "
	       "with --json.  A segment directory DIR (record --segments) prints each of its "
	       "segments, oldest first, after a line naming it."
	       SP_CLI_EXIT_DOC,
};

struct dump_run {
	const struct dump_opts *o;
	FILE *out; /* opened at the first segment: no output file when there is none */
	bool open_failed;
};

/* One segment of a directory: a line naming it, then its records. */
static int dump_segment(void *ctx, const char *name, const struct sp_spool *s)
{
	struct dump_run *r = ctx;
	if (!r->out && !(r->out = sp_cli_open_output(r->o->output))) {
		r->open_failed = true; /* reported */
		return -ECANCELED;
	}
	/* names of the segment layout only: digits, letters, '.', '-' */
	if (r->o->json)
		fprintf(r->out, "{\"type\":\"segment\",\"name\":\"%s\"}\n", name);
	else
		fprintf(r->out, "segment name=\"%s\"\n", name);
	int err = r->o->json ? sp_spool_dump_json(s, r->out) : sp_spool_dump_text(s, r->out);
	return err ? err : ferror(r->out) ? -EIO : 0;
}

/* A segment directory (record --segments): each segment it holds, oldest first. */
static int dump_dir(const struct dump_opts *opts)
{
	struct dump_run r = {opts, NULL, false};
	struct sp_segments_read_opts ro = {.note = sp_cli_segment_note, .ctx = (void *)opts->spool};
	struct sp_segments_read_stats st;
	int err = sp_segments_each(opts->spool, &ro, dump_segment, &r, &st);
	/* a failed write leaves the stream's error flag set: closing reports it once */
	int rc = r.out ? sp_cli_close_output(r.out, opts->output) : SP_EXIT_OK;
	if (r.open_failed)
		return SP_EXIT_FAILURE;
	if (err == -SP_E_NO_SEGMENTS && !st.listed)
		return sp_cli_error("'%s' is a directory without segments: give a spool file, or a "
				    "directory record --segments wrote", opts->spool);
	if (err == -SP_E_NO_SEGMENTS)
		return sp_cli_error("no segment of '%s' could be read (%zu there, each skipped as "
				    "said above)", opts->spool, st.listed);
	if (err && err != -EIO)
		return sp_cli_error("cannot dump the segments of '%s': %s", opts->spool,
				    sp_strerror(err));
	if (st.skipped)
		sp_cli_note("dumped %zu of the %zu segments of '%s' (%zu skipped)", st.read,
			    st.listed, opts->spool, st.skipped);
	return err && rc == SP_EXIT_OK ? SP_EXIT_FAILURE : rc;
}

int cmd_dump(int argc, char **argv)
{
	struct dump_opts opts = {.spool = "profile.spool"};
	if (argp_parse(&argp, argc, argv, 0, NULL, &opts))
		return SP_EXIT_USAGE;

	struct stat dst;
	if (!stat(opts.spool, &dst) && S_ISDIR(dst.st_mode))
		return dump_dir(&opts);
	struct sp_spool *s;
	int err = sp_spool_open(opts.spool, &s);
	if (err)
		return sp_cli_error("cannot open spool '%s': %s", opts.spool, sp_strerror(err));
	if (sp_spool_truncated(s))
		sp_cli_warn("spool '%s' ends mid-record; dumping its intact prefix", opts.spool);

	int rc = SP_EXIT_FAILURE;
	FILE *out = sp_cli_open_output(opts.output);
	if (!out)
		goto free_spool;
	err = opts.json ? sp_spool_dump_json(s, out) : sp_spool_dump_text(s, out);
	/*
	 * A failed write leaves the stream's error flag set, and closing the
	 * output (or the dispatcher, for stdout) reports it once.
	 */
	rc = sp_cli_close_output(out, opts.output);
	if (err && rc == SP_EXIT_OK)
		rc = SP_EXIT_FAILURE;
free_spool:
	sp_spool_free(s);
	return rc;
}
