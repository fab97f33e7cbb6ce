/* SPDX-License-Identifier: MIT */
/*
 * The symbolizer's tables by module id and by frame id: module files indexed
 * by their identity, room grown as a followed spool brings more modules and
 * frames, the inline chains, in blocks that never move, and the cache of
 * streamed (pid, stack id) pairs' frame ids (filled by streamed_stacks.c).
 */
#include "symbols/symbolizer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL; /* FNV-1a */
	return h;
}

/*
 * Modules share a file entry (one open file, one libdwfl instance) by the
 * file's identity: its build-id, else its inode, device, size and mtime.  The
 * path counts only when the inode is unknown: "/lib//x", "/lib/./x" and a
 * thousand other spellings of one file in a hostile spool are one file.
 */
static uint64_t file_key_hash(const struct sp_module *m)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	if (m->build_id_len)
		return sp_hash64(hash_bytes(h ^ 1, m->build_id, m->build_id_len));
	if (!m->inode) {
		const char *path = m->path ? m->path : "";
		h = hash_bytes(h, path, strlen(path));
	}
	uint64_t ids[] = {m->inode, m->dev_major, m->dev_minor, m->file_size,
			  (uint64_t)m->mtime_ns};
	return sp_hash64(hash_bytes(h, ids, sizeof(ids)));
}

static bool same_file_key(const struct sp_module *a, const struct sp_module *b)
{
	if (a->build_id_len || b->build_id_len)
		return a->build_id_len == b->build_id_len &&
		       !memcmp(a->build_id, b->build_id, a->build_id_len);
	return a->inode == b->inode && a->dev_major == b->dev_major &&
	       a->dev_minor == b->dev_minor && a->file_size == b->file_size &&
	       a->mtime_ns == b->mtime_ns &&
	       (a->inode || !strcmp(a->path ? a->path : "", b->path ? b->path : ""));
}

static const char *display_name(struct sp_arena *a, const struct sp_module *m)
{
	if (m->flags & SP_MODULE_KERNEL)
		return "[kernel]";
	const char *p = m->path;
	/* perf names anonymous executable mappings "//anon". */
	if (!p || !*p || !strcmp(p, "//anon"))
		return "[anon]";
	size_t n;
	p = sp_path_name_span(p, &n);
	return sp_arena_strndup(a, p, n);
}

/* Room for n entries of elem bytes in *p (cap old), the new ones zeroed.  0 or -ENOMEM. */
static int grow_zeroed(void **p, size_t old, size_t n, size_t elem)
{
	void *q = realloc(*p, n * elem);
	if (!q)
		return -ENOMEM;
	memset((char *)q + old * elem, 0, (n - old) * elem);
	*p = q;
	return 0;
}

/* The capacity to grow cap to for need entries (at least 1, doubling). */
static size_t grown_cap(size_t cap, size_t need)
{
	if (!cap) /* exact at first: a spool read whole never grows */
		return need ? need : 1;
	size_t n = cap;
	while (n < need)
		n = n > SIZE_MAX / 4 ? need : n * 2;
	return n;
}

/* Room in every by-module-id array for n modules, and files for as many. */
static int grow_modules(struct sp_symbolizer *sym, size_t n)
{
	if (n <= sym->modules_cap && sym->module_file)
		return 0;
	size_t cap = grown_cap(sym->modules_cap, n);
	struct file_entry *old_files = sym->elf.files;
	int err = grow_zeroed((void **)&sym->module_file, sym->modules_cap, cap,
			      sizeof(*sym->module_file));
	if (!err)
		err = grow_zeroed((void **)&sym->module_name, sym->modules_cap, cap,
				  sizeof(*sym->module_name));
	/* At most one file per module. */
	if (!err)
		err = grow_zeroed((void **)&sym->elf.files, sym->elf.files_cap, cap, sizeof(*sym->elf.files));
	if (!err)
		sym->elf.files_cap = cap;
	if (sym->elf.files != old_files && old_files)
		sp_sym_files_moved(&sym->elf);
	if (!err)
		sym->modules_cap = cap;
	return err;
}

/* Give modules [sym->nmodules, n) their file entries, merging modules that share a key. */
int sp_sym_take_modules(struct sp_symbolizer *sym, size_t n)
{
	int err = grow_modules(sym, n);
	for (size_t i = sym->nmodules; !err && i < n; i++) {
		const struct sp_module *m = sp_spool_module(sym->spool, (uint32_t)i);
		sym->module_file[i] = NO_FILE;
		sym->module_name[i] = m ? display_name(&sym->strings, m) : "[unknown]";
		if (!sym->module_name[i])
			return -ENOMEM;
		if (m && sp_sym_has_file(m)) {
			/* Probe past hash collisions: the key hash is not the key. */
			uint64_t h = file_key_hash(m);
			uint32_t idx;
			while (sp_map_get(&sym->elf.file_keys, h, &idx) &&
			       !same_file_key(sp_sym_file_rep(&sym->elf, &sym->elf.files[idx]), m))
				h = sp_hash64(h + 1);
			if (!sp_map_get(&sym->elf.file_keys, h, &idx)) {
				idx = (uint32_t)sym->elf.nfiles;
				struct file_entry *f = &sym->elf.files[idx];
				f->rep = (uint32_t)i;
				/*
				 * A deleted file is looked for at its old path: whatever
				 * is there now is used only if the proof holds.
				 */
				f->open_path = sp_arena_strndup(&sym->strings, m->path,
								sp_path_len_undeleted(m->path));
				if (!f->open_path)
					return -ENOMEM;
				sp_map_init(&f->cache);
				sp_map_init(&f->cu_index);
				f->owner = &sym->elf;
				err = sp_map_put(&sym->elf.file_keys, h, idx);
				if (err)
					return err;
				sym->elf.nfiles++;
			}
			sym->module_file[i] = idx;
		}
		sym->nmodules = i + 1;
	}
	return err;
}

