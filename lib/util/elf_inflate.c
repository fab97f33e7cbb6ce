/* SPDX-License-Identifier: MIT */
/*
 * Compressed ELF sections bounded before anything inflates them.
 *
 * A section compressed with zlib may claim to inflate a thousand times over
 * (deflate's best ratio is about 1,032 to 1): 500 KB of a 4 MB library can
 * become 512 MiB.  libelf's elf_compress allocates what the compression
 * header claims and inflates it, and libdw calls it on every compressed
 * DWARF section of a file as soon as the file is opened (dwarf_begin_elf),
 * libdwfl on a compressed symbol table: a library made that way cost the
 * recorder 4.2 GB and 36 s.  So the claimed sizes are read from the headers
 * first, and a section over the bounds is hidden from every later user of
 * the Elf handle: its header, in memory only, becomes SHT_NOBITS, which
 * dwarf_begin_elf and libdwfl skip as a section without contents.  The
 * same goes for MiniDebugInfo (.gnu_debugdata, xz), whose size is found by
 * a bounded decode: xz streams carry no size their decoder trusts.
 */
#include "util/util.h"

#include <errno.h>
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A GNU .zdebug_* section (gcc -gz=zlib-gnu): "ZLIB", then the size, big-endian. */
#define GNU_MAGIC "ZLIB"
#define GNU_HEADER 12

static uint64_t get_uint(const unsigned char *p, size_t n, bool big_endian)
{
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[big_endian ? i : n - 1 - i] << (8 * (n - 1 - i));
	return v;
}

/*
 * What an xz stream (.gnu_debugdata) decodes to, found by decoding it into a
 * scratch buffer and counting: UINT64_MAX past SP_INFLATE_DEBUGDATA_MAX, for
 * a dictionary over SP_XZ_MEMLIMIT, or for a stream that is not whole.
 */
static uint64_t xz_size(const unsigned char *p, size_t n)
{
	enum { SCRATCH = 1 << 16 };
	lzma_stream z = LZMA_STREAM_INIT;
	unsigned char *out = malloc(SCRATCH);
	uint64_t total = 0;
	lzma_ret r = LZMA_PROG_ERROR;
	if (out && p && lzma_stream_decoder(&z, SP_XZ_MEMLIMIT, 0) == LZMA_OK) {
		z.next_in = p;
		z.avail_in = n;
		do {
			z.next_out = out;
			z.avail_out = SCRATCH;
			r = lzma_code(&z, LZMA_FINISH);
			total += SCRATCH - z.avail_out;
		} while (r == LZMA_OK && total <= SP_INFLATE_DEBUGDATA_MAX);
		lzma_end(&z);
	}
	free(out);
	return r == LZMA_STREAM_END && total <= SP_INFLATE_DEBUGDATA_MAX ? total : UINT64_MAX;
}

bool sp_elf_section_inflated_size(Elf *elf, Elf_Scn *scn, uint64_t *size)
{
	GElf_Shdr sh;
	GElf_Ehdr eh;
	size_t shstrndx;
	const char *name = NULL;
	*size = 0;
	if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !gelf_getehdr(elf, &eh))
		return false;
	if (!(sh.sh_flags & SHF_COMPRESSED)) {
		if (elf_getshdrstrndx(elf, &shstrndx) ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			return false;
		if (!strcmp(name, ".gnu_debugdata")) {
			Elf_Data *raw = elf_rawdata(scn, NULL);
			*size = raw ? xz_size(raw->d_buf, raw->d_size) : UINT64_MAX;
			return true;
		}
		if (strncmp(name, ".zdebug", 7))
			return false;
	}
	/*
	 * The header is read from the raw bytes, never through elf_getdata's
	 * conversion: whatever the file's byte order and alignment.  A header
	 * that cannot be read claims everything, so it is never inflated.
	 */
	*size = UINT64_MAX;
	Elf_Data *raw = elf_rawdata(scn, NULL);
	const unsigned char *p = raw ? raw->d_buf : NULL;
	size_t n = raw ? raw->d_size : 0;
	bool big = eh.e_ident[EI_DATA] == ELFDATA2MSB;
	if (!(sh.sh_flags & SHF_COMPRESSED)) {
		/* Without the magic, elf_compress_gnu refuses it: nothing is inflated. */
		if (!p || n < GNU_HEADER || memcmp(p, GNU_MAGIC, 4)) {
			*size = 0;
			return false;
		}
		*size = get_uint(p + 4, 8, true);
		return true;
	}
	/* Elf32_Chdr {type, size, align}; Elf64_Chdr {type, reserved, size, align}. */
	if (gelf_getclass(elf) == ELFCLASS32 && p && n >= sizeof(Elf32_Chdr))
		*size = get_uint(p + 4, 4, big);
	else if (gelf_getclass(elf) == ELFCLASS64 && p && n >= sizeof(Elf64_Chdr))
		*size = get_uint(p + 8, 8, big);
	return true;
}

