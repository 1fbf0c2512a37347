/* test_select.c — configuration generations (router/core/generation.h) and the ordered
 * bucket-attempt loop router_select (router/core/select.h; DESIGN.md §4 steps 2–5,
 * §9 error codes): catch-all buckets, fallback, stage-specific 503s,
 * admission exhaustion with details, 404/400 mapping, PD selections, policy
 * inheritance, policy-stage refusals, and a table that moves under the snapshot. */
#include <check.h>
#include <string.h>

#include "common/config.h"
#include "router/core/generation.h"
#include "router/core/select.h"
#include "statebus-counters.h"
#include "tests/unit/router/router_fixture.h"
#include "tests/unit/sy_check.h"

static struct rfx fx;
static struct sy_config cfg;
static struct sy_config_error cerr;
static struct router_gen *gen;
static struct pick_request req;
static struct selection sel;
static struct router_error err;

static void setup(void)
{
	rfx_open(&fx);
	ck_assert_int_eq(sy_config_init_defaults(&cfg), SY_OK);
	gen = NULL;
	memset(&req, 0, sizeof(req));
	req.model.ptr = "default-model";
	req.model.len = strlen(req.model.ptr);
	req.input_tokens = 10;
	req.n = 1;
	router_rng_seed(3);
}

static void teardown(void)
{
	router_gen_unref(gen);
	sy_config_free(&cfg);
	rfx_close(&fx);
}

/* Loads YAML (may be NULL), finishes, builds the generation. */
static int build(const char *yaml)
{
	if (yaml != NULL)
		ck_assert_int_eq(sy_config_load_string(&cfg, "t.yaml", yaml, strlen(yaml), &cerr), SY_OK);
	ck_assert_int_eq(sy_config_finish(&cfg, &cerr), SY_OK);
	int rc = router_gen_build(&cfg, 1, &gen, &cerr);
	if (rc == SY_OK)
		router_gen_set_fleet_refresh(gen, 0);
	return rc;
}

static int sel_run(void) { return router_select(gen, fx.r, &req, RF_NOW, &sel, &err); }

static uint32_t plain(const char *id) { return rfx_worker(&fx, id, "default-model", STATEBUS_WORKER_PLAIN, true); }

START_TEST(test_catch_all_bucket_from_flags_uses_power_of_n)
{
	ck_assert_int_eq(build(NULL), SY_OK);
	ck_assert_uint_eq(gen->n_buckets, 2);
	ck_assert_str_eq(gen->buckets[0].id, "default");
	ck_assert_str_eq(gen->buckets[1].id, "default-pd");
	ck_assert(gen->buckets[0].follows_fleet && gen->buckets[1].follows_fleet);
	ck_assert_int_eq(gen->buckets[0].plain.policy.kind, POLICY_POWER_OF_N);
	ck_assert_uint_eq(gen->buckets[0].plain.policy.n_choices, 2);
	plain("http://a");
	plain("http://b");
	ck_assert_int_eq(sel_run(), SY_OK);
	ck_assert(!sel.pd);
	ck_assert_str_eq(sel.bucket_id, "default");
	ck_assert_str_eq(sel.reason, "power_of_n");
	ck_assert_str_eq(sel.policy, "power_of_n");
	ck_assert(strcmp(sel.worker.id, "http://a") == 0 || strcmp(sel.worker.id, "http://b") == 0);
	ck_assert(statebus_worker_valid(fx.r, sel.worker.slot, sel.worker.generation));
	ck_assert_uint_eq(sel.buckets_tried, 1);
}
END_TEST

START_TEST(test_catch_all_follows_policy_and_admission_flags)
{
	ck_assert_int_eq(sy_config_apply_flag(&cfg, "router", "--policy", "round_robin", &cerr), SY_OK);
	ck_assert_int_eq(sy_config_apply_flag(&cfg, "router", "--filter", "overloaded", &cerr), SY_OK);
	ck_assert_int_eq(sy_config_apply_flag(&cfg, "router", "--max-in-flight", "1", &cerr), SY_OK);
	ck_assert_int_eq(build(NULL), SY_OK);
	ck_assert_int_eq(gen->buckets[0].plain.policy.kind, POLICY_ROUND_ROBIN);
	ck_assert_int_eq(gen->buckets[0].plain.policy.admission.max_inflight_requests, 1);
	uint32_t a = plain("http://a");
	ck_assert_int_eq(sel_run(), SY_OK);
	ck_assert_str_eq(sel.reason, "round_robin");
	rfx_inflight(&fx, a, 1);
	ck_assert_int_eq(sel_run(), SY_EBUSY);
	ck_assert_int_eq(err.status, 503);
	ck_assert_str_eq(err.code, "policy_selection_failed");
	ck_assert_uint_eq(err.n_details, 1);
	ck_assert_str_eq(err.details[0].worker, "http://a");
	ck_assert_str_eq(err.details[0].limit, "max_inflight_requests");
	ck_assert_ptr_null(strstr(err.message, "http"));
}
END_TEST

START_TEST(test_unknown_model_is_404)
{
	ck_assert_int_eq(build(NULL), SY_OK);
	plain("http://a");
	req.model.ptr = "gpt-x";
	req.model.len = 5;
	ck_assert_int_eq(sel_run(), SY_ENOENT);
	ck_assert_int_eq(err.status, 404);
	ck_assert_str_eq(err.code, "model_not_found");
	ck_assert_str_eq(err.message, "model \"gpt-x\" is not served");
}
END_TEST

