/* SPDX-License-Identifier: MIT */
/* Unit tests of the reader and symbolizer API: raw replay, helpers, plug-in, streaming, pid lists, runtime flags. */
#include <criterion/criterion.h>

#include "symbols/symbols.h"
#include "self_module.h"
#include "spool_fixture.h"

#include <sys/stat.h>

__attribute__((noinline)) int sp_api_known_alpha(int x)
{
	volatile int acc = x;
	for (int i = 0; i < x; i++)
		acc = acc * 3 + i;
	return acc;
}

static uint64_t alpha_addr(void)
{
	return (uint64_t)(uintptr_t)&sp_api_known_alpha + 4;
}

/* ---- the reader: stacks leaf to root with module context ------------------- */

TestSuite(spool_stack, .init = tmp_setup, .fini = tmp_teardown);

static struct sp_spool *open_small(struct small_ids *ids)
{
	write_small(tmp_path("s.spool"), ids);
	struct sp_spool *s;
	cr_assert_eq(sp_spool_open(tmp_path("s.spool"), &s), 0);
	return s;
}

Test(spool_stack, walks_leaf_to_root_with_module_context)
{
	struct small_ids ids;
	struct sp_spool *s = open_small(&ids);
	struct sp_stack_iter it;
	struct sp_frame_context fc;
	size_t n = 0;
	sp_spool_stack_iter_init(&it, s, ids.stack_a);
	while (sp_spool_stack_iter_next(&it, &fc)) {
		cr_assert_lt(n, SP_ARRAY_SIZE(small_stack_a));
		cr_expect_eq(fc.frame_id, small_stack_a[n], "frame %zu", n);
		cr_expect_eq(fc.frame, sp_spool_frame(s, small_stack_a[n]), "borrowed, not copied");
		n++;
	}
	cr_expect_eq(n, 4);

	/* Frame 0 of /opt/demo/chain4: 0x555555555100 - start 0x555555555000 + offset 0x1000. */
	cr_assert_eq(sp_spool_frame_context(s, 0, &fc), 0);
	cr_assert_not_null(fc.module);
	cr_expect_str_eq(fc.module->path, "/opt/demo/chain4");
	cr_expect_eq(fc.rel_ip, 0x1100);
	cr_expect_eq(fc.frame->abs_ip - fc.module->load_bias, 0x1100, "static address");
	/* The libc frame: its module, the file-offset address as recorded. */
	cr_assert_eq(sp_spool_frame_context(s, 2, &fc), 0);
	cr_expect_eq(fc.module, sp_spool_module(s, 1));
	cr_expect_eq(fc.rel_ip, 0x7ffff7df9d8f - 0x7ffff7dd0000 + 0x26000);
	/* Kernel frame in the kernel range. */
	cr_assert_eq(sp_spool_frame_context(s, 3, &fc), 0);
	cr_expect(fc.module && (fc.module->flags & SP_MODULE_KERNEL));
	sp_spool_free(s);
}

Test(spool_stack, frames_without_a_module_and_markers)
{
	struct small_ids ids;
	struct sp_spool *s = open_small(&ids);
	struct sp_stack_iter it;
	struct sp_frame_context fc;
	sp_spool_stack_iter_init(&it, s, ids.stack_c);
	cr_assert(sp_spool_stack_iter_next(&it, &fc));
	cr_expect_eq(fc.frame_id, 6);
	cr_expect_eq(fc.rel_ip, 0xdeadbeef, "rel_ip as recorded, not recomputed");
	cr_assert(sp_spool_stack_iter_next(&it, &fc));
	cr_expect_eq(fc.frame->mode, SP_FRAME_TRUNCATED);
	cr_expect_null(fc.module);
	cr_expect_eq(fc.rel_ip, 0);
	cr_expect_not(sp_spool_stack_iter_next(&it, &fc));
	cr_expect_not(sp_spool_stack_iter_next(&it, &fc), "stays at the end");

	cr_assert_eq(sp_spool_frame_context(s, 4, &fc), 0);
	cr_expect_null(fc.module, "0x12345 was in no module");
	cr_expect_eq(sp_spool_frame_context(s, 7, &fc), -SP_E_BAD_ARG);

	sp_spool_stack_iter_init(&it, s, 0);
	cr_expect_not(sp_spool_stack_iter_next(&it, &fc), "stack 0 is empty");
	sp_spool_stack_iter_init(&it, s, 999);
	cr_expect_not(sp_spool_stack_iter_next(&it, &fc), "an unknown stack walks nothing");
	sp_spool_free(s);
}

