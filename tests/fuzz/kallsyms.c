/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: the kallsyms reader over an untrusted file, asked about addresses the file names. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "formats/formats.h"
#include "check.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ADDRS 256

/* The loader takes a path: the input goes into a memory file reopened through /proc. */
static int memfd = -1;
static char path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	memfd = memfd_create("kallsyms", MFD_CLOEXEC);
	if (memfd < 0)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/*
 * Needed addresses: a few fixed ones, and each line's leading hex number
 * and its neighbours, so lookups land on, inside and just past the file's
 * own symbols rather than in empty space.
 */
static size_t pick_addrs(const uint8_t *data, size_t size, uint64_t *a)
{
	static const uint64_t fixed[] = {0, 1, 0xffffffff81000000ull, 0xffffffffc0000000ull,
					 UINT64_MAX};
	size_t n = 0;
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		a[n++] = fixed[i];
	for (size_t i = 0; i < size && n + 3 <= MAX_ADDRS;) {
		uint64_t v = 0;
		size_t j = i;
		for (; j < size && j - i < 16; j++) {
			int c = data[j] | 0x20, d;
			if (data[j] >= '0' && data[j] <= '9')
				d = data[j] - '0';
			else if (c >= 'a' && c <= 'f')
				d = c - 'a' + 10;
			else
				break;
			v = v << 4 | (uint64_t)d;
		}
		if (j > i) {
			a[n++] = v - 1;
			a[n++] = v;
			a[n++] = v + 0x10;
		}
		const uint8_t *nl = memchr(data + i, '\n', size - i);
		if (!nl)
			break;
		i = (size_t)(nl - data) + 1;
	}
	qsort(a, n, sizeof(*a), cmp_u64);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (k == 0 || a[i] != a[k - 1])
			a[k++] = a[i];
	return k;
}

static void check_sym(const struct sp_ksym *s, uint64_t addr)
{
	/* end UINT64_MAX means no symbol follows: the last one reaches the top. */
	CHECK(s->addr <= addr && (addr < s->end || s->end == UINT64_MAX));
	CHECK(s->name && s->name[0]);
	CHECK(!s->module || s->module[0]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (ftruncate(memfd, 0) || pwrite(memfd, data, size, 0) != (ssize_t)size)
		abort();
	uint64_t addrs[MAX_ADDRS];
	size_t n = pick_addrs(data, size, addrs);
	struct sp_kallsyms *k;
	if (sp_kallsyms_load(path, addrs, n, &k))
		return 0;
	const struct sp_kallsyms_stats *st = sp_kallsyms_stats(k);
	CHECK(st->resolved <= n && st->kept <= st->resolved);
	CHECK(!st->restricted || st->resolved == 0);
	size_t found = 0;
	for (size_t i = 0; i < n; i++) {
		const struct sp_ksym *s = sp_kallsyms_find(k, addrs[i]);
		if (s) {
			check_sym(s, addrs[i]);
			found++;
		}
		/* Addresses it was not asked about: any answer must still hold them. */
		if (addrs[i] != UINT64_MAX && (s = sp_kallsyms_find(k, addrs[i] + 1)))
			check_sym(s, addrs[i] + 1);
	}
	CHECK(found == st->resolved);
	sp_kallsyms_free(k);
	return 0;
}
