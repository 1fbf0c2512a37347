/* test_mock_loadstat.c — LoadStat V3 payload (sglang-wire.md §12) decoded
 * back with msgpack-c: tag, 11 positions, nil rank. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "tools/mock-engine/loadstat.h"
#include "sy_check.h"

START_TEST(test_loadstat_v3_positions_round_trip)
{
	struct loadstat ls = {.running = 3, .waiting = 2, .num_tokens = 4096,
			      .max_total_num_tokens = 65536, .rank = 1, .waiting_uncached = 300,
			      .total_tokens = 5000, .max_running = 8,
			      .total_prefill_uncached = 123456789012LL,
			      .total_prefill_busy_us = 987654321};
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	ck_assert_int_eq(loadstat_encode(&ls, &sb), 0);
	msgpack_unpacked u;
	msgpack_unpacked_init(&u);
	size_t off = 0;
	ck_assert_int_eq(msgpack_unpack_next(&u, sb.data, sb.size, &off), MSGPACK_UNPACK_SUCCESS);
	msgpack_object *a = &u.data;
	ck_assert_int_eq(a->type, MSGPACK_OBJECT_ARRAY);
	ck_assert_uint_eq(a->via.array.size, 11);
	ck_assert_int_eq(a->via.array.ptr[0].type, MSGPACK_OBJECT_STR);
	ck_assert(memcmp(a->via.array.ptr[0].via.str.ptr, "LoadStat", 8) == 0);
	const int64_t want[] = {0, 3, 2, 4096, 65536, 1, 300, 5000, 8, 123456789012LL, 987654321};
	for (int i = 1; i < 11; i++) {
		ck_assert_int_eq(a->via.array.ptr[i].type, MSGPACK_OBJECT_POSITIVE_INTEGER);
		ck_assert_int_eq((int64_t)a->via.array.ptr[i].via.u64, want[i]);
	}
	msgpack_unpacked_destroy(&u);
	msgpack_sbuffer_destroy(&sb);
}
END_TEST

START_TEST(test_loadstat_negative_rank_is_nil_and_equal_compares_all)
{
	struct loadstat a = {.rank = -1}, b = {.rank = -1};
	ck_assert(loadstat_equal(&a, &b));
	b.total_prefill_busy_us = 1;
	ck_assert(!loadstat_equal(&a, &b));
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	ck_assert_int_eq(loadstat_encode(&a, &sb), 0);
	msgpack_unpacked u;
	msgpack_unpacked_init(&u);
	size_t off = 0;
	ck_assert_int_eq(msgpack_unpack_next(&u, sb.data, sb.size, &off), MSGPACK_UNPACK_SUCCESS);
	ck_assert_int_eq(u.data.via.array.ptr[5].type, MSGPACK_OBJECT_NIL);
	msgpack_unpacked_destroy(&u);
	msgpack_sbuffer_destroy(&sb);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mock_loadstat");
	TCase *tc = tcase_create("loadstat");
	tcase_add_test(tc, test_loadstat_v3_positions_round_trip);
	tcase_add_test(tc, test_loadstat_negative_rank_is_nil_and_equal_compares_all);
	suite_add_tcase(s, tc);
	return sy_check_run(s);
}
