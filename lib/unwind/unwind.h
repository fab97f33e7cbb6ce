/* SPDX-License-Identifier: MIT */
/*
 * lib/unwind/: from a sample's registers and copied stack to return addresses
 * (private, not installed).
 *
 * Owns: CFI rule tables compiled from .eh_frame/.debug_frame (cfi.c), the
 * DWARF unwinder over the kernel's stack copy (unwind.c), frames proven from
 * code bytes where there is no CFI (codeframe.c), the generated code of
 * live processes read for those proofs (live_jit_code.c), and the CFI JIT runtimes
 * write into their jitdumps (jitdump_cfi.c).
 * May call: util, and formats: the perf map and jitdump parsers (JIT
 * function entries, in live_jit_code.c and jitdump_cfi.c).  Never symbols, record,
 * spool or report.
 */
#ifndef SP_UNWIND_H
#define SP_UNWIND_H

#include "util/util.h"

#include <sys/types.h>

/* ---- CFI rule tables, the unwinder, code-proven frames (cfi.c, unwind.c, codeframe.c) */

/* DWARF register numbers on x86-64. */
enum {
	SP_DW_RAX = 0, SP_DW_RDX, SP_DW_RCX, SP_DW_RBX, SP_DW_RSI, SP_DW_RDI,
	SP_DW_RBP, SP_DW_RSP, SP_DW_R8, SP_DW_R9, SP_DW_R10, SP_DW_R11,
	SP_DW_R12, SP_DW_R13, SP_DW_R14, SP_DW_R15, SP_DW_RIP,
	SP_DW_NREGS
};

/* A register file in DWARF numbering; bit n of valid says regs[n] is known. */
struct sp_regs {
	uint64_t regs[SP_DW_NREGS];
	uint32_t valid;
};

/* The bytes the kernel copied: [base, base + len) of the target's stack. */
struct sp_stack_mem {
	uint64_t base; /* the sampled SP */
	const uint8_t *data;
	size_t len;    /* dyn_size, never the requested size */
};

/* Compiled CFI of one module file, shared by every process that maps it. */
struct sp_cfi_table;

/*
 * Build a lazily compiled rule table over elf's .eh_frame (and .debug_frame
 * when present).  The table keeps elf borrowed: elf must outlive it.  No
 * other compressed section of elf is ever inflated, and .debug_frame only
 * within SP_INFLATE_SECTION_MAX (and SP_INFLATE_UNTRUSTED_RUN_MAX when trust,
 * which may be NULL for root's own, says another user can influence the
 * file): the others are hidden in elf's section
 * headers (sp_elf_bound_inflation, in memory only), and *skipped (may be
 * NULL) counts a .debug_frame left unread for its size (over_limit), even
 * on failure.  Returns -SP_E_NO_CFI when the file has no usable CFI at all.
 */
int sp_cfi_table_new(Elf *elf, const struct sp_file_trust *trust, struct sp_inflate_stats *skipped,
		     struct sp_cfi_table **out);
void sp_cfi_table_free(struct sp_cfi_table *t);

/*
 * One compiled CFI row (lib/unwind/cfi.c): how to recover the caller's registers at
 * every svma in [start, start + len) (DWARF 5 §6.4.1).  kind says how the CFA
 * is found; the return address and the callee-saved registers (SysV x86-64
 * ABI §3.2.1: rbp rbx r12-r15, in that order in saved/saved_off) are at
 * CFA-relative slots.
 */
enum sp_cfi_kind {
	SP_CFI_CFA_REG,  /* CFA = regs[cfa_reg] + cfa_off (rsp+k, rbp+k, ...) */
	SP_CFI_CFA_EXPR, /* CFA = DWARF expression, expr_len ops at pool index expr */
	SP_CFI_ROOT,     /* return address undefined: outermost frame */
	SP_CFI_UCONTEXT, /* signal frame: all registers in the sigcontext gregs at regs[cfa_reg] + cfa_off */
	SP_CFI_BAD,      /* a rule the compiler does not represent */
	SP_CFI_NONE,     /* no FDE covers the range (kept so libdw is asked once) */
};
enum sp_cfi_saved_rule { SP_CFI_SAME, SP_CFI_UNDEF, SP_CFI_AT_CFA, SP_CFI_VAL_CFA };
#define SP_CFI_NSAVED 6
#define SP_CFI_F_SIGNAL 1u /* the FDE's 'S' augmentation */
#define SP_CFI_F_RA_REG 2u /* the return address is in register ra_off, not at CFA + ra_off */

