/* test_buckets.c — BucketResolver::resolve, EngineGroup::pick and
 * Bucket::pick_engines (router/core/buckets.h; reference/policy-defaults.md §6,
 * scenarios 1–5 with their exact numbers, and the design example). */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "router/core/buckets.h"
#include "tests/unit/router/router_fixture.h"
#include "tests/unit/sy_check.h"

#define UNB BUCKET_UNBOUNDED

/* ---- resolver ------------------------------------------------------------------ */

static struct bucket mk(const char *id, uint64_t min, uint64_t max, uint32_t rank)
{
	struct bucket b = {.id = (char *)id, .rank = rank, .min_input = min, .max_input = max,
			   .max_context = UNB};
	return b;
}

/* Resolves and writes the IDs as "a,b,c" ("" when empty); returns the outcome. */
static enum pick_outcome order(struct bucket_resolver *r, struct bucket_signal sig, char *out,
			       size_t cap)
{
	struct bucket *o[16];
	size_t n = 0;
	const char *why = NULL;
	enum pick_outcome rc = bucket_resolver_resolve(r, &sig, o, 16, &n, &why);
	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		size_t used = strlen(out);
		snprintf(out + used, cap - used, "%s%s", i ? "," : "", o[i]->id);
	}
	return rc;
}

static struct bucket_signal in(uint64_t input) { return (struct bucket_signal){.input_tokens = input}; }

static struct bucket_signal peak(uint64_t input, uint64_t p)
{
	return (struct bucket_signal){.input_tokens = input, .has_peak = true, .expected_peak = p};
}

START_TEST(test_resolver_order_scenario1)
{
	struct bucket b[] = {mk("catch-all", 0, UNB, 0), mk("too-small", 0, 9, 0), mk("z", 0, 20, 1),
			     mk("a", 0, 20, 1),          mk("later", 0, 20, 2),   mk("min", 11, 15, 0)};
	struct bucket_resolver r = {.buckets = b, .n = 6};
	char got[128];
	ck_assert_int_eq(order(&r, in(10), got, sizeof(got)), PICK_OK);
	ck_assert_str_eq(got, "a,z,later,catch-all");
	order(&r, in(11), got, sizeof(got));
	ck_assert_str_eq(got, "min,a,z,later,catch-all");
	order(&r, in(15), got, sizeof(got));
	ck_assert_str_eq(got, "min,a,z,later,catch-all");
	order(&r, in(20), got, sizeof(got));
	ck_assert_str_eq(got, "a,z,later,catch-all");
	order(&r, in(21), got, sizeof(got));
	ck_assert_str_eq(got, "catch-all");
}
END_TEST

START_TEST(test_context_capacity_scenario2)
{
	struct bucket b[] = {mk("short", 0, UNB, 0), mk("long", 0, UNB, 0)};
	b[0].max_context = 20;
	b[1].max_context = 30;
	struct bucket_resolver r = {.buckets = b, .n = 2};
	char got[128];
	order(&r, in(10), got, sizeof(got));
	ck_assert_str_eq(got, "short,long");
	order(&r, peak(10, 20), got, sizeof(got));
	ck_assert_str_eq(got, "short,long");
	order(&r, peak(10, 21), got, sizeof(got));
	ck_assert_str_eq(got, "long");
	ck_assert_int_eq(order(&r, peak(10, 31), got, sizeof(got)), PICK_NO_MATCHING_BUCKET);
	ck_assert_str_eq(got, "");
	ck_assert_int_eq(order(&r, in(31), got, sizeof(got)), PICK_NO_MATCHING_BUCKET);
	ck_assert_int_eq(order(&r, peak(10, 9), got, sizeof(got)), PICK_INVALID_SIGNAL);
	struct bucket_resolver empty = {.buckets = NULL, .n = 0};
	ck_assert_int_eq(order(&empty, in(10), got, sizeof(got)), PICK_NO_MATCHING_BUCKET);
}
END_TEST

