/* SPDX-License-Identifier: MIT */
/* The DWARF unwinder: walks a sample's copied user stack with compiled CFI rows. */
#include "unwind/unwind.h"

#include <string.h>

/*
 * One step per frame, no allocation: find the module, look its row up at the
 * lookup address, record the frame, then apply the row to the register file
 * to get the caller's registers.  Only the kernel's copy of the stack is read
 * (docs/DESIGN.md, decision 2: nothing is read from live process memory as if
 * it came from the sample); each failure ends the stack with a typed reason.
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
/* The low bit of each register's 2-bit rule in sp_cfi_row.saved. */
#define SAVED_LOW_BITS (0x5555u & ((1u << (2 * SP_CFI_NSAVED)) - 1))
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
	if (row->flags & SP_CFI_F_RA_REG) {
		/* The return address was popped into a register: the caller's SP is ours. */
		if (cfa < old_sp || !(r->valid & BIT(row->ra_off)))
			return cfa < old_sp ? SP_STOP_NO_PROGRESS : SP_STOP_BAD_RULE;
		ra = r->regs[row->ra_off];
	} else {
		if (cfa <= old_sp)
			return SP_STOP_NO_PROGRESS;
		rc = sp_stack_read(stack, cfa + (int64_t)row->ra_off, &ra);
		if (rc)
			return rc;
	}

	uint32_t valid = r->valid & CALLEE_SAVED;
	/*
	 * SP_CFI_SAME is 0: visit only the registers this frame changed, a rule
	 * at a time (each register has one, so the order changes nothing; a
	 * failed read ends the unwind, r unused).  lo and hi hold each rule's
	 * low and high bit at its field's low bit.
	 */
	unsigned lo = row->saved & SAVED_LOW_BITS, hi = (unsigned)(row->saved >> 1) & SAVED_LOW_BITS;
	for (unsigned bits = hi & ~lo; bits; bits &= bits - 1) { /* SP_CFI_AT_CFA */
		unsigned i = (unsigned)__builtin_ctz(bits) / 2, reg = saved_regs[i];
		uint64_t at = cfa + (int64_t)row->saved_off[i];

		if (at < old_sp)
			continue; /* popped already: the register holds the slot's value */
		rc = sp_stack_read(stack, at, &v);
		if (rc)
			return rc;
		r->regs[reg] = v;
		valid |= BIT(reg);
	}
	for (unsigned bits = hi & lo; bits; bits &= bits - 1) { /* SP_CFI_VAL_CFA */
		unsigned i = (unsigned)__builtin_ctz(bits) / 2, reg = saved_regs[i];

		r->regs[reg] = cfa + (int64_t)row->saved_off[i];
		valid |= BIT(reg);
	}
	for (unsigned bits = lo & ~hi; bits; bits &= bits - 1) /* SP_CFI_UNDEF */
		valid &= ~BIT(saved_regs[(unsigned)__builtin_ctz(bits) / 2]);
	r->regs[SP_DW_RSP] = cfa;
	r->regs[SP_DW_RIP] = ra;
	r->valid = valid | BIT(SP_DW_RSP) | BIT(SP_DW_RIP);
	/* glibc's _start and clone zero the return address slot of the outermost frame. */
	if (ra == 0)
		return SP_STOP_ROOT;
	return CONTINUE;
}

/*
 * Whether the instruction that ends at ra is a call into the function that
 * holds pc, read from the code of ra's module m: E8 rel32, whose target must
 * lie at or below pc and within 1 MiB of it, or FF /2 with any ModRM form
 * (call through a register or memory).  CALL_UNKNOWN when the code cannot be
 * read (no m->read_code, or the read fell short).
 */
enum { NOT_CALL, AFTER_CALL, CALL_UNKNOWN, CODE_GONE };

/*
 * Is the code at target a PLT entry: jmp *disp32(%rip) (.plt.got, .plt.sec,
 * .iplt), after endbr64 and a bnd prefix when present?  A call through it
 * may reach any function.
 */
static bool is_plt_entry(sp_find_module_fn find, void *ctx, uint64_t target)
{
	const struct sp_unwind_module *tm = find(ctx, target);
	uint8_t b[7];
	if (!tm || !tm->read_code || tm->read_code(ctx, target, b, sizeof(b)) != sizeof(b))
		return false;
	size_t i = !memcmp(b, "\xf3\x0f\x1e\xfa", 4) ? 4 : 0;
	if (b[i] == 0xf2)
		i++;
	return i + 2 <= sizeof(b) && b[i] == 0xff && b[i + 1] == 0x25;
}

