/* test_health.c — the health table (statebus/health.c): passive down
 * marks cleared only by a later probe, stalls cleared by bytes or a probe,
 * the shared circuit breaker against reference/policy-defaults.md §9 and
 * scenario 27 (exact numbers), and generation scoping. */
#include <check.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sb_test.h"
#include "tests/unit/sy_check.h"

#define S 1000000000ull /* ns per second */
#define COOL (30 * S)   /* --cb-cool-down-secs default */
#define T0 (1000 * S)   /* a monotonic time well past 0 */

static char path[64];
static struct statebus_region *r;
static uint32_t slot, gen;

static void setup(void)
{
	r = sbt_create_small(path, sizeof(path));
	ck_assert_int_eq(statebus_writer_lock(r, true), SY_OK);
	struct statebus_worker w = sbt_worker("http://a:1", 1);
	ck_assert_int_eq(statebus_worker_add(r, &w, &slot, &gen), SY_OK);
}

static void teardown(void) { sbt_destroy(r, path); }

static enum statebus_pick_health pick(uint64_t now)
{
	return statebus_health_pick(r, slot, gen, now, COOL);
}

static enum statebus_cb_state cb_state(void)
{
	struct statebus_health h;
	ck_assert_int_eq(statebus_health_read(r, slot, &h), SY_OK);
	return (enum statebus_cb_state)h.cb_state;
}

static void report(enum statebus_cb_result res, uint64_t now)
{
	statebus_breaker_report(r, slot, gen, 3, res, now);
}

/* ---- passive down, stalls ------------------------------------------------- */

START_TEST(test_new_worker_is_usable_and_clear)
{
	struct statebus_health h;
	ck_assert_int_eq(statebus_health_read(r, slot, &h), SY_OK);
	ck_assert_uint_eq(h.worker_gen, gen);
	ck_assert_uint_eq(h.down_since_ns, 0);
	ck_assert_uint_eq(h.stalled_since_ns, 0);
	ck_assert_int_eq(pick(T0), STATEBUS_PICK_OK);
}
END_TEST

START_TEST(test_down_mark_first_wins_and_is_counted)
{
	ck_assert(statebus_health_mark_down(r, slot, gen, STATEBUS_DOWN_CONNECT, T0));
	ck_assert(!statebus_health_mark_down(r, slot, gen, STATEBUS_DOWN_TIMEOUT, T0 + S));
	struct statebus_health h;
	statebus_health_read(r, slot, &h);
	ck_assert_uint_eq(h.down_since_ns, T0);
	ck_assert_uint_eq(h.down_reason, STATEBUS_DOWN_CONNECT);
	ck_assert_uint_eq(h.downs, 1);
	ck_assert_int_eq(pick(T0 + 100 * S), STATEBUS_PICK_DOWN);
}
END_TEST

START_TEST(test_down_clears_only_after_a_probe_sent_after_the_mark)
{
	statebus_health_mark_down(r, slot, gen, STATEBUS_DOWN_RESET, T0);
	/* a probe that was already on its way when the failure happened */
	ck_assert_uint_eq(statebus_health_probe_ok(r, slot, gen, T0 - 1, T0 + 1), 0);
	ck_assert_int_eq(pick(T0 + 2), STATEBUS_PICK_DOWN);
	ck_assert_uint_eq(statebus_health_probe_ok(r, slot, gen, T0 + 5, T0 + 6),
			  STATEBUS_HEALTH_CLEARED_DOWN);
	ck_assert_int_eq(pick(T0 + 7), STATEBUS_PICK_OK);
	struct statebus_health h;
	statebus_health_read(r, slot, &h);
	ck_assert_uint_eq(h.recoveries, 1);
	ck_assert_uint_eq(h.cleared_ns, T0 + 6);
}
END_TEST

START_TEST(test_bytes_do_not_revive_a_down_worker)
{
	statebus_health_mark_down(r, slot, gen, STATEBUS_DOWN_CONNECT, T0);
	statebus_health_progress(r, slot, gen, T0 + S);
	ck_assert_int_eq(pick(T0 + 2 * S), STATEBUS_PICK_DOWN);
}
END_TEST

