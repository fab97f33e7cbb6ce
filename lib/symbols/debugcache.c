/* SPDX-License-Identifier: MIT */
/*
 * Debug files made fit for libdw: decompressed copies kept by build-id, and
 * copies without the sections no one may inflate.  Debian's -dbg packages
 * compress their DWARF (SHF_COMPRESSED, zlib), and libdw inflates every
 * debug section of a file when it opens it: 40 ms for libc6-dbg's libc,
 * paid by every report that reaches one libc frame.  The copy is made once,
 * on the first report that needs the file, and then mapped as it is.
 *
 * A debug file may also claim more than anyone should inflate (a bomb: a
 * few hundred KB claiming gigabytes).  libdwfl opens a debug file and hands
 * it to dwarf_begin_elf at once, with no chance to hide a section in
 * between, so such a file reaches libdw only as a copy without those
 * sections: in the cache (the others inflated), or when there is no cache,
 * in memory (the others left compressed): either way libdw sees the same
 * DWARF, and the reports are the same.
 */
#include "symbols/symbols.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Below this many compressed bytes, inflating costs less than a copy on disk. */
#define MIN_COMPRESSED_BYTES (256u * 1024u)

/* Bytes of SHF_COMPRESSED sections in elf; 0 when none (or not ELF). */
static uint64_t compressed_bytes(Elf *elf)
{
	uint64_t total = 0;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_COMPRESSED) &&
		    sh.sh_type != SHT_NOBITS)
			total += sh.sh_size;
	return total;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return a > 1 ? (v + a - 1) / a * a : v;
}

/*
 * Write in's sections to out_fd, every compressed section inflated when
 * inflate is true, else copied as it is.  Sections hidden by
 * sp_elf_bound_inflation (SHT_NOBITS now) take no room.  Allocated sections
 * keep their file offsets (the program headers point at them); the others
 * follow them, then the section header table.
 */
static int write_copy(Elf *in, int out_fd, bool inflate)
{
	GElf_Ehdr eh;
	size_t phnum, shnum;
	if (!gelf_getehdr(in, &eh) || elf_getphdrnum(in, &phnum) || elf_getshdrnum(in, &shnum))
		return -SP_E_ELF_MALFORMED;
	Elf *out = elf_begin(out_fd, ELF_C_WRITE, NULL);
	if (!out)
		return -SP_E_ELF_MALFORMED;
	int err = -SP_E_ELF_MALFORMED;
	if (!gelf_newehdr(out, gelf_getclass(in)) || (phnum && !gelf_newphdr(out, phnum)))
		goto out;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(in, (int)i, &ph) || !gelf_update_phdr(out, (int)i, &ph))
			goto out;
	}
	uint64_t cursor = eh.e_ehsize;
	if (phnum)
		cursor = eh.e_phoff + (uint64_t)phnum * eh.e_phentsize;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	while ((scn = elf_nextscn(in, scn))) {
		if (!gelf_getshdr(scn, &sh))
			goto out;
		if ((sh.sh_flags & SHF_ALLOC) && sh.sh_type != SHT_NOBITS &&
		    sh.sh_offset + sh.sh_size > cursor)
			cursor = sh.sh_offset + sh.sh_size;
	}
	/* Section 0 carries the extended section count and string table index. */
	GElf_Shdr zero;
	Elf_Scn *in0 = elf_getscn(in, 0), *out0 = elf_getscn(out, 0);
	if (in0 && out0 && gelf_getshdr(in0, &zero) && !gelf_update_shdr(out0, &zero))
		goto out;
	scn = NULL;
	while ((scn = elf_nextscn(in, scn))) {
		if (!gelf_getshdr(scn, &sh))
			goto out;
		bool compressed = (sh.sh_flags & SHF_COMPRESSED) && sh.sh_type != SHT_NOBITS;
		/* Only sections sp_elf_bound_inflation kept are still compressed here. */
		if (compressed && inflate) {
			if (elf_compress(scn, 0, 0) < 0 || !gelf_getshdr(scn, &sh))
				goto out;
		}
		Elf_Scn *o = elf_newscn(out);
		if (!o)
			goto out;
		if (sh.sh_type != SHT_NOBITS) {
			/* Copied as they are: raw bytes, their header not converted. */
			Elf_Data *d = compressed && !inflate ? elf_rawdata(scn, NULL)
							     : elf_getdata(scn, NULL);
			Elf_Data *od = elf_newdata(o);
			if (!od)
				goto out;
			if (d) {
				od->d_buf = d->d_buf;
				od->d_type = d->d_type;
				od->d_size = d->d_size;
				od->d_align = d->d_align;
				od->d_version = d->d_version;
				sh.sh_size = d->d_size;
			}
			if (!(sh.sh_flags & SHF_ALLOC)) {
				cursor = align_up(cursor, sh.sh_addralign);
				sh.sh_offset = cursor;
				cursor += sh.sh_size;
			}
		}
		if (!gelf_update_shdr(o, &sh))
			goto out;
	}
	eh.e_shoff = align_up(cursor, 8);
	if (!gelf_update_ehdr(out, &eh))
		goto out;
	elf_flagelf(out, ELF_C_SET, ELF_F_LAYOUT);
	if (elf_update(out, ELF_C_WRITE) >= 0)
		err = 0;