static unsigned follows_call_via(const struct sp_unwind_module *m, void *ctx, uint64_t ra,
				 uint64_t pc, sp_find_module_fn plt_find)
{
	uint8_t b[8];
	size_t got = m->read_code && ra >= sizeof(b) ? m->read_code(ctx, ra - sizeof(b), b, sizeof(b)) : 0;

	if (got == SP_READ_CODE_GONE)
		return CODE_GONE;
	if (got != sizeof(b))
		return CALL_UNKNOWN;
	if (b[3] == 0xe8) {
		int32_t rel;
		memcpy(&rel, b + 4, sizeof(rel));
		uint64_t target = ra + (uint64_t)(int64_t)rel;
		if (target <= pc && pc - target < (1u << 20))
			return AFTER_CALL;
		if (plt_find && is_plt_entry(plt_find, ctx, target))
			return AFTER_CALL;
	}
	/* FF /2 at b[s]: ModRM, an SIB byte when rm = 4, then 0, 1 or 4 displacement bytes */
	for (unsigned s = 0; s + 2 <= sizeof(b); s++) {
		unsigned modrm = b[s + 1], mod = modrm >> 6, rm = modrm & 7, len = 2;
		if (b[s] != 0xff || ((modrm >> 3) & 7) != 2)
			continue;
		if (mod != 3 && rm == 4) {
			if (s + 2 >= sizeof(b))
				continue;
			len++;
			if (mod == 0 && (b[s + 2] & 7) == 5)
				len += 4;
		}
		len += mod == 1 ? 1 : mod == 2 ? 4 : mod == 0 && rm == 5 ? 4 : 0;
		if (s + len == sizeof(b))
			return AFTER_CALL;
	}
	return NOT_CALL;
}

static unsigned follows_call(const struct sp_unwind_module *m, void *ctx, uint64_t ra, uint64_t pc)
{
	return follows_call_via(m, ctx, ra, pc, NULL);
}

/* follows_call_via where nothing is read now: what once was there is not known (CALL_UNKNOWN). */
static unsigned follows_call_known(const struct sp_unwind_module *m, void *ctx, uint64_t ra,
				   uint64_t pc, sp_find_module_fn plt_find)
{
	unsigned c = follows_call_via(m, ctx, ra, pc, plt_find);
	return c == CODE_GONE ? CALL_UNKNOWN : c;
}

/*
 * The modules the frames went through, most recent first (struct
 * sp_unwind_seen): a stack's frames mostly stay in a few modules (a program,
 * its runtime's library, libc), so most frames find theirs here without the
 * lookup.  find gives each pc the module whose [start, end) holds it, and the
 * modules do not change while c is kept, so the answer is the one find would
 * give.
 */
static const struct sp_unwind_module *find_seen(struct sp_unwind_seen *c, sp_find_module_fn find,
						void *ctx, uint64_t pc)
{
	for (unsigned i = 0; i < SP_UNWIND_SEEN && c->m[i]; i++)
		if (pc - c->m[i]->start < c->m[i]->end - c->m[i]->start)
			return c->m[i];
	const struct sp_unwind_module *m = find(ctx, pc);
	if (m) {
		for (unsigned i = SP_UNWIND_SEEN - 1; i > 0; i--)
			c->m[i] = c->m[i - 1];
		c->m[0] = m;
	}
	return m;
}

