/* SPDX-License-Identifier: MIT */
/* The validating spool reader: every byte is untrusted, a cut tail yields the intact prefix. */
#include "spool/spool.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CORRUPT (-SP_E_SPOOL_CORRUPT)

static int parse_meta(struct sp_spool *s, struct sp_cur *c)
{
	struct sp_spool_meta *m = &s->meta;
	if (sp_cur_u64(c, &m->start_timestamp_us) || sp_cur_u64(c, &m->sample_interval_us) ||
	    sp_cur_u64(c, &m->start_monotonic_ns) || sp_cur_u32(c, &m->frequency_hz) ||
	    sp_cur_u32(c, &m->stack_size) || sp_cur_u32(c, &m->event_source))
		return CORRUPT;
	int err = sp_cur_str(c, &s->command);
	if (!err)
		err = sp_cur_str(c, &s->hostname);
	if (!err)
		err = sp_cur_str(c, &s->kernel_release);
	if (err)
		return err; /* strings read so far are freed with the spool */
	/* Fields appended later: absent (0) in older spools. */
	if (c->p < c->end && sp_cur_u64(c, &m->sample_period))
		return CORRUPT;
	if (c->p < c->end && sp_cur_u32(c, &m->flags))
		return CORRUPT;
	m->command = s->command;
	m->hostname = s->hostname;
	m->kernel_release = s->kernel_release;
	s->last_timestamp_ns = m->start_monotonic_ns;
	s->last_period = m->sample_period;
	s->last_offcpu_ns = m->start_monotonic_ns;
	return sp_spool_log_record(s, SP_REC_META, 0);
}

static int parse_module(struct sp_spool *s, struct sp_cur *c)
{
	struct sp_module m = {.id = (uint32_t)s->nmodules};
	uint64_t len, blen;
	if (s->nmodules >= UINT32_MAX - 1 || sp_cur_i32(c, &m.pid) || sp_cur_u64(c, &m.start) ||
	    sp_cur_u64(c, &len) || len > UINT64_MAX - m.start || sp_cur_u64(c, &m.file_offset) ||
	    sp_cur_u64(c, &m.inode) || sp_cur_u32(c, &m.dev_major) || sp_cur_u32(c, &m.dev_minor) ||
	    sp_cur_u64(c, &m.load_bias) || sp_cur_u64(c, &m.file_size) ||
	    sp_get_svarint(&c->p, c->end, &m.mtime_ns) || sp_cur_u32(c, &m.flags) ||
	    sp_cur_u64(c, &blen) || blen > SP_BUILD_ID_MAX || blen > (uint64_t)(c->end - c->p))
		return CORRUPT;
	m.end = m.start + len;
	m.build_id_len = (uint8_t)blen;
	memcpy(m.build_id, c->p, blen);
	c->p += blen;
	int err = SP_GROW(s->modules, s->nmodules, s->modules_cap);
	if (err)
		return err;
	char *path;
	err = sp_cur_str(c, &path);
	if (err)
		return err;
	/* Appended: a group of files with the same bytes, named by an earlier record. */
	uint64_t same = 0;
	if (c->p < c->end && (sp_cur_u64(c, &same) || same > s->nmodules)) {
		free(path);
		return CORRUPT;
	}
	if (same) {
		struct sp_module *first = &s->modules[same - 1];
		if (!first->same_bytes_as)
			first->same_bytes_as = (uint32_t)same;
		m.same_bytes_as = first->same_bytes_as;
	}
	err = sp_spool_log_record(s, SP_REC_MODULE, s->nmodules);
	if (err) {
		free(path);
		return err;
	}
	m.path = path;
	s->modules[s->nmodules++] = m;
	return 0;
}

static int parse_frame(struct sp_spool *s, struct sp_cur *c)
{
	uint64_t module, mode;
	int64_t rel_delta;
	struct sp_frame f;
	if (s->nframes >= UINT32_MAX - 1 || sp_cur_u64(c, &module) || module > s->nmodules ||
	    sp_cur_u64(c, &mode) || mode > SP_FRAME_TRUNCATED || sp_cur_u64(c, &f.abs_ip) ||
	    sp_get_svarint(&c->p, c->end, &rel_delta))
		return CORRUPT;
	f.module_id = module ? (uint32_t)(module - 1) : SP_NO_MODULE;
	f.mode = (uint8_t)mode;
	uint64_t expect = 0;
	if (module) {
		const struct sp_module *m = &s->modules[module - 1];
		expect = f.abs_ip - (m->start - m->file_offset);
	}
	f.rel_ip = expect - (uint64_t)rel_delta;
	int err = SP_GROW(s->frames, s->nframes, s->frames_cap);
	if (!err)
		err = sp_spool_log_record(s, SP_REC_FRAME, s->nframes);
	if (err)
		return err;
	s->frames[s->nframes++] = f;
	return 0;
}

