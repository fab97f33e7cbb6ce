/* SPDX-License-Identifier: MIT */
/* Unit tests of lib/util/buf.c, the hash map and the array helpers of util.h: growable arrays, the sorted-array search. */
#include <criterion/criterion.h>

#include "util/util.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

Test(partition_point, empty_array_is_zero)
{
	int evaluated = 0;
	size_t at = sp_partition_point(0, i, (evaluated++, true));
	cr_assert_eq(at, 0);
	cr_assert_eq(evaluated, 0);
}

Test(partition_point, lower_and_upper_bounds_of_every_key)
{
	/* Keys with repeats and gaps: every key from below the first to above the last. */
	const uint64_t a[] = { 3, 5, 5, 5, 9, 12, 12, 40 };
	const size_t n = sizeof(a) / sizeof(a[0]);
	for (uint64_t key = 0; key <= 41; key++) {
		size_t lower = 0, upper = 0;
		while (lower < n && a[lower] < key)
			lower++;
		while (upper < n && a[upper] <= key)
			upper++;
		cr_assert_eq(sp_partition_point(n, i, a[i] < key), lower, "lower bound of %lu",
			     (unsigned long)key);
		cr_assert_eq(sp_partition_point(n, i, a[i] <= key), upper, "upper bound of %lu",
			     (unsigned long)key);
	}
}

Test(partition_point, evaluates_the_predicate_logarithmically)
{
	enum { N = 1 << 20 };
	uint32_t *a = malloc(N * sizeof(*a));
	cr_assert_not_null(a);
	for (uint32_t k = 0; k < N; k++)
		a[k] = 2 * k;
	int evaluated = 0;
	size_t at = sp_partition_point((size_t)N, i, (evaluated++, a[i] <= 777777));
	cr_assert_eq(at, 777777 / 2 + 1);
	cr_assert_leq(evaluated, 21);
	free(a);
}

Test(array_reserve, grows_to_a_power_of_two_and_keeps_contents)
{
	int *v = NULL;
	size_t cap = 0;
	cr_assert_eq(sp_array_reserve((void **)&v, &cap, 1, sizeof(*v)), 0);
	cr_assert_eq(cap, 64);
	for (int k = 0; k < 64; k++)
		v[k] = k;
	cr_assert_eq(sp_array_reserve((void **)&v, &cap, 65, sizeof(*v)), 0);
	cr_assert_eq(cap, 128);
	for (int k = 0; k < 64; k++)
		cr_assert_eq(v[k], k);
	cr_assert_eq(sp_array_reserve((void **)&v, &cap, 100, sizeof(*v)), 0, "no growth needed");
	cr_assert_eq(cap, 128);
	free(v);
}

Test(array_reserve, refuses_an_overflowing_size)
{
	char *v = NULL;
	size_t cap = 0;
	cr_assert_eq(sp_array_reserve((void **)&v, &cap, SIZE_MAX / 2 + 2, 1), -ENOMEM);
	cr_assert_null(v);
	cr_assert_eq(cap, 0);
	cr_assert_eq(sp_array_reserve((void **)&v, &cap, 4, SIZE_MAX / 2), -ENOMEM);
	cr_assert_null(v);
}

/* The hash map against a plain array: puts, replacements and misses, across its growths. */
Test(map, holds_every_key_across_growth)
{
	enum { N = 5000 };
	static uint32_t want[N];
	struct sp_map m;

	sp_map_init(&m);
	cr_assert_eq(sp_map_get(&m, 7, &(uint32_t){0}), 0, "an empty map holds nothing");
	/* keys far apart and key 0, which an empty slot must not be taken for */
	for (uint32_t i = 0; i < N; i++) {
		want[i] = i * 3 + 1;
		cr_assert_eq(sp_map_put(&m, (uint64_t)i << 20, want[i]), 0);
	}
	for (uint32_t i = 0; i < N; i += 2) {
		want[i] = ~i;
		cr_assert_eq(sp_map_put(&m, (uint64_t)i << 20, want[i]), 0);
	}
	cr_assert_eq(m.len, N, "replacing a key adds no entry");
	cr_assert_geq(m.cap * 3, m.len * 4, "kept at most three quarters full");
	for (uint32_t i = 0; i < N; i++) {
		uint32_t v = 0;

		cr_assert_eq(sp_map_get(&m, (uint64_t)i << 20, &v), 1, "key %u", i);
		cr_assert_eq(v, want[i], "key %u", i);
		cr_assert_eq(sp_map_get(&m, ((uint64_t)i << 20) + 1, &v), 0, "absent key %u", i);
	}
	sp_map_release(&m);
	cr_assert_eq(m.cap, 0);
	cr_assert_eq(sp_map_get(&m, 0, &(uint32_t){0}), 0);
}
