/* SPDX-License-Identifier: MIT */
/* Unit tests of the symbolizer: names from this test binary, identity proof, fallbacks, markers. */
#include <criterion/criterion.h>

#include "report_internal.h"

#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Functions with known names; bodies big enough that +4 stays inside them. */
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
