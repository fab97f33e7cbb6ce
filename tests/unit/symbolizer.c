/* SPDX-License-Identifier: MIT */
/* Unit tests of the symbolizer: ELF names, identity proof, inline chains, kallsyms, perf maps. */
#include <criterion/criterion.h>

#include "symbols/symbols.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Functions with known names; bodies big enough that +4 stays inside them. */
enum { ALPHA_FIRST_LINE = __LINE__ + 1 };
__attribute__((noinline)) int sp_test_known_alpha(int x)
{
	volatile int acc = x;
	for (int i = 0; i < x; i++)
		acc = acc * 3 + i;
	return acc;
}

__attribute__((noinline)) int sp_test_known_beta(int x)
{
	volatile int acc = x;
	for (int i = 0; i < x; i++)
		acc = acc ^ (i * 7);
	return acc + sp_test_known_alpha(x);
}

/* A C function under a C++ mangled name: "sp::demo(int)". */
__attribute__((noinline)) int mangled_demo(int x) __asm__("_ZN2sp4demoEi");
__attribute__((noinline)) int mangled_demo(int x)
{
	volatile int acc = x;
	for (int i = 0; i < x; i++)
		acc += i;
	return acc;
}

/*
 * A known inline chain: sp_test_inline_inner and sp_test_inline_middle are
 * always inlined, middle into sp_test_inline_outer.  inner returns the
 * address of an instruction of its own inlined body; each function records
 * the line of the code that matters: inner that instruction's, middle and
 * outer their inlined calls'.
 */
static int inline_line[3];

static inline __attribute__((always_inline)) uint64_t sp_test_inline_inner(void)
{
	uint64_t pc;
	__asm__ volatile("1: lea 1b(%%rip), %0" : "=r"(pc));
	inline_line[0] = __LINE__ - 1;
	return pc;
}

static inline __attribute__((always_inline)) uint64_t sp_test_inline_middle(void)
{
	uint64_t pc = sp_test_inline_inner();
	inline_line[1] = __LINE__ - 1;
	return pc ^ 1;
}

__attribute__((noinline)) uint64_t sp_test_inline_outer(void)
{
	uint64_t pc = sp_test_inline_middle();
	inline_line[2] = __LINE__ - 1;
	return pc ^ 1;
}

/* The executable mapping of this test binary that holds addr. */
struct self_map {
	uint64_t start, end, offset, inode;
	uint32_t maj, min;
	char path[PATH_MAX];
};

static void find_self_map(uint64_t addr, struct self_map *m)
{
	FILE *f = fopen("/proc/self/maps", "r");
	cr_assert_not_null(f);
	char line[PATH_MAX + 128];
	bool found = false;
	while (!found && fgets(line, sizeof(line), f)) {
		char perms[8];
		int n = 0;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n",
			   &m->start, &m->end, perms, &m->offset, &m->maj, &m->min, &m->inode,
			   &n) < 7)
			continue;
		if (addr < m->start || addr >= m->end)
			continue;
		char *p = line + n;
		p[strcspn(p, "\n")] = '\0';
		snprintf(m->path, sizeof(m->path), "%s", p);
		found = true;
	}
	fclose(f);
	cr_assert(found, "no mapping holds %#" PRIx64, addr);
}

/* A module record for this binary, as the recorder would write it. */
static struct sp_module self_module(const struct self_map *sm)
{
	struct sp_module m = {
		.pid = getpid(),
		.start = sm->start,
		.end = sm->end,
		.file_offset = sm->offset,
		.inode = sm->inode,
		.dev_major = sm->maj,
		.dev_minor = sm->min,
		.path = sm->path,
	};
	struct stat st;
	cr_assert_eq(stat(sm->path, &st), 0);
	m.file_size = (uint64_t)st.st_size;
	m.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;

	sp_elf_init();
	int fd = open(sm->path, O_RDONLY);
	cr_assert_geq(fd, 0);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	cr_assert_not_null(elf);
	struct sp_elf_info info;
	cr_assert_eq(sp_elf_info_read(elf, &info), 0);
	cr_assert_gt(info.build_id_len, 0, "test binary has no build-id");
	m.build_id_len = info.build_id_len;
	memcpy(m.build_id, info.build_id, info.build_id_len);
	cr_assert_eq(sp_elf_load_bias(&info, sm->start, sm->offset, &m.load_bias), 0);
	m.flags |= SP_MODULE_HAS_BIAS;
	sp_elf_info_release(&info);
	elf_end(elf);
	close(fd);
	return m;
}

static char spool_path[64];
static struct sp_spool_writer *writer;
static struct sp_spool *spool;
static struct sp_symbolizer *sym;
static struct self_map self;

static void setup(void)
{
	strcpy(spool_path, "/tmp/sp-symbolizer-XXXXXX");
	int fd = mkstemp(spool_path);
	cr_assert_geq(fd, 0);
	close(fd);
	struct sp_spool_meta meta = {.frequency_hz = 99, .command = "test",
				     .hostname = "h", .kernel_release = "k"};
	cr_assert_eq(sp_spool_writer_open(spool_path, &meta, &writer), 0);
	find_self_map((uint64_t)(uintptr_t)&sp_test_known_alpha, &self);
}

static void teardown(void)
{
	sp_symbolizer_free(sym);
	sp_spool_free(spool);
	sp_spool_writer_free(writer);
	unlink(spool_path);
	sym = NULL;
	spool = NULL;
	writer = NULL;
}

static uint32_t add_module(const struct sp_module *m)
{
	uint32_t id;
	cr_assert_eq(sp_spool_writer_add_module(writer, m, &id), 0);
	return id;
}

/* A user frame at addr inside module m (id mid). */
static uint32_t add_frame(uint32_t mid, const struct sp_module *m, uint64_t addr)
{
	struct sp_frame f = {.module_id = mid, .mode = SP_FRAME_USER, .abs_ip = addr};
	if (mid != SP_NO_MODULE)
		f.rel_ip = addr - m->start + m->file_offset;
	uint32_t id;
	cr_assert_eq(sp_spool_writer_intern_frame(writer, &f, &id), 0);
	return id;
}

/* Finish the spool, read it back and build a symbolizer. */
static void load(bool no_demangle)
{
	struct sp_summary summary = {0};
	cr_assert_eq(sp_spool_writer_finish(writer, &summary), 0);
	sp_spool_writer_free(writer);
	writer = NULL;
	cr_assert_eq(sp_spool_open(spool_path, &spool), 0);
	struct sp_symbolizer_opts opts = {.no_demangle = no_demangle};
	cr_assert_eq(sp_symbolizer_new(spool, &opts, &sym), 0);
}

static const struct sp_resolved_frame *resolve(uint32_t id)
{
	const struct sp_resolved_frame *rf;
	cr_assert_eq(sp_symbolizer_resolve(sym, id, &rf), 0);
	cr_assert_not_null(rf->name);
	return rf;
}

