/* SPDX-License-Identifier: MIT */
/* A segment directory read as one spool: each valid segment merged in order (docs/DESIGN.md, decision 13). */
#include "spool/spool.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Within one boot the segments share CLOCK_MONOTONIC; a larger disagreement with the wall clock is another boot. */
#define SAME_CLOCK_NS 1000000000LL

/* A stored inline chain waiting for the merged spool (symbol records need its frame count). */
struct chain {
	uint32_t frame; /* merged frame id */
	size_t first, n; /* into merge.links */
};

struct merge {
	int fd; /* the merged spool, a memfd */
	struct sp_spool_writer *w;
	uint64_t first_us, first_mono;
	struct sp_summary sum;
	/* modules seen, for merging equal ones: hash -> index into mods (chained by rehash) */
	struct sp_map mod_index;
	struct sp_module *mods;
	size_t nmods, mods_cap;
	struct sp_arena strings;
	struct chain *chains;
	size_t nchains, chains_cap;
	struct sp_resolved_frame *links;
	size_t nlinks, links_cap;
	struct sp_spool_ksym *ksyms; /* names/modules as arena pointers cast through pending strings */
	const char **ksym_text;      /* 2 per kernel symbol: name, module (NULL: vmlinux) */
	size_t nksyms, ksyms_cap, ktext_cap;
	struct sp_spool_pmline *pmlines;
	const char **pm_text;
	size_t npm, pm_cap, pmtext_cap;
};

static uint64_t module_hash(const struct sp_module *m)
{
	uint64_t h = sp_hash64((uint64_t)(uint32_t)m->pid ^ sp_hash64(m->start));
	h = sp_hash64(h ^ m->end ^ (m->file_offset << 1));
	h = sp_hash64(h ^ m->inode ^ ((uint64_t)m->dev_major << 32 | m->dev_minor));
	h = sp_hash64(h ^ m->load_bias ^ m->file_size ^ (uint64_t)m->mtime_ns ^ m->flags);
	for (const char *p = m->path ? m->path : ""; *p; p++)
		h = sp_hash64(h ^ (uint8_t)*p);
	return h;
}

static bool same_module(const struct sp_module *a, const struct sp_module *b)
{
	return a->pid == b->pid && a->start == b->start && a->end == b->end &&
	       a->file_offset == b->file_offset && a->inode == b->inode &&
	       a->dev_major == b->dev_major && a->dev_minor == b->dev_minor &&
	       a->load_bias == b->load_bias && a->file_size == b->file_size &&
	       a->mtime_ns == b->mtime_ns && a->flags == b->flags &&
	       a->build_id_len == b->build_id_len &&
	       !memcmp(a->build_id, b->build_id, a->build_id_len) &&
	       !strcmp(a->path ? a->path : "", b->path ? b->path : "");
}

/* The merged id of module m, added when no equal one was. */
static int merge_module(struct merge *g, const struct sp_module *m, uint32_t *out)
{
	uint64_t h = module_hash(m);
	uint32_t i;
	while (sp_map_get(&g->mod_index, h, &i)) {
		if (same_module(&g->mods[i], m)) {
			*out = i;
			return 0;
		}
		h = sp_hash64(h + 1);
	}
	int err = sp_spool_writer_add_module(g->w, m, out);
	err = err ? err : SP_GROW(g->mods, g->nmods, g->mods_cap);
	if (err)
		return err;
	struct sp_module *c = &g->mods[g->nmods];
	*c = *m;
	c->path = sp_arena_strndup(&g->strings, m->path ? m->path : "", strlen(m->path ? m->path : ""));
	if (!c->path)
		return -ENOMEM;
	err = sp_map_put(&g->mod_index, h, (uint32_t)g->nmods);
	g->nmods++;
	return err;
}

static const char *keep(struct merge *g, const char *s)
{
	return s ? sp_arena_strndup(&g->strings, s, strlen(s)) : NULL;
}