START_TEST(test_design_example_4k_input_16k_peak_goes_long)
{
	struct bucket b[] = {mk("short", 0, 4096, 0), mk("long", 0, UNB, 0)};
	b[0].max_context = 8192;
	b[1].max_context = 131072;
	struct bucket_resolver r = {.buckets = b, .n = 2};
	char got[64];
	order(&r, peak(4096, 16384), got, sizeof(got));
	ck_assert_str_eq(got, "long");
	order(&r, peak(4096, 8192), got, sizeof(got));
	ck_assert_str_eq(got, "short,long");
}
END_TEST

static struct bucket slo(const char *id, uint64_t max, uint32_t rank, double ttft, double tps)
{
	struct bucket b = mk(id, 0, max, rank);
	b.ttft_ms = ttft;
	b.tokens_per_second = tps;
	return b;
}

START_TEST(test_slo_tiers_scenario3)
{
	struct bucket b[] = {slo("both", 100, 9, 50, 100),   slo("ttft", 10, 1, 50, 10),
			     slo("tps", 10, 2, 100, 100),    slo("neither", 8, 0, 100, 10),
			     slo("missing", 10, 3, 0, 0),    slo("too-short", 1, 0, 0, 0)};
	struct bucket_resolver r = {.buckets = b, .n = 6};
	struct bucket_signal sig = {.input_tokens = 5, .has_peak = true, .expected_peak = 5,
				    .has_ttft = true, .ttft_ms = 50, .has_tps = true, .tps = 100};
	char got[128];
	order(&r, sig, got, sizeof(got));
	ck_assert_str_eq(got, "neither,ttft,tps,missing,both");
	r.ttft_policy = r.tps_policy = SLO_FIRST;
	order(&r, sig, got, sizeof(got));
	ck_assert_str_eq(got, "both,ttft,tps,neither,missing");
	r.ttft_policy = r.tps_policy = SLO_BEST_EFFORT;
	order(&r, sig, got, sizeof(got));
	ck_assert_str_eq(got, "neither,missing,ttft,tps,both");
	r.ttft_policy = SLO_FIRST;
	r.tps_policy = SLO_BEST_EFFORT;
	order(&r, sig, got, sizeof(got));
	ck_assert_str_eq(got, "ttft,neither,missing,both,tps");

	/* invalid enabled targets */
	struct bucket_signal bad = sig;
	bad.ttft_ms = 0;
	ck_assert_int_eq(order(&r, bad, got, sizeof(got)), PICK_INVALID_SIGNAL);
	double tps_bad[] = {0, -1, NAN, INFINITY};
	for (int i = 0; i < 4; i++) {
		bad = sig;
		bad.tps = tps_bad[i];
		ck_assert_int_eq(order(&r, bad, got, sizeof(got)), PICK_INVALID_SIGNAL);
	}
	/* a request without the target is neutral; a disabled policy ignores it */
	struct bucket_signal none = {.input_tokens = 5, .has_peak = true, .expected_peak = 5};
	order(&r, none, got, sizeof(got));
	ck_assert_str_eq(got, "neither,ttft,tps,missing,both");
	r.ttft_policy = r.tps_policy = SLO_DISABLED;
	bad = sig;
	bad.ttft_ms = 0;
	ck_assert_int_eq(order(&r, bad, got, sizeof(got)), PICK_OK);
}
END_TEST

/* ---- groups ------------------------------------------------------------------------ */

static struct rfx fx;
static struct fleet fl;
static struct engine_candidate s0[64], s1[64];
static struct pick_request req;
static int calls;

static void gsetup(void)
{
	rfx_open(&fx);
	fleet_init(&fl, 0);
	ck_assert_int_eq(fleet_add_static_model(&fl, "m"), SY_OK);
	memset(&req, 0, sizeof(req));
	calls = 0;
	router_rng_seed(7);
}

