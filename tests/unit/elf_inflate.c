/* SPDX-License-Identifier: MIT */
/* Unit tests of lib/util/elf_inflate.c: compressed sections' claims read, and those past the bounds hidden. */
#include <criterion/criterion.h>

#include "util/util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <lzma.h>
#include <zlib.h>

#define MIB ((uint64_t)1 << 20)

/* One section of a test file: SHF_COMPRESSED with a header claiming claim bytes, or plain. */
struct sec {
	const char *name;
	bool compressed;
	uint64_t claim;
	bool gnu;      /* a GNU .zdebug_* section: "ZLIB" and a big-endian size */
	bool truncated; /* a compression header cut short */
};

#define Z(n, c) {.name = (n), .compressed = true, .claim = (c)}
#define GNU(n, c) {.name = (n), .gnu = true, .claim = (c)}
#define PLAIN(n) {.name = (n)}
#define CUT(n) {.name = (n), .compressed = true, .truncated = true}

static char path[64];

static void setup(void)
{
	strcpy(path, "/tmp/sp-inflate-XXXXXX");
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
	sp_elf_init();
}

static void teardown(void)
{
	unlink(path);
}

TestSuite(elf_inflate, .init = setup, .fini = teardown);

/* The bytes of s: a header as described, then a real zlib stream of 64 zero bytes. */
static size_t section_bytes(const struct sec *s, unsigned char *buf, size_t cap)
{
	unsigned char zeros[64] = {0};
	size_t n = 0;
	if (s->gnu) {
		memcpy(buf, "ZLIB", 4);
		for (int i = 0; i < 8; i++)
			buf[4 + i] = (unsigned char)(s->claim >> (8 * (7 - i)));
		n = 12;
	} else if (s->compressed) {
		Elf64_Chdr ch = {.ch_type = ELFCOMPRESS_ZLIB, .ch_size = s->claim, .ch_addralign = 1};
		if (s->truncated)
			return 10;
		memcpy(buf, &ch, sizeof(ch));
		n = sizeof(ch);
	} else {
		memset(buf, 'x', 16);
		return 16;
	}
	uLongf z = (uLongf)(cap - n);
	cr_assert_eq(compress(buf + n, &z, zeros, sizeof(zeros)), Z_OK);
	return n + z;
}

/* Write an x86-64 ELF file at path with the sections of secs. */
static void write_elf(const struct sec *secs, size_t n)
{
	int fd = open(path, O_RDWR | O_TRUNC);
	cr_assert_geq(fd, 0);
	Elf *e = elf_begin(fd, ELF_C_WRITE, NULL);
	cr_assert_not_null(e);
	GElf_Ehdr eh;
	cr_assert_not_null(gelf_newehdr(e, ELFCLASS64));
	cr_assert_not_null(gelf_getehdr(e, &eh));
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_type = ET_DYN;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	static char names[4096];
	static unsigned char bytes[16][256];
	size_t used = 1;
	names[0] = '\0';
	for (size_t i = 0; i <= n; i++) {
		const char *name = i < n ? secs[i].name : ".shstrtab";
		Elf_Scn *scn = elf_newscn(e);
		cr_assert_not_null(scn);
		Elf_Data *d = elf_newdata(scn);
		cr_assert_not_null(d);
		GElf_Shdr sh;
		cr_assert_not_null(gelf_getshdr(scn, &sh));
		sh.sh_name = (GElf_Word)used;
		strcpy(names + used, name);
		used += strlen(name) + 1;
		sh.sh_type = i < n ? SHT_PROGBITS : SHT_STRTAB;
		sh.sh_addralign = 1;
		if (i < n) {
			d->d_buf = bytes[i];
			d->d_size = section_bytes(&secs[i], bytes[i], sizeof(bytes[i]));
			sh.sh_flags = secs[i].compressed ? SHF_COMPRESSED : 0;
			if (secs[i].compressed)
				sh.sh_addralign = 8;
		} else {
			d->d_buf = names;
			d->d_size = used;
			eh.e_shstrndx = (GElf_Half)elf_ndxscn(scn);
		}
		d->d_type = ELF_T_BYTE;
		d->d_align = 1;
		d->d_version = EV_CURRENT;
		cr_assert(gelf_update_shdr(scn, &sh));
	}
	cr_assert(gelf_update_ehdr(e, &eh));
	cr_assert_geq(elf_update(e, ELF_C_WRITE), 0, "%s", elf_errmsg(-1));
	elf_end(e);
	close(fd);
}

/* The test file, opened as the recorder and the symbolizer open module files. */
static Elf *open_elf(int *fd)
{
	*fd = open(path, O_RDONLY);
	cr_assert_geq(*fd, 0);
	Elf *e = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	cr_assert_not_null(e);
	return e;
}

