/* SPDX-License-Identifier: MIT */
/* A module file's function symbols, sorted once, for address lookups in O(log n). */
#include "symbols/symbols.h"

#include <errno.h>
#include <stdio.h>
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

#define PLT_ENTRIES_MAX (1u << 20) /* PLT entries named per module */

/*
 * The GOT slot a PLT entry jumps through: jmp *disp32(%rip) (ff 25), after
 * endbr64 and a bnd prefix when present (.plt.sec, IBT); 0 when the entry
 * holds none (PLT0 pushes first, and its slot has no relocation anyway).
 */
static uint64_t plt_slot(const uint8_t *p, size_t len, uint64_t addr)
{
	size_t i = len >= 4 && !memcmp(p, "\xf3\x0f\x1e\xfa", 4) ? 4 : 0;
	if (i < len && p[i] == 0xf2)
		i++;
	if (i + 6 > len || p[i] != 0xff || p[i + 1] != 0x25)
		return 0;
	int32_t disp;
	memcpy(&disp, p + i + 2, 4);
	return addr + i + 6 + (uint64_t)(int64_t)disp;
}

/* The name of the symbol t holds at exactly addr (by_addr_index: addr -> index, built on first use). */
static const char *symbol_at(const struct sp_symtab *t, struct sp_map *by_addr_index, uint64_t addr)
{
	uint32_t idx;
	/* The exported name reads best (strlen, not its resolver strlen_ifunc). */
	if (!by_addr_index->cap)
		for (size_t i = 0; i < t->n; i++)
			if ((!sp_map_get(by_addr_index, t->e[i].addr, &idx) ||
			     t->e[i].rank < t->e[idx].rank) &&
			    sp_map_put(by_addr_index, t->e[i].addr, (uint32_t)i))
				return NULL;
	return sp_map_get(by_addr_index, addr, &idx) ? t->e[idx].name : NULL;
}

/*
 * Relocations of one SHT_RELA section that fill a PLT entry's GOT slot:
 * JUMP_SLOT and GLOB_DAT name their symbol; IRELATIVE (a static binary's
 * IPLT) names the GNU indirect function whose resolver its addend is.
 * GOT slot -> name.
 */
static int index_relocs(const struct sp_symtab *t, Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh,
			Dwarf_Addr bias, struct sp_map *slots, struct sp_map *by_addr_index,
			const char ***names, size_t *nnames, size_t *cap)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	Elf_Scn *symscn = elf_getscn(elf, sh->sh_link);
	GElf_Shdr symsh;
	Elf_Data *syms = symscn ? elf_getdata(symscn, NULL) : NULL;
	/* A static binary's .rela.plt links no symbol table: IRELATIVE needs none. */
	if (!syms || !gelf_getshdr(symscn, &symsh))
		syms = NULL;
	if (!d || !sh->sh_entsize)
		return 0;
	size_t n = d->d_size / sh->sh_entsize;
	for (size_t i = 0; i < n && *nnames < PLT_ENTRIES_MAX; i++) {
		GElf_Rela r;
		GElf_Sym sym;
		if (!gelf_getrela(d, (int)i, &r))
			break;
		unsigned type = GELF_R_TYPE(r.r_info);
		const char *name = NULL;
		if (type == R_X86_64_IRELATIVE)
			name = symbol_at(t, by_addr_index, (uint64_t)r.r_addend + bias);
		else if ((type == R_X86_64_JUMP_SLOT || type == R_X86_64_GLOB_DAT) && syms &&
			 gelf_getsym(syms, (int)GELF_R_SYM(r.r_info), &sym))
			name = elf_strptr(elf, symsh.sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		if (sp_array_reserve((void **)names, cap, *nnames + 1, sizeof(**names)))
			return -ENOMEM;
		(*names)[*nnames] = name;
		if (sp_map_put(slots, r.r_offset, (uint32_t)*nnames))
			return -ENOMEM;
		(*nnames)++;
	}
	return 0;
}