static void gteardown(void)
{
	fleet_free(&fl);
	rfx_close(&fx);
}

static struct pick_env env_for(const char *model)
{
	fleet_refresh(&fl, fx.r, RF_NOW, true);
	struct pick_env e = {.req = &req, .region = fx.r, .now_ns = RF_NOW, .fleet = &fl,
			     .model_idx = fleet_model_index(&fl, model, strlen(model)),
			     .scratch = {s0, s1}, .scratch_cap = 64};
	return e;
}

static struct engine_group group(enum engine_stage st)
{
	struct engine_group g = {.stage = st, .all_workers = true};
	ck_assert_int_eq(policy_init(&g.policy, POLICY_ROUND_ROBIN, st, NULL, 0, NULL), SY_OK);
	return g;
}

/* Scenario 4 fleet. */
static void fleet4(uint32_t *a, uint32_t *b)
{
	*a = rfx_worker(&fx, "http://a", "m", STATEBUS_WORKER_PLAIN, true);
	*b = rfx_worker(&fx, "http://b", "m", STATEBUS_WORKER_PLAIN, true);
	rfx_worker(&fx, "http://0-unhealthy", "m", STATEBUS_WORKER_PLAIN, false);
	rfx_worker(&fx, "http://0-other", "other-model", STATEBUS_WORKER_PLAIN, true);
	rfx_worker(&fx, "http://p", "m", STATEBUS_WORKER_PREFILL, true);
	rfx_worker(&fx, "http://d", "m", STATEBUS_WORKER_DECODE, true);
}

START_TEST(test_groups_catch_all_filters_model_health_role_scenario4)
{
	uint32_t a, b;
	fleet4(&a, &b);
	struct engine_group g = group(STAGE_PLAIN);
	struct pick_env e = env_for("m");
	struct pick out;
	ck_assert_int_eq(engine_group_pick(&g, &e, "x", NULL, &out), PICK_OK);
	ck_assert_str_eq(out.worker->id, "http://a");
	g.policy.cursor = 0;
	ck_assert_int_eq(statebus_worker_remove(fx.r, a, rfx_gen(&fx, a)), SY_OK);
	e = env_for("m");
	ck_assert_int_eq(engine_group_pick(&g, &e, "x", NULL, &out), PICK_OK);
	ck_assert_str_eq(out.worker->id, "http://b");
	ck_assert_int_eq(statebus_worker_remove(fx.r, b, rfx_gen(&fx, b)), SY_OK);
	e = env_for("m");
	ck_assert_int_eq(engine_group_pick(&g, &e, "x", NULL, &out), PICK_NO_CANDIDATES);
}
END_TEST

START_TEST(test_groups_pd_bucket_picks_p_then_d_scenario4)
{
	uint32_t a, b;
	fleet4(&a, &b);
	struct bucket bk = {.id = "pd", .pd = true, .prefill = group(STAGE_PREFILL),
			    .decode = group(STAGE_DECODE)};
	struct pick_env e = env_for("m");
	struct bucket_pick bp;
	ck_assert_int_eq(bucket_pick_engines(&bk, &e, &bp), PICK_OK);
	ck_assert_str_eq(bp.prefill.worker->id, "http://p");
	ck_assert_uint_eq(bp.prefill.worker->bootstrap_port, 8998);
	ck_assert_str_eq(bp.worker.worker->id, "http://d");
	/* a decode failure keeps its stage */
	uint32_t d = 0;
	ck_assert_int_eq(statebus_worker_find(fx.r, "http://d", &d, NULL), SY_OK);
	ck_assert_int_eq(statebus_worker_set_health(fx.r, d, rfx_gen(&fx, d), false, RF_NOW, 3), SY_OK);
	e = env_for("m");
	ck_assert_int_eq(bucket_pick_engines(&bk, &e, &bp), PICK_NO_CANDIDATES);
	ck_assert_int_eq(bp.failed_stage, STAGE_DECODE);
}
END_TEST

