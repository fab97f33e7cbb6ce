/* SPDX-License-Identifier: MIT */
/* Names from DWARF: the inline chain and source line of an address. */
#include "symbols/symbolizer.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * A function DIE's name, looked up through DW_AT_abstract_origin and
 * DW_AT_specification, so an inlined instance gets its abstract function's
 * name: a C++ or Rust (legacy or v0) linkage name demangled (qualified, as
 * ELF symbols are shown; mangled with no_demangle), else DW_AT_name.  Rust's
 * standard library is built with v0 names: without them its inlined functions
 * were bare ("wrapping_mul", "catch_unwind<...>").  Other linkage names are C
 * asm labels (glibc's "__GI___mmap64" for __mmap64): the source's name reads
 * better.  NULL when the DIE has no name.
 */
static int die_function_name(struct elf_names *names, Dwarf_Die *die, const char **out)
{
	Dwarf_Attribute attr;
	const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
	if (name && (!strncmp(name, "_Z", 2) || !strncmp(name, "_R", 2))) {
		char *dem = names->opts->no_demangle ? NULL : sp_demangle(name);
		if (dem) {
			*out = sp_arena_strndup(names->strings, dem, strlen(dem));
			free(dem);
			return *out ? 0 : -ENOMEM;
		}
		if (names->opts->no_demangle) {
			*out = name;
			return 0;
		}
	}
	*out = dwarf_diename(die);
	if (!*out)
		*out = name;
	return 0;
}

/* Where an inlined call sits in its caller: DW_AT_call_file in its CU's file table. */
static void call_site(Dwarf_Die *inl, const char **file, uint32_t *line)
{
	Dwarf_Attribute attr;
	Dwarf_Word idx, ln;
	Dwarf_Die cu;
	Dwarf_Files *files;
	size_t nfiles;
	*file = NULL;
	*line = dwarf_formudata(dwarf_attr(inl, DW_AT_call_line, &attr), &ln) || ln > UINT32_MAX
			? 0 : (uint32_t)ln;
	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_file, &attr), &idx) ||
	    !dwarf_diecu(inl, &cu, NULL, NULL) || dwarf_getsrcfiles(&cu, &files, &nfiles) ||
	    idx >= nfiles)
		return;
	const char *name = dwarf_filesrc(files, idx, NULL, NULL);
	/* libdw names DWARF 4's unused entry 0 "???". */
	*file = name && strcmp(name, "???") ? name : NULL;
}

int sp_sym_push_src(struct elf_names *names, const struct src_entry *e)
{
	if (sp_array_reserve((void **)&names->src, &names->src_cap, names->nsrc + 1,
			     sizeof(*names->src)))
		return -ENOMEM;
	names->src[names->nsrc++] = *e;
	return 0;
}

static int collect_function(Dwarf_Die *die, void *arg)
{
	struct cu_funcs *c = arg;
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (hi <= lo)
			continue;
		if (sp_array_reserve((void **)&c->r, &c->cap, c->n + 1, sizeof(*c->r))) {
			c->err = -ENOMEM;
			return DWARF_CB_ABORT;
		}
		c->r[c->n++] = (struct fn_range){.lo = lo, .hi = hi, .die = *die};
	}
	return DWARF_CB_OK;
}

