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

/*
 * The function of a frame that no source names (its name is its address):
 * one per module, "[unknown] in MODULE" ("[unknown]" outside every module),
 * not one per address, which would split a frameless region of a stripped
 * binary into a row per instruction.  Text views only: with --lines, and in
 * the formats scripts read (folded, flame graph, JSON), each address keeps
 * its own function, for those who look for it.
 */
static const char *unknown_name(struct sp_agg *a, const struct sp_resolved_frame *rf)
{
	if (!a->unknown_rows || rf->origin != SP_ORIGIN_ADDRESS_ONLY ||
	    rf->kind == SP_KIND_TRUNCATED || rf->kind == SP_KIND_PYTHON)
		return rf->name;
	if (!rf->module || !*rf->module || !strcmp(rf->module, "[unknown]"))
		return "[unknown]";
	return sp_arena_printf(&a->unknown_names, "[unknown] in %s", rf->module);
}

/* A function's key: name, module, inline or not, and with lines its file and line. */
static int intern_func(struct sp_agg *a, const struct sp_resolved_frame *frame, uint32_t *id)
{
	struct sp_resolved_frame named = *frame;
	const struct sp_resolved_frame *rf = &named;
	if (!(named.name = unknown_name(a, frame)))
		return -ENOMEM;
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
	/* Hidden by default: functions only once a stack shows it (sp_agg_python_view). */
	if (!a->show_runtime && (rf[n - 1].flags & SP_RFRAME_HIDDEN_DEFAULT) &&
	    !a->frame_hidden[frame_id]) {
		const char *name = rf[n - 1].name;
		a->frame_eval[frame_id] = name && (!strncmp(name, "_PyEval_EvalFrame", 17) ||
						   !strncmp(name, "PyEval_EvalFrame", 16));
		a->frame_hidden[frame_id] = SP_AGG_HIDDEN;
		a->frame_func[frame_id] = SP_AGG_NO_FUNC;
		return 0;
	}
	if (rf[n - 1].kind == SP_KIND_PYTHON) {
		a->frame_hidden[frame_id] = SP_AGG_STAND_IN;
		a->any_stand_in = true;
	}
	if (n > UINT32_MAX - a->nchain)
		return -ENOMEM;
	err = sp_array_reserve((void **)&a->chain, &a->chain_cap, a->nchain + n, sizeof(*a->chain));
	if (err)
		return err;
	uint32_t first = (uint32_t)a->nchain;
	for (size_t i = 0; i < n; i++) {
		uint32_t id;
		struct sp_resolved_frame named = rf[i];
		if ((err = sp_module_name_of(&a->module_names, a->spool, frame_id, rf[i].module,
					       &named.module)) ||
		    (err = intern_func(a, &named, &id)))
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
	size_t n = 0, depth = sp_spool_stack_depth(a->spool, stack_id);
	*frames = a->path;
	if (depth > a->path_cap &&
	    sp_array_reserve((void **)&a->path, &a->path_cap, depth, sizeof(*a->path)))
		return 0;
	/* The reader validates parents and depths; the bound still keeps a bad tree from looping. */
	for (uint32_t node = stack_id; node && n < depth;
	     node = sp_spool_stack_parent(a->spool, node))
		a->path[n++] = sp_spool_stack_frame(a->spool, node);
	*frames = a->path;
	if (!a->any_stand_in)
		return n;
	n = sp_agg_python_view(a, a->path, n);
	/* A runtime frame this stack shows: its functions now. */
	for (size_t i = 0; i < n; i++)
		if (a->path[i] < a->nframes && a->frame_hidden[a->path[i]] == SP_AGG_HIDDEN) {
			a->frame_hidden[a->path[i]] = SP_AGG_HIDDEN_SHOWN;
			a->frame_func[a->path[i]] = FUNC_UNSET;
			if (resolve_frame(a, a->path[i]))
				return 0;
		}
	return n;
}

size_t sp_agg_python_view(const struct sp_agg *a, uint32_t *path, size_t n)
{
	size_t inner = n; /* the innermost Python frame */
	for (size_t i = 0; i < n && inner == n; i++)
		if (path[i] < a->nframes && a->frame_hidden[path[i]] == SP_AGG_STAND_IN)
			inner = i;
	if (inner == n)
		return n;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t f = path[i];
		bool runtime = f < a->nframes && (a->frame_hidden[f] == SP_AGG_HIDDEN ||
						  a->frame_hidden[f] == SP_AGG_HIDDEN_SHOWN);
		/* path[n - 1] is the root; leafward of inner only the eval loop goes. */
		if (runtime && i + 1 < n && (i > inner || a->frame_eval[f]))
			continue;
		path[k++] = f;
	}
	return k;
}

