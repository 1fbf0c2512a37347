/* test_config_policy.c — the `policy` and `buckets` sections of the
 * configuration schema, their flags, legacy options and the finish-time
 * validation (common/config.h; reference/policy-defaults.md §5, §6, §11). */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "common/config.h"
#include "common/config_schema.h"
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
			"    models: [m]\n"
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
			"    groups: {plain: {policy: {type: session_aware}}}\n";
	ck_assert_int_eq(load(y), SY_OK);
	ck_assert_int_eq(finish(), SY_OK);
	ck_assert_uint_eq(cfg.n_buckets, 3);
	struct sy_config_bucket *b = &cfg.buckets[0];
	ck_assert_str_eq(b->id, "short");
	ck_assert_uint_eq(b->n_models, 1);
	ck_assert_str_eq(b->models[0], "m");
	ck_assert_uint_eq(cfg.buckets[1].n_models, 0);
	ck_assert_int_eq(sy_config_model_kind(&cfg, "m"), SY_MODEL_PD);
	ck_assert_int_eq(sy_config_model_kind(&cfg, "other"), SY_MODEL_PLAIN);
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
	ck_assert_int_eq(flag("--policy", "session_aware"), SY_OK);
	ck_assert_int_eq(flag("--power-of-n-choices", "3"), SY_OK);
	ck_assert_int_eq(flag("--ttft-slo-policy", "best_effort"), SY_OK);
	ck_assert_int_eq(flag("--session-id-header", "X-My-Session"), SY_OK);
	ck_assert_int_eq(finish(), SY_OK);
	ck_assert_int_eq(cfg.policy.admission.max_running_requests, 1);
	ck_assert_int_eq(cfg.policy.admission.max_waiting_requests, 2);
	ck_assert_int_eq(cfg.policy.admission.max_kv_tokens, 3);
	ck_assert_int_eq(cfg.policy.admission.max_pending_prefill_tokens, 4);
	ck_assert_int_eq(cfg.policy.admission.max_inflight_requests, 5);
	ck_assert_str_eq(cfg.policy.type, "session_aware");
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

/* ---- every parsed setting is consumed (common/config_check.c) ------------ */

/* Leaf keys of the schema as "section.key", each once (a section reached
 * from several parents, like policy, counts once). */
#define LEAVES_MAX 256
static char leaves[LEAVES_MAX][96];
static size_t n_leaves;

static void walk(const struct sy_cfg_section *sec)
{
	for (size_t i = 0; i < sec->n_fields; i++) {
		const struct sy_cfg_field *f = &sec->fields[i];
		if (f->type == SY_CFG_MAP || f->type == SY_CFG_SEQ) {
			walk(f->sub);
			continue;
		}
		char name[96];
		snprintf(name, sizeof(name), "%s.%s", sec->name, f->key);
		size_t k = 0;
		while (k < n_leaves && strcmp(leaves[k], name) != 0)
			k++;
		if (k == n_leaves) {
			ck_assert_uint_lt(n_leaves, LEAVES_MAX);
			snprintf(leaves[n_leaves++], sizeof(leaves[0]), "%s", name);
		}
	}
}

static const struct sy_config_consumer *row_of(const char *name)
{
	const struct sy_config_consumer *c;
	char rn[96];
	for (size_t i = 0; (c = sy_config_consumer(i)) != NULL; i++) {
		snprintf(rn, sizeof(rn), "%s.%s", c->section, c->key);
		if (strcmp(rn, name) == 0)
			return c;
	}
	return NULL;
}

START_TEST(test_every_schema_key_has_exactly_one_consumer_row)
{
	const struct sy_config_consumer *c;
	n_leaves = 0;
	walk(sy_config_schema());
	ck_assert_uint_gt(n_leaves, 90); /* the walk reached every section */
	for (size_t k = 0; k < n_leaves; k++) {
		if (row_of(leaves[k]) == NULL)
			ck_abort_msg("schema key %s has no consumer row (common/config_check.c)",
				     leaves[k]);
	}
	size_t rows = 0;
	char rn[96];
	for (size_t i = 0; (c = sy_config_consumer(i)) != NULL; i++, rows++) {
		snprintf(rn, sizeof(rn), "%s.%s", c->section, c->key);
		size_t k = 0;
		while (k < n_leaves && strcmp(leaves[k], rn) != 0)
			k++;
		if (k == n_leaves)
			ck_abort_msg("consumer row %s names no schema key", rn);
		ck_assert_ptr_nonnull(c->reader);
		ck_assert_uint_gt(strlen(c->reader), 3);
	}
	ck_assert_uint_eq(rows, n_leaves); /* one row per key, no duplicates */
}
END_TEST

