/* SPDX-License-Identifier: MIT */
/*
 * Process a profile while recording (a tail of the spool): record a command and,
 * every half second, read the samples written since the last look and print
 * how many landed in each leaf function so far.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stackpulse.h>
#include <time.h>

static int fail(const char *what, int err)
{
	fprintf(stderr, "tail: %s: %s\n", what, sp_strerror(err));
	return 1;
}

/* Leaf names and their counts: a small table, enough for an example. */
struct leaves {
	const char *name[64];
	uint64_t count[64];
	size_t n;
};

/* The first frame not hidden by default is the sample's leaf: count it and stop. */
static int count_leaf(const struct sp_resolved_frame *f, void *arg)
{
	struct leaves *l = arg;
	if (f->flags & SP_RFRAME_HIDDEN_DEFAULT)
		return 0;
	size_t i = 0;
	/* the symbolizer keeps one string per name: pointers compare */
	while (i < l->n && l->name[i] != f->name && strcmp(l->name[i], f->name))
		i++;
	if (i == l->n && l->n < 64)
		l->name[l->n++] = f->name;
	if (i < 64)
		l->count[i]++;
	return 1;
}

/* Take in every complete batch: the symbolizer follows, each new sample is counted. */
static int process_visible(struct sp_tail *t, struct sp_symbolizer *sym, struct leaves *l)
{
	struct sp_tail_batch b;
	do {
		int err = sp_tail_poll(t, &b);
		if (err)
			return err;
		/* this example keeps no stacks of its own, so what to invalidate is not asked */
		if ((err = sp_symbolizer_update(sym, &b, NULL)))
			return err;
		const struct sp_spool *s = sp_tail_spool(t);
		for (size_t i = b.first_sample; i < b.end_sample; i++)
			if ((err = sp_symbolizer_for_each_sample_frame(sym, sp_spool_sample(s, i),
								       count_leaf, l)) < 0)
				return err;
	} while (b.has_more);
	return 0;
}

static void print_leaves(const struct leaves *l, const char *when)
{
	uint64_t all = 0, best = 0;
	size_t top = 0;
	for (size_t i = 0; i < l->n; i++) {
		all += l->count[i];
		if (l->count[i] > best) {
			best = l->count[i];
			top = i;
		}
	}
	if (all)
		printf("%s: %" PRIu64 " samples, top leaf %s (%" PRIu64 ")\n", when, all, l->name[top],
		       best);
}

int main(int argc, char **argv)
{
	struct sp_launch *child;
	struct sp_recorder *rec;
	struct sp_record_opts opts = {.frequency_hz = 999};
	struct sp_tail *tail;
	struct sp_symbolizer *sym;
	struct leaves leaves = {0};
	int err, status;

	if (argc < 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: tail COMMAND [ARGS...]\n"
				"Records COMMAND into tail.spool (in the current directory) and prints,\n"
				"every half second while it runs, the samples so far and their top leaf.\n");
		return 2;
	}
	if ((err = sp_launch_suspended(argv + 1, &child)))
		return fail("cannot start the command", err);
	if ((err = sp_recorder_attach(sp_launch_pid(child), "tail.spool",
				      SP_ATTACH_ENABLE_ON_EXEC, &opts, &rec)))
		return fail("cannot attach", err);
	/*
	 * The tail reads the spool the recorder writes.  Its first poll reads
	 * the header (no sample yet: the command has not started), and the
	 * symbolizer is built on what it read; later polls go through
	 * process_visible.
	 */
	struct sp_tail_batch first;
	if ((err = sp_recorder_tail(rec, &tail)) || (err = sp_tail_poll(tail, &first)))
		return fail("cannot follow tail.spool", err);
	if ((err = sp_tail_symbolizer(tail, NULL, &sym)))
		return fail("cannot symbolize", err);
	if ((err = sp_launch_start(child)))
		return fail("cannot run the command", err);
	struct timespec last, now;
	clock_gettime(CLOCK_MONOTONIC, &last);
	while (sp_launch_try_wait(child, &status) == 0) {
		sp_recorder_wait(rec, 100);
		sp_recorder_consume_available(rec);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - last.tv_sec) * 1000 + (now.tv_nsec - last.tv_nsec) / 1000000 < 500)
			continue;
		last = now;
		/* what the recorder holds in its buffer reaches the file, then the tail */
		if ((err = sp_recorder_flush(rec)) || (err = process_visible(tail, sym, &leaves)))
			return fail("cannot follow tail.spool", err);
		print_leaves(&leaves, "so far");
	}
	if ((err = sp_recorder_finish(rec, NULL)))
		return fail("cannot finish tail.spool", err);
	if ((err = process_visible(tail, sym, &leaves)))
		return fail("cannot follow tail.spool", err);
	print_leaves(&leaves, "at the end");
	sp_symbolizer_free(sym);
	sp_tail_free(tail);
	sp_recorder_free(rec);
	sp_launch_free(child);
	return 0;
}
