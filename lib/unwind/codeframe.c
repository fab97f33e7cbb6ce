/* SPDX-License-Identifier: MIT */
/* Frames proven from code bytes: the CFA of code without CFI, from a function's entry to a pc. */
#include "unwind/unwind.h"

#include <string.h>

/*
 * docs/DESIGN.md, decision 4 (JIT code without CFI is proven from its code).
 * Generated code (JIT functions, CPython's perf
 * trampolines) comes without CFI, so its frame is derived from its own
 * instructions: decode straight-line from the function's entry to the pc and
 * follow what each instruction does to the stack pointer (push, pop, sub/add
 * of a constant, mov %rsp,%rbp, leave).  The CFA at the entry is rsp + 8
 * (the caller's call pushed the return address).  Nothing is proven past a
 * branch or a return, past a call unless the code set a frame pointer before
 * it, past an instruction this table does not know, or when rsp is written in
 * any other way: the caller must then end the stack (or step by frame pointer).
 *
 * The decoder knows only the encodings needed to see that an instruction
 * leaves rsp alone (Intel SDM vol. 2, one-byte and 0F opcode maps): how long
 * it is and which register it writes.  A callee-saved register written
 * before it was pushed is lost to the caller: its rule becomes undefined.
 */

enum {
	F_MODRM = 1u << 0,  /* a ModRM byte follows the opcode */
	F_IMM8 = 1u << 1,
	F_IMMZ = 1u << 2,   /* imm32, or imm16 with the 0x66 prefix */
	F_W_REG = 1u << 3,  /* writes ModRM.reg */
	F_W_RM = 1u << 4,   /* writes ModRM.rm when it names a register (mod == 3) */
	F_W_OPREG = 1u << 5, /* writes the register in the opcode's low 3 bits */
	F_IMMV = 1u << 6,   /* imm32, or imm64 with REX.W (mov $imm, reg) */
	F_SPECIAL = 1u << 7, /* handled in decode_special: stack, calls, branches */
};

