/* test_cache_aware.c — the cache_aware policy on per-pick snapshots read
 * from a real state-plane region and radix index
 * (reference/policy-defaults.md §2; scenarios 13, 14, 17, 18, 19 with their
 * exact numbers; candidate bounds; decode refusal; configuration
 * combinations refused at start-up). Scenarios 15 and 16 (the remote
 * source) are in test_cache_source.c. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "common/clock.h"
#include "common/config.h"
#include "router/core/generation.h"
#include "router/policies/cache/cache_aware.h"
#include "router/policies/cache/cache_source.h"
#include "tests/unit/router/router_fixture.h"
#include "tests/unit/sy_check.h"

static struct rfx fx;
static void setup(void) { rfx_open(&fx); router_rng_seed(7); }
static void teardown(void) { rfx_close(&fx); }

/* An 8-token request hashed in 1-token blocks (scenarios 13, 17–19). */
static uint32_t toks8[8] = {11, 12, 13, 14, 15, 16, 17, 18};

struct t_req {
	struct pick_request req;
	struct prefix_memo memo;
};

static void t_req_init(struct t_req *t, const uint32_t *tokens, size_t n, uint32_t bs)
{
	memset(t, 0, sizeof(*t));
	prefix_memo_init(&t->memo, NULL);
	t->req.token_ids = tokens;
	t->req.n_token_ids = n;
	t->req.input_tokens = n;
	t->req.memo = &t->memo;
	ck_assert_int_eq(prefix_memo_chain(&t->memo, &t->req, bs, false), PREFIX_FOUND);
	ck_assert_uint_eq(t->memo.n_ids, (n + bs - 1) / bs);
}

/* Worker `slot` holds the first `blocks` blocks of the request's chain. */
static void hold(struct t_req *t, uint32_t slot, size_t blocks)
{
	ck_assert_int_eq(statebus_index_store(fx.r, slot, 0, false, 0, t->memo.ids, blocks,
					      STATEBUS_TIER_DEVICE, RF_NOW),
			 SY_OK);
}

static void mk_policy(struct policy *p, const struct cache_aware_params *cp,
		      const struct admission_limits *lim, struct cache_source *src)
{
	const char *why = NULL;
	ck_assert_int_eq(policy_init(p, POLICY_CACHE_AWARE, STAGE_PLAIN, lim, 2, &why), SY_OK);
	ck_assert_int_eq(cache_aware_configure(p, cp, src), SY_OK);
}

static struct pick_ctx ctx_of(struct t_req *t, struct engine_candidate *c, size_t n,
			      struct pick_rejections *rej)
{
	struct pick_ctx x = {.req = &t->req, .region = fx.r, .now_ns = RF_NOW,
			     .stage = STAGE_PLAIN, .cands = c, .n = n, .rej = rej};
	return x;
}

static void reset_loads(struct engine_candidate *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		c[i].load_read = false;
}

/* A cache-aware policy `p` over `cp` and `src`, then one plain-stage pick
 * among the `n` candidates `c` (load reads cleared first). */
static enum pick_outcome cache_pick(struct policy *p, const struct cache_aware_params *cp,
				    struct cache_source *src, struct t_req *t,
				    struct engine_candidate *c, size_t n, struct pick *out)
{
	mk_policy(p, cp, NULL, src);
	reset_loads(c, n);
	struct pick_ctx x = ctx_of(t, c, n, NULL);
	return policy_pick(p, &x, out);
}

/* ---- scenario 13: thresholds ------------------------------------------------- */