/* s's stored names, kept until the merged spool exists (frame ids mapped through fid). */
static int keep_symbols(struct merge *g, const struct sp_spool *s, const uint32_t *fid)
{
	uint32_t *by_frame = NULL;
	int err = sp_symstore_index(s, &by_frame);
	if (err || !by_frame)
		return err;
	struct sp_resolved_frame chain[64];
	for (uint32_t f = 0; f < s->nframes && !err; f++) {
		size_t n = sp_symstore_get(s, by_frame, f, chain, SP_ARRAY_SIZE(chain));
		if (!n)
			continue;
		n = n < SP_ARRAY_SIZE(chain) ? n : SP_ARRAY_SIZE(chain);
		if ((err = SP_GROW(g->chains, g->nchains, g->chains_cap)))
			break;
		g->chains[g->nchains++] = (struct chain){fid[f], g->nlinks, n};
		for (size_t i = 0; i < n && !err; i++) {
			if ((err = SP_GROW(g->links, g->nlinks, g->links_cap)))
				break;
			struct sp_resolved_frame r = chain[i];
			r.name = keep(g, r.name);
			r.module = keep(g, r.module);
			r.file = keep(g, r.file);
			if (!r.name || !r.module || (chain[i].file && !r.file))
				err = -ENOMEM;
			g->links[g->nlinks++] = r;
		}
	}
	free(by_frame);
	for (size_t i = 0; i < s->nksyms && !err; i++) {
		const struct sp_spool_ksym *k = &s->ksyms[i];
		size_t cap = g->ktext_cap;
		err = SP_GROW(g->ksyms, g->nksyms, g->ksyms_cap);
		err = err ? err : SP_GROW(g->ksym_text, 2 * g->nksyms + 1, cap);
		if (err)
			break;
		g->ktext_cap = cap;
		g->ksyms[g->nksyms] = *k;
		g->ksym_text[2 * g->nksyms] = keep(g, s->sym_strings[k->name]);
		g->ksym_text[2 * g->nksyms + 1] =
			k->module == SP_SYM_NO_STRING ? NULL : keep(g, s->sym_strings[k->module]);
		g->nksyms++;
	}
	for (size_t i = 0; i < s->npmlines && !err; i++) {
		size_t cap = g->pmtext_cap;
		err = SP_GROW(g->pmlines, g->npm, g->pm_cap);
		err = err ? err : SP_GROW(g->pm_text, g->npm, cap);
		if (err)
			break;
		g->pmtext_cap = cap;
		g->pmlines[g->npm] = s->pmlines[i];
		g->pm_text[g->npm++] = keep(g, s->sym_strings[s->pmlines[i].name]);
	}
	return err;
}

static void add_summary(struct sp_summary *d, const struct sp_summary *s)
{
	sp_summary_counters_add(d, s, false);
	d->kernel_enabled = d->kernel_enabled || s->kernel_enabled;
}

