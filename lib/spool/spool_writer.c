/* SPDX-License-Identifier: MIT */
/* The spool writer: interns frames, stack nodes and threads, and appends whole records to the file. */
#include "spool/spool.h"

#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

/*
 * Write the buffer out once it holds this much: it bounds memory and what a
 * SIGKILLed recorder can lose, while keeping write(2) calls rare.
 */
#define FLUSH_THRESHOLD (64u * 1024)
#define NO_FRAME UINT32_MAX

/* An interned frame and the next frame whose key hashes the same. */
struct wframe {
	struct sp_frame f;
	uint32_t next;
};

struct sp_spool_writer {
	int fd;            /* -1 after finish */
	int err;           /* first write failure; every later call returns it */
	struct sp_buf out; /* whole records not yet written */
	struct sp_buf rec; /* scratch payload for records with strings */
	uint64_t written;
	uint64_t events; /* SAMPLE, OFFCPU and LOST records in the file */
	uint64_t last_timestamp_ns;
	uint64_t last_period; /* the period a SAMPLE without one weighs */
	uint64_t last_offcpu_ns; /* base of the next OFFCPU's start delta */

	/* start - file_offset per module: frames store rel_ip relative to it. */
	uint64_t *module_base;
	size_t nmodules, modules_cap;

	struct wframe *frames;
	size_t nframes, frames_cap;
	/*
	 * A frame key (module, mode, abs_ip) does not fit in 64 bits, so the map
	 * goes from a hash of it to the newest frame with that hash, and
	 * wframe.next chains the rest: lookups compare fields, never trust hashes.
	 */
	struct sp_map frame_by_hash;

	/* (parent << 32 | frame) -> node: the key is exact. */
	struct sp_map stack_by_edge;
	uint32_t nnodes;

	/* (pid << 32 | tid) -> index. */
	struct sp_map thread_by_id;
	uint32_t nthreads;

	/* Segment mode (sp_spool_writer_open_fd): the dictionaries, re-emitted per file. */
	struct wseg *seg;
	/* Flight recorder (sp_spool_writer_open_rolling): the window's records, in memory. */
	struct wroll *roll;
	/* Compaction (sp_spool_writer_compact_begin): the marks, then the new ids. */
	struct wkeep *keep;
	size_t compact_base; /* dictionary entries after the last compaction */
};

/*
 * A writer in segment mode keeps every dictionary entry it interned (its
 * global id is what callers hold) and writes one into the current file only
 * when a record of that file first needs it, under the file's own id: each
 * segment is a complete spool that reports alone (docs/DESIGN.md, decision 13).
 */
#define NOT_HERE UINT32_MAX

struct wfact { /* what a segment re-states about a process */
	int32_t pid;
	bool has_owner, has_exec;
	struct sp_owner owner;
	struct sp_exec exec;
	uint64_t gen; /* the segment that has them */
};

/*
 * A record of the flight recorder's window, in the writer's ids (type
 * SP_REC_SAMPLE, SP_REC_OFFCPU or SP_REC_LOST); written out by a snapshot.
 */
struct wevent {
	uint64_t time;   /* the sample's, the interval's start, the loss's */
	uint64_t value;  /* period, duration or lost count */
	uint32_t thread, stack, flags;
	uint8_t type;
};

struct wroll {
	uint64_t window_ns;
	struct wevent *ev; /* a ring: n events from head, oldest first */
	size_t cap, head, n;
	uint64_t newest; /* the latest time seen */
	struct sp_spool_meta meta; /* strings owned below */
	char *strs[3];
};

struct wseg {
	uint64_t gen; /* segments begun */
	struct sp_buf mod_bytes; /* every MODULE payload, back to back */
	size_t *mod_off;
	int32_t *mod_pid;
	uint32_t *mod_len, *mod_here;
	uint32_t *mod_same; /* a module's same_bytes_as (the first's id + 1 in the whole recording) */
	size_t mods_cap;
	uint32_t *frame_here;
	size_t frames_cap;
	uint32_t *node_parent, *node_frame, *node_here; /* by node id; 0 is the empty stack */
	size_t nodes_cap;
	int32_t *thr_pid, *thr_tid;
	char **thr_name;
	uint32_t *thr_here;
	size_t thr_cap;
	struct sp_map fact_by_pid;
	struct wfact *facts;
	size_t nfacts, facts_cap;
	uint32_t *walk; /* nodes to write, leaf first */
	size_t walk_cap;
	/* counts in the current file */
	uint32_t nmodules, nframes, nnodes, nthreads;
};

/* A flight recorder between snapshots: records go to its window, not to a file. */
static bool idle(const struct sp_spool_writer *w)
{
	return w->roll && w->fd < 0;
}

/* Append one record (type, length, payload) to the buffer; flush past the threshold. */
static int emit(struct sp_spool_writer *w, uint8_t type, const uint8_t *payload, size_t len)
{
	if (w->err)
		return w->err;
	if (w->fd < 0)
		return -EBADF;
	int err = sp_buf_reserve(&w->out, 1 + SP_VARINT_MAX + len);
	if (err)
		return err;
	uint8_t *p = w->out.data + w->out.len;
	*p++ = type;
	p = sp_enc_uvarint(p, len);
	if (len)
		memcpy(p, payload, len);
	w->out.len = (size_t)(p + len - w->out.data);
	return w->out.len >= FLUSH_THRESHOLD ? sp_spool_writer_flush(w) : 0;
}

int sp_spool_writer_flush(struct sp_spool_writer *w)
{
	if (idle(w))
		return 0;
	if (w->err)
		return w->err;
	if (w->fd < 0)
		return -EBADF;
	size_t off = 0;
	while (off < w->out.len) {
		ssize_t n = write(w->fd, w->out.data + off, w->out.len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* The file may now end mid-record: the reader recovers the prefix. */
			w->err = n < 0 ? -errno : -EIO;
			return w->err;
		}
		off += (size_t)n;
		w->written += (uint64_t)n;
	}
	w->out.len = 0;
	return 0;
}

/* ---- segment mode ---------------------------------------------------- */

static int emit_frame(struct sp_spool_writer *w, const struct sp_frame *f, uint32_t file_module);
static int emit_node(struct sp_spool_writer *w, uint32_t back, uint32_t frame);
static int emit_thread(struct sp_spool_writer *w, int32_t pid, int32_t tid);
static int emit_name(struct sp_spool_writer *w, uint32_t index, const char *name);
static int emit_exec(struct sp_spool_writer *w, const struct sp_exec *e);
static int emit_owner(struct sp_spool_writer *w, const struct sp_owner *o);

static int seg_keep_module(struct sp_spool_writer *w, int32_t pid, const uint8_t *payload,
			   size_t len, uint32_t same_bytes_as)
{
	struct wseg *g = w->seg;
	size_t n = w->nmodules;
	if (n >= g->mods_cap) {
		size_t cap = g->mods_cap;
		int err = SP_GROW(g->mod_off, n, cap);
		cap = g->mods_cap;
		err = err ? err : SP_GROW(g->mod_pid, n, cap);
		cap = g->mods_cap;
		err = err ? err : SP_GROW(g->mod_len, n, cap);
		cap = g->mods_cap;
		err = err ? err : SP_GROW(g->mod_here, n, cap);
		cap = g->mods_cap;
		err = err ? err : SP_GROW(g->mod_same, n, cap);
		if (err)
			return err;
		g->mods_cap = cap;
	}
	g->mod_same[n] = same_bytes_as;
	g->mod_off[n] = g->mod_bytes.len;
	g->mod_len[n] = (uint32_t)len;
	g->mod_pid[n] = pid;
	g->mod_here[n] = NOT_HERE;
	return sp_buf_append(&g->mod_bytes, payload, len);
}