static int parse_stack(struct sp_spool *s, struct sp_cur *c)
{
	uint64_t back, frame;
	size_t id = s->nstacks;
	/* The parent is a backward distance, so it always names an older node. */
	if (id >= UINT32_MAX || sp_cur_u64(c, &back) || back == 0 || back > id ||
	    sp_cur_u64(c, &frame) || frame >= s->nframes)
		return CORRUPT;
	/* Deeper than any recorder writes: only a hostile file chains so far. */
	uint32_t depth = (uint32_t)s->stack_depth[id - back] + 1;
	if (depth > SP_SPOOL_MAX_DEPTH)
		return -SP_E_SPOOL_TOO_DEEP;
	void *q = sp_grow_array(s->stack_depth, &s->depth_cap, id, sizeof(uint16_t));
	if (!q)
		return -ENOMEM;
	s->stack_depth = q;
	size_t cap = s->stacks_cap;
	q = sp_grow_array(s->stack_parent, &cap, id, sizeof(uint32_t));
	if (!q)
		return -ENOMEM;
	s->stack_parent = q;
	q = sp_grow_array(s->stack_frame, &s->stacks_cap, id, sizeof(uint32_t));
	if (!q)
		return -ENOMEM;
	s->stack_frame = q;
	int err = sp_spool_log_record(s, SP_REC_STACK, id);
	if (err)
		return err;
	s->stack_parent[id] = (uint32_t)(id - back);
	s->stack_frame[id] = (uint32_t)frame;
	s->stack_depth[id] = (uint16_t)depth;
	s->nstacks++;
	return 0;
}

static int parse_thread(struct sp_spool *s, struct sp_cur *c)
{
	struct sp_thread t = {.name = ""};
	if (s->nthreads >= UINT32_MAX - 1 || sp_cur_i32(c, &t.pid) || sp_cur_i32(c, &t.tid))
		return CORRUPT;
	int err = SP_GROW(s->threads, s->nthreads, s->threads_cap);
	if (!err)
		err = sp_spool_log_record(s, SP_REC_THREAD, s->nthreads);
	if (err)
		return err;
	s->threads[s->nthreads++] = t;
	return 0;
}

static int parse_thread_name(struct sp_spool *s, struct sp_cur *c)
{
	uint64_t index;
	if (s->nnames >= UINT32_MAX || sp_cur_u64(c, &index) || index >= s->nthreads)
		return CORRUPT;
	int err = SP_GROW(s->names, s->nnames, s->names_cap);
	if (err)
		return err;
	char *name;
	err = sp_cur_str(c, &name);
	if (err)
		return err;
	err = sp_spool_log_record(s, SP_REC_THREAD_NAME, s->nnames);
	if (err) {
		free(name);
		return err;
	}
	s->names[s->nnames].thread = (uint32_t)index;
	s->names[s->nnames].name = name;
	s->nnames++;
	s->threads[index].name = name;
	return 0;
}

static int parse_sample(struct sp_spool *s, struct sp_cur *c)
{
	uint64_t thread, stack;
	int64_t delta;
	if (s->nsamples >= UINT32_MAX || sp_cur_u64(c, &thread) || thread >= s->nthreads ||
	    sp_cur_u64(c, &stack) || stack >= s->nstacks ||
	    sp_get_svarint(&c->p, c->end, &delta))
		return CORRUPT;
	/* The period, when it changed (docs/DESIGN.md, decision 12); 0 is never written. */
	if (c->p < c->end) {
		uint64_t period;
		if (sp_cur_u64(c, &period) || !period)
			return CORRUPT;
		s->last_period = period;
		s->periods_stored = true;
	}
	int err = SP_GROW(s->samples, s->nsamples, s->samples_cap);
	if (!err)
		err = sp_spool_log_record(s, SP_REC_SAMPLE, s->nsamples);
	if (err)
		return err;
	/* Wrapping add: the writer's wrapping difference makes this exact. */
	s->last_timestamp_ns += (uint64_t)delta;
	s->samples[s->nsamples++] = (struct sp_sample){
		.timestamp_ns = s->last_timestamp_ns,
		.thread = (uint32_t)thread,
		.stack_id = (uint32_t)stack,
		.period = s->last_period,
	};
	return 0;
}

