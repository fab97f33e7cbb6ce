/* SPDX-License-Identifier: MIT */
/* Decoding perf ring records (perf_event_open(2) layouts), every size checked first. */
#include "record/record.h"

#include <linux/perf_event.h>
#include <string.h>

/* Sample fields this decoder understands; others are never requested. */
#define SUPPORTED_SAMPLE                                                       \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |           \
	 PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID |                \
	 PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |        \
	 PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)

void sp_perf_layout_init(struct sp_perf_layout *l, uint64_t sample_type, uint64_t regs_mask,
			 bool sample_id_all)
{
	l->sample_type = sample_type;
	l->sample_regs_user = regs_mask;
	l->nregs = (unsigned)__builtin_popcountll(regs_mask);
	l->sample_id_all = sample_id_all;
	sp_regs_map_init(&l->regs_map, regs_mask);
}

/* A cursor over one record's u64 words. */
struct cursor {
	const uint8_t *p, *end;
};

static int take(struct cursor *c, size_t n, const uint8_t **out)
{
	if ((size_t)(c->end - c->p) < n)
		return -SP_E_RING_CORRUPT;
	*out = c->p;
	c->p += n;
	return 0;
}

static int take_u64(struct cursor *c, uint64_t *v)
{
	const uint8_t *p;
	int err = take(c, 8, &p);
	if (!err)
		memcpy(v, p, 8);
	return err;
}

int sp_perf_parse_sample(const struct sp_perf_layout *l, const void *rec, size_t len,
			 struct sp_perf_sample *out)
{
	const uint64_t st = l->sample_type;
	const struct perf_event_header *h = rec;
	struct cursor c = {(const uint8_t *)rec + sizeof(*h), (const uint8_t *)rec + len};
	uint64_t v;
	int err = 0;

	memset(out, 0, sizeof(*out));
	if (len < sizeof(*h) || h->size != len || h->type != PERF_RECORD_SAMPLE ||
	    (st & ~(uint64_t)SUPPORTED_SAMPLE))
		return -SP_E_RING_CORRUPT;
	if ((st & PERF_SAMPLE_IDENTIFIER) && !err && !(err = take_u64(&c, &out->id)))
		out->has_id = true;
	if (st & PERF_SAMPLE_IP)
		err = err ? err : take_u64(&c, &out->ip);
	if ((st & PERF_SAMPLE_TID) && !err && !(err = take_u64(&c, &v))) {
		out->pid = (uint32_t)v;
		out->tid = (uint32_t)(v >> 32);
		out->has_tid = true;
	}
	if ((st & PERF_SAMPLE_TIME) && !err && !(err = take_u64(&c, &out->time)))
		out->has_time = true;
	if (st & PERF_SAMPLE_ADDR)
		err = err ? err : take_u64(&c, &v);
	if (st & PERF_SAMPLE_ID)
		err = err ? err : take_u64(&c, &v);
	if (st & PERF_SAMPLE_STREAM_ID)
		err = err ? err : take_u64(&c, &v);
	if ((st & PERF_SAMPLE_CPU) && !err && !(err = take_u64(&c, &v)))
		out->cpu = (uint32_t)v;
	if (st & PERF_SAMPLE_PERIOD)
		err = err ? err : take_u64(&c, &out->period);
	if ((st & PERF_SAMPLE_CALLCHAIN) && !err && !(err = take_u64(&c, &out->nr_callchain))) {
		const uint8_t *p = NULL;
		if (out->nr_callchain > (uint64_t)(c.end - c.p) / 8)
			return -SP_E_RING_CORRUPT;
		err = take(&c, out->nr_callchain * 8, &p);
		out->callchain = (const uint64_t *)p;
	}
	if ((st & PERF_SAMPLE_REGS_USER) && !err && !(err = take_u64(&c, &out->regs_abi))) {
		if (out->regs_abi) {
			const uint8_t *p = NULL;
			err = take(&c, (size_t)l->nregs * 8, &p);
			out->regs = (const uint64_t *)p;
		}
	}
	if ((st & PERF_SAMPLE_STACK_USER) && !err && !(err = take_u64(&c, &out->stack_size))) {
		/* No data and no dyn_size follow a zero size (the kernel could not copy). */
		if (out->stack_size) {
			const uint8_t *p = NULL;
			if (out->stack_size > (uint64_t)(c.end - c.p))
				return -SP_E_RING_CORRUPT;
			err = take(&c, out->stack_size, &p);
			out->stack = p;
			err = err ? err : take_u64(&c, &out->dyn_size);
			if (!err && out->dyn_size > out->stack_size)
				return -SP_E_RING_CORRUPT;
		}
	}
	return err;
}