static int seg_keep_node(struct sp_spool_writer *w, uint32_t node, uint32_t parent, uint32_t frame)
{
	struct wseg *g = w->seg;
	if (node >= g->nodes_cap) {
		size_t cap = g->nodes_cap;
		int err = SP_GROW(g->node_parent, node, cap);
		cap = g->nodes_cap;
		err = err ? err : SP_GROW(g->node_frame, node, cap);
		cap = g->nodes_cap;
		err = err ? err : SP_GROW(g->node_here, node, cap);
		if (err)
			return err;
		g->nodes_cap = cap;
	}
	g->node_parent[node] = parent;
	g->node_frame[node] = frame;
	g->node_here[node] = NOT_HERE;
	return 0;
}

static int seg_keep_thread(struct sp_spool_writer *w, int32_t pid, int32_t tid)
{
	struct wseg *g = w->seg;
	size_t n = w->nthreads;
	if (n >= g->thr_cap) {
		size_t cap = g->thr_cap;
		int err = SP_GROW(g->thr_pid, n, cap);
		cap = g->thr_cap;
		err = err ? err : SP_GROW(g->thr_tid, n, cap);
		cap = g->thr_cap;
		err = err ? err : SP_GROW(g->thr_name, n, cap);
		cap = g->thr_cap;
		err = err ? err : SP_GROW(g->thr_here, n, cap);
		if (err)
			return err;
		g->thr_cap = cap;
	}
	g->thr_pid[n] = pid;
	g->thr_tid[n] = tid;
	g->thr_name[n] = NULL;
	g->thr_here[n] = NOT_HERE;
	return 0;
}

/* pid's facts, restated in this file (its exec, its owner) the first time it needs them. */
static int seg_fact(struct sp_spool_writer *w, int32_t pid, struct wfact **out)
{
	struct wseg *g = w->seg;
	uint32_t i;
	struct wfact *f;
	if (sp_map_get(&g->fact_by_pid, (uint64_t)(uint32_t)pid, &i)) {
		f = &g->facts[i];
	} else {
		int err = SP_GROW(g->facts, g->nfacts, g->facts_cap);
		err = err ? err : sp_map_put(&g->fact_by_pid, (uint64_t)(uint32_t)pid,
					     (uint32_t)g->nfacts);
		if (err)
			return err;
		f = &g->facts[g->nfacts++];
		memset(f, 0, sizeof(*f));
		f->pid = pid;
		f->gen = g->gen;
	}
	if (f->gen != g->gen && !idle(w)) {
		f->gen = g->gen;
		int err = f->has_exec ? emit_exec(w, &f->exec) : 0;
		err = err ? err : f->has_owner ? emit_owner(w, &f->owner) : 0;
		if (err)
			return err;
	}
	if (out)
		*out = f;
	return 0;
}

static int seg_module(struct sp_spool_writer *w, uint32_t m, uint32_t *out)
{
	struct wseg *g = w->seg;
	if (g->mod_here[m] == NOT_HERE) {
		/*
		 * A group of identical files is named by its first module's id in this file: the
		 * first comes before it here too, and the stored payload gains the local id + 1.
		 */
		uint32_t first = 0;
		int err = g->mod_same[m] ? seg_module(w, g->mod_same[m] - 1, &first) : 0;
		err = err ? err : g->mod_pid[m] >= 0 ? seg_fact(w, g->mod_pid[m], NULL) : 0;
		uint8_t *rec = err ? NULL : malloc(g->mod_len[m] + 10);
		if (!err && !rec)
			err = -ENOMEM;
		if (!err) {
			memcpy(rec, g->mod_bytes.data + g->mod_off[m], g->mod_len[m]);
			uint8_t *end = g->mod_same[m] ? sp_enc_uvarint(rec + g->mod_len[m], first + 1)
						      : rec + g->mod_len[m];
			err = emit(w, SP_REC_MODULE, rec, (size_t)(end - rec));
		}
		free(rec);
		if (err)
			return err;
		g->mod_here[m] = g->nmodules++;
	}
	*out = g->mod_here[m];
	return 0;
}

static int seg_frame(struct sp_spool_writer *w, uint32_t id, uint32_t *out)
{
	struct wseg *g = w->seg;
	if (g->frame_here[id] == NOT_HERE) {
		const struct sp_frame *f = &w->frames[id].f;
		uint32_t m = SP_NO_MODULE;
		int err = f->module_id != SP_NO_MODULE ? seg_module(w, f->module_id, &m) : 0;
		err = err ? err : emit_frame(w, f, m);
		if (err)
			return err;
		g->frame_here[id] = g->nframes++;
	}
	*out = g->frame_here[id];
	return 0;
}

/* Stack node id in this file, writing the nodes (and frames) it lacks, root first. */
static int seg_stack(struct sp_spool_writer *w, uint32_t node, uint32_t *out)
{
	struct wseg *g = w->seg;
	size_t n = 0;
	for (uint32_t i = node; i && g->node_here[i] == NOT_HERE; i = g->node_parent[i]) {
		int err = SP_GROW(g->walk, n, g->walk_cap);
		if (err)
			return err;
		g->walk[n++] = i;
	}
	while (n--) {
		uint32_t i = g->walk[n], parent = g->node_parent[i], frame;
		uint32_t here_parent = parent ? g->node_here[parent] : 0;
		int err = seg_frame(w, g->node_frame[i], &frame);
		err = err ? err : emit_node(w, g->nnodes + 1 - here_parent, frame);
		if (err)
			return err;
		g->node_here[i] = ++g->nnodes;
	}
	*out = node ? g->node_here[node] : 0;
	return 0;
}

static int seg_thread(struct sp_spool_writer *w, uint32_t t, uint32_t *out)
{
	struct wseg *g = w->seg;
	if (g->thr_here[t] == NOT_HERE) {
		int err = seg_fact(w, g->thr_pid[t], NULL);
		err = err ? err : emit_thread(w, g->thr_pid[t], g->thr_tid[t]);
		if (err)
			return err;
		g->thr_here[t] = g->nthreads++;
		if (g->thr_name[t] && (err = emit_name(w, g->thr_here[t], g->thr_name[t])))
			return err;
	}
	*out = g->thr_here[t];
	return 0;
}

static void seg_free(struct wseg *g, size_t nthreads)
{
	if (!g)
		return;
	sp_buf_release(&g->mod_bytes);
	free(g->mod_off);
	free(g->mod_pid);
	free(g->mod_len);
	free(g->mod_here);
	free(g->mod_same);
	free(g->frame_here);
	free(g->node_parent);
	free(g->node_frame);
	free(g->node_here);
	for (size_t i = 0; g->thr_name && i < nthreads; i++)
		free(g->thr_name[i]);
	free(g->thr_pid);
	free(g->thr_tid);
	free(g->thr_name);
	free(g->thr_here);
	sp_map_release(&g->fact_by_pid);
	free(g->facts);
	free(g->walk);
	free(g);
}

int sp_spool_writer_append_records(struct sp_spool_writer *w, const void *records, size_t len)
{
	if (w->err)
		return w->err;
	if (w->fd < 0)
		return -EBADF;
	int err = sp_buf_append(&w->out, records, len);
	if (err)
		return err;
	return w->out.len >= FLUSH_THRESHOLD ? sp_spool_writer_flush(w) : 0;
}