START_TEST(test_stall_cleared_by_a_byte_or_a_later_probe)
{
	ck_assert(statebus_health_mark_stalled(r, slot, gen, T0));
	ck_assert(!statebus_health_mark_stalled(r, slot, gen, T0 + 1));
	ck_assert_int_eq(pick(T0 + 2), STATEBUS_PICK_STALLED);
	statebus_health_progress(r, slot, gen, T0 + 3);
	ck_assert_int_eq(pick(T0 + 4), STATEBUS_PICK_OK);
	struct statebus_health h;
	statebus_health_read(r, slot, &h);
	ck_assert_uint_eq(h.stalls, 1);
	ck_assert_uint_eq(h.last_byte_ns, T0 + 3);
	ck_assert_uint_eq(h.cleared_ns, T0 + 3);

	ck_assert(statebus_health_mark_stalled(r, slot, gen, T0 + 10));
	ck_assert_uint_eq(statebus_health_probe_ok(r, slot, gen, T0 + 11, T0 + 12),
			  STATEBUS_HEALTH_CLEARED_STALL);
	ck_assert_int_eq(pick(T0 + 13), STATEBUS_PICK_OK);
}
END_TEST

START_TEST(test_last_byte_is_stored_at_most_every_millisecond)
{
	statebus_health_progress(r, slot, gen, T0);
	statebus_health_progress(r, slot, gen, T0 + 999999);
	struct statebus_health h;
	statebus_health_read(r, slot, &h);
	ck_assert_uint_eq(h.last_byte_ns, T0);
	statebus_health_progress(r, slot, gen, T0 + 1000000);
	statebus_health_read(r, slot, &h);
	ck_assert_uint_eq(h.last_byte_ns, T0 + 1000000);
}
END_TEST

START_TEST(test_marks_of_an_old_generation_do_nothing)
{
	ck_assert(!statebus_health_mark_down(r, slot, gen + 1, STATEBUS_DOWN_CONNECT, T0));
	ck_assert_int_eq(pick(T0), STATEBUS_PICK_OK);
	statebus_health_mark_down(r, slot, gen, STATEBUS_DOWN_CONNECT, T0);
	/* the slot is removed and reused: the new worker starts clear */
	ck_assert_int_eq(statebus_worker_remove(r, slot, gen), SY_OK);
	struct statebus_worker w = sbt_worker("http://b:1", 1);
	uint32_t s2, g2;
	ck_assert_int_eq(statebus_worker_add(r, &w, &s2, &g2), SY_OK);
	ck_assert_uint_eq(s2, slot);
	ck_assert_int_eq(statebus_health_pick(r, s2, g2, T0 + S, COOL), STATEBUS_PICK_OK);
	ck_assert(!statebus_health_mark_down(r, s2, gen, STATEBUS_DOWN_CONNECT, T0 + S));
	ck_assert_int_eq(statebus_health_pick(r, s2, g2, T0 + S, COOL), STATEBUS_PICK_OK);
}
END_TEST

START_TEST(test_a_mark_by_another_process_is_seen_at_once)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct statebus_region *c = NULL;
		char err[128];
		if (statebus_region_open(path, NULL, STATEBUS_ATTACH_ONLY, &c, err, sizeof(err)) != SY_OK)
			_exit(2);
		_exit(statebus_health_mark_down(c, slot, gen, STATEBUS_DOWN_TIMEOUT, T0) ? 0 : 3);
	}
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ck_assert_int_eq(pick(T0 + 1), STATEBUS_PICK_DOWN);
}
END_TEST

/* ---- circuit breaker (policy-defaults §9) ---------------------------------- */