static int parse_offcpu(struct sp_spool *s, struct sp_cur *c)
{
	uint64_t thread, stack, duration, flags;
	int64_t delta;
	if (s->noffcpus >= UINT32_MAX || sp_cur_u64(c, &thread) || thread >= s->nthreads ||
	    sp_cur_u64(c, &stack) || stack >= s->nstacks || sp_get_svarint(&c->p, c->end, &delta) ||
	    sp_cur_u64(c, &duration) || sp_cur_u64(c, &flags) || flags > UINT32_MAX)
		return CORRUPT;
	int err = SP_GROW(s->offcpus, s->noffcpus, s->offcpus_cap);
	if (!err)
		err = sp_spool_log_record(s, SP_REC_OFFCPU, s->noffcpus);
	if (err)
		return err;
	s->last_offcpu_ns += (uint64_t)delta;
	s->offcpus[s->noffcpus++] = (struct sp_offcpu){
		.start_ns = s->last_offcpu_ns,
		.duration_ns = duration,
		.thread = (uint32_t)thread,
		.stack_id = (uint32_t)stack,
		.flags = (uint32_t)flags,
	};
	return 0;
}

static int parse_exec(struct sp_spool *s, struct sp_cur *c)
{
	struct sp_exec e;
	uint64_t flags;
	if (s->nexecs >= UINT32_MAX || sp_cur_u64(c, &e.timestamp_ns) || sp_cur_i32(c, &e.pid) ||
	    sp_cur_u64(c, &flags))
		return CORRUPT;
	e.is_python_runtime = flags & SP_EXEC_PYTHON;
	int err = SP_GROW(s->execs, s->nexecs, s->execs_cap);
	if (!err)
		err = sp_spool_log_record(s, SP_REC_EXEC, s->nexecs);
	if (err)
		return err;
	s->execs[s->nexecs++] = e;
	return 0;
}

static int parse_owner(struct sp_spool *s, struct sp_cur *c)
{
	struct sp_owner o;
	uint64_t uid;
	if (s->nowners >= UINT32_MAX || sp_cur_u64(c, &o.timestamp_ns) || sp_cur_i32(c, &o.pid) ||
	    sp_cur_u64(c, &uid) || uid > UINT32_MAX)
		return CORRUPT;
	o.uid = (uint32_t)uid;
	int err = SP_GROW(s->owners, s->nowners, s->owners_cap);
	if (!err)
		err = sp_spool_log_record(s, SP_REC_OWNER, s->nowners);
	if (err)
		return err;
	s->owners[s->nowners++] = o;
	return 0;
}

static int parse_lost(struct sp_spool *s, struct sp_cur *c)
{
	struct sp_spool_lost l;
	if (s->nlosts >= UINT32_MAX || sp_cur_u64(c, &l.count) || sp_cur_u64(c, &l.timestamp_ns))
		return CORRUPT;
	int err = SP_GROW(s->losts, s->nlosts, s->losts_cap);
	if (!err)
		err = sp_spool_log_record(s, SP_REC_LOST, s->nlosts);
	if (err)
		return err;
	s->losts[s->nlosts++] = l;
	/* Saturate: a hostile file must not make the total wrap to a small number. */
	s->lost_total = l.count > UINT64_MAX - s->lost_total ? UINT64_MAX : s->lost_total + l.count;
	return 0;
}

/*
 * Read an array written with its length first.  Entries beyond what this
 * version knows are read and dropped; the loop is bounded by the payload
 * because every entry consumes at least one byte.
 */
static int get_counts(struct sp_cur *c, uint64_t *out, size_t known)
{
	uint64_t n, v;
	if (sp_cur_u64(c, &n))
		return CORRUPT;
	for (uint64_t i = 0; i < n; i++) {
		if (sp_cur_u64(c, &v))
			return CORRUPT;
		if (i < known)
			out[i] = v;
	}
	return 0;
}