int sp_spool_writer_read_back(struct sp_spool_writer *w, struct sp_spool **out)
{
	int err = sp_spool_writer_flush(w);
	if (err)
		return err;
	/* The writer's fd is write-only: reopen the same file (not its path, which may have moved). */
	char self[64];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", w->fd);
	return sp_spool_open(self, out);
}

uint64_t sp_spool_writer_bytes(const struct sp_spool_writer *w)
{
	return w->written;
}

uint64_t sp_spool_writer_events(const struct sp_spool_writer *w)
{
	return w->events;
}

static const char *str_or_empty(const char *s)
{
	return s ? s : "";
}

static int write_meta(struct sp_spool_writer *w, const struct sp_spool_meta *m)
{
	const char *strs[] = {str_or_empty(m->command), str_or_empty(m->hostname),
			      str_or_empty(m->kernel_release)};
	size_t need = 8 * SP_VARINT_MAX;
	for (size_t i = 0; i < SP_ARRAY_SIZE(strs); i++)
		need += SP_VARINT_MAX + strlen(strs[i]);
	int err = sp_buf_reserve(&w->rec, need);
	if (err)
		return err;
	uint8_t *p = w->rec.data;
	p = sp_enc_uvarint(p, m->start_timestamp_us);
	p = sp_enc_uvarint(p, m->sample_interval_us);
	p = sp_enc_uvarint(p, m->start_monotonic_ns);
	p = sp_enc_uvarint(p, m->frequency_hz);
	p = sp_enc_uvarint(p, m->stack_size);
	p = sp_enc_uvarint(p, m->event_source);
	for (size_t i = 0; i < SP_ARRAY_SIZE(strs); i++) {
		size_t n = strlen(strs[i]);
		p = sp_enc_uvarint(p, n);
		memcpy(p, strs[i], n);
		p += n;
	}
	/* appended after the strings: readers before them stop there */
	p = sp_enc_uvarint(p, m->sample_period);
	p = sp_enc_uvarint(p, m->flags);
	return emit(w, SP_REC_META, w->rec.data, (size_t)(p - w->rec.data));
}

/* The header and META record of a new file, flushed at once: a recorder killed then still leaves a valid spool. */
static int begin_file(struct sp_spool_writer *w, const struct sp_spool_meta *meta)
{
	w->last_timestamp_ns = meta->start_monotonic_ns;
	w->last_period = meta->sample_period;
	w->last_offcpu_ns = meta->start_monotonic_ns;
	uint8_t header[SP_SPOOL_HEADER_LEN];
	memcpy(header, SP_SPOOL_MAGIC, SP_SPOOL_MAGIC_LEN);
	header[SP_SPOOL_MAGIC_LEN] = SP_SPOOL_VERSION & 0xff;
	header[SP_SPOOL_MAGIC_LEN + 1] = SP_SPOOL_VERSION >> 8;
	int err = sp_buf_append(&w->out, header, sizeof(header));
	err = err ? err : write_meta(w, meta);
	return err ? err : sp_spool_writer_flush(w);
}

int sp_spool_writer_open_fd(int fd, const struct sp_spool_meta *meta, bool segments,
			    struct sp_spool_writer **out)
{
	if (fd < 0 || !meta || !out)
		return -SP_E_BAD_ARG;
	struct sp_spool_writer *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	sp_buf_init(&w->out);
	sp_buf_init(&w->rec);
	sp_map_init(&w->frame_by_hash);
	sp_map_init(&w->stack_by_edge);
	sp_map_init(&w->thread_by_id);
	w->fd = fd;
	int err = 0;
	if (segments) {
		w->seg = calloc(1, sizeof(*w->seg));
		if (!w->seg)
			err = -ENOMEM;
		else {
			sp_buf_init(&w->seg->mod_bytes);
			sp_map_init(&w->seg->fact_by_pid);
			err = seg_keep_node(w, 0, 0, 0);
			if (!err)
				w->seg->node_here[0] = 0;
		}
	}
	err = err ? err : begin_file(w, meta);
	if (err) {
		/* A failed open writes nothing more: the caller gets an error, not a spool. */
		w->out.len = 0;
		sp_spool_writer_free(w);
		return err;
	}
	*out = w;
	return 0;
}

int sp_spool_writer_open(const char *path, const struct sp_spool_meta *meta,
			 struct sp_spool_writer **out)
{
	if (!path || !meta || !out)
		return -SP_E_BAD_ARG;
	/* Never through another user's symlink, never into a FIFO or device. */
	/*
	 * A system-wide spool shows every user's processes: its owner's alone,
	 * as perf.data is; others follow the umask.
	 */
	/*
	 * Locked until the file is closed: readers tell a spool still growing
	 * (sp_spool_is_growing), and a second recording into it is refused
	 * before it truncates anything.
	 */
	int fd = sp_output_create_locked(path, (meta->flags & SP_META_SYSTEM_WIDE) ? 0600 : 0666);
	if (fd < 0)
		return fd;
	return sp_spool_writer_open_fd(fd, meta, false, out);
}

int sp_spool_writer_add_module(struct sp_spool_writer *w, const struct sp_module *m,
			       uint32_t *id)
{
	if (!m || m->end < m->start || m->build_id_len > SP_BUILD_ID_MAX)
		return -SP_E_BAD_ARG;
	if (w->nmodules >= UINT32_MAX - 1)
		return -EOVERFLOW;
	int err = SP_GROW(w->module_base, w->nmodules, w->modules_cap);
	if (err)
		return err;
	const char *path = str_or_empty(m->path);
	size_t plen = strlen(path);
	if (m->same_bytes_as > w->nmodules)
		return -SP_E_BAD_ARG; /* a module record to come */
	err = sp_buf_reserve(&w->rec, 15 * SP_VARINT_MAX + m->build_id_len + plen);
	if (err)
		return err;
	uint8_t *p = w->rec.data;
	p = sp_enc_svarint(p, m->pid);
	p = sp_enc_uvarint(p, m->start);
	p = sp_enc_uvarint(p, m->end - m->start);
	p = sp_enc_uvarint(p, m->file_offset);
	p = sp_enc_uvarint(p, m->inode);
	p = sp_enc_uvarint(p, m->dev_major);
	p = sp_enc_uvarint(p, m->dev_minor);
	p = sp_enc_uvarint(p, m->load_bias);
	p = sp_enc_uvarint(p, m->file_size);
	p = sp_enc_svarint(p, m->mtime_ns);
	p = sp_enc_uvarint(p, m->flags);
	p = sp_enc_uvarint(p, m->build_id_len);
	memcpy(p, m->build_id, m->build_id_len);
	p += m->build_id_len;
	p = sp_enc_uvarint(p, plen);
	memcpy(p, path, plen);
	p += plen;
	if (w->seg) /* its group's first is named when the module is written to a segment */
		err = seg_keep_module(w, m->pid, w->rec.data, (size_t)(p - w->rec.data),
				      m->same_bytes_as);
	else {
		if (m->same_bytes_as) /* appended: older readers ignore it */
			p = sp_enc_uvarint(p, m->same_bytes_as);
		err = emit(w, SP_REC_MODULE, w->rec.data, (size_t)(p - w->rec.data));
	}
	if (err)
		return err;
	w->module_base[w->nmodules] = m->start - m->file_offset;
	*id = (uint32_t)w->nmodules++;
	return 0;
}