Test(spool_stack, kernel_addresses_and_sample_times)
{
	struct small_ids ids;
	struct sp_spool *s = open_small(&ids);
	size_t cur = 0;
	uint64_t addr = 0;
	cr_assert(sp_spool_kernel_frame_next(s, &cur, &addr));
	cr_expect_eq(addr, 0xffffffff81a0b0c0);
	cr_expect_not(sp_spool_kernel_frame_next(s, &cur, &addr), "one kernel frame");

	/* A sample's time on the timeline: the anchor plus the offset from the first sample. */
	cr_expect_eq(sp_spool_sample_time_us(s, sp_spool_sample(s, 0)), 1700000000123456ull);
	cr_expect_eq(sp_spool_sample_time_us(s, sp_spool_sample(s, 1)), 1700000000123456ull + 1001);
	cr_expect_eq(sp_spool_timestamp_us(s, sp_spool_sample(s, 1)), 1001);
	sp_spool_free(s);
}

/* ---- module path helpers ----------------------------------------------------- */

Test(module_path, python_modules)
{
	const char *yes[] = {"python", "python3", "/usr/bin/python3.11", "python3.12d",
			     "python3.13t", "/opt/py/lib/libpython3.12.so.1.0", "libpython3.so",
			     "libpython3.12d.so", "/usr/bin/python3.12 (deleted)"};
	const char *no[] = {"/usr/bin/python3-config", "pythonista", "/usr/lib/libc.so.6",
			    "libpython.so", "libpython3.12.a", "python3.12-gdb.py", "", NULL,
			    "/usr/lib/python3.12/", "libpython3.12.so.x"};
	for (size_t i = 0; i < SP_ARRAY_SIZE(yes); i++)
		cr_expect(sp_is_python_module(yes[i]), "%s", yes[i]);
	for (size_t i = 0; i < SP_ARRAY_SIZE(no); i++)
		cr_expect_not(sp_is_python_module(no[i]), "%s", no[i] ? no[i] : "NULL");
}

Test(module_path, display_names)
{
	struct {
		const char *path, *name;
	} cases[] = {
		{"/usr/lib/x86_64-linux-gnu/libc.so.6", "libc.so.6"},
		{"/tmp/chain4 (deleted)", "chain4"},
		{"[vdso]", "[vdso]"},
		{"//anon", "[anon]"},
		{"", "[anon]"},
		{NULL, "[anon]"},
		{"/usr/lib/", "/usr/lib/"},
		{"chain4", "chain4"},
	};
	for (size_t i = 0; i < SP_ARRAY_SIZE(cases); i++) {
		char buf[64];
		size_t n = sp_path_to_name(cases[i].path, buf, sizeof(buf));
		cr_expect_str_eq(buf, cases[i].name, "%s", cases[i].path ? cases[i].path : "NULL");
		cr_expect_eq(n, strlen(cases[i].name));
	}
	char small[4];
	cr_expect_eq(sp_path_to_name("/lib/libc.so.6", small, sizeof(small)), 9);
	cr_expect_str_eq(small, "lib", "cut like snprintf");
	cr_expect_eq(sp_path_to_name("/lib/libc.so.6", NULL, 0), 9);
}

/* ---- a spool of this process: native, kernel and JIT frames ------------------- */

#define JIT_START 0x7f0000000000ull

static struct sp_spool_writer *writer;
static struct sp_spool *spool;
static struct sp_symbolizer *sym;
static struct sp_module self_mod;
static uint32_t self_mid, jit_mid, t_self;
static uint32_t f_native, f_kernel, f_jit, stack_id;