START_TEST(test_scenario27_two_failures_a_503_one_failure_opens)
{
	report(STATEBUS_CB_FAILURE, T0 + 1 * S);
	report(STATEBUS_CB_FAILURE, T0 + 2 * S);
	ck_assert_int_eq(cb_state(), STATEBUS_CB_CLOSED);
	report(STATEBUS_CB_BACKPRESSURE, T0 + 3 * S); /* a 503: no reset of the streak */
	ck_assert_int_eq(cb_state(), STATEBUS_CB_CLOSED);
	report(STATEBUS_CB_FAILURE, T0 + 4 * S);
	ck_assert_int_eq(cb_state(), STATEBUS_CB_OPEN);
	ck_assert_int_eq(pick(T0 + 4 * S + COOL - 1), STATEBUS_PICK_BREAKER_OPEN);
}
END_TEST

START_TEST(test_scenario27_after_cool_down_one_probe_and_a_503_closes)
{
	for (int i = 0; i < 3; i++)
		report(STATEBUS_CB_FAILURE, T0);
	ck_assert_int_eq(pick(T0 + COOL), STATEBUS_PICK_PROBE);
	ck_assert(statebus_breaker_take_probe(r, slot, gen, T0 + COOL, COOL));
	ck_assert_int_eq(cb_state(), STATEBUS_CB_HALF_OPEN);
	/* one probe only: while it is out the worker is left out */
	ck_assert_int_eq(pick(T0 + COOL + 1), STATEBUS_PICK_BREAKER_OPEN);
	ck_assert(!statebus_breaker_take_probe(r, slot, gen, T0 + COOL + 1, COOL));
	report(STATEBUS_CB_BACKPRESSURE, T0 + COOL + 2);
	ck_assert_int_eq(cb_state(), STATEBUS_CB_CLOSED);
	ck_assert_int_eq(pick(T0 + COOL + 3), STATEBUS_PICK_OK);
}
END_TEST

START_TEST(test_backpressure_alone_never_opens)
{
	for (int i = 0; i < 1000; i++)
		report(STATEBUS_CB_BACKPRESSURE, T0 + (uint64_t)i * S);
	ck_assert_int_eq(cb_state(), STATEBUS_CB_CLOSED);
	ck_assert_int_eq(pick(T0 + 2000 * S), STATEBUS_PICK_OK);
}
END_TEST

START_TEST(test_success_resets_the_streak)
{
	report(STATEBUS_CB_FAILURE, T0 + 1);
	report(STATEBUS_CB_FAILURE, T0 + 2);
	report(STATEBUS_CB_SUCCESS, T0 + 3);
	report(STATEBUS_CB_FAILURE, T0 + 4);
	report(STATEBUS_CB_FAILURE, T0 + 5);
	ck_assert_int_eq(cb_state(), STATEBUS_CB_CLOSED);
	report(STATEBUS_CB_FAILURE, T0 + 6);
	ck_assert_int_eq(cb_state(), STATEBUS_CB_OPEN);
	struct statebus_health h;
	statebus_health_read(r, slot, &h);
	ck_assert_uint_eq(h.cb_opens, 1);
}
END_TEST

START_TEST(test_failures_while_open_are_ignored_cool_down_from_opening)
{
	for (int i = 0; i < 3; i++)
		report(STATEBUS_CB_FAILURE, T0);
	report(STATEBUS_CB_FAILURE, T0 + 20 * S); /* ignored: does not restart the cool-down */
	ck_assert_int_eq(pick(T0 + COOL), STATEBUS_PICK_PROBE);
}
END_TEST

START_TEST(test_probe_failure_reopens_and_restarts_cool_down)
{
	for (int i = 0; i < 3; i++)
		report(STATEBUS_CB_FAILURE, T0);
	ck_assert(statebus_breaker_take_probe(r, slot, gen, T0 + COOL, COOL));
	report(STATEBUS_CB_FAILURE, T0 + COOL + 5);
	ck_assert_int_eq(cb_state(), STATEBUS_CB_OPEN);
	ck_assert_int_eq(pick(T0 + 2 * COOL), STATEBUS_PICK_BREAKER_OPEN);
	ck_assert_int_eq(pick(T0 + 2 * COOL + 5), STATEBUS_PICK_PROBE);
	ck_assert(statebus_breaker_take_probe(r, slot, gen, T0 + 2 * COOL + 5, COOL));
	report(STATEBUS_CB_SUCCESS, T0 + 2 * COOL + 6);
	ck_assert_int_eq(cb_state(), STATEBUS_CB_CLOSED);
}
END_TEST