static const char *base(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static uint64_t addr_of(int (*fn)(int))
{
	return (uint64_t)(uintptr_t)fn;
}

TestSuite(symbolizer, .init = setup, .fini = teardown);

Test(symbolizer, names_functions_of_this_binary)
{
	struct sp_module m = self_module(&self);
	uint32_t mid = add_module(&m);
	uint32_t a = add_frame(mid, &m, addr_of(sp_test_known_alpha) + 4);
	uint32_t b = add_frame(mid, &m, addr_of(sp_test_known_beta) + 4);
	load(false);

	const struct sp_resolved_frame *ra = resolve(a), *rb = resolve(b);
	cr_expect_str_eq(ra->name, "sp_test_known_alpha");
	cr_expect_str_eq(rb->name, "sp_test_known_beta");
	cr_expect_str_eq(ra->module, base(self.path));
	cr_expect_eq(ra->origin, SP_ORIGIN_ELF);
	cr_expect_eq(ra->kind, SP_KIND_NATIVE);
	cr_expect_eq(ra->symbol_offset, 4);
	cr_expect_eq(ra->pc, addr_of(sp_test_known_alpha) + 4);
	/* Cached per frame id: the same storage comes back. */
	cr_expect_eq(resolve(a), ra);
	struct sp_symbolizer_stats st;
	sp_symbolizer_stats(sym, &st);
	cr_expect_eq(st.files_proven, 1);
	cr_expect_eq(st.frames_named, 2);
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), k = strlen(tail);
	return n >= k && !strcmp(s + n - k, tail);
}

Test(symbolizer, inline_chain_innermost_first_with_lines)
{
	uint64_t pc = sp_test_inline_outer();
	struct sp_module m = self_module(&self);
	uint32_t mid = add_module(&m);
	uint32_t a = add_frame(mid, &m, pc);
	load(false);

	const struct sp_resolved_frame *f;
	size_t n;
	cr_assert_eq(sp_symbolizer_resolve_all(sym, a, &f, &n), 0);
	cr_assert_eq(n, 3, "chain of %zu frames, first '%s'", n, f[0].name);
	cr_expect_str_eq(f[0].name, "sp_test_inline_inner");
	cr_expect_str_eq(f[1].name, "sp_test_inline_middle");
	cr_expect_str_eq(f[2].name, "sp_test_inline_outer");
	for (size_t i = 0; i < n; i++) {
		cr_expect_eq(f[i].flags & SP_RFRAME_INLINE, i < 2 ? SP_RFRAME_INLINE : 0, "frame %zu", i);
		cr_expect_eq(f[i].line, (uint32_t)inline_line[i], "frame %zu: line %u, not %d", i,
			     f[i].line, inline_line[i]);
		cr_assert_not_null(f[i].file, "frame %zu", i);
		cr_expect(ends_with(f[i].file, "symbolizer.c"), "file '%s'", f[i].file);
		cr_expect_eq(f[i].pc, pc);
		cr_expect_eq(f[i].origin, SP_ORIGIN_ELF);
		cr_expect_eq(f[i].kind, SP_KIND_NATIVE);
		cr_expect_str_eq(f[i].module, base(self.path));
	}
	cr_expect_eq(f[2].symbol_offset, pc - (uint64_t)(uintptr_t)&sp_test_inline_outer);
	cr_expect_eq(f[0].symbol_offset, 0);
	/* resolve gives the containing function: the chain's last frame, cached. */
	cr_expect_eq(resolve(a), &f[2]);
	const struct sp_resolved_frame *again;
	size_t n2;
	cr_assert_eq(sp_symbolizer_resolve_all(sym, a, &again, &n2), 0);
	cr_expect(again == f && n2 == n);
	struct sp_symbolizer_stats st = {0};
	sp_symbolizer_stats(sym, &st);
	cr_expect_eq(st.inline_frames, 2);
	cr_expect_eq(st.frames_with_lines, 1);
	cr_expect_eq(st.frames_named, 1);
}

Test(symbolizer, no_inline_folds_the_chain_into_its_function)
{
	uint64_t pc = sp_test_inline_outer();
	struct sp_module m = self_module(&self);
	uint32_t mid = add_module(&m);
	uint32_t a = add_frame(mid, &m, pc);
	load(false);
	sp_symbolizer_free(sym);
	struct sp_symbolizer_opts opts = {.no_inline = true};
	cr_assert_eq(sp_symbolizer_new(spool, &opts, &sym), 0);

	const struct sp_resolved_frame *f;
	size_t n;
	cr_assert_eq(sp_symbolizer_resolve_all(sym, a, &f, &n), 0);
	cr_assert_eq(n, 1);
	cr_expect_str_eq(f->name, "sp_test_inline_outer");
	cr_expect_not(f->flags & SP_RFRAME_INLINE);
	/* Where the inlined code sits in the function: the call of middle. */
	cr_expect_eq(f->line, (uint32_t)inline_line[2]);
	cr_expect_eq(resolve(a), f);
	struct sp_symbolizer_stats st = {0};
	sp_symbolizer_stats(sym, &st);
	cr_expect_eq(st.inline_frames, 0);
}

Test(symbolizer, plain_functions_get_their_line)
{
	struct sp_module m = self_module(&self);
	uint32_t mid = add_module(&m);
	uint32_t a = add_frame(mid, &m, addr_of(sp_test_known_alpha) + 4);
	load(false);
	const struct sp_resolved_frame *f;
	size_t n;
	cr_assert_eq(sp_symbolizer_resolve_all(sym, a, &f, &n), 0);
	cr_assert_eq(n, 1);
	cr_expect_str_eq(f->name, "sp_test_known_alpha");
	cr_assert_not_null(f->file);
	cr_expect(ends_with(f->file, "tests/unit/symbolizer.c"), "file '%s'", f->file);
	/* +4 is in the prologue or the loop: sp_test_known_alpha's 7 lines. */
	cr_expect(f->line >= ALPHA_FIRST_LINE && f->line < ALPHA_FIRST_LINE + 7, "line %u",
		  f->line);
}

Test(symbolizer, frames_without_dwarf_have_no_line)
{
	struct sp_frame kernel = {.module_id = SP_NO_MODULE, .mode = SP_FRAME_KERNEL,
				  .abs_ip = 0xffffffff81000010ULL};
	uint32_t k;
	cr_assert_eq(sp_spool_writer_intern_frame(writer, &kernel, &k), 0);
	struct sp_module missing = {.start = 0x400000, .end = 0x401000, .file_offset = 0x1000,
				    .path = "/nonexistent/dir/libgone.so.1"};
	uint32_t mm = add_module(&missing);
	uint32_t a = add_frame(mm, &missing, 0x400123);
	load(false);
	const struct sp_resolved_frame *f;
	size_t n;
	cr_assert_eq(sp_symbolizer_resolve_all(sym, k, &f, &n), 0);
	cr_expect(n == 1 && !f->file && !f->line);
	cr_assert_eq(sp_symbolizer_resolve_all(sym, a, &f, &n), 0);
	cr_expect(n == 1 && !f->file && !f->line);
	cr_expect_eq(sp_symbolizer_resolve_all(sym, 1000, &f, &n), -SP_E_BAD_ARG);
}

