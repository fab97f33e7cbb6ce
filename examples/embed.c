/* SPDX-License-Identifier: MIT */
/* Record a command with libstackpulse, then stream the leaf of its first samples. */
#include <inttypes.h>
#include <stdio.h>
#include <stackpulse.h>

static int fail(const char *what, int err)
{
	fprintf(stderr, "embed: %s: %s\n", what, sp_strerror(err));
	return 1;
}

/*
 * Called for each frame of a stack, leaf first.  Interpreter machinery
 * (a Python runtime's C frames) is skipped, as reports do by default; the
 * first other frame is printed, and returning non-zero ends the stack.
 */
static int print_leaf(const struct sp_resolved_frame *f, void *arg)
{
	(void)arg;
	if (f->flags & SP_RFRAME_HIDDEN_DEFAULT)
		return 0;
	printf("leaf: %s (%s)\n", f->name, f->module);
	return 1;
}

int main(int argc, char **argv)
{
	struct sp_session_result res;
	int err;

	if (argc < 2) {
		fprintf(stderr, "usage: embed COMMAND [ARGS...]\n");
		return 2;
	}
	/*
	 * One call records the whole session: the command starts suspended,
	 * the events switch on exactly at its exec, the rings are drained
	 * until it exits, and the spool is finished.  Every option left 0
	 * takes its default (999 Hz, 32 KiB of stack per sample).
	 */
	struct sp_session_opts opts = {.spool_path = "embed.spool", .command = argv + 1};
	err = sp_session_run(&opts, &res);
	if (err < 0 && res.failed_stage == SP_SESSION_STAGE_LAUNCH)
		return fail("cannot start the command", err);
	if (err < 0 && res.failed_stage == SP_SESSION_STAGE_ATTACH)
		return fail("cannot attach", err);
	if (err < 0)
		return fail("cannot run the command", err);
	if (res.error)
		return fail("cannot finish embed.spool", res.error);
	printf("%" PRIu64 " samples\n", res.summary.samples);

	/*
	 * Read the spool back and stream the frames of the first samples: the
	 * symbolizer resolves each distinct frame once and keeps the frame ids of
	 * each stack it has streamed, so repeated stacks cost little.
	 */
	struct sp_spool *spool;
	struct sp_symbolizer *sym;
	if ((err = sp_spool_open("embed.spool", &spool)))
		return fail("cannot open embed.spool", err);
	if ((err = sp_symbolizer_new(spool, NULL, &sym)))
		return fail("cannot symbolize", err);
	for (size_t i = 0; i < sp_spool_sample_count(spool) && i < 10; i++) {
		err = sp_symbolizer_for_each_sample_frame(sym, sp_spool_sample(spool, i),
							  print_leaf, NULL);
		if (err < 0)
			return fail("cannot symbolize", err);
	}
	sp_symbolizer_free(sym);
	sp_spool_free(spool);
	return 0;
}