static bool frame_is_marker(const struct sp_spool *s, uint32_t frame_id)
{
	const struct sp_frame *f =
		frame_id < sp_spool_frame_count(s) ? sp_spool_frame(s, frame_id) : NULL;
	return f && f->mode == SP_FRAME_TRUNCATED;
}

/* The child of parent for func, made on first use. */
static int node_child(struct sp_agg *a, uint32_t parent, uint32_t func, bool marker_at_root,
		      uint32_t *id)
{
	uint64_t key = (uint64_t)parent << 32 | func;
	if (sp_map_get(&a->node_index, key, id))
		return 0;
	if (a->nnodes >= UINT32_MAX - 1)
		return -ENOMEM;
	int err = sp_array_reserve((void **)&a->nodes, &a->nodes_cap, a->nnodes + 1,
				   sizeof(*a->nodes));
	if (!err)
		err = sp_map_put(&a->node_index, key, (uint32_t)a->nnodes);
	if (err)
		return err;
	const struct sp_agg_node *p = &a->nodes[parent];
	a->nodes[a->nnodes] = (struct sp_agg_node){
		.parent = parent,
		.func = func,
		.depth = p->depth + 1,
		.truncated = parent ? p->truncated : marker_at_root,
	};
	*id = (uint32_t)a->nnodes++;
	return 0;
}

/*
 * The node a frame leads to from base: its containing function, then the
 * functions inlined into it, innermost last; a marker is a node of its own;
 * with hiding, a frame hidden by default leads nowhere (base itself).
 */
static int frame_node(struct sp_agg *a, uint32_t base, uint32_t frame_id, bool hiding,
		      uint32_t *out)
{
	*out = base;
	if (frame_id >= a->nframes || frame_is_marker(a->spool, frame_id))
		return node_child(a, base, SP_AGG_MARKER, frame_id < a->nframes && !base, out);
	uint8_t h = a->frame_hidden[frame_id];
	if (hiding && (h == SP_AGG_HIDDEN || h == SP_AGG_HIDDEN_SHOWN))
		return 0;
	const uint32_t *funcs;
	size_t k = sp_agg_frame_funcs(a, frame_id, &funcs);
	if (!k)
		return node_child(a, base, SP_AGG_MARKER, false, out);
	for (size_t j = k; j-- > 0;) {
		int err = node_child(a, *out, funcs[j], false, out);
		if (err)
			return err;
	}
	return 0;
}

size_t sp_agg_node_path(const struct sp_agg *a, uint32_t node, uint32_t **funcs, size_t *cap)
{
	size_t n = node < a->nnodes ? a->nodes[node].depth : 0;
	if (!n || sp_array_reserve((void **)funcs, cap, n, sizeof(**funcs)))
		return 0;
	for (size_t i = 0; i < n; i++, node = a->nodes[node].parent)
		(*funcs)[i] = a->nodes[node].func;
	return n;
}

/* Whether one frame matches the stack filters: bit 0 module, 1 focus, 2 exclude. */
static int frame_filter_bits(const struct sp_report_filter *f, struct sp_agg *a,
			     uint32_t frame_id, uint8_t *bits)
{
	/* One filter at a time (sp_filter_stack combines them): exclude's bit is a match. */
	const struct sp_report_filter one[3] = {
		{.module = f->module}, {.focus = f->focus}, {.exclude = f->exclude}};
	bool set[3] = {f->module, f->focus, f->exclude};
	*bits = 0;
	for (int i = 0; i < 3; i++) {
		bool pass;
		int err = set[i] ? sp_filter_stack(&one[i], a->spool, a->sym, &frame_id, 1, &pass) : 0;
		if (err)
			return err;
		if (set[i] && pass != (i == 2))
			*bits |= (uint8_t)(1u << i);
	}
	return 0;
}