/* A model the configuration names (model_id "m"). */
static void model_m(void)
{
	req.model.ptr = "m";
	req.model.len = 1;
}

START_TEST(test_configured_model_without_live_workers_is_503_not_404)
{
	ck_assert_int_eq(build("model_id: m\n"), SY_OK);
	model_m();
	ck_assert_int_eq(sel_run(), SY_EBUSY);
	ck_assert_int_eq(err.status, 503);
	ck_assert_str_eq(err.code, "no_healthy_workers");
	ck_assert_str_eq(err.message, "no healthy worker is available for model \"m\"");
	rfx_worker(&fx, "http://a", "m", STATEBUS_WORKER_PLAIN, false);
	ck_assert_int_eq(sel_run(), SY_EBUSY);
	ck_assert_str_eq(err.code, "no_healthy_workers");
}
END_TEST

static const char *two_buckets =
	"buckets:\n"
	"  - {id: short, limits: {max: 100}, max_context_tokens: 200,\n"
	"     groups: {plain: {worker_ids: [http://s], policy: {type: round_robin}}}}\n"
	"  - {id: long, groups: {plain: {policy: {type: round_robin}}}}\n";

START_TEST(test_no_matching_bucket_is_400)
{
	ck_assert_int_eq(build("buckets:\n  - {id: short, limits: {max: 100}, groups: {plain: {}}}\n"),
			 SY_OK);
	plain("http://a");
	req.input_tokens = 101;
	ck_assert_int_eq(sel_run(), SY_EINVAL);
	ck_assert_int_eq(err.status, 400);
	ck_assert_str_eq(err.code, "no_matching_bucket");
	ck_assert_str_eq(err.message, "no bucket accepts 101 input tokens");
	req.input_tokens = 10;
	req.has_peak = true;
	req.expected_peak = 5;
	ck_assert_int_eq(sel_run(), SY_EINVAL);
	ck_assert_str_eq(err.code, "bad_request");
	ck_assert_str_eq(err.message, "expected peak below input tokens");
}
END_TEST

START_TEST(test_empty_group_falls_back_to_next_bucket)
{
	ck_assert_int_eq(build(two_buckets), SY_OK);
	plain("http://a");
	ck_assert_int_eq(sel_run(), SY_OK);
	ck_assert_str_eq(sel.bucket_id, "long");
	ck_assert_str_eq(sel.worker.id, "http://a");
	ck_assert_uint_eq(sel.buckets_tried, 2);
	plain("http://s");
	ck_assert_int_eq(sel_run(), SY_OK);
	ck_assert_str_eq(sel.bucket_id, "short");
	ck_assert_str_eq(sel.worker.id, "http://s");
	req.has_peak = true;
	req.expected_peak = 201; /* above short's context */
	ck_assert_int_eq(sel_run(), SY_OK);
	ck_assert_str_eq(sel.bucket_id, "long");
}
END_TEST

START_TEST(test_admission_rejections_accumulate_over_buckets_then_503_with_details)
{
	ck_assert_int_eq(build("policy: {admission: {max_inflight_requests: 1}}\n"
			       "buckets:\n"
			       "  - {id: b1, rank: 1, groups: {plain: {policy: {type: round_robin}}}}\n"
			       "  - {id: b2, rank: 2, groups: {plain: {policy: {type: round_robin, "
			       "admission: {max_inflight_requests: 5}}}}}\n"),
			 SY_OK);
	uint32_t a = plain("http://a");
	rfx_inflight(&fx, a, 1);
	ck_assert_int_eq(sel_run(), SY_OK); /* b1 rejects, b2 (cap 5) admits */
	ck_assert_str_eq(sel.bucket_id, "b2");
	rfx_inflight(&fx, a, 4);
	ck_assert_int_eq(sel_run(), SY_EBUSY);
	ck_assert_str_eq(err.code, "policy_selection_failed");
	ck_assert_uint_eq(err.n_details, 2);
	ck_assert_str_eq(err.details[0].limit, "max_inflight_requests");
	ck_assert_str_eq(err.details[1].worker, "http://a");
	ck_assert_str_eq(err.message, "every bucket was tried; 2 worker(s) rejected the request at "
				      "their admission limits");
}
END_TEST

static const char *pd_bucket = "buckets:\n"
			       "  - id: pd\n"
			       "    groups: {prefill: {}, decode: {}}\n";

START_TEST(test_pd_selection_and_stage_specific_503s)
{
	ck_assert_int_eq(build(pd_bucket), SY_OK);
	/* the built-in model_id is not served until a worker registers it */
	ck_assert_int_eq(sel_run(), SY_ENOENT);
	rfx_worker(&fx, "http://u", "default-model", STATEBUS_WORKER_PREFILL, false);
	ck_assert_int_eq(gen->buckets[0].prefill.policy.kind, POLICY_POWER_OF_N);
	ck_assert_int_eq(gen->buckets[0].decode.policy.kind, POLICY_POWER_OF_N);
	ck_assert_int_eq(sel_run(), SY_EBUSY);
	ck_assert_str_eq(err.code, "no_prefill_workers_available");
	rfx_worker(&fx, "http://p", "default-model", STATEBUS_WORKER_PREFILL, true);
	ck_assert_int_eq(sel_run(), SY_EBUSY);
	ck_assert_str_eq(err.code, "no_decode_workers_available");
	ck_assert_str_eq(err.message, "no decode worker is available for model \"default-model\"");
	rfx_worker(&fx, "http://d", "default-model", STATEBUS_WORKER_DECODE, true);
	ck_assert_int_eq(sel_run(), SY_OK);
	ck_assert(sel.pd);
	ck_assert_str_eq(sel.prefill.id, "http://p");
	ck_assert_uint_eq(sel.prefill.bootstrap_port, 8998);
	ck_assert_str_eq(sel.worker.id, "http://d");
	ck_assert_str_eq(sel.prefill_reason, "power_of_n");
	ck_assert_str_eq(sel.bucket_id, "pd");
}
END_TEST

