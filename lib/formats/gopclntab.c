/* SPDX-License-Identifier: MIT */
/*
 * Go's function table (.gopclntab): the names, source files and lines Go
 * keeps in a binary stripped of its ELF symbols and DWARF.  The table is the
 * binary's, so every offset in it is checked against its length.
 */
#include "formats/formats.h"

#include <errno.h>
#include <string.h>

#define MAGIC_116 0xfffffffau
#define MAGIC_118 0xfffffff0u
#define MAGIC_120 0xfffffff1u

/* The header's fields before the first word-sized one: magic, two pads, quantum, pointer size. */
#define HEADER_FIXED 8

/* Steps of one pc-value table walked at most (each takes two bytes or more anyway). */
#define PCVALUE_MAX_STEPS (1u << 24)

static bool read_u32(const struct sp_gopclntab *t, uint64_t off, uint32_t *v)
{
	if (off > t->len || t->len - off < 4)
		return false;
	const uint8_t *p = t->data + off;
	*v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	return true;
}

/* A little-endian word of the table's pointer size (4 or 8 bytes). */
static bool read_word(const struct sp_gopclntab *t, uint64_t off, uint64_t *v)
{
	uint32_t lo, hi = 0;
	if (!read_u32(t, off, &lo) || (t->ptr_size == 8 && !read_u32(t, off + 4, &hi)))
		return false;
	*v = (uint64_t)hi << 32 | lo;
	return true;
}

/* Offset base + off within the table, or false when it leaves it. */
static bool table_offset(const struct sp_gopclntab *t, uint64_t base, uint64_t off, uint64_t *out)
{
	if (off > t->len || base > t->len - off)
		return false;
	*out = base + off;
	return true;
}

int sp_gopclntab_parse(struct sp_gopclntab *t, const uint8_t *data, size_t len, uint64_t text_addr)
{
	memset(t, 0, sizeof(*t));
	t->data = data;
	t->len = len;
	uint32_t magic;
	if (len < HEADER_FIXED || !read_u32(t, 0, &magic) || data[4] || data[5])
		return -SP_E_ELF_MALFORMED;
	if (magic == MAGIC_116)
		t->version = SP_GOPCLNTAB_116;
	else if (magic == MAGIC_118)
		t->version = SP_GOPCLNTAB_118;
	else if (magic == MAGIC_120)
		t->version = SP_GOPCLNTAB_120;
	else
		return -SP_E_ELF_MALFORMED;
	t->quantum = data[6];
	t->ptr_size = data[7];
	if ((t->quantum != 1 && t->quantum != 2 && t->quantum != 4) ||
	    (t->ptr_size != 4 && t->ptr_size != 8))
		return -SP_E_ELF_MALFORMED;
	/* nfunc, nfiles, [textStart,] funcname, cu, filetab, pctab, pcln offsets */
	uint64_t w[8];
	size_t nw = t->version == SP_GOPCLNTAB_116 ? 7 : 8;
	for (size_t i = 0; i < nw; i++)
		if (!read_word(t, HEADER_FIXED + i * t->ptr_size, &w[i]))
			return -SP_E_ELF_MALFORMED;
	const uint64_t *off = t->version == SP_GOPCLNTAB_116 ? &w[2] : &w[3];
	t->nfunc = w[0];
	t->text_start = t->version == SP_GOPCLNTAB_116 ? 0 : w[2] ? w[2] : text_addr;
	t->funcnames = off[0];
	t->cutab = off[1];
	t->filetab = off[2];
	t->pctab = off[3];
	t->functab = off[4];
	for (size_t i = 0; i < 5; i++)
		if (off[i] >= len)
			return -SP_E_ELF_MALFORMED;
	/* The function table: nfunc + 1 (entry, _func offset) pairs, the last one the end of text. */
	uint64_t pair = t->version == SP_GOPCLNTAB_116 ? 2ull * t->ptr_size : 8;
	if (t->nfunc == 0 || t->nfunc >= (len - t->functab) / pair)
		return -SP_E_ELF_MALFORMED;
	return 0;
}

/* Entry i of the function table (i <= nfunc): its pc and its _func's offset in the table. */
static bool functab_entry(const struct sp_gopclntab *t, uint64_t i, uint64_t *pc, uint64_t *func)
{
	if (i > t->nfunc)
		return false;
	if (t->version == SP_GOPCLNTAB_116) {
		uint64_t at = t->functab + i * 2 * t->ptr_size, f;
		if (!read_word(t, at, pc) || !read_word(t, at + t->ptr_size, &f))
			return false;
		return table_offset(t, t->functab, f, func);
	}
	uint32_t e, f;
	if (!read_u32(t, t->functab + i * 8, &e) || !read_u32(t, t->functab + i * 8 + 4, &f))
		return false;
	*pc = t->text_start + e;
	return table_offset(t, t->functab, f, func);
}

