/* SPDX-License-Identifier: MIT */
/*
 * Plain CFI rows (lib/unwind/cfi.c) and the unwinder's runs of them
 * (lib/unwind/unwind.c, included here for its static parts): which rows are
 * plain, the table's caches at row edges, and the runs against the general
 * step on hand-made frames, on live stacks sampled at arbitrary instructions
 * and on those stacks damaged at random.
 */
#include "live_stack.h"

#include "../../lib/unwind/unwind.c"

#include <criterion/criterion.h>

#define MAXF 256
#define CAP 32768

static struct ls_map map;

static void setup(void)
{
	cr_assert_eq(ls_map_load(&map), 0);
	cr_assert_gt(map.nmods, 0);
}

static void teardown(void)
{
	ls_map_free(&map);
}

TestSuite(plain, .init = setup, .fini = teardown);

/*
 * Hand-written CFI, never called.  pl_fn keeps a frame pointer and saves
 * rbx; its epilogue's rows still say "rbx at CFA-24" and "rbp at CFA-16"
 * after the pops, as GCC writes them.  The others hold one row each that
 * must not be plain.
 */
__asm__(".text\n"
	".globl pl_fn, pl_fn_pushed, pl_fn_framed, pl_fn_body, pl_fn_epi, pl_fn_end\n"
	".hidden pl_fn, pl_fn_pushed, pl_fn_framed, pl_fn_body, pl_fn_epi, pl_fn_end\n"
	"pl_fn: .cfi_startproc\n push %rbp\n .cfi_def_cfa_offset 16\n .cfi_offset rbp, -16\n"
	"pl_fn_pushed: mov %rsp, %rbp\n .cfi_def_cfa_register rbp\n"
	"pl_fn_framed: push %rbx\n .cfi_offset rbx, -24\n"
	"pl_fn_body: nop\n pop %rbx\n"
	"pl_fn_epi: pop %rbp\n .cfi_def_cfa rsp, 8\n"
	"pl_fn_end: ret\n .cfi_endproc\n"
	".globl pl_undef, pl_val, pl_ra_reg, pl_ra_off, pl_cfa_r12, pl_signal, pl_far\n"
	".hidden pl_undef, pl_val, pl_ra_reg, pl_ra_off, pl_cfa_r12, pl_signal, pl_far\n"
	"pl_undef: .cfi_startproc\n nop\n .cfi_undefined r12\n nop\n ret\n .cfi_endproc\n"
	"pl_val: .cfi_startproc\n nop\n .cfi_val_offset rbx, -16\n nop\n ret\n .cfi_endproc\n"
	"pl_ra_reg: .cfi_startproc\n nop\n .cfi_register rip, rax\n nop\n ret\n .cfi_endproc\n"
	"pl_ra_off: .cfi_startproc\n nop\n .cfi_offset rip, -16\n nop\n ret\n .cfi_endproc\n"
	"pl_cfa_r12: .cfi_startproc\n nop\n .cfi_def_cfa r12, 8\n nop\n ret\n .cfi_endproc\n"
	"pl_signal: .cfi_startproc\n .cfi_signal_frame\n nop\n ret\n .cfi_endproc\n"
	/* rbx's slot does not fit the row's 16-bit offsets: undefined */
	"pl_far: .cfi_startproc\n nop\n .cfi_offset rbx, -40000\n nop\n ret\n .cfi_endproc\n"
	/* a caller below its callee */
	".globl pl_caller, pl_caller_ret, pl_callee\n .hidden pl_caller, pl_caller_ret, pl_callee\n"
	"pl_caller: .cfi_startproc\n call pl_callee\n"
	"pl_caller_ret: ret\n .cfi_endproc\n"
	"pl_callee: .cfi_startproc\n nop\n ret\n .cfi_endproc\n");
void pl_fn(void), pl_fn_pushed(void), pl_fn_framed(void), pl_fn_body(void), pl_fn_epi(void),
	pl_fn_end(void), pl_undef(void), pl_val(void), pl_ra_reg(void), pl_ra_off(void),
	pl_cfa_r12(void), pl_signal(void), pl_far(void), pl_caller(void), pl_caller_ret(void),
	pl_callee(void);

static const struct sp_cfi_row *row_at(uint64_t pc)
{
	const struct ls_module *mod = ls_map_module(&map, pc);
	bool hit;

	cr_assert_not_null(mod);
	cr_assert_not_null(mod->um.cfi);
	return sp_cfi_table_lookup(mod->um.cfi, pc - mod->um.load_bias, &hit);
}

static unsigned rule(const struct sp_cfi_row *row, unsigned i)
{
	return (row->saved >> (2 * i)) & 3;
}

Test(plain, rows_of_a_frame_pointer_function)
{
	/* what each instruction's row says: the CFA, and the registers saved (index, offset) */
	static const struct {
		void (*at)(void);
		uint8_t cfa_reg;
		int32_t cfa_off;
		uint16_t saved; /* 2 bits per register, as sp_cfi_row.saved */
		int16_t rbp_off, rbx_off;
	} want[] = {
		{ pl_fn, SP_DW_RSP, 8, 0, 0, 0 },                      /* the first instruction */
		{ pl_fn_pushed, SP_DW_RSP, 16, SP_CFI_AT_CFA, -16, 0 }, /* rbp pushed */
		{ pl_fn_body, SP_DW_RBP, 16, SP_CFI_AT_CFA | SP_CFI_AT_CFA << 2, -16, -24 },
		/* after the epilogue's pops, the slots as GCC leaves them */
		{ pl_fn_end, SP_DW_RSP, 8, SP_CFI_AT_CFA | SP_CFI_AT_CFA << 2, -16, -24 },
	};

	for (size_t i = 0; i < SP_ARRAY_SIZE(want); i++) {
		const struct sp_cfi_row *row = row_at((uintptr_t)want[i].at);

		cr_assert(row && row->plain, "row %zu", i);
		cr_assert_eq(row->cfa_reg, want[i].cfa_reg, "row %zu", i);
		cr_assert_eq(row->cfa_off, want[i].cfa_off, "row %zu", i);
		cr_assert_eq(row->saved, want[i].saved, "row %zu: saved %#x", i, row->saved);
		if (rule(row, 0) == SP_CFI_AT_CFA)
			cr_assert_eq(row->saved_off[0], want[i].rbp_off, "row %zu", i);
		if (rule(row, 1) == SP_CFI_AT_CFA)
			cr_assert_eq(row->saved_off[1], want[i].rbx_off, "row %zu", i);
	}
}