START_TEST(test_excluded_workers_are_never_selected_and_exhaust_to_503)
{
	ck_assert_int_eq(sy_config_apply_flag(&cfg, "router", "--policy", "round_robin", &cerr), SY_OK);
	ck_assert_int_eq(build(NULL), SY_OK);
	uint32_t a = plain("http://a"), b = plain("http://b");
	plain("http://c");
	struct worker_exclude ex = {.n = 2, .slots = {a, b}};
	for (int i = 0; i < 6; i++) { /* round robin would reach a and b: never */
		ck_assert_int_eq(router_select_excluding(gen, fx.r, &req, RF_NOW, &ex, &sel, &err), SY_OK);
		ck_assert_str_eq(sel.worker.id, "http://c");
	}
	ex.slots[ex.n++] = sel.worker.slot;
	ck_assert_int_eq(router_select_excluding(gen, fx.r, &req, RF_NOW, &ex, &sel, &err), SY_EBUSY);
	ck_assert_int_eq(err.status, 503);
	ck_assert_str_eq(err.code, "no_healthy_workers");
}
END_TEST

START_TEST(test_excluded_decode_moves_the_pd_pick_to_the_other_decode)
{
	ck_assert_int_eq(build(pd_bucket), SY_OK);
	rfx_worker(&fx, "http://p", "default-model", STATEBUS_WORKER_PREFILL, true);
	uint32_t d1 = rfx_worker(&fx, "http://d1", "default-model", STATEBUS_WORKER_DECODE, true);
	rfx_worker(&fx, "http://d2", "default-model", STATEBUS_WORKER_DECODE, true);
	struct worker_exclude ex = {.n = 1, .slots = {d1}};
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(router_select_excluding(gen, fx.r, &req, RF_NOW, &ex, &sel, &err), SY_OK);
		ck_assert(sel.pd);
		ck_assert_str_eq(sel.prefill.id, "http://p");
		ck_assert_str_eq(sel.worker.id, "http://d2");
	}
}
END_TEST

START_TEST(test_breaker_filter_follows_the_generations_cb_threshold)
{
	/* an open breaker is a candidate filter only with --cb-threshold; its
	 * cool-down comes from --cb-cool-down-secs */
	ck_assert_int_eq(sy_config_apply_flag(&cfg, "router", "--cb-threshold", "2", &cerr), SY_OK);
	ck_assert_int_eq(sy_config_apply_flag(&cfg, "router", "--cb-cool-down-secs", "10", &cerr), SY_OK);
	ck_assert_int_eq(build(NULL), SY_OK);
	uint32_t a = plain("http://a");
	plain("http://b");
	for (int i = 0; i < 2; i++)
		statebus_breaker_report(fx.r, a, rfx_gen(&fx, a), 2, STATEBUS_CB_FAILURE, RF_NOW - RF_SEC);
	for (int i = 0; i < 6; i++) {
		ck_assert_int_eq(sel_run(), SY_OK);
		ck_assert_str_eq(sel.worker.id, "http://b");
	}
	/* 10 s after the opening the next selection may carry the probe */
	bool probe = false;
	for (int i = 0; i < 20 && !probe; i++) {
		ck_assert_int_eq(router_select(gen, fx.r, &req, RF_NOW + 9 * RF_SEC, &sel, &err), SY_OK);
		probe = strcmp(sel.worker.id, "http://a") == 0;
		ck_assert(!probe || sel.worker.cb_probe);
	}
	ck_assert(probe);
	ck_assert_uint_eq(sel.worker.cb_probe_ns, RF_NOW + 9 * RF_SEC);
}
END_TEST

START_TEST(test_default_buckets_follow_the_static_fleet_roles)
{
	ck_assert_int_eq(build("workers:\n"
			       "  - {url: http://a, role: plain, model: small}\n"
			       "  - {url: http://p, role: prefill}\n"
			       "  - {url: http://d, role: decode}\n"
			       "policy: {type: random, prefill_policy: round_robin}\n"),
			 SY_OK);
	ck_assert_uint_eq(gen->n_buckets, 2);
	ck_assert_str_eq(gen->buckets[0].id, "default");
	ck_assert_str_eq(gen->buckets[1].id, "default-pd");
	ck_assert_int_eq(gen->buckets[0].plain.policy.kind, POLICY_RANDOM);
	ck_assert_int_eq(gen->buckets[1].prefill.policy.kind, POLICY_ROUND_ROBIN);
	ck_assert_int_eq(gen->buckets[1].decode.policy.kind, POLICY_POWER_OF_N);
	/* per model by the roles its workers have (both buckets follow the fleet) */
	ck_assert(gen->buckets[0].follows_fleet && gen->buckets[1].follows_fleet);
	rfx_worker(&fx, "http://a", "small", STATEBUS_WORKER_PLAIN, true);
	rfx_worker(&fx, "http://p", "default-model", STATEBUS_WORKER_PREFILL, true);
	ck_assert_int_eq(sel_run(), SY_EBUSY); /* default-model: PD only, no decode */
	ck_assert_str_eq(err.code, "no_decode_workers_available");
	ck_assert_uint_eq(sel.buckets_tried, 1);
	req.model.ptr = "small";
	req.model.len = 5;
	ck_assert_int_eq(sel_run(), SY_OK);
	ck_assert_str_eq(sel.bucket_id, "default");
	ck_assert(!sel.pd);
}
END_TEST

