/* SPDX-License-Identifier: MIT */
/* Unit tests for lib/unwind/unwind.c: live stacks of this process, signal frames, PLT and stop reasons. */
#include "live_stack.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <sys/time.h>
#include <time.h>
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#define NOINL __attribute__((noinline, noclone))
#define STACK_CAP (128 * 1024)
#define MAXF 128

/* One captured sample: registers, the stack bytes above rsp, and libunwind's view. */
struct capture {
	struct sp_regs regs;
	struct sp_stack_mem mem;
	uint8_t *buf;
	uint64_t unw_ips[MAXF];
	size_t unw_n;
};

static struct ls_map map;
/* read at run time, so the compiler cannot turn the VLAs into fixed arrays */
static volatile int vla_len = 48;

static void setup(void)
{
	cr_assert_eq(ls_map_load(&map), 0);
	cr_assert_gt(map.nmods, 0);
}

static void teardown(void)
{
	ls_map_free(&map);
}

static NOINL void capture_rest(struct capture *c)
{
	uint64_t sp = c->regs.regs[SP_DW_RSP];
	unw_context_t uc;
	unw_cursor_t cur;
	unw_word_t ip;

	c->mem.base = sp;
	c->mem.data = c->buf;
	c->mem.len = ls_copy_stack(c->buf, sp, ls_mapping_end(sp), STACK_CAP);
	/* libunwind's first frame is this function; keep the callers' return addresses */
	c->unw_n = 0;
	unw_getcontext(&uc);
	unw_init_local(&cur, &uc);
	while (c->unw_n < MAXF && unw_step(&cur) > 0) {
		unw_get_reg(&cur, UNW_REG_IP, &ip);
		c->unw_ips[c->unw_n++] = ip;
	}
}

/* The capture happens in the innermost frame; capture_rest's own frame is below it. */
static NOINL void chain_f3(struct capture *c)
{
	LS_CAPTURE(&c->regs);
	capture_rest(c);
	__asm__ volatile("" ::: "memory");
}

/* A variable-length array forces a frame pointer: this frame's CFA is rbp-based. */
static NOINL void chain_f2(struct capture *c, int n)
{
	volatile char vla[n];

	vla[0] = 1;
	chain_f3(c);
	__asm__ volatile("" : : "r"(vla) : "memory");
}

static NOINL void chain_f1(struct capture *c)
{
	chain_f2(c, vla_len);
	__asm__ volatile("" ::: "memory");
}

static NOINL void capture_chain(struct capture *c)
{
	c->buf = malloc(STACK_CAP);
	cr_assert_not_null(c->buf);
	chain_f1(c);
	__asm__ volatile("" ::: "memory");
}

static void unwind(const struct capture *c, uint64_t *pcs, size_t max, size_t *n, unsigned *stop,
		   struct sp_unwind_stats *st)
{
	cr_assert_eq(sp_unwind(&c->regs, &c->mem, ls_find, &map, pcs, max, n, stop, st), 0);
}

static void expect_name(uint64_t pc, const char *name)
{
	const char *s = ls_symbol(&map, pc);

	cr_assert(s && strcmp(s, name) == 0, "pc %#lx is in %s, expected %s", (unsigned long)pc,
		  s ? s : "(none)", name);
}

TestSuite(unwind, .init = setup, .fini = teardown);

Test(unwind, walks_live_stack_to_root)
{
	struct capture c;
	uint64_t pcs[MAXF];
	size_t n;
	unsigned stop;
	struct sp_unwind_stats st = { 0 };

	capture_chain(&c);
	unwind(&c, pcs, MAXF, &n, &stop, &st);
	cr_assert_eq(stop, SP_STOP_ROOT, "stopped: %s after %zu frames", sp_stop_reason_name(stop), n);
	cr_assert_geq(n, 5);
	cr_assert_eq(pcs[0], c.regs.regs[SP_DW_RIP]);
	expect_name(pcs[0], "chain_f3");
	expect_name(pcs[1], "chain_f2");
	expect_name(pcs[2], "chain_f1");
	expect_name(pcs[3], "capture_chain");
	expect_name(pcs[4], "unwind_walks_live_stack_to_root_impl");
	expect_name(pcs[n - 1], "_start");
	cr_assert_eq(st.frames, n);
	cr_assert_eq(st.rule_cache_hits + st.rule_cache_misses, n);
	free(c.buf);
}

/*
 * The CFAs handed back for the recorder's prefetch: one per frame stepped
 * (the root's zero return address ends the walk before its CFA), rising,
 * and each return address slot just below one holds the next frame's
 * return address.
 */
Test(unwind, gives_each_frames_cfa)
{
	struct capture c;
	uint64_t pcs[MAXF], cfas[SP_UNWIND_CFAS];
	size_t n;
	unsigned stop;
	struct sp_unwind_stats st = { .cfas = cfas };

	capture_chain(&c);
	unwind(&c, pcs, MAXF, &n, &stop, &st);
	cr_assert_eq(stop, SP_STOP_ROOT);
	cr_assert_eq(st.ncfas, n - 1, "%zu CFAs for %zu frames", st.ncfas, n);
	for (size_t i = 0; i < st.ncfas; i++) {
		uint64_t ra;

		cr_assert(i == 0 || cfas[i] > cfas[i - 1], "CFA %zu does not rise", i);
		cr_assert_eq(sp_stack_read(&c.mem, cfas[i] - 8, &ra), 0);
		cr_assert_eq(ra - 1, pcs[i + 1], "frame %zu: slot holds %#lx, frame is %#lx", i,
			     (unsigned long)ra, (unsigned long)pcs[i + 1]);
	}
	/* without room given, nothing is written */
	struct sp_unwind_stats none = { 0 };
	unwind(&c, pcs, MAXF, &n, &stop, &none);
	cr_assert_eq(none.ncfas, 0);
	free(c.buf);
}

