/* SPDX-License-Identifier: MIT */
/* Aggregate a spool on interned ids: samples per stack id (filtered, scoped), each frame resolved once; stacks merged by names. */
#include "report/aggregate.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define FUNC_UNSET (UINT32_MAX - 1)

static uint64_t fnv_str(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ULL;
	return (h ^ 0xff) * 0x100000001b3ULL; /* terminator: "ab","c" differs from "a","bc" */
}

#define FNV_BASIS 0xcbf29ce484222325ULL

/* Interning probes past hash collisions: the map holds hashes, the strings decide. */
static int intern_name(struct sp_agg *a, const char *name, uint32_t *id)
{
	uint64_t h = sp_hash64(fnv_str(FNV_BASIS, name));
	uint32_t v;
	while (sp_map_get(&a->name_index, h, &v)) {
		if (!strcmp(a->names[v], name)) {
			*id = v;
			return 0;
		}
		h = sp_hash64(h + 1);
	}
	int err = sp_array_reserve((void **)&a->names, &a->names_cap, a->nnames + 1, sizeof(*a->names));
	if (!err)
		err = sp_map_put(&a->name_index, h, (uint32_t)a->nnames);
	if (err)
		return err;
	a->names[a->nnames] = name;
	*id = (uint32_t)a->nnames++;
	return 0;
}

static bool same_str(const char *x, const char *y)
{
	return x == y || (x && y && !strcmp(x, y));
}

/* A function's key: name, module, inline or not, and with lines its file and line. */
static int intern_func(struct sp_agg *a, const struct sp_resolved_frame *rf, uint32_t *id)
{
	const char *module = rf->module ? rf->module : "";
	bool is_inline = rf->flags & SP_RFRAME_INLINE;
	const char *file = a->lines && rf->line ? rf->file : NULL;
	uint32_t line = file ? rf->line : 0;
	uint64_t h = fnv_str(fnv_str(FNV_BASIS, rf->name), module);
	h = fnv_str(h ^ is_inline, file ? file : "");
	h = sp_hash64(h ^ line);
	uint32_t v;
	while (sp_map_get(&a->func_index, h, &v)) {
		const struct sp_agg_func *f = &a->funcs[v];
		if (!strcmp(f->name, rf->name) && !strcmp(f->module, module) &&
		    f->is_inline == is_inline && same_str(f->file, file) && f->line == line) {
			*id = v;
			return 0;
		}
		h = sp_hash64(h + 1);
	}
	uint32_t name_id;
	int err = intern_name(a, rf->name, &name_id);
	if (!err)
		err = sp_array_reserve((void **)&a->funcs, &a->funcs_cap, a->nfuncs + 1, sizeof(*a->funcs));
	if (!err)
		err = sp_map_put(&a->func_index, h, (uint32_t)a->nfuncs);
	if (err)
		return err;
	a->funcs[a->nfuncs] = (struct sp_agg_func){
		.name = rf->name,
		.module = module,
		.file = file,
		.line = line,
		.is_inline = is_inline,
		.name_id = name_id,
	};
	*id = (uint32_t)a->nfuncs++;
	return 0;
}

/* Resolve a frame into its functions (a->frame_*), on first use only. */
static int resolve_frame(struct sp_agg *a, uint32_t frame_id)
{
	if (frame_id >= a->nframes || a->frame_func[frame_id] != FUNC_UNSET)
		return 0;
	const struct sp_resolved_frame *rf;
	size_t n;
	int err = sp_symbolizer_resolve_all(a->sym, frame_id, &rf, &n);
	if (err)
		return err;
	if (rf[n - 1].kind == SP_KIND_TRUNCATED) {
		a->frame_func[frame_id] = SP_AGG_NO_FUNC;
		a->frame_nfuncs[frame_id] = 0;
		return 0;
	}
	/* Hidden by default: functions only once a stack without Python frames shows it. */
	if (!a->show_runtime && (rf[n - 1].flags & SP_RFRAME_HIDDEN_DEFAULT) &&
	    !a->frame_hidden[frame_id]) {
		a->frame_hidden[frame_id] = SP_AGG_HIDDEN;
		a->frame_func[frame_id] = SP_AGG_NO_FUNC;
		return 0;
	}
	if (rf[n - 1].kind == SP_KIND_PYTHON)
		a->frame_hidden[frame_id] = SP_AGG_STAND_IN;
	if (n > UINT32_MAX - a->nchain)
		return -ENOMEM;
	err = sp_array_reserve((void **)&a->chain, &a->chain_cap, a->nchain + n, sizeof(*a->chain));
	if (err)
		return err;
	uint32_t first = (uint32_t)a->nchain;
	for (size_t i = 0; i < n; i++) {
		uint32_t id;
		if ((err = intern_func(a, &rf[i], &id)))
			return err;
		a->chain[first + i] = id;
	}
	a->nchain += n;
	a->frame_first[frame_id] = first;
	a->frame_nfuncs[frame_id] = (uint32_t)n;
	a->frame_func[frame_id] = a->chain[first + n - 1];
	return 0;
}

