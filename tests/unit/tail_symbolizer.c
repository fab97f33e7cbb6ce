/* SPDX-License-Identifier: MIT */
/* Unit tests of the symbolizer following a growing spool (lib/symbols/followed_spool.c). */
#include <criterion/criterion.h>

#include "symbols/symbols.h"
#include "self_module.h"
#include "spool_fixture.h"

#include <sys/stat.h>

/* ---- code of this binary with known names and an inline chain ---------------- */

/* Known names; bodies long enough that +4 stays inside them. */
__attribute__((noinline)) int sp_tail_known_alpha(int x)
{
	volatile int acc = x;
	while (acc < 1000)
		acc = acc * 3 + 1;
	return acc;
}

__attribute__((noinline)) int sp_tail_known_beta(int x)
{
	return sp_tail_known_alpha(x) * 2 + 1;
}

static inline __attribute__((always_inline)) uint64_t sp_tail_inline_inner(void)
{
	uint64_t pc;
	__asm__ volatile("1: lea 1b(%%rip), %0" : "=r"(pc));
	return pc;
}

__attribute__((noinline)) uint64_t sp_tail_inline_outer(void)
{
	return sp_tail_inline_inner() ^ 1;
}

static uint64_t addr_of(void *fn)
{
	return (uint64_t)(uintptr_t)fn + 4;
}

/* ---- a spool written step by step, followed by a tail ----------------------- */

#define JIT_START 0x7f0000000000ull
#define STRAY 0x7f0000100000ull /* code outside every module, named by the perf map */
#define OTHER_PID 0x7ffff0      /* a second process, sharing a frame */

static struct sp_spool_writer *w;
static struct sp_tail *tail;
static struct sp_symbolizer *tsym; /* follows the tail */
static struct sp_spool *whole;     /* the finished spool, read whole */
static struct sp_symbolizer *wsym; /* built on it */
static struct sp_invalidation inv;
static struct sp_tail_batch batch;
static int32_t pid;
static uint32_t thread;
static char map_name[64];

static void write_text(const char *name, const char *text, const char *mode)
{
	FILE *f = fopen(tmp_path(name), mode);
	cr_assert_not_null(f);
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(chmod(tmp_path(name), 0600), 0);
}

static void setup(void)
{
	tmp_setup();
	struct sp_spool_meta meta = {.frequency_hz = 99, .command = "t", .hostname = "h",
				     .kernel_release = "k"};
	cr_assert_eq(sp_spool_writer_open(tmp_path("t.spool"), &meta, &w), 0);
	cr_assert_eq(sp_spool_writer_flush(w), 0);
	cr_assert_eq(sp_tail_open(tmp_path("t.spool"), &tail), 0);
	pid = getpid();
	cr_assert_eq(sp_spool_writer_intern_thread(w, pid, pid, &thread), 0);
	write_text("kallsyms", "ffffffff81000000 T _stext\nffffffff81000200 T do_syscall_64\n"
			       "ffffffff81000300 T vfs_read\nffffffff81000400 T vfs_write\n", "w");
	snprintf(map_name, sizeof(map_name), "perf-%d.map", (int)pid);
	write_text(map_name, "7f0000001000 40 jit_hot_loop\n7f0000002000 40 py::handle:/srv/app.py\n"
			     "7f0000100000 40 jit_stray\n", "w");
}

static void teardown(void)
{
	sp_invalidation_release(&inv);
	sp_symbolizer_free(tsym);
	sp_symbolizer_free(wsym);
	sp_spool_free(whole);
	sp_tail_free(tail);
	sp_spool_writer_free(w);
	tsym = wsym = NULL;
	whole = NULL;
	tail = NULL;
	w = NULL;
	tmp_teardown();
}

TestSuite(tail_symbolizer, .init = setup, .fini = teardown);

static struct sp_symbolizer_opts opts(void)
{
	return (struct sp_symbolizer_opts){.kallsyms_path = tmp_path("kallsyms"),
					   .perf_map_dir = tmp_dir};
}

