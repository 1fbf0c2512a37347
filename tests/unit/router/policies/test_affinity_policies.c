/* test_affinity_policies.c — session_aware, sticky and load_based
 * (reference/policy-defaults.md §4.1, §4.3, §4.4; scenario 25 with its exact
 * numbers) over a real state-plane region and its affinity store, plus their
 * configuration: inheritance and the rejected combinations, and the bucket
 * loop (a rejected binding advances the bucket and stays). */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "router/core/generation.h"
#include "router/policies/policy.h"
#include "router/core/select.h"
#include "tests/unit/router/router_fixture.h"
#include "tests/unit/sy_check.h"

static struct rfx fx;
static struct pick_request req;
static struct policy pol;

static void setup(void)
{
	rfx_open(&fx);
	router_rng_seed(7);
	memset(&req, 0, sizeof(req));
	req.model.ptr = "m";
	req.model.len = 1;
	req.n = 1;
	memset(&pol, 0, sizeof(pol));
}

static void teardown(void)
{
	policy_destroy(&pol);
	rfx_close(&fx);
}

static void key(struct router_span *s, const char *v)
{
	s->ptr = v;
	s->len = v ? strlen(v) : 0;
}

static struct pick_ctx ctx_of(struct engine_candidate *c, size_t n, struct pick_rejections *rej)
{
	for (size_t i = 0; i < n; i++)
		c[i].load_read = false; /* a new pick: a new snapshot */
	struct pick_ctx x = {.req = &req, .region = fx.r, .now_ns = RF_NOW, .stage = STAGE_PLAIN,
			     .bucket_id = "default", .cands = c, .n = n, .rej = rej};
	return x;
}

static void init(enum policy_kind k, const struct admission_limits *lim)
{
	const char *why = NULL;
	ck_assert_int_eq(policy_init(&pol, k, STAGE_PLAIN, lim, 2, &why), SY_OK);
}

static const char *ids[] = {"http://a", "http://b", "http://c", "http://d", "http://e"};

/* n plain workers a, b, ... of model m; cands filled in ID order. */
static void workers(struct engine_candidate *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t s = rfx_worker(&fx, ids[i], "m", STATEBUS_WORKER_PLAIN, true);
		c[i] = rfx_cand(&fx, s, ids[i]);
	}
}

static enum pick_outcome pick(struct engine_candidate *c, size_t n, struct pick *out)
{
	struct pick_ctx x = ctx_of(c, n, NULL);
	return policy_pick(&pol, &x, out);
}

static uint32_t bound_count(void)
{
	struct statebus_affinity_stats st;
	statebus_affinity_stats(fx.r, &st);
	return st.bound;
}

/* ---- session_aware (§4.3) --------------------------------------------------- */

START_TEST(test_session_without_key_uses_power_of_n_and_binds_nothing)
{
	struct engine_candidate c[3];
	workers(c, 3);
	init(POLICY_SESSION_AWARE, NULL);
	struct pick out;
	ck_assert_int_eq(pick(c, 3, &out), PICK_OK);
	ck_assert_str_eq(out.reason, "no_session");
	key(&req.session_key, "");
	ck_assert_int_eq(pick(c, 3, &out), PICK_OK);
	ck_assert_str_eq(out.reason, "no_session");
	ck_assert_uint_eq(bound_count(), 0);
}
END_TEST

START_TEST(test_session_first_pick_is_assigned_then_reused_as_primary)
{
	struct engine_candidate c[4];
	workers(c, 4);
	init(POLICY_SESSION_AWARE, NULL);
	key(&req.session_key, "s-1");
	struct pick out;
	ck_assert_int_eq(pick(c, 4, &out), PICK_OK);
	ck_assert_str_eq(out.reason, "assigned");
	const char *first = out.worker->id;
	for (int i = 0; i < 10; i++) {
		ck_assert_int_eq(pick(c, 4, &out), PICK_OK);
		ck_assert_str_eq(out.reason, "session_primary");
		ck_assert_str_eq(out.worker->id, first);
	}
	ck_assert_uint_eq(bound_count(), 1);
}
END_TEST

