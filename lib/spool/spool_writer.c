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
};

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

int sp_spool_writer_open(const char *path, const struct sp_spool_meta *meta,
			 struct sp_spool_writer **out)
{
	if (!path || !meta || !out)
		return -SP_E_BAD_ARG;
	struct sp_spool_writer *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	sp_buf_init(&w->out);
	sp_buf_init(&w->rec);
	sp_map_init(&w->frame_by_hash);
	sp_map_init(&w->stack_by_edge);
	sp_map_init(&w->thread_by_id);
	w->last_timestamp_ns = meta->start_monotonic_ns;
	w->last_period = meta->sample_period;
	w->last_offcpu_ns = meta->start_monotonic_ns;
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
	w->fd = sp_output_create_locked(path, (meta->flags & SP_META_SYSTEM_WIDE) ? 0600 : 0666);
	int err = w->fd < 0 ? w->fd : 0;
	if (err)
		goto fail;
	uint8_t header[SP_SPOOL_HEADER_LEN];
	memcpy(header, SP_SPOOL_MAGIC, SP_SPOOL_MAGIC_LEN);
	header[SP_SPOOL_MAGIC_LEN] = SP_SPOOL_VERSION & 0xff;
	header[SP_SPOOL_MAGIC_LEN + 1] = SP_SPOOL_VERSION >> 8;
	err = sp_buf_append(&w->out, header, sizeof(header));
	if (err)
		goto fail;
	err = write_meta(w, meta);
	if (err)
		goto fail;
	/* Put the header on disk now: a recorder killed at once still leaves a valid spool. */
	err = sp_spool_writer_flush(w);
	if (err)
		goto fail;
	*out = w;
	return 0;
fail:
	/* A failed open writes nothing more: the caller gets an error, not a spool. */
	w->out.len = 0;
	sp_spool_writer_free(w);
	return err;
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
	if (m->same_bytes_as) /* appended: older readers ignore it */
		p = sp_enc_uvarint(p, m->same_bytes_as);
	err = emit(w, SP_REC_MODULE, w->rec.data, (size_t)(p - w->rec.data));
	if (err)
		return err;
	w->module_base[w->nmodules] = m->start - m->file_offset;
	*id = (uint32_t)w->nmodules++;
	return 0;
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

	/*
	 * rel_ip is almost always abs_ip - start + file_offset (0 for frames
	 * without a module), so store the difference from that: one byte.
	 */
	uint64_t expect = 0;
	if (f->module_id != SP_NO_MODULE)
		expect = f->abs_ip - w->module_base[f->module_id];
	uint8_t rec[4 * SP_VARINT_MAX];
	uint8_t *p = rec;
	p = sp_enc_uvarint(p, f->module_id == SP_NO_MODULE ? 0 : (uint64_t)f->module_id + 1);
	p = sp_enc_uvarint(p, f->mode);
	p = sp_enc_uvarint(p, f->abs_ip);
	p = sp_enc_svarint(p, (int64_t)(expect - f->rel_ip));
	err = emit(w, SP_REC_FRAME, rec, (size_t)(p - rec));
	if (err)
		return err;
	uint32_t nid = (uint32_t)w->nframes++;
	w->frames[nid].f = *f;
	w->frames[nid].next = head;
	*id = nid;
	/* On failure the frame stays valid in the file; an equal one later just gets a new id. */
	return sp_map_put(&w->frame_by_hash, h, nid);
}