static void write_file(const char *name, const char *text, mode_t mode)
{
	FILE *f = fopen(tmp_path(name), "w");
	cr_assert_not_null(f);
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(chmod(tmp_path(name), mode), 0);
}

static uint32_t frame(uint32_t mid, uint8_t mode, uint64_t addr)
{
	struct sp_frame f = {.module_id = mid, .mode = mode, .abs_ip = addr};
	const struct sp_module *m = mid == self_mid ? &self_mod : NULL;
	if (m)
		f.rel_ip = addr - m->start + m->file_offset;
	else if (mid != SP_NO_MODULE)
		f.rel_ip = addr - JIT_START;
	uint32_t id;
	cr_assert_eq(sp_spool_writer_intern_frame(writer, &f, &id), 0);
	return id;
}

static uint32_t jit_module(int32_t pid)
{
	struct sp_module m = {.pid = pid, .start = JIT_START, .end = JIT_START + 0x10000,
			      .file_offset = 0, .flags = SP_MODULE_ANON, .path = "//anon"};
	uint32_t id;
	cr_assert_eq(sp_spool_writer_add_module(writer, &m, &id), 0);
	return id;
}

static char pid_map[64];

/* Stack (leaf first): this binary's alpha, a JIT frame, a kernel frame (as odd as it looks). */
static void mixed_setup(void)
{
	tmp_setup();
	struct sp_spool_meta meta = {.frequency_hz = 99, .command = "t", .hostname = "h",
				     .kernel_release = "k"};
	cr_assert_eq(sp_spool_writer_open(tmp_path("m.spool"), &meta, &writer), 0);
	/* The helper records pid 0; the module of this process is a copy with its pid. */
	sp_test_self_module(writer, &self_mod, alpha_addr());
	self_mod.pid = getpid();
	cr_assert_eq(sp_spool_writer_add_module(writer, &self_mod, &self_mid), 0);
	jit_mid = jit_module(getpid());
	f_native = frame(self_mid, SP_FRAME_USER, alpha_addr());
	f_jit = frame(jit_mid, SP_FRAME_USER, JIT_START + 0x1010);
	f_kernel = frame(SP_NO_MODULE, SP_FRAME_KERNEL, 0xffffffff81000210);
	uint32_t fr[] = {f_native, f_jit, f_kernel};
	cr_assert_eq(sp_spool_writer_intern_thread(writer, getpid(), getpid(), &t_self), 0);
	cr_assert_eq(sp_spool_writer_intern_stack(writer, fr, 3, &stack_id), 0);
	cr_assert_eq(sp_spool_writer_append_sample(writer, t_self, stack_id, 1000), 0);
	cr_assert_eq(sp_spool_writer_append_sample(writer, t_self, stack_id, 2000), 0);
	write_file("kallsyms", "ffffffff81000000 T _stext\nffffffff81000200 T do_syscall_64\n"
			       "ffffffff81000300 T vfs_read\n", 0600);
	snprintf(pid_map, sizeof(pid_map), "perf-%d.map", (int)getpid());
	write_file(pid_map, "7f0000001000 40 jit_hot_loop\n7f0000002000 40 py::handle:/srv/app.py\n",
		   0600);
}

static void mixed_teardown(void)
{
	sp_symbolizer_free(sym);
	sp_spool_free(spool);
	sp_spool_writer_free(writer);
	sym = NULL;
	spool = NULL;
	writer = NULL;
	tmp_teardown();
}

static void finish_spool(void)
{
	struct sp_summary sum = {0};
	cr_assert_eq(sp_spool_writer_finish(writer, &sum), 0);
	sp_spool_writer_free(writer);
	writer = NULL;
	cr_assert_eq(sp_spool_open(tmp_path("m.spool"), &spool), 0);
}

static struct sp_symbolizer_opts mixed_opts(void)
{
	return (struct sp_symbolizer_opts){.kallsyms_path = tmp_path("kallsyms"),
					   .perf_map_dir = tmp_dir};
}