/* One-byte opcode map: only what can appear in straight-line frame code. */
static const uint8_t op1[256] = {
	/* add, or, adc, sbb, and, sub, xor: r/m,r and r,r/m forms; cmp writes nothing */
	[0x00] = F_MODRM | F_W_RM, [0x01] = F_MODRM | F_W_RM,
	[0x02] = F_MODRM | F_W_REG, [0x03] = F_MODRM | F_W_REG,
	[0x08] = F_MODRM | F_W_RM, [0x09] = F_MODRM | F_W_RM,
	[0x0a] = F_MODRM | F_W_REG, [0x0b] = F_MODRM | F_W_REG,
	[0x10] = F_MODRM | F_W_RM, [0x11] = F_MODRM | F_W_RM,
	[0x12] = F_MODRM | F_W_REG, [0x13] = F_MODRM | F_W_REG,
	[0x18] = F_MODRM | F_W_RM, [0x19] = F_MODRM | F_W_RM,
	[0x1a] = F_MODRM | F_W_REG, [0x1b] = F_MODRM | F_W_REG,
	[0x20] = F_MODRM | F_W_RM, [0x21] = F_MODRM | F_W_RM,
	[0x22] = F_MODRM | F_W_REG, [0x23] = F_MODRM | F_W_REG,
	[0x28] = F_MODRM | F_W_RM, [0x29] = F_MODRM | F_W_RM,
	[0x2a] = F_MODRM | F_W_REG, [0x2b] = F_MODRM | F_W_REG,
	[0x30] = F_MODRM | F_W_RM, [0x31] = F_MODRM | F_W_RM,
	[0x32] = F_MODRM | F_W_REG, [0x33] = F_MODRM | F_W_REG,
	[0x38] = F_MODRM, [0x39] = F_MODRM, [0x3a] = F_MODRM, [0x3b] = F_MODRM,
	/* push/pop reg, push imm */
	[0x50] = F_SPECIAL, [0x51] = F_SPECIAL, [0x52] = F_SPECIAL, [0x53] = F_SPECIAL,
	[0x54] = F_SPECIAL, [0x55] = F_SPECIAL, [0x56] = F_SPECIAL, [0x57] = F_SPECIAL,
	[0x58] = F_SPECIAL, [0x59] = F_SPECIAL, [0x5a] = F_SPECIAL, [0x5b] = F_SPECIAL,
	[0x5c] = F_SPECIAL, [0x5d] = F_SPECIAL, [0x5e] = F_SPECIAL, [0x5f] = F_SPECIAL,
	[0x63] = F_MODRM | F_W_REG, /* movsxd */
	[0x68] = F_SPECIAL, [0x6a] = F_SPECIAL,
	[0x69] = F_MODRM | F_IMMZ | F_W_REG, [0x6b] = F_MODRM | F_IMM8 | F_W_REG, /* imul */
	/* jcc rel8 */
	[0x70] = F_SPECIAL, [0x71] = F_SPECIAL, [0x72] = F_SPECIAL, [0x73] = F_SPECIAL,
	[0x74] = F_SPECIAL, [0x75] = F_SPECIAL, [0x76] = F_SPECIAL, [0x77] = F_SPECIAL,
	[0x78] = F_SPECIAL, [0x79] = F_SPECIAL, [0x7a] = F_SPECIAL, [0x7b] = F_SPECIAL,
	[0x7c] = F_SPECIAL, [0x7d] = F_SPECIAL, [0x7e] = F_SPECIAL, [0x7f] = F_SPECIAL,
	/* group 1 (add/or/.../cmp $imm): rsp as the destination is special */
	[0x80] = F_MODRM | F_IMM8 | F_SPECIAL, [0x81] = F_MODRM | F_IMMZ | F_SPECIAL,
	[0x83] = F_MODRM | F_IMM8 | F_SPECIAL,
	[0x84] = F_MODRM, [0x85] = F_MODRM, /* test */
	[0x88] = F_MODRM | F_W_RM, [0x89] = F_MODRM | F_W_RM | F_SPECIAL,
	[0x8a] = F_MODRM | F_W_REG, [0x8b] = F_MODRM | F_W_REG | F_SPECIAL,
	[0x8d] = F_MODRM | F_W_REG, /* lea */
	[0x90] = 0, /* nop */
	[0x98] = F_SPECIAL, [0x99] = F_SPECIAL, /* cdqe, cdq: write rax/rdx only */
	[0xa8] = F_IMM8, [0xa9] = F_IMMZ, /* test al/eax, $imm */
	[0xb0] = F_IMM8 | F_W_OPREG, [0xb1] = F_IMM8 | F_W_OPREG, [0xb2] = F_IMM8 | F_W_OPREG,
	[0xb3] = F_IMM8 | F_W_OPREG, [0xb4] = F_IMM8 | F_W_OPREG, [0xb5] = F_IMM8 | F_W_OPREG,
	[0xb6] = F_IMM8 | F_W_OPREG, [0xb7] = F_IMM8 | F_W_OPREG,
	[0xb8] = F_IMMV | F_W_OPREG, [0xb9] = F_IMMV | F_W_OPREG, [0xba] = F_IMMV | F_W_OPREG,
	[0xbb] = F_IMMV | F_W_OPREG, [0xbc] = F_IMMV | F_W_OPREG, [0xbd] = F_IMMV | F_W_OPREG,
	[0xbe] = F_IMMV | F_W_OPREG, [0xbf] = F_IMMV | F_W_OPREG,
	/* shifts by 1, cl, imm8 */
	[0xc0] = F_MODRM | F_IMM8 | F_W_RM, [0xc1] = F_MODRM | F_IMM8 | F_W_RM,
	[0xd0] = F_MODRM | F_W_RM, [0xd1] = F_MODRM | F_W_RM,
	[0xd2] = F_MODRM | F_W_RM, [0xd3] = F_MODRM | F_W_RM,
	[0xc2] = F_SPECIAL, [0xc3] = F_SPECIAL, /* ret */
	[0xc6] = F_MODRM | F_IMM8 | F_W_RM, [0xc7] = F_MODRM | F_IMMZ | F_W_RM, /* mov $imm */
	[0xc9] = F_SPECIAL, /* leave */
	[0xcc] = F_SPECIAL, /* int3 */
	[0xe0] = F_SPECIAL, [0xe1] = F_SPECIAL, [0xe2] = F_SPECIAL, [0xe3] = F_SPECIAL,
	[0xe8] = F_SPECIAL, [0xe9] = F_SPECIAL, [0xeb] = F_SPECIAL, /* call, jmp */
	[0xf6] = F_MODRM | F_SPECIAL, [0xf7] = F_MODRM | F_SPECIAL, /* group 3 */
	[0xfe] = F_MODRM | F_W_RM, /* inc/dec r/m8 */
	[0xff] = F_MODRM | F_SPECIAL, /* group 5: inc, dec, call, jmp, push */
};

