/* SPDX-License-Identifier: MIT */
/* Per-process module maps: sorted, non-overlapping ranges that mmaps replace and forks copy. */
#include "record/record.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int reserve(struct sp_process *p, size_t extra)
{
	return sp_array_reserve((void **)&p->mods, &p->cap, p->nmods + extra, sizeof(*p->mods));
}

/* Index of the first of the n sorted modules whose end is above addr. */
static size_t first_ending_above(const struct sp_proc_module *mods, size_t n, uint64_t addr)
{
	return sp_partition_point(n, i, mods[i].end <= addr);
}

static size_t lower_bound(const struct sp_process *p, uint64_t addr)
{
	return first_ending_above(p->mods, p->nmods, addr);
}

/* A new generation for p's module set: caches keyed on (pid, gen) see the change. */
static void new_generation(struct sp_process *p)
{
	static uint64_t next;
	p->gen = __atomic_add_fetch(&next, 1, __ATOMIC_RELAXED);
}

static void fix_um(struct sp_proc_module *m)
{
	m->um.start = m->start;
	m->um.end = m->end;
}

int sp_process_add_module(struct sp_process *p, const struct sp_proc_module *m)
{
	if (m->start >= m->end)
		return -SP_E_BAD_ARG;
	new_generation(p);
	/* At most one old module is split in two, so two slots suffice. */
	int err = reserve(p, 2);
	if (err)
		return err;
	size_t i = lower_bound(p, m->start);
	/* Split a module that covers the new one on both sides. */
	if (i < p->nmods && p->mods[i].start < m->start && p->mods[i].end > m->end) {
		struct sp_proc_module tail = p->mods[i];
		tail.file_offset += m->end - tail.start;
		tail.start = m->end;
		fix_um(&tail);
		p->mods[i].end = m->start;
		fix_um(&p->mods[i]);
		/* the modules above move up two slots: the new one and the tail go between */
		memmove(&p->mods[i + 3], &p->mods[i + 1], (p->nmods - i - 1) * sizeof(*m));
		p->mods[i + 1] = *m;
		fix_um(&p->mods[i + 1]);
		p->mods[i + 2] = tail;
		p->nmods += 2;
		return 0;
	}
	/* Trim the left neighbour, drop covered modules, trim the right one. */
	if (i < p->nmods && p->mods[i].start < m->start) {
		p->mods[i].end = m->start;
		fix_um(&p->mods[i]);
		i++;
	}
	size_t j = i;
	while (j < p->nmods && p->mods[j].end <= m->end)
		j++;
	if (j < p->nmods && p->mods[j].start < m->end) {
		p->mods[j].file_offset += m->end - p->mods[j].start;
		p->mods[j].start = m->end;
		fix_um(&p->mods[j]);
	}
	/* Replace [i, j) by the new module. */
	if (j == i) {
		memmove(&p->mods[i + 1], &p->mods[i], (p->nmods - i) * sizeof(*m));
		p->nmods++;
	} else if (j > i + 1) {
		memmove(&p->mods[i + 1], &p->mods[j], (p->nmods - j) * sizeof(*m));
		p->nmods -= j - i - 1;
	}
	p->mods[i] = *m;
	fix_um(&p->mods[i]);
	return 0;
}

struct sp_proc_module *sp_process_find(struct sp_process *p, uint64_t pc)
{
	uint32_t *recent = p->recent;
	unsigned k = 0;
	size_t i;

	for (; k < SP_PROC_RECENT; k++) {
		i = recent[k];
		/* unsigned wrap makes pc < start fail too */
		if (i < p->nmods && pc - p->mods[i].start < p->mods[i].end - p->mods[i].start)
			break;
	}
	if (k == SP_PROC_RECENT) {
		i = lower_bound(p, pc);
		if (i >= p->nmods || p->mods[i].start > pc)
			return NULL;
		k = SP_PROC_RECENT - 1; /* the least recent goes */
	}
	/* the one found moves to the front */
	for (; k > 0; k--)
		recent[k] = recent[k - 1];
	recent[0] = (uint32_t)i;
	return &p->mods[i];
}

int sp_process_copy_modules(struct sp_process *dst, const struct sp_process *src)
{
	dst->nmods = 0;
	new_generation(dst);
	int err = reserve(dst, src->nmods);
	if (err)
		return err;
	if (src->nmods)
		memcpy(dst->mods, src->mods, src->nmods * sizeof(*src->mods));
	dst->nmods = src->nmods;
	dst->is_python = src->is_python;
	/* A forked runtime writes a map of its own: in a container, looked for afresh. */
	dst->perf_map_wanted = src->perf_map_wanted || src->perf_map_tries;
	dst->perf_map_tries = 0;
	/* The child writes its own perf map: its generated code is learnt afresh. */
	sp_jit_code_free(dst->jit);
	dst->jit = NULL;
	return 0;
}

void sp_process_clear_modules(struct sp_process *p)
{
	p->nmods = 0;
	new_generation(p);
	sp_jit_code_free(p->jit);
	p->jit = NULL;
}

void sp_process_begin_exec(struct sp_process *p)
{
	free(p->pre_exec);
	p->pre_exec = p->mods;
	p->npre_exec = p->nmods;
	p->mods = NULL;
	p->nmods = p->cap = 0;
	memset(p->recent, 0, sizeof(p->recent));
	new_generation(p);
	sp_jit_code_free(p->jit);
	p->jit = NULL;
}

struct sp_proc_module *sp_process_find_pre_exec(const struct sp_process *p, uint64_t pc)
{
	size_t i = first_ending_above(p->pre_exec, p->npre_exec, pc);
	return i < p->npre_exec && p->pre_exec[i].start <= pc ? &p->pre_exec[i] : NULL;
}

void sp_process_end_exec(struct sp_process *p)
{
	free(p->pre_exec);
	p->pre_exec = NULL;
	p->npre_exec = 0;
}

void sp_process_release(struct sp_process *p)
{
	sp_process_end_exec(p);
	free(p->mods);
	p->mods = NULL;
	sp_jit_code_free(p->jit);
	p->jit = NULL;
	p->nmods = p->cap = 0;
}
