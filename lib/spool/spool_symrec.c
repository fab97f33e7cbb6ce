/* SPDX-License-Identifier: MIT */
/*
 * The spool's symbol records (stackpulse-spool(5), types 11 to 14): decoding
 * them into the reader's tables, encoding resolved frames as new ones, and
 * finding a spool's stored chains by frame.
 */
#include "spool/spool.h"

#include <string.h>

#define CORRUPT (-SP_E_SPOOL_CORRUPT)

/* ---- decoding, for the reader ----------------------------------------- */

/* A string id defined by an earlier SYM_STRINGS record. */
static int get_string_id(const struct sp_spool *s, struct sp_cur *c, uint32_t *id)
{
	if (sp_cur_u32(c, id) || *id >= s->nsym_strings)
		return CORRUPT;
	return 0;
}

/* The same, stored plus one: 0 gives SP_SYM_NO_STRING. */
static int get_opt_string_id(const struct sp_spool *s, struct sp_cur *c, uint32_t *id)
{
	uint64_t v;
	if (sp_cur_u64(c, &v) || v > s->nsym_strings)
		return CORRUPT;
	*id = v ? (uint32_t)(v - 1) : SP_SYM_NO_STRING;
	return 0;
}

static int parse_sym_strings(struct sp_spool *s, struct sp_cur *c)
{
	uint64_t n;
	/* Every string takes at least its length byte: n is bounded by the payload. */
	if (s->nstrrecs >= UINT32_MAX || sp_cur_u64(c, &n) || n > (uint64_t)(c->end - c->p) ||
	    s->nsym_strings + n >= SP_SYM_NO_STRING)
		return CORRUPT;
	int err = SP_GROW(s->strrec_first, s->nstrrecs, s->strrecs_cap);
	if (err)
		return err;
	size_t first = s->nsym_strings;
	for (uint64_t i = 0; i < n; i++) {
		char *str;
		err = SP_GROW(s->sym_strings, s->nsym_strings, s->sym_strings_cap);
		if (!err)
			err = sp_cur_str(c, &str);
		if (err)
			goto undo;
		s->sym_strings[s->nsym_strings++] = str;
	}
	err = sp_spool_log_record(s, SP_REC_SYM_STRINGS, s->nstrrecs);
	if (err)
		goto undo;
	s->strrec_first[s->nstrrecs++] = (uint32_t)first;
	return 0;
undo:
	/* A damaged record defines none of its strings. */
	while (s->nsym_strings > first)
		free(s->sym_strings[--s->nsym_strings]);
	return err;
}

static int parse_sym_frame(struct sp_spool *s, struct sp_cur *c)
{
	uint64_t frame, n;
	/* An entry is at least eight one-byte fields. */
	if (s->nsymframes >= UINT32_MAX || sp_cur_u64(c, &frame) || frame >= s->nframes ||
	    sp_cur_u64(c, &n) || n == 0 || n > (uint64_t)(c->end - c->p) / 8 ||
	    s->nsyms + n >= UINT32_MAX)
		return CORRUPT;
	size_t first = s->nsyms;
	for (uint64_t i = 0; i < n; i++) {
		struct sp_spool_sym e;
		uint64_t kind, origin;
		if (sp_cur_u64(c, &kind) || kind > SP_KIND_TRUNCATED || sp_cur_u64(c, &origin) ||
		    origin > SP_ORIGIN_ADDRESS_ONLY || sp_cur_u32(c, &e.flags) ||
		    get_string_id(s, c, &e.name) || get_string_id(s, c, &e.module) ||
		    get_opt_string_id(s, c, &e.file) || sp_cur_u32(c, &e.line) ||
		    sp_cur_u64(c, &e.symbol_offset)) {
			s->nsyms = first;
			return CORRUPT;
		}
		e.kind = (uint8_t)kind;
		e.origin = (uint8_t)origin;
		int err = SP_GROW(s->syms, s->nsyms, s->syms_cap);
		if (err) {
			s->nsyms = first;
			return err;
		}
		s->syms[s->nsyms++] = e;
	}
	int err = SP_GROW(s->symframes, s->nsymframes, s->symframes_cap);
	if (!err)
		err = sp_spool_log_record(s, SP_REC_SYM_FRAME, s->nsymframes);
	if (err) {
		s->nsyms = first;
		return err;
	}
	s->symframes[s->nsymframes++] = (struct sp_spool_symframe){
		.frame = (uint32_t)frame, .first = (uint32_t)first, .n = (uint32_t)n};
	return 0;
}

