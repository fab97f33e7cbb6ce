/* SPDX-License-Identifier: MIT */
/* Module files opened and proven to be the recorded ones (build-id, or inode, size and mtime). */
#include "symbols/symbolizer.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * docs/DESIGN.md, decision 7: a path names whatever is there now, so the file must be
 * shown to be the recorded one.  Build-id when the module recorded one (a
 * file without a build-id then fails); otherwise inode + size + mtime, and a
 * recording that did not capture them cannot be proven.
 */
static bool file_is_recorded(const struct sp_module *m, const struct stat *st,
			     const struct sp_elf_info *info)
{
	if (m->build_id_len)
		return info->build_id_len == m->build_id_len &&
		       !memcmp(info->build_id, m->build_id, m->build_id_len);
	int64_t mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	return m->inode != 0 && m->file_size != 0 && m->mtime_ns != 0 &&
	       (uint64_t)st->st_ino == m->inode && (uint64_t)st->st_size == m->file_size &&
	       mtime_ns == m->mtime_ns;
}

/*
 * Does elf hold DWARF itself?  A stripped file keeps the build-id of the
 * build it came from, so the symbol cache must ask the file in hand.
 */
static bool has_debug_info(Elf *elf)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(elf, &shstrndx))
		return false;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		if (gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS && sh.sh_size &&
		    (name = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")))
			return true;
	}
	return false;
}

/*
 * Prove the image open on fd and hand it to libdwfl: FILE_PROVEN (libdwfl
 * owns fd), else FILE_UNPROVEN or FILE_UNREADABLE with fd closed.
 */