/* For a WHEN row: a configuration that sets the key where nothing reads it
 * (`bad`, refused naming `key`) and one that makes it read (`good`). */
struct probe {
	const char *row;  /* "section.key" of the consumer row */
	const char *bad;  /* YAML */
	const char *key;  /* err.key of the refusal */
	const char *good; /* YAML */
};

#define CACHE_PROBE(k, v)                                                          \
	{"policy." k, "policy: {" k ": " v "}\n", "policy." k,                     \
	 "policy: {type: cache_aware, " k ": " v "}\n"}

static const struct probe probes[] = {
	{"kv_events.endpoint_host",
	 "statebus: {kv_events: off}\nworkers: [{url: http://a:1, kv_events: {endpoint_host: h}}]\n",
	 "workers[0].kv_events.endpoint_host",
	 "statebus: {kv_events: off}\nworkers: [{url: http://a:1, kv_events: {endpoint_host: h, "
	 "subscribe: on}}]\n"},
	{"kv_events.endpoint_port_base",
	 "workers: [{url: http://a:1, kv_events: {endpoint_port_base: 5557, subscribe: off}}]\n",
	 "workers[0].kv_events.endpoint_port_base",
	 "workers: [{url: http://a:1, kv_events: {endpoint_port_base: 5557}}]\n"},
	{"kv_events.topic",
	 "statebus: {kv_events: off}\nworkers: [{url: http://a:1, kv_events: {topic: kv}}]\n",
	 "workers[0].kv_events.topic", "workers: [{url: http://a:1, kv_events: {topic: kv}}]\n"},
	{"kv_events.replay_port_base",
	 "workers: [{url: http://a:1, kv_events: {replay_port_base: 5600, subscribe: off}}]\n",
	 "workers[0].kv_events.replay_port_base",
	 "workers: [{url: http://a:1, kv_events: {replay_port_base: 5600, subscribe: on}}]\n"},
	{"worker.bootstrap_port", "workers: [{url: http://d:1, role: decode, bootstrap_port: 9}]\n",
	 "workers[0].bootstrap_port",
	 "workers: [{url: http://p:1, role: prefill, bootstrap_port: 9}]\n"},
	{"tokenizer.path", "router: {tokenizer: {kind: bytes, path: /t}}\n", "router.tokenizer.path",
	 "router: {tokenizer: {kind: hf, path: /t}}\n"},
	{"router.chat_template_fallback", "router: {chat_template_fallback: true}\n",
	 "router.chat_template_fallback",
	 "router: {chat_template_fallback: true, tokenizer: {kind: hf, path: /t}}\n"},
	{"router.cb_cool_down_secs", "router: {cb_cool_down_secs: 60}\n", "router.cb_cool_down_secs",
	 "router: {cb_cool_down_secs: 60, cb_threshold: 3}\n"},
#define QUEUE_PROBE(k, v)                                                                 \
	{"router." k, "router: {queue_size: 0, " k ": " v "}\n", "router." k,                  \
	 "router: {queue_size: 10, " k ": " v "}\n"}
	QUEUE_PROBE("queue_timeout_secs", "5"),
	QUEUE_PROBE("queue_timeout_header", "x-deadline-ms"),
	QUEUE_PROBE("priority_header", "x-priority"),
	QUEUE_PROBE("tenant_header", "x-tenant"),
	QUEUE_PROBE("tenant_max_priority", "interactive"),
	QUEUE_PROBE("tenant_priorities", "['a=system']"),
	QUEUE_PROBE("tenant_weights", "['a=3']"),
	{"router.retry_initial_backoff_ms", "router: {retry_initial_backoff_ms: 100}\n",
	 "router.retry_initial_backoff_ms", "router: {retry_initial_backoff_ms: 100, retry_once: true}\n"},
	{"router.retry_max_backoff_ms", "router: {retry_max_backoff_ms: 100}\n",
	 "router.retry_max_backoff_ms", "router: {retry_max_backoff_ms: 100, retry_max_retries: 2}\n"},
	{"router.retry_backoff_multiplier", "router: {retry_backoff_multiplier: 2.0}\n",
	 "router.retry_backoff_multiplier",
	 "router: {retry_backoff_multiplier: 2.0, retry_max_retries: 2}\n"},
	{"router.retry_jitter_factor", "router: {retry_jitter_factor: 0}\n", "router.retry_jitter_factor",
	 "router: {retry_jitter_factor: 0, retry_max_retries: 1}\n"},
	{"statebus.index", "statebus: {index: off}\npolicy: {type: cache_aware}\n", "statebus.index",
	 "statebus: {index: off}\npolicy: {type: cache_aware, cache_prefix_provider: indexer, "
	 "kv_indexer_endpoint: 'tcp://h:1'}\n"},
	{"statebus.index", "statebus: {index: off, query_endpoint: 'tcp://127.0.0.1:5'}\n",
	 "statebus.index", "statebus: {index: on, query_endpoint: 'tcp://127.0.0.1:5'}\n"},
	{"statebus.index",
	 "statebus: {index: off}\nbuckets: [{id: a, groups: {plain: {policy: {type: cache_aware}}}}]\n",
	 "statebus.index",
	 "statebus: {index: off}\nbuckets: [{id: a, groups: {plain: {policy: {type: round_robin}}}}]\n"},
	{"router.sampling_param_conflict", "router: {sampling_param_conflict: allow}\n",
	 "router.sampling_param_conflict",
	 "router: {sampling_param_conflict: allow, override_sampling_params: '{\"top_k\": 1}'}\n"},
	{"router.session_id_header", "router: {session_id_header: x-s}\n", "router.session_id_header",
	 "router: {session_id_header: x-s}\npolicy: {type: session_aware}\n"},
	{"router.routing_key_header", "router: {routing_key_header: x-r}\n",
	 "router.routing_key_header", "router: {routing_key_header: x-r}\npolicy: {type: sticky}\n"},
	{"bucket.ttft_ms", "buckets: [{id: a, ttft_ms: 50, groups: {plain: {}}}]\n",
	 "buckets[0].ttft_ms",
	 "router: {ttft_slo_policy: slo_first}\nbuckets: [{id: a, ttft_ms: 50, groups: {plain: {}}}]\n"},
	{"bucket.tokens_per_second", "buckets: [{id: a, tokens_per_second: 40, groups: {plain: {}}}]\n",
	 "buckets[0].tokens_per_second",
	 "router: {tps_slo_policy: best_effort}\n"
	 "buckets: [{id: a, tokens_per_second: 40, groups: {plain: {}}}]\n"},
	{"policy.type", "policy: {type: random}\nbuckets: [{id: a, groups: {plain: {policy: {type: power_of_n}}}}]\n",
	 "policy.type",
	 "policy: {type: random}\nbuckets: [{id: a, groups: {plain: {policy: {type: power_of_n}}}},\n"
	 "          {id: b, groups: {plain: {}}}]\n"},
	{"policy.type", "policy: {type: random, prefill_policy: power_of_n}\n"
	 "router: {pd_disaggregation: true}\n"
	 "workers: [{url: http://p:1, role: prefill}, {url: http://d:1, role: decode}]\n",
	 "policy.type",
	 "policy: {type: random}\nrouter: {pd_disaggregation: true}\n"
	 "workers: [{url: http://p:1, role: prefill}, {url: http://d:1, role: decode}]\n"},
	{"policy.power_of_n_choices",
	 "policy: {type: power_of_two, decode_policy: power_of_two, power_of_n_choices: 3}\n",
	 "policy.power_of_n_choices", "policy: {type: power_of_n, power_of_n_choices: 3}\n"},
	{"policy.power_of_n_choices",
	 "buckets: [{id: a, groups: {plain: {policy: {type: power_of_two, power_of_n_choices: 3}}}}]\n",
	 "buckets[0].groups.plain.policy.power_of_n_choices",
	 "buckets: [{id: a, groups: {plain: {policy: {type: power_of_n, power_of_n_choices: 3}}}}]\n"},
	{"policy.power_of_n_choices",
	 "policy: {type: sticky, decode_policy: round_robin, power_of_n_choices: 3}\n",
	 "policy.power_of_n_choices",
	 "policy: {type: sticky, sticky_fallback: power_of_n, power_of_n_choices: 3}\n"},
	{"policy.prefill_policy",
	 "policy: {prefill_policy: random}\nbuckets: [{id: a, groups: {plain: {}}}]\n",
	 "policy.prefill_policy",
	 "policy: {prefill_policy: random}\n"
	 "workers: [{url: http://p:1, role: prefill}, {url: http://d:1, role: decode}]\n"},
	{"policy.decode_policy",
	 "policy: {decode_policy: random}\nbuckets: [{id: a, groups: {plain: {}}}]\n",
	 "policy.decode_policy",
	 "policy: {decode_policy: random}\n"
	 "buckets: [{id: a, groups: {prefill: {}, decode: {}}}]\n"},
	{"policy.filter", "policy: {filter: overloaded}\n", "policy.filter",
	 "policy: {filter: overloaded, max_in_flight: 4}\n"},
	{"policy.max_in_flight", "policy: {max_in_flight: 4}\n", "policy.max_in_flight",
	 "policy: {filter: overloaded, max_in_flight: 4}\n"},
	{"policy.affinity_mode", "policy: {affinity_mode: strict}\n", "policy.affinity_mode",
	 "policy: {affinity_mode: strict, type: session_aware}\n"},
	{"policy.sticky_fallback", "policy: {sticky_fallback: random}\n", "policy.sticky_fallback",
	 "policy: {sticky_fallback: random, type: sticky}\n"},
	{"policy.affinity_idle_timeout_secs", "policy: {affinity_idle_timeout_secs: 60}\n",
	 "policy.affinity_idle_timeout_secs",
	 "policy: {affinity_idle_timeout_secs: 60, type: sticky}\n"},
	{"policy.session_affinity_mode", "policy: {session_affinity_mode: bucket}\n",
	 "policy.session_affinity_mode", "policy: {session_affinity_mode: bucket, type: session_aware}\n"},
	{"policy.session_affinity_mode",
	 "buckets: [{id: a, groups: {plain: {policy: {session_affinity_mode: bucket}}}}]\n",
	 "buckets[0].groups.plain.policy.session_affinity_mode",
	 "buckets: [{id: a, groups: {plain: {policy: {type: session_aware, "
	 "session_affinity_mode: bucket}}}}]\n"},
	CACHE_PROBE("cache_affinity_min_matched_tokens", "512"),
	CACHE_PROBE("cache_affinity_min_match_ratio", "0.5"),
	CACHE_PROBE("cache_candidate_min_workers", "2"),
	CACHE_PROBE("cache_candidate_ratio", "0.5"),
	CACHE_PROBE("cache_candidate_max_workers", "16"),
	CACHE_PROBE("cache_switch_margin_tokens", "256"),
	CACHE_PROBE("cache_predicted_weight", "0.5"),
	CACHE_PROBE("cache_predicted_window_ms", "500"),
	CACHE_PROBE("cache_predicted_half_life_ms", "0"),
	CACHE_PROBE("worker_queue_limit", "4"),
	{"policy.saturation_queue_floor", "policy: {saturation_queue_floor: 2}\n",
	 "policy.saturation_queue_floor",
	 "policy: {type: cache_aware, worker_queue_limit: 4, saturation_queue_floor: 2}\n"},
	CACHE_PROBE("min_load_choices", "3"),
	CACHE_PROBE("disable_pressure_guard", "true"),
	CACHE_PROBE("pressure_abs_threshold_tokens", "2048"),
	CACHE_PROBE("pressure_abs_threshold_ms", "20"),
	CACHE_PROBE("pressure_rel_threshold", "2"),
	CACHE_PROBE("cache_prefix_provider", "local"),
	{"policy.kv_indexer_endpoint",
	 "policy: {type: cache_aware, kv_indexer_endpoint: 'tcp://h:1'}\n",
	 "policy.kv_indexer_endpoint",
	 "policy: {type: cache_aware, cache_prefix_provider: indexer, "
	 "kv_indexer_endpoint: 'tcp://h:1'}\n"},
	{"policy.kv_indexer_timeout_ms", "policy: {type: cache_aware, kv_indexer_timeout_ms: 50}\n",
	 "policy.kv_indexer_timeout_ms",
	 "policy: {type: cache_aware, cache_prefix_provider: indexer, "
	 "kv_indexer_endpoint: 'tcp://h:1', kv_indexer_timeout_ms: 50}\n"},
	{"policy.kv_indexer_max_inflight", "policy: {type: cache_aware, kv_indexer_max_inflight: 8}\n",
	 "policy.kv_indexer_max_inflight",
	 "policy: {type: cache_aware, cache_prefix_provider: indexer, "
	 "kv_indexer_endpoint: 'tcp://h:1', kv_indexer_max_inflight: 8}\n"},
#define ADM_PROBE(k)                                                                      \
	{"admission." k,                                                                  \
	 "policy: {admission: {" k ": 5}}\n"                                              \
	 "buckets: [{id: a, groups: {plain: {policy: {admission: {" k ": 6}}}}}]\n",     \
	 "policy.admission." k,                                                           \
	 "policy: {admission: {" k ": 5}}\n"                                              \
	 "buckets: [{id: a, groups: {plain: {policy: {admission: {" k ": 6}}}}},\n"      \
	 "          {id: b, groups: {plain: {}}}]\n"}
	ADM_PROBE("max_running_requests"),
	ADM_PROBE("max_waiting_requests"),
	ADM_PROBE("max_kv_tokens"),
	ADM_PROBE("max_pending_prefill_tokens"),
	ADM_PROBE("max_inflight_requests"),
};

