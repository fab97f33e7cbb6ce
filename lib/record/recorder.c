/* SPDX-License-Identifier: MIT */
/*
 * The recorder's dispatch: each record drained from the rings goes to its
 * handler (samples to sample.c, mappings to proc_maps.c), then the timed
 * flush and eviction; finishing and freeing a recording.
 */
#include "record/record.h"
#include "spool/spool.h"
#include "symbols/symbols.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

static void on_mmap2(struct sp_recorder *r, const void *rec, size_t len)
{
	struct sp_perf_mmap2 m;
	struct sp_perf_sample_id id;
	if (sp_perf_parse_mmap2(rec, len, &m)) {
		r->summary.error_stats[SP_ERR_RECORD_MALFORMED]++;
		return;
	}
	if (!(m.prot & PROT_EXEC) || !m.len)
		return;
	uint64_t time = 0;
	if (!sp_perf_parse_sample_id(&r->events.layout, rec, len, &id))
		time = id.time;
	struct sp_process *p = sp_process_table_find(&r->procs, (pid_t)m.pid);
	if (!p)
		p = sp_process_table_add(&r->procs, (pid_t)m.pid);
	if (p)
		sp_recorder_add_mapping(r, p, m.addr, m.addr + m.len, m.pgoff, makedev(m.maj, m.min), m.ino,
			    m.filename, time);
}

static void on_comm(struct sp_recorder *r, const void *rec, size_t len)
{
	struct sp_perf_comm c;
	struct sp_perf_sample_id id;
	uint32_t thread;
	if (sp_perf_parse_comm(rec, len, &c)) {
		r->summary.error_stats[SP_ERR_RECORD_MALFORMED]++;
		return;
	}
	uint64_t time = 0;
	if (!sp_perf_parse_sample_id(&r->events.layout, rec, len, &id))
		time = id.time;
	if (c.exec) {
		/* Samples of pid held for want of a stack were taken inside this exec. */
		if (r->held.n)
			sp_recorder_release_held(r, (int32_t)c.pid, -1, true);
		/* An exec replaces the whole image: the old modules are gone. */
		struct sp_process *p = sp_process_table_add(&r->procs, (pid_t)c.pid);
		if (p) {
			sp_process_begin_exec(p);
			struct timespec real;
			if (!clock_gettime(CLOCK_REALTIME, &real))
				p->exec_seen_us = (uint64_t)real.tv_sec * 1000000u +
						  (uint64_t)real.tv_nsec / 1000u;
			p->maps_known = true; /* the new image's mappings follow */
			sp_recorder_mark_python(r, p, false, time);
			sp_recorder_note_owner(r, p, NULL, time);
		}
		sp_root_chains_forget(&r->root_chains, c.tid);
	}
	int err = sp_spool_writer_intern_thread(r->spool, (int32_t)c.pid, (int32_t)c.tid, &thread);
	err = err ? err : sp_spool_writer_set_thread_name(r->spool, thread, c.comm);
	sp_recorder_note_write(r, err);
	sp_thread_names_remember(&r->names, c.pid, c.tid, c.comm, true);
}

static void on_task(struct sp_recorder *r, const void *rec, size_t len, bool fork)
{
	struct sp_perf_task t;
	if (sp_perf_parse_task(rec, len, &t)) {
		r->summary.error_stats[SP_ERR_RECORD_MALFORMED]++;
		return;
	}
	sp_offcpu_on_task(r, (int32_t)t.pid, (int32_t)t.tid, fork);
	/* A tid that starts or ends is a new thread the next time it is sampled. */
	uint32_t kept;
	if (r->events.ids && sp_map_get(&r->sample_origin, t.tid, &kept))
		sp_map_put(&r->sample_origin, t.tid, SP_NO_ORIGIN);
	struct sp_task_comm *parent_comm = fork ? sp_thread_names_find(&r->names, t.ppid, t.ptid) : NULL;
	if (parent_comm && !sp_thread_names_find(&r->names, t.pid, t.tid)) {
		char name[sizeof(parent_comm->name)];
		memcpy(name, parent_comm->name, sizeof(name));
		sp_thread_names_remember(&r->names, t.pid, t.tid, name, false);
	}
	if (fork && t.pid != t.ppid) {
		/* A forked child starts with a copy of its parent's modules. */
		struct sp_process *parent = sp_process_table_find(&r->procs, (pid_t)t.ppid);
		struct sp_process *child = sp_process_table_add(&r->procs, (pid_t)t.pid);
		/* A new process under the pid: what the start's list says of it is another's. */
		sp_start_snapshot_forget(r->snapshot, (pid_t)t.pid);
		if (child)
			child->ppid = (int32_t)t.ppid;
		if (child && parent && parent != child) {
			sp_process_copy_modules(child, parent);
			child->maps_known = parent->maps_known;
		}
		if (child)
			sp_recorder_note_owner(r, child, parent != child ? parent : NULL, t.time);
	} else if (!fork) {
		if (r->held.n)
			sp_recorder_release_held(r, -1, (int32_t)t.tid, false);
		sp_root_chains_forget(&r->root_chains, t.tid);
		struct sp_process *p = t.pid == t.tid ? sp_process_table_find(&r->procs, (pid_t)t.pid) : NULL;
		if (p) {
			p->exited = true;
			p->exited_ns = sp_monotonic_ns();
			sp_recorder_note_name_hint(r, p);
		}
	}
}