/* A FRAME record of f, its module being the file's module file_module. */
static int emit_frame(struct sp_spool_writer *w, const struct sp_frame *f, uint32_t file_module)
{
	/*
	 * rel_ip is almost always abs_ip - start + file_offset (0 for frames
	 * without a module), so store the difference from that: one byte.
	 */
	uint64_t expect = 0;
	if (f->module_id != SP_NO_MODULE)
		expect = f->abs_ip - w->module_base[f->module_id];
	uint8_t rec[4 * SP_VARINT_MAX];
	uint8_t *p = rec;
	p = sp_enc_uvarint(p, f->module_id == SP_NO_MODULE ? 0 : (uint64_t)file_module + 1);
	p = sp_enc_uvarint(p, f->mode);
	p = sp_enc_uvarint(p, f->abs_ip);
	p = sp_enc_svarint(p, (int64_t)(expect - f->rel_ip));
	return emit(w, SP_REC_FRAME, rec, (size_t)(p - rec));
}

static uint64_t frame_hash(const struct sp_frame *f)
{
	return sp_hash64(f->abs_ip ^ sp_hash64(((uint64_t)f->module_id << 8 | f->mode) + 1));
}

static bool same_frame(const struct sp_frame *a, const struct sp_frame *b)
{
	return a->abs_ip == b->abs_ip && a->module_id == b->module_id && a->mode == b->mode &&
	       a->rel_ip == b->rel_ip;
}

int sp_spool_writer_intern_frame(struct sp_spool_writer *w, const struct sp_frame *f,
				 uint32_t *id)
{
	uint64_t h = frame_hash(f);
	uint32_t head = NO_FRAME;
	if (sp_map_get(&w->frame_by_hash, h, &head)) {
		for (uint32_t i = head; i != NO_FRAME; i = w->frames[i].next) {
			if (same_frame(&w->frames[i].f, f)) {
				*id = i;
				return 0;
			}
		}
	}
	if ((f->module_id != SP_NO_MODULE && f->module_id >= w->nmodules) ||
	    f->mode > SP_FRAME_TRUNCATED)
		return -SP_E_BAD_ARG;
	if (w->nframes >= NO_FRAME - 1)
		return -EOVERFLOW;
	int err = SP_GROW(w->frames, w->nframes, w->frames_cap);
	if (err)
		return err;

	if (w->seg) {
		err = SP_GROW(w->seg->frame_here, w->nframes, w->seg->frames_cap);
		if (!err)
			w->seg->frame_here[w->nframes] = NOT_HERE;
	} else {
		err = emit_frame(w, f, f->module_id);
	}
	if (err)
		return err;
	uint32_t nid = (uint32_t)w->nframes++;
	w->frames[nid].f = *f;
	w->frames[nid].next = head;
	*id = nid;
	/* On failure the frame stays valid in the file; an equal one later just gets a new id. */
	return sp_map_put(&w->frame_by_hash, h, nid);
}

/* A STACK record: the parent distance back nodes, the file's frame id. */
static int emit_node(struct sp_spool_writer *w, uint32_t back, uint32_t frame)
{
	/* Parent as a backward distance: usually 1, as nodes are written root first. */
	uint8_t rec[2 * SP_VARINT_MAX];
	uint8_t *p = sp_enc_uvarint(rec, back);
	p = sp_enc_uvarint(p, frame);
	return emit(w, SP_REC_STACK, rec, (size_t)(p - rec));
}

int sp_spool_writer_intern_node(struct sp_spool_writer *w, uint32_t parent, uint32_t frame,
				uint32_t *node)
{
	if (frame >= w->nframes || parent > w->nnodes)
		return -SP_E_BAD_ARG;
	uint64_t key = (uint64_t)parent << 32 | frame;
	if (sp_map_get(&w->stack_by_edge, key, node))
		return 0;
	if (w->nnodes >= UINT32_MAX - 1)
		return -EOVERFLOW;
	uint32_t next = w->nnodes + 1;
	int err = w->seg ? seg_keep_node(w, next, parent, frame) : emit_node(w, next - parent, frame);
	if (err)
		return err;
	w->nnodes = next;
	err = sp_map_put(&w->stack_by_edge, key, next);
	if (err)
		return err;
	*node = next;
	return 0;
}

int sp_spool_writer_intern_stack(struct sp_spool_writer *w, const uint32_t *frames,
				 size_t n, uint32_t *stack_id)
{
	uint32_t node = 0;
	/* Build from the root end so stacks sharing callers share nodes. */
	for (size_t i = n; i-- > 0;) {
		int err = sp_spool_writer_intern_node(w, node, frames[i], &node);
		if (err)
			return err;
	}
	*stack_id = node;
	return 0;
}

static int emit_thread(struct sp_spool_writer *w, int32_t pid, int32_t tid)
{
	uint8_t rec[2 * SP_VARINT_MAX];
	uint8_t *p = sp_enc_svarint(rec, pid);
	p = sp_enc_svarint(p, tid);
	return emit(w, SP_REC_THREAD, rec, (size_t)(p - rec));
}

int sp_spool_writer_intern_thread(struct sp_spool_writer *w, int32_t pid, int32_t tid,
				  uint32_t *index)
{
	uint64_t key = (uint64_t)(uint32_t)pid << 32 | (uint32_t)tid;
	if (sp_map_get(&w->thread_by_id, key, index))
		return 0;
	if (w->nthreads >= UINT32_MAX - 1)
		return -EOVERFLOW;
	int err = w->seg ? seg_keep_thread(w, pid, tid) : emit_thread(w, pid, tid);
	if (err)
		return err;
	*index = w->nthreads++;
	return sp_map_put(&w->thread_by_id, key, *index);
}

static int emit_name(struct sp_spool_writer *w, uint32_t index, const char *name);

int sp_spool_writer_set_thread_name(struct sp_spool_writer *w, uint32_t index,
				    const char *name)
{
	if (index >= w->nthreads)
		return -SP_E_BAD_ARG;
	name = str_or_empty(name);
	if (w->seg) {
		char *copy = strdup(name);
		if (!copy)
			return -ENOMEM;
		free(w->seg->thr_name[index]);
		w->seg->thr_name[index] = copy;
		/*
		 * Written with the thread, when a record of this file needs it; a
		 * flight recorder between snapshots has no file (what the last
		 * snapshot wrote is not here any more): writing now failed with
		 * EBADF and stopped the recording.
		 */
		if (w->seg->thr_here[index] == NOT_HERE || idle(w))
			return 0;
		index = w->seg->thr_here[index];
	}
	return emit_name(w, index, name);
}

static int emit_name(struct sp_spool_writer *w, uint32_t index, const char *name)
{
	size_t n = strlen(name);
	int err = sp_buf_reserve(&w->rec, 2 * SP_VARINT_MAX + n);
	if (err)
		return err;
	uint8_t *p = sp_enc_uvarint(w->rec.data, index);
	p = sp_enc_uvarint(p, n);
	memcpy(p, name, n);
	p += n;
	return emit(w, SP_REC_THREAD_NAME, w->rec.data, (size_t)(p - w->rec.data));
}

int sp_spool_writer_append_sample(struct sp_spool_writer *w, uint32_t thread,
				  uint32_t stack_id, uint64_t timestamp_ns)
{
	return sp_spool_writer_append_weighted_sample(w, thread, stack_id, timestamp_ns, 0);
}

static int roll_push(struct sp_spool_writer *w, const struct wevent *e);