Test(unwind, agrees_with_libunwind)
{
	struct capture c;
	uint64_t pcs[MAXF];
	size_t n;
	unsigned stop;

	capture_chain(&c);
	unwind(&c, pcs, MAXF, &n, &stop, NULL);
	cr_assert_eq(stop, SP_STOP_ROOT);
	/*
	 * libunwind starts one frame deeper, in capture_rest, so its i-th step
	 * gives the return address into our frame i (ours is that minus one).
	 */
	cr_assert_geq(c.unw_n, n);
	expect_name(c.unw_ips[0], "chain_f3");
	for (size_t i = 1; i < n; i++)
		cr_assert_eq(pcs[i] + 1, c.unw_ips[i], "frame %zu: ours %#lx, libunwind %#lx", i,
			     (unsigned long)pcs[i] + 1, (unsigned long)c.unw_ips[i]);
	free(c.buf);
}

Test(unwind, second_pass_hits_rule_cache)
{
	struct capture c;
	uint64_t pcs[MAXF], pcs2[MAXF];
	size_t n, n2;
	unsigned stop, stop2;
	struct sp_unwind_stats st = { 0 };

	capture_chain(&c);
	ls_map_reset_cfi(&map);
	unwind(&c, pcs, MAXF, &n, &stop, NULL);
	unwind(&c, pcs2, MAXF, &n2, &stop2, &st);
	cr_assert_eq(n, n2);
	cr_assert_eq(stop, stop2);
	cr_assert_arr_eq(pcs, pcs2, n * sizeof(pcs[0]));
	cr_assert_eq(st.rule_cache_hits, n);
	cr_assert_eq(st.rule_cache_misses, 0);
	free(c.buf);
}

Test(unwind, short_copy_is_stack_exhausted)
{
	struct capture c;
	uint64_t pcs[MAXF];
	size_t n;
	unsigned stop;

	capture_chain(&c);
	c.mem.len = 64;
	unwind(&c, pcs, MAXF, &n, &stop, NULL);
	cr_assert_eq(stop, SP_STOP_STACK_EXHAUSTED);
	cr_assert_geq(n, 1);
	expect_name(pcs[0], "chain_f3");
	/* nothing at or beyond base + len was read: the frames found are correct ones */
	c.mem.len = 0;
	unwind(&c, pcs, MAXF, &n, &stop, NULL);
	cr_assert_eq(stop, SP_STOP_STACK_EXHAUSTED);
	cr_assert_eq(n, 1);
	free(c.buf);
}

Test(unwind, max_depth_caps_frames)
{
	struct capture c;
	uint64_t pcs[MAXF];
	size_t n;
	unsigned stop;

	capture_chain(&c);
	unwind(&c, pcs, 3, &n, &stop, NULL);
	cr_assert_eq(stop, SP_STOP_MAX_DEPTH);
	cr_assert_eq(n, 3);
	expect_name(pcs[2], "chain_f1");
	unwind(&c, pcs, 0, &n, &stop, NULL);
	cr_assert_eq(stop, SP_STOP_MAX_DEPTH);
	cr_assert_eq(n, 0);
	free(c.buf);
}

Test(unwind, unmapped_pc_stops)
{
	struct capture c;
	uint64_t pcs[MAXF];
	size_t n;
	unsigned stop;
	uint64_t stack[4] = { 0x10, 0, 0, 0 };

	capture_chain(&c);
	/* frame 0 unmapped: the sampled pc is still emitted */
	c.regs.regs[SP_DW_RIP] = 0x1000;
	unwind(&c, pcs, MAXF, &n, &stop, NULL);
	cr_assert_eq(stop, SP_STOP_UNMAPPED);
	cr_assert_eq(n, 1);
	cr_assert_eq(pcs[0], 0x1000);

	/* a caller at an unmapped return address is not emitted */
	const struct ls_module *self = ls_map_module(&map, (uintptr_t)&chain_f1);
	uint64_t plt_size, plt = ls_section(self, ".plt", &plt_size);
	if (!plt)
		cr_skip_test("test binary has no .plt");
	c.regs.regs[SP_DW_RIP] = plt + 16 + self->um.load_bias;
	c.regs.regs[SP_DW_RSP] = (uintptr_t)stack;
	c.mem = (struct sp_stack_mem){ (uintptr_t)stack, (const uint8_t *)stack, sizeof(stack) };
	unwind(&c, pcs, MAXF, &n, &stop, NULL);
	cr_assert_eq(stop, SP_STOP_UNMAPPED);
	cr_assert_eq(n, 1);
	free(c.buf);
}

Test(unwind, no_regs_stops_at_once)
{
	struct sp_regs r = { .valid = 0 };
	struct sp_stack_mem mem = { 0 };
	uint64_t pcs[4];
	size_t n = 99;
	unsigned stop;

	cr_assert_eq(sp_unwind(&r, &mem, ls_find, &map, pcs, 4, &n, &stop, NULL), 0);
	cr_assert_eq(stop, SP_STOP_NO_REGS);
	cr_assert_eq(n, 0);
}

static const struct sp_unwind_module *find_nocfi(void *ctx, uint64_t pc)
{
	const struct sp_unwind_module *m = ctx;

	return pc >= m->start && pc < m->end ? m : NULL;
}

Test(unwind, module_without_cfi_stops)
{
	struct sp_regs r = { .valid = 1u << SP_DW_RIP | 1u << SP_DW_RSP };
	struct sp_stack_mem mem = { 0 };
	uint64_t pcs[4];
	size_t n;
	unsigned stop;
	struct sp_unwind_module nocfi = { .start = 0x400000, .end = 0x500000 };

	r.regs[SP_DW_RIP] = 0x400123;
	cr_assert_eq(sp_unwind(&r, &mem, find_nocfi, &nocfi, pcs, 4, &n, &stop, NULL), 0);
	cr_assert_eq(stop, SP_STOP_NO_UNWIND_INFO);
	cr_assert_eq(n, 1);
	cr_assert_eq(pcs[0], 0x400123);
}

