/* SPDX-License-Identifier: MIT */
/* The live view over a growing spool: per-function shares since the start and over a sliding window. */
#include "report/aggregate.h"
#include "report/views.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/*
 * Work per update follows the new samples: each sample adds its weight to
 * its node (process, stack id) and to the window's newest one-second
 * bucket (with a time metric, each second of an off-CPU interval adds its
 * part to the interval's node and to that second's bucket, count_interval);
 * a bucket leaving the window takes back what it added.  A view
 * folds the nodes into entries (function in process) over the spool's
 * prefix tree: each process's sampled stacks and their ancestors are
 * visited once, each frame's functions named once, so the work follows the
 * tree's nodes, not the stacks times their depth (100,000 sampled stacks
 * 2,048 deep were 2 x 10^8 frames walked: 9 s).  Views then sort the
 * entries (proportional to the functions, not the samples).
 */

#define NO_ENTRY UINT32_MAX

struct live_func {
	const char *name, *module; /* borrowed from the symbolizer */
	bool is_inline;            /* an inlined function: its own row, marked [inline] */
};

struct live_entry {
	uint32_t func;
	int32_t pid;
	uint64_t self_all, total_all, self_win, total_win; /* as of the last fold */
};

/* What the samples of one process on one stack weighed. */
struct live_node {
	int32_t pid;
	uint32_t stack;
	uint64_t all, win;
};

/* What one second of samples added, by node. */
struct bucket {
	uint64_t second;  /* timestamp / 1e9 */
	uint64_t samples;
	uint64_t preempted; /* a time metric: µs of it preempted */
	struct sp_map index; /* node -> index into deltas */
	struct {
		uint32_t node;
		uint64_t w;
	} *deltas;
	size_t ndeltas, cap;
};

struct sp_live {
	struct sp_tail *tail;
	struct sp_symbolizer *sym;
	struct sp_live_opts opts;
	struct live_func *funcs;
	size_t nfuncs, funcs_cap;
	struct sp_map func_index; /* hash(name, module) -> func */
	struct sp_module_names module_names; /* identical code is one function, as in report */
	struct live_entry *entries;
	size_t nentries, entries_cap;
	struct sp_map entry_index; /* func << 32 | pid -> entry */
	struct live_node *nodes;
	size_t nnodes, nodes_cap;
	struct sp_map node_index; /* pid << 32 | stack id -> node */
	/* frame id -> offset into ffuncs: [n, func ids innermost first], named once */
	struct sp_map ffunc_index;
	uint32_t *ffuncs;
	size_t nffuncs, ffuncs_cap;
	bool fold_stale;        /* the nodes changed since the entries were folded */
	bool folded_by_process; /* how they were */
	/* (pid, stack id) -> offset into paths: [n, entry ids leaf first...] */
	struct sp_map stack_index;
	uint32_t *paths;
	size_t npaths, paths_cap;
	/*
	 * stack id -> offset into fpaths: [n, func ids leaf first...], named
	 * once per stack whatever the processes sampling it (8,000 processes of
	 * one 2,048-deep stack named it 8,000 times: 13 s, 1.7 GB).
	 */
	struct sp_map fstack_index;
	uint32_t *fpaths;
	size_t nfpaths, fpaths_cap;
	struct bucket *buckets; /* ring of opts.window_s + 1 */
	size_t nbuckets;
	uint64_t newest_second;
	uint64_t win_samples, all_samples; /* weights (sp_sample_weight) */
	uint64_t counted;                  /* samples counted */
	size_t next_sample;     /* first sample not yet counted */
	size_t win_first;       /* first sample index that may lie in the window */
	bool finished;
	bool behind;            /* the last update stopped at its budget */
	struct sp_sample_unit unit; /* what a sample weighs, once the header is read */
	bool have_unit;
	/* A time metric (opts.metric): the intervals counted, and the µs preempted. */
	size_t next_offcpu;
	size_t win_first_offcpu; /* first interval that may end in the window */
	uint64_t win_preempted, all_preempted;
};

static uint64_t str_hash(const char *s, uint64_t h)
{
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ULL;
	return h;
}

static uint32_t intern_func(struct sp_live *l, const char *name, const char *module,
			    bool is_inline)
{
	uint64_t h = sp_hash64(str_hash(module, str_hash(name, 0xcbf29ce484222325ULL)) ^ is_inline);
	uint32_t id;
	/* open addressing on collisions: the next key */
	for (;; h++) {
		if (!sp_map_get(&l->func_index, h, &id))
			break;
		if (!strcmp(l->funcs[id].name, name) && !strcmp(l->funcs[id].module, module) &&
		    l->funcs[id].is_inline == is_inline)
			return id;
	}
	if (sp_array_reserve((void **)&l->funcs, &l->funcs_cap, l->nfuncs + 1, sizeof(*l->funcs)) ||
	    sp_map_put(&l->func_index, h, (uint32_t)l->nfuncs))
		return NO_ENTRY;
	l->funcs[l->nfuncs] = (struct live_func){name, module, is_inline};
	return (uint32_t)l->nfuncs++;
}

static uint32_t intern_entry(struct sp_live *l, uint32_t func, int32_t pid)
{
	uint64_t key = (uint64_t)func << 32 | (uint32_t)pid;
	uint32_t id;
	if (sp_map_get(&l->entry_index, key, &id))
		return id;
	if (sp_array_reserve((void **)&l->entries, &l->entries_cap, l->nentries + 1,
			     sizeof(*l->entries)) ||
	    sp_map_put(&l->entry_index, key, (uint32_t)l->nentries))
		return NO_ENTRY;
	l->entries[l->nentries] = (struct live_entry){.func = func, .pid = pid};
	return (uint32_t)l->nentries++;
}

/* Ids the paths (and the stacks' function paths) may hold before they are mapped again (16 MiB). */
#define LIVE_PATHS_MAX ((size_t)4 << 20)

