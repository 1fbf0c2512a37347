/* test_config_policy.c — the `policy` and `buckets` sections of the
 * configuration schema, their flags, legacy options and the finish-time
 * validation (common/config.h; reference/policy-defaults.md §5, §6, §11). */
#include <check.h>
#include <string.h>

#include "common/config.h"
#include "common/errors.h"
#include "sy_check.h"

static struct sy_config cfg;
static struct sy_config_error err;

static void setup(void)
{
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(sy_config_init_defaults(&cfg), SY_OK);
}

static void teardown(void) { sy_config_free(&cfg); }

static int load(const char *yaml)
{
	return sy_config_load_string(&cfg, "t.yaml", yaml, strlen(yaml), &err);
}

static int flag(const char *f, const char *v)
{
	return sy_config_apply_flag(&cfg, "router", f, v, &err);
}

static int finish(void) { return sy_config_finish(&cfg, &err); }

#define ck_fails(expr, want_rc, want_msg)                  \
	do {                                               \
		ck_assert_int_eq((expr), (want_rc));       \
		ck_assert_str_eq(err.msg, (want_msg));     \
	} while (0)

START_TEST(test_policy_defaults_are_absent_markers)
{
	ck_assert_int_eq(finish(), SY_OK);
	ck_assert_ptr_null(cfg.policy.type);
	ck_assert_int_eq(cfg.policy.power_of_n_choices, 0);
	ck_assert_int_eq(cfg.policy.admission.max_running_requests, -1);
	ck_assert_int_eq(cfg.policy.admission.max_inflight_requests, -1);
	ck_assert_uint_eq(cfg.n_buckets, 0);
	ck_assert_str_eq(cfg.router.session_id_header, "x-session-id");
	ck_assert_str_eq(cfg.router.routing_key_header, "x-sgl-routing-key");
	ck_assert_int_eq(cfg.router.ttft_slo_policy, SY_SLO_DISABLED);
}
END_TEST

START_TEST(test_full_bucket_file_loads)
{
	const char *y = "model_id: m\n"
			"workers:\n"
			"  - {url: http://p:1, role: prefill, bootstrap_port: 8998}\n"
			"  - {url: http://d:1, role: decode}\n"
			"router: {ttft_slo_policy: slo_first, session_id_header: X-Session}\n"
			"policy: {type: power_of_two, admission: {max_running_requests: 4}}\n"
			"buckets:\n"
			"  - id: short\n"
			"    rank: 10\n"
			"    limits: {min: 1, max: 4096}\n"
			"    max_context_tokens: 8192\n"
			"    ttft_ms: 50\n"
			"    groups:\n"
			"      prefill: {worker_ids: [\"HTTP://P:1/\"], policy: {type: random}}\n"
			"      decode: {}\n"
			"  - id: long\n"
			"    groups: {plain: {worker_ids: []}}\n"
			"  - id: all\n"
			"    groups: {plain: {}}\n";
	ck_assert_int_eq(load(y), SY_OK);
	ck_assert_int_eq(finish(), SY_OK);
	ck_assert_uint_eq(cfg.n_buckets, 3);
	struct sy_config_bucket *b = &cfg.buckets[0];
	ck_assert_str_eq(b->id, "short");
	ck_assert_int_eq(b->rank, 10);
	ck_assert_int_eq(b->limits.min, 1);
	ck_assert_int_eq(b->limits.max, 4096);
	ck_assert_int_eq(b->max_context_tokens, 8192);
	ck_assert(b->ttft_ms == 50.0);
	ck_assert_uint_eq(b->groups.prefill.n_worker_ids, 1);
	ck_assert_str_eq(b->groups.prefill.worker_ids[0], "http://p:1");
	ck_assert(b->groups.prefill.worker_ids_given);
	ck_assert_str_eq(b->groups.prefill.policy.type, "random");
	ck_assert_uint_gt(b->groups.decode.mark.line, 0);
	ck_assert(!b->groups.decode.worker_ids_given);
	ck_assert_uint_eq(b->groups.plain.mark.line, 0);
	ck_assert(cfg.buckets[1].groups.plain.worker_ids_given);
	ck_assert_uint_eq(cfg.buckets[1].groups.plain.n_worker_ids, 0);
	ck_assert_int_eq(cfg.buckets[1].limits.max, -1);
	ck_assert_int_eq(cfg.buckets[1].max_context_tokens, -1);
	ck_assert(!cfg.buckets[2].groups.plain.worker_ids_given);
	ck_assert_str_eq(cfg.policy.type, "power_of_two");
	ck_assert_int_eq(cfg.policy.admission.max_running_requests, 4);
	ck_assert_int_eq(cfg.router.ttft_slo_policy, SY_SLO_FIRST);
	ck_assert_str_eq(cfg.router.session_id_header, "x-session");
}
END_TEST