Test(symbolizer, segments_map_file_offsets_without_a_recorded_bias)
{
	struct sp_module m = self_module(&self);
	m.flags &= ~(uint32_t)SP_MODULE_HAS_BIAS;
	m.load_bias = 0x12345; /* wrong on purpose: must not be used */
	uint32_t mid = add_module(&m);
	uint32_t a = add_frame(mid, &m, addr_of(sp_test_known_alpha) + 4);
	load(false);
	cr_expect_str_eq(resolve(a)->name, "sp_test_known_alpha");
}

Test(symbolizer, one_file_serves_every_process_mapping_it)
{
	struct sp_module m1 = self_module(&self), m2 = m1;
	m2.pid = m1.pid + 1;
	uint32_t id1 = add_module(&m1), id2 = add_module(&m2);
	uint32_t a = add_frame(id1, &m1, addr_of(sp_test_known_alpha) + 4);
	uint32_t b = add_frame(id2, &m2, addr_of(sp_test_known_alpha) + 4);
	load(false);
	cr_expect_str_eq(resolve(a)->name, "sp_test_known_alpha");
	cr_expect_str_eq(resolve(b)->name, "sp_test_known_alpha");
	struct sp_symbolizer_stats st;
	sp_symbolizer_stats(sym, &st);
	cr_expect_eq(st.files_proven, 1, "file opened %" PRIu64 " times", st.files_proven);
}

Test(symbolizer, different_build_id_is_not_proof)
{
	struct sp_module m = self_module(&self);
	m.build_id[0] ^= 0xff;
	uint32_t mid = add_module(&m);
	uint64_t addr = addr_of(sp_test_known_alpha) + 4;
	uint32_t a = add_frame(mid, &m, addr);
	load(false);

	const struct sp_resolved_frame *ra = resolve(a);
	char want[PATH_MAX + 32];
	snprintf(want, sizeof(want), "%s+0x%" PRIx64, base(self.path),
		 addr - m.start + m.file_offset);
	cr_expect_str_eq(ra->name, want);
	cr_expect_eq(ra->origin, SP_ORIGIN_ADDRESS_ONLY);
	struct sp_symbolizer_stats st;
	sp_symbolizer_stats(sym, &st);
	cr_expect_eq(st.files_unproven, 1);
	cr_expect_eq(st.files_proven, 0);
}

Test(symbolizer, inode_size_mtime_prove_a_file_without_build_id)
{
	struct sp_module good = self_module(&self);
	good.build_id_len = 0;
	struct sp_module stale = good;
	stale.mtime_ns += 1; /* same path and inode, rewritten since: not proof */
	uint32_t g = add_module(&good), s = add_module(&stale);
	uint32_t a = add_frame(g, &good, addr_of(sp_test_known_beta) + 4);
	uint32_t b = add_frame(s, &stale, addr_of(sp_test_known_beta) + 4);
	load(false);
	cr_expect_str_eq(resolve(a)->name, "sp_test_known_beta");
	cr_expect_eq(resolve(b)->origin, SP_ORIGIN_ADDRESS_ONLY);
	cr_expect_eq(strncmp(resolve(b)->name, base(self.path), strlen(base(self.path))), 0);
	struct sp_symbolizer_stats st;
	sp_symbolizer_stats(sym, &st);
	cr_expect_eq(st.files_proven, 1);
	cr_expect_eq(st.files_unproven, 1);
}

Test(symbolizer, deleted_file_is_looked_for_at_its_old_path)
{
	/* maps says "PATH (deleted)"; a file now at PATH counts only if proven. */
	char path[PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s (deleted)", self.path);
	struct sp_module m = self_module(&self);
	m.path = path;
	m.flags |= SP_MODULE_DELETED;
	struct sp_module other = m;
	other.build_id[1] ^= 0x55;
	other.pid = m.pid + 1;
	uint32_t mid = add_module(&m), oid = add_module(&other);
	uint32_t a = add_frame(mid, &m, addr_of(sp_test_known_alpha) + 4);
	uint32_t b = add_frame(oid, &other, addr_of(sp_test_known_alpha) + 4);
	load(false);
	cr_expect_str_eq(resolve(a)->name, "sp_test_known_alpha");
	cr_expect_str_eq(resolve(a)->module, base(self.path));
	cr_expect_eq(resolve(b)->origin, SP_ORIGIN_ADDRESS_ONLY);
}

Test(symbolizer, missing_and_malformed_files_fall_back)
{
	char junk[] = "/tmp/sp-junk-XXXXXX";
	int fd = mkstemp(junk);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "\177ELF garbage, not an ELF file", 29), 29);
	close(fd);
	/* A FIFO must not block the symbolizer; a directory is no file either. */
	char fifo[] = "/tmp/sp-fifo-XXXXXX";
	cr_assert_not_null(mkdtemp(fifo));
	cr_assert_eq(rmdir(fifo), 0);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	struct sp_module missing = {.start = 0x400000, .end = 0x401000, .file_offset = 0x1000,
				    .path = "/nonexistent/dir/libgone.so.1"};
	struct sp_module bad = {.start = 0x500000, .end = 0x501000, .path = junk};
	struct sp_module pipe_mod = {.start = 0x600000, .end = 0x601000, .path = fifo};
	struct sp_module dir_mod = {.start = 0x700000, .end = 0x701000, .path = "/tmp/"};
	uint32_t mm = add_module(&missing), mb = add_module(&bad);
	uint32_t mp = add_module(&pipe_mod), md = add_module(&dir_mod);
	uint32_t a = add_frame(mm, &missing, 0x400123);
	uint32_t b = add_frame(mb, &bad, 0x500040);
	uint32_t c = add_frame(mp, &pipe_mod, 0x600010);
	uint32_t d = add_frame(md, &dir_mod, 0x700010);
	load(false);
	cr_expect_str_eq(resolve(a)->name, "libgone.so.1+0x1123");
	cr_expect_str_eq(resolve(a)->module, "libgone.so.1");
	cr_expect_str_eq(resolve(b)->name, strcat(strcpy((char[64]){0}, base(junk)), "+0x40"));
	cr_expect_str_eq(resolve(c)->name, strcat(strcpy((char[64]){0}, base(fifo)), "+0x10"));
	cr_expect_eq(resolve(d)->origin, SP_ORIGIN_ADDRESS_ONLY);
	struct sp_symbolizer_stats st;
	sp_symbolizer_stats(sym, &st);
	cr_expect_eq(st.files_unreadable, 4);
	cr_expect_eq(st.frames_address_only, 4);
	unlink(junk);
	unlink(fifo);
}