/*
 * The stack filters (module, focus, exclude: each asks whether any frame of
 * a stack matches), decided for every node once from its parent's answer and
 * its own frame's: time proportional to the nodes, not to the stacks' depths.
 */
static int filter_stacks(struct sp_agg *a, const struct sp_report_filter *f, bool *dropped)
{
	size_t ns = a->nstacks, nf = a->nframes;
	uint8_t *need = calloc(ns ? ns : 1, 1), *bits = calloc(ns ? ns : 1, 1);
	uint8_t *fbits = calloc(nf ? nf : 1, 1); /* bit 7: computed */
	int err = need && bits && fbits ? 0 : -ENOMEM;
	for (size_t sid = ns; !err && sid-- > 1;)
		if (a->stack_count[sid] || need[sid])
			need[sid] = need[sp_spool_stack_parent(a->spool, (uint32_t)sid)] = 1;
	for (size_t sid = 1; !err && sid < ns; sid++) {
		if (!need[sid])
			continue;
		uint32_t fr = sp_spool_stack_frame(a->spool, (uint32_t)sid);
		uint8_t own = 0;
		if (fr < nf && !(fbits[fr] & 0x80) && !(err = frame_filter_bits(f, a, fr, &own)))
			fbits[fr] = own | 0x80;
		own = fr < nf ? fbits[fr] & 7 : 0;
		bits[sid] = own | bits[sp_spool_stack_parent(a->spool, (uint32_t)sid)];
		if (!a->stack_count[sid])
			continue;
		bool pass = (!f->module || (bits[sid] & 1)) && (!f->focus || (bits[sid] & 2)) &&
			    !(bits[sid] & 4);
		if (!pass) {
			a->stack_count[sid] = 0;
			*dropped = true;
		}
	}
	free(need);
	free(bits);
	free(fbits);
	return err;
}

enum { NEED = 1, STAND_IN = 2, NEED_SHOW = 4, NEED_HIDE = 8 };

/*
 * Map every sampled stack id to its node, merging stacks by functions.
 * Without Python frames, node by node.  With them, the Python runtime's
 * frames hidden by default show or not depending on where a stack's Python
 * frames are (sp_agg_python_view): stack by stack.
 */
