/* SPDX-License-Identifier: MIT */
/* Unit tests for the perf record decoder: layouts, bounds, malformed records. */
#include <criterion/criterion.h>
#include <string.h>

#include "record/record.h"

#define ST (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | \
	    PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)

static struct sp_perf_layout layout;
static uint64_t words[512];

static void setup(void)
{
	sp_perf_layout_init(&layout, ST, sp_perf_regs_mask(), true);
}

/* Build a sample: header, ip, pid/tid, time, cpu, abi + regs, stack size/data/dyn. */
static size_t build_sample(uint64_t stack_size, uint64_t dyn_size)
{
	size_t n = 1;
	words[n++] = 0x401000;                      /* ip */
	words[n++] = 42 | ((uint64_t)43 << 32);     /* pid, tid */
	words[n++] = 123456789;                     /* time */
	words[n++] = 1;                             /* cpu */
	words[n++] = 2;                             /* PERF_SAMPLE_REGS_ABI_64 */
	for (unsigned i = 0; i < layout.nregs; i++)
		words[n++] = 0x1000 + i;
	words[n++] = stack_size;
	for (uint64_t i = 0; i < stack_size / 8; i++)
		words[n++] = 0xabcd0000 + i;
	if (stack_size)
		words[n++] = dyn_size;
	struct perf_event_header h = {.type = PERF_RECORD_SAMPLE, .size = (uint16_t)(n * 8)};
	memcpy(&words[0], &h, sizeof(h));
	return n * 8;
}

Test(perf_record, parses_full_sample, .init = setup)
{
	size_t len = build_sample(64, 40);
	struct sp_perf_sample s;
	cr_assert_eq(sp_perf_parse_sample(&layout, words, len, &s), 0);
	cr_assert_eq(s.ip, 0x401000);
	cr_assert_eq(s.pid, 42);
	cr_assert_eq(s.tid, 43);
	cr_assert_eq(s.time, 123456789);
	cr_assert_eq(s.cpu, 1);
	cr_assert_eq(s.regs_abi, 2);
	cr_assert_eq(s.regs[0], 0x1000);
	cr_assert_eq(s.stack_size, 64);
	cr_assert_eq(s.dyn_size, 40);
	uint64_t first;
	memcpy(&first, s.stack, 8);
	cr_assert_eq(first, 0xabcd0000);
	uint64_t t;
	cr_assert_eq(sp_perf_record_time(&layout, words, len, &t), 0);
	cr_assert_eq(t, 123456789);
}

Test(perf_record, sample_without_stack_copy, .init = setup)
{
	size_t len = build_sample(0, 0);
	struct sp_perf_sample s;
	cr_assert_eq(sp_perf_parse_sample(&layout, words, len, &s), 0);
	cr_assert_eq(s.stack_size, 0);
	cr_assert_null(s.stack);
}

Test(perf_record, rejects_every_truncation, .init = setup)
{
	size_t len = build_sample(64, 64);
	struct sp_perf_sample s;
	for (size_t cut = 0; cut < len; cut += 8) {
		/* The header claims the cut length, as a corrupt ring would. */
		struct perf_event_header h = {.type = PERF_RECORD_SAMPLE, .size = (uint16_t)cut};
		memcpy(&words[0], &h, sizeof(h));
		cr_assert_neq(sp_perf_parse_sample(&layout, words, cut, &s), 0, "cut at %zu", cut);
	}
}

Test(perf_record, rejects_dyn_size_above_size, .init = setup)
{
	size_t len = build_sample(64, 72);
	struct sp_perf_sample s;
	cr_assert_eq(sp_perf_parse_sample(&layout, words, len, &s), -SP_E_RING_CORRUPT);
}

Test(perf_record, rejects_stack_size_past_record, .init = setup)
{
	size_t len = build_sample(64, 8);
	/* Claim a bigger copy than the record holds. */
	size_t size_word = 1 + 5 + layout.nregs; /* header, ip, tid, time, cpu, abi, regs */
	words[size_word] = 1u << 20;
	struct sp_perf_sample s;
	cr_assert_eq(sp_perf_parse_sample(&layout, words, len, &s), -SP_E_RING_CORRUPT);
}