Test(symbolizer, markers_kernel_and_unmapped_frames)
{
	struct sp_frame marker = {.module_id = SP_NO_MODULE, .mode = SP_FRAME_TRUNCATED,
				  .abs_ip = SP_STOP_STACK_EXHAUSTED};
	struct sp_frame kernel = {.module_id = SP_NO_MODULE, .mode = SP_FRAME_KERNEL,
				  .abs_ip = 0xffffffff81000010ULL};
	struct sp_frame unmapped = {.module_id = SP_NO_MODULE, .mode = SP_FRAME_USER,
				    .abs_ip = 0xdead0};
	uint32_t t, k, u;
	cr_assert_eq(sp_spool_writer_intern_frame(writer, &marker, &t), 0);
	cr_assert_eq(sp_spool_writer_intern_frame(writer, &kernel, &k), 0);
	cr_assert_eq(sp_spool_writer_intern_frame(writer, &unmapped, &u), 0);
	load(false);

	const struct sp_resolved_frame *rt = resolve(t), *rk = resolve(k), *ru = resolve(u);
	cr_expect_str_eq(rt->name, "[truncated]");
	cr_expect_eq(rt->kind, SP_KIND_TRUNCATED);
	cr_expect(rt->flags & SP_RFRAME_TRUNCATED);
	cr_expect_str_eq(rk->name, "[kernel]+0xffffffff81000010");
	cr_expect_eq(rk->kind, SP_KIND_KERNEL);
	cr_expect_str_eq(ru->name, "[unknown]+0xdead0");
	cr_expect_eq(ru->kind, SP_KIND_UNKNOWN);
	cr_expect_eq(ru->origin, SP_ORIGIN_ADDRESS_ONLY);
	const struct sp_resolved_frame *rf;
	cr_expect_eq(sp_symbolizer_resolve(sym, 1000, &rf), -SP_E_BAD_ARG);
}

Test(symbolizer, demangles_cxx_names_unless_asked_not_to)
{
	struct sp_module m = self_module(&self);
	uint32_t mid = add_module(&m);
	uint32_t a = add_frame(mid, &m, addr_of(mangled_demo) + 4);
	load(false);
	cr_expect_str_eq(resolve(a)->name, "sp::demo(int)");

	sp_symbolizer_free(sym);
	struct sp_symbolizer_opts raw = {.no_demangle = true};
	cr_assert_eq(sp_symbolizer_new(spool, &raw, &sym), 0);
	cr_expect_str_eq(resolve(a)->name, "_ZN2sp4demoEi");
}

Test(symbolizer, demangle_wrapper_leaves_plain_names_alone)
{
	cr_expect_null(sp_demangle("main"));
	cr_expect_null(sp_demangle("i")); /* a mangled type, not a symbol */
	cr_expect_null(sp_demangle("_Zgarbage"));
	char *d = sp_demangle("_ZNSt6vectorIiSaIiEE9push_backERKi");
	cr_assert_not_null(d);
	cr_expect_str_eq(d, "std::vector<int, std::allocator<int> >::push_back(int const&)");
	free(d);
}

/* Rust's two manglings, spelled as rustfilt and perf print them (rustc 1.63's symbols). */
static void expect_demangled(const char *mangled, const char *want)
{
	char *d = sp_demangle(mangled);
	cr_assert_not_null(d, "%s not demangled", mangled);
	cr_expect_str_eq(d, want);
	free(d);
}

Test(symbolizer, demangles_rust_legacy_and_v0_names)
{
	/* legacy: the hash is dropped, "$u7b$"-style escapes decoded */
	expect_demangled("_ZN10rust_names2dm4work17h2c0061c1ff6ae7a4E", "rust_names::dm::work");
	expect_demangled("_ZN10rust_names2dm5outer28_$u7b$$u7b$closure$u7d$$u7d$17h632aede520e68818E",
			 "rust_names::dm::outer::{{closure}}");
	expect_demangled("_ZN4core3ptr71drop_in_place$LT$rust_names..dm..outer..$u7b$$u7b$closure$u7d$$u7d$$GT$"
			 "17hf227c3cbf9e961b2E",
			 "core::ptr::drop_in_place<rust_names::dm::outer::{{closure}}>");
	/* v0: generic arguments and closures kept, crate disambiguators hidden */
	expect_demangled("_RINvNtCsbt0fQicOZbh_10rust_names2dm4workmEB4_", "rust_names::dm::work::<u32>");
	expect_demangled("_RNCNvNtCsbt0fQicOZbh_10rust_names2dm5outer0B5_", "rust_names::dm::outer::{closure#0}");
	/* a C++ name that only looks like Rust's legacy form keeps its C++ reading */
	expect_demangled("_ZN2ns1fEv", "ns::f()");
	cr_expect_null(sp_demangle("_Rgarbage"));
}

/* ---- kernel symbols and perf maps ------------------------------------------ */

static char fixture_dir[64];

/* Criterion runs these after the suite's setup and before its teardown. */
static void fixtures_setup(void)
{
	strcpy(fixture_dir, "/tmp/sp-symbolizer-fix-XXXXXX");
	cr_assert_not_null(mkdtemp(fixture_dir));
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(p);
}