/*
 * A frame-pointer step (docs/DESIGN.md, decision 3, extended: checked, and
 * kept only where the stack proves it) where no CFI covers the
 * pc: the frame record at rbp holds the caller's rbp and the return address
 * (x86-64 psABI §3.4.1's frame layout).  The record must lie in the copy at
 * or above the SP and be 8-byte aligned, and the return address must land in
 * a mapped executable module.  The caller's rsp is the record's end; its
 * other callee-saved registers are unknown.  A frame whose rbp is 0, reached
 * from a saved slot (not the sampled frame's own register), is the deepest
 * frame: the psABI has the outermost frame mark itself so (glibc's _start,
 * Go's goroutine entries).  Returns CONTINUE, SP_STOP_ROOT, or why not.
 *
 * exact: the pc is where the thread was interrupted (frame 0, or after a
 * signal frame), not after a call, so the function may be anywhere in it,
 * and the slot at the SP tells which:
 *   - an address in code that follows a call instruction (for a direct
 *     call, one whose target lies at or below the pc): the function keeps
 *     no frame, or has not begun or has ended it (a leaf compiled with frame
 *     pointers still omits its own; the first instruction; after the
 *     epilogue's pop).  The return address is that slot, rbp is still the
 *     caller's.  A step from rbp would skip the caller without a sign.
 *   - an address in code whose instructions cannot be read: nothing is
 *     known, no step; but an address the live process has no memory at any
 *     more (generated code freed: a stale slot V8 left, pointing into the
 *     code an on-stack replacement ran) cannot be a running frame's return
 *     address: data of a frame;
 *   - any other value, an address in code after no call among them (a
 *     small integer of V8's lands in node's text): data of a frame;
 *   - rbp's own value, with a return address above it: the function has
 *     just pushed rbp and not yet set it, so the frame record is at the SP.
 *     Optimized code may keep rbp's value in its lowest slot too (V8's code
 *     entered by on-stack replacement does, a whole loop long): without a
 *     return address above it, the record is at rbp;
 *   - else the frame record is at rbp.
 */
/*
 * Does the slot above sp hold the return address of a call into the
 * function at pc (mapped code after a call; code that cannot be read is
 * given the benefit of the doubt), so that the rbp value at sp was just
 * pushed by pc's prologue?
 */
static bool pushed_rbp(const struct sp_stack_mem *stack, sp_find_module_fn find, void *ctx,
		       struct sp_unwind_seen *seen, uint64_t sp, uint64_t pc)
{
	uint64_t ra;
	const struct sp_unwind_module *m;
	if (sp_stack_read(stack, sp + 8, &ra) || !ra || !(m = find_seen(seen, find, ctx, ra - 1)))
		return false;
	unsigned call = follows_call_via(m, ctx, ra, pc, find);
	return call == AFTER_CALL || call == CALL_UNKNOWN;
}

/*
 * (Modules are found through seen, which answers as find does; near, when
 * not NULL, is the frame's own module, where a JIT function's caller often
 * is too.)
 */
static unsigned fp_step(struct sp_regs *r, const struct sp_stack_mem *stack,
			sp_find_module_fn find, void *ctx, struct sp_unwind_seen *seen,
			const struct sp_unwind_module *near, bool exact)
{
	uint64_t fp = r->regs[SP_DW_RBP], sp, saved_fp, ra, top;
	const struct sp_unwind_module *tm;
	unsigned rc;

	sp = (r->valid & BIT(SP_DW_RSP)) ? r->regs[SP_DW_RSP] : stack->base;
	if (exact && !sp_stack_read(stack, sp, &top) && top) {
		unsigned call = (tm = find_seen(seen, find, ctx, top - 1))
					? follows_call(tm, ctx, top, r->regs[SP_DW_RIP])
							    : NOT_CALL;
		if (call == CALL_UNKNOWN)
			return SP_STOP_NO_UNWIND_INFO;
		if (call == AFTER_CALL) {
			r->regs[SP_DW_RSP] = sp + 8;
			r->regs[SP_DW_RIP] = top;
			r->valid = (r->valid & BIT(SP_DW_RBP)) | BIT(SP_DW_RSP) | BIT(SP_DW_RIP);
			return CONTINUE;
		}
		if ((r->valid & BIT(SP_DW_RBP)) && top == fp &&
		    pushed_rbp(stack, find, ctx, seen, sp, r->regs[SP_DW_RIP]))
			fp = sp;
	}
	if (!(r->valid & BIT(SP_DW_RBP)))
		return SP_STOP_NO_UNWIND_INFO;
	if (fp == 0)
		return exact ? SP_STOP_NO_UNWIND_INFO : SP_STOP_ROOT;
	if (fp < sp || (fp & 7))
		return SP_STOP_NO_PROGRESS;
	rc = sp_stack_read(stack, fp, &saved_fp);
	if (!rc)
		rc = sp_stack_read(stack, fp + 8, &ra);
	if (rc)
		return rc;
	if (ra == 0)
		return exact ? SP_STOP_NO_UNWIND_INFO : SP_STOP_ROOT;
	/* the caller's module, which the next frame looks up the same way */
	if (!(near && ra - 1 - near->start < near->end - near->start) &&
	    !find_seen(seen, find, ctx, ra - 1))
		return SP_STOP_UNMAPPED;
	r->regs[SP_DW_RBP] = saved_fp;
	r->regs[SP_DW_RSP] = fp + 16;
	r->regs[SP_DW_RIP] = ra;
	r->valid = BIT(SP_DW_RBP) | BIT(SP_DW_RSP) | BIT(SP_DW_RIP);
	return CONTINUE;
}