/* Two-byte (0F) opcodes: multi-byte nop, jcc rel32, setcc, cmovcc, imul, movzx/movsx. */
static uint8_t op2(uint8_t b)
{
	if (b == 0x1f)
		return F_MODRM;
	if (b >= 0x80 && b <= 0x8f)
		return F_SPECIAL;
	if (b >= 0x90 && b <= 0x9f)
		return F_MODRM | F_W_RM;
	if ((b >= 0x40 && b <= 0x4f) || b == 0xaf || b == 0xb6 || b == 0xb7 || b == 0xbe ||
	    b == 0xbf)
		return F_MODRM | F_W_REG;
	return 0xff; /* unknown */
}

/* Index of a callee-saved register in sp_cfi_row.saved (rbp rbx r12-r15), or -1. */
static int saved_index(unsigned reg)
{
	static const int8_t idx[16] = {
		[0] = -1, [1] = -1, [2] = -1, [3] = 1, [4] = -1, [5] = 0, [6] = -1, [7] = -1,
		[8] = -1, [9] = -1, [10] = -1, [11] = -1, [12] = 2, [13] = 3, [14] = 4, [15] = 5,
	};
	return idx[reg & 15];
}

/* x86 register numbers (ModRM order) of the two registers a frame is built from. */
#define X_RSP 4
#define X_RBP 5
#define MAX_FRAME (1 << 20) /* a bigger frame is not believed */

struct state {
	int64_t rsp_off;  /* CFA - rsp */
	int64_t rbp_off;  /* CFA - rbp, when rbp_known */
	bool rsp_known, rbp_known;
	uint8_t rule[SP_CFI_NSAVED]; /* enum sp_cfi_saved_rule: SAME, UNDEF or AT_CFA */
	int64_t at[SP_CFI_NSAVED];   /* AT_CFA: saved at CFA - at */
};

/* A write to register reg by an instruction that is not a frame operation. */
static bool clobber(struct state *s, unsigned reg)
{
	if (reg == X_RSP)
		return false; /* rsp changed in a way not followed */
	if (reg == X_RBP)
		s->rbp_known = false;
	int i = saved_index(reg);
	if (i >= 0 && s->rule[i] == SP_CFI_SAME)
		s->rule[i] = SP_CFI_UNDEF;
	return true;
}

/* After an alignment only rbp knows the CFA: rsp moves stay untracked. */
static bool move_rsp(struct state *s, int64_t delta)
{
	if (!s->rsp_known)
		return true;
	s->rsp_off += delta;
	return s->rsp_off >= 8 && s->rsp_off <= MAX_FRAME;
}

static bool push_reg(struct state *s, unsigned reg)
{
	if (!move_rsp(s, 8))
		return false;
	if (!s->rsp_known)
		return true; /* the slot is not known: the register keeps its rule */
	int i = saved_index(reg);
	/* The first push of a register that still holds the caller's value saves it. */
	if (i >= 0 && s->rule[i] == SP_CFI_SAME && (reg != X_RBP || !s->rbp_known)) {
		s->rule[i] = SP_CFI_AT_CFA;
		s->at[i] = s->rsp_off;
	}
	return true;
}

