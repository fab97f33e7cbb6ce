/* SPDX-License-Identifier: MIT */
/* Unit tests for lib/record/perf_regs.c: perf's sample_regs_user layout to DWARF numbering. */
#include "record/record.h"

#include <asm/perf_regs.h>
#include <criterion/criterion.h>

static const struct {
	unsigned perf, dwarf;
} pairs[] = {
	{ PERF_REG_X86_AX, SP_DW_RAX }, { PERF_REG_X86_BX, SP_DW_RBX },
	{ PERF_REG_X86_CX, SP_DW_RCX }, { PERF_REG_X86_DX, SP_DW_RDX },
	{ PERF_REG_X86_SI, SP_DW_RSI }, { PERF_REG_X86_DI, SP_DW_RDI },
	{ PERF_REG_X86_BP, SP_DW_RBP }, { PERF_REG_X86_SP, SP_DW_RSP },
	{ PERF_REG_X86_IP, SP_DW_RIP }, { PERF_REG_X86_R8, SP_DW_R8 },
	{ PERF_REG_X86_R9, SP_DW_R9 },	{ PERF_REG_X86_R10, SP_DW_R10 },
	{ PERF_REG_X86_R11, SP_DW_R11 }, { PERF_REG_X86_R12, SP_DW_R12 },
	{ PERF_REG_X86_R13, SP_DW_R13 }, { PERF_REG_X86_R14, SP_DW_R14 },
	{ PERF_REG_X86_R15, SP_DW_R15 },
};

Test(perf_regs, mask_is_the_general_registers)
{
	uint64_t want = 0;

	for (size_t i = 0; i < SP_ARRAY_SIZE(pairs); i++)
		want |= 1ULL << pairs[i].perf;
	cr_assert_eq(sp_perf_regs_mask(), want);
	cr_assert_eq(sp_perf_regs_mask() & (1ULL << PERF_REG_X86_FLAGS), 0);
	cr_assert_eq(sp_perf_regs_mask() & (1ULL << PERF_REG_X86_CS), 0);
}

/* The kernel writes values in ascending bit order: value i is the i-th set bit. */
static void fill(uint64_t mask, uint64_t *vals)
{
	unsigned i = 0;

	for (unsigned bit = 0; bit < 64; bit++)
		if (mask & (1ULL << bit))
			vals[i++] = 0x1000 + bit;
}

Test(perf_regs, values_land_in_dwarf_slots)
{
	uint64_t mask = sp_perf_regs_mask(), vals[64];
	struct sp_regs r;

	fill(mask, vals);
	sp_regs_from_perf(vals, mask, &r);
	cr_assert_eq(r.valid, (1u << SP_DW_NREGS) - 1);
	for (size_t i = 0; i < SP_ARRAY_SIZE(pairs); i++)
		cr_assert_eq(r.regs[pairs[i].dwarf], 0x1000 + pairs[i].perf, "perf reg %u",
			     pairs[i].perf);
}

Test(perf_regs, unknown_bits_still_take_a_slot)
{
	/* flags and cs sit between ip and r8: their values must be skipped, not mapped */
	uint64_t mask = sp_perf_regs_mask() | 1ULL << PERF_REG_X86_FLAGS | 1ULL << PERF_REG_X86_CS,
		 vals[64];
	struct sp_regs r;

	fill(mask, vals);
	sp_regs_from_perf(vals, mask, &r);
	cr_assert_eq(r.regs[SP_DW_R8], 0x1000 + PERF_REG_X86_R8);
	cr_assert_eq(r.regs[SP_DW_RIP], 0x1000 + PERF_REG_X86_IP);
	cr_assert_eq(r.valid, (1u << SP_DW_NREGS) - 1);
}

Test(perf_regs, partial_mask_marks_only_present_registers)
{
	uint64_t mask = 1ULL << PERF_REG_X86_SP | 1ULL << PERF_REG_X86_IP, vals[2] = { 0x7ff0, 0x401000 };
	struct sp_regs r;

	sp_regs_from_perf(vals, mask, &r);
	cr_assert_eq(r.valid, 1u << SP_DW_RSP | 1u << SP_DW_RIP);
	cr_assert_eq(r.regs[SP_DW_RSP], 0x7ff0);
	cr_assert_eq(r.regs[SP_DW_RIP], 0x401000);
	sp_regs_from_perf(vals, 0, &r);
	cr_assert_eq(r.valid, 0);
}

Test(perf_regs, one_map_serves_every_sample)
{
	/* the recorder builds the map once, when the events open, and reuses it per sample */
	uint64_t mask = sp_perf_regs_mask() | 1ULL << PERF_REG_X86_FLAGS, vals[64];
	struct sp_regs_map m;
	struct sp_regs a, b;

	sp_regs_map_init(&m, mask);
	cr_assert_eq(m.n, __builtin_popcountll(mask));
	fill(mask, vals);
	sp_regs_from_map(&m, vals, &a);
	sp_regs_from_perf(vals, mask, &b);
	cr_assert_eq(a.valid, b.valid);
	cr_assert_arr_eq(a.regs, b.regs, sizeof(a.regs));
	for (size_t i = 0; i < m.n; i++)
		vals[i] += 0x100;
	sp_regs_from_map(&m, vals, &a);
	cr_assert_eq(a.regs[SP_DW_RSP], 0x1100 + PERF_REG_X86_SP);
}

Test(perf_regs, a_partial_map_clears_what_it_lacks)
{
	uint64_t vals[1] = { 0x7ff0 };
	struct sp_regs_map m;
	struct sp_regs r;

	memset(&r, 0xbe, sizeof(r));
	sp_regs_map_init(&m, 1ULL << PERF_REG_X86_SP);
	sp_regs_from_map(&m, vals, &r);
	cr_assert_eq(r.valid, 1u << SP_DW_RSP);
	cr_assert_eq(r.regs[SP_DW_RSP], 0x7ff0);
	cr_assert_eq(r.regs[SP_DW_RIP], 0);
	cr_assert_eq(r.regs[SP_DW_RBP], 0);
}