struct sp_cfi_row {
	uint64_t start;
	uint32_t len;
	uint8_t kind, flags; /* enum sp_cfi_kind, SP_CFI_F_* */
	uint8_t cfa_reg, expr_len;
	union {
		int32_t cfa_off;
		uint32_t expr;
	};
	int32_t ra_off;      /* return address saved at CFA + ra_off (SP_CFI_F_RA_REG: its register) */
	uint16_t saved;      /* 2 bits (enum sp_cfi_saved_rule) per saved register */
	int16_t saved_off[SP_CFI_NSAVED];
	/*
	 * Set by a table (lib/unwind/cfi.c) on its rows: SP_CFI_CFA_REG from rsp or rbp,
	 * the return address at CFA - 8, each callee-saved register unchanged or saved at
	 * a CFA offset below the return address (CFA - 16 or lower), no flags, and not in
	 * a function that rewrites its return address slot.  The unwinder steps such rows
	 * without interpreting rules.  Rows proven from code bytes (codeframe.c) are
	 * marked by their shape alone: no table checks their return addresses.
	 */
	bool plain;
};

/* Has row the shape of a plain row (sp_cfi_row.plain), whatever function holds it? */
bool sp_cfi_row_plain_shape(const struct sp_cfi_row *row);

/*
 * The front of every struct sp_cfi_table, read by the inline lookup: the
 * row the last lookup found, with its range, and a direct-mapped cache of
 * rows keyed by a hash of the svma.  Each is checked against the row's range;
 * an empty slot holds a row whose range is empty.  Rows move as the table
 * grows: both are emptied then.
 */
#define SP_CFI_CACHE_BITS 10
struct sp_cfi_cache {
	uint64_t last_start, last_len; /* last_len 0: none */
	const struct sp_cfi_row *last;
	const struct sp_cfi_row *slot[1u << SP_CFI_CACHE_BITS];
};

static inline uint32_t sp_cfi_cache_slot(uint64_t svma)
{
	return (uint32_t)((svma * 0x9e3779b97f4a7c15ULL) >> (64 - SP_CFI_CACHE_BITS));
}

/* sp_cfi_table_lookup when neither cache holds svma: the search, and the compile on a miss. */
const struct sp_cfi_row *sp_cfi_table_miss(struct sp_cfi_table *t, uint64_t svma, uint32_t slot);

/*
 * The row covering svma, compiled from libdw on first use; NULL when no CFI
 * covers it (or memory ran out).  *hit: a cache answered.  The row is valid
 * until the next lookup in t.  A table mutates on lookup: use it from one
 * thread at a time.  Inline: the unwinder looks up a row for every frame.
 */
static inline const struct sp_cfi_row *sp_cfi_table_lookup(struct sp_cfi_table *t, uint64_t svma,
							    bool *hit)
{
	/* the cache is the table's first member (C11 6.7.2.1: a pointer to it) */
	struct sp_cfi_cache *c = (struct sp_cfi_cache *)t;
	const struct sp_cfi_row *row;

	/* unsigned wrap makes svma < start fail the range checks too */
	if (svma - c->last_start < c->last_len) {
		row = c->last;
	} else {
		uint32_t slot = sp_cfi_cache_slot(svma);

		row = c->slot[slot];
		if (svma - row->start >= row->len) {
			*hit = false;
			return sp_cfi_table_miss(t, svma, slot);
		}
		c->last_start = row->start;
		c->last_len = row->len;
		c->last = row;
	}
	*hit = true;
	return row->kind == SP_CFI_NONE ? NULL : row;
}

/*
 * Does the function at svma rewrite its own return address slot at times
 * (libgcc's _Unwind_RaiseException and kin, found by name in the file's
 * symbol tables when the table was made)?  Its return address is then
 * checked for the call before it.
 */
