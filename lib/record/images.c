/* SPDX-License-Identifier: MIT */
/*
 * Module images of the recording's processes: forgetting processes gone for
 * good, and naming the images deleted or replaced while recording into the
 * spool at the end.
 */
#include "record/record.h"
#include "spool/spool.h"
#include "symbols/symbols.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>

/* A pass every EVICT_EVERY_NS; a process is forgotten EVICT_AFTER_NS after its exit. */
#define EVICT_EVERY_NS 2000000000ull
#define EVICT_AFTER_NS 2000000000ull

/* Some file of p's was deleted or replaced: kept to name its frames at the end. */
static bool maps_replaced_file(const struct sp_process *p)
{
	for (size_t i = 0; i < p->nmods; i++)
		if (p->mods[i].file && sp_modfile_replaced(p->mods[i].file))
			return true;
	return false;
}

static void mark_in_use(struct sp_proc_module *mods, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct sp_modfile *f = mods[i].file;
		if (f) {
			f->in_use = true;
			if (f->cfi_owner)
				f->cfi_owner->in_use = true;
		}
	}
}

/* Gone for good: its exit drained EVICT_AFTER_NS ago (its last samples are written), no process has its pid. */
static bool gone_for_good(const struct sp_process *p, uint64_t now)
{
	return p->exited && now - p->exited_ns >= EVICT_AFTER_NS && kill(p->pid, 0) && errno == ESRCH;
}

/*
 * An always-on recording (segments, flight recorder) forgets such processes
 * whole, those with deleted or replaced files too: naming their images at
 * the end would keep every program a day ran (docs/DESIGN.md, decision 14).
 * Their threads' names and off-CPU slots go with them.  Returns how many
 * were forgotten.
 */
static size_t forget_processes(struct sp_recorder *r, uint64_t now)
{
	struct sp_process_table *t = &r->procs;
	struct sp_map index;
	sp_map_init(&index);
	size_t kept = 0, n = t->n;
	bool *gone = n ? malloc(n) : NULL;
	int err = gone ? 0 : -ENOMEM;
	for (size_t i = 0; i < n && !err; i++)
		if (!(gone[i] = gone_for_good(t->all[i], now)))
			err = sp_map_put(&index, (uint64_t)(uint32_t)t->all[i]->pid, (uint32_t)kept++);
	if (err || kept == n) {
		sp_map_release(&index);
		free(gone);
		return 0;
	}
	kept = 0;
	for (size_t i = 0; i < n; i++) {
		if (gone[i]) {
			sp_process_release(t->all[i]);
			free(t->all[i]);
		} else {
			t->all[kept++] = t->all[i];
		}
	}
	free(gone);
	t->n = kept;
	sp_map_release(&t->index);
	t->index = index;
	sp_recorder_forget_threads(r);
	return n - kept;
}

#ifdef SP_DEBUG_FILES
#include <stdio.h>

/* A debug build's stop: what was found, and the modules of the process it was found in. */
static void debug_fail(const char *what, const struct sp_process *p,
		       const struct sp_proc_module *mods, size_t n, size_t i)
{
	fprintf(stderr, "SP_DEBUG_FILES: %s: pid %d (parent %d, exited %d), %s %zu of %zu\n", what,
		p ? (int)p->pid : -1, p ? (int)p->ppid : -1, p ? p->exited : 0,
		p && mods == p->pre_exec ? "module before its exec" : "module", i, n);
	for (size_t k = 0; k < n; k++)
		fprintf(stderr, "  [%zu] %#llx-%#llx id %u file %p\n", k,
			(unsigned long long)mods[k].start, (unsigned long long)mods[k].end,
			mods[k].module_id, (void *)mods[k].file);
	abort();
}

/* mods sorted, non-empty and apart, each file (and the file whose table it shares) held. */
static void check_modules(const struct sp_map *held, const struct sp_process *p,
			  const struct sp_proc_module *mods, size_t n)
{
	uint32_t v;
	for (size_t i = 0; i < n; i++) {
		const struct sp_proc_module *m = &mods[i];
		const struct sp_modfile *f = m->file;
		if (m->start >= m->end || (i && mods[i - 1].end > m->start))
			debug_fail("modules out of order", p, mods, n, i);
		if (f && !sp_map_get(held, (uint64_t)(uintptr_t)f, &v))
			debug_fail("a module's file is not one the recorder holds", p, mods, n, i);
		if (f && f->cfi_owner && !sp_map_get(held, (uint64_t)(uintptr_t)f->cfi_owner, &v))
			debug_fail("the file whose table it shares is gone", p, mods, n, i);
		if (f && m->um.cfi && m->um.cfi != (f->cfi_owner ? f->cfi_owner : f)->cfi)
			debug_fail("a module's CFI table is not its file's", p, mods, n, i);
	}
}

/*
 * A consistency check, built with -DSP_DEBUG_FILES (SANITIZE=1 builds have it;
 * elsewhere make OPT='-O1 -DSP_DEBUG_FILES'):
 * after every drain and every eviction, the process table's index finds each
 * process, and every module (and module before an exec) points at a file the
 * recorder holds.  Aborts at the first mismatch.  O(files + modules) a drain.
 */