static bool pop_reg(struct state *s, unsigned reg)
{
	if (reg == X_RSP)
		return false;
	if (!s->rsp_known)
		return clobber(s, reg);
	int i = saved_index(reg);
	if (i >= 0 && s->rule[i] == SP_CFI_AT_CFA && s->at[i] == s->rsp_off)
		s->rule[i] = SP_CFI_SAME; /* the caller's value is back in the register */
	else if (!clobber(s, reg))
		return false;
	if (reg == X_RBP)
		s->rbp_known = false;
	s->rsp_off -= 8;
	return s->rsp_off >= 8;
}

struct insn {
	size_t len;
	uint8_t op, flags, rex, modrm;
	bool two_byte, has_modrm;
};

/* Length of a ModRM operand (ModRM, SIB, displacement) at p, or 0 when it runs past end. */
static size_t modrm_len(const uint8_t *p, const uint8_t *end)
{
	if (p >= end)
		return 0;
	unsigned mod = p[0] >> 6, rm = p[0] & 7;
	size_t n = 1;
	if (mod != 3 && rm == 4) {
		if (p + 1 >= end)
			return 0;
		if (mod == 0 && (p[1] & 7) == 5)
			n += 4; /* SIB with no base: disp32 */
		n++;
	}
	if (mod == 1)
		n += 1;
	else if (mod == 2 || (mod == 0 && rm == 5))
		n += 4;
	return p + n <= end ? n : 0;
}

/* Decode the length and shape of one instruction; false when unknown or cut off. */
static bool decode(const uint8_t *p, const uint8_t *end, struct insn *in)
{
	const uint8_t *q = p;
	bool opsize = false;
	memset(in, 0, sizeof(*in));
	while (q < end && (*q == 0x66 || *q == 0xf2 || *q == 0xf3 || *q == 0x2e || *q == 0x3e ||
			   *q == 0x64 || *q == 0x65)) {
		opsize |= *q == 0x66;
		q++;
	}
	if (q < end && (*q & 0xf0) == 0x40)
		in->rex = *q++;
	if (q >= end)
		return false;
	in->op = *q++;
	if (in->op == 0x0f) {
		if (q >= end)
			return false;
		in->two_byte = true;
		in->op = *q++;
		in->flags = op2(in->op);
		if (in->flags == 0xff)
			return false;
	} else {
		in->flags = op1[in->op];
		if (!in->flags && in->op != 0x90)
			return false;
	}
	if (in->flags & F_MODRM) {
		size_t n = modrm_len(q, end);
		if (!n)
			return false;
		in->has_modrm = true;
		in->modrm = *q;
		q += n;
	}
	size_t imm = 0;
	if (in->flags & F_IMM8)
		imm = 1;
	else if (in->flags & F_IMMZ)
		imm = opsize ? 2 : 4;
	else if (in->flags & F_IMMV)
		imm = (in->rex & 8) ? 8 : opsize ? 2 : 4;
	/* group 3's test (/0, /1) carries an immediate; its other forms do not */
	if (!in->two_byte && (in->op == 0xf6 || in->op == 0xf7) && ((in->modrm >> 3) & 7) < 2)
		imm = in->op == 0xf6 ? 1 : opsize ? 2 : 4;
	if (!in->two_byte && in->op == 0x6a)
		imm = 1;
	if (!in->two_byte && in->op == 0x68)
		imm = 4;
	if (!in->two_byte && in->op == 0xc2)
		imm = 2;
	if (!in->two_byte && in->op == 0xe8)
		imm = 4;
	if ((size_t)(end - q) < imm)
		return false;
	q += imm;
	in->len = (size_t)(q - p);
	return true;
}

static int64_t imm_at(const uint8_t *p, size_t len, size_t size)
{
	const uint8_t *v = p + len - size;
	if (size == 1)
		return (int8_t)v[0];
	int32_t x;
	memcpy(&x, v, 4);
	return x;
}

enum step_result { STEP_OK, STEP_CALL, STEP_STOP };