START_TEST(test_scenario13_min_tokens_1_picks_deep)
{
	struct t_req t;
	t_req_init(&t, toks8, 8, 1);
	uint32_t deep = rfx_worker(&fx, "http://deep", "m", STATEBUS_WORKER_PLAIN, true);
	uint32_t shallow = rfx_worker(&fx, "http://shallow", "m", STATEBUS_WORKER_PLAIN, true);
	uint32_t outside = rfx_worker(&fx, "http://outside", "m", STATEBUS_WORKER_PLAIN, true);
	hold(&t, deep, 7);
	hold(&t, shallow, 4);
	hold(&t, outside, 8);
	rfx_inflight(&fx, deep, 9);
	struct engine_candidate c[2] = {rfx_cand(&fx, deep, "http://deep"),
					rfx_cand(&fx, shallow, "http://shallow")};
	struct cache_aware_params cp;
	struct policy p;
	struct pick out;

	cache_aware_params_default(&cp);
	cp.min_matched_tokens = 1;
	ck_assert_int_eq(cache_pick(&p, &cp, NULL, &t, c, 2, &out), PICK_OK);
	ck_assert_str_eq(out.worker->id, "http://deep");
	ck_assert_str_eq(out.reason, "cache_candidate");
	ck_assert_uint_eq(cache_aware_get_stats(&p)->decisions[CACHE_AWARE_HIT], 1);
	ck_assert_uint_eq(t.memo.lookups, 1);
	policy_destroy(&p);

	/* min tokens 8: deep matches 7, shallow 4 → load fallback → shallow */
	cp.min_matched_tokens = 8;
	ck_assert_int_eq(cache_pick(&p, &cp, NULL, &t, c, 2, &out), PICK_OK);
	ck_assert_str_eq(out.worker->id, "http://shallow");
	ck_assert_str_eq(out.reason, "no_cache_candidate");
	ck_assert_uint_eq(cache_aware_get_stats(&p)->decisions[CACHE_AWARE_MISS], 1);
	/* no load reports: the fallback compared router in-flight counts */
	ck_assert_uint_eq(cache_aware_get_stats(&p)->monitor[CACHE_MONITOR_ROUTER_LOCAL], 1);
	ck_assert_uint_eq(cache_aware_get_stats(&p)->monitor[CACHE_MONITOR_LOAD_REPORT], 0);
	/* a miss without candidates gave up nothing */
	ck_assert_uint_eq(cache_aware_get_stats(&p)->diverted_sum, 0);
	ck_assert_uint_eq(t.memo.lookups, 1); /* the memo answered, no second lookup */
	policy_destroy(&p);

	/* min ratio 0.9: deep 7/8 = 0.875 → shallow */
	cp.min_matched_tokens = 0;
	cp.min_match_ratio = 0.9;
	ck_assert_int_eq(cache_pick(&p, &cp, NULL, &t, c, 2, &out), PICK_OK);
	ck_assert_str_eq(out.worker->id, "http://shallow");
	ck_assert_str_eq(out.reason, "no_cache_candidate");
	policy_destroy(&p);
	prefix_memo_free(&t.memo);
}
END_TEST

/* ---- scenario 14: remote URLs -------------------------------------------------- */

START_TEST(test_scenario14_remote_urls_max_of_duplicates_capped_exact_match)
{
	struct t_req t;
	t_req_init(&t, toks8, 8, 1);
	uint32_t a = rfx_worker(&fx, "http://a", "m", STATEBUS_WORKER_PLAIN, true);
	uint32_t b = rfx_worker(&fx, "http://b", "m", STATEBUS_WORKER_PLAIN, true);
	rfx_inflight(&fx, a, 3); /* a is busier: a load fallback would pick b */
	struct cache_source src;
	ck_assert_int_eq(cache_source_init_indexer(&src, 1, "tcp://127.0.0.1:1", 0, 0), SY_OK);
	struct statebus_query_match mt[3] = {
		{"http://a", 8, 0, 1},
		{"http://a", 8, 1, UINT32_MAX},
		{"http://b/", 9, 0, UINT32_MAX},
	};
	struct statebus_query_reply rep = {.id = 1, .status = STATEBUS_QUERY_OK,
					   .query_blocks = 8, .matches = mt, .n_matches = 3};
	ck_assert_int_eq(prefix_memo_put_reply(&t.memo, 1, &rep), SY_OK);
	const struct prefix_memo_entry *e = &t.memo.entries[0];
	ck_assert_uint_eq(prefix_entry_depth(e, a, 0, "http://a"), 8); /* max, capped at 8 */
	ck_assert_uint_eq(prefix_entry_depth(e, b, 0, "http://b"), 0); /* "http://b/" differs */

	struct cache_aware_params cp;
	cache_aware_params_default(&cp);
	cp.min_matched_tokens = 0;
	cp.min_match_ratio = 1.0;
	struct policy p;
	struct engine_candidate c[2] = {rfx_cand(&fx, a, "http://a"), rfx_cand(&fx, b, "http://b")};
	struct pick out;
	ck_assert_int_eq(cache_pick(&p, &cp, &src, &t, c, 2, &out), PICK_OK);
	ck_assert_str_eq(out.worker->id, "http://a");
	ck_assert_str_eq(out.reason, "cache_candidate");
	policy_destroy(&p);
	cache_source_close(&src);
	prefix_memo_free(&t.memo);
}
END_TEST

/* ---- predicted blocks: weight and decay --------------------------------------- */