/*
 * A sample that wraps the ring's end is copied to be read in one piece, and
 * most of its bytes are the stack copy's unused tail: the kernel reserves the
 * requested size and copies dyn_size of it.  Where that tail lies, read from
 * the record's two pieces (a: alen bytes up to the ring's end, b: the rest;
 * alen is a multiple of 8, so no u64 is split): [*lo, *hi).  False, and
 * nothing skipped, for a record whose fields do not add up; its full copy is
 * then refused by sp_perf_parse_sample as any other.
 */
static uint64_t word_at(const uint8_t *a, size_t alen, const uint8_t *b, size_t off)
{
	uint64_t v;
	memcpy(&v, off < alen ? a + off : b + (off - alen), 8);
	return v;
}

bool sp_perf_sample_stack_hole(const struct sp_perf_layout *l, const uint8_t *a, size_t alen,
			       const uint8_t *b, size_t len, size_t *lo, size_t *hi)
{
	const uint64_t st = l->sample_type;
	const uint64_t fixed = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			       PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID |
			       PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;

	if (!(st & PERF_SAMPLE_STACK_USER) || (st & ~(uint64_t)SUPPORTED_SAMPLE) || alen % 8)
		return false;
	/* every offset below stays under len before its word is read */
	uint64_t o = sizeof(struct perf_event_header) + 8 * (uint64_t)__builtin_popcountll(st & fixed);
	if ((st & PERF_SAMPLE_CALLCHAIN)) {
		if (o + 8 > len)
			return false;
		uint64_t nr = word_at(a, alen, b, o);
		if (nr > (len - o - 8) / 8)
			return false;
		o += 8 + 8 * nr;
	}
	if ((st & PERF_SAMPLE_REGS_USER)) {
		if (o + 8 > len)
			return false;
		o += 8 + (word_at(a, alen, b, o) ? 8 * (uint64_t)l->nregs : 0);
	}
	if (o + 8 > len)
		return false;
	uint64_t size = word_at(a, alen, b, o);
	if (size == 0 || size % 8 || size > len - o - 8 || len - o - 8 - size < 8)
		return false;
	uint64_t data = o + 8, dyn = word_at(a, alen, b, data + size);
	if (dyn > size)
		return false;
	*lo = (size_t)(data + dyn);
	*hi = (size_t)(data + size);
	return true;
}

static size_t sample_id_size(const struct sp_perf_layout *l)
{
	const uint64_t st = l->sample_type;
	size_t n = 0;
	n += (st & PERF_SAMPLE_TID) ? 8 : 0;
	n += (st & PERF_SAMPLE_TIME) ? 8 : 0;
	n += (st & PERF_SAMPLE_ID) ? 8 : 0;
	n += (st & PERF_SAMPLE_STREAM_ID) ? 8 : 0;
	n += (st & PERF_SAMPLE_CPU) ? 8 : 0;
	n += (st & PERF_SAMPLE_IDENTIFIER) ? 8 : 0;
	return n;
}

int sp_perf_parse_sample_id(const struct sp_perf_layout *l, const void *rec, size_t len,
			    struct sp_perf_sample_id *out)
{
	const uint64_t st = l->sample_type;
	size_t n = sample_id_size(l);
	memset(out, 0, sizeof(*out));
	if (!l->sample_id_all || len < sizeof(struct perf_event_header) + n)
		return -SP_E_RING_CORRUPT;
	struct cursor c = {(const uint8_t *)rec + len - n, (const uint8_t *)rec + len};
	uint64_t v;
	if ((st & PERF_SAMPLE_TID) && !take_u64(&c, &v)) {
		out->pid = (uint32_t)v;
		out->tid = (uint32_t)(v >> 32);
	}
	if ((st & PERF_SAMPLE_TIME) && !take_u64(&c, &out->time))
		out->has_time = true;
	return 0;
}