/*
 * Hide scn from libelf's users: no contents, nothing to inflate.  The file
 * is not touched.  libdwfl finds MiniDebugInfo by name alone and reads its
 * raw bytes (cached by libelf once read, whatever the type says), so that
 * one also loses its name (index 0 of the string table: "").
 */
static int hide(Elf_Scn *scn, bool by_name)
{
	GElf_Shdr sh;
	if (!gelf_getshdr(scn, &sh))
		return -SP_E_ELF_MALFORMED;
	sh.sh_type = SHT_NOBITS;
	sh.sh_flags &= ~(GElf_Xword)SHF_COMPRESSED;
	if (by_name)
		sh.sh_name = 0;
	return gelf_update_shdr(scn, &sh) ? 0 : -SP_E_ELF_MALFORMED;
}

/*
 * What the files of this process have been let inflate: per pass (an
 * account's SP_INFLATE_RUN_MAX) and all passes together (run_inflated,
 * SP_INFLATE_PROCESS_MAX).  Each file's bound alone let a process that
 * dlopens four libraries of 250 MiB claims cost the recorder a gigabyte, and
 * the budget grows with the number of files; so a claim is taken from both
 * before the section is kept.  libdw keeps what it inflated as long as the
 * file stays open: the process's total gets it back only when the pass's
 * files are closed (sp_budget_account_release).
 */
static uint64_t run_inflated;
static struct sp_budget_account process_account;
static __thread struct sp_budget_account *charged;

struct sp_budget_account *sp_budget_charge_to(struct sp_budget_account *a)
{
	struct sp_budget_account *prev = charged;
	charged = a;
	return prev;
}

struct sp_budget_account *sp_budget_charged(void)
{
	return charged ? charged : &process_account;
}

void sp_budget_account_renew(struct sp_budget_account *a)
{
	__atomic_store_n(&a->inflated, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&a->crc_read, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&a->inflated_untrusted, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&a->crc_read_untrusted, 0, __ATOMIC_RELAXED);
}

void sp_budget_account_release(struct sp_budget_account *a)
{
	uint64_t held = __atomic_exchange_n(&a->held, 0, __ATOMIC_RELAXED);
	__atomic_sub_fetch(&run_inflated, held, __ATOMIC_RELAXED);
}

/*
 * Take size from the pass's and the process's inflation budgets, and for a
 * file another user can influence from the pass's SP_INFLATE_UNTRUSTED_RUN_MAX
 * too, or from none: INFLATE_OK, or the budget that refused it.
 */