static void fixtures_teardown(void)
{
	nftw(fixture_dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

/* Write text to NAME in the fixture directory (mode 0600); returns its path. */
static const char *fixture_file(const char *name, const char *text)
{
	static char path[2][128];
	static int which;
	char *p = path[which++ & 1];
	snprintf(p, sizeof(path[0]), "%s/%s", fixture_dir, name);
	FILE *f = fopen(p, "w");
	cr_assert_not_null(f);
	cr_assert_eq(fputs(text, f) >= 0, true);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(chmod(p, 0600), 0);
	return p;
}

static uint32_t add_kernel_frame(uint64_t addr)
{
	struct sp_frame f = {.module_id = SP_NO_MODULE, .mode = SP_FRAME_KERNEL, .abs_ip = addr};
	uint32_t id;
	cr_assert_eq(sp_spool_writer_intern_frame(writer, &f, &id), 0);
	return id;
}

static void load_with(const struct sp_symbolizer_opts *opts)
{
	struct sp_summary summary = {0};
	cr_assert_eq(sp_spool_writer_finish(writer, &summary), 0);
	sp_spool_writer_free(writer);
	writer = NULL;
	cr_assert_eq(sp_spool_open(spool_path, &spool), 0);
	cr_assert_eq(sp_symbolizer_new(spool, opts, &sym), 0);
}

static struct sp_symbolizer_stats stats_now(void)
{
	struct sp_symbolizer_stats st;
	sp_symbolizer_stats(sym, &st);
	return st;
}

static const char kallsyms_text[] =
	"ffffffff81000000 T _stext\n"
	"ffffffff81000200 T do_syscall_64\n"
	"ffffffff81000300 T vfs_read\n"
	"ffffffff81000400 T _etext\n"
	"ffffffff82000000 D some_data\n"
	"ffffffffc0002000 t ext4_file_read_iter\t[ext4]\n"
	"ffffffffc0003000 d ext4_data\t[ext4]\n";

Test(symbolizer, kernel_frames_are_named_from_a_kallsyms_file, .init = fixtures_setup,
     .fini = fixtures_teardown)
{
	uint32_t a = add_kernel_frame(0xffffffff81000210);
	uint32_t b = add_kernel_frame(0xffffffffc0002010);
	uint32_t c = add_kernel_frame(0xffffffff82000010); /* data, not a function */
	uint32_t d = add_kernel_frame(0xffffffff81000220);
	struct sp_symbolizer_opts opts = {.kallsyms_path = fixture_file("kallsyms", kallsyms_text)};
	load_with(&opts);

	const struct sp_resolved_frame *ra = resolve(a);
	cr_expect_str_eq(ra->name, "do_syscall_64");
	cr_expect_str_eq(ra->module, "[kernel.kallsyms]");
	cr_expect_eq(ra->kind, SP_KIND_KERNEL);
	cr_expect_eq(ra->origin, SP_ORIGIN_KERNEL_SYMBOLS);
	cr_expect_eq(ra->symbol_offset, 0x10);
	cr_expect_str_eq(resolve(b)->name, "ext4_file_read_iter");
	cr_expect_str_eq(resolve(b)->module, "[ext4]");
	cr_expect_str_eq(resolve(c)->name, "[kernel]+0xffffffff82000010");
	cr_expect_eq(resolve(c)->origin, SP_ORIGIN_ADDRESS_ONLY);
	cr_expect_eq(resolve(c)->kind, SP_KIND_KERNEL);
	cr_expect_str_eq(resolve(d)->name, "do_syscall_64");
	struct sp_symbolizer_stats st = stats_now();
	cr_expect(st.kallsyms_read);
	cr_expect_eq(st.kallsyms_lines, 7);
	cr_expect_eq(st.kallsyms_kept, 2, "only what the frames need: %" PRIu64, st.kallsyms_kept);
	cr_expect_eq(st.kernel_frames_named, 3);
	cr_expect_eq(st.kernel_frames_unnamed, 1);
	cr_expect_eq(st.frames_named, 3);
}

Test(symbolizer, kernel_symbols_can_be_turned_off, .init = fixtures_setup,
     .fini = fixtures_teardown)
{
	uint32_t a = add_kernel_frame(0xffffffff81000210);
	struct sp_symbolizer_opts opts = {.kallsyms_path = fixture_file("kallsyms", kallsyms_text),
					  .no_kernel_symbols = true};
	load_with(&opts);
	cr_expect_str_eq(resolve(a)->name, "[kernel]+0xffffffff81000210");
	cr_expect_not(stats_now().kallsyms_read);
}

Test(symbolizer, restricted_or_missing_kallsyms_leave_addresses, .init = fixtures_setup,
     .fini = fixtures_teardown)
{
	uint32_t a = add_kernel_frame(0xffffffff81000210);
	struct sp_symbolizer_opts opts = {
		.kallsyms_path = fixture_file("zeros", "0000000000000000 T _stext\n"
						       "0000000000000000 T do_syscall_64\n")};
	load_with(&opts);
	cr_expect_str_eq(resolve(a)->name, "[kernel]+0xffffffff81000210");
	cr_expect(stats_now().kallsyms_restricted);

	sp_symbolizer_free(sym);
	opts.kallsyms_path = "/nonexistent/kallsyms";
	cr_assert_eq(sp_symbolizer_new(spool, &opts, &sym), 0);
	cr_expect_str_eq(resolve(a)->name, "[kernel]+0xffffffff81000210");
	cr_expect_eq(stats_now().kallsyms_error, -ENOENT);
}

Test(symbolizer, live_kallsyms_is_not_used_for_another_kernel_release)
{
	/* The fixture spool says kernel "k": this machine's symbols would name it wrongly. */
	uint32_t a = add_kernel_frame(0xffffffff81000210);
	load(false);
	cr_expect_str_eq(resolve(a)->name, "[kernel]+0xffffffff81000210");
	cr_expect(stats_now().kallsyms_other_kernel);
	cr_expect_not(stats_now().kallsyms_read);
}

#define ANON_START 0x7f0000000000ull

static struct sp_module anon_module(int32_t pid)
{
	return (struct sp_module){.pid = pid, .start = ANON_START, .end = ANON_START + 0x10000,
				  .file_offset = ANON_START, .flags = SP_MODULE_ANON,
				  .path = "//anon"};
}

static const char perf_map_text[] =
	"7f0000001000 40 jit_hot_loop\n"
	"7f0000002000 b py::handle_request:/srv/app/server.py\n"
	"7f0000003000 20 _ZN2sp4demoEi\n";

Test(symbolizer, anonymous_code_is_named_from_the_perf_map, .init = fixtures_setup,
     .fini = fixtures_teardown)
{
	struct sp_module m = anon_module(4242);
	uint32_t mid = add_module(&m);
	uint32_t jit = add_frame(mid, &m, ANON_START + 0x1010);
	uint32_t py = add_frame(mid, &m, ANON_START + 0x2004);
	uint32_t cxx = add_frame(mid, &m, ANON_START + 0x3000);
	uint32_t gap = add_frame(mid, &m, ANON_START + 0x1040);
	fixture_file("perf-4242.map", perf_map_text);
	struct sp_symbolizer_opts opts = {.perf_map_dir = fixture_dir};
	load_with(&opts);

	const struct sp_resolved_frame *rj = resolve(jit);
	cr_expect_str_eq(rj->name, "jit_hot_loop");
	cr_expect_str_eq(rj->module, "perf-4242.map");
	cr_expect_eq(rj->kind, SP_KIND_NATIVE);
	cr_expect_eq(rj->origin, SP_ORIGIN_PERF_MAP);
	cr_expect(rj->flags & SP_RFRAME_JIT);
	cr_expect_eq(rj->symbol_offset, 0x10);
	const struct sp_resolved_frame *rp = resolve(py);
	cr_expect_str_eq(rp->name, "handle_request");
	cr_expect_str_eq(rp->file, "/srv/app/server.py");
	cr_expect_str_eq(rp->module, "server.py");
	cr_expect_eq(rp->kind, SP_KIND_PYTHON);
	cr_expect_eq(rp->origin, SP_ORIGIN_PERF_MAP);
	cr_expect_not(rp->flags & SP_RFRAME_JIT);
	cr_expect_str_eq(resolve(cxx)->name, "sp::demo(int)");
	/* Past the end of every line: the address form. */
	cr_expect_eq(resolve(gap)->origin, SP_ORIGIN_ADDRESS_ONLY);
	cr_expect_str_eq(resolve(gap)->module, "[anon]");
	struct sp_symbolizer_stats st = stats_now();
	cr_expect_eq(st.perf_maps_read, 1, "one read for the whole process");
	cr_expect_eq(st.perf_map_frames_named, 3);
}

Test(symbolizer, perf_map_policy_none_and_python, .init = fixtures_setup,
     .fini = fixtures_teardown)
{
	struct sp_module py_mod = anon_module(100), other_mod = anon_module(200);
	uint32_t pmid = add_module(&py_mod), omid = add_module(&other_mod);
	uint32_t pf = add_frame(pmid, &py_mod, ANON_START + 0x2004);
	uint32_t of = add_frame(omid, &other_mod, ANON_START + 0x1004);
	/* Process 100 is a Python runtime; 200 was one, then exec'd something else. */
	struct sp_exec e1 = {.timestamp_ns = 0, .pid = 100, .is_python_runtime = true};
	struct sp_exec e2 = {.timestamp_ns = 0, .pid = 200, .is_python_runtime = true};
	struct sp_exec e3 = {.timestamp_ns = 0, .pid = 200, .is_python_runtime = false};
	cr_assert_eq(sp_spool_writer_append_exec(writer, &e1), 0);
	cr_assert_eq(sp_spool_writer_append_exec(writer, &e2), 0);
	cr_assert_eq(sp_spool_writer_append_exec(writer, &e3), 0);
	fixture_file("perf-100.map", perf_map_text);
	fixture_file("perf-200.map", perf_map_text);

	struct sp_symbolizer_opts opts = {.perf_map_dir = fixture_dir,
					  .perf_map_policy = SP_PERF_MAPS_NONE};
	load_with(&opts);
	cr_expect_eq(resolve(pf)->origin, SP_ORIGIN_ADDRESS_ONLY);
	cr_expect_eq(resolve(of)->origin, SP_ORIGIN_ADDRESS_ONLY);
	cr_expect_eq(stats_now().perf_maps_read, 0);
	cr_expect_eq(stats_now().perf_map_frames_denied, 2);

	sp_symbolizer_free(sym);
	opts.perf_map_policy = SP_PERF_MAPS_PYTHON;
	cr_assert_eq(sp_symbolizer_new(spool, &opts, &sym), 0);
	cr_expect_str_eq(resolve(pf)->name, "handle_request");
	cr_expect_eq(resolve(of)->origin, SP_ORIGIN_ADDRESS_ONLY, "latest marker: not Python");
	cr_expect_eq(stats_now().perf_map_frames_denied, 1);

	sp_symbolizer_free(sym);
	opts.perf_map_policy = SP_PERF_MAPS_ALL;
	cr_assert_eq(sp_symbolizer_new(spool, &opts, &sym), 0);
	cr_expect_str_eq(resolve(of)->name, "jit_hot_loop");

	struct sp_symbolizer *bad = NULL;
	opts.perf_map_policy = SP_PERF_MAPS_PIDS + 1;
	cr_expect_eq(sp_symbolizer_new(spool, &opts, &bad), -SP_E_BAD_ARG);
	cr_expect_null(bad);
}

Test(symbolizer, code_outside_every_module_takes_the_pid_of_its_samples,
     .init = fixtures_setup, .fini = fixtures_teardown)
{
	struct sp_frame alone = {.module_id = SP_NO_MODULE, .abs_ip = ANON_START + 0x1004};
	struct sp_frame shared = {.module_id = SP_NO_MODULE, .abs_ip = ANON_START + 0x1008};
	struct sp_frame unsampled = {.module_id = SP_NO_MODULE, .abs_ip = ANON_START + 0x100c};
	uint32_t fa, fs, fu, t1, t2, t3, s1, s2;
	cr_assert_eq(sp_spool_writer_intern_frame(writer, &alone, &fa), 0);
	cr_assert_eq(sp_spool_writer_intern_frame(writer, &shared, &fs), 0);
	cr_assert_eq(sp_spool_writer_intern_frame(writer, &unsampled, &fu), 0);
	cr_assert_eq(sp_spool_writer_intern_thread(writer, 300, 300, &t1), 0);
	cr_assert_eq(sp_spool_writer_intern_thread(writer, 300, 301, &t2), 0);
	cr_assert_eq(sp_spool_writer_intern_thread(writer, 400, 400, &t3), 0);
	uint32_t stack_a[] = {fa, fs}, stack_s[] = {fs};
	cr_assert_eq(sp_spool_writer_intern_stack(writer, stack_a, 2, &s1), 0);
	cr_assert_eq(sp_spool_writer_intern_stack(writer, stack_s, 1, &s2), 0);
	cr_assert_eq(sp_spool_writer_append_sample(writer, t1, s1, 1000), 0);
	cr_assert_eq(sp_spool_writer_append_sample(writer, t2, s1, 2000), 0);
	cr_assert_eq(sp_spool_writer_append_sample(writer, t3, s2, 3000), 0);
	fixture_file("perf-300.map", "7f0000001000 40 from_300\n");
	fixture_file("perf-400.map", "7f0000001000 40 from_400\n");
	struct sp_symbolizer_opts opts = {.perf_map_dir = fixture_dir};
	load_with(&opts);
	cr_expect_str_eq(resolve(fa)->name, "from_300");
	cr_expect_eq(resolve(fa)->origin, SP_ORIGIN_PERF_MAP);
	/* Two processes' samples hold it: no one map may name it. */
	cr_expect_str_eq(resolve(fs)->name, "[unknown]+0x7f0000001008");
	cr_expect_eq(resolve(fs)->kind, SP_KIND_UNKNOWN);
	cr_expect_str_eq(resolve(fu)->name, "[unknown]+0x7f000000100c");
}

Test(symbolizer, a_perf_map_older_than_its_process_is_ignored, .init = fixtures_setup,
     .fini = fixtures_teardown)
{
	struct sp_module m = anon_module(500), n = anon_module(600);
	uint32_t mid = add_module(&m), nid = add_module(&n);
	uint32_t f = add_frame(mid, &m, ANON_START + 0x1004);
	uint32_t g = add_frame(nid, &n, ANON_START + 0x1004);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	/*
	 * The spool's clocks: wall 0 at monotonic 0, so an exec at T ns happened
	 * at T/1000 µs since the epoch.  Process 500 exec'd an hour after its
	 * map file was written (an earlier process's), 600 an hour before.
	 */
	uint64_t now_ns = (uint64_t)now.tv_sec * 1000000000 + (uint64_t)now.tv_nsec;
	struct sp_exec late = {.timestamp_ns = now_ns + 3600000000000ull, .pid = 500};
	struct sp_exec early = {.timestamp_ns = now_ns - 3600000000000ull, .pid = 600};
	cr_assert_eq(sp_spool_writer_append_exec(writer, &late), 0);
	cr_assert_eq(sp_spool_writer_append_exec(writer, &early), 0);
	fixture_file("perf-500.map", perf_map_text);
	fixture_file("perf-600.map", perf_map_text);
	struct sp_symbolizer_opts opts = {.perf_map_dir = fixture_dir};
	load_with(&opts);
	cr_expect_eq(resolve(f)->origin, SP_ORIGIN_ADDRESS_ONLY);
	cr_expect_str_eq(resolve(g)->name, "jit_hot_loop");
	struct sp_symbolizer_stats st = stats_now();
	cr_expect_eq(st.perf_maps_stale, 1);
	cr_expect_eq(st.perf_maps_read, 1);
}

Test(symbolizer, perf_maps_others_can_write_are_ignored, .init = fixtures_setup,
     .fini = fixtures_teardown)
{
	struct sp_module m = anon_module(700), n = anon_module(800);
	uint32_t mid = add_module(&m), nid = add_module(&n);
	uint32_t f = add_frame(mid, &m, ANON_START + 0x1004);
	uint32_t g = add_frame(nid, &n, ANON_START + 0x1004);
	cr_assert_eq(chmod(fixture_file("perf-700.map", perf_map_text), 0666), 0);
	load_with(&(struct sp_symbolizer_opts){.perf_map_dir = fixture_dir});
	cr_expect_eq(resolve(f)->origin, SP_ORIGIN_ADDRESS_ONLY);
	cr_expect_eq(resolve(g)->origin, SP_ORIGIN_ADDRESS_ONLY);
	struct sp_symbolizer_stats st = stats_now();
	cr_expect_eq(st.perf_maps_insecure, 1);
	cr_expect_eq(st.perf_maps_missing, 1);
}

/* ---- the symbol cache (lib/symbols/symcache.c) ------------------------------------- */

/* The witness of module m's file as it is now (sp_symcache_witness). */
static uint64_t witness_of(const struct sp_module *m)
{
	struct stat st;
	cr_assert_eq(stat(m->path, &st), 0);
	return sp_symcache_witness(&st);
}

/* The cache file of module m's build-id and file in the fixture directory. */
static void symcache_path(const struct sp_module *m, char *out, size_t cap)
{
	int n = snprintf(out, cap, "%s/symbols/", fixture_dir);
	for (size_t i = 0; i < m->build_id_len; i++)
		n += snprintf(out + n, cap - (size_t)n, "%02x", m->build_id[i]);
	snprintf(out + n, cap - (size_t)n, "-%016" PRIx64 ".sym", witness_of(m));
}

/* Rebuild the symbolizer on the same spool, as a later report would. */
static void reopen(const struct sp_symbolizer_opts *opts)
{
	sp_symbolizer_free(sym);
	sym = NULL;
	cr_assert_eq(sp_symbolizer_new(spool, opts, &sym), 0);
}

Test(symbolizer, symbol_cache_gives_the_same_chains_without_dwarf_lookups,
     .init = fixtures_setup, .fini = fixtures_teardown)
{
	uint64_t pc = sp_test_inline_outer();
	struct sp_module m = self_module(&self);
	uint32_t mid = add_module(&m);
	uint32_t a = add_frame(mid, &m, pc);
	uint32_t b = add_frame(mid, &m, addr_of(sp_test_known_beta) + 4);
	struct sp_symbolizer_opts opts = {.cache_dir = fixture_dir};
	load_with(&opts);
	const struct sp_resolved_frame *f;
	size_t n;
	cr_assert_eq(sp_symbolizer_resolve_all(sym, a, &f, &n), 0);
	cr_assert_eq(n, 3);
	struct sp_resolved_frame live[3];
	memcpy(live, f, sizeof(live));
	char names[3][64], files[3][PATH_MAX];
	for (int i = 0; i < 3; i++) {
		snprintf(names[i], sizeof(names[i]), "%s", f[i].name);
		snprintf(files[i], sizeof(files[i]), "%s", f[i].file);
	}
	cr_expect_str_eq(resolve(b)->name, "sp_test_known_beta");
	struct sp_symbolizer_stats live_st = stats_now();

	char path[PATH_MAX];
	symcache_path(&m, path, sizeof(path));
	struct stat st;
	cr_expect_neq(stat(path, &st), 0, "nothing is written before the symbolizer is freed");
	reopen(&opts); /* frees the first one: writes the cache file */
	cr_assert_eq(stat(path, &st), 0, "no cache file %s", path);
	cr_expect_eq(st.st_mode & 0777, 0600);

	cr_assert_eq(sp_symbolizer_resolve_all(sym, a, &f, &n), 0);
	cr_assert_eq(n, 3);
	for (int i = 0; i < 3; i++) {
		cr_expect_str_eq(f[i].name, names[i], "frame %d", i);
		cr_expect_str_eq(f[i].file, files[i], "frame %d", i);
		cr_expect_eq(f[i].line, live[i].line, "frame %d", i);
		cr_expect_eq(f[i].flags, live[i].flags, "frame %d", i);
		cr_expect_eq(f[i].symbol_offset, live[i].symbol_offset, "frame %d", i);
		cr_expect_eq(f[i].origin, live[i].origin, "frame %d", i);
	}
	cr_expect_str_eq(resolve(b)->name, "sp_test_known_beta");
	struct sp_symbolizer_stats again = stats_now();
	cr_expect_eq(again.files_proven, 1, "the file is still proven before its names are used");
	cr_expect_eq(again.inline_frames, live_st.inline_frames);
	cr_expect_eq(again.frames_with_lines, live_st.frames_with_lines);
	cr_expect_eq(again.frames_named, live_st.frames_named);
	/* Nothing new found: the file is left as it is. */
	struct stat st2;
	reopen(&opts);
	cr_assert_eq(stat(path, &st2), 0);
	cr_expect(st2.st_ino == st.st_ino && st2.st_mtim.tv_nsec == st.st_mtim.tv_nsec);
}

/* A cache file for m that names the address svma "from_the_cache". */
static struct sp_buf planted_cache(const struct sp_module *m, uint64_t svma)
{
	struct sp_symcache_src src = {.name = NULL, .file = "/src/planted.c", .line = 7};
	struct sp_symcache_hit h = {.svma = svma, .name = "from_the_cache", .offset = 4,
				    .nsrc = 1, .src = &src};
	struct sp_buf b;
	sp_buf_init(&b);
	cr_assert_eq(sp_symcache_put(&b, &h), 0);
	cr_assert_eq(sp_symcache_write(fixture_dir, m->build_id, m->build_id_len, witness_of(m),
				       SP_SYMCACHE_OWN, &b, 1),
		     0);
	sp_buf_release(&b);
	char path[PATH_MAX];
	symcache_path(m, path, sizeof(path));
	struct sp_buf file;
	sp_buf_init(&file);
	FILE *fp = fopen(path, "r");
	cr_assert_not_null(fp);
	uint8_t chunk[4096];
	size_t k;
	while ((k = fread(chunk, 1, sizeof(chunk), fp)) > 0)
		cr_assert_eq(sp_buf_append(&file, chunk, k), 0);
	fclose(fp);
	return file;
}

static void put_file(const char *path, const uint8_t *p, size_t n, mode_t mode)
{
	unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, p, n), (ssize_t)n);
	cr_assert_eq(fchmod(fd, mode), 0);
	close(fd);
}

