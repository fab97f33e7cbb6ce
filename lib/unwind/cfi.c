/* SPDX-License-Identifier: MIT */
/* CFI rule tables: libdw's CFI rows compiled lazily into compact per-module rules. */
#include "unwind/unwind.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/*
 * A table is a per-file cache in front of libdw.  A lookup that misses asks
 * dwarf_cfi_addrframe for the pc (plus a check of the row's start, see
 * true_start), compiles the row it returns (the register state over
 * [start, end), DWARF 5 §6.4.1) into a struct sp_cfi_row and keeps it:
 * rows are append-only, and `order` keeps their indices sorted by start for
 * binary search.  Rows never overlap.  The row found last and a
 * direct-mapped cache of rows, keyed by a hash of the pc and checked against
 * the row's range, answer repeated lookups without the search (struct
 * sp_cfi_cache, read inline by sp_cfi_table_lookup; emptied when the rows
 * move).  Each row is marked plain or not as it is kept (row_plain).
 *
 * Nothing here is locked: libdw's Dwarf_CFI caches are not thread-safe
 * either, so a table is used by one thread at a time.
 */

#define EXPR_MAX_OPS 64   /* longer CFA expressions compile to SP_CFI_BAD */
#define EVAL_STACK 16     /* DWARF expression stack depth we evaluate */
#define ENTRY_CODE 64     /* bytes after e_entry taken as entry code when no FDE covers them */
#define RA_REWRITERS_MAX 8
#define SYMBOLS_SCANNED (1u << 22) /* symbols looked at per table for them */

/* One op of a copied CFA expression; DW_OP_bregx is folded into DW_OP_breg0 + reg. */
struct cfi_op {
	uint8_t atom;
	uint8_t reg;
	uint64_t num;
};

struct sp_cfi_table {
	struct sp_cfi_cache cache; /* first: sp_cfi_table_lookup reads it inline */
	Dwarf_CFI *eh;  /* .eh_frame (dwarf_getcfi_elf), ours to dwarf_cfi_end */
	Dwarf *dw;      /* only for .debug_frame; NULL when the file has none */
	Dwarf_CFI *dbg; /* .debug_frame, owned by dw */
	uint64_t entry; /* e_entry, 0 when none */
	struct sp_cfi_row *rows;
	uint32_t *order;
	uint32_t nrows, cap;
	struct cfi_op *ops;
	uint32_t nops, ops_cap;
	/* svma ranges of functions that rewrite their own return address slot */
	struct { uint64_t lo, hi; } rewrites_ra[RA_REWRITERS_MAX];
	unsigned nrewrites_ra;
};

static bool has_section(Elf *elf, const char *name)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return false;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		const char *n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		n = elf_strptr(elf, shstrndx, sh.sh_name);
		if (n && strcmp(n, name) == 0)
			return true;
	}
	return false;
}

/* The one compressed section a rule table may need inflated (.zdebug_frame: gcc -gz=zlib-gnu). */
static bool frame_section(const char *name)
{
	return !strcmp(name, ".debug_frame") || !strcmp(name, ".zdebug_frame");
}

/*
 * libgcc's unwinder installs an exception handler's context from inside
 * these functions (uw_install_context): it first copies the handler frame's
 * registers into their save slots, the return address slot included, so
 * for a while their return address is another frame's (stackpulse-record(1)).
 */
static const char *const ra_rewriters[] = {
	"_Unwind_RaiseException", "_Unwind_Resume", "_Unwind_Resume_or_Rethrow",
	"_Unwind_ForcedUnwind",
};

#define NAME_HITS_MAX 64 /* ra_rewriters' names per string table sorted out by offset */

/*
 * Offsets in the string table at strndx, ascending, in hits, of every string
 * spelled as one of ra_rewriters (a version may follow after '@'); the count,
 * or -1 when the table cannot be read as one plain chunk or holds more than
 * NAME_HITS_MAX of them.  Only symbols whose st_name is one of these need a
 * look: comparing the names of all of node's 185,000 symbols took the
 * recorder's first sample 8 ms.  memchr for the rare 'U' of "_Unwind_" goes
 * through node's 12.8 MB of names in about 1 ms (glibc's memmem is bytewise).
 */
static int rewriter_names(Elf *elf, size_t strndx, uint32_t *hits)
{
	Elf_Scn *scn = elf_getscn(elf, strndx);
	GElf_Shdr sh;
	Elf_Data *d;
	if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type != SHT_STRTAB ||
	    (sh.sh_flags & SHF_COMPRESSED) || !(d = elf_getdata(scn, NULL)) ||
	    elf_getdata(scn, d) || d->d_size > UINT32_MAX)
		return -1;
	const char *base = d->d_buf, *end = base + d->d_size, *p = base;
	int n = 0;
	while (p && p < end && (p = memchr(p, 'U', (size_t)(end - p)))) {
		const char *name = p - 1;
		p++;
		if (name < base || *name != '_' || (size_t)(end - name) < 8 || memcmp(name, "_Unwind_", 8))
			continue;
		for (size_t k = 0; k < sizeof(ra_rewriters) / sizeof(*ra_rewriters); k++) {
			size_t len = strlen(ra_rewriters[k]);
			if ((size_t)(end - name) <= len || memcmp(name, ra_rewriters[k], len) ||
			    (name[len] && name[len] != '@'))
				continue;
			if (n == NAME_HITS_MAX)
				return -1;
			hits[n++] = (uint32_t)(name - base);
			break;
		}
	}
	return n;
}