static void on_lost(struct sp_recorder *r, const void *rec, size_t len)
{
	struct sp_perf_lost l;
	struct sp_perf_sample_id id;
	if (sp_perf_parse_lost(rec, len, &l)) {
		r->summary.error_stats[SP_ERR_RECORD_MALFORMED]++;
		return;
	}
	uint64_t time = 0;
	if (!sp_perf_parse_sample_id(&r->events.layout, rec, len, &id))
		time = id.time;
	r->summary.lost_events += l.lost;
	sp_offcpu_on_lost(r);
	sp_recorder_note_write(r, sp_spool_writer_append_lost(r->spool, l.lost, time));
}

static void on_record(void *ctx, const struct perf_event_header *h, size_t len)
{
	struct sp_recorder *r = ctx;
	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		sp_recorder_on_sample(r, h, len);
		break;
	case PERF_RECORD_MMAP2:
		on_mmap2(r, h, len);
		break;
	case PERF_RECORD_COMM:
		on_comm(r, h, len);
		break;
	case PERF_RECORD_FORK:
		on_task(r, h, len, true);
		break;
	case PERF_RECORD_EXIT:
		on_task(r, h, len, false);
		break;
	case PERF_RECORD_LOST:
		on_lost(r, h, len);
		break;
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
		sp_offcpu_on_switch(r, h, len);
		break;
	default:
		/* THROTTLE, UNTHROTTLE and friends carry nothing we keep. */
		break;
	}
}
/*
 * A side-band mapping record (struct sp_events): open the file of a new
 * executable mapping now, while its process lives, through its
 * /proc/PID/map_files link if the path no longer holds it.  The main
 * stream's record of the same mapping finds it open (by device and inode),
 * even when the process has exited and the file is deleted by then.
 */
static void on_side_record(void *ctx, const struct perf_event_header *h, size_t len)
{
	struct sp_recorder *r = ctx;
	struct sp_perf_mmap2 m;
	if (h->type != PERF_RECORD_MMAP2 || sp_perf_parse_mmap2(h, len, &m) ||
	    !(m.prot & PROT_EXEC) || !m.len || m.filename[0] != '/' || sp_anon_path(m.filename) ||
	    sp_jitdump_is_path(m.filename))
		return;
	sp_modfile_get(&r->files, (pid_t)m.pid, m.addr, m.addr + m.len, makedev(m.maj, m.min),
		       m.ino, m.filename);
}
bool sp_recorder_has_pending_events(const struct sp_recorder *r)
{
	return sp_events_pending(&r->events);
}

/*
 * --off-cpu where kernel sampling is denied: the stacks of the threads
 * blocked now, read from them (docs/DESIGN.md, decision 12).
 */
static void read_blocked(struct sp_recorder *r)
{
	if (!r->events.off_cpu || !r->events.attr.exclude_kernel)
		return;
	if (!r->offcpu.stack_buf) {
		r->offcpu.stack_len = r->events.attr.sample_stack_user;
		r->offcpu.stack_buf = malloc(r->offcpu.stack_len ? r->offcpu.stack_len : 1);
		if (!r->offcpu.stack_buf)
			return;
	}
	int32_t pid, tid;
	for (size_t i = 0; sp_offcpu_next_blocked(r, &i, &pid, &tid); i++) {
		uint64_t sp, pc;
		if (!sp_offcpu_blocked_regs(pid, tid, &sp, &pc))
			continue;
		size_t len = sp_target_read(pid, sp, r->offcpu.stack_buf, r->offcpu.stack_len);
		uint64_t done = sp_monotonic_ns();
		struct sp_regs regs = {.valid = 1u << SP_DW_RIP | 1u << SP_DW_RSP};
		regs.regs[SP_DW_RIP] = pc;
		regs.regs[SP_DW_RSP] = sp;
		sp_offcpu_read_stack(r, i, sp_recorder_stack_from_regs(r, pid, tid, &regs,
								       r->offcpu.stack_buf, len),
				     done);
	}
}