size_t sp_agg_stack_frames(struct sp_agg *a, uint32_t stack_id, const uint32_t **frames)
{
	size_t n = 0;
	/* The reader validates parents; the bound still keeps a bad tree from looping. */
	for (uint32_t node = stack_id; node && n < a->nstacks;
	     node = sp_spool_stack_parent(a->spool, node)) {
		if (n == a->path_cap &&
		    sp_array_reserve((void **)&a->path, &a->path_cap, n + 1, sizeof(*a->path)))
			break;
		a->path[n++] = sp_spool_stack_frame(a->spool, node);
	}
	/*
	 * Frames hidden by default (the Python runtime's machinery) leave a
	 * stack that holds Python frames to stand in for them; a stack without
	 * (interpreter start-up) keeps them.
	 */
	bool hide = false;
	for (size_t i = 0; i < n && !hide; i++)
		hide = a->path[i] < a->nframes && a->frame_hidden[a->path[i]] == SP_AGG_STAND_IN;
	size_t k = 0;
	for (size_t i = 0; hide && i < n; i++)
		if (a->path[i] >= a->nframes || a->frame_hidden[a->path[i]] == SP_AGG_STAND_IN ||
		    !a->frame_hidden[a->path[i]])
			a->path[k++] = a->path[i];
	*frames = a->path;
	return hide ? k : n;
}

static bool frame_is_marker(const struct sp_spool *s, uint32_t frame_id)
{
	const struct sp_frame *f =
		frame_id < sp_spool_frame_count(s) ? sp_spool_frame(s, frame_id) : NULL;
	return f && f->mode == SP_FRAME_TRUNCATED;
}

/* Self and total of every function for one distinct stack seen count times. */
static int attribute_stack(struct sp_agg *a, uint32_t sid, uint64_t count)
{
	const uint32_t *fr;
	size_t n = sp_agg_stack_frames(a, sid, &fr);
	for (size_t i = 0; i < n; i++) {
		int err = resolve_frame(a, fr[i]);
		if (err)
			return err;
	}
	n = sp_agg_stack_frames(a, sid, &fr); /* again: now hidden frames are known */
	if (n && frame_is_marker(a->spool, fr[n - 1])) {
		a->stack_truncated[sid] = 1;
		a->truncated_samples += count;
	}
	for (size_t i = 0; i < n; i++) {
		if (a->frame_hidden[fr[i]] == SP_AGG_HIDDEN) { /* no stand-in here: it shows */
			a->frame_hidden[fr[i]] = SP_AGG_HIDDEN_SHOWN;
			a->frame_func[fr[i]] = FUNC_UNSET;
		}
		int err = resolve_frame(a, fr[i]);
		if (err)
			return err;
		const uint32_t *funcs;
		size_t k = sp_agg_frame_funcs(a, fr[i], &funcs);
		for (size_t j = 0; j < k; j++) {
			struct sp_agg_func *f = &a->funcs[funcs[j]];
			/* Self: the innermost function of the leaf frame, inlined or not. */
			if (i == 0 && j == 0)
				f->self += count;
			/* Recursion: a function counts once per stack in total. */
			if (f->stamp != sid + 1) {
				f->stamp = sid + 1;
				f->total += count;
			}
		}
	}
	return 0;
}

