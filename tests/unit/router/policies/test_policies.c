/* test_policies.c — admission caps, the stage pressure comparison and the
 * policies round_robin, random and power_of_n on per-pick snapshots read from
 * a real state-plane region (reference/policy-defaults.md §3, §4, §5;
 * scenarios 6–12 with their exact numbers). */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "router/policies/admission.h"
#include "router/policies/policy.h"
#include "tests/unit/router/router_fixture.h"
#include "tests/unit/sy_check.h"

static struct rfx fx;
static void setup(void) { rfx_open(&fx); router_rng_seed(42); }
static void teardown(void) { rfx_close(&fx); }

static struct pick_ctx ctx_of(struct engine_candidate *c, size_t n, enum engine_stage st,
			      struct pick_rejections *rej)
{
	struct pick_ctx x = {.region = fx.r, .now_ns = RF_NOW, .stage = st, .cands = c, .n = n,
			     .rej = rej};
	return x;
}

static struct admission_limits caps(int64_t run, int64_t wait, int64_t kv, int64_t pend,
				    int64_t infl)
{
	struct admission_limits l = {run, wait, kv, pend, infl};
	return l;
}

/* ---- scenario 6: admission caps ---------------------------------------------- */

static struct engine_load scenario6_load(void)
{
	struct engine_load l = {.fresh = true, .native = true, .running = 3, .waiting = 1,
				.kv_used = 80, .pending = 90, .local_active = 2};
	return l;
}

START_TEST(test_admission_caps_above_every_metric_allow)
{
	struct engine_load l = scenario6_load();
	struct admission_limits c = caps(4, 2, 81, 91, 3);
	ck_assert_int_eq(engine_admission_check(&c, &l), ADMIT_OK);
}
END_TEST

START_TEST(test_admission_cap_equal_to_metric_rejects_naming_that_cap)
{
	struct engine_load l = scenario6_load();
	struct admission_limits c;
	c = caps(3, 2, 81, 91, 3);
	ck_assert_str_eq(admission_limit_name(engine_admission_check(&c, &l)), "max_running_requests");
	c = caps(4, 1, 81, 91, 3);
	ck_assert_str_eq(admission_limit_name(engine_admission_check(&c, &l)), "max_waiting_requests");
	c = caps(4, 2, 80, 91, 3);
	ck_assert_str_eq(admission_limit_name(engine_admission_check(&c, &l)), "max_kv_tokens");
	c = caps(4, 2, 81, 90, 3);
	ck_assert_str_eq(admission_limit_name(engine_admission_check(&c, &l)),
			 "max_pending_prefill_tokens");
	c = caps(4, 2, 81, 91, 2);
	ck_assert_str_eq(admission_limit_name(engine_admission_check(&c, &l)), "max_inflight_requests");
}
END_TEST

START_TEST(test_admission_without_load_report_only_inflight_can_reject)
{
	uint32_t s = rfx_worker(&fx, "http://a", "m", STATEBUS_WORKER_PLAIN, true);
	rfx_inflight(&fx, s, 2);
	struct engine_candidate c[1] = {rfx_cand(&fx, s, "http://a")};
	struct pick_ctx x = ctx_of(c, 1, STAGE_PLAIN, NULL);
	const struct engine_load *l = pick_ctx_load(&x, 0);
	ck_assert(!l->fresh);
	ck_assert_int_eq(l->local_active, 2);
	struct admission_limits zero = caps(0, 0, 0, 0, 3);
	ck_assert_int_eq(engine_admission_check(&zero, l), ADMIT_OK); /* fail open */
	zero.max_inflight_requests = 2;
	ck_assert_int_eq(engine_admission_check(&zero, l), ADMIT_MAX_INFLIGHT_REQUESTS);
}
END_TEST