static const struct sp_resolved_frame *resolve(uint32_t id)
{
	const struct sp_resolved_frame *rf;
	cr_assert_eq(sp_symbolizer_resolve(sym, id, &rf), 0);
	return rf;
}

/* ---- the toy native backend ----------------------------------------------------- */

struct toy {
	int creates, set_calls, frees, calls;
	size_t nmods;
	struct sp_sym_module mod;
	char path[PATH_MAX];
	int32_t pid;
	char name[64];
	int fail_create;
};

static struct toy toy;

static int toy_create(void *ctx, int32_t pid, void **instance)
{
	struct toy *t = ctx;
	t->creates++;
	t->pid = pid;
	*instance = t;
	return t->fail_create ? -EIO : 0;
}

static int toy_set_modules(void *instance, const struct sp_sym_module *mods, size_t n)
{
	struct toy *t = instance;
	t->set_calls++;
	t->nmods = n;
	t->mod = mods[0];
	snprintf(t->path, sizeof(t->path), "%s", mods[0].path);
	return 0;
}

/* Every address is "toy_0x<svma>"; alpha's also has an inlined "toy_inner" inside it. */
static int toy_symbolize(void *instance, uint64_t addr, struct sp_native_symbol *out, size_t max,
			 size_t *n)
{
	struct toy *t = instance;
	t->calls++;
	snprintf(t->name, sizeof(t->name), "toy_0x%" PRIx64, addr - t->mod.image_base);
	size_t k = 0;
	if (addr == alpha_addr() && max >= 2)
		out[k++] = (struct sp_native_symbol){.name = "toy_inner", .file = "toy.c", .line = 7};
	out[k++] = (struct sp_native_symbol){.name = t->name, .symbol_offset = 4};
	*n = k;
	return 0;
}

static void toy_free(void *instance)
{
	((struct toy *)instance)->frees++;
}

static const struct sp_native_backend toy_backend = {
	.ctx = &toy,
	.create = toy_create,
	.set_modules = toy_set_modules,
	.symbolize_one = toy_symbolize,
	.free = toy_free,
};

TestSuite(native_plugin, .init = mixed_setup, .fini = mixed_teardown);

Test(native_plugin, names_native_frames_while_kernel_and_perf_maps_stay_built_in)
{
	memset(&toy, 0, sizeof(toy));
	finish_spool();
	struct sp_symbolizer_opts o = mixed_opts();
	o.native = &toy_backend;
	cr_assert_eq(sp_symbolizer_new(spool, &o, &sym), 0);

	const struct sp_resolved_frame *f;
	size_t n;
	cr_assert_eq(sp_symbolizer_resolve_all(sym, f_native, &f, &n), 0);
	cr_assert_eq(n, 2);
	char want[64];
	snprintf(want, sizeof(want), "toy_0x%" PRIx64, alpha_addr() - self_mod.load_bias);
	cr_expect_str_eq(f[1].name, want);
	cr_expect_eq(f[1].origin, SP_ORIGIN_ELF);
	cr_expect_eq(f[1].kind, SP_KIND_NATIVE);
	cr_expect_eq(f[1].symbol_offset, 4);
	cr_expect_str_eq(f[1].module, strrchr(self_mod.path, '/') + 1);
	cr_expect_str_eq(f[0].name, "toy_inner");
	cr_expect(f[0].flags & SP_RFRAME_INLINE);
	cr_expect_str_eq(f[0].file, "toy.c");
	cr_expect_eq(f[0].line, 7);

	cr_expect_str_eq(resolve(f_kernel)->name, "do_syscall_64", "kallsyms: built in");
	cr_expect_eq(resolve(f_kernel)->origin, SP_ORIGIN_KERNEL_SYMBOLS);
	cr_expect_str_eq(resolve(f_jit)->name, "jit_hot_loop", "perf map: built in");
	cr_expect_eq(resolve(f_jit)->origin, SP_ORIGIN_PERF_MAP);

	/* One instance for this process's group, modules handed over once, with image bases. */
	cr_expect_eq(toy.creates, 1);
	cr_expect_eq(toy.pid, getpid());
	cr_expect_eq(toy.set_calls, 1);
	cr_expect_eq(toy.nmods, 1, "the anonymous JIT range is not the plug-in's");
	cr_expect(toy.mod.has_image_base);
	cr_expect_eq(toy.mod.image_base, self_mod.load_bias);
	cr_expect_eq(toy.mod.avma_start, self_mod.start);
	cr_expect_str_eq(toy.path, self_mod.path);
	cr_expect_eq(toy.calls, 1, "only native frames reach the plug-in, once each");
	sp_symbolizer_free(sym);
	sym = NULL;
	cr_expect_eq(toy.frees, 1);
}