Test(plain, other_shapes_are_not_plain)
{
	void (*const fns[])(void) = { pl_undef, pl_val, pl_ra_reg, pl_ra_off, pl_cfa_r12, pl_far };

	for (size_t i = 0; i < SP_ARRAY_SIZE(fns); i++) {
		/* the first instruction is plain, the row after the directive not */
		const struct sp_cfi_row *row = row_at((uintptr_t)fns[i]);
		cr_assert(row && row->plain, "function %zu, entry", i);
		row = row_at((uintptr_t)fns[i] + 1);
		cr_assert(row && !row->plain, "function %zu after its directive", i);
	}
	cr_assert(!row_at((uintptr_t)&pl_signal)->plain);
}

/* glibc's __restore_rt (the signal trampoline): a signal frame, never plain. */
Test(plain, signal_trampoline_is_not_plain)
{
	struct sigaction sa = { .sa_handler = SIG_IGN }, old;

	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGUSR2, &sa, &old), 0);
	cr_assert_eq(sigaction(SIGUSR2, &old, &sa), 0);
	if (!sa.sa_restorer)
		cr_skip_test("no sa_restorer");
	const struct sp_cfi_row *row = row_at((uintptr_t)sa.sa_restorer);
	cr_assert(row && (row->flags & SP_CFI_F_SIGNAL) && !row->plain);
}

/* The last-hit cache answers inside its row only: a row's last byte, then the next row's first. */
Test(plain, lookups_at_row_edges)
{
	const struct ls_module *mod = ls_map_module(&map, (uintptr_t)&pl_fn);
	struct sp_cfi_table *t = mod->um.cfi;
	uint64_t pushed = (uintptr_t)&pl_fn_pushed - mod->um.load_bias;
	uint64_t framed = (uintptr_t)&pl_fn_framed - mod->um.load_bias;
	const struct sp_cfi_row *a, *b, *c;
	struct sp_cfi_row first;
	bool hit;

	a = sp_cfi_table_lookup(t, pushed, &hit);
	cr_assert_not_null(a);
	first = *a;
	cr_assert_eq(first.start + first.len, framed, "the row of mov %%rsp, %%rbp ends at the push");
	b = sp_cfi_table_lookup(t, framed - 1, &hit);
	cr_assert(hit, "the last-hit row answers its own last byte");
	cr_assert_eq(b->start, first.start);
	c = sp_cfi_table_lookup(t, framed, &hit);
	cr_assert_not_null(c);
	cr_assert_eq(c->start, framed);
	cr_assert_eq(c->cfa_reg, SP_DW_RBP);
	b = sp_cfi_table_lookup(t, framed - 1, &hit);
	cr_assert_eq(b->start, first.start);
	cr_assert_eq(b->cfa_reg, SP_DW_RSP);
	/* below the function: another row, never this one */
	b = sp_cfi_table_lookup(t, (uintptr_t)&pl_fn - mod->um.load_bias, &hit);
	cr_assert_lt(b->start + b->len, framed);
}

/*
 * Rows compiled while the table grows (its rows move) are found again, the
 * same, through the caches or the search.
 */
Test(plain, caches_follow_the_rows_as_the_table_grows)
{
	const struct ls_module *libc = ls_map_module(&map, (uintptr_t)&strlen);
	struct sp_cfi_table *t;
	static uint64_t svma[3000];
	static struct sp_cfi_row seen[3000];
	bool hit;

	cr_assert_not_null(libc);
	cr_assert_eq(sp_cfi_table_new(libc->file->elf, NULL, NULL, &t), 0);
	uint64_t lo = libc->um.start - libc->um.load_bias, span = libc->um.end - libc->um.start;
	for (size_t i = 0; i < SP_ARRAY_SIZE(svma); i++) {
		svma[i] = lo + (i * 7919 * 64 + i) % span;
		const struct sp_cfi_row *row = sp_cfi_table_lookup(t, svma[i], &hit);
		memset(&seen[i], 0, sizeof(seen[i]));
		if (row)
			seen[i] = *row;
	}
	for (size_t pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < SP_ARRAY_SIZE(svma); i++) {
			const struct sp_cfi_row *row = sp_cfi_table_lookup(t, svma[i], &hit);
			cr_assert_eq(row != NULL, seen[i].len != 0, "lookup %zu", i);
			if (row)
				cr_assert_eq(memcmp(row, &seen[i], sizeof(*row)), 0, "lookup %zu", i);
		}
	sp_cfi_table_free(t);
}

/* ---- the runs against step() ----------------------------------------- */

static void expect_same_regs(const struct sp_regs *a, const struct sp_regs *b, const char *what)
{
	cr_assert_eq(a->valid, b->valid, "%s: valid %#x against %#x", what, a->valid, b->valid);
	for (unsigned i = 0; i < SP_DW_NREGS; i++)
		if (a->valid & BIT(i))
			cr_assert_eq(a->regs[i], b->regs[i], "%s: register %u", what, i);
}