START_TEST(test_session_binding_of_another_router_is_reused)
{
	struct engine_candidate c[3];
	workers(c, 3);
	init(POLICY_SESSION_AWARE, NULL);
	key(&req.session_key, "s-2");
	/* Another router process bound the session to c (scope: model m,
	 * bucket default, stage plain). */
	struct statebus_affinity_key k;
	statebus_affinity_key_make(STATEBUS_AFFINITY_SESSION, 0, "m", 1, "default", 7, "s-2", 3, &k);
	struct statebus_affinity_binding b;
	ck_assert_int_eq(statebus_affinity_bind(fx.r, &k, STATEBUS_AFFINITY_SESSION, c[2].slot,
						c[2].generation, 600000, RF_NOW, &b), SY_OK);
	struct pick out;
	ck_assert_int_eq(pick(c, 3, &out), PICK_OK);
	ck_assert_str_eq(out.reason, "session_primary");
	ck_assert_str_eq(out.worker->id, "http://c");
}
END_TEST

START_TEST(test_session_rejected_binding_is_admission_rejected_and_kept)
{
	struct engine_candidate c[2];
	workers(c, 2);
	struct admission_limits lim;
	admission_limits_none(&lim);
	lim.max_inflight_requests = 1;
	init(POLICY_SESSION_AWARE, &lim);
	key(&req.session_key, "s-3");
	struct pick out;
	ck_assert_int_eq(pick(c, 2, &out), PICK_OK);
	const struct engine_candidate *w = out.worker;
	uint32_t slot = w->slot;
	rfx_inflight(&fx, slot, 1); /* the bound worker is now at its cap */
	struct pick_rejections rej = {0};
	struct pick_ctx x = ctx_of(c, 2, &rej);
	ck_assert_int_eq(policy_pick(&pol, &x, &out), PICK_ADMISSION_REJECTED);
	ck_assert_int_eq(out.rejected_by, ADMIT_MAX_INFLIGHT_REQUESTS);
	ck_assert_uint_eq(rej.count, 1);
	/* Never a silent move to the other worker: the binding stays. */
	struct statebus_affinity_key k;
	statebus_affinity_key_make(STATEBUS_AFFINITY_SESSION, 0, "m", 1, "default", 7, "s-3", 3, &k);
	struct statebus_affinity_binding b;
	ck_assert_int_eq(statebus_affinity_lookup(fx.r, &k, 0, &b), SY_OK);
	ck_assert_uint_eq(b.worker, slot);
}
END_TEST

START_TEST(test_session_binds_only_after_admission)
{
	struct engine_candidate c[1];
	workers(c, 1);
	struct admission_limits lim;
	admission_limits_none(&lim);
	lim.max_inflight_requests = 1;
	init(POLICY_SESSION_AWARE, &lim);
	rfx_inflight(&fx, c[0].slot, 1);
	key(&req.session_key, "s-4");
	struct pick out;
	ck_assert_int_eq(pick(c, 1, &out), PICK_ADMISSION_REJECTED);
	ck_assert_uint_eq(bound_count(), 0);
	/* A binding records placement, never dispatch accounting. */
	statebus_inflight_release(fx.r, fx.proc, c[0].slot);
	ck_assert_int_eq(pick(c, 1, &out), PICK_OK);
	ck_assert_str_eq(out.reason, "assigned");
	int64_t inflight = -1;
	statebus_inflight_sum(fx.r, c[0].slot, &inflight, NULL);
	ck_assert_int_eq(inflight, 0);
	ck_assert_uint_eq(bound_count(), 1);
}
END_TEST