Test(native_plugin, a_failing_plugin_leaves_addresses_and_is_counted)
{
	memset(&toy, 0, sizeof(toy));
	toy.fail_create = 1;
	finish_spool();
	struct sp_symbolizer_opts o = mixed_opts();
	o.native = &toy_backend;
	cr_assert_eq(sp_symbolizer_new(spool, &o, &sym), 0);
	const struct sp_resolved_frame *rf = resolve(f_native);
	cr_expect_eq(rf->origin, SP_ORIGIN_ADDRESS_ONLY);
	cr_expect_not(strncmp(rf->name, "toy_", 4) == 0);
	cr_expect(strstr(rf->name, "+0x") != NULL, "module+0xOFFSET: '%s'", rf->name);
	struct sp_symbolizer_stats st;
	sp_symbolizer_stats(sym, &st);
	cr_expect_eq(st.native_backend_errors, 1);

	struct sp_native_backend incomplete = toy_backend;
	incomplete.symbolize_one = NULL;
	o.native = &incomplete;
	struct sp_symbolizer *bad = NULL;
	cr_expect_eq(sp_symbolizer_new(spool, &o, &bad), -SP_E_BAD_ARG);
	cr_expect_null(bad);
}

/* ---- streaming with the (pid, stack id) cache ---------------------------------- */

struct collect {
	const struct sp_resolved_frame *f[16];
	size_t n;
	size_t stop_after; /* 0: never */
};

static int collect_frame(const struct sp_resolved_frame *f, void *arg)
{
	struct collect *c = arg;
	cr_assert_lt(c->n, SP_ARRAY_SIZE(c->f));
	c->f[c->n++] = f;
	return c->stop_after && c->n == c->stop_after ? 42 : 0;
}

TestSuite(stream, .init = mixed_setup, .fini = mixed_teardown);