static uint8_t open_image(struct elf_names *names, struct file_entry *f, int fd)
{
	const struct sp_module *m = sp_sym_file_rep(names, f);
	sp_elf_info_release(&f->info);
	struct stat st;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		goto close_fd;
	/* Another user's file draws on the smaller budget (SP_INFLATE_UNTRUSTED_RUN_MAX). */
	struct sp_file_trust trust;
	sp_file_trust(fd, &trust);
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		goto close_fd;
	int err = sp_elf_info_read(elf, &f->info);
	/*
	 * libdwfl relocates a relocatable file's sections (inflating compressed
	 * ones) before anything can hide them: such a file with sections past
	 * the inflation bounds is not used.  Processes map ET_EXEC and ET_DYN.
	 */
	struct sp_inflate_stats ist;
	if (!err && (sp_elf_bound_inflation_probe(elf, NULL, &trust, &ist) ||
		     (f->info.e_type == ET_REL && ist.over_limit)))
		err = -SP_E_ELF_MALFORMED;
	f->own_dwarf = !err && has_debug_info(elf);
	/* Its debug link, to tell libdwfl's request for it from one for an alternate file. */
	GElf_Word crc = 0;
	const char *link = err ? NULL : dwelf_elf_gnu_debuglink(elf, &crc);
	if (link && *link) {
		f->debuglink = sp_arena_strndup(names->strings, link, strlen(link));
		f->debuglink_crc = crc;
	}
	elf_end(elf);
	if (err)
		goto close_fd;
	if (!file_is_recorded(m, &st, &f->info)) {
		close(fd);
		return FILE_UNPROVEN;
	}
	f->witness = sp_symcache_witness(&st);
	f->dwfl = dwfl_begin(&names->callbacks);
	if (!f->dwfl)
		goto close_fd;
	dwfl_report_begin(f->dwfl);
	/*
	 * Base 0 with add_p_vaddr places the file at its own p_vaddrs (bias 0),
	 * so lookups take static addresses whatever the file type.  The same
	 * fd is the one that was proven; libdwfl consumes it on success.
	 */
	f->mod = dwfl_report_elf(f->dwfl, f->open_path, f->open_path, fd, 0, true);
	if (!f->mod || dwfl_report_end(f->dwfl, NULL, NULL)) {
		if (!f->mod)
			close(fd);
		dwfl_end(f->dwfl);
		f->dwfl = NULL;
		f->mod = NULL;
		sp_elf_info_release(&f->info);
		return FILE_UNREADABLE;
	}
	/*
	 * libdw inflates every compressed DWARF section when the file's DWARF is
	 * first asked for (dwarf_begin_elf), libdwfl a compressed symbol table:
	 * those past the bounds are hidden first, in libdwfl's own Elf handle.
	 */
	Dwarf_Addr bias;
	Elf *main = dwfl_module_getelf(f->mod, &bias);
	if (!main || sp_elf_bound_inflation(main, NULL, &trust, &ist)) {
		dwfl_end(f->dwfl);
		f->dwfl = NULL;
		f->mod = NULL;
		sp_elf_info_release(&f->info);
		return FILE_UNREADABLE;
	}
	sp_sym_note_not_inflated(names, &ist, f->open_path);
	/* find_debuginfo gets the module's userdata slot: it leads back to f. */
	void **userdata;
	dwfl_module_info(f->mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
	*userdata = f;
	return FILE_PROVEN;
close_fd:
	close(fd);
	sp_elf_info_release(&f->info);
	return FILE_UNREADABLE;
}

/*
 * Open, prove and hand a file to libdwfl, once; the outcome is remembered in
 * f->state.  An image handed over by the recorder is the only candidate.
 * Otherwise the path, then, when it does not prove to be the recorded file
 * and the process still runs, its mapping's /proc/PID/map_files entry: the
 * image that was sampled, even deleted or replaced (docs/DESIGN.md, decision 7:
 * never the new file's symbols).
 */
/*
 * A module path from a spool, opened only when it names a regular file: not
 * a symlink someone planted, nor a device, whose open alone can act (a tape
 * rewinds), nor a FIFO.  The kernel names mappings by their resolved path, so
 * a genuine module path never ends in a symlink.  sp_open_regular looks
 * without opening, so nothing swapped in after the look is opened either.
 */
static int open_module_path(const char *path)
{
	return sp_open_regular(path, O_RDONLY | O_NONBLOCK, SP_RESOLVE_NOFOLLOW);
}

void sp_sym_open_file(struct elf_names *names, struct file_entry *f)
{
	const struct sp_module *m = sp_sym_file_rep(names, f);
	bool vdso = sp_sym_is_vdso(f->open_path);
	int fd = f->given_fd ? fcntl(f->given_fd - 1, F_DUPFD_CLOEXEC, 0)
		 : vdso	     ? sp_own_vdso_fd()
			     : open_module_path(f->open_path);
	/* What the file may inflate is taken from this symbolizer's budgets. */
	struct sp_budget_account *prev = sp_budget_charge_to(&names->budget);
	f->state = fd < 0 ? FILE_UNREADABLE : open_image(names, f, fd);
	if (f->state != FILE_PROVEN && !f->given_fd && !vdso && m->pid > 0 && !f->map_files &&
	    (asprintf(&f->map_files, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)m->pid,
		      m->start, m->end) >= 0 || (f->map_files = NULL))) {
		fd = open(f->map_files, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		uint8_t st = fd < 0 ? FILE_UNREADABLE : open_image(names, f, fd);
		if (st == FILE_PROVEN || f->state == FILE_UNREADABLE)
			f->state = st;
	}
	sp_budget_charge_to(prev);
	if (f->state == FILE_PROVEN)
		names->stats->files_proven++;
	else if (f->state == FILE_UNPROVEN)
		names->stats->files_unproven++;
	else
		names->stats->files_unreadable++;
}

void sp_sym_files_moved(struct elf_names *names)
{
	for (size_t i = 0; i < names->nfiles; i++) {
		void **userdata;
		if (names->files[i].mod &&
		    dwfl_module_info(names->files[i].mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL))
			*userdata = &names->files[i];
	}
}

/* Static address of a frame in its module's file, or false when it has none. */
bool sp_sym_frame_svma(const struct sp_module *m, const struct file_entry *f,
		       const struct sp_frame *fr, uint64_t *svma)
{
	if (m->flags & SP_MODULE_HAS_BIAS) {
		*svma = fr->abs_ip - m->load_bias;
		return true;
	}
	/* No recorded bias: rel_ip is a file offset; the PT_LOAD holding it maps it. */
	for (size_t i = 0; i < f->info.nsegs; i++) {
		const struct sp_load_segment *s = &f->info.segs[i];
		if (fr->rel_ip >= s->offset && fr->rel_ip - s->offset < s->filesz) {
			*svma = s->vaddr + (fr->rel_ip - s->offset);
			return true;
		}
	}
	return false;
}

void sp_sym_elf_init(struct elf_names *names, const struct sp_spool *s,
		     const struct sp_symbolizer_opts *opts, struct sp_arena *strings,
		     struct sp_symbolizer_stats *stats)
{
	names->spool = s;
	names->opts = opts;
	names->strings = strings;
	names->stats = stats;
}

int sp_symbolizer_use_file(struct sp_symbolizer *sym, uint32_t module_id, int fd)
{
	struct elf_names *names = &sym->elf;
	if (module_id >= sym->nmodules || sym->module_file[module_id] == NO_FILE)
		return -SP_E_BAD_ARG;
	struct file_entry *f = &names->files[sym->module_file[module_id]];
	if (f->state != FILE_UNOPENED)
		return -SP_E_BAD_ARG;
	int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (own < 0)
		return -errno;
	if (f->given_fd)
		close(f->given_fd - 1);
	f->given_fd = own + 1;
	return 0;
}