static int run_yaml(const char *yaml)
{
	sy_config_free(&cfg);
	ck_assert_int_eq(sy_config_init_defaults(&cfg), SY_OK);
	memset(&err, 0, sizeof(err));
	int rc = load(yaml);
	ck_assert_msg(rc == SY_OK, "%s", err.msg);
	return finish();
}

START_TEST(test_every_conditional_key_is_refused_where_nothing_reads_it)
{
	const struct sy_config_consumer *c;
	char rn[96];
	size_t when = 0;
	for (size_t i = 0; (c = sy_config_consumer(i)) != NULL; i++) {
		if (c->use != SY_CONFIG_USE_WHEN)
			continue;
		when++;
		snprintf(rn, sizeof(rn), "%s.%s", c->section, c->key);
		size_t seen = 0;
		for (size_t k = 0; k < sizeof(probes) / sizeof(probes[0]); k++) {
			const struct probe *p = &probes[k];
			if (strcmp(p->row, rn) != 0)
				continue;
			seen++;
			int rc = run_yaml(p->bad);
			ck_assert_msg(rc == SY_ECONFIG, "%s: %s accepted", rn, p->bad);
			ck_assert_msg(strcmp(err.key, p->key) == 0, "%s: refused as %s (%s)", rn,
				      err.key, err.msg);
			/* the reason names what to use instead */
			ck_assert_msg(strstr(err.msg, "use ") != NULL, "%s: %s", rn, err.msg);
			rc = run_yaml(p->good);
			ck_assert_msg(rc == SY_OK, "%s: %s refused: %s", rn, p->good, err.msg);
		}
		if (seen == 0)
			ck_abort_msg("consumer row %s (WHEN) has no probe here", rn);
	}
	ck_assert_uint_gt(when, 40);
	for (size_t k = 0; k < sizeof(probes) / sizeof(probes[0]); k++) {
		const struct sy_config_consumer *r = row_of(probes[k].row);
		ck_assert_msg(r != NULL && r->use == SY_CONFIG_USE_WHEN, "probe %s: no WHEN row",
			      probes[k].row);
	}
}
END_TEST

