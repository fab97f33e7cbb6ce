/* SPDX-License-Identifier: MIT */
/* Unit tests of Go's function table reader: each layout, lines and files, bounds on hostile tables. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "formats/formats.h"
#include "gopclntab_builder.h"

#include <stdlib.h>
#include <string.h>

static void check_table(unsigned version, uint64_t text_start)
{
	struct gotab g;
	gotab_build(&g, version, text_start);
	struct sp_gopclntab t;
	cr_assert_eq(sp_gopclntab_parse(&t, g.b, g.len, GOTAB_TEXT), 0, "version %u", version);
	cr_assert_eq(t.version, version);
	cr_assert_eq(t.nfunc, 2);
	struct sp_gofunc fn;
	const char *file;
	uint32_t line;

	cr_assert_eq(sp_gopclntab_find(&t, GOTAB_TEXT + 0x4, &fn), 1);
	cr_assert_str_eq(fn.name, "main.a");
	cr_assert_eq(fn.entry, GOTAB_TEXT);
	cr_assert_eq(fn.end, GOTAB_TEXT + 0x20);
	cr_assert(sp_gopclntab_line(&t, &fn, GOTAB_TEXT + 0x4, &file, &line));
	cr_assert_str_eq(file, "a.go");
	cr_assert_eq(line, 10);
	cr_assert(sp_gopclntab_line(&t, &fn, GOTAB_TEXT + 0x1f, &file, &line));
	cr_assert_eq(line, 11);

	cr_assert_eq(sp_gopclntab_find(&t, GOTAB_TEXT + 0x20, &fn), 1);
	cr_assert_str_eq(fn.name, "main.b");
	cr_assert(sp_gopclntab_line(&t, &fn, GOTAB_TEXT + 0x4f, &file, &line));
	cr_assert_str_eq(file, "b.go");
	cr_assert_eq(line, 20);
	/* Outside the function: no line. */
	cr_assert_not(sp_gopclntab_line(&t, &fn, GOTAB_TEXT + 0x50, &file, &line));

	cr_assert_eq(sp_gopclntab_find(&t, GOTAB_TEXT - 1, &fn), 0);
	cr_assert_eq(sp_gopclntab_find(&t, GOTAB_TEXT + 0x50, &fn), 0);
	cr_assert_eq(sp_gopclntab_find(&t, 0, &fn), 0);
	cr_assert_eq(sp_gopclntab_find(&t, UINT64_MAX, &fn), 0);
}

Test(gopclntab, reads_go_1_16)
{
	check_table(SP_GOPCLNTAB_116, 0);
}

Test(gopclntab, reads_go_1_18)
{
	check_table(SP_GOPCLNTAB_118, GOTAB_TEXT);
}

Test(gopclntab, reads_go_1_20)
{
	check_table(SP_GOPCLNTAB_120, GOTAB_TEXT);
}

/* A position-independent binary's header has text start 0 until relocated: .text's address counts. */
Test(gopclntab, text_start_zero_takes_the_text_section)
{
	check_table(SP_GOPCLNTAB_120, 0);
}

Test(gopclntab, rejects_bad_headers)
{
	struct gotab g;
	struct sp_gopclntab t;
	gotab_build(&g, SP_GOPCLNTAB_118, GOTAB_TEXT);
	cr_assert_eq(sp_gopclntab_parse(&t, g.b, 0, 0), -SP_E_ELF_MALFORMED);
	cr_assert_eq(sp_gopclntab_parse(&t, g.b, 20, 0), -SP_E_ELF_MALFORMED);

	/* Go 1.2-1.15's magic, and a big-endian 1.18 one: not read. */
	struct gotab bad = g;
	gotab_u32(&bad, 0, 0xfffffffbu);
	cr_assert_eq(sp_gopclntab_parse(&t, bad.b, bad.len, 0), -SP_E_ELF_MALFORMED);
	bad = g;
	gotab_u32(&bad, 0, 0xf0ffffffu);
	cr_assert_eq(sp_gopclntab_parse(&t, bad.b, bad.len, 0), -SP_E_ELF_MALFORMED);
	bad = g;
	bad.b[7] = 2; /* pointer size */
	cr_assert_eq(sp_gopclntab_parse(&t, bad.b, bad.len, 0), -SP_E_ELF_MALFORMED);
	bad = g;
	bad.b[6] = 3; /* quantum */
	cr_assert_eq(sp_gopclntab_parse(&t, bad.b, bad.len, 0), -SP_E_ELF_MALFORMED);
	/* More functions than the function table has room for. */
	bad = g;
	gotab_u64(&bad, 8, 1000);
	cr_assert_eq(sp_gopclntab_parse(&t, bad.b, bad.len, 0), -SP_E_ELF_MALFORMED);
	bad = g;
	gotab_u64(&bad, 8, 0);
	cr_assert_eq(sp_gopclntab_parse(&t, bad.b, bad.len, 0), -SP_E_ELF_MALFORMED);
	/* A table offset past the end. */
	bad = g;
	gotab_u64(&bad, 8 + 7 * 8, UINT64_MAX - 2);
	cr_assert_eq(sp_gopclntab_parse(&t, bad.b, bad.len, 0), -SP_E_ELF_MALFORMED);
}