/* The frame effect of one decoded instruction. */
static enum step_result apply(struct state *s, const uint8_t *p, const struct insn *in)
{
	unsigned reg = ((in->modrm >> 3) & 7) | ((in->rex & 4) ? 8 : 0);
	unsigned rm = (in->modrm & 7) | ((in->rex & 1) ? 8 : 0);
	bool rm_is_reg = in->has_modrm && (in->modrm >> 6) == 3;

	if (in->two_byte) {
		if (in->flags & F_SPECIAL)
			return STEP_STOP; /* jcc rel32 */
	} else if (in->flags & F_SPECIAL) {
		unsigned opreg = (in->op & 7) | ((in->rex & 1) ? 8 : 0);
		switch (in->op) {
		case 0x50: case 0x51: case 0x52: case 0x53:
		case 0x54: case 0x55: case 0x56: case 0x57:
			return push_reg(s, opreg) ? STEP_OK : STEP_STOP;
		case 0x58: case 0x59: case 0x5a: case 0x5b:
		case 0x5c: case 0x5d: case 0x5e: case 0x5f:
			return pop_reg(s, opreg) ? STEP_OK : STEP_STOP;
		case 0x68: case 0x6a:
			return move_rsp(s, 8) ? STEP_OK : STEP_STOP;
		case 0x98: case 0x99:
			return STEP_OK;
		case 0x80: case 0x81: case 0x83:
			if (!rm_is_reg || rm != X_RSP)
				break; /* an ordinary register or memory destination */
			if (!(in->rex & 8))
				return STEP_STOP;
			if (reg == 0) /* add $imm, %rsp */
				return move_rsp(s, -imm_at(p, in->len, in->op == 0x83 ? 1 : 4))
					       ? STEP_OK : STEP_STOP;
			if (reg == 5) /* sub $imm, %rsp */
				return move_rsp(s, imm_at(p, in->len, in->op == 0x83 ? 1 : 4))
					       ? STEP_OK : STEP_STOP;
			if (reg == 7) /* cmp */
				return STEP_OK;
			if (reg == 4 && s->rbp_known) { /* and $-align, %rsp: only rbp knows the CFA now */
				s->rsp_known = false;
				return STEP_OK;
			}
			return STEP_STOP;
		case 0x89: case 0x8b: {
			/* mov between rsp and rbp: the frame pointer's set-up and tear-down */
			unsigned dst = in->op == 0x89 ? rm : reg, src = in->op == 0x89 ? reg : rm;
			if (!rm_is_reg || !(in->rex & 8) || (dst != X_RSP && dst != X_RBP) ||
			    (src != X_RSP && src != X_RBP))
				break;
			if (dst == X_RBP && src == X_RSP) {
				if (!s->rsp_known)
					return STEP_STOP;
				clobber(s, X_RBP);
				s->rbp_off = s->rsp_off;
				s->rbp_known = true;
				return STEP_OK;
			}
			if (dst == X_RSP && src == X_RBP && s->rbp_known) {
				s->rsp_off = s->rbp_off;
				s->rsp_known = true;
				return STEP_OK;
			}
			return dst == src ? STEP_OK : STEP_STOP;
		}
		case 0xc9: /* leave: mov %rbp,%rsp; pop %rbp */
			if (!s->rbp_known)
				return STEP_STOP;
			s->rsp_off = s->rbp_off;
			s->rsp_known = true;
			return pop_reg(s, X_RBP) ? STEP_OK : STEP_STOP;
		case 0xe8:
			return STEP_CALL;
		case 0xf6: case 0xf7:
			/* test, not, neg, mul, imul, div, idiv: mul/div write rax:rdx only */
			if (reg == 2 || reg == 3) {
				if (rm_is_reg && !clobber(s, rm))
					return STEP_STOP;
			}
			return STEP_OK;
		case 0xff:
			switch (reg & 7) {
			case 0: case 1: /* inc, dec */
				if (rm_is_reg && !clobber(s, rm))
					return STEP_STOP;
				return STEP_OK;
			case 2:
				return STEP_CALL;
			case 6: /* push r/m */
				return move_rsp(s, 8) ? STEP_OK : STEP_STOP;
			default: /* far call, jmp */
				return STEP_STOP;
			}
		default: /* jumps, returns, loops, int3 */
			return STEP_STOP;
		}
	}
	if ((in->flags & F_W_REG) && !clobber(s, reg))
		return STEP_STOP;
	if ((in->flags & F_W_RM) && rm_is_reg && !clobber(s, rm))
		return STEP_STOP;
	if ((in->flags & F_W_OPREG) && !clobber(s, (in->op & 7) | ((in->rex & 1) ? 8 : 0)))
		return STEP_STOP;
	return STEP_OK;
}