/* Scenario 6 (last clause): an unknown admission key is a parse error. */
START_TEST(test_unknown_admission_key_is_rejected)
{
	ck_fails(load("policy:\n  admission:\n    max_runing_requests: 3\n"), SY_ECONFIG,
		 "t.yaml:3:5: policy.admission.max_runing_requests: unknown key");
	ck_fails(load("buckets:\n  - id: a\n    groups: {plain: {policy: {admission: {x: 1}}}}\n"),
		 SY_ECONFIG, "t.yaml:3:43: buckets[0].groups.plain.policy.admission.x: unknown key");
}
END_TEST

START_TEST(test_admission_flags_map_to_policy_admission)
{
	ck_assert_int_eq(flag("--max-running-requests", "1"), SY_OK);
	ck_assert_int_eq(flag("--max-waiting-requests", "2"), SY_OK);
	ck_assert_int_eq(flag("--max-kv-tokens", "3"), SY_OK);
	ck_assert_int_eq(flag("--max-pending-prefill-tokens", "4"), SY_OK);
	ck_assert_int_eq(flag("--max-inflight-requests", "5"), SY_OK);
	ck_assert_int_eq(flag("--policy", "round_robin"), SY_OK);
	ck_assert_int_eq(flag("--power-of-n-choices", "3"), SY_OK);
	ck_assert_int_eq(flag("--ttft-slo-policy", "best_effort"), SY_OK);
	ck_assert_int_eq(flag("--session-id-header", "X-My-Session"), SY_OK);
	ck_assert_int_eq(finish(), SY_OK);
	ck_assert_int_eq(cfg.policy.admission.max_running_requests, 1);
	ck_assert_int_eq(cfg.policy.admission.max_waiting_requests, 2);
	ck_assert_int_eq(cfg.policy.admission.max_kv_tokens, 3);
	ck_assert_int_eq(cfg.policy.admission.max_pending_prefill_tokens, 4);
	ck_assert_int_eq(cfg.policy.admission.max_inflight_requests, 5);
	ck_assert_str_eq(cfg.policy.type, "round_robin");
	ck_assert_int_eq(cfg.policy.power_of_n_choices, 3);
	ck_assert_int_eq(cfg.router.ttft_slo_policy, SY_SLO_BEST_EFFORT);
	ck_assert_str_eq(cfg.router.session_id_header, "x-my-session");
	char key[128];
	ck_assert_int_eq(sy_config_flag_to_key("router", "--max-kv-tokens", key, sizeof(key)), SY_OK);
	ck_assert_str_eq(key, "policy.admission.max_kv_tokens");
}
END_TEST

START_TEST(test_legacy_max_in_flight_with_filter_overloaded_maps_to_inflight_cap)
{
	ck_assert_int_eq(flag("--filter", "overloaded"), SY_OK);
	ck_assert_int_eq(flag("--max-in-flight", "7"), SY_OK);
	ck_assert_int_eq(finish(), SY_OK);
	ck_assert_int_eq(cfg.policy.admission.max_inflight_requests, 7);
}
END_TEST

START_TEST(test_legacy_max_in_flight_without_filter_is_refused)
{
	ck_assert_int_eq(flag("--max-in-flight", "7"), SY_OK);
	ck_fails(finish(), SY_ECONFIG,
		 "policy.max_in_flight: needs filter overloaded (--filter overloaded), or use "
		 "max_inflight_requests (--max-inflight-requests)");
}
END_TEST