static int build_nodes(struct sp_agg *a, uint32_t *sample_node)
{
	size_t ns = a->nstacks;
	const struct sp_spool *s = a->spool;
	uint8_t *st = calloc(ns ? ns : 1, 1);
	uint32_t *show = malloc((ns ? ns : 1) * sizeof(*show));
	uint32_t *hide = malloc((ns ? ns : 1) * sizeof(*hide));
	struct sp_map canon;
	sp_map_init(&canon);
	int err = st && show && hide ? 0 : -ENOMEM;
	if (!err)
		err = sp_array_reserve((void **)&a->nodes, &a->nodes_cap, 1, sizeof(*a->nodes));
	if (err)
		goto out;
	a->nodes[0] = (struct sp_agg_node){.func = SP_AGG_NO_FUNC};
	a->nnodes = 1;
	/* Stack ids name older parents, so one pass leafward and one rootward suffice. */
	for (size_t sid = ns; sid-- > 1;)
		if (a->stack_count[sid] || (st[sid] & NEED))
			st[sid] |= NEED, st[sp_spool_stack_parent(s, (uint32_t)sid)] |= NEED;
	for (size_t sid = 1; sid < ns && !err; sid++) {
		if (!(st[sid] & NEED))
			continue;
		uint32_t fr = sp_spool_stack_frame(s, (uint32_t)sid);
		if ((err = resolve_frame(a, fr)))
			break;
		/* The same frames under the same canonical parent: one stack, however spelled. */
		uint64_t key = (uint64_t)a->stack_canon[sp_spool_stack_parent(s, (uint32_t)sid)] << 32 | fr;
		if (!sp_map_get(&canon, key, &a->stack_canon[sid]) &&
		    !(err = sp_map_put(&canon, key, (uint32_t)sid)))
			a->stack_canon[sid] = (uint32_t)sid;
		if ((st[sp_spool_stack_parent(s, (uint32_t)sid)] & STAND_IN) ||
		    (fr < a->nframes && a->frame_hidden[fr] == SP_AGG_STAND_IN))
			st[sid] |= STAND_IN;
	}
	if (!err && a->any_stand_in) {
		/* Which frames show depends on where the stack's Python frames are: stack by stack. */
		for (size_t sid = 1; sid < ns && !err; sid++) {
			if (!a->stack_count[sid])
				continue;
			const uint32_t *fr;
			size_t n = sp_agg_stack_frames(a, (uint32_t)sid, &fr);
			uint32_t node = 0;
			for (size_t i = n; i-- > 0 && !err;)
				err = frame_node(a, node, fr[i], false, &node);
			sample_node[sid] = node;
		}
		goto out;
	}
	for (size_t sid = ns; !err && sid-- > 1;) {
		if (a->stack_count[sid])
			st[sid] |= st[sid] & STAND_IN ? NEED_HIDE : NEED_SHOW;
		st[sp_spool_stack_parent(s, (uint32_t)sid)] |= st[sid] & (NEED_SHOW | NEED_HIDE);
	}
	for (size_t sid = 1; sid < ns && !err; sid++) {
		uint32_t fr = sp_spool_stack_frame(s, (uint32_t)sid);
		uint32_t parent = sp_spool_stack_parent(s, (uint32_t)sid);
		if (!(st[sid] & (NEED_SHOW | NEED_HIDE)))
			continue;
		/* A hidden frame in a stack without a stand-in shows: its functions now. */
		if ((st[sid] & NEED_SHOW) && fr < a->nframes &&
		    a->frame_hidden[fr] == SP_AGG_HIDDEN) {
			a->frame_hidden[fr] = SP_AGG_HIDDEN_SHOWN;
			a->frame_func[fr] = FUNC_UNSET;
			if ((err = resolve_frame(a, fr)))
				break;
		}
		if (st[sid] & NEED_SHOW)
			err = frame_node(a, parent ? show[parent] : 0, fr, false, &show[sid]);
		if (!err && (st[sid] & NEED_HIDE))
			err = frame_node(a, parent ? hide[parent] : 0, fr, true, &hide[sid]);
		if (err || !a->stack_count[sid])
			continue;
		sample_node[sid] = st[sid] & STAND_IN ? hide[sid] : show[sid];
	}
out:
	sp_map_release(&canon);
	free(st);
	free(show);
	free(hide);
	return err;
}

/*
 * Self and total of every function from the merged stacks: self from the
 * node a stack ends at, total once per path however often a function recurs
 * on it (a depth-first walk counting the functions on the current path).
 */
/*
 * A time metric: each interval's time moves from the node its stack ends at
 * to a "[preempted]" or "[blocked]" frame under it, so preempted time shows
 * apart from time blocked or sleeping (docs/DESIGN.md, decision 12).
 */
static int split_causes(struct sp_agg *a, const uint32_t *sample_node)
{
	static const char *const names[2] = {"[blocked]", "[preempted]"};
	uint32_t func[2];
	for (int k = 0; k < 2; k++) {
		struct sp_resolved_frame rf = {.name = names[k], .module = ""};
		int err = intern_func(a, &rf, &func[k]);
		if (err)
			return err;
		a->cause_func[k] = func[k];
	}
	for (size_t i = 0; i < sp_spool_offcpu_count(a->spool); i++) {
		const struct sp_offcpu *o = sp_spool_offcpu(a->spool, i);
		uint32_t sid = o->stack_id < a->nstacks ? o->stack_id : 0, leaf = sample_node[sid], id;
		uint64_t w = o->duration_ns / 1000;
		if (!w || !sp_agg_interval_in(a, o))
			continue;
		int err = node_child(a, leaf, func[(o->flags & SP_OFFCPU_PREEMPTED) != 0], false, &id);
		if (err)
			return err;
		a->nodes[id].count += w;
		if (sid)
			a->nodes[leaf].count -= w;
		else
			a->empty_samples -= w; /* no stack: the cause alone, at the root */
	}
	return 0;
}