static int parse_summary(struct sp_spool *s, struct sp_cur *c)
{
	struct sp_summary m = {0};
	uint64_t kernel;
	if (s->nsummaries >= UINT32_MAX || sp_cur_u64(c, &m.sample_events) ||
	    sp_cur_u64(c, &m.samples) || sp_cur_u64(c, &m.lost_events) || sp_cur_u64(c, &kernel) ||
	    sp_cur_u64(c, &m.missing_pid_samples) || sp_cur_u64(c, &m.missing_tid_samples) ||
	    sp_cur_u64(c, &m.idle_tid_samples) || sp_cur_u64(c, &m.missing_timestamp_samples) ||
	    sp_cur_u64(c, &m.empty_stack_samples) || sp_cur_u64(c, &m.truncated_frame_markers) ||
	    sp_cur_u64(c, &m.ignored_user_callchain_frames) ||
	    get_counts(c, m.stop_reasons, SP_STOP_COUNT_) ||
	    get_counts(c, m.error_stats, SP_ERR_COUNT_))
		return CORRUPT;
	/* Appended later: absent in the first spools, so optional. */
	if (c->p < c->end && sp_cur_u64(c, &m.spliced_stacks))
		return CORRUPT;
	if (c->p < c->end && sp_cur_u64(c, &m.code_frames))
		return CORRUPT;
	if (c->p < c->end && sp_cur_u64(c, &m.fp_frames))
		return CORRUPT;
	m.kernel_enabled = kernel != 0;
	int err = SP_GROW(s->summaries, s->nsummaries, s->summaries_cap);
	if (!err)
		err = sp_spool_log_record(s, SP_REC_SUMMARY, s->nsummaries);
	if (err)
		return err;
	s->summaries[s->nsummaries++] = m;
	return 0;
}

static int skip_unknown(struct sp_spool *s, uint8_t type, size_t length, bool damaged)
{
	if (s->nunknowns >= UINT32_MAX)
		return CORRUPT;
	int err = SP_GROW(s->unknowns, s->nunknowns, s->unknowns_cap);
	if (!err)
		err = sp_spool_log_record(s, SP_REC_INVALID, s->nunknowns);
	if (err)
		return err;
	s->unknowns[s->nunknowns].type = type;
	s->unknowns[s->nunknowns].length = length;
	s->unknowns[s->nunknowns].damaged = damaged;
	s->nunknowns++;
	return 0;
}

/*
 * Symbols are an optional cache of what symbolization found: a damaged
 * symbol record must not cost the profile.  It is skipped, and so is every
 * symbol record after it, since their string ids may count strings the
 * damaged record held.
 */
static int parse_symbol_record(struct sp_spool *s, uint8_t type, struct sp_cur *c, size_t len)
{
	int err = CORRUPT;
	if (!s->sym_damaged)
		err = sp_spool_parse_symrec(s, type, c);
	if (err != CORRUPT)
		return err;
	s->sym_damaged = true;
	return skip_unknown(s, type, len, true);
}

/*
 * Parse one complete record.  Trailing payload bytes after the fields this
 * version knows are ignored: a later version may append fields to a record.
 */
static int parse_record(struct sp_spool *s, uint8_t type, const uint8_t *p, size_t len)
{
	struct sp_cur c = {p, p + len};
	bool first = s->nlog == 0;
	if (first != (type == SP_REC_META))
		return CORRUPT; /* META comes first, exactly once */
	switch (type) {
	case SP_REC_INVALID:
		return CORRUPT;
	case SP_REC_META:
		return parse_meta(s, &c);
	case SP_REC_MODULE:
		return parse_module(s, &c);
	case SP_REC_FRAME:
		return parse_frame(s, &c);
	case SP_REC_STACK:
		return parse_stack(s, &c);
	case SP_REC_THREAD:
		return parse_thread(s, &c);
	case SP_REC_THREAD_NAME:
		return parse_thread_name(s, &c);
	case SP_REC_SAMPLE:
		return parse_sample(s, &c);
	case SP_REC_EXEC:
		return parse_exec(s, &c);
	case SP_REC_OFFCPU:
		return parse_offcpu(s, &c);
	case SP_REC_LOST:
		return parse_lost(s, &c);
	case SP_REC_OWNER:
		return parse_owner(s, &c);
	case SP_REC_SUMMARY:
		return parse_summary(s, &c);
	case SP_REC_SYM_STRINGS:
	case SP_REC_SYM_FRAME:
	case SP_REC_SYM_KERNEL:
	case SP_REC_SYM_PERF_MAP:
		return parse_symbol_record(s, type, &c, len);
	default:
		return skip_unknown(s, type, len, false);
	}
}