/* The seed resolves per model: a request for model m that fits none of m's
 * buckets is 400 no_matching_bucket, even when another model's bucket
 * would fit it; m's empty buckets are 503; an unknown model is 404. */
START_TEST(test_buckets_resolve_per_model)
{
	ck_assert_int_eq(build("model_id: a\n"
			       "workers:\n"
			       "  - {url: http://a1, model: a}\n"
			       "  - {url: http://b1, model: b}\n"
			       "buckets:\n"
			       "  - {id: a-short, models: [a], max_context_tokens: 8192,\n"
			       "     limits: {max: 4096}, groups: {plain: {}}}\n"
			       "  - {id: b-long, models: [b], max_context_tokens: 131072,\n"
			       "     groups: {plain: {}}}\n"),
			 SY_OK);
	uint32_t a1 = rfx_worker(&fx, "http://a1", "a", STATEBUS_WORKER_PLAIN, true);
	rfx_worker(&fx, "http://b1", "b", STATEBUS_WORKER_PLAIN, true);
	req.model.ptr = "a";
	req.model.len = 1;
	req.input_tokens = 4096;
	req.has_peak = true;
	req.expected_peak = 16384; /* over a-short's 8k context */
	ck_assert_int_eq(sel_run(), SY_EINVAL);
	ck_assert_int_eq(err.status, 400);
	ck_assert_str_eq(err.code, "no_matching_bucket");
	req.expected_peak = 8192;
	ck_assert_int_eq(sel_run(), SY_OK);
	ck_assert_str_eq(sel.bucket_id, "a-short");
	ck_assert_str_eq(sel.worker.id, "http://a1");
	req.model.ptr = "b";
	req.expected_peak = 16384;
	ck_assert_int_eq(sel_run(), SY_OK);
	ck_assert_str_eq(sel.bucket_id, "b-long");
	ck_assert_str_eq(sel.worker.id, "http://b1");
	/* a's bucket with its only worker down: 503 in a's bucket, never b's */
	ck_assert_int_eq(statebus_worker_remove(fx.r, a1, rfx_gen(&fx, a1)), SY_OK);
	rfx_worker(&fx, "http://a1", "a", STATEBUS_WORKER_PLAIN, false);
	req.model.ptr = "a";
	req.expected_peak = 8192;
	ck_assert_int_eq(sel_run(), SY_EBUSY);
	ck_assert_int_eq(err.status, 503);
	ck_assert_str_eq(err.code, "no_healthy_workers");
	ck_assert_uint_eq(sel.buckets_tried, 1);
	req.model.ptr = "c";
	ck_assert_int_eq(sel_run(), SY_ENOENT);
	ck_assert_int_eq(err.status, 404);
}
END_TEST

/* A model no bucket names is served by the buckets without models. */
START_TEST(test_unnamed_models_use_the_buckets_without_models)
{
	ck_assert_int_eq(build("buckets:\n"
			       "  - {id: named, models: [x], groups: {plain: {}}}\n"
			       "  - {id: rest, groups: {plain: {}}}\n"),
			 SY_OK);
	plain("http://a");
	ck_assert_int_eq(sel_run(), SY_OK);
	ck_assert_str_eq(sel.bucket_id, "rest");
	rfx_worker(&fx, "http://x", "x", STATEBUS_WORKER_PLAIN, true);
	req.model.ptr = "x";
	req.model.len = 1;
	ck_assert_int_eq(sel_run(), SY_OK);
	ck_assert_str_eq(sel.bucket_id, "named");
	ck_assert_str_eq(sel.worker.id, "http://x");
}
END_TEST

START_TEST(test_group_policy_inherits_top_level_keys)
{
	ck_assert_int_eq(build("policy: {power_of_n_choices: 3, decode_policy: "
			       "round_robin, admission: {max_running_requests: 9, max_kv_tokens: 5}}\n"
			       "buckets:\n"
			       "  - id: a\n"
			       "    groups:\n"
			       "      prefill: {policy: {type: power_of_n, admission: {max_kv_tokens: 7}}}\n"
			       "      decode: {}\n"),
			 SY_OK);
	struct bucket *b = &gen->buckets[0];
	ck_assert_int_eq(b->prefill.policy.kind, POLICY_POWER_OF_N);
	ck_assert_uint_eq(b->prefill.policy.n_choices, 3);
	ck_assert_int_eq(b->prefill.policy.admission.max_running_requests, 9);
	ck_assert_int_eq(b->prefill.policy.admission.max_kv_tokens, 7);
	ck_assert_int_eq(b->decode.policy.kind, POLICY_ROUND_ROBIN);
	ck_assert_int_eq(b->decode.policy.admission.max_kv_tokens, 5);
}
END_TEST