/* This process's mapping holding addr, recorded as the recorder would, for pid. */
static uint32_t mapping_of(uint64_t addr, int32_t owner, struct sp_module *m)
{
	sp_test_self_module(w, m, addr); /* recorded once for pid 0 */
	m->pid = owner;
	uint32_t id;
	cr_assert_eq(sp_spool_writer_add_module(w, m, &id), 0);
	return id;
}

static uint32_t anon_module(int32_t owner)
{
	struct sp_module m = {.pid = owner, .start = JIT_START, .end = JIT_START + 0x10000,
			      .flags = SP_MODULE_ANON, .path = "//anon"};
	uint32_t id;
	cr_assert_eq(sp_spool_writer_add_module(w, &m, &id), 0);
	return id;
}

static uint32_t frame(uint32_t mid, const struct sp_module *m, uint8_t mode, uint64_t addr)
{
	struct sp_frame f = {.module_id = mid, .mode = mode, .abs_ip = addr};
	if (m)
		f.rel_ip = addr - m->start + m->file_offset;
	uint32_t id;
	cr_assert_eq(sp_spool_writer_intern_frame(w, &f, &id), 0);
	return id;
}

/* A sample of thread t whose stack is frames (leaf first); its stack id. */
static uint32_t sample(uint32_t t, const uint32_t *frames, size_t n)
{
	static uint64_t time = 1000;
	uint32_t stack;
	cr_assert_eq(sp_spool_writer_intern_stack(w, frames, n, &stack), 0);
	cr_assert_eq(sp_spool_writer_append_sample(w, t, stack, time += 1000), 0);
	return stack;
}

/* The leaf's name as the symbolizer's own stack cache streams the stack. */
static int keep_first(const struct sp_resolved_frame *f, void *arg)
{
	const char **name = arg;
	if (!*name)
		*name = f->name;
	return 0;
}

static const char *streamed_leaf(uint32_t stack)
{
	const char *name = NULL;
	cr_assert_eq(sp_symbolizer_for_each_stack_frame(tsym, pid, stack, keep_first, &name), 0);
	return name;
}

/* Flush (or finish), poll and update: inv holds what the update invalidated. */
static void step(bool finish)
{
	if (finish) {
		struct sp_summary sum = {0};
		cr_assert_eq(sp_spool_writer_finish(w, &sum), 0);
	} else {
		cr_assert_eq(sp_spool_writer_flush(w), 0);
	}
	cr_assert_eq(sp_tail_poll(tail, &batch), 0);
	cr_assert_not(batch.has_more);
	cr_assert_eq(batch.finished, finish);
	if (!tsym) {
		struct sp_symbolizer_opts o = opts();
		cr_assert_eq(sp_tail_symbolizer(tail, &o, &tsym), 0);
	}
	sp_invalidation_release(&inv);
	cr_assert_eq(sp_symbolizer_update(tsym, &batch, &inv), 0);
}

/* Resolve every frame the tail has brought (as a live view would, batch after batch). */
static void resolve_everything(void)
{
	for (uint32_t id = 0; id < sp_spool_frame_count(sp_tail_spool(tail)); id++) {
		const struct sp_resolved_frame *f;
		size_t n;
		cr_assert_eq(sp_symbolizer_resolve_all(tsym, id, &f, &n), 0, "frame %u", id);
	}
}

static const struct sp_resolved_frame *tail_frame(uint32_t id)
{
	const struct sp_resolved_frame *f;
	cr_assert_eq(sp_symbolizer_resolve(tsym, id, &f), 0);
	return f;
}

static bool inv_has_frame(uint32_t id)
{
	for (size_t i = 0; i < inv.nframes; i++)
		if (inv.frames[i] == id)
			return true;
	return false;
}

static const char *str(const char *s)
{
	return s ? s : "(null)";
}

/* The finished spool read whole, and a symbolizer built on it the usual way. */
static void open_whole(void)
{
	cr_assert_eq(sp_spool_open(tmp_path("t.spool"), &whole), 0);
	struct sp_symbolizer_opts o = opts();
	cr_assert_eq(sp_symbolizer_new(whole, &o, &wsym), 0);
}