/*
 * One step of a plain row by plain_run (its frame limit reached right after
 * it) and by step(): the same result, and the same registers when the step
 * was taken and the unwind goes on (after a stop, ROOT among them, a run
 * leaves the registers other than rsp, rbp and rip unread: no one reads
 * them).  Returns the result.
 */
static unsigned one_step_both(const struct sp_unwind_module *m, const struct sp_cfi_row *row,
			      const struct sp_regs *r, const struct sp_stack_mem *stack,
			      struct sp_regs *after, const char *what)
{
	struct sp_regs ra = *r, rb = *r;
	uint64_t pcs[1];
	struct walk w = { .find = ls_find, .ctx = &map, .stack = stack, .pcs = pcs, .k = 1, .max = 1 };
	const struct sp_unwind_module *wm = m;
	const struct sp_cfi_row *wrow = row;
	bool looked = false;

	cr_assert(row->plain && stack->len >= 8);
	unsigned a = step(m->cfi, row, &ra, stack);
	unsigned b = plain_run(&w, &wm, &wrow, &looked, &rb);
	cr_assert_eq(a, b, "%s: step %s, run %s", what, sp_stop_reason_name(a),
		     sp_stop_reason_name(b));
	cr_assert_eq(w.k, 1);
	cr_assert(!looked);
	if (a == CONTINUE)
		expect_same_regs(&ra, &rb, what);
	if (a == SP_STOP_ROOT) {
		cr_assert_eq(ra.regs[SP_DW_RSP], rb.regs[SP_DW_RSP], "%s", what);
		cr_assert_eq(ra.regs[SP_DW_RIP], rb.regs[SP_DW_RIP], "%s", what);
		cr_assert_eq(ra.valid & BIT(SP_DW_RBP), rb.valid & BIT(SP_DW_RBP), "%s", what);
		if (ra.valid & BIT(SP_DW_RBP))
			cr_assert_eq(ra.regs[SP_DW_RBP], rb.regs[SP_DW_RBP], "%s", what);
	}
	if (after)
		*after = ra;
	return a;
}

static const struct sp_unwind_module *module_of(uint64_t pc)
{
	const struct sp_unwind_module *m = ls_find(&map, pc);

	cr_assert(m && m->cfi);
	return m;
}

/* The frames of pl_fn as each instruction finds them, stepped both ways. */
Test(plain, steps_through_hand_made_frames)
{
	const struct sp_unwind_module *m = module_of((uintptr_t)&pl_fn);
	uint64_t stack[4] = { 0x1111, 0x2222, 0, 0x4444 };
	struct sp_stack_mem mem = { (uintptr_t)stack, (const uint8_t *)stack, sizeof(stack) };
	struct sp_regs r = { .valid = BIT(SP_DW_RSP) | BIT(SP_DW_RBP) | BIT(SP_DW_RBX) };
	struct sp_regs after;

	/* in the body: [rsp] = saved rbx, then saved rbp, then the return address (0: root) */
	r.regs[SP_DW_RSP] = (uintptr_t)&stack[0];
	r.regs[SP_DW_RBP] = (uintptr_t)&stack[1];
	r.regs[SP_DW_RBX] = 0x9999;
	cr_assert_eq(one_step_both(m, row_at((uintptr_t)&pl_fn_body), &r, &mem, &after, "body"),
		     SP_STOP_ROOT);
	cr_assert_eq(after.regs[SP_DW_RSP], (uintptr_t)&stack[3]);
	cr_assert_eq(after.regs[SP_DW_RBX], 0x1111);
	cr_assert_eq(after.regs[SP_DW_RBP], 0x2222);

	/* the CFA from rbp, which is not known: no step */
	r.valid &= ~BIT(SP_DW_RBP);
	cr_assert_eq(one_step_both(m, row_at((uintptr_t)&pl_fn_body), &r, &mem, NULL, "no rbp"),
		     SP_STOP_BAD_RULE);
	r.valid |= BIT(SP_DW_RBP);

	/* after `pop %rbx`: its slot lies below the SP, rbx holds its value already */
	r.regs[SP_DW_RSP] = (uintptr_t)&stack[1];
	cr_assert_eq(one_step_both(m, row_at((uintptr_t)&pl_fn_epi), &r, &mem, &after, "epilogue"),
		     SP_STOP_ROOT);
	cr_assert_eq(after.regs[SP_DW_RBX], 0x9999);
	cr_assert_eq(after.regs[SP_DW_RBP], 0x2222);

	/* at the ret: rbp popped too; at the first instruction: nothing saved yet */
	r.regs[SP_DW_RSP] = (uintptr_t)&stack[2];
	r.regs[SP_DW_RBP] = 0x7777;
	cr_assert_eq(one_step_both(m, row_at((uintptr_t)&pl_fn_end), &r, &mem, &after, "ret"),
		     SP_STOP_ROOT);
	cr_assert_eq(after.regs[SP_DW_RBP], 0x7777);
	cr_assert_eq(one_step_both(m, row_at((uintptr_t)&pl_fn), &r, &mem, &after, "entry"),
		     SP_STOP_ROOT);
	cr_assert_eq(after.regs[SP_DW_RSP], (uintptr_t)&stack[3]);
	cr_assert_eq(after.valid, BIT(SP_DW_RSP) | BIT(SP_DW_RBP) | BIT(SP_DW_RBX) |
					  BIT(SP_DW_RIP));

	/* rbx unknown stays unknown where the row keeps it */
	r.valid &= ~BIT(SP_DW_RBX);
	one_step_both(m, row_at((uintptr_t)&pl_fn), &r, &mem, &after, "entry, no rbx");
	cr_assert(!(after.valid & BIT(SP_DW_RBX)));

	/* the return address slot past the copy, then below the SP */
	mem.len = 16;
	cr_assert_eq(one_step_both(m, row_at((uintptr_t)&pl_fn), &r, &mem, NULL, "short"),
		     SP_STOP_STACK_EXHAUSTED);
	mem.len = sizeof(stack);
	r.regs[SP_DW_RSP] = (uintptr_t)&stack[3];
	r.regs[SP_DW_RBP] = (uintptr_t)&stack[0];
	r.valid |= BIT(SP_DW_RBP);
	cr_assert_eq(one_step_both(m, row_at((uintptr_t)&pl_fn_body), &r, &mem, NULL, "going back"),
		     SP_STOP_NO_PROGRESS);
	/* the whole frame in the copy, the caller's return address not 0 */
	r.regs[SP_DW_RSP] = (uintptr_t)&stack[0];
	r.regs[SP_DW_RBP] = (uintptr_t)&stack[1];
	mem.len = 24;
	stack[2] = 0x5555;
	cr_assert_eq(one_step_both(m, row_at((uintptr_t)&pl_fn_body), &r, &mem, NULL, "whole frame"),
		     CONTINUE);
	/* the copy begins above the SP: rbx's slot lies below it */
	mem.base = (uintptr_t)&stack[1];
	mem.data = (const uint8_t *)&stack[1];
	mem.len = 16;
	cr_assert_eq(one_step_both(m, row_at((uintptr_t)&pl_fn_body), &r, &mem, NULL, "below"),
		     SP_STOP_BAD_RULE);
}