static int push_fpath(struct sp_live *l, uint32_t v)
{
	if (sp_array_reserve((void **)&l->fpaths, &l->fpaths_cap, l->nfpaths + 1, sizeof(*l->fpaths)))
		return -ENOMEM;
	l->fpaths[l->nfpaths++] = v;
	return 0;
}

static int push_path(struct sp_live *l, uint32_t v)
{
	if (sp_array_reserve((void **)&l->paths, &l->paths_cap, l->npaths + 1, sizeof(*l->paths)))
		return -ENOMEM;
	l->paths[l->npaths++] = v;
	return 0;
}

static int push_ffunc(struct sp_live *l, uint32_t v)
{
	if (sp_array_reserve((void **)&l->ffuncs, &l->ffuncs_cap, l->nffuncs + 1, sizeof(*l->ffuncs)))
		return -ENOMEM;
	l->ffuncs[l->nffuncs++] = v;
	return 0;
}

/*
 * The functions of frame_id, innermost first (inlined ones, then the
 * frame's own), the runtime's hidden ones left out; none for a truncation
 * marker.  Named once: *off is where [n, func ids...] starts in l->ffuncs
 * (an offset: the array moves as it grows).
 */
static int frame_funcs(struct sp_live *l, uint32_t frame_id, uint32_t *off)
{
	if (sp_map_get(&l->ffunc_index, frame_id, off))
		return 0;
	const struct sp_spool *s = sp_tail_spool(l->tail);
	const struct sp_frame *fr = sp_spool_frame(s, frame_id);
	size_t start = l->nffuncs;
	int err = start >= UINT32_MAX ? -ENOMEM : push_ffunc(l, 0);
	uint32_t n = 0;
	const struct sp_resolved_frame *chain = NULL;
	size_t k = 0;
	if (!err && fr && fr->mode != SP_FRAME_TRUNCATED)
		err = sp_symbolizer_resolve_all(l->sym, frame_id, &chain, &k);
	for (size_t i = 0; !err && i < k; i++) {
		if ((chain[i].flags & SP_RFRAME_HIDDEN_DEFAULT) && !l->opts.show_runtime)
			continue;
		/* identical code is one function: its module goes by the name report gives it */
		const char *module;
		err = sp_module_name_of(&l->module_names, s, frame_id, chain[i].module, &module);
		uint32_t f = err ? NO_ENTRY : intern_func(l, chain[i].name, module,
							  chain[i].flags & SP_RFRAME_INLINE);
		err = f == NO_ENTRY ? -ENOMEM : push_ffunc(l, f);
		n++;
	}
	if (!err)
		err = sp_map_put(&l->ffunc_index, frame_id, (uint32_t)start);
	if (err) {
		l->nffuncs = start;
		return err;
	}
	l->ffuncs[start] = n;
	*off = (uint32_t)start;
	return 0;
}

/*
 * The functions of stack_id, leaf first: every function of every frame
 * (inlined ones first), markers and the runtime's hidden frames left out.
 * Named once; *fpath points into l->fpaths: [n, func ids...].
 */
static int stack_funcs(struct sp_live *l, uint32_t stack_id, const uint32_t **fpath)
{
	uint32_t off;
	if (sp_map_get(&l->fstack_index, stack_id, &off)) {
		*fpath = l->fpaths + off;
		return 0;
	}
	/* A cache too: past its bound (a spool of 100,000 deep stacks), it starts again. */
	if (l->nfpaths > LIVE_PATHS_MAX) {
		sp_map_release(&l->fstack_index);
		sp_map_init(&l->fstack_index);
		l->nfpaths = 0;
	}
	const struct sp_spool *s = sp_tail_spool(l->tail);
	size_t start = l->nfpaths;
	int err = push_fpath(l, 0);
	uint32_t n = 0;
	for (uint32_t id = stack_id; !err && id; id = sp_spool_stack_parent(s, id)) {
		uint32_t fo;
		err = frame_funcs(l, sp_spool_stack_frame(s, id), &fo);
		for (uint32_t i = 0; !err && i < l->ffuncs[fo]; i++, n++)
			err = push_fpath(l, l->ffuncs[fo + 1 + i]);
	}
	if (!err && l->nfpaths - start > UINT32_MAX)
		err = -ENOMEM;
	if (err) {
		l->nfpaths = start;
		return err;
	}
	l->fpaths[start] = n;
	err = sp_map_put(&l->fstack_index, stack_id, (uint32_t)start);
	if (err)
		return err;
	*fpath = l->fpaths + start;
	return 0;
}

/*
 * The entries of stack_id in process pid, leaf first (stack_funcs, each
 * function as pid's entry).  Mapped once; *path points into l->paths:
 * [n, ids...].
 */
static int stack_path(struct sp_live *l, int32_t pid, uint32_t stack_id, const uint32_t **path)
{
	uint64_t key = (uint64_t)(uint32_t)pid << 32 | stack_id;
	uint32_t off;
	if (sp_map_get(&l->stack_index, key, &off)) {
		*path = l->paths + off;
		return 0;
	}
	const uint32_t *fpath;
	int err = stack_funcs(l, stack_id, &fpath);
	if (err)
		return err;
	/* A path per (process, stack) is a cache: past its bound, it starts again. */
	if (l->npaths > LIVE_PATHS_MAX) {
		sp_map_release(&l->stack_index);
		sp_map_init(&l->stack_index);
		l->npaths = 0;
	}
	size_t start = l->npaths;
	err = push_path(l, fpath[0]);
	for (uint32_t i = 0; !err && i < fpath[0]; i++) {
		uint32_t e = intern_entry(l, fpath[1 + i], pid);
		err = e == NO_ENTRY ? -ENOMEM : push_path(l, e);
	}
	if (!err && l->npaths - start > UINT32_MAX)
		err = -ENOMEM;
	if (err) {
		l->npaths = start;
		return err;
	}
	err = sp_map_put(&l->stack_index, key, (uint32_t)start);
	if (err)
		return err;
	*path = l->paths + start;
	return 0;
}

