/* SPDX-License-Identifier: MIT */
/* Annotation's module file: proven, then read with libdwfl for code, symbols and line table. */
#include "report/annotate.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct sp_ann_image {
	Dwfl *dwfl;
	Dwfl_Module *mod;
	Elf *elf;   /* the module file (code and symbols), owned by dwfl */
	struct sp_elf_info info;
	char *path;
};

static char *debuginfo_path; /* libdwfl's default search: /usr/lib/debug and .debug/ */

static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

/* The file on fd is the one recorded: build-id, else inode + size + mtime. */
static bool is_recorded(const struct sp_module *m, const struct stat *st,
			const struct sp_elf_info *info)
{
	if (m->build_id_len)
		return info->build_id_len == m->build_id_len &&
		       !memcmp(info->build_id, m->build_id, m->build_id_len);
	int64_t mtime = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	return m->inode && (uint64_t)st->st_ino == m->inode &&
	       (uint64_t)st->st_size == m->file_size && mtime == m->mtime_ns;
}

/* Prove fd and hand it to libdwfl (which then owns it).  0, or -errno with *why set. */
static int load(struct sp_ann_image *img, const struct sp_module *m, int fd, const char **why)
{
	struct stat st;
	Elf *elf = NULL;
	struct sp_file_trust trust;
	sp_file_trust(fd, &trust);
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    !(elf = elf_begin(fd, ELF_C_READ_MMAP, NULL)) || sp_elf_info_read(elf, &img->info)) {
		*why = "not a readable ELF file";
		goto fail;
	}
	elf_end(elf);
	elf = NULL;
	if (!is_recorded(m, &st, &img->info)) {
		*why = m->build_id_len ? "another file now (its build-id differs from the recorded one)"
				       : "another file now (inode, size or mtime differ)";
		goto fail;
	}
	img->dwfl = dwfl_begin(&callbacks);
	if (!img->dwfl)
		goto fail_nomem;
	dwfl_report_begin(img->dwfl);
	/* Base 0 with add_p_vaddr: the file sits at its own p_vaddrs, lookups take static addresses. */
	img->mod = dwfl_report_elf(img->dwfl, img->path, img->path, fd, 0, true);
	if (!img->mod || dwfl_report_end(img->dwfl, NULL, NULL)) {
		if (img->mod)
			fd = -1;
		*why = "libdwfl could not read it";
		goto fail;
	}
	Dwarf_Addr bias;
	struct sp_inflate_stats ist;
	img->elf = dwfl_module_getelf(img->mod, &bias);
	/* Compressed sections past stackpulse.h's inflation bounds are hidden from libdw. */
	if (!img->elf || sp_elf_bound_inflation(img->elf, NULL, &trust, &ist)) {
		*why = "malformed ELF file";
		fd = -1; /* libdwfl's */
		goto fail;
	}
	return 0;
fail_nomem:
	*why = "out of memory";
	close(fd);
	return -ENOMEM;
fail:
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	if (img->dwfl)
		dwfl_end(img->dwfl);
	img->dwfl = NULL;
	img->mod = NULL;
	sp_elf_info_release(&img->info);
	return -SP_E_ELF_MALFORMED;
}

int sp_ann_image_open(const struct sp_module *m, struct sp_ann_image **out, const char **why)
{
	*out = NULL;
	*why = NULL;
	if (m->flags & SP_MODULE_KERNEL || m->pid < 0) {
		*why = "kernel code is not read";
		return -ENOENT;
	}
	if (m->flags & SP_MODULE_ANON || !m->path || m->path[0] != '/') {
		*why = "anonymous or generated code: no file holds it";
		return -ENOENT;
	}
	struct sp_ann_image *img = calloc(1, sizeof(*img));
	if (!img || !(img->path = strndup(m->path, sp_path_len_undeleted(m->path)))) {
		free(img);
		*why = "out of memory";
		return -ENOMEM;
	}
	/* A module path from a spool names a regular file reached through no final symlink. */
	int fd = sp_open_regular(img->path, O_RDONLY | O_NONBLOCK, SP_RESOLVE_NOFOLLOW);
	int err = fd < 0 ? -errno : load(img, m, fd, why);
	if (fd < 0)
		*why = strerror(errno);
	if (err && m->pid > 0) {
		/* The image that was sampled, deleted or replaced since, while its process runs. */
		char mf[96];
		snprintf(mf, sizeof(mf), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)m->pid,
			 m->start, m->end);
		const char *why2 = NULL;
		int fd2 = open(mf, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd2 >= 0 && !load(img, m, fd2, &why2)) {
			free(img->path);
			img->path = strdup(mf);
			err = img->path ? 0 : -ENOMEM;
		}
	}
	if (err) {
		sp_ann_image_free(img);
		return err;
	}
	*why = NULL;
	*out = img;
	return 0;
}

void sp_ann_image_free(struct sp_ann_image *img)
{
	if (!img)
		return;
	if (img->dwfl)
		dwfl_end(img->dwfl);
	sp_elf_info_release(&img->info);
	free(img->path);
	free(img);
}

const char *sp_ann_image_path(const struct sp_ann_image *img)
{
	return img->path;
}

bool sp_ann_image_svma(const struct sp_ann_image *img, const struct sp_module *m,
		       const struct sp_frame *f, uint64_t *svma)
{
	if (m->flags & SP_MODULE_HAS_BIAS) {
		*svma = f->abs_ip - m->load_bias;
		return true;
	}
	/* No recorded bias: rel_ip is a file offset, which the PT_LOAD holding it maps. */
	for (size_t i = 0; i < img->info.nsegs; i++) {
		const struct sp_load_segment *s = &img->info.segs[i];
		if (f->rel_ip >= s->offset && f->rel_ip - s->offset < s->filesz) {
			*svma = s->vaddr + (f->rel_ip - s->offset);
			return true;
		}
	}
	return false;
}