/* ---- whole stacks, both ways ----------------------------------------- */

struct result {
	uint64_t pcs[MAXF];
	size_t n;
	unsigned stop;
	struct sp_unwind_stats st;
	uint64_t cfas[SP_UNWIND_CFAS];
};

static void unwind_with(bool runs, const struct sp_regs *regs, const struct sp_stack_mem *mem,
			sp_find_module_fn find, void *ctx, size_t max, struct result *out)
{
	memset(out, 0, sizeof(*out));
	out->st.cfas = out->cfas;
	plain_runs_off = !runs;
	cr_assert_eq(sp_unwind(regs, mem, find, ctx, out->pcs, max, &out->n, &out->stop, &out->st),
		     0);
	plain_runs_off = false;
}

static uint64_t plain_frames, all_frames;

/*
 * Unwind with the runs and without: the same frames, stop reason and
 * counters (the caches are warm the second time: only the lookups' total).
 */
static void expect_both_ways(const struct sp_regs *regs, const struct sp_stack_mem *mem,
			     sp_find_module_fn find, void *ctx, size_t max, const char *what)
{
	static struct result a, b;

	unwind_with(true, regs, mem, find, ctx, max, &a);
	unwind_with(false, regs, mem, find, ctx, max, &b);
	cr_assert_eq(a.n, b.n, "%s: %zu frames with runs, %zu without", what, a.n, b.n);
	cr_assert_eq(a.stop, b.stop, "%s: %s with runs, %s without", what,
		     sp_stop_reason_name(a.stop), sp_stop_reason_name(b.stop));
	cr_assert_eq(memcmp(a.pcs, b.pcs, a.n * sizeof(a.pcs[0])), 0, "%s: frames differ", what);
	cr_assert_eq(a.st.frames, b.st.frames);
	cr_assert_eq(a.st.code_frames, b.st.code_frames);
	cr_assert_eq(a.st.bad_returns, b.st.bad_returns);
	cr_assert_eq(a.st.unproven, b.st.unproven);
	cr_assert_eq(a.st.fp_steps, b.st.fp_steps);
	cr_assert_eq(a.st.ncfas, b.st.ncfas, "%s: %zu CFAs with runs, %zu without", what,
		     a.st.ncfas, b.st.ncfas);
	cr_assert_eq(memcmp(a.cfas, b.cfas, a.st.ncfas * sizeof(a.cfas[0])), 0, "%s: CFAs differ",
		     what);
	cr_assert_eq(a.st.rule_cache_hits + a.st.rule_cache_misses,
		     b.st.rule_cache_hits + b.st.rule_cache_misses, "%s: lookups", what);
}

/*
 * Walk the stack with step() alone, and at every frame with a plain row
 * take that step with plain_run too: the same registers all along.
 */
static void expect_same_steps(const struct sp_regs *regs, const struct sp_stack_mem *mem,
			      const char *what)
{
	struct sp_regs r = *regs;
	bool exact = true;

	if (mem->len < 8)
		return;
	for (unsigned depth = 0; depth < MAXF && (r.valid & BIT(SP_DW_RIP)); depth++) {
		uint64_t pc = r.regs[SP_DW_RIP], lookup = exact ? pc : pc - 1;
		const struct sp_unwind_module *m = ls_find(&map, lookup);
		const struct sp_cfi_row *row;
		bool hit;

		if (!m || !m->cfi ||
		    !(row = sp_cfi_table_lookup(m->cfi, lookup - m->load_bias, &hit)))
			return;
		all_frames++;
		if (!row->plain) {
			if (step(m->cfi, row, &r, mem) != CONTINUE)
				return;
			exact = row->flags & SP_CFI_F_SIGNAL;
			continue;
		}
		plain_frames++;
		struct sp_cfi_row copy = *row; /* the next lookup may move it */
		if (one_step_both(m, &copy, &r, mem, &r, what) != CONTINUE)
			return;
		exact = false;
	}
}

/* ---- live samples -------------------------------------------------------- */

#define SAMPLES 150

struct sample {
	struct sp_regs regs;
	size_t len;
	uint8_t stack[CAP];
};