static bool all_zero(const uint8_t *p, const uint8_t *end)
{
	while (p < end)
		if (*p++)
			return false;
	return true;
}

/* Elements reserved up front at most (beyond, the arrays double as they fill). */
#define PRESIZE_MAX (4u << 20)

/*
 * Room for every sample a file of len bytes can hold (a sample record takes
 * at least 5), so the sample and record arrays are not copied as they grow:
 * doubling them copied 0.45 M bytes reading a 69 KiB spool, a quarter of its
 * parse.  The untouched part of a large allocation costs no memory.  Best
 * effort: on failure the arrays just grow.
 */
static void presize(struct sp_spool *s, size_t len)
{
	size_t n = len / 5 < PRESIZE_MAX ? len / 5 : PRESIZE_MAX;
	if (n <= 16)
		return;
	struct sp_sample *samples = malloc(n * sizeof(*samples));
	if (samples) {
		s->samples = samples;
		s->samples_cap = n;
	}
	struct sp_spool_log *log = malloc(n * sizeof(*log));
	if (log) {
		s->log = log;
		s->log_cap = n;
	}
}

/*
 * The record at *p: its type, payload and payload length, *p moved past
 * it.  False when it does not lie whole before end (a length running past
 * the end, or the zeros of space not yet written): what a cut or unfinished
 * write leaves.
 */
static bool next_record(const uint8_t **p, const uint8_t *end, uint8_t *type,
			const uint8_t **payload, size_t *len)
{
	const uint8_t *q = *p;
	uint64_t plen;
	if (q >= end)
		return false;
	*type = *q++;
	if (sp_get_uvarint(&q, end, &plen) || plen > (uint64_t)(end - q) ||
	    (*type == SP_REC_INVALID && all_zero(*p, end)))
		return false;
	*payload = q;
	*len = (size_t)plen;
	*p = q + plen;
	return true;
}

/* The header's magic and version.  0, -SP_E_SPOOL_MAGIC, -SP_E_SPOOL_TRUNCATED, -SP_E_SPOOL_VERSION. */
static int parse_header(struct sp_spool *s, const uint8_t *data, size_t len)
{
	size_t n = len < SP_SPOOL_MAGIC_LEN ? len : SP_SPOOL_MAGIC_LEN;
	if (memcmp(data, SP_SPOOL_MAGIC, n))
		return -SP_E_SPOOL_MAGIC;
	if (len < SP_SPOOL_HEADER_LEN)
		return -SP_E_SPOOL_TRUNCATED;
	s->version = (uint16_t)(data[SP_SPOOL_MAGIC_LEN] | data[SP_SPOOL_MAGIC_LEN + 1] << 8);
	return s->version == SP_SPOOL_VERSION ? 0 : -SP_E_SPOOL_VERSION;
}

int sp_spool_feed(struct sp_spool *s, const uint8_t *data, size_t len, size_t *used)
{
	const uint8_t *p = data, *end = data + len;
	*used = 0;
	if (!s->version) {
		int err = parse_header(s, data, len);
		if (err)
			return err;
		p += SP_SPOOL_HEADER_LEN;
		*used = SP_SPOOL_HEADER_LEN;
	}
	uint8_t type;
	const uint8_t *payload;
	size_t plen;
	while (next_record(&p, end, &type, &payload, &plen)) {
		int err = parse_record(s, type, payload, plen);
		if (err)
			return err;
		*used = (size_t)(p - data);
	}
	return 0;
}

