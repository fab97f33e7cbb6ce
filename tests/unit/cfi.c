/* SPDX-License-Identifier: MIT */
/* Unit tests for lib/unwind/cfi.c: rows compiled from real ELF files and from hand-written CFI. */
#include "live_stack.h"

#include <criterion/criterion.h>
#include <dlfcn.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define NOINL __attribute__((noinline, noclone))
#define RSP_BIT (1u << SP_DW_RSP)
#define RIP_BIT (1u << SP_DW_RIP)

/*
 * Functions with hand-written CFI (gas .cfi directives; .cfi_escape spells
 * DW_CFA_def_cfa_expression = 0x0f and DW_CFA_expression = 0x10 with their
 * DWARF expressions).  Never called: only their rows are looked up, at
 * entry + 1, after the first nop.
 */
__asm__(".text\n"
	".globl fx_bad_expr, fx_mul_cfa, fx_deref_cfa, fx_regs, fx_ra_in_reg, fx_rbp_cfa, fx_root, fx_signal\n"
	".hidden fx_bad_expr, fx_mul_cfa, fx_deref_cfa, fx_regs, fx_ra_in_reg, fx_rbp_cfa, fx_root, fx_signal\n"
	/* CFA = xderef(rsp + 8, 1): DW_OP_xderef is outside the evaluator's set */
	"fx_bad_expr: .cfi_startproc\n nop\n"
	" .cfi_escape 0x0f, 4, 0x77, 0x08, 0x31, 0x18\n nop\n ret\n .cfi_endproc\n"
	/* CFA = *(rsp + 8 + 8 * r9) + 8: OpenSSL's bn_mul_mont (x86_64-mont.pl) */
	"fx_mul_cfa: .cfi_startproc\n nop\n"
	" .cfi_escape 0x0f, 10, 0x77, 0x08, 0x79, 0x00, 0x38, 0x1e, 0x22, 0x06, 0x23, 0x08\n"
	" nop\n ret\n .cfi_endproc\n"
	/* CFA = *(rsp + 8) */
	"fx_deref_cfa: .cfi_startproc\n nop\n"
	" .cfi_escape 0x0f, 3, 0x77, 0x08, 0x06\n nop\n ret\n .cfi_endproc\n"
	/* CFA = rsp + 64; every kind of callee-saved register rule */
	"fx_regs: .cfi_startproc\n nop\n"
	" .cfi_def_cfa_offset 64\n"
	" .cfi_escape 0x10, 3, 2, 0x77, 0x08\n" /* rbx at rsp + 8 = CFA - 56 */
	" .cfi_escape 0x10, 6, 2, 0x76, 0x00\n" /* rbp at rbp + 0: not CFA based */
	" .cfi_val_offset r12, -24\n"
	" .cfi_register r13, rax\n"
	" .cfi_undefined r14\n"
	" .cfi_same_value r15\n"
	" nop\n ret\n .cfi_endproc\n"
	/* the return address in a register */
	"fx_ra_in_reg: .cfi_startproc\n nop\n .cfi_register rip, rax\n nop\n ret\n .cfi_endproc\n"
	/* a frame-pointer frame with a slot beyond int16 for rbx */
	"fx_rbp_cfa: .cfi_startproc\n nop\n"
	" .cfi_def_cfa rbp, 16\n .cfi_offset rbp, -16\n .cfi_offset rbx, -40000\n"
	" nop\n ret\n .cfi_endproc\n"
	"fx_root: .cfi_startproc\n nop\n .cfi_undefined rip\n nop\n ret\n .cfi_endproc\n"
	"fx_signal: .cfi_startproc\n .cfi_signal_frame\n nop\n nop\n ret\n .cfi_endproc\n"
	/* an epilogue inside remember/restore_state, then more body */
	".globl fx_remember, fx_remember_epi, fx_remember_body\n"
	".hidden fx_remember, fx_remember_epi, fx_remember_body\n"
	"fx_remember: .cfi_startproc\n push %rbx\n .cfi_def_cfa_offset 16\n .cfi_offset rbx, -16\n"
	" sub $8, %rsp\n .cfi_def_cfa_offset 24\n nop\n .cfi_remember_state\n"
	" add $8, %rsp\n .cfi_def_cfa_offset 16\n"
	"fx_remember_epi: pop %rbx\n .cfi_def_cfa_offset 8\n ret\n"
	" .cfi_restore_state\n"
	"fx_remember_body: nop\n nop\n nop\n add $8, %rsp\n pop %rbx\n ret\n .cfi_endproc\n");