/* Every frame resolves in the follower exactly as in the symbolizer of the whole spool. */
static void expect_same_as_whole(void)
{
	open_whole();
	cr_assert_eq(sp_spool_frame_count(whole), sp_spool_frame_count(sp_tail_spool(tail)));
	for (uint32_t id = 0; id < sp_spool_frame_count(whole); id++) {
		const struct sp_resolved_frame *a, *b;
		size_t na, nb;
		cr_assert_eq(sp_symbolizer_resolve_all(wsym, id, &a, &na), 0);
		cr_assert_eq(sp_symbolizer_resolve_all(tsym, id, &b, &nb), 0);
		cr_assert_eq(na, nb, "frame %u: chain of %zu, followed %zu ('%s')", id, na, nb,
			     b[nb - 1].name);
		for (size_t i = 0; i < na; i++) {
			cr_expect_str_eq(str(a[i].name), str(b[i].name), "frame %u.%zu", id, i);
			cr_expect_str_eq(str(a[i].module), str(b[i].module), "frame %u.%zu", id, i);
			cr_expect_str_eq(str(a[i].file), str(b[i].file), "frame %u.%zu", id, i);
			cr_expect_eq(a[i].line, b[i].line, "frame %u.%zu", id, i);
			cr_expect_eq(a[i].kind, b[i].kind, "frame %u.%zu", id, i);
			cr_expect_eq(a[i].origin, b[i].origin, "frame %u.%zu '%s'", id, i, a[i].name);
			cr_expect_eq(a[i].flags, b[i].flags, "frame %u.%zu", id, i);
			cr_expect_eq(a[i].pc, b[i].pc, "frame %u.%zu", id, i);
			cr_expect_eq(a[i].symbol_offset, b[i].symbol_offset, "frame %u.%zu", id, i);
		}
		cr_expect_eq(sp_symbolizer_frame_src(wsym, id), sp_symbolizer_frame_src(tsym, id),
			     "frame %u", id);
	}
	/* Frames resolved again had their first counts taken back. */
	struct sp_symbolizer_stats x, y;
	sp_symbolizer_stats(wsym, &x);
	sp_symbolizer_stats(tsym, &y);
	cr_expect_eq(x.frames_named, y.frames_named);
	cr_expect_eq(x.frames_address_only, y.frames_address_only);
	cr_expect_eq(x.inline_frames, y.inline_frames);
	cr_expect_eq(x.frames_with_lines, y.frames_with_lines);
	cr_expect_eq(x.kernel_frames_named, y.kernel_frames_named);
	cr_expect_eq(x.perf_map_frames_named, y.perf_map_frames_named);
	cr_expect_eq(x.perf_map_frames_unmapped, y.perf_map_frames_unmapped);
	cr_expect_eq(x.perf_maps_read, y.perf_maps_read);
	cr_expect_eq(x.perf_maps_missing, y.perf_maps_missing);
	cr_expect_eq(x.frames_stored, y.frames_stored);
	cr_expect_eq(x.files_proven, y.files_proven);
}

/* ---- (a) batch by batch, the same names as the finished spool --------------- */

