/* SPDX-License-Identifier: MIT */
/* The sample path: one PERF_RECORD_SAMPLE checked, unwound, spliced, held or interned, written. */
#include "record/record.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A stack of both halves and its marker must stay within what readers accept. */
_Static_assert(2 * SP_RECORD_MAX_FRAMES + 1 <= SP_SPOOL_MAX_DEPTH,
	       "stacks deeper than the spool allows");

/* What one sample's stack came to; the steps of sp_recorder_on_sample fill it in turn. */
struct sample_stack {
	const uint64_t *user; /* the kernel's user frame-pointer chain */
	size_t nuser;
	size_t nk;            /* kernel frames in scratch.kpcs */
	size_t n;             /* user frames in scratch.pcs */
	size_t unproven;
	uint32_t fp_steps;
	unsigned stop;
	struct sp_regs regs;
	bool have_regs;
	const struct sp_proc_module *exec_pm; /* set: taken inside an exec, in this old module */
	bool rooted;
	bool hold;            /* perhaps inside an exec still to come: held */
	size_t nkey;          /* the stack-cache key in scratch.key */
	uint64_t key_hash;
};

/* The frame of pc in module m (NULL: no module). */
static uint32_t intern_user_frame(struct sp_recorder *r, const struct sp_proc_module *m,
				  uint64_t pc)
{
	struct sp_frame f = {.module_id = SP_NO_MODULE, .mode = SP_FRAME_USER, .abs_ip = pc};
	uint32_t id = 0;
	if (m) {
		f.module_id = m->module_id;
		f.rel_ip = pc - m->start + m->file_offset;
	}
	sp_recorder_note_write(r, sp_spool_writer_intern_frame(r->spool, &f, &id));
	return id;
}

/*
 * Attached without a stop, a thread started while its process's threads
 * were being listed can be sampled twice: by the event it inherited from
 * the thread that made it and by the one opened for it.  The stream that
 * samples a thread first keeps it; false for a sample of the other.
 */
static bool sampled_once(struct sp_recorder *r, const struct sp_perf_sample *s)
{
	uint32_t origin, kept;
	if (!s->has_id || !sp_map_get(&r->events.id_tid, s->id, &origin))
		return true;
	if (sp_map_get(&r->sample_origin, s->tid, &kept) && kept != SP_NO_ORIGIN)
		return kept == origin;
	/* Out of memory: both streams stay, as without ids. */
	sp_map_put(&r->sample_origin, s->tid, origin);
	return true;
}

/* Append one sample of (pid, tid) with stack_id at time; the thread is interned and named. */
static void append_sample(struct sp_recorder *r, int32_t pid, int32_t tid, uint32_t stack_id,
			  uint64_t time, uint64_t period)
{
	uint32_t thread = 0;
	int err = sp_recorder_intern_thread(r, pid, tid, &thread);
	err = err ? err : sp_spool_writer_append_weighted_sample(r->spool, thread, stack_id, time,
								  period);
	sp_recorder_note_write(r, err);
	if (!err)
		r->summary.samples++;
}

/* Their counts were taken as cut; an exec moves them. */
void sp_recorder_release_held(struct sp_recorder *r, int32_t pid, int32_t tid, bool exec)
{
	size_t kept = 0;
	uint64_t exec_pc = 0;
	for (size_t i = 0; exec && i < r->held.n; i++)
		if (r->held.s[i].pid == pid)
			exec_pc = r->held.s[i].pc;
	for (size_t i = 0; i < r->held.n; i++) {
		struct sp_held_sample h = r->held.s[i];
		if ((pid >= 0 && h.pid != pid) || (tid >= 0 && h.tid != tid)) {
			r->held.s[kept++] = h;
			continue;
		}
		bool in_exec = exec && h.pc == exec_pc;
		if (in_exec) {
			struct sp_summary *sum = &r->summary;
			sum->stop_reasons[SP_STOP_STACK_EXHAUSTED]--;
			sum->stop_reasons[SP_STOP_ROOT]++;
			sum->truncated_frame_markers--;
			sum->exec_samples++;
		}
		append_sample(r, h.pid, h.tid, in_exec ? h.whole : h.cut, h.time, h.period);
	}
	r->held.n = kept;
}

