/* test_breaker.c — the circuit breaker state machine (router/dispatch/breaker.c)
 * against reference/policy-defaults.md §9 and scenario 27, exact numbers. */
#include <check.h>
#include <stdlib.h>

#include "router/dispatch/breaker.h"
#include "tests/unit/sy_check.h"

#define S 1000000000ull /* ns per second */
#define COOL (30 * S)   /* --cb-cool-down-secs default */

static struct rt_breakers *b;

static void setup(void) { b = rt_breakers_create(8); }
static void teardown(void) { free(b); }

static bool allow(uint32_t slot, uint64_t now, bool *probe)
{
	return rt_breaker_allow(b, slot, 1, 3, COOL, now, probe);
}

static void report(uint32_t slot, enum rt_cb_result r, uint64_t now)
{
	rt_breaker_report(b, slot, 1, 3, r, now);
}

START_TEST(test_scenario27_two_failures_a_503_one_failure_opens)
{
	bool probe;
	report(0, RT_CB_FAILURE, 1 * S);
	report(0, RT_CB_FAILURE, 2 * S);
	ck_assert_int_eq(rt_breaker_state(b, 0), RT_CB_CLOSED);
	report(0, RT_CB_BACKPRESSURE, 3 * S); /* a 503: no reset of the streak */
	ck_assert_int_eq(rt_breaker_state(b, 0), RT_CB_CLOSED);
	report(0, RT_CB_FAILURE, 4 * S);
	ck_assert_int_eq(rt_breaker_state(b, 0), RT_CB_OPEN);
	ck_assert(!allow(0, 4 * S + COOL - 1, &probe));
	ck_assert(!probe);
}
END_TEST

START_TEST(test_scenario27_after_cool_down_one_probe_and_a_503_closes)
{
	bool probe;
	for (int i = 0; i < 3; i++)
		report(0, RT_CB_FAILURE, 10 * S);
	ck_assert_int_eq(rt_breaker_state(b, 0), RT_CB_OPEN);
	ck_assert(allow(0, 10 * S + COOL, &probe));
	ck_assert(probe);
	ck_assert_int_eq(rt_breaker_state(b, 0), RT_CB_HALF_OPEN);
	/* One probe only: a second request while it is out is refused. */
	ck_assert(!allow(0, 10 * S + COOL + 1, &probe));
	ck_assert(!probe);
	report(0, RT_CB_BACKPRESSURE, 10 * S + COOL + 2);
	ck_assert_int_eq(rt_breaker_state(b, 0), RT_CB_CLOSED);
	ck_assert(allow(0, 10 * S + COOL + 3, &probe));
	ck_assert(!probe);
}
END_TEST

START_TEST(test_backpressure_alone_never_opens)
{
	bool probe;
	for (int i = 0; i < 1000; i++)
		report(1, RT_CB_BACKPRESSURE, (uint64_t)i * S);
	ck_assert_int_eq(rt_breaker_state(b, 1), RT_CB_CLOSED);
	ck_assert(allow(1, 2000 * S, &probe));
}
END_TEST

START_TEST(test_success_resets_the_streak)
{
	report(0, RT_CB_FAILURE, 1);
	report(0, RT_CB_FAILURE, 2);
	report(0, RT_CB_SUCCESS, 3);
	report(0, RT_CB_FAILURE, 4);
	report(0, RT_CB_FAILURE, 5);
	ck_assert_int_eq(rt_breaker_state(b, 0), RT_CB_CLOSED);
	report(0, RT_CB_FAILURE, 6);
	ck_assert_int_eq(rt_breaker_state(b, 0), RT_CB_OPEN);
}
END_TEST

START_TEST(test_failures_while_open_are_ignored_cool_down_from_opening)
{
	bool probe;
	for (int i = 0; i < 3; i++)
		report(0, RT_CB_FAILURE, 0);
	report(0, RT_CB_FAILURE, 20 * S); /* ignored: does not restart the cool-down */
	ck_assert(allow(0, COOL, &probe));
	ck_assert(probe);
}
END_TEST

START_TEST(test_probe_failure_reopens_and_restarts_cool_down)
{
	bool probe;
	for (int i = 0; i < 3; i++)
		report(0, RT_CB_FAILURE, 0);
	ck_assert(allow(0, COOL, &probe) && probe);
	report(0, RT_CB_FAILURE, COOL + 5);
	ck_assert_int_eq(rt_breaker_state(b, 0), RT_CB_OPEN);
	ck_assert(!allow(0, 2 * COOL, &probe));
	ck_assert(allow(0, 2 * COOL + 5, &probe) && probe);
	report(0, RT_CB_SUCCESS, 2 * COOL + 6);
	ck_assert_int_eq(rt_breaker_state(b, 0), RT_CB_CLOSED);
}
END_TEST

START_TEST(test_threshold_zero_is_off)
{
	bool probe;
	for (int i = 0; i < 100; i++)
		rt_breaker_report(b, 0, 1, 0, RT_CB_FAILURE, 0);
	ck_assert(rt_breaker_allow(b, 0, 1, 0, COOL, 1, &probe));
	ck_assert_int_eq(rt_breaker_state(b, 0), RT_CB_CLOSED);
}
END_TEST

START_TEST(test_new_generation_of_a_slot_starts_closed)
{
	bool probe;
	for (int i = 0; i < 3; i++)
		report(2, RT_CB_FAILURE, 0);
	ck_assert_int_eq(rt_breaker_state(b, 2), RT_CB_OPEN);
	ck_assert(rt_breaker_allow(b, 2, 2, 3, COOL, 1, &probe));
	ck_assert(!probe);
	ck_assert_int_eq(rt_breaker_state(b, 2), RT_CB_CLOSED);
}
END_TEST

START_TEST(test_out_of_range_slot_is_admitted)
{
	bool probe;
	rt_breaker_report(b, 99, 1, 3, RT_CB_FAILURE, 0);
	ck_assert(rt_breaker_allow(b, 99, 1, 3, COOL, 0, &probe));
	ck_assert(rt_breaker_allow(NULL, 0, 1, 3, COOL, 0, &probe));
	ck_assert_int_eq(rt_breaker_state(b, 99), RT_CB_CLOSED);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("breaker");
	TCase *tc = tcase_create("state machine");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_scenario27_two_failures_a_503_one_failure_opens);
	tcase_add_test(tc, test_scenario27_after_cool_down_one_probe_and_a_503_closes);
	tcase_add_test(tc, test_backpressure_alone_never_opens);
	tcase_add_test(tc, test_success_resets_the_streak);
	tcase_add_test(tc, test_failures_while_open_are_ignored_cool_down_from_opening);
	tcase_add_test(tc, test_probe_failure_reopens_and_restarts_cool_down);
	tcase_add_test(tc, test_threshold_zero_is_off);
	tcase_add_test(tc, test_new_generation_of_a_slot_starts_closed);
	tcase_add_test(tc, test_out_of_range_slot_is_admitted);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sy_check_run(suite());
}