Test(tail_symbolizer, batch_by_batch_names_every_frame_as_the_finished_spool)
{
	struct sp_module self, libc;
	uint32_t self_id = mapping_of(addr_of(sp_tail_known_alpha), pid, &self);
	uint32_t jit_id = anon_module(pid);
	uint32_t f_inline = frame(self_id, &self, SP_FRAME_USER, sp_tail_inline_outer());
	uint32_t f_alpha = frame(self_id, &self, SP_FRAME_USER, addr_of(sp_tail_known_alpha));
	uint32_t f_jit = frame(jit_id, NULL, SP_FRAME_USER, JIT_START + 0x1010);
	uint32_t f_py = frame(jit_id, NULL, SP_FRAME_USER, JIT_START + 0x2010);
	uint32_t f_k1 = frame(SP_NO_MODULE, NULL, SP_FRAME_KERNEL, 0xffffffff81000210);
	uint32_t f_stray = frame(SP_NO_MODULE, NULL, SP_FRAME_USER, STRAY + 0x10);
	sample(thread, (uint32_t[]){f_k1, f_inline, f_alpha}, 3);
	sample(thread, (uint32_t[]){f_jit, f_py, f_stray, f_alpha}, 4);
	step(false);
	resolve_everything();
	const struct sp_resolved_frame *alpha = tail_frame(f_alpha);
	cr_expect_str_eq(alpha->name, "sp_tail_known_alpha");
	cr_expect_str_eq(tail_frame(f_k1)->name, "do_syscall_64");
	cr_expect_str_eq(tail_frame(f_stray)->name, "jit_stray", "its one process's map");
	const struct sp_resolved_frame *chain;
	size_t n;
	cr_assert_eq(sp_symbolizer_resolve_all(tsym, f_inline, &chain, &n), 0);
	cr_expect_eq(n, 2, "the inline chain");
	cr_expect_str_eq(chain[0].name, "sp_tail_inline_inner");

	/* A library, another kernel function (kallsyms read again for it), more of this binary. */
	uint32_t libc_id = mapping_of(addr_of(qsort), pid, &libc);
	uint32_t f_libc = frame(libc_id, &libc, SP_FRAME_USER, addr_of(qsort));
	uint32_t f_k2 = frame(SP_NO_MODULE, NULL, SP_FRAME_KERNEL, 0xffffffff81000310);
	uint32_t f_beta = frame(self_id, &self, SP_FRAME_USER, addr_of(sp_tail_known_beta));
	sample(thread, (uint32_t[]){f_k2, f_libc, f_beta, f_alpha}, 4);
	step(false);
	cr_expect_eq(inv.npids, 0);
	cr_expect_eq(inv.nframes, 0, "nothing named before changed");
	resolve_everything();
	cr_expect_str_eq(tail_frame(f_k2)->name, "vfs_read");
	cr_expect_str_eq(tail_frame(f_beta)->name, "sp_tail_known_beta");
	cr_expect_eq(tail_frame(f_libc)->origin, SP_ORIGIN_ELF, "'%s'", tail_frame(f_libc)->name);

	/*
	 * A second process (exec'd: its marker) runs the stray code too: no one
	 * process holds it, so no perf map names it any more.
	 */
	uint32_t other;
	cr_assert_eq(sp_spool_writer_intern_thread(w, OTHER_PID, OTHER_PID, &other), 0);
	struct sp_exec e = {.timestamp_ns = 9000, .pid = OTHER_PID};
	cr_assert_eq(sp_spool_writer_append_exec(w, &e), 0);
	uint32_t f_trunc = frame(SP_NO_MODULE, NULL, SP_FRAME_TRUNCATED, SP_STOP_STACK_EXHAUSTED);
	sample(other, (uint32_t[]){f_stray, f_trunc}, 2);
	step(true);
	cr_expect_eq(inv.npids, 1);
	cr_expect_eq(inv.npids ? inv.pids[0] : 0, OTHER_PID, "its exec marker");
	cr_expect_eq(inv.nframes, 1);
	cr_expect(inv_has_frame(f_stray), "the stray frame is named differently now");
	cr_expect_str_eq(tail_frame(f_stray)->name, "[unknown]+0x7f0000100010");
	cr_expect_eq(tail_frame(f_alpha), alpha, "resolved frames stay where they are");
	expect_same_as_whole();
}

/* ---- (b) a module mapped over an earlier one --------------------------------- */