START_TEST(test_admission_snapshot_reads_scenario6_metrics)
{
	uint32_t s = rfx_worker(&fx, "http://a", "m", STATEBUS_WORKER_PLAIN, true);
	rfx_report(&fx, s, (struct rfx_load){.running = 3, .waiting = 1, .kv_used = 80,
					      .kv_cap = 1000, .pending = 90});
	rfx_inflight(&fx, s, 2);
	struct engine_candidate c[1] = {rfx_cand(&fx, s, "http://a")};
	struct pick_ctx x = ctx_of(c, 1, STAGE_PLAIN, NULL);
	const struct engine_load *l = pick_ctx_load(&x, 0);
	ck_assert(l->fresh && l->native);
	struct admission_limits ok = caps(4, 2, 81, 91, 3), kv = caps(4, 2, 80, 91, 3);
	ck_assert_int_eq(engine_admission_check(&ok, l), ADMIT_OK);
	ck_assert_int_eq(engine_admission_check(&kv, l), ADMIT_MAX_KV_TOKENS);
}
END_TEST

/* ---- vLLM's scraped /metrics view -------------------------------------------------- */

static struct engine_load dl(uint64_t waiting, uint64_t running, uint64_t used, uint64_t cap,
			     int64_t local);

/* A scraped record (vLLM /metrics) for `slot`: running, waiting, KV usage
 * in ppm, KV capacity in tokens (0: unknown), received `age_ns` ago. */
static void scraped_report(uint32_t slot, uint32_t running, uint32_t waiting, uint32_t usage_ppm,
			   uint32_t cap, uint64_t age_ns)
{
	struct statebus_load_report rep = {
		.flags = STATEBUS_LOAD_HAS_REPORT | STATEBUS_LOAD_SCRAPED,
		.num_running_reqs = running,
		.num_waiting_reqs = waiting,
		.num_tokens = (uint32_t)((uint64_t)cap * usage_ppm / 1000000u),
		.max_total_num_tokens = cap,
		.recv_mono_ns = RF_NOW - age_ns,
	};
	rep.scraped.kv_usage_ppm = usage_ppm;
	ck_assert_int_eq(statebus_load_write(fx.r, slot, rfx_gen(&fx, slot), 0, &rep), SY_OK);
}

START_TEST(test_scraped_load_is_compared_on_waiting_running_and_kv_usage)
{
	uint32_t a = rfx_worker(&fx, "http://a", "m", STATEBUS_WORKER_PLAIN, true);
	uint32_t b = rfx_worker(&fx, "http://b", "m", STATEBUS_WORKER_PLAIN, true);
	scraped_report(a, 1, 3, 100000, 0, 0);
	scraped_report(b, 1, 0, 900000, 0, 0);
	rfx_inflight(&fx, b, 5); /* router-local counts do not decide between fresh views */
	struct engine_candidate c[2] = {rfx_cand(&fx, a, "http://a"), rfx_cand(&fx, b, "http://b")};
	struct pick_ctx x = ctx_of(c, 2, STAGE_PLAIN, NULL);
	const struct engine_load *la = pick_ctx_load(&x, 0), *lb = pick_ctx_load(&x, 1);
	ck_assert(la->fresh && la->scraped && !la->native && !la->has_kv);
	ck_assert_uint_eq(la->waiting, 3);
	ck_assert_uint_eq(la->kv_usage_ppm, 100000);
	ck_assert_int_gt(engine_stage_compare(STAGE_PLAIN, la, lb), 0); /* waiting 3 > 0 */
	ck_assert_int_gt(engine_stage_compare(STAGE_PREFILL, la, lb), 0);
	/* decode: waiting and running tie → the KV usage decides (10 % < 90 %) */
	struct engine_load da = *la, db = *lb;
	da.waiting = db.waiting = 0;
	ck_assert_int_lt(engine_stage_compare(STAGE_DECODE, &da, &db), 0);
	/* with capacities the used / capacity fraction decides */
	da.has_kv = db.has_kv = true;
	da.kv_used = 50, da.kv_capacity = 100, db.kv_used = 10, db.kv_capacity = 100;
	ck_assert_int_gt(engine_stage_compare(STAGE_DECODE, &da, &db), 0);
	/* a full tie falls to local active */
	da = db = *lb;
	da.local_active = 1;
	ck_assert_int_lt(engine_stage_compare(STAGE_DECODE, &da, &db), 0);
	/* a scraped side against a native one: the steps both know */
	struct engine_load n = dl(0, 0, 90, 100, 0);
	ck_assert_int_lt(engine_stage_compare(STAGE_PLAIN, &n, la), 0);
}
END_TEST