static bool name_hit(const uint32_t *hits, int n, uint32_t off)
{
	for (int i = 0; i < n; i++)
		if (hits[i] == off)
			return true;
	return false;
}

/*
 * A symbol's st_name without gelf_getsym: the table's data is in memory
 * representation (ELF_T_SYM), an ELFCLASS64 file's Elf64_Sym.  false when
 * gelf_getsym would fail on index i.
 */
static bool sym_name_at(const Elf_Data *d, size_t i, uint32_t *st_name)
{
	if (d->d_type != ELF_T_SYM || (i + 1) * sizeof(Elf64_Sym) > d->d_size)
		return false;
	memcpy(st_name, (const char *)d->d_buf + i * sizeof(Elf64_Sym) + offsetof(Elf64_Sym, st_name),
	       sizeof(*st_name));
	return true;
}

/*
 * Does elf name libgcc_s.so.1 in its DT_NEEDED entries?  Then its
 * _Unwind_* calls go to that library's copies (gcc links libgcc_eh's only
 * with -static-libgcc, or -static, and then needs no libgcc_s): its own
 * symbols hold none of ra_rewriters, and node's 17 MB of symbols and names
 * need not be read (nor paged in) at the first sample.
 */
static bool needs_libgcc_s(Elf *elf)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		size_t n = d->d_size / sh.sh_entsize;
		for (size_t i = 0; i < n; i++) {
			GElf_Dyn dyn;
			const char *name;
			if (!gelf_getdyn(d, (int)i, &dyn) || dyn.d_tag == DT_NULL)
				break;
			if (dyn.d_tag == DT_NEEDED &&
			    (name = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val)) &&
			    !strcmp(name, "libgcc_s.so.1"))
				return true;
		}
	}
	return false;
}

/* Find ra_rewriters in elf's .symtab and .dynsym (libgcc_s, or a binary linking libgcc_eh). */
static void find_ra_rewriters(struct sp_cfi_table *t, Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t seen = 0;
	uint32_t hits[NAME_HITS_MAX];
	while ((scn = elf_nextscn(elf, scn)) && seen < SYMBOLS_SCANNED) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		size_t n = d->d_size / sh.sh_entsize;
		int nhits = rewriter_names(elf, sh.sh_link, hits);
		if (nhits == 0) {
			/* as if every symbol had been looked at: the bound falls where it did */
			seen += n < SYMBOLS_SCANNED - seen ? n : SYMBOLS_SCANNED - seen;
			continue;
		}
		for (size_t i = 0; i < n && seen < SYMBOLS_SCANNED; i++, seen++) {
			GElf_Sym sym;
			const char *name;
			uint32_t st_name;
			if (nhits > 0 && (!sym_name_at(d, i, &st_name) || !name_hit(hits, nhits, st_name)))
				continue;
			if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    !sym.st_size || sym.st_shndx == SHN_UNDEF ||
			    !(name = elf_strptr(elf, sh.sh_link, sym.st_name)) ||
			    strncmp(name, "_Unwind_", 8))
				continue;
			for (size_t k = 0; k < sizeof(ra_rewriters) / sizeof(*ra_rewriters); k++) {
				size_t len = strlen(ra_rewriters[k]);
				/* .dynsym names may carry a version: _Unwind_Resume@@GCC_3.0 */
				if (strncmp(name, ra_rewriters[k], len) || (name[len] && name[len] != '@'))
					continue;
				bool known = false;
				for (unsigned j = 0; j < t->nrewrites_ra; j++)
					known |= t->rewrites_ra[j].lo == sym.st_value;
				if (!known && t->nrewrites_ra < RA_REWRITERS_MAX) {
					t->rewrites_ra[t->nrewrites_ra].lo = sym.st_value;
					t->rewrites_ra[t->nrewrites_ra++].hi = sym.st_value + sym.st_size;
				}
			}
		}
	}
}

/* What an empty cache slot holds: a row no svma lies in. */
static const struct sp_cfi_row no_row = { .kind = SP_CFI_NONE };

/* Empty both caches (the rows moved). */
static void cache_clear(struct sp_cfi_cache *c)
{
	c->last_len = 0;
	for (size_t i = 0; i < SP_ARRAY_SIZE(c->slot); i++)
		c->slot[i] = &no_row;
}