static enum pick_outcome counting_pick(struct policy *p, struct pick_ctx *ctx, struct pick *out)
{
	(void)p;
	calls++;
	out->worker = &ctx->cands[0];
	out->reason = "test";
	return PICK_OK;
}

static struct engine_candidate foreign;

static enum pick_outcome foreign_pick(struct policy *p, struct pick_ctx *ctx, struct pick *out)
{
	(void)p;
	calls++;
	foreign = ctx->cands[0]; /* same ID, same slot and generation: another object */
	out->worker = &foreign;
	out->reason = "test";
	return PICK_OK;
}

static const struct policy_ops counting_ops = {.name = "counting", .pick = counting_pick};
static const struct policy_ops foreign_ops = {.name = "foreign", .pick = foreign_pick};

START_TEST(test_explicit_empty_membership_is_no_candidates_without_calling_policy)
{
	uint32_t a, b;
	fleet4(&a, &b);
	struct engine_group g = {.stage = STAGE_PLAIN, .all_workers = false};
	g.policy.ops = &counting_ops;
	struct pick_env e = env_for("m");
	struct pick out;
	ck_assert_int_eq(engine_group_pick(&g, &e, "x", NULL, &out), PICK_NO_CANDIDATES);
	ck_assert_int_eq(calls, 0);
}
END_TEST

START_TEST(test_explicit_membership_restricts_candidates)
{
	uint32_t a, b;
	fleet4(&a, &b);
	char *ids[] = {"http://b", "http://p"}; /* sorted; p has another role */
	struct engine_group g = {.stage = STAGE_PLAIN, .all_workers = false, .worker_ids = ids,
				 .n_worker_ids = 2};
	g.policy.ops = &counting_ops;
	struct pick_env e = env_for("m");
	struct pick out;
	ck_assert_int_eq(engine_group_pick(&g, &e, "x", NULL, &out), PICK_OK);
	ck_assert_str_eq(out.worker->id, "http://b");
	free(g.member_bits);
}
END_TEST

START_TEST(test_foreign_pick_with_a_candidates_id_is_outside_candidates_scenario5)
{
	uint32_t a, b;
	fleet4(&a, &b);
	struct engine_group g = {.stage = STAGE_PLAIN, .all_workers = true};
	g.policy.ops = &foreign_ops;
	struct pick_env e = env_for("m");
	struct pick out;
	ck_assert_int_eq(engine_group_pick(&g, &e, "x", NULL, &out), PICK_OUTSIDE_CANDIDATES);
	ck_assert_int_eq(calls, 1);
	ck_assert_ptr_null(out.worker);
}
END_TEST

START_TEST(test_pick_of_a_worker_removed_since_the_snapshot_is_redone_in_the_group)
{
	uint32_t a, b;
	fleet4(&a, &b);
	struct engine_group g = {.stage = STAGE_PLAIN, .all_workers = true};
	g.policy.ops = &counting_ops;
	struct pick_env e = env_for("m");
	ck_assert_int_eq(statebus_worker_remove(fx.r, a, rfx_gen(&fx, a)), SY_OK); /* after snapshot */
	struct pick out;
	/* the policy answers a (first candidate), which left the table: asked
	 * again in the same group without it, it answers b */
	ck_assert_int_eq(engine_group_pick(&g, &e, "x", NULL, &out), PICK_OK);
	ck_assert_str_eq(out.worker->id, "http://b");
	ck_assert_int_eq(calls, 2);
	ck_assert(e.stale);
	ck_assert_uint_eq(e.reselected, 1);
}
END_TEST