START_TEST(test_session_bound_to_a_removed_worker_is_reassigned)
{
	struct engine_candidate c[3];
	workers(c, 3);
	init(POLICY_SESSION_AWARE, NULL);
	key(&req.session_key, "s-5");
	struct pick out;
	ck_assert_int_eq(pick(c, 3, &out), PICK_OK);
	size_t gone = (size_t)(out.worker - c);
	ck_assert_int_eq(statebus_worker_remove(fx.r, c[gone].slot, c[gone].generation), SY_OK);
	struct engine_candidate left[2];
	for (size_t i = 0, j = 0; i < 3; i++)
		if (i != gone)
			left[j++] = c[i];
	ck_assert_int_eq(pick(left, 2, &out), PICK_OK);
	ck_assert_str_eq(out.reason, "assigned");
	const char *now = out.worker->id;
	ck_assert_int_eq(pick(left, 2, &out), PICK_OK);
	ck_assert_str_eq(out.reason, "session_primary");
	ck_assert_str_eq(out.worker->id, now);
	ck_assert_uint_eq(bound_count(), 1); /* replaced in place, by CAS */
	struct statebus_affinity_stats st;
	statebus_affinity_stats(fx.r, &st);
	ck_assert_uint_eq(st.rebinds, 1);
}
END_TEST

START_TEST(test_session_scopes_bucket_and_stage)
{
	struct engine_candidate c[4];
	workers(c, 4);
	init(POLICY_SESSION_AWARE, NULL);
	key(&req.session_key, "s-6");
	struct pick out;
	struct pick_ctx x = ctx_of(c, 4, NULL);
	ck_assert_int_eq(policy_pick(&pol, &x, &out), PICK_OK);
	x = ctx_of(c, 4, NULL);
	x.bucket_id = "other";
	ck_assert_int_eq(policy_pick(&pol, &x, &out), PICK_OK);
	ck_assert_str_eq(out.reason, "assigned"); /* a new scope */
	ck_assert_uint_eq(bound_count(), 2);
}
END_TEST

/* ---- sticky (§4.4, scenario 25) ------------------------------------------------ */

START_TEST(test_sticky_no_key_falls_back_without_pin_scenario25)
{
	struct engine_candidate c[3];
	workers(c, 3);
	init(POLICY_STICKY, NULL);
	struct pick out;
	/* round_robin fallback walks a, b, c */
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(pick(c, 3, &out), PICK_OK);
		ck_assert_str_eq(out.reason, "no_routing_key");
		ck_assert_str_eq(out.worker->id, ids[i]);
	}
	ck_assert_uint_eq(bound_count(), 0);
}
END_TEST

START_TEST(test_sticky_key_is_stable_over_10_calls_and_new_workers_scenario25)
{
	struct engine_candidate c[4];
	workers(c, 4);
	init(POLICY_STICKY, NULL);
	key(&req.routing_key, "user-1");
	struct pick out;
	ck_assert_int_eq(pick(c, 3, &out), PICK_OK);
	ck_assert_str_eq(out.reason, "sticky_new");
	const char *pinned = out.worker->id;
	for (int i = 0; i < 10; i++) {
		ck_assert_int_eq(pick(c, 3, &out), PICK_OK);
		ck_assert_str_eq(out.reason, "sticky_hit");
		ck_assert_str_eq(out.worker->id, pinned);
	}
	/* Adding a worker (d) does not move the key. */
	for (int i = 0; i < 10; i++) {
		ck_assert_int_eq(pick(c, 4, &out), PICK_OK);
		ck_assert_str_eq(out.worker->id, pinned);
	}
}
END_TEST

START_TEST(test_sticky_unhealthy_pin_is_remapped_scenario25)
{
	struct engine_candidate c[3];
	workers(c, 3);
	init(POLICY_STICKY, NULL);
	key(&req.routing_key, "user-2");
	struct pick out;
	ck_assert_int_eq(pick(c, 3, &out), PICK_OK);
	size_t pinned = (size_t)(out.worker - c);
	/* Unhealthy workers are filtered out of the candidates. */
	struct engine_candidate healthy[2];
	for (size_t i = 0, j = 0; i < 3; i++)
		if (i != pinned)
			healthy[j++] = c[i];
	ck_assert_int_eq(pick(healthy, 2, &out), PICK_OK);
	ck_assert_str_eq(out.reason, "sticky_remap");
	const char *again = out.worker->id;
	ck_assert_str_ne(again, ids[pinned]);
	/* The new pin holds, also once the old worker is healthy again. */
	ck_assert_int_eq(pick(c, 3, &out), PICK_OK);
	ck_assert_str_eq(out.reason, "sticky_hit");
	ck_assert_str_eq(out.worker->id, again);
}
END_TEST