Test(symbolizer, symbol_cache_is_read_only_when_whole_and_trusted, .init = fixtures_setup,
     .fini = fixtures_teardown)
{
	struct sp_module m = self_module(&self);
	uint32_t mid = add_module(&m);
	uint64_t addr = addr_of(sp_test_known_alpha) + 4;
	uint32_t a = add_frame(mid, &m, addr);
	uint64_t svma = addr - m.load_bias;
	struct sp_buf good = planted_cache(&m, svma);
	char path[PATH_MAX];
	symcache_path(&m, path, sizeof(path));
	struct sp_symbolizer_opts opts = {.cache_dir = fixture_dir};
	load_with(&opts);
	/* The cache answers first: proof that its entry is what names the frame. */
	const struct sp_resolved_frame *rf = resolve(a);
	cr_expect_str_eq(rf->name, "from_the_cache");
	cr_expect_str_eq(rf->file, "/src/planted.c");
	cr_expect_eq(rf->line, 7);
	cr_expect_eq(rf->symbol_offset, 4);

	/* Off with no_demangle (the cache holds demangled names) and with no directory. */
	opts.no_demangle = true;
	reopen(&opts);
	cr_expect_str_eq(resolve(a)->name, "sp_test_known_alpha");
	reopen(&(struct sp_symbolizer_opts){.cache_dir = ""});
	cr_expect_str_eq(resolve(a)->name, "sp_test_known_alpha");
	opts.no_demangle = false;

	/* Others may write it, or it is another user's, or a symlink: not read. */
	put_file(path, good.data, good.len, 0620);
	reopen(&opts);
	cr_expect_str_eq(resolve(a)->name, "sp_test_known_alpha", "group-writable cache used");
	put_file(path, good.data, good.len, 0600);
	cr_assert_eq(chown(path, 65534, 65534), 0);
	reopen(&opts);
	cr_expect_str_eq(resolve(a)->name, "sp_test_known_alpha", "another user's cache used");

	/* Every single-byte change and every truncation: refused whole (CRC), no crash. */
	uint8_t *bad = malloc(good.len);
	cr_assert_not_null(bad);
	for (size_t i = 0; i < good.len; i++) {
		memcpy(bad, good.data, good.len);
		bad[i] ^= (uint8_t)(1u << (i % 8));
		put_file(path, bad, good.len, 0600);
		reopen(&opts);
		cr_expect_str_eq(resolve(a)->name, "sp_test_known_alpha", "byte %zu changed", i);
		put_file(path, good.data, i, 0600);
		reopen(&opts);
		cr_expect_str_eq(resolve(a)->name, "sp_test_known_alpha", "cut at %zu", i);
	}
	free(bad);
	sp_buf_release(&good);
	/* The damaged file was replaced by the live names: a whole file again. */
	reopen(&opts);
	reopen(&opts);
	cr_expect_str_eq(resolve(a)->name, "sp_test_known_alpha");
	struct stat st;
	cr_expect_eq(stat(path, &st), 0);
}