START_TEST(test_candidates_are_sorted_by_id_not_by_slot)
{
	rfx_worker(&fx, "http://c", "m", STATEBUS_WORKER_PLAIN, true);
	rfx_worker(&fx, "http://a", "m", STATEBUS_WORKER_PLAIN, true);
	rfx_worker(&fx, "http://b", "m", STATEBUS_WORKER_PLAIN, true);
	struct engine_group g = {.stage = STAGE_PLAIN, .all_workers = true};
	g.policy.ops = &counting_ops;
	struct pick_env e = env_for("m");
	struct pick out;
	ck_assert_int_eq(engine_group_pick(&g, &e, "x", NULL, &out), PICK_OK);
	ck_assert_str_eq(s0[0].id, "http://a");
	ck_assert_str_eq(s0[1].id, "http://b");
	ck_assert_str_eq(s0[2].id, "http://c");
}
END_TEST

/* ---- health filter -------------------------------------------------------- */

#define COOL_NS (30 * RF_SEC)

/* Three plain workers a, b, c of model m (slots returned). */
static void fleet3(uint32_t sl[3])
{
	sl[0] = rfx_worker(&fx, "http://a", "m", STATEBUS_WORKER_PLAIN, true);
	sl[1] = rfx_worker(&fx, "http://b", "m", STATEBUS_WORKER_PLAIN, true);
	sl[2] = rfx_worker(&fx, "http://c", "m", STATEBUS_WORKER_PLAIN, true);
}

START_TEST(test_passively_down_worker_is_no_candidate_in_any_process)
{
	uint32_t sl[3];
	fleet3(sl);
	ck_assert(statebus_health_mark_down(fx.r, sl[0], rfx_gen(&fx, sl[0]), STATEBUS_DOWN_CONNECT,
					    RF_NOW - 1));
	struct pick_env e = env_for("m");
	struct engine_group g = {.stage = STAGE_PLAIN, .all_workers = true};
	g.policy.ops = &counting_ops;
	struct pick out;
	ck_assert_int_eq(engine_group_pick(&g, &e, "x", NULL, &out), PICK_OK);
	ck_assert_str_eq(out.worker->id, "http://b");
	ck_assert_uint_eq(e.skipped_down, 1);
	/* a probe sent after the mark brings it back */
	statebus_health_probe_ok(fx.r, sl[0], rfx_gen(&fx, sl[0]), RF_NOW, RF_NOW);
	e = env_for("m");
	ck_assert_int_eq(engine_group_pick(&g, &e, "x", NULL, &out), PICK_OK);
	ck_assert_str_eq(out.worker->id, "http://a");
}
END_TEST

START_TEST(test_stalled_worker_is_left_out_whatever_the_policy_prefers)
{
	uint32_t sl[3];
	fleet3(sl);
	statebus_health_mark_stalled(fx.r, sl[0], rfx_gen(&fx, sl[0]), RF_NOW - 1);
	statebus_health_mark_stalled(fx.r, sl[1], rfx_gen(&fx, sl[1]), RF_NOW - 1);
	struct pick_env e = env_for("m");
	struct engine_group g = {.stage = STAGE_PLAIN, .all_workers = true};
	g.policy.ops = &counting_ops;
	struct pick out;
	ck_assert_int_eq(engine_group_pick(&g, &e, "x", NULL, &out), PICK_OK);
	ck_assert_str_eq(out.worker->id, "http://c");
	ck_assert_uint_eq(e.skipped_stalled, 2);
	/* bytes from b again: b is back */
	statebus_health_progress(fx.r, sl[1], rfx_gen(&fx, sl[1]), RF_NOW);
	e = env_for("m");
	ck_assert_int_eq(engine_group_pick(&g, &e, "x", NULL, &out), PICK_OK);
	ck_assert_str_eq(out.worker->id, "http://b");
}
END_TEST