static void bucket_reset(struct bucket *b, uint64_t second)
{
	sp_map_release(&b->index);
	sp_map_init(&b->index);
	b->ndeltas = 0;
	b->samples = 0;
	b->preempted = 0;
	b->second = second;
}

/* The window moves to end at second: buckets older than it leave, taking back their counts. */
static void advance(struct sp_live *l, uint64_t second)
{
	if (second <= l->newest_second)
		return;
	uint64_t from = second - l->newest_second > l->nbuckets ? second - l->nbuckets + 1
								 : l->newest_second + 1;
	for (uint64_t sec = from; sec <= second; sec++) {
		struct bucket *b = &l->buckets[sec % l->nbuckets];
		for (size_t i = 0; i < b->ndeltas; i++)
			l->nodes[b->deltas[i].node].win -= b->deltas[i].w;
		l->win_samples -= b->samples;
		l->win_preempted -= b->preempted;
		l->fold_stale |= b->ndeltas > 0;
		bucket_reset(b, sec);
	}
	l->newest_second = second;
}

static int add_delta(struct bucket *b, uint32_t node, uint64_t w)
{
	uint32_t i;
	if (!sp_map_get(&b->index, node, &i)) {
		if (sp_array_reserve((void **)&b->deltas, &b->cap, b->ndeltas + 1, sizeof(*b->deltas)) ||
		    sp_map_put(&b->index, node, (uint32_t)b->ndeltas))
			return -ENOMEM;
		i = (uint32_t)b->ndeltas++;
		b->deltas[i].node = node;
		b->deltas[i].w = 0;
	}
	b->deltas[i].w += w;
	return 0;
}

/* The node of (pid, stack_id), made when new; NO_ENTRY when out of memory. */
static uint32_t intern_node(struct sp_live *l, int32_t pid, uint32_t stack_id)
{
	uint64_t key = (uint64_t)(uint32_t)pid << 32 | stack_id;
	uint32_t id;
	if (sp_map_get(&l->node_index, key, &id))
		return id;
	if (l->nnodes >= NO_ENTRY ||
	    sp_array_reserve((void **)&l->nodes, &l->nodes_cap, l->nnodes + 1, sizeof(*l->nodes)) ||
	    sp_map_put(&l->node_index, key, (uint32_t)l->nnodes))
		return NO_ENTRY;
	l->nodes[l->nnodes] = (struct live_node){.pid = pid, .stack = stack_id};
	return (uint32_t)l->nnodes++;
}

/* The window's bucket of second sec, or NULL: older than the window, it counts since the start only. */
static struct bucket *bucket_of(struct sp_live *l, uint64_t sec)
{
	struct bucket *b = sec + l->nbuckets > l->newest_second ? &l->buckets[sec % l->nbuckets] : NULL;
	return b && b->second == sec ? b : NULL;
}

/* A sample (or part of an interval) weighing w at its timestamp's second. */
static int count_sample(struct sp_live *l, const struct sp_sample *smp, uint64_t w)
{
	const struct sp_spool *s = sp_tail_spool(l->tail);
	const struct sp_thread *t = sp_spool_thread(s, smp->thread);
	if (!t || !w)
		return 0;
	uint64_t sec = smp->timestamp_ns / 1000000000ull;
	advance(l, sec);
	struct bucket *b = bucket_of(l, sec);
	l->all_samples += w;
	l->counted++;
	if (b) {
		b->samples += w;
		l->win_samples += w;
	}
	uint32_t n = intern_node(l, t->pid, smp->stack_id);
	if (n == NO_ENTRY)
		return -ENOMEM;
	l->fold_stale = true;
	l->nodes[n].all += w;
	if (b) {
		l->nodes[n].win += w;
		return add_delta(b, n, w);
	}
	return 0;
}

/*
 * What a sample adds: a counted event's sample weighs its period
 * (docs/DESIGN.md, decision 12); with a time metric a clock's sample is its
 * period of CPU time in µs (wall), or nothing (off-CPU).
 */
static uint64_t sample_amount(struct sp_live *l, const struct sp_sample *smp)
{
	if (!l->have_unit) {
		sp_sample_unit_of(sp_tail_spool(l->tail), &l->unit);
		l->have_unit = true;
	}
	if (l->opts.metric == SP_METRIC_OFF_CPU)
		return 0;
	if (l->opts.metric == SP_METRIC_WALL) /* a counted event's samples are no time */
		return l->unit.time ? (l->unit.period + 500) / 1000 : 0;
	return sp_sample_weight(&l->unit, smp);
}

/*
 * A time metric: an off-CPU interval adds its µs under the stack it left
 * the CPU with, whole since the start, and in the window by the part each
 * of its last seconds holds (docs/DESIGN.md, decision 12).  The cause is
 * counted apart (sp_live_preempted), not as a frame: a [blocked] leaf would
 * take every self share from the functions that wait.
 */
static int count_interval(struct sp_live *l, const struct sp_offcpu *o)
{
	const uint64_t ns = 1000000000ull;
	uint64_t us = o->duration_ns / 1000;
	if (!us || !sp_spool_thread(sp_tail_spool(l->tail), o->thread))
		return 0;
	uint64_t end = sp_u64_add_sat(o->start_ns, o->duration_ns), first = o->start_ns / ns;
	struct sp_sample part = {.thread = o->thread, .stack_id = o->stack_id};
	/* the window moves to the interval's end first: its older parts are placed against it */
	advance(l, (end - 1) / ns);
	for (uint64_t sec = (end - 1) / ns, k = 0; us; sec--, k++) {
		uint64_t from = sec * ns, in = us;
		/* the oldest part, or all that lies before the window's seconds, at once */
		if (sec > first && k < l->nbuckets) {
			in = (end - from) / 1000 < us ? (end - from) / 1000 : us;
			end = from;
		}
		part.timestamp_ns = from;
		int err = count_sample(l, &part, in);
		if (err)
			return err;
		struct bucket *b = bucket_of(l, sec);
		if (o->flags & SP_OFFCPU_PREEMPTED) {
			l->all_preempted += in;
			if (b) {
				b->preempted += in;
				l->win_preempted += in;
			}
		}
		us -= in;
	}
	return 0;
}