START_TEST(test_sticky_idle_10s_sweep_at_11s_removes_only_old_scenario25)
{
	struct engine_candidate c[2];
	workers(c, 2);
	init(POLICY_STICKY, NULL);
	const char *why;
	ck_assert_int_eq(policy_set_affinity(&pol, POLICY_ROUND_ROBIN, 0, 10000, &why), SY_OK);
	struct pick out;
	struct pick_ctx x;
	key(&req.routing_key, "old");
	x = ctx_of(c, 2, NULL);
	x.now_ns = RF_NOW; /* t0 */
	ck_assert_int_eq(policy_pick(&pol, &x, &out), PICK_OK);
	key(&req.routing_key, "new");
	x = ctx_of(c, 2, NULL);
	x.now_ns = RF_NOW + 6 * RF_SEC; /* t6 */
	ck_assert_int_eq(policy_pick(&pol, &x, &out), PICK_OK);
	ck_assert_int_eq(statebus_affinity_sweep(fx.r, RF_NOW + 11 * RF_SEC, NULL), 1);
	ck_assert_uint_eq(bound_count(), 1);
	x = ctx_of(c, 2, NULL);
	x.now_ns = RF_NOW + 11 * RF_SEC;
	ck_assert_int_eq(policy_pick(&pol, &x, &out), PICK_OK);
	ck_assert_str_eq(out.reason, "sticky_hit"); /* "new" kept */
	key(&req.routing_key, "old");
	x = ctx_of(c, 2, NULL);
	x.now_ns = RF_NOW + 11 * RF_SEC;
	ck_assert_int_eq(policy_pick(&pol, &x, &out), PICK_OK);
	ck_assert_str_eq(out.reason, "sticky_new"); /* "old" was swept */
}
END_TEST

START_TEST(test_sticky_fallback_kinds_and_refusals)
{
	struct engine_candidate c[3];
	workers(c, 3);
	init(POLICY_STICKY, NULL);
	const char *why = NULL;
	ck_assert_int_eq(policy_set_affinity(&pol, POLICY_LOAD_BASED, 0, 0, &why), SY_OK);
	ck_assert_int_eq(pol.fallback->kind, POLICY_LOAD_BASED);
	ck_assert_uint_eq(pol.idle_ttl_ms, 600000);
	rfx_inflight(&fx, c[0].slot, 2);
	rfx_inflight(&fx, c[2].slot, 1);
	key(&req.routing_key, "lb");
	struct pick out;
	ck_assert_int_eq(pick(c, 3, &out), PICK_OK);
	ck_assert_str_eq(out.worker->id, "http://b"); /* least local in-flight */
	ck_assert_int_eq(policy_set_affinity(&pol, POLICY_RANDOM, 0, 0, &why), SY_OK);
	ck_assert_int_eq(policy_set_affinity(&pol, POLICY_POWER_OF_N, 2, 0, &why), SY_OK);
	ck_assert_uint_eq(pol.fallback->n_choices, 2);
	ck_assert_int_eq(policy_set_affinity(&pol, POLICY_STICKY, 0, 0, &why), SY_EINVAL);
	ck_assert_str_eq(why, "a sticky fallback must be round_robin, random, power_of_two, "
			      "power_of_n or load_based");
	ck_assert_int_eq(policy_set_affinity(&pol, POLICY_SESSION_AWARE, 0, 0, &why), SY_EINVAL);
	struct policy rr;
	ck_assert_int_eq(policy_init(&rr, POLICY_ROUND_ROBIN, STAGE_PLAIN, NULL, 2, &why), SY_OK);
	ck_assert_int_eq(policy_set_affinity(&rr, POLICY_RANDOM, 0, 0, &why), SY_EINVAL);
	policy_destroy(&rr);
}
END_TEST