bool sp_cfi_table_rewrites_ra(const struct sp_cfi_table *t, uint64_t svma)
{
	for (unsigned i = 0; i < t->nrewrites_ra; i++)
		if (svma >= t->rewrites_ra[i].lo && svma < t->rewrites_ra[i].hi)
			return true;
	return false;
}

int sp_cfi_table_new(Elf *elf, const struct sp_file_trust *trust, struct sp_inflate_stats *skipped,
		     struct sp_cfi_table **out)
{
	struct sp_cfi_table *t;
	struct sp_inflate_stats unused;
	GElf_Ehdr eh;

	sp_elf_init();
	if (!skipped)
		skipped = &unused;
	*skipped = (struct sp_inflate_stats){0};
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
		return -SP_E_ELF_MALFORMED;
	/* The rules use x86-64 DWARF register numbers (SysV x86-64 ABI §3.6.2). */
	if (eh.e_machine != EM_X86_64 || eh.e_ident[EI_CLASS] != ELFCLASS64)
		return -SP_E_ELF_MALFORMED;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->entry = eh.e_entry;
	cache_clear(&t->cache);
	/* .eh_frame is allocated, so never compressed: libdw reads its raw bytes. */
	t->eh = dwarf_getcfi_elf(elf);
	/*
	 * dwarf_begin_elf inflates every compressed DWARF section of the file
	 * there and then (libdw 0.188, check_section), on the recorder's hot
	 * path: .debug_info, .debug_line, ... are hidden first, and .debug_frame
	 * (compressed by clang -gz, legitimately) is inflated only within
	 * SP_INFLATE_SECTION_MAX.  When hiding fails, .debug_frame goes unread.
	 */
	if (!sp_elf_bound_inflation(elf, frame_section, trust, skipped) &&
	    (has_section(elf, ".debug_frame") || has_section(elf, ".zdebug_frame"))) {
		t->dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
		if (t->dw)
			t->dbg = dwarf_getcfi(t->dw);
	}
	if (!t->eh && !t->dbg) {
		sp_cfi_table_free(t);
		return -SP_E_NO_CFI;
	}
	if (!needs_libgcc_s(elf))
		find_ra_rewriters(t, elf);
	*out = t;
	return 0;
}

void sp_cfi_table_free(struct sp_cfi_table *t)
{
	if (!t)
		return;
	if (t->eh)
		dwarf_cfi_end(t->eh);
	if (t->dw)
		dwarf_end(t->dw);
	free(t->rows);
	free(t->order);
	free(t->ops);
	free(t);
}

/* ---- compiling one row ------------------------------------------------- */

/* Callee-saved registers a row tracks, in saved/saved_off order. */
static const uint8_t saved_regs[SP_CFI_NSAVED] = {
	SP_DW_RBP, SP_DW_RBX, SP_DW_R12, SP_DW_R13, SP_DW_R14, SP_DW_R15,
};

/*
 * Index of each DWARF register in the kernel's sigcontext gregs (struct
 * sigcontext_64, arch/x86/include/uapi/asm/sigcontext.h; glibc's mcontext_t
 * gregs follow it): r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip.
 */
static const uint8_t greg_index[SP_DW_NREGS] = {
	[SP_DW_RAX] = 13, [SP_DW_RDX] = 12, [SP_DW_RCX] = 14, [SP_DW_RBX] = 11,
	[SP_DW_RSI] = 9,  [SP_DW_RDI] = 8,  [SP_DW_RBP] = 10, [SP_DW_RSP] = 15,
	[SP_DW_R8] = 0,   [SP_DW_R9] = 1,   [SP_DW_R10] = 2,  [SP_DW_R11] = 3,
	[SP_DW_R12] = 4,  [SP_DW_R13] = 5,  [SP_DW_R14] = 6,  [SP_DW_R15] = 7,
	[SP_DW_RIP] = 16,
};

/* DW_OP_bregN / DW_OP_bregx: base register and offset; false for anything else. */
static bool op_breg(const Dwarf_Op *op, unsigned *reg, int64_t *off)
{
	if (op->atom >= DW_OP_breg0 && op->atom <= DW_OP_breg31) {
		*reg = op->atom - DW_OP_breg0;
		*off = (int64_t)op->number;
		return true;
	}
	if (op->atom == DW_OP_bregx) {
		if (op->number > 255)
			return false;
		*reg = (unsigned)op->number;
		*off = (int64_t)op->number2;
		return true;
	}
	return false;
}

/* A rule libdw describes as "the value is at (or is) regN + k", as an address. */
struct loc {
	enum { LOC_SAME, LOC_UNDEF, LOC_CFA, LOC_REG, LOC_OTHER } base;
	bool value;   /* val_offset / val_expression: the value, not a slot */
	unsigned reg; /* LOC_REG */
	int64_t off;
};