int sp_live_new(struct sp_tail *t, struct sp_symbolizer *sym, const struct sp_live_opts *opts,
		struct sp_live **out)
{
	if (!t || !sym || !out)
		return -SP_E_BAD_ARG;
	struct sp_live *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->tail = t;
	l->sym = sym;
	if (opts)
		l->opts = *opts;
	if (l->opts.metric > SP_METRIC_WALL) {
		free(l);
		return -SP_E_BAD_ARG;
	}
	if (!l->opts.window_s)
		l->opts.window_s = SP_LIVE_WINDOW_DEFAULT;
	l->nbuckets = (size_t)l->opts.window_s;
	l->buckets = calloc(l->nbuckets, sizeof(*l->buckets));
	if (!l->buckets) {
		free(l);
		return -ENOMEM;
	}
	for (size_t i = 0; i < l->nbuckets; i++)
		sp_map_init(&l->buckets[i].index);
	sp_map_init(&l->func_index);
	sp_module_names_init(&l->module_names);
	sp_map_init(&l->entry_index);
	sp_map_init(&l->stack_index);
	sp_map_init(&l->fstack_index);
	sp_map_init(&l->node_index);
	sp_map_init(&l->ffunc_index);
	*out = l;
	return 0;
}

/* Forget every mapped stack (names may have changed): they are mapped again when next sampled. */
static void drop_stacks(struct sp_live *l)
{
	sp_map_release(&l->stack_index);
	sp_map_init(&l->stack_index);
	l->npaths = 0;
	sp_map_release(&l->fstack_index);
	sp_map_init(&l->fstack_index);
	l->nfpaths = 0;
	sp_map_release(&l->ffunc_index);
	sp_map_init(&l->ffunc_index);
	l->nffuncs = 0;
	l->fold_stale = true;
}

static uint64_t clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A time metric: the intervals read and not counted yet, within the budget (false: it ran out). */
static bool count_intervals(struct sp_live *l, const struct sp_spool *s, uint64_t until, int *err)
{
	if (l->opts.metric == SP_METRIC_CPU || !s)
		return true;
	for (size_t i = l->next_offcpu; !*err && i < sp_spool_offcpu_count(s); i++) {
		if (until && (i & 63) == 0 && clock_ns() > until)
			return false;
		uint64_t counted = l->counted;
		*err = count_interval(l, sp_spool_offcpu(s, i));
		l->counted = counted + 1; /* one interval, however many seconds it spans */
		l->next_offcpu = i + 1;
	}
	return true;
}

int sp_live_update(struct sp_live *l, uint64_t now_ns, size_t *new_samples)
{
	size_t before = l->counted;
	int err = 0;
	bool more = true;
	uint64_t until = l->opts.budget_ms ? clock_ns() + (uint64_t)l->opts.budget_ms * 1000000 : 0;
	l->behind = false;
	/* samples read by an earlier poll and not counted yet come first */
	const struct sp_spool *s0 = sp_tail_spool(l->tail);
	for (size_t i = l->next_sample; !err && s0 && i < sp_spool_sample_count(s0); i++) {
		if (until && (i & 63) == 0 && clock_ns() > until) {
			l->behind = true;
			if (new_samples)
				*new_samples = (size_t)(l->counted - before);
			return 0;
		}
		const struct sp_sample *smp = sp_spool_sample(s0, i);
		err = count_sample(l, smp, sample_amount(l, smp));
		l->next_sample = i + 1;
	}
	if (!count_intervals(l, s0, until, &err)) {
		l->behind = true;
		if (new_samples)
			*new_samples = (size_t)(l->counted - before);
		return 0;
	}
	while (!err && more) {
		struct sp_tail_batch b;
		err = sp_tail_poll(l->tail, &b);
		if (err == -SP_E_SPOOL_TRUNCATED) { /* not even the header yet */
			err = 0;
			break;
		}
		struct sp_invalidation inv = {0};
		if (!err)
			err = sp_symbolizer_update(l->sym, &b, &inv);
		if (!err && (inv.npids || inv.nframes))
			drop_stacks(l);
		sp_invalidation_release(&inv);
		const struct sp_spool *s = sp_tail_spool(l->tail);
		l->finished = b.finished;
		more = b.has_more;
		for (size_t i = l->next_sample; !err && s && i < sp_spool_sample_count(s); i++) {
			if (until && (i & 63) == 0 && clock_ns() > until) {
				l->behind = true;
				more = false;
				break;
			}
			const struct sp_sample *smp = sp_spool_sample(s, i);
			err = count_sample(l, smp, sample_amount(l, smp));
			l->next_sample = i + 1;
		}
		if (!l->behind && !count_intervals(l, s, until, &err)) {
			l->behind = true;
			more = false;
		}
	}
	/* Time goes on without samples too; a clock far from the samples' (another boot) is not theirs. */
	uint64_t now_s = now_ns / 1000000000ull;
	if (!err && !l->behind && l->all_samples && now_s >= l->newest_second &&
	    now_s - l->newest_second < 3600)
		advance(l, now_s);
	if (new_samples)
		*new_samples = (size_t)(l->counted - before);
	return err;
}

bool sp_live_finished(const struct sp_live *l)
{
	return l->finished && !l->behind;
}

bool sp_live_behind(const struct sp_live *l)
{
	return l->behind;
}

struct sort_ctx {
	const struct sp_live_row *rows;
	enum sp_live_sort sort;
};