START_TEST(test_weighted_blocks_window_then_half_life)
{
	struct cache_aware_params cp;
	cache_aware_params_default(&cp);
	ck_assert(cp.predicted_weight == 1.0);
	ck_assert_uint_eq(cp.predicted_window_ms, 2000);
	ck_assert_uint_eq(cp.predicted_half_life_ms, 1000);
	/* 10 blocks, the last 6 predicted only */
	ck_assert_uint_eq(cache_aware_weighted_blocks(&cp, 10, 0, 99999), 10);
	ck_assert_uint_eq(cache_aware_weighted_blocks(&cp, 10, 6, 0), 10);
	ck_assert_uint_eq(cache_aware_weighted_blocks(&cp, 10, 6, 2000), 10); /* window end */
	ck_assert_uint_eq(cache_aware_weighted_blocks(&cp, 10, 6, 3000), 7);  /* 4 + 6 × 0.5 */
	ck_assert_uint_eq(cache_aware_weighted_blocks(&cp, 10, 6, 4000), 5);  /* 4 + ⌊1.5⌋ */
	ck_assert_uint_eq(cache_aware_weighted_blocks(&cp, 10, 6, 30000), 4); /* confirmed only */
	ck_assert_uint_eq(cache_aware_weighted_blocks(&cp, 6, 6, 30000), 0);
	cp.predicted_weight = 0.5;
	ck_assert_uint_eq(cache_aware_weighted_blocks(&cp, 10, 6, 500), 7);  /* 4 + 6 × 0.5 */
	ck_assert_uint_eq(cache_aware_weighted_blocks(&cp, 10, 6, 3000), 5); /* 4 + ⌊1.5⌋ */
	cp.predicted_weight = 0;
	ck_assert_uint_eq(cache_aware_weighted_blocks(&cp, 10, 6, 0), 4);
	cp.predicted_weight = 1;
	cp.predicted_half_life_ms = 0; /* stop counting after the window */
	ck_assert_uint_eq(cache_aware_weighted_blocks(&cp, 10, 6, 2000), 10);
	ck_assert_uint_eq(cache_aware_weighted_blocks(&cp, 10, 6, 2001), 4);
	ck_assert_uint_eq(cache_aware_weighted_blocks(&cp, 3, 9, 5000), 0); /* predicted ≤ blocks */
	cp.predicted_weight = 1.5;
	struct policy p;
	const char *why = NULL;
	ck_assert_int_eq(policy_init(&p, POLICY_CACHE_AWARE, STAGE_PLAIN, NULL, 2, &why), SY_OK);
	ck_assert_int_eq(cache_aware_configure(&p, &cp, NULL), SY_EINVAL);
	policy_destroy(&p);
}
END_TEST

/* A worker holding 4 confirmed blocks against one predicted to hold all 8:
 * a fresh prediction wins, a stale one has decayed, and an approximate-mode
 * worker's predictions count whatever their age (weighted). */
