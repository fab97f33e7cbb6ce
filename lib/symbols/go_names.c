/* SPDX-License-Identifier: MIT */
/*
 * Names from Go's function table (.gopclntab), for Go binaries built without
 * ELF symbols or DWARF (`go build -ldflags='-s -w'`): the function, its
 * source file and line.  The table is parsed in lib/formats/gopclntab.c.
 */
#include "symbols/symbolizer.h"

#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

/*
 * The sections that hold the table: .gopclntab in an executable, and in a
 * position-independent one the linker's read-only-after-relocation copy.
 */
static const char *const table_sections[] = {".gopclntab", ".data.rel.ro.gopclntab"};

/* A Go binary's function table and, when found, where its inline trees are. */
struct go_table {
	struct sp_gopclntab t;
	struct sp_gofuncdata fd;
	bool inline_trees;
};

/* Inline chains kept per address: deeper ones are cut at their outermost functions. */
#define GO_INLINE_MAX 32

/* gofunc, from moduledata in .noptrdata, and the bytes of .rodata that hold the inline trees. */
static void find_inline_trees(Elf *elf, size_t shstrndx, struct go_table *g, uint64_t table_addr)
{
	Elf_Data *noptrdata = NULL, *rodata = NULL;
	uint64_t rodata_addr = 0;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		const char *name = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name)
							  : NULL;
		if (!name || sh.sh_type != SHT_PROGBITS)
			continue;
		if (!strcmp(name, ".noptrdata"))
			noptrdata = elf_getdata(scn, NULL);
		else if (!strcmp(name, ".rodata") && (rodata = elf_getdata(scn, NULL)))
			rodata_addr = sh.sh_addr;
	}
	if (!noptrdata || !noptrdata->d_buf || !rodata || !rodata->d_buf ||
	    !sp_gopclntab_gofunc(&g->t, table_addr, noptrdata->d_buf, noptrdata->d_size, rodata_addr,
				 &g->fd.gofunc))
		return;
	g->fd.data = rodata->d_buf;
	g->fd.len = rodata->d_size;
	g->fd.addr = rodata_addr;
	g->inline_trees = true;
}

/* Find and parse f's table once: f->go, or NULL when it has none. */
static int load_table(struct file_entry *f)
{
	f->go_state = GO_TABLE_NONE;
	Dwarf_Addr bias;
	Elf *elf = f->mod ? dwfl_module_getelf(f->mod, &bias) : NULL;
	size_t shstrndx;
	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	Elf_Data *table = NULL;
	uint64_t text_addr = 0, table_addr = 0;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		const char *name = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name)
							  : NULL;
		if (!name)
			continue;
		if (!strcmp(name, ".text"))
			text_addr = sh.sh_addr;
		for (size_t i = 0; i < SP_ARRAY_SIZE(table_sections); i++)
			if (!table && sh.sh_type == SHT_PROGBITS && !strcmp(name, table_sections[i]) &&
			    (table = elf_getdata(scn, NULL)))
				table_addr = sh.sh_addr;
	}
	if (!table || !table->d_buf)
		return 0;
	struct go_table *g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	/* The bytes are libelf's: they live as long as f's Dwfl. */
	if (sp_gopclntab_parse(&g->t, table->d_buf, table->d_size, text_addr)) {
		free(g);
		return 0;
	}
	find_inline_trees(elf, shstrndx, g, table_addr);
	f->go = g;
	f->go_state = GO_TABLE_READ;
	return 0;
}

int sp_sym_go_symbol(struct elf_names *names, struct file_entry *f, uint64_t svma,
		     struct sym_hit *hit)
{
	if (f->go_state == GO_TABLE_UNREAD) {
		int err = load_table(f);
		if (err)
			return err;
	}
	struct sp_gofunc fn;
	const struct go_table *g = f->go;
	if (!g || !sp_gopclntab_find(&g->t, svma, &fn) || !fn.name)
		return 0;
	if (!(hit->name = sp_arena_strndup(names->strings, fn.name, strlen(fn.name))))
		return -ENOMEM;
	hit->offset = svma - fn.entry;
	/* Innermost first, the function itself last (its entry unnamed: the hit names it). */
	struct sp_goinline chain[GO_INLINE_MAX];
	size_t n = sp_gopclntab_inline(&g->t, &fn, svma, g->inline_trees ? &g->fd : NULL, chain,
				       SP_ARRAY_SIZE(chain));
	size_t start = names->nsrc;
	int err = 0;
	for (size_t i = 0; i < n && !err; i++) {
		const struct sp_goinline *c = &chain[i];
		const char *name = c->name ? c->name : "??"; /* addr2line's spelling of no name */
		struct src_entry e = {.line = c->line, .is_inline = i + 1 < n};
		if ((e.is_inline && !(e.name = sp_arena_strndup(names->strings, name, strlen(name)))) ||
		    (c->file && !(e.file = sp_arena_strndup(names->strings, c->file, strlen(c->file)))))
			err = -ENOMEM;
		else
			err = sp_sym_push_src(names, &e);
	}
	if (err) {
		names->nsrc = start;
		return err;
	}
	hit->src = (uint32_t)start;
	hit->nsrc = (uint32_t)n;
	return 0;
}