/*
 * Frame-pointer steps where there is no CFI (docs/DESIGN.md, decision 3): a
 * copied stack of frame records [saved rbp, return address] in a module
 * without CFI; frame 0's SP slot holds data, not code.
 */
struct fp_stack {
	uint64_t w[8];
	struct sp_regs r;
	struct sp_stack_mem mem;
};

static void fp_stack_init(struct fp_stack *f, uint64_t last_saved_fp, uint64_t last_ra)
{
	uint64_t base = (uintptr_t)f->w;

	memset(f, 0, sizeof(*f));
	f->w[0] = 42;                 /* frame 0's lowest slot: a local */
	f->w[2] = base + 4 * 8;       /* frame 0's record: the caller's rbp ... */
	f->w[3] = 0x400200;           /* ... and return address */
	f->w[4] = last_saved_fp;      /* the caller's record */
	f->w[5] = last_ra;
	f->r.valid = 1u << SP_DW_RIP | 1u << SP_DW_RSP | 1u << SP_DW_RBP;
	f->r.regs[SP_DW_RIP] = 0x400100;
	f->r.regs[SP_DW_RSP] = base;
	f->r.regs[SP_DW_RBP] = base + 2 * 8;
	f->mem = (struct sp_stack_mem){ base, (const uint8_t *)f->w, sizeof(f->w) };
}

Test(unwind, frame_pointers_kept_when_the_root_is_reached)
{
	struct fp_stack f;
	uint64_t pcs[8];
	size_t n;
	unsigned stop;
	struct sp_unwind_stats stats = { 0 };
	struct sp_unwind_module nocfi = { .start = 0x400000, .end = 0x500000 };

	/* the outermost frame's record holds rbp 0 (psABI: the deepest frame marks itself) */
	fp_stack_init(&f, 0, 0x400300);
	cr_assert_eq(sp_unwind(&f.r, &f.mem, find_nocfi, &nocfi, pcs, 8, &n, &stop, &stats), 0);
	cr_assert_eq(stop, SP_STOP_ROOT);
	cr_assert_eq(n, 3);
	cr_assert_eq(pcs[0], 0x400100);
	cr_assert_eq(pcs[1], 0x4001ff, "a return address is looked up at ra - 1");
	cr_assert_eq(pcs[2], 0x4002ff);
	cr_assert_eq(stats.fp_steps, 2);
	cr_assert_eq(stats.unproven, 3);
}

Test(unwind, frame_pointers_dropped_when_the_chain_goes_astray)
{
	struct fp_stack f;
	uint64_t pcs[8];
	size_t n;
	unsigned stop;
	struct sp_unwind_stats stats = { 0 };
	struct sp_unwind_module nocfi = { .start = 0x400000, .end = 0x500000 };

	/* a return address in no module: not the root, so no step stands */
	fp_stack_init(&f, (uintptr_t)&f.w[6], 0x1000);
	cr_assert_eq(sp_unwind(&f.r, &f.mem, find_nocfi, &nocfi, pcs, 8, &n, &stop, &stats), 0);
	cr_assert_eq(stop, SP_STOP_NO_UNWIND_INFO);
	cr_assert_eq(n, 1);
	cr_assert_eq(stats.fp_steps, 0);

	/* a frame record below the SP (the chain went down the stack) */
	fp_stack_init(&f, (uintptr_t)&f.w[0], 0x400300);
	cr_assert_eq(sp_unwind(&f.r, &f.mem, find_nocfi, &nocfi, pcs, 8, &n, &stop, &stats), 0);
	cr_assert_eq(stop, SP_STOP_NO_UNWIND_INFO);
	cr_assert_eq(n, 1);

	/* the sampled frame's SP holds a code address: it may keep no frame, whose
	 * caller a step from rbp would skip, so no step is taken */
	fp_stack_init(&f, 0, 0x400300);
	f.w[0] = 0x400150;
	cr_assert_eq(sp_unwind(&f.r, &f.mem, find_nocfi, &nocfi, pcs, 8, &n, &stop, &stats), 0);
	cr_assert_eq(stop, SP_STOP_NO_UNWIND_INFO);
	cr_assert_eq(n, 1);

	/* rbp 0 in the sampled frame's own register proves nothing */
	fp_stack_init(&f, 0, 0x400300);
	f.r.regs[SP_DW_RBP] = 0;
	cr_assert_eq(sp_unwind(&f.r, &f.mem, find_nocfi, &nocfi, pcs, 8, &n, &stop, &stats), 0);
	cr_assert_eq(stop, SP_STOP_NO_UNWIND_INFO);
	cr_assert_eq(n, 1);
}

/*
 * Code of the fake module for the check of the call before a return address:
 * a direct call to 0x400100 ends at 0x400200, an indirect call *%rax ends at
 * 0x400300, padding before 0x400400.
 */
static size_t fake_code(void *ctx, uint64_t addr, uint8_t *buf, size_t len)
{
	(void)ctx;
	for (size_t i = 0; i < len; i++) {
		uint64_t a = addr + i;
		int32_t rel = 0x400100 - 0x400200;
		buf[i] = 0x90;
		if (a >= 0x4001fb && a < 0x400200)
			buf[i] = a == 0x4001fb ? 0xe8 : (uint8_t)((uint32_t)rel >> (8 * (a - 0x4001fc)));
		else if (a == 0x4002fe || a == 0x4002ff)
			buf[i] = a == 0x4002fe ? 0xff : 0xd0;
		else if (a < 0x400400 && a >= 0x4003f8)
			buf[i] = 0xcc;
	}
	return len;
}

/* A process whose code at every address was freed since (SP_READ_CODE_GONE). */
static size_t gone_code(void *ctx, uint64_t addr, uint8_t *buf, size_t len)
{
	(void)ctx, (void)addr, (void)buf, (void)len;
	return SP_READ_CODE_GONE;
}