Test(tail_symbolizer, a_replaced_module_invalidates_its_process)
{
	struct sp_module self;
	uint32_t self_id = mapping_of(addr_of(sp_tail_known_alpha), pid, &self);
	uint32_t f_alpha = frame(self_id, &self, SP_FRAME_USER, addr_of(sp_tail_known_alpha));
	sample(thread, &f_alpha, 1);
	step(false);
	cr_expect_eq(inv.npids, 0);
	resolve_everything();

	/* A new image over the same range (pid reused, or the file replaced and mapped again). */
	struct sp_module replaced = {.pid = pid, .start = self.start, .end = self.end,
				     .inode = 99, .file_size = 1, .mtime_ns = 1,
				     .path = "/nonexistent/new-image"};
	uint32_t id;
	cr_assert_eq(sp_spool_writer_add_module(w, &replaced, &id), 0);
	/* Beside it, a module of another process over the same addresses, and one of pid elsewhere. */
	replaced.pid = OTHER_PID;
	cr_assert_eq(sp_spool_writer_add_module(w, &replaced, &id), 0);
	struct sp_module elsewhere = {.pid = pid, .start = 0x10000, .end = 0x20000,
				      .path = "/nonexistent/other"};
	cr_assert_eq(sp_spool_writer_add_module(w, &elsewhere, &id), 0);
	uint32_t f_new = frame(id, &elsewhere, SP_FRAME_USER, 0x10010);
	sample(thread, &f_new, 1);
	step(false);
	cr_assert_eq(inv.npids, 1);
	cr_expect_eq(inv.pids[0], pid);
	cr_expect_eq(inv.nframes, 0, "frames keep their module: none is named differently");
	cr_expect_str_eq(tail_frame(f_alpha)->name, "sp_tail_known_alpha");

	/* Nothing new over anything: nothing to drop. */
	sample(thread, &f_alpha, 1);
	step(true);
	cr_expect_eq(inv.npids, 0);
	cr_expect_eq(inv.nframes, 0);
	expect_same_as_whole();
}

/* ---- (c) a perf map that grows --------------------------------------------- */

Test(tail_symbolizer, a_perf_map_that_grew_names_what_it_did_not)
{
	uint32_t jit_id = anon_module(pid);
	uint32_t f_jit = frame(jit_id, NULL, SP_FRAME_USER, JIT_START + 0x1010);
	uint32_t f_late = frame(jit_id, NULL, SP_FRAME_USER, JIT_START + 0x3010);
	uint32_t f_end = frame(jit_id, NULL, SP_FRAME_USER, JIT_START + 0x5010);
	uint32_t fr[] = {f_late, f_jit, f_end};
	uint32_t stack = sample(thread, fr, 3);
	step(false);
	resolve_everything();
	const struct sp_resolved_frame *late = tail_frame(f_late);
	cr_expect_eq(late->origin, SP_ORIGIN_ADDRESS_ONLY, "'%s'", late->name);
	cr_expect_str_eq(streamed_leaf(stack), late->name);
	cr_expect_str_eq(tail_frame(f_jit)->name, "jit_hot_loop");

	/* The runtime compiles more and writes its line; the process runs on. */
	write_text(map_name, "7f0000003000 40 jit_late\n", "a");
	sample(thread, fr, 3);
	step(false);
	cr_expect_eq(inv.nframes, 1);
	cr_expect(inv_has_frame(f_late));
	cr_expect_eq(tail_frame(f_late), late, "named in place");
	cr_expect_str_eq(late->name, "jit_late");
	cr_expect_str_eq(streamed_leaf(stack), "jit_late", "the stack cache streams the new name");
	cr_expect_eq(late->origin, SP_ORIGIN_PERF_MAP);
	cr_expect(late->flags & SP_RFRAME_JIT);
	cr_expect_str_eq(late->module, map_name);
	cr_expect_eq(tail_frame(f_end)->origin, SP_ORIGIN_ADDRESS_ONLY);

	/* A line written after the process's last sample is read when the spool ends. */
	write_text(map_name, "7f0000005000 40 jit_at_end\n", "a");
	step(true);
	cr_expect_eq(inv.nframes, 1);
	cr_expect(inv_has_frame(f_end));
	cr_expect_str_eq(tail_frame(f_end)->name, "jit_at_end");
	cr_expect_eq(inv.npids, 0);
	expect_same_as_whole();
}

