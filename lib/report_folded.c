/* SPDX-License-Identifier: MIT */
/* Folded stacks (flamegraph.pl input): "root;...;leaf COUNT", one line per stack by names. */
#include "report_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/*
 * ';' separates frames and a newline ends the record, so neither may appear
 * inside a name; spaces may (flamegraph.pl splits the count at the last one).
 */
static int append_name(struct sp_buf *b, const char *name)
{
	size_t start = b->len;
	int err = sp_buf_append(b, name, strlen(name));
	if (err)
		return err;
	for (size_t i = start; i < b->len; i++)
		if (b->data[i] == ';' || b->data[i] < 0x20 || b->data[i] == 0x7f)
			b->data[i] = '_';
	return 0;
}

struct line {
	size_t off; /* key, in the keys buffer */
	uint64_t count;
};

static int by_key(const void *pa, const void *pb, void *ctx)
{
	const char *base = ctx;
	return strcmp(base + ((const struct line *)pa)->off, base + ((const struct line *)pb)->off);
}

int sp_report_folded(struct sp_agg *a, FILE *out)
{
	struct sp_seq_groups g;
	struct sp_buf keys;
	uint32_t *seq = NULL;
	size_t seq_cap = 0;
	struct line *lines = NULL;
	uint32_t truncated_name;
	int err;
	sp_seq_groups_init(&g);
	sp_buf_init(&keys);

	/*
	 * Merge by name sequence, root first.  A truncated stack's root-end
	 * frame is the marker, so it starts with "[truncated]" and never merges
	 * with a stack that reached its real root.
	 */
	static const char marker[] = "[truncated]";
	for (truncated_name = 0; truncated_name < a->nnames; truncated_name++)
		if (!strcmp(a->names[truncated_name], marker))
			break;
	for (size_t sid = 1; sid < a->nstacks; sid++) {
		if (!a->stack_count[sid])
			continue;
		const uint32_t *fr;
		size_t n = sp_agg_stack_frames(a, (uint32_t)sid, &fr);
		if (n > seq_cap) {
			free(seq);
			seq_cap = n * 2;
			if (!(seq = malloc(seq_cap * sizeof(*seq)))) {
				err = -ENOMEM;
				goto out;
			}
		}
		uint32_t len = 0;
		for (size_t i = n; i-- > 0;) {
			uint32_t fid = sp_agg_frame_func(a, fr[i]);
			/* Markers take the id of a name "[truncated]", or the id past every name. */
			seq[len++] = fid == SP_AGG_NO_FUNC ? truncated_name : a->funcs[fid].name_id;
		}
		if ((err = sp_seq_groups_add(&g, seq, len, a->stack_count[sid])))
			goto out;
	}

	/* One key string per line, NUL-separated in one buffer; lines sorted by key. */
	size_t nlines = g.ngroups + (a->empty_samples ? 1 : 0);
	lines = malloc((nlines ? nlines : 1) * sizeof(*lines));
	if (!lines) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < g.ngroups; i++) {
		const struct sp_seq_group *grp = &g.groups[i];
		lines[i] = (struct line){.off = keys.len, .count = grp->count};
		for (uint32_t j = 0; j < grp->len; j++) {
			uint32_t id = g.ids[grp->off + j];
			if ((j && (err = sp_buf_append(&keys, ";", 1))) ||
			    (err = append_name(&keys, id < a->nnames ? a->names[id] : marker)))
				goto out;
		}
		if ((err = sp_buf_append(&keys, "", 1)))
			goto out;
	}
	/* Empty stacks stay visible: a flame graph without them overstates every share. */
	if (a->empty_samples) {
		lines[g.ngroups] = (struct line){.off = keys.len, .count = a->empty_samples};
		if ((err = sp_buf_append(&keys, "[empty]", sizeof("[empty]"))))
			goto out;
	}
	qsort_r(lines, nlines, sizeof(*lines), by_key, keys.data);
	for (size_t i = 0; i < nlines; i++)
		fprintf(out, "%s %" PRIu64 "\n", (const char *)keys.data + lines[i].off,
			lines[i].count);
	err = 0;
out:
	free(seq);
	free(lines);
	sp_buf_release(&keys);
	sp_seq_groups_release(&g);
	return err;
}