START_TEST(test_every_reference_policy_type_builds_in_a_plain_group)
{
	static const struct { const char *type; enum policy_kind kind; } kinds[] = {
		{"round_robin", POLICY_ROUND_ROBIN}, {"random", POLICY_RANDOM},
		{"power_of_n", POLICY_POWER_OF_N},   {"power_of_two", POLICY_POWER_OF_N},
		{"load_based", POLICY_LOAD_BASED},   {"session_aware", POLICY_SESSION_AWARE},
		{"sticky", POLICY_STICKY},           {"cache_aware", POLICY_CACHE_AWARE},
	};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		char yaml[160];
		snprintf(yaml, sizeof(yaml),
			 "buckets:\n  - {id: a, groups: {plain: {policy: {type: %s}}}}\n",
			 kinds[i].type);
		if (gen != NULL) {
			router_gen_unref(gen);
			gen = NULL;
		}
		sy_config_free(&cfg);
		sy_config_init_defaults(&cfg);
		ck_assert_msg(build(yaml) == SY_OK, "%s: %s", kinds[i].type, cerr.msg);
		ck_assert_int_eq(gen->buckets[0].plain.policy.kind, kinds[i].kind);
	}
}
END_TEST

START_TEST(test_sticky_from_flags_builds_with_its_fallback)
{
	/* sticky's fallback comes from a flag */
	ck_assert_int_eq(sy_config_apply_flag(&cfg, "router", "--policy", "sticky", &cerr), SY_OK);
	ck_assert_int_eq(sy_config_apply_flag(&cfg, "router", "--sticky-fallback", "load_based",
					      &cerr), SY_OK);
	ck_assert_int_eq(build(NULL), SY_OK);
	ck_assert_int_eq(gen->buckets[0].plain.policy.kind, POLICY_STICKY);
	ck_assert_int_eq(gen->buckets[0].plain.policy.fallback->kind, POLICY_LOAD_BASED);
}
END_TEST

/* A plain worker of default-model serving the LoRA adapters in `list`
 * (statebus_worker.lora_adapters: NUL-separated, `len` bytes), of engine
 * kind `engine`. */
static uint32_t lora_worker(const char *id, const char *list, size_t len, uint8_t engine, int role)
{
	struct statebus_worker w = sbt_worker(id, 1);
	snprintf(w.model, sizeof(w.model), "default-model");
	w.role = (uint8_t)role;
	w.healthy = 1;
	w.engine = engine;
	memcpy(w.lora_adapters, list, len);
	uint32_t slot, g;
	ck_assert_int_eq(statebus_worker_add(fx.r, &w, &slot, &g), SY_OK);
	return slot;
}

static void model_is(const char *m)
{
	req.model.ptr = m;
	req.model.len = strlen(m);
	req.lora.ptr = NULL;
	req.lora.len = 0;
}

START_TEST(test_lora_adapter_selects_only_the_workers_that_serve_it)
{
	ck_assert_int_eq(build(NULL), SY_OK);
	lora_worker("http://a", "x\0\0", 3, STATEBUS_ENGINE_VLLM, STATEBUS_WORKER_PLAIN);
	lora_worker("http://b", "x\0y\0\0", 5, STATEBUS_ENGINE_VLLM, STATEBUS_WORKER_PLAIN);
	lora_worker("http://c", "", 1, STATEBUS_ENGINE_VLLM, STATEBUS_WORKER_PLAIN);
	bool seen_a = false, seen_b = false;
	for (int i = 0; i < 16; i++) {
		model_is("y");
		ck_assert_int_eq(sel_run(), SY_OK);
		ck_assert_str_eq(sel.worker.id, "http://b");
		model_is("x");
		ck_assert_int_eq(sel_run(), SY_OK);
		ck_assert_str_ne(sel.worker.id, "http://c");
		seen_a |= strcmp(sel.worker.id, "http://a") == 0;
		seen_b |= strcmp(sel.worker.id, "http://b") == 0;
	}
	ck_assert(seen_a && seen_b); /* both adapter servers take picks */
	/* the resolution itself: lora = the adapter, model = its base model */
	char buf[STATEBUS_MODEL_MAX];
	model_is("y");
	ck_assert_int_eq(router_select_adapter(gen, fx.r, &req, buf, sizeof(buf), RF_NOW), SY_OK);
	ck_assert_str_eq(buf, "default-model");
	ck_assert_ptr_eq(req.model.ptr, buf);
	ck_assert_int_eq(req.lora.len, 1);
	ck_assert_int_eq(req.lora.ptr[0], 'y');
	/* a served model is never taken for an adapter; an unknown name is 404 */
	model_is("default-model");
	ck_assert_int_eq(router_select_adapter(gen, fx.r, &req, buf, sizeof(buf), RF_NOW), SY_OK);
	ck_assert_ptr_null(req.lora.ptr);
	model_is("z");
	ck_assert_int_eq(sel_run(), SY_ENOENT);
	ck_assert_str_eq(err.code, "model_not_found");
}
END_TEST

START_TEST(test_lora_list_without_terminator_yields_no_adapter)
{
	ck_assert_int_eq(build(NULL), SY_OK);
	char list[STATEBUS_LORA_LIST_MAX];
	memset(list, 'a', sizeof(list)); /* no NUL at all: the table ends it, the name is too long */
	lora_worker("http://a", list, sizeof(list), STATEBUS_ENGINE_VLLM, STATEBUS_WORKER_PLAIN);
	struct statebus_worker w;
	ck_assert_int_eq(statebus_worker_read(fx.r, 0, &w), SY_OK);
	ck_assert_int_eq(w.lora_adapters[sizeof(w.lora_adapters) - 1], 0);
	ck_assert_int_eq(sel_run(), SY_OK); /* refreshes the snapshot */
	ck_assert_uint_eq(gen->fleet.n_adapters, 0);
	uint32_t base;
	ck_assert_uint_eq(fleet_adapter_index(&gen->fleet, list, 20, &base), FLEET_NO_MODEL);
}
END_TEST

