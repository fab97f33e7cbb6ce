/* SPDX-License-Identifier: MIT */
/*
 * A symbolizer following a spool as it is written (a tail, sp_tail_symbolizer):
 * each batch taken in, and what a caller's cache must drop.
 */
#include "symbols/symbolizer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A growing array of 32-bit values (pids or frame ids). */
struct vec32 {
	uint32_t *v;
	size_t n, cap;
};

static int vec_push(struct vec32 *a, uint32_t x)
{
	if (sp_array_reserve((void **)&a->v, &a->cap, a->n + 1, sizeof(*a->v)))
		return -ENOMEM;
	a->v[a->n++] = x;
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* Sort and drop repeats; cmp orders the values as they are meant (pids are signed). */
static void vec_unique(struct vec32 *a, int (*cmp)(const void *, const void *))
{
	if (!a->n)
		return;
	qsort(a->v, a->n, sizeof(*a->v), cmp);
	size_t k = 1;
	for (size_t i = 1; i < a->n; i++)
		if (a->v[i] != a->v[k - 1])
			a->v[k++] = a->v[i];
	a->n = k;
}

static int push_pid(struct vec32 *a, int32_t pid)
{
	return vec_push(a, (uint32_t)pid);
}

static bool overlaps(const struct sp_module *a, const struct sp_module *b)
{
	return a->start < b->end && b->start < a->end;
}

/*
 * Index modules [first, sym->nmodules) by process; the processes of those
 * mapped over an earlier module of theirs (a new image there) go to replaced
 * (NULL: not wanted), and those of new jitdump files to retry.  A process
 * holds tens to hundreds of modules: each new one is checked against its own
 * process's only.
 */
static int note_modules(struct sp_symbolizer *sym, size_t first, struct vec32 *replaced,
			struct vec32 *retry)
{
	int err = 0;
	for (size_t i = first; i < sym->nmodules && !err; i++) {
		const struct sp_module *m = sp_spool_module(sym->spool, (uint32_t)i);
		if (!m || (m->flags & SP_MODULE_KERNEL))
			continue;
		const struct pid_ids *l = sp_pid_ids_get(&sym->follow.modules, m->pid);
		bool over = false;
		for (size_t j = 0; replaced && l && j < l->n && !over; j++)
			over = overlaps(m, sp_spool_module(sym->spool, l->ids[j]));
		if (over)
			err = push_pid(replaced, m->pid);
		if (!err && retry && !(m->flags & SP_MODULE_ANON) && m->path &&
		    sp_jitdump_is_path(m->path))
			err = push_pid(retry, m->pid);
		if (!err)
			err = sp_pid_ids_add(&sym->follow.modules, m->pid, (uint32_t)i);
	}
	return err;
}

/*
 * The images the recorder handed over for modules [first, sym->nmodules)
 * (sp_symbolizer_use_file takes a copy: the tail keeps its own).  One that
 * cannot be used (a file opened already through another module, no fd left)
 * leaves its frames to the path, as sp_tail_open's would be.
 */
static void use_images(struct sp_symbolizer *sym, size_t first)
{
	for (size_t i = first; i < sym->nmodules; i++) {
		int fd = sp_tail_image_fd(sym->tail, (uint32_t)i);
		if (fd >= 0)
			(void)sp_symbolizer_use_file(sym, (uint32_t)i, fd);
	}
}

int sp_tail_symbolizer(struct sp_tail *t, const struct sp_symbolizer_opts *opts,
		       struct sp_symbolizer **out)
{
	const struct sp_spool *s = sp_tail_spool(t);
	if (!s || !out)
		return -SP_E_BAD_ARG;
	struct sp_symbolizer *sym;
	int err = sp_symbolizer_new(s, opts, &sym);
	if (err)
		return err;
	sym->tail = t;
	sym->perf_maps.following = true;
	sym->follow.nexecs = s->nexecs;
	sym->follow.nowners = s->nowners;
	sym->follow.npmlines = s->npmlines;
	sym->follow.nsymframes = s->nsymframes;
	sym->follow.counted = calloc(sym->frames_cap, sizeof(*sym->follow.counted));
	err = sym->follow.counted ? note_modules(sym, 0, NULL, NULL) : -ENOMEM;
	if (err) {
		sp_symbolizer_free(sym);
		return err;
	}
	use_images(sym, 0);
	*out = sym;
	return 0;
}

/*
 * Symbol records that came (stored names, at the recording's end): indexed
 * by frame as sp_symstore_index does, a later one for a frame replacing an
 * earlier; the frames resolved already go to again.
 */
static int take_stored(struct sp_symbolizer *sym, struct vec32 *again)
{
	const struct sp_spool *s = sym->spool;
	size_t first = sym->follow.nsymframes;
	sym->follow.nsymframes = s->nsymframes;
	/* Stored names are demangled: --no-demangle needs the files (sp_symbolizer_new). */
	if (first >= s->nsymframes || sym->opts.stored_symbols == SP_STORED_NONE ||
	    sym->opts.no_demangle)
		return 0;
	if (!sym->stored_names.by_frame) {
		if (!(sym->stored_names.by_frame = malloc(sym->frames_cap * sizeof(*sym->stored_names.by_frame))))
			return -ENOMEM;
		for (size_t i = 0; i < sym->frames_cap; i++)
			sym->stored_names.by_frame[i] = UINT32_MAX;
	}
	for (size_t i = first; i < s->nsymframes; i++) {
		uint32_t f = s->symframes[i].frame;
		if (f >= sym->nframes)
			continue;
		sym->stored_names.by_frame[f] = (uint32_t)i;
		if (sym->resolved[f] && vec_push(again, f))
			return -ENOMEM;
	}
	return 0;
}

/*
 * Processes whose perf map may now decide differently: new exec markers
 * (Python or not, the process's start: also an invalidation), new owners,
 * new stored perf map lines.
 */
static int note_records(struct sp_symbolizer *sym, struct vec32 *pids, struct vec32 *retry)
{
	const struct sp_spool *s = sym->spool;
	int err = 0;
	for (size_t i = sym->follow.nexecs; i < s->nexecs && !err; i++) {
		err = push_pid(pids, s->execs[i].pid);
		if (!err)
			err = push_pid(retry, s->execs[i].pid);
	}
	for (size_t i = sym->follow.nowners; i < s->nowners && !err; i++)
		err = push_pid(retry, s->owners[i].pid);
	for (size_t i = sym->follow.npmlines; i < s->npmlines && !err; i++)
		err = push_pid(retry, s->pmlines[i].pid);
	if (!err) {
		sym->follow.nexecs = s->nexecs;
		sym->follow.nowners = s->nowners;
		sym->follow.npmlines = s->npmlines;
	}
	return err;
}

/*
 * Processes whose perf map (or jitdump) file changed since it was read or
 * looked for: those with samples in [first, end), or, once the spool is
 * finished, every process looked for (its last look must see the last map).
 */
static int note_grown_maps(struct sp_symbolizer *sym, size_t first, size_t end, bool finished,
			   struct vec32 *retry)
{
	if (!sym->perf_maps.nprocs)
		return 0;
	if (finished) {
		for (size_t i = 0; i < sym->perf_maps.nprocs; i++)
			if (sp_sym_perf_map_changed(&sym->perf_maps, sym->perf_maps.procs[i].pid) &&
			    push_pid(retry, sym->perf_maps.procs[i].pid))
				return -ENOMEM;
		return 0;
	}
	struct sp_map seen;
	sp_map_init(&seen);
	int err = 0;
	for (size_t i = first; i < end && !err; i++) {
		const struct sp_sample *x = sp_spool_sample(sym->spool, i);
		const struct sp_thread *t = x ? sp_spool_thread(sym->spool, x->thread) : NULL;
		uint32_t v;
		if (!t || sp_map_get(&seen, (uint64_t)(uint32_t)t->pid, &v))
			continue;
		err = sp_map_put(&seen, (uint64_t)(uint32_t)t->pid, 1);
		if (!err && sp_sym_perf_map_changed(&sym->perf_maps, t->pid))
			err = push_pid(retry, t->pid);
	}
	sp_map_release(&seen);
	return err;
}

/* Forget the perf maps of retry's processes; the frames they named go to again. */
static int forget_maps(struct sp_symbolizer *sym, struct vec32 *retry, struct vec32 *again)
{
	vec_unique(retry, sp_cmp_pid);
	int err = 0;
	for (size_t i = 0; i < retry->n && !err; i++) {
		uint32_t *frames;
		size_t n;
		err = sp_sym_perf_map_forget(&sym->perf_maps, (int32_t)retry->v[i], &frames, &n);
		for (size_t j = 0; j < n && !err; j++)
			err = vec_push(again, frames[j]);
		free(frames);
	}
	return err;
}

/* Resolve again's frames anew; those now named differently go to changed. */
static int resolve_again(struct sp_symbolizer *sym, struct vec32 *again, struct vec32 *changed)
{
	vec_unique(again, cmp_u32);
	int err = 0;
	for (size_t i = 0; i < again->n && !err; i++) {
		bool differs;
		err = sp_sym_resolve_again(sym, again->v[i], &differs);
		if (!err && differs)
			err = vec_push(changed, again->v[i]);
	}
	return err;
}

int sp_symbolizer_update(struct sp_symbolizer *sym, const struct sp_tail_batch *b,
			 struct sp_invalidation *inv)
{
	if (inv)
		*inv = (struct sp_invalidation){0};
	if (!sym || !b || !sym->tail)
		return -SP_E_BAD_ARG;
	const struct sp_spool *s = sym->spool;
	/*
	 * Everything the spool holds now, whatever batches came since the
	 * last update: a skipped batch is taken in too.
	 */
	size_t first_module = sym->nmodules, first_sample = sym->nsamples;
	struct vec32 pids = {0}, retry = {0}, again = {0}, changed = {0};
	int err = sp_sym_take_modules(sym, sp_spool_module_count(s));
	if (!err) {
		use_images(sym, first_module);
		err = sp_sym_native_take_modules(&sym->native, first_module, sym->nmodules);
	}
	if (!err)
		err = note_modules(sym, first_module, &pids, &retry);
	if (!err)
		err = sp_sym_take_frames(sym, sp_spool_frame_count(s));
	if (!err) {
		sym->nstacks = sp_spool_stack_count(s);
		sym->nsamples = sp_spool_sample_count(s);
		err = sp_sym_frame_pids_add(sym, first_sample, sym->nsamples, &again.v, &again.n,
					    &again.cap);
	}
	if (!err)
		err = take_stored(sym, &again);
	if (!err)
		err = note_records(sym, &pids, &retry);
	if (!err)
		err = note_grown_maps(sym, first_sample, sym->nsamples, b->finished, &retry);
	if (!err)
		err = forget_maps(sym, &retry, &again);
	if (!err)
		err = resolve_again(sym, &again, &changed);
	free(retry.v);
	free(again.v);
	/*
	 * The symbolizer's own stack cache keeps frame ids, never names, and a
	 * stack id always holds the same frames: a frame resolved again is
	 * streamed with its new names, with nothing to drop.
	 */
	if (err || !inv) {
		free(pids.v);
		free(changed.v);
		return err;
	}
	vec_unique(&pids, sp_cmp_pid);
	vec_unique(&changed, cmp_u32);
	*inv = (struct sp_invalidation){
		.pids = (int32_t *)pids.v,
		.npids = pids.n,
		.frames = changed.v,
		.nframes = changed.n,
	};
	return 0;
}

void sp_invalidation_release(struct sp_invalidation *inv)
{
	if (!inv)
		return;
	free(inv->pids);
	free(inv->frames);
	*inv = (struct sp_invalidation){0};
}