static int parse(struct sp_spool *s, const uint8_t *data, size_t len)
{
	int err = parse_header(s, data, len);
	if (err)
		return err;
	const uint8_t *p = data + SP_SPOOL_HEADER_LEN, *end = data + len;
	presize(s, (size_t)(end - p));
	while (p < end) {
		uint8_t type;
		const uint8_t *payload;
		size_t plen;
		/* A length running past the end is what a cut write leaves: keep the prefix. */
		if (!next_record(&p, end, &type, &payload, &plen)) {
			s->truncated = true;
			break;
		}
		err = parse_record(s, type, payload, plen);
		if (err == CORRUPT && p == end) {
			/* Damage confined to the last record looks like a torn write. */
			s->truncated = true;
			break;
		}
		if (err)
			return err;
		s->intact_len = (size_t)(p - data);
	}
	if (!s->nlog)
		return -SP_E_SPOOL_TRUNCATED;
	return 0;
}

int sp_spool_new_empty(struct sp_spool **out)
{
	struct sp_spool *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	size_t cap = 0;
	s->stack_parent = sp_grow_array(NULL, &cap, 0, sizeof(uint32_t));
	s->stack_frame = sp_grow_array(NULL, &s->stacks_cap, 0, sizeof(uint32_t));
	s->stack_depth = sp_grow_array(NULL, &s->depth_cap, 0, sizeof(uint16_t));
	if (!s->stack_parent || !s->stack_frame || !s->stack_depth) {
		sp_spool_free(s);
		return -ENOMEM;
	}
	/* Stack 0 is the empty stack: no parent, no frame. */
	s->stack_parent[0] = 0;
	s->stack_frame[0] = UINT32_MAX;
	s->stack_depth[0] = 0;
	s->nstacks = 1;
	*out = s;
	return 0;
}

int sp_spool_open_buffer(const void *data, size_t len, struct sp_spool **out)
{
	if (!data && len)
		return -SP_E_BAD_ARG;
	struct sp_spool *s;
	int err = sp_spool_new_empty(&s);
	if (err)
		return err;
	/* Every string is copied out, so parsing in place is as good as a copy. */
	err = parse(s, data ? data : "", len);
	if (err) {
		sp_spool_free(s);
		return err;
	}
	*out = s;
	return 0;
}

