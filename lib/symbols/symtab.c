/* SPDX-License-Identifier: MIT */
/* A module file's function symbols, sorted once, for address lookups in O(log n). */
#include "symbols/symbols.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * Why not dwfl_module_addrinfo: elfutils 0.188 scans the whole symbol table
 * on every call.  With libc's debug symbols that made 20000 distinct frames
 * take 5.5 s; a table sorted once answers each in a binary search.  libdwfl
 * still decides which tables exist (.symtab, separate debug file, .dynsym,
 * .gnu_debugdata) and adjusts every address into the module's space.
 */

static int binding_rank(unsigned char info)
{
	switch (GELF_ST_BIND(info)) {
	case STB_GLOBAL:
		return 0;
	case STB_WEAK:
		return 1;
	default:
		return 2;
	}
}

/* By address; at one address the entry to keep sorts first. */
static int by_addr(const void *pa, const void *pb)
{
	const struct sp_symtab_entry *a = pa, *b = pb;
	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	if (!a->size != !b->size)
		return a->size ? -1 : 1; /* sized symbols say more than labels */
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1; /* the exported alias reads best */
	/* Then table order: a definition precedes the aliases made from it (__GI_*). */
	return a->ndx < b->ndx ? -1 : a->ndx > b->ndx;
}

/* Allocated section bounds of a symbol, in module addresses; false when not code. */
static bool code_section(Elf *elf, GElf_Word shndx, Dwarf_Addr bias, uint64_t *end)
{
	GElf_Shdr sh;
	Elf_Scn *scn = elf ? elf_getscn(elf, shndx) : NULL;
	if (!scn || !gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) ||
	    !(sh.sh_flags & SHF_EXECINSTR))
		return false;
	*end = sh.sh_addr + sh.sh_size + bias;
	return true;
}

int sp_symtab_build(struct sp_symtab *t, Dwfl_Module *mod)
{
	memset(t, 0, sizeof(*t));
	int n = dwfl_module_getsymtab(mod);
	if (n <= 1)
		return 0; /* no symbols: every lookup falls back to the address form */
	t->e = malloc((size_t)n * sizeof(*t->e));
	uint64_t *sec_end = malloc((size_t)n * sizeof(*sec_end));
	if (!t->e || !sec_end) {
		free(sec_end);
		sp_symtab_release(t);
		return -ENOMEM;
	}
	for (int i = 1; i < n; i++) {
		GElf_Sym s;
		GElf_Addr addr;
		GElf_Word shndx;
		Elf *elf = NULL;
		Dwarf_Addr bias = 0;
		const char *name = dwfl_module_getsym_info(mod, i, &s, &addr, &shndx, &elf, &bias);
		if (!name || !*name || shndx == SHN_UNDEF || shndx == SHN_ABS ||
		    shndx == (GElf_Word)-1)
			continue;
		int type = GELF_ST_TYPE(s.st_info);
		uint64_t end;
		/* Untyped symbols count only in code: assembly entry points. */
		if (!code_section(elf, shndx, bias, &end) ||
		    (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE))
			continue;
		sec_end[t->n] = end;
		t->e[t->n++] = (struct sp_symtab_entry){
			.addr = addr, .size = s.st_size, .name = name,
			.rank = (uint8_t)binding_rank(s.st_info),
			.ndx = (uint32_t)i,
		};
	}
	/* The section bounds travel with their entry through the sort. */
	for (size_t i = 0; i < t->n; i++)
		t->e[i].end_hint = sec_end[i];
	free(sec_end);
	qsort(t->e, t->n, sizeof(*t->e), by_addr);
	size_t k = 0;
	for (size_t i = 0; i < t->n; i++)
		if (!k || t->e[i].addr != t->e[k - 1].addr)
			t->e[k++] = t->e[i];
	t->n = k;
	/* A label without size covers up to the next symbol, within its section. */
	for (size_t i = 0; i < t->n; i++) {
		struct sp_symtab_entry *e = &t->e[i];
		if (e->size)
			continue;
		uint64_t end = e->end_hint;
		if (i + 1 < t->n && t->e[i + 1].addr < end)
			end = t->e[i + 1].addr;
		e->size = end > e->addr ? end - e->addr : 0;
	}
	return 0;
}

void sp_symtab_release(struct sp_symtab *t)
{
	free(t->e);
	memset(t, 0, sizeof(*t));
}

/* How far back a lookup looks for a symbol enclosing nested ones. */
#define ENCLOSING_SCAN 8

const struct sp_symtab_entry *sp_symtab_find(const struct sp_symtab *t, uint64_t addr)
{
	size_t lo = 0, hi = t->n;
	while (lo < hi) { /* first entry above addr */
		size_t mid = lo + (hi - lo) / 2;
		if (t->e[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo, seen = 0; i-- > 0 && seen < ENCLOSING_SCAN; seen++)
		if (addr - t->e[i].addr < t->e[i].size)
			return &t->e[i];
	return NULL;
}
