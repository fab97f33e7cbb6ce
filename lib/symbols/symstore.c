/* SPDX-License-Identifier: MIT */
/* Symbol records: encoding resolved frames into a spool, and finding a spool's stored ones by frame. */
#include "symbols/symbols.h"

#include <string.h>

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
