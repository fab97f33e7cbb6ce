/* SPDX-License-Identifier: MIT */
/*
 * Compaction of an always-on recording (docs/DESIGN.md, decision 14): what the
 * spool writer's dictionaries still need is marked from the recorder's state,
 * the rest dropped, and the ids the recorder holds renumbered.
 */
#include "record/record.h"
#include "spool/spool.h"

#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdlib.h>

static void keep_modules(struct sp_spool_writer *w, const struct sp_proc_module *m, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sp_spool_writer_keep_module(w, m[i].module_id);
}

static void renumber_modules(const struct sp_spool_writer *w, struct sp_proc_module *m, size_t n)
{
	/* every module a process maps was kept */
	for (size_t i = 0; i < n; i++)
		m[i].module_id = sp_spool_writer_compacted_module(w, m[i].module_id);
}

/* A process outside the table that no longer runs (kill's ESRCH). */
static bool gone_untracked(struct sp_recorder *r, int32_t pid)
{
	return pid > 0 && !sp_process_table_find(&r->procs, pid) && kill(pid, 0) && errno == ESRCH;
}

/* An off-CPU slot's thread is gone when its process is, or, outside the table, when /proc says so. */
static bool slot_gone(struct sp_recorder *r, int32_t pid)
{
	const struct sp_process *p = sp_process_table_find(&r->procs, pid);
	return p ? p->exited : gone_untracked(r, pid);
}

/* A name stays while its process is in the table (or, outside it, runs); written while the writer has it. */
static bool keep_name(void *ctx, uint32_t pid, uint32_t tid, bool *written)
{
	struct sp_recorder *r = ctx;
	if (gone_untracked(r, (int32_t)pid))
		return false;
	if (*written && !sp_spool_writer_has_thread(r->spool, (int32_t)pid, (int32_t)tid))
		*written = false;
	return true;
}

void sp_recorder_forget_threads(struct sp_recorder *r)
{
	if (r->names.n)
		sp_thread_names_filter(&r->names, keep_name, r);
	/* (marks the slots' stacks only while a compaction marks) */
	if (r->offcpu.n)
		sp_offcpu_keep_stacks(r, slot_gone);
}

void sp_recorder_trim(struct sp_recorder *r)
{
	/*
	 * The stack cache's keys name processes (by their module generation):
	 * those of processes gone never match again.  Emptied, it fills again
	 * from the next samples of the live ones, at the cost of interning
	 * their stacks once more (their unwinding is done either way).
	 */
	sp_stack_cache_release(&r->stacks);
	sp_stack_cache_init(&r->stacks);
#ifdef __GLIBC__
	/* what was freed goes back to the system, so the recorder's size shows what it holds */
	malloc_trim(0);
#endif
}

void sp_recorder_compact(struct sp_recorder *r)
{
	struct sp_spool_writer *w = r->spool;
	if ((!r->segments && !r->rolling) || r->finished || !sp_spool_writer_compact_due(w) ||
	    sp_spool_writer_compact_begin(w))
		return;
	for (size_t i = 0; i < r->procs.n; i++) {
		const struct sp_process *p = r->procs.all[i];
		sp_spool_writer_keep_pid(w, p->pid);
		keep_modules(w, p->mods, p->nmods);
		keep_modules(w, p->pre_exec, p->npre_exec);
	}
	/* a group of files of the same bytes is named by its first module while a file of it is open */
	for (size_t i = 0; i < r->files.nfiles; i++)
		if (r->files.files[i]->first_module)
			sp_spool_writer_keep_module(w, r->files.files[i]->first_module - 1);
	for (size_t i = 0; i < r->held.n; i++) {
		sp_spool_writer_keep_stack(w, r->held.s[i].cut);
		sp_spool_writer_keep_stack(w, r->held.s[i].whole);
	}
	sp_offcpu_keep_stacks(r, slot_gone);
	if (sp_spool_writer_compact_end(w)) {
		sp_spool_writer_compact_release(w);
		return;
	}
	for (size_t i = 0; i < r->procs.n; i++) {
		struct sp_process *p = r->procs.all[i];
		renumber_modules(w, p->mods, p->nmods);
		renumber_modules(w, p->pre_exec, p->npre_exec);
	}
	for (size_t i = 0; i < r->files.nfiles; i++) {
		struct sp_modfile *f = r->files.files[i];
		if (f->first_module)
			f->first_module = sp_spool_writer_compacted_module(w, f->first_module - 1) + 1;
	}
	for (size_t i = 0; i < r->held.n; i++) {
		r->held.s[i].cut = sp_recorder_compacted_stack(r, r->held.s[i].cut);
		r->held.s[i].whole = sp_recorder_compacted_stack(r, r->held.s[i].whole);
	}
	sp_offcpu_renumber_stacks(r);
	sp_spool_writer_compact_release(w);
	if (r->names.n)
		sp_thread_names_filter(&r->names, keep_name, r);
	r->compactions++;
	sp_recorder_trim(r);
}

uint64_t sp_recorder_compactions(const struct sp_recorder *r)
{
	return r->compactions;
}