/* statebus.index auto: on exactly when something reads the index. */
START_TEST(test_index_auto_follows_the_policies_that_read_it)
{
	static const struct {
		const char *yaml;
		bool on;
	} cases[] = {
		{"model_id: m\n", true}, /* names no policy: the routers' are unknown */
		{"statebus: {health_interval_ms: 500}\n", true},
		{"policy: {type: round_robin}\n", false},
		{"policy: {type: power_of_n}\n", false},
		{"policy: {type: cache_aware}\n", true},
		{"policy: {type: cache_aware, cache_prefix_provider: indexer, "
		 "kv_indexer_endpoint: 'tcp://h:1'}\n", false}, /* remote indexer only */
		{"statebus: {query_endpoint: 'tcp://127.0.0.1:5'}\n", true},
		{"statebus: {index: on}\n", true},
		{"buckets: [{id: a, groups: {plain: {policy: {type: random}}}},\n"
		 "          {id: b, groups: {plain: {policy: {type: cache_aware}}}}]\n", true},
		{"buckets: [{id: a, groups: {prefill: {policy: {type: cache_aware}}, decode: {}}}]\n",
		 true},
		{"statebus: {index: off}\npolicy: {type: random}\n", false},
	};
	char why[160];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_msg(run_yaml(cases[i].yaml) == SY_OK, "%s: %s", cases[i].yaml, err.msg);
		ck_assert_msg(sy_config_index_on(&cfg) == cases[i].on, "%s", cases[i].yaml);
		bool needed = sy_config_index_needed(&cfg, why, sizeof(why));
		ck_assert_msg(needed == (why[0] != '\0'), "%s", cases[i].yaml);
	}
	ck_assert(run_yaml("buckets: [{id: a, groups: {plain: {policy: {type: cache_aware}}}}]\n") ==
		  SY_OK);
	ck_assert(sy_config_index_needed(&cfg, why, sizeof(why)));
	ck_assert_str_eq(why, "buckets[0].groups.plain (cache_aware, local prefix source)");
}
END_TEST

