/* test_readiness.c — /readyz's verdict (router/core/readiness.h): ready only
 * while some model can get a complete selection — a healthy plain
 * candidate, or healthy prefill and decode candidates of one PD bucket —
 * with the most specific reason otherwise; membership, models and the
 * region's health table (down, stalled, breaker open) count. */
#include <check.h>
#include <string.h>

#include "common/config.h"
#include "router/core/readiness.h"
#include "tests/unit/router/router_fixture.h"
#include "tests/unit/sy_check.h"

static struct rfx fx;
static struct sy_config cfg;
static struct sy_config_error cerr;
static struct router_gen *gen;
static struct router_readiness rd;

static void setup(void)
{
	rfx_open(&fx);
	ck_assert_int_eq(sy_config_init_defaults(&cfg), SY_OK);
	gen = NULL;
}

static void teardown(void)
{
	router_gen_unref(gen);
	sy_config_free(&cfg);
	rfx_close(&fx);
}

static void build(const char *yaml)
{
	if (yaml != NULL)
		ck_assert_int_eq(sy_config_load_string(&cfg, "t.yaml", yaml, strlen(yaml), &cerr), SY_OK);
	ck_assert_msg(sy_config_finish(&cfg, &cerr) == SY_OK, "%s", cerr.msg);
	ck_assert_int_eq(router_gen_build(&cfg, 1, &gen, &cerr), SY_OK);
	router_gen_set_fleet_refresh(gen, 0);
}

static void check_now(void) { router_readiness_check(gen, fx.r, RF_NOW, &rd); }

static void set_health(uint32_t slot, bool healthy)
{
	ck_assert_int_eq(statebus_worker_set_health(fx.r, slot, rfx_gen(&fx, slot), healthy, RF_NOW, 0),
			 SY_OK);
}

static const char *pd_bucket = "buckets:\n"
			       "  - id: pd\n"
			       "    groups: {prefill: {}, decode: {}}\n";

START_TEST(test_no_worker_known_is_not_ready)
{
	build(NULL);
	check_now();
	ck_assert(!rd.ready);
	ck_assert_str_eq(rd.code, "no_healthy_workers");
	ck_assert_str_eq(rd.message, "no worker is known yet");
}
END_TEST

START_TEST(test_plain_ready_only_while_a_worker_is_healthy)
{
	build(NULL);
	uint32_t a = rfx_worker(&fx, "http://a", "default-model", STATEBUS_WORKER_PLAIN, false);
	check_now();
	ck_assert(!rd.ready);
	ck_assert_str_eq(rd.code, "no_healthy_workers");
	ck_assert_str_eq(rd.message, "model \"default-model\": bucket \"default\" has no healthy "
				     "plain worker (1 worker(s) of the model known)");
	set_health(a, true);
	check_now();
	ck_assert(rd.ready);
	ck_assert_ptr_null(rd.code);
	ck_assert_str_eq(rd.message, "model \"default-model\": bucket \"default\" has 1 healthy "
				     "worker(s)");
	set_health(a, false);
	check_now();
	ck_assert(!rd.ready);
}
END_TEST

/* PD: both stages healthy in one bucket; either missing names the stage. */
START_TEST(test_pd_needs_healthy_prefill_and_decode)
{
	build(pd_bucket);
	uint32_t d = rfx_worker(&fx, "http://d", "default-model", STATEBUS_WORKER_DECODE, true);
	check_now();
	ck_assert(!rd.ready);
	ck_assert_str_eq(rd.code, "no_prefill_workers_available");
	ck_assert_str_eq(rd.message, "model \"default-model\": bucket \"pd\" has 0 healthy prefill "
				     "and 1 healthy decode worker(s); a PD selection needs both");
	uint32_t p = rfx_worker(&fx, "http://p", "default-model", STATEBUS_WORKER_PREFILL, false);
	check_now();
	ck_assert_str_eq(rd.code, "no_prefill_workers_available"); /* prefill known, unhealthy */
	set_health(p, true);
	check_now();
	ck_assert(rd.ready);
	set_health(d, false);
	check_now();
	ck_assert(!rd.ready);
	ck_assert_str_eq(rd.code, "no_decode_workers_available");
	set_health(p, false);
	check_now();
	ck_assert_str_eq(rd.code, "no_healthy_workers");
}
END_TEST