/*
 * Any ELF can claim any build-id: a copy with the same build-id and other
 * names, reported first, leaves a cache file of its own (its witness), which
 * never names the genuine file's frames (cache poisoning).
 */
Test(symbolizer, symbol_cache_of_another_file_never_answers, .init = fixtures_setup,
     .fini = fixtures_teardown)
{
	struct sp_module m = self_module(&self);
	uint32_t mid = add_module(&m);
	uint64_t addr = addr_of(sp_test_known_alpha) + 4;
	uint32_t a = add_frame(mid, &m, addr);
	struct sp_symcache_src src = {.file = "/src/forged.c", .line = 1};
	struct sp_symcache_hit h = {.svma = addr - m.load_bias, .name = "forged_name", .nsrc = 1,
				    .src = &src};
	struct sp_buf b;
	sp_buf_init(&b);
	cr_assert_eq(sp_symcache_put(&b, &h), 0);
	/* Written from another file with the same build-id: another witness. */
	cr_assert_eq(sp_symcache_write(fixture_dir, m.build_id, m.build_id_len, witness_of(&m) ^ 1,
				       SP_SYMCACHE_OWN, &b, 1),
		     0);
	struct sp_symbolizer_opts opts = {.cache_dir = fixture_dir};
	load_with(&opts);
	cr_expect_str_eq(resolve(a)->name, "sp_test_known_alpha", "a forged copy's names were used");
	/* The control: the same entry under this file's witness does answer (planted
	 * after the symbolizer that saves this file's live names is gone). */
	reopen(&(struct sp_symbolizer_opts){.cache_dir = ""});
	cr_assert_eq(sp_symcache_write(fixture_dir, m.build_id, m.build_id_len, witness_of(&m),
				       SP_SYMCACHE_OWN, &b, 1),
		     0);
	reopen(&opts);
	cr_expect_str_eq(resolve(a)->name, "forged_name");
	sp_buf_release(&b);
}

