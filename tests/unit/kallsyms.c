/* SPDX-License-Identifier: MIT */
/* Unit tests of sparse kallsyms loading: selection, aliases, bounds, zero addresses, bad lines. */
#include <criterion/criterion.h>

#include "formats/formats.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[64];
static struct sp_kallsyms *ks;

static void setup(void)
{
	strcpy(path, "/tmp/sp-kallsyms-XXXXXX");
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
}

static void teardown(void)
{
	sp_kallsyms_free(ks);
	ks = NULL;
	unlink(path);
}

static void write_fixture(const char *text, size_t len)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(text, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
}

static void load(const char *text, const uint64_t *addrs, size_t n)
{
	write_fixture(text, strlen(text));
	cr_assert_eq(sp_kallsyms_load(path, addrs, n, &ks), 0);
}

static const char *name_at(uint64_t addr)
{
	const struct sp_ksym *s = sp_kallsyms_find(ks, addr);
	return s ? s->name : NULL;
}

TestSuite(kallsyms, .init = setup, .fini = teardown);

/* The shape of /proc/kallsyms: vmlinux sorted, data after text, modules unsorted at the end. */
static const char fixture[] =
	"0000000000000000 A fixed_percpu_data\n"
	"ffffffff81000000 T _stext\n"
	"ffffffff81000100 t helper_local\n"
	"ffffffff81000200 T do_syscall_64\n"
	"ffffffff81000300 T vfs_read\n"
	"ffffffff81000400 W weak_func\n"
	"ffffffff81000500 T _etext\n"
	"ffffffff82000000 D some_data\n"
	"ffffffff82000100 b some_bss\n"
	"ffffffffc0002000 t ext4_read\t[ext4]\n"
	"ffffffffc0001000 t ext4_write\t[ext4]\n"
	"ffffffffc0003000 d ext4_data\t[ext4]\n"
	"ffffffffc0010000 T xfs_read\t[xfs]\n";

Test(kallsyms, keeps_only_the_symbols_needed_addresses_fall_in)
{
	uint64_t addrs[] = {0xffffffff81000210, 0xffffffff81000220, 0xffffffff81000380,
			    0xffffffffc0001010, 0xffffffffc0002ff0, 0xffffffffc0010004};
	load(fixture, addrs, SP_ARRAY_SIZE(addrs));
	const struct sp_kallsyms_stats *st = sp_kallsyms_stats(ks);
	cr_expect_eq(st->lines, 13);
	cr_expect_eq(st->malformed, 0);
	cr_expect_eq(st->kept, 5, "kept %lu", (unsigned long)st->kept); /* two addresses share do_syscall_64 */
	cr_expect_eq(st->resolved, 6);
	cr_expect_not(st->restricted);

	const struct sp_ksym *s = sp_kallsyms_find(ks, addrs[0]);
	cr_assert_not_null(s);
	cr_expect_str_eq(s->name, "do_syscall_64");
	cr_expect_null(s->module);
	cr_expect_eq(s->addr, 0xffffffff81000200);
	cr_expect_eq(s->end, 0xffffffff81000300);
	cr_expect_eq(sp_kallsyms_find(ks, addrs[1]), s);
	cr_expect_str_eq(name_at(addrs[2]), "vfs_read");

	s = sp_kallsyms_find(ks, 0xffffffffc0001010);
	cr_assert_not_null(s);
	cr_expect_str_eq(s->name, "ext4_write");
	cr_expect_str_eq(s->module, "ext4");
	/* Module symbols come unsorted: the bound is the next symbol by address. */
	cr_expect_eq(s->end, 0xffffffffc0002000);
	s = sp_kallsyms_find(ks, 0xffffffffc0002ff0);
	cr_assert_not_null(s);
	cr_expect_str_eq(s->name, "ext4_read");
	cr_expect_eq(s->end, 0xffffffffc0003000);
	s = sp_kallsyms_find(ks, 0xffffffffc0010004);
	cr_assert_not_null(s);
	cr_expect_str_eq(s->module, "xfs");
	cr_expect_eq(s->end, UINT64_MAX, "the last symbol has no bound above");
}