/*
 * Classify dwarf_frame_register's answer.  libdw spells the CFI register
 * rules (DWARF 5 §6.4.1) as: same_value = no ops and NULL; undefined = no
 * ops and ops_mem; offset(N) = call_frame_cfa [plus_uconst N]; val_offset
 * adds stack_value; register(R) = bregx R 0, stack_value; expression E =
 * call_frame_cfa followed by E (the CFA is pushed first, §6.4.2.3), plus
 * stack_value for val_expression.  elfutils 0.188 spells register(R) for
 * the return address column as the single op regx R (glibc's __vfork keeps
 * its return address in rdi): read the same as bregx R 0, stack_value.
 */
static struct loc classify(const Dwarf_Op *ops, size_t nops)
{
	struct loc l = { .base = LOC_OTHER };
	unsigned reg;
	int64_t off;

	if (nops == 0) {
		l.base = ops ? LOC_UNDEF : LOC_SAME;
		return l;
	}
	if (nops == 1 && (ops[0].atom == DW_OP_regx ||
			  (ops[0].atom >= DW_OP_reg0 && ops[0].atom <= DW_OP_reg31))) {
		l.base = LOC_REG;
		l.value = true;
		l.reg = ops[0].atom == DW_OP_regx ? (unsigned)ops[0].number
						  : (unsigned)(ops[0].atom - DW_OP_reg0);
		return l;
	}
	if (ops[nops - 1].atom == DW_OP_stack_value) {
		l.value = true;
		nops--;
	}
	if (nops == 0)
		return l;
	if (ops[0].atom == DW_OP_call_frame_cfa) {
		if (nops == 1) {
			l.base = LOC_CFA;
		} else if (nops == 2 && ops[1].atom == DW_OP_plus_uconst) {
			l.base = LOC_CFA;
			l.off = (int64_t)ops[1].number;
		} else if (nops == 2 && op_breg(&ops[1], &reg, &off)) {
			/* expression `bregN k`: the pushed CFA is left below, unused */
			l.base = LOC_REG;
			l.reg = reg;
			l.off = off;
		}
		return l;
	}
	if (nops == 1 && op_breg(&ops[0], &reg, &off)) {
		l.base = LOC_REG;
		l.reg = reg;
		l.off = off;
	}
	return l;
}

/*
 * A location as CFA + off.  A `bregN k` expression converts when N is the
 * register the CFA is defined from (CFA = regN + cfa_off, so regN + k =
 * CFA + k - cfa_off).
 */
static bool loc_cfa_off(const struct loc *l, const struct sp_cfi_row *row, int64_t *off)
{
	if (l->base == LOC_CFA) {
		*off = l->off;
		return true;
	}
	if (l->base == LOC_REG && row->kind == SP_CFI_CFA_REG && l->reg == row->cfa_reg) {
		*off = l->off - row->cfa_off;
		return true;
	}
	return false;
}

static unsigned saved_rule(const struct loc *l, const struct sp_cfi_row *row, unsigned dwreg,
			   int16_t *slot)
{
	int64_t off;

	if (l->base == LOC_SAME)
		return SP_CFI_SAME;
	/* register(R) naming itself is same_value; another register we do not track */
	if (l->base == LOC_REG && l->value && l->reg == dwreg && l->off == 0)
		return SP_CFI_SAME;
	if (l->base != LOC_UNDEF && loc_cfa_off(l, row, &off) && off >= INT16_MIN &&
	    off <= INT16_MAX) {
		*slot = (int16_t)off;
		return l->value ? SP_CFI_VAL_CFA : SP_CFI_AT_CFA;
	}
	return SP_CFI_UNDEF;
}

static void set_saved(struct sp_cfi_row *row, unsigned i, unsigned rule)
{
	row->saved = (uint16_t)((row->saved & ~(3u << (2 * i))) | (rule << (2 * i)));
}

/*
 * A signal frame whose FDE describes every register as saved in a sigcontext
 * gregs array at rsp + base (glibc's __restore_rt: each register is
 * `DW_CFA_expression r, breg7 off` and the CFA is `breg7 off(rsp); deref`).
 * True with row->cfa_off = base when the FDE has exactly that layout.
 */
static bool compile_ucontext(Dwarf_Frame *f, Dwarf_Op *cfa, size_t ncfa, struct sp_cfi_row *row)
{
	int64_t base = 0, off;
	unsigned reg;

	for (unsigned r = 0; r < SP_DW_NREGS; r++) {
		Dwarf_Op mem[3], *ops;
		size_t nops;
		struct loc l;

		if (dwarf_frame_register(f, (int)r, mem, &ops, &nops) != 0)
			return false;
		l = classify(ops, nops);
		if (l.base != LOC_REG || l.value || l.reg != SP_DW_RSP)
			return false;
		if (r == 0)
			base = l.off - 8 * (int64_t)greg_index[r];
		else if (l.off != base + 8 * (int64_t)greg_index[r])
			return false;
	}
	if (ncfa != 2 || !op_breg(&cfa[0], &reg, &off) || cfa[1].atom != DW_OP_deref ||
	    reg != SP_DW_RSP || off != base + 8 * (int64_t)greg_index[SP_DW_RSP])
		return false;
	if (base < 0 || base > INT32_MAX)
		return false;
	row->kind = SP_CFI_UCONTEXT;
	row->cfa_reg = SP_DW_RSP;
	row->cfa_off = (int32_t)base;
	return true;
}

