/* SPDX-License-Identifier: MIT */
/* `stackpulse symbolize`: a placeholder until symbol records can be written into spools. */
#include "cli.h"

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	(void)arg;
	(void)state;
	/* Arguments are accepted so that the message below, not a usage error, answers. */
	return key == ARGP_KEY_ARG ? 0 : ARGP_ERR_UNKNOWN;
}

static const struct argp argp = {
	NULL, parse_opt, "[SPOOL]",
	"Resolve a spool's frames ahead of time and store the names in the spool, so "
	"that a report no longer needs the recorded module files.\n\n"
	"Not implemented in this version: it always fails.  'stackpulse report' "
	"symbolizes on the fly from the module files, proving each is the recorded one."
	SP_CLI_EXIT_DOC,
	NULL, NULL, NULL,
};

int cmd_symbolize(int argc, char **argv)
{
	argp_parse(&argp, argc, argv, 0, NULL, NULL);
	return sp_cli_error("not implemented yet in this version; report symbolizes on the fly");
}
