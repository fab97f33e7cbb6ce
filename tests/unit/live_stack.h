/* SPDX-License-Identifier: MIT */
/* Test helpers: this process's modules with CFI tables, register capture and stack copies. */
#ifndef SP_TEST_LIVE_STACK_H
#define SP_TEST_LIVE_STACK_H

#include "record/record.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

/*
 * Capture the callee-saved registers, rsp and an rip inside the calling
 * function, as they are at that instruction.  A macro so that the asm sits
 * in the caller's own frame: its CFI row then describes exactly this state.
 */
#define LS_CAPTURE(r)                                                        \
	do {                                                                 \
		__asm__ volatile("lea 0(%%rip), %%rax\n\t"                   \
				 "mov %%rax, 128(%0)\n\t"                    \
				 "mov %%rsp, 56(%0)\n\t"                     \
				 "mov %%rbp, 48(%0)\n\t"                     \
				 "mov %%rbx, 24(%0)\n\t"                     \
				 "mov %%r12, 96(%0)\n\t"                     \
				 "mov %%r13, 104(%0)\n\t"                    \
				 "mov %%r14, 112(%0)\n\t"                    \
				 "mov %%r15, 120(%0)\n\t"                    \
				 :                                           \
				 : "r"((r)->regs)                            \
				 : "rax", "memory");                         \
		(r)->valid = 1u << SP_DW_RIP | 1u << SP_DW_RSP | 1u << SP_DW_RBP | \
			     1u << SP_DW_RBX | 1u << SP_DW_R12 | 1u << SP_DW_R13 | \
			     1u << SP_DW_R14 | 1u << SP_DW_R15;              \
	} while (0)

struct ls_file {
	char *path;
	int fd;
	Elf *elf;
	struct sp_elf_info info;
	struct sp_cfi_table *cfi;
};

struct ls_module {
	struct sp_unwind_module um;
	struct ls_file *file;
};

struct ls_map {
	struct ls_file files[64];
	size_t nfiles;
	struct ls_module mods[128];
	size_t nmods;
	const struct ls_module *last;
};

static inline struct ls_file *ls_file_get(struct ls_map *m, const char *path)
{
	struct ls_file *f;

	for (size_t i = 0; i < m->nfiles; i++)
		if (strcmp(m->files[i].path, path) == 0)
			return &m->files[i];
	if (m->nfiles == SP_ARRAY_SIZE(m->files))
		return NULL;
	f = &m->files[m->nfiles];
	memset(f, 0, sizeof(*f));
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0)
		return NULL;
	sp_elf_init();
	f->elf = elf_begin(f->fd, ELF_C_READ_MMAP, NULL);
	if (!f->elf || sp_elf_info_read(f->elf, &f->info) != 0) {
		if (f->elf)
			elf_end(f->elf);
		close(f->fd);
		return NULL;
	}
	if (sp_cfi_table_new(f->elf, NULL, NULL, &f->cfi) != 0)
		f->cfi = NULL;
	f->path = strdup(path);
	m->nfiles++;
	return f;
}

/* Every executable file-backed mapping of this process, from /proc/self/maps. */
static inline int ls_map_load(struct ls_map *m)
{
	FILE *fp = fopen("/proc/self/maps", "re");
	char line[4096];

	memset(m, 0, sizeof(*m));
	if (!fp)
		return -1;
	while (fgets(line, sizeof(line), fp)) {
		unsigned long long start, end, off;
		char perms[8], path[3072];
		struct ls_file *f;
		struct ls_module *mod;

		path[0] = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %3071[^\n]", &start, &end, perms, &off,
			   path) < 4)
			continue;
		if (!strchr(perms, 'x') || path[0] != '/' || m->nmods == SP_ARRAY_SIZE(m->mods))
			continue;
		f = ls_file_get(m, path);
		if (!f)
			continue;
		mod = &m->mods[m->nmods];
		mod->file = f;
		mod->um.start = start;
		mod->um.end = end;
		mod->um.cfi = f->cfi;
		if (sp_elf_load_bias(&f->info, start, off, &mod->um.load_bias) != 0)
			continue;
		m->nmods++;
	}
	fclose(fp);
	return 0;
}

static inline void ls_map_free(struct ls_map *m)
{
	for (size_t i = 0; i < m->nfiles; i++) {
		sp_cfi_table_free(m->files[i].cfi);
		sp_elf_info_release(&m->files[i].info);
		elf_end(m->files[i].elf);
		close(m->files[i].fd);
		free(m->files[i].path);
	}
	memset(m, 0, sizeof(*m));
}

/* Rebuild every file's table: the next unwind starts from cold tables. */
static inline void ls_map_reset_cfi(struct ls_map *m)
{
	for (size_t i = 0; i < m->nfiles; i++) {
		struct ls_file *f = &m->files[i];

		sp_cfi_table_free(f->cfi);
		if (sp_cfi_table_new(f->elf, NULL, NULL, &f->cfi) != 0)
			f->cfi = NULL;
	}
	for (size_t i = 0; i < m->nmods; i++)
		m->mods[i].um.cfi = m->mods[i].file->cfi;
}

static inline const struct ls_module *ls_map_module(struct ls_map *m, uint64_t pc)
{
	if (m->last && pc >= m->last->um.start && pc < m->last->um.end)
		return m->last;
	for (size_t i = 0; i < m->nmods; i++)
		if (pc >= m->mods[i].um.start && pc < m->mods[i].um.end)
			return m->last = &m->mods[i];
	return NULL;
}