static bool expr_op_supported(const Dwarf_Op *op)
{
	switch (op->atom) {
	case DW_OP_lit0 ... DW_OP_lit31:
	case DW_OP_const1u: case DW_OP_const1s: case DW_OP_const2u: case DW_OP_const2s:
	case DW_OP_const4u: case DW_OP_const4s: case DW_OP_const8u: case DW_OP_const8s:
	case DW_OP_constu: case DW_OP_consts:
	case DW_OP_plus: case DW_OP_minus: case DW_OP_and: case DW_OP_or: case DW_OP_xor:
	case DW_OP_mul: case DW_OP_div: case DW_OP_mod:
	case DW_OP_shl: case DW_OP_shr: case DW_OP_shra:
	case DW_OP_ge: case DW_OP_gt: case DW_OP_lt: case DW_OP_le: case DW_OP_eq: case DW_OP_ne:
	case DW_OP_plus_uconst: case DW_OP_neg: case DW_OP_not:
	case DW_OP_deref: case DW_OP_dup: case DW_OP_drop: case DW_OP_swap: case DW_OP_over:
	case DW_OP_nop:
		return true;
	default:
		return false;
	}
}

/* Copy a CFA expression into the pool: 1, 0 when unsupported (row stays BAD), -ENOMEM. */
static int copy_expr(struct sp_cfi_table *t, const Dwarf_Op *ops, size_t nops,
		     struct sp_cfi_row *row)
{
	if (nops > EXPR_MAX_OPS)
		return 0;
	for (size_t i = 0; i < nops; i++) {
		unsigned reg;
		int64_t off;

		if (op_breg(&ops[i], &reg, &off)) {
			if (reg >= SP_DW_NREGS)
				return 0;
		} else if (!expr_op_supported(&ops[i])) {
			return 0;
		}
	}
	if (t->nops + nops > t->ops_cap) {
		uint32_t cap = t->ops_cap ? t->ops_cap * 2 : 64;
		struct cfi_op *p;

		while (cap < t->nops + nops)
			cap *= 2;
		p = realloc(t->ops, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		t->ops = p;
		t->ops_cap = cap;
	}
	for (size_t i = 0; i < nops; i++) {
		struct cfi_op *o = &t->ops[t->nops + i];
		unsigned reg;
		int64_t off;

		if (op_breg(&ops[i], &reg, &off)) {
			o->atom = DW_OP_breg0;
			o->reg = (uint8_t)reg;
			o->num = (uint64_t)off;
		} else {
			o->atom = ops[i].atom;
			o->reg = 0;
			o->num = ops[i].number;
		}
	}
	row->kind = SP_CFI_CFA_EXPR;
	row->expr = t->nops;
	row->expr_len = (uint8_t)nops;
	t->nops += (uint32_t)nops;
	return 1;
}

/*
 * Compile the row libdw computed for pc.  Returns 0 (row filled; kind BAD
 * when a rule does not fit) or -ENOMEM.
 */
static int compile_row(struct sp_cfi_table *t, Dwarf_Frame *f, uint64_t pc,
		       struct sp_cfi_row *row)
{
	Dwarf_Addr start, end;
	bool signal = false;
	Dwarf_Op *cfa, mem[3], *ops;
	size_t ncfa, nops;
	struct loc ra;
	unsigned reg;
	int64_t off;
	int ra_reg, rc;

	memset(row, 0, sizeof(*row));
	row->kind = SP_CFI_BAD;
	ra_reg = dwarf_frame_info(f, &start, &end, &signal);
	if (start > pc || end <= pc) {
		start = pc;
		end = pc + 1;
	}
	row->start = start;
	row->len = end - start > UINT32_MAX ? UINT32_MAX : (uint32_t)(end - start);
	row->flags = signal ? SP_CFI_F_SIGNAL : 0;
	for (unsigned i = 0; i < SP_CFI_NSAVED; i++)
		set_saved(row, i, SP_CFI_UNDEF);
	if (ra_reg != SP_DW_RIP)
		return 0;

	/* An undefined return address marks the outermost frame (DWARF 5 §6.4.4). */
	if (dwarf_frame_register(f, SP_DW_RIP, mem, &ops, &nops) != 0)
		return 0;
	ra = classify(ops, nops);
	if (ra.base == LOC_UNDEF) {
		row->kind = SP_CFI_ROOT;
		return 0;
	}
	if (dwarf_frame_cfa(f, &cfa, &ncfa) != 0 || ncfa == 0)
		return 0;
	if (signal && compile_ucontext(f, cfa, ncfa, row))
		return 0;