int sp_spool_writer_append_weighted_sample(struct sp_spool_writer *w, uint32_t thread,
					   uint32_t stack_id, uint64_t timestamp_ns,
					   uint64_t period)
{
	if (thread >= w->nthreads || stack_id > w->nnodes)
		return -SP_E_BAD_ARG;
	if (idle(w))
		return roll_push(w, &(struct wevent){.time = timestamp_ns, .value = period,
						     .thread = thread, .stack = stack_id,
						     .type = SP_REC_SAMPLE});
	if (w->seg) {
		int err = seg_thread(w, thread, &thread);
		err = err ? err : seg_stack(w, stack_id, &stack_id);
		if (err)
			return err;
	}
	uint8_t rec[4 * SP_VARINT_MAX];
	uint8_t *p = sp_enc_uvarint(rec, thread);
	p = sp_enc_uvarint(p, stack_id);
	/* Wrapping difference: exact for any pair, small for neighbours in either order. */
	p = sp_enc_svarint(p, (int64_t)(timestamp_ns - w->last_timestamp_ns));
	/* An appended field older readers ignore, present only when the period changed. */
	bool changed = period && period != w->last_period;
	if (changed)
		p = sp_enc_uvarint(p, period);
	int err = emit(w, SP_REC_SAMPLE, rec, (size_t)(p - rec));
	if (err)
		return err;
	w->events++;
	w->last_timestamp_ns = timestamp_ns;
	if (changed)
		w->last_period = period;
	return 0;
}

int sp_spool_writer_append_offcpu(struct sp_spool_writer *w, const struct sp_offcpu *o)
{
	if (o->thread >= w->nthreads || o->stack_id > w->nnodes)
		return -SP_E_BAD_ARG;
	if (idle(w))
		return roll_push(w, &(struct wevent){.time = o->start_ns, .value = o->duration_ns,
						     .thread = o->thread, .stack = o->stack_id,
						     .flags = o->flags, .type = SP_REC_OFFCPU});
	uint32_t thread = o->thread, stack_id = o->stack_id;
	if (w->seg) {
		int err = seg_thread(w, thread, &thread);
		err = err ? err : seg_stack(w, stack_id, &stack_id);
		if (err)
			return err;
	}
	uint8_t rec[5 * SP_VARINT_MAX];
	uint8_t *p = sp_enc_uvarint(rec, thread);
	p = sp_enc_uvarint(p, stack_id);
	p = sp_enc_svarint(p, (int64_t)(o->start_ns - w->last_offcpu_ns));
	p = sp_enc_uvarint(p, o->duration_ns);
	p = sp_enc_uvarint(p, o->flags);
	int err = emit(w, SP_REC_OFFCPU, rec, (size_t)(p - rec));
	if (!err) {
		w->last_offcpu_ns = o->start_ns;
		w->events++;
	}
	return err;
}

int sp_spool_writer_append_exec(struct sp_spool_writer *w, const struct sp_exec *e)
{
	if (w->seg) {
		struct wfact *f;
		int err = seg_fact(w, e->pid, &f);
		if (err)
			return err;
		f->has_exec = true;
		f->exec = *e;
		if (idle(w))
			return 0;
	}
	return emit_exec(w, e);
}

static int emit_exec(struct sp_spool_writer *w, const struct sp_exec *e)
{
	uint8_t rec[3 * SP_VARINT_MAX];
	uint8_t *p = sp_enc_uvarint(rec, e->timestamp_ns);
	p = sp_enc_svarint(p, e->pid);
	p = sp_enc_uvarint(p, e->is_python_runtime ? SP_EXEC_PYTHON : 0);
	return emit(w, SP_REC_EXEC, rec, (size_t)(p - rec));
}

int sp_spool_writer_append_owner(struct sp_spool_writer *w, const struct sp_owner *o)
{
	if (w->seg) {
		struct wfact *f;
		int err = seg_fact(w, o->pid, &f);
		if (err)
			return err;
		f->has_owner = true;
		f->owner = *o;
		if (idle(w))
			return 0;
	}
	return emit_owner(w, o);
}

static int emit_owner(struct sp_spool_writer *w, const struct sp_owner *o)
{
	uint8_t rec[3 * SP_VARINT_MAX];
	uint8_t *p = sp_enc_uvarint(rec, o->timestamp_ns);
	p = sp_enc_svarint(p, o->pid);
	p = sp_enc_uvarint(p, o->uid);
	return emit(w, SP_REC_OWNER, rec, (size_t)(p - rec));
}

int sp_spool_writer_append_lost(struct sp_spool_writer *w, uint64_t count,
				uint64_t timestamp_ns)
{
	if (idle(w))
		return roll_push(w, &(struct wevent){.time = timestamp_ns, .value = count,
						     .type = SP_REC_LOST});
	uint8_t rec[2 * SP_VARINT_MAX];
	uint8_t *p = sp_enc_uvarint(rec, count);
	p = sp_enc_uvarint(p, timestamp_ns);
	int err = emit(w, SP_REC_LOST, rec, (size_t)(p - rec));
	w->events += !err;
	return err;
}

static int write_summary(struct sp_spool_writer *w, const struct sp_summary *s)
{
	/* Array lengths go first so a later version can add stop reasons and error kinds. */
	uint8_t rec[(16 + SP_STOP_COUNT_ + SP_ERR_COUNT_) * SP_VARINT_MAX];
	uint8_t *p = rec;
	p = sp_enc_uvarint(p, s->sample_events);
	p = sp_enc_uvarint(p, s->samples);
	p = sp_enc_uvarint(p, s->lost_events);
	p = sp_enc_uvarint(p, s->kernel_enabled);
	p = sp_enc_uvarint(p, s->missing_pid_samples);
	p = sp_enc_uvarint(p, s->missing_tid_samples);
	p = sp_enc_uvarint(p, s->idle_tid_samples);
	p = sp_enc_uvarint(p, s->missing_timestamp_samples);
	p = sp_enc_uvarint(p, s->empty_stack_samples);
	p = sp_enc_uvarint(p, s->truncated_frame_markers);
	p = sp_enc_uvarint(p, s->ignored_user_callchain_frames);
	p = sp_enc_uvarint(p, SP_STOP_COUNT_);
	for (unsigned i = 0; i < SP_STOP_COUNT_; i++)
		p = sp_enc_uvarint(p, s->stop_reasons[i]);
	p = sp_enc_uvarint(p, SP_ERR_COUNT_);
	for (unsigned i = 0; i < SP_ERR_COUNT_; i++)
		p = sp_enc_uvarint(p, s->error_stats[i]);
	/* Fields added after version 1's first release go last; old readers skip them. */
	p = sp_enc_uvarint(p, s->spliced_stacks);
	p = sp_enc_uvarint(p, s->code_frames);
	p = sp_enc_uvarint(p, s->fp_frames);
	return emit(w, SP_REC_SUMMARY, rec, (size_t)(p - rec));
}

int sp_spool_writer_finish(struct sp_spool_writer *w, const struct sp_summary *s)
{
	static const struct sp_summary zero;
	int err = write_summary(w, s ? s : &zero);
	if (!err)
		err = sp_spool_writer_flush(w);
	if (w->fd < 0)
		return err;
	if (!err && fsync(w->fd) && errno != EINVAL)
		err = -errno;
	/* close(2) can report a deferred write error (NFS); it matters here. */
	if (close(w->fd) && !err && errno != EINTR)
		err = -errno;
	w->fd = -1;
	return err;
}