START_TEST(test_stale_or_missing_scraped_load_is_unknown_not_zero)
{
	uint32_t a = rfx_worker(&fx, "http://a", "m", STATEBUS_WORKER_PLAIN, true);
	uint32_t b = rfx_worker(&fx, "http://b", "m", STATEBUS_WORKER_PLAIN, true);
	uint32_t c0 = rfx_worker(&fx, "http://c", "m", STATEBUS_WORKER_PLAIN, true);
	scraped_report(a, 9, 9, 990000, 1000, 6000000000ull); /* older than the 5 s window */
	scraped_report(b, 0, 0, 0, 1000, 0);
	rfx_inflight(&fx, b, 2);
	struct engine_candidate c[3] = {rfx_cand(&fx, a, "http://a"), rfx_cand(&fx, b, "http://b"),
					rfx_cand(&fx, c0, "http://c")};
	struct pick_ctx x = ctx_of(c, 3, STAGE_PLAIN, NULL);
	const struct engine_load *la = pick_ctx_load(&x, 0), *lb = pick_ctx_load(&x, 1),
				 *lc = pick_ctx_load(&x, 2);
	ck_assert(!la->fresh && !la->scraped && !la->has_kv);
	ck_assert(!lc->fresh && !lc->scraped);
	ck_assert(lb->fresh && lb->scraped);
	/* unknown on one side: local active only (stale a, 0 local, beats b's 2) */
	ck_assert_int_lt(engine_stage_compare(STAGE_PLAIN, la, lb), 0);
	ck_assert_int_lt(engine_stage_compare(STAGE_DECODE, lc, lb), 0);
	/* admission fails open on the unknown figures */
	struct admission_limits zero = caps(0, 0, 0, -1, -1);
	ck_assert_int_eq(engine_admission_check(&zero, la), ADMIT_OK);
	ck_assert_int_eq(engine_admission_check(&zero, lc), ADMIT_OK);
}
END_TEST

START_TEST(test_admission_reads_scraped_running_waiting_and_kv)
{
	uint32_t a = rfx_worker(&fx, "http://a", "m", STATEBUS_WORKER_PLAIN, true);
	uint32_t b = rfx_worker(&fx, "http://b", "m", STATEBUS_WORKER_PLAIN, true);
	scraped_report(a, 4, 2, 500000, 1000, 0); /* 500 KV tokens in use */
	scraped_report(b, 4, 2, 500000, 0, 0);    /* capacity not exposed */
	struct engine_candidate c[2] = {rfx_cand(&fx, a, "http://a"), rfx_cand(&fx, b, "http://b")};
	struct pick_ctx x = ctx_of(c, 2, STAGE_PLAIN, NULL);
	const struct engine_load *la = pick_ctx_load(&x, 0), *lb = pick_ctx_load(&x, 1);
	ck_assert(la->has_kv && !lb->has_kv);
	ck_assert_uint_eq(la->kv_used, 500);
	ck_assert_uint_eq(la->kv_capacity, 1000);
	ck_assert_int_eq(engine_admission_check(&(struct admission_limits){4, -1, -1, -1, -1}, la),
			 ADMIT_MAX_RUNNING_REQUESTS);
	ck_assert_int_eq(engine_admission_check(&(struct admission_limits){5, 2, -1, -1, -1}, la),
			 ADMIT_MAX_WAITING_REQUESTS);
	struct admission_limits kv = caps(-1, -1, 500, 0, -1);
	ck_assert_int_eq(engine_admission_check(&kv, la), ADMIT_MAX_KV_TOKENS);
	/* no capacity: KV unknown, and pending tokens are never scraped */
	ck_assert_int_eq(engine_admission_check(&kv, lb), ADMIT_OK);
	kv.max_kv_tokens = 501;
	ck_assert_int_eq(engine_admission_check(&kv, la), ADMIT_OK);
}
END_TEST

/* ---- scenario 7: power-of-N + admission ----------------------------------------- */

