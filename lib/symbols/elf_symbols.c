/* SPDX-License-Identifier: MIT */
/* Names from ELF symbol tables: the function symbol holding an address of a proven module file. */
#include "symbols/symbolizer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int sp_sym_elf_symbol(struct elf_names *names, struct file_entry *f, uint64_t svma,
		      struct sym_hit *hit)
{
	if (!f->symtab_built) {
		int err = sp_symtab_build(&f->symtab, f->mod);
		if (err)
			return err;
		f->symtab_built = true;
	}
	const struct sp_symtab_entry *se = sp_symtab_find(&f->symtab, svma);
	/*
	 * A caller's frame is its return address less one.  The one return
	 * address at a function's first byte is a signal restorer's: the kernel
	 * enters a handler as if called from sa_restorer (Go's
	 * runtime.sigreturn), so less one lands in the padding before it, which
	 * no symbol holds.  No call returns there otherwise: a call ending a
	 * function lies inside that function's size.
	 */
	bool restorer = false;
	if (!se && svma < UINT64_MAX) {
		se = sp_symtab_find(&f->symtab, svma + 1);
		restorer = se && se->addr == svma + 1;
		se = restorer ? se : NULL;
	}
	if (se) {
		const char *name = se->name;
		/*
		 * libdwfl appends the symbol version of .dynsym names
		 * ("__libc_start_main@@GLIBC_2.34"): noise in a profile, and
		 * the demangler rejects it, so it is cut off first.
		 */
		const char *at = strchr(name + 1, '@');
		const char *bare = at ? sp_arena_strndup(names->strings, name, (size_t)(at - name))
				      : name;
		char *dem = !bare || names->opts->no_demangle ? NULL : sp_demangle(bare);
		/* A PLT entry keeps its "@plt", after the demangled name (perf's spelling). */
		bool plt = se->ndx == SP_SYMTAB_PLT;
		if (plt)
			hit->name = sp_arena_printf(names->strings, "%s@plt", dem ? dem : bare ? bare : "");
		else if (dem)
			hit->name = sp_arena_strndup(names->strings, dem, strlen(dem));
		else if (bare && bare != name)
			hit->name = bare;
		else if (bare)
			hit->name = sp_arena_strndup(names->strings, name, strlen(name));
		free(dem);
		if (!hit->name)
			return -ENOMEM;
		hit->offset = restorer ? 0 : svma - se->addr;
	}
	return 0;
}