/* A NUL-terminated string at base + off, or NULL. */
static const char *table_string(const struct sp_gopclntab *t, uint64_t base, uint64_t off)
{
	uint64_t at;
	if (!table_offset(t, base, off, &at) || at >= t->len ||
	    !memchr(t->data + at, '\0', t->len - at))
		return NULL;
	return (const char *)t->data + at;
}

int sp_gopclntab_find(const struct sp_gopclntab *t, uint64_t pc, struct sp_gofunc *out)
{
	memset(out, 0, sizeof(*out));
	uint64_t lo = 0, hi = t->nfunc, first, last, func;
	if (!functab_entry(t, 0, &first, &func) || !functab_entry(t, t->nfunc, &last, &func) ||
	    pc < first || pc >= last)
		return 0;
	/* The last entry at or below pc: entries are sorted in a sound table (at most 64 steps). */
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2, e;
		if (!functab_entry(t, mid, &e, &func))
			return 0;
		if (e <= pc)
			lo = mid;
		else
			hi = mid;
	}
	uint64_t entry, end, next;
	if (!functab_entry(t, lo, &entry, &func) || !functab_entry(t, lo + 1, &end, &next) ||
	    pc < entry || pc >= end)
		return 0;
	/* The _func: after the entry (a word in 1.16, a 32-bit offset since), name, args, ... */
	uint64_t f = func + (t->version == SP_GOPCLNTAB_116 ? t->ptr_size : 4);
	uint32_t name_off, pcfile, pcln, cu;
	if (!read_u32(t, f, &name_off) || !read_u32(t, f + 16, &pcfile) ||
	    !read_u32(t, f + 20, &pcln) || !read_u32(t, f + 28, &cu))
		return 0;
	out->entry = entry;
	out->end = end;
	out->func = func;
	out->name = table_string(t, t->funcnames, name_off);
	out->pcfile = pcfile;
	out->pcln = pcln;
	out->cu = cu;
	return 1;
}

/* A varint of the pc-value tables (LEB128, 32 bits), or false past the table's end. */
static bool read_varint(const struct sp_gopclntab *t, uint64_t *at, uint32_t *v)
{
	uint32_t r = 0;
	for (unsigned shift = 0; shift < 35; shift += 7) {
		if (*at >= t->len)
			return false;
		uint8_t b = t->data[(*at)++];
		r |= (uint32_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = r;
			return true;
		}
	}
	return false;
}

/*
 * The value a pc-value table (at pctab + off) gives pc in the function
 * starting at entry: pairs of a zig-zag value delta and a pc delta (in
 * instruction quanta), starting from -1 at the entry, a zero value delta
 * after the first pair ending the table.  False when pc is past its end.
 */
static bool pc_value(const struct sp_gopclntab *t, uint32_t off, uint64_t entry, uint64_t pc,
		     int32_t *out)
{
	uint64_t at;
	if (!off || !table_offset(t, t->pctab, off, &at))
		return false;
	int32_t val = -1;
	uint64_t cur = entry;
	for (uint32_t step = 0; step < PCVALUE_MAX_STEPS; step++) {
		uint32_t uv, pcd;
		if (!read_varint(t, &at, &uv) || (uv == 0 && step > 0) || !read_varint(t, &at, &pcd))
			return false;
		int32_t delta = uv & 1 ? ~(int32_t)(uv >> 1) : (int32_t)(uv >> 1);
		val = (int32_t)((uint32_t)val + (uint32_t)delta);
		uint64_t adv = (uint64_t)pcd * t->quantum;
		if (adv > UINT64_MAX - cur)
			return false;
		cur += adv;
		if (pc < cur) {
			*out = val;
			return true;
		}
	}
	return false;
}

bool sp_gopclntab_line(const struct sp_gopclntab *t, const struct sp_gofunc *fn, uint64_t pc,
		       const char **file, uint32_t *line)
{
	*file = NULL;
	*line = 0;
	if (pc < fn->entry || pc >= fn->end)
		return false;
	int32_t v;
	if (pc_value(t, fn->pcln, fn->entry, pc, &v) && v > 0)
		*line = (uint32_t)v;
	uint32_t name_off;
	/* The file: an index into the function's compilation unit's slice of the CU table. */
	if (pc_value(t, fn->pcfile, fn->entry, pc, &v) && v >= 0 &&
	    read_u32(t, t->cutab + 4 * ((uint64_t)fn->cu + (uint32_t)v), &name_off) &&
	    name_off != UINT32_MAX)
		*file = table_string(t, t->filetab, name_off);
	return *file || *line;
}