static enum pick_outcome pon_single(uint32_t running, uint32_t kv, struct pick *out,
				    struct pick_rejections *rej)
{
	static int k;
	char id[32];
	snprintf(id, sizeof(id), "http://s7-%d", k++);
	uint32_t s = rfx_worker(&fx, id, "m", STATEBUS_WORKER_PLAIN, true);
	rfx_report(&fx, s, (struct rfx_load){.running = running, .kv_used = kv, .kv_cap = 1000});
	static struct engine_candidate c[1];
	static char ids[8][32];
	snprintf(ids[k % 8], sizeof(ids[0]), "%s", id);
	c[0] = rfx_cand(&fx, s, ids[k % 8]);
	struct policy p;
	struct admission_limits lim = caps(2, -1, 100, -1, -1);
	ck_assert_int_eq(policy_init(&p, POLICY_POWER_OF_N, STAGE_PLAIN, &lim, 2, NULL), SY_OK);
	struct pick_ctx x = ctx_of(c, 1, STAGE_PLAIN, rej);
	return policy_pick(&p, &x, out);
}

START_TEST(test_power_of_n_admission_on_single_candidate_scenario7)
{
	struct pick out;
	struct router_error e;
	router_error_clear(&e);
	struct pick_rejections rej = {.err = &e};
	ck_assert_int_eq(pon_single(1, 100, &out, &rej), PICK_ADMISSION_REJECTED);
	ck_assert_int_eq(out.rejected_by, ADMIT_MAX_KV_TOKENS);
	ck_assert_int_eq(pon_single(1, 99, &out, &rej), PICK_OK);
	ck_assert_ptr_nonnull(out.worker);
	ck_assert_int_eq(pon_single(2, 0, &out, &rej), PICK_ADMISSION_REJECTED);
	ck_assert_int_eq(out.rejected_by, ADMIT_MAX_RUNNING_REQUESTS);
	ck_assert_uint_eq(rej.count, 2);
	ck_assert_uint_eq(e.n_details, 2);
	ck_assert_str_eq(e.details[0].limit, "max_kv_tokens");
	ck_assert_str_eq(e.details[1].limit, "max_running_requests");
}
END_TEST

START_TEST(test_power_of_n_admission_runs_once_on_the_winner_without_resampling)
{
	/* A (idle) wins the comparison but is at its in-flight cap; B would be
	 * admitted. No resample: AdmissionRejected naming A. */
	uint32_t a = rfx_worker(&fx, "http://a", "m", STATEBUS_WORKER_PLAIN, true);
	uint32_t b = rfx_worker(&fx, "http://b", "m", STATEBUS_WORKER_PLAIN, true);
	rfx_report(&fx, a, (struct rfx_load){.kv_cap = 100});
	rfx_report(&fx, b, (struct rfx_load){.running = 50, .kv_cap = 100});
	struct engine_candidate c[2] = {rfx_cand(&fx, a, "http://a"), rfx_cand(&fx, b, "http://b")};
	struct router_error e;
	router_error_clear(&e);
	struct pick_rejections rej = {.err = &e};
	struct policy p;
	struct admission_limits lim = caps(10, -1, -1, -1, -1);
	lim.max_running_requests = -1;
	lim.max_pending_prefill_tokens = 0; /* A: pending 0 ≥ 0 → reject */
	ck_assert_int_eq(policy_init(&p, POLICY_POWER_OF_N, STAGE_PLAIN, &lim, 2, NULL), SY_OK);
	struct pick_ctx x = ctx_of(c, 2, STAGE_PLAIN, &rej);
	struct pick out;
	ck_assert_int_eq(policy_pick(&p, &x, &out), PICK_ADMISSION_REJECTED);
	ck_assert_uint_eq(rej.count, 1);
	ck_assert_str_eq(e.details[0].worker, "http://a");
	ck_assert_str_eq(e.details[0].limit, "max_pending_prefill_tokens");
}
END_TEST

/* ---- scenario 8: stage pressure ----------------------------------------------- */

static const struct engine_candidate *pick2(struct engine_candidate *c, enum engine_stage st)
{
	struct policy p;
	ck_assert_int_eq(policy_init(&p, POLICY_POWER_OF_N, st, NULL, 2, NULL), SY_OK);
	for (size_t i = 0; i < 2; i++)
		c[i].load_read = false;
	struct pick_ctx x = ctx_of(c, 2, st, NULL);
	struct pick out;
	ck_assert_int_eq(policy_pick(&p, &x, &out), PICK_OK);
	return out.worker;
}