Test(kallsyms, a_symbol_of_another_kind_ends_a_function)
{
	/* Past _etext, the data symbols: no function holds these addresses. */
	uint64_t addrs[] = {0xffffffff81000100, 0xffffffff82000050, 0xffffffff82000200,
			    0xffffffffc0003010};
	load(fixture, addrs, SP_ARRAY_SIZE(addrs));
	cr_expect_str_eq(name_at(addrs[0]), "helper_local");
	cr_expect_null(name_at(addrs[1]));
	cr_expect_null(name_at(addrs[2]));
	cr_expect_null(name_at(addrs[3]));
	cr_expect_eq(sp_kallsyms_stats(ks)->resolved, 1);
}

Test(kallsyms, addresses_below_every_symbol_stay_unnamed)
{
	uint64_t addrs[] = {0x1000, 0xffffffff80ffffff};
	load(fixture, addrs, SP_ARRAY_SIZE(addrs));
	cr_expect_null(name_at(0x1000));
	cr_expect_null(name_at(0xffffffff80ffffff));
	cr_expect_eq(sp_kallsyms_stats(ks)->kept, 0);
}

Test(kallsyms, weak_text_symbols_count_and_addresses_outside_the_needed_set_are_bounded)
{
	uint64_t addrs[] = {0xffffffff81000480};
	load(fixture, addrs, SP_ARRAY_SIZE(addrs));
	cr_expect_str_eq(name_at(0xffffffff81000480), "weak_func");
	/* Inside the kept symbol, though not asked for: still found; past its end: not. */
	cr_expect_str_eq(name_at(0xffffffff81000400), "weak_func");
	cr_expect_null(name_at(0xffffffff81000500));
	cr_expect_null(name_at(0xffffffff81000300));
}

Test(kallsyms, aliases_prefer_global_then_native_then_fewer_underscores)
{
	static const char text[] =
		"ffffffff81001000 t local_alias\n"
		"ffffffff81001000 T global_name\n"
		"ffffffff81002000 T __ia32_sys_getpid\n"
		"ffffffff81002000 T __x64_sys_getpid\n"
		"ffffffff81003000 T __ksys_thing\n"
		"ffffffff81003000 T ksys_thing\n"
		"ffffffff81004000 T end_marker\n";
	uint64_t addrs[] = {0xffffffff81001004, 0xffffffff81002004, 0xffffffff81003004};
	load(text, addrs, SP_ARRAY_SIZE(addrs));
	cr_expect_str_eq(name_at(addrs[0]), "global_name");
	cr_expect_str_eq(name_at(addrs[1]), "__x64_sys_getpid");
	cr_expect_str_eq(name_at(addrs[2]), "ksys_thing");
}

Test(kallsyms, zero_addresses_mean_restricted)
{
	static const char text[] =
		"0000000000000000 T _stext\n"
		"0000000000000000 T do_syscall_64\n"
		"0000000000000000 t ext4_read\t[ext4]\n";
	uint64_t addrs[] = {0xffffffff81000210};
	load(text, addrs, 1);
	const struct sp_kallsyms_stats *st = sp_kallsyms_stats(ks);
	cr_expect(st->restricted);
	cr_expect_eq(st->zero_addresses, 3);
	cr_expect_null(name_at(addrs[0]));
}

Test(kallsyms, a_few_zero_addresses_do_not_restrict)
{
	static const char text[] =
		"0000000000000000 T hidden\n"
		"ffffffff81000000 T visible\n"
		"ffffffff81001000 T next\n";
	uint64_t addrs[] = {0xffffffff81000010};
	load(text, addrs, 1);
	cr_expect_not(sp_kallsyms_stats(ks)->restricted);
	cr_expect_eq(sp_kallsyms_stats(ks)->zero_addresses, 1);
	cr_expect_str_eq(name_at(addrs[0]), "visible");
}