Test(symbolizer, symbol_cache_keeps_only_files_with_dwarf, .init = fixtures_setup,
     .fini = fixtures_teardown)
{
	/* A copy without DWARF keeps its build-id: a debug file found later could say more. */
	char copy[PATH_MAX], cmd[2 * PATH_MAX + 64];
	snprintf(copy, sizeof(copy), "%s/nodwarf", fixture_dir);
	snprintf(cmd, sizeof(cmd), "objcopy --strip-debug '%s' '%s'", self.path, copy);
	if (system(cmd) != 0)
		cr_skip_test("objcopy (binutils) is needed to make a copy without DWARF");
	struct sp_module m = self_module(&self);
	struct stat cst;
	cr_assert_eq(stat(copy, &cst), 0);
	m.path = copy;
	m.inode = cst.st_ino;
	m.file_size = (uint64_t)cst.st_size;
	m.mtime_ns = (int64_t)cst.st_mtim.tv_sec * 1000000000 + cst.st_mtim.tv_nsec;
	uint32_t mid = add_module(&m);
	uint32_t a = add_frame(mid, &m, addr_of(sp_test_known_alpha) + 4);
	struct sp_symbolizer_opts opts = {.cache_dir = fixture_dir, .debug_dirs = fixture_dir};
	load_with(&opts);
	const struct sp_resolved_frame *rf = resolve(a);
	cr_expect_str_eq(rf->name, "sp_test_known_alpha");
	cr_expect_null(rf->file, "a copy without DWARF has no lines");
	reopen(&opts);
	char path[PATH_MAX];
	symcache_path(&m, path, sizeof(path));
	struct stat st;
	cr_expect_neq(stat(path, &st), 0, "names from a file without DWARF were cached");
}
