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
	struct sp_launch *child;
	struct sp_recorder *rec;
	struct sp_record_opts opts = {.frequency_hz = 999};
	struct sp_summary sum;
	int err, status;

	if (argc < 2) {
		fprintf(stderr, "usage: embed COMMAND [ARGS...]\n");
		return 2;
	}
	/*
	 * The child waits before execve, so the events switch on exactly at its
	 * exec.  On the error paths below, exiting is the cleanup: a child that
	 * was never started sees its start pipe close and exits too.
	 */
	if ((err = sp_launch_suspended(argv + 1, &child)))
		return fail("cannot start the command", err);
	if ((err = sp_recorder_attach(sp_launch_pid(child), "embed.spool",
				      SP_ATTACH_ENABLE_ON_EXEC, &opts, &rec)))
		return fail("cannot attach", err);
	if ((err = sp_launch_start(child)))
		return fail("cannot run the command", err);
	while (sp_launch_try_wait(child, &status) == 0) {
		sp_recorder_wait(rec, 100);
		sp_recorder_consume_available(rec);
	}
	err = sp_recorder_finish(rec, &sum);
	sp_recorder_free(rec);
	sp_launch_free(child);
	if (err)
		return fail("cannot finish embed.spool", err);
	printf("%" PRIu64 " samples\n", sum.samples);

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