Test(stream, same_frames_as_resolve_all_and_repeats_hit_the_cache)
{
	finish_spool();
	struct sp_symbolizer_opts o = mixed_opts();
	cr_assert_eq(sp_symbolizer_new(spool, &o, &sym), 0);

	/* What resolve_all gives, frame after frame, leaf first. */
	const struct sp_resolved_frame *want[16];
	size_t nwant = 0;
	uint32_t ids[] = {f_native, f_jit, f_kernel};
	for (size_t i = 0; i < 3; i++) {
		const struct sp_resolved_frame *f;
		size_t n;
		cr_assert_eq(sp_symbolizer_resolve_all(sym, ids[i], &f, &n), 0);
		for (size_t j = 0; j < n; j++)
			want[nwant++] = &f[j];
	}
	cr_assert_eq(nwant, 3);
	cr_expect_str_eq(want[0]->name, "sp_api_known_alpha");

	struct collect c = {0};
	cr_assert_eq(sp_symbolizer_for_each_sample_frame(sym, sp_spool_sample(spool, 0),
							  collect_frame, &c), 0);
	cr_assert_eq(c.n, nwant);
	for (size_t i = 0; i < nwant; i++)
		cr_expect_eq(c.f[i], want[i], "frame %zu: the cached frames themselves", i);
	struct sp_symbolizer_stats st;
	sp_symbolizer_stats(sym, &st);
	cr_expect_eq(st.stack_cache_misses, 1);
	cr_expect_eq(st.stack_cache_hits, 0);

	memset(&c, 0, sizeof(c));
	cr_assert_eq(sp_symbolizer_for_each_sample_frame(sym, sp_spool_sample(spool, 1),
							  collect_frame, &c), 0);
	cr_expect_eq(c.n, nwant);
	sp_symbolizer_stats(sym, &st);
	cr_expect_eq(st.stack_cache_hits, 1, "the second sample's stack repeats");
	/* Another process with the same stack id is another key. */
	memset(&c, 0, sizeof(c));
	cr_assert_eq(sp_symbolizer_for_each_stack_frame(sym, 1, stack_id, collect_frame, &c), 0);
	sp_symbolizer_stats(sym, &st);
	cr_expect_eq(st.stack_cache_misses, 2);

	/* A visit's non-zero return stops the walk and comes back. */
	memset(&c, 0, sizeof(c));
	c.stop_after = 2;
	cr_expect_eq(sp_symbolizer_for_each_stack_frame(sym, getpid(), stack_id, collect_frame, &c),
		     42);
	cr_expect_eq(c.n, 2);
	memset(&c, 0, sizeof(c));
	cr_expect_eq(sp_symbolizer_for_each_stack_frame(sym, getpid(), 0, collect_frame, &c), 0);
	cr_expect_eq(c.n, 0, "stack 0 visits nothing");
	cr_expect_eq(sp_symbolizer_for_each_stack_frame(sym, getpid(), 999, collect_frame, &c),
		     -SP_E_BAD_ARG);
	struct sp_sample bad = {.thread = 77, .stack_id = stack_id};
	cr_expect_eq(sp_symbolizer_for_each_sample_frame(sym, &bad, collect_frame, &c),
		     -SP_E_BAD_ARG);
}

/* ---- perf-map pid lists ------------------------------------------------------------ */

TestSuite(perf_map_pids, .init = mixed_setup, .fini = mixed_teardown);

static void add_exec(int32_t pid, bool python)
{
	struct sp_exec e = {.timestamp_ns = 0, .pid = pid, .is_python_runtime = python};
	cr_assert_eq(sp_spool_writer_append_exec(writer, &e), 0);
}

Test(perf_map_pids, allow_list_and_recorded_python_runtimes)
{
	/* 100: Python; 200: Python, then exec'd something else; 300: never Python. */
	uint32_t f[3];
	int32_t pids[] = {100, 200, 300};
	char name[32];
	for (int i = 0; i < 3; i++) {
		f[i] = frame(jit_module(pids[i]), SP_FRAME_USER, JIT_START + 0x1010);
		snprintf(name, sizeof(name), "perf-%d.map", (int)pids[i]);
		write_file(name, "7f0000001000 40 jit_hot_loop\n", 0600);
	}
	add_exec(100, true);
	add_exec(200, true);
	add_exec(300, false);
	add_exec(200, false);
	finish_spool();

	int32_t *list;
	size_t n;
	cr_assert_eq(sp_spool_python_pids(spool, false, &list, &n), 0);
	cr_assert_eq(n, 1);
	cr_expect_eq(list[0], 100, "the latest marker decides");
	free(list);
	cr_assert_eq(sp_spool_python_pids(spool, true, &list, &n), 0);
	cr_assert_eq(n, 2);
	cr_expect(list[0] == 100 && list[1] == 200, "ever marked, sorted");
	free(list);

	struct sp_symbolizer_opts o = mixed_opts();
	int32_t allow[] = {300, 200};
	o.perf_map_policy = SP_PERF_MAPS_PIDS;
	o.perf_map_pids = allow;
	o.perf_map_npids = 2;
	cr_assert_eq(sp_symbolizer_new(spool, &o, &sym), 0);
	allow[0] = allow[1] = 100; /* copied: later changes do not matter */
	cr_expect_eq(resolve(f[0])->origin, SP_ORIGIN_ADDRESS_ONLY, "100 is not listed");
	cr_expect_str_eq(resolve(f[1])->name, "jit_hot_loop");
	cr_expect_str_eq(resolve(f[2])->name, "jit_hot_loop");
	struct sp_symbolizer_stats st;
	sp_symbolizer_stats(sym, &st);
	cr_expect_eq(st.perf_map_frames_denied, 1);
	sp_symbolizer_free(sym);

	o.perf_map_npids = 0;
	cr_assert_eq(sp_symbolizer_new(spool, &o, &sym), 0);
	cr_expect_eq(resolve(f[2])->origin, SP_ORIGIN_ADDRESS_ONLY, "an empty list allows none");
	sp_symbolizer_free(sym);

	o = mixed_opts();
	cr_assert_eq(sp_symbolizer_new_recorded_python(spool, &o, &sym), 0);
	cr_expect_str_eq(resolve(f[0])->name, "jit_hot_loop");
	cr_expect_str_eq(resolve(f[1])->name, "jit_hot_loop", "once Python is enough here");
	cr_expect_eq(resolve(f[2])->origin, SP_ORIGIN_ADDRESS_ONLY);
}

