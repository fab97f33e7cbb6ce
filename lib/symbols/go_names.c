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
	uint64_t text_addr = 0;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		const char *name = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name)
							  : NULL;
		if (!name)
			continue;
		if (!strcmp(name, ".text"))
			text_addr = sh.sh_addr;
		for (size_t i = 0; i < SP_ARRAY_SIZE(table_sections); i++)
			if (!table && sh.sh_type == SHT_PROGBITS && !strcmp(name, table_sections[i]))
				table = elf_getdata(scn, NULL);
	}
	if (!table || !table->d_buf)
		return 0;
	struct sp_gopclntab *t = malloc(sizeof(*t));
	if (!t)
		return -ENOMEM;
	/* The bytes are libelf's: they live as long as f's Dwfl. */
	if (sp_gopclntab_parse(t, table->d_buf, table->d_size, text_addr)) {
		free(t);
		return 0;
	}
	f->go = t;
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
	if (!f->go || !sp_gopclntab_find(f->go, svma, &fn) || !fn.name)
		return 0;
	if (!(hit->name = sp_arena_strndup(names->strings, fn.name, strlen(fn.name))))
		return -ENOMEM;
	hit->offset = svma - fn.entry;
	const char *file;
	uint32_t line;
	if (!sp_gopclntab_line(f->go, &fn, svma, &file, &line))
		return 0;
	struct src_entry e = {.line = line};
	if (file && !(e.file = sp_arena_strndup(names->strings, file, strlen(file))))
		return -ENOMEM;
	hit->src = (uint32_t)names->nsrc;
	hit->nsrc = 1;
	return sp_sym_push_src(names, &e);
}