START_TEST(test_stage_pressure_plain_prefill_pick_a_decode_picks_b)
{
	uint32_t a = rfx_worker(&fx, "http://a", "m", STATEBUS_WORKER_PLAIN, true);
	uint32_t b = rfx_worker(&fx, "http://b", "m", STATEBUS_WORKER_PLAIN, true);
	rfx_report(&fx, a, (struct rfx_load){.running = 5, .waiting = 8, .pending = 1, .kv_cap = 1000});
	rfx_report(&fx, b, (struct rfx_load){.running = 1, .waiting = 1, .pending = 100, .kv_cap = 1000});
	rfx_inflight(&fx, a, 100);
	struct engine_candidate c[2] = {rfx_cand(&fx, a, "http://a"), rfx_cand(&fx, b, "http://b")};
	for (int t = 0; t < 8; t++) {
		ck_assert_str_eq(pick2(c, STAGE_PLAIN)->id, "http://a");
		ck_assert_str_eq(pick2(c, STAGE_PREFILL)->id, "http://a");
		ck_assert_str_eq(pick2(c, STAGE_DECODE)->id, "http://b");
	}
}
END_TEST

/* ---- scenario 9: queue time -------------------------------------------------- */

START_TEST(test_queue_time_decides_when_both_rates_known)
{
	uint32_t a = rfx_worker(&fx, "http://a", "m", STATEBUS_WORKER_PLAIN, true);
	uint32_t b = rfx_worker(&fx, "http://b", "m", STATEBUS_WORKER_PLAIN, true);
	rfx_report(&fx, a, (struct rfx_load){.pending = 10, .tokens_per_s = 100, .kv_cap = 1000});
	rfx_report(&fx, b, (struct rfx_load){.pending = 20, .tokens_per_s = 1000, .kv_cap = 1000});
	struct engine_candidate c[2] = {rfx_cand(&fx, a, "http://a"), rfx_cand(&fx, b, "http://b")};
	for (int t = 0; t < 8; t++)
		ck_assert_str_eq(pick2(c, STAGE_PREFILL)->id, "http://b"); /* 20 ms < 100 ms */
	rfx_report(&fx, b, (struct rfx_load){.pending = 20, .kv_cap = 1000}); /* B without a rate */
	for (int t = 0; t < 8; t++)
		ck_assert_str_eq(pick2(c, STAGE_PREFILL)->id, "http://a"); /* pending 10 < 20 */
}
END_TEST

/* ---- scenario 10: decode order -------------------------------------------------- */

static struct engine_load dl(uint64_t waiting, uint64_t running, uint64_t used, uint64_t cap,
			     int64_t local)
{
	struct engine_load l = {.fresh = true, .native = true, .waiting = waiting,
				.running = running, .kv_used = used, .kv_capacity = cap,
				.local_active = local};
	return l;
}

START_TEST(test_decode_order_waiting_running_kv_fraction_used_tokens)
{
	struct engine_load a, b;
	a = dl(1, 9, 90, 100, 9), b = dl(2, 0, 0, 100, 0); /* waiting first */
	ck_assert_int_lt(engine_stage_compare(STAGE_DECODE, &a, &b), 0);
	a = dl(2, 1, 90, 100, 9), b = dl(2, 2, 0, 100, 0); /* then running */
	ck_assert_int_lt(engine_stage_compare(STAGE_DECODE, &a, &b), 0);
	a = dl(2, 2, 90, 100, 0), b = dl(2, 2, 20, 100, 9); /* 90/100 loses to 20/100 */
	ck_assert_int_gt(engine_stage_compare(STAGE_DECODE, &a, &b), 0);
	/* exact near u64::MAX: (MAX−1)/MAX < MAX/MAX, which doubles cannot tell */
	a = dl(0, 0, UINT64_MAX - 1, UINT64_MAX, 0), b = dl(0, 0, UINT64_MAX, UINT64_MAX, 0);
	ck_assert_int_lt(engine_stage_compare(STAGE_DECODE, &a, &b), 0);
	ck_assert((double)(UINT64_MAX - 1) / (double)UINT64_MAX ==
		  (double)UINT64_MAX / (double)UINT64_MAX);
	/* equal fractions (50/100 vs 100/200) → used tokens decide */
	a = dl(0, 0, 50, 100, 9), b = dl(0, 0, 100, 200, 0);
	ck_assert_int_lt(engine_stage_compare(STAGE_DECODE, &a, &b), 0);
	/* a zero capacity makes fractions equal → used tokens */
	a = dl(0, 0, 90, 0, 9), b = dl(0, 0, 91, 100, 0);
	ck_assert_int_lt(engine_stage_compare(STAGE_DECODE, &a, &b), 0);
	/* full tie → local active */
	a = dl(1, 1, 1, 10, 3), b = dl(1, 1, 1, 10, 2);
	ck_assert_int_gt(engine_stage_compare(STAGE_DECODE, &a, &b), 0);
	ck_assert_int_eq(engine_stage_compare(STAGE_DECODE, &a, &a), 0);
}
END_TEST