/*
 * Parse the sample and find its process (system-wide: discovered from /proc
 * at its first sample); NULL when the sample is skipped, counted why.
 */
static struct sp_process *admit_sample(struct sp_recorder *r, const void *rec, size_t len,
				       struct sp_perf_sample *s)
{
	struct sp_summary *sum = &r->summary;
	sum->sample_events++;
	if (sp_perf_parse_sample(&r->events.layout, rec, len, s)) {
		sum->error_stats[SP_ERR_RECORD_MALFORMED]++;
		return NULL;
	}
	if (!s->has_tid) {
		sum->missing_pid_samples++;
		return NULL;
	}
	if (s->tid == 0 && !r->system_wide) {
		sum->idle_tid_samples++;
		return NULL;
	}
	if (r->events.ids && !sampled_once(r, s)) {
		sum->sample_events--; /* a second stream's sample of the thread: not counted */
		return NULL;
	}
	if (!s->has_time)
		sum->missing_timestamp_samples++;
	struct sp_process *p = sp_process_table_find(&r->procs, (pid_t)s->pid);
	if (r->system_wide && (!p || !p->maps_known))
		p = sp_recorder_discover_process(r, s);
	if (!p) {
		sum->error_stats[SP_ERR_UNKNOWN_PROCESS]++;
		return NULL;
	}
	if (r->system_wide && !sp_thread_names_find(&r->names, s->pid, s->tid) &&
	    !sp_thread_names_discover(&r->names, s->pid, s->tid)) {
		/* gone: the name its process had at the start (or its parent, forked since) */
		const char *comm = sp_start_snapshot_comm(r->snapshot, (pid_t)s->pid);
		if (!comm && p->ppid)
			comm = sp_start_snapshot_comm(r->snapshot, p->ppid);
		/* remembered even when unknown: /proc is not asked again at each sample */
		sp_thread_names_remember(&r->names, s->pid, s->tid, comm ? comm : "", false);
	}
	if (p->maps_lost)
		sum->unread_samples++;
	if (p->perf_map_wanted)
		sp_recorder_keep_perf_map(r, p, s->time);
	return p;
}

/*
 * The modules the last unwinds went through, kept while they were p's and
 * its module set is the same (sp_process.gen, unique across processes): its
 * modules neither moved nor changed since.
 */
static struct sp_unwind_seen *seen_in(struct sp_recorder *r, const struct sp_process *p)
{
	if (r->seen_gen != p->gen) {
		memset(&r->seen, 0, sizeof(r->seen));
		r->seen_gen = p->gen;
	}
	return &r->seen;
}

/*
 * The thread's hint (struct sp_stack_hint), its slots in this stack copy
 * prefetched, for the unwinder to refill.  Two lines a frame: the return
 * address's, and the one below it where a frame saves up to six registers.
 */
static struct sp_stack_hint *prefetch_stack(struct sp_recorder *r, uint32_t tid,
					    const struct sp_stack_mem *mem)
{
	struct sp_stack_hint *h = &r->stack_hints[tid % SP_STACK_HINTS];

	if (h->tid != (int32_t)tid) {
		h->tid = (int32_t)tid;
		h->n = 0;
	}
	for (uint32_t i = 0; i < h->n; i++) {
		uint64_t off = h->cfa[i] - 8 - mem->base;

		if (off < mem->len)
			__builtin_prefetch(mem->data + off);
		off -= 48;
		if (off < mem->len)
			__builtin_prefetch(mem->data + off);
	}
	return h;
}

