/* SPDX-License-Identifier: MIT */
/* Builds jitdump files for the unit tests (Linux tools/perf/Documentation/jitdump-specification.txt). */
#ifndef SP_TEST_JITDUMP_BUILDER_H
#define SP_TEST_JITDUMP_BUILDER_H

#include <criterion/criterion.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct jd_bytes {
	uint8_t *p;
	size_t len, cap;
};

static inline void jd_put(struct jd_bytes *b, const void *v, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 256;
		b->p = realloc(b->p, b->cap);
		cr_assert_not_null(b->p);
	}
	memcpy(b->p + b->len, v, n);
	b->len += n;
}

static inline void jd_u32(struct jd_bytes *b, uint32_t v) { jd_put(b, &v, 4); }
static inline void jd_u64(struct jd_bytes *b, uint64_t v) { jd_put(b, &v, 8); }

/* The file header: magic, version, its size, e_machine, pad, pid, timestamp, flags. */
static inline void jd_header(struct jd_bytes *b, uint32_t magic, uint32_t version)
{
	jd_u32(b, magic);
	jd_u32(b, version);
	jd_u32(b, 40);
	jd_u32(b, 62);
	jd_u32(b, 0);
	jd_u32(b, 4242);
	jd_u64(b, 1);
	jd_u64(b, 0);
}

/* JIT_CODE_LOAD of name at [addr, addr + size), with size code bytes of 0xcc. */
static inline void jd_load(struct jd_bytes *b, uint64_t addr, uint64_t size, const char *name)
{
	size_t n = strlen(name) + 1;
	jd_u32(b, 0);
	jd_u32(b, (uint32_t)(16 + 40 + n + size));
	jd_u64(b, 2);
	jd_u32(b, 4242);
	jd_u32(b, 4242);
	jd_u64(b, addr);
	jd_u64(b, addr);
	jd_u64(b, size);
	jd_u64(b, 7);
	jd_put(b, name, n);
	for (uint64_t i = 0; i < size; i++)
		jd_put(b, "\xcc", 1);
}

/*
 * JIT_CODE_UNWINDING_INFO for a function of code_size bytes: a CIE (CFA =
 * rsp + 8, return address at CFA - 8, pcrel sdata4 pointers) and one FDE
 * with the call-frame instructions insns[0, n), its .eh_frame placed at
 * code + ALIGN_8(code_size) as runtimes place it, and an 8-byte stand-in for
 * the .eh_frame_hdr after it.
 */
static inline void jd_unwinding(struct jd_bytes *b, uint64_t code_size, const uint8_t *insns,
				size_t n)
{
	static const uint8_t cie[24] = {
		20, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 0x10, 1, 0x1b,
		0x0c, 0x07, 0x08, 0x90, 0x01, 0, 0,
	};
	uint8_t eh[256];
	size_t body = (4 + 4 + 4 + 1 + n + 3) & ~(size_t)3; /* CIE pointer to the padded end */
	cr_assert_leq(24 + 4 + body, sizeof(eh));
	memset(eh, 0, sizeof(eh));
	memcpy(eh, cie, sizeof(cie));
	uint32_t len = (uint32_t)body, cie_ptr = 28;
	int32_t pc = -(int32_t)(((code_size + 7) & ~7ull) + 32), range = (int32_t)code_size;
	memcpy(eh + 24, &len, 4);
	memcpy(eh + 28, &cie_ptr, 4);
	memcpy(eh + 32, &pc, 4);
	memcpy(eh + 36, &range, 4);
	memcpy(eh + 41, insns, n);
	size_t eh_len = 24 + 4 + body, hdr = 8;
	jd_u32(b, 4);
	jd_u32(b, (uint32_t)(16 + 24 + eh_len + hdr));
	jd_u64(b, 3);
	jd_u64(b, eh_len + hdr);
	jd_u64(b, hdr);
	jd_u64(b, 0);
	jd_put(b, eh, eh_len);
	jd_put(b, "\x01\x1b\x03\x3b\0\0\0\0", hdr);
}

#endif
