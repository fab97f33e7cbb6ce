/* SPDX-License-Identifier: MIT */
/* Ids grouped by process: a followed spool's modules, and the frames a process's perf map names. */
#include "symbols/symbolizer.h"

#include <errno.h>
#include <stdlib.h>

void sp_pid_ids_init(struct pid_ids_set *set)
{
	*set = (struct pid_ids_set){0};
	sp_map_init(&set->index);
}

void sp_pid_ids_release(struct pid_ids_set *set)
{
	for (size_t i = 0; i < set->n; i++)
		free(set->lists[i].ids);
	free(set->lists);
	sp_map_release(&set->index);
	sp_pid_ids_init(set);
}

struct pid_ids *sp_pid_ids_get(struct pid_ids_set *set, int32_t pid)
{
	uint32_t idx;
	return sp_map_get(&set->index, (uint64_t)(uint32_t)pid, &idx) ? &set->lists[idx] : NULL;
}

int sp_pid_ids_add(struct pid_ids_set *set, int32_t pid, uint32_t id)
{
	struct pid_ids *l = sp_pid_ids_get(set, pid);
	if (!l) {
		if (sp_array_reserve((void **)&set->lists, &set->cap, set->n + 1, sizeof(*set->lists)))
			return -ENOMEM;
		int err = sp_map_put(&set->index, (uint64_t)(uint32_t)pid, (uint32_t)set->n);
		if (err)
			return err;
		l = &set->lists[set->n++];
		*l = (struct pid_ids){.pid = pid};
	}
	if (sp_array_reserve((void **)&l->ids, &l->cap, l->n + 1, sizeof(*l->ids)))
		return -ENOMEM;
	l->ids[l->n++] = id;
	return 0;
}