START_TEST(test_unknown_worker_never_probed_is_no_candidate)
{
	uint32_t a = rfx_worker(&fx, "http://a", "m", STATEBUS_WORKER_PLAIN, false);
	struct pick_env e = env_for("m");
	struct engine_group g = {.stage = STAGE_PLAIN, .all_workers = true};
	g.policy.ops = &counting_ops;
	struct pick out;
	ck_assert_int_eq(engine_group_pick(&g, &e, "x", NULL, &out), PICK_NO_CANDIDATES);
	ck_assert_int_eq(calls, 0);
	/* its first successful probe */
	ck_assert_int_eq(statebus_worker_set_health(fx.r, a, rfx_gen(&fx, a), true, RF_NOW, 0), SY_OK);
	e = env_for("m");
	ck_assert_int_eq(engine_group_pick(&g, &e, "x", NULL, &out), PICK_OK);
	ck_assert_str_eq(out.worker->id, "http://a");
}
END_TEST

START_TEST(test_open_breaker_is_a_filter_and_one_pick_gets_the_half_open_probe)
{
	uint32_t sl[3];
	fleet3(sl);
	uint32_t ga = rfx_gen(&fx, sl[0]);
	for (int i = 0; i < 3; i++)
		statebus_breaker_report(fx.r, sl[0], ga, 3, STATEBUS_CB_FAILURE, RF_NOW - COOL_NS + 5);
	struct pick_env e = env_for("m");
	e.cb_cool_down_ns = COOL_NS;
	struct engine_group g = {.stage = STAGE_PLAIN, .all_workers = true};
	g.policy.ops = &counting_ops;
	struct pick out;
	ck_assert_int_eq(engine_group_pick(&g, &e, "x", NULL, &out), PICK_OK);
	ck_assert_str_eq(out.worker->id, "http://b"); /* open: no candidate */
	ck_assert_uint_eq(e.skipped_breaker, 1);
	ck_assert(!out.worker->cb_probe);
	/* breakers off (cool-down 0): its state is ignored */
	e = env_for("m");
	ck_assert_int_eq(engine_group_pick(&g, &e, "x", NULL, &out), PICK_OK);
	ck_assert_str_eq(out.worker->id, "http://a");
	/* after the cool-down: the first pick carries the probe... */
	e = env_for("m");
	e.cb_cool_down_ns = COOL_NS;
	e.now_ns = RF_NOW + 10;
	ck_assert_int_eq(engine_group_pick(&g, &e, "x", NULL, &out), PICK_OK);
	ck_assert_str_eq(out.worker->id, "http://a");
	ck_assert(out.worker->cb_probe);
	/* ...and while it is out the worker is left out again */
	e = env_for("m");
	e.cb_cool_down_ns = COOL_NS;
	e.now_ns = RF_NOW + 11;
	ck_assert_int_eq(engine_group_pick(&g, &e, "x", NULL, &out), PICK_OK);
	ck_assert_str_eq(out.worker->id, "http://b");
}
END_TEST

/* A policy that, like another router process between the filter and the
 * probe CAS, takes the half-open probe of cands[0] before answering it. */
static enum pick_outcome racing_pick(struct policy *p, struct pick_ctx *ctx, struct pick *out)
{
	(void)p;
	calls++;
	const struct engine_candidate *c = &ctx->cands[0];
	if (c->cb_probe)
		ck_assert(statebus_breaker_take_probe(fx.r, c->slot, c->generation, ctx->now_ns,
						      COOL_NS));
	out->worker = c;
	out->reason = "test";
	return PICK_OK;
}

static const struct policy_ops racing_ops = {.name = "racing", .pick = racing_pick};

