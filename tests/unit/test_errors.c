/* test_errors.c — every sy_err code has a distinct, non-empty name. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "sy_check.h"

START_TEST(test_every_code_has_a_distinct_name)
{
	for (int e = 0; e > SY_ERR_MIN_; e--) {
		const char *s = sy_strerror(e);
		ck_assert_ptr_nonnull(s);
		ck_assert_uint_gt(strlen(s), 0);
		ck_assert_str_ne(s, "unknown error");
		for (int f = e - 1; f > SY_ERR_MIN_; f--)
			ck_assert_str_ne(s, sy_strerror(f));
	}
}
END_TEST

START_TEST(test_out_of_range_codes_are_unknown_not_null)
{
	ck_assert_str_eq(sy_strerror(1), "unknown error");
	ck_assert_str_eq(sy_strerror(SY_ERR_MIN_), "unknown error");
	ck_assert_str_eq(sy_strerror(-1000), "unknown error");
	ck_assert_str_eq(sy_strerror(SY_OK), "ok");
	ck_assert_str_eq(sy_strerror(SY_ENOSPC), "no space left in table");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("errors");
	TCase *tc = tcase_create("names");
	tcase_add_test(tc, test_every_code_has_a_distinct_name);
	tcase_add_test(tc, test_out_of_range_codes_are_unknown_not_null);
	suite_add_tcase(s, tc);
	return sy_check_run(s);
}