int sp_recorder_wait(struct sp_recorder *r, int timeout_ms)
{
	/* Blocked threads' stacks are read after each drain: the shorter the wait, the more are caught. */
	if (r->events.off_cpu && r->events.attr.exclude_kernel &&
	    (timeout_ms < 0 || timeout_ms > SP_OFFCPU_READ_MS))
		timeout_ms = SP_OFFCPU_READ_MS;
	return sp_events_wait(&r->events, timeout_ms);
}
int sp_recorder_consume_available(struct sp_recorder *r)
{
	uint64_t corrupt = 0;
	sp_events_drain_side(&r->events, on_side_record, r, &corrupt);
	int err = sp_events_drain(&r->events, on_record, r, &corrupt);
	r->summary.error_stats[SP_ERR_RECORD_MALFORMED] += corrupt;
	if (err)
		return err;
	read_blocked(r);
	/*
	 * The writer flushes by size; a slow recording would keep seconds of
	 * samples in memory, lost if the recorder is killed.  Flush at least
	 * every 200 ms (one write(2), nothing next to the drain's cost) so a
	 * SIGKILL costs at most about that much.
	 */
	uint64_t now = sp_monotonic_ns();
	if (now - r->last_flush_ns >= 200000000ULL) {
		r->last_flush_ns = now;
		sp_recorder_note_write(r, sp_spool_writer_flush(r->spool));
	}
	sp_recorder_evict_gone(r, now);
	/* a segment ends after a whole drain: its samples up to now are in it */
	bool rotated = false;
	if (r->segments && !r->write_error && sp_segments_due(r->segments, r->spool, now)) {
		struct sp_summary total;
		sp_recorder_summary(r, &total);
		sp_recorder_note_write(r, sp_segments_rotate(r->segments, r->spool, &total, now));
		rotated = true;
	}
	/* between files: a new segment holds no record yet, a flight recorder only its window */
	if ((rotated || r->rolling) && !r->write_error)
		sp_recorder_compact(r);
	if (!err && r->write_error)
		return r->write_error;
	return 0;
}

int sp_recorder_flush(struct sp_recorder *r)
{
	if (!r || r->finished)
		return r ? 0 : -SP_E_BAD_ARG;
	r->last_flush_ns = sp_monotonic_ns();
	sp_recorder_note_write(r, sp_spool_writer_flush(r->spool));
	return r->write_error;
}
void sp_recorder_disable(struct sp_recorder *r)
{
	sp_events_disable(&r->events);
}

void sp_recorder_summary(const struct sp_recorder *r, struct sp_summary *out)
{
	*out = r->summary;
	out->error_stats[SP_ERR_MODULE_UNREADABLE] = r->files.unreadable;
}

void sp_recorder_offcpu_counts(const struct sp_recorder *r, uint64_t *intervals,
			       uint64_t *incomplete)
{
	*intervals = r->summary_offcpu.intervals;
	*incomplete = r->summary_offcpu.incomplete;
}

uint64_t sp_recorder_perf_maps_cut(const struct sp_recorder *r)
{
	(void)r;
	return sp_jit_perf_maps_cut();
}

uint64_t sp_recorder_sections_not_inflated(const struct sp_recorder *r, const char **first)
{
	uint64_t n = 0;
	if (first)
		*first = NULL;
	for (size_t i = 0; i < r->files.nfiles; i++) {
		const struct sp_modfile *f = r->files.files[i];
		if (f->inflate.over_limit && first && !*first)
			*first = f->path;
		n += f->inflate.over_limit;
	}
	return n;
}

uint64_t sp_recorder_sections_untrusted(const struct sp_recorder *r, const char **first,
					const char **why)
{
	uint64_t n = 0;
	const struct sp_modfile *found = NULL;
	for (size_t i = 0; i < r->files.nfiles; i++) {
		const struct sp_modfile *f = r->files.files[i];
		if (f->inflate.over_untrusted && !found)
			found = f;
		n += f->inflate.over_untrusted;
	}
	if (first)
		*first = found ? found->path : NULL;
	if (why)
		*why = found ? found->inflate.untrusted_why : NULL;
	return n;
}

bool sp_recorder_counts_kernel_time(const struct sp_recorder *r)
{
	return !r->events.kernel_denied;
}

enum sp_event_source sp_recorder_event_source(const struct sp_recorder *r)
{
	return r->events.source;
}

