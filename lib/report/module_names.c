/* SPDX-License-Identifier: MIT */
/* Identical code is one module: the name a frame's module is shown under, by build-id or same bytes. */
#include "report/aggregate.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void sp_module_names_init(struct sp_module_names *n)
{
	memset(n, 0, sizeof(*n));
	sp_map_init(&n->index);
}

void sp_module_names_release(struct sp_module_names *n)
{
	sp_map_release(&n->index);
	free(n->builds);
	memset(n, 0, sizeof(*n));
}

int sp_module_name_of(struct sp_module_names *n, const struct sp_spool *s, uint32_t frame_id,
		      const char *name, const char **out)
{
	const struct sp_frame *fr = sp_spool_frame(s, frame_id);
	const struct sp_module *m = fr && fr->module_id != SP_NO_MODULE
					    ? sp_spool_module(s, fr->module_id) : NULL;
	*out = name;
	if (!m || (!m->build_id_len && !m->same_bytes_as) || m->build_id_len > SP_BUILD_ID_MAX ||
	    !name || !*name)
		return 0;
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < m->build_id_len; i++)
		h = (h ^ m->build_id[i]) * 1099511628211ull;
	uint32_t group = m->build_id_len ? 0 : m->same_bytes_as;
	h = sp_hash64(h ^ group);
	uint32_t v;
	while (sp_map_get(&n->index, h, &v)) {
		const struct sp_module_build *b = &n->builds[v];
		if (b->len == m->build_id_len && b->same_bytes_as == group &&
		    !memcmp(b->id, m->build_id, b->len)) {
			if (strcmp(b->module, name))
				n->merged++;
			*out = b->module;
			return 0;
		}
		h = sp_hash64(h + 1);
	}
	int err = sp_array_reserve((void **)&n->builds, &n->builds_cap, n->nbuilds + 1,
				   sizeof(*n->builds));
	if (!err)
		err = sp_map_put(&n->index, h, (uint32_t)n->nbuilds);
	if (err)
		return err;
	struct sp_module_build *b = &n->builds[n->nbuilds++];
	*b = (struct sp_module_build){.len = m->build_id_len, .same_bytes_as = group, .module = name};
	memcpy(b->id, m->build_id, m->build_id_len);
	return 0;
}
