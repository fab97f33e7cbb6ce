/* SPDX-License-Identifier: MIT */
/*
 * Python processes of a spool, from its exec markers, and a symbolizer that
 * reads the perf maps of those alone (SP_PERF_MAPS_PIDS).
 */
#include "symbols/symbolizer.h"

#include <stdlib.h>

int sp_spool_python_pids(const struct sp_spool *s, bool ever, int32_t **pids, size_t *n)
{
	struct sp_map index; /* pid -> slot in list */
	int32_t *list = NULL;
	bool *python = NULL;
	size_t len = 0, cap = 0, pcap = 0;
	int err = 0;
	sp_map_init(&index);
	for (size_t i = 0; !err && i < sp_spool_exec_count(s); i++) {
		const struct sp_exec *e = sp_spool_exec(s, i);
		uint32_t k;
		if (!sp_map_get(&index, (uint64_t)(uint32_t)e->pid, &k)) {
			k = (uint32_t)len;
			if ((err = sp_array_reserve((void **)&list, &cap, len + 1, sizeof(*list))) ||
			    (err = sp_array_reserve((void **)&python, &pcap, len + 1, sizeof(*python))) ||
			    (err = sp_map_put(&index, (uint64_t)(uint32_t)e->pid, k)))
				break;
			list[len] = e->pid;
			python[len++] = false;
		}
		/* Markers are in time order: the latest decides, unless any will do. */
		python[k] = e->is_python_runtime || (ever && python[k]);
	}
	size_t kept = 0;
	for (size_t i = 0; !err && i < len; i++)
		if (python[i])
			list[kept++] = list[i];
	sp_map_release(&index);
	free(python);
	if (err || !kept) {
		free(list);
		list = NULL;
		kept = 0;
	}
	if (kept)
		qsort(list, kept, sizeof(*list), sp_cmp_pid);
	*pids = list;
	*n = kept;
	return err;
}

int sp_symbolizer_new_recorded_python(const struct sp_spool *s,
				      const struct sp_symbolizer_opts *opts,
				      struct sp_symbolizer **out)
{
	if (!s || !out)
		return -SP_E_BAD_ARG;
	struct sp_symbolizer_opts o = opts ? *opts : (struct sp_symbolizer_opts){0};
	int32_t *pids;
	size_t n;
	int err = sp_spool_python_pids(s, true, &pids, &n);
	if (err)
		return err;
	o.perf_map_policy = SP_PERF_MAPS_PIDS;
	o.perf_map_pids = pids;
	o.perf_map_npids = n;
	err = sp_symbolizer_new(s, &o, out);
	free(pids);
	return err;
}