START_TEST(test_released_probe_is_available_at_once)
{
	for (int i = 0; i < 3; i++)
		report(STATEBUS_CB_FAILURE, T0);
	ck_assert(statebus_breaker_take_probe(r, slot, gen, T0 + COOL, COOL));
	ck_assert_int_eq(pick(T0 + COOL + 1), STATEBUS_PICK_BREAKER_OPEN);
	statebus_breaker_release_probe(r, slot, gen, T0 + COOL);
	ck_assert_int_eq(pick(T0 + COOL + 2), STATEBUS_PICK_PROBE);
}
END_TEST

START_TEST(test_lost_probe_is_handed_out_again_after_a_cool_down)
{
	for (int i = 0; i < 3; i++)
		report(STATEBUS_CB_FAILURE, T0);
	ck_assert(statebus_breaker_take_probe(r, slot, gen, T0 + COOL, COOL));
	/* its process died: nobody reports */
	ck_assert_int_eq(pick(T0 + 2 * COOL - 1), STATEBUS_PICK_BREAKER_OPEN);
	ck_assert_int_eq(pick(T0 + 2 * COOL), STATEBUS_PICK_PROBE);
}
END_TEST

START_TEST(test_threshold_zero_is_off)
{
	for (int i = 0; i < 100; i++)
		statebus_breaker_report(r, slot, gen, 0, STATEBUS_CB_FAILURE, T0);
	ck_assert_int_eq(cb_state(), STATEBUS_CB_CLOSED);
	/* and cool-down 0 ignores a breaker that is open */
	for (int i = 0; i < 3; i++)
		report(STATEBUS_CB_FAILURE, T0);
	ck_assert_int_eq(statebus_health_pick(r, slot, gen, T0 + 1, 0), STATEBUS_PICK_OK);
}
END_TEST

START_TEST(test_out_of_range_slot_reads_einval_and_picks_ok)
{
	struct statebus_health h;
	ck_assert_int_eq(statebus_health_read(r, 99, &h), SY_EINVAL);
	ck_assert(!statebus_health_mark_down(r, 99, gen, STATEBUS_DOWN_CONNECT, T0));
	statebus_breaker_report(r, 99, gen, 3, STATEBUS_CB_FAILURE, T0);
	ck_assert_int_eq(statebus_health_pick(r, 99, gen, T0, COOL), STATEBUS_PICK_OK);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("health");
	TCase *tc = tcase_create("passive");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_new_worker_is_usable_and_clear);
	tcase_add_test(tc, test_down_mark_first_wins_and_is_counted);
	tcase_add_test(tc, test_down_clears_only_after_a_probe_sent_after_the_mark);
	tcase_add_test(tc, test_bytes_do_not_revive_a_down_worker);
	tcase_add_test(tc, test_stall_cleared_by_a_byte_or_a_later_probe);
	tcase_add_test(tc, test_last_byte_is_stored_at_most_every_millisecond);
	tcase_add_test(tc, test_marks_of_an_old_generation_do_nothing);
	tcase_add_test(tc, test_a_mark_by_another_process_is_seen_at_once);
	suite_add_tcase(s, tc);
	tc = tcase_create("breaker");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_scenario27_two_failures_a_503_one_failure_opens);
	tcase_add_test(tc, test_scenario27_after_cool_down_one_probe_and_a_503_closes);
	tcase_add_test(tc, test_backpressure_alone_never_opens);
	tcase_add_test(tc, test_success_resets_the_streak);
	tcase_add_test(tc, test_failures_while_open_are_ignored_cool_down_from_opening);
	tcase_add_test(tc, test_probe_failure_reopens_and_restarts_cool_down);
	tcase_add_test(tc, test_released_probe_is_available_at_once);
	tcase_add_test(tc, test_lost_probe_is_handed_out_again_after_a_cool_down);
	tcase_add_test(tc, test_threshold_zero_is_off);
	tcase_add_test(tc, test_out_of_range_slot_reads_einval_and_picks_ok);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sy_check_run(suite());
}