/* Append every record of segment s to the merged spool, ids mapped, times on the first's clock. */
static int merge_one(struct merge *g, const struct sp_spool *s)
{
	const struct sp_spool_meta *m = &s->meta;
	int err = 0;
	if (!g->w) {
		g->first_us = m->start_timestamp_us;
		g->first_mono = m->start_monotonic_ns;
		int fd = dup(g->fd);
		if (fd < 0)
			return -errno;
		if ((err = sp_spool_writer_open_fd(fd, m, false, &g->w)))
			return err;
	}
	int64_t wall = (int64_t)(m->start_timestamp_us - g->first_us) * 1000;
	int64_t shift = wall - (int64_t)(m->start_monotonic_ns - g->first_mono);
	if (shift > -SAME_CLOCK_NS && shift < SAME_CLOCK_NS)
		shift = 0;
	uint32_t *mid = calloc(s->nmodules + 1, sizeof(*mid));
	uint32_t *fid = calloc(s->nframes + 1, sizeof(*fid));
	uint32_t *nid = calloc(s->nstacks + 1, sizeof(*nid));
	uint32_t *tid = calloc(s->nthreads + 1, sizeof(*tid));
	if (!mid || !fid || !nid || !tid)
		err = -ENOMEM;
	for (size_t i = 0; i < s->nmodules && !err; i++) {
		/* A group of identical files is named by its first's merged id (the first names itself). */
		struct sp_module mod = s->modules[i];
		uint32_t first = mod.same_bytes_as;
		mod.same_bytes_as = first && first - 1 < i ? mid[first - 1] + 1 : 0;
		err = merge_module(g, &mod, &mid[i]);
	}
	for (size_t i = 0; i < s->nframes && !err; i++) {
		struct sp_frame f = s->frames[i];
		if (f.module_id != SP_NO_MODULE)
			f.module_id = mid[f.module_id];
		err = sp_spool_writer_intern_frame(g->w, &f, &fid[i]);
	}
	for (size_t i = 1; i < s->nstacks && !err; i++)
		err = sp_spool_writer_intern_node(g->w, nid[s->stack_parent[i]],
						  fid[s->stack_frame[i]], &nid[i]);
	for (size_t i = 0; i < s->nthreads && !err; i++) {
		const struct sp_thread *t = &s->threads[i];
		err = sp_spool_writer_intern_thread(g->w, t->pid, t->tid, &tid[i]);
		if (!err && t->name && *t->name)
			err = sp_spool_writer_set_thread_name(g->w, tid[i], t->name);
	}
	for (size_t i = 0; i < s->nexecs && !err; i++) {
		struct sp_exec e = s->execs[i];
		e.timestamp_ns += (uint64_t)shift;
		err = sp_spool_writer_append_exec(g->w, &e);
	}
	for (size_t i = 0; i < s->nowners && !err; i++) {
		struct sp_owner o = s->owners[i];
		if (o.timestamp_ns)
			o.timestamp_ns += (uint64_t)shift;
		err = sp_spool_writer_append_owner(g->w, &o);
	}
	for (size_t i = 0; i < s->nsamples && !err; i++) {
		const struct sp_sample *x = &s->samples[i];
		err = sp_spool_writer_append_weighted_sample(g->w, tid[x->thread], nid[x->stack_id],
							     x->timestamp_ns + (uint64_t)shift,
							     x->period);
	}
	for (size_t i = 0; i < s->noffcpus && !err; i++) {
		struct sp_offcpu o = s->offcpus[i];
		o.thread = tid[o.thread];
		o.stack_id = nid[o.stack_id];
		o.start_ns += (uint64_t)shift;
		err = sp_spool_writer_append_offcpu(g->w, &o);
	}
	for (size_t i = 0; i < s->nlosts && !err; i++)
		err = sp_spool_writer_append_lost(g->w, s->losts[i].count,
						  s->losts[i].timestamp_ns + (uint64_t)shift);
	if (!err)
		err = keep_symbols(g, s, fid);
	if (!err && s->nsummaries) {
		add_summary(&g->sum, &s->summaries[s->nsummaries - 1]);
	} else if (!err) {
		/*
		 * A segment still being written (or cut by a kill) has no trailer
		 * yet: its records say what was written and lost, so the merged
		 * counters agree with the samples shown.
		 */
		g->sum.sample_events = sp_u64_add_sat(g->sum.sample_events, s->nsamples);
		g->sum.samples = sp_u64_add_sat(g->sum.samples, s->nsamples);
		for (size_t i = 0; i < s->nlosts; i++)
			g->sum.lost_events = sp_u64_add_sat(g->sum.lost_events, s->losts[i].count);
	}
	free(mid);
	free(fid);
	free(nid);
	free(tid);
	return err;
}

/* The symbol records kept, encoded against the merged spool, then the trailer. */
static int finish(struct merge *g, struct sp_spool **out)
{
	struct sp_spool *merged = NULL;
	struct sp_symenc *enc = NULL;
	struct sp_buf recs;
	sp_buf_init(&recs);
	int err = 0;
	if (g->nchains || g->nksyms || g->npm) {
		err = sp_spool_writer_read_back(g->w, &merged);
		err = err ? err : sp_symenc_new(merged, &enc);
		for (size_t i = 0; i < g->nchains && !err; i++)
			err = sp_symenc_add_frame(enc, g->chains[i].frame, g->links + g->chains[i].first,
						  g->chains[i].n);
		for (size_t i = 0; i < g->nksyms && !err; i++)
			err = sp_symenc_add_kernel_symbol(enc, g->ksyms[i].addr, g->ksyms[i].size,
							  g->ksym_text[2 * i], g->ksym_text[2 * i + 1]);
		for (size_t i = 0; i < g->npm && !err; i++)
			err = sp_symenc_add_perf_map_line(enc, g->pmlines[i].pid, g->pmlines[i].start,
							  g->pmlines[i].size, g->pm_text[i]);
		err = err ? err : sp_symenc_finish(enc, &recs);
		err = err ? err : sp_spool_writer_append_records(g->w, recs.data, recs.len);
	}
	sp_symenc_free(enc);
	sp_spool_free(merged);
	sp_buf_release(&recs);
	err = err ? err : sp_spool_writer_finish(g->w, &g->sum);
	if (err)
		return err;
	struct stat st;
	if (fstat(g->fd, &st) || lseek(g->fd, 0, SEEK_SET) < 0)
		return -errno;
	struct sp_buf b;
	sp_buf_init(&b);
	err = sp_spool_read_into(g->fd, &b, (size_t)st.st_size);
	err = err ? err : sp_spool_open_buffer(b.data, b.len, out);
	sp_buf_release(&b);
	return err;
}

