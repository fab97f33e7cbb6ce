// SPDX-License-Identifier: MIT
/*
 * record --off-cpu: the intervals a thread spends off CPU, from the kernel's
 * switch records and, where kernel sampling is allowed, a context-switches
 * event sampling every switch-out for the stack (docs/DESIGN.md, decision 12).
 *
 * Per thread: a context-switches sample brings the stack it is leaving the
 * CPU with, the SWITCH-out record that follows it the time and the cause
 * (preempted while runnable, or gave the CPU up: blocked or sleeping), and
 * the next SWITCH-in ends the interval, which goes to the spool.  An
 * interval cut by the recording's start or end keeps only the time seen;
 * one whose switch-in or switch-out was lost keeps no time at all.  Nothing
 * is ever stretched to make totals balance.  Where kernel sampling is
 * denied, the stack of a thread still blocked after a drain is read from it
 * (sp_offcpu_next_blocked, recorder.c) and stands if its switch-in is later.
 */
#include "record/record.h"
#include "spool/spool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct sp_offcpu_slot {
	int32_t pid, tid;
	uint64_t out_ns;    /* the switch-out, when out */
	uint64_t stack_ns;  /* the stack's sample, when has_stack */
	uint32_t stack;     /* stack id at switch-out */
	bool out;           /* switched out, the switch-in not seen yet */
	bool has_stack;     /* a stack sampled since the last switch-in */
	bool preempted;
	bool seen;          /* some switch record of the thread came */
	bool born;          /* the thread started during the recording (a FORK record) */
	uint64_t lost_gen;  /* r->offcpu.lost_gen when the switch-out came */
	/* Without kernel sampling: a stack read while the thread was still off CPU (read_blocked). */
	bool proc_tried;    /* read (or tried) in this interval */
	uint32_t proc_stack;
	uint64_t proc_done_ns; /* when the reads ended: the stack is this interval's if it ended later */
	uint32_t proc_flag;    /* SP_OFFCPU_PROC_STACK, or SP_OFFCPU_SAMPLE_STACK */
	/* The stack of its last CPU sample since its last switch-in (no records lost since). */
	bool ran;
	uint32_t ran_stack;
	uint64_t ran_lost_gen;
};

static struct sp_offcpu_slot *slot_of(struct sp_offcpu_state *o, int32_t pid, int32_t tid)
{
	uint32_t i;
	if (sp_map_get(&o->by_tid, (uint32_t)tid, &i) && o->slots[i].pid == pid)
		return &o->slots[i];
	if (sp_map_get(&o->by_tid, (uint32_t)tid, &i)) { /* the tid was reused by another process */
		memset(&o->slots[i], 0, sizeof(o->slots[i]));
		o->slots[i].pid = pid;
		o->slots[i].tid = tid;
		return &o->slots[i];
	}
	if (sp_array_reserve((void **)&o->slots, &o->cap, o->n + 1, sizeof(*o->slots)) ||
	    sp_map_put(&o->by_tid, (uint32_t)tid, (uint32_t)o->n))
		return NULL;
	struct sp_offcpu_slot *s = &o->slots[o->n++];
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->tid = tid;
	return s;
}

static void emit(struct sp_recorder *r, const struct sp_offcpu_slot *s, uint64_t start,
		 uint64_t duration, uint32_t flags, uint32_t stack)
{
	struct sp_offcpu iv = {.start_ns = start, .duration_ns = duration, .stack_id = stack,
			       .flags = flags | (s->preempted ? SP_OFFCPU_PREEMPTED : 0)};
	if (!stack)
		iv.flags |= SP_OFFCPU_NO_STACK;
	int err = sp_recorder_intern_thread(r, s->pid, s->tid, &iv.thread);
	err = err ? err : sp_spool_writer_append_offcpu(r->spool, &iv);
	sp_recorder_note_write(r, err);
	if (err)
		return;
	r->summary_offcpu.intervals++;
	if (iv.flags & SP_OFFCPU_INCOMPLETE)
		r->summary_offcpu.incomplete++;
}

void sp_offcpu_on_stack(struct sp_recorder *r, int32_t pid, int32_t tid, uint32_t stack,
			uint64_t time)
{
	struct sp_offcpu_slot *s = slot_of(&r->offcpu, pid, tid);
	if (!s)
		return;
	s->stack = stack;
	s->stack_ns = time;
	s->has_stack = true;
}