Test(perf_record, rejects_huge_callchain)
{
	struct sp_perf_layout l;
	sp_perf_layout_init(&l, PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN, 0, true);
	uint64_t w[4] = {0, 0x1000, UINT64_MAX / 4, 0};
	struct perf_event_header h = {.type = PERF_RECORD_SAMPLE, .size = sizeof(w)};
	memcpy(w, &h, sizeof(h));
	struct sp_perf_sample s;
	cr_assert_eq(sp_perf_parse_sample(&l, w, sizeof(w), &s), -SP_E_RING_CORRUPT);
}

static size_t build_mmap2(const char *name, bool terminate)
{
	uint8_t *b = (uint8_t *)words;
	memset(words, 0, sizeof(words));
	uint32_t pid = 7, tid = 8, maj = 8, min = 1, prot = 5, flags = 2;
	uint64_t addr = 0x7f0000000000, len = 0x2000, pgoff = 0x1000, ino = 99, gen = 0;
	memcpy(b + 8, &pid, 4);
	memcpy(b + 12, &tid, 4);
	memcpy(b + 16, &addr, 8);
	memcpy(b + 24, &len, 8);
	memcpy(b + 32, &pgoff, 8);
	memcpy(b + 40, &maj, 4);
	memcpy(b + 44, &min, 4);
	memcpy(b + 48, &ino, 8);
	memcpy(b + 56, &gen, 8);
	memcpy(b + 64, &prot, 4);
	memcpy(b + 68, &flags, 4);
	size_t n = strlen(name);
	memcpy(b + 72, name, n);
	size_t size = (72 + n + (terminate ? 1 : 0) + 7) & ~(size_t)7;
	if (!terminate)
		size = 72 + n; /* a name filling the record to its end, no NUL */
	/* sample_id trailer in sample_type order: pid/tid, time, cpu */
	uint64_t pt = 7 | ((uint64_t)8 << 32), t = 555, cpu = 1;
	memcpy(b + size, &pt, 8);
	memcpy(b + size + 8, &t, 8);
	memcpy(b + size + 16, &cpu, 8);
	size += 24;
	struct perf_event_header h = {.type = PERF_RECORD_MMAP2, .size = (uint16_t)size};
	memcpy(b, &h, sizeof(h));
	return size;
}

Test(perf_record, parses_mmap2_and_trailer, .init = setup)
{
	size_t len = build_mmap2("/usr/lib/libc.so.6", true);
	struct sp_perf_mmap2 m;
	cr_assert_eq(sp_perf_parse_mmap2(words, len, &m), 0);
	cr_assert_eq(m.pid, 7);
	cr_assert_eq(m.addr, 0x7f0000000000);
	cr_assert_eq(m.len, 0x2000);
	cr_assert_eq(m.pgoff, 0x1000);
	cr_assert_eq(m.ino, 99);
	cr_assert_str_eq(m.filename, "/usr/lib/libc.so.6");
	struct sp_perf_sample_id id;
	cr_assert_eq(sp_perf_parse_sample_id(&layout, words, len, &id), 0);
	cr_assert_eq(id.time, 555);
	cr_assert_eq(id.tid, 8);
}

Test(perf_record, rejects_unterminated_mmap2_name)
{
	/* Without the trailer, a name that runs to the record's end has no NUL. */
	uint8_t *b = (uint8_t *)words;
	build_mmap2("/abcdefg", false);
	struct perf_event_header h = {.type = PERF_RECORD_MMAP2, .size = 80};
	memcpy(b, &h, sizeof(h));
	struct sp_perf_mmap2 m;
	cr_assert_eq(sp_perf_parse_mmap2(words, 80, &m), -SP_E_RING_CORRUPT);
}