/* ---- scenario 11: unusable telemetry ----------------------------------------------- */

static void unusable_case(int which)
{
	uint32_t a = rfx_worker(&fx, "http://a", "m", STATEBUS_WORKER_PLAIN, true);
	uint32_t b;
	if (which == 2) { /* a rank missing: dp 2, only rank 0 reported */
		struct statebus_worker w = sbt_worker("http://b", 2);
		snprintf(w.model, sizeof(w.model), "m");
		uint32_t g;
		ck_assert_int_eq(statebus_worker_add(fx.r, &w, &b, &g), SY_OK);
	} else {
		b = rfx_worker(&fx, "http://b", "m", STATEBUS_WORKER_PLAIN, true);
	}
	/* A's report looks far worse */
	rfx_report(&fx, a, (struct rfx_load){.running = 100, .waiting = 100, .pending = 10000,
					      .kv_used = 900, .kv_cap = 1000});
	switch (which) {
	case 0: /* missing */
		break;
	case 1: /* stale by 1 h */
		rfx_report(&fx, b, (struct rfx_load){.kv_cap = 1000, .age_ns = 3600 * RF_SEC});
		break;
	case 2:
		rfx_report(&fx, b, (struct rfx_load){.kv_cap = 1000});
		break;
	case 3: /* old 4-field publisher */
		rfx_report(&fx, b, (struct rfx_load){.kv_cap = 1000, .basic_only = true});
		break;
	case 4: /* capacity 0 */
		rfx_report(&fx, b, (struct rfx_load){.kv_cap = 0});
		break;
	}
	rfx_inflight(&fx, a, 1);
	rfx_inflight(&fx, b, 5);
	struct engine_candidate c[2] = {rfx_cand(&fx, a, "http://a"), rfx_cand(&fx, b, "http://b")};
	for (int t = 0; t < 8; t++) {
		ck_assert_str_eq(pick2(c, STAGE_PLAIN)->id, "http://a");
		ck_assert_str_eq(pick2(c, STAGE_DECODE)->id, "http://a");
	}
}

START_TEST(test_unusable_telemetry_compares_local_active_only)
{
	unusable_case(_i);
}
END_TEST

/* ---- scenario 12: equal reports ------------------------------------------------- */

START_TEST(test_equal_reports_fewer_local_active_wins_busiest_never_picked)
{
	struct engine_candidate c[8];
	static char ids[8][32];
	for (int i = 0; i < 8; i++) {
		snprintf(ids[i], sizeof(ids[i]), "http://w%d", i);
		uint32_t s = rfx_worker(&fx, ids[i], "m", STATEBUS_WORKER_PLAIN, true);
		rfx_report(&fx, s, (struct rfx_load){.running = 2, .waiting = 1, .kv_used = 5,
						      .kv_cap = 100, .pending = 7});
		rfx_inflight(&fx, s, i);
		c[i] = rfx_cand(&fx, s, ids[i]);
	}
	struct policy p;
	ck_assert_int_eq(policy_init(&p, POLICY_POWER_OF_N, STAGE_PLAIN, NULL, 2, NULL), SY_OK);
	for (int t = 0; t < 64; t++) {
		for (int i = 0; i < 8; i++)
			c[i].load_read = false;
		struct pick_ctx x = ctx_of(c, 8, STAGE_PLAIN, NULL);
		struct pick out;
		ck_assert_int_eq(policy_pick(&p, &x, &out), PICK_OK);
		ck_assert_str_ne(out.worker->id, "http://w7");
	}
	/* With two equal reports and equal local active, the first sample wins. */
	struct engine_load a = {.fresh = true, .native = true}, b = a;
	ck_assert_int_eq(engine_stage_compare(STAGE_PLAIN, &a, &b), 0);
}
END_TEST