START_TEST(test_predicted_depth_wins_fresh_decays_stale_approximate_kept)
{
	struct t_req t;
	t_req_init(&t, toks8, 8, 1);
	uint32_t conf = rfx_worker(&fx, "http://confirmed", "m", STATEBUS_WORKER_PLAIN, true);
	uint32_t pred = rfx_worker(&fx, "http://predicted", "m", STATEBUS_WORKER_PLAIN, true);
	hold(&t, conf, 4);
	ck_assert_int_eq(statebus_predict_set_worker(fx.r, pred, STATEBUS_CACHE_SIGNAL_EVENTS, 0),
			 SY_OK);
	uint64_t now = sy_mono_ns();
	ck_assert_int_eq(statebus_index_predict(fx.r, pred, rfx_gen(&fx, pred), 0, t.memo.ids, 8,
						now),
			 SY_OK);
	struct engine_candidate c[2] = {rfx_cand(&fx, conf, "http://confirmed"),
					rfx_cand(&fx, pred, "http://predicted")};
	struct cache_aware_params cp;
	cache_aware_params_default(&cp);
	cp.min_matched_tokens = 1;
	cp.switch_margin_tokens = 0;
	struct policy p;
	struct pick out;
	ck_assert_int_eq(cache_pick(&p, &cp, NULL, &t, c, 2, &out), PICK_OK);
	ck_assert_str_eq(out.worker->id, "http://predicted"); /* 8 blocks within the window */
	const struct prefix_depth *d =
		prefix_entry_find(&t.memo.entries[0], pred, rfx_gen(&fx, pred), NULL);
	ck_assert_ptr_nonnull(d);
	ck_assert_uint_eq(d->blocks, 8);
	ck_assert_uint_eq(d->predicted, 8);
	ck_assert_uint_lt(d->predicted_age_ms, cp.predicted_window_ms);
	policy_destroy(&p);

	/* weight 0.25: 8 × 0.25 = 2 < 4 confirmed */
	cp.predicted_weight = 0.25;
	ck_assert_int_eq(cache_pick(&p, &cp, NULL, &t, c, 2, &out), PICK_OK);
	ck_assert_str_eq(out.worker->id, "http://confirmed");
	policy_destroy(&p);
	cp.predicted_weight = 1;

	/* the same prediction 10 s old: 8 × 0.5^8 → 0 blocks */
	ck_assert_int_eq(statebus_index_predict(fx.r, pred, rfx_gen(&fx, pred), 0, t.memo.ids, 8,
						now - 10 * UINT64_C(1000000000)),
			 SY_OK);
	prefix_memo_reset(&t.memo);
	ck_assert_int_eq(prefix_memo_chain(&t.memo, &t.req, 1, false), PREFIX_FOUND);
	ck_assert_int_eq(cache_pick(&p, &cp, NULL, &t, c, 2, &out), PICK_OK);
	ck_assert_str_eq(out.worker->id, "http://confirmed");
	policy_destroy(&p);

	/* approximate mode: predictions are the cache model, no decay */
	ck_assert_int_eq(
		statebus_predict_set_worker(fx.r, pred, STATEBUS_CACHE_SIGNAL_PREDICTED, 0), SY_OK);
	prefix_memo_reset(&t.memo);
	ck_assert_int_eq(prefix_memo_chain(&t.memo, &t.req, 1, false), PREFIX_FOUND);
	ck_assert_int_eq(cache_pick(&p, &cp, NULL, &t, c, 2, &out), PICK_OK);
	ck_assert_str_eq(out.worker->id, "http://predicted");
	policy_destroy(&p);
	/* ... but weighted: weight 0 ignores predictions */
	cp.predicted_weight = 0;
	ck_assert_int_eq(cache_pick(&p, &cp, NULL, &t, c, 2, &out), PICK_OK);
	ck_assert_str_eq(out.worker->id, "http://confirmed");
	policy_destroy(&p);
	prefix_memo_free(&t.memo);
}
END_TEST

/* ---- scenarios 17, 18: queue gate, saturation pin, no cold fallback ---------- */

static struct rfx_load waiting(uint32_t w)
{
	struct rfx_load l = {.waiting = w, .kv_cap = 1000};
	return l;
}

struct s17 {
	struct t_req t;
	uint32_t owner, cold;
	struct engine_candidate c[2];
};

static void s17_setup(struct s17 *s, uint32_t cold_waiting)
{
	t_req_init(&s->t, toks8, 8, 1);
	s->cold = rfx_worker(&fx, "http://cold", "m", STATEBUS_WORKER_PLAIN, true);
	s->owner = rfx_worker(&fx, "http://owner", "m", STATEBUS_WORKER_PLAIN, true);
	hold(&s->t, s->owner, 8);
	rfx_report(&fx, s->owner, waiting(5));
	rfx_report(&fx, s->cold, waiting(cold_waiting));
	s->c[0] = rfx_cand(&fx, s->cold, "http://cold");
	s->c[1] = rfx_cand(&fx, s->owner, "http://owner");
}

static const char *s17_pick(struct s17 *s, int64_t floor, enum pick_outcome want,
			    const struct admission_limits *lim, struct policy *p,
			    struct pick_rejections *rej)
{
	struct cache_aware_params cp;
	cache_aware_params_default(&cp);
	cp.min_matched_tokens = 1;
	cp.worker_queue_limit = 4;
	cp.saturation_queue_floor = floor;
	mk_policy(p, &cp, lim, NULL);
	struct pick_ctx x = ctx_of(&s->t, s->c, 2, rej);
	struct pick out;
	ck_assert_int_eq(policy_pick(p, &x, &out), want);
	return want == PICK_OK ? out.worker->id : NULL;
}

