/* SPDX-License-Identifier: MIT */
/*
 * What /proc said of every process when a system-wide recording started:
 * the executable mappings, name and user of each, for a process whose first
 * sample is drained only after it exited (its /proc is gone by then).
 */
#include "record/record.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Bounds: a machine of many processes, or a process of many mappings, costs this much at most. */
#define SNAP_MAX_BYTES (32u << 20)
#define SNAP_MAX_MAPS_PER_PROCESS 4096

struct snap_process {
	int32_t pid;
	uint32_t uid;
	bool uid_known;
	bool stale; /* the pid was given to a new process since */
	char comm[16];
	size_t first, n; /* its mappings in maps */
};

struct sp_start_snapshot {
	struct sp_map index; /* pid -> procs */
	struct snap_process *procs;
	size_t nprocs, procs_cap;
	struct sp_proc_maps_line *maps; /* paths in the arena */
	size_t nmaps, maps_cap;
	struct sp_arena paths;
	size_t bytes;
};

struct snap_ctx {
	struct sp_start_snapshot *s;
	size_t n;
};

static bool keep_mapping(void *arg, const struct sp_proc_maps_line *line)
{
	struct snap_ctx *c = arg;
	struct sp_start_snapshot *s = c->s;
	if (c->n >= SNAP_MAX_MAPS_PER_PROCESS || s->bytes >= SNAP_MAX_BYTES)
		return false;
	struct sp_proc_maps_line m = *line;
	size_t plen = strlen(m.path);
	const char *p = sp_arena_strndup(&s->paths, m.path, plen);
	if (!p || sp_array_reserve((void **)&s->maps, &s->maps_cap, s->nmaps + 1, sizeof(*s->maps)))
		return false;
	m.path = p;
	s->maps[s->nmaps++] = m;
	s->bytes += sizeof(m) + plen + 1;
	c->n++;
	return true;
}

/* pid's executable mappings into s; false when none (a kernel thread) or over the bounds. */
static bool read_process_maps(struct sp_start_snapshot *s, int32_t pid, size_t *first, size_t *n)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	struct snap_ctx c = {.s = s};
	*first = s->nmaps;
	sp_proc_maps_each(path, keep_mapping, &c);
	*n = c.n;
	return *n > 0;
}

static void read_comm(int32_t pid, char comm[16])
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, comm, 15);
	if (fd >= 0)
		close(fd);
	comm[n > 0 ? n : 0] = '\0';
	comm[strcspn(comm, "\n")] = '\0';
}

void sp_start_snapshot_free(struct sp_start_snapshot *s)
{
	if (!s)
		return;
	sp_map_release(&s->index);
	free(s->procs);
	free(s->maps);
	sp_arena_release(&s->paths);
	free(s);
}

int sp_start_snapshot_take(struct sp_start_snapshot **out)
{
	struct sp_start_snapshot *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	sp_map_init(&s->index);
	sp_arena_init(&s->paths);
	DIR *d = opendir("/proc");
	if (!d) {
		int err = -errno;
		sp_start_snapshot_free(s);
		return err;
	}
	struct dirent *de;
	while ((de = readdir(d)) && s->bytes < SNAP_MAX_BYTES) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		size_t first, n;
		if (*end || pid <= 0 || pid > INT32_MAX || !read_process_maps(s, (int32_t)pid, &first, &n))
			continue;
		if (sp_array_reserve((void **)&s->procs, &s->procs_cap, s->nprocs + 1, sizeof(*s->procs)) ||
		    sp_map_put(&s->index, (uint64_t)pid, (uint32_t)s->nprocs))
			break;
		struct snap_process *p = &s->procs[s->nprocs++];
		*p = (struct snap_process){.pid = (int32_t)pid, .first = first, .n = n};
		p->uid_known = !sp_pid_euid((pid_t)pid, &p->uid);
		read_comm((int32_t)pid, p->comm);
		s->bytes += sizeof(*p);
	}
	closedir(d);
	*out = s;
	return 0;
}

static struct snap_process *find(const struct sp_start_snapshot *s, pid_t pid)
{
	uint32_t i;
	if (!s || !sp_map_get(&s->index, (uint64_t)(uint32_t)pid, &i) || s->procs[i].stale)
		return NULL;
	return &s->procs[i];
}

void sp_start_snapshot_forget(struct sp_start_snapshot *s, pid_t pid)
{
	struct snap_process *p = find(s, pid);
	if (p)
		p->stale = true;
}

const char *sp_start_snapshot_comm(const struct sp_start_snapshot *s, pid_t pid)
{
	const struct snap_process *p = find(s, pid);
	return p && p->comm[0] ? p->comm : NULL;
}

size_t sp_start_snapshot_count(const struct sp_start_snapshot *s)
{
	return s ? s->nprocs : 0;
}

const struct sp_proc_maps_line *sp_start_snapshot_find(const struct sp_start_snapshot *s, pid_t pid,
						       size_t *n, uint32_t *uid, bool *uid_known)
{
	const struct snap_process *p = find(s, pid);
	if (!p)
		return NULL;
	*n = p->n;
	*uid = p->uid;
	*uid_known = p->uid_known;
	return s->maps + p->first;
}