/* ---- the Python runtime's frames: flags, hidden in reports ---------------------- */

TestSuite(python_runtime, .init = mixed_setup, .fini = mixed_teardown);

/* This test binary copied as DIR/python3.12: the same build-id, so the same symbols. */
static uint32_t python_module(int32_t pid)
{
	char cmd[PATH_MAX * 2 + 16];
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", self_mod.path, tmp_path("python3.12"));
	cr_assert_eq(system(cmd), 0);
	struct sp_module m = self_mod;
	m.pid = pid;
	m.path = tmp_path("python3.12");
	uint32_t id;
	cr_assert_eq(sp_spool_writer_add_module(writer, &m, &id), 0);
	return id;
}

static char *report(bool show_runtime)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cr_assert_not_null(out);
	struct sp_report_opts ro = {.format = SP_REPORT_FOLDED, .show_runtime = show_runtime};
	cr_assert_eq(sp_report_write(spool, sym, &ro, out), 0);
	cr_assert_eq(fclose(out), 0);
	return text;
}

Test(python_runtime, runtime_frames_are_flagged_and_hidden_unless_shown)
{
	int32_t pid = getpid();
	uint32_t py = python_module(pid), f_rt;
	/* Frames of the copy: same addresses, another module id; the JIT frame is the Python one. */
	struct sp_frame rt = {.module_id = py, .mode = SP_FRAME_USER, .abs_ip = alpha_addr() + 1,
			      .rel_ip = alpha_addr() + 1 - self_mod.start + self_mod.file_offset};
	cr_assert_eq(sp_spool_writer_intern_frame(writer, &rt, &f_rt), 0);
	uint32_t f_py = frame(jit_mid, SP_FRAME_USER, JIT_START + 0x2004);
	/* Leaf first: the runtime's code called by a Python function, which the runtime runs. */
	uint32_t python[] = {f_rt, f_py, f_rt, f_rt}, jit[] = {f_rt, f_jit}, alone[] = {f_rt};
	uint32_t s_python, s_jit, s_alone;
	cr_assert_eq(sp_spool_writer_intern_stack(writer, python, 4, &s_python), 0);
	cr_assert_eq(sp_spool_writer_intern_stack(writer, jit, 2, &s_jit), 0);
	cr_assert_eq(sp_spool_writer_intern_stack(writer, alone, 1, &s_alone), 0);
	cr_assert_eq(sp_spool_writer_append_sample(writer, t_self, s_python, 3000), 0);
	cr_assert_eq(sp_spool_writer_append_sample(writer, t_self, s_jit, 3500), 0);
	cr_assert_eq(sp_spool_writer_append_sample(writer, t_self, s_alone, 4000), 0);
	add_exec(pid, true);
	finish_spool();

	struct sp_symbolizer_opts o = mixed_opts();
	cr_assert_eq(sp_symbolizer_new(spool, &o, &sym), 0);
	const struct sp_resolved_frame *rf = resolve(f_rt);
	cr_expect_str_eq(rf->name, "sp_api_known_alpha");
	cr_expect_str_eq(rf->module, "python3.12");
	cr_expect_eq(rf->flags & (SP_RFRAME_PYTHON_RUNTIME | SP_RFRAME_HIDDEN_DEFAULT),
		     SP_RFRAME_PYTHON_RUNTIME | SP_RFRAME_HIDDEN_DEFAULT);
	cr_expect_not(resolve(f_native)->flags & SP_RFRAME_HIDDEN_DEFAULT, "not a Python module");
	struct sp_symbolizer_stats st;
	sp_symbolizer_stats(sym, &st);
	cr_expect_eq(st.python_runtime_frames, 1);

	/*
	 * Folded, root first.  Hidden: in the stack that holds a Python frame,
	 * the runtime's frames rootward of it go but for the root (every stack
	 * starts where the process does), and the runtime code the Python
	 * function calls (not the eval loop) stays; stacks without one (a JIT
	 * frame is not Python) keep them all.
	 */
	char *hidden = report(false), *shown = report(true);
	cr_expect_str_eq(hidden, "do_syscall_64;jit_hot_loop;sp_api_known_alpha 2\n"
				 "jit_hot_loop;sp_api_known_alpha 1\n"
				 "sp_api_known_alpha 1\n"
				 "sp_api_known_alpha;handle;sp_api_known_alpha 1\n");
	cr_expect_str_eq(shown, "do_syscall_64;jit_hot_loop;sp_api_known_alpha 2\n"
				"jit_hot_loop;sp_api_known_alpha 1\n"
				"sp_api_known_alpha 1\n"
				"sp_api_known_alpha;sp_api_known_alpha;handle;sp_api_known_alpha 1\n");
	free(hidden);
	free(shown);
}