START_TEST(test_scenario17_owner_queued_cold_idle_goes_cold)
{
	struct s17 s;
	struct policy p;
	s17_setup(&s, 0);
	struct pick out;
	struct cache_aware_params cp;
	cache_aware_params_default(&cp);
	cp.min_matched_tokens = 1;
	cp.worker_queue_limit = 4;
	ck_assert_int_eq(cache_pick(&p, &cp, NULL, &s.t, s.c, 2, &out), PICK_OK);
	ck_assert_str_eq(out.worker->id, "http://cold");
	ck_assert_str_eq(out.reason, "no_cache_candidate");
	const struct cache_aware_stats *st = cache_aware_get_stats(&p);
	ck_assert_uint_eq(st->decisions[CACHE_AWARE_WORKER_QUEUED], 1);
	/* the diversion gave up the owner's 8 blocks: bucket le=8 (edges 1, 2, 4, 8) */
	ck_assert_uint_eq(cache_diverted_edges[3], 8);
	ck_assert_uint_eq(st->diverted[3], 1);
	ck_assert_uint_eq(st->diverted_sum, 8);
	uint64_t others = 0;
	for (int h = 0; h <= CACHE_DIVERTED_EDGES; h++)
		others += h == 3 ? 0 : st->diverted[h];
	ck_assert_uint_eq(others, 0);
	/* both loads were native reports */
	ck_assert_uint_eq(st->monitor[CACHE_MONITOR_LOAD_REPORT], 1);
	ck_assert_uint_eq(st->monitor[CACHE_MONITOR_ROUTER_LOCAL], 0);
	policy_destroy(&p);
	prefix_memo_free(&s.t.memo);
}
END_TEST

START_TEST(test_scenario17_both_queued_pins_owner)
{
	struct s17 s;
	struct policy p;
	s17_setup(&s, 5);
	ck_assert_str_eq(s17_pick(&s, -1, PICK_OK, NULL, &p, NULL), "http://owner");
	ck_assert_uint_eq(cache_aware_get_stats(&p)->decisions[CACHE_AWARE_ALL_QUEUED], 1);
	policy_destroy(&p);
	/* the reason */
	struct cache_aware_params cp;
	cache_aware_params_default(&cp);
	cp.min_matched_tokens = 1;
	cp.worker_queue_limit = 4;
	struct pick out;
	ck_assert_int_eq(cache_pick(&p, &cp, NULL, &s.t, s.c, 2, &out), PICK_OK);
	ck_assert_str_eq(out.reason, "saturation_pin");
	policy_destroy(&p);
	prefix_memo_free(&s.t.memo);
}
END_TEST

START_TEST(test_scenario17_cold_3_with_floor_2_pins_owner)
{
	struct s17 s;
	struct policy p;
	s17_setup(&s, 3);
	struct cache_aware_params cp;
	cache_aware_params_default(&cp);
	cp.min_matched_tokens = 1;
	cp.worker_queue_limit = 4;
	cp.saturation_queue_floor = 2;
	struct pick out;
	ck_assert_int_eq(cache_pick(&p, &cp, NULL, &s.t, s.c, 2, &out), PICK_OK);
	ck_assert_str_eq(out.worker->id, "http://owner");
	ck_assert_str_eq(out.reason, "saturation_pin");
	policy_destroy(&p);
	prefix_memo_free(&s.t.memo);
}
END_TEST

START_TEST(test_scenario18_owner_rejected_both_queued_no_cold_fallback)
{
	struct s17 s;
	struct policy p;
	s17_setup(&s, 5);
	struct admission_limits lim;
	admission_limits_none(&lim);
	lim.max_waiting_requests = 5; /* owner's waiting 5 ≥ 5: rejected */
	struct router_error err;
	router_error_clear(&err);
	struct pick_rejections rej = {.err = &err};
	ck_assert_ptr_null(s17_pick(&s, -1, PICK_NO_ADMISSIBLE_ENGINE, &lim, &p, &rej));
	ck_assert_uint_eq(cache_aware_get_stats(&p)->admission_evaluated, 1);
	ck_assert_uint_eq(cache_aware_get_stats(&p)->admission_rejected, 1);
	ck_assert_uint_eq(rej.count, 1);
	ck_assert_uint_eq(err.n_details, 1);
	ck_assert_str_eq(err.details[0].worker, "http://owner");
	ck_assert_str_eq(err.details[0].limit, "max_waiting_requests");
	ck_assert(s.c[1].load.waiting == 5); /* admission saw waiting 5 */
	policy_destroy(&p);
	prefix_memo_free(&s.t.memo);
}
END_TEST

/* ---- scenario 19: pressure guard ------------------------------------------------ */