/* Offsets inside the records that leave the table: no name, no line, nothing read outside. */
Test(gopclntab, bad_record_offsets_give_nothing)
{
	struct gotab g;
	gotab_build(&g, SP_GOPCLNTAB_118, GOTAB_TEXT);
	struct sp_gopclntab t;
	cr_assert_eq(sp_gopclntab_parse(&t, g.b, g.len, 0), 0);
	struct sp_gofunc fn;
	size_t f0 = t.functab + 3 * 8;
	gotab_u32(&g, f0 + 4, 0x7fffffff);            /* name offset */
	gotab_u32(&g, f0 + 4 + 20, 0xfffffff0u);       /* pc-to-line table */
	gotab_u32(&g, f0 + 4 + 28, 0x3fffffff);        /* CU */
	cr_assert_eq(sp_gopclntab_find(&t, GOTAB_TEXT, &fn), 1);
	cr_assert_null(fn.name);
	const char *file;
	uint32_t line;
	cr_assert_not(sp_gopclntab_line(&t, &fn, GOTAB_TEXT, &file, &line));
	cr_assert_null(file);
	cr_assert_eq(line, 0);
	/* A _func offset past the end: the function is not found. */
	gotab_u32(&g, t.functab + 4, 0x7ffffff0);
	cr_assert_eq(sp_gopclntab_find(&t, GOTAB_TEXT, &fn), 0);
}

/* A pc-value table without its end marker stops at the table's end. */
Test(gopclntab, unterminated_pc_value_table_stops_at_the_end)
{
	struct gotab g;
	gotab_build(&g, SP_GOPCLNTAB_120, GOTAB_TEXT);
	struct sp_gopclntab t;
	/* An exact-size copy: a read past its end is caught by the sanitizers. */
	uint8_t *copy = malloc(g.len);
	memcpy(copy, g.b, g.len);
	cr_assert_eq(sp_gopclntab_parse(&t, copy, g.len, 0), 0);
	struct sp_gofunc fn;
	cr_assert_eq(sp_gopclntab_find(&t, GOTAB_TEXT + 0x20, &fn), 1);
	/* Point main.b's line table at its last byte: a varint running off the end. */
	size_t f1 = t.functab + 3 * 8 + 44;
	copy[g.len - 1] = 0x80;
	uint32_t last = (uint32_t)(g.len - 1 - t.pctab);
	for (int i = 0; i < 4; i++)
		copy[f1 + 4 + 20 + i] = (uint8_t)(last >> (8 * i));
	cr_assert_eq(sp_gopclntab_find(&t, GOTAB_TEXT + 0x20, &fn), 1);
	const char *file;
	uint32_t line;
	sp_gopclntab_line(&t, &fn, GOTAB_TEXT + 0x4f, &file, &line);
	cr_assert_eq(line, 0);
	free(copy);
}

/* Every prefix of a sound table parses or fails cleanly, and lookups stay inside it. */
Test(gopclntab, every_truncation_stays_in_bounds)
{
	static const unsigned versions[] = {SP_GOPCLNTAB_116, SP_GOPCLNTAB_118, SP_GOPCLNTAB_120};
	for (size_t v = 0; v < 3; v++) {
		struct gotab g;
		gotab_build(&g, versions[v], GOTAB_TEXT);
		for (size_t n = 0; n <= g.len; n++) {
			uint8_t *copy = malloc(n ? n : 1);
			memcpy(copy, g.b, n);
			struct sp_gopclntab t;
			if (!sp_gopclntab_parse(&t, copy, n, GOTAB_TEXT)) {
				for (uint64_t pc = GOTAB_TEXT; pc < GOTAB_TEXT + 0x58; pc += 4) {
					struct sp_gofunc fn;
					const char *file;
					uint32_t line;
					if (sp_gopclntab_find(&t, pc, &fn))
						sp_gopclntab_line(&t, &fn, pc, &file, &line);
				}
			}
			free(copy);
		}
	}
}