static int cmp_rows(const void *a, const void *b, void *arg)
{
	const struct sort_ctx *c = arg;
	const struct sp_live_row *x = a, *y = b;
	uint64_t kx = c->sort == SP_LIVE_SORT_TOTAL ? x->total_win : x->self_win;
	uint64_t ky = c->sort == SP_LIVE_SORT_TOTAL ? y->total_win : y->self_win;
	if (kx != ky)
		return kx < ky ? 1 : -1;
	kx = c->sort == SP_LIVE_SORT_TOTAL ? x->total_all : x->self_all;
	ky = c->sort == SP_LIVE_SORT_TOTAL ? y->total_all : y->self_all;
	if (kx != ky)
		return kx < ky ? 1 : -1;
	int r = strcmp(x->name, y->name);
	return r ? r : (x->pid > y->pid) - (x->pid < y->pid);
}

/*
 * The name the spool gives each process: its leader's thread name, else
 * the first of its threads' that has one; by pid in *names (thread index,
 * or absent).  One pass over the threads (a scan per row was threads times
 * rows: 22,000 processes, 1.5 s).
 */
static int process_names(const struct sp_spool *s, struct sp_map *names)
{
	for (size_t i = 0, n = sp_spool_thread_count(s); i < n; i++) {
		const struct sp_thread *t = sp_spool_thread(s, (uint32_t)i);
		uint64_t key = (uint64_t)(uint32_t)t->pid;
		uint32_t had;
		bool have = sp_map_get(names, key, &had);
		const struct sp_thread *h = have ? sp_spool_thread(s, had) : NULL;
		bool better = !have || (t->name[0] && (!h->name[0] ||
						       (t->tid == t->pid && h->tid != h->pid)));
		if (better && sp_map_put(names, key, (uint32_t)i))
			return -ENOMEM;
	}
	return 0;
}

/* Scratch of a fold, by stack id (dense: a spool's ids are 1..count). */
struct fold_scratch {
	uint64_t *own_all, *own_win; /* the group's samples on the stack itself */
	uint64_t *sub_all, *sub_win; /* ... on the stack and every stack under it */
	uint32_t *seen;              /* the group that last visited it */
	uint32_t *child, *sibling;   /* the visited tree: first child, next sibling (0: none) */
	uint32_t *leaf;              /* the function samples here count as self, or NO_ENTRY */
	uint32_t *foff;              /* 1 + its frame's offset in l->ffuncs, 0: not named yet */
	uint32_t *ids, *walk;        /* the group's stacks; the visit's (high bit: leaving) */
	/* by function: the group's sums, and how often it is on the walked path */
	uint64_t *f_self_all, *f_self_win, *f_total_all, *f_total_win;
	uint32_t *active;
	uint32_t *touched;           /* functions given something by this group */
	size_t ntouched, fcap;
};