void fx_bad_expr(void), fx_mul_cfa(void), fx_deref_cfa(void), fx_regs(void), fx_ra_in_reg(void), fx_rbp_cfa(void),
	fx_root(void), fx_signal(void), fx_remember(void), fx_remember_epi(void),
	fx_remember_body(void);

static struct ls_map map;

static void setup(void)
{
	cr_assert_eq(ls_map_load(&map), 0);
}

static void teardown(void)
{
	ls_map_free(&map);
}

TestSuite(cfi, .init = setup, .fini = teardown);

static const struct sp_cfi_row *row_at(uint64_t avma, const struct ls_module **mod_out)
{
	const struct ls_module *mod = ls_map_module(&map, avma);
	bool hit;

	cr_assert_not_null(mod, "no module maps %#lx", (unsigned long)avma);
	cr_assert_not_null(mod->um.cfi, "%s has no CFI table", mod->file->path);
	if (mod_out)
		*mod_out = mod;
	return sp_cfi_table_lookup(mod->um.cfi, avma - mod->um.load_bias, &hit);
}

static unsigned saved_rule(const struct sp_cfi_row *row, unsigned i)
{
	return (row->saved >> (2 * i)) & 3;
}

/* Saved register slots, in the row's order: rbp rbx r12 r13 r14 r15. */
enum { S_RBP, S_RBX, S_R12, S_R13, S_R14, S_R15 };

static void expect_entry_row(const struct sp_cfi_row *row, uint64_t svma)
{
	cr_assert_not_null(row);
	cr_assert_eq(row->kind, SP_CFI_CFA_REG);
	cr_assert_eq(row->cfa_reg, SP_DW_RSP);
	cr_assert_eq(row->cfa_off, 8);
	cr_assert_eq(row->ra_off, -8);
	cr_assert_eq(row->start, svma);
	cr_assert_eq(row->flags, 0);
	/* nothing pushed yet: the callee-saved registers are the caller's */
	for (unsigned i = 0; i < SP_CFI_NSAVED; i++)
		cr_assert_eq(saved_rule(row, i), SP_CFI_SAME, "saved register %u", i);
}