int sp_sym_take_frames(struct sp_symbolizer *sym, size_t n)
{
	if (n > sym->frames_cap || !sym->resolved) {
		size_t old = sym->frames_cap, cap = grown_cap(old, n);
		int err = grow_zeroed((void **)&sym->resolved, old, cap, sizeof(*sym->resolved));
		if (!err)
			err = grow_zeroed((void **)&sym->chains.by_frame, old, cap,
					  sizeof(*sym->chains.by_frame));
		if (!err)
			err = grow_zeroed((void **)&sym->chains.len, old, cap, sizeof(*sym->chains.len));
		if (!err)
			err = grow_zeroed((void **)&sym->frame_src, old, cap, sizeof(*sym->frame_src));
		if (!err && sym->frame_pid &&
		    !(err = grow_zeroed((void **)&sym->frame_pid, old, cap, sizeof(*sym->frame_pid))))
			for (size_t i = old; i < cap; i++)
				sym->frame_pid[i] = PID_NONE;
		if (!err && sym->stored_names.by_frame &&
		    !(err = grow_zeroed((void **)&sym->stored_names.by_frame, old, cap, sizeof(*sym->stored_names.by_frame))))
			for (size_t i = old; i < cap; i++)
				sym->stored_names.by_frame[i] = UINT32_MAX;
		if (!err && sym->tail)
			err = grow_zeroed((void **)&sym->follow.counted, old, cap,
					  sizeof(*sym->follow.counted));
		size_t nblocks = (cap + FRAME_BLOCK - 1) / FRAME_BLOCK;
		if (!err && nblocks > sym->nframe_blocks)
			err = grow_zeroed((void **)&sym->frame_blocks, sym->nframe_blocks, nblocks,
					  sizeof(*sym->frame_blocks));
		for (size_t i = sym->nframe_blocks; !err && i < nblocks; i++) {
			if (!(sym->frame_blocks[i] = calloc(FRAME_BLOCK, sizeof(**sym->frame_blocks))))
				err = -ENOMEM;
			else
				sym->nframe_blocks = i + 1;
		}
		/* Only what every array holds counts as room. */
		if (err)
			return err;
		sym->frames_cap = cap;
	}
	if (n > sym->nframes)
		sym->nframes = n;
	return 0;
}

/* ---- inline chains ----------------------------------------------------- */

struct sp_resolved_frame *sp_sym_chain_alloc(struct inline_chains *ch, size_t n)
{
	struct chain_block *b = ch->blocks;
	if (!b || b->cap - b->used < n) {
		size_t cap = n > 256 ? n : 256;
		struct chain_block *nb = malloc(sizeof(*nb) + cap * sizeof(nb->f[0]));
		if (!nb)
			return NULL;
		nb->used = 0;
		nb->cap = cap;
		nb->next = b;
		ch->blocks = b = nb;
	}
	struct sp_resolved_frame *f = b->f + b->used;
	b->used += n;
	return f;
}

void sp_sym_chain_set(struct inline_chains *ch, uint32_t frame_id, struct sp_resolved_frame *c,
		      size_t n)
{
	/*
	 * A chain stored in a spool is whatever its writer made it: 20,000
	 * entries on one frame, 2,048 deep, made one report write a gigabyte.
	 * The innermost entries and the frame's own function stay; the inlined
	 * callers between them are dropped and counted.
	 */
	if (n > SP_INLINE_CHAIN_MAX) {
		c[SP_INLINE_CHAIN_MAX - 1] = c[n - 1];
		if (ch->inline_cut)
			*ch->inline_cut += n - SP_INLINE_CHAIN_MAX;
		n = SP_INLINE_CHAIN_MAX;
	}
	ch->by_frame[frame_id] = c;
	ch->len[frame_id] = (uint32_t)n;
	*ch->inline_frames += n - 1;
}

/* ---- the streamed stacks' cache ---------------------------------------- */

void sp_stack_cache_free(struct sp_stack_cache *c)
{
	if (!c)
		return;
	sp_map_release(&c->index);
	free(c->entries);
	free(c->ids);
	free(c);
}

void sp_stack_cache_add_stats(const struct sp_stack_cache *c, struct sp_symbolizer_stats *st)
{
	if (c) {
		st->stack_cache_hits += c->hits;
		st->stack_cache_misses += c->misses;
	}
}