static int parse_sym_kernel(struct sp_spool *s, struct sp_cur *c)
{
	struct sp_spool_ksym k;
	if (s->nksyms >= UINT32_MAX || sp_cur_u64(c, &k.addr) || sp_cur_u64(c, &k.size) ||
	    get_string_id(s, c, &k.name) || get_opt_string_id(s, c, &k.module))
		return CORRUPT;
	int err = SP_GROW(s->ksyms, s->nksyms, s->ksyms_cap);
	if (!err)
		err = sp_spool_log_record(s, SP_REC_SYM_KERNEL, s->nksyms);
	if (err)
		return err;
	s->ksyms[s->nksyms++] = k;
	return 0;
}

static int parse_sym_perf_map(struct sp_spool *s, struct sp_cur *c)
{
	struct sp_spool_pmline l;
	if (s->npmlines >= UINT32_MAX || sp_cur_i32(c, &l.pid) || sp_cur_u64(c, &l.start) ||
	    sp_cur_u64(c, &l.size) || get_string_id(s, c, &l.name))
		return CORRUPT;
	int err = SP_GROW(s->pmlines, s->npmlines, s->pmlines_cap);
	if (!err)
		err = sp_spool_log_record(s, SP_REC_SYM_PERF_MAP, s->npmlines);
	if (err)
		return err;
	s->pmlines[s->npmlines++] = l;
	return 0;
}

int sp_spool_parse_symrec(struct sp_spool *s, uint8_t type, struct sp_cur *c)
{
	switch (type) {
	case SP_REC_SYM_STRINGS:
		return parse_sym_strings(s, c);
	case SP_REC_SYM_FRAME:
		return parse_sym_frame(s, c);
	case SP_REC_SYM_KERNEL:
		return parse_sym_kernel(s, c);
	default:
		return parse_sym_perf_map(s, c);
	}
}

/* ---- encoding ---------------------------------------------------------- */

/* Strings per SYM_STRINGS record: a torn write then loses at most one record's worth. */
#define STRINGS_PER_RECORD 1024u

struct sp_symenc {
	const struct sp_spool *spool;
	uint32_t base;           /* ids of new strings start here, after the spool's own */
	struct sp_map str_index; /* hash of a string -> its id; collisions probe on */
	struct sp_buf strbytes;  /* new strings, NUL-terminated, at stroff[id - base] */
	size_t *stroff;
	size_t nstr, str_cap;
	struct sp_buf recs;      /* SYM_FRAME, SYM_KERNEL, SYM_PERF_MAP records, whole */
	struct sp_buf scratch;   /* one record's payload */
	uint64_t frames, kernel_symbols, perf_map_lines;
};

static uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ULL;
	return sp_hash64(h);
}

static const char *enc_string(const struct sp_symenc *e, uint32_t id)
{
	return id < e->base ? e->spool->sym_strings[id]
			    : (const char *)e->strbytes.data + e->stroff[id - e->base];
}

/* The id of s: an equal string already in the spool or this encoder, or a new one. */
static int intern(struct sp_symenc *e, const char *s, uint32_t *id)
{
	uint64_t h = str_hash(s);
	while (sp_map_get(&e->str_index, h, id)) {
		if (!strcmp(enc_string(e, *id), s))
			return 0;
		h = sp_hash64(h + 1);
	}
	if (e->base + e->nstr >= SP_SYM_NO_STRING - 1)
		return -EOVERFLOW;
	int err = SP_GROW(e->stroff, e->nstr, e->str_cap);
	if (err)
		return err;
	size_t off = e->strbytes.len;
	err = sp_buf_append(&e->strbytes, s, strlen(s) + 1);
	if (err)
		return err;
	*id = e->base + (uint32_t)e->nstr;
	err = sp_map_put(&e->str_index, h, *id);
	if (err) {
		e->strbytes.len = off;
		return err;
	}
	e->stroff[e->nstr++] = off;
	return 0;
}