bool sp_cfi_table_rewrites_ra(const struct sp_cfi_table *t, uint64_t svma);
/* The CFA of a SP_CFI_CFA_EXPR row: 0, or SP_STOP_BAD_RULE / SP_STOP_STACK_EXHAUSTED. */
unsigned sp_cfi_eval_cfa(const struct sp_cfi_table *t, const struct sp_cfi_row *row,
			 const struct sp_regs *regs, const struct sp_stack_mem *stack, uint64_t *cfa);

/*
 * Read 8 bytes at addr from the stack copy: 0, SP_STOP_STACK_EXHAUSTED when
 * they reach past the copy, SP_STOP_BAD_RULE when addr is below the sampled SP.
 */
static inline unsigned sp_stack_read(const struct sp_stack_mem *s, uint64_t addr, uint64_t *v)
{
	if (addr < s->base)
		return SP_STOP_BAD_RULE;
	if (addr - s->base > s->len || s->len - (addr - s->base) < 8)
		return SP_STOP_STACK_EXHAUSTED;
	__builtin_memcpy(v, s->data + (addr - s->base), 8);
	return 0;
}

struct sp_unwind_module;
/*
 * A row for pc in module m proven from its code bytes
 * (docs/DESIGN.md, decision 4: the CFA derived from the instructions that fall through from
 * the function's entry), for modules without CFI: out filled and returned, or NULL when nothing is
 * proven.  ctx is the find callback's; after_call: pc is a return address.
 */
typedef const struct sp_cfi_row *(*sp_code_row_fn)(void *ctx, const struct sp_unwind_module *m,
						    uint64_t pc, bool after_call,
						    struct sp_cfi_row *out);

/*
 * Read len bytes of code at the absolute address addr into buf (the find
 * callback's ctx); returns how many arrived.
 */
typedef size_t (*sp_read_code_fn)(void *ctx, uint64_t addr, uint8_t *buf, size_t len);
/*
 * What a sp_read_code_fn returns when addr is mapped in no part of the live
 * process now (process_vm_readv's EFAULT in anonymous memory: generated code
 * freed since): no frame still running can return there.
 */
#define SP_READ_CODE_GONE ((size_t)-1)

/* What the unwinder needs to know about the module containing a pc. */
struct sp_unwind_module {
	uint64_t start, end;   /* runtime range */
	uint64_t load_bias;    /* svma = avma - load_bias */
	struct sp_cfi_table *cfi; /* NULL: no unwind information */
	sp_code_row_fn code_row;  /* NULL: nothing is proven from the code */
	/* NULL: its code cannot be read, so no return address into it is checked
	 * for the call before it, and frame-pointer steps from a frame that may
	 * keep no frame are not taken */
	sp_read_code_fn read_code;
};

/* Module lookup for an absolute address; NULL when unmapped. */
typedef const struct sp_unwind_module *(*sp_find_module_fn)(void *ctx, uint64_t pc);

/* Counters sp_unwind adds to (the caller zeroes them), and what it says of one stack. */
struct sp_unwind_stats {
	uint64_t frames;
	uint64_t code_frames; /* frames stepped with rows proven from code bytes */
	uint64_t rule_cache_hits, rule_cache_misses;
	uint64_t bad_returns; /* stacks cut where a failed unwind had followed a return address after no call */
	/* Set by each call, not added: */
	size_t unproven;      /* pcs[unproven..n) hang on frame-pointer steps not proven */
	uint32_t fp_steps;    /* frame-pointer steps in the frames returned */
	/*
	 * Optional, the caller's: room for SP_UNWIND_CFAS stack addresses, or
	 * NULL.  Each call then sets cfas[0..ncfas) to the CFAs of the frames
	 * it stepped through the stack copy, oldest last (their return address
	 * slots lie just below them), at most SP_UNWIND_CFAS of them.  The
	 * recorder prefetches those slots in the thread's next sample.
	 */
	uint64_t *cfas;
	size_t ncfas;
};
#define SP_UNWIND_CFAS 64