static const char *s19(uint64_t margin, bool shallow_stale)
{
	struct t_req t;
	t_req_init(&t, toks8, 8, 1);
	uint32_t deep = rfx_worker(&fx, "http://deep", "m", STATEBUS_WORKER_PLAIN, true);
	uint32_t shallow = rfx_worker(&fx, "http://shallow", "m", STATEBUS_WORKER_PLAIN, true);
	hold(&t, deep, 8);
	hold(&t, shallow, 7);
	rfx_report(&fx, deep, (struct rfx_load){.pending = 100, .kv_cap = 1000});
	rfx_report(&fx, shallow, (struct rfx_load){.pending = 1, .kv_cap = 1000,
						   .age_ns = shallow_stale ? 3600 * RF_SEC : 0});
	struct cache_aware_params cp;
	cache_aware_params_default(&cp);
	cp.min_matched_tokens = 1;
	cp.pressure_abs_tokens = 10;
	cp.switch_margin_tokens = margin;
	struct policy p;
	struct engine_candidate c[2] = {rfx_cand(&fx, deep, "http://deep"),
					rfx_cand(&fx, shallow, "http://shallow")};
	struct pick out;
	ck_assert_int_eq(cache_pick(&p, &cp, NULL, &t, c, 2, &out), PICK_OK);
	ck_assert_str_eq(out.reason, "cache_candidate");
	const char *id = out.worker->id;
	policy_destroy(&p);
	prefix_memo_free(&t.memo);
	return id;
}

START_TEST(test_scenario19_margin_0_keeps_deep)
{
	ck_assert_str_eq(s19(0, false), "http://deep");
}
END_TEST

START_TEST(test_scenario19_margin_1_guard_switches_to_shallow)
{
	ck_assert_str_eq(s19(1, false), "http://shallow");
}
END_TEST

START_TEST(test_scenario19_stale_shallow_disables_guard_keeps_deep)
{
	ck_assert_str_eq(s19(1, true), "http://deep");
}
END_TEST

/* ---- rules ------------------------------------------------------------------- */

START_TEST(test_candidate_limit_follows_the_reference_table)
{
	struct cache_aware_params cp;
	cache_aware_params_default(&cp);
	ck_assert_uint_eq(cache_aware_candidate_limit(&cp, 1), 1);
	ck_assert_uint_eq(cache_aware_candidate_limit(&cp, 8), 8);
	ck_assert_uint_eq(cache_aware_candidate_limit(&cp, 9), 8);
	ck_assert_uint_eq(cache_aware_candidate_limit(&cp, 160), 8);
	ck_assert_uint_eq(cache_aware_candidate_limit(&cp, 161), 9);
	ck_assert_uint_eq(cache_aware_candidate_limit(&cp, 620), 31);
	ck_assert_uint_eq(cache_aware_candidate_limit(&cp, 621), 32);
	ck_assert_uint_eq(cache_aware_candidate_limit(&cp, 5000), 32);
}
END_TEST

START_TEST(test_rejected_source_is_invalid_signal)
{
	struct t_req t;
	t_req_init(&t, toks8, 8, 1);
	uint32_t a = rfx_worker(&fx, "http://a", "m", STATEBUS_WORKER_PLAIN, true);
	struct cache_source src;
	ck_assert_int_eq(cache_source_init_indexer(&src, 1, "tcp://127.0.0.1:1", 0, 0), SY_OK);
	ck_assert_int_eq(prefix_memo_put_status(&t.memo, 1, PREFIX_REJECTED, PREFIX_WHY_NONE), SY_OK);
	struct cache_aware_params cp;
	cache_aware_params_default(&cp);
	struct policy p;
	struct engine_candidate c[1] = {rfx_cand(&fx, a, "http://a")};
	struct pick out;
	ck_assert_int_eq(cache_pick(&p, &cp, &src, &t, c, 1, &out), PICK_INVALID_SIGNAL);
	policy_destroy(&p);
	cache_source_close(&src);
	prefix_memo_free(&t.memo);
}
END_TEST

START_TEST(test_indexer_entry_missing_at_pick_is_a_miss_never_a_wait)
{
	struct t_req t;
	t_req_init(&t, toks8, 8, 1);
	uint32_t a = rfx_worker(&fx, "http://a", "m", STATEBUS_WORKER_PLAIN, true);
	struct cache_source src;
	ck_assert_int_eq(cache_source_init_indexer(&src, 1, "tcp://127.0.0.1:1", 0, 0), SY_OK);
	struct cache_aware_params cp;
	cache_aware_params_default(&cp);
	struct policy p;
	struct engine_candidate c[1] = {rfx_cand(&fx, a, "http://a")};
	struct pick out;
	ck_assert_int_eq(cache_pick(&p, &cp, &src, &t, c, 1, &out), PICK_OK);
	ck_assert_str_eq(out.reason, "no_cache_candidate");
	ck_assert_int_eq(t.memo.entries[0].status, PREFIX_UNAVAILABLE);
	ck_assert_int_eq(t.memo.entries[0].why, PREFIX_WHY_TIMEOUT);
	ck_assert_ptr_null(src.sock); /* never opened */
	policy_destroy(&p);
	cache_source_close(&src);
	prefix_memo_free(&t.memo);
}
END_TEST