START_TEST(test_pd_selection_carries_the_prefill_engine_kind)
{
	ck_assert_int_eq(build(pd_bucket), SY_OK);
	lora_worker("http://p", "", 1, STATEBUS_ENGINE_VLLM, STATEBUS_WORKER_PREFILL);
	lora_worker("http://d", "", 1, STATEBUS_ENGINE_VLLM, STATEBUS_WORKER_DECODE);
	ck_assert_int_eq(sel_run(), SY_OK);
	ck_assert(sel.pd);
	ck_assert_uint_eq(sel.prefill.engine, STATEBUS_ENGINE_VLLM);
	ck_assert(selection_pd_vllm(&sel));
	sel.prefill.engine = STATEBUS_ENGINE_SGLANG;
	ck_assert(!selection_pd_vllm(&sel));
	sel.pd = false;
	sel.prefill.engine = STATEBUS_ENGINE_VLLM;
	ck_assert(!selection_pd_vllm(&sel)); /* plain is never PD */
}
END_TEST

START_TEST(test_invalid_enabled_slo_target_is_400)
{
	ck_assert_int_eq(sy_config_apply_flag(&cfg, "router", "--ttft-slo-policy", "slo_first", &cerr),
			 SY_OK);
	ck_assert_int_eq(build(NULL), SY_OK);
	ck_assert(gen->prepare.read_ttft_slo);
	ck_assert(!gen->prepare.read_tps_slo);
	plain("http://a");
	req.has_ttft_slo = true;
	req.ttft_slo_ms = 0;
	ck_assert_int_eq(sel_run(), SY_EINVAL);
	ck_assert_int_eq(err.status, 400);
	ck_assert_str_eq(err.code, "bad_request");
	ck_assert_str_eq(err.message, "x-sgl-ttft-slo-ms: must be a finite number > 0");
}
END_TEST

START_TEST(test_table_moving_under_the_snapshot_reselects_once)
{
	ck_assert_int_eq(build("policy: {type: round_robin}\n"), SY_OK);
	router_gen_set_fleet_refresh(gen, UINT64_C(3600) * RF_SEC);
	uint32_t a = plain("http://a");
	plain("http://b");
	ck_assert_int_eq(sel_run(), SY_OK);
	ck_assert_str_eq(sel.worker.id, "http://a"); /* cursor 0 */
	ck_assert_int_eq(sel_run(), SY_OK);
	ck_assert_str_eq(sel.worker.id, "http://b"); /* cursor 1 */
	ck_assert_int_eq(statebus_worker_remove(fx.r, a, rfx_gen(&fx, a)), SY_OK);
	ck_assert_int_eq(sel_run(), SY_OK); /* snapshot still lists a; cursor 2 → a */
	ck_assert_str_eq(sel.worker.id, "http://b");
}
END_TEST

/* A pick that raced a removal (the worker left the table inside the
 * snapshot window) is redone in the same bucket, never handed to the next
 * bucket while its own still has a worker. */
START_TEST(test_pick_racing_a_removal_reselects_in_the_same_bucket)
{
	ck_assert_int_eq(build("workers:\n"
			       "  - {url: http://a}\n"
			       "  - {url: http://b}\n"
			       "  - {url: http://c}\n"
			       "buckets:\n"
			       "  - {id: first, rank: 0, groups: {plain: {worker_ids: [http://a, http://b],\n"
			       "     policy: {type: round_robin}}}}\n"
			       "  - {id: second, rank: 1, groups: {plain: {worker_ids: [http://c],\n"
			       "     policy: {type: round_robin}}}}\n"),
			 SY_OK);
	router_gen_set_fleet_refresh(gen, UINT64_C(3600) * RF_SEC);
	uint32_t a = plain("http://a");
	plain("http://b");
	plain("http://c");
	ck_assert_int_eq(sel_run(), SY_OK);
	ck_assert_str_eq(sel.bucket_id, "first");
	ck_assert_str_eq(sel.worker.id, "http://a");
	ck_assert_int_eq(sel_run(), SY_OK);
	ck_assert_str_eq(sel.worker.id, "http://b");
	ck_assert_int_eq(statebus_worker_remove(fx.r, a, rfx_gen(&fx, a)), SY_OK);
	/* the snapshot still lists a, and the group's cursor points at it */
	ck_assert_int_eq(sel_run(), SY_OK);
	ck_assert_str_eq(sel.bucket_id, "first");
	ck_assert_str_eq(sel.worker.id, "http://b");
	ck_assert_uint_eq(sel.buckets_tried, 1);
	ck_assert_uint_eq(sel.reselected, 1);
	/* the snapshot was refreshed after the race: a is gone from it */
	ck_assert_int_eq(sel_run(), SY_OK);
	ck_assert_str_eq(sel.worker.id, "http://b");
	ck_assert_uint_eq(sel.reselected, 0);
}
END_TEST