/* The user stack: one frame inside an exec, DWARF from the registers, or what is known without. */
static void unwind_user(struct sp_recorder *r, struct sp_process *p, const struct sp_perf_sample *s,
			const void *rec, struct sample_stack *st)
{
	struct sp_summary *sum = &r->summary;
	st->stop = SP_STOP_NO_REGS;
	st->have_regs = s->regs_abi && s->regs;
	if (st->have_regs)
		sp_regs_from_map(&r->events.layout.regs_map, s->regs, &st->regs);
	/*
	 * Sampled while execve replaced the image: the registers still hold the
	 * old image's pc while the address space is already the new one's.  The
	 * stack is that one frame of the program that called execve (its
	 * callers went with the old address space): complete, never an unknown
	 * address.  Known once the exec's COMM record has come: the old modules
	 * are p->pre_exec and the pc lies in none of the new ones.  A sample
	 * taken after the address space changed but before that record has
	 * the same old pc and an empty stack copy: it is held (settle_held).
	 */
	uint64_t upc = (st->regs.valid & (1u << SP_DW_RIP)) ? st->regs.regs[SP_DW_RIP] : s->ip;
	if (p->pre_exec) {
		if (sp_process_find(p, upc))
			sp_process_end_exec(p);
		else
			st->exec_pm = sp_process_find_pre_exec(p, upc);
	}
	if (st->exec_pm) {
		r->scratch.pcs[0] = upc;
		st->n = st->unproven = 1;
		st->stop = SP_STOP_ROOT;
		sum->exec_samples++;
	} else if (st->have_regs) {
		if (!s->stack_size)
			sum->error_stats[SP_ERR_NO_STACK_COPY]++;
		struct sp_stack_mem mem = {
			.base = st->regs.regs[SP_DW_RSP],
			.data = s->stack,
			.len = (size_t)s->dyn_size,
		};
		uint64_t jd_rows = sp_jit_code_jitdump_rows(p->jit);
		struct sp_stack_hint *hint = prefetch_stack(r, s->tid, &mem);
		r->unwind_stats.cfas = hint->cfa;
		sp_unwind_seen(&st->regs, &mem, sp_recorder_find_module, p, seen_in(r, p),
			       r->scratch.pcs, SP_RECORD_MAX_FRAMES, &st->n, &st->stop,
			       &r->unwind_stats);
		hint->n = (uint32_t)r->unwind_stats.ncfas;
		sum->code_frames = r->unwind_stats.code_frames;
		sum->jitdump_frames += sp_jit_code_jitdump_rows(p->jit) - jd_rows;
		st->unproven = r->unwind_stats.unproven;
		st->fp_steps = r->unwind_stats.fp_steps;
	} else if (r->system_wide && !s->regs_abi &&
		   (((const struct perf_event_header *)rec)->misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
			   PERF_RECORD_MISC_KERNEL) {
		/*
		 * A kernel thread or an idle CPU: no user side at all.  Its
		 * kernel frames (-k) are the whole stack; without them, the
		 * sampled kernel function alone.
		 */
		if (st->nk == 0) {
			r->scratch.kpcs[0] = s->ip;
			st->nk = 1;
		}
		st->stop = SP_STOP_ROOT;
		sum->kernel_task_samples++;
	} else if (s->ip && st->nk == 0) {
		/* Without registers only the sampled IP is known. */
		r->scratch.pcs[0] = s->ip;
		st->n = 1;
		st->unproven = 1;
	}
}

/* Where DWARF stopped early, the kernel's chain continues it (or the stack is cut); counted. */
static void splice_and_count(struct sp_recorder *r, struct sp_process *p,
			     const struct sp_perf_sample *s, struct sample_stack *st)
{
	struct sp_summary *sum = &r->summary;
	bool spliced = false;
	st->rooted = st->stop == SP_STOP_ROOT;
	if (st->stop == SP_STOP_STACK_EXHAUSTED || st->stop == SP_STOP_NO_UNWIND_INFO) {
		st->n = sp_callchain_splice(r->scratch.pcs, st->n, p, st->user, st->nuser, &spliced,
					    &sum->ignored_user_callchain_frames);
		/*
		 * Frame-pointer steps the copy's end left unproven stand when the
		 * kernel's chain agreed with every frame up to the copy's end,
		 * including the DWARF frames after them.
		 */
		if (!spliced && st->unproven < st->n) {
			st->n = st->unproven;
			st->stop = SP_STOP_NO_UNWIND_INFO;
			st->fp_steps = 0;
		}
		sum->spliced_stacks += spliced;
		st->rooted = spliced &&
			     sp_root_chains_complete(&r->root_chains, s->tid, r->scratch.pcs, &st->n);
	} else if (!st->rooted) {
		sum->ignored_user_callchain_frames += st->nuser;
	}
	sum->stop_reasons[st->stop < SP_STOP_COUNT_ ? st->stop : SP_STOP_BAD_RULE]++;
	sum->fp_frames += st->fp_steps;
	if (st->stop == SP_STOP_ROOT)
		sp_root_chains_remember(&r->root_chains, s->tid, r->scratch.pcs, st->n);
	if (!st->rooted && st->stop == SP_STOP_STACK_EXHAUSTED && s->stack_size &&
	    s->dyn_size >= s->stack_size)
		sum->stacks_cut_by_copy++;
}

/*
 * Nothing copied at all, in a system call (the entry code keeps rax at
 * -ENOSYS until the call returns; a forked child's first steps have 0):
 * perhaps inside an exec whose record is to come (struct sp_held_sample).
 * Any other sample of the thread settles its held ones as cut.
 */
static void settle_held(struct sp_recorder *r, const struct sp_perf_sample *s,
			struct sample_stack *st)
{
	st->hold = st->have_regs && !st->exec_pm && s->stack_size && !s->dyn_size && st->n == 1 &&
		   !st->rooted && st->stop == SP_STOP_STACK_EXHAUSTED &&
		   (st->regs.valid & (1u << SP_DW_RAX)) && st->regs.regs[SP_DW_RAX] == (uint64_t)-ENOSYS;
	if (!st->hold && r->held.n)
		sp_recorder_release_held(r, -1, (int32_t)s->tid, false);
	if (st->hold && r->held.n == SP_HELD_MAX)
		sp_recorder_release_held(r, r->held.s[0].pid, r->held.s[0].tid, false);
}

/* The stack-cache key: process, its module generation, the end, kernel and user frames. */
static void make_key(struct sp_recorder *r, const struct sp_process *p,
		     const struct sp_perf_sample *s, struct sample_stack *st)
{
	uint64_t *key = r->scratch.key;
	size_t nkey = 0;
	key[nkey++] = (uint64_t)(uint32_t)s->pid;
	key[nkey++] = p->gen;
	key[nkey++] = st->rooted ? UINT64_MAX : st->stop;
	key[nkey++] = st->nk;
	memcpy(key + nkey, r->scratch.kpcs, st->nk * sizeof(*r->scratch.kpcs));
	nkey += st->nk;
	memcpy(key + nkey, r->scratch.pcs, st->n * sizeof(*r->scratch.pcs));
	nkey += st->n;
	st->nkey = nkey;
	st->key_hash = sp_stack_cache_hash(key, nkey);
}

/*
 * Intern the frames, leaf first: kernel frames, then user frames, then the
 * truncation marker; then the stack.  A held sample is kept (true: nothing
 * to append now) with the same frames without the marker as its whole stack.
 */
static bool intern_stack(struct sp_recorder *r, struct sp_process *p,
			 const struct sp_perf_sample *s, const struct sample_stack *st,
			 uint32_t *stack_id)
{
	struct sp_summary *sum = &r->summary;
	uint32_t *ids = r->scratch.frame_ids;
	size_t nf = 0;
	for (size_t i = 0; i < st->nk; i++) {
		struct sp_frame f = {.module_id = SP_NO_MODULE, .mode = SP_FRAME_KERNEL,
				     .abs_ip = r->scratch.kpcs[i]};
		sp_recorder_note_write(r, sp_spool_writer_intern_frame(r->spool, &f, &ids[nf++]));
	}
	for (size_t i = 0; i < st->n; i++) {
		uint64_t pc = r->scratch.pcs[i];
		ids[nf++] = intern_user_frame(r, st->exec_pm ? st->exec_pm : sp_process_find(p, pc), pc);
	}
	if (nf == 0)
		sum->empty_stack_samples++;
	if (!st->rooted && nf > 0) {
		struct sp_frame marker = {.module_id = SP_NO_MODULE, .mode = SP_FRAME_TRUNCATED,
					  .abs_ip = st->stop};
		sp_recorder_note_write(r, sp_spool_writer_intern_frame(r->spool, &marker, &ids[nf++]));
		sum->truncated_frame_markers++;
	}
	int err = sp_spool_writer_intern_stack(r->spool, ids, nf, stack_id);
	if (!err && !r->write_error && !st->hold)
		sp_stack_cache_put(&r->stacks, r->scratch.key, st->nkey, st->key_hash, *stack_id);
	sp_recorder_note_write(r, err);
	if (!st->hold || err)
		return false;
	uint32_t whole = 0;
	err = sp_spool_writer_intern_stack(r->spool, ids, nf - 1, &whole);
	sp_recorder_note_write(r, err);
	if (err)
		return false;
	r->held.s[r->held.n++] = (struct sp_held_sample){
		.pid = (int32_t)s->pid, .tid = (int32_t)s->tid, .time = s->time, .period = s->period,
		.pc = r->scratch.pcs[0], .cut = *stack_id, .whole = whole};
	return true;
}

uint32_t sp_recorder_stack_from_regs(struct sp_recorder *r, int32_t pid, int32_t tid,
				     const struct sp_regs *regs, const uint8_t *stack, size_t len)
{
	struct sp_process *p = sp_process_table_find(&r->procs, (pid_t)pid);
	if (!p)
		return 0;
	struct sp_perf_sample s = {.ip = regs->regs[SP_DW_RIP], .pid = (uint32_t)pid,
				   .tid = (uint32_t)tid};
	struct sample_stack st = {.have_regs = true, .regs = *regs};
	struct sp_stack_mem mem = {.base = regs->regs[SP_DW_RSP], .data = stack, .len = len};
	r->unwind_stats.cfas = NULL; /* a stack read from the thread: not a sample's hint */
	sp_unwind_seen(&st.regs, &mem, sp_recorder_find_module, p, seen_in(r, p), r->scratch.pcs,
		       SP_RECORD_MAX_FRAMES, &st.n, &st.stop, &r->unwind_stats);
	/* No kernel chain to agree with frame-pointer steps past the copy: they go. */
	if (st.stop != SP_STOP_ROOT && r->unwind_stats.unproven < st.n)
		st.n = r->unwind_stats.unproven;
	st.rooted = st.stop == SP_STOP_ROOT;
	make_key(r, p, &s, &st);
	uint32_t stack_id = 0;
	/* The summary's stack counts are the samples': kept as they were. */
	uint64_t markers = r->summary.truncated_frame_markers, empty = r->summary.empty_stack_samples;
	if (!sp_stack_cache_find(&r->stacks, r->scratch.key, st.nkey, st.key_hash, &stack_id))
		intern_stack(r, p, &s, &st, &stack_id);
	r->summary.truncated_frame_markers = markers;
	r->summary.empty_stack_samples = empty;
	return stack_id;
}

void sp_recorder_on_sample(struct sp_recorder *r, const void *rec, size_t len)
{
	struct sp_perf_sample s;
	struct sample_stack st = {0};
	struct sp_process *p = admit_sample(r, rec, len, &s);
	if (!p)
		return;
	st.nk = sp_callchain_split(&s, r->scratch.kpcs, SP_RECORD_MAX_FRAMES, &st.user, &st.nuser);
	if (!r->events.kernel_enabled)
		st.nk = 0;
	unwind_user(r, p, &s, rec, &st);
	splice_and_count(r, p, &s, &st);
	settle_held(r, &s, &st);

	/* Seen before in this process with these modules: its stack id, frames interned. */
	make_key(r, p, &s, &st);
	uint32_t stack_id = 0;
	/* --off-cpu: a context-switches sample's stack is the one its thread leaves the CPU with. */
	bool switch_out = s.has_id && r->events.off_cpu && sp_map_get(&r->events.cs_ids, s.id, &(uint32_t){0});
	if (switch_out)
		st.hold = false;
	if (!st.hold && sp_stack_cache_find(&r->stacks, r->scratch.key, st.nkey, st.key_hash,
					    &stack_id)) {
		if (!st.rooted && st.nk + st.n > 0)
			r->summary.truncated_frame_markers++;
		if (!st.nk && !st.n)
			r->summary.empty_stack_samples++;
	} else if (intern_stack(r, p, &s, &st, &stack_id)) {
		return; /* held */
	}
	if (switch_out)
		sp_offcpu_on_stack(r, (int32_t)s.pid, (int32_t)s.tid, stack_id, s.time);
	else
		append_sample(r, (int32_t)s.pid, (int32_t)s.tid, stack_id, s.time, s.period);
	if (!switch_out && r->events.off_cpu && r->events.attr.exclude_kernel)
		sp_offcpu_on_cpu_sample(r, (int32_t)s.pid, (int32_t)s.tid, stack_id);
}