/* moduledata's rodata field: after 37 words in Go 1.18-1.19, 39 since 1.20 (coverage counters). */
#define MODULEDATA_RODATA_118 296
#define MODULEDATA_RODATA_120 312

bool sp_gopclntab_gofunc(const struct sp_gopclntab *t, uint64_t table_addr, const uint8_t *data,
			 size_t len, uint64_t rodata_addr, uint64_t *gofunc)
{
	if (t->ptr_size != 8 || t->version == SP_GOPCLNTAB_116)
		return false;
	size_t at_rodata = t->version == SP_GOPCLNTAB_118 ? MODULEDATA_RODATA_118
							  : MODULEDATA_RODATA_120;
	struct sp_gopclntab view = {.data = data, .len = len, .ptr_size = 8};
	for (uint64_t off = 0; len >= 16 && off <= len - 16; off += 8) {
		uint64_t w, names, rodata;
		if (!read_word(&view, off, &w) || w != table_addr ||
		    !read_word(&view, off + 8, &names) || names != table_addr + t->funcnames ||
		    !read_word(&view, off + at_rodata, &rodata) || rodata != rodata_addr ||
		    !read_word(&view, off + at_rodata + 8, gofunc))
			continue;
		return true;
	}
	return false;
}

/* PCDATA_InlTreeIndex and FUNCDATA_InlTree (the Go runtime's abi/symtab.go). */
#define PCDATA_INL_TREE_INDEX 2
#define FUNCDATA_INL_TREE 3

/* The inline tree of fn: its bytes in fd (to the section's end), or NULL. */
static const uint8_t *inline_tree(const struct sp_gopclntab *t, const struct sp_gofunc *fn,
				  const struct sp_gofuncdata *fd, uint32_t *index_table, size_t *len)
{
	if (!fd || t->version == SP_GOPCLNTAB_116)
		return NULL;
	uint64_t size = t->version == SP_GOPCLNTAB_118 ? 40 : 44;
	uint32_t npcdata, off;
	if (!read_u32(t, fn->func + 28, &npcdata) || fn->func + size > t->len)
		return NULL;
	uint8_t nfuncdata = t->data[fn->func + size - 1];
	uint64_t pcdata = fn->func + size, funcdata = pcdata + 4ull * npcdata;
	if (npcdata <= PCDATA_INL_TREE_INDEX || nfuncdata <= FUNCDATA_INL_TREE ||
	    !read_u32(t, pcdata + 4 * PCDATA_INL_TREE_INDEX, index_table) ||
	    !read_u32(t, funcdata + 4 * FUNCDATA_INL_TREE, &off) || off == UINT32_MAX)
		return NULL;
	uint64_t at = fd->gofunc + off;
	if (at < fd->gofunc || at < fd->addr || at - fd->addr >= fd->len)
		return NULL;
	*len = fd->len - (size_t)(at - fd->addr);
	return fd->data + (at - fd->addr);
}

size_t sp_gopclntab_inline(const struct sp_gopclntab *t, const struct sp_gofunc *fn, uint64_t pc,
			   const struct sp_gofuncdata *fd, struct sp_goinline *out, size_t max)
{
	if (!max)
		return 0;
	uint32_t index_table = 0;
	size_t tree_len = 0, n = 0;
	const uint8_t *tree = inline_tree(t, fn, fd, &index_table, &tree_len);
	/* An entry: parent, funcID, file, line, name, parentPc (1.18); funcID, name, parentPc, startLine (1.20). */
	size_t es = t->version == SP_GOPCLNTAB_118 ? 20 : 16;
	size_t name_at = t->version == SP_GOPCLNTAB_118 ? 12 : 4;
	struct sp_gopclntab view = {.data = tree, .len = tree_len, .ptr_size = 8};
	int32_t ix;
	while (tree && n + 1 < max && pc_value(t, index_table, fn->entry, pc, &ix) && ix >= 0 &&
	       (uint64_t)ix < tree_len / es) {
		uint32_t name_off, parent_pc;
		if (!read_u32(&view, (uint64_t)ix * es + name_at, &name_off) ||
		    !read_u32(&view, (uint64_t)ix * es + name_at + 4, &parent_pc))
			break;
		out[n].name = table_string(t, t->funcnames, name_off);
		sp_gopclntab_line(t, fn, pc, &out[n].file, &out[n].line);
		n++;
		/* The caller's position: an instruction of its own at the call site. */
		if (parent_pc >= fn->end - fn->entry)
			break;
		pc = fn->entry + parent_pc;
	}
	out[n].name = fn->name;
	sp_gopclntab_line(t, fn, pc, &out[n].file, &out[n].line);
	return n + 1;
}
