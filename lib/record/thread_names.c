/* SPDX-License-Identifier: MIT */
/* Thread names by (pid, tid): what the kernel reported, inherited at a fork, or read from /proc. */
#include "record/record.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t task_key(uint32_t pid, uint32_t tid)
{
	return (uint64_t)pid << 32 | tid;
}

void sp_thread_names_init(struct sp_thread_names *t)
{
	memset(t, 0, sizeof(*t));
	t->hint = SIZE_MAX;
	sp_map_init(&t->index);
}

void sp_thread_names_release(struct sp_thread_names *t)
{
	sp_map_release(&t->index);
	free(t->comms);
	sp_thread_names_init(t); /* empty, the hint with it */
}

struct sp_task_comm *sp_thread_names_find(struct sp_thread_names *t, uint32_t pid, uint32_t tid)
{
	uint64_t key = task_key(pid, tid);
	uint32_t idx;
	/* each sample asks for its thread's name: mostly the last one asked for */
	if (t->hint < t->n && t->hint_key == key)
		return &t->comms[t->hint];
	if (!sp_map_get(&t->index, key, &idx))
		return NULL;
	t->hint = idx;
	t->hint_key = key;
	return &t->comms[idx];
}

void sp_thread_names_remember(struct sp_thread_names *t, uint32_t pid, uint32_t tid,
			      const char *name, bool written)
{
	struct sp_task_comm *c = sp_thread_names_find(t, pid, tid);
	if (!c) {
		if (sp_array_reserve((void **)&t->comms, &t->cap, t->n + 1, sizeof(*t->comms)) ||
		    sp_map_put(&t->index, task_key(pid, tid), (uint32_t)t->n))
			return; /* out of memory: the thread stays unnamed */
		c = &t->comms[t->n++];
	}
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->written = written;
}

void sp_thread_names_filter(struct sp_thread_names *t,
			    bool (*keep)(void *ctx, uint32_t pid, uint32_t tid, bool *written),
			    void *ctx)
{
	struct sp_map index;
	sp_map_init(&index);
	size_t n = 0;
	struct sp_task_comm *comms = t->n ? malloc(t->n * sizeof(*comms)) : NULL;
	int err = t->n && !comms ? -ENOMEM : 0;
	for (size_t i = 0; i < t->index.cap && !err; i++) {
		if (!t->index.slots[i].used)
			continue;
		uint64_t key = t->index.slots[i].key;
		struct sp_task_comm c = t->comms[t->index.slots[i].val];
		if (!keep(ctx, (uint32_t)(key >> 32), (uint32_t)key, &c.written))
			continue;
		comms[n] = c;
		err = sp_map_put(&index, key, (uint32_t)n++);
	}
	if (err) { /* out of memory: every name stays */
		sp_map_release(&index);
		free(comms);
		return;
	}
	sp_map_release(&t->index);
	free(t->comms);
	t->index = index;
	t->comms = comms;
	t->n = t->cap = n;
	t->hint = SIZE_MAX; /* the names moved */
}

/*
 * System-wide: (pid, tid)'s name from /proc, written with its first sample.
 * The idle task, pid 0, is "[idle]".
 */
bool sp_thread_names_discover(struct sp_thread_names *t, uint32_t pid, uint32_t tid)
{
	char path[96], name[64] = "[idle]";
	if (pid) {
		name[0] = '\0';
		snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", pid, tid);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd < 0 ? -1 : read(fd, name, sizeof(name) - 1);
		if (fd >= 0)
			close(fd);
		name[n > 0 ? n : 0] = '\0';
		name[strcspn(name, "\n")] = '\0';
		if (!name[0])
			return false;
	}
	sp_thread_names_remember(t, pid, tid, name, false);
	return true;
}

/*
 * perf reports a name only at exec and prctl(PR_SET_NAME): a forked child
 * or a new thread keeps its parent's, which it gets here when the spool
 * first names it (its first sample or off-CPU interval).
 */
int sp_recorder_intern_thread(struct sp_recorder *r, int32_t pid, int32_t tid, uint32_t *thread)
{
	int err = sp_spool_writer_intern_thread(r->spool, pid, tid, thread);
	if (err)
		return err;
	struct sp_task_comm *c =
		r->names.n ? sp_thread_names_find(&r->names, (uint32_t)pid, (uint32_t)tid) : NULL;
	if (c && !c->written) {
		c->written = true;
		sp_recorder_note_write(r, sp_spool_writer_set_thread_name(r->spool, *thread, c->name));
	}
	return 0;
}