/*
 * Unwind one sample with DWARF CFI from the user registers and the copied
 * stack.  Writes at most max lookup addresses to pcs, leaf first: pcs[0] is
 * the sampled IP, later entries are return address - 1, except a frame right
 * after a signal frame, which is the interrupted IP itself, and the signal
 * frame's own entry, which is its return address (__restore_rt).  Reads only
 * stack->data.  Sets *n and *stop (enum sp_stop_reason).  Returns 0.
 *
 * Where no CFI covers a pc (and no row is proven from code bytes), it steps
 * by the frame pointer (docs/DESIGN.md, decision 3, extended: a checked
 * frame-pointer step in code without CFI), checking that each
 * frame record lies in the copy above the SP and each return address in a
 * module.  Those frames are returned only when the unwind then reaches the
 * root; when the copy runs out first and stats is given, they are returned
 * with stats->unproven = the index of the first, for the caller to prove or
 * drop (*stop STACK_EXHAUSTED).  Otherwise the stack ends, NO_UNWIND_INFO, at
 * the frame without CFI.
 *
 * An unwind that fails (UNMAPPED, BAD_RULE, NO_PROGRESS) is checked back from
 * its leaf: where a return address follows no call instruction (read with
 * the module's read_code), the frames from there on were found through a
 * slot the program rewrote, and are dropped (stats->bad_returns).
 */
int sp_unwind(const struct sp_regs *regs, const struct sp_stack_mem *stack,
	      sp_find_module_fn find, void *ctx, uint64_t *pcs, size_t max,
	      size_t *n, unsigned *stop, struct sp_unwind_stats *stats);

/*
 * The modules recent unwinds went through, most recent first, for a caller
 * that unwinds in one address space sample after sample (a recorder): the
 * next unwind finds them without calling find.  Zero it before the first
 * unwind, and again whenever a module find answered with may have changed
 * or moved, or find's ctx is another.
 */
#define SP_UNWIND_SEEN 4
struct sp_unwind_seen {
	const struct sp_unwind_module *m[SP_UNWIND_SEEN];
};

/* sp_unwind, starting from the modules in *seen and leaving there those it went through. */
int sp_unwind_seen(const struct sp_regs *regs, const struct sp_stack_mem *stack,
		   sp_find_module_fn find, void *ctx, struct sp_unwind_seen *seen, uint64_t *pcs,
		   size_t max, size_t *n, unsigned *stop, struct sp_unwind_stats *stats);

/*
 * Frames proven from code bytes (lib/unwind/codeframe.c;
 * docs/DESIGN.md, decision 4: nothing is proven past a jump or a return).
 * code[0, len) is a function's machine code from its entry; pc_off is the pc's
 * offset in it (after_call: a return address, which must follow a call).
 * Fills row (SP_CFI_CFA_REG, ra at CFA-8) from the straight-line instructions
 * before the pc and returns SP_CODEFRAME_OK, or says why nothing is proven.
 */
enum sp_codeframe_result {
	SP_CODEFRAME_OK = 0,
	SP_CODEFRAME_SHORT,      /* pc_off lies past the bytes given */
	SP_CODEFRAME_UNKNOWN,    /* an instruction the decoder does not know */
	SP_CODEFRAME_STOPPED,    /* a branch, return or untracked rsp write before the pc */
	SP_CODEFRAME_MISALIGNED, /* the pc falls inside an instruction */
	SP_CODEFRAME_NOT_CALL,   /* a return address not preceded by a call */
};
int sp_codeframe_row(const uint8_t *code, size_t len, size_t pc_off, bool after_call,
		     struct sp_cfi_row *row);
/*
 * Length of a function that runs straight from code[0] to a return with the
 * stack balanced (the CPython perf trampoline: 11 bytes); 0 when code is not
 * such a function.
 */
size_t sp_codeframe_return_end(const uint8_t *code, size_t len);

/* ---- CFI of JIT functions from a jitdump (jitdump_cfi.c) --------------- */

/*
 * The unwinding information a runtime writes into its jitdump
 * (JIT_CODE_UNWINDING_INFO before each JIT_CODE_LOAD; sp_jitdump_reader),
 * read as the file grows and compiled into CFI rows per function.
 */