/* sp_find_module_fn over an ls_map. */
static inline const struct sp_unwind_module *ls_find(void *ctx, uint64_t pc)
{
	const struct ls_module *mod = ls_map_module(ctx, pc);

	return mod ? &mod->um : NULL;
}

/* Name of the function symbol (.symtab, else .dynsym) covering pc, or NULL. */
static inline const char *ls_symbol(struct ls_map *m, uint64_t pc)
{
	const struct ls_module *mod = ls_map_module(m, pc);
	const char *best = NULL;

	if (!mod)
		return NULL;
	uint64_t svma = pc - mod->um.load_bias;
	for (int pass = 0; pass < 2 && !best; pass++) {
		Elf_Scn *scn = NULL;

		while ((scn = elf_nextscn(mod->file->elf, scn)) != NULL) {
			GElf_Shdr sh;
			Elf_Data *d;

			if (!gelf_getshdr(scn, &sh) ||
			    sh.sh_type != (pass == 0 ? SHT_SYMTAB : SHT_DYNSYM) || !sh.sh_entsize)
				continue;
			d = elf_getdata(scn, NULL);
			for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
				GElf_Sym s;

				if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF ||
				    (GELF_ST_TYPE(s.st_info) != STT_FUNC &&
				     GELF_ST_TYPE(s.st_info) != STT_GNU_IFUNC))
					continue;
				if (svma >= s.st_value && svma < s.st_value + s.st_size) {
					best = elf_strptr(mod->file->elf, sh.sh_link, s.st_name);
					break;
				}
			}
		}
	}
	return best;
}

/* svma of a section of the module file that maps pc; 0 when absent. */
static inline uint64_t ls_section(const struct ls_module *mod, const char *name, uint64_t *size)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(mod->file->elf, &shstrndx) != 0)
		return 0;
	while ((scn = elf_nextscn(mod->file->elf, scn)) != NULL) {
		GElf_Shdr sh;
		const char *n;

		if (!gelf_getshdr(scn, &sh))
			continue;
		n = elf_strptr(mod->file->elf, shstrndx, sh.sh_name);
		if (n && strcmp(n, name) == 0) {
			if (size)
				*size = sh.sh_size;
			return sh.sh_addr;
		}
	}
	return 0;
}

/* End of the mapping that contains addr (the top of its stack), 0 if none. */
static inline uint64_t ls_mapping_end(uint64_t addr)
{
	FILE *fp = fopen("/proc/self/maps", "re");
	char line[4096];
	uint64_t found = 0;

	if (!fp)
		return 0;
	while (fgets(line, sizeof(line), fp)) {
		unsigned long long start, end;

		if (sscanf(line, "%llx-%llx", &start, &end) == 2 && addr >= start && addr < end) {
			found = end;
			break;
		}
	}
	fclose(fp);
	return found;
}

/*
 * Copy live stack words: AddressSanitizer poisons parts of stack frames, so
 * this copy must not be instrumented (and must not become a memcpy call).
 */
__attribute__((no_sanitize_address, noinline, unused)) static void ls_copy_words(uint64_t *dst,
									  uintptr_t src, size_t n)
{
	const volatile uint64_t *s = (const volatile uint64_t *)src;

	for (size_t i = 0; i < n; i++)
		dst[i] = s[i];
}

/* Copy up to cap bytes of the stack from sp upward, never past its mapping. */
static inline size_t ls_copy_stack(uint8_t *dst, uint64_t sp, uint64_t top, size_t cap)
{
	size_t len = cap;

	if (top > sp && top - sp < len)
		len = (size_t)(top - sp);
	len &= ~(size_t)7;
	ls_copy_words((uint64_t *)dst, (uintptr_t)sp, len / 8);
	return len;
}

/* The interrupted registers of a signal handler's ucontext, in DWARF numbering, all known. */
static inline void ls_regs_from_ucontext(const void *ucv, struct sp_regs *r)
{
	static const int greg[SP_DW_NREGS] = {
		REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI, REG_RBP, REG_RSP, REG_R8,
		REG_R9, REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP,
	};
	const ucontext_t *uc = ucv;

	for (unsigned i = 0; i < SP_DW_NREGS; i++)
		r->regs[i] = (uint64_t)uc->uc_mcontext.gregs[greg[i]];
	r->valid = (1u << SP_DW_NREGS) - 1;
}

/*
 * Sample this process as perf does, at arbitrary instructions: a profiling
 * timer every period_us of CPU time calls on_sample (an SA_SIGINFO handler,
 * which counts what it keeps in *count) while work(*count) runs, again and
 * again, until *count reaches want or limit_s seconds have passed.  0, or -1
 * when the timer could not be set.
 */
static inline int ls_profile(void (*on_sample)(int, siginfo_t *, void *), long period_us,
			     volatile int *count, int want, int limit_s, void (*work)(int n))
{
	struct sigaction sa = { .sa_sigaction = on_sample, .sa_flags = SA_SIGINFO | SA_RESTART };
	struct itimerval on = { { 0, period_us }, { 0, period_us } }, off = { { 0, 0 }, { 0, 0 } };
	struct timespec t0, t1;

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGPROF, &sa, NULL) || setitimer(ITIMER_PROF, &on, NULL))
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		work(*count);
		clock_gettime(CLOCK_MONOTONIC, &t1);
	} while (*count < want && t1.tv_sec - t0.tv_sec < limit_s);
	setitimer(ITIMER_PROF, &off, NULL);
	signal(SIGPROF, SIG_DFL);
	return 0;
}

#endif