void sp_offcpu_on_switch(struct sp_recorder *r, const struct perf_event_header *h, size_t len)
{
	struct sp_perf_sample_id id;
	if (sp_perf_parse_sample_id(&r->events.layout, h, len, &id) || !id.has_time) {
		r->summary.error_stats[SP_ERR_RECORD_MALFORMED]++;
		return;
	}
	if (id.pid == 0 || id.tid == 0)
		return; /* the idle task (system-wide) */
	struct sp_offcpu_slot *s = slot_of(&r->offcpu, (int32_t)id.pid, (int32_t)id.tid);
	if (!s)
		return;
	bool first = !s->seen;
	s->seen = true;
	if (h->misc & PERF_RECORD_MISC_SWITCH_OUT) {
		/* A switch-out while out: the switch-in between was lost. */
		if (s->out)
			emit(r, s, s->out_ns, 0, SP_OFFCPU_LOST, s->stack);
		s->out = true;
		s->out_ns = id.time;
		s->preempted = h->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT;
		s->lost_gen = r->offcpu.lost_gen;
		s->proc_tried = false;
		s->proc_stack = 0;
		if (!s->has_stack)
			s->stack = 0;
		/*
		 * Preempted, without a switch sample: the kernel saved no system-call
		 * registers for a runnable thread, but it was running the code its
		 * last CPU sample of this stretch on the CPU caught.
		 */
		if (s->preempted && !s->has_stack && s->ran && s->ran_lost_gen == r->offcpu.lost_gen) {
			s->proc_tried = true;
			s->proc_stack = s->ran_stack;
			s->proc_done_ns = 0;
			s->proc_flag = SP_OFFCPU_SAMPLE_STACK;
		}
		s->ran = false;
		return;
	}
	if (s->out) {
		/*
		 * Records lost meanwhile may have held a switch-in and switch-out of this
		 * thread; a switch-in stamped before its switch-out is no interval either.
		 */
		bool lost = s->lost_gen != r->offcpu.lost_gen || id.time < s->out_ns;
		uint32_t stack = s->stack, flags = lost ? SP_OFFCPU_LOST : 0;
		/* Read while it was still off CPU: its switch-in came after the reads. */
		if (!stack && s->proc_stack && id.time > s->proc_done_ns) {
			stack = s->proc_stack;
			flags |= s->proc_flag;
		}
		emit(r, s, s->out_ns, lost ? 0 : id.time - s->out_ns, flags, stack);
	} else if (first && !s->born && id.time > r->offcpu.start_ns) {
		/* Off CPU when the recording began: only the time since is known. */
		s->preempted = false;
		emit(r, s, r->offcpu.start_ns, id.time - r->offcpu.start_ns, SP_OFFCPU_START_CUT, 0);
	}
	s->out = false;
	s->has_stack = false;
	s->ran = false;
}

void sp_offcpu_on_cpu_sample(struct sp_recorder *r, int32_t pid, int32_t tid, uint32_t stack)
{
	struct sp_offcpu_slot *s = slot_of(&r->offcpu, pid, tid);
	if (!s || !stack)
		return;
	s->ran = true;
	s->ran_stack = stack;
	s->ran_lost_gen = r->offcpu.lost_gen;
}

void sp_offcpu_on_task(struct sp_recorder *r, int32_t pid, int32_t tid, bool fork)
{
	if (!r->events.off_cpu)
		return;
	struct sp_offcpu_slot *s = slot_of(&r->offcpu, pid, tid);
	if (!s)
		return;
	if (fork) {
		memset(s, 0, sizeof(*s));
		s->pid = pid;
		s->tid = tid;
		s->born = true;
	} else {
		s->out = false; /* an exiting thread's last switch is no wait */
		s->has_stack = false;
	}
}

/*
 * The user SP and PC the kernel saved for tid when it entered the system
 * call it is blocked in (or the fault or interrupt it sleeps in),
 * /proc/PID/task/TID/syscall: "NR ARG1..ARG6 SP PC", "-1 SP PC", or
 * "running" (on a CPU, or runnable: preempted).  Needs ptrace access to the
 * thread (its owner, or a descendant under Yama's ptrace_scope 1).
 */
bool sp_offcpu_blocked_regs(int32_t pid, int32_t tid, uint64_t *sp, uint64_t *pc)
{
	char path[64], buf[320];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	char *field[10], *save = NULL;
	int k = 0;
	for (char *t = strtok_r(buf, " \n", &save); t && k < 10; t = strtok_r(NULL, " \n", &save))
		field[k++] = t;
	if (k != 9 && k != 3)
		return false;
	char *end1, *end2;
	*sp = strtoull(field[k - 2], &end1, 16);
	*pc = strtoull(field[k - 1], &end2, 16);
	return !*end1 && !*end2 && *sp && *pc;
}