static void check_files(struct sp_recorder *r)
{
	const struct sp_modfile_cache *c = &r->files;
	const struct sp_process_table *t = &r->procs;
	struct sp_map held;
	uint32_t v;
	sp_map_init(&held);
	for (size_t i = 0; i < c->nfiles; i++)
		if (sp_map_put(&held, (uint64_t)(uintptr_t)c->files[i], (uint32_t)i))
			abort();
	for (size_t i = 0; i < c->file_index.cap; i++)
		if (c->file_index.slots[i].used && c->file_index.slots[i].val >= c->nfiles)
			debug_fail("the file index points past the files", NULL, NULL, 0, i);
	for (size_t i = 0; i < c->build_id_index.cap; i++)
		if (c->build_id_index.slots[i].used && c->build_id_index.slots[i].val >= c->nfiles)
			debug_fail("the build-id index points past the files", NULL, NULL, 0, i);
	if (t->index.len != t->n)
		debug_fail("the process index does not count the processes", NULL, NULL, 0, t->n);
	for (size_t i = 0; i < t->n; i++) {
		const struct sp_process *p = t->all[i];
		if (!sp_map_get(&t->index, (uint64_t)(uint32_t)p->pid, &v) || v != i)
			debug_fail("the process index does not find a process", p, NULL, 0, i);
		if (p->nmods > p->cap)
			debug_fail("more modules than room", p, NULL, 0, p->nmods);
		check_modules(&held, p, p->mods, p->nmods);
		check_modules(&held, p, p->pre_exec, p->npre_exec);
	}
	sp_map_release(&held);
}
#endif

/*
 * A recording of a busy machine (or of a build) sees thousands of processes
 * come and go.  Once one is gone for good, its modules are dropped, and the
 * module files no process maps any more are closed with their CFI tables.
 * Files deleted or replaced stay open (but in an always-on recording): the
 * end of the recording names their frames from them.
 */
void sp_recorder_evict_gone(struct sp_recorder *r, uint64_t now)
{
#ifdef SP_DEBUG_FILES
	check_files(r);
#endif
	if (now - r->last_evict_ns < EVICT_EVERY_NS)
		return;
	r->last_evict_ns = now;
	size_t dropped = 0;
	if (r->segments || r->rolling) {
		dropped = forget_processes(r, now);
	} else {
		for (size_t i = 0; i < r->procs.n; i++) {
			struct sp_process *p = r->procs.all[i];
			if ((!p->nmods && !p->npre_exec) || !gone_for_good(p, now) ||
			    maps_replaced_file(p))
				continue;
			sp_process_end_exec(p);
			sp_process_clear_modules(p);
			p->maps_known = false;
			dropped++;
		}
	}
	if (!dropped)
		return;
	for (size_t i = 0; i < r->files.nfiles; i++)
		r->files.files[i]->in_use = false;
	for (size_t i = 0; i < r->procs.n; i++) {
		mark_in_use(r->procs.all[i]->mods, r->procs.all[i]->nmods);
		mark_in_use(r->procs.all[i]->pre_exec, r->procs.all[i]->npre_exec);
	}
	r->summary.processes_forgotten += dropped;
	r->summary.files_closed += sp_modfile_cache_evict(&r->files);
	if (r->segments || r->rolling)
		sp_recorder_trim(r);
#ifdef SP_DEBUG_FILES
	check_files(r);
#endif
}
/*
 * docs/DESIGN.md, decision 7: a module file deleted or replaced while recording can
 * never be proven at its path again, so its frames are named now, from the
 * image the recorder holds open, and stored in the spool.  Only at the end,
 * only for such files: the check is one stat(2) per module file.
 */
void sp_recorder_store_replaced_images(struct sp_recorder *r)
{
	size_t n = 0;
	for (size_t i = 0; i < r->procs.n; i++)
		for (size_t j = 0; j < r->procs.all[i]->nmods; j++) {
			const struct sp_proc_module *pm = &r->procs.all[i]->mods[j];
			if (pm->file && sp_modfile_replaced(pm->file) && pm->module_id >= n)
				n = (size_t)pm->module_id + 1;
		}
	int *fds = n ? malloc(n * sizeof(*fds)) : NULL;
	if (!fds)
		return;
	for (size_t i = 0; i < n; i++)
		fds[i] = -1;
	for (size_t i = 0; i < r->procs.n; i++)
		for (size_t j = 0; j < r->procs.all[i]->nmods; j++) {
			const struct sp_proc_module *pm = &r->procs.all[i]->mods[j];
			if (pm->file && pm->module_id < n && sp_modfile_replaced(pm->file))
				fds[pm->module_id] = pm->file->fd;
		}
	uint64_t frames;
	/* Best effort: without these records the frames say their file is not the recorded one. */
	sp_symbolize_images(r->spool, fds, n, &frames);
	free(fds);
}