int sp_spool_read_into(int fd, struct sp_buf *b, size_t limit)
{
	while (b->len < limit) {
		size_t want = limit - b->len < 64 * 1024 ? limit - b->len : 64 * 1024;
		int err = sp_buf_reserve(b, want);
		if (err)
			return err;
		ssize_t n = read(fd, b->data + b->len, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		b->len += (size_t)n;
	}
	return 0;
}

int sp_spool_open(const char *path, struct sp_spool **out)
{
	struct sp_buf b;
	sp_buf_init(&b);
	/* A regular file only: a FIFO's or device's read could wait, or never end. */
	int fd = sp_open_regular(path, O_RDONLY, SP_RESOLVE_FOLLOW);
	int err = fd < 0 ? -errno : 0;
	struct stat st;
	if (err == -EINVAL) /* not a regular file: a directory says so */
		err = !stat(path, &st) && S_ISDIR(st.st_mode) ? -EISDIR : -SP_E_NOT_REGULAR;
	if (!err && fstat(fd, &st))
		err = -errno;
	if (!err)
		err = sp_spool_read_into(fd, &b, (size_t)st.st_size);
	if (fd >= 0)
		close(fd);
	if (err)
		goto out;
	err = sp_spool_open_buffer(b.data, b.len, out);
out:
	sp_buf_release(&b);
	return err;
}

void sp_spool_free(struct sp_spool *s)
{
	if (!s)
		return;
	free(s->command);
	free(s->hostname);
	free(s->kernel_release);
	for (size_t i = 0; i < s->nmodules; i++)
		free((char *)s->modules[i].path);
	free(s->modules);
	free(s->frames);
	free(s->stack_parent);
	free(s->stack_depth);
	free(s->stack_frame);
	free(s->threads);
	for (size_t i = 0; i < s->nnames; i++)
		free(s->names[i].name);
	free(s->names);
	free(s->samples);
	free(s->execs);
	free(s->offcpus);
	free(s->owners);
	free(s->losts);
	free(s->summaries);
	free(s->unknowns);
	for (size_t i = 0; i < s->nsym_strings; i++)
		free(s->sym_strings[i]);
	free(s->sym_strings);
	free(s->strrec_first);
	free(s->syms);
	free(s->symframes);
	free(s->ksyms);
	free(s->pmlines);
	free(s->log);
	free(s);
}

const struct sp_spool_meta *sp_spool_meta(const struct sp_spool *s)
{
	return &s->meta;
}

bool sp_spool_truncated(const struct sp_spool *s)
{
	return s->truncated;
}

const struct sp_summary *sp_spool_summary(const struct sp_spool *s)
{
	return s->nsummaries ? &s->summaries[s->nsummaries - 1] : NULL;
}

size_t sp_spool_module_count(const struct sp_spool *s)
{
	return s->nmodules;
}

const struct sp_module *sp_spool_module(const struct sp_spool *s, uint32_t id)
{
	return id < s->nmodules ? &s->modules[id] : NULL;
}

size_t sp_spool_frame_count(const struct sp_spool *s)
{
	return s->nframes;
}

const struct sp_frame *sp_spool_frame(const struct sp_spool *s, uint32_t id)
{
	return id < s->nframes ? &s->frames[id] : NULL;
}

size_t sp_spool_thread_count(const struct sp_spool *s)
{
	return s->nthreads;
}

const struct sp_thread *sp_spool_thread(const struct sp_spool *s, uint32_t index)
{
	return index < s->nthreads ? &s->threads[index] : NULL;
}

size_t sp_spool_sample_count(const struct sp_spool *s)
{
	return s->nsamples;
}

const struct sp_sample *sp_spool_sample(const struct sp_spool *s, size_t index)
{
	return index < s->nsamples ? &s->samples[index] : NULL;
}

size_t sp_spool_offcpu_count(const struct sp_spool *s)
{
	return s->noffcpus;
}

const struct sp_offcpu *sp_spool_offcpu(const struct sp_spool *s, size_t index)
{
	return index < s->noffcpus ? &s->offcpus[index] : NULL;
}

size_t sp_spool_exec_count(const struct sp_spool *s)
{
	return s->nexecs;
}

const struct sp_exec *sp_spool_exec(const struct sp_spool *s, size_t index)
{
	return index < s->nexecs ? &s->execs[index] : NULL;
}

size_t sp_spool_owner_count(const struct sp_spool *s)
{
	return s->nowners;
}

const struct sp_owner *sp_spool_owner(const struct sp_spool *s, size_t index)
{
	return index < s->nowners ? &s->owners[index] : NULL;
}

int sp_spool_process_uid(const struct sp_spool *s, int32_t pid, uint32_t *uid)
{
	/* The latest record decides: a setuid program's exec changes its owner. */
	for (size_t i = s->nowners; i-- > 0;)
		if (s->owners[i].pid == pid) {
			*uid = s->owners[i].uid;
			return 0;
		}
	return -ENOENT;
}

uint64_t sp_spool_lost_total(const struct sp_spool *s)
{
	return s->lost_total;
}

size_t sp_spool_stack_count(const struct sp_spool *s)
{
	return s->nstacks;
}

uint32_t sp_spool_stack_frame(const struct sp_spool *s, uint32_t stack_id)
{
	return stack_id < s->nstacks ? s->stack_frame[stack_id] : UINT32_MAX;
}

uint32_t sp_spool_stack_parent(const struct sp_spool *s, uint32_t stack_id)
{
	return stack_id < s->nstacks ? s->stack_parent[stack_id] : 0;
}

uint32_t sp_spool_stack_depth(const struct sp_spool *s, uint32_t stack_id)
{
	return stack_id < s->nstacks ? s->stack_depth[stack_id] : 0;
}

uint64_t sp_spool_timestamp_us(const struct sp_spool *s, const struct sp_sample *sample)
{
	/* The profile timeline starts at the first sample; earlier outliers clamp to 0. */
	if (!s->nsamples || sample->timestamp_ns < s->samples[0].timestamp_ns)
		return 0;
	return (sample->timestamp_ns - s->samples[0].timestamp_ns) / 1000;
}

bool sp_file_is_spool(const char *path)
{
	int fd = sp_open_regular(path, O_RDONLY | O_NONBLOCK, SP_RESOLVE_FOLLOW);
	if (fd < 0)
		return false;
	char magic[SP_SPOOL_MAGIC_LEN];
	ssize_t n = pread(fd, magic, sizeof(magic), 0);
	close(fd);
	return n == (ssize_t)sizeof(magic) && !memcmp(magic, SP_SPOOL_MAGIC, sizeof(magic));
}