int sp_codeframe_row(const uint8_t *code, size_t len, size_t pc_off, bool after_call,
		     struct sp_cfi_row *row)
{
	struct state s = {.rsp_off = 8, .rsp_known = true};
	const uint8_t *p = code, *pc = code + pc_off, *end = code + len;
	enum step_result last = STEP_OK;

	if (pc_off > len)
		return SP_CODEFRAME_SHORT;
	while (p < pc) {
		struct insn in;
		if (!decode(p, end, &in))
			return SP_CODEFRAME_UNKNOWN;
		last = apply(&s, p, &in);
		if (last == STEP_STOP)
			return SP_CODEFRAME_STOPPED;
		/*
		 * Past a call (but the one a return address pc comes back from,
		 * still under way) rsp is not known: a JIT's callee may pop its
		 * arguments, and V8's baseline code calls an out-of-line prologue
		 * that builds the caller's frame (node's ^mid, proven through it,
		 * gave CFA rsp+32, and about 1,100 samples a run lost their
		 * callers).  A frame pointer this code set before the call still
		 * holds: every callee gives rbp back.
		 */
		if (last == STEP_CALL && (p + in.len < pc || (p + in.len == pc && !after_call))) {
			if (!s.rbp_known)
				return SP_CODEFRAME_STOPPED;
			s.rsp_known = false;
		}
		p += in.len;
	}
	if (p != pc)
		return SP_CODEFRAME_MISALIGNED;
	/* A return address must follow a call of this function's straight-line code. */
	if (after_call && last != STEP_CALL)
		return SP_CODEFRAME_NOT_CALL;
	/* rbp popped (or written) after rsp was lost: neither tells the CFA */
	if (!s.rsp_known && !s.rbp_known)
		return SP_CODEFRAME_STOPPED;

	memset(row, 0, sizeof(*row));
	row->kind = SP_CFI_CFA_REG;
	row->start = 0;
	row->len = (uint32_t)len;
	if (s.rsp_known) {
		row->cfa_reg = SP_DW_RSP;
		row->cfa_off = (int32_t)s.rsp_off;
	} else {
		row->cfa_reg = SP_DW_RBP;
		row->cfa_off = (int32_t)s.rbp_off;
	}
	row->ra_off = -8;
	for (unsigned i = 0; i < SP_CFI_NSAVED; i++) {
		if (s.rule[i] == SP_CFI_AT_CFA && s.at[i] > INT16_MAX)
			return SP_CODEFRAME_STOPPED; /* a slot the row cannot express */
		row->saved |= (uint16_t)(s.rule[i] << (2 * i));
		row->saved_off[i] = s.rule[i] == SP_CFI_AT_CFA ? (int16_t)-s.at[i] : 0;
	}
	row->plain = sp_cfi_row_plain_shape(row);
	return SP_CODEFRAME_OK;
}

size_t sp_codeframe_return_end(const uint8_t *code, size_t len)
{
	const uint8_t *p = code, *end = code + len;
	struct state s = {.rsp_off = 8, .rsp_known = true};
	while (p < end) {
		struct insn in;
		if (!decode(p, end, &in))
			return 0;
		if (!in.two_byte && (in.op == 0xc3 || in.op == 0xc2))
			return s.rsp_known && s.rsp_off == 8 ? (size_t)(p - code) + in.len : 0;
		if (apply(&s, p, &in) == STEP_STOP)
			return 0;
		p += in.len;
	}
	return 0;
}