Test(unwind, frameless_function_steps_from_its_sp)
{
	struct fp_stack f;
	uint64_t pcs[8];
	size_t n;
	unsigned stop;
	struct sp_unwind_stats stats = { 0 };
	struct sp_unwind_module nocfi = { .start = 0x400000, .end = 0x500000, .read_code = fake_code };

	/* a frameless leaf at 0x400110, entered by the direct call ending at 0x400200:
	 * its SP holds that return address, rbp is still its caller's */
	fp_stack_init(&f, 0, 0x400300);
	f.w[0] = 0x400200;
	f.r.regs[SP_DW_RIP] = 0x400110;
	f.r.regs[SP_DW_RBP] = (uintptr_t)&f.w[4];
	cr_assert_eq(sp_unwind(&f.r, &f.mem, find_nocfi, &nocfi, pcs, 8, &n, &stop, &stats), 0);
	cr_assert_eq(stop, SP_STOP_ROOT);
	cr_assert_eq(n, 3);
	cr_assert_eq(pcs[1], 0x4001ff, "the caller, from the return address at the SP");
	cr_assert_eq(pcs[2], 0x4002ff, "then the frame record at rbp");

	/* a direct call whose target lies above the pc did not enter this function:
	 * the slot is the frame's data, the step goes from the record at rbp */
	f.r.regs[SP_DW_RIP] = 0x4000f0;
	cr_assert_eq(sp_unwind(&f.r, &f.mem, find_nocfi, &nocfi, pcs, 8, &n, &stop, &stats), 0);
	cr_assert_eq(stop, SP_STOP_ROOT);
	cr_assert_eq(n, 2);
	cr_assert_eq(pcs[1], 0x4002ff, "from rbp's record, not the slot");

	/* code that cannot be read proves nothing either way: no step */
	struct sp_unwind_module unreadable = { .start = 0x400000, .end = 0x500000 };
	cr_assert_eq(sp_unwind(&f.r, &f.mem, find_nocfi, &unreadable, pcs, 8, &n, &stop, &stats), 0);
	cr_assert_eq(stop, SP_STOP_NO_UNWIND_INFO);
	cr_assert_eq(n, 1);

	/* code the live process no longer has (freed JIT code) is no running frame's
	 * return address: the slot is data, the step goes from rbp */
	struct sp_unwind_module gone = { .start = 0x400000, .end = 0x500000, .read_code = gone_code };
	f.w[0] = 0x400200;
	cr_assert_eq(sp_unwind(&f.r, &f.mem, find_nocfi, &gone, pcs, 8, &n, &stop, &stats), 0);
	cr_assert_eq(stop, SP_STOP_ROOT);
	cr_assert_eq(n, 2);
	cr_assert_eq(pcs[1], 0x4002ff, "from rbp's record, not the stale slot");

	/* after an indirect call any pc will do */
	f.w[0] = 0x400300;
	f.w[4] = 0;
	f.w[5] = 0x400200;
	cr_assert_eq(sp_unwind(&f.r, &f.mem, find_nocfi, &nocfi, pcs, 8, &n, &stop, &stats), 0);
	cr_assert_eq(stop, SP_STOP_ROOT);
	cr_assert_eq(n, 3);
	cr_assert_eq(pcs[1], 0x4002ff);

	/* a code address after no call (a function pointer in a local) is data:
	 * the step goes from rbp, whose record (w[4], w[5]) leads to 0x400200 */
	f.w[0] = 0x400400;
	cr_assert_eq(sp_unwind(&f.r, &f.mem, find_nocfi, &nocfi, pcs, 8, &n, &stop, &stats), 0);
	cr_assert_eq(stop, SP_STOP_ROOT);
	cr_assert_eq(n, 2);
	cr_assert_eq(pcs[1], 0x4001ff, "from rbp's record, not the slot");
}

/* Every frame of the fake module keeps one local: CFA = rsp + 16, the return address at CFA - 8. */
static const struct sp_cfi_row *one_local_row(void *ctx, const struct sp_unwind_module *m,
					      uint64_t pc, bool after_call, struct sp_cfi_row *out)
{
	(void)ctx, (void)m, (void)pc, (void)after_call;
	*out = (struct sp_cfi_row){ .kind = SP_CFI_CFA_REG, .cfa_reg = SP_DW_RSP, .cfa_off = 16,
				    .ra_off = -8 };
	return out;
}

/*
 * An unwind that fails is checked back from its leaf: a return address that
 * follows no call into the frame before it (a slot the program rewrote, as
 * libgcc does while it hands an exception to its handler) ends the stack
 * there, not past it.
 */
Test(unwind, a_failed_stack_ends_before_a_return_address_after_no_call)
{
	uint64_t w[6] = { 0 }, pcs[8], base = (uintptr_t)w;
	size_t n;
	unsigned stop;
	struct sp_unwind_stats stats = { 0 };
	struct sp_unwind_module m = { .start = 0x400000, .end = 0x500000, .code_row = one_local_row,
				      .read_code = fake_code };
	struct sp_regs r = { .valid = 1u << SP_DW_RIP | 1u << SP_DW_RSP };
	struct sp_stack_mem mem = { base, (const uint8_t *)w, sizeof(w) };

	r.regs[SP_DW_RIP] = 0x400110;
	r.regs[SP_DW_RSP] = base;
	w[1] = 0x400200; /* after the direct call of 0x400100: into frame 0's function */
	w[3] = 0x400400; /* after padding: no call at all */
	w[5] = 0x1000;   /* in no module: the unwind fails */
	cr_assert_eq(sp_unwind(&r, &mem, find_nocfi, &m, pcs, 8, &n, &stop, &stats), 0);
	cr_assert_eq(stop, SP_STOP_UNMAPPED);
	cr_assert_eq(n, 2, "the frame reached through 0x400400 and those past it are dropped (%zu)", n);
	cr_assert_eq(pcs[1], 0x4001ff);
	cr_assert_eq(stats.bad_returns, 1);

	/* after an indirect call any callee will do: nothing is dropped */
	w[3] = 0x400300;
	cr_assert_eq(sp_unwind(&r, &mem, find_nocfi, &m, pcs, 8, &n, &stop, &stats), 0);
	cr_assert_eq(stop, SP_STOP_UNMAPPED);
	cr_assert_eq(n, 3);

	/* a direct call whose target lies above the callee's pc called another function */
	r.regs[SP_DW_RIP] = 0x4000f0;
	cr_assert_eq(sp_unwind(&r, &mem, find_nocfi, &m, pcs, 8, &n, &stop, &stats), 0);
	cr_assert_eq(n, 1);
	cr_assert_eq(stats.bad_returns, 2);

	/* a stack that reaches its root is not checked */
	r.regs[SP_DW_RIP] = 0x400110;
	w[3] = 0x400400;
	w[5] = 0;
	cr_assert_eq(sp_unwind(&r, &mem, find_nocfi, &m, pcs, 8, &n, &stop, &stats), 0);
	cr_assert_eq(stop, SP_STOP_ROOT);
	cr_assert_eq(n, 3);
}

