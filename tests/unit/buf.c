/* SPDX-License-Identifier: MIT */
/* Unit tests of lib/util/buf.c and the array helpers of util.h: growable arrays, the sorted-array search. */
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