/* The combinations of the audit, from the flags the reference names. */
START_TEST(test_cache_aware_flags_without_a_cache_aware_group_are_refused)
{
	static const char *const f[][3] = {
		{"--worker-queue-limit", "4", "policy.worker_queue_limit"},
		{"--min-load-choices", "2", "policy.min_load_choices"},
		{"--cache-affinity-min-matched-tokens", "1024", "policy.cache_affinity_min_matched_tokens"},
		{"--cache-affinity-min-match-ratio", "0.5", "policy.cache_affinity_min_match_ratio"},
		{"--cache-prefix-provider", "local", "policy.cache_prefix_provider"},
	};
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		sy_config_free(&cfg);
		ck_assert_int_eq(sy_config_init_defaults(&cfg), SY_OK);
		ck_assert_int_eq(flag(f[i][0], f[i][1]), SY_OK);
		ck_assert_int_eq(finish(), SY_ECONFIG);
		ck_assert_str_eq(err.key, f[i][2]);
		ck_assert_ptr_nonnull(strstr(err.msg, "use --policy cache_aware"));
		sy_config_free(&cfg);
		ck_assert_int_eq(sy_config_init_defaults(&cfg), SY_OK);
		ck_assert_int_eq(flag("--policy", "cache_aware"), SY_OK);
		ck_assert_int_eq(flag(f[i][0], f[i][1]), SY_OK);
		ck_assert_int_eq(finish(), SY_OK);
	}
}
END_TEST