static void note(const struct sp_segments_read_opts *o, const char *name,
		 enum sp_segment_note what, int err)
{
	if (o && o->note)
		o->note(o->ctx, name, what, err);
}

/*
 * Segment e read and parsed into *s, the name it was read under into final
 * (its final name when a partial one was renamed since the listing); 1 when
 * it is to be skipped (noted), 0, or -ENOMEM.
 */
static int read_segment(int dirfd, const struct sp_segment_entry *e,
			const struct sp_segments_read_opts *o, struct sp_spool **s,
			char final[SP_SEGMENT_NAME_MAX + 16])
{
	const char *name = e->name;
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && e->partial) {
		/* finished since the listing: its final name */
		snprintf(final, SP_SEGMENT_NAME_MAX + 16, "%.*s",
			 (int)(strlen(name) - 1 - strlen(".partial")), name + 1);
		name = final;
		fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	}
	if (fd < 0) {
		int err = -errno;
		note(o, name, err == -ENOENT ? SP_SEGMENT_VANISHED
			      : err == -ELOOP ? SP_SEGMENT_REFUSED : SP_SEGMENT_DAMAGED, err);
		return 1;
	}
	struct stat st;
	int err = fstat(fd, &st) ? -errno : S_ISREG(st.st_mode) ? 0 : -SP_E_NOT_REGULAR;
	if (err) {
		close(fd);
		note(o, name, err == -SP_E_NOT_REGULAR ? SP_SEGMENT_REFUSED : SP_SEGMENT_DAMAGED, err);
		return 1;
	}
	bool growing = name != final && e->partial && sp_fd_write_locked(fd);
	struct sp_buf b;
	sp_buf_init(&b);
	err = sp_spool_read_into(fd, &b, (size_t)st.st_size);
	close(fd);
	err = err ? err : sp_spool_open_buffer(b.data, b.len, s);
	sp_buf_release(&b);
	if (err == -ENOMEM)
		return err;
	if (err) {
		note(o, name, SP_SEGMENT_DAMAGED, err);
		return 1;
	}
	if (growing)
		note(o, name, SP_SEGMENT_GROWING, 0);
	else if ((*s)->truncated || !(*s)->nsummaries)
		note(o, name, SP_SEGMENT_CUT, 0);
	if (name != final)
		snprintf(final, SP_SEGMENT_NAME_MAX + 16, "%s", name);
	return 0;
}

/* Read one segment and visit it: 0 (visited or skipped, as st counts) or what visit returned. */
static int read_one(int dirfd, const struct sp_segment_entry *e,
		    const struct sp_segments_read_opts *o, sp_segment_visit_fn visit, void *ctx,
		    struct sp_segments_read_stats *st)
{
	struct sp_spool *s = NULL;
	char name[SP_SEGMENT_NAME_MAX + 16];
	int r = read_segment(dirfd, e, o, &s, name);
	if (r < 0)
		return r;
	if (r) {
		st->skipped++;
		return 0;
	}
	int err = visit(ctx, name, s);
	sp_spool_free(s);
	st->read++;
	return err;
}

/*
 * Directory dir opened and its layout's files listed into *v (*n of them,
 * by sequence; sp_segment_list: names of the layout only, each lstat'ed,
 * never followed): the directory's fd, or -errno with nothing to free.
 */
static int open_listed(const char *dir, struct sp_segment_entry **v, size_t *n)
{
	int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return -errno;
	int err = sp_segment_list(dirfd, v, n);
	if (err) {
		close(dirfd);
		return err;
	}
	return dirfd;
}

/*
 * Each segment of dir in the window of o, oldest first, read and handed to
 * visit; when the window misses every segment, the first (still counted
 * outside) so that there is a profile whose window is empty, as with a
 * spool whose span the window misses.  0, -SP_E_NO_SEGMENTS when none was
 * read, -errno, or what visit returned.
 */