START_TEST(test_decode_stage_pick_is_invalid_configuration)
{
	struct t_req t;
	t_req_init(&t, toks8, 8, 1);
	uint32_t a = rfx_worker(&fx, "http://a", "m", STATEBUS_WORKER_PLAIN, true);
	struct policy p;
	struct cache_aware_params cp;
	cache_aware_params_default(&cp);
	mk_policy(&p, &cp, NULL, NULL);
	struct engine_candidate c[1] = {rfx_cand(&fx, a, "http://a")};
	struct pick_ctx x = ctx_of(&t, c, 1, NULL);
	x.stage = STAGE_DECODE;
	struct pick out;
	ck_assert_int_eq(policy_pick(&p, &x, &out), PICK_INVALID_CONFIGURATION);
	policy_destroy(&p);
	prefix_memo_free(&t.memo);
}
END_TEST

/* ---- configuration combinations refused at start-up -------------------------- */

static const char *cfg_err(const char *yaml, const char *flag, const char *value)
{
	static struct sy_config_error err;
	struct sy_config cfg;
	ck_assert_int_eq(sy_config_init_defaults(&cfg), SY_OK);
	int rc = SY_OK;
	if (yaml != NULL)
		rc = sy_config_load_string(&cfg, "t.yaml", yaml, strlen(yaml), &err);
	if (rc == SY_OK && flag != NULL)
		rc = sy_config_apply_flag(&cfg, "router", flag, value, &err);
	if (rc == SY_OK)
		rc = sy_config_finish(&cfg, &err);
	sy_config_free(&cfg);
	return rc == SY_OK ? "" : err.msg;
}

START_TEST(test_config_refuses_cache_aware_on_decode_groups)
{
	ck_assert_str_eq(cfg_err(NULL, "--decode-policy", "cache_aware"),
			 "policy.decode_policy: cache_aware refuses decode groups (a decode engine "
			 "prefills nothing); use power_of_n");
	ck_assert_ptr_nonnull(strstr(
		cfg_err("buckets:\n  - id: a\n    groups:\n      prefill: {policy: {type: "
			"cache_aware}}\n      decode: {policy: {type: cache_aware}}\n",
			NULL, NULL),
		"buckets[0].groups.decode.policy.type: cache_aware refuses decode groups"));
}
END_TEST

START_TEST(test_config_refuses_floor_without_limit_or_above_it)
{
	ck_assert_str_eq(cfg_err("policy: {type: cache_aware, saturation_queue_floor: 2}\n", NULL,
				 NULL),
			 "t.yaml:1:9: policy.saturation_queue_floor: needs worker_queue_limit "
			 "(--worker-queue-limit): the floor only applies under the soft queue gate; "
			 "use both, or remove it");
	ck_assert_ptr_nonnull(strstr(cfg_err("policy: {type: cache_aware, worker_queue_limit: 2, "
					     "saturation_queue_floor: 3}\n",
					     NULL, NULL),
				     "3 is above worker_queue_limit 2"));
	ck_assert_str_eq(cfg_err("policy: {type: cache_aware, worker_queue_limit: 4, "
				 "saturation_queue_floor: 4}\n",
				 NULL, NULL),
			 "");
}
END_TEST

START_TEST(test_config_refuses_rel_threshold_not_above_one_and_bad_bounds)
{
	ck_assert_ptr_nonnull(strstr(cfg_err(NULL, "--pressure-rel-threshold", "1"),
				     "policy.pressure_rel_threshold: must be > 1"));
	ck_assert_str_eq(cfg_err("policy: {type: cache_aware}\n", "--pressure-rel-threshold", "1.01"),
			 "");
	ck_assert_ptr_nonnull(strstr(cfg_err("policy: {cache_candidate_min_workers: 9, "
					     "cache_candidate_max_workers: 8}\n",
					     NULL, NULL),
				     "is above cache_candidate_max_workers 8"));
	ck_assert_ptr_nonnull(strstr(cfg_err(NULL, "--cache-candidate-ratio", "0"), "must be > 0"));
	ck_assert_ptr_nonnull(strstr(cfg_err(NULL, "--cache-prefix-provider", "indexer"),
				     "kv_indexer_endpoint: required with cache_prefix_provider "
				     "indexer"));
	ck_assert_ptr_nonnull(strstr(cfg_err(NULL, "--cache-prefix-provider", "remote"),
				     "must be local or indexer"));
}
END_TEST

