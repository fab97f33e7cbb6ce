/* SPDX-License-Identifier: MIT */
/* The DWARF unwinder: walks a sample's copied user stack with compiled CFI rows. */
#include "unwind/unwind.h"

/*
 * One step per frame, no allocation: find the module, look its row up at the
 * lookup address, record the frame, then apply the row to the register file
 * to get the caller's registers.  Only the kernel's copy of the stack is read
 * (DESIGN decision 2); each failure ends the stack with a typed reason.
 *
 * Reads below the sampled SP: the return address or a CFA expression's deref
 * there ends the stack with BAD_RULE (a correct rule never puts them below
 * the SP the kernel copied from).  A callee-saved register whose slot lies
 * below the frame's SP keeps its current value: compilers describe epilogues
 * only by their CFA (GCC emits no DW_CFA_restore after `pop %rbp`), so in
 * `pop %rbx; pop %rbp; pop %r12; ret` the rows still say "rbp at CFA-24"
 * while the pop has already put that slot's value in the register.
 */

#define BIT(r) (1u << (r))
/* What survives a call: the callee-saved registers (SysV x86-64 ABI §3.2.1). */
#define CALLEE_SAVED \
	(BIT(SP_DW_RBX) | BIT(SP_DW_RBP) | BIT(SP_DW_R12) | BIT(SP_DW_R13) | BIT(SP_DW_R14) | \
	 BIT(SP_DW_R15))
#define CONTINUE SP_STOP_COUNT_ /* step result: the caller's registers are ready */

static const uint8_t saved_regs[SP_CFI_NSAVED] = {
	SP_DW_RBP, SP_DW_RBX, SP_DW_R12, SP_DW_R13, SP_DW_R14, SP_DW_R15,
};

/* sigcontext gregs order (see lib/unwind/cfi.c): gregs[i] holds DWARF register greg_dw[i]. */
static const uint8_t greg_dw[SP_DW_NREGS] = {
	SP_DW_R8, SP_DW_R9, SP_DW_R10, SP_DW_R11, SP_DW_R12, SP_DW_R13, SP_DW_R14, SP_DW_R15,
	SP_DW_RDI, SP_DW_RSI, SP_DW_RBP, SP_DW_RBX, SP_DW_RDX, SP_DW_RAX, SP_DW_RCX,
	SP_DW_RSP, SP_DW_RIP,
};

/*
 * A signal frame: the interrupted registers come from the ucontext the kernel
 * pushed (rt_sigframe: at __restore_rt, rsp points at the ucontext whose
 * uc_mcontext.gregs lies at row->cfa_off).  Every register is known again.
 */
static unsigned step_ucontext(const struct sp_cfi_row *row, struct sp_regs *r,
			      const struct sp_stack_mem *stack)
{
	uint64_t gregs = r->regs[row->cfa_reg] + (int64_t)row->cfa_off, v[SP_DW_NREGS];
	unsigned rc;

	if (!(r->valid & BIT(row->cfa_reg)))
		return SP_STOP_BAD_RULE;
	for (unsigned i = 0; i < SP_DW_NREGS; i++) {
		rc = sp_stack_read(stack, gregs + 8 * i, &v[i]);
		if (rc)
			return rc;
	}
	/* The interrupted SP lies above the signal frame on the same stack. */
	if (v[15] <= r->regs[SP_DW_RSP])
		return SP_STOP_NO_PROGRESS;
	for (unsigned i = 0; i < SP_DW_NREGS; i++)
		r->regs[greg_dw[i]] = v[i];
	r->valid = BIT(SP_DW_NREGS) - 1;
	return CONTINUE;
}

/* Apply one row: the caller's rsp (= CFA), rip (= return address) and callee-saved registers. */
static unsigned step(const struct sp_cfi_table *t, const struct sp_cfi_row *row,
		     struct sp_regs *r, const struct sp_stack_mem *stack)
{
	uint64_t cfa, ra, v, old_sp;
	unsigned rc;

	switch (row->kind) {
	case SP_CFI_CFA_REG:
		if (!(r->valid & BIT(row->cfa_reg)))
			return SP_STOP_BAD_RULE;
		cfa = r->regs[row->cfa_reg] + (int64_t)row->cfa_off;
		break;
	case SP_CFI_CFA_EXPR:
		rc = sp_cfi_eval_cfa(t, row, r, stack, &cfa);
		if (rc)
			return rc;
		break;
	case SP_CFI_ROOT:
		return SP_STOP_ROOT;
	case SP_CFI_UCONTEXT:
		return step_ucontext(row, r, stack);
	default:
		return SP_STOP_BAD_RULE;
	}
	/*
	 * The caller's frame lies above ours: a CFA at or below the current SP
	 * would loop (or read garbage).  Frame 0 may lack rsp (CFA from rbp):
	 * then the copy's base is the bound.
	 */
	old_sp = (r->valid & BIT(SP_DW_RSP)) ? r->regs[SP_DW_RSP] : stack->base;
	if (cfa <= old_sp)
		return SP_STOP_NO_PROGRESS;
	rc = sp_stack_read(stack, cfa + (int64_t)row->ra_off, &ra);
	if (rc)
		return rc;