START_TEST(test_legacy_max_in_flight_conflicting_with_cap_is_refused)
{
	ck_assert_int_eq(flag("--filter", "overloaded"), SY_OK);
	ck_assert_int_eq(flag("--max-in-flight", "7"), SY_OK);
	ck_assert_int_eq(flag("--max-inflight-requests", "8"), SY_OK);
	ck_fails(finish(), SY_ECONFIG,
		 "policy.max_in_flight: conflicts with admission.max_inflight_requests = 8");
}
END_TEST

START_TEST(test_dropped_legacy_values_name_their_replacement)
{
	ck_fails(flag("--policy", "cache_aware_zmq"), SY_ECONFIG,
		 "--policy: removed (SGLang PR #38108); use cache_aware");
	ck_fails(flag("--filter", "prefix_cache"), SY_ECONFIG,
		 "--filter: dropped in reorg; use the cache-aware candidate thresholds "
		 "(cache_affinity_min_matched_tokens, cache_affinity_min_match_ratio)");
	ck_fails(flag("--decode-policy", "legacy_host_affinity"), SY_ECONFIG,
		 "--decode-policy: dropped in reorg; use power_of_n");
	ck_fails(flag("--affinity-mode", "soft"), SY_ECONFIG,
		 "--affinity-mode: rejected in reorg; use strict");
	ck_fails(flag("--prefix-cache-min-share", "0.5"), SY_EUNSUPPORTED,
		 "--prefix-cache-min-share: dropped; use the cache-aware candidate thresholds");
	ck_fails(flag("--bucket-config", "x.json"), SY_EUNSUPPORTED,
		 "--bucket-config: legacy static buckets are not accepted; use `buckets` in the "
		 "configuration file");
	ck_fails(flag("--policy", "fastest"), SY_ECONFIG,
		 "--policy: must be one of round_robin, random, power_of_n, power_of_two, "
		 "cache_aware, session_aware, sticky, load_based");
	ck_fails(flag("--policy", "manual"), SY_ECONFIG,
		 "--policy: legacy SMG policy; use sticky (header x-sgl-routing-key, idle 600 s)");
	ck_fails(flag("--chat-routing", "legacy"), SY_ECONFIG,
		 "--chat-routing: must be reorg (the bucket-first design is always on)");
	ck_assert_int_eq(flag("--chat-routing", "reorg"), SY_OK);
	ck_assert_int_eq(flag("--affinity-mode", "strict"), SY_OK);
	ck_assert_int_eq(flag("--policy", "sticky"), SY_OK); /* refused later, by the router */
}
END_TEST

START_TEST(test_duplicate_bucket_id_is_refused)
{
	ck_assert_int_eq(load("buckets:\n"
			      "  - {id: a, groups: {plain: {}}}\n"
			      "  - {id: a, groups: {plain: {}}}\n"),
			 SY_OK);
	ck_fails(finish(), SY_ECONFIG,
		 "t.yaml:3:5: buckets[1].id: duplicate bucket id \"a\" (first at line 2)");
}
END_TEST

START_TEST(test_empty_bucket_id_is_refused)
{
	ck_fails(load("buckets:\n  - {id: \"\", groups: {plain: {}}}\n"), SY_ECONFIG,
		 "t.yaml:2:10: buckets[0].id: must be a non-empty string");
	ck_fails(load("buckets:\n  - {groups: {plain: {}}}\n"), SY_ECONFIG,
		 "t.yaml:2:5: buckets[0].id: required key is missing");
}
END_TEST

START_TEST(test_bucket_ranges_are_checked)
{
	ck_assert_int_eq(load("buckets:\n  - {id: a, limits: {min: 10, max: 9}, groups: {plain: {}}}\n"),
			 SY_OK);
	ck_fails(finish(), SY_ECONFIG, "t.yaml:2:5: buckets[0].limits: min 10 is above max 9");
	sy_config_free(&cfg);
	setup();
	ck_assert_int_eq(load("buckets:\n  - {id: a, limits: {min: 10}, max_context_tokens: 9, "
			      "groups: {plain: {}}}\n"),
			 SY_OK);
	ck_fails(finish(), SY_ECONFIG,
		 "t.yaml:2:5: buckets[0].max_context_tokens: 9 is below limits.min 10: the bucket "
		 "can never match");
	ck_fails(load("buckets:\n  - {id: a, limits: {min: -1}}\n"), SY_ECONFIG,
		 "t.yaml:2:27: buckets[0].limits.min: must be an integer in 0..9223372036854775807");
	ck_fails(load("buckets:\n  - {id: a, rank: 4294967296}\n"), SY_ECONFIG,
		 "t.yaml:2:19: buckets[0].rank: must be an integer in 0..4294967295");
}
END_TEST