/* Another generation (another router process, or a reload) of `yaml`. */
static struct router_gen *build_other(const char *yaml)
{
	struct sy_config c2;
	struct router_gen *g = NULL;
	ck_assert_int_eq(sy_config_init_defaults(&c2), SY_OK);
	ck_assert_int_eq(sy_config_load_string(&c2, "t.yaml", yaml, strlen(yaml), &cerr), SY_OK);
	ck_assert_int_eq(sy_config_finish(&c2, &cerr), SY_OK);
	ck_assert_int_eq(router_gen_build(&c2, 2, &g, &cerr), SY_OK);
	router_gen_set_fleet_refresh(g, 0);
	sy_config_free(&c2);
	return g;
}

/* Two router processes = two generations over one region: one rotation. */
START_TEST(test_round_robin_rotation_is_shared_by_router_processes)
{
	ck_assert_int_eq(build("policy: {type: round_robin}\n"), SY_OK);
	struct router_gen *other = build_other("policy: {type: round_robin}\n");
	plain("http://a");
	plain("http://b");
	const char *want[8] = {"http://a", "http://b", "http://a", "http://b",
			       "http://a", "http://b", "http://a", "http://b"};
	for (int i = 0; i < 8; i++) {
		struct router_gen *g = i % 2 ? other : gen;
		ck_assert_int_eq(router_select(g, fx.r, &req, RF_NOW, &sel, &err), SY_OK);
		ck_assert_str_eq(sel.worker.id, want[i]);
	}
	/* the cursor lives in the region, not in either generation */
	ck_assert_uint_eq(gen->buckets[0].plain.policy.cursor, 0);
	ck_assert_uint_eq(other->buckets[0].plain.policy.cursor, 0);
	/* a reload (a new generation) continues the rotation */
	router_gen_unref(other);
	other = build_other("policy: {type: round_robin}\n");
	ck_assert_int_eq(router_select(other, fx.r, &req, RF_NOW, &sel, &err), SY_OK);
	ck_assert_str_eq(sel.worker.id, "http://a");
	ck_assert_int_eq(router_select(other, fx.r, &req, RF_NOW, &sel, &err), SY_OK);
	ck_assert_str_eq(sel.worker.id, "http://b");
	router_gen_unref(other);
}
END_TEST

/* A full cursor table: the group rotates on its own cursor, and looks for
 * room once (one counted refusal), not at every pick. */
START_TEST(test_full_cursor_table_falls_back_to_the_process_cursor)
{
	uint32_t idx;
	for (uint64_t k = 1; k <= STATEBUS_CURSORS; k++)
		ck_assert_int_eq(statebus_cursor_find(fx.r, k, &idx), SY_OK);
	ck_assert_int_eq(build("policy: {type: round_robin}\n"), SY_OK);
	plain("http://a");
	plain("http://b");
	const char *want[4] = {"http://a", "http://b", "http://a", "http://b"};
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(sel_run(), SY_OK);
		ck_assert_str_eq(sel.worker.id, want[i]);
	}
	ck_assert_uint_eq(gen->buckets[0].plain.policy.cursor, 4);
	ck_assert_uint_eq(statebus_counter_get(fx.r, STATEBUS_CTR_CURSORS_FULL), 1);
}
END_TEST

/* Groups of different buckets and stages rotate independently. */
START_TEST(test_rotation_cursor_per_group)
{
	ck_assert_int_eq(build("buckets:\n"
			       "  - {id: x, limits: {max: 100}, groups: {plain: {policy: {type: round_robin}}}}\n"
			       "  - {id: y, groups: {plain: {policy: {type: round_robin}}}}\n"),
			 SY_OK);
	plain("http://a");
	plain("http://b");
	ck_assert_uint_ne(gen->buckets[0].plain.policy.rotation_key,
			  gen->buckets[1].plain.policy.rotation_key);
	req.input_tokens = 10; /* x first */
	ck_assert_int_eq(sel_run(), SY_OK);
	ck_assert_str_eq(sel.bucket_id, "x");
	ck_assert_str_eq(sel.worker.id, "http://a");
	req.input_tokens = 1000; /* y only: its own cursor starts at a */
	ck_assert_int_eq(sel_run(), SY_OK);
	ck_assert_str_eq(sel.bucket_id, "y");
	ck_assert_str_eq(sel.worker.id, "http://a");
	req.input_tokens = 10;
	ck_assert_int_eq(sel_run(), SY_OK);
	ck_assert_str_eq(sel.worker.id, "http://b");
}
END_TEST

START_TEST(test_generation_reference_counting)
{
	ck_assert_int_eq(build(NULL), SY_OK);
	struct router_gen *r = router_gen_ref(gen);
	ck_assert_ptr_eq(r, gen);
	ck_assert_uint_eq(gen->refs, 2);
	router_gen_unref(r);
	ck_assert_uint_eq(gen->refs, 1);
	router_gen_unref(NULL);
}
END_TEST

START_TEST(test_no_region_is_503)
{
	ck_assert_int_eq(build("model_id: m\n"), SY_OK);
	model_m();
	ck_assert_int_eq(router_select(gen, NULL, &req, RF_NOW, &sel, &err), SY_EBUSY);
	ck_assert_str_eq(err.code, "no_healthy_workers");
}
END_TEST