/* ---- load_based (§4.1) --------------------------------------------------------- */

START_TEST(test_load_based_fresh_load_includes_dispatches_since_capture)
{
	struct engine_candidate c[2];
	workers(c, 2);
	init(POLICY_LOAD_BASED, NULL);
	/* a: waiting 1 + running 1 = 2; b: waiting 3 + running 2 = 5 */
	rfx_report(&fx, c[0].slot, (struct rfx_load){.running = 1, .waiting = 1, .kv_cap = 100});
	rfx_report(&fx, c[1].slot, (struct rfx_load){.running = 2, .waiting = 3, .kv_cap = 100});
	struct pick out;
	ck_assert_int_eq(pick(c, 2, &out), PICK_OK);
	ck_assert_str_eq(out.worker->id, "http://a");
	ck_assert_str_eq(out.reason, "load_based");
	/* Four dispatches to a after its report: 2 + 4 = 6 > 5 → b. */
	rfx_inflight(&fx, c[0].slot, 4);
	ck_assert_int_eq(pick(c, 2, &out), PICK_OK);
	ck_assert_uint_eq(c[0].load.dispatches_since_capture, 4);
	ck_assert_str_eq(out.worker->id, "http://b");
	/* A new report of a counts them itself: the correction restarts. */
	rfx_report(&fx, c[0].slot, (struct rfx_load){.running = 3, .waiting = 1, .kv_cap = 100});
	ck_assert_int_eq(pick(c, 2, &out), PICK_OK);
	ck_assert_uint_eq(c[0].load.dispatches_since_capture, 0);
	ck_assert_str_eq(out.worker->id, "http://a"); /* 4 < 5 */
}
END_TEST

START_TEST(test_load_based_any_unusable_report_falls_back_to_local_active_for_all)
{
	struct engine_candidate c[2];
	workers(c, 2);
	init(POLICY_LOAD_BASED, NULL);
	rfx_report(&fx, c[0].slot, (struct rfx_load){.running = 0, .waiting = 0, .kv_cap = 100});
	rfx_report(&fx, c[1].slot, (struct rfx_load){.running = 50, .waiting = 50, .kv_cap = 100,
						     .age_ns = 3600 * RF_SEC}); /* stale */
	rfx_inflight(&fx, c[0].slot, 5);
	rfx_inflight(&fx, c[1].slot, 1);
	struct pick out;
	ck_assert_int_eq(pick(c, 2, &out), PICK_OK);
	ck_assert_str_eq(out.worker->id, "http://b"); /* local 1 < 5, reports ignored */
}
END_TEST

START_TEST(test_load_based_ties_rotate_and_admission_runs_on_the_winner)
{
	struct engine_candidate c[3];
	workers(c, 3);
	struct admission_limits lim;
	admission_limits_none(&lim);
	lim.max_inflight_requests = 1;
	init(POLICY_LOAD_BASED, &lim);
	struct pick out;
	const char *want[] = {"http://a", "http://b", "http://c", "http://a"};
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(pick(c, 3, &out), PICK_OK);
		ck_assert_str_eq(out.worker->id, want[i]);
	}
	/* All loaded equally at the cap: the tie winner is rejected, no retry. */
	for (int i = 0; i < 3; i++)
		rfx_inflight(&fx, c[i].slot, 1);
	ck_assert_int_eq(pick(c, 3, &out), PICK_ADMISSION_REJECTED);
	ck_assert_int_eq(out.rejected_by, ADMIT_MAX_INFLIGHT_REQUESTS);
}
END_TEST

/* ---- configuration and the bucket loop ---------------------------------------- */

static struct sy_config cfg;
static struct sy_config_error cerr;
static struct router_gen *gen;