int sp_symenc_new(const struct sp_spool *s, struct sp_symenc **out)
{
	struct sp_symenc *e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->spool = s;
	e->base = (uint32_t)s->nsym_strings;
	sp_map_init(&e->str_index);
	sp_buf_init(&e->strbytes);
	sp_buf_init(&e->recs);
	sp_buf_init(&e->scratch);
	/* The spool's strings are reused: a second symbolize adds only what is new. */
	for (uint32_t i = 0; i < e->base; i++) {
		uint64_t h = str_hash(s->sym_strings[i]);
		uint32_t id;
		bool dup = false;
		while (!dup && sp_map_get(&e->str_index, h, &id)) {
			dup = !strcmp(s->sym_strings[id], s->sym_strings[i]);
			h = sp_hash64(h + 1);
		}
		int err = dup ? 0 : sp_map_put(&e->str_index, h, i);
		if (err) {
			sp_symenc_free(e);
			return err;
		}
	}
	*out = e;
	return 0;
}

void sp_symenc_free(struct sp_symenc *e)
{
	if (!e)
		return;
	sp_map_release(&e->str_index);
	sp_buf_release(&e->strbytes);
	sp_buf_release(&e->recs);
	sp_buf_release(&e->scratch);
	free(e->stroff);
	free(e);
}

/* Append the scratch payload to out as one record of type. */
static int put_record(struct sp_buf *out, uint8_t type, const struct sp_buf *payload)
{
	int err = sp_buf_append(out, &type, 1);
	if (!err)
		err = sp_buf_put_uvarint(out, payload->len);
	if (!err)
		err = sp_buf_append(out, payload->data, payload->len);
	return err;
}

static int put_string_ref(struct sp_symenc *e, const char *s, bool optional)
{
	uint32_t id;
	if (optional && !s)
		return sp_buf_put_uvarint(&e->scratch, 0);
	int err = intern(e, s ? s : "", &id);
	if (!err)
		err = sp_buf_put_uvarint(&e->scratch, (uint64_t)id + optional);
	return err;
}

int sp_symenc_add_frame(struct sp_symenc *e, uint32_t frame_id,
			const struct sp_resolved_frame *chain, size_t n)
{
	if (!n || frame_id >= e->spool->nframes)
		return -SP_E_BAD_ARG;
	size_t mark = e->recs.len;
	e->scratch.len = 0;
	int err = sp_buf_put_uvarint(&e->scratch, frame_id);
	if (!err)
		err = sp_buf_put_uvarint(&e->scratch, n);
	for (size_t i = 0; i < n && !err; i++) {
		const struct sp_resolved_frame *f = &chain[i];
		err = sp_buf_put_uvarint(&e->scratch, f->kind);
		if (!err)
			err = sp_buf_put_uvarint(&e->scratch, f->origin);
		if (!err)
			err = sp_buf_put_uvarint(&e->scratch, f->flags);
		if (!err)
			err = put_string_ref(e, f->name, false);
		if (!err)
			err = put_string_ref(e, f->module, false);
		if (!err)
			err = put_string_ref(e, f->file, true);
		if (!err)
			err = sp_buf_put_uvarint(&e->scratch, f->line);
		if (!err)
			err = sp_buf_put_uvarint(&e->scratch, f->symbol_offset);
	}
	if (!err)
		err = put_record(&e->recs, SP_REC_SYM_FRAME, &e->scratch);
	if (err) {
		e->recs.len = mark;
		return err;
	}
	e->frames++;
	return 0;
}

