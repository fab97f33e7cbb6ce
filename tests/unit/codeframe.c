/* SPDX-License-Identifier: MIT */
/* Unit tests for lib/unwind/codeframe.c: CFA rows proven from byte strings of generated code. */
#include "unwind/unwind.h"

#include <criterion/criterion.h>

#define RULE(row, i) (((row).saved >> (2 * (i))) & 3)
#define RBP 0 /* index of rbp in sp_cfi_row.saved */
#define RBX 1

/* CPython 3.12/3.13's -X perf trampoline: sub $8,%rsp; call *%rcx; add $8,%rsp; ret */
static const uint8_t tramp[] = {0x48, 0x83, 0xec, 0x08, 0xff, 0xd1, 0x48, 0x83, 0xc4, 0x08, 0xc3};

/* A frame-pointer function: push %rbp; mov %rsp,%rbp; push %rbx; sub $0x20,%rsp;
 * mov $1,%ecx; call rel32; mov %eax,%ebx; add $0x20,%rsp; pop %rbx; pop %rbp; ret */
static const uint8_t fp_fn[] = {
	0x55, 0x48, 0x89, 0xe5, 0x53, 0x48, 0x83, 0xec, 0x20, 0xb9, 0x01, 0x00, 0x00, 0x00,
	0xe8, 0x00, 0x00, 0x00, 0x00, 0x89, 0xc3, 0x48, 0x83, 0xc4, 0x20, 0x5b, 0x5d, 0xc3,
};

static void expect_cfa(const uint8_t *code, size_t len, size_t off, bool after_call,
		       unsigned reg, int32_t cfa_off)
{
	struct sp_cfi_row row;
	int rc = sp_codeframe_row(code, len, off, after_call, &row);
	cr_assert_eq(rc, SP_CODEFRAME_OK, "offset %zu: result %d", off, rc);
	cr_assert_eq(row.kind, SP_CFI_CFA_REG);
	cr_assert_eq(row.cfa_reg, reg, "offset %zu: CFA register %u, want %u", off, row.cfa_reg, reg);
	cr_assert_eq(row.cfa_off, cfa_off, "offset %zu: CFA offset %d, want %d", off, row.cfa_off,
		     cfa_off);
	cr_assert_eq(row.ra_off, -8);
}

static int result(const uint8_t *code, size_t len, size_t off, bool after_call)
{
	struct sp_cfi_row row;
	return sp_codeframe_row(code, len, off, after_call, &row);
}

Test(codeframe, cpython_trampoline_every_offset)
{
	expect_cfa(tramp, sizeof(tramp), 0, false, SP_DW_RSP, 8);
	expect_cfa(tramp, sizeof(tramp), 4, false, SP_DW_RSP, 16);
	/* the Python frame's callee returns here: CFA = rsp + 16 */
	expect_cfa(tramp, sizeof(tramp), 6, true, SP_DW_RSP, 16);
	/* past the call rsp is not known (no frame pointer), nor past the ret */
	cr_assert_eq(result(tramp, sizeof(tramp), 10, false), SP_CODEFRAME_STOPPED);
	cr_assert_eq(result(tramp, sizeof(tramp), 11, false), SP_CODEFRAME_STOPPED);
}

Test(codeframe, return_address_must_follow_a_call)
{
	cr_assert_eq(result(tramp, sizeof(tramp), 4, true), SP_CODEFRAME_NOT_CALL);
	cr_assert_eq(result(tramp, sizeof(tramp), 0, true), SP_CODEFRAME_NOT_CALL);
}

Test(codeframe, pc_inside_an_instruction)
{
	cr_assert_eq(result(tramp, sizeof(tramp), 2, false), SP_CODEFRAME_MISALIGNED);
	cr_assert_eq(result(tramp, sizeof(tramp), 5, false), SP_CODEFRAME_MISALIGNED);
}

Test(codeframe, pc_past_the_bytes)
{
	cr_assert_eq(result(tramp, 4, 6, true), SP_CODEFRAME_SHORT);
	/* the call's bytes are cut off: unknown, never guessed */
	cr_assert_eq(result(tramp, 5, 5, false), SP_CODEFRAME_UNKNOWN);
}

