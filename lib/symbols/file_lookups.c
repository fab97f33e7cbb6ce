/* SPDX-License-Identifier: MIT */
/* Names of module file addresses, kept per (file, address) and in the symbol cache across reports. */
#include "symbols/symbolizer.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Keep hit as f's answer for svma (room in names->hits was reserved). */
static int add_hit(struct elf_names *names, struct file_entry *f, uint64_t svma,
		   const struct sym_hit *hit)
{
	uint32_t idx = (uint32_t)names->nhits;
	if ((f->symcache == SYMCACHE_READ &&
	     sp_array_reserve((void **)&f->fhits, &f->fhits_cap, f->nfhits + 1,
			      sizeof(*f->fhits))) ||
	    sp_map_put(&f->cache, svma, idx))
		return -ENOMEM;
	if (f->symcache == SYMCACHE_READ)
		f->fhits[f->nfhits++] = (struct file_hit){.svma = svma, .hit = idx};
	names->hits[names->nhits++] = *hit;
	return 0;
}

static int symcache_entry(void *ctx, const struct sp_symcache_hit *h)
{
	struct file_entry *f = ctx;
	struct elf_names *names = f->owner;
	uint32_t idx;
	if (sp_map_get(&f->cache, h->svma, &idx))
		return 0;
	if (sp_array_reserve((void **)&names->hits, &names->hits_cap, names->nhits + 1,
			     sizeof(*names->hits)))
		return -ENOMEM;
	struct sym_hit hit = {.name = h->name, .offset = h->offset, .src = (uint32_t)names->nsrc,
			      .nsrc = h->nsrc};
	for (uint32_t i = 0; i < h->nsrc; i++) {
		const struct sp_symcache_src *c = &h->src[i];
		struct src_entry e = {.name = c->name, .file = c->file, .line = c->line,
				      .is_inline = c->is_inline};
		int err = sp_sym_push_src(names, &e);
		if (err)
			return err;
	}
	return add_hit(names, f, h->svma, &hit);
}

/*
 * Before f's first lookup: what the cache file of its build-id holds.  The
 * file was proven first, so these are its names, and they stand when the
 * DWARF they came from is still there: in the file in hand (a stripped copy
 * keeps the build-id), or in its debug file found again.  A report then
 * prints the same with or without the cache.
 * Off without a cache directory or a build-id, and with no_demangle (the
 * cache holds demangled names).  0 or -ENOMEM; a missing or damaged cache
 * file is no error.
 */
static int symcache_load(struct elf_names *names, struct file_entry *f)
{
	if (!names->cache_dir || !f->info.build_id_len || names->opts->no_demangle) {
		f->symcache = SYMCACHE_OFF;
		return 0;
	}
	f->symcache = SYMCACHE_READ;
	/*
	 * The cache file of the very file the DWARF is in (its witness): the
	 * module file, else its debug file, found again first.
	 */
	uint64_t witness = f->own_dwarf ? f->witness
		: sp_sym_debug_file_found_again(names, f) ? f->debug_witness : 0;
	struct sp_symcache_file cf;
	int err = sp_symcache_open(names->cache_dir, f->info.build_id, f->info.build_id_len, witness,
				   &cf);
	if (!err && cf.source == (f->own_dwarf ? SP_SYMCACHE_OWN : SP_SYMCACHE_SEPARATE))
		err = sp_symcache_each(&cf, names->strings, symcache_entry, f);
	sp_symcache_close(&cf);
	if (err == -ENOMEM)
		return err;
	if (err == -SP_E_SPOOL_CORRUPT)
		f->symcache_new = true; /* rewritten whole at the end */
	return 0;
}

/*
 * Where f's DWARF is, when its names are worth keeping: full DWARF (with no
 * alternate file, which could go missing apart from it), in the file itself
 * or in a debug file our own search found.  Such a file cannot be named
 * better later.  -1 when there is no DWARF or it came another way.
 */
static int dwarf_source(struct file_entry *f)
{
	Dwarf_Addr bias;
	Dwarf *dw = f->mod ? dwfl_module_getdwarf(f->mod, &bias) : NULL;
	if (!dw)
		return -1;
	const char *alt_name;
	const void *alt_id;
	if (dwelf_dwarf_gnu_debugaltlink(dw, &alt_name, &alt_id) != 0)
		return -1;
	if (dwarf_getelf(dw) == dwfl_module_getelf(f->mod, &bias))
		return SP_SYMCACHE_OWN;
	return f->debug_state == DEBUG_FOUND && !f->debug_debuginfod ? SP_SYMCACHE_SEPARATE : -1;
}