bool sp_offcpu_next_blocked(struct sp_recorder *r, size_t *i, int32_t *pid, int32_t *tid)
{
	for (; *i < r->offcpu.n; (*i)++) {
		struct sp_offcpu_slot *s = &r->offcpu.slots[*i];
		if (!s->out || s->has_stack || s->proc_tried)
			continue;
		s->proc_tried = true;
		*pid = s->pid;
		*tid = s->tid;
		return true;
	}
	return false;
}

void sp_offcpu_read_stack(struct sp_recorder *r, size_t i, uint32_t stack, uint64_t done_ns)
{
	if (i >= r->offcpu.n)
		return;
	r->offcpu.slots[i].proc_stack = stack;
	r->offcpu.slots[i].proc_done_ns = done_ns;
	r->offcpu.slots[i].proc_flag = SP_OFFCPU_PROC_STACK;
}

void sp_offcpu_on_lost(struct sp_recorder *r)
{
	r->offcpu.lost_gen++;
}

void sp_offcpu_finish(struct sp_recorder *r, uint64_t end_ns)
{
	for (size_t i = 0; i < r->offcpu.n; i++) {
		struct sp_offcpu_slot *s = &r->offcpu.slots[i];
		if (!s->out)
			continue;
		/* Still off CPU at the end: the time up to the end is known, no more. */
		bool proc = !s->stack && s->proc_stack;
		emit(r, s, s->out_ns, end_ns > s->out_ns ? end_ns - s->out_ns : 0,
		     SP_OFFCPU_END_CUT | (proc ? s->proc_flag : 0), proc ? s->proc_stack : s->stack);
		s->out = false;
	}
}

void sp_offcpu_release(struct sp_offcpu_state *o)
{
	free(o->slots);
	free(o->stack_buf);
	sp_map_release(&o->by_tid);
	memset(o, 0, sizeof(*o));
}

/*
 * Compaction (docs/DESIGN.md, decision 14): the slots of threads whose
 * process is gone are forgotten (tid reuse would reset them anyway), the
 * stacks of the others kept and then renumbered.
 */
void sp_offcpu_keep_stacks(struct sp_recorder *r, bool (*gone)(struct sp_recorder *r, int32_t pid))
{
	struct sp_offcpu_state *o = &r->offcpu;
	struct sp_map by_tid;
	sp_map_init(&by_tid);
	bool *keep = o->n ? malloc(o->n) : NULL;
	size_t kept = 0;
	int err = keep ? 0 : -ENOMEM;
	for (size_t i = 0; i < o->n && !err; i++)
		if ((keep[i] = !gone(r, o->slots[i].pid)))
			err = sp_map_put(&by_tid, (uint32_t)o->slots[i].tid, (uint32_t)kept++);
	if (!err && kept != o->n) {
		kept = 0;
		for (size_t i = 0; i < o->n; i++)
			if (keep[i])
				o->slots[kept++] = o->slots[i];
		sp_map_release(&o->by_tid);
		o->by_tid = by_tid;
		o->n = kept;
	} else {
		sp_map_release(&by_tid); /* all kept (or out of memory: all kept too) */
	}
	free(keep);
	for (size_t i = 0; i < o->n; i++) {
		const struct sp_offcpu_slot *s = &o->slots[i];
		sp_spool_writer_keep_stack(r->spool, s->stack);
		sp_spool_writer_keep_stack(r->spool, s->proc_stack);
		sp_spool_writer_keep_stack(r->spool, s->ran_stack);
	}
}

uint32_t sp_recorder_compacted_stack(const struct sp_recorder *r, uint32_t stack)
{
	uint32_t to = sp_spool_writer_compacted_stack(r->spool, stack);
	return to == SP_COMPACT_DROPPED ? 0 : to;
}

void sp_offcpu_renumber_stacks(struct sp_recorder *r)
{
	for (size_t i = 0; i < r->offcpu.n; i++) {
		struct sp_offcpu_slot *s = &r->offcpu.slots[i];
		s->stack = sp_recorder_compacted_stack(r, s->stack);
		s->proc_stack = sp_recorder_compacted_stack(r, s->proc_stack);
		s->ran_stack = sp_recorder_compacted_stack(r, s->ran_stack);
	}
}