/* The section named name, and its header. */
static Elf_Scn *section(Elf *e, const char *name, GElf_Shdr *sh)
{
	size_t shstrndx;
	cr_assert_eq(elf_getshdrstrndx(e, &shstrndx), 0);
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e, scn))) {
		cr_assert_not_null(gelf_getshdr(scn, sh));
		const char *n = elf_strptr(e, shstrndx, sh->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	cr_assert_fail("no section '%s'", name);
	return NULL;
}

Test(elf_inflate, claims_are_read_from_the_headers)
{
	const struct sec secs[] = {
		Z(".debug_info", 300 * MIB),
		GNU(".zdebug_line", 5000),
		PLAIN(".debug_str"),
		CUT(".debug_abbrev"),
	};
	write_elf(secs, 4);
	int fd;
	Elf *e = open_elf(&fd);
	GElf_Shdr sh;
	uint64_t size;
	cr_assert(sp_elf_section_inflated_size(e, section(e, ".debug_info", &sh), &size));
	cr_assert_eq(size, 300 * MIB);
	cr_assert(sp_elf_section_inflated_size(e, section(e, ".zdebug_line", &sh), &size));
	cr_assert_eq(size, 5000);
	cr_assert_not(sp_elf_section_inflated_size(e, section(e, ".debug_str", &sh), &size));
	/* A header cut short claims everything: it is never inflated. */
	cr_assert(sp_elf_section_inflated_size(e, section(e, ".debug_abbrev", &sh), &size));
	cr_assert_eq(size, UINT64_MAX);
	elf_end(e);
	close(fd);
}

Test(elf_inflate, sections_past_the_bounds_are_hidden_in_memory_only)
{
	const struct sec secs[] = {
		Z(".debug_info", 512 * MIB),  /* over the section bound */
		Z(".debug_line", 64),          /* kept */
		GNU(".zdebug_ranges", 300 * MIB),
		PLAIN(".debug_str"),
	};
	write_elf(secs, 4);
	int fd;
	Elf *e = open_elf(&fd);
	struct sp_inflate_stats st;
	cr_assert_eq(sp_elf_bound_inflation(e, NULL, NULL, &st), 0);
	cr_assert_eq(st.over_limit, 2);
	cr_assert_eq(st.over_limit_bytes, 812 * MIB);
	cr_assert_eq(st.kept, 1);
	cr_assert_eq(st.kept_bytes, 64);
	cr_assert_eq(st.unwanted, 0);
	GElf_Shdr sh;
	section(e, ".debug_info", &sh);
	cr_assert_eq(sh.sh_type, SHT_NOBITS);
	cr_assert_eq(sh.sh_flags & SHF_COMPRESSED, 0);
	section(e, ".zdebug_ranges", &sh);
	cr_assert_eq(sh.sh_type, SHT_NOBITS);
	section(e, ".debug_line", &sh);
	cr_assert_eq(sh.sh_type, SHT_PROGBITS);
	cr_assert_neq(sh.sh_flags & SHF_COMPRESSED, 0);
	/* The kept one still inflates; a second pass finds nothing more to hide. */
	cr_assert_eq(elf_compress(section(e, ".debug_line", &sh), 0, 0), 1);
	cr_assert_eq(sp_elf_bound_inflation(e, NULL, NULL, &st), 0);
	cr_assert_eq(st.over_limit, 0);
	elf_end(e);
	close(fd);

	/* The file itself is unchanged. */
	e = open_elf(&fd);
	section(e, ".debug_info", &sh);
	cr_assert_eq(sh.sh_type, SHT_PROGBITS);
	cr_assert_neq(sh.sh_flags & SHF_COMPRESSED, 0);
	elf_end(e);
	close(fd);
}

Test(elf_inflate, one_run_s_files_share_a_budget_in_section_order)
{
	/*
	 * Two of 200 MiB fit in the run's 512 MiB; the third would not, the
	 * fourth (24 MiB) does: 424 MiB taken.  The file's own 1 GiB bound is
	 * never reached first.
	 */
	const struct sec secs[] = {
		Z(".debug_info", 200 * MIB), Z(".debug_line", 200 * MIB),
		Z(".debug_str", 200 * MIB),  Z(".debug_frame", 24 * MIB),
	};
	write_elf(secs, 4);
	int fd;
	Elf *e = open_elf(&fd);
	struct sp_inflate_stats st;
	cr_assert_eq(sp_elf_bound_inflation(e, NULL, NULL, &st), 0);
	cr_assert_eq(st.kept, 3);
	cr_assert_eq(st.kept_bytes, 424 * MIB);
	cr_assert_eq(st.over_limit, 1);
	cr_assert_eq(st.over_run, 1);
	cr_assert_eq(sp_elf_inflate_run_used(), 424 * MIB);
	GElf_Shdr sh;
	section(e, ".debug_str", &sh);
	cr_assert_eq(sh.sh_type, SHT_NOBITS);
	section(e, ".debug_frame", &sh);
	cr_assert_eq(sh.sh_type, SHT_PROGBITS);
	elf_end(e);
	close(fd);

	/* Another file of the same run: 100 MiB no longer fits, 80 MiB does (504 MiB). */
	const struct sec more[] = {Z(".debug_info", 100 * MIB), Z(".debug_line", 80 * MIB)};
	write_elf(more, 2);
	e = open_elf(&fd);
	cr_assert_eq(sp_elf_bound_inflation(e, NULL, NULL, &st), 0);
	cr_assert_eq(st.kept, 1);
	cr_assert_eq(st.over_run, 1);
	cr_assert_eq(sp_elf_inflate_run_used(), 504 * MIB);
	section(e, ".debug_info", &sh);
	cr_assert_eq(sh.sh_type, SHT_NOBITS);
	elf_end(e);
	close(fd);
}

/* Files another user can influence: told apart by owner and directory, and given 64 MiB a pass. */
Test(elf_inflate, another_user_s_files_share_a_smaller_budget)
{
	struct sp_budget_account a = {0};
	sp_budget_charge_to(&a);
	const struct sec secs[] = {
		Z(".debug_info", 40 * MIB), Z(".debug_line", 40 * MIB), Z(".debug_str", 20 * MIB),
	};
	write_elf(secs, 3);
	int fd;
	Elf *e = open_elf(&fd);
	/* The test file sits in /tmp, which everyone may write (sticky or not). */
	struct sp_file_trust trust;
	sp_file_trust(fd, &trust);
	cr_assert(trust.untrusted);
	cr_assert_str_eq(trust.why, "in a directory writable by group or others");
	struct sp_inflate_stats st;
	cr_assert_eq(sp_elf_bound_inflation(e, NULL, &trust, &st), 0);
	cr_assert_eq(st.kept, 2);
	cr_assert_eq(st.kept_bytes, 60 * MIB);
	cr_assert_eq(st.over_limit, 1);
	cr_assert_eq(st.over_untrusted, 1);
	cr_assert_eq(st.over_run, 0);
	cr_assert_str_eq(st.untrusted_why, trust.why);
	cr_assert_eq(a.inflated, 60 * MIB);
	elf_end(e);
	close(fd);

	/* Root's own file draws on the pass's 512 MiB alone: 200 MiB more fits. */
	const struct sec big[] = {Z(".debug_info", 200 * MIB)};
	write_elf(big, 1);
	e = open_elf(&fd);
	cr_assert_eq(sp_elf_bound_inflation(e, NULL, NULL, &st), 0);
	cr_assert_eq(st.kept, 1);
	cr_assert_eq(a.inflated, 260 * MIB);
	elf_end(e);
	close(fd);
	sp_budget_charge_to(NULL);
	sp_budget_account_release(&a);

	/* Owned by another user; root's in a directory of root's that no one else may write. */
	if (geteuid() == 0) {
		fd = open(path, O_RDONLY);
		cr_assert_geq(fd, 0);
		cr_assert_eq(fchown(fd, 65534, 65534), 0);
		sp_file_trust(fd, &trust);
		cr_assert(trust.untrusted);
		cr_assert_str_eq(trust.why, "owned by uid 65534");
		close(fd);
		char dir[] = "/tmp/sp-trust-XXXXXX", file[64];
		cr_assert_not_null(mkdtemp(dir));
		snprintf(file, sizeof(file), "%s/f", dir);
		fd = open(file, O_RDWR | O_CREAT | O_EXCL, 0644);
		cr_assert_geq(fd, 0);
		sp_file_trust(fd, &trust);
		cr_expect(!trust.untrusted, "%s", trust.why);
		cr_assert_eq(chmod(dir, 0775), 0);
		sp_file_trust(fd, &trust);
		cr_expect(trust.untrusted);
		close(fd);
		unlink(file);
		rmdir(dir);
	}
}

static bool only_frames(const char *name)
{
	return !strcmp(name, ".debug_frame");
}

Test(elf_inflate, sections_the_caller_does_not_want_are_hidden_uncounted)
{
	const struct sec secs[] = {
		Z(".debug_info", 64),
		Z(".debug_frame", 64),
		PLAIN(".debug_line"),
	};
	write_elf(secs, 3);
	int fd;
	Elf *e = open_elf(&fd);
	struct sp_inflate_stats st;
	cr_assert_eq(sp_elf_bound_inflation(e, only_frames, NULL, &st), 0);
	cr_assert_eq(st.unwanted, 1);
	cr_assert_eq(st.over_limit, 0);
	cr_assert_eq(st.kept, 1);
	GElf_Shdr sh;
	section(e, ".debug_info", &sh);
	cr_assert_eq(sh.sh_type, SHT_NOBITS);
	section(e, ".debug_frame", &sh);
	cr_assert_eq(sh.sh_type, SHT_PROGBITS);
	/* Uncompressed sections cost nothing to read: left alone. */
	section(e, ".debug_line", &sh);
	cr_assert_eq(sh.sh_type, SHT_PROGBITS);
	elf_end(e);
	close(fd);
}

/*
 * A file with one .gnu_debugdata section: xz of size zero bytes, or (size 0)
 * bytes that are not xz at all.
 */
static void write_debugdata(uint64_t size)
{
	size_t cap = 1 << 20, n = 0;
	unsigned char *out = malloc(cap), *zeros = calloc(size ? size : 1, 1);
	cr_assert(out && zeros);
	if (size)
		cr_assert_eq(lzma_easy_buffer_encode(0, LZMA_CHECK_CRC64, NULL, zeros, size, out, &n,
						     cap), LZMA_OK);
	else
		n = (size_t)snprintf((char *)out, cap, "not an xz stream");
	int fd = open(path, O_RDWR | O_TRUNC);
	cr_assert_geq(fd, 0);
	Elf *e = elf_begin(fd, ELF_C_WRITE, NULL);
	GElf_Ehdr eh;
	cr_assert(e && gelf_newehdr(e, ELFCLASS64) && gelf_getehdr(e, &eh));
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_type = ET_DYN;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	static char names[] = "\0.gnu_debugdata\0.shstrtab";
	for (int i = 0; i < 2; i++) {
		Elf_Scn *scn = elf_newscn(e);
		Elf_Data *d = scn ? elf_newdata(scn) : NULL;
		GElf_Shdr sh;
		cr_assert(d && gelf_getshdr(scn, &sh));
		sh.sh_name = i ? 16 : 1;
		sh.sh_type = i ? SHT_STRTAB : SHT_PROGBITS;
		sh.sh_addralign = 1;
		d->d_buf = i ? (void *)names : out;
		d->d_size = i ? sizeof(names) : n;
		d->d_type = ELF_T_BYTE;
		d->d_align = 1;
		d->d_version = EV_CURRENT;
		cr_assert(gelf_update_shdr(scn, &sh));
		if (i)
			eh.e_shstrndx = (GElf_Half)elf_ndxscn(scn);
	}
	cr_assert(gelf_update_ehdr(e, &eh));
	cr_assert_geq(elf_update(e, ELF_C_WRITE), 0, "%s", elf_errmsg(-1));
	elf_end(e);
	close(fd);
	free(out);
	free(zeros);
}

/* MiniDebugInfo's size is found by a bounded decode; past the bound, or not xz, it is hidden. */
Test(elf_inflate, minidebuginfo_is_decoded_within_its_bound_only)
{
	struct {
		uint64_t size, claim;
		bool hidden;
	} cases[] = {
		{1 << 20, 1 << 20, false},
		{SP_INFLATE_DEBUGDATA_MAX + 1, UINT64_MAX, true},
		{0, UINT64_MAX, true},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		write_debugdata(cases[i].size);
		int fd;
		Elf *e = open_elf(&fd);
		GElf_Shdr sh;
		Elf_Scn *scn = section(e, ".gnu_debugdata", &sh);
		uint64_t claim;
		cr_assert(sp_elf_section_inflated_size(e, scn, &claim));
		cr_expect_eq(claim, cases[i].claim, "case %zu: %llu", i, (unsigned long long)claim);
		size_t index = elf_ndxscn(scn);
		struct sp_inflate_stats st;
		cr_assert_eq(sp_elf_bound_inflation(e, NULL, NULL, &st), 0);
		cr_assert_not_null(gelf_getshdr(elf_getscn(e, index), &sh));
		cr_expect_eq(sh.sh_type == SHT_NOBITS, cases[i].hidden, "case %zu", i);
		/* libdwfl looks it up by name only: a hidden one has none. */
		cr_expect_eq(sh.sh_name == 0, cases[i].hidden, "case %zu", i);
		cr_expect_eq(st.over_limit, cases[i].hidden ? 1u : 0u, "case %zu", i);
		elf_end(e);
		close(fd);
	}
}