Test(python_runtime, no_flags_without_a_python_marker_or_a_perf_map)
{
	uint32_t py = python_module(getpid()), f_rt;
	struct sp_frame rt = {.module_id = py, .mode = SP_FRAME_USER, .abs_ip = alpha_addr() + 1,
			      .rel_ip = alpha_addr() + 1 - self_mod.start + self_mod.file_offset};
	cr_assert_eq(sp_spool_writer_intern_frame(writer, &rt, &f_rt), 0);
	finish_spool();
	struct sp_symbolizer_opts o = mixed_opts();
	cr_assert_eq(sp_symbolizer_new(spool, &o, &sym), 0);
	cr_expect_not(resolve(f_rt)->flags & SP_RFRAME_PYTHON_RUNTIME, "no exec marker says Python");
	cr_expect_str_eq(resolve(f_rt)->name, "sp_api_known_alpha");
}

Test(python_runtime, no_flags_when_perf_maps_are_off)
{
	uint32_t py = python_module(getpid()), f_rt;
	struct sp_frame rt = {.module_id = py, .mode = SP_FRAME_USER, .abs_ip = alpha_addr() + 1,
			      .rel_ip = alpha_addr() + 1 - self_mod.start + self_mod.file_offset};
	cr_assert_eq(sp_spool_writer_intern_frame(writer, &rt, &f_rt), 0);
	add_exec(getpid(), true);
	finish_spool();
	struct sp_symbolizer_opts o = mixed_opts();
	o.perf_map_policy = SP_PERF_MAPS_NONE;
	cr_assert_eq(sp_symbolizer_new(spool, &o, &sym), 0);
	cr_expect_not(resolve(f_rt)->flags & SP_RFRAME_HIDDEN_DEFAULT,
		      "no Python frames to stand in for the interpreter's");
	sp_symbolizer_free(sym);
	unlink(tmp_path(pid_map));
	o.perf_map_policy = SP_PERF_MAPS_ALL;
	cr_assert_eq(sp_symbolizer_new(spool, &o, &sym), 0);
	cr_expect_not(resolve(f_rt)->flags & SP_RFRAME_HIDDEN_DEFAULT, "no perf map");
}