static int walk(const char *dir, const struct sp_segments_read_opts *o, sp_segment_visit_fn visit,
		void *ctx, struct sp_segments_read_stats *st)
{
	struct sp_segments_read_stats dummy;
	if (!st)
		st = &dummy;
	memset(st, 0, sizeof(*st));
	if (!dir)
		return -SP_E_BAD_ARG;
	struct sp_segment_entry *v = NULL;
	size_t n = 0;
	int dirfd = open_listed(dir, &v, &n);
	if (dirfd < 0)
		return dirfd;
	int err = 0;
	size_t first_outside = SIZE_MAX;
	for (size_t i = 0; i < n && !err; i++) {
		/* a partial whose final name is listed too was renamed meanwhile: once */
		if (i + 1 < n && v[i + 1].seq == v[i].seq && v[i + 1].partial && !v[i].partial)
			v[i + 1].seq = UINT64_MAX;
		if (v[i].seq == UINT64_MAX)
			continue;
		st->listed++;
		/* a segment ends where the next begins; the last one is open-ended */
		uint64_t start_us = v[i].start_ms * 1000;
		uint64_t end_us = UINT64_MAX;
		for (size_t j = i + 1; j < n; j++)
			if (v[j].seq != v[i].seq) {
				end_us = v[j].start_ms * 1000 + 1000;
				break;
			}
		if ((o && o->end_us && start_us >= o->end_us) ||
		    (o && o->start_us && end_us <= o->start_us)) {
			st->outside++;
			if (first_outside == SIZE_MAX)
				first_outside = i;
			continue;
		}
		err = read_one(dirfd, &v[i], o, visit, ctx, st);
	}
	if (!err && !st->read && first_outside != SIZE_MAX)
		err = read_one(dirfd, &v[first_outside], o, visit, ctx, st);
	if (!err && !st->read)
		err = -SP_E_NO_SEGMENTS;
	close(dirfd);
	free(v);
	return err;
}

static int merge_visit(void *ctx, const char *name, const struct sp_spool *s)
{
	(void)name;
	return merge_one(ctx, s);
}

int sp_spool_open_segments(const char *dir, const struct sp_segments_read_opts *o,
			   struct sp_spool **out, struct sp_segments_read_stats *st)
{
	if (!out)
		return walk(NULL, o, merge_visit, NULL, st);
	struct merge g = {.fd = -1};
	sp_map_init(&g.mod_index);
	sp_arena_init(&g.strings);
	g.fd = memfd_create("stackpulse-segments", MFD_CLOEXEC);
	int err = g.fd < 0 ? -errno : walk(dir, o, merge_visit, &g, st);
	if (!err)
		err = finish(&g, out);
	sp_spool_writer_free(g.w);
	if (g.fd >= 0)
		close(g.fd);
	sp_map_release(&g.mod_index);
	sp_arena_release(&g.strings);
	free(g.mods);
	free(g.chains);
	free(g.links);
	free(g.ksyms);
	free(g.ksym_text);
	free(g.pmlines);
	free(g.pm_text);
	return err;
}

int sp_segments_each(const char *dir, const struct sp_segments_read_opts *o,
		     sp_segment_visit_fn visit, void *ctx, struct sp_segments_read_stats *st)
{
	/* without visit, nothing to do: walk(NULL) says so (-SP_E_BAD_ARG) and zeroes st */
	return walk(visit ? dir : NULL, o, visit, ctx, st);
}

int sp_segments_newest(const char *dir, char *path, size_t size, bool *writing)
{
	struct sp_segment_entry *v = NULL;
	size_t n = 0;
	int dirfd = open_listed(dir, &v, &n);
	if (dirfd < 0)
		return dirfd;
	close(dirfd);
	/* the newest regular one: a partial being written, else the last published */
	int err = -SP_E_NO_SEGMENTS;
	for (size_t i = n; i-- > 0;) {
		if (!v[i].regular)
			continue;
		if ((size_t)snprintf(path, size, "%s/%s", dir, v[i].name) >= size) {
			err = -ENAMETOOLONG;
			break;
		}
		*writing = v[i].partial;
		err = 0;
		break;
	}
	free(v);
	return err;
}