/*
 * Addresses kept per cache file.  Every report that reaches the file decodes
 * all of it, so past this many (about 1 MB of file) only the addresses the
 * last report asked for are kept.
 */
#define SYMCACHE_MAX_ENTRIES 16384

/* Write f's hits, those read and those found, to its cache file; failures are silent. */
void sp_sym_symcache_save(struct elf_names *names, struct file_entry *f)
{
	int source = f->symcache == SYMCACHE_READ ? dwarf_source(f) : -1;
	if (source < 0)
		return;
	struct sp_buf b;
	sp_buf_init(&b);
	size_t count = 0;
	struct sp_symcache_src src[SYMCACHE_MAX_SRC];
	bool only_used = f->nfhits > SYMCACHE_MAX_ENTRIES;
	for (size_t i = 0; i < f->nfhits && count < SYMCACHE_MAX_ENTRIES; i++) {
		const struct sym_hit *h = &names->hits[f->fhits[i].hit];
		if (h->nsrc > SYMCACHE_MAX_SRC || (only_used && !h->used))
			continue;
		for (uint32_t k = 0; k < h->nsrc; k++) {
			const struct src_entry *e = &names->src[h->src + k];
			src[k] = (struct sp_symcache_src){.name = e->name, .file = e->file,
							  .line = e->line, .is_inline = e->is_inline};
		}
		struct sp_symcache_hit ch = {.svma = f->fhits[i].svma, .name = h->name,
					     .offset = h->offset, .nsrc = h->nsrc, .src = src};
		int err = sp_symcache_put(&b, &ch);
		if (err == -ENOMEM)
			break;
		count += !err;
	}
	uint64_t witness = source == SP_SYMCACHE_OWN ? f->witness : f->debug_witness;
	/* Room first (the file is the entries, a header and a CRC): the cache stays within its bound. */
	uint64_t evicted = 0;
	int room = witness && names->cache_dir ? sp_cache_make_room(names->cache_dir, names->cache_max,
								   b.len + 32, &evicted)
					     : -ENOENT;
	names->stats->cache_files_evicted += evicted;
	names->stats->cache_files_too_large += room == -EFBIG;
	if (!room)
		sp_symcache_write(names->cache_dir, f->info.build_id, f->info.build_id_len, witness,
				  (uint8_t)source, &b, count);
	sp_buf_release(&b);
}

/* Name of svma in a proven file, cached per (file, svma). */
int sp_sym_lookup_symbol(struct elf_names *names, struct file_entry *f, uint64_t svma,
			 const struct sym_hit **out)
{
	uint32_t idx;
	if (f->symcache == SYMCACHE_UNREAD) {
		int err = symcache_load(names, f);
		if (err)
			return err;
	}
	if (sp_map_get(&f->cache, svma, &idx)) {
		names->hits[idx].used = true;
		*out = &names->hits[idx];
		return 0;
	}
	if (sp_array_reserve((void **)&names->hits, &names->hits_cap, names->nhits + 1,
			     sizeof(*names->hits)))
		return -ENOMEM;
	struct sym_hit hit = {.used = true};
	int err = sp_sym_elf_symbol(names, f, svma, &hit);
	if (err)
		return err;
	err = sp_sym_lookup_source(names, f, svma, &hit);
	if (err)
		return err;
	/* No ELF symbol (a stripped file whose debug file has none): DWARF's name for it. */
	const struct src_entry *outer = hit.nsrc ? &names->src[hit.src + hit.nsrc - 1] : NULL;
	if (!hit.name && outer && outer->name) {
		hit.name = outer->name;
		hit.offset = 0;
	}
	/* Neither (a Go binary built with -ldflags='-s -w'): Go's own function table. */
	if (!hit.name && !hit.nsrc && (err = sp_sym_go_symbol(names, f, svma, &hit)))
		return err;
	idx = (uint32_t)names->nhits;
	err = add_hit(names, f, svma, &hit);
	if (err)
		return err;
	f->symcache_new = f->symcache == SYMCACHE_READ;
	*out = &names->hits[idx];
	return 0;
}