/*
 * A stack whose unwind went wrong (a return address in no module, a rule
 * that cannot hold, a stack pointer going back) may have gone wrong earlier
 * than where it stopped, without a sign: a return address slot the program
 * itself rewrote leads the unwind into a function that did not call the
 * frame before it, whose CFI then takes a wrong CFA.  libgcc does so while
 * it hands an exception to its handler: uw_install_context_1 copies the
 * handler frame's registers into _Unwind_RaiseException's save slots, its
 * return address slot included, which then holds the return address of the
 * call the handler's function made (catcher's call of thrower), not
 * __cxa_throw's.  Such a frame's return address follows no call into the
 * frame before it (a direct call's target lies at or below that frame's pc,
 * within 1 MiB, or is a PLT entry): the index of the first frame in pcs[1, n)
 * that is a return address looked up at ra - 1 (not one exact->bit marks)
 * whose return address does not, or n.  A tail call is taken for such a frame too; only
 * stacks that failed are checked, and they end honestly either way.
 */
#define RA_CHECKED 2048 /* frames whose kind is remembered for the check */

/*
 * The frames of pcs[0, RA_CHECKED) that hold an exact pc (frame 0, a frame
 * after a signal frame): bit j of bit.  They are rare, so the words are
 * zeroed as the first exact frame in each needs them: bit[w] for w < words.
 */
struct exact_frames {
	uint64_t bit[RA_CHECKED / 64];
	size_t words;
};

static void mark_exact(struct exact_frames *e, size_t k)
{
	if (k >= RA_CHECKED)
		return;
	while (e->words <= k / 64)
		e->bit[e->words++] = 0;
	e->bit[k / 64] |= 1ull << (k % 64);
}

static bool is_exact(const struct exact_frames *e, size_t j)
{
	return j / 64 < e->words && (e->bit[j / 64] >> (j % 64) & 1);
}

static size_t first_bad_return(const uint64_t *pcs, size_t n, const struct exact_frames *exact,
			       sp_find_module_fn find, void *ctx)
{
	for (size_t j = 1; j < n && j < RA_CHECKED; j++) {
		if (is_exact(exact, j))
			continue;
		const struct sp_unwind_module *m = find(ctx, pcs[j]);
		if (m && follows_call_known(m, ctx, pcs[j] + 1, pcs[j - 1], find) == NOT_CALL)
			return j;
	}
	return n;
}

/*
 * Set only by tests/unit/unwind_plain.c (which includes this file): every
 * row then takes step(), for the runs to be compared with it.
 */
static bool plain_runs_off;

/* What a run of plain rows shares with sp_unwind's loop. */
struct walk {
	sp_find_module_fn find;
	void *ctx;
	struct sp_unwind_seen seen;
	const struct sp_stack_mem *stack;
	uint64_t *pcs;
	size_t k, max;          /* pcs[0, k) found; at most max */
	uint64_t hits, misses;  /* rule lookups a cache answered, and the others */
	uint64_t code;          /* rows proven from code bytes */
	struct sp_cfi_row code_row; /* the last of them a run was given */
	uint32_t fp;            /* frame-pointer steps taken */
	size_t fp_from;         /* pcs[fp_from..] hang on them (SIZE_MAX: none yet) */
	uint64_t *cfas;         /* sp_unwind_stats.cfas: cfas[0..ncfa), room for cfa_max */
	size_t ncfa, cfa_max;
};

/* Note a frame's CFA for sp_unwind_stats.cfas, while there is room. */
static inline void note_cfa(struct walk *w, uint64_t cfa)
{
	if (w->ncfa < w->cfa_max)
		w->cfas[w->ncfa++] = cfa;
}

/*
 * The frame-pointer step of sp_unwind's loop from a return address in
 * module m, taken inside a run, with the frames from k on hanging on it:
 * CONTINUE, or why the unwind stops, as the loop would say.  Out of line:
 * the run's loop keeps its registers for its rows.
 */
