/* SPDX-License-Identifier: MIT */
/*
 * Decompressed copies of separate debug files, kept by build-id.  Debian's
 * -dbg packages compress their DWARF (SHF_COMPRESSED, zlib), and libdw
 * inflates every debug section of a file when it opens it: 40 ms for
 * libc6-dbg's libc, paid by every report that reaches one libc frame.  The
 * copy is made once, on the first report that needs the file, and then
 * mapped as it is.
 */
#include "symbols/symbols.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Below this many compressed bytes, inflating costs less than a copy on disk. */
#define MIN_COMPRESSED_BYTES (256u * 1024u)

char *sp_debug_cache_dir(const char *dir)
{
	char *out = NULL;
	if (!dir)
		dir = getenv("STACKPULSE_CACHE_DIR");
	if (dir) {
		/* An explicit empty directory switches the cache off. */
		return *dir == '/' ? strdup(dir) : NULL;
	}
	const char *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	if (xdg && *xdg == '/') {
		if (asprintf(&out, "%s/stackpulse", xdg) < 0)
			out = NULL;
	} else if (home && *home == '/') {
		if (asprintf(&out, "%s/.cache/stackpulse", home) < 0)
			out = NULL;
	}
	return out;
}

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
 * Write in's sections to out_fd with every compressed section inflated.
 * Allocated sections keep their file offsets (the program headers point at
 * them); the others follow them, then the section header table.
 */
static int write_decompressed(Elf *in, int out_fd)
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
		if ((sh.sh_flags & SHF_COMPRESSED) && sh.sh_type != SHT_NOBITS) {
			if (elf_compress(scn, 0, 0) < 0 || !gelf_getshdr(scn, &sh))
				goto out;
		}
		Elf_Scn *o = elf_newscn(out);
		if (!o)
			goto out;
		if (sh.sh_type != SHT_NOBITS) {
			Elf_Data *d = elf_getdata(scn, NULL);
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

/*
 * Whether the directory fd (named name, a component of the cache path) may be
 * gone through (last false) or may hold the cache (last true).  A directory
 * another user could change lets them swap what lies below for a symlink
 * into any directory root can write.
 */
static const char *dir_refusal(int fd, bool last)
{
	struct stat st;
	if (fstat(fd, &st))
		return "cannot be read";
	if (!S_ISDIR(st.st_mode))
		return "not a directory";
	if (last) {
		if (st.st_uid != geteuid())
			return "owned by another user";
		if (st.st_mode & (S_IWGRP | S_IWOTH))
			return "writable by group or others";
		return NULL;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid())
		return "inside a directory owned by another user";
	/* /tmp: others may add entries, but only their owner may rename or remove them. */
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
		return "inside a directory writable by group or others";
	return NULL;
}

int sp_cache_dir_check(const char *path, bool create, const char **why)
{
	const char *unused;
	why = why ? why : &unused;
	*why = NULL;
	if (path[0] != '/')
		return -EINVAL;
	int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int err = 0;
	const char *p = path;
	while (!err) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		size_t n = strcspn(p, "/");
		char name[NAME_MAX + 1];
		if (n > NAME_MAX) {
			err = -ENAMETOOLONG;
			break;
		}
		memcpy(name, p, n);
		name[n] = '\0';
		p += n;
		bool last = !p[strspn(p, "/")];
		/* O_NOFOLLOW | O_DIRECTORY: a symlink component fails (ELOOP or ENOTDIR). */
		int next = openat(fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 && errno == ENOENT && create) {
			if (mkdirat(fd, name, 0700) && errno != EEXIST) {
				err = -errno;
				break;
			}
			next = openat(fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (next < 0) {
			err = -errno;
			if (err == -ELOOP || err == -ENOTDIR) {
				*why = "a symbolic link or not a directory";
				err = -EPERM;
			}
			break;
		}
		close(fd);
		fd = next;
		if ((*why = dir_refusal(fd, last)))
			err = -EPERM;
	}
	close(fd);
	return err;
}

int sp_cache_make_dirs(const char *path)
{
	return sp_cache_dir_check(path, true, NULL);
}

int sp_cache_open_own(const char *path, struct stat *st)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	if (fstat(fd, st) || !S_ISREG(st->st_mode) || st->st_uid != geteuid() ||
	    (st->st_mode & (S_IWGRP | S_IWOTH))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A cached copy we may trust: sp_cache_open_own's, with the right build-id. */
static int open_cached(const char *path, const struct sp_debug_query *q)
{
	struct stat st;
	int fd = sp_cache_open_own(path, &st);
	if (fd >= 0 && !sp_debug_file_matches(q, fd)) {
		close(fd);
		return -1;
	}
	return fd;
}

int sp_debug_cache_open(const char *cache_dir, const uint8_t *build_id, size_t build_id_len,
			int fd, char **path_out, bool *made)
{
	*path_out = NULL;
	*made = false;
	if (!cache_dir || !build_id_len || build_id_len > SP_BUILD_ID_MAX)
		return -1;
	sp_elf_init();
	Elf *in = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!in)
		return -1;
	int out_fd = -1;
	char *dir = NULL, *path = NULL, *tmp = NULL;
	if (elf_kind(in) != ELF_K_ELF || compressed_bytes(in) < MIN_COMPRESSED_BYTES)
		goto out;
	char hex[2 * SP_BUILD_ID_MAX + 1];
	for (size_t i = 0; i < build_id_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", build_id[i]);
	if (asprintf(&dir, "%s/debug", cache_dir) < 0) {
		dir = NULL;
		goto out;
	}
	if (asprintf(&path, "%s/%s.debug", dir, hex) < 0) {
		path = NULL;
		goto out;
	}
	struct sp_debug_query q = {.build_id = build_id, .build_id_len = build_id_len};
	out_fd = open_cached(path, &q);
	if (out_fd >= 0)
		goto out;
	/* Made beside its final name and renamed: readers see no half-written file. */
	if (sp_cache_make_dirs(dir) || asprintf(&tmp, "%s/.%s.XXXXXX", dir, hex) < 0) {
		tmp = NULL;
		goto out;
	}
	int tfd = mkostemp(tmp, O_CLOEXEC);
	if (tfd < 0)
		goto out;
	if (write_decompressed(in, tfd) || fsync(tfd) || rename(tmp, path)) {
		close(tfd);
		unlink(tmp);
		goto out;
	}
	close(tfd);
	out_fd = open_cached(path, &q);
	*made = out_fd >= 0;
out:
	elf_end(in);
	free(dir);
	free(tmp);
	if (out_fd >= 0)
		*path_out = path;
	else
		free(path);
	return out_fd;
}
