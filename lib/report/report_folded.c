/* SPDX-License-Identifier: MIT */
/* Folded stacks (flamegraph.pl input): "root;...;leaf COUNT", one line per stack by names. */
#include "report/views.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char marker[] = "[truncated]";

/*
 * A frame's text in folded stacks: the function name, ":LINE" with lines,
 * and "_[i]" for an inlined function: the annotation flamegraph.pl's
 * --colors=java palette shows in its own colour, as stackcollapse-perf.pl
 * writes it.
 */
struct labels {
	struct sp_buf text;  /* NUL-terminated labels, back to back */
	size_t *off;         /* by label id */
	size_t n, cap;
	struct sp_map index; /* hash of the text -> label id */
	uint32_t *of_func;   /* by function id: its label id */
};

static uint64_t hash_text(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ULL;
	return sp_hash64(h);
}

static const char *label_text(const struct labels *l, uint32_t id)
{
	return (const char *)l->text.data + l->off[id];
}

/* The id of the label in l->text from offset start (just appended), merging equal texts. */
static int intern_label(struct labels *l, size_t start, uint32_t *id)
{
	int err = sp_buf_append(&l->text, "", 1);
	if (err)
		return err;
	const char *s = (const char *)l->text.data + start;
	uint64_t h = hash_text(s);
	uint32_t v;
	while (sp_map_get(&l->index, h, &v)) {
		if (!strcmp(label_text(l, v), s)) {
			l->text.len = start; /* a duplicate: dropped */
			*id = v;
			return 0;
		}
		h = sp_hash64(h + 1);
	}
	if (sp_array_reserve((void **)&l->off, &l->cap, l->n + 1,
			     sizeof(*l->off)))
		return -ENOMEM;
	if ((err = sp_map_put(&l->index, h, (uint32_t)l->n)))
		return err;
	l->off[l->n] = start;
	*id = (uint32_t)l->n++;
	return 0;
}

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

/* Label every function; the marker is label 0. */
static int build_labels(const struct sp_agg *a, struct labels *l)
{
	uint32_t id;
	int err = sp_buf_append(&l->text, marker, strlen(marker));
	if (!err)
		err = intern_label(l, 0, &id);
	if (!err && !(l->of_func = malloc((a->nfuncs ? a->nfuncs : 1) * sizeof(*l->of_func))))
		err = -ENOMEM;
	for (size_t i = 0; i < a->nfuncs && !err; i++) {
		const struct sp_agg_func *f = &a->funcs[i];
		size_t start = l->text.len;
		char tail[32];
		int n = 0;
		if (f->line)
			n = snprintf(tail, sizeof(tail), ":%" PRIu32, f->line);
		snprintf(tail + n, sizeof(tail) - (size_t)n, "%s", f->is_inline ? "_[i]" : "");
		err = append_name(&l->text, f->name);
		if (!err)
			err = sp_buf_append(&l->text, tail, strlen(tail));
		if (!err)
			err = intern_label(l, start, &l->of_func[i]);
	}
	return err;
}

static void release_labels(struct labels *l)
{
	sp_buf_release(&l->text);
	free(l->off);
	free(l->of_func);
	sp_map_release(&l->index);
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

static int grow_seq(uint32_t **seq, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	size_t n = need * 2;
	uint32_t *p = realloc(*seq, n * sizeof(*p));
	if (!p)
		return -ENOMEM;
	*seq = p;
	*cap = n;
	return 0;
}

int sp_report_folded(struct sp_agg *a, FILE *out)
{
	struct sp_seq_groups g;
	struct sp_buf keys;
	struct labels lab = {0};
	uint32_t *seq = NULL;
	size_t seq_cap = 0;
	struct line *lines = NULL;
	int err;
	sp_seq_groups_init(&g);
	sp_buf_init(&keys);
	sp_buf_init(&lab.text);
	sp_map_init(&lab.index);
	if ((err = build_labels(a, &lab)))
		goto out;

	/*
	 * Merge by label sequence, root first; each frame gives its containing
	 * function, then the functions inlined into it, innermost last.  A
	 * truncated stack's root-end frame is the marker, so it starts with
	 * "[truncated]" and never merges with a stack that reached its real root.
	 */
	for (size_t sid = 1; sid < a->nstacks; sid++) {
		if (!a->stack_count[sid])
			continue;
		const uint32_t *fr;
		size_t n = sp_agg_stack_frames(a, (uint32_t)sid, &fr);
		uint32_t len = 0;
		for (size_t i = n; i-- > 0;) {
			const uint32_t *funcs;
			size_t k = sp_agg_frame_funcs(a, fr[i], &funcs);
			if ((err = grow_seq(&seq, &seq_cap, (size_t)len + (k ? k : 1))))
				goto out;
			if (!k)
				seq[len++] = 0; /* the marker's label */
			for (size_t j = k; j-- > 0;)
				seq[len++] = lab.of_func[funcs[j]];
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
			const char *text = label_text(&lab, g.ids[grp->off + j]);
			if ((j && (err = sp_buf_append(&keys, ";", 1))) ||
			    (err = sp_buf_append(&keys, text, strlen(text))))
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
	release_labels(&lab);
	sp_seq_groups_release(&g);
	return err;
}