	if (ncfa == 1 && op_breg(&cfa[0], &reg, &off)) {
		if (reg >= SP_DW_NREGS || off < INT32_MIN || off > INT32_MAX)
			return 0;
		row->kind = SP_CFI_CFA_REG;
		row->cfa_reg = (uint8_t)reg;
		row->cfa_off = (int32_t)off;
	} else {
		rc = copy_expr(t, cfa, ncfa, row);
		if (rc <= 0)
			return rc;
	}

	/*
	 * register(R): the return address is in R (glibc's __vfork pops it
	 * into rdi across the syscall, so the child cannot clobber the slot).
	 */
	if (ra.value && ra.base == LOC_REG && ra.off == 0 && ra.reg < SP_DW_NREGS &&
	    ra.reg != SP_DW_RSP && ra.reg != SP_DW_RIP) {
		row->flags |= SP_CFI_F_RA_REG;
		row->ra_off = (int32_t)ra.reg;
	} else if (ra.value || !loc_cfa_off(&ra, row, &off) || off < INT32_MIN ||
		   off > INT32_MAX) {
		row->kind = SP_CFI_BAD;
		return 0;
	} else {
		row->ra_off = (int32_t)off;
	}

	for (unsigned i = 0; i < SP_CFI_NSAVED; i++) {
		struct loc l = { .base = LOC_UNDEF };

		if (dwarf_frame_register(f, saved_regs[i], mem, &ops, &nops) == 0)
			l = classify(ops, nops);
		/*
		 * elfutils' x86-64 default rules (backends/x86_64_cfi.c, 0.188)
		 * mark DWARF register 0 (rax) same-value instead of 3 (rbx),
		 * so an FDE that never mentions rbx reads as "rbx undefined".
		 * The psABI keeps unmentioned callee-saved registers, and
		 * compilers do not emit DW_CFA_undefined for rbx: treat it as
		 * same-value.
		 */
		if (saved_regs[i] == SP_DW_RBX && l.base == LOC_UNDEF)
			l.base = LOC_SAME;
		set_saved(row, i, saved_rule(&l, row, saved_regs[i], &row->saved_off[i]));
	}
	return 0;
}

/* ---- the table --------------------------------------------------------- */

/* Number of rows whose start is <= pc (index into order). */
static uint32_t upper_bound(const struct sp_cfi_table *t, uint64_t pc)
{
	return (uint32_t)sp_partition_point(t->nrows, i, t->rows[t->order[i]].start <= pc);
}

bool sp_cfi_row_plain_shape(const struct sp_cfi_row *row)
{
	/* SP_CFI_SAME is 0 and SP_CFI_AT_CFA 2: no rule of saved has its low bit set */
	if (row->kind != SP_CFI_CFA_REG || row->flags ||
	    (row->cfa_reg != SP_DW_RSP && row->cfa_reg != SP_DW_RBP) || row->ra_off != -8 ||
	    (row->saved & 0x555u))
		return false;
	/* saved below the return address: a slot inside the copy whenever that address is */
	for (unsigned i = 0; i < SP_CFI_NSAVED; i++)
		if ((row->saved >> (2 * i) & 3) == SP_CFI_AT_CFA && row->saved_off[i] > -16)
			return false;
	return true;
}

/*
 * Is row plain (struct sp_cfi_row): a shape the unwinder steps without
 * interpreting rules?  Nearly every row of compiled code is (docs/DESIGN.md,
 * "Measured facts": rsp plus a constant, the same with registers pushed, rbp
 * plus a constant).  Rows inside a function that rewrites its return address
 * slot are not: the unwinder checks those frames' return addresses.
 */
static bool row_plain(const struct sp_cfi_table *t, const struct sp_cfi_row *row)
{
	if (!sp_cfi_row_plain_shape(row))
		return false;
	for (unsigned i = 0; i < t->nrewrites_ra; i++)
		if (row->start < t->rewrites_ra[i].hi &&
		    t->rewrites_ra[i].lo < row->start + row->len)
			return false;
	return true;
}

/* Insert row (which contains pc and no existing row does) at sorted position pos. */
static int insert_row(struct sp_cfi_table *t, struct sp_cfi_row *row, uint64_t pc, uint32_t pos,
		      uint32_t *idx)
{
	uint64_t end = row->start + row->len;

	if (t->nrows == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 64;
		struct sp_cfi_row *r = realloc(t->rows, cap * sizeof(*r));
		uint32_t *o;

		if (!r)
			return -ENOMEM;
		t->rows = r;
		cache_clear(&t->cache);
		o = realloc(t->order, cap * sizeof(*o));
		if (!o)
			return -ENOMEM;
		t->order = o;
		t->cap = cap;
	}
	/*
	 * .eh_frame and .debug_frame may describe neighbouring ranges
	 * differently; clip to the gap around pc so rows never overlap.  The
	 * row before ends at or below pc and the one after starts above it.
	 */
	if (pos > 0) {
		const struct sp_cfi_row *prev = &t->rows[t->order[pos - 1]];

		if (prev->start + prev->len > row->start)
			row->start = prev->start + prev->len;
	}
	if (pos < t->nrows && t->rows[t->order[pos]].start < end)
		end = t->rows[t->order[pos]].start;
	if (row->start > pc || end <= pc) {
		row->start = pc;
		end = pc + 1;
	}
	row->len = (uint32_t)(end - row->start);
	row->plain = row_plain(t, row);
	t->rows[t->nrows] = *row;
	memmove(&t->order[pos + 1], &t->order[pos], (t->nrows - pos) * sizeof(*t->order));
	t->order[pos] = t->nrows;
	*idx = t->nrows++;
	return 0;
}

/* End of the row libdw reports for pc; 0 when it has none. */
static uint64_t row_end(Dwarf_CFI *cfi, uint64_t pc)
{
	Dwarf_Frame *f = NULL;
	Dwarf_Addr start, end = 0;

	if (dwarf_cfi_addrframe(cfi, pc, &f) != 0)
		return 0;
	if (dwarf_frame_info(f, &start, &end, NULL) < 0)
		end = 0;
	free(f);
	return end;
}

/*
 * libdw (0.188) restores a row's start along with the register state at
 * DW_CFA_restore_state, so a row after an epilogue's remember/restore pair
 * claims to start where the state was remembered and would swallow the
 * epilogue's own rows (seen in glibc's msort_with_tmp: a return address
 * read from the wrong slot).  The end is right.  So check that the start
 * belongs to the same row (its end matches); when it does not, every
 * address below the real start ends earlier, and a binary search on "ends
 * at end" finds the real start.
 */
static uint64_t true_start(Dwarf_CFI *cfi, uint64_t start, uint64_t end, uint64_t pc)
{
	uint64_t lo = start, hi = pc; /* row_end(lo) != end, row_end(hi) == end */

	if (start >= pc || row_end(cfi, start) == end)
		return start;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (row_end(cfi, mid) == end)
			hi = mid;
		else
			lo = mid;
	}
	return hi;
}