START_TEST(test_power_of_n_choices_3_with_power_of_two_is_refused)
{
	ck_assert_int_eq(flag("--policy", "power_of_two"), SY_OK);
	ck_assert_int_eq(flag("--decode-policy", "power_of_two"), SY_OK); /* default-pd's decode */
	ck_assert_int_eq(flag("--power-of-n-choices", "3"), SY_OK);
	ck_fails(finish(), SY_ECONFIG,
		 "policy.power_of_n_choices: no group reads it: only power_of_n, session_aware and "
		 "sticky with fallback power_of_n do (power_of_two is power_of_n with N = 2); use "
		 "--policy power_of_n, or remove it");
}
END_TEST

START_TEST(test_filter_overloaded_without_max_in_flight_is_refused)
{
	ck_assert_int_eq(flag("--filter", "overloaded"), SY_OK);
	ck_fails(finish(), SY_ECONFIG,
		 "policy.filter: filter overloaded is the router-local in-flight cap and needs "
		 "max_in_flight (--max-in-flight N); or use max_inflight_requests "
		 "(--max-inflight-requests N)");
}
END_TEST

START_TEST(test_session_modes_without_a_session_group_are_refused)
{
	ck_assert_int_eq(flag("--affinity-mode", "strict"), SY_OK);
	ck_fails(finish(), SY_ECONFIG,
		 "policy.affinity_mode: only read by session_aware groups (strict bindings) and no "
		 "group runs session_aware; use --policy session_aware, or remove it");
	sy_config_free(&cfg);
	ck_assert_int_eq(sy_config_init_defaults(&cfg), SY_OK);
	ck_assert_int_eq(flag("--session-affinity-mode", "bucket"), SY_OK);
	ck_assert_int_eq(flag("--policy", "sticky"), SY_OK);
	ck_fails(finish(), SY_ECONFIG,
		 "policy.session_affinity_mode: only read by session_aware groups and no group runs "
		 "session_aware; use --policy session_aware, or remove it");
}
END_TEST

/* The default buckets include default-pd (discovered roles reach it), so
 * a plain-only configuration of buckets is what no PD group reads. */