START_TEST(test_default_buckets_follow_the_roles_engines_report)
{
	ck_assert_int_eq(build(NULL), SY_OK);
	/* no worker: the plain default answers, with the plain stage's 503 */
	ck_assert_int_eq(sel_run(), SY_ENOENT); /* default-model not served yet */
	rfx_worker(&fx, "http://p", "default-model", STATEBUS_WORKER_PREFILL, true);
	ck_assert_int_eq(sel_run(), SY_EBUSY);
	ck_assert_str_eq(err.code, "no_decode_workers_available");
	rfx_worker(&fx, "http://d", "default-model", STATEBUS_WORKER_DECODE, true);
	ck_assert_int_eq(sel_run(), SY_OK);
	ck_assert(sel.pd);
	ck_assert_str_eq(sel.bucket_id, "default-pd");
	ck_assert_str_eq(sel.prefill.id, "http://p");
	ck_assert_str_eq(sel.worker.id, "http://d");
	/* another model of plain workers stays on the plain default */
	rfx_worker(&fx, "http://a", "other", STATEBUS_WORKER_PLAIN, true);
	req.model.ptr = "other";
	req.model.len = 5;
	ck_assert_int_eq(sel_run(), SY_OK);
	ck_assert(!sel.pd);
	ck_assert_str_eq(sel.bucket_id, "default");
}
END_TEST

START_TEST(test_pd_disaggregation_builds_only_the_pd_default)
{
	ck_assert_int_eq(sy_config_apply_flag(&cfg, "router", "--pd-disaggregation", NULL, &cerr),
			 SY_OK);
	ck_assert_int_eq(build(NULL), SY_OK);
	ck_assert_uint_eq(gen->n_buckets, 1);
	ck_assert(gen->buckets[0].pd && !gen->buckets[0].follows_fleet);
}
END_TEST

START_TEST(test_request_without_model_goes_to_the_one_model_served)
{
	ck_assert_int_eq(build(NULL), SY_OK);
	req.model_defaulted = true;
	ck_assert_int_eq(sel_run(), SY_EBUSY);
	ck_assert_int_eq(err.status, 503);
	ck_assert_str_eq(err.code, "no_healthy_workers");
	rfx_worker(&fx, "http://a", "engine-model", STATEBUS_WORKER_PLAIN, true);
	ck_assert_int_eq(sel_run(), SY_OK);
	ck_assert_str_eq(sel.worker.id, "http://a");
	rfx_worker(&fx, "http://b", "second-model", STATEBUS_WORKER_PLAIN, true);
	ck_assert_int_eq(sel_run(), SY_EINVAL);
	ck_assert_int_eq(err.status, 400);
	ck_assert_str_eq(err.code, "bad_request");
	/* a configured model_id stays the default */
	router_gen_unref(gen);
	gen = NULL;
	sy_config_free(&cfg);
	ck_assert_int_eq(sy_config_init_defaults(&cfg), SY_OK);
	ck_assert_int_eq(build("model_id: second-model\n"), SY_OK);
	req.model.ptr = "second-model";
	req.model.len = strlen(req.model.ptr);
	ck_assert_int_eq(sel_run(), SY_OK);
	ck_assert_str_eq(sel.worker.id, "http://b");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("select");
	TCase *tc = tcase_create("select");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_catch_all_bucket_from_flags_uses_power_of_n);
	tcase_add_test(tc, test_catch_all_follows_policy_and_admission_flags);
	tcase_add_test(tc, test_unknown_model_is_404);
	tcase_add_test(tc, test_configured_model_without_live_workers_is_503_not_404);
	tcase_add_test(tc, test_no_matching_bucket_is_400);
	tcase_add_test(tc, test_empty_group_falls_back_to_next_bucket);
	tcase_add_test(tc, test_admission_rejections_accumulate_over_buckets_then_503_with_details);
	tcase_add_test(tc, test_pd_selection_and_stage_specific_503s);
	tcase_add_test(tc, test_default_buckets_follow_the_static_fleet_roles);
	tcase_add_test(tc, test_buckets_resolve_per_model);
	tcase_add_test(tc, test_unnamed_models_use_the_buckets_without_models);
	tcase_add_test(tc, test_group_policy_inherits_top_level_keys);
	tcase_add_test(tc, test_every_reference_policy_type_builds_in_a_plain_group);
	tcase_add_test(tc, test_sticky_from_flags_builds_with_its_fallback);
	tcase_add_test(tc, test_invalid_enabled_slo_target_is_400);
	tcase_add_test(tc, test_lora_adapter_selects_only_the_workers_that_serve_it);
	tcase_add_test(tc, test_lora_list_without_terminator_yields_no_adapter);
	tcase_add_test(tc, test_pd_selection_carries_the_prefill_engine_kind);
	tcase_add_test(tc, test_table_moving_under_the_snapshot_reselects_once);
	tcase_add_test(tc, test_pick_racing_a_removal_reselects_in_the_same_bucket);
	tcase_add_test(tc, test_round_robin_rotation_is_shared_by_router_processes);
	tcase_add_test(tc, test_rotation_cursor_per_group);
	tcase_add_test(tc, test_full_cursor_table_falls_back_to_the_process_cursor);
	tcase_add_test(tc, test_generation_reference_counting);
	tcase_add_test(tc, test_no_region_is_503);
	tcase_add_test(tc, test_excluded_workers_are_never_selected_and_exhaust_to_503);
	tcase_add_test(tc, test_excluded_decode_moves_the_pd_pick_to_the_other_decode);
	tcase_add_test(tc, test_breaker_filter_follows_the_generations_cb_threshold);
	tcase_add_test(tc, test_default_buckets_follow_the_roles_engines_report);
	tcase_add_test(tc, test_pd_disaggregation_builds_only_the_pd_default);
	tcase_add_test(tc, test_request_without_model_goes_to_the_one_model_served);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sy_check_run(suite());
}