Test(unwind, frame_record_at_the_sp_just_after_push_rbp)
{
	struct fp_stack f;
	uint64_t pcs[8];
	size_t n;
	unsigned stop;
	struct sp_unwind_stats stats = { 0 };
	struct sp_unwind_module nocfi = { .start = 0x400000, .end = 0x500000, .read_code = fake_code };

	/* push %rbp done, mov %rsp,%rbp not yet: the SP slot holds rbp's own value,
	 * the record there is [caller's rbp, return address] */
	fp_stack_init(&f, 0, 0x400300);
	f.r.regs[SP_DW_RSP] = (uintptr_t)&f.w[4];
	f.r.regs[SP_DW_RBP] = 0;
	f.w[4] = 0;
	f.mem = (struct sp_stack_mem){ (uintptr_t)&f.w[4], (const uint8_t *)&f.w[4], 4 * 8 };
	f.w[6] = 0;
	f.w[7] = 0x400200;
	f.w[4] = (uintptr_t)&f.w[6];
	f.r.regs[SP_DW_RBP] = (uintptr_t)&f.w[6];
	cr_assert_eq(sp_unwind(&f.r, &f.mem, find_nocfi, &nocfi, pcs, 8, &n, &stop, &stats), 0);
	cr_assert_eq(stop, SP_STOP_ROOT);
	cr_assert_eq(n, 3);
	cr_assert_eq(pcs[1], 0x4002ff, "the caller from the record at the SP");
	cr_assert_eq(pcs[2], 0x4001ff, "not skipped to the one at rbp");
}

/*
 * V8's code entered by on-stack replacement keeps rbp's value in its lowest
 * slot while its loop runs: no return address lies above it, so the record
 * is at rbp, not at the SP.
 */
Test(unwind, rbp_value_at_the_sp_without_a_return_address_is_data)
{
	static const uint64_t above[] = {7, 0x400400}; /* data; code after no call */
	for (size_t i = 0; i < SP_ARRAY_SIZE(above); i++) {
		struct fp_stack f;
		struct sp_unwind_module code = { .start = 0x400000, .end = 0x500000,
						 .read_code = fake_code };
		uint64_t pcs[8];
		size_t n;
		unsigned stop;

		fp_stack_init(&f, 0, 0x400300);
		f.w[0] = f.r.regs[SP_DW_RBP];
		f.w[1] = above[i];
		cr_assert_eq(sp_unwind(&f.r, &f.mem, find_nocfi, &code, pcs, 8, &n, &stop, NULL), 0);
		cr_assert_eq(stop, SP_STOP_ROOT, "slot above %#" PRIx64, above[i]);
		cr_assert_eq(n, 3);
		cr_assert_eq(pcs[1], 0x4001ff, "the caller from the record at rbp");
		cr_assert_eq(pcs[2], 0x4002ff);
	}
}

Test(unwind, frame_pointers_past_the_copy_are_left_to_the_caller)
{
	struct fp_stack f;
	uint64_t pcs[8];
	size_t n;
	unsigned stop;
	struct sp_unwind_stats stats = { 0 };
	struct sp_unwind_module nocfi = { .start = 0x400000, .end = 0x500000 };

	/* the caller's record points past the copied bytes */
	fp_stack_init(&f, (uintptr_t)&f.w[6], 0x400300);
	f.w[6] = (uintptr_t)&f.w[6] + 4096;
	f.w[7] = 0x400400;
	cr_assert_eq(sp_unwind(&f.r, &f.mem, find_nocfi, &nocfi, pcs, 8, &n, &stop, &stats), 0);
	cr_assert_eq(stop, SP_STOP_STACK_EXHAUSTED);
	cr_assert_eq(n, 4);
	cr_assert_eq(stats.unproven, 1, "frames from the first step on wait for a proof");
	cr_assert_eq(stats.fp_steps, 3);

	/* without stats no caller can prove them: they are dropped */
	cr_assert_eq(sp_unwind(&f.r, &f.mem, find_nocfi, &nocfi, pcs, 8, &n, &stop, NULL), 0);
	cr_assert_eq(stop, SP_STOP_NO_UNWIND_INFO);
	cr_assert_eq(n, 1);
}

/* A module without CFI whose code proves the trampoline frame: CFA = rsp + 16 after its call. */
static unsigned code_row_calls;
static bool code_row_after_call[4];

static const struct sp_cfi_row *tramp_row(void *ctx, const struct sp_unwind_module *m,
					  uint64_t pc, bool after_call, struct sp_cfi_row *out)
{
	static const uint8_t tramp[] = {0x48, 0x83, 0xec, 0x08, 0xff, 0xd1,
					0x48, 0x83, 0xc4, 0x08, 0xc3};
	(void)ctx;
	if (code_row_calls < 4)
		code_row_after_call[code_row_calls] = after_call;
	code_row_calls++;
	/* copies of the trampoline every 16 bytes from the module's start */
	uint64_t off = (pc - m->start) % 16;
	return sp_codeframe_row(tramp, sizeof(tramp), off, after_call, out) ? NULL : out;
}