/* Add the PLT entries of mod's main file as NAME@plt symbols. */
static int add_plt_entries(struct sp_symtab *t, Dwfl_Module *mod, size_t *cap)
{
	Dwarf_Addr bias = 0;
	Elf *elf = dwfl_module_getelf(mod, &bias);
	size_t shstrndx;
	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	struct sp_map slots, by_addr_index;
	const char **names = NULL;
	size_t nnames = 0, names_cap = 0, pool_len = 0, pool_cap = 0;
	struct { uint64_t addr, size; uint32_t name; } *found = NULL;
	size_t nfound = 0, found_cap = 0;
	int err = 0;
	sp_map_init(&slots);
	sp_map_init(&by_addr_index);
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	while (!err && (scn = elf_nextscn(elf, scn))) {
		const char *sn;
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_RELA &&
		    (sn = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    (!strcmp(sn, ".rela.plt") || !strcmp(sn, ".rela.dyn")))
			err = index_relocs(t, elf, scn, &sh, bias, &slots, &by_addr_index, &names,
					   &nnames, &names_cap);
	}
	for (scn = NULL; !err && nnames && (scn = elf_nextscn(elf, scn));) {
		const char *sn;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) || !(sn = elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    strncmp(sn, ".plt", 4))
			continue;
		/*
		 * Entries are 16 bytes (.plt, .plt.sec) or 8 (.plt.got, a static
		 * binary's IPLT), each starting at a multiple of 8: an entry runs
		 * to the next one found, 16 bytes at most.
		 */
		Elf_Data *d = elf_getdata(scn, NULL);
		for (size_t off = 0; d && off + 8 <= d->d_size && nfound < PLT_ENTRIES_MAX; off += 8) {
			uint32_t idx;
			size_t avail = d->d_size - off < 16 ? d->d_size - off : 16;
			uint64_t slot = plt_slot((const uint8_t *)d->d_buf + off, avail, sh.sh_addr + off);
			if (!slot || !sp_map_get(&slots, slot, &idx))
				continue;
			if (nfound && found[nfound - 1].addr + found[nfound - 1].size > sh.sh_addr + off + bias)
				found[nfound - 1].size = sh.sh_addr + off + bias - found[nfound - 1].addr;
			size_t len = strlen(names[idx]) + sizeof("@plt");
			if (sp_array_reserve((void **)&found, &found_cap, nfound + 1, sizeof(*found)) ||
			    sp_array_reserve((void **)&t->plt_names, &pool_cap, pool_len + len, 1)) {
				err = -ENOMEM;
				break;
			}
			snprintf(t->plt_names + pool_len, len, "%s@plt", names[idx]);
			found[nfound].addr = sh.sh_addr + off + bias;
			found[nfound].size = avail;
			found[nfound++].name = (uint32_t)pool_len;
			pool_len += len;
		}
	}
	if (!err && nfound && sp_array_reserve((void **)&t->e, cap, t->n + nfound, sizeof(*t->e)))
		err = -ENOMEM;
	for (size_t i = 0; !err && i < nfound; i++)
		t->e[t->n++] = (struct sp_symtab_entry){
			.addr = found[i].addr, .size = found[i].size,
			.name = t->plt_names + found[i].name, .end_hint = found[i].addr + found[i].size,
			.rank = 2, .ndx = SP_SYMTAB_PLT,
		};
	sp_map_release(&slots);
	sp_map_release(&by_addr_index);
	free(names);
	free(found);
	return err;
}

int sp_symtab_build(struct sp_symtab *t, Dwfl_Module *mod)
{
	memset(t, 0, sizeof(*t));
	int n = dwfl_module_getsymtab(mod);
	size_t cap = n > 1 ? (size_t)n : 0;
	if (cap) {
		t->e = malloc(cap * sizeof(*t->e));
		if (!t->e)
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
		t->e[t->n++] = (struct sp_symtab_entry){
			.addr = addr, .size = s.st_size, .name = name, .end_hint = end,
			.rank = (uint8_t)binding_rank(s.st_info),
			.ndx = (uint32_t)i,
		};
	}
	int err = add_plt_entries(t, mod, &cap);
	if (err) {
		sp_symtab_release(t);
		return err;
	}
	if (!t->n)
		return 0; /* no symbols: every lookup falls back to the address form */
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
	free(t->plt_names);
	memset(t, 0, sizeof(*t));
}

/* How far back a lookup looks for a symbol enclosing nested ones. */
#define ENCLOSING_SCAN 8

const struct sp_symtab_entry *sp_symtab_find(const struct sp_symtab *t, uint64_t addr)
{
	size_t lo = sp_partition_point(t->n, i, t->e[i].addr <= addr); /* first entry above addr */
	for (size_t i = lo, seen = 0; i-- > 0 && seen < ENCLOSING_SCAN; seen++)
		if (addr - t->e[i].addr < t->e[i].size)
			return &t->e[i];
	return NULL;
}