static int by_lo(const void *pa, const void *pb)
{
	const struct fn_range *a = pa, *b = pb;
	return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* How far back a lookup looks past ranges that start later but end sooner. */
#define FUNCTION_SCAN 8

/*
 * The function of cu whose code holds pc, or NULL.  Why not dwarf_getscopes
 * alone: it walks the whole CU for every address, and dwarf_getscopes_die
 * walks it again; on libpython's big CUs that made 2300 frames take 2.3 s.
 * A CU's function ranges are collected once (dwarf_getfuncs) and searched.
 */
static int find_function(struct elf_names *names, struct file_entry *f, Dwarf_Die *cu,
			 Dwarf_Addr pc, const struct fn_range **out)
{
	*out = NULL;
	uint64_t key = dwarf_dieoffset(cu);
	uint32_t idx;
	if (!sp_map_get(&f->cu_index, key, &idx)) {
		if (sp_array_reserve((void **)&names->cus, &names->cus_cap, names->ncus + 1,
				     sizeof(*names->cus)))
			return -ENOMEM;
		struct cu_funcs *c = &names->cus[names->ncus];
		*c = (struct cu_funcs){0};
		dwarf_getfuncs(cu, collect_function, c, 0);
		if (c->err) {
			free(c->r);
			return c->err;
		}
		if (c->n) /* a CU of no function (assembly) collected none: c->r is NULL */
			qsort(c->r, c->n, sizeof(*c->r), by_lo);
		idx = (uint32_t)names->ncus;
		int err = sp_map_put(&f->cu_index, key, idx);
		if (err) {
			free(c->r);
			return err;
		}
		names->ncus++;
	}
	const struct cu_funcs *c = &names->cus[idx];
	size_t lo = sp_partition_point(c->n, i, c->r[i].lo <= pc); /* first range starting above pc */
	for (size_t i = lo, seen = 0; i-- > 0 && seen < FUNCTION_SCAN; seen++)
		if (pc < c->r[i].hi) {
			*out = &c->r[i];
			break;
		}
	return 0;
}

/* Deeper than any compiler nests scopes; a bound against hostile DWARF. */
#define MAX_SCOPE_DEPTH 512

/*
 * The DIEs nesting pc inside the function fn, innermost first, fn last, into
 * *out (malloc'd): at each level the child scope (lexical block, inlined
 * function, ...) whose ranges hold pc.  Returns the count or -ENOMEM.
 */
static int scopes_in_function(const Dwarf_Die *fn, Dwarf_Addr pc, Dwarf_Die **out)
{
	size_t n = 0, cap = 0;
	Dwarf_Die *v = NULL;
	if (sp_array_reserve((void **)&v, &cap, 16, sizeof(*v)))
		return -ENOMEM;
	v[n++] = *fn;
	while (n < MAX_SCOPE_DEPTH) {
		Dwarf_Die child;
		bool deeper = false;
		if (dwarf_child(&v[n - 1], &child) != 0)
			break;
		do {
			switch (dwarf_tag(&child)) {
			case DW_TAG_inlined_subroutine:
			case DW_TAG_lexical_block:
			case DW_TAG_subprogram:
			case DW_TAG_try_block:
			case DW_TAG_catch_block:
			case DW_TAG_with_stmt:
				deeper = dwarf_haspc(&child, pc) > 0;
				break;
			default:
				break;
			}
		} while (!deeper && dwarf_siblingof(&child, &child) == 0);
		if (!deeper)
			break;
		if (sp_array_reserve((void **)&v, &cap, n + 1, sizeof(*v))) {
			free(v);
			return -ENOMEM;
		}
		v[n++] = child;
	}
	for (size_t i = 0; i < n / 2; i++) {
		Dwarf_Die t = v[i];
		v[i] = v[n - 1 - i];
		v[n - 1 - i] = t;
	}
	*out = v;
	return (int)n;
}

/*
 * The functions DWARF places at svma, innermost first, into hit->src: each
 * DW_TAG_inlined_subroutine scope holding the address, then the
 * DW_TAG_subprogram that holds them (eu-addr2line -i's model).  The
 * innermost gets the line table's position of the address; each outer one
 * the call site of the inlined function it holds.  When no subprogram holds
 * the address, a last entry without a name keeps the position for the ELF
 * symbol.  A module without DWARF leaves hit->nsrc 0.  0 or -ENOMEM.
 */
#define CU_RANGES_MAX (4u << 20) /* CU ranges indexed per file */

static int by_range_lo(const void *pa, const void *pb)
{
	const struct cu_range *a = pa, *b = pb;
	return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/*
 * Index every CU of f by its address ranges, once.  Why: libdw 0.188 finds
 * an address's CU only through .debug_aranges (dwarf_addrdie), which clang
 * (DWARF 4 and 5) and Go do not write; without it every address of such a
 * file had no CU, so no inline frames and no lines.
 */
static int build_cu_ranges(struct file_entry *f)
{
	f->cu_ranges_built = true;
	size_t cap = 0;
	Dwarf_Die *cu = NULL;
	Dwarf_Addr bias;
	while ((cu = dwfl_module_nextcu(f->mod, cu, &bias)) && f->ncu_ranges < CU_RANGES_MAX) {
		ptrdiff_t off = 0;
		Dwarf_Addr base, lo, hi;
		while ((off = dwarf_ranges(cu, off, &base, &lo, &hi)) > 0 &&
		       f->ncu_ranges < CU_RANGES_MAX) {
			if (hi <= lo)
				continue;
			if (sp_array_reserve((void **)&f->cu_ranges, &cap, f->ncu_ranges + 1,
					     sizeof(*f->cu_ranges)))
				return -ENOMEM;
			f->cu_ranges[f->ncu_ranges++] = (struct cu_range){lo, hi, cu, bias};
		}
	}
	if (f->ncu_ranges)
		qsort(f->cu_ranges, f->ncu_ranges, sizeof(*f->cu_ranges), by_range_lo);
	return 0;
}

/* The CU whose ranges hold svma (a file without .debug_aranges), or NULL. */
static int cu_by_ranges(struct file_entry *f, uint64_t svma, Dwarf_Die **cu, Dwarf_Addr *bias)
{
	*cu = NULL;
	if (!f->cu_ranges_built) {
		int err = build_cu_ranges(f);
		if (err)
			return err;
	}
	/* The first range starting above svma. */
	size_t lo = sp_partition_point(f->ncu_ranges, i,
				       f->cu_ranges[i].lo + f->cu_ranges[i].bias <= svma);
	/* Ranges of different CUs do not overlap; a few back cover nested ones. */
	for (size_t i = lo, seen = 0; i-- > 0 && seen < FUNCTION_SCAN; seen++) {
		const struct cu_range *r = &f->cu_ranges[i];
		if (svma >= r->lo + r->bias && svma < r->hi + r->bias) {
			*cu = r->cu;
			*bias = r->bias;
			break;
		}
	}
	return 0;
}

int sp_sym_lookup_source(struct elf_names *names, struct file_entry *f, uint64_t svma,
			 struct sym_hit *hit)
{
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu = dwfl_module_addrdie(f->mod, svma, &bias);
	if (!cu) {
		int err = cu_by_ranges(f, svma, &cu, &bias);
		if (err)
			return err;
	}
	if (!cu || svma < bias)
		return 0;
	Dwarf_Addr pc = svma - bias;
	const struct fn_range *fn;
	int err = find_function(names, f, cu, pc, &fn);
	if (err)
		return err;
	Dwarf_Die *scopes = NULL;
	int n;
	if (fn) {
		n = scopes_in_function(&fn->die, pc, &scopes);
		if (n < 0)
			return n;
	} else {
		/*
		 * No function of the CU holds pc.  libdwfl's address ranges have
		 * no gaps: an address past a CU's end (crt1.o's _start, with no
		 * DWARF) still finds that CU, and its line table then answers
		 * with the CU's last line, so the CU's own ranges decide.  Code
		 * the CU does hold (assembly) is looked up the slow way:
		 * dwarf_getscopes follows an innermost inlined function to its
		 * abstract definition, so the DIEs that really nest it are the
		 * parents (dwarf_getscopes_die) of its innermost scope.
		 */
		if ((dwarf_hasattr(cu, DW_AT_ranges) || dwarf_hasattr(cu, DW_AT_low_pc)) &&
		    dwarf_haspc(cu, pc) <= 0)
			return 0;
		Dwarf_Die *inner = NULL;
		n = dwarf_getscopes(cu, pc, &inner);
		if (n > 0)
			n = dwarf_getscopes_die(&inner[0], &scopes);
		free(inner);
	}
	struct src_entry e = {0};
	Dwarf_Line *dl = dwarf_getsrc_die(cu, pc);
	int lineno;
	if (dl) {
		e.file = dwarf_linesrc(dl, NULL, NULL);
		e.line = !dwarf_lineno(dl, &lineno) && lineno > 0 ? (uint32_t)lineno : 0;
	}
	size_t start = names->nsrc;
	bool closed = false;
	for (int i = 0; i < n && !closed && !err; i++) {
		int tag = dwarf_tag(&scopes[i]);
		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
			continue;
		err = die_function_name(names, &scopes[i], &e.name);
		if (err)
			break;
		e.is_inline = tag == DW_TAG_inlined_subroutine;
		if (e.is_inline && !e.name)
			e.name = "??"; /* what addr2line prints for a function without a name */
		closed = !e.is_inline;
		err = sp_sym_push_src(names, &e);
		if (e.is_inline)
			call_site(&scopes[i], &e.file, &e.line);
	}
	free(scopes);
	if (!err && !closed && (e.file || names->nsrc > start)) {
		e.name = NULL;
		e.is_inline = false;
		err = sp_sym_push_src(names, &e);
	}
	if (err) {
		names->nsrc = start;
		return err;
	}
	hit->src = (uint32_t)start;
	hit->nsrc = (uint32_t)(names->nsrc - start);
	return 0;
}
