/* test_cursor.c — bounds checks, sticky errors and byte orders of sy_cursor. */
#include <check.h>
#include <stdlib.h>

#include "common/cursor.h"
#include "sy_check.h"

START_TEST(test_reads_both_byte_orders)
{
	const uint8_t buf[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0xAA,
			       0x78, 0x56, 0x34, 0x12};
	struct sy_cursor c = sy_cursor_init(buf, sizeof(buf));
	ck_assert_uint_eq(sy_cursor_u64be(&c), 0x0102030405060708ULL);
	ck_assert_uint_eq(sy_cursor_u8(&c), 0xAA);
	ck_assert_uint_eq(sy_cursor_u32le(&c), 0x12345678u);
	ck_assert_uint_eq(sy_cursor_avail(&c), 0);
	ck_assert_int_eq(c.err, SY_OK);
	ck_assert_uint_eq(sy_cursor_offset(&c), sizeof(buf));
}
END_TEST

START_TEST(test_short_read_sets_sticky_error_and_stops)
{
	const uint8_t buf[] = {0xFF, 0xFF, 0xFF};
	struct sy_cursor c = sy_cursor_init(buf, sizeof(buf));
	ck_assert_uint_eq(sy_cursor_u32be(&c), 0);
	ck_assert_int_eq(c.err, SY_ETRUNC);
	/* Later reads fail too, even one that would fit. */
	ck_assert_uint_eq(sy_cursor_u8(&c), 0);
	ck_assert_uint_eq(sy_cursor_offset(&c), 0);
	ck_assert_ptr_null(sy_cursor_span(&c, 1));
	uint8_t dst[2] = {9, 9};
	sy_cursor_read(&c, dst, 2);
	ck_assert_uint_eq(dst[0], 0);
	ck_assert_uint_eq(dst[1], 0);
}
END_TEST

START_TEST(test_u64_across_end_does_not_half_advance_value)
{
	const uint8_t buf[] = {0, 0, 0, 1, 0, 0};
	struct sy_cursor c = sy_cursor_init(buf, sizeof(buf));
	ck_assert_uint_eq(sy_cursor_u64be(&c), 0);
	ck_assert_int_eq(c.err, SY_ETRUNC);
}
END_TEST

START_TEST(test_span_and_skip_and_fail)
{
	const uint8_t buf[] = "abcdef";
	struct sy_cursor c = sy_cursor_init(buf, 6);
	const uint8_t *p = sy_cursor_span(&c, 2);
	ck_assert_ptr_eq(p, buf);
	sy_cursor_skip(&c, 3);
	ck_assert_uint_eq(sy_cursor_avail(&c), 1);
	sy_cursor_fail(&c, SY_EMALFORMED);
	sy_cursor_fail(&c, SY_EINVAL); /* first error wins */
	ck_assert_int_eq(c.err, SY_EMALFORMED);
	ck_assert_uint_eq(sy_cursor_avail(&c), 0);
}
END_TEST

START_TEST(test_put_get_roundtrip)
{
	uint8_t b[8];
	sy_put_u64be(b, 0xFFFFFFFFFFFFFFFFULL);
	ck_assert_uint_eq(sy_get_u64be(b), 0xFFFFFFFFFFFFFFFFULL);
	sy_put_u64be(b, 42);
	ck_assert_uint_eq(b[7], 42);
	ck_assert_uint_eq(b[0], 0);
	sy_put_u32le(b, 0x01020304u);
	ck_assert_uint_eq(b[0], 4);
	ck_assert_uint_eq(b[3], 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cursor");
	TCase *tc = tcase_create("bounds");
	tcase_add_test(tc, test_reads_both_byte_orders);
	tcase_add_test(tc, test_short_read_sets_sticky_error_and_stops);
	tcase_add_test(tc, test_u64_across_end_does_not_half_advance_value);
	tcase_add_test(tc, test_span_and_skip_and_fail);
	tcase_add_test(tc, test_put_get_roundtrip);
	suite_add_tcase(s, tc);
	return sy_check_run(s);
}