/* The window into a new snapshot file; keep_open leaves it to the finish. */
static int snapshot(struct sp_recorder *r, bool keep_open, struct sp_summary *window)
{
	struct timespec real;
	clock_gettime(CLOCK_REALTIME, &real);
	uint64_t now_us = (uint64_t)real.tv_sec * 1000000 + (uint64_t)real.tv_nsec / 1000;
	int fd = sp_snapshot_create(r->spool_path, now_us, r->system_wide, r->snapshot_path,
				    sizeof(r->snapshot_path));
	if (fd < 0) {
		r->snapshot_path[0] = '\0';
		return fd;
	}
	return sp_spool_writer_snapshot(r->spool, fd, sp_monotonic_ns(), now_us, keep_open, window);
}

int sp_recorder_snapshot(struct sp_recorder *r, char *path, size_t size, struct sp_summary *window)
{
	struct sp_summary w;
	if (!r || !r->rolling || r->finished)
		return -SP_E_BAD_ARG;
	int err = snapshot(r, false, window ? window : &w);
	if (!err && path)
		snprintf(path, size, "%s", r->snapshot_path);
	return err;
}

const char *sp_recorder_snapshot_path(const struct sp_recorder *r)
{
	return r->snapshot_path;
}

void sp_recorder_window_memory(const struct sp_recorder *r, uint64_t *window_bytes,
			       uint64_t *window_samples, uint64_t *dict_bytes)
{
	*window_bytes = *window_samples = *dict_bytes = 0;
	if (r->rolling && r->spool)
		sp_spool_writer_memory(r->spool, window_bytes, window_samples, dict_bytes);
}

int sp_recorder_finish(struct sp_recorder *r, struct sp_summary *out)
{
	if (r->finished)
		return -SP_E_BAD_ARG;
	sp_recorder_disable(r);
	int err = sp_recorder_consume_available(r);
	sp_recorder_release_held(r, -1, -1, false);
	if (r->events.off_cpu)
		sp_offcpu_finish(r, sp_monotonic_ns());
	r->finished = true;
	for (size_t i = 0; i < r->procs.n; i++)
		sp_recorder_note_name_hint(r, r->procs.all[i]);
	/*
	 * Naming replaced images may read long (a debug link's CRC reads the
	 * whole candidate): SIGINT and SIGTERM are held meanwhile, the CRC gives
	 * up as soon as one is pending (debugfile.c), and the caller's handler
	 * runs when the mask is restored.
	 */
	sigset_t stop, old;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	bool held = !pthread_sigmask(SIG_BLOCK, &stop, &old);
	struct sp_summary window;
	int serr = 0;
	if (r->rolling)
		serr = snapshot(r, true, &window);
	if (!serr)
		sp_recorder_store_replaced_images(r);
	if (!serr && r->kept.n)
		(void)sp_symbolize_perf_maps(r->spool, r->kept.pids, r->kept.fds, r->kept.n,
					     &r->summary.container_perf_map_frames);
	if (held)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	r->summary.error_stats[SP_ERR_MODULE_UNREADABLE] = r->files.unreadable;
	int ferr = serr ? serr
		   : r->segments ? sp_segments_finish(r->segments, r->spool, &r->summary)
		   : sp_spool_writer_finish(r->spool, r->rolling ? &window : &r->summary);
	if (out)
		*out = r->summary;
	return err ? err : ferr;
}

void sp_recorder_free(struct sp_recorder *r)
{
	if (!r)
		return;
	/* a tail reads on without images */
	if (r->tail)
		sp_tail_set_images(r->tail, NULL, NULL, NULL);
	free(r->spool_path);
	sp_events_release(&r->events);
	sp_spool_writer_free(r->spool);
	sp_process_table_release(&r->procs);
	sp_start_snapshot_free(r->snapshot);
	sp_modfile_cache_release(&r->files);
	for (size_t i = 0; i < r->roots.n; i++)
		if (r->roots.pidfds[i] >= 0)
			close(r->roots.pidfds[i]);
	free(r->roots.pids);
	free(r->roots.pidfds);
	sp_map_release(&r->opened_tids);
	sp_map_release(&r->sample_origin);
	sp_offcpu_release(&r->offcpu);
	sp_root_chains_release(&r->root_chains);
	sp_thread_names_release(&r->names);
	sp_stack_cache_release(&r->stacks);
	for (size_t i = 0; i < r->kept.n; i++)
		close(r->kept.fds[i]);
	free(r->kept.pids);
	free(r->kept.fds);
	free(r);
}