	uint32_t valid = r->valid & CALLEE_SAVED;
	/* SP_CFI_SAME is 0: visit only the registers this frame changed */
	for (unsigned bits = row->saved; bits; ) {
		unsigned i = (unsigned)__builtin_ctz(bits) / 2, reg = saved_regs[i];
		uint64_t at = cfa + (int64_t)row->saved_off[i];

		switch ((bits >> (2 * i)) & 3) {
		case SP_CFI_UNDEF:
			valid &= ~BIT(reg);
			break;
		case SP_CFI_AT_CFA:
			if (at < old_sp)
				break; /* popped already: the register holds the slot's value */
			rc = sp_stack_read(stack, at, &v);
			if (rc)
				return rc;
			r->regs[reg] = v;
			valid |= BIT(reg);
			break;
		case SP_CFI_VAL_CFA:
			r->regs[reg] = at;
			valid |= BIT(reg);
			break;
		}
		bits &= ~(3u << (2 * i));
	}
	r->regs[SP_DW_RSP] = cfa;
	r->regs[SP_DW_RIP] = ra;
	r->valid = valid | BIT(SP_DW_RSP) | BIT(SP_DW_RIP);
	/* glibc's _start and clone zero the return address slot of the outermost frame. */
	if (ra == 0)
		return SP_STOP_ROOT;
	return CONTINUE;
}

int sp_unwind(const struct sp_regs *regs, const struct sp_stack_mem *stack,
	      sp_find_module_fn find, void *ctx, uint64_t *pcs, size_t max,
	      size_t *n, unsigned *stop, struct sp_unwind_stats *stats)
{
	struct sp_regs r = *regs;
	size_t k = 0;
	unsigned why;
	uint64_t hits = 0, misses = 0, code = 0;
	struct sp_cfi_row code_row;
	/* frame 0 and the frame after a signal frame hold an exact pc, not a return address */
	bool exact = true;

	if (!(r.valid & BIT(SP_DW_RIP))) {
		why = SP_STOP_NO_REGS;
		goto out;
	}
	for (;;) {
		uint64_t pc = r.regs[SP_DW_RIP];
		/* DESIGN decision 2: a return address is looked up at ra - 1, inside the call */
		uint64_t lookup = exact ? pc : pc - 1;
		const struct sp_unwind_module *m;
		const struct sp_cfi_row *row = NULL;
		bool hit = false;

		if (k == max) {
			why = SP_STOP_MAX_DEPTH;
			break;
		}
		m = find(ctx, lookup);
		if (!m) {
			if (k == 0)
				pcs[k++] = pc;
			why = SP_STOP_UNMAPPED;
			break;
		}
		if (m->cfi) {
			row = sp_cfi_table_lookup(m->cfi, lookup - m->load_bias, &hit);
			hits += hit;
			misses += !hit;
		}
		/*
		 * Code without CFI (JIT code, CPython's perf trampolines): a row
		 * proven from its bytes (DESIGN decision 4), if the module can
		 * supply one.  Otherwise the stack ends here; the frame-pointer
		 * splice (decision 3) happens in the caller, which has the
		 * kernel's callchain: it continues from pcs[0..n) when *stop is
		 * STACK_EXHAUSTED or NO_UNWIND_INFO.
		 */
		if (!row && !m->cfi && m->code_row) {
			row = m->code_row(ctx, m, pc, !exact, &code_row);
			code += row != NULL;
		}
		if (!row) {
			pcs[k++] = lookup;
			why = SP_STOP_NO_UNWIND_INFO;
			break;
		}
		/* The trampoline's own frame is shown at __restore_rt itself, not at ra - 1. */
		pcs[k++] = (row->flags & SP_CFI_F_SIGNAL) ? pc : lookup;
		why = step(m->cfi, row, &r, stack);
		if (why != CONTINUE)
			break;
		exact = row->flags & SP_CFI_F_SIGNAL;
	}
out:
	*n = k;
	*stop = why;
	if (stats) {
		stats->frames += k;
		stats->code_frames += code;
		stats->rule_cache_hits += hits;
		stats->rule_cache_misses += misses;
	}
	return 0;
}