static void check_inline(unsigned version)
{
	struct gotab g;
	uint8_t tree[GOTAB_TREE];
	gotab_build(&g, version, GOTAB_TEXT);
	gotab_add_inline(&g, version, tree);
	struct sp_gopclntab t;
	cr_assert_eq(sp_gopclntab_parse(&t, g.b, g.len, 0), 0);
	struct sp_gofuncdata fd = {.data = tree, .len = sizeof(tree), .addr = 0x480000,
				   .gofunc = 0x480000};
	struct sp_gofunc fn;
	struct sp_goinline chain[4];
	cr_assert_eq(sp_gopclntab_find(&t, GOTAB_TEXT + 0x24, &fn), 1);
	size_t n = sp_gopclntab_inline(&t, &fn, GOTAB_TEXT + 0x24, &fd, chain, 4);
	cr_assert_eq(n, 2);
	cr_assert_str_eq(chain[0].name, "main.a");
	cr_assert_str_eq(chain[1].name, "main.b");
	cr_assert_str_eq(chain[1].file, "b.go");
	cr_assert_eq(chain[1].line, 20);
	/* past the inlined code, and without the function data: main.b alone */
	cr_assert_eq(sp_gopclntab_inline(&t, &fn, GOTAB_TEXT + 0x34, &fd, chain, 4), 1);
	cr_assert_eq(sp_gopclntab_inline(&t, &fn, GOTAB_TEXT + 0x24, NULL, chain, 4), 1);
	cr_assert_str_eq(chain[0].name, "main.b");
	/* room for one: the function itself */
	cr_assert_eq(sp_gopclntab_inline(&t, &fn, GOTAB_TEXT + 0x24, &fd, chain, 1), 1);
	cr_assert_str_eq(chain[0].name, "main.b");
	/* a tree offset past the section: no tree */
	fd.gofunc = 0x480000 + sizeof(tree);
	cr_assert_eq(sp_gopclntab_inline(&t, &fn, GOTAB_TEXT + 0x24, &fd, chain, 4), 1);
	/* main.a has no function data */
	fd.gofunc = 0x480000;
	cr_assert_eq(sp_gopclntab_find(&t, GOTAB_TEXT + 0x4, &fn), 1);
	cr_assert_eq(sp_gopclntab_inline(&t, &fn, GOTAB_TEXT + 0x4, &fd, chain, 4), 1);
}

Test(gopclntab, inline_tree_go_1_18)
{
	check_inline(SP_GOPCLNTAB_118);
}

Test(gopclntab, inline_tree_go_1_20)
{
	check_inline(SP_GOPCLNTAB_120);
}

/* moduledata: the table's address, its names' address, then at the rodata field .rodata's address and gofunc. */
Test(gopclntab, gofunc_from_moduledata)
{
	struct gotab g;
	gotab_build(&g, SP_GOPCLNTAB_120, GOTAB_TEXT);
	struct sp_gopclntab t;
	cr_assert_eq(sp_gopclntab_parse(&t, g.b, g.len, 0), 0);
	uint64_t md[64] = {0};
	md[3] = 0x4b9d40;
	md[4] = 0x4b9d40 + t.funcnames;
	md[3 + 312 / 8] = 0x482000;
	md[3 + 312 / 8 + 1] = 0x4a0860;
	uint64_t gofunc = 0;
	cr_assert(sp_gopclntab_gofunc(&t, 0x4b9d40, (const uint8_t *)md, sizeof(md), 0x482000,
				      &gofunc));
	cr_assert_eq(gofunc, 0x4a0860);
	cr_assert_not(sp_gopclntab_gofunc(&t, 0x4b9d40, (const uint8_t *)md, sizeof(md), 0x483000,
					  &gofunc), "another .rodata address");
	cr_assert_not(sp_gopclntab_gofunc(&t, 0x4b9d40, (const uint8_t *)md, 8 * 40, 0x482000,
					  &gofunc), "the record cut short");
	t.version = SP_GOPCLNTAB_118; /* its rodata field is two words earlier */
	cr_assert_not(sp_gopclntab_gofunc(&t, 0x4b9d40, (const uint8_t *)md, sizeof(md), 0x482000,
					  &gofunc));
}