struct sp_jitdump_cfi;
struct sp_jitdump_cfi_stats {
	uint64_t functions;          /* code loads read */
	uint64_t with_cfi;           /* of those, with an .eh_frame that compiled */
	uint64_t tables;             /* distinct .eh_frames compiled */
	uint64_t rows;               /* rows handed to the unwinder */
	uint64_t bad_unwinding_info; /* .eh_frames libdw refused */
	bool tables_limited;         /* more distinct .eh_frames than one process may keep */
};
/*
 * Open the jitdump at path (the target's mapping of it) after the checks of
 * sp_perf_map_open: owner is the process's effective uid (or
 * SP_PERF_MAP_OWNER_UNKNOWN), not_before_us its start (µs since the epoch,
 * 0: unknown).  Nothing is read yet.  Returns 0 and *out (the caller's to
 * free), -ENOENT when it cannot be opened, -EPERM when a check fails, -ENOMEM.
 */
int sp_jitdump_cfi_open(const char *path, int64_t owner, uint64_t not_before_us,
			struct sp_jitdump_cfi **out);
void sp_jitdump_cfi_free(struct sp_jitdump_cfi *c);
/*
 * The row at pc (after_call: a return address, looked up at pc - 1) of the
 * JIT function holding it: out, or NULL when no function with unwinding
 * information holds it (or its rule needs a DWARF expression).
 */
const struct sp_cfi_row *sp_jitdump_cfi_row(struct sp_jitdump_cfi *c, uint64_t pc,
					    bool after_call, struct sp_cfi_row *out);
/* Borrowed: lives as long as c. */
const struct sp_jitdump_cfi_stats *sp_jitdump_cfi_stats(const struct sp_jitdump_cfi *c);

/* ---- generated code of live processes (live_jit_code.c) ---------------------- */

/*
 * Generated code of one live process (lib/unwind/live_jit_code.c): function entries from
 * its perf map or from trampoline arenas, and code bytes read with
 * process_vm_readv(2) once per entry, for frames proven from code.
 */
struct sp_jit_code;
/* NULL when out of memory. */
struct sp_jit_code *sp_jit_code_new(pid_t pid);
/* Read len bytes of process pid at addr into buf (process_vm_readv(2)); how many arrived. */
size_t sp_target_read(pid_t pid, uint64_t addr, void *buf, size_t len);
void sp_jit_code_free(struct sp_jit_code *j);
/*
 * The process maps the jitdump at path (an executable mapping whose name
 * sp_jitdump_is_path accepts): its unwinding information is used from now
 * on, before any proof from code bytes.  The first jitdump of a process is
 * kept; later ones are ignored.  0, or what sp_jitdump_cfi_open returns.
 */
int sp_jit_code_use_jitdump(struct sp_jit_code *j, const char *path);
/* Was a jitdump offered to j already (whether or not it could be used)? */
bool sp_jit_code_has_jitdump(const struct sp_jit_code *j);
/* Rows the jitdump gave (frames unwound by it); 0 when there is none. */
uint64_t sp_jit_code_jitdump_rows(const struct sp_jit_code *j);
/*
 * Live perf maps this process cut at their record-time bound (8 MiB or
 * 131,072 lines, lib/unwind/live_jit_code.c): past it, their functions'
 * entries are not known while recording.
 */
uint64_t sp_jit_perf_maps_cut(void);
/*
 * Read the process's perf map now, if it has one, unpaced: an attach calls it
 * before sampling goes on, so that a map already large (up to the 8 MiB
 * bound) is parsed while no ring fills, not by the drain loop at the
 * first JIT frame.  Whether a map was read.
 */
bool sp_jit_code_read_map(struct sp_jit_code *j);
/* An executable mapping replaced [start, end): cached code there is stale. */
void sp_jit_code_invalidate(struct sp_jit_code *j, uint64_t start, uint64_t end);
/*
 * The row at pc in the anonymous mapping [start, end), proven from the code
 * between its function's entry and pc (sp_codeframe_row); out, or NULL.
 */
const struct sp_cfi_row *sp_jit_code_row(struct sp_jit_code *j, uint64_t start, uint64_t end,
					 uint64_t pc, bool after_call, struct sp_cfi_row *out);

#endif