static int attribute(struct sp_agg *a)
{
	uint32_t *sample_node = a->stack_node =
		calloc(a->nstacks ? a->nstacks : 1, sizeof(*sample_node));
	int err = sample_node ? build_nodes(a, sample_node) : -ENOMEM;
	for (size_t sid = 1; !err && sid < a->nstacks; sid++) {
		uint64_t count = a->stack_count[sid];
		if (!count)
			continue;
		struct sp_agg_node *nd = &a->nodes[sample_node[sid]];
		nd->count = sp_u64_add_sat(nd->count, count);
		if (nd->truncated) {
			a->stack_truncated[sid] = 1;
			a->truncated_samples = sp_u64_add_sat(a->truncated_samples, count);
		}
	}
	if (!err && a->metric != SP_METRIC_CPU)
		err = split_causes(a, sample_node);
	size_t n = a->nnodes;
	uint32_t *first = NULL, *next = NULL, *on_path = NULL;
	if (!err) {
		first = malloc((n ? n : 1) * sizeof(*first));
		next = malloc((n ? n : 1) * sizeof(*next));
		on_path = calloc(a->nfuncs ? a->nfuncs : 1, sizeof(*on_path));
		if (!first || !next || !on_path)
			err = -ENOMEM;
	}
	if (err)
		goto out;
	for (size_t i = 0; i < n; i++) {
		a->nodes[i].total = a->nodes[i].count;
		first[i] = 0; /* node 0 is nobody's child: 0 ends a list */
	}
	for (size_t i = n; i-- > 1;) {
		struct sp_agg_node *nd = &a->nodes[i], *p = &a->nodes[nd->parent];
		p->total = sp_u64_add_sat(p->total, nd->total);
		next[i] = first[nd->parent];
		first[nd->parent] = (uint32_t)i;
	}
	for (uint32_t v = first[0]; v;) {
		struct sp_agg_node *nd = &a->nodes[v];
		if (nd->func < a->nfuncs) {
			struct sp_agg_func *f = &a->funcs[nd->func];
			f->self = sp_u64_add_sat(f->self, nd->count);
			if (!on_path[nd->func]++)
				f->total = sp_u64_add_sat(f->total, nd->total);
		}
		if (first[v]) {
			v = first[v];
			continue;
		}
		/* Leave v, then every ancestor whose children are done. */
		for (;;) {
			if (a->nodes[v].func < a->nfuncs)
				on_path[a->nodes[v].func]--;
			if (next[v]) {
				v = next[v];
				break;
			}
			v = a->nodes[v].parent;
			if (!v)
				break;
		}
	}
out:
	free(first);
	free(next);
	free(on_path);
	return err;
}