/* Room in x's arrays by function for nfuncs functions, the new ones zeroed. */
static int grow_funcs(struct fold_scratch *x, size_t nfuncs)
{
	if (nfuncs <= x->fcap)
		return 0;
	size_t cap = nfuncs + nfuncs / 2 + 64;
	uint64_t **wide[] = {&x->f_self_all, &x->f_self_win, &x->f_total_all, &x->f_total_win};
	uint32_t **narrow[] = {&x->active, &x->touched};
	for (size_t i = 0; i < 4; i++) {
		uint64_t *p = realloc(*wide[i], cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		memset(p + x->fcap, 0, (cap - x->fcap) * sizeof(*p));
		*wide[i] = p;
	}
	for (size_t i = 0; i < 2; i++) {
		uint32_t *p = realloc(*narrow[i], cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		memset(p + x->fcap, 0, (cap - x->fcap) * sizeof(*p));
		*narrow[i] = p;
	}
	x->fcap = cap;
	return 0;
}

static void fold_scratch_free(struct fold_scratch *x)
{
	void *all[] = {x->own_all, x->own_win, x->sub_all, x->sub_win, x->seen, x->child,
		       x->sibling, x->leaf, x->foff, x->ids, x->walk, x->f_self_all,
		       x->f_self_win, x->f_total_all, x->f_total_win, x->active, x->touched};
	for (size_t i = 0; i < SP_ARRAY_SIZE(all); i++)
		free(all[i]);
}

static int cmp_node_pid(const void *a, const void *b, void *arg)
{
	const struct live_node *n = arg;
	const struct live_node *x = &n[*(const uint32_t *)a], *y = &n[*(const uint32_t *)b];
	return (x->pid > y->pid) - (x->pid < y->pid);
}

static void touch(struct fold_scratch *x, uint32_t f)
{
	if (!x->f_self_all[f] && !x->f_self_win[f] && !x->f_total_all[f] && !x->f_total_win[f])
		x->touched[x->ntouched++] = f;
}

/* The functions of stack id's frame: [n, func ids innermost first], named once per fold. */
static const uint32_t *node_funcs(struct sp_live *l, struct fold_scratch *x, uint32_t id)
{
	return l->ffuncs + x->foff[id] - 1;
}

/*
 * One group's nodes (nodes[idx[0..n)]: one process's, or every process's
 * for views not by process) folded into the entries of pid.  The sampled
 * stacks and their ancestors are gathered once (each walk up stops at a
 * stack met before), then the tree is visited from its roots, depth first:
 * a function takes as total the weight under the stack where it first
 * appears on the path (added when the visit leaves that stack, once its
 * subtree is summed: once per stack, however deep the recursion), and the
 * samples on a stack count as self for its leafmost visible function.
 */
static int fold_group(struct sp_live *l, struct fold_scratch *x, const uint32_t *idx, size_t n,
		      uint32_t group, int32_t pid)
{
	const struct sp_spool *s = sp_tail_spool(l->tail);
	size_t nids = 0, nstacks = sp_spool_stack_count(s), nroots = 0;
	int err = 0;
	for (size_t i = 0; i < n && !err; i++) {
		const struct live_node *nd = &l->nodes[idx[i]];
		for (uint32_t id = nd->stack; id && id <= nstacks && x->seen[id] != group && !err;
		     id = sp_spool_stack_parent(s, id)) {
			x->seen[id] = group;
			x->own_all[id] = x->own_win[id] = x->sub_all[id] = x->sub_win[id] = 0;
			x->child[id] = 0;
			x->ids[nids++] = id;
			uint32_t off;
			if (!x->foff[id] && !(err = frame_funcs(l, sp_spool_stack_frame(s, id), &off)))
				x->foff[id] = off + 1;
		}
		if (nd->stack && nd->stack <= nstacks) {
			x->own_all[nd->stack] += nd->all;
			x->own_win[nd->stack] += nd->win;
		}
	}
	/* every frame is named now: the arrays by function are sized once */
	if (!err)
		err = grow_funcs(x, l->nfuncs);
	if (err)
		return err;
	for (size_t i = 0; i < nids; i++) {
		uint32_t id = x->ids[i], p = sp_spool_stack_parent(s, id);
		if (p && p < id && x->seen[p] == group) {
			x->sibling[id] = x->child[p];
			x->child[p] = id;
		} else {
			x->walk[nroots++] = id; /* a root: where the visit starts */
		}
	}
	size_t depth = nroots;
	while (depth) {
		uint32_t id = x->walk[--depth];
		bool leaving = id >> 31;
		id &= ~(1u << 31);
		const uint32_t *fn = node_funcs(l, x, id);
		uint32_t p = sp_spool_stack_parent(s, id);
		bool has_parent = p && p < id && x->seen[p] == group;
		if (leaving) {
			for (uint32_t k = 0; k < fn[0]; k++) {
				uint32_t f = fn[1 + k];
				if (--x->active[f])
					continue;
				touch(x, f);
				x->f_total_all[f] += x->sub_all[id];
				x->f_total_win[f] += x->sub_win[id];
			}
			if (has_parent) {
				x->sub_all[p] += x->sub_all[id];
				x->sub_win[p] += x->sub_win[id];
			}
			continue;
		}
		x->sub_all[id] += x->own_all[id];
		x->sub_win[id] += x->own_win[id];
		for (uint32_t k = 0; k < fn[0]; k++)
			x->active[fn[1 + k]]++;
		uint32_t lf = fn[0] ? fn[1] : has_parent ? x->leaf[p] : NO_ENTRY;
		x->leaf[id] = lf;
		if (lf != NO_ENTRY && (x->own_all[id] || x->own_win[id])) {
			touch(x, lf);
			x->f_self_all[lf] += x->own_all[id];
			x->f_self_win[lf] += x->own_win[id];
		}
		x->walk[depth++] = id | 1u << 31;
		for (uint32_t c = x->child[id]; c; c = x->sibling[c])
			x->walk[depth++] = c;
	}
	for (size_t i = 0; i < x->ntouched; i++) {
		uint32_t f = x->touched[i];
		uint32_t e = err ? NO_ENTRY : intern_entry(l, f, pid);
		if (e == NO_ENTRY) {
			err = -ENOMEM;
		} else {
			l->entries[e].self_all += x->f_self_all[f];
			l->entries[e].self_win += x->f_self_win[f];
			l->entries[e].total_all += x->f_total_all[f];
			l->entries[e].total_win += x->f_total_win[f];
		}
		x->f_self_all[f] = x->f_self_win[f] = x->f_total_all[f] = x->f_total_win[f] = 0;
	}
	x->ntouched = 0;
	return err;
}

/* Not a process: the entries of a fold of every process together. */
#define ALL_PROCESSES INT32_MIN

/*
 * Every entry's counts, made again from the nodes' when they changed (the
 * work follows the tree, see above): by process, or (views not by process)
 * every process's nodes folded as one, whose sums per function are the same.
 */
static int fold(struct sp_live *l, bool by_process)
{
	if (!l->fold_stale && l->folded_by_process == by_process)
		return 0;
	for (size_t i = 0; i < l->nentries; i++) {
		struct live_entry *e = &l->entries[i];
		e->self_all = e->total_all = e->self_win = e->total_win = 0;
	}
	const struct sp_spool *s = sp_tail_spool(l->tail);
	if (!l->nnodes || !s)
		return 0;
	size_t ns = sp_spool_stack_count(s) + 1;
	struct fold_scratch x = {
		.own_all = calloc(ns, 8), .own_win = calloc(ns, 8),
		.sub_all = calloc(ns, 8), .sub_win = calloc(ns, 8),
		.seen = calloc(ns, 4), .child = calloc(ns, 4), .sibling = calloc(ns, 4),
		.leaf = calloc(ns, 4), .foff = calloc(ns, 4), .ids = calloc(ns, 4),
		.walk = calloc(2 * ns, 4),
	};
	uint32_t *idx = calloc(l->nnodes, sizeof(*idx));
	int err = 0;
	if (!x.own_all || !x.own_win || !x.sub_all || !x.sub_win || !x.seen || !x.child ||
	    !x.sibling || !x.leaf || !x.foff || !x.ids || !x.walk || !idx)
		err = -ENOMEM;
	for (size_t i = 0; !err && i < l->nnodes; i++)
		idx[i] = (uint32_t)i;
	if (!err && by_process)
		qsort_r(idx, l->nnodes, sizeof(*idx), cmp_node_pid, l->nodes);
	uint32_t group = 0;
	for (size_t i = 0, j; !err && i < l->nnodes; i = j) {
		int32_t pid = by_process ? l->nodes[idx[i]].pid : ALL_PROCESSES;
		for (j = i + 1; j < l->nnodes && (!by_process || l->nodes[idx[j]].pid == pid); j++)
			;
		err = fold_group(l, &x, idx + i, j - i, ++group, pid);
	}
	free(idx);
	fold_scratch_free(&x);
	l->fold_stale = err != 0;
	l->folded_by_process = by_process;
	return err;
}

size_t sp_live_rows(struct sp_live *l, const struct sp_live_view *v, struct sp_live_row **out)
{
	*out = NULL;
	/* one refresh, one pass of the symbolizer's budgets */
	sp_symbolizer_renew_budgets(l->sym);
	if (fold(l, v->by_process))
		return 0;
	size_t n = v->by_process ? l->nentries : l->nfuncs;
	struct sp_live_row *rows = n ? calloc(n, sizeof(*rows)) : NULL;
	if (!rows)
		return 0;
	for (size_t i = 0; i < l->nentries; i++) {
		const struct live_entry *e = &l->entries[i];
		struct sp_live_row *r = &rows[v->by_process ? i : e->func];
		r->name = l->funcs[e->func].name;
		r->module = l->funcs[e->func].module;
		r->is_inline = l->funcs[e->func].is_inline;
		r->pid = v->by_process ? e->pid : -1;
		r->self_all += e->self_all;
		r->total_all += e->total_all;
		r->self_win += e->self_win;
		r->total_win += e->total_win;
	}
	size_t kept = 0;
	for (size_t i = 0; i < n; i++)
		if (rows[i].name && (rows[i].total_all || rows[i].self_all))
			rows[kept++] = rows[i];
	struct sort_ctx c = {rows, v->sort};
	if (kept)
		qsort_r(rows, kept, sizeof(*rows), cmp_rows, &c);
	const struct sp_spool *s = sp_tail_spool(l->tail);
	struct sp_map names;
	sp_map_init(&names);
	if (s && v->by_process && kept && process_names(s, &names)) {
		free(rows);
		kept = 0, rows = NULL;
	}
	for (size_t i = 0; s && v->by_process && i < kept; i++) {
		uint32_t t;
		rows[i].process = sp_map_get(&names, (uint64_t)(uint32_t)rows[i].pid, &t)
					  ? sp_spool_thread(s, t)->name : "";
	}
	sp_map_release(&names);
	*out = rows;
	return kept;
}

const char *sp_live_window_label(const struct sp_live *l, char *buf, size_t size)
{
	snprintf(buf, size, "%" PRIu32 "-%" PRIu32 " s", l->opts.window_s - 1, l->opts.window_s);
	return buf;
}

void sp_live_counts(const struct sp_live *l, uint64_t *window, uint64_t *all)
{
	*window = l->win_samples;
	*all = l->all_samples;
}

void sp_live_preempted(const struct sp_live *l, uint64_t *window, uint64_t *all)
{
	*window = l->win_preempted;
	*all = l->all_preempted;
}

/* Whether entry e is the row's function (and process, when rows are by process). */
static bool is_row(const struct sp_live *l, uint32_t e, const struct sp_live_row *row)
{
	const struct live_entry *x = &l->entries[e];
	const struct live_func *f = &l->funcs[x->func];
	return (row->pid < 0 || x->pid == row->pid) && !strcmp(f->name, row->name) &&
	       !strcmp(f->module, row->module) && f->is_inline == row->is_inline;
}

static int bump(struct sp_live_row **rows, size_t *n, size_t *cap, const struct live_func *f,
		int32_t pid, uint64_t w)
{
	for (size_t i = 0; i < *n; i++)
		if ((*rows)[i].name == f->name && (*rows)[i].module == f->module &&
		    (*rows)[i].is_inline == f->is_inline && (*rows)[i].pid == pid) {
			(*rows)[i].total_win += w;
			return 0;
		}
	if (sp_array_reserve((void **)rows, cap, *n + 1, sizeof(**rows)))
		return -ENOMEM;
	(*rows)[(*n)++] = (struct sp_live_row){.name = f->name, .module = f->module, .pid = pid,
					       .is_inline = f->is_inline, .total_win = w};
	return 0;
}

int sp_live_neighbours(struct sp_live *l, const struct sp_live_row *row,
		       struct sp_live_row **callers, size_t *ncallers, struct sp_live_row **callees,
		       size_t *ncallees)
{
	const struct sp_spool *s = sp_tail_spool(l->tail);
	size_t cap_a = 0, cap_b = 0;
	*callers = *callees = NULL;
	*ncallers = *ncallees = 0;
	if (!s)
		return 0;
	uint64_t from = l->newest_second + 1 > l->nbuckets ? l->newest_second + 1 - l->nbuckets : 0;
	/* samples come in time order: the window's first one only moves on */
	while (l->win_first < l->next_sample &&
	       sp_spool_sample(s, l->win_first)->timestamp_ns / 1000000000ull < from)
		l->win_first++;
	int err = 0;
	bool time = l->opts.metric != SP_METRIC_CPU;
	/* a time metric's intervals too, by their µs in the window's seconds (they come as they end) */
	while (time && l->win_first_offcpu < l->next_offcpu &&
	       sp_u64_add_sat(sp_spool_offcpu(s, l->win_first_offcpu)->start_ns,
			      sp_spool_offcpu(s, l->win_first_offcpu)->duration_ns) / 1000000000ull < from)
		l->win_first_offcpu++;
	size_t nsamples = l->next_sample - l->win_first;
	size_t n = nsamples + (time ? l->next_offcpu - l->win_first_offcpu : 0);
	for (size_t i = 0; !err && i < n; i++) {
		const struct sp_sample *smp = i < nsamples ? sp_spool_sample(s, l->win_first + i) : NULL;
		const struct sp_offcpu *o = smp ? NULL : sp_spool_offcpu(s, l->win_first_offcpu + i - nsamples);
		uint32_t thread = smp ? smp->thread : o->thread, stack = smp ? smp->stack_id : o->stack_id;
		uint64_t w = !time ? 1 : smp ? sample_amount(l, smp) : 0;
		if (o) {
			uint64_t end = sp_u64_add_sat(o->start_ns, o->duration_ns), at = from * 1000000000ull;
			w = end > at ? (end - (o->start_ns > at ? o->start_ns : at)) / 1000 : 0;
		}
		const struct sp_thread *t = sp_spool_thread(s, thread);
		const uint32_t *path;
		if (!w || !t || (row->pid >= 0 && t->pid != row->pid) ||
		    (err = stack_path(l, t->pid, stack, &path)))
			continue;
		/* the innermost occurrence: its caller is rootward, its callee leafward */
		for (uint32_t k = 0; k < path[0]; k++) {
			if (!is_row(l, path[1 + k], row))
				continue;
			int32_t pid = row->pid;
			if (k + 1 < path[0])
				err = bump(callers, ncallers, &cap_a, &l->funcs[l->entries[path[2 + k]].func], pid,
					   w);
			if (!err && k > 0)
				err = bump(callees, ncallees, &cap_b, &l->funcs[l->entries[path[k]].func], pid,
					   w);
			break;
		}
	}
	struct sort_ctx c = {NULL, SP_LIVE_SORT_TOTAL};
	if (*ncallers)
		qsort_r(*callers, *ncallers, sizeof(**callers), cmp_rows, &c);
	if (*ncallees)
		qsort_r(*callees, *ncallees, sizeof(**callees), cmp_rows, &c);
	return err;
}

/* us as seconds in at most width characters (buf: 16 bytes), as many decimals as fit, up to 3. */
static const char *seconds(char *buf, int width, uint64_t us)
{
	double s = (double)us / 1e6;
	for (int prec = 3; prec >= 0; prec--)
		if (snprintf(buf, 16, "%.*f", prec, s) <= width)
			break;
	return buf;
}

int sp_live_write_table(struct sp_live *l, const struct sp_live_view *v, size_t max_rows,
			size_t width, FILE *out)
{
	struct sp_live_row *rows;
	size_t n = sp_live_rows(l, v, &rows);
	if (max_rows && n > max_rows)
		n = max_rows;
	if (!width)
		width = 100;
	/* 34 columns of shares, then name, module (and process) share the rest */
	size_t rest = width > 60 ? width - 34 : 26;
	size_t wmod = rest / 4 > 24 ? 24 : rest / 4, wproc = v->by_process ? rest / 4 : 0;
	if (wproc > 20)
		wproc = 20;
	size_t wname = rest - wmod - wproc - (v->by_process ? 2 : 1);
	char last[32], wlabel[16];
	snprintf(last, sizeof(last), "last %s", sp_live_window_label(l, wlabel, sizeof(wlabel)));
	fprintf(out, "  %-14s  %-14s\n", last, "since start");
	bool time = l->opts.metric != SP_METRIC_CPU;
	if (time) /* seconds of time (a thread waiting all along: 1 s per second) */
		fprintf(out, "  %6s %7s  %6s %7s  ", "Self s", "Total s", "Self s", "Total s");
	else
		fprintf(out, "  %6s %7s  %6s %7s  ", "Self%", "Total%", "Self%", "Total%");
	if (v->by_process) {
		sp_text_put_cell(out, "Process", wproc, true);
		fputc(' ', out);
	}
	sp_text_put_cell(out, "Function", wname, true);
	fputc(' ', out);
	sp_text_put_cell(out, "Module", wmod, false);
	fputc('\n', out);
	for (size_t i = 0; i < n; i++) {
		const struct sp_live_row *r = &rows[i];
		if (time) {
			char c[4][16];
			fprintf(out, "  %6s %7s  %6s %7s  ", seconds(c[0], 6, r->self_win),
				seconds(c[1], 7, r->total_win), seconds(c[2], 6, r->self_all),
				seconds(c[3], 7, r->total_all));
		} else {
			fprintf(out, "  %5.1f%% %6.1f%%  %5.1f%% %6.1f%%  ",
				sp_text_pct(r->self_win, l->win_samples),
				sp_text_pct(r->total_win, l->win_samples),
				sp_text_pct(r->self_all, l->all_samples),
				sp_text_pct(r->total_all, l->all_samples));
		}
		if (v->by_process) {
			char label[64];
			char *name = NULL;
			size_t len = 0;
			FILE *m = open_memstream(&name, &len);
			if (m) {
				sp_fputs_printable(r->process ? r->process : "", m);
				fclose(m);
			}
			/* the idle task is pid 0: its name says it all */
			if (r->pid == 0 && name && name[0])
				snprintf(label, sizeof(label), "%.40s", name);
			else
				snprintf(label, sizeof(label), "%.40s[%d]", name ? name : "", (int)r->pid);
			free(name);
			sp_text_put_cell(out, label, wproc, true);
			fputc(' ', out);
		}
		/* the name and its [inline] mark, cut as the report's table cuts them */
		struct sp_agg_func f = {.name = r->name, .module = r->module,
					.is_inline = r->is_inline};
		sp_text_put_func(out, &f, wname, true);
		fputc(' ', out);
		sp_text_put_cell(out, r->module, wmod, false);
		fputc('\n', out);
	}
	free(rows);
	return ferror(out) ? -EIO : 0;
}

void sp_live_free(struct sp_live *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->nbuckets; i++) {
		sp_map_release(&l->buckets[i].index);
		free(l->buckets[i].deltas);
	}
	free(l->buckets);
	free(l->funcs);
	free(l->entries);
	free(l->paths);
	free(l->fpaths);
	free(l->nodes);
	free(l->ffuncs);
	sp_map_release(&l->node_index);
	sp_map_release(&l->ffunc_index);
	sp_map_release(&l->fstack_index);
	sp_map_release(&l->func_index);
	sp_module_names_release(&l->module_names);
	sp_map_release(&l->entry_index);
	sp_map_release(&l->stack_index);
	free(l);
}