static __attribute__((noinline)) unsigned run_fp_step(struct walk *w, struct sp_regs *r,
						     const struct sp_unwind_module *m, size_t k)
{
	unsigned why = fp_step(r, w->stack, w->find, w->ctx, &w->seen, m, false);

	if (why != CONTINUE)
		return why == SP_STOP_ROOT || why == SP_STOP_STACK_EXHAUSTED ? why
									  : SP_STOP_NO_UNWIND_INFO;
	w->fp++;
	if (w->fp_from == SIZE_MAX)
		w->fp_from = k;
	note_cfa(w, r->regs[SP_DW_RSP]);
	return CONTINUE;
}

/*
 * The frames of a run that saved callee-saved registers other than rbp,
 * oldest first.  A run reads no register but rsp and rbp (a plain row's CFA
 * is one of them), so the others are read from their slots only when the
 * run ends, each from the last frame that saved it: in a run through
 * CPython's evaluation loop, whose frames save all six, that is one read
 * per register instead of six per frame.  Taken in batches: a longer run
 * settles each full batch.
 */
#define PENDING 32

struct pending {
	uint64_t cfa, sp; /* the frame's CFA and its SP: slots below the SP were popped already */
	uint16_t saved;   /* its row's rules, as sp_cfi_row.saved */
	int16_t off[SP_CFI_NSAVED];
};

/* rbx and r12-r15 in a row's saved rules shifted right by one: the bits of SP_CFI_AT_CFA */
#define PENDING_REGS (SAVED_LOW_BITS & ~1u)

/*
 * Apply the pending frames' saves to r, newest first, each register from
 * the newest frame whose slot for it lies at or above that frame's SP (as
 * step() would leave it, one frame after the other).  Every slot is in the
 * copy: plain rows save below the return address, which was in it, and at
 * or above an SP inside it.  Returns valid with the registers set.
 */
static uint32_t settle(struct sp_regs *r, const uint8_t *data, uint64_t base,
		       const struct pending *p, size_t n, uint32_t valid)
{
	unsigned need = PENDING_REGS;

	while (n > 0 && need) {
		const struct pending *e = &p[--n];

		for (unsigned bits = ((unsigned)e->saved >> 1) & need; bits; bits &= bits - 1) {
			unsigned i = (unsigned)__builtin_ctz(bits) / 2, reg = saved_regs[i];
			uint64_t at = e->cfa + (int64_t)e->off[i];

			if (at < e->sp)
				continue; /* popped already: an older frame's save stands */
			memcpy(&r->regs[reg], data + (at - base), 8);
			valid |= BIT(reg);
			need &= ~(1u << (2 * i));
		}
	}
	return valid;
}

/* Does a save of row (CFA cfa) lie at or above sp but below the copy's base? (sp < base) */
static bool saves_below_copy(const struct sp_cfi_row *row, uint64_t cfa, uint64_t sp,
			     uint64_t base)
{
	for (unsigned bits = (unsigned)(row->saved >> 1) & SAVED_LOW_BITS; bits; bits &= bits - 1) {
		uint64_t at = cfa + (int64_t)row->saved_off[__builtin_ctz(bits) / 2];

		if (at >= sp && at < base)
			return true;
	}
	return false;
}

/*
 * A run of frames with plain rows (sp_cfi_row.plain), taken as sp_unwind's
 * loop would take them, frame by frame (the same pcs, counters, module
 * lookups and registers, the same checks in the same order), without its
 * general steps: no rule is interpreted, and stack reads check one bound.
 * rbp is stepped at once, the other callee-saved registers when the run
 * ends (struct pending).
 * *row is the row in (*m)'s table of pcs[k - 1], a return address's or the
 * sampled pc's.  The run goes on while k < max and the next return address
 * lies in a module with a table (*m: find_seen's answer) where its row is
 * plain, or in a module without one whose code proves a plain row (a
 * CPython trampoline between two frames of its evaluation loop, JIT code);
 * a frame with no row at all takes the loop's frame-pointer step here
 * (w->fp, w->fp_from), as V8's frames do between those with rows.
 * Returns the stop reason, or CONTINUE with *m and *row the next frame's
 * module and row and *looked set when its lookup was made (*looked clear:
 * the loop looks the frame up).  Out of line: sp_unwind's registers stay its
 * own, and the run's loop keeps its state in registers.
 */