START_TEST(test_probe_lost_to_another_process_asks_the_policy_again)
{
	uint32_t sl[3];
	fleet3(sl);
	uint32_t ga = rfx_gen(&fx, sl[0]);
	for (int i = 0; i < 3; i++)
		statebus_breaker_report(fx.r, sl[0], ga, 3, STATEBUS_CB_FAILURE, RF_NOW - COOL_NS);
	struct pick_env e = env_for("m");
	e.cb_cool_down_ns = COOL_NS;
	struct engine_group g = {.stage = STAGE_PLAIN, .all_workers = true};
	g.policy.ops = &racing_ops;
	struct pick out;
	ck_assert_int_eq(engine_group_pick(&g, &e, "x", NULL, &out), PICK_OK);
	ck_assert_str_eq(out.worker->id, "http://b");
	ck_assert(!out.worker->cb_probe);
	ck_assert_int_eq(calls, 2);
	ck_assert_uint_eq(e.skipped_breaker, 1);
}
END_TEST

/* The candidate filter pick and readiness share: each check in turn. */
static enum candidate_verdict verdict(struct engine_group *g, const struct pick_env *e,
				      const char *id, uint64_t now_ns)
{
	ck_assert_int_eq(engine_group_sync(g, e->fleet), SY_OK);
	for (size_t i = 0; i < e->fleet->n; i++)
		if (strcmp(e->fleet->entries[i].id, id) == 0)
			return engine_group_candidate(g, e->fleet, i, e->model_idx, e->region, now_ns,
						      COOL_NS);
	ck_abort_msg("%s is not in the fleet", id);
	return CANDIDATE_OUTSIDE;
}

START_TEST(test_candidate_filter_verdicts)
{
	uint32_t sl[3];
	fleet3(sl); /* a, b, c */
	uint32_t d = rfx_worker(&fx, "http://d", "m", STATEBUS_WORKER_PLAIN, true);
	rfx_worker(&fx, "http://0-unhealthy", "m", STATEBUS_WORKER_PLAIN, false);
	rfx_worker(&fx, "http://0-other", "other-model", STATEBUS_WORKER_PLAIN, true);
	rfx_worker(&fx, "http://p", "m", STATEBUS_WORKER_PREFILL, true);
	ck_assert(statebus_health_mark_down(fx.r, sl[1], rfx_gen(&fx, sl[1]), STATEBUS_DOWN_RESET,
					    RF_NOW - 10));
	ck_assert(statebus_health_mark_stalled(fx.r, sl[2], rfx_gen(&fx, sl[2]), RF_NOW - 10));
	for (int i = 0; i < 3; i++)
		statebus_breaker_report(fx.r, d, rfx_gen(&fx, d), 3, STATEBUS_CB_FAILURE, RF_NOW - 10);
	struct pick_env e = env_for("m");
	struct engine_group g = {.stage = STAGE_PLAIN, .all_workers = true};
	ck_assert_int_eq(verdict(&g, &e, "http://a", RF_NOW), CANDIDATE_OK);
	ck_assert_int_eq(verdict(&g, &e, "http://b", RF_NOW), CANDIDATE_DOWN);
	ck_assert_int_eq(verdict(&g, &e, "http://c", RF_NOW), CANDIDATE_STALLED);
	ck_assert_int_eq(verdict(&g, &e, "http://d", RF_NOW), CANDIDATE_BREAKER_OPEN);
	ck_assert_int_eq(verdict(&g, &e, "http://0-unhealthy", RF_NOW), CANDIDATE_UNHEALTHY);
	ck_assert_int_eq(verdict(&g, &e, "http://0-other", RF_NOW), CANDIDATE_OUTSIDE);
	ck_assert_int_eq(verdict(&g, &e, "http://p", RF_NOW), CANDIDATE_OUTSIDE);
	/* past the cool-down: the half-open probe, not taken by the filter */
	ck_assert_int_eq(verdict(&g, &e, "http://d", RF_NOW - 10 + COOL_NS), CANDIDATE_PROBE);
	ck_assert_int_eq(verdict(&g, &e, "http://d", RF_NOW - 10 + COOL_NS), CANDIDATE_PROBE);
	/* no region: the snapshot's health alone */
	e.region = NULL;
	ck_assert_int_eq(verdict(&g, &e, "http://b", RF_NOW), CANDIDATE_OK);
	ck_assert_int_eq(verdict(&g, &e, "http://0-unhealthy", RF_NOW), CANDIDATE_UNHEALTHY);
	e.region = fx.r;
	/* membership: a worker outside the explicit set, however healthy */
	char *ids[] = {"http://b"};
	struct engine_group m = {.stage = STAGE_PLAIN, .worker_ids = ids, .n_worker_ids = 1};
	ck_assert_int_eq(verdict(&m, &e, "http://a", RF_NOW), CANDIDATE_OUTSIDE);
	ck_assert_int_eq(verdict(&m, &e, "http://b", RF_NOW), CANDIDATE_DOWN);
	free(m.member_bits);
}
END_TEST