Test(unwind, code_without_cfi_proven_by_its_bytes)
{
	struct sp_regs r = { .valid = 1u << SP_DW_RIP | 1u << SP_DW_RSP };
	uint64_t pcs[4];
	size_t n;
	unsigned stop;
	struct sp_unwind_stats stats = { 0 };
	struct sp_unwind_module jit = { .start = 0x400000, .end = 0x500000, .code_row = tramp_row };
	/* the sampled pc before the trampoline's call (after its sub), then its own caller's
	 * return address (0x400016 = copy 1, offset 6), then a return address outside every
	 * module */
	uint64_t stack[6] = { 0, 0x400016, 0, 0x1000, 0, 0 };

	r.regs[SP_DW_RIP] = 0x400004;
	r.regs[SP_DW_RSP] = (uintptr_t)stack;
	struct sp_stack_mem mem = { (uintptr_t)stack, (const uint8_t *)stack, sizeof(stack) };
	code_row_calls = 0;
	cr_assert_eq(sp_unwind(&r, &mem, find_nocfi, &jit, pcs, 4, &n, &stop, &stats), 0);
	cr_assert_eq(stop, SP_STOP_UNMAPPED);
	cr_assert_eq(n, 2);
	cr_assert_eq(pcs[0], 0x400004);
	cr_assert_eq(pcs[1], 0x400015, "a return address is looked up at ra - 1");
	cr_assert_eq(code_row_calls, 2);
	cr_assert(!code_row_after_call[0], "the sampled pc is exact");
	cr_assert(code_row_after_call[1], "the caller's pc is a return address");
	cr_assert_eq(stats.code_frames, 2);

	/* a pc the code does not prove (inside the call instruction, or sampled just after
	 * it: the callee may have moved rsp) ends the stack */
	for (uint64_t pc = 0x400005; pc <= 0x400006; pc++) {
		r.regs[SP_DW_RIP] = pc;
		cr_assert_eq(sp_unwind(&r, &mem, find_nocfi, &jit, pcs, 4, &n, &stop, NULL), 0);
		cr_assert_eq(stop, SP_STOP_NO_UNWIND_INFO);
		cr_assert_eq(n, 1);
	}
}

Test(unwind, unknown_cfa_register_is_bad_rule)
{
	struct capture c;
	uint64_t pcs[MAXF];
	size_t n;
	unsigned stop;

	capture_chain(&c);
	/* the CFA is rsp- or (with frame pointers) rbp-based: know neither */
	c.regs.valid &= ~(1u << SP_DW_RSP | 1u << SP_DW_RBP);
	unwind(&c, pcs, MAXF, &n, &stop, NULL);
	cr_assert_eq(stop, SP_STOP_BAD_RULE);
	cr_assert_eq(n, 1);
	free(c.buf);
}

/* Captured inside the VLA frame, where the CFA is rbp + 16. */
static NOINL void vla_capture(struct capture *c, int n)
{
	volatile char vla[n];

	vla[0] = 1;
	LS_CAPTURE(&c->regs);
	__asm__ volatile("" : : "r"(vla) : "memory");
	capture_rest(c);
	__asm__ volatile("" ::: "memory");
}

Test(unwind, cfa_below_sp_is_no_progress)
{
	struct capture c;
	uint64_t pcs[MAXF];
	size_t n;
	unsigned stop;
	bool hit;

	c.buf = malloc(STACK_CAP);
	vla_capture(&c, vla_len);
	const struct ls_module *mod = ls_map_module(&map, c.regs.regs[SP_DW_RIP]);
	const struct sp_cfi_row *row = sp_cfi_table_lookup(
		mod->um.cfi, c.regs.regs[SP_DW_RIP] - mod->um.load_bias, &hit);
	cr_assert_not_null(row);
	cr_assert_eq(row->kind, SP_CFI_CFA_REG);
	cr_assert_eq(row->cfa_reg, SP_DW_RBP);
	/* the real frame unwinds */
	unwind(&c, pcs, MAXF, &n, &stop, NULL);
	cr_assert_eq(stop, SP_STOP_ROOT);
	expect_name(pcs[1], "unwind_cfa_below_sp_is_no_progress_impl");
	/* a frame pointer below the stack pointer cannot describe a caller */
	c.regs.regs[SP_DW_RBP] = c.regs.regs[SP_DW_RSP] - 64;
	unwind(&c, pcs, MAXF, &n, &stop, NULL);
	cr_assert_eq(stop, SP_STOP_NO_PROGRESS);
	cr_assert_eq(n, 1);
	free(c.buf);
}

/* ---- signal frames ------------------------------------------------------- */

static struct capture sigcap;
static uint64_t sig_rip, sig_restorer;

static void on_signal(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	LS_CAPTURE(&sigcap.regs);
	sig_rip = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	capture_rest(&sigcap);
	__asm__ volatile("" ::: "memory");
}

static NOINL void sig_f2(void)
{
	raise(SIGUSR1);
	__asm__ volatile("" ::: "memory");
}

static NOINL void sig_f1(void)
{
	sig_f2();
	__asm__ volatile("" ::: "memory");
}