int sp_agg_build(struct sp_agg *a, const struct sp_spool *s, struct sp_symbolizer *sym,
		 const struct sp_report_opts *opts)
{
	return sp_agg_build_scoped(a, s, sym, opts, NULL);
}

static bool in_scope(const struct sp_agg_scope *scope, uint32_t thread, const struct sp_thread *t)
{
	if (!scope || scope->kind == SP_GROUP_NONE)
		return true;
	if (scope->kind == SP_GROUP_THREAD)
		return thread == scope->thread;
	return t && t->pid == scope->pid;
}

/*
 * The keep decision of every sample: its thread and time first (pass 1
 * counts only those), then, once per distinct stack, the stack filters,
 * which need the frames resolved.
 */
static int filter_samples(struct sp_agg *a, const struct sp_report_filter *f,
			  const struct sp_agg_scope *scope)
{
	const struct sp_spool *s = a->spool;
	size_t nsamples = sp_spool_sample_count(s), nthreads = sp_spool_thread_count(s);
	uint8_t *thread_ok = malloc(nthreads ? nthreads : 1);
	a->keep = calloc(nsamples / 64 + 1, sizeof(*a->keep));
	if (!thread_ok || !a->keep) {
		free(thread_ok);
		return -ENOMEM;
	}
	for (uint32_t t = 0; t < nthreads; t++) {
		const struct sp_thread *th = sp_spool_thread(s, t);
		thread_ok[t] = in_scope(scope, t, th) && (!f || sp_filter_thread(f, th));
	}
	uint64_t origin = sp_filter_origin_ns(s);
	for (size_t i = 0; i < nsamples; i++) {
		const struct sp_sample *smp = sp_spool_sample(s, i);
		if (smp->thread >= nthreads || !thread_ok[smp->thread] ||
		    (f && !sp_filter_time(f, smp->timestamp_ns, origin)))
			continue;
		a->keep[i / 64] |= 1ULL << (i % 64);
		a->stack_count[smp->stack_id < a->nstacks ? smp->stack_id : 0]++;
	}
	free(thread_ok);
	if (!f || (!f->module && !f->focus && !f->exclude))
		return 0;
	bool dropped = false;
	for (size_t sid = 0; sid < a->nstacks; sid++) {
		bool pass;
		if (!a->stack_count[sid])
			continue;
		const uint32_t *frames;
		size_t n = sp_agg_stack_frames(a, (uint32_t)sid, &frames);
		int err = sp_filter_stack(f, a->spool, a->sym, frames, n, &pass);
		if (err)
			return err;
		if (!pass) {
			a->stack_count[sid] = 0;
			dropped = true;
		}
	}
	for (size_t i = 0; dropped && i < nsamples; i++) {
		const struct sp_sample *smp = sp_spool_sample(s, i);
		if (!a->stack_count[smp->stack_id < a->nstacks ? smp->stack_id : 0])
			a->keep[i / 64] &= ~(1ULL << (i % 64));
	}
	return 0;
}

