/* SPDX-License-Identifier: MIT */
/* Perf maps of processes in containers, opened while they live and kept open to the end. */
#include "record/record.h"
#include "spool/spool.h"
#include "symbols/symbols.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

/* Kept open at most: fds, one per process. */
#define KEPT_PERF_MAPS_MAX 256
#define PERF_MAP_RETRY_NS 200000000ull /* 0.2 s */

/* Looked for no more: kept, the host's, not to be trusted, or missing too long. */
static void perf_map_settled(struct sp_process *p)
{
	p->perf_map_wanted = false;
	p->perf_map_tries = SP_PERF_MAP_TRIES;
}

/*
 * A process in a container writes its perf map into the container's /tmp
 * (/proc/PID/root/tmp/perf-NSPID.map from here), which goes away with the
 * container, often before the report runs.  The map is opened while the
 * process lives, with the checks every perf map gets (sp_perf_map_open: no
 * symlink, a regular file, owned by the process's user or root, not
 * writable by others, not older than the process), and kept open: the open
 * file outlives the container's /tmp, and is read once, at the end, when it
 * holds every line the runtime wrote (sp_symbolize_perf_maps).
 */
void sp_recorder_keep_perf_map(struct sp_recorder *r, struct sp_process *p, uint64_t now_ns)
{
	if (now_ns && now_ns < p->perf_map_next_ns)
		return;
	char path[128];
	int32_t nspid;
	int where = sp_pid_perf_map_path(p->pid, path, sizeof(path), &nspid);
	if (where != 1 || r->kept.n >= KEPT_PERF_MAPS_MAX) {
		perf_map_settled(p); /* the host's /tmp/perf-PID.map: the report reads it */
		p->name_hint_check = where != 1;
		return;
	}
	uint32_t uid;
	int64_t owner = sp_pid_euid(p->pid, &uid) ? SP_PERF_MAP_OWNER_UNKNOWN : (int64_t)uid;
	unsigned verdict;
	int fd;
	if (sp_perf_map_open(path, owner, sp_pid_start_us(p->pid), &verdict, &fd) == -ENOMEM)
		return;
	if (fd < 0) {
		p->perf_map_next_ns = now_ns + PERF_MAP_RETRY_NS;
		if (verdict != SP_PERF_MAP_MISSING || ++p->perf_map_tries >= SP_PERF_MAP_TRIES) {
			perf_map_settled(p);
			r->summary.container_perf_maps_missing++;
		}
		return;
	}
	if (sp_array_reserve((void **)&r->kept.pids, &r->kept.cap, r->kept.n + 1, sizeof(*r->kept.pids)) ||
	    sp_array_reserve((void **)&r->kept.fds, &r->kept.fds_cap, r->kept.n + 1, sizeof(*r->kept.fds))) {
		close(fd);
		return;
	}
	r->kept.pids[r->kept.n] = p->pid;
	r->kept.fds[r->kept.n++] = fd;
	r->summary.container_perf_maps++;
	perf_map_settled(p);
}
