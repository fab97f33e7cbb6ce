/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: the perf ring record decoders over untrusted record bytes, in several layouts. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/record.h"
#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The recorder's layout (lib/record/perf_event.c) first; the others reach the decoder's other branches. */
#define RECORDER_ST (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | \
		     PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)
#define ALL_ST (RECORDER_ST | PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | \
		PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_PERIOD)

static const struct {
	uint64_t sample_type;
	bool all_regs; /* every mask bit set: 64 register words */
} layouts[8] = {
	{RECORDER_ST, false},
	{RECORDER_ST & ~(uint64_t)PERF_SAMPLE_CALLCHAIN, false},
	{ALL_ST, false},
	{PERF_SAMPLE_IP | PERF_SAMPLE_TID, false},
	{PERF_SAMPLE_TIME | PERF_SAMPLE_IDENTIFIER, false},
	{0, false},
	{RECORDER_ST | PERF_SAMPLE_RAW, false}, /* unsupported bit: must be refused */
	{PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER, true},
};

/* Read every byte a decoder pointed at: ASan then proves the pointer stays inside the record. */
static uint64_t touch(const void *p, size_t n)
{
	const volatile uint8_t *b = p;
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += b[i];
	return sum;
}

static void in_record(const void *p, size_t n, const uint8_t *rec, size_t len)
{
	const uint8_t *b = p;
	CHECK(b >= rec && n <= len && (size_t)(b - rec) <= len - n);
	touch(p, n);
}

static void decode_sample(const struct sp_perf_layout *l, const uint8_t *rec, size_t len)
{
	struct sp_perf_sample s;
	if (sp_perf_parse_sample(l, rec, len, &s))
		return;
	CHECK(!(l->sample_type & PERF_SAMPLE_RAW));
	if (s.nr_callchain)
		in_record(s.callchain, (size_t)s.nr_callchain * 8, rec, len);
	if (s.regs) {
		in_record(s.regs, (size_t)l->nregs * 8, rec, len);
		struct sp_regs regs;
		sp_regs_from_perf(s.regs, l->sample_regs_user, &regs);
	}
	if (s.stack_size) {
		in_record(s.stack, (size_t)s.stack_size, rec, len);
		CHECK(s.dyn_size <= s.stack_size);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	/*
	 * First byte: bits 0-2 pick the layout, bit 3 writes the true length
	 * into header.size (so mutations spend their time past the size check),
	 * bit 4 turns sample_id_all off.
	 */
	uint8_t sel = data[0];
	size_t len = size - 1;
	struct sp_perf_layout l;
	uint64_t mask = layouts[sel & 7].all_regs ? ~0ull : sp_perf_regs_mask();
	sp_perf_layout_init(&l, layouts[sel & 7].sample_type, mask, !(sel & 0x10));

	/*
	 * The ring copy is 8-byte aligned and exactly len long: malloc gives
	 * both, and ASan a red zone right after it.  Records shorter than a
	 * header go to the decoders too: they must not read it.
	 */
	uint8_t *rec = malloc(len ? len : 1);
	if (!rec)
		return 0;
	memcpy(rec, data + 1, len);
	if ((sel & 8) && len >= sizeof(struct perf_event_header) && len <= UINT16_MAX) {
		uint16_t sz = (uint16_t)len;
		memcpy(rec + offsetof(struct perf_event_header, size), &sz, sizeof(sz));
	}
	decode_sample(&l, rec, len);
	/* A wrapped sample's copy skips the stack hole: inside the record, and the skipped
	 * copy decodes as the whole one did (split at an 8-byte boundary from the first byte). */
	size_t lo, hi, split = (size_t)(sel >> 5) * 8 < len ? (size_t)(sel >> 5) * 8 : 0;
	split -= split % 8;
	if (len % 8 == 0 && sp_perf_sample_stack_hole(&l, rec, split ? split : len, rec + split,
						       len, &lo, &hi)) {
		CHECK(lo <= hi && hi <= len);
		uint8_t *copy = malloc(len);
		if (copy) {
			memset(copy, 0xee, len);
			memcpy(copy, rec, lo);
			memcpy(copy + hi, rec + hi, len - hi);
			struct sp_perf_sample a, b;
			int ea = sp_perf_parse_sample(&l, rec, len, &a);
			CHECK(ea == sp_perf_parse_sample(&l, copy, len, &b));
			CHECK(ea || (a.dyn_size == b.dyn_size &&
				     (!a.stack_size || !memcmp(a.stack, copy + (a.stack - rec), a.dyn_size))));
			free(copy);
		}
	}

	struct sp_perf_sample_id id;
	sp_perf_parse_sample_id(&l, rec, len, &id);
	uint64_t t;
	sp_perf_record_time(&l, rec, len, &t);

	struct sp_perf_mmap2 mm;
	if (!sp_perf_parse_mmap2(rec, len, &mm))
		in_record(mm.filename, strlen(mm.filename) + 1, rec, len);
	struct sp_perf_comm c;
	if (!sp_perf_parse_comm(rec, len, &c))
		in_record(c.comm, strlen(c.comm) + 1, rec, len);
	struct sp_perf_task task;
	sp_perf_parse_task(rec, len, &task);
	struct sp_perf_lost lost;
	sp_perf_parse_lost(rec, len, &lost);
	free(rec);
	return 0;
}
