/* SPDX-License-Identifier: MIT */
/* stackpulse dump: print every record of a spool, one line each, in file order. */
#include "cli.h"

#include <errno.h>
#include <string.h>

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
	.args_doc = "[SPOOL]",
	.doc = "Print every record of SPOOL (default: profile.spool) in file order, one line "
	       "per record, in the stable text form of stackpulse-dump(1), or as JSON Lines "
	       "with --json."
	       SP_CLI_EXIT_DOC,
};

int cmd_dump(int argc, char **argv)
{
	struct dump_opts opts = {.spool = "profile.spool"};
	if (argp_parse(&argp, argc, argv, 0, NULL, &opts))
		return SP_EXIT_USAGE;

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
