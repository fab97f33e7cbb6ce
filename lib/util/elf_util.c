/* SPDX-License-Identifier: MIT */
/* ELF facts a module needs: build-id note, PT_LOAD segments, and a mapping's load bias. */
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

void sp_elf_init(void)
{
	static bool done;
	if (!done) {
		elf_version(EV_CURRENT);
		done = true;
	}
}

/* Scan one note buffer for NT_GNU_BUILD_ID ("GNU\0" owner). */
static size_t build_id_in_notes(Elf_Data *data, uint8_t *out, size_t cap)
{
	GElf_Nhdr nhdr;
	size_t off = 0, name_off, desc_off, next;
	while ((next = gelf_getnote(data, off, &nhdr, &name_off, &desc_off)) > 0) {
		if (nhdr.n_type == NT_GNU_BUILD_ID && nhdr.n_namesz == 4 &&
		    !memcmp((const char *)data->d_buf + name_off, "GNU", 4) &&
		    nhdr.n_descsz > 0 && desc_off + nhdr.n_descsz <= data->d_size) {
			size_t n = nhdr.n_descsz < cap ? nhdr.n_descsz : cap;
			memcpy(out, (const char *)data->d_buf + desc_off, n);
			return n;
		}
		off = next;
	}
	return 0;
}

size_t sp_elf_build_id(Elf *elf, uint8_t *out, size_t cap)
{
	/* Prefer section headers (present in every file we map); fall back to PT_NOTE. */
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_NOTE)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		size_t n = data ? build_id_in_notes(data, out, cap) : 0;
		if (n)
			return n;
	}
	size_t phnum;
	if (elf_getphdrnum(elf, &phnum))
		return 0;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		Elf_Data *data = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
						      ELF_T_NHDR);
		size_t n = data ? build_id_in_notes(data, out, cap) : 0;
		if (n)
			return n;
	}
	return 0;
}

int sp_elf_info_read(Elf *elf, struct sp_elf_info *info)
{
	memset(info, 0, sizeof(*info));
	GElf_Ehdr eh;
	size_t phnum;
	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &phnum))
		return -SP_E_ELF_MALFORMED;
	info->e_type = eh.e_type;
	info->build_id_len = (uint8_t)sp_elf_build_id(elf, info->build_id, SP_BUILD_ID_MAX);
	if (phnum > 4096)
		return -SP_E_ELF_MALFORMED;
	info->segs = calloc(phnum ? phnum : 1, sizeof(*info->segs));
	if (!info->segs)
		return -ENOMEM;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		info->segs[info->nsegs++] = (struct sp_load_segment){
			.vaddr = ph.p_vaddr,
			.memsz = ph.p_memsz,
			.offset = ph.p_offset,
			.filesz = ph.p_filesz,
			.exec = (ph.p_flags & PF_X) != 0,
		};
	}
	return 0;
}

void sp_elf_info_release(struct sp_elf_info *info)
{
	free(info->segs);
	memset(info, 0, sizeof(*info));
}

int sp_elf_load_bias(const struct sp_elf_info *info, uint64_t start, uint64_t file_offset,
		     uint64_t *bias)
{
	/*
	 * The segment whose file range holds the mapping's offset tells which
	 * svma `start` corresponds to.  start - pgoff is wrong for layouts
	 * (lld) where p_vaddr - p_offset differs between segments.  Mappings
	 * are page-aligned while p_offset need not be, so compare by page.
	 */
	/* A mapping normally starts where a segment's page starts: prefer that. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < info->nsegs; i++) {
			const struct sp_load_segment *s = &info->segs[i];
			uint64_t seg_page = s->offset & ~(uint64_t)0xfff;
			bool hit = pass == 0 ? file_offset == seg_page
					     : file_offset >= seg_page &&
						       file_offset < s->offset + s->filesz;
			if (!hit)
				continue;
			/* svma of `start` = vaddr - (offset - file_offset). */
			*bias = start - (s->vaddr - s->offset + file_offset);
			return 0;
		}
	}
	return -ENOENT;
}

int sp_own_vdso(const void **image, size_t *size)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	if (!base)
		return -ENOENT;
	FILE *maps = fopen("/proc/self/maps", "re");
	if (!maps)
		return -ENOENT;
	char line[512];
	*size = 0;
	while (fgets(line, sizeof(line), maps)) {
		unsigned long s, e;
		if (sscanf(line, "%lx-%lx", &s, &e) == 2 && s == base && strstr(line, "[vdso]")) {
			*size = e - s;
			break;
		}
	}
	fclose(maps);
	*image = (const void *)base;
	return *size ? 0 : -ENOENT;
}

int sp_own_vdso_fd(void)
{
	const void *image;
	size_t size;
	int err = sp_own_vdso(&image, &size);
	if (err)
		return err;
	int fd = memfd_create("vdso", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (size_t done = 0; done < size;) {
		ssize_t k = write(fd, (const char *)image + done, size - done);
		if (k <= 0) {
			err = k < 0 ? -errno : -EIO;
			close(fd);
			return err;
		}
		done += (size_t)k;
	}
	return fd;
}