START_TEST(test_config_refuses_cache_keys_in_a_non_cache_group)
{
	ck_assert_ptr_nonnull(strstr(
		cfg_err("buckets:\n  - id: a\n    groups:\n      plain: {policy: {type: "
			"power_of_n, worker_queue_limit: 3}}\n",
			NULL, NULL),
		"buckets[0].groups.plain.policy.worker_queue_limit: only read by the cache_aware "
		"policy; this group runs power_of_n"));
}
END_TEST

START_TEST(test_config_flags_follow_the_naming_rule)
{
	char key[128];
	ck_assert_int_eq(sy_config_flag_to_key("router", "--cache-affinity-min-matched-tokens", key,
					       sizeof(key)),
			 SY_OK);
	ck_assert_str_eq(key, "policy.cache_affinity_min_matched_tokens");
	ck_assert_int_eq(sy_config_flag_to_key("router", "--min-load-choices", key, sizeof(key)),
			 SY_OK);
	ck_assert_str_eq(key, "policy.min_load_choices");
	ck_assert_int_eq(sy_config_flag_to_key("router", "--disable-pressure-guard", key,
					       sizeof(key)),
			 SY_OK);
	ck_assert_str_eq(key, "policy.disable_pressure_guard");
	ck_assert_int_eq(sy_config_flag_to_key("router", "--cache-predicted-half-life-ms", key,
					       sizeof(key)),
			 SY_OK);
	ck_assert_str_eq(key, "policy.cache_predicted_half_life_ms");
}
END_TEST

START_TEST(test_gen_builds_cache_aware_with_config_values)
{
	struct sy_config cfg;
	struct sy_config_error err;
	ck_assert_int_eq(sy_config_init_defaults(&cfg), SY_OK);
	const char *y = "policy: {type: cache_aware, cache_affinity_min_matched_tokens: 64,\n"
			"  worker_queue_limit: 4, disable_pressure_guard: true}\n";
	ck_assert_int_eq(sy_config_load_string(&cfg, "t.yaml", y, strlen(y), &err), SY_OK);
	ck_assert_int_eq(sy_config_finish(&cfg, &err), SY_OK);
	struct router_gen *g = NULL;
	ck_assert_int_eq(router_gen_build(&cfg, 1, &g, &err), SY_OK);
	ck_assert(g->has_cache_policy);
	ck_assert_ptr_nonnull(g->digests);
	ck_assert_int_eq(g->buckets[0].plain.policy.kind, POLICY_CACHE_AWARE);
	ck_assert_ptr_eq(cache_aware_source(&g->buckets[0].plain.policy), &g->sources[0]);
	router_gen_unref(g);
	sy_config_free(&cfg);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cache_aware");
	TCase *tc = tcase_create("cache_aware");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_scenario13_min_tokens_1_picks_deep);
	tcase_add_test(tc, test_scenario14_remote_urls_max_of_duplicates_capped_exact_match);
	tcase_add_test(tc, test_scenario17_owner_queued_cold_idle_goes_cold);
	tcase_add_test(tc, test_scenario17_both_queued_pins_owner);
	tcase_add_test(tc, test_scenario17_cold_3_with_floor_2_pins_owner);
	tcase_add_test(tc, test_scenario18_owner_rejected_both_queued_no_cold_fallback);
	tcase_add_test(tc, test_scenario19_margin_0_keeps_deep);
	tcase_add_test(tc, test_scenario19_margin_1_guard_switches_to_shallow);
	tcase_add_test(tc, test_scenario19_stale_shallow_disables_guard_keeps_deep);
	tcase_add_test(tc, test_candidate_limit_follows_the_reference_table);
	tcase_add_test(tc, test_weighted_blocks_window_then_half_life);
	tcase_add_test(tc, test_predicted_depth_wins_fresh_decays_stale_approximate_kept);
	tcase_add_test(tc, test_rejected_source_is_invalid_signal);
	tcase_add_test(tc, test_indexer_entry_missing_at_pick_is_a_miss_never_a_wait);
	tcase_add_test(tc, test_decode_stage_pick_is_invalid_configuration);
	tcase_add_test(tc, test_config_refuses_cache_aware_on_decode_groups);
	tcase_add_test(tc, test_config_refuses_floor_without_limit_or_above_it);
	tcase_add_test(tc, test_config_refuses_rel_threshold_not_above_one_and_bad_bounds);
	tcase_add_test(tc, test_config_refuses_cache_keys_in_a_non_cache_group);
	tcase_add_test(tc, test_config_flags_follow_the_naming_rule);
	tcase_add_test(tc, test_gen_builds_cache_aware_with_config_values);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sy_check_run(suite());
}