/* The DWARF subprogram holding addr: its range, when the symbol table has no size for it. */
static bool subprogram_range(struct sp_ann_image *img, uint64_t addr, uint64_t *lo, uint64_t *hi)
{
	Dwarf_Addr bias;
	Dwarf_Die *cu = dwfl_module_addrdie(img->mod, addr, &bias), *scopes = NULL;
	int n = cu ? dwarf_getscopes(cu, addr - bias, &scopes) : 0;
	bool found = false;
	for (int i = 0; i < n && !found; i++) {
		Dwarf_Addr base, start, end;
		ptrdiff_t off = 0;
		if (dwarf_tag(&scopes[i]) != DW_TAG_subprogram)
			continue;
		while (!found && (off = dwarf_ranges(&scopes[i], off, &base, &start, &end)) > 0)
			if (addr - bias >= start && addr - bias < end) {
				*lo = start + bias;
				*hi = end + bias;
				found = true;
			}
	}
	free(scopes);
	return found;
}

int sp_ann_image_code(struct sp_ann_image *img, uint64_t svma, struct sp_ann_code *out)
{
	GElf_Off off;
	GElf_Sym sym;
	uint64_t lo = 0, hi = 0;
	const char *name = dwfl_module_addrinfo(img->mod, svma, &off, &sym, NULL, NULL, NULL);
	if (name && sym.st_size && off < sym.st_size && sym.st_size <= UINT64_MAX - (svma - off)) {
		lo = svma - off;
		hi = lo + sym.st_size;
	} else if (!subprogram_range(img, svma, &lo, &hi)) {
		return -ENOENT;
	}
	/* The bytes: the executable section holding the whole range. */
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	while ((scn = elf_nextscn(img->elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_EXECINSTR) ||
		    sh.sh_type == SHT_NOBITS || lo < sh.sh_addr || hi < lo ||
		    lo - sh.sh_addr > sh.sh_size || hi - lo > sh.sh_size - (lo - sh.sh_addr))
			continue; /* without a sum that a hostile file's sizes could wrap */
		Elf_Data *d = elf_rawdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size < sh.sh_size)
			return -ENOENT;
		GElf_Ehdr eh;
		out->start = lo;
		out->end = hi;
		out->bytes = (const uint8_t *)d->d_buf + (lo - sh.sh_addr);
		out->machine = gelf_getehdr(img->elf, &eh) ? eh.e_machine : EM_NONE;
		return 0;
	}
	return -ENOENT;
}

const char *sp_ann_image_symbol(struct sp_ann_image *img, uint64_t addr, uint64_t *offset)
{
	GElf_Off off;
	GElf_Sym sym;
	const char *name = dwfl_module_addrinfo(img->mod, addr, &off, &sym, NULL, NULL, NULL);
	*offset = name ? off : 0;
	return name;
}

static int row_cmp(const void *pa, const void *pb)
{
	const struct sp_ann_row *x = pa, *y = pb;
	if (x->addr != y->addr)
		return (x->addr > y->addr) - (x->addr < y->addr);
	return (x->order > y->order) - (x->order < y->order);
}

int sp_ann_image_rows(struct sp_ann_image *img, uint64_t start, uint64_t end,
		      struct sp_ann_row **rows, size_t *n, const char **comp_dir)
{
	*rows = NULL;
	*n = 0;
	*comp_dir = NULL;
	Dwarf_Addr bias;
	Dwarf_Die *cu = dwfl_module_addrdie(img->mod, start, &bias);
	Dwarf_Lines *lines;
	size_t nlines, cap = 0;
	if (!cu || dwarf_getsrclines(cu, &lines, &nlines))
		return 0;
	Dwarf_Attribute at;
	*comp_dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &at));
	/*
	 * The rows inside [start, end), and the last one before start (in force
	 * at start); an end_sequence row ends its code.  Several rows at one
	 * address: the last one is the address's line, as addr2line takes it.
	 */
	struct sp_ann_row before = {0};
	bool any_before = false, before_ends = false;
	int err = 0;
	for (size_t i = 0; i < nlines && !err; i++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, i);
		Dwarf_Addr a;
		int line = 0;
		bool endseq = false;
		if (!l || dwarf_lineaddr(l, &a) || dwarf_lineendsequence(l, &endseq))
			continue;
		a += bias;
		dwarf_lineno(l, &line);
		struct sp_ann_row r = {a, endseq ? NULL : dwarf_linesrc(l, NULL, NULL),
				       endseq ? 0 : (uint32_t)(line > 0 ? line : 0), (uint32_t)i};
		if (a <= start) {
			/* The last row at or below start is in force there, unless it ends its code. */
			if (!any_before || a >= before.addr) {
				before = r;
				before_ends = endseq;
				any_before = true;
			}
			continue;
		}
		if (a >= end)
			continue;
		if (sp_array_reserve((void **)rows, &cap, *n + 1, sizeof(**rows)))
			err = -ENOMEM;
		else
			(*rows)[(*n)++] = r;
	}
	if (!err && any_before && !before_ends) {
		if (sp_array_reserve((void **)rows, &cap, *n + 1, sizeof(**rows)))
			err = -ENOMEM;
		else
			(*rows)[(*n)++] = before;
	}
	if (err) {
		free(*rows);
		*rows = NULL;
		*n = 0;
		return err;
	}
	if (*n)
		qsort(*rows, *n, sizeof(**rows), row_cmp);
	return 0;
}