START_TEST(test_prefill_and_decode_policy_without_a_pd_bucket_are_refused)
{
	ck_assert_int_eq(load("buckets: [{id: a, groups: {plain: {}}}]\n"), SY_OK);
	ck_assert_int_eq(flag("--worker-urls", "http://a:1"), SY_OK);
	ck_assert_int_eq(flag("--prefill-policy", "random"), SY_OK);
	ck_fails(finish(), SY_ECONFIG,
		 "policy.prefill_policy: no PD bucket takes it (the fleet has no prefill workers, "
		 "or every prefill group sets its own type); use a prefill + decode fleet or "
		 "bucket, or remove it");
	sy_config_free(&cfg);
	ck_assert_int_eq(sy_config_init_defaults(&cfg), SY_OK);
	ck_assert_int_eq(load("buckets: [{id: a, groups: {plain: {}}}]\n"), SY_OK);
	ck_assert_int_eq(flag("--decode-policy", "round_robin"), SY_OK);
	ck_assert_int_eq(finish(), SY_ECONFIG);
	ck_assert_str_eq(err.key, "policy.decode_policy");
}
END_TEST

/* Every dropped or unoffered SGLang-router option of the reference (§1, §4,
 * §7, §11) is refused by name with the reason and a replacement — never as
 * an unknown flag. */
START_TEST(test_dropped_options_are_refused_with_the_reason_and_the_replacement)
{
	static const char *const dropped[][2] = {
		{"--fuse", "prefix_cache=2.0,load_based=0.3"},
		{"--stable-pair", NULL},
		{"--cache-threshold", "0.5"},
		{"--balance-abs-threshold", "32"},
		{"--balance-rel-threshold", "1.5"},
		{"--eviction-interval-secs", "60"},
		{"--max-tree-size", "1000"},
		{"--prefix-cache-min-share", "0.5"},
		{"--bucket-config", "b.json"},
		{"--dp-aware", NULL},
		{"--service-discovery", NULL},
		{"--service-discovery-namespace", "ns"},
		{"--selector", "app=sglang"},
		{"--prefill-selector", "role=prefill"},
		{"--decode-selector", "role=decode"},
		{"--stale-request-timeout-secs", "600"},
	};
	for (size_t i = 0; i < sizeof(dropped) / sizeof(dropped[0]); i++) {
		ck_assert_int_eq(flag(dropped[i][0], dropped[i][1]), SY_EUNSUPPORTED);
		ck_assert_str_eq(err.key, dropped[i][0]);
		ck_assert_msg(strstr(err.msg, "unknown") == NULL, "%s", err.msg);
		ck_assert_msg(strstr(err.msg, "use ") != NULL || strstr(err.msg, "remove it") != NULL,
			      "%s: no replacement", err.msg);
	}
	ck_fails(flag("--fuse", "prefix_cache=2.0"), SY_EUNSUPPORTED,
		 "--fuse: the fused score is not offered; use --policy cache_aware (prefix "
		 "affinity with its load guards) or --policy power_of_n");
	ck_fails(flag("--stable-pair", NULL), SY_EUNSUPPORTED,
		 "--stable-pair: not needed: session_aware binds each stage of a session per bucket "
		 "(session_affinity_mode bucket), so its prefill and decode workers stay paired; "
		 "use --policy session_aware for the prefill and decode groups");
	/* value-dependent ones (schema hooks) */
	ck_assert_int_eq(flag("--policy", "fused_score"), SY_ECONFIG);
	ck_assert_str_eq(err.msg, "--policy: not supported; use power_of_n or cache_aware");
	/* accepted and mapped */
	ck_assert_int_eq(flag("--termination-grace-secs", "45"), SY_OK);
	ck_assert_int_eq(cfg.router.shutdown_drain_secs, 45);
}
END_TEST

/* A model is served plain or prefill + decode, never both (the seed's
 * registry rejects the mix). */