Test(unwind, walks_through_signal_frame)
{
	struct sigaction sa = { .sa_sigaction = on_signal, .sa_flags = SA_SIGINFO }, old;
	uint64_t pcs[MAXF];
	size_t n, i;
	unsigned stop;
	bool hit;

	sigcap.buf = malloc(STACK_CAP);
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	cr_assert_eq(sigaction(SIGUSR1, NULL, &old), 0);
	sig_restorer = (uintptr_t)old.sa_restorer;
	sig_f1();
	cr_assert_neq(sig_rip, 0);

	unwind(&sigcap, pcs, MAXF, &n, &stop, NULL);
	cr_assert_eq(stop, SP_STOP_ROOT, "stopped: %s after %zu frames", sp_stop_reason_name(stop), n);
	expect_name(pcs[0], "on_signal");
	/* the trampoline frame is emitted at __restore_rt itself */
	cr_assert_eq(pcs[1], sig_restorer);
	const struct ls_module *libc = ls_map_module(&map, pcs[1]);
	const struct sp_cfi_row *row = sp_cfi_table_lookup(
		libc->um.cfi, pcs[1] - 1 - libc->um.load_bias, &hit);
	cr_assert(row && (row->flags & SP_CFI_F_SIGNAL) && row->kind == SP_CFI_UCONTEXT);
	/* the interrupted frame is its exact pc */
	cr_assert_eq(pcs[2], sig_rip);
	for (i = 3; i < n && !(ls_symbol(&map, pcs[i]) &&
			       strcmp(ls_symbol(&map, pcs[i]), "sig_f2") == 0); i++)
		;
	cr_assert_lt(i + 2, n, "sig_f2 not found below the signal frame");
	expect_name(pcs[i + 1], "sig_f1");
	expect_name(pcs[i + 2], "unwind_walks_through_signal_frame_impl");
	expect_name(pcs[n - 1], "_start");

	/* libunwind: return addresses, but the trampoline and interrupted pc as they are */
	cr_assert_geq(sigcap.unw_n, n);
	expect_name(sigcap.unw_ips[0], "on_signal");
	for (size_t k = 1; k < n; k++) {
		uint64_t want = k <= 2 ? pcs[k] : pcs[k] + 1;

		cr_assert_eq(want, sigcap.unw_ips[k], "frame %zu: ours %#lx, libunwind %#lx", k,
			     (unsigned long)want, (unsigned long)sigcap.unw_ips[k]);
	}
	signal(SIGUSR1, SIG_DFL);
	free(sigcap.buf);
}

/* ---- interrupted states ----------------------------------------------- */

/*
 * Like perf, sample this process at arbitrary instructions (prologues,
 * epilogues, PLT stubs, libc internals) with a profiling timer: the handler
 * keeps the interrupted registers and the stack above the interrupted SP,
 * and every sample must unwind to the root.
 */
#define ASYNC_SAMPLES 200
#define ASYNC_CAP 32768

struct async_sample {
	struct sp_regs regs;
	size_t len;
	uint8_t stack[ASYNC_CAP];
};

static struct async_sample *async;
static volatile int async_n;
static uint64_t async_top;

static void on_prof(int sig, siginfo_t *si, void *ucv)
{
	struct async_sample *s;

	if (async_n >= ASYNC_SAMPLES)
		return;
	s = &async[async_n];
	ls_regs_from_ucontext(ucv, &s->regs);
	if (s->regs.regs[SP_DW_RSP] >= async_top)
		return;
	s->len = ls_copy_stack(s->stack, s->regs.regs[SP_DW_RSP], async_top, ASYNC_CAP);
	async_n++;
}

static int cmp_slowly(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	for (int i = 0; i < 20; i++) {
		x = x * 2654435761u + 1;
		y = y * 2654435761u + 1;
		__asm__ volatile("" : "+r"(x), "+r"(y));
	}
	return (x > y) - (x < y);
}

static NOINL unsigned long busy(int depth)
{
	static unsigned items[1024];
	char text[128];
	unsigned seed = (unsigned)depth * 7919u + 1;
	void *p;

	if (depth > 0)
		return busy(depth - 1) + 1;
	for (size_t i = 0; i < SP_ARRAY_SIZE(items); i++)
		items[i] = (seed = seed * 1103515245u + 12345u) >> 8;
	qsort(items, SP_ARRAY_SIZE(items), sizeof(items[0]), cmp_slowly);
	snprintf(text, sizeof(text), "%u %g %s", items[3], items[5] / 7.0, "x");
	p = malloc(strlen(text) + (items[7] & 4095));
	free(p);
	return strtod(text + 2, NULL) > 0;
}

static void busy_once(int n)
{
	busy(n % 5);
}

Test(unwind, unwinds_interrupted_states_to_root)
{
	volatile int here;
	uint64_t pcs[MAXF];
	size_t n;
	unsigned stop;

	async = calloc(ASYNC_SAMPLES, sizeof(*async));
	cr_assert_not_null(async);
	async_top = ls_mapping_end((uintptr_t)&here);
	cr_assert_eq(ls_profile(on_prof, 1000, &async_n, ASYNC_SAMPLES, 10, busy_once), 0);
	cr_assert_gt(async_n, 20, "only %d samples", async_n);

	int outside = 0;
	for (int i = 0; i < async_n; i++) {
		const struct async_sample *s = &async[i];
		struct sp_stack_mem mem = { s->regs.regs[SP_DW_RSP], s->stack, s->len };

		/*
		 * The loop's clock_gettime runs in the [vdso], which this test's
		 * module map (file-backed mappings only) does not hold: such a
		 * sample says nothing about the unwinder, so it is left out.
		 */
		if (!ls_find(&map, s->regs.regs[SP_DW_RIP])) {
			outside++;
			continue;
		}
		sp_unwind(&s->regs, &mem, ls_find, &map, pcs, MAXF, &n, &stop, NULL);
		const char *leaf = ls_symbol(&map, pcs[0]);

		cr_assert_eq(stop, SP_STOP_ROOT, "sample %d at %#lx (%s): %s after %zu frames", i,
			     (unsigned long)pcs[0], leaf ? leaf : "?", sp_stop_reason_name(stop), n);
		expect_name(pcs[n - 1], "_start");
	}
	cr_assert_lt(outside, async_n / 4, "%d of %d samples outside the module map", outside,
		     async_n);
	free(async);
}

/* ---- epilogues ----------------------------------------------------------- */

/*
 * fx_fp_caller keeps a frame pointer (CFA = rbp + 16) and calls fx_epi,
 * whose rows after `pop %rbp` still say "rbp saved at CFA-16" (as GCC
 * writes epilogues), a slot now below the SP.  Never called.
 */