Test(perf_record, comm_exec_flag)
{
	uint8_t *b = (uint8_t *)words;
	memset(words, 0, 64);
	uint32_t pid = 5, tid = 5;
	memcpy(b + 8, &pid, 4);
	memcpy(b + 12, &tid, 4);
	memcpy(b + 16, "worker", 7);
	struct perf_event_header h = {.type = PERF_RECORD_COMM, .misc = PERF_RECORD_MISC_COMM_EXEC,
				      .size = 24};
	memcpy(b, &h, sizeof(h));
	struct sp_perf_comm c;
	cr_assert_eq(sp_perf_parse_comm(words, 24, &c), 0);
	cr_assert(c.exec);
	cr_assert_str_eq(c.comm, "worker");
}

Test(perf_record, lost_and_task_records)
{
	uint64_t w[4] = {0, 9, 17, 0};
	struct perf_event_header h = {.type = PERF_RECORD_LOST, .size = 24};
	memcpy(w, &h, sizeof(h));
	struct sp_perf_lost l;
	cr_assert_eq(sp_perf_parse_lost(w, 24, &l), 0);
	cr_assert_eq(l.lost, 17);
	cr_assert_eq(sp_perf_parse_lost(w, 16, &l), -SP_E_RING_CORRUPT);

	uint32_t t[8] = {0, 0, 100, 1, 101, 1, 0, 0};
	struct perf_event_header th = {.type = PERF_RECORD_FORK, .size = 32};
	memcpy(t, &th, sizeof(th));
	struct sp_perf_task task;
	cr_assert_eq(sp_perf_parse_task(t, 32, &task), 0);
	cr_assert_eq(task.pid, 100);
	cr_assert_eq(task.ppid, 1);
	cr_assert_eq(task.tid, 101);
}

/*
 * A sample wrapping the ring is copied without its stack copy's unused tail:
 * the hole is found from the record's two pieces, wherever the ring's end
 * splits it, and the copy parses to the same registers and used stack bytes.
 */
Test(perf_record, stack_hole_of_a_split_sample, .init = setup)
{
	size_t len = build_sample(256, 40);
	size_t data = 8 * (1 + 5 + layout.nregs + 1); /* header ... regs, size word */
	for (size_t split = 8; split < len; split += 8) {
		size_t lo = 0, hi = 0;
		cr_assert(sp_perf_sample_stack_hole(&layout, (const uint8_t *)words, split,
						    (const uint8_t *)words + split, len, &lo, &hi),
			  "split at %zu", split);
		cr_assert_eq(lo, data + 40);
		cr_assert_eq(hi, data + 256);
		static uint64_t copy[512];
		memset(copy, 0xee, sizeof(copy));
		memcpy(copy, words, lo);
		memcpy((uint8_t *)copy + hi, (const uint8_t *)words + hi, len - hi);
		struct sp_perf_sample s;
		cr_assert_eq(sp_perf_parse_sample(&layout, copy, len, &s), 0);
		cr_assert_eq(s.dyn_size, 40);
		cr_assert_eq(s.regs[3], 0x1003);
		cr_assert_eq(memcmp(s.stack, (const uint8_t *)words + data, 40), 0);
	}
}

Test(perf_record, no_stack_hole_when_fields_do_not_add_up, .init = setup)
{
	size_t lo = 0, hi = 0, size_word = 1 + 5 + layout.nregs;
	size_t len = build_sample(0, 0);
	cr_assert_not(sp_perf_sample_stack_hole(&layout, (const uint8_t *)words, len, NULL, len,
						&lo, &hi), "no stack copy");
	len = build_sample(64, 72);
	cr_assert_not(sp_perf_sample_stack_hole(&layout, (const uint8_t *)words, len, NULL, len,
						&lo, &hi), "dyn_size above size");
	len = build_sample(64, 8);
	words[size_word] = 1u << 20;
	cr_assert_not(sp_perf_sample_stack_hole(&layout, (const uint8_t *)words, len, NULL, len,
						&lo, &hi), "size past the record");
	for (size_t cut = 8; cut < len; cut += 8) {
		build_sample(64, 8);
		cr_assert_not(sp_perf_sample_stack_hole(&layout, (const uint8_t *)words, cut, NULL,
							cut, &lo, &hi), "cut at %zu", cut);
	}
}