static NOINL int entry_probe(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

Test(cfi, function_entry_is_rsp_plus_8)
{
	const struct ls_module *mod;
	const struct sp_cfi_row *row = row_at((uintptr_t)&entry_probe, &mod);

	expect_entry_row(row, (uintptr_t)&entry_probe - mod->um.load_bias);
}

Test(cfi, libc_function_entry_is_rsp_plus_8)
{
	const struct ls_module *mod;
	uintptr_t fn = (uintptr_t)&getpid;
	const struct sp_cfi_row *row = row_at(fn, &mod);

	cr_assert(strstr(mod->file->path, "libc"), "getpid is in %s", mod->file->path);
	expect_entry_row(row, fn - mod->um.load_bias);
}

Test(cfi, start_is_root)
{
	const struct ls_module *mod = ls_map_module(&map, (uintptr_t)&entry_probe);
	GElf_Ehdr eh;
	bool hit;

	cr_assert_not_null(gelf_getehdr(mod->file->elf, &eh));
	/* e_entry is _start, whose CFI marks the return address undefined */
	const struct sp_cfi_row *row = sp_cfi_table_lookup(mod->um.cfi, eh.e_entry, &hit);
	cr_assert_not_null(row);
	cr_assert_eq(row->kind, SP_CFI_ROOT);
}

/* ld.so's entry code (glibc 2.36: no FDE) calls _dl_start and _dl_init: the outermost frame. */
Test(cfi, loader_entry_is_root)
{
	const struct ls_file *ld = NULL;
	struct sp_cfi_table *t;
	GElf_Ehdr eh;
	bool hit;

	for (size_t i = 0; i < map.nfiles; i++)
		if (strstr(map.files[i].path, "/ld-linux"))
			ld = &map.files[i];
	if (!ld)
		cr_skip_test("no ld-linux mapped (static test binary?)");
	cr_assert_not_null(gelf_getehdr(ld->elf, &eh));
	cr_assert_eq(sp_cfi_table_new(ld->elf, NULL, NULL, &t), 0);
	for (uint64_t off = 0; off < 16; off++) {
		const struct sp_cfi_row *row = sp_cfi_table_lookup(t, eh.e_entry + off, &hit);

		cr_assert_not_null(row, "entry + %lu", (unsigned long)off);
		cr_assert_eq(row->kind, SP_CFI_ROOT, "entry + %lu", (unsigned long)off);
	}
	sp_cfi_table_free(t);
}

/* Each PLT entry's row is the CFA expression; it yields rsp+8 before the push, rsp+16 after. */
static void check_plt(const struct ls_module *mod, const char *what)
{
	uint64_t size, plt = ls_section(mod, ".plt", &size);
	struct sp_stack_mem mem = { 0 };
	unsigned checked = 0;

	if (!plt || size < 32) {
		cr_log_warn("%s (%s) has no .plt entries", what, mod->file->path);
		return;
	}
	for (uint64_t e = plt + 16; e + 16 <= plt + size && checked < 64; e += 16, checked++) {
		for (unsigned off = 0; off < 16; off++) {
			struct sp_regs r = { .valid = RSP_BIT | RIP_BIT };
			bool hit;
			uint64_t cfa = 0;
			const struct sp_cfi_row *row = sp_cfi_table_lookup(mod->um.cfi, e + off, &hit);

			cr_assert_not_null(row);
			cr_assert_eq(row->kind, SP_CFI_CFA_EXPR, "%s .plt+%#lx", what,
				     (unsigned long)(e + off - plt));
			cr_assert_eq(row->ra_off, -8);
			r.regs[SP_DW_RSP] = 0x7ffff000;
			r.regs[SP_DW_RIP] = e + off + mod->um.load_bias;
			cr_assert_eq(sp_cfi_eval_cfa(mod->um.cfi, row, &r, &mem, &cfa), 0);
			cr_assert_eq(cfa, 0x7ffff000 + (off >= 11 ? 16 : 8), "%s entry offset %u", what,
				     off);
			/* rip unknown: the expression cannot be evaluated */
			r.valid = RSP_BIT;
			cr_assert_eq(sp_cfi_eval_cfa(mod->um.cfi, row, &r, &mem, &cfa),
				     SP_STOP_BAD_RULE);
		}
	}
}

Test(cfi, plt_rows_are_the_cfa_expression)
{
	check_plt(ls_map_module(&map, (uintptr_t)&entry_probe), "test binary");
	check_plt(ls_map_module(&map, (uintptr_t)&getpid), "libc");
}

Test(cfi, restore_rt_is_signal_frame)
{
	struct sigaction sa = { .sa_handler = SIG_IGN }, old;
	const struct ls_module *mod;

	cr_assert_eq(sigaction(SIGUSR2, &sa, NULL), 0);
	cr_assert_eq(sigaction(SIGUSR2, NULL, &old), 0);
	cr_assert_not_null(old.sa_restorer);
	/* the FDE starts one byte early so that a lookup at ra - 1 finds it */
	for (int d = -1; d <= 0; d++) {
		const struct sp_cfi_row *row = row_at((uintptr_t)old.sa_restorer + d, &mod);

		cr_assert_not_null(row);
		cr_assert_eq(row->kind, SP_CFI_UCONTEXT);
		cr_assert_eq(row->flags, SP_CFI_F_SIGNAL);
		cr_assert_eq(row->cfa_reg, SP_DW_RSP);
		/* offsetof(ucontext_t, uc_mcontext.gregs) */
		cr_assert_eq(row->cfa_off, 40);
	}
	signal(SIGUSR2, SIG_DFL);
}

Test(cfi, frame_pointer_body_saves_rbp)
{
	const struct sp_cfi_row *row = row_at((uintptr_t)&fx_rbp_cfa + 1, NULL);

	cr_assert_not_null(row);
	cr_assert_eq(row->kind, SP_CFI_CFA_REG);
	cr_assert_eq(row->cfa_reg, SP_DW_RBP);
	cr_assert_eq(row->cfa_off, 16);
	cr_assert_eq(row->ra_off, -8);
	cr_assert_eq(saved_rule(row, S_RBP), SP_CFI_AT_CFA);
	cr_assert_eq(row->saved_off[S_RBP], -16);
	/* a slot too far for the compact offset is unknown, not wrong */
	cr_assert_eq(saved_rule(row, S_RBX), SP_CFI_UNDEF);
}

Test(cfi, register_rules_compile)
{
	const struct sp_cfi_row *row = row_at((uintptr_t)&fx_regs + 1, NULL);

	cr_assert_not_null(row);
	cr_assert_eq(row->kind, SP_CFI_CFA_REG);
	cr_assert_eq(row->cfa_off, 64);
	cr_assert_eq(saved_rule(row, S_RBX), SP_CFI_AT_CFA);
	cr_assert_eq(row->saved_off[S_RBX], 8 - 64);
	cr_assert_eq(saved_rule(row, S_RBP), SP_CFI_UNDEF);
	cr_assert_eq(saved_rule(row, S_R12), SP_CFI_VAL_CFA);
	cr_assert_eq(row->saved_off[S_R12], -24);
	cr_assert_eq(saved_rule(row, S_R13), SP_CFI_UNDEF);
	cr_assert_eq(saved_rule(row, S_R14), SP_CFI_UNDEF);
	cr_assert_eq(saved_rule(row, S_R15), SP_CFI_SAME);
}

Test(cfi, unsupported_rules_are_bad)
{
	const struct sp_cfi_row *row = row_at((uintptr_t)&fx_bad_expr + 1, NULL);

	cr_assert_not_null(row);
	cr_assert_eq(row->kind, SP_CFI_BAD);
	/* the entry rows of the same functions are ordinary */
	row = row_at((uintptr_t)&fx_bad_expr, NULL);
	cr_assert_eq(row->kind, SP_CFI_CFA_REG);
}

/* register(R) for the return address: the row says which register holds it. */
Test(cfi, return_address_in_a_register)
{
	const struct sp_cfi_row *row = row_at((uintptr_t)&fx_ra_in_reg + 1, NULL);

	cr_assert_not_null(row);
	cr_assert_eq(row->kind, SP_CFI_CFA_REG);
	cr_assert(row->flags & SP_CFI_F_RA_REG);
	cr_assert_eq(row->ra_off, SP_DW_RAX);
	row = row_at((uintptr_t)&fx_ra_in_reg, NULL);
	cr_assert(!(row->flags & SP_CFI_F_RA_REG), "the entry row keeps it at CFA - 8");
}

/* glibc's __vfork pops its return address into rdi across the syscall. */
Test(cfi, vfork_keeps_its_return_address_in_rdi)
{
	const uint8_t *code = (const uint8_t *)(uintptr_t)&vfork;
	size_t at = code[0] == 0xf3 && code[1] == 0x0f && code[2] == 0x1e && code[3] == 0xfa ? 4 : 0;

	if (code[at] != 0x5f)
		cr_skip_test("this libc's vfork does not start with pop %%rdi");
	/* the syscall's return point: pop %rdi; mov $58,%eax; syscall */
	const struct sp_cfi_row *row = row_at((uintptr_t)code + at + 8, NULL);
	cr_assert_not_null(row);
	cr_assert_eq(row->kind, SP_CFI_CFA_REG);
	cr_assert(row->flags & SP_CFI_F_RA_REG, "vfork's row after the pop is not register(rdi)");
	cr_assert_eq(row->ra_off, SP_DW_RDI);
	cr_assert_eq(row->cfa_reg, SP_DW_RSP);
	cr_assert_eq(row->cfa_off, 0);
}

Test(cfi, deref_cfa_expression_reads_the_copy_only)
{
	const struct sp_cfi_row *row = row_at((uintptr_t)&fx_deref_cfa + 1, NULL);
	const struct ls_module *mod = ls_map_module(&map, (uintptr_t)&fx_deref_cfa);
	uint64_t stack[2] = { 0, 0x7fff1000 }, cfa = 0;
	struct sp_stack_mem mem = { 0x7fff0000, (const uint8_t *)stack, sizeof(stack) };
	struct sp_regs r = { .valid = RSP_BIT };

	cr_assert_not_null(row);
	cr_assert_eq(row->kind, SP_CFI_CFA_EXPR);
	r.regs[SP_DW_RSP] = 0x7fff0000;
	cr_assert_eq(sp_cfi_eval_cfa(mod->um.cfi, row, &r, &mem, &cfa), 0);
	cr_assert_eq(cfa, 0x7fff1000);
	/* the deref'd word lies past the bytes copied */
	mem.len = 8;
	cr_assert_eq(sp_cfi_eval_cfa(mod->um.cfi, row, &r, &mem, &cfa), SP_STOP_STACK_EXHAUSTED);
	/* below the sampled SP */
	mem.len = sizeof(stack);
	r.regs[SP_DW_RSP] = 0x7ffe0000;
	cr_assert_eq(sp_cfi_eval_cfa(mod->um.cfi, row, &r, &mem, &cfa), SP_STOP_BAD_RULE);
}

/* OpenSSL's bn_mul_mont: a CFA found through a table whose size a register holds. */
Test(cfi, multiplying_cfa_expression)
{
	const struct sp_cfi_row *row = row_at((uintptr_t)&fx_mul_cfa + 1, NULL);
	const struct ls_module *mod = ls_map_module(&map, (uintptr_t)&fx_mul_cfa);
	uint64_t stack[4] = { 0, 0, 0, 0x7fff2000 }, cfa = 0;
	struct sp_stack_mem mem = { 0x7fff0000, (const uint8_t *)stack, sizeof(stack) };
	struct sp_regs r = { .valid = RSP_BIT | 1u << SP_DW_R9 };

	cr_assert_not_null(row);
	cr_assert_eq(row->kind, SP_CFI_CFA_EXPR);
	r.regs[SP_DW_RSP] = 0x7fff0000;
	r.regs[SP_DW_R9] = 2; /* words: the frame pointer is saved at rsp + 8 + 16 */
	cr_assert_eq(sp_cfi_eval_cfa(mod->um.cfi, row, &r, &mem, &cfa), 0);
	cr_assert_eq(cfa, 0x7fff2008);
	/* r9 not sampled: no guess */
	r.valid = RSP_BIT;
	cr_assert_eq(sp_cfi_eval_cfa(mod->um.cfi, row, &r, &mem, &cfa), SP_STOP_BAD_RULE);
}

Test(cfi, hand_written_root_and_signal)
{
	const struct sp_cfi_row *row = row_at((uintptr_t)&fx_root + 1, NULL);

	cr_assert_eq(row->kind, SP_CFI_ROOT);
	/* an 'S' FDE without a sigcontext layout compiles like any other row */
	row = row_at((uintptr_t)&fx_signal + 1, NULL);
	cr_assert_eq(row->kind, SP_CFI_CFA_REG);
	cr_assert_eq(row->flags, SP_CFI_F_SIGNAL);
}

/*
 * libdw reports the row after DW_CFA_restore_state as starting at the
 * remember_state: compiled first, it must not cover the epilogue between.
 */
Test(cfi, restore_state_row_does_not_cover_epilogue)
{
	const struct ls_module *mod = ls_map_module(&map, (uintptr_t)&fx_remember);
	uint64_t bias = mod->um.load_bias;
	struct sp_cfi_table *t;
	const struct sp_cfi_row *row;
	bool hit;

	cr_assert_eq(sp_cfi_table_new(mod->file->elf, NULL, NULL, &t), 0);
	row = sp_cfi_table_lookup(t, (uintptr_t)&fx_remember_body + 1 - bias, &hit);
	cr_assert_not_null(row);
	cr_assert_eq(row->cfa_off, 24);
	cr_assert_eq(row->start, (uintptr_t)&fx_remember_body - bias);
	row = sp_cfi_table_lookup(t, (uintptr_t)&fx_remember_epi - bias, &hit);
	cr_assert_not_null(row);
	cr_assert_eq(row->cfa_off, 16);
	row = sp_cfi_table_lookup(t, (uintptr_t)&fx_remember_epi + 1 - bias, &hit);
	cr_assert_not_null(row);
	cr_assert_eq(row->cfa_off, 8);
	row = sp_cfi_table_lookup(t, (uintptr_t)&fx_remember_epi - 1 - bias, &hit);
	cr_assert_not_null(row);
	cr_assert_eq(row->cfa_off, 24);
	sp_cfi_table_free(t);
}

Test(cfi, rows_are_cached)
{
	const struct ls_module *mod = ls_map_module(&map, (uintptr_t)&fx_regs);
	uint64_t svma = (uintptr_t)&fx_regs + 1 - mod->um.load_bias;
	const struct sp_cfi_row *a, *b;
	struct sp_cfi_row copy;
	bool hit;

	a = sp_cfi_table_lookup(mod->um.cfi, svma, &hit);
	cr_assert_not_null(a);
	cr_assert_not(hit);
	copy = *a;
	b = sp_cfi_table_lookup(mod->um.cfi, svma, &hit);
	cr_assert(hit);
	cr_assert_eq(a, b);
	/* another pc of the same row comes from the table, not from libdw again */
	b = sp_cfi_table_lookup(mod->um.cfi, svma + 1, &hit);
	cr_assert_not_null(b);
	cr_assert_arr_eq(&copy, b, sizeof(copy));
	cr_assert_leq(copy.start, svma);
	cr_assert_gt(copy.start + copy.len, svma + 1);
}

Test(cfi, address_without_fde_has_no_row)
{
	const struct ls_module *mod = ls_map_module(&map, (uintptr_t)&entry_probe);
	bool hit;

	/* svma 0 is the ELF header: no FDE; the miss is remembered */
	cr_assert_null(sp_cfi_table_lookup(mod->um.cfi, 0, &hit));
	cr_assert_not(hit);
	cr_assert_null(sp_cfi_table_lookup(mod->um.cfi, 0, &hit));
	cr_assert(hit);
}

Test(cfi, file_without_cfi_is_refused)
{
	Elf64_Ehdr eh = { 0 };
	struct sp_cfi_table *t = NULL;
	Elf *elf;

	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_DYN;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_ehsize = sizeof(eh);
	sp_elf_init();
	elf = elf_memory((char *)&eh, sizeof(eh));
	cr_assert_not_null(elf);
	cr_assert_eq(sp_cfi_table_new(elf, NULL, NULL, &t), -SP_E_NO_CFI);
	cr_assert_null(t);
	elf_end(elf);

	eh.e_machine = EM_AARCH64;
	elf = elf_memory((char *)&eh, sizeof(eh));
	cr_assert_eq(sp_cfi_table_new(elf, NULL, NULL, &t), -SP_E_ELF_MALFORMED);
	elf_end(elf);
	sp_cfi_table_free(NULL);
}

/*
 * Build DIR/d.so from source with the C compiler: -g, no .eh_frame, so its
 * CFI is a .debug_frame (extra: more flags).  DIR is a template made here;
 * src and so receive the paths (64 bytes each).  false when no compiler
 * could (DIR removed again).
 */
static bool build_debug_frame_so(char *dir, char *src, char *so, const char *source,
				 const char *extra)
{
	char cmd[512];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(src, 64, "%s/d.c", dir);
	snprintf(so, 64, "%s/d.so", dir);
	FILE *fp = fopen(src, "w");
	cr_assert_not_null(fp);
	fputs(source, fp);
	fclose(fp);
	snprintf(cmd, sizeof(cmd),
		 "cc -shared -fPIC -nostdlib -O0 -g %s -fno-asynchronous-unwind-tables "
		 "-fno-unwind-tables -o %s %s 2>/dev/null",
		 extra, so, src);
	if (system(cmd) == 0)
		return true;
	unlink(src);
	rmdir(dir);
	return false;
}

/*
 * .debug_frame: no file on this system carries one, so build a small shared
 * object with the C compiler when there is one (skip otherwise).
 */
Test(cfi, reads_debug_frame)
{
	char dir[] = "/tmp/sp-cfi-XXXXXX", src[64], so[64];
	struct sp_cfi_table *t = NULL;
	struct ls_file *f;
	struct ls_map m = { 0 };
	bool hit;

	if (!build_debug_frame_so(dir, src, so,
				  "int leaf(int x) { return x * 3; }\n"
				  "int outer(int x) { volatile int a[4] = {x}; return leaf(a[0]) + 1; }\n",
				  ""))
		cr_skip_test("no C compiler to build a .debug_frame fixture");
	f = ls_file_get(&m, so);
	cr_assert_not_null(f);
	cr_assert_not_null(f->cfi, "table over .debug_frame");
	t = f->cfi;

	/* find outer's svma in .symtab */
	uint64_t outer = 0;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(f->elf, scn)) != NULL) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;
			if (gelf_getsym(d, (int)i, &s) &&
			    (n = elf_strptr(f->elf, sh.sh_link, s.st_name)) && !strcmp(n, "outer"))
				outer = s.st_value;
		}
	}
	cr_assert_neq(outer, 0);
	const struct sp_cfi_row *row = sp_cfi_table_lookup(t, outer, &hit);
	cr_assert_not_null(row);
	cr_assert_eq(row->kind, SP_CFI_CFA_REG);
	cr_assert_eq(row->cfa_reg, SP_DW_RSP);
	cr_assert_eq(row->cfa_off, 8);
	/* -O0: after push rbp; mov rsp, rbp the CFA is rbp + 16 */
	row = sp_cfi_table_lookup(t, outer + 8, &hit);
	cr_assert_not_null(row);
	cr_assert_eq(row->kind, SP_CFI_CFA_REG);
	cr_assert_eq(row->cfa_reg, SP_DW_RBP);
	cr_assert_eq(row->cfa_off, 16);
	cr_assert_eq(saved_rule(row, S_RBP), SP_CFI_AT_CFA);
	cr_assert_eq(row->saved_off[S_RBP], -16);

	ls_map_free(&m);
	unlink(so);
	unlink(src);
	rmdir(dir);
}