/* Ask libdw for pc's row, .eh_frame first, then .debug_frame. */
static int compile_at(struct sp_cfi_table *t, uint64_t pc, struct sp_cfi_row *row)
{
	Dwarf_CFI *srcs[2] = { t->eh, t->dbg };

	for (unsigned i = 0; i < 2; i++) {
		Dwarf_Frame *f = NULL;
		uint64_t end, start;
		int rc;

		if (!srcs[i] || dwarf_cfi_addrframe(srcs[i], pc, &f) != 0)
			continue;
		rc = compile_row(t, f, pc, row);
		free(f); /* libdw hands the caller a malloc'd frame */
		if (rc == 0) {
			end = row->start + row->len;
			start = true_start(srcs[i], row->start, end, pc);
			row->len = (uint32_t)(end - start);
			row->start = start;
		}
		return rc;
	}
	memset(row, 0, sizeof(*row));
	/*
	 * The kernel enters a process at e_entry with no return address
	 * (SysV ABI, process initialization), so code there is the outermost
	 * frame.  glibc 2.36's ld.so entry (RTLD_START: _start calling
	 * _dl_start, then _dl_start_user calling _dl_init, 61 bytes) has no
	 * FDE; without this, every sample taken while ld.so loads a program
	 * would end as truncated.
	 */
	row->kind = t->entry && pc - t->entry < ENTRY_CODE ? SP_CFI_ROOT : SP_CFI_NONE;
	row->start = pc;
	row->len = 1;
	return 0;
}

/* The search and compile path, out of line so that the inline cache checks stay short. */
const struct sp_cfi_row *sp_cfi_table_miss(struct sp_cfi_table *t, uint64_t pc, uint32_t slot)
{
	uint32_t pos = upper_bound(t, pc), idx;
	const struct sp_cfi_row *row;
	struct sp_cfi_row fresh;

	if (pos > 0) {
		idx = t->order[pos - 1];
		row = &t->rows[idx];
		if (pc - row->start < row->len)
			goto found;
	}
	if (compile_at(t, pc, &fresh) != 0 || insert_row(t, &fresh, pc, pos, &idx) != 0)
		return NULL;
	row = &t->rows[idx];
found:
	t->cache.slot[slot] = row;
	t->cache.last_start = row->start;
	t->cache.last_len = row->len;
	t->cache.last = row;
	return row->kind == SP_CFI_NONE ? NULL : row;
}

/* ---- the CFA expression evaluator -------------------------------------- */

