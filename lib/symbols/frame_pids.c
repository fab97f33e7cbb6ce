/* SPDX-License-Identifier: MIT */
/*
 * The process of each frame outside every module: frames are interned
 * without one, so it comes from the samples whose stacks hold the frame (a
 * perf map is then asked by that process).
 */
#include "symbols/symbolizer.h"

#include <errno.h>
#include <stdlib.h>

/* Fold mark into *p: the one process, or PID_MANY when two differ. */
static bool fold_pid(int32_t *p, int32_t mark)
{
	int32_t v = *p == PID_NONE || *p == mark ? mark : PID_MANY;
	bool changed = v != *p;
	*p = v;
	return changed;
}

/*
 * Mark the stack nodes of samples [first, end) with their pid, or PID_MANY
 * when processes share a node, walking up only until a node already carries
 * the same mark (a node changes at most twice), and fold each node changed
 * into its frame's pid.  Frames whose pid changed are appended to *changed
 * when changed is not NULL.
 */
static int mark_samples(struct sp_symbolizer *sym, size_t first, size_t end, uint32_t **changed,
			size_t *n, size_t *cap)
{
	const struct sp_spool *s = sym->spool;
	for (size_t i = first; i < end; i++) {
		const struct sp_sample *x = sp_spool_sample(s, i);
		const struct sp_thread *t = x ? sp_spool_thread(s, x->thread) : NULL;
		if (!t)
			continue;
		int32_t pid = t->pid;
		for (uint32_t id = x->stack_id; id && id < sym->nstacks;
		     id = sp_spool_stack_parent(s, id)) {
			int32_t *node = &sym->stack_pid[id];
			if (*node == pid || *node == PID_MANY)
				break;
			*node = *node == PID_NONE ? pid : PID_MANY;
			uint32_t f = sp_spool_stack_frame(s, id);
			if (f >= sym->nframes || !fold_pid(&sym->frame_pid[f], *node) || !changed)
				continue;
			if (sp_array_reserve((void **)changed, cap, *n + 1, sizeof(**changed)))
				return -ENOMEM;
			(*changed)[(*n)++] = f;
		}
	}
	return 0;
}

/* Room in sym->stack_pid for every stack node taken in, new ones unmarked. */
static int grow_stack_pid(struct sp_symbolizer *sym)
{
	size_t old = sym->stack_pid_cap;
	if (sym->stack_pid && sym->nstacks <= old)
		return 0;
	if (sp_array_reserve((void **)&sym->stack_pid, &sym->stack_pid_cap,
			     sym->nstacks ? sym->nstacks : 1, sizeof(*sym->stack_pid)))
		return -ENOMEM;
	for (size_t i = old; i < sym->stack_pid_cap; i++)
		sym->stack_pid[i] = PID_NONE;
	return 0;
}

/*
 * The process a frame outside every module belongs to: frames are interned
 * without one, so it comes from the samples whose stacks hold the frame.
 * Computed for all frames at their first need; a followed spool's later
 * samples are folded in by sp_sym_frame_pids_add.
 */
int sp_sym_compute_frame_pids(struct sp_symbolizer *sym)
{
	sym->frame_pid = malloc(sym->frames_cap * sizeof(*sym->frame_pid));
	if (!sym->frame_pid || grow_stack_pid(sym))
		return -ENOMEM;
	for (size_t i = 0; i < sym->frames_cap; i++)
		sym->frame_pid[i] = PID_NONE;
	int err = mark_samples(sym, 0, sym->nsamples, NULL, NULL, NULL);
	if (!sym->tail) {
		/* Only a followed spool brings samples to fold in later. */
		free(sym->stack_pid);
		sym->stack_pid = NULL;
		sym->stack_pid_cap = 0;
	}
	return err;
}

int sp_sym_frame_pids_add(struct sp_symbolizer *sym, size_t first, size_t end,
			  uint32_t **changed, size_t *n, size_t *cap)
{
	/* Not computed yet: its first need takes every sample in. */
	if (!sym->frame_pid)
		return 0;
	if (grow_stack_pid(sym))
		return -ENOMEM;
	size_t from = *n;
	int err = mark_samples(sym, first, end, changed, n, cap);
	/* Only resolved frames outside every module asked a perf map by their process. */
	size_t kept = from;
	for (size_t i = from; i < *n; i++) {
		uint32_t f = (*changed)[i];
		const struct sp_frame *fr = sp_spool_frame(sym->spool, f);
		if (sym->resolved[f] && fr && fr->mode == SP_FRAME_USER &&
		    (fr->module_id == SP_NO_MODULE || fr->module_id >= sym->nmodules))
			(*changed)[kept++] = f;
	}
	*n = kept;
	return err;
}
