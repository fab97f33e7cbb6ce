/* SPDX-License-Identifier: MIT */
/* Unit tests of the text views' cells: names cut in the middle, at character boundaries, apart from their neighbours. */
#include <criterion/criterion.h>

#include "report/views.h"

#include <stdint.h>
#include <string.h>

static const char *cut(const char *s, size_t w, size_t diff_at)
{
	static char buf[256];
	size_t n = sp_text_cut(buf, sizeof(buf), s, w, diff_at);
	cr_assert_eq(n, strlen(buf));
	cr_assert_leq(n, w, "'%s' is %zu bytes, over %zu", buf, n, w);
	return buf;
}

Test(text_cells, a_name_that_fits_is_whole)
{
	cr_assert_str_eq(cut("main", 10, SIZE_MAX), "main");
	cr_assert_str_eq(cut("exactly_ten", 11, SIZE_MAX), "exactly_ten");
}

Test(text_cells, a_long_name_keeps_both_ends)
{
	cr_assert_str_eq(cut("encoder_listencode_dict_for_json", 20, SIZE_MAX), "encoder_l...for_json");
	cr_assert_str_eq(cut("abcdefghijklmnopqrstuvwxyz", 11, SIZE_MAX), "abcd...wxyz");
}

Test(text_cells, a_cut_never_splits_a_character)
{
	/* "é" is two bytes: the cut moves to a boundary and the label stays valid UTF-8. */
	const char *s = "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9";
	const char *l = cut(s, 10, SIZE_MAX);
	for (size_t i = 0; l[i]; i++)
		if (((unsigned char)l[i] & 0xc0) == 0x80)
			cr_assert(i > 0 && (unsigned char)l[i - 1] >= 0x80, "a stray continuation byte in '%s'", l);
	cr_assert_not_null(strstr(l, "..."));
}

Test(text_cells, the_place_two_names_part_stays_in_view)
{
	const char *a = "encoder_listencode_first_variant_with_the_same_long_ending_part";
	const char *b = "encoder_listencode_other_variant_with_the_same_long_ending_part";
	char la[64], lb[64];
	/* A middle cut hides where they part: both read the same. */
	strcpy(la, cut(a, 32, SIZE_MAX));
	strcpy(lb, cut(b, 32, SIZE_MAX));
	cr_assert_str_eq(la, lb);
	strcpy(la, cut(a, 32, 19));
	strcpy(lb, cut(b, 32, 19));
	cr_assert_str_neq(la, lb);
	cr_assert_not_null(strstr(la, "first"), "%s", la);
	/* Parting near the end: the end is kept. */
	cr_assert_str_eq(cut("a_very_long_common_beginning_that_ends_in_A", 20, 30), "...ng_that_ends_in_A");
}

/* Every backslash of l begins a whole \xHH escape. */
static void escapes_whole(const char *l)
{
	for (const char *p = strchr(l, '\\'); p; p = strchr(p + 1, '\\'))
		cr_assert(p[1] == 'x' && p[2] && p[3] && p[2] != '.' && p[3] != '.',
			  "an escape split in '%s'", l);
}

Test(text_cells, a_cut_never_splits_an_escape)
{
	/* An escaped name: a cut anywhere inside \x5c would leave a lone backslash. */
	const char *s = "ab\\x5c\\x5c\\x5c\\x5c\\x5c\\x5c\\x5c\\x5c\\x5c\\x5c\\x5ccd";
	for (size_t w = 5; w < 30; w++) {
		escapes_whole(cut(s, w, SIZE_MAX));
		escapes_whole(cut(s, w, 20));
	}
	cr_assert_str_eq(cut(s, 12, SIZE_MAX), "ab...cd");
	cr_assert_str_eq(cut(s, 16, SIZE_MAX), "ab\\x5c...\\x5ccd");
}