/*
 * A bounded stack machine for the DWARF expression subset CFA rules use
 * (DWARF 5 §2.5.1): no branches, so it ends after expr_len steps; memory is
 * read only from the stack copy.  Relational operators compare signed
 * (§2.5.1.4).
 */
unsigned sp_cfi_eval_cfa(const struct sp_cfi_table *t, const struct sp_cfi_row *row,
			 const struct sp_regs *regs, const struct sp_stack_mem *stack, uint64_t *cfa)
{
	uint64_t st[EVAL_STACK], a, b;
	unsigned sp = 0, rc;
	const struct cfi_op *op = &t->ops[row->expr], *end = op + row->expr_len;

#define NEED(k) do { if (sp < (k)) return SP_STOP_BAD_RULE; } while (0)
#define PUSH(v) do { \
		uint64_t v_ = (v); \
		if (sp == EVAL_STACK) \
			return SP_STOP_BAD_RULE; \
		st[sp++] = v_; \
	} while (0)
	for (; op < end; op++) {
		switch (op->atom) {
		case DW_OP_breg0:
			if (!(regs->valid & (1u << op->reg)))
				return SP_STOP_BAD_RULE;
			PUSH(regs->regs[op->reg] + op->num);
			break;
		case DW_OP_lit0 ... DW_OP_lit31:
			PUSH((uint64_t)(op->atom - DW_OP_lit0));
			break;
		case DW_OP_const1u: case DW_OP_const1s: case DW_OP_const2u: case DW_OP_const2s:
		case DW_OP_const4u: case DW_OP_const4s: case DW_OP_const8u: case DW_OP_const8s:
		case DW_OP_constu: case DW_OP_consts:
			/* libdw already sign-extended the signed forms into number */
			PUSH(op->num);
			break;
		case DW_OP_dup:
			NEED(1);
			PUSH(st[sp - 1]);
			break;
		case DW_OP_over:
			NEED(2);
			PUSH(st[sp - 2]);
			break;
		case DW_OP_drop:
			NEED(1);
			sp--;
			break;
		case DW_OP_swap:
			NEED(2);
			a = st[sp - 1];
			st[sp - 1] = st[sp - 2];
			st[sp - 2] = a;
			break;
		case DW_OP_deref:
			NEED(1);
			rc = sp_stack_read(stack, st[sp - 1], &st[sp - 1]);
			if (rc)
				return rc;
			break;
		case DW_OP_plus_uconst:
			NEED(1);
			st[sp - 1] += op->num;
			break;
		case DW_OP_neg:
			NEED(1);
			st[sp - 1] = 0 - st[sp - 1];
			break;
		case DW_OP_not:
			NEED(1);
			st[sp - 1] = ~st[sp - 1];
			break;
		case DW_OP_nop:
			break;
		default:
			/* binary operators: b = second entry, a = top */
			NEED(2);
			a = st[--sp];
			b = st[sp - 1];
			switch (op->atom) {
			case DW_OP_plus: b += a; break;
			case DW_OP_minus: b -= a; break;
			case DW_OP_and: b &= a; break;
			case DW_OP_or: b |= a; break;
			case DW_OP_xor: b ^= a; break;
			/*
			 * OpenSSL's Montgomery multiplication (x86_64-mont.pl) keeps
			 * its frame at rsp + 8 + 8 * num: its CFA reads
			 * `breg7 8; breg9 0; lit8; mul; plus; deref; plus_uconst 8`.
			 * DW_OP_div is signed; both it and mod refuse 0.
			 */
			case DW_OP_mul: b *= a; break;
			case DW_OP_div:
				if (!a || ((int64_t)b == INT64_MIN && (int64_t)a == -1))
					return SP_STOP_BAD_RULE;
				b = (uint64_t)((int64_t)b / (int64_t)a);
				break;
			case DW_OP_mod:
				if (!a)
					return SP_STOP_BAD_RULE;
				b %= a;
				break;
			case DW_OP_shl: b = a >= 64 ? 0 : b << a; break;
			case DW_OP_shr: b = a >= 64 ? 0 : b >> a; break;
			case DW_OP_shra:
				b = (uint64_t)((int64_t)b >> (a >= 63 ? 63 : a));
				break;
			case DW_OP_ge: b = (int64_t)b >= (int64_t)a; break;
			case DW_OP_gt: b = (int64_t)b > (int64_t)a; break;
			case DW_OP_lt: b = (int64_t)b < (int64_t)a; break;
			case DW_OP_le: b = (int64_t)b <= (int64_t)a; break;
			case DW_OP_eq: b = b == a; break;
			case DW_OP_ne: b = b != a; break;
			default: return SP_STOP_BAD_RULE;
			}
			st[sp - 1] = b;
			break;
		}
	}
#undef NEED
#undef PUSH
	if (sp == 0)
		return SP_STOP_BAD_RULE;
	*cfa = st[sp - 1];
	return 0;
}