static struct sample *samples;
static volatile int nsamples;
static uint64_t stack_top;

static void on_prof(int sig, siginfo_t *si, void *ucv)
{
	if (nsamples >= SAMPLES)
		return;
	struct sample *s = &samples[nsamples];
	ls_regs_from_ucontext(ucv, &s->regs);
	/* the [vdso] is not in the module map */
	if (!ls_find(&map, s->regs.regs[SP_DW_RIP]) || s->regs.regs[SP_DW_RSP] >= stack_top)
		return;
	s->len = ls_copy_stack(s->stack, s->regs.regs[SP_DW_RSP], stack_top, CAP);
	nsamples++;
}

static int cmp_unsigned(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return (x > y) - (x < y);
}

/* Work at several depths through libc (qsort's callbacks, stdio, malloc). */
static __attribute__((noinline)) unsigned long work(int depth)
{
	static unsigned items[4096];
	char text[96];
	unsigned seed = (unsigned)depth * 40503u + 7;

	if (depth > 0)
		return work(depth - 1) + 1;
	for (size_t i = 0; i < SP_ARRAY_SIZE(items); i++)
		items[i] = (seed = seed * 1103515245u + 12345u) >> 8;
	qsort(items, SP_ARRAY_SIZE(items), sizeof(items[0]), cmp_unsigned);
	snprintf(text, sizeof(text), "%u %g", items[1], items[2] / 3.0);
	void *p = malloc(strlen(text) + (items[3] & 2047));
	free(p);
	return strtoul(text, NULL, 10) & 1;
}

static void work_once(int n)
{
	work(n % 7);
}

static void sample_live(void)
{
	volatile int here;

	samples = calloc(SAMPLES, sizeof(*samples));
	cr_assert_not_null(samples);
	stack_top = ls_mapping_end((uintptr_t)&here);
	cr_assert_eq(ls_profile(on_prof, 1000, &nsamples, SAMPLES, 20, work_once), 0);
	cr_assert_gt(nsamples, 20, "only %d samples", nsamples);
}

Test(plain, live_stacks_unwind_the_same_both_ways)
{
	sample_live();
	for (int i = 0; i < nsamples; i++) {
		const struct sample *s = &samples[i];
		struct sp_stack_mem mem = { s->regs.regs[SP_DW_RSP], s->stack, s->len };
		char what[32];

		snprintf(what, sizeof(what), "sample %d", i);
		expect_both_ways(&s->regs, &mem, ls_find, &map, MAXF, what);
		expect_same_steps(&s->regs, &mem, what);
		/* every depth limit, the runs cut where the loop would be */
		for (size_t max = 1; max < 12; max++)
			expect_both_ways(&s->regs, &mem, ls_find, &map, max, what);
	}
	/* the runs were taken at all: nearly every row of compiled code is plain */
	cr_assert_gt(plain_frames * 2, all_frames, "%lu of %lu frames plain",
		     (unsigned long)plain_frames, (unsigned long)all_frames);
	free(samples);
}

/* ---- damaged stacks ------------------------------------------------------ */

/* Random 64-bit numbers from random(3), seeded once in the test: the same damage every run. */
static uint64_t rnd(void)
{
	return (uint64_t)random() << 33 ^ (uint64_t)random() << 11 ^ (uint64_t)random();
}

/*
 * A live sample damaged at random: words of its copy replaced (by small
 * numbers, code addresses, addresses in the copy, anything), the copy cut
 * short, registers forgotten or moved.  Whatever the unwind makes of it,
 * both ways must agree.
 */
static void damage(struct sample *d, const struct sample *s)
{
	size_t words = s->len / 8;
	uint64_t *w = (uint64_t *)d->stack, sp = s->regs.regs[SP_DW_RSP];

	*d = *s;
	for (unsigned j = 0, nj = (unsigned)(rnd() % 6); j < nj && words; j++) {
		size_t at = (size_t)(rnd() % words);

		switch (rnd() % 5) {
		case 0: w[at] = rnd() % 64; break;
		case 1: w[at] = map.mods[rnd() % map.nmods].um.start + rnd() % 4096; break;
		case 2: w[at] = sp + 8 * (rnd() % words); break;
		case 3: w[at] = w[rnd() % words]; break;
		default: w[at] = rnd(); break;
		}
	}
	switch (rnd() % 6) {
	case 0: d->len = (size_t)(rnd() % (s->len + 1)); break;
	case 1: d->regs.valid &= (uint32_t)rnd() | BIT(SP_DW_RIP); break;
	case 2: d->regs.regs[SP_DW_RBP] = sp + 8 * (rnd() % (words + 1)); break;
	case 3: d->regs.regs[SP_DW_RSP] += 8 * (rnd() % 4); break;
	case 4: d->regs.regs[SP_DW_RIP] += rnd() % 16; break;
	default: break;
	}
}

Test(plain, damaged_stacks_unwind_the_same_both_ways)
{
	static struct sample d;
	unsigned variants = 40;

	srandom(20261204);
	sample_live();
	for (int i = 0; i < nsamples; i++)
		for (unsigned v = 0; v < variants; v++) {
			char what[48];

			damage(&d, &samples[i]);
			struct sp_stack_mem mem = { samples[i].regs.regs[SP_DW_RSP], d.stack, d.len };
			snprintf(what, sizeof(what), "sample %d variant %u", i, v);
			expect_both_ways(&d.regs, &mem, ls_find, &map, MAXF, what);
			expect_same_steps(&d.regs, &mem, what);
		}
	free(samples);
}

/* ---- module edges ------------------------------------------------------ */

/*
 * This process's modules with one split in two at split: the same code, two
 * modules; without_table 1 or 2 takes the table from the lower or the upper.
 */
