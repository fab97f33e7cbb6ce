/* SPDX-License-Identifier: MIT */
/*
 * A small Go function table (.gopclntab) in each layout the reader knows,
 * for the unit tests and the fuzz seeds: two functions, main.a at
 * [TEXT, TEXT + 0x20) in a.go, lines 10 then 11 from +0x10, and main.b at
 * [TEXT + 0x20, TEXT + 0x50) in b.go, line 20.
 */
#ifndef SP_GOPCLNTAB_BUILDER_H
#define SP_GOPCLNTAB_BUILDER_H

#include <stdint.h>
#include <string.h>

#define GOTAB_TEXT 0x401000u
#define GOTAB_MAX 512

struct gotab {
	uint8_t b[GOTAB_MAX];
	size_t len;
};

static inline void gotab_put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void gotab_u32(struct gotab *t, size_t at, uint32_t v)
{
	gotab_put32(t->b + at, v);
}

static inline void gotab_u64(struct gotab *t, size_t at, uint64_t v)
{
	gotab_u32(t, at, (uint32_t)v);
	gotab_u32(t, at + 4, (uint32_t)(v >> 32));
}

static inline size_t gotab_append(struct gotab *t, const void *p, size_t n)
{
	size_t at = t->len;
	memcpy(t->b + at, p, n);
	t->len += n;
	return at;
}

/* version 116, 118 or 120 (enum sp_gopclntab_version); text_start 0 leaves it to the reader. */
static inline void gotab_build(struct gotab *t, unsigned version, uint64_t text_start)
{
	memset(t, 0, sizeof(*t));
	uint32_t magic = version == 116 ? 0xfffffffau : version == 118 ? 0xfffffff0u : 0xfffffff1u;
	size_t nwords = version == 116 ? 7 : 8;
	gotab_u32(t, 0, magic);
	t->b[6] = 1; /* quantum */
	t->b[7] = 8; /* pointer size */
	t->len = 8 + nwords * 8;
	size_t names = gotab_append(t, "main.a\0main.b", 14);
	size_t cutab = t->len;
	uint8_t cu[8] = {0, 0, 0, 0, 5, 0, 0, 0}; /* file 0 at 0, file 1 at 5 */
	gotab_append(t, cu, sizeof(cu));
	size_t filetab = gotab_append(t, "a.go\0b.go", 10);
	/* pc-value tables: (zig-zag value delta, pc delta) pairs from -1, a 0 after the first ends */
	size_t pctab = gotab_append(t, "\0", 1);
	size_t a_line = gotab_append(t, "\x16\x10\x02\x10\x00", 5) - pctab; /* 10, 11 */
	size_t a_file = gotab_append(t, "\x02\x20\x00", 3) - pctab;         /* file 0 */
	size_t b_line = gotab_append(t, "\x2a\x30\x00", 3) - pctab;         /* 20 */
	size_t b_file = gotab_append(t, "\x04\x30\x00", 3) - pctab;         /* file 1 */
	while (t->len % 8)
		t->len++;
	size_t functab = t->len;
	size_t pair = version == 116 ? 16 : 8;
	size_t funcs = functab + 3 * pair;
	size_t fsize = version == 116 ? 48 : version == 118 ? 40 : 44;
	uint32_t entry[3] = {0, 0x20, 0x50};
	uint32_t name_off[2] = {0, 7};
	uint32_t line_off[2] = {(uint32_t)a_line, (uint32_t)b_line};
	uint32_t file_off[2] = {(uint32_t)a_file, (uint32_t)b_file};
	for (size_t i = 0; i < 3; i++) {
		size_t f = funcs + (i < 2 ? i : 0) * fsize;
		if (version == 116) {
			gotab_u64(t, functab + i * 16, GOTAB_TEXT + entry[i]);
			gotab_u64(t, functab + i * 16 + 8, i < 2 ? f - functab : 0);
		} else {
			gotab_u32(t, functab + i * 8, entry[i]);
			gotab_u32(t, functab + i * 8 + 4, i < 2 ? (uint32_t)(f - functab) : 0);
		}
		if (i == 2)
			break;
		size_t p = f;
		if (version == 116) {
			gotab_u64(t, p, GOTAB_TEXT + entry[i]);
			p += 8;
		} else {
			gotab_u32(t, p, entry[i]);
			p += 4;
		}
		gotab_u32(t, p, name_off[i]);
		gotab_u32(t, p + 16, file_off[i]);
		gotab_u32(t, p + 20, line_off[i]);
		gotab_u32(t, p + 28, 0); /* CU: its files from cutab[0] */
	}
	t->len = funcs + 2 * fsize;
	uint64_t off[5] = {names, cutab, filetab, pctab, functab};
	uint64_t w[8] = {2, 2, text_start};
	memcpy(version == 116 ? &w[2] : &w[3], off, sizeof(off));
	for (size_t i = 0; i < nwords; i++)
		gotab_u64(t, 8 + i * 8, w[i]);
}

/*
 * Give main.b (Go 1.18+ tables) an inline tree: main.a inlined at its first
 * 0x10 bytes, called from main.b + 0x18.  Its pc data (the index table) and
 * function data (the tree's offset, 0) are appended to t; the tree, one
 * entry, goes to tree (GOTAB_TREE bytes), which sits at gofunc.
 */
#define GOTAB_TREE 20
static inline void gotab_add_inline(struct gotab *t, unsigned version, uint8_t *tree)
{
	size_t fsize = version == 118 ? 40 : 44;
	size_t b = t->len - fsize;
	uint64_t pctab = 0;
	memcpy(&pctab, t->b + 8 + 6 * 8, 8); /* the header's pctab offset (1.18+) */
	/* the _func's pc data and function data arrays follow it */
	gotab_u32(t, b + 28, 3);            /* npcdata */
	t->b[b + fsize - 1] = 4;             /* nfuncdata */
	size_t arrays = t->len;
	t->len += 7 * 4;
	/* index 0 for [0, 0x10), then -1 */
	size_t index = gotab_append(t, "\x02\x10\x01\x20\x00", 5) - pctab;
	for (size_t i = 0; i < 7; i++)
		gotab_u32(t, arrays + 4 * i, 0xffffffffu);
	gotab_u32(t, arrays + 4 * 2, (uint32_t)index); /* pcdata[PCDATA_InlTreeIndex] */
	gotab_u32(t, arrays + 4 * (3 + 3), 0);         /* funcdata[FUNCDATA_InlTree]: gofunc + 0 */
	memset(tree, 0, GOTAB_TREE);
	if (version == 118) {
		tree[0] = tree[1] = 0xff;       /* parent -1 */
		gotab_put32(tree + 12, 0);      /* name: main.a */
		gotab_put32(tree + 16, 0x18);   /* parentPc */
	} else {
		gotab_put32(tree + 4, 0);
		gotab_put32(tree + 8, 0x18);
	}
}

#endif