int sp_symenc_add_kernel_symbol(struct sp_symenc *e, uint64_t addr, uint64_t size,
				const char *name, const char *module)
{
	e->scratch.len = 0;
	int err = sp_buf_put_uvarint(&e->scratch, addr);
	if (!err)
		err = sp_buf_put_uvarint(&e->scratch, size);
	if (!err)
		err = put_string_ref(e, name, false);
	if (!err)
		err = put_string_ref(e, module, true);
	if (!err)
		err = put_record(&e->recs, SP_REC_SYM_KERNEL, &e->scratch);
	e->kernel_symbols += !err;
	return err;
}

int sp_symenc_add_perf_map_line(struct sp_symenc *e, int32_t pid, uint64_t start,
				uint64_t size, const char *name)
{
	e->scratch.len = 0;
	int err = sp_buf_put_svarint(&e->scratch, pid);
	if (!err)
		err = sp_buf_put_uvarint(&e->scratch, start);
	if (!err)
		err = sp_buf_put_uvarint(&e->scratch, size);
	if (!err)
		err = put_string_ref(e, name, false);
	if (!err)
		err = put_record(&e->recs, SP_REC_SYM_PERF_MAP, &e->scratch);
	e->perf_map_lines += !err;
	return err;
}

uint64_t sp_symenc_frames(const struct sp_symenc *e)
{
	return e->frames;
}

/*
 * The records, strings first: every record refers only to strings defined
 * before it, so any prefix of the output is valid on its own.
 */
int sp_symenc_finish(struct sp_symenc *e, struct sp_buf *out)
{
	for (size_t i = 0; i < e->nstr; i += STRINGS_PER_RECORD) {
		size_t n = e->nstr - i < STRINGS_PER_RECORD ? e->nstr - i : STRINGS_PER_RECORD;
		e->scratch.len = 0;
		int err = sp_buf_put_uvarint(&e->scratch, n);
		for (size_t k = 0; k < n && !err; k++)
			err = sp_buf_put_str(&e->scratch, enc_string(e, e->base + (uint32_t)(i + k)));
		if (!err)
			err = put_record(out, SP_REC_SYM_STRINGS, &e->scratch);
		if (err)
			return err;
	}
	return sp_buf_append(out, e->recs.data, e->recs.len);
}

/* ---- stored symbols, by frame id --------------------------------------- */

int sp_symstore_index(const struct sp_spool *s, uint32_t **by_frame)
{
	*by_frame = NULL;
	if (!s->nsymframes)
		return 0;
	uint32_t *idx = malloc((s->nframes ? s->nframes : 1) * sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < s->nframes; i++)
		idx[i] = UINT32_MAX;
	/* In file order, so a later record for a frame replaces an earlier one. */
	for (size_t i = 0; i < s->nsymframes; i++)
		idx[s->symframes[i].frame] = (uint32_t)i;
	*by_frame = idx;
	return 0;
}

size_t sp_symstore_get(const struct sp_spool *s, const uint32_t *by_frame, uint32_t frame_id,
		       struct sp_resolved_frame *out, size_t max)
{
	if (!by_frame || frame_id >= s->nframes || by_frame[frame_id] == UINT32_MAX)
		return 0;
	const struct sp_spool_symframe *sf = &s->symframes[by_frame[frame_id]];
	const struct sp_frame *fr = &s->frames[frame_id];
	for (size_t i = 0; i < sf->n && i < max; i++) {
		const struct sp_spool_sym *e = &s->syms[sf->first + i];
		out[i] = (struct sp_resolved_frame){
			.name = s->sym_strings[e->name],
			.module = s->sym_strings[e->module],
			.file = e->file == SP_SYM_NO_STRING ? NULL : s->sym_strings[e->file],
			.line = e->line,
			.kind = e->kind,
			.origin = e->origin,
			.flags = e->flags,
			.pc = fr->abs_ip,
			.symbol_offset = e->symbol_offset,
		};
	}
	return sf->n;
}
