/* SPDX-License-Identifier: MIT */
/* perf's x86-64 user register bits (sample_regs_user) mapped to DWARF register numbers. */
#include "record/record.h"

#include <asm/perf_regs.h>

/*
 * perf bit -> DWARF number (SysV x86-64 ABI, figure 3.36); -1 for the bits
 * we never ask for (flags, segment and vector registers).
 */
static int dwarf_of_perf(unsigned bit)
{
	switch (bit) {
	case PERF_REG_X86_AX: return SP_DW_RAX;
	case PERF_REG_X86_BX: return SP_DW_RBX;
	case PERF_REG_X86_CX: return SP_DW_RCX;
	case PERF_REG_X86_DX: return SP_DW_RDX;
	case PERF_REG_X86_SI: return SP_DW_RSI;
	case PERF_REG_X86_DI: return SP_DW_RDI;
	case PERF_REG_X86_BP: return SP_DW_RBP;
	case PERF_REG_X86_SP: return SP_DW_RSP;
	case PERF_REG_X86_IP: return SP_DW_RIP;
	case PERF_REG_X86_R8 ... PERF_REG_X86_R15:
		return SP_DW_R8 + (int)(bit - PERF_REG_X86_R8);
	default: return -1;
	}
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
 * belongs to the i-th set bit, whatever that bit is.
 */
void sp_regs_from_perf(const uint64_t *perf_regs, uint64_t mask, struct sp_regs *out)
{
	unsigned i = 0;

	*out = (struct sp_regs){ 0 };
	for (unsigned bit = 0; bit < 64; bit++) {
		int dw;

		if (!(mask & (1ULL << bit)))
			continue;
		dw = dwarf_of_perf(bit);
		if (dw >= 0) {
			out->regs[dw] = perf_regs[i];
			out->valid |= 1u << dw;
		}
		i++;
	}
}