/* A new file: nothing of the dictionaries is in it yet. */
static void seg_reset(struct sp_spool_writer *w)
{
	struct wseg *g = w->seg;
	g->gen++;
	g->nmodules = g->nframes = g->nnodes = g->nthreads = 0;
	if (w->nmodules)
		memset(g->mod_here, 0xff, w->nmodules * sizeof(*g->mod_here));
	if (w->nframes)
		memset(g->frame_here, 0xff, w->nframes * sizeof(*g->frame_here));
	memset(g->node_here + 1, 0xff, w->nnodes * sizeof(*g->node_here));
	if (w->nthreads)
		memset(g->thr_here, 0xff, w->nthreads * sizeof(*g->thr_here));
}

/* ---- flight recorder ---------------------------------------------------- */

/* Forget the window's events older than now - window (oldest first). */
static void roll_evict(struct wroll *r, uint64_t now)
{
	while (r->n && r->ev[r->head].time + r->window_ns < now) {
		r->head = (r->head + 1) % r->cap;
		r->n--;
	}
}

static int roll_push(struct sp_spool_writer *w, const struct wevent *e)
{
	struct wroll *r = w->roll;
	if (e->time > r->newest && e->type != SP_REC_OFFCPU)
		r->newest = e->time;
	roll_evict(r, r->newest);
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 1024;
		struct wevent *v = malloc(cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		for (size_t i = 0; i < r->n; i++)
			v[i] = r->ev[(r->head + i) % r->cap];
		free(r->ev);
		r->ev = v;
		r->cap = cap;
		r->head = 0;
	}
	r->ev[(r->head + r->n) % r->cap] = *e;
	r->n++;
	return 0;
}

static void roll_free(struct wroll *r)
{
	if (!r)
		return;
	free(r->ev);
	for (size_t i = 0; i < SP_ARRAY_SIZE(r->strs); i++)
		free(r->strs[i]);
	free(r);
}

int sp_spool_writer_open_rolling(const struct sp_spool_meta *meta, uint64_t window_ns,
				 struct sp_spool_writer **out)
{
	if (!meta || !out || !window_ns)
		return -SP_E_BAD_ARG;
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct sp_spool_writer *w;
	/* begins a file on /dev/null, which is then dropped: the writer holds no file */
	int err = sp_spool_writer_open_fd(fd, meta, true, &w);
	if (err)
		return err;
	w->out.len = 0;
	close(w->fd);
	w->fd = -1;
	struct wroll *r = calloc(1, sizeof(*r));
	const char *strs[] = {meta->command, meta->hostname, meta->kernel_release};
	for (size_t i = 0; r && i < SP_ARRAY_SIZE(strs); i++)
		if (!(r->strs[i] = strdup(strs[i] ? strs[i] : "")))
			err = -ENOMEM;
	if (!r || err) {
		roll_free(r);
		sp_spool_writer_free(w);
		return -ENOMEM;
	}
	r->window_ns = window_ns;
	r->meta = *meta;
	r->meta.command = r->strs[0];
	r->meta.hostname = r->strs[1];
	r->meta.kernel_release = r->strs[2];
	w->roll = r;
	*out = w;
	return 0;
}

/*
 * How the window's sample with stack node `node` ended, for its snapshot's
 * summary: the truncation marker at the root end names the reason (its
 * abs_ip); a stack without one reached its root; node 0 is the empty stack.
 * (A stack that DWARF left early and the kernel's chain completed counts as
 * rooted here: which of them were spliced is not in the stack.)
 */
static void count_window_stack(const struct sp_spool_writer *w, uint32_t node,
			       struct sp_summary *window)
{
	const struct wseg *g = w->seg;
	if (!node) {
		window->empty_stack_samples++;
		return;
	}
	uint32_t top = node;
	/* parents come before their children, so the walk ends; bounded anyway */
	for (uint32_t steps = 0; node && node < g->nodes_cap && steps <= w->nnodes; steps++) {
		top = node;
		node = g->node_parent[node];
	}
	uint32_t frame = top < g->nodes_cap ? g->node_frame[top] : UINT32_MAX;
	const struct sp_frame *f = frame < w->nframes ? &w->frames[frame].f : NULL;
	if (f && f->mode == SP_FRAME_TRUNCATED) {
		window->truncated_frame_markers++;
		window->stop_reasons[f->abs_ip < SP_STOP_COUNT_ ? f->abs_ip : SP_STOP_BAD_RULE]++;
	} else {
		window->stop_reasons[SP_STOP_ROOT]++;
	}
}

int sp_spool_writer_snapshot(struct sp_spool_writer *w, int fd, uint64_t now_ns, uint64_t now_us,
			     bool keep_open, struct sp_summary *window)
{
	struct wroll *r = w->roll;
	if (!r || fd < 0 || w->fd >= 0 || !window) {
		if (fd >= 0)
			close(fd);
		return -SP_E_BAD_ARG;
	}
	if (now_ns < r->newest)
		now_ns = r->newest;
	roll_evict(r, now_ns);
	struct sp_spool_meta m = r->meta;
	uint64_t start = now_ns - r->window_ns;
	if (now_ns < r->window_ns || start < r->meta.start_monotonic_ns)
		start = r->meta.start_monotonic_ns;
	m.start_monotonic_ns = start;
	m.start_timestamp_us = now_us - (now_ns - start) / 1000;
	seg_reset(w);
	w->fd = fd;
	w->written = 0;
	w->err = 0;
	memset(window, 0, sizeof(*window));
	int err = begin_file(w, &m);
	for (size_t i = 0; i < r->n && !err; i++) {
		const struct wevent *e = &r->ev[(r->head + i) % r->cap];
		if (e->type == SP_REC_SAMPLE) {
			err = sp_spool_writer_append_weighted_sample(w, e->thread, e->stack, e->time,
								     e->value);
			window->samples++;
			count_window_stack(w, e->stack, window);
		} else if (e->type == SP_REC_OFFCPU) {
			struct sp_offcpu o = {e->time, e->value, e->thread, e->stack, e->flags};
			err = sp_spool_writer_append_offcpu(w, &o);
		} else {
			err = sp_spool_writer_append_lost(w, e->value, e->time);
			window->lost_events = sp_u64_add_sat(window->lost_events, e->value);
		}
	}
	window->sample_events = window->samples;
	if (!err && keep_open)
		return sp_spool_writer_flush(w);
	if (!err)
		err = sp_spool_writer_finish(w, window);
	/* back to the window, whatever became of the file */
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	w->out.len = 0;
	w->err = 0;
	return err;
}

void sp_spool_writer_memory(const struct sp_spool_writer *w, uint64_t *window_bytes,
			    uint64_t *window_samples, uint64_t *dict_bytes)
{
	const struct wroll *r = w->roll;
	const struct wseg *g = w->seg;
	uint64_t n = 0;
	for (size_t i = 0; r && i < r->n; i++)
		n += r->ev[(r->head + i) % r->cap].type == SP_REC_SAMPLE;
	*window_samples = n;
	*window_bytes = r ? r->cap * sizeof(*r->ev) : 0;
	/* the tables, at their capacity, and the maps at about 16 bytes an entry */
	uint64_t d = w->frames_cap * sizeof(*w->frames) + w->modules_cap * sizeof(*w->module_base) +
		     ((uint64_t)w->nframes + w->nnodes + w->nthreads) * 16;
	if (g)
		d += g->mod_bytes.cap + g->mods_cap * 24 + g->frames_cap * 4 + g->nodes_cap * 12 +
		     g->thr_cap * 20 + g->facts_cap * sizeof(*g->facts);
	*dict_bytes = d;
}