int sp_agg_build_scoped(struct sp_agg *a, const struct sp_spool *s, struct sp_symbolizer *sym,
			const struct sp_report_opts *opts, const struct sp_agg_scope *scope)
{
	memset(a, 0, sizeof(*a));
	a->spool = s;
	a->sym = sym;
	a->lines = opts && opts->lines;
	a->show_runtime = opts && opts->show_runtime;
	sp_map_init(&a->func_index);
	sp_map_init(&a->name_index);
	a->nstacks = sp_spool_stack_count(s);
	size_t nframes = a->nframes = sp_spool_frame_count(s);
	if (a->nstacks >= UINT32_MAX)
		return -SP_E_BAD_ARG;
	a->stack_count = calloc(a->nstacks ? a->nstacks : 1, sizeof(*a->stack_count));
	a->stack_truncated = calloc(a->nstacks ? a->nstacks : 1, 1);
	a->frame_func = malloc((nframes ? nframes : 1) * sizeof(*a->frame_func));
	a->frame_first = calloc(nframes ? nframes : 1, sizeof(*a->frame_first));
	a->frame_nfuncs = calloc(nframes ? nframes : 1, sizeof(*a->frame_nfuncs));
	a->frame_hidden = calloc(nframes ? nframes : 1, 1);
	if (!a->stack_count || !a->stack_truncated || !a->frame_func || !a->frame_first ||
	    !a->frame_nfuncs || !a->frame_hidden)
		return -ENOMEM;
	for (size_t i = 0; i < nframes; i++)
		a->frame_func[i] = FUNC_UNSET;

	/* Pass 1: per-sample work is one increment; nothing is resolved yet. */
	size_t nsamples = sp_spool_sample_count(s);
	const struct sp_report_filter *f = opts && sp_filter_active(&opts->filter) ? &opts->filter
										  : NULL;
	a->all_samples = nsamples;
	a->filter = f;
	if (f || (scope && scope->kind != SP_GROUP_NONE)) {
		int err = filter_samples(a, f, scope);
		if (err)
			return err;
	}
	for (size_t i = 0; i < nsamples; i++) {
		const struct sp_sample *smp = sp_spool_sample(s, i);
		uint32_t sid = smp->stack_id < a->nstacks ? smp->stack_id : 0;
		if (!sp_agg_kept(a, i))
			continue;
		if (!a->keep)
			a->stack_count[sid]++;
		if (!a->samples || smp->timestamp_ns < a->first_ns)
			a->first_ns = smp->timestamp_ns;
		if (!a->samples || smp->timestamp_ns > a->last_ns)
			a->last_ns = smp->timestamp_ns;
		a->samples++;
	}
	a->whole = a->samples;
	a->empty_samples = a->nstacks ? a->stack_count[0] : 0;

	/* Pass 2: once per distinct stack, each frame resolved the first time it is met. */
	for (size_t sid = 1; sid < a->nstacks; sid++) {
		if (!a->stack_count[sid])
			continue;
		int err = attribute_stack(a, (uint32_t)sid, a->stack_count[sid]);
		if (err)
			return err;
	}
	return 0;
}

void sp_agg_release(struct sp_agg *a)
{
	free(a->stack_count);
	free(a->stack_truncated);
	free(a->frame_func);
	free(a->frame_first);
	free(a->frame_nfuncs);
	free(a->frame_hidden);
	free(a->chain);
	free(a->funcs);
	free(a->names);
	free(a->path);
	free(a->keep);
	sp_map_release(&a->func_index);
	sp_map_release(&a->name_index);
	memset(a, 0, sizeof(*a));
}

void sp_seq_groups_init(struct sp_seq_groups *g)
{
	memset(g, 0, sizeof(*g));
	sp_map_init(&g->index);
}

void sp_seq_groups_release(struct sp_seq_groups *g)
{
	sp_map_release(&g->index);
	free(g->ids);
	free(g->groups);
	memset(g, 0, sizeof(*g));
}

int sp_seq_groups_add(struct sp_seq_groups *g, const uint32_t *ids, uint32_t n, uint64_t count)
{
	uint64_t h = FNV_BASIS ^ n;
	for (uint32_t i = 0; i < n; i++)
		h = sp_hash64(h ^ ids[i]) + i;
	uint32_t v;
	while (sp_map_get(&g->index, h, &v)) {
		struct sp_seq_group *grp = &g->groups[v];
		if (grp->len == n && !memcmp(g->ids + grp->off, ids, n * sizeof(*ids))) {
			grp->count += count;
			return 0;
		}
		h = sp_hash64(h + 1);
	}
	int err = sp_array_reserve((void **)&g->ids, &g->ids_cap, g->nids + n, sizeof(*g->ids));
	if (!err)
		err = sp_array_reserve((void **)&g->groups, &g->groups_cap, g->ngroups + 1, sizeof(*g->groups));
	if (!err)
		err = sp_map_put(&g->index, h, (uint32_t)g->ngroups);
	if (err)
		return err;
	if (n)
		memcpy(g->ids + g->nids, ids, n * sizeof(*ids));
	g->groups[g->ngroups++] = (struct sp_seq_group){.off = g->nids, .len = n, .count = count};
	g->nids += n;
	return 0;
}