static void gsetup(void)
{
	setup();
	ck_assert_int_eq(sy_config_init_defaults(&cfg), SY_OK);
	gen = NULL;
	req.model.ptr = "default-model";
	req.model.len = strlen(req.model.ptr);
	req.input_tokens = 10;
}

static void gteardown(void)
{
	router_gen_unref(gen);
	sy_config_free(&cfg);
	teardown();
}

static int build(const char *yaml)
{
	if (yaml != NULL) {
		int rc = sy_config_load_string(&cfg, "t.yaml", yaml, strlen(yaml), &cerr);
		if (rc != SY_OK)
			return rc;
	}
	int rc = sy_config_finish(&cfg, &cerr);
	if (rc != SY_OK)
		return rc;
	rc = router_gen_build(&cfg, 1, &gen, &cerr);
	if (rc == SY_OK)
		router_gen_set_fleet_refresh(gen, 0);
	return rc;
}

START_TEST(test_config_affinity_options_inherit_from_the_top_policy)
{
	ck_assert_int_eq(build("policy: {type: sticky, sticky_fallback: power_of_two,\n"
			       "         affinity_idle_timeout_secs: 30}\n"
			       "buckets:\n"
			       "  - {id: a, groups: {plain: {}}}\n"
			       "  - {id: b, groups: {plain: {policy: {type: session_aware}}}}\n"),
			 SY_OK);
	const struct policy *a = &gen->buckets[0].plain.policy, *b = &gen->buckets[1].plain.policy;
	ck_assert_int_eq(a->kind, POLICY_STICKY);
	ck_assert_int_eq(a->fallback->kind, POLICY_POWER_OF_N);
	ck_assert_uint_eq(a->fallback->n_choices, 2);
	ck_assert_uint_eq(a->idle_ttl_ms, 30000);
	ck_assert_int_eq(b->kind, POLICY_SESSION_AWARE);
	ck_assert_int_eq(b->fallback->kind, POLICY_POWER_OF_N);
	ck_assert_uint_eq(b->idle_ttl_ms, 30000);
}
END_TEST

START_TEST(test_config_sticky_fallback_on_another_policy_is_refused)
{
	ck_assert_int_eq(build("buckets:\n"
			       "  - id: a\n"
			       "    groups: {plain: {policy: {type: power_of_n, sticky_fallback: random}}}\n"),
			 SY_ECONFIG);
	ck_assert_str_eq(cerr.msg, "t.yaml:3:30: buckets[0].groups.plain.policy.sticky_fallback: "
				   "only valid with policy sticky (this group runs power_of_n); use type "
				   "sticky, or remove it");
}
END_TEST

START_TEST(test_config_top_level_affinity_keys_without_an_affinity_group_are_refused)
{
	ck_assert_int_eq(sy_config_apply_flag(&cfg, "router", "--sticky-fallback", "random", &cerr),
			 SY_OK);
	ck_assert_int_eq(build(NULL), SY_ECONFIG);
	ck_assert_str_eq(cerr.msg, "policy.sticky_fallback: no group runs policy sticky; use --policy "
				   "sticky, or remove it");
	sy_config_free(&cfg);
	ck_assert_int_eq(sy_config_init_defaults(&cfg), SY_OK);
	ck_assert_int_eq(sy_config_apply_flag(&cfg, "router", "--affinity-idle-timeout-secs", "60",
					      &cerr), SY_OK);
	ck_assert_int_eq(build(NULL), SY_ECONFIG);
	ck_assert_str_eq(cerr.msg, "policy.affinity_idle_timeout_secs: no group runs policy "
				   "session_aware or sticky; use --policy session_aware or sticky, "
				   "or remove it");
}
END_TEST

