/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: Go's function table reader over an untrusted .gopclntab, asked about the pcs it lists. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/formats.h"
#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define TEXT 0x401000u

static bool inside(const uint8_t *base, size_t len, const char *s)
{
	return (const uint8_t *)s >= base && (const uint8_t *)s < base + len &&
	       memchr(s, '\0', len - (size_t)((const uint8_t *)s - base));
}

static void ask(const struct sp_gopclntab *t, const uint8_t *copy, size_t size, uint64_t pc)
{
	struct sp_gofunc fn;
	if (!sp_gopclntab_find(t, pc, &fn))
		return;
	CHECK(fn.entry <= pc && pc < fn.end);
	CHECK(!fn.name || inside(copy, size, fn.name));
	const char *file;
	uint32_t line;
	bool known = sp_gopclntab_line(t, &fn, pc, &file, &line);
	CHECK(known == (file || line));
	CHECK(!file || inside(copy, size, file));
	/* The input's own bytes stand for the section of the inline trees too. */
	struct sp_gofuncdata fd = {.data = copy, .len = size, .addr = TEXT, .gofunc = TEXT};
	struct sp_goinline chain[8];
	size_t n = sp_gopclntab_inline(t, &fn, pc, &fd, chain, 8);
	CHECK(n >= 1 && n <= 8 && chain[n - 1].name == fn.name);
	for (size_t i = 0; i < n; i++)
		CHECK((!chain[i].name || inside(copy, size, chain[i].name)) &&
		      (!chain[i].file || inside(copy, size, chain[i].file)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* An exact-size copy, so that a read past the end is caught. */
	uint8_t *copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	struct sp_gopclntab t;
	if (!sp_gopclntab_parse(&t, copy, size, TEXT)) {
		CHECK(t.functab < size && t.nfunc > 0);
		uint64_t gofunc;
		(void)sp_gopclntab_gofunc(&t, TEXT, copy, size, TEXT, &gofunc);
		static const uint64_t fixed[] = {0, TEXT, TEXT + 1, TEXT + 0x20, TEXT + 0x4f,
						 UINT64_MAX};
		for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
			ask(&t, copy, size, fixed[i]);
		/* The pcs the function table lists, and the byte before each. */
		size_t pair = t.version == SP_GOPCLNTAB_116 ? 2u * t.ptr_size : 8;
		for (uint64_t i = 0; i <= t.nfunc && i < 64; i++) {
			uint64_t at = t.functab + i * pair, pc = 0;
			if (at + 4 > size)
				break;
			memcpy(&pc, copy + at, t.version == SP_GOPCLNTAB_116 ? t.ptr_size : 4);
			pc += t.version == SP_GOPCLNTAB_116 ? 0 : t.text_start;
			ask(&t, copy, size, pc);
			ask(&t, copy, size, pc - 1);
		}
	}
	free(copy);
	return 0;
}