int sp_agg_build(struct sp_agg *a, const struct sp_spool *s, struct sp_symbolizer *sym,
		 const struct sp_report_opts *opts)
{
	return sp_agg_build_scoped(a, s, sym, opts, NULL);
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
		thread_ok[t] = sp_agg_in_scope(scope, t, th) && (!f || sp_filter_thread(f, th)) &&
			       a->metric != SP_METRIC_OFF_CPU; /* off-CPU time has no samples */
	}
	uint64_t origin = sp_filter_origin_ns(s);
	for (size_t i = 0; i < nsamples; i++) {
		const struct sp_sample *smp = sp_spool_sample(s, i);
		if (smp->thread >= nthreads || !thread_ok[smp->thread] ||
		    (f && !sp_filter_time(f, smp->timestamp_ns, origin)))
			continue;
		a->keep[i / 64] |= 1ULL << (i % 64);
		uint32_t sid = smp->stack_id < a->nstacks ? smp->stack_id : 0;
		/* Weights come from the spool: sums saturate, as a->samples does. */
		a->stack_count[sid] = sp_u64_add_sat(a->stack_count[sid], sp_agg_weight(a, smp));
	}
	free(thread_ok);
	int ierr = a->metric != SP_METRIC_CPU ? sp_agg_count_intervals(a, f, scope) : 0;
	if (ierr)
		return ierr;
	if (!f || (!f->module && !f->focus && !f->exclude))
		return 0;
	bool dropped = false;
	int err = filter_stacks(a, f, &dropped);
	if (err)
		return err;
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
	a->unknown_rows = opts && !opts->lines && opts->format == SP_REPORT_TEXT;
	sp_arena_init(&a->unknown_names);
	sp_map_init(&a->func_index);
	sp_map_init(&a->name_index);
	sp_map_init(&a->node_index);
	sp_module_names_init(&a->module_names);
	a->nstacks = sp_spool_stack_count(s);
	sp_sample_unit_of(s, &a->unit);
	size_t nframes = a->nframes = sp_spool_frame_count(s);
	if (a->nstacks >= UINT32_MAX)
		return -SP_E_BAD_ARG;
	a->stack_count = calloc(a->nstacks ? a->nstacks : 1, sizeof(*a->stack_count));
	a->stack_truncated = calloc(a->nstacks ? a->nstacks : 1, 1);
	a->frame_func = malloc((nframes ? nframes : 1) * sizeof(*a->frame_func));
	a->frame_first = calloc(nframes ? nframes : 1, sizeof(*a->frame_first));
	a->frame_nfuncs = calloc(nframes ? nframes : 1, sizeof(*a->frame_nfuncs));
	a->frame_hidden = calloc(nframes ? nframes : 1, 1);
	a->frame_eval = calloc(nframes ? nframes : 1, 1);
	a->stack_canon = calloc(a->nstacks ? a->nstacks : 1, sizeof(*a->stack_canon));
	if (!a->stack_canon || !a->stack_count || !a->stack_truncated || !a->frame_func || !a->frame_first ||
	    !a->frame_nfuncs || !a->frame_hidden || !a->frame_eval)
		return -ENOMEM;
	for (size_t i = 0; i < nframes; i++)
		a->frame_func[i] = FUNC_UNSET;

	/* Pass 1: per-sample work is one increment; nothing is resolved yet. */
	size_t nsamples = sp_spool_sample_count(s);
	const struct sp_report_filter *f = opts && sp_filter_active(&opts->filter) ? &opts->filter
										  : NULL;
	a->all_samples = nsamples;
	a->filter = f;
	a->metric = opts ? opts->metric : SP_METRIC_CPU;
	/*
	 * Wall time adds a clock's samples as time; counted events have none
	 * (docs/DESIGN.md, decision 12).
	 */
	if (a->metric == SP_METRIC_WALL && !a->unit.time)
		return -SP_E_BAD_ARG;
	a->scope = scope;
	if (f || (scope && scope->kind != SP_GROUP_NONE) || a->metric != SP_METRIC_CPU) {
		int err = filter_samples(a, f, scope);
		if (err)
			return err;
	}
	for (size_t i = 0; i < nsamples; i++) {
		const struct sp_sample *smp = sp_spool_sample(s, i);
		uint32_t sid = smp->stack_id < a->nstacks ? smp->stack_id : 0;
		if (!sp_agg_kept(a, i))
			continue;
		uint64_t w = sp_agg_weight(a, smp);
		if (!a->keep)
			a->stack_count[sid] = sp_u64_add_sat(a->stack_count[sid], w);
		if (!a->nsampled || smp->timestamp_ns < a->first_ns)
			a->first_ns = smp->timestamp_ns;
		if (!a->nsampled || smp->timestamp_ns > a->last_ns)
			a->last_ns = smp->timestamp_ns;
		a->samples = sp_u64_add_sat(a->samples, w);
		a->nsampled++;
	}
	if (a->metric != SP_METRIC_CPU)
		sp_agg_total_intervals(a, f, scope);
	a->whole = a->samples;
	a->empty_samples = a->nstacks ? a->stack_count[0] : 0;

	/* Pass 2: once per stack node, each frame resolved the first time it is met. */
	return attribute(a);
}

void sp_agg_release(struct sp_agg *a)
{
	sp_arena_release(&a->unknown_names);
	free(a->stack_count);
	free(a->stack_truncated);
	free(a->frame_func);
	free(a->frame_first);
	free(a->frame_nfuncs);
	free(a->frame_hidden);
	free(a->frame_eval);
	free(a->chain);
	free(a->funcs);
	free(a->names);
	free(a->path);
	free(a->keep);
	free(a->nodes);
	free(a->stack_canon);
	free(a->stack_node);
	sp_map_release(&a->node_index);
	sp_map_release(&a->func_index);
	sp_module_names_release(&a->module_names);
	sp_map_release(&a->name_index);
	memset(a, 0, sizeof(*a));
}