/* ---- names the recorder stores when it ends ------------------------------- */

/* The recorder's end naming: a replaced image's frame and a container's perf map line. */
static void store_names(uint32_t f_gone, int32_t container)
{
	struct sp_spool *sofar;
	cr_assert_eq(sp_spool_writer_read_back(w, &sofar), 0);
	struct sp_symenc *e;
	cr_assert_eq(sp_symenc_new(sofar, &e), 0);
	struct sp_resolved_frame named = {.name = "gone_function", .module = "gone.so",
					  .kind = SP_KIND_NATIVE, .origin = SP_ORIGIN_ELF,
					  .pc = 0x30010, .symbol_offset = 0x10};
	cr_assert_eq(sp_symenc_add_frame(e, f_gone, &named, 1), 0);
	cr_assert_eq(sp_symenc_add_perf_map_line(e, container, JIT_START + 0x1000, 0x40,
						 "jit_in_container"), 0);
	struct sp_buf b;
	sp_buf_init(&b);
	cr_assert_eq(sp_symenc_finish(e, &b), 0);
	cr_assert_eq(sp_spool_writer_append_records(w, b.data, b.len), 0);
	sp_buf_release(&b);
	sp_symenc_free(e);
	sp_spool_free(sofar);
}

Test(tail_symbolizer, names_stored_at_the_end_replace_the_addresses)
{
	struct sp_module gone = {.pid = pid, .start = 0x30000, .end = 0x40000, .inode = 7,
				 .file_size = 1, .mtime_ns = 1, .path = "/nonexistent/gone.so"};
	uint32_t gone_id;
	cr_assert_eq(sp_spool_writer_add_module(w, &gone, &gone_id), 0);
	const int32_t container = OTHER_PID; /* no perf map of its own here */
	uint32_t jit_id = anon_module(container);
	uint32_t t_other;
	cr_assert_eq(sp_spool_writer_intern_thread(w, container, container, &t_other), 0);
	uint32_t f_gone = frame(gone_id, &gone, SP_FRAME_USER, 0x30010);
	uint32_t f_jit = frame(jit_id, NULL, SP_FRAME_USER, JIT_START + 0x1010);
	sample(thread, &f_gone, 1);
	sample(t_other, &f_jit, 1);
	step(false);
	resolve_everything();
	cr_expect_eq(tail_frame(f_gone)->origin, SP_ORIGIN_ADDRESS_ONLY);
	cr_expect_eq(tail_frame(f_jit)->origin, SP_ORIGIN_ADDRESS_ONLY);

	store_names(f_gone, container);
	step(true);
	cr_expect_eq(inv.nframes, 2);
	cr_expect(inv_has_frame(f_gone) && inv_has_frame(f_jit));
	cr_expect_str_eq(tail_frame(f_gone)->name, "gone_function");
	cr_expect_eq(sp_symbolizer_frame_src(tsym, f_gone), SP_FRAME_SRC_STORED);
	cr_expect_str_eq(tail_frame(f_jit)->name, "jit_in_container");
	expect_same_as_whole();
}

/* ---- the API's edges -------------------------------------------------------- */

Test(tail_symbolizer, only_a_symbolizer_of_a_tail_updates)
{
	struct sp_symbolizer_opts o = opts();
	struct sp_symbolizer *s = NULL;
	cr_expect_eq(sp_tail_symbolizer(tail, &o, &s), -SP_E_BAD_ARG, "no header read yet");
	cr_expect_eq(sp_tail_symbolizer(NULL, &o, &s), -SP_E_BAD_ARG);
	cr_expect_null(s);
	step(true);
	open_whole();
	cr_expect_eq(sp_symbolizer_update(wsym, &batch, &inv), -SP_E_BAD_ARG);
	cr_expect_eq(inv.npids + inv.nframes, 0);
	cr_expect_eq(sp_symbolizer_update(tsym, &batch, NULL), 0, "inv may be NULL");
	sp_invalidation_release(NULL);
}