int sp_spool_writer_intern_stack(struct sp_spool_writer *w, const uint32_t *frames,
				 size_t n, uint32_t *stack_id)
{
	uint32_t node = 0;
	/* Build from the root end so stacks sharing callers share nodes. */
	for (size_t i = n; i-- > 0;) {
		uint32_t frame = frames[i];
		if (frame >= w->nframes)
			return -SP_E_BAD_ARG;
		uint64_t key = (uint64_t)node << 32 | frame;
		uint32_t next;
		if (!sp_map_get(&w->stack_by_edge, key, &next)) {
			if (w->nnodes >= UINT32_MAX - 1)
				return -EOVERFLOW;
			next = w->nnodes + 1;
			/* Parent as a backward distance: usually 1, as nodes are written root first. */
			uint8_t rec[2 * SP_VARINT_MAX];
			uint8_t *p = sp_enc_uvarint(rec, next - node);
			p = sp_enc_uvarint(p, frame);
			int err = emit(w, SP_REC_STACK, rec, (size_t)(p - rec));
			if (err)
				return err;
			w->nnodes = next;
			err = sp_map_put(&w->stack_by_edge, key, next);
			if (err)
				return err;
		}
		node = next;
	}
	*stack_id = node;
	return 0;
}

int sp_spool_writer_intern_thread(struct sp_spool_writer *w, int32_t pid, int32_t tid,
				  uint32_t *index)
{
	uint64_t key = (uint64_t)(uint32_t)pid << 32 | (uint32_t)tid;
	if (sp_map_get(&w->thread_by_id, key, index))
		return 0;
	if (w->nthreads >= UINT32_MAX - 1)
		return -EOVERFLOW;
	uint8_t rec[2 * SP_VARINT_MAX];
	uint8_t *p = sp_enc_svarint(rec, pid);
	p = sp_enc_svarint(p, tid);
	int err = emit(w, SP_REC_THREAD, rec, (size_t)(p - rec));
	if (err)
		return err;
	*index = w->nthreads++;
	return sp_map_put(&w->thread_by_id, key, *index);
}

int sp_spool_writer_set_thread_name(struct sp_spool_writer *w, uint32_t index,
				    const char *name)
{
	if (index >= w->nthreads)
		return -SP_E_BAD_ARG;
	name = str_or_empty(name);
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

int sp_spool_writer_append_weighted_sample(struct sp_spool_writer *w, uint32_t thread,
					   uint32_t stack_id, uint64_t timestamp_ns,
					   uint64_t period)
{
	if (thread >= w->nthreads || stack_id > w->nnodes)
		return -SP_E_BAD_ARG;
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
	w->last_timestamp_ns = timestamp_ns;
	if (changed)
		w->last_period = period;
	return 0;
}

int sp_spool_writer_append_offcpu(struct sp_spool_writer *w, const struct sp_offcpu *o)
{
	if (o->thread >= w->nthreads || o->stack_id > w->nnodes)
		return -SP_E_BAD_ARG;
	uint8_t rec[5 * SP_VARINT_MAX];
	uint8_t *p = sp_enc_uvarint(rec, o->thread);
	p = sp_enc_uvarint(p, o->stack_id);
	p = sp_enc_svarint(p, (int64_t)(o->start_ns - w->last_offcpu_ns));
	p = sp_enc_uvarint(p, o->duration_ns);
	p = sp_enc_uvarint(p, o->flags);
	int err = emit(w, SP_REC_OFFCPU, rec, (size_t)(p - rec));
	if (!err)
		w->last_offcpu_ns = o->start_ns;
	return err;
}

int sp_spool_writer_append_exec(struct sp_spool_writer *w, const struct sp_exec *e)
{
	uint8_t rec[3 * SP_VARINT_MAX];
	uint8_t *p = sp_enc_uvarint(rec, e->timestamp_ns);
	p = sp_enc_svarint(p, e->pid);
	p = sp_enc_uvarint(p, e->is_python_runtime ? SP_EXEC_PYTHON : 0);
	return emit(w, SP_REC_EXEC, rec, (size_t)(p - rec));
}

int sp_spool_writer_append_owner(struct sp_spool_writer *w, const struct sp_owner *o)
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
	uint8_t rec[2 * SP_VARINT_MAX];
	uint8_t *p = sp_enc_uvarint(rec, count);
	p = sp_enc_uvarint(p, timestamp_ns);
	return emit(w, SP_REC_LOST, rec, (size_t)(p - rec));
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

void sp_spool_writer_free(struct sp_spool_writer *w)
{
	if (!w)
		return;
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