Test(codeframe, frame_pointer_prologue_and_saved_registers)
{
	struct sp_cfi_row row;
	expect_cfa(fp_fn, sizeof(fp_fn), 1, false, SP_DW_RSP, 16);
	/* after mov %rsp,%rbp rsp still tells the CFA (preferred: always valid in callers) */
	expect_cfa(fp_fn, sizeof(fp_fn), 4, false, SP_DW_RSP, 16);
	expect_cfa(fp_fn, sizeof(fp_fn), 19, true, SP_DW_RSP, 56);
	cr_assert_eq(sp_codeframe_row(fp_fn, sizeof(fp_fn), 19, true, &row), 0);
	cr_assert_eq(RULE(row, RBP), SP_CFI_AT_CFA);
	cr_assert_eq(row.saved_off[RBP], -16);
	cr_assert_eq(RULE(row, RBX), SP_CFI_AT_CFA);
	cr_assert_eq(row.saved_off[RBX], -24);
	/* mov %eax,%ebx wrote rbx after its save: the slot still holds the caller's */
	cr_assert_eq(sp_codeframe_row(fp_fn, sizeof(fp_fn), 21, false, &row), 0);
	cr_assert_eq(RULE(row, RBX), SP_CFI_AT_CFA);
	/*
	 * Past the call only rbp tells the CFA (a callee may have moved rsp);
	 * rbx's slot still holds the caller's value after pop %rbx.
	 */
	expect_cfa(fp_fn, sizeof(fp_fn), 26, false, SP_DW_RBP, 16);
	cr_assert_eq(sp_codeframe_row(fp_fn, sizeof(fp_fn), 26, false, &row), 0);
	cr_assert_eq(RULE(row, RBX), SP_CFI_AT_CFA);
	cr_assert_eq(row.saved_off[RBX], -24);
	cr_assert_eq(RULE(row, RBP), SP_CFI_AT_CFA);
	/* pop %rbp there: neither register tells the CFA any more */
	cr_assert_eq(result(fp_fn, sizeof(fp_fn), 27, false), SP_CODEFRAME_STOPPED);
}

/*
 * V8's baseline (Sparkplug) code: its frame is built by an out-of-line prologue
 * it calls, which returns with rsp and rbp moved.  A call before the pc, with
 * no frame pointer of its own, proves nothing; its own frame-pointer code
 * proves through one.
 */
Test(codeframe, nothing_past_a_call_without_a_frame_pointer)
{
	/* mov $0x18,%ebx; call rel32; push %rax; push 0x18(%rbp); call rel32 */
	static const uint8_t baseline[] = {0xbb, 0x18, 0x00, 0x00, 0x00, 0xe8, 0x00, 0x00, 0x00, 0x00,
					   0x50, 0xff, 0x75, 0x18, 0xe8, 0x00, 0x00, 0x00, 0x00};
	cr_assert_eq(result(baseline, sizeof(baseline), 19, true), SP_CODEFRAME_STOPPED);
	cr_assert_eq(result(baseline, sizeof(baseline), 10, false), SP_CODEFRAME_STOPPED);
	/* the first call's own return address is still proven: rsp as at the entry */
	expect_cfa(baseline, sizeof(baseline), 10, true, SP_DW_RSP, 8);
	/* fp_fn's code after its call: CFA = rbp + 16 */
	expect_cfa(fp_fn, sizeof(fp_fn), 21, false, SP_DW_RBP, 16);
}

Test(codeframe, callee_saved_register_written_before_a_save_is_undefined)
{
	/* mov $5,%ebx; push %rbx; nop */
	static const uint8_t code[] = {0xbb, 0x05, 0x00, 0x00, 0x00, 0x53, 0x90};
	struct sp_cfi_row row;
	cr_assert_eq(sp_codeframe_row(code, sizeof(code), 6, false, &row), 0);
	cr_assert_eq(RULE(row, RBX), SP_CFI_UNDEF);
	cr_assert_eq(row.cfa_off, 16);
}