static __attribute__((noinline)) unsigned plain_run(struct walk *w, const struct sp_unwind_module **m,
						    const struct sp_cfi_row **row, bool *looked,
						    struct sp_regs *r)
{
	const struct sp_unwind_module *mod = *m, *other = NULL;
	const struct sp_cfi_row *rw = *row;
	struct sp_cfi_table *t = mod->cfi;
	/* m's range: return address ra stays in it when ra - 1 - start < span */
	uint64_t start = mod->start, span = mod->end - mod->start, bias = mod->load_bias;
	/* the module the run left last, where a stack often goes back (libpython's trampolines) */
	uint64_t other_start = 0, other_span = 0;
	const uint8_t *data = w->stack->data;
	/* the caller made sure of len >= 8: an 8-byte read at off is whole when off <= last */
	const uint64_t base = w->stack->base, last = w->stack->len - 8;
	uint32_t valid = r->valid;
	uint64_t sp = (valid & BIT(SP_DW_RSP)) ? r->regs[SP_DW_RSP] : base;
	uint64_t *out = w->pcs + w->k, *const end = w->pcs + w->max;
	bool looked_up = false;
	struct pending pend[PENDING];
	size_t npend = 0;
	unsigned why;

	for (;;) {
		uint64_t cfa, ra;
		bool hit;

		/* step(): the CFA above the SP, the return address at CFA - 8 */
		if (!(valid & BIT(rw->cfa_reg))) {
			why = SP_STOP_BAD_RULE;
			break;
		}
		cfa = r->regs[rw->cfa_reg] + (int64_t)rw->cfa_off;
		if (cfa <= sp) {
			why = SP_STOP_NO_PROGRESS;
			break;
		}
		if (cfa - 8 - base > last) {
			why = sp_stack_read(w->stack, cfa - 8, &ra);
			break;
		}
		memcpy(&ra, data + (cfa - 8 - base), 8);
		/*
		 * Only the run's first SP can lie below the copy (a caller's
		 * registers), and any later one at or above the CFA - 8 in it.
		 */
		if (__builtin_expect(sp < base, 0) && saves_below_copy(rw, cfa, sp, base)) {
			why = SP_STOP_BAD_RULE;
			break;
		}
		valid &= CALLEE_SAVED;
		/* every rule is SP_CFI_SAME (0) or SP_CFI_AT_CFA (2): the high bits mark the saved */
		unsigned saves = (unsigned)(rw->saved >> 1) & SAVED_LOW_BITS;
		if (saves & 1) {
			uint64_t at = cfa + (int64_t)rw->saved_off[0];

			/* below the SP: popped already (see the top of this file) */
			if (at >= sp) {
				memcpy(&r->regs[SP_DW_RBP], data + (at - base), 8);
				valid |= BIT(SP_DW_RBP);
			}
		}
		if (saves & PENDING_REGS) {
			if (npend == PENDING) {
				valid = settle(r, data, base, pend, npend, valid);
				npend = 0;
			}
			struct pending *e = &pend[npend++];
			e->cfa = cfa;
			e->sp = sp;
			e->saved = rw->saved;
			memcpy(e->off, rw->saved_off, sizeof(e->off));
		}
		valid |= BIT(SP_DW_RSP) | BIT(SP_DW_RIP);
		r->regs[SP_DW_RSP] = sp = cfa;
		r->regs[SP_DW_RIP] = ra;
		/* glibc's _start and clone zero the return address slot of the outermost frame. */
		if (ra == 0) {
			why = SP_STOP_ROOT;
			break;
		}
		note_cfa(w, cfa);
		/*
		 * The next frame, as sp_unwind's loop begins it: depth, module,
		 * row; where there is no row, its frame-pointer step (JIT code
		 * whose bytes prove nothing, between frames with rows).
		 */
		for (;;) {
			why = CONTINUE;
			if (out == end)
				goto out;
			if (ra - 1 - start >= span) {
				const struct sp_unwind_module *next;

				/* the module left last, or find_seen's answer (which are the same) */
				if (ra - 1 - other_start < other_span) {
					next = other;
				} else {
					next = find_seen(&w->seen, w->find, w->ctx, ra - 1);
					/* none: the loop's own case (find_seen answers it again) */
					if (!next)
						goto out;
				}
				other = mod;
				other_start = start;
				other_span = span;
				mod = next;
				t = mod->cfi;
				start = mod->start;
				span = mod->end - mod->start;
				bias = mod->load_bias;
			}
			if (t) {
				rw = sp_cfi_table_lookup(t, ra - 1 - bias, &hit);
				w->hits += hit;
				w->misses += !hit;
			} else {
				/* sp_unwind's loop asks the module's code as it would, a return address */
				rw = mod->code_row ? mod->code_row(w->ctx, mod, ra, true, &w->code_row) : NULL;
				w->code += rw != NULL;
			}
			if (rw)
				break;
			/* sp_unwind's frame-pointer step: the saved registers but rbp are unknown after it */
			*out++ = ra - 1;
			r->valid = valid;
			why = run_fp_step(w, r, mod, (size_t)(out - w->pcs));
			if (why != CONTINUE)
				goto out;
			npend = 0;
			valid = r->valid;
			sp = r->regs[SP_DW_RSP];
			ra = r->regs[SP_DW_RIP];
		}
		if (!rw->plain) {
			looked_up = true;
			break;
		}
		*out++ = ra - 1;
	}
out:
	/*
	 * After a stop sp_unwind reads no register, nor for a row of the
	 * outermost frame (step() reads none for SP_CFI_ROOT, where C stacks
	 * end: _start's row): the saves are read for an unwind that goes on.
	 */
	r->valid = npend && why == CONTINUE && !(looked_up && rw->kind == SP_CFI_ROOT)
			   ? settle(r, data, base, pend, npend, valid)
			   : valid;
	*m = mod;
	*row = rw;
	*looked = looked_up;
	w->k = (size_t)(out - w->pcs);
	return why;
}