START_TEST(test_power_of_n_reads_only_sampled_loads_and_n_at_least_pool_takes_minimum)
{
	struct engine_candidate c[8];
	static char ids[8][32];
	for (int i = 0; i < 8; i++) {
		snprintf(ids[i], sizeof(ids[i]), "http://w%d", i);
		uint32_t s = rfx_worker(&fx, ids[i], "m", STATEBUS_WORKER_PLAIN, true);
		rfx_inflight(&fx, s, 8 - i);
		c[i] = rfx_cand(&fx, s, ids[i]);
	}
	struct policy p;
	ck_assert_int_eq(policy_init(&p, POLICY_POWER_OF_N, STAGE_PLAIN, NULL, 2, NULL), SY_OK);
	struct pick_ctx x = ctx_of(c, 8, STAGE_PLAIN, NULL);
	struct pick out;
	ck_assert_int_eq(policy_pick(&p, &x, &out), PICK_OK);
	int read = 0;
	for (int i = 0; i < 8; i++)
		read += c[i].load_read;
	ck_assert_int_eq(read, 2);
	/* N ≥ n: exact minimum (w7 has local active 1). Also N = 5 (rejection sampling)
	 * and N = 20 > n. */
	uint32_t ns[] = {8, 20};
	for (size_t k = 0; k < 2; k++) {
		ck_assert_int_eq(policy_init(&p, POLICY_POWER_OF_N, STAGE_PLAIN, NULL, ns[k], NULL),
				 SY_OK);
		for (int i = 0; i < 8; i++)
			c[i].load_read = false;
		x = ctx_of(c, 8, STAGE_PLAIN, NULL);
		ck_assert_int_eq(policy_pick(&p, &x, &out), PICK_OK);
		ck_assert_str_eq(out.worker->id, "http://w7");
	}
	ck_assert_int_eq(policy_init(&p, POLICY_POWER_OF_N, STAGE_PLAIN, NULL, 5, NULL), SY_OK);
	for (int t = 0; t < 32; t++) {
		for (int i = 0; i < 8; i++)
			c[i].load_read = false;
		x = ctx_of(c, 8, STAGE_PLAIN, NULL);
		ck_assert_int_eq(policy_pick(&p, &x, &out), PICK_OK);
		ck_assert_str_ne(out.worker->id, "http://w0"); /* the busiest of 5 samples never wins */
		read = 0;
		for (int i = 0; i < 8; i++)
			read += c[i].load_read;
		ck_assert_int_eq(read, 5);
	}
}
END_TEST

/* ---- round_robin and random -------------------------------------------------------- */

START_TEST(test_round_robin_cursor_walks_sorted_candidates_and_admits_the_pick)
{
	struct engine_candidate c[3];
	static const char *ids[3] = {"http://a", "http://b", "http://c"};
	for (int i = 0; i < 3; i++)
		c[i] = rfx_cand(&fx, rfx_worker(&fx, ids[i], "m", STATEBUS_WORKER_PLAIN, true), ids[i]);
	rfx_inflight(&fx, c[1].slot, 1);
	struct policy p;
	struct admission_limits lim = caps(-1, -1, -1, -1, 1);
	ck_assert_int_eq(policy_init(&p, POLICY_ROUND_ROBIN, STAGE_PLAIN, &lim, 0, NULL), SY_OK);
	const char *want[] = {"http://a", NULL, "http://c", "http://a"};
	for (int t = 0; t < 4; t++) {
		for (int i = 0; i < 3; i++)
			c[i].load_read = false;
		struct pick_ctx x = ctx_of(c, 3, STAGE_PLAIN, NULL);
		struct pick out;
		enum pick_outcome o = policy_pick(&p, &x, &out);
		if (want[t] == NULL) {
			ck_assert_int_eq(o, PICK_ADMISSION_REJECTED); /* b at its cap: no second try */
			ck_assert_int_eq(out.rejected_by, ADMIT_MAX_INFLIGHT_REQUESTS);
		} else {
			ck_assert_int_eq(o, PICK_OK);
			ck_assert_str_eq(out.worker->id, want[t]);
			ck_assert_str_eq(out.reason, "round_robin");
		}
	}
	ck_assert_uint_eq(p.cursor, 4);
}
END_TEST