/* A healthy worker outside a group's explicit membership is no candidate. */
START_TEST(test_membership_counts)
{
	build("workers:\n"
	      "  - {url: http://x, role: plain}\n"
	      "  - {url: http://y, role: plain}\n"
	      "buckets:\n"
	      "  - id: only-x\n"
	      "    groups: {plain: {worker_ids: [http://x]}}\n");
	uint32_t y = rfx_worker(&fx, "http://y", "default-model", STATEBUS_WORKER_PLAIN, true);
	(void)y;
	uint32_t x = rfx_worker(&fx, "http://x", "default-model", STATEBUS_WORKER_PLAIN, false);
	check_now();
	ck_assert(!rd.ready);
	ck_assert_str_eq(rd.code, "no_healthy_workers");
	set_health(x, true);
	check_now();
	ck_assert(rd.ready);
}
END_TEST

/* One model that can be served is enough, through the buckets that serve
 * it; the most specific failure wins when none can (a PD bucket with one
 * stage over an empty plain group). */
START_TEST(test_any_model_is_enough_and_the_reason_is_the_most_specific)
{
	build("buckets:\n"
	      "  - id: plain\n"
	      "    models: [m2]\n"
	      "    groups: {plain: {}}\n"
	      "  - id: pd\n"
	      "    groups: {prefill: {}, decode: {}}\n");
	uint32_t b = rfx_worker(&fx, "http://b", "m2", STATEBUS_WORKER_PLAIN, false);
	rfx_worker(&fx, "http://p", "m1", STATEBUS_WORKER_PREFILL, true);
	rfx_worker(&fx, "http://a", "m1", STATEBUS_WORKER_PLAIN, true); /* no bucket serves m1 plain */
	check_now();
	ck_assert(!rd.ready);
	ck_assert_str_eq(rd.code, "no_decode_workers_available");
	set_health(b, true);
	check_now();
	ck_assert(rd.ready);
	ck_assert_str_eq(rd.message, "model \"m2\": bucket \"plain\" has 1 healthy worker(s)");
	rfx_worker(&fx, "http://d", "m1", STATEBUS_WORKER_DECODE, true);
	set_health(b, false);
	check_now();
	ck_assert(rd.ready);
	ck_assert_str_eq(rd.message, "model \"m1\": bucket \"pd\" has 1 healthy prefill and 1 "
				     "healthy decode worker(s)");
}
END_TEST

/* The health table counts as in selection (one candidate filter): healthy
 * workers that are passively down, stalled or breaker-open are no
 * candidates, the reason says how many of each; a probe that passes brings
 * one back; a breaker past its cool-down (its half-open probe free) counts. */