START_TEST(test_a_model_mixing_plain_and_pd_is_refused)
{
	ck_assert_int_eq(load("workers:\n"
			      "  - {url: http://a:1}\n"
			      "  - {url: http://p:1, role: prefill}\n"),
			 SY_OK);
	ck_fails(finish(), SY_ECONFIG,
		 "t.yaml:3:5: workers[1].role: model \"default-model\" mixes plain and "
		 "prefill/decode workers (\"http://a:1\" and \"http://p:1\"); a model is served "
		 "plain or prefill + decode: use another model name for one kind, or give every "
		 "worker of the model the same kind");
	/* the same engines as two models: accepted */
	ck_assert_int_eq(run_yaml("workers:\n"
				  "  - {url: http://a:1}\n"
				  "  - {url: http://p:1, role: prefill, model: pd}\n"
				  "  - {url: http://d:1, role: decode, model: pd}\n"),
			 SY_OK);
	ck_assert_int_eq(sy_config_model_kind(&cfg, "pd"), SY_MODEL_PD);
	ck_assert_int_eq(sy_config_model_kind(&cfg, "default-model"), SY_MODEL_ANY);
	/* buckets without models of both kinds */
	ck_assert_int_eq(run_yaml("buckets:\n"
				  "  - {id: p, groups: {plain: {}}}\n"
				  "  - {id: d, groups: {prefill: {}, decode: {}}}\n"),
			 SY_ECONFIG);
	ck_assert_str_eq(err.key, "buckets[1].models");
	ck_assert_ptr_nonnull(strstr(err.msg, "use models: [NAME]"));
	/* one named model in buckets of both kinds */
	ck_assert_int_eq(run_yaml("buckets:\n"
				  "  - {id: p, models: [m], groups: {plain: {}}}\n"
				  "  - {id: d, models: [m], groups: {prefill: {}, decode: {}}}\n"),
			 SY_ECONFIG);
	ck_assert_str_eq(err.msg, "t.yaml:3:5: buckets[1].models: model \"m\" is served by plain "
				  "and prefill + decode buckets (\"p\", \"d\"); a model is served one "
				  "way: use models: [NAME] to give it buckets of one kind");
	ck_assert_int_eq(run_yaml("buckets:\n"
				  "  - {id: p, models: [m], groups: {plain: {}}}\n"
				  "  - {id: d, models: [n], groups: {prefill: {}, decode: {}}}\n"),
			 SY_OK);
	ck_assert_int_eq(sy_config_model_kind(&cfg, "m"), SY_MODEL_PLAIN);
	ck_assert_int_eq(sy_config_model_kind(&cfg, "n"), SY_MODEL_PD);
	ck_assert_int_eq(sy_config_model_kind(&cfg, "o"), SY_MODEL_ANY);
	/* a PD worker of a model served by plain buckets */
	ck_assert_int_eq(run_yaml("workers: [{url: http://p:1, role: prefill, model: m}]\n"
				  "buckets: [{id: p, models: [m], groups: {plain: {}}}]\n"),
			 SY_ECONFIG);
	ck_assert_str_eq(err.key, "workers[0].role");
}
END_TEST

START_TEST(test_per_model_buckets_cover_the_fleet_and_their_members)
{
	ck_assert_int_eq(run_yaml("workers: [{url: http://a:1, model: m}]\n"
				  "buckets: [{id: x, models: [other], groups: {plain: {}}}]\n"),
			 SY_ECONFIG);
	ck_assert_str_eq(err.msg, "t.yaml:1:11: workers[0].model: no bucket serves model \"m\" "
				  "(of worker \"http://a:1\"); use a bucket with models: [NAME], or one "
				  "without models");
	ck_assert_int_eq(run_yaml("workers: [{url: http://a:1, model: m}, {url: http://b:1, model: o}]\n"
				  "buckets:\n"
				  "  - {id: x, models: [o], groups: {plain: {worker_ids: [http://a:1]}}}\n"
				  "  - {id: y, groups: {plain: {}}}\n"),
			 SY_ECONFIG);
	ck_assert_str_eq(err.key, "buckets[0].groups.plain.worker_ids[0]");
	ck_assert_ptr_nonnull(strstr(err.msg, "serves model \"m\", which bucket \"x\" does not"));
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
	tcase_add_test(tc, test_dropped_options_are_refused_with_the_reason_and_the_replacement);
	tcase_add_test(tc, test_a_model_mixing_plain_and_pd_is_refused);
	tcase_add_test(tc, test_per_model_buckets_cover_the_fleet_and_their_members);
	tcase_add_test(tc, test_every_schema_key_has_exactly_one_consumer_row);
	tcase_add_test(tc, test_every_conditional_key_is_refused_where_nothing_reads_it);
	tcase_add_test(tc, test_cache_aware_flags_without_a_cache_aware_group_are_refused);
	tcase_add_test(tc, test_index_auto_follows_the_policies_that_read_it);
	tcase_add_test(tc, test_power_of_n_choices_3_with_power_of_two_is_refused);
	tcase_add_test(tc, test_filter_overloaded_without_max_in_flight_is_refused);
	tcase_add_test(tc, test_session_modes_without_a_session_group_are_refused);
	tcase_add_test(tc, test_prefill_and_decode_policy_without_a_pd_bucket_are_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sy_check_run(suite());
}
