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

/* What the session's hooks share: the tail following the spool, its symbolizer, the leaves. */
struct follow {
	struct sp_tail *tail;
	struct sp_symbolizer *sym;
	struct leaves leaves;
	uint64_t last_ns;
	const char *failed; /* what failed in a hook, with err */
	int err;
};

/*
 * The tail reads the spool the recorder writes.  Its first poll, before the
 * first drain, reads the header (no sample yet), and the symbolizer is built
 * on what it read; later polls go through process_visible.
 */
static int on_started(void *ctx, struct sp_recorder *rec)
{
	struct follow *f = ctx;
	struct sp_tail_batch first;
	if ((f->err = sp_recorder_tail(rec, &f->tail)) || (f->err = sp_tail_poll(f->tail, &first)))
		return fail("cannot follow tail.spool", f->err);
	if ((f->err = sp_tail_symbolizer(f->tail, NULL, &f->sym)))
		return fail("cannot symbolize", f->err);
	f->last_ns = sp_monotonic_ns();
	return 0;
}

/* Every half second: what the recorder holds in its buffer reaches the file, then the tail. */
static int on_drained(void *ctx, struct sp_recorder *rec, uint64_t now_ns)
{
	struct follow *f = ctx;
	if (now_ns - f->last_ns < 500000000ull)
		return 0;
	f->last_ns = now_ns;
	if ((f->err = sp_recorder_flush(rec)) || (f->err = process_visible(f->tail, f->sym, &f->leaves))) {
		f->failed = "cannot follow tail.spool";
		return 1;
	}
	print_leaves(&f->leaves, "so far");
	return 0;
}

/* The spool is finished: the rest of it, trailer included, while the recorder still hands images. */
static void on_finished(void *ctx, struct sp_recorder *rec, const struct sp_session_result *res)
{
	struct follow *f = ctx;
	(void)rec;
	if (!f->failed && !res->error && (f->err = process_visible(f->tail, f->sym, &f->leaves)))
		f->failed = "cannot follow tail.spool";
}

int main(int argc, char **argv)
{
	struct follow f = {0};
	struct sp_session_result res;
	int err;

	if (argc < 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: tail COMMAND [ARGS...]\n"
				"Records COMMAND into tail.spool (in the current directory) and prints,\n"
				"every half second while it runs, the samples so far and their top leaf.\n");
		return 2;
	}
	struct sp_session_opts opts = {
		.spool_path = "tail.spool",
		.command = argv + 1,
		.hooks = {.ctx = &f, .started = on_started, .drained = on_drained,
			  .finished = on_finished},
	};
	err = sp_session_run(&opts, &res);
	if (err > 0)
		return err; /* on_started said why */
	if (err < 0 && res.failed_stage == SP_SESSION_STAGE_LAUNCH)
		return fail("cannot start the command", err);
	if (err < 0 && res.failed_stage == SP_SESSION_STAGE_ATTACH)
		return fail("cannot attach", err);
	if (err < 0)
		return fail("cannot run the command", err);
	if (f.failed)
		return fail(f.failed, f.err);
	if (res.error)
		return fail("cannot finish tail.spool", res.error);
	print_leaves(&f.leaves, "at the end");
	sp_symbolizer_free(f.sym);
	sp_tail_free(f.tail);
	return 0;
}