int sp_spool_writer_rotate(struct sp_spool_writer *w, int fd, const struct sp_spool_meta *meta,
			   const struct sp_summary *s)
{
	if (!w->seg || fd < 0 || !meta)
		return -SP_E_BAD_ARG;
	int err = sp_spool_writer_finish(w, s);
	if (err) {
		close(fd);
		return err;
	}
	seg_reset(w);
	w->fd = fd;
	w->written = w->events = 0;
	return begin_file(w, meta);
}

void sp_spool_writer_free(struct sp_spool_writer *w)
{
	if (!w)
		return;
	sp_spool_writer_compact_release(w);
	seg_free(w->seg, w->nthreads);
	roll_free(w->roll);
	if (w->fd >= 0) {
		sp_spool_writer_flush(w);
		close(w->fd);
	}
	sp_buf_release(&w->out);
	sp_buf_release(&w->rec);
	sp_map_release(&w->frame_by_hash);
	sp_map_release(&w->stack_by_edge);
	sp_map_release(&w->thread_by_id);
	free(w->module_base);
	free(w->frames);
	free(w);
}

/* ---- compaction (docs/DESIGN.md, decision 14) ----------------------------- */

/*
 * Entries added since the last compaction before the next is due: as many as
 * it kept (the dictionaries doubled), COMPACT_MIN at least.  A build with
 * -DSP_COMPACT_SLACK=N compacts every N entries instead (the sanitizer runs).
 */
#ifndef SP_COMPACT_SLACK
#define SP_COMPACT_SLACK 0
#endif
#define COMPACT_MIN 65536u

/*
 * While marking, a nonzero entry keeps its module, frame, stack node or
 * thread; sp_spool_writer_compact_end turns each into the new id
 * (SP_COMPACT_DROPPED when dropped).  The counts are the old dictionaries'.
 */
struct wkeep {
	uint32_t *mod, *frame, *node, *thr;
	size_t nmod, nframe, nnode, nthr;
	struct sp_map pids; /* processes whose threads and facts stay */
	int err;
	bool done;
};

static bool has_key(const struct sp_map *m, uint64_t key)
{
	uint32_t v;
	return sp_map_get(m, key, &v);
}

static void swap_map(struct sp_map *a, struct sp_map *b)
{
	struct sp_map t = *a;
	*a = *b;
	*b = t;
}

static size_t dict_entries(const struct sp_spool_writer *w)
{
	return w->nmodules + w->nframes + w->nnodes + w->nthreads;
}

/* Only where no record of a file refers to the dictionaries: ids change. */
static bool between_files(const struct sp_spool_writer *w)
{
	const struct wseg *g = w->seg;
	return w->roll ? idle(w) : !(g->nmodules || g->nframes || g->nnodes || g->nthreads);
}

bool sp_spool_writer_compact_due(const struct sp_spool_writer *w)
{
	const struct wseg *g = w->seg;
	if (!g || w->err || w->keep)
		return false;
	if (!between_files(w))
		return false;
	size_t base = w->compact_base;
	size_t slack = SP_COMPACT_SLACK ? SP_COMPACT_SLACK : base > COMPACT_MIN ? base : COMPACT_MIN;
	return dict_entries(w) >= base + slack;
}

void sp_spool_writer_compact_release(struct sp_spool_writer *w)
{
	struct wkeep *k = w->keep;
	if (!k)
		return;
	free(k->mod);
	free(k->frame);
	free(k->node);
	free(k->thr);
	sp_map_release(&k->pids);
	free(k);
	w->keep = NULL;
}

void sp_spool_writer_keep_stack(struct sp_spool_writer *w, uint32_t stack_id)
{
	struct wkeep *k = w->keep;
	if (!k || k->done || stack_id >= k->nnode)
		return;
	for (uint32_t i = stack_id; i && !k->node[i]; i = w->seg->node_parent[i])
		k->node[i] = 1;
}

void sp_spool_writer_keep_module(struct sp_spool_writer *w, uint32_t module_id)
{
	struct wkeep *k = w->keep;
	if (k && !k->done && module_id < k->nmod)
		k->mod[module_id] = 1;
}

void sp_spool_writer_keep_pid(struct sp_spool_writer *w, int32_t pid)
{
	struct wkeep *k = w->keep;
	int err = k && !k->done ? sp_map_put(&k->pids, (uint32_t)pid, 1) : 0;
	if (err && !k->err)
		k->err = err;
}

int sp_spool_writer_compact_begin(struct sp_spool_writer *w)
{
	if (!w->seg || w->keep || !between_files(w))
		return -SP_E_BAD_ARG;
	struct wkeep *k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	sp_map_init(&k->pids);
	k->nmod = w->nmodules;
	k->nframe = w->nframes;
	k->nnode = (size_t)w->nnodes + 1;
	k->nthr = w->nthreads;
	k->mod = calloc(k->nmod + 1, sizeof(*k->mod));
	k->frame = calloc(k->nframe + 1, sizeof(*k->frame));
	k->node = calloc(k->nnode, sizeof(*k->node));
	k->thr = calloc(k->nthr + 1, sizeof(*k->thr));
	w->keep = k;
	if (!k->mod || !k->frame || !k->node || !k->thr) {
		sp_spool_writer_compact_release(w);
		return -ENOMEM;
	}
	k->node[0] = 1;
	/* a flight recorder's window refers to its threads and stacks */
	for (size_t i = 0; w->roll && i < w->roll->n; i++) {
		const struct wevent *e = &w->roll->ev[(w->roll->head + i) % w->roll->cap];
		if (e->type == SP_REC_LOST)
			continue;
		if (e->thread < k->nthr)
			k->thr[e->thread] = 1;
		sp_spool_writer_keep_stack(w, e->stack);
	}
	return 0;
}

/* What the marks imply: frames of kept nodes, their modules, group firsts, the pids. */
static void close_marks(struct sp_spool_writer *w, struct wkeep *k)
{
	struct wseg *g = w->seg;
	for (size_t t = 0; t < k->nthr; t++)
		if (!k->thr[t] && has_key(&k->pids, (uint32_t)g->thr_pid[t]))
			k->thr[t] = 1;
	for (size_t n = 1; n < k->nnode; n++)
		if (k->node[n])
			k->frame[g->node_frame[n]] = 1;
	for (size_t f = 0; f < k->nframe; f++)
		if (k->frame[f] && w->frames[f].f.module_id != SP_NO_MODULE)
			k->mod[w->frames[f].f.module_id] = 1;
	/* a group's first comes before its other modules: one pass downwards */
	for (size_t m = k->nmod; m-- > 0;)
		if (k->mod[m] && g->mod_same[m])
			k->mod[g->mod_same[m] - 1] = 1;
	for (size_t t = 0; t < k->nthr && !k->err; t++)
		if (k->thr[t])
			k->err = sp_map_put(&k->pids, (uint32_t)g->thr_pid[t], 1);
	for (size_t m = 0; m < k->nmod && !k->err; m++)
		if (k->mod[m] && g->mod_pid[m] >= 0)
			k->err = sp_map_put(&k->pids, (uint32_t)g->mod_pid[m], 1);
}

/* Marks to new ids, counted from first; returns how many are kept. */
static uint32_t number(uint32_t *ids, size_t n, uint32_t first)
{
	uint32_t next = first;
	for (size_t i = 0; i < n; i++)
		ids[i] = ids[i] ? next++ : SP_COMPACT_DROPPED;
	return next - first;
}