/* The header of the section named name in elf, and the section. */
static Elf_Scn *named_section(Elf *elf, const char *name, GElf_Shdr *sh)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	cr_assert_eq(elf_getshdrstrndx(elf, &shstrndx), 0);
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		const char *n;
		if (gelf_getshdr(scn, sh) && (n = elf_strptr(elf, shstrndx, sh->sh_name)) &&
		    !strcmp(n, name))
			return scn;
	}
	return NULL;
}

/*
 * clang -gz and gcc -gz compress .debug_frame with the rest of the DWARF:
 * the table reads it, while the other compressed sections are hidden from
 * libdw, never inflated on the recorder's path; a .debug_frame claiming
 * more than SP_INFLATE_SECTION_MAX is not read at all, and counted.
 */
Test(cfi, compressed_debug_frame_within_the_bound_only)
{
	char dir[] = "/tmp/sp-cfi-XXXXXX", src[64], so[64];
	struct sp_cfi_table *t = NULL;
	struct sp_inflate_stats st;
	GElf_Shdr sh;
	bool hit;

	if (!build_debug_frame_so(dir, src, so, "int leaf(int x) { return x * 3; }\n", "-gz=zlib"))
		cr_skip_test("no C compiler with -gz=zlib to build a compressed .debug_frame");
	int fd = open(so, O_RDWR);
	cr_assert_geq(fd, 0);
	sp_elf_init();
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	cr_assert_not_null(elf);
	Elf_Scn *frame = named_section(elf, ".debug_frame", &sh);
	if (!frame || !(sh.sh_flags & SHF_COMPRESSED)) {
		elf_end(elf);
		close(fd);
		unlink(so);
		unlink(src);
		rmdir(dir);
		cr_skip_test("the toolchain left .debug_frame uncompressed with -gz=zlib");
	}
	off_t chdr_at = (off_t)sh.sh_offset;
	cr_assert_eq(sp_cfi_table_new(elf, NULL, &st, &t), 0);
	cr_assert_eq(st.over_limit, 0);
	cr_assert_eq(st.kept, 1);
	cr_assert_gt(st.unwanted, 0, "the compressed .debug_info and others");
	cr_assert_not_null(named_section(elf, ".debug_info", &sh));
	cr_assert_eq(sh.sh_type, SHT_NOBITS, ".debug_info hidden from libdw");
	uint64_t leaf = 0;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;
			if (gelf_getsym(d, (int)i, &s) &&
			    (n = elf_strptr(elf, sh.sh_link, s.st_name)) && !strcmp(n, "leaf"))
				leaf = s.st_value;
		}
	}
	cr_assert_neq(leaf, 0);
	const struct sp_cfi_row *row = sp_cfi_table_lookup(t, leaf, &hit);
	cr_assert_not_null(row, "leaf's row from the compressed .debug_frame");
	cr_assert_eq(row->kind, SP_CFI_CFA_REG);
	cr_assert_eq(row->cfa_reg, SP_DW_RSP);
	cr_assert_eq(row->cfa_off, 8);
	sp_cfi_table_free(t);
	elf_end(elf);

	/* The same file whose .debug_frame claims 512 MiB (Elf64_Chdr.ch_size). */
	uint64_t claim = (uint64_t)512 << 20;
	cr_assert_eq(pwrite(fd, &claim, sizeof(claim), chdr_at + 8), (ssize_t)sizeof(claim));
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	cr_assert_not_null(elf);
	t = NULL;
	cr_assert_eq(sp_cfi_table_new(elf, NULL, &st, &t), -SP_E_NO_CFI);
	cr_assert_null(t);
	cr_assert_eq(st.over_limit, 1);
	cr_assert_eq(st.over_limit_bytes, claim);
	cr_assert_not_null(named_section(elf, ".debug_frame", &sh));
	cr_assert_eq(sh.sh_type, SHT_NOBITS);
	elf_end(elf);
	close(fd);
	unlink(so);
	unlink(src);
	rmdir(dir);
}

/*
 * libgcc's _Unwind_RaiseException rewrites its own return address slot
 * before it jumps to a handler: its table marks it, found by name, and
 * marks no other function (_Unwind_GetIP).
 */
Test(cfi, libgcc_marks_the_functions_that_rewrite_their_return_address)
{
	void *h = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		cr_skip_test("libgcc_s.so.1 cannot be loaded: %s", dlerror());
	void *raise = dlsym(h, "_Unwind_RaiseException"), *getip = dlsym(h, "_Unwind_GetIP");
	cr_assert(raise && getip);
	ls_map_free(&map);
	cr_assert_eq(ls_map_load(&map), 0);
	const struct ls_module *mod = ls_map_module(&map, (uintptr_t)raise);
	cr_assert_not_null(mod);
	cr_assert_not_null(mod->um.cfi);
	cr_assert(sp_cfi_table_rewrites_ra(mod->um.cfi, (uintptr_t)raise + 16 - mod->um.load_bias));
	cr_assert(!sp_cfi_table_rewrites_ra(mod->um.cfi, (uintptr_t)getip - mod->um.load_bias));
	dlclose(h);
}
