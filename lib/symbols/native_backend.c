/* SPDX-License-Identifier: MIT */
/* A native symbolizer plug-in's instances: one per non-overlapping module group of a process. */
#include "symbols/symbols.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define NO_GROUP UINT32_MAX
/* Functions taken from one symbolize_one call: deeper inline chains are cut at the innermost end. */
#define MAX_FUNCS 64

enum group_state {
	GROUP_NEW = 0, /* no instance yet */
	GROUP_READY,   /* instance made, modules set */
	GROUP_FAILED,  /* create or set_modules failed: its frames keep the address form */
};

struct group {
	int32_t pid;
	uint8_t state;  /* enum group_state */
	void *instance;
	uint32_t *mods; /* module ids, in recorded order */
	size_t nmods, cap;
};

struct sp_native_groups {
	const struct sp_spool *spool;
	struct sp_native_backend be;
	uint32_t *module_group; /* by module id: group index or NO_GROUP */
	size_t nmodules;
	struct sp_map current;  /* pid -> its latest group */
	struct group *groups;
	size_t ngroups, cap;
	struct sp_native_symbol out[MAX_FUNCS];
};

static bool overlaps(const struct sp_module *a, const struct sp_module *b)
{
	return a->start < b->end && b->start < a->end;
}

static int add_member(struct group *g, uint32_t module_id)
{
	if (sp_array_reserve((void **)&g->mods, &g->cap, g->nmods + 1,
			     sizeof(*g->mods)))
		return -ENOMEM;
	g->mods[g->nmods++] = module_id;
	return 0;
}

/* A new, empty group of pid; its index in *idx. */
static int new_group(struct sp_native_groups *ng, int32_t pid, uint32_t *idx)
{
	if (sp_array_reserve((void **)&ng->groups, &ng->cap, ng->ngroups + 1,
			     sizeof(*ng->groups)))
		return -ENOMEM;
	ng->groups[ng->ngroups] = (struct group){.pid = pid};
	*idx = (uint32_t)ng->ngroups++;
	return 0;
}

/*
 * Group the eligible modules [ng->nmodules, n) of each process in recorded
 * order: a module joins its process's current group unless it overlaps a
 * member (the process mapped something new over old code, or exec'd), which
 * starts a new group, or the group's instance has its modules already (a
 * followed spool's later module).  Frames name their module, so each frame
 * finds its group.
 */
static int add_modules(struct sp_native_groups *ng, size_t n, const bool *eligible)
{
	if (n > ng->nmodules) {
		uint32_t *mg = realloc(ng->module_group, n * sizeof(*mg));
		if (!mg)
			return -ENOMEM;
		ng->module_group = mg;
	}
	int err = 0;
	size_t first = ng->nmodules;
	for (size_t i = first; i < n && !err; i++) {
		ng->module_group[i] = NO_GROUP;
		ng->nmodules = i + 1;
		const struct sp_module *m = sp_spool_module(ng->spool, (uint32_t)i);
		if (!eligible[i - first] || !m)
			continue;
		uint64_t key = (uint64_t)(uint32_t)m->pid;
		uint32_t g;
		bool fits = sp_map_get(&ng->current, key, &g) && ng->groups[g].state == GROUP_NEW;
		for (size_t j = 0; fits && j < ng->groups[g].nmods; j++)
			fits = !overlaps(m, sp_spool_module(ng->spool, ng->groups[g].mods[j]));
		if (!fits && !(err = new_group(ng, m->pid, &g)))
			err = sp_map_put(&ng->current, key, g);
		if (!err)
			err = add_member(&ng->groups[g], (uint32_t)i);
		if (!err)
			ng->module_group[i] = g;
	}
	return err;
}

int sp_native_groups_new(const struct sp_spool *s, const struct sp_native_backend *be,
			 const bool *eligible, struct sp_native_groups **out)
{
	if (!be->create || !be->set_modules || !be->symbolize_one)
		return -SP_E_BAD_ARG;
	struct sp_native_groups *ng = calloc(1, sizeof(*ng));
	if (!ng)
		return -ENOMEM;
	ng->spool = s;
	ng->be = *be;
	sp_map_init(&ng->current);
	int err = add_modules(ng, sp_spool_module_count(s), eligible);
	if (err) {
		sp_native_groups_free(ng);
		return err;
	}
	*out = ng;
	return 0;
}

int sp_native_groups_add(struct sp_native_groups *ng, size_t n, const bool *eligible)
{
	return add_modules(ng, n, eligible);
}

void sp_native_groups_free(struct sp_native_groups *ng)
{
	if (!ng)
		return;
	for (size_t i = 0; i < ng->ngroups; i++) {
		if (ng->groups[i].instance && ng->be.free)
			ng->be.free(ng->groups[i].instance);
		free(ng->groups[i].mods);
	}
	free(ng->groups);
	free(ng->module_group);
	sp_map_release(&ng->current);
	free(ng);
}

/* The group's modules as the plug-in sees them, handed over once. */
static int set_modules(struct sp_native_groups *ng, struct group *g)
{
	struct sp_sym_module *sm = calloc(g->nmods, sizeof(*sm));
	char **paths = calloc(g->nmods, sizeof(*paths));
	int err = sm && paths ? 0 : -ENOMEM;
	for (size_t i = 0; i < g->nmods && !err; i++) {
		const struct sp_module *m = sp_spool_module(ng->spool, g->mods[i]);
		if (!(paths[i] = strndup(m->path, sp_path_len_undeleted(m->path)))) {
			err = -ENOMEM;
			break;
		}
		sm[i] = (struct sp_sym_module){
			.module = m,
			.path = paths[i],
			.avma_start = m->start,
			.avma_end = m->end,
			.image_base = m->load_bias,
			.has_image_base = (m->flags & SP_MODULE_HAS_BIAS) != 0,
		};
	}
	if (!err)
		err = ng->be.set_modules(g->instance, sm, g->nmods) ? SP_NATIVE_FAILED : 0;
	for (size_t i = 0; paths && i < g->nmods; i++)
		free(paths[i]);
	free(paths);
	free(sm);
	return err;
}

int sp_native_groups_symbolize(struct sp_native_groups *ng, uint32_t module_id, uint64_t addr,
			       const struct sp_native_symbol **syms, size_t *n)
{
	*syms = ng->out;
	*n = 0;
	uint32_t gi = module_id < ng->nmodules ? ng->module_group[module_id] : NO_GROUP;
	if (gi == NO_GROUP)
		return 0;
	struct group *g = &ng->groups[gi];
	if (g->state == GROUP_NEW) {
		g->state = GROUP_FAILED;
		int err = ng->be.create(ng->be.ctx, g->pid, &g->instance);
		if (err) {
			g->instance = NULL;
			return err == -ENOMEM ? err : SP_NATIVE_FAILED;
		}
		err = set_modules(ng, g);
		if (err)
			return err == -ENOMEM ? err : SP_NATIVE_FAILED;
		g->state = GROUP_READY;
	}
	if (g->state != GROUP_READY)
		return 0;
	size_t k = 0;
	int err = ng->be.symbolize_one(g->instance, addr, ng->out, MAX_FUNCS, &k);
	if (err)
		return err == -ENOMEM ? err : SP_NATIVE_FAILED;
	if (k > MAX_FUNCS)
		k = MAX_FUNCS;
	/* Entries without a name say nothing. */
	size_t kept = 0;
	for (size_t i = 0; i < k; i++)
		if (ng->out[i].name)
			ng->out[kept++] = ng->out[i];
	*n = kept;
	return 0;
}