/* The indexes over the kept entries under their new ids, built beside the old ones. */
struct wmaps {
	struct sp_map frames, edges, threads, facts;
	uint32_t *next; /* each kept frame's chain link */
};

static void wmaps_release(struct wmaps *m)
{
	sp_map_release(&m->frames);
	sp_map_release(&m->edges);
	sp_map_release(&m->threads);
	sp_map_release(&m->facts);
	free(m->next);
}

static int build_maps(struct sp_spool_writer *w, const struct wkeep *k, uint32_t nframes,
		      struct wmaps *m)
{
	struct wseg *g = w->seg;
	m->next = malloc(((size_t)nframes + 1) * sizeof(*m->next));
	if (!m->next)
		return -ENOMEM;
	int err = 0;
	for (size_t f = 0; f < k->nframe && !err; f++) {
		if (k->frame[f] == SP_COMPACT_DROPPED)
			continue;
		struct sp_frame c = w->frames[f].f;
		if (c.module_id != SP_NO_MODULE)
			c.module_id = k->mod[c.module_id];
		uint64_t h = frame_hash(&c);
		uint32_t head = NO_FRAME;
		sp_map_get(&m->frames, h, &head);
		m->next[k->frame[f]] = head;
		err = sp_map_put(&m->frames, h, k->frame[f]);
	}
	for (size_t n = 1; n < k->nnode && !err; n++)
		if (k->node[n] != SP_COMPACT_DROPPED)
			err = sp_map_put(&m->edges,
					 (uint64_t)k->node[g->node_parent[n]] << 32 |
						 k->frame[g->node_frame[n]],
					 k->node[n]);
	for (size_t t = 0; t < k->nthr && !err; t++)
		if (k->thr[t] != SP_COMPACT_DROPPED)
			err = sp_map_put(&m->threads,
					 (uint64_t)(uint32_t)g->thr_pid[t] << 32 | (uint32_t)g->thr_tid[t],
					 k->thr[t]);
	uint32_t kept = 0;
	for (size_t i = 0; i < g->nfacts && !err; i++)
		if (has_key(&k->pids, (uint32_t)g->facts[i].pid))
			err = sp_map_put(&m->facts, (uint32_t)g->facts[i].pid, kept++);
	return err;
}

/* Move the kept entries down to their new ids (never above their old ones). */
static void move_entries(struct sp_spool_writer *w, const struct wkeep *k, const uint32_t *next)
{
	struct wseg *g = w->seg;
	size_t off = 0;
	for (size_t m = 0; m < k->nmod; m++) {
		uint32_t to = k->mod[m];
		if (to == SP_COMPACT_DROPPED)
			continue;
		memmove(g->mod_bytes.data + off, g->mod_bytes.data + g->mod_off[m], g->mod_len[m]);
		w->module_base[to] = w->module_base[m];
		g->mod_off[to] = off;
		off += g->mod_len[m];
		g->mod_len[to] = g->mod_len[m];
		g->mod_pid[to] = g->mod_pid[m];
		g->mod_same[to] = g->mod_same[m] ? k->mod[g->mod_same[m] - 1] + 1 : 0;
		g->mod_here[to] = NOT_HERE;
	}
	g->mod_bytes.len = off;
	for (size_t f = 0; f < k->nframe; f++) {
		uint32_t to = k->frame[f];
		if (to == SP_COMPACT_DROPPED)
			continue;
		w->frames[to].f = w->frames[f].f;
		if (w->frames[to].f.module_id != SP_NO_MODULE)
			w->frames[to].f.module_id = k->mod[w->frames[to].f.module_id];
		w->frames[to].next = next[to];
		g->frame_here[to] = NOT_HERE;
	}
	for (size_t n = 1; n < k->nnode; n++) {
		uint32_t to = k->node[n];
		if (to == SP_COMPACT_DROPPED)
			continue;
		g->node_parent[to] = k->node[g->node_parent[n]];
		g->node_frame[to] = k->frame[g->node_frame[n]];
		g->node_here[to] = NOT_HERE;
	}
	for (size_t t = 0; t < k->nthr; t++) {
		uint32_t to = k->thr[t];
		if (to == SP_COMPACT_DROPPED) {
			free(g->thr_name[t]);
			g->thr_name[t] = NULL;
			continue;
		}
		g->thr_pid[to] = g->thr_pid[t];
		g->thr_tid[to] = g->thr_tid[t];
		g->thr_name[to] = g->thr_name[t];
		if (to != t)
			g->thr_name[t] = NULL;
		g->thr_here[to] = NOT_HERE;
	}
	size_t kept = 0;
	for (size_t i = 0; i < g->nfacts; i++)
		if (has_key(&k->pids, (uint32_t)g->facts[i].pid))
			g->facts[kept++] = g->facts[i];
	g->nfacts = kept;
	for (size_t i = 0; w->roll && i < w->roll->n; i++) {
		struct wevent *e = &w->roll->ev[(w->roll->head + i) % w->roll->cap];
		if (e->type != SP_REC_LOST) {
			e->thread = k->thr[e->thread];
			e->stack = k->node[e->stack];
		}
	}
}

int sp_spool_writer_compact_end(struct sp_spool_writer *w)
{
	struct wkeep *k = w->keep;
	if (!k || k->done)
		return -SP_E_BAD_ARG;
	close_marks(w, k);
	if (k->err)
		return k->err;
	uint32_t nmod = number(k->mod, k->nmod, 0);
	uint32_t nframe = number(k->frame, k->nframe, 0);
	uint32_t nnode = number(k->node + 1, k->nnode - 1, 1);
	uint32_t nthr = number(k->thr, k->nthr, 0);
	k->node[0] = 0;
	k->done = true;
	struct wmaps m = {0};
	sp_map_init(&m.frames);
	sp_map_init(&m.edges);
	sp_map_init(&m.threads);
	sp_map_init(&m.facts);
	int err = build_maps(w, k, nframe, &m);
	if (err) {
		/* nothing changed: the old ids stand, and none are given out as new */
		wmaps_release(&m);
		sp_spool_writer_compact_release(w);
		return err;
	}
	move_entries(w, k, m.next);
	struct wseg *g = w->seg;
	swap_map(&w->frame_by_hash, &m.frames);
	swap_map(&w->stack_by_edge, &m.edges);
	swap_map(&w->thread_by_id, &m.threads);
	swap_map(&g->fact_by_pid, &m.facts);
	wmaps_release(&m);
	w->nmodules = nmod;
	w->nframes = nframe;
	w->nnodes = nnode;
	w->nthreads = nthr;
	w->compact_base = dict_entries(w);
	return 0;
}

uint32_t sp_spool_writer_compacted_module(const struct sp_spool_writer *w, uint32_t module_id)
{
	const struct wkeep *k = w->keep;
	if (!k || !k->done)
		return module_id;
	return module_id < k->nmod ? k->mod[module_id] : SP_COMPACT_DROPPED;
}

uint32_t sp_spool_writer_compacted_stack(const struct sp_spool_writer *w, uint32_t stack_id)
{
	const struct wkeep *k = w->keep;
	if (!k || !k->done)
		return stack_id;
	return stack_id < k->nnode ? k->node[stack_id] : SP_COMPACT_DROPPED;
}

bool sp_spool_writer_has_thread(const struct sp_spool_writer *w, int32_t pid, int32_t tid)
{
	return has_key(&w->thread_by_id, (uint64_t)(uint32_t)pid << 32 | (uint32_t)tid);
}
