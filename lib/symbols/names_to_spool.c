/* SPDX-License-Identifier: MIT */
/* Symbolize ahead of time: resolve a spool's frames once and store the results in the spool itself; at record end, name replaced images. */
#include "symbols/symbols.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Mark the frames that some sample's stack holds; markers are skipped by the caller. */
static int used_frames(const struct sp_spool *s, uint8_t **out)
{
	uint8_t *used = calloc(s->nframes ? s->nframes : 1, 1);
	uint8_t *seen = calloc(s->nstacks ? s->nstacks : 1, 1);
	if (!used || !seen) {
		free(used);
		free(seen);
		return -ENOMEM;
	}
	/* Each node is walked once: stacks sharing callers stop at the first seen node. */
	for (size_t i = 0; i < s->nsamples; i++)
		for (uint32_t id = s->samples[i].stack_id; id && !seen[id]; id = s->stack_parent[id]) {
			seen[id] = 1;
			used[s->stack_frame[id]] = 1;
		}
	free(seen);
	*out = used;
	return 0;
}

/* ---- the unresolved list ----------------------------------------------- */

struct unresolved_set {
	struct sp_symbolize_result *res;
	struct sp_map by_key; /* group key -> index into res->unresolved */
};

static int add_place(struct sp_unresolved *u, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int add_place(struct sp_unresolved *u, const char *fmt, ...)
{
	char *p;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&p, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	char **v = realloc(u->places, (u->nplaces + 1) * sizeof(*v));
	if (!v) {
		free(p);
		return -ENOMEM;
	}
	u->places = v;
	u->places[u->nplaces++] = p;
	return 0;
}

/*
 * The group of key, counting one more frame: *fresh true when it is new and
 * the caller fills in what, why and places.
 */
static int group(struct unresolved_set *set, uint64_t key, struct sp_unresolved **out, bool *fresh)
{
	struct sp_symbolize_result *res = set->res;
	uint32_t idx;
	*fresh = !sp_map_get(&set->by_key, key, &idx);
	if (*fresh) {
		struct sp_unresolved *v = realloc(res->unresolved,
						  (res->nunresolved + 1) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		res->unresolved = v;
		idx = (uint32_t)res->nunresolved;
		v[idx] = (struct sp_unresolved){0};
		int err = sp_map_put(&set->by_key, key, idx);
		if (err)
			return err;
		res->nunresolved++;
	}
	*out = &res->unresolved[idx];
	(*out)->frames++;
	return 0;
}

enum { KEY_KERNEL = 1, KEY_FILE, KEY_PID, KEY_MODULE, KEY_UNKNOWN };

/* Count an address-only frame under its module file, the kernel, or its process's perf map. */
static int note_unresolved(struct unresolved_set *set, struct sp_symbolizer *sym,
			   const struct sp_spool *s, const struct sp_symbolizer_opts *o,
			   const struct sp_frame *fr, const struct sp_resolved_frame *rf)
{
	const struct sp_module *m = fr->module_id == SP_NO_MODULE ? NULL
								 : &s->modules[fr->module_id];
	struct sp_lookup_places lp = {.file = UINT32_MAX};
	uint64_t key;
	if (rf->kind == SP_KIND_KERNEL) {
		key = KEY_KERNEL;
	} else if (m && (m->flags & SP_MODULE_ANON)) {
		key = (uint64_t)KEY_PID << 32 | (uint32_t)m->pid;
	} else if (m) {
		int err = sp_symbolizer_lookup_places(sym, fr->module_id, &lp);
		if (err)
			return err;
		key = lp.file != UINT32_MAX ? (uint64_t)KEY_FILE << 32 | lp.file
					    : (uint64_t)KEY_MODULE << 32 | fr->module_id;
	} else {
		key = KEY_UNKNOWN;
	}
	struct sp_unresolved *u;
	bool fresh;
	int err = group(set, key, &u, &fresh);
	if (err || !fresh)
		goto out;
	const char *maps = o->perf_map_dir ? o->perf_map_dir : "/tmp";
	if (key == KEY_KERNEL) {
		u->what = "[kernel]";
		u->why = o->no_kernel_symbols ? "kernel symbols turned off (--no-kernel-symbols)"
						: "no kallsyms symbol for these addresses";
		if (!o->no_kernel_symbols)
			err = add_place(u, "%s", o->kallsyms_path ? o->kallsyms_path
								  : "/proc/kallsyms");
	} else if (m && (m->flags & SP_MODULE_ANON)) {
		u->what = "anonymous code";
		u->why = "no perf map line covers these addresses";
		err = add_place(u, "%s/perf-%d.map", maps, (int)m->pid);
	} else if (lp.file != UINT32_MAX) {
		u->what = m->path;
		u->build_id_len = m->build_id_len;
		memcpy(u->build_id, m->build_id, m->build_id_len);
		u->why = lp.why;
		u->places = lp.places;
		u->nplaces = lp.nplaces;
		lp.places = NULL;
		lp.nplaces = 0;
	} else if (m) {
		u->what = m->path;
		u->why = "no file to read symbols from";
	} else {
		u->what = "[unknown]";
		u->why = "outside every recorded mapping, and in no perf map";
		err = add_place(u, "%s/perf-PID.map of the processes", maps);
	}
out:
	sp_lookup_places_release(&lp);
	return err;
}

/* ---- resolving and encoding -------------------------------------------- */

/* The kallsyms symbol or perf map line behind a frame named now, once each. */
static int add_source(struct sp_symenc *enc, struct sp_map *seen, struct sp_symbolizer *sym,
		      uint32_t frame_id, struct sp_symbolize_result *res)
{
	struct sp_frame_source src;
	if (!sp_symbolizer_frame_source(sym, frame_id, &src))
		return 0;
	/* Kernel addresses and user addresses never meet: one map serves both. */
	uint64_t key = src.origin == SP_ORIGIN_PERF_MAP
			       ? sp_hash64(src.start ^ sp_hash64((uint64_t)(uint32_t)src.pid))
			       : src.start;
	uint32_t unused;
	if (sp_map_get(seen, key, &unused))
		return 0;
	int err = sp_map_put(seen, key, 0);
	if (err)
		return err;
	if (src.origin == SP_ORIGIN_KERNEL_SYMBOLS) {
		res->kernel_symbols_written++;
		return sp_symenc_add_kernel_symbol(enc, src.start, src.size, src.name, src.module);
	}
	res->perf_map_lines_written++;
	return sp_symenc_add_perf_map_line(enc, src.pid, src.start, src.size, src.name);
}

/* Resolve the frames used[] marks, count them, and encode what was resolved now. */
static int resolve_used(const struct sp_spool *s, struct sp_symbolizer *sym,
			const struct sp_symbolizer_opts *o, const uint8_t *used,
			struct sp_symenc *enc, struct sp_symbolize_result *res)
{
	struct unresolved_set set = {.res = res};
	struct sp_map seen;
	sp_map_init(&set.by_key);
	sp_map_init(&seen);
	int err = 0;
	for (uint32_t id = 0; id < s->nframes && !err; id++) {
		const struct sp_frame *fr = &s->frames[id];
		if (!used[id] || fr->mode == SP_FRAME_TRUNCATED)
			continue;
		const struct sp_resolved_frame *chain;
		size_t n;
		err = sp_symbolizer_resolve_all(sym, id, &chain, &n);
		if (err)
			break;
		const struct sp_resolved_frame *rf = &chain[n - 1];
		bool named = rf->origin != SP_ORIGIN_ADDRESS_ONLY;
		unsigned src = sp_symbolizer_frame_src(sym, id);
		res->frames++;
		res->frames_named += named;
		res->frames_address_only += !named;
		res->kernel_frames += rf->kind == SP_KIND_KERNEL;
		res->kernel_frames_named += rf->origin == SP_ORIGIN_KERNEL_SYMBOLS;
		res->perf_map_frames_named += rf->origin == SP_ORIGIN_PERF_MAP;
		res->frames_stored_before += src == SP_FRAME_SRC_STORED;
		if (!named)
			err = note_unresolved(&set, sym, s, o, fr, rf);
		/* A stored frame resolved again stays as stored unless it gained a name. */
		if (err || src == SP_FRAME_SRC_STORED || (src == SP_FRAME_SRC_RESOLVED_AGAIN && !named))
			continue;
		err = sp_symenc_add_frame(enc, id, chain, n);
		if (!err && named)
			err = add_source(enc, &seen, sym, id, res);
	}
	sp_map_release(&set.by_key);
	sp_map_release(&seen);
	return err;
}

/* ---- writing the new spool --------------------------------------------- */

/* Copy the first n bytes of the file at path to fd. */
static int copy_prefix(const char *path, size_t n, int fd)
{
	int in = open(path, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	uint8_t buf[65536];
	int err = 0;
	while (n && !err) {
		ssize_t k = read(in, buf, n < sizeof(buf) ? n : sizeof(buf));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			err = k < 0 ? -errno : -SP_E_SPOOL_TRUNCATED; /* shrank since it was read */
		else
			err = sp_write_all(fd, buf, (size_t)k);
		n -= k > 0 ? (size_t)k : 0;
	}
	close(in);
	return err;
}

/*
 * Whether path may be written over: 0 when it is absent (*exists false) or a
 * regular file (*st its lstat).  rename(2) would replace anything else by a
 * regular file (a symlink rather than what it names, a device node such as
 * /dev/null, a FIFO): -ELOOP for a symlink, -EISDIR, -EINVAL for the rest.
 */
static int output_stat(const char *path, struct stat *st, bool *exists)
{
	*exists = false;
	if (lstat(path, st))
		return errno == ENOENT ? 0 : -errno;
	*exists = true;
	if (S_ISLNK(st->st_mode))
		return -ELOOP;
	if (S_ISDIR(st->st_mode))
		return -EISDIR;
	return S_ISREG(st->st_mode) ? 0 : -EINVAL;
}

/*
 * Write the intact prefix of in_path plus records to out_path: into a new
 * file in out_path's directory, synced, then renamed over out_path.  old is
 * out_path's lstat when it was a regular file, NULL when it was absent; the
 * new file keeps old's owner and mode, except a private spool's (a
 * system-wide one: every user's processes), which is 0600 and given to
 * another user only in place (the file it was read from): never to the
 * owner of a file made in advance at -o's path.  -EEXIST when out_path is
 * no longer what old says by the time of the rename: someone else wrote it
 * meanwhile.
 */
static int write_spool(const char *in_path, size_t prefix, const struct sp_buf *records,
		       const char *out_path, const struct stat *old, bool private_)
{
	bool in_place = !strcmp(in_path, out_path);
	char *tmp = NULL;
	int fd = sp_temp_beside(out_path, &tmp);
	int err = fd < 0 ? fd : 0;
	if (err)
		goto out;
	/* A new output gets a new file's mode (0666 less umask). */
	mode_t mode;
	if (private_) {
		mode = 0600;
	} else if (old) {
		mode = old->st_mode & 07777;
	} else {
		mode_t mask = umask(0);
		umask(mask);
		mode = 0666 & ~mask;
	}
	err = copy_prefix(in_path, prefix, fd);
	if (!err)
		err = sp_write_all(fd, records->data, records->len);
	/* The owner first: chown(2) clears the set-user-ID and set-group-ID bits. */
	if (!err && old && (in_place || !private_))
		err = sp_fd_keep_owner(fd, old);
	if (!err && (fchmod(fd, mode) || fsync(fd)))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	/*
	 * Look again just before the rename: a file created or replaced since the
	 * first look is someone else's.  rename(2) cannot be made conditional, so
	 * this narrows the window rather than closing it.
	 */
	struct stat now;
	bool exists;
	if (!err)
		err = output_stat(out_path, &now, &exists);
	if (!err && (exists != !!old ||
		     (old && (now.st_dev != old->st_dev || now.st_ino != old->st_ino))))
		err = -EEXIST;
	if (!err) {
		/* A new output never lands over one that appeared meanwhile (renameat2(2)). */
		int r = old ? -1 : renameat2(AT_FDCWD, tmp, AT_FDCWD, out_path, RENAME_NOREPLACE);
		if (r && (old || errno == EINVAL)) /* replacing, or a file system without it */
			r = rename(tmp, out_path);
		if (r)
			err = -errno;
	}
	if (err)
		unlink(tmp);
out:
	free(tmp);
	return err;
}

int sp_spool_symbolize(const char *spool_path, const char *out_path,
		       const struct sp_symbolizer_opts *opts, struct sp_symbolize_result *res)
{
	*res = (struct sp_symbolize_result){0};
	if (!spool_path)
		return -SP_E_BAD_ARG;
	struct sp_spool *s = NULL;
	struct sp_symbolizer *sym = NULL;
	struct sp_symenc *enc = NULL;
	uint8_t *used = NULL;
	struct sp_buf records;
	sp_buf_init(&records);
	struct sp_symbolizer_opts o = {0};
	if (opts)
		o = *opts;
	/* Refuse an output that is not a regular file before any work, and remember it. */
	const char *out = out_path ? out_path : spool_path;
	struct stat old;
	bool exists;
	int err = output_stat(out, &old, &exists);
	/* written over while a recording still writes it, the rest of it would be lost */
	if (!err && sp_spool_is_growing(out))
		err = -SP_E_SPOOL_BUSY;
	if (!err)
		err = sp_spool_open(spool_path, &s);
	if (!err)
		err = sp_symbolizer_new(s, &o, &sym);
	if (!err)
		err = sp_symenc_new(s, &enc);
	if (!err)
		err = used_frames(s, &used);
	if (!err)
		err = resolve_used(s, sym, &o, used, enc, res);
	if (!err)
		err = sp_symenc_finish(enc, &records);
	if (err)
		goto out;
	sp_symbolizer_stats(sym, &res->stats);
	/* The stats' strings live in the symbolizer, freed below. */
	res->stats.debug_file_mismatched = NULL;
	res->stats.section_not_inflated_file = NULL;
	res->input_truncated = s->truncated;
	res->frames_written = sp_symenc_frames(enc);
	res->bytes_written = records.len;
	if (out_path || records.len || s->truncated)
		err = write_spool(spool_path, s->intact_len, &records, out,
				  exists ? &old : NULL,
				  (sp_spool_meta(s)->flags & SP_META_SYSTEM_WIDE) != 0);
out:
	/* What the list points at must outlive the spool: keep copies. */
	for (size_t i = 0; i < res->nunresolved; i++) {
		const char *w = res->unresolved[i].what;
		res->unresolved[i].what = strdup(w ? w : "");
		if (!res->unresolved[i].what && !err)
			err = -ENOMEM;
	}
	free(used);
	sp_buf_release(&records);
	sp_symenc_free(enc);
	sp_symbolizer_free(sym);
	sp_spool_free(s);
	return err;
}

void sp_symbolize_result_release(struct sp_symbolize_result *res)
{
	for (size_t i = 0; i < res->nunresolved; i++) {
		free((char *)res->unresolved[i].what);
		for (size_t k = 0; k < res->unresolved[i].nplaces; k++)
			free(res->unresolved[i].places[k]);
		free(res->unresolved[i].places);
	}
	free(res->unresolved);
	*res = (struct sp_symbolize_result){0};
}

/* ---- naming at record end: replaced images, containers' perf maps ------- */

/* What naming at record end works with: the spool written so far, read back. */
struct end_naming {
	struct sp_spool *s;
	struct sp_symbolizer *sym;
	struct sp_symenc *enc;
	uint8_t *used; /* by frame id: a sample's stack holds it */
};

static int end_naming_begin(struct sp_spool_writer *w, const struct sp_symbolizer_opts *o,
			    struct end_naming *e)
{
	*e = (struct end_naming){0};
	int err = sp_spool_writer_read_back(w, &e->s);
	if (!err)
		err = sp_symbolizer_new(e->s, o, &e->sym);
	if (!err)
		err = sp_symenc_new(e->s, &e->enc);
	if (!err)
		err = used_frames(e->s, &e->used);
	return err;
}

/* Append what e encoded to w (unless err), *frames the frames stored; frees e.  Returns err or a new one. */
static int end_naming_finish(struct sp_spool_writer *w, struct end_naming *e, int err,
			     uint64_t *frames)
{
	struct sp_buf records;
	sp_buf_init(&records);
	if (!err)
		err = sp_symenc_finish(e->enc, &records);
	if (!err && records.len)
		err = sp_spool_writer_append_records(w, records.data, records.len);
	if (!err)
		*frames = sp_symenc_frames(e->enc);
	sp_buf_release(&records);
	free(e->used);
	sp_symenc_free(e->enc);
	sp_symbolizer_free(e->sym);
	sp_spool_free(e->s);
	return err;
}

int sp_symbolize_images(struct sp_spool_writer *w, const int *fd_by_module, size_t n,
			uint64_t *frames)
{
	*frames = 0;
	/* Only native frames are wanted: no kallsyms, no perf maps. */
	const struct sp_symbolizer_opts o = {
		.no_kernel_symbols = true,
		.perf_map_policy = SP_PERF_MAPS_NONE,
		.stored_symbols = SP_STORED_NONE,
	};
	struct end_naming e;
	int err = end_naming_begin(w, &o, &e);
	const struct sp_spool *s = e.s;
	/* A module without a file entry keeps the address form: nothing to do for it. */
	for (size_t i = 0; i < n && !err && i < s->nmodules; i++)
		if (fd_by_module[i] >= 0)
			(void)sp_symbolizer_use_file(e.sym, (uint32_t)i, fd_by_module[i]);
	for (uint32_t id = 0; !err && id < s->nframes; id++) {
		const struct sp_frame *fr = &s->frames[id];
		if (!e.used[id] || fr->mode != SP_FRAME_USER || fr->module_id >= n ||
		    fd_by_module[fr->module_id] < 0)
			continue;
		const struct sp_resolved_frame *chain;
		size_t k;
		err = sp_symbolizer_resolve_all(e.sym, id, &chain, &k);
		if (!err && chain[k - 1].origin == SP_ORIGIN_ELF)
			err = sp_symenc_add_frame(e.enc, id, chain, k);
	}
	return end_naming_finish(w, &e, err, frames);
}

int sp_symbolize_perf_maps(struct sp_spool_writer *w, const int32_t *pids, const int *fds, size_t n,
			   uint64_t *frames)
{
	*frames = 0;
	if (!n)
		return 0;
	/* Only these processes' perf maps, as they were kept: no file is looked for. */
	const struct sp_symbolizer_opts o = {
		.no_kernel_symbols = true,
		.perf_map_policy = SP_PERF_MAPS_PIDS,
		.perf_map_pids = pids,
		.perf_map_npids = n,
		.stored_symbols = SP_STORED_NONE,
	};
	struct end_naming e;
	struct sp_map seen;
	struct sp_symbolize_result res = {0};
	sp_map_init(&seen);
	int err = end_naming_begin(w, &o, &e);
	const struct sp_spool *s = e.s;
	for (size_t i = 0; i < n && !err; i++)
		if (fds[i] >= 0)
			(void)sp_symbolizer_use_perf_map_fd(e.sym, pids[i], fds[i]);
	/* Frames of anonymous code, or outside every mapping: the ones a perf map names. */
	for (uint32_t id = 0; !err && id < s->nframes; id++) {
		const struct sp_frame *fr = &s->frames[id];
		const struct sp_module *m = fr->module_id == SP_NO_MODULE || fr->module_id >= s->nmodules
						    ? NULL : sp_spool_module(s, fr->module_id);
		if (!e.used[id] || fr->mode != SP_FRAME_USER || (m && !(m->flags & SP_MODULE_ANON)))
			continue;
		const struct sp_resolved_frame *chain;
		size_t k;
		err = sp_symbolizer_resolve_all(e.sym, id, &chain, &k);
		if (err || chain[k - 1].origin != SP_ORIGIN_PERF_MAP)
			continue;
		err = sp_symenc_add_frame(e.enc, id, chain, k);
		if (!err)
			err = add_source(e.enc, &seen, e.sym, id, &res);
	}
	sp_map_release(&seen);
	return end_naming_finish(w, &e, err, frames);
}