enum { INFLATE_OK, INFLATE_OVER_RUN, INFLATE_OVER_UNTRUSTED };
static int take_inflation(uint64_t size, bool take, bool untrusted)
{
	struct sp_budget_account *a = sp_budget_charged();
	if (untrusted &&
	    !sp_budget_take(&a->inflated_untrusted, SP_INFLATE_UNTRUSTED_RUN_MAX, size, take))
		return INFLATE_OVER_UNTRUSTED;
	int r = INFLATE_OK;
	if (!sp_budget_take(&a->inflated, SP_INFLATE_RUN_MAX, size, take)) {
		r = INFLATE_OVER_RUN;
	} else if (!sp_budget_take(&run_inflated, SP_INFLATE_PROCESS_MAX, size, take)) {
		if (take)
			__atomic_sub_fetch(&a->inflated, size, __ATOMIC_RELAXED);
		r = INFLATE_OVER_RUN;
	}
	if (r != INFLATE_OK) {
		if (untrusted && take)
			__atomic_sub_fetch(&a->inflated_untrusted, size, __ATOMIC_RELAXED);
		return r;
	}
	if (take)
		__atomic_add_fetch(&a->held, size, __ATOMIC_RELAXED);
	return INFLATE_OK;
}

bool sp_budget_take(uint64_t *used, uint64_t max, uint64_t size, bool take)
{
	uint64_t u = __atomic_load_n(used, __ATOMIC_RELAXED);
	do {
		if (u > max || size > max - u)
			return false;
		if (!take)
			return true;
	} while (!__atomic_compare_exchange_n(used, &u, u + size, true, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return true;
}

uint64_t sp_elf_inflate_run_used(void)
{
	return __atomic_load_n(&run_inflated, __ATOMIC_RELAXED);
}

static int bound_inflation(Elf *elf, bool (*want)(const char *name),
			   const struct sp_file_trust *trust, struct sp_inflate_stats *st,
			   bool take)
{
	bool untrusted = trust && trust->untrusted;
	*st = (struct sp_inflate_stats){0};
	size_t shstrndx;
	if (elf_kind(elf) != ELF_K_ELF)
		return 0;
	if (elf_getshdrstrndx(elf, &shstrndx))
		shstrndx = SIZE_MAX;
	int err = 0;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		uint64_t size;
		int over;
		GElf_Shdr sh;
		const char *name = gelf_getshdr(scn, &sh) && shstrndx != SIZE_MAX
					   ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
		bool keep = !want || (name && want(name));
		bool xz = name && !strcmp(name, ".gnu_debugdata") && sh.sh_type != SHT_NOBITS;
		/* One the caller does not want is not decoded to be measured. */
		if (xz && !keep)
			size = 0;
		else if (!sp_elf_section_inflated_size(elf, scn, &size))
			continue;
		if (!keep) {
			st->unwanted++;
		} else if (size > SP_INFLATE_SECTION_MAX || size == UINT64_MAX ||
			   size > SP_INFLATE_FILE_MAX - st->kept_bytes) {
			keep = false;
			st->over_limit++;
			st->over_limit_bytes = sp_u64_add_sat(st->over_limit_bytes, size);
		} else if ((over = take_inflation(size, take, untrusted)) != INFLATE_OK) {
			keep = false;
			st->over_limit++;
			if (over == INFLATE_OVER_UNTRUSTED) {
				st->over_untrusted++;
				snprintf(st->untrusted_why, sizeof(st->untrusted_why), "%s",
					 trust->why);
			} else {
				st->over_run++;
			}
			st->over_limit_bytes = sp_u64_add_sat(st->over_limit_bytes, size);
		} else {
			st->kept++;
			st->kept_bytes += size;
		}
		/* A section that cannot be hidden must not reach libdw: the caller gives up. */
		if (!keep && hide(scn, xz))
			err = -SP_E_ELF_MALFORMED;
	}
	return err;
}

int sp_elf_bound_inflation(Elf *elf, bool (*want)(const char *name),
			   const struct sp_file_trust *trust, struct sp_inflate_stats *st)
{
	return bound_inflation(elf, want, trust, st, true);
}

int sp_elf_bound_inflation_probe(Elf *elf, bool (*want)(const char *name),
				 const struct sp_file_trust *trust, struct sp_inflate_stats *st)
{
	return bound_inflation(elf, want, trust, st, false);
}