__asm__(".text\n"
	".globl fx_epi, fx_epi_ret, fx_fp_caller, fx_fp_caller_ret\n"
	".hidden fx_epi, fx_epi_ret, fx_fp_caller, fx_fp_caller_ret\n"
	"fx_epi: .cfi_startproc\n push %rbp\n .cfi_def_cfa_offset 16\n .cfi_offset rbp, -16\n"
	" nop\n pop %rbp\n .cfi_def_cfa_offset 8\n"
	"fx_epi_ret: ret\n .cfi_endproc\n"
	"fx_fp_caller: .cfi_startproc\n push %rbp\n .cfi_def_cfa_offset 16\n .cfi_offset rbp, -16\n"
	" mov %rsp, %rbp\n .cfi_def_cfa_register rbp\n call fx_epi\n"
	"fx_fp_caller_ret: nop\n pop %rbp\n .cfi_def_cfa rsp, 8\n ret\n .cfi_endproc\n");
void fx_epi(void), fx_epi_ret(void), fx_fp_caller(void), fx_fp_caller_ret(void);

Test(unwind, popped_register_keeps_its_value)
{
	uint64_t stack[3], pcs[4];
	struct sp_regs r = { .valid = 1u << SP_DW_RIP | 1u << SP_DW_RSP | 1u << SP_DW_RBP };
	struct sp_stack_mem mem = { (uintptr_t)stack, (const uint8_t *)stack, sizeof(stack) };
	size_t n;
	unsigned stop;

	/* at fx_epi's ret: [rsp] = return into the caller, then the caller's saved rbp and RA */
	stack[0] = (uintptr_t)&fx_fp_caller_ret;
	stack[1] = 0;
	stack[2] = 0; /* the caller's return address: 0 ends the stack */
	r.regs[SP_DW_RIP] = (uintptr_t)&fx_epi_ret;
	r.regs[SP_DW_RSP] = (uintptr_t)stack;
	r.regs[SP_DW_RBP] = (uintptr_t)&stack[1]; /* popped: the caller's frame pointer */
	cr_assert_eq(sp_unwind(&r, &mem, ls_find, &map, pcs, 4, &n, &stop, NULL), 0);
	cr_assert_eq(stop, SP_STOP_ROOT, "%s after %zu", sp_stop_reason_name(stop), n);
	cr_assert_eq(n, 2);
	cr_assert_eq(pcs[1], (uintptr_t)&fx_fp_caller_ret - 1);

	/* rbp not sampled: the caller's rule cannot be applied */
	r.valid &= ~(1u << SP_DW_RBP);
	cr_assert_eq(sp_unwind(&r, &mem, ls_find, &map, pcs, 4, &n, &stop, NULL), 0);
	cr_assert_eq(stop, SP_STOP_BAD_RULE);
	cr_assert_eq(n, 2);
}

/* ---- PLT entries ------------------------------------------------------- */

static NOINL uint64_t my_return_address(void)
{
	return (uintptr_t)__builtin_return_address(0);
}

Test(unwind, steps_out_of_plt_entry)
{
	const struct ls_module *self = ls_map_module(&map, (uintptr_t)&my_return_address);
	uint64_t plt_size, plt = ls_section(self, ".plt", &plt_size);
	uint64_t ra = my_return_address();
	uint64_t pcs[4];
	size_t n;
	unsigned stop;

	if (!plt || plt_size < 32)
		cr_skip_test("test binary has no .plt entries");
	for (unsigned off = 0; off < 16; off++) {
		/* before the entry's push the return address is at rsp, after it at rsp + 8 */
		uint64_t stack[2] = { off >= 11 ? 0x1234 : ra, off >= 11 ? ra : 0 };
		struct sp_regs r = { .valid = 1u << SP_DW_RIP | 1u << SP_DW_RSP };
		struct sp_stack_mem mem = { (uintptr_t)stack, (const uint8_t *)stack, sizeof(stack) };

		r.regs[SP_DW_RIP] = self->um.load_bias + plt + 16 + off;
		r.regs[SP_DW_RSP] = (uintptr_t)stack;
		cr_assert_eq(sp_unwind(&r, &mem, ls_find, &map, pcs, 2, &n, &stop, NULL), 0);
		cr_assert_eq(n, 2, "offset %u: %s after %zu", off, sp_stop_reason_name(stop), n);
		/*
		 * The caller's own rule needs bytes beyond the 16 given, or rbp
		 * when it keeps a frame pointer (sanitizer builds).
		 */
		cr_assert(stop == SP_STOP_STACK_EXHAUSTED || stop == SP_STOP_BAD_RULE,
			  "offset %u: %s", off, sp_stop_reason_name(stop));
		cr_assert_eq(pcs[1], ra - 1);
		expect_name(pcs[1], "unwind_steps_out_of_plt_entry_impl");
	}
}

/* ---- speed ------------------------------------------------------------- */

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* Not a timed assertion (STYLE: benchmarks print figures); prints ns/frame. */
Test(unwind, reports_ns_per_frame)
{
	struct capture c;
	uint64_t pcs[MAXF];
	size_t n = 0;
	unsigned stop;
	const int iters = 100000;
	double t0, cold, warm;

	capture_chain(&c);
	ls_map_reset_cfi(&map);
	t0 = now_ns();
	unwind(&c, pcs, MAXF, &n, &stop, NULL);
	cold = now_ns() - t0;
	cr_assert_eq(stop, SP_STOP_ROOT);
	t0 = now_ns();
	for (int i = 0; i < iters; i++)
		sp_unwind(&c.regs, &c.mem, ls_find, &map, pcs, MAXF, &n, &stop, NULL);
	warm = (now_ns() - t0) / iters;
	fprintf(stderr, "unwind: %zu frames; cold %.0f ns/frame (first unwind, rows compiled); "
			"warm %.1f ns/frame (%d unwinds)\n",
		n, cold / n, warm / n, iters);
	free(c.buf);
}