struct split_map {
	struct sp_unwind_module mods[SP_ARRAY_SIZE(map.mods) + 1];
	size_t n;
};

static const struct sp_unwind_module *split_find(void *ctx, uint64_t pc)
{
	struct split_map *s = ctx;

	for (size_t i = 0; i < s->n; i++)
		if (pc >= s->mods[i].start && pc < s->mods[i].end)
			return &s->mods[i];
	return NULL;
}

static void split_at(struct split_map *s, uint64_t split, unsigned without_table)
{
	s->n = 0;
	for (size_t i = 0; i < map.nmods; i++) {
		struct sp_unwind_module m = map.mods[i].um;

		if (split > m.start && split < m.end) {
			s->mods[s->n] = m;
			s->mods[s->n].end = split;
			if (without_table == 1)
				s->mods[s->n].cfi = NULL;
			s->n++;
			m.start = split;
			if (without_table == 2)
				m.cfi = NULL;
		}
		s->mods[s->n++] = m;
	}
}

static __attribute__((noinline)) void capture_here(struct sample *s)
{
	LS_CAPTURE(&s->regs);
	volatile int here;
	s->len = ls_copy_stack(s->stack, s->regs.regs[SP_DW_RSP], ls_mapping_end((uintptr_t)&here),
			       CAP);
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void capture_deeper(struct sample *s, int depth)
{
	if (depth > 0)
		capture_deeper(s, depth - 1);
	else
		capture_here(s);
	__asm__ volatile("" ::: "memory");
}

/*
 * A return address at a module's last byte, or its first: a run goes on in
 * the next module, and finds its module as the loop would.
 */
Test(plain, runs_cross_module_edges_as_the_loop_does)
{
	static struct sample s;
	static struct result whole, part;
	static struct split_map sm;

	capture_deeper(&s, 4);
	struct sp_stack_mem mem = { s.regs.regs[SP_DW_RSP], s.stack, s.len };
	unwind_with(true, &s.regs, &mem, ls_find, &map, MAXF, &whole);
	cr_assert_eq(whole.stop, SP_STOP_ROOT);
	cr_assert_gt(whole.n, 6);
	/*
	 * A callee's code above its caller's return address puts the callee,
	 * split there, in the upper half, its caller's call in the lower: the
	 * case where the run must see that the return address left the module.
	 */
	unsigned above = 0;
	for (size_t j = 1; j < whole.n; j++)
		above += whole.pcs[j - 1] > whole.pcs[j] + 1 &&
			 ls_find(&map, whole.pcs[j - 1]) == ls_find(&map, whole.pcs[j]);
	cr_assert_gt(above, 0, "no callee lies above its caller's return address");
	for (size_t j = 1; j + 1 < whole.n; j++) {
		/* ra - 1 the split module's last byte, then the next one's first */
		for (uint64_t split = whole.pcs[j]; split <= whole.pcs[j] + 1; split++) {
			char what[64];

			snprintf(what, sizeof(what), "frame %zu, split at %+d", j,
				 (int)(split - whole.pcs[j]));
			split_at(&sm, split, 0);
			unwind_with(true, &s.regs, &mem, split_find, &sm, MAXF, &part);
			cr_assert_eq(part.n, whole.n, "%s", what);
			cr_assert_eq(part.stop, whole.stop, "%s", what);
			cr_assert_eq(memcmp(part.pcs, whole.pcs, whole.n * sizeof(whole.pcs[0])), 0,
				     "%s", what);
			expect_both_ways(&s.regs, &mem, split_find, &sm, MAXF, what);
			/* a frame in the wrong half would take a table it does not have */
			for (unsigned without = 1; without <= 2; without++) {
				split_at(&sm, split, without);
				snprintf(what, sizeof(what), "frame %zu, split at %+d, table %u gone", j,
					 (int)(split - whole.pcs[j]), without);
				expect_both_ways(&s.regs, &mem, split_find, &sm, MAXF, what);
			}
		}
	}
}

/*
 * The callee above the split, its caller's call below: the return address
 * is the upper module's first byte, and ra - 1 lies in the lower one, whose
 * table is gone or not.
 */
Test(plain, a_return_address_at_a_module_edge)
{
	static struct split_map sm;
	static struct result res;
	uint64_t ra = (uintptr_t)&pl_caller_ret, stack[2] = { ra, 0 };
	struct sp_stack_mem mem = { (uintptr_t)stack, (const uint8_t *)stack, sizeof(stack) };
	struct sp_regs r = { .valid = BIT(SP_DW_RIP) | BIT(SP_DW_RSP) };

	r.regs[SP_DW_RIP] = (uintptr_t)&pl_callee;
	r.regs[SP_DW_RSP] = (uintptr_t)stack;
	unwind_with(true, &r, &mem, ls_find, &map, MAXF, &res);
	cr_assert_eq(res.stop, SP_STOP_ROOT);
	cr_assert_eq(res.n, 2);
	cr_assert_eq(res.pcs[1], ra - 1);
	for (uint64_t split = ra - 1; split <= ra + 1; split++)
		for (unsigned without = 0; without <= 2; without++) {
			char what[48];

			snprintf(what, sizeof(what), "split at ra%+d, table %u gone", (int)(split - ra),
				 without);
			split_at(&sm, split, without);
			expect_both_ways(&r, &mem, split_find, &sm, MAXF, what);
		}
	/* the lower half without its table: the caller's frame has no rule */
	split_at(&sm, ra, 1);
	unwind_with(true, &r, &mem, split_find, &sm, MAXF, &res);
	cr_assert_eq(res.stop, SP_STOP_NO_UNWIND_INFO);
}

/* Stacks with the modules' finds answered by a map without tables: frame pointers, both ways. */
static const struct sp_unwind_module *find_no_cfi(void *ctx, uint64_t pc)
{
	static struct sp_unwind_module copy;
	const struct sp_unwind_module *m = ls_find(ctx, pc);

	if (!m || m->start != (uintptr_t)ls_map_module(ctx, (uintptr_t)&pl_fn)->um.start)
		return m;
	copy = *m;
	copy.cfi = NULL;
	return &copy;
}

Test(plain, a_module_without_a_table_ends_the_run)
{
	static struct sample s;

	capture_deeper(&s, 3);
	struct sp_stack_mem mem = { s.regs.regs[SP_DW_RSP], s.stack, s.len };
	expect_both_ways(&s.regs, &mem, find_no_cfi, &map, MAXF, "test binary without CFI");
	expect_both_ways(&s.regs, &mem, ls_find, &map, MAXF, "test binary");
}

/* ---- registers a run leaves ------------------------------------------------ */

/*
 * A run of k frames (its frame limit reached right after them) leaves the
 * registers k calls of step() leave, for every k while the rows stay plain:
 * a run reads the registers other than rsp and rbp only at its end, each
 * from the last frame that saved it, and a long run in batches.
 */
static void expect_run_regs(const struct sp_regs *regs, const struct sp_stack_mem *mem,
			    const char *what)
{
	static uint64_t pcs[MAXF];
	struct sp_regs stepped = *regs;
	bool exact = true, hit;
	size_t k;

	if (mem->len < 8)
		return;
	for (k = 1; k < MAXF; k++) {
		uint64_t pc = stepped.regs[SP_DW_RIP], lookup = exact ? pc : pc - 1;
		const struct sp_unwind_module *m = ls_find(&map, lookup);
		const struct sp_cfi_row *row;

		if (!m || !m->cfi || !(row = sp_cfi_table_lookup(m->cfi, lookup - m->load_bias, &hit)) ||
		    !row->plain)
			break;
		struct sp_cfi_row copy = *row;
		if (step(m->cfi, &copy, &stepped, mem) != CONTINUE)
			break;
		exact = false;

		const struct sp_unwind_module *wm = ls_find(&map, regs->regs[SP_DW_RIP]);
		const struct sp_cfi_row *wrow =
			sp_cfi_table_lookup(wm->cfi, regs->regs[SP_DW_RIP] - wm->load_bias, &hit);
		struct walk w = { .find = ls_find, .ctx = &map, .stack = mem, .pcs = pcs, .k = 1, .max = k };
		struct sp_regs run = *regs;
		bool looked;

		cr_assert_eq(plain_run(&w, &wm, &wrow, &looked, &run), CONTINUE, "%s: %zu frames", what, k);
		cr_assert_eq(w.k, k, "%s", what);
		char at[64];
		snprintf(at, sizeof(at), "%s, %zu frames", what, k);
		expect_same_regs(&stepped, &run, at);
	}
}

/* Keeps x and y in callee-saved registers across its call: each frame saves some. */
static __attribute__((noinline)) unsigned long deep_saves(struct sample *s, int depth,
							  unsigned long x)
{
	unsigned long y = x * 3 + (unsigned long)depth;

	if (depth > 0)
		y += deep_saves(s, depth - 1, y);
	else
		capture_here(s);
	__asm__ volatile("" ::: "memory");
	return y ^ x;
}

Test(plain, long_runs_leave_the_registers_steps_leave)
{
	static struct sample s;
	static struct result res;

	deep_saves(&s, 3 * PENDING, 1);
	struct sp_stack_mem mem = { s.regs.regs[SP_DW_RSP], s.stack, s.len };
	unwind_with(true, &s.regs, &mem, ls_find, &map, MAXF, &res);
	cr_assert_eq(res.stop, SP_STOP_ROOT);
	cr_assert_gt(res.n, 3 * PENDING, "%zu frames", res.n);
	expect_run_regs(&s.regs, &mem, "deep saves");
	expect_both_ways(&s.regs, &mem, ls_find, &map, MAXF, "deep saves");

	sample_live();
	for (int i = 0; i < nsamples; i++) {
		struct sp_stack_mem live = { samples[i].regs.regs[SP_DW_RSP], samples[i].stack,
					     samples[i].len };
		char what[32];

		snprintf(what, sizeof(what), "sample %d", i);
		expect_run_regs(&samples[i].regs, &live, what);
	}
	free(samples);
}

/* ---- rows proven from code inside runs -------------------------------------- */

/*
 * This process's modules without their tables, each row handed out as if
 * proven from the code (what a JIT module's code_row does): plain where
 * its shape is.
 */
static struct sp_unwind_module code_mods[SP_ARRAY_SIZE(map.mods)];
static uint64_t code_rows_given;

static const struct sp_cfi_row *row_as_proven(void *ctx, const struct sp_unwind_module *m,
					      uint64_t pc, bool after_call, struct sp_cfi_row *out)
{
	uint64_t at = after_call ? pc - 1 : pc;
	const struct sp_unwind_module *real = ls_find(&map, at);
	const struct sp_cfi_row *row;
	bool hit;

	(void)ctx, (void)m;
	if (!real || !real->cfi || !(row = sp_cfi_table_lookup(real->cfi, at - real->load_bias, &hit)))
		return NULL;
	/* an expression needs its table (as in a jitdump's rows) */
	if (row->kind == SP_CFI_CFA_EXPR)
		return NULL;
	*out = *row;
	out->plain = sp_cfi_row_plain_shape(out);
	code_rows_given++;
	return out;
}

static const struct sp_unwind_module *find_code_mods(void *ctx, uint64_t pc)
{
	(void)ctx;
	for (size_t i = 0; i < map.nmods; i++)
		if (pc >= code_mods[i].start && pc < code_mods[i].end)
			return &code_mods[i];
	return NULL;
}

/* code_mods: this process's modules, their rows from row_fn instead of their tables. */
static void use_code_mods(sp_code_row_fn row_fn)
{
	for (size_t i = 0; i < map.nmods; i++) {
		code_mods[i] = map.mods[i].um;
		code_mods[i].cfi = NULL;
		code_mods[i].code_row = row_fn;
	}
}

/* Live samples, whole and damaged, unwound through code_mods: the same with runs and without. */
static void live_both_ways_in_code_mods(unsigned seed)
{
	static struct sample d;

	srandom(seed);
	sample_live();
	for (int i = 0; i < nsamples; i++) {
		char what[48];
		struct sp_stack_mem live = { samples[i].regs.regs[SP_DW_RSP], samples[i].stack,
					     samples[i].len };

		snprintf(what, sizeof(what), "sample %d", i);
		expect_both_ways(&samples[i].regs, &live, find_code_mods, NULL, MAXF, what);
		for (unsigned v = 0; v < 10; v++) {
			damage(&d, &samples[i]);
			struct sp_stack_mem mem = { samples[i].regs.regs[SP_DW_RSP], d.stack, d.len };
			snprintf(what, sizeof(what), "sample %d variant %u", i, v);
			expect_both_ways(&d.regs, &mem, find_code_mods, NULL, MAXF, what);
		}
	}
	free(samples);
}

Test(plain, runs_take_rows_proven_from_code)
{
	static struct sample s;

	use_code_mods(row_as_proven);
	capture_deeper(&s, 5);
	struct sp_stack_mem mem = { s.regs.regs[SP_DW_RSP], s.stack, s.len };
	static struct result res;
	unwind_with(true, &s.regs, &mem, find_code_mods, NULL, MAXF, &res);
	cr_assert_eq(res.stop, SP_STOP_ROOT);
	cr_assert_eq(res.st.code_frames, res.n, "every frame from code rows");
	expect_both_ways(&s.regs, &mem, find_code_mods, NULL, MAXF, "code rows");
	for (size_t max = 1; max < 12; max++)
		expect_both_ways(&s.regs, &mem, find_code_mods, NULL, max, "code rows, cut");

	code_rows_given = 0;
	live_both_ways_in_code_mods(20261205);
	cr_assert_gt(code_rows_given, 0);
}

/*
 * The same modules, where a frame whose row takes its CFA from rbp gets no
 * row at all: a frame-pointer step, as JIT code whose bytes prove nothing
 * (V8's) gets between frames with rows.
 */
static const struct sp_cfi_row *row_unless_framed(void *ctx, const struct sp_unwind_module *m,
						  uint64_t pc, bool after_call,
						  struct sp_cfi_row *out)
{
	const struct sp_cfi_row *row = row_as_proven(ctx, m, pc, after_call, out);

	return row && row->cfa_reg == SP_DW_RBP ? NULL : row;
}

/* Takes the sample in a function keeping a frame pointer: frame 0 has no row either. */
static __attribute__((noinline, optimize("no-omit-frame-pointer"))) void framed_here(struct sample *s)
{
	volatile int here;

	LS_CAPTURE(&s->regs);
	s->len = ls_copy_stack(s->stack, s->regs.regs[SP_DW_RSP], ls_mapping_end((uintptr_t)&here),
			       CAP);
	__asm__ volatile("" ::: "memory");
}

/* Keeps a frame pointer (its body's rows take the CFA from rbp); at takes the sample. */
static __attribute__((noinline, optimize("no-omit-frame-pointer"))) unsigned long
framed_deeper(struct sample *s, int depth, void (*at)(struct sample *))
{
	volatile unsigned long here = (unsigned long)depth;

	if (depth > 0)
		here += framed_deeper(s, depth - 1, at);
	else
		at(s);
	__asm__ volatile("" ::: "memory");
	return here;
}

/*
 * A stack through framed_deeper, taken by at, unwound through code_mods: at
 * least min frame-pointer steps, and the same with runs and without, whole,
 * cut at every depth and (cut_copy) at every copy length.
 */
static void framed_both_ways(void (*at)(struct sample *), uint32_t min, bool cut_copy,
			     const char *what)
{
	static struct sample s;
	static struct result res;

	framed_deeper(&s, 6, at);
	struct sp_stack_mem mem = { s.regs.regs[SP_DW_RSP], s.stack, s.len };
	unwind_with(true, &s.regs, &mem, find_code_mods, NULL, MAXF, &res);
	cr_assert_gt(res.st.fp_steps, min, "%s: %u frame-pointer steps", what, res.st.fp_steps);
	expect_both_ways(&s.regs, &mem, find_code_mods, NULL, MAXF, what);
	for (size_t max = 1; max < 14; max++)
		expect_both_ways(&s.regs, &mem, find_code_mods, NULL, max, what);
	/* the copy ending inside the steps: they wait for the caller's proof, both ways */
	for (size_t len = 8; cut_copy && len < s.len && len < 1024; len += 8) {
		struct sp_stack_mem cut = { s.regs.regs[SP_DW_RSP], s.stack, len };
		expect_both_ways(&s.regs, &cut, find_code_mods, NULL, MAXF, what);
	}
}

Test(plain, runs_take_frame_pointer_steps_as_the_loop_does)
{
	use_code_mods(row_unless_framed);
	/* frame 0 with a row, then a run of rows and steps */
	framed_both_ways(capture_here, 5, true, "framed");
	/* the loop's own step at frame 0, then a run */
	framed_both_ways(framed_here, 6, false, "framed frame 0");
	live_both_ways_in_code_mods(20261206);
}