START_TEST(test_config_refused_affinity_values_name_the_replacement)
{
	ck_assert_int_ne(sy_config_apply_flag(&cfg, "router", "--affinity-mode", "soft", &cerr), SY_OK);
	ck_assert_ptr_nonnull(strstr(cerr.msg, "rejected in reorg; use strict"));
	ck_assert_int_ne(sy_config_apply_flag(&cfg, "router", "--session-affinity-mode",
					      "global-rebind", &cerr), SY_OK);
	ck_assert_ptr_nonnull(strstr(cerr.msg, "session bindings are scoped by bucket and stage; "
					       "use bucket"));
	ck_assert_int_ne(sy_config_apply_flag(&cfg, "router", "--sticky-fallback", "sticky", &cerr),
			 SY_OK);
	ck_assert_ptr_nonnull(strstr(cerr.msg, "must be round_robin, random, power_of_two, "
					       "power_of_n or load_based"));
	ck_assert_int_eq(sy_config_apply_flag(&cfg, "router", "--session-affinity-mode", "bucket",
					      &cerr), SY_OK);
}
END_TEST

START_TEST(test_config_pressure_guard_keys_without_cache_aware_are_refused)
{
	/* On a session_aware group: the key is named. */
	ck_assert_int_eq(build("buckets:\n"
			       "  - id: a\n"
			       "    groups: {plain: {policy: {type: session_aware, "
			       "pressure_rel_threshold: 2}}}\n"),
			 SY_ECONFIG);
	ck_assert_ptr_nonnull(strstr(cerr.msg, "buckets[0].groups.plain.policy."
					       "pressure_rel_threshold: the pressure guard applies "
					       "to cache_aware only (this group runs session_aware)"));
	sy_config_free(&cfg);
	ck_assert_int_eq(sy_config_init_defaults(&cfg), SY_OK);
	ck_assert_int_eq(build("buckets:\n"
			       "  - id: a\n"
			       "    groups: {plain: {policy: {type: session_aware, "
			       "disable_pressure_guard: true}}}\n"),
			 SY_ECONFIG);
	ck_assert_ptr_nonnull(strstr(cerr.msg, "policy.disable_pressure_guard: the pressure guard "
					       "applies to cache_aware only"));
	/* Each key at the top level of a session_aware-only router. */
	static const char *const flags[][2] = {
		{"--disable-pressure-guard", "true"},
		{"--pressure-abs-threshold-tokens", "512"},
		{"--pressure-abs-threshold-ms", "20"},
		{"--pressure-rel-threshold", "2"},
	};
	static const char *const keys[] = {"disable_pressure_guard", "pressure_abs_threshold_tokens",
					   "pressure_abs_threshold_ms", "pressure_rel_threshold"};
	for (size_t i = 0; i < 4; i++) {
		sy_config_free(&cfg);
		ck_assert_int_eq(sy_config_init_defaults(&cfg), SY_OK);
		ck_assert_int_eq(sy_config_apply_flag(&cfg, "router", "--policy", "session_aware",
						      &cerr), SY_OK);
		ck_assert_int_eq(sy_config_apply_flag(&cfg, "router", flags[i][0], flags[i][1],
						      &cerr), SY_OK);
		ck_assert_int_eq(build(NULL), SY_ECONFIG);
		char want[192];
		snprintf(want, sizeof(want), "policy.%s: the pressure guard applies to cache_aware "
					     "only (no group runs cache_aware); use --policy "
					     "cache_aware, or remove it", keys[i]);
		ck_assert_str_eq(cerr.msg, want);
	}
	/* Inherited by a cache_aware group beside a session_aware one: accepted. */
	sy_config_free(&cfg);
	ck_assert_int_eq(sy_config_init_defaults(&cfg), SY_OK);
	ck_assert_int_eq(build("policy: {type: session_aware, pressure_rel_threshold: 2}\n"
			       "buckets:\n"
			       "  - {id: a, groups: {plain: {}}}\n"
			       "  - {id: b, groups: {plain: {policy: {type: cache_aware}}}}\n"),
			 SY_OK);
}
END_TEST