START_TEST(test_bucket_is_plain_or_pd)
{
	ck_assert_int_eq(load("buckets:\n  - id: a\n    groups: {plain: {}, decode: {}}\n"), SY_OK);
	ck_fails(finish(), SY_ECONFIG,
		 "t.yaml:3:13: buckets[0].groups: a bucket is either plain or prefill + decode, not "
		 "both");
	sy_config_free(&cfg);
	setup();
	ck_assert_int_eq(load("buckets:\n  - id: a\n    groups: {prefill: {}}\n"), SY_OK);
	ck_fails(finish(), SY_ECONFIG,
		 "t.yaml:3:13: buckets[0].groups: needs a plain group, or both prefill and decode "
		 "groups");
	sy_config_free(&cfg);
	setup();
	ck_assert_int_eq(load("buckets:\n  - id: a\n"), SY_OK);
	ck_fails(finish(), SY_ECONFIG,
		 "t.yaml:2:5: buckets[0].groups: needs a plain group, or both prefill and decode "
		 "groups");
}
END_TEST

START_TEST(test_membership_must_match_the_role)
{
	ck_assert_int_eq(load("workers: [{url: http://d:1, role: decode}]\n"
			      "buckets:\n"
			      "  - id: a\n"
			      "    groups: {plain: {worker_ids: [http://d:1]}}\n"),
			 SY_OK);
	ck_fails(finish(), SY_ECONFIG,
		 "t.yaml:4:21: buckets[0].groups.plain.worker_ids[0]: worker \"http://d:1\" has "
		 "role decode; a plain group takes plain workers");
	sy_config_free(&cfg);
	setup();
	ck_assert_int_eq(load("buckets:\n"
			      "  - id: a\n"
			      "    groups: {plain: {worker_ids: [http://x:1, HTTP://X:1/]}}\n"),
			 SY_OK);
	ck_fails(finish(), SY_ECONFIG,
		 "t.yaml:3:21: buckets[0].groups.plain.worker_ids[1]: duplicate worker "
		 "\"http://x:1\"");
}
END_TEST

START_TEST(test_top_level_only_keys_are_refused_in_groups)
{
	ck_assert_int_eq(load("buckets:\n"
			      "  - id: a\n"
			      "    groups: {plain: {policy: {filter: overloaded}}}\n"),
			 SY_OK);
	ck_fails(finish(), SY_ECONFIG,
		 "t.yaml:3:30: buckets[0].groups.plain.policy.filter: only valid in the top-level "
		 "policy section");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("config_policy");
	TCase *tc = tcase_create("policy");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_policy_defaults_are_absent_markers);
	tcase_add_test(tc, test_full_bucket_file_loads);
	tcase_add_test(tc, test_unknown_admission_key_is_rejected);
	tcase_add_test(tc, test_admission_flags_map_to_policy_admission);
	tcase_add_test(tc, test_legacy_max_in_flight_with_filter_overloaded_maps_to_inflight_cap);
	tcase_add_test(tc, test_legacy_max_in_flight_without_filter_is_refused);
	tcase_add_test(tc, test_legacy_max_in_flight_conflicting_with_cap_is_refused);
	tcase_add_test(tc, test_dropped_legacy_values_name_their_replacement);
	tcase_add_test(tc, test_duplicate_bucket_id_is_refused);
	tcase_add_test(tc, test_empty_bucket_id_is_refused);
	tcase_add_test(tc, test_bucket_ranges_are_checked);
	tcase_add_test(tc, test_bucket_is_plain_or_pd);
	tcase_add_test(tc, test_membership_must_match_the_role);
	tcase_add_test(tc, test_top_level_only_keys_are_refused_in_groups);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sy_check_run(suite());
}
