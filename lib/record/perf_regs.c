/* SPDX-License-Identifier: MIT */
/* perf's x86-64 user register bits (sample_regs_user) mapped to DWARF register numbers. */
#include "record/record.h"

#include <asm/perf_regs.h>
#include <string.h>

/*
 * perf bit -> DWARF number + 1 (SysV x86-64 ABI, figure 3.36); 0 for the
 * bits we never ask for (flags, segment and vector registers).  A table, as
 * every sample maps its 17 registers through it.
 */
static const unsigned char dwarf1_of_perf[64] = {
	[PERF_REG_X86_AX] = SP_DW_RAX + 1, [PERF_REG_X86_BX] = SP_DW_RBX + 1,
	[PERF_REG_X86_CX] = SP_DW_RCX + 1, [PERF_REG_X86_DX] = SP_DW_RDX + 1,
	[PERF_REG_X86_SI] = SP_DW_RSI + 1, [PERF_REG_X86_DI] = SP_DW_RDI + 1,
	[PERF_REG_X86_BP] = SP_DW_RBP + 1, [PERF_REG_X86_SP] = SP_DW_RSP + 1,
	[PERF_REG_X86_IP] = SP_DW_RIP + 1,
	[PERF_REG_X86_R8] = SP_DW_R8 + 1, [PERF_REG_X86_R9] = SP_DW_R9 + 1,
	[PERF_REG_X86_R10] = SP_DW_R10 + 1, [PERF_REG_X86_R11] = SP_DW_R11 + 1,
	[PERF_REG_X86_R12] = SP_DW_R12 + 1, [PERF_REG_X86_R13] = SP_DW_R13 + 1,
	[PERF_REG_X86_R14] = SP_DW_R14 + 1, [PERF_REG_X86_R15] = SP_DW_R15 + 1,
};

static int dwarf_of_perf(unsigned bit)
{
	return bit < 64 ? (int)dwarf1_of_perf[bit] - 1 : -1;
}

uint64_t sp_perf_regs_mask(void)
{
	uint64_t m = 0;

	for (unsigned bit = 0; bit < PERF_REG_X86_64_MAX; bit++)
		if (dwarf_of_perf(bit) >= 0)
			m |= 1ULL << bit;
	return m;
}

/*
 * The kernel writes one u64 per set bit of the mask, in ascending bit order
 * (perf_output_sample_regs(), kernel/events/core.c), so the i-th value
 * belongs to the i-th set bit, whatever that bit is.  The mask is fixed when
 * the events open: which value goes to which DWARF register is worked out
 * once, and a sample's 17 values are then stored without testing any bit.
 */
void sp_regs_map_init(struct sp_regs_map *m, uint64_t mask)
{
	unsigned i = 0;

	*m = (struct sp_regs_map){ 0 };
	for (; mask; mask &= mask - 1) {
		int dw = dwarf_of_perf((unsigned)__builtin_ctzll(mask));

		m->dwarf[i++] = (int8_t)dw;
		if (dw >= 0)
			m->valid |= 1u << dw;
	}
	m->n = (uint8_t)i;
}

void sp_regs_from_map(const struct sp_regs_map *restrict m, const uint64_t *restrict perf_regs,
		      struct sp_regs *restrict out)
{
	const unsigned n = m->n;

	/* registers the mask lacks read as 0, as before the map */
	if (m->valid != (1u << SP_DW_NREGS) - 1)
		memset(out->regs, 0, sizeof(out->regs));
	out->valid = m->valid;
	for (unsigned i = 0; i < n; i++) {
		int dw = m->dwarf[i];

		if (dw >= 0)
			out->regs[dw] = perf_regs[i];
	}
}

void sp_regs_from_perf(const uint64_t *perf_regs, uint64_t mask, struct sp_regs *out)
{
	struct sp_regs_map m;

	sp_regs_map_init(&m, mask);
	sp_regs_from_map(&m, perf_regs, out);
}