START_TEST(test_session_rejection_advances_the_bucket_and_keeps_the_binding)
{
	ck_assert_int_eq(build("policy: {type: session_aware}\n"
			       "buckets:\n"
			       "  - id: small\n"
			       "    limits: {max: 100}\n"
			       "    groups: {plain: {worker_ids: [http://a],\n"
			       "             policy: {admission: {max_inflight_requests: 1}}}}\n"
			       "  - {id: big, groups: {plain: {worker_ids: [http://b]}}}\n"),
			 SY_OK);
	uint32_t a = rfx_worker(&fx, "http://a", "default-model", STATEBUS_WORKER_PLAIN, true);
	rfx_worker(&fx, "http://b", "default-model", STATEBUS_WORKER_PLAIN, true);
	key(&req.session_key, "chat-9");
	struct selection sel;
	struct router_error err;
	ck_assert_int_eq(router_select(gen, fx.r, &req, RF_NOW, &sel, &err), SY_OK);
	ck_assert_str_eq(sel.bucket_id, "small");
	ck_assert_str_eq(sel.worker.id, "http://a");
	ck_assert_str_eq(sel.reason, "assigned");
	rfx_inflight(&fx, a, 1); /* a is busy: its binding is rejected */
	ck_assert_int_eq(router_select(gen, fx.r, &req, RF_NOW, &sel, &err), SY_OK);
	ck_assert_str_eq(sel.bucket_id, "big");
	ck_assert_str_eq(sel.worker.id, "http://b");
	ck_assert_uint_eq(sel.buckets_tried, 2);
	statebus_inflight_release(fx.r, fx.proc, a);
	ck_assert_int_eq(router_select(gen, fx.r, &req, RF_NOW, &sel, &err), SY_OK);
	ck_assert_str_eq(sel.bucket_id, "small");
	ck_assert_str_eq(sel.worker.id, "http://a");
	ck_assert_str_eq(sel.reason, "session_primary");
	ck_assert_uint_eq(bound_count(), 2); /* one binding per bucket scope */
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("affinity_policies");
	TCase *tc = tcase_create("policies");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_session_without_key_uses_power_of_n_and_binds_nothing);
	tcase_add_test(tc, test_session_first_pick_is_assigned_then_reused_as_primary);
	tcase_add_test(tc, test_session_binding_of_another_router_is_reused);
	tcase_add_test(tc, test_session_rejected_binding_is_admission_rejected_and_kept);
	tcase_add_test(tc, test_session_binds_only_after_admission);
	tcase_add_test(tc, test_session_bound_to_a_removed_worker_is_reassigned);
	tcase_add_test(tc, test_session_scopes_bucket_and_stage);
	tcase_add_test(tc, test_sticky_no_key_falls_back_without_pin_scenario25);
	tcase_add_test(tc, test_sticky_key_is_stable_over_10_calls_and_new_workers_scenario25);
	tcase_add_test(tc, test_sticky_unhealthy_pin_is_remapped_scenario25);
	tcase_add_test(tc, test_sticky_idle_10s_sweep_at_11s_removes_only_old_scenario25);
	tcase_add_test(tc, test_sticky_fallback_kinds_and_refusals);
	tcase_add_test(tc, test_load_based_fresh_load_includes_dispatches_since_capture);
	tcase_add_test(tc, test_load_based_any_unusable_report_falls_back_to_local_active_for_all);
	tcase_add_test(tc, test_load_based_ties_rotate_and_admission_runs_on_the_winner);
	suite_add_tcase(s, tc);
	TCase *tg = tcase_create("config");
	tcase_add_checked_fixture(tg, gsetup, gteardown);
	tcase_add_test(tg, test_config_affinity_options_inherit_from_the_top_policy);
	tcase_add_test(tg, test_config_sticky_fallback_on_another_policy_is_refused);
	tcase_add_test(tg, test_config_top_level_affinity_keys_without_an_affinity_group_are_refused);
	tcase_add_test(tg, test_config_refused_affinity_values_name_the_replacement);
	tcase_add_test(tg, test_config_pressure_guard_keys_without_cache_aware_are_refused);
	tcase_add_test(tg, test_session_rejection_advances_the_bucket_and_keeps_the_binding);
	suite_add_tcase(s, tg);
	return s;
}

int main(void)
{
	return sy_check_run(suite());
}