int sp_perf_record_time(const struct sp_perf_layout *l, const void *rec, size_t len,
			uint64_t *time)
{
	const struct perf_event_header *h = rec;
	if (len < sizeof(*h))
		return -SP_E_RING_CORRUPT;
	if (h->type == PERF_RECORD_SAMPLE) {
		/* TIME follows IDENTIFIER, IP and TID when they are present. */
		if (!(l->sample_type & PERF_SAMPLE_TIME))
			return -SP_E_RING_CORRUPT;
		size_t off = sizeof(*h);
		off += (l->sample_type & PERF_SAMPLE_IDENTIFIER) ? 8 : 0;
		off += (l->sample_type & PERF_SAMPLE_IP) ? 8 : 0;
		off += (l->sample_type & PERF_SAMPLE_TID) ? 8 : 0;
		if (off + 8 > len)
			return -SP_E_RING_CORRUPT;
		memcpy(time, (const uint8_t *)rec + off, 8);
		return 0;
	}
	struct sp_perf_sample_id id;
	int err = sp_perf_parse_sample_id(l, rec, len, &id);
	if (err || !id.has_time)
		return err ? err : -SP_E_RING_CORRUPT;
	*time = id.time;
	return 0;
}

/* A string field must end (NUL) inside the record. */
static int checked_string(const uint8_t *p, const uint8_t *end, const char **out)
{
	if (p >= end || !memchr(p, '\0', (size_t)(end - p)))
		return -SP_E_RING_CORRUPT;
	*out = (const char *)p;
	return 0;
}

int sp_perf_parse_mmap2(const void *rec, size_t len, struct sp_perf_mmap2 *out)
{
	const struct perf_event_header *h = rec;
	const uint8_t *b = rec;
	/* header, pid, tid, addr, len, pgoff, maj, min, ino, ino_generation, prot, flags */
	const size_t fixed = 8 + 4 + 4 + 8 + 8 + 8 + 4 + 4 + 8 + 8 + 4 + 4;
	if (len < fixed + 1 || h->size != len || h->type != PERF_RECORD_MMAP2)
		return -SP_E_RING_CORRUPT;
	memcpy(&out->pid, b + 8, 4);
	memcpy(&out->tid, b + 12, 4);
	memcpy(&out->addr, b + 16, 8);
	memcpy(&out->len, b + 24, 8);
	memcpy(&out->pgoff, b + 32, 8);
	memcpy(&out->maj, b + 40, 4);
	memcpy(&out->min, b + 44, 4);
	memcpy(&out->ino, b + 48, 8);
	memcpy(&out->ino_generation, b + 56, 8);
	memcpy(&out->prot, b + 64, 4);
	memcpy(&out->flags, b + 68, 4);
	if (h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
		/* The id fields hold a build-id instead; we never ask for that form. */
		out->maj = out->min = 0;
		out->ino = out->ino_generation = 0;
	}
	if (out->addr + out->len < out->addr)
		return -SP_E_RING_CORRUPT;
	return checked_string(b + fixed, b + len, &out->filename);
}

int sp_perf_parse_comm(const void *rec, size_t len, struct sp_perf_comm *out)
{
	const struct perf_event_header *h = rec;
	const uint8_t *b = rec;
	if (len < 8 + 8 + 1 || h->size != len || h->type != PERF_RECORD_COMM)
		return -SP_E_RING_CORRUPT;
	memcpy(&out->pid, b + 8, 4);
	memcpy(&out->tid, b + 12, 4);
	out->exec = (h->misc & PERF_RECORD_MISC_COMM_EXEC) != 0;
	return checked_string(b + 16, b + len, &out->comm);
}

int sp_perf_parse_task(const void *rec, size_t len, struct sp_perf_task *out)
{
	const struct perf_event_header *h = rec;
	const uint8_t *b = rec;
	if (len < 8 + 16 + 8 || h->size != len ||
	    (h->type != PERF_RECORD_FORK && h->type != PERF_RECORD_EXIT))
		return -SP_E_RING_CORRUPT;
	memcpy(&out->pid, b + 8, 4);
	memcpy(&out->ppid, b + 12, 4);
	memcpy(&out->tid, b + 16, 4);
	memcpy(&out->ptid, b + 20, 4);
	memcpy(&out->time, b + 24, 8);
	return 0;
}

int sp_perf_parse_lost(const void *rec, size_t len, struct sp_perf_lost *out)
{
	const struct perf_event_header *h = rec;
	const uint8_t *b = rec;
	if (len < 8 + 16 || h->size != len || h->type != PERF_RECORD_LOST)
		return -SP_E_RING_CORRUPT;
	memcpy(&out->id, b + 8, 8);
	memcpy(&out->lost, b + 16, 8);
	return 0;
}