START_TEST(test_health_table_marks_leave_candidates_out)
{
	build("router: {cb_threshold: 2, cb_cool_down_secs: 10}\n");
	uint32_t a = rfx_worker(&fx, "http://a", "default-model", STATEBUS_WORKER_PLAIN, true);
	uint32_t b = rfx_worker(&fx, "http://b", "default-model", STATEBUS_WORKER_PLAIN, true);
	uint32_t c = rfx_worker(&fx, "http://c", "default-model", STATEBUS_WORKER_PLAIN, true);
	check_now();
	ck_assert(rd.ready);
	ck_assert_str_eq(rd.message, "model \"default-model\": bucket \"default\" has 3 healthy "
				     "worker(s)");
	ck_assert(statebus_health_mark_down(fx.r, a, rfx_gen(&fx, a), STATEBUS_DOWN_CONNECT,
					    RF_NOW - 100));
	ck_assert(statebus_health_mark_stalled(fx.r, b, rfx_gen(&fx, b), RF_NOW - 100));
	check_now();
	ck_assert(rd.ready);
	ck_assert_str_eq(rd.message, "model \"default-model\": bucket \"default\" has 1 healthy "
				     "worker(s)");
	for (int i = 0; i < 2; i++)
		statebus_breaker_report(fx.r, c, rfx_gen(&fx, c), 2, STATEBUS_CB_FAILURE, RF_NOW - 100);
	check_now();
	ck_assert(!rd.ready);
	ck_assert_str_eq(rd.code, "no_healthy_workers");
	ck_assert_str_eq(rd.message, "model \"default-model\": bucket \"default\" has no healthy "
				     "plain worker (3 worker(s) of the model known; left out: 1 "
				     "passively down, 1 stalled, 1 breaker open)");
	/* a probe sent after the mark passes: a is back */
	ck_assert_uint_eq(statebus_health_probe_ok(fx.r, a, rfx_gen(&fx, a), RF_NOW - 50, RF_NOW),
			  STATEBUS_HEALTH_CLEARED_DOWN);
	check_now();
	ck_assert(rd.ready);
	ck_assert_str_eq(rd.message, "model \"default-model\": bucket \"default\" has 1 healthy "
				     "worker(s)");
	/* a down again; c's cool-down over: its half-open probe makes it one */
	ck_assert(statebus_health_mark_down(fx.r, a, rfx_gen(&fx, a), STATEBUS_DOWN_RESET, RF_NOW));
	check_now();
	ck_assert(!rd.ready);
	router_readiness_check(gen, fx.r, RF_NOW - 100 + 10 * UINT64_C(1000000000), &rd);
	ck_assert(rd.ready);
	/* the readiness check took no probe: a pick still gets it */
	ck_assert(statebus_breaker_take_probe(fx.r, c, rfx_gen(&fx, c),
					      RF_NOW - 100 + 10 * UINT64_C(1000000000),
					      10 * UINT64_C(1000000000)));
	router_readiness_check(gen, fx.r, RF_NOW - 99 + 10 * UINT64_C(1000000000), &rd);
	ck_assert(!rd.ready);
}
END_TEST

/* PD: a stalled decode leaves a bucket with only its prefill stage. */
START_TEST(test_pd_stage_left_out_by_a_stall)
{
	build(pd_bucket);
	rfx_worker(&fx, "http://p", "default-model", STATEBUS_WORKER_PREFILL, true);
	uint32_t d = rfx_worker(&fx, "http://d", "default-model", STATEBUS_WORKER_DECODE, true);
	check_now();
	ck_assert(rd.ready);
	ck_assert(statebus_health_mark_stalled(fx.r, d, rfx_gen(&fx, d), RF_NOW - 10));
	check_now();
	ck_assert(!rd.ready);
	ck_assert_str_eq(rd.code, "no_decode_workers_available");
	ck_assert_str_eq(rd.message, "model \"default-model\": bucket \"pd\" has 1 healthy prefill "
				     "and 0 healthy decode worker(s); a PD selection needs both; left "
				     "out: 0 passively down, 1 stalled, 0 breaker open");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("readiness");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_no_worker_known_is_not_ready);
	tcase_add_test(tc, test_plain_ready_only_while_a_worker_is_healthy);
	tcase_add_test(tc, test_pd_needs_healthy_prefill_and_decode);
	tcase_add_test(tc, test_membership_counts);
	tcase_add_test(tc, test_any_model_is_enough_and_the_reason_is_the_most_specific);
	tcase_add_test(tc, test_health_table_marks_leave_candidates_out);
	tcase_add_test(tc, test_pd_stage_left_out_by_a_stall);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sy_check_run(suite());
}