int sp_unwind(const struct sp_regs *regs, const struct sp_stack_mem *stack,
	      sp_find_module_fn find, void *ctx, uint64_t *pcs, size_t max,
	      size_t *n, unsigned *stop, struct sp_unwind_stats *stats)
{
	struct sp_unwind_seen seen = { { NULL } };

	return sp_unwind_seen(regs, stack, find, ctx, &seen, pcs, max, n, stop, stats);
}

int sp_unwind_seen(const struct sp_regs *regs, const struct sp_stack_mem *stack,
		   sp_find_module_fn find, void *ctx, struct sp_unwind_seen *seen, uint64_t *pcs,
		   size_t max, size_t *n, unsigned *stop, struct sp_unwind_stats *stats)
{
	struct sp_regs r = *regs;
	/* w.fp_from: pcs[fp_from..] hang on frame-pointer steps not proven yet; w.fp: steps taken */
	struct walk w = { .find = find, .ctx = ctx, .seen = *seen, .stack = stack, .pcs = pcs,
			  .max = max, .fp_from = SIZE_MAX, .cfas = stats ? stats->cfas : NULL };
	unsigned why;
	uint64_t code = 0;
	struct sp_cfi_row code_row;
	/* frame 0 and the frame after a signal frame hold an exact pc, not a return address */
	bool exact = true;
	/* the frames that are not return addresses, for first_bad_return */
	struct exact_frames exact_at;
	const struct sp_unwind_module *m = NULL;
	const struct sp_cfi_row *row = NULL;
	/* row (and m) already looked up for the frame at hand, by a run of plain rows */
	bool have_row = false;

	exact_at.words = 0;
	if (w.cfas)
		w.cfa_max = SP_UNWIND_CFAS;
	if (!(r.valid & BIT(SP_DW_RIP))) {
		why = SP_STOP_NO_REGS;
		goto out;
	}
	for (;;) {
		uint64_t pc = r.regs[SP_DW_RIP];
		/* docs/DESIGN.md, decision 2: a return address is looked up at ra - 1, inside the call */
		uint64_t lookup = exact ? pc : pc - 1;
		bool hit = false;

		if (w.k == max) {
			why = SP_STOP_MAX_DEPTH;
			break;
		}
		if (!have_row) {
			row = NULL;
			m = find_seen(&w.seen, find, ctx, lookup);
			if (!m) {
				if (w.k == 0)
					pcs[w.k++] = pc;
				why = SP_STOP_UNMAPPED;
				break;
			}
			if (m->cfi) {
				row = sp_cfi_table_lookup(m->cfi, lookup - m->load_bias, &hit);
				w.hits += hit;
				w.misses += !hit;
			}
			/*
			 * Code without CFI (JIT code, CPython's perf trampolines): a row
			 * proven from its bytes (docs/DESIGN.md, decision 4), if the module can
			 * supply one.  Otherwise a frame-pointer step, kept only when
			 * the rest of the stack proves it (see the end).
			 */
			if (!row && !m->cfi && m->code_row) {
				row = m->code_row(ctx, m, pc, !exact, &code_row);
				code += row != NULL;
			}
		}
		have_row = false;
		if (exact)
			mark_exact(&exact_at, w.k);
		if (!row) {
			pcs[w.k++] = lookup;
			why = fp_step(&r, stack, find, ctx, &w.seen, m, exact);
			if (why != CONTINUE) {
				/* the copy's end is the caller's to bridge; else there was no CFI */
				if (why != SP_STOP_ROOT && why != SP_STOP_STACK_EXHAUSTED)
					why = SP_STOP_NO_UNWIND_INFO;
				break;
			}
			note_cfa(&w, r.regs[SP_DW_RSP]);
			w.fp++;
			if (w.fp_from == SIZE_MAX)
				w.fp_from = w.k;
			exact = false;
			continue;
		}
		if (row->plain && stack->len >= 8 && !plain_runs_off) {
			pcs[w.k++] = lookup;
			why = plain_run(&w, &m, &row, &have_row, &r);
			if (why != CONTINUE)
				break;
			exact = false;
			continue;
		}
		/* The trampoline's own frame is shown at __restore_rt itself, not at ra - 1. */
		pcs[w.k++] = (row->flags & SP_CFI_F_SIGNAL) ? pc : lookup;
		why = step(m->cfi, row, &r, stack);
		if (why != CONTINUE)
			break;
		note_cfa(&w, r.regs[SP_DW_RSP]);
		/*
		 * libgcc copies an exception handler frame's return address into
		 * _Unwind_RaiseException's slot before it jumps to the handler:
		 * a return address there that follows no call into it is another
		 * frame's, and the stack would go on, even to its root, with
		 * frames missing.  It ends here instead.  (Plain rows are never
		 * in such a function.)
		 */
		if (m->cfi && sp_cfi_table_rewrites_ra(m->cfi, lookup - m->load_bias)) {
			const struct sp_unwind_module *rm = find(ctx, r.regs[SP_DW_RIP] - 1);
			if (rm && follows_call_known(rm, ctx, r.regs[SP_DW_RIP], pc, find) == NOT_CALL) {
				why = SP_STOP_BAD_RULE;
				if (stats)
					stats->bad_returns++;
				break;
			}
		}
		exact = row->flags & SP_CFI_F_SIGNAL;
	}
	/*
	 * Frames found by frame pointers stand when the stack then reached its
	 * root, through CFI or the chain's zero frame pointer: a wrong step
	 * would leave the unwind on a stale return address, and such paths do
	 * not end at the thread's entry.  A stack cut by the end of the copy
	 * is left for the caller to prove (stats->unproven) when it can:
	 * the recorder checks them against the kernel's frame-pointer chain.
	 * Any other end drops them: the stack stops, without CFI, where the
	 * first step began.
	 */
	if (w.fp_from != SIZE_MAX && why != SP_STOP_ROOT) {
		if (why != SP_STOP_STACK_EXHAUSTED || !stats) {
			w.k = w.fp_from;
			why = SP_STOP_NO_UNWIND_INFO;
			w.fp = 0;
		}
	} else {
		w.fp_from = w.k;
	}
	if (why == SP_STOP_UNMAPPED || why == SP_STOP_BAD_RULE || why == SP_STOP_NO_PROGRESS) {
		size_t bad = first_bad_return(pcs, w.k, &exact_at, find, ctx);
		if (bad < w.k) {
			w.k = bad;
			if (w.fp_from > w.k)
				w.fp_from = w.k;
			if (stats)
				stats->bad_returns++;
		}
	}
out:
	*seen = w.seen;
	*n = w.k;
	*stop = why;
	if (stats) {
		stats->unproven = w.fp_from < w.k ? w.fp_from : w.k;
		stats->ncfas = w.ncfa;
		stats->fp_steps = w.fp;
		stats->frames += w.k;
		stats->code_frames += code + w.code;
		stats->rule_cache_hits += w.hits;
		stats->rule_cache_misses += w.misses;
	}
	return 0;
}