out:
	elf_end(out);
	return err;
}

/* A cached copy we may trust: sp_cache_open_own's, with the right build-id; marked as used. */
static int open_cached(const char *path, const struct sp_debug_query *q)
{
	struct stat st;
	int fd = sp_cache_open_own(path, &st);
	if (fd >= 0 && !sp_debug_file_matches(q, fd)) {
		close(fd);
		return -1;
	}
	if (fd >= 0)
		sp_cache_touch(fd, &st);
	return fd;
}

/*
 * What the copy of the file open on fd takes on disk, at most: the file, its
 * kept sections inflated (st), and room for alignment.
 */
static uint64_t copy_size(int fd, const struct sp_inflate_stats *st)
{
	struct stat fst;
	uint64_t size = fstat(fd, &fst) ? 0 : (uint64_t)fst.st_size;
	return sp_u64_add_sat(size, sp_u64_add_sat(st->kept_bytes, 1u << 20));
}

/*
 * Make the cache's copy of in (the file open on fd) at path, in dir: an fd
 * on it, or -1.  Room is made first, least recently used files going
 * (out->evicted); a copy that alone would pass the bound is not made
 * (out->too_large).
 */
static int make_cached(Elf *in, int fd, const char *cache_dir, uint64_t cache_max,
		       const char *dir, const char *path, const char *hex,
		       const struct sp_debug_query *q, struct sp_debug_copy *out)
{
	char *tmp = NULL;
	int r = sp_cache_make_room(cache_dir, cache_max, copy_size(fd, &out->inflate),
				   &out->evicted);
	out->too_large = r == -EFBIG;
	/* Made beside its final name and renamed: readers see no half-written file. */
	if (r || sp_cache_make_dirs(dir) || asprintf(&tmp, "%s/.%s.XXXXXX", dir, hex) < 0)
		return -1;
	int tfd = mkostemp(tmp, O_CLOEXEC);
	int cfd = -1;
	if (tfd >= 0) {
		if (write_copy(in, tfd, true) || fsync(tfd) || rename(tmp, path))
			unlink(tmp);
		else
			cfd = open_cached(path, q);
		close(tfd);
	}
	free(tmp);
	return cfd;
}

/* An unnamed copy of in, in memory, its kept sections left compressed: an fd, or -1. */
static int make_in_memory(Elf *in)
{
	int mfd = memfd_create("stackpulse-debug", MFD_CLOEXEC);
	if (mfd < 0)
		return -1;
	if (write_copy(in, mfd, false) || lseek(mfd, 0, SEEK_SET)) {
		close(mfd);
		return -1;
	}
	return mfd;
}

int sp_debug_cache_open(const char *cache_dir, uint64_t cache_max, const uint8_t *build_id,
			size_t build_id_len, int fd, struct sp_debug_copy *out)
{
	*out = (struct sp_debug_copy){.fd = -1};
	if (build_id_len > SP_BUILD_ID_MAX)
		return -1;
	sp_elf_init();
	Elf *in = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!in)
		return -1;
	char *dir = NULL, *path = NULL;
	if (elf_kind(in) != ELF_K_ELF)
		goto out;
	/* Nothing past the bounds may reach libdw: hidden here, so left out of any copy. */
	struct sp_file_trust trust;
	sp_file_trust(fd, &trust);
	if (sp_elf_bound_inflation(in, NULL, &trust, &out->inflate)) {
		out->refused = true;
		goto out;
	}
	bool bomb = out->inflate.over_limit > 0;
	if (!bomb && compressed_bytes(in) < MIN_COMPRESSED_BYTES)
		goto out;
	struct sp_debug_query q = {.build_id = build_id, .build_id_len = build_id_len};
	char hex[2 * SP_BUILD_ID_MAX + 1] = "";
	for (size_t i = 0; i < build_id_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", build_id[i]);
	if (cache_dir && build_id_len) {
		if (asprintf(&dir, "%s/debug", cache_dir) < 0)
			dir = NULL;
		else if (asprintf(&path, "%s/%s.debug", dir, hex) < 0)
			path = NULL;
	}
	if (path) {
		out->fd = open_cached(path, &q);
		struct stat cst;
		/* Larger than the file's copy can be: made before the bounds, the bomb inside. */
		if (out->fd >= 0 && (fstat(out->fd, &cst) ||
				     (uint64_t)cst.st_size > copy_size(fd, &out->inflate))) {
			close(out->fd);
			out->fd = -1;
		}
		if (out->fd < 0) {
			out->fd = make_cached(in, fd, cache_dir, cache_max, dir, path, hex, &q,
					      out);
			out->made = out->fd >= 0;
		}
	}
	if (out->fd >= 0) {
		out->path = path;
		path = NULL;
	} else if (bomb) {
		out->fd = make_in_memory(in);
		out->refused = out->fd < 0;
	}
out:
	elf_end(in);
	free(dir);
	free(path);
	return out->fd;
}