START_TEST(test_random_is_roughly_uniform)
{
	struct engine_candidate c[4];
	static const char *ids[4] = {"http://a", "http://b", "http://c", "http://d"};
	for (int i = 0; i < 4; i++)
		c[i] = rfx_cand(&fx, rfx_worker(&fx, ids[i], "m", STATEBUS_WORKER_PLAIN, true), ids[i]);
	struct policy p;
	ck_assert_int_eq(policy_init(&p, POLICY_RANDOM, STAGE_PLAIN, NULL, 0, NULL), SY_OK);
	int hits[4] = {0};
	for (int t = 0; t < 4000; t++) {
		struct pick_ctx x = ctx_of(c, 4, STAGE_PLAIN, NULL);
		struct pick out;
		ck_assert_int_eq(policy_pick(&p, &x, &out), PICK_OK);
		hits[out.worker - c]++;
	}
	for (int i = 0; i < 4; i++)
		ck_assert_msg(hits[i] > 850 && hits[i] < 1150, "bucket %d: %d", i, hits[i]);
}
END_TEST

START_TEST(test_policy_kinds_power_of_two_and_stage_refusals)
{
	enum policy_kind k;
	uint32_t n = 7;
	ck_assert_int_eq(policy_kind_parse("power_of_two", &k, &n), SY_OK);
	ck_assert_int_eq(k, POLICY_POWER_OF_N);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(policy_kind_parse("nope", &k, &n), SY_EINVAL);
	struct policy p;
	const char *why = NULL;
	ck_assert_int_eq(policy_init(&p, POLICY_CACHE_AWARE, STAGE_PLAIN, NULL, 2, &why), SY_OK);
	ck_assert_str_eq(p.ops->name, "cache_aware");
	policy_destroy(&p);
	ck_assert_int_eq(policy_init(&p, POLICY_CACHE_AWARE, STAGE_DECODE, NULL, 2, &why), SY_EINVAL);
	ck_assert_str_eq(why, "cache_aware refuses decode groups; use power_of_n");
	/* session_aware, sticky and load_based are built (test_affinity_policies.c) */
	const char *names[] = {"session_aware", "sticky", "load_based"};
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(policy_kind_parse(names[i], &k, NULL), SY_OK);
		ck_assert_int_eq(policy_init(&p, k, STAGE_PLAIN, NULL, 2, &why), SY_OK);
		ck_assert_str_eq(p.ops->name, names[i]);
		policy_destroy(&p);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("policies");
	TCase *tc = tcase_create("policies");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_admission_caps_above_every_metric_allow);
	tcase_add_test(tc, test_admission_cap_equal_to_metric_rejects_naming_that_cap);
	tcase_add_test(tc, test_admission_without_load_report_only_inflight_can_reject);
	tcase_add_test(tc, test_admission_snapshot_reads_scenario6_metrics);
	tcase_add_test(tc, test_scraped_load_is_compared_on_waiting_running_and_kv_usage);
	tcase_add_test(tc, test_stale_or_missing_scraped_load_is_unknown_not_zero);
	tcase_add_test(tc, test_admission_reads_scraped_running_waiting_and_kv);
	tcase_add_test(tc, test_power_of_n_admission_on_single_candidate_scenario7);
	tcase_add_test(tc, test_power_of_n_admission_runs_once_on_the_winner_without_resampling);
	tcase_add_test(tc, test_stage_pressure_plain_prefill_pick_a_decode_picks_b);
	tcase_add_test(tc, test_queue_time_decides_when_both_rates_known);
	tcase_add_test(tc, test_decode_order_waiting_running_kv_fraction_used_tokens);
	tcase_add_loop_test(tc, test_unusable_telemetry_compares_local_active_only, 0, 5);
	tcase_add_test(tc, test_equal_reports_fewer_local_active_wins_busiest_never_picked);
	tcase_add_test(tc, test_power_of_n_reads_only_sampled_loads_and_n_at_least_pool_takes_minimum);
	tcase_add_test(tc, test_round_robin_cursor_walks_sorted_candidates_and_admits_the_pick);
	tcase_add_test(tc, test_random_is_roughly_uniform);
	tcase_add_test(tc, test_policy_kinds_power_of_two_and_stage_refusals);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sy_check_run(suite());
}