Test(kallsyms, malformed_lines_are_skipped_and_counted)
{
	static const char text[] =
		"ffffffff81000000 T good_one\n"
		"zzzzffff81000100 T bad_hex\n"
		"ffffffff81000100T no_blank\n"
		"ffffffff81000100 T\n"
		"ffffffff81000100 7 bad_type\n"
		"ffffffff81000100 TT two_letters\n"
		"1ffffffff81000100 T seventeen_digits\n"
		"ffffffff81000100 t no_close\t[ext4\n"
		"ffffffff81000100 t empty_module\t[]\n"
		"ffffffff81000100 t trailing\t[ext4] junk\n"
		"ffffffff81000100 t two names\n"
		"\n"
		"ffffffff81000200 T good_two\r\n"
		"ffffffff81000300 T last_without_newline";
	uint64_t addrs[] = {0xffffffff81000150, 0xffffffff81000250, 0xffffffff81000350};
	load(text, addrs, SP_ARRAY_SIZE(addrs));
	const struct sp_kallsyms_stats *st = sp_kallsyms_stats(ks);
	cr_expect_eq(st->lines, 14);
	cr_expect_eq(st->malformed, 11, "malformed %lu", (unsigned long)st->malformed);
	/* None of the bad lines ended good_one early. */
	cr_expect_str_eq(name_at(addrs[0]), "good_one");
	cr_expect_str_eq(name_at(addrs[1]), "good_two");
	cr_expect_str_eq(name_at(addrs[2]), "last_without_newline");
}

Test(kallsyms, a_line_holding_a_nul_is_malformed)
{
	static const char text[] = "ffffffff81000000 T good\n"
				   "ffffffff81000100 T bad\0name\n"
				   "ffffffff81000200 T after\n";
	uint64_t addrs[] = {0xffffffff81000150};
	write_fixture(text, sizeof(text) - 1);
	cr_assert_eq(sp_kallsyms_load(path, addrs, 1, &ks), 0);
	cr_expect_eq(sp_kallsyms_stats(ks)->malformed, 1);
	cr_expect_str_eq(name_at(addrs[0]), "good");
}

Test(kallsyms, a_huge_line_is_skipped_whole)
{
	size_t big = 1 << 20;
	char *text = malloc(big + 256);
	cr_assert_not_null(text);
	size_t n = (size_t)sprintf(text, "ffffffff81000000 T before\nffffffff81000100 T ");
	memset(text + n, 'x', big);
	n += big;
	n += (size_t)sprintf(text + n, "\nffffffff81000200 T after\nffffffff81000300 T end\n");
	write_fixture(text, n);
	free(text);
	uint64_t addrs[] = {0xffffffff81000150, 0xffffffff81000250};
	cr_assert_eq(sp_kallsyms_load(path, addrs, 2, &ks), 0);
	const struct sp_kallsyms_stats *st = sp_kallsyms_stats(ks);
	cr_expect_eq(st->lines, 4);
	cr_expect_eq(st->malformed, 1);
	/* The skipped line says nothing, not even where "before" ends. */
	cr_expect_str_eq(name_at(addrs[0]), "before");
	cr_expect_str_eq(name_at(addrs[1]), "after");
}

Test(kallsyms, arguments_and_files_are_checked)
{
	uint64_t unsorted[] = {2, 1}, dup[] = {1, 1};
	write_fixture(fixture, strlen(fixture));
	cr_expect_eq(sp_kallsyms_load(path, unsorted, 2, &ks), -SP_E_BAD_ARG);
	cr_expect_eq(sp_kallsyms_load(path, dup, 2, &ks), -SP_E_BAD_ARG);
	cr_expect_eq(sp_kallsyms_load("/nonexistent/kallsyms", dup, 1, &ks), -ENOENT);
	cr_expect_null(ks);
	/* No needed address: the file is still read, nothing is kept. */
	cr_assert_eq(sp_kallsyms_load(path, NULL, 0, &ks), 0);
	cr_expect_eq(sp_kallsyms_stats(ks)->kept, 0);
	cr_expect_null(sp_kallsyms_find(ks, 0xffffffff81000210));
}