Test(codeframe, leave_and_aligned_frames)
{
	/* push %rbp; mov %rsp,%rbp; and $-16,%rsp; sub $0x40,%rsp; call *%rax; leave; ret */
	static const uint8_t code[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xe4, 0xf0, 0x48,
				       0x83, 0xec, 0x40, 0xff, 0xd0, 0xc9, 0xc3};
	/* rsp is lost to the alignment: the CFA comes from rbp */
	expect_cfa(code, sizeof(code), 14, true, SP_DW_RBP, 16);
	expect_cfa(code, sizeof(code), 15, false, SP_DW_RSP, 8);
}

Test(codeframe, nothing_past_a_branch_or_an_unknown_instruction)
{
	/* push %rbp; jmp +0; nop */
	static const uint8_t jmp[] = {0x55, 0xeb, 0x00, 0x90};
	/* push %rbp; jne +0; nop */
	static const uint8_t jcc[] = {0x55, 0x75, 0x00, 0x90};
	/* push %rbp; cpuid; nop */
	static const uint8_t unk[] = {0x55, 0x0f, 0xa2, 0x90};
	/* push %rbp; mov %rax,%rsp; nop */
	static const uint8_t rsp[] = {0x55, 0x48, 0x89, 0xc4, 0x90};
	/* push %rbp; jmp *%rax; nop */
	static const uint8_t ind[] = {0x55, 0xff, 0xe0, 0x90};
	cr_assert_eq(result(jmp, sizeof(jmp), 3, false), SP_CODEFRAME_STOPPED);
	cr_assert_eq(result(jcc, sizeof(jcc), 3, false), SP_CODEFRAME_STOPPED);
	cr_assert_eq(result(unk, sizeof(unk), 3, false), SP_CODEFRAME_UNKNOWN);
	cr_assert_eq(result(rsp, sizeof(rsp), 4, false), SP_CODEFRAME_STOPPED);
	cr_assert_eq(result(ind, sizeof(ind), 3, false), SP_CODEFRAME_STOPPED);
	/* before the branch the frame is still proven */
	expect_cfa(jmp, sizeof(jmp), 1, false, SP_DW_RSP, 16);
}

Test(codeframe, memory_operands_and_immediates_have_their_length)
{
	/* mov 0x10(%rsp,%rax,8),%rdx; movabs $imm64,%rax; mov %rax,0x100(%rip);
	 * movl $1,-8(%rbp); call *0x18(%rax); nop */
	static const uint8_t code[] = {
		0x48, 0x8b, 0x54, 0xc4, 0x10,
		0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8,
		0x48, 0x89, 0x05, 0x00, 0x01, 0x00, 0x00,
		0xc7, 0x45, 0xf8, 0x01, 0x00, 0x00, 0x00,
		0xff, 0x50, 0x18,
		0x90,
	};
	expect_cfa(code, sizeof(code), 32, true, SP_DW_RSP, 8);
}

Test(codeframe, the_stack_cannot_shrink_below_the_return_address)
{
	/* add $8,%rsp; nop */
	static const uint8_t code[] = {0x48, 0x83, 0xc4, 0x08, 0x90};
	cr_assert_eq(result(code, sizeof(code), 4, false), SP_CODEFRAME_STOPPED);
	/* pop %rax at the entry */
	static const uint8_t pop[] = {0x58, 0x90};
	cr_assert_eq(result(pop, sizeof(pop), 1, false), SP_CODEFRAME_STOPPED);
}

Test(codeframe, return_end_of_a_trampoline)
{
	uint8_t arena[32] = {0};
	memcpy(arena, tramp, sizeof(tramp));
	cr_assert_eq(sp_codeframe_return_end(arena, sizeof(arena)), sizeof(tramp));
	cr_assert_eq(sp_codeframe_return_end(fp_fn, sizeof(fp_fn)), sizeof(fp_fn));
	/* cut before the ret, or unbalanced */
	cr_assert_eq(sp_codeframe_return_end(tramp, 10), 0);
	static const uint8_t unbalanced[] = {0x48, 0x83, 0xec, 0x08, 0xc3};
	cr_assert_eq(sp_codeframe_return_end(unbalanced, sizeof(unbalanced)), 0);
}