START_TEST(test_excluded_workers_are_no_candidates)
{
	uint32_t sl[3];
	fleet3(sl);
	struct worker_exclude ex = {.n = 2, .slots = {sl[0], sl[1]}};
	struct pick_env e = env_for("m");
	e.exclude = &ex;
	struct engine_group g = {.stage = STAGE_PLAIN, .all_workers = true};
	g.policy.ops = &counting_ops;
	struct pick out;
	ck_assert_int_eq(engine_group_pick(&g, &e, "x", NULL, &out), PICK_OK);
	ck_assert_int_eq(calls, 1);
	ck_assert_str_eq(out.worker->id, "http://c"); /* cands[0]: the only candidate */
	ex.slots[ex.n++] = sl[2];
	e = env_for("m");
	e.exclude = &ex;
	ck_assert_int_eq(engine_group_pick(&g, &e, "x", NULL, &out), PICK_NO_CANDIDATES);
	ck_assert_int_eq(calls, 1); /* the policy is not asked */
	ck_assert(worker_exclude_has(&ex, sl[1]));
	ck_assert(!worker_exclude_has(NULL, sl[1]));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("buckets");
	TCase *tc = tcase_create("resolver");
	tcase_add_test(tc, test_resolver_order_scenario1);
	tcase_add_test(tc, test_context_capacity_scenario2);
	tcase_add_test(tc, test_design_example_4k_input_16k_peak_goes_long);
	tcase_add_test(tc, test_slo_tiers_scenario3);
	suite_add_tcase(s, tc);
	tc = tcase_create("groups");
	tcase_add_checked_fixture(tc, gsetup, gteardown);
	tcase_add_test(tc, test_groups_catch_all_filters_model_health_role_scenario4);
	tcase_add_test(tc, test_groups_pd_bucket_picks_p_then_d_scenario4);
	tcase_add_test(tc, test_explicit_empty_membership_is_no_candidates_without_calling_policy);
	tcase_add_test(tc, test_explicit_membership_restricts_candidates);
	tcase_add_test(tc, test_foreign_pick_with_a_candidates_id_is_outside_candidates_scenario5);
	tcase_add_test(tc, test_pick_of_a_worker_removed_since_the_snapshot_is_redone_in_the_group);
	tcase_add_test(tc, test_candidates_are_sorted_by_id_not_by_slot);
	suite_add_tcase(s, tc);
	tc = tcase_create("health filter");
	tcase_add_checked_fixture(tc, gsetup, gteardown);
	tcase_add_test(tc, test_passively_down_worker_is_no_candidate_in_any_process);
	tcase_add_test(tc, test_stalled_worker_is_left_out_whatever_the_policy_prefers);
	tcase_add_test(tc, test_unknown_worker_never_probed_is_no_candidate);
	tcase_add_test(tc, test_open_breaker_is_a_filter_and_one_pick_gets_the_half_open_probe);
	tcase_add_test(tc, test_probe_lost_to_another_process_asks_the_policy_again);
	tcase_add_test(tc, test_excluded_workers_are_no_candidates);
	tcase_add_test(tc, test_candidate_filter_verdicts);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sy_check_run(suite());
}