/* ---- against a brute-force reading of the same random file ---------------- */

struct rsym {
	uint64_t addr;
	char type;
	char name[16];
};

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* The rule sp_kallsyms_load implements, over every symbol: the reference. */
static const struct rsym *brute_force(const struct rsym *s, size_t n, uint64_t addr,
				      uint64_t *end)
{
	const struct rsym *best = NULL;
	uint64_t any_below = 0;
	bool any = false;
	*end = UINT64_MAX;
	for (size_t i = 0; i < n; i++) {
		if (s[i].type == 'A')
			continue;
		if (s[i].addr <= addr) {
			if (!any || s[i].addr > any_below)
				any_below = s[i].addr;
			any = true;
		} else if (s[i].addr < *end) {
			*end = s[i].addr;
		}
		bool text = strchr("tTwW", s[i].type) != NULL;
		if (text && s[i].addr <= addr && (!best || s[i].addr > best->addr))
			best = &s[i];
	}
	return best && any_below == best->addr ? best : NULL;
}

Test(kallsyms, agrees_with_brute_force_on_random_files)
{
	for (int round = 0; round < 20; round++) {
		size_t nsyms = 2000, naddrs = 1 + rnd() % 300;
		struct rsym *syms = calloc(nsyms, sizeof(*syms));
		uint64_t *addrs = calloc(naddrs, sizeof(*addrs));
		cr_assert(syms && addrs);
		FILE *f = fopen(path, "w");
		cr_assert_not_null(f);
		for (size_t i = 0; i < nsyms; i++) {
			/* Distinct addresses (aliases are tested above), mostly rising. */
			syms[i].addr = 0xffffffff81000000ull + (i < nsyms / 2 ? i * 64 : rnd() % (1 << 20)) * 16 + 1;
			for (size_t j = 0; j < i; j++)
				if (syms[j].addr == syms[i].addr) {
					syms[i].addr += 8;
					j = (size_t)-1; /* look again from the start */
				}
			syms[i].type = "tTwWdDbrA"[rnd() % 9];
			snprintf(syms[i].name, sizeof(syms[i].name), "f%zu", i);
			fprintf(f, "%016llx %c %s\n", (unsigned long long)syms[i].addr, syms[i].type,
				syms[i].name);
		}
		cr_assert_eq(fclose(f), 0);
		for (size_t i = 0; i < naddrs; i++)
			addrs[i] = 0xffffffff80fff000ull + rnd() % (1 << 25);
		for (size_t i = 0; i < naddrs; i++) /* sort, then drop duplicates */
			for (size_t j = i + 1; j < naddrs; j++)
				if (addrs[j] < addrs[i]) {
					uint64_t t = addrs[i];
					addrs[i] = addrs[j];
					addrs[j] = t;
				}
		size_t u = 0;
		for (size_t i = 0; i < naddrs; i++)
			if (!u || addrs[i] != addrs[u - 1])
				addrs[u++] = addrs[i];
		cr_assert_eq(sp_kallsyms_load(path, addrs, u, &ks), 0);
		cr_assert_leq(sp_kallsyms_stats(ks)->kept, u);
		for (size_t i = 0; i < u; i++) {
			uint64_t end;
			const struct rsym *want = brute_force(syms, nsyms, addrs[i], &end);
			const struct sp_ksym *got = sp_kallsyms_find(ks, addrs[i]);
			if (!want) {
				cr_assert_null(got, "%#llx: got %s", (unsigned long long)addrs[i],
					       got ? got->name : "");
				continue;
			}
			cr_assert_not_null(got, "%#llx: want %s", (unsigned long long)addrs[i],
					   want->name);
			cr_assert_str_eq(got->name, want->name);
			cr_assert_eq(got->addr, want->addr);
			cr_assert_eq(got->end, end);
		}
		sp_kallsyms_free(ks);
		ks = NULL;
		free(syms);
		free(addrs);
	}
}
