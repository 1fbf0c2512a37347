/* test_metrics.c — the Prometheus exposition (router/http/metrics.c): text format
 * 0.0.4 (a HELP and a TYPE line per family before its samples, valid metric
 * and label names, every name with the switchyard_ prefix), rows of all
 * processes summed, histogram buckets cumulative with +Inf = _count and
 * exact bucket placement, label escaping, the region's statebus counters. */
#include <check.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "router/core/generation.h"
#include "common/clock.h"
#include "router/http/metrics.h"
#include "statebus-counters.h"
#include "tests/unit/sb_test.h"
#include "tests/unit/sy_check.h"

static int cb_half_open(uint32_t slot)
{
	(void)slot;
	return 2;
}

static int names = SY_METRICS_SWITCHYARD; /* --metrics-names of render() */

static char *render(struct rt_metrics *m, struct statebus_region *r)
{
	char *out = NULL;
	size_t len = 0;
	ck_assert_int_eq(rt_metrics_render(m, r, cb_half_open, names, &out, &len), 0);
	ck_assert_uint_eq(strlen(out), len);
	return out;
}

/* Value of the sample line that starts with `prefix` followed by ' '. */
static double value_of(const char *text, const char *prefix)
{
	size_t n = strlen(prefix);
	for (const char *l = text; *l; l = strchr(l, '\n') + 1) {
		if (strncmp(l, prefix, n) == 0 && l[n] == ' ')
			return strtod(l + n + 1, NULL);
		if (strchr(l, '\n') == NULL)
			break;
	}
	ck_abort_msg("no sample %s", prefix);
	return -1;
}

static bool name_ok(const char *s, size_t n)
{
	if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_' || s[0] == ':'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == ':'))
			return false;
	return true;
}

/* Checks every line of the exposition; returns the number of samples. */
static int check_format(const char *text)
{
	char typed[256][96];
	int n_typed = 0, samples = 0;
	char help_for[96] = "";
	ck_assert(text[strlen(text) - 1] == '\n');
	for (const char *l = text; *l;) {
		const char *e = strchr(l, '\n');
		ck_assert(e != NULL);
		size_t len = (size_t)(e - l);
		char line[1024];
		ck_assert_uint_lt(len, sizeof(line));
		memcpy(line, l, len);
		line[len] = '\0';
		l = e + 1;
		if (strncmp(line, "# HELP ", 7) == 0) {
			sscanf(line + 7, "%95s", help_for);
			continue;
		}
		if (strncmp(line, "# TYPE ", 7) == 0) {
			char name[96], type[32];
			ck_assert_int_eq(sscanf(line + 7, "%95s %31s", name, type), 2);
			ck_assert_msg(strcmp(name, help_for) == 0, "TYPE %s without HELP first", name);
			ck_assert_msg((names != SY_METRICS_SGLANG && strncmp(name, "switchyard_", 11) == 0) ||
					      (names != SY_METRICS_SWITCHYARD &&
					       (strncmp(name, "sgl_router_", 11) == 0 ||
						strncmp(name, "smg_", 4) == 0)),
				      "prefix: %s", name);
			ck_assert(strcmp(type, "counter") == 0 || strcmp(type, "gauge") == 0 ||
				  strcmp(type, "histogram") == 0);
			for (int i = 0; i < n_typed; i++)
				ck_assert_msg(strcmp(typed[i], name) != 0, "TYPE %s twice", name);
			ck_assert_int_lt(n_typed, 256);
			snprintf(typed[n_typed++], sizeof(typed[0]), "%s", name);
			continue;
		}
		ck_assert_msg(line[0] != '#', "stray comment: %s", line);
		/* name{labels} value */
		size_t nl = strcspn(line, "{ ");
		ck_assert_msg(name_ok(line, nl), "bad metric name: %s", line);
		const char *p = line + nl;
		if (*p == '{') {
			p++;
			while (*p != '}') {
				size_t k = strcspn(p, "=");
				ck_assert_msg(name_ok(p, k), "bad label name: %s", line);
				p += k;
				ck_assert(p[0] == '=' && p[1] == '"');
				p += 2;
				while (*p != '"') {
					ck_assert_msg(*p != '\0' && *p != '\n', "open label value: %s", line);
					if (*p == '\\') {
						ck_assert(p[1] == '\\' || p[1] == '"' || p[1] == 'n');
						p++;
					}
					p++;
				}
				p++;
				if (*p == ',')
					p++;
			}
			p++;
		}
		ck_assert_msg(*p == ' ', "no value: %s", line);
		char *end;
		strtod(p + 1, &end);
		ck_assert_msg(end != p + 1 && *end == '\0', "bad value: %s", line);
		/* The sample belongs to the last TYPEd family. */
		ck_assert(n_typed > 0);
		const char *fam = typed[n_typed - 1];
		size_t fl = strlen(fam);
		char suffix[16] = "";
		if (nl > fl && nl - fl < sizeof(suffix))
			memcpy(suffix, line + fl, nl - fl);
		ck_assert_msg(strncmp(line, fam, fl) == 0 &&
				      (nl == fl || strcmp(suffix, "_bucket") == 0 ||
				       strcmp(suffix, "_sum") == 0 || strcmp(suffix, "_count") == 0),
			      "sample %s outside family %s", line, fam);
		samples++;
	}
	return samples;
}

START_TEST(test_exposition_format_and_prefix)
{
	struct rt_metrics *m = rt_metrics_create(2, 4);
	ck_assert_ptr_nonnull(m);
	rt_metrics_request(m, 0, ROUTE_CHAT_COMPLETIONS);
	rt_metrics_response(m, 1, ROUTE_CHAT_COMPLETIONS, 200);
	rt_metrics_decision(m, 0, 0, "power_of_n", "we\"ird\\reason\nx");
	rt_metrics_selection_failure(m, 1, "no_healthy_workers");
	rt_metrics_phase(m, 0, RT_PHASE_PICK, 700);
	char *t = render(m, NULL);
	ck_assert_int_gt(check_format(t), 50);
	ck_assert_ptr_nonnull(strstr(t, "reason=\"we\\\"ird\\\\reason\\nx\"} 1\n"));
	free(t);
}
END_TEST

/* A PD request counts two decisions, one per stage; a plain one one. */
START_TEST(test_decisions_carry_their_stage)
{
	struct rt_metrics *m = rt_metrics_create(2, 4);
	for (int i = 0; i < 3; i++) {
		rt_metrics_decision(m, i % 2, 1, "cache_aware", "cache_candidate");
		rt_metrics_decision(m, i % 2, 2, "power_of_n", "power_of_n");
	}
	rt_metrics_decision(m, 1, 0, "power_of_n", "power_of_n");
	char *t = render(m, NULL);
	check_format(t);
	ck_assert(value_of(t, "switchyard_policy_decisions_total{stage=\"prefill\","
			      "policy=\"cache_aware\",reason=\"cache_candidate\"}") == 3);
	ck_assert(value_of(t, "switchyard_policy_decisions_total{stage=\"decode\","
			      "policy=\"power_of_n\",reason=\"power_of_n\"}") == 3);
	ck_assert(value_of(t, "switchyard_policy_decisions_total{stage=\"plain\","
			      "policy=\"power_of_n\",reason=\"power_of_n\"}") == 1);
	free(t);
	/* SMG's family: one sample per policy, summed over stages */
	names = SY_METRICS_SGLANG;
	t = render(m, NULL);
	check_format(t);
	names = SY_METRICS_SWITCHYARD;
	ck_assert(value_of(t, "smg_worker_selection_total{connection_mode=\"http\","
			      "policy=\"power_of_n\"}") == 4);
	ck_assert(value_of(t, "smg_worker_selection_total{connection_mode=\"http\","
			      "policy=\"cache_aware\"}") == 3);
	free(t);
}
END_TEST

START_TEST(test_counters_are_summed_over_processes)
{
	struct rt_metrics *m = rt_metrics_create(3, 4);
	for (unsigned p = 0; p < 3; p++)
		for (unsigned i = 0; i <= p; i++) {
			rt_metrics_request(m, p, ROUTE_COMPLETIONS);
			rt_metrics_response(m, p, ROUTE_COMPLETIONS, 503);
			rt_metrics_retry(m, p);
		}
	rt_metrics_request(m, 7, ROUTE_COMPLETIONS); /* out of range: ignored */
	char *t = render(m, NULL);
	ck_assert(value_of(t, "switchyard_requests_total{route=\"/v1/completions\",method=\"POST\"}") == 6);
	ck_assert(value_of(t, "switchyard_responses_total{route=\"/v1/completions\",method=\"POST\","
			      "status_code=\"503\"}") == 6);
	ck_assert(value_of(t, "switchyard_retries_total") == 6);
	free(t);
}
END_TEST

/* Queue gauges move with enter/leave over processes, outcomes count per
 * class, the wait histogram skips refusals, tenant labels stop at 16. */
START_TEST(test_queue_families_and_bounded_tenant_labels)
{
	struct rt_metrics *m = rt_metrics_create(2, 4);
	unsigned a = rt_metrics_queue_tenant_label(m, "alice");
	ck_assert_uint_eq(rt_metrics_queue_tenant_label(m, "alice"), a);
	rt_metrics_queue_depth(m, 0, 1, a, +1);
	rt_metrics_queue_depth(m, 1, 1, a, +1);
	rt_metrics_queue_depth(m, 1, 1, a, +1);
	rt_metrics_queue_depth(m, 1, 1, a, -1);
	rt_metrics_queue(m, 0, 1, 0, 2000000000ull, false);  /* admitted after 2 s */
	rt_metrics_queue(m, 1, 3, 3, 0, true);               /* rejected_full */
	char name[16];
	unsigned last = a;
	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "t%d", i);
		last = rt_metrics_queue_tenant_label(m, name);
	}
	ck_assert_uint_eq(last, RT_METRICS_LABELS - 1); /* past 16 tenants: other */
	char *t = render(m, NULL);
	ck_assert(value_of(t, "switchyard_queue_depth{class=\"interactive\"}") == 2);
	ck_assert(value_of(t, "switchyard_queue_tenant_depth{tenant=\"alice\"}") == 2);
	ck_assert(value_of(t, "switchyard_queue_requests_total{class=\"interactive\","
			      "outcome=\"admitted\"}") == 1);
	ck_assert(value_of(t, "switchyard_queue_requests_total{class=\"bulk\","
			      "outcome=\"rejected_full\"}") == 1);
	ck_assert(value_of(t, "switchyard_queue_wait_seconds_count") == 1);
	ck_assert(value_of(t, "switchyard_queue_wait_seconds_sum") == 2);
	ck_assert_ptr_null(strstr(t, "tenant=\"t19\""));
	free(t);
	rt_metrics_queue_reset(m, 1);
	t = render(m, NULL);
	ck_assert(value_of(t, "switchyard_queue_depth{class=\"interactive\"}") == 1);
	free(t);
}
END_TEST

START_TEST(test_cache_counters_are_summed_over_processes)
{
	struct rt_metrics *m = rt_metrics_create(2, 4);
	struct router_cache_totals d;
	memset(&d, 0, sizeof(d));
	d.decisions[CACHE_AWARE_HIT] = 3;
	d.decisions[CACHE_AWARE_ALL_QUEUED] = 1;
	d.digest_hits = 100;
	d.digest_misses = 7;
	d.found[0] = 4;
	d.no_chain[0] = 1;
	d.unavailable[1][PREFIX_WHY_TIMEOUT] = 2;
	d.rejected[1] = 1;
	d.guard_override = 1;
	rt_metrics_cache(m, 0, &d);
	rt_metrics_cache(m, 1, &d);
	rt_metrics_cache(m, 1, &d);
	char *t = render(m, NULL);
	ck_assert_double_eq(value_of(t, "switchyard_cache_aware_decisions_total{decision=\"cache_hit\"}"), 9);
	ck_assert_double_eq(value_of(t, "switchyard_cache_aware_decisions_total{decision=\"cache_miss\"}"), 0);
	ck_assert_double_eq(value_of(t, "switchyard_cache_aware_decisions_total{decision=\"all_queued\"}"), 3);
	ck_assert_double_eq(value_of(t, "switchyard_cache_pressure_guard_override_total"), 3);
	ck_assert_double_eq(value_of(t, "switchyard_digest_memo_pages_total{result=\"hit\"}"), 300);
	ck_assert_double_eq(value_of(t, "switchyard_digest_memo_pages_total{result=\"miss\"}"), 21);
	ck_assert_double_eq(value_of(t, "switchyard_cache_prefix_lookups_total{source=\"local\","
					"outcome=\"found\",reason=\"none\"}"), 12);
	ck_assert_double_eq(value_of(t, "switchyard_cache_prefix_lookups_total{source=\"local\","
					"outcome=\"no_chain\",reason=\"none\"}"), 3);
	ck_assert_double_eq(value_of(t, "switchyard_cache_prefix_lookups_total{source=\"indexer\","
					"outcome=\"unavailable\",reason=\"timeout\"}"), 6);
	ck_assert_double_eq(value_of(t, "switchyard_cache_prefix_lookups_total{source=\"indexer\","
					"outcome=\"rejected\",reason=\"none\"}"), 3);
	ck_assert_ptr_nonnull(strstr(t, "# TYPE switchyard_cache_aware_decisions_total counter\n"));
	free(t);
}
END_TEST

START_TEST(test_histogram_buckets_exact_and_cumulative)
{
	struct rt_metrics *m = rt_metrics_create(2, 1);
	rt_metrics_duration(m, 0, 3000000ull);     /* 3 ms → le 0.005 */
	rt_metrics_duration(m, 1, 30000000ull);    /* 30 ms → le 0.05 */
	rt_metrics_duration(m, 1, 3000000000ull);  /* 3 s → le 5 */
	rt_metrics_duration(m, 0, 900000000000ull); /* 900 s → +Inf only */
	char *t = render(m, NULL);
	const char *h = "switchyard_request_duration_seconds";
	char k[128];
	struct {
		const char *le;
		double want;
	} cases[] = {{"0.005", 1}, {"0.01", 1}, {"0.025", 1}, {"0.05", 2}, {"2.5", 2},
		     {"5", 3},     {"600", 3},  {"+Inf", 4}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(k, sizeof(k), "%s_bucket{le=\"%s\"}", h, cases[i].le);
		ck_assert_msg(value_of(t, k) == cases[i].want, "%s", k);
	}
	snprintf(k, sizeof(k), "%s_count", h);
	ck_assert(value_of(t, k) == 4);
	snprintf(k, sizeof(k), "%s_sum", h);
	ck_assert(value_of(t, k) > 903.032 && value_of(t, k) < 903.034);
	/* Phase histograms carry their label before le. */
	rt_metrics_phase(m, 1, RT_PHASE_TTFB, 2000); /* 2 µs → le 2.5e-06 */
	free(t);
	t = render(m, NULL);
	ck_assert(value_of(t, "switchyard_router_phase_seconds_bucket{phase=\"ttfb\",le=\"1e-06\"}") == 0);
	ck_assert(value_of(t, "switchyard_router_phase_seconds_bucket{phase=\"ttfb\",le=\"2.5e-06\"}") == 1);
	ck_assert(value_of(t, "switchyard_router_phase_seconds_count{phase=\"ttfb\"}") == 1);
	check_format(t);
	free(t);
}
END_TEST

/* Every family of reference/policy-defaults.md §10 that applies (docs/router.md
 * names the two that do not: decode_affinity, dp_rank_selections), with the
 * values recorded. */
START_TEST(test_reference_section10_families)
{
	char path[64];
	struct statebus_params p = sbt_small();
	struct statebus_region *r = sbt_create(sbt_path(path, sizeof(path)), &p);
	ck_assert_int_eq(statebus_writer_lock(r, true), SY_OK);
	uint32_t ok, mism, none, gen;
	struct statebus_worker w = sbt_worker("http://ok", 2);
	w.has_cache_signal = 1;
	w.kv_block_size = 16;
	ck_assert_int_eq(statebus_worker_add(r, &w, &ok, &gen), SY_OK);
	struct statebus_stream st = {.cursor = 3, .worker_gen = gen, .untrusted = 1};
	ck_assert_int_eq(statebus_stream_write(r, ok, 0, &st), SY_OK);
	st.untrusted = 0;
	ck_assert_int_eq(statebus_stream_write(r, ok, 1, &st), SY_OK);
	int64_t ids[3] = {11, 12, 13};
	ck_assert_int_eq(statebus_index_store(r, ok, 0, false, 0, ids, 3, STATEBUS_TIER_DEVICE, 1),
			 SY_OK);
	w = sbt_worker("http://mismatch", 1);
	w.has_cache_signal = 1;
	w.kv_rejected = STATEBUS_KV_BLOCK_SIZE_MISMATCH;
	ck_assert_int_eq(statebus_worker_add(r, &w, &mism, &gen), SY_OK);
	w = sbt_worker("http://none", 1);
	ck_assert_int_eq(statebus_worker_add(r, &w, &none, &gen), SY_OK);

	struct rt_metrics *m = rt_metrics_create(2, 8);
	rt_metrics_decision(m, 0, 0, "sticky", "sticky_hit");
	rt_metrics_decision(m, 1, 0, "sticky", "sticky_hit");
	rt_metrics_decision(m, 1, 0, "sticky", "sticky_new");
	rt_metrics_decision(m, 0, 0, "sticky", "no_routing_key");
	rt_metrics_decision(m, 0, 0, "round_robin", "round_robin");
	rt_metrics_stale_request(m, 1);
	rt_metrics_reselected(m, 0, 2);
	rt_metrics_input_ids(m, 0, RT_INPUT_IDS_FORWARDED);
	rt_metrics_input_ids(m, 1, RT_INPUT_IDS_FORWARDED);
	rt_metrics_input_ids(m, 1, RT_INPUT_IDS_INELIGIBLE);
	struct router_cache_totals d = {0};
	d.monitor[CACHE_MONITOR_LOAD_REPORT] = 5;
	d.monitor[CACHE_MONITOR_ROUTER_LOCAL] = 2;
	d.diverted[0] = 1;  /* 1 block */
	d.diverted[3] = 2;  /* 5..8 blocks */
	d.diverted[CACHE_DIVERTED_EDGES] = 1; /* > 8192 */
	d.diverted_sum = 1 + 8 + 8 + 10000;
	rt_metrics_cache(m, 1, &d);
	char *t = render(m, r);
	check_format(t);
	static const char *const fams[] = {
		"requests_total", "responses_total", "worker_requests_total",
		"request_duration_seconds", "ttft_seconds", "stream_outcome_total", "active_load",
		"workers", "worker_health", "worker_cb_state", "worker_inflight_requests",
		"stale_requests_total", "sticky_total", "policy_decisions_total",
		"policy_selection_failures_total", "cache_admission_evaluated_total",
		"cache_admission_rejected_total", "cache_pressure_guard_compared_total",
		"cache_pressure_guard_override_total", "cache_monitor_decisions_total",
		"cache_aware_decisions_total", "diverted_overlap_blocks",
		"input_ids_forwarding_total", "sampling_contract_rejections_total", "kv_tree_blocks",
		"kv_event_decode_failures_total", "kv_event_sequence_gaps_total",
		"kv_event_missing_sequences_total", "kv_event_skipped_batches_total",
		"kv_event_publisher_resets_total", "kv_event_stream_untrusted",
		"worker_cache_signal",
	};
	for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]); i++) {
		char k[128];
		snprintf(k, sizeof(k), "# TYPE switchyard_%s ", fams[i]);
		ck_assert_msg(strstr(t, k) != NULL, "no family switchyard_%s", fams[i]);
	}
	ck_assert(value_of(t, "switchyard_sticky_total{outcome=\"hit\"}") == 2);
	ck_assert(value_of(t, "switchyard_sticky_total{outcome=\"assigned\"}") == 1);
	ck_assert(value_of(t, "switchyard_sticky_total{outcome=\"remap\"}") == 0);
	ck_assert(value_of(t, "switchyard_sticky_total{outcome=\"no_routing_key\"}") == 1);
	ck_assert(value_of(t, "switchyard_stale_requests_total{outcome=\"expired\"}") == 1);
	ck_assert(value_of(t, "switchyard_selection_reselected_total") == 2);
	ck_assert(value_of(t, "switchyard_input_ids_forwarding_total{outcome=\"forwarded\"}") == 2);
	ck_assert(value_of(t, "switchyard_input_ids_forwarding_total{outcome=\"ineligible\"}") == 1);
	ck_assert(value_of(t, "switchyard_input_ids_forwarding_total{outcome=\"disabled\"}") == 0);
	ck_assert(value_of(t, "switchyard_cache_monitor_decisions_total{source=\"load_report\"}") == 5);
	ck_assert(value_of(t, "switchyard_cache_monitor_decisions_total{source=\"router_local\"}") == 2);
	ck_assert(value_of(t, "switchyard_diverted_overlap_blocks_bucket{le=\"1\"}") == 1);
	ck_assert(value_of(t, "switchyard_diverted_overlap_blocks_bucket{le=\"4\"}") == 1);
	ck_assert(value_of(t, "switchyard_diverted_overlap_blocks_bucket{le=\"8\"}") == 3);
	ck_assert(value_of(t, "switchyard_diverted_overlap_blocks_bucket{le=\"8192\"}") == 3);
	ck_assert(value_of(t, "switchyard_diverted_overlap_blocks_bucket{le=\"+Inf\"}") == 4);
	ck_assert(value_of(t, "switchyard_diverted_overlap_blocks_count") == 4);
	ck_assert(value_of(t, "switchyard_diverted_overlap_blocks_sum") == 10017);
	ck_assert(value_of(t, "switchyard_kv_tree_blocks") == 3);
	ck_assert(value_of(t, "switchyard_kv_event_stream_untrusted{worker_url=\"http://ok\","
			      "rank=\"0\"}") == 1);
	ck_assert(value_of(t, "switchyard_kv_event_stream_untrusted{worker_url=\"http://ok\","
			      "rank=\"1\"}") == 0);
	ck_assert_ptr_null(strstr(t, "switchyard_kv_event_stream_untrusted{worker_url=\"http://none\""));
#define SIG(url, state) \
	"switchyard_worker_cache_signal{worker_url=\"" url "\",model_id=\"default-model\"," \
	"mode=\"plain\",state=\"" state "\"}"
	ck_assert(value_of(t, SIG("http://ok", "ok")) == 1);
	ck_assert(value_of(t, SIG("http://ok", "no_kv_events")) == 0);
	ck_assert(value_of(t, SIG("http://mismatch", "block_size_mismatch")) == 1);
	ck_assert(value_of(t, SIG("http://mismatch", "ok")) == 0);
	ck_assert(value_of(t, SIG("http://none", "no_kv_events")) == 1);
	free(t);
	/* statebus.index off: nothing indexed, whatever the worker reports */
	statebus_index_mode_set(r, STATEBUS_INDEX_MODE_OFF);
	t = render(m, r);
	ck_assert(value_of(t, SIG("http://ok", "index_off")) == 1);
	ck_assert(value_of(t, SIG("http://ok", "ok")) == 0);
	ck_assert_ptr_null(strstr(t, "switchyard_kv_event_stream_untrusted{"));
#undef SIG
	free(t);
	/* the SGLang names carry the slim router's families */
	names = SY_METRICS_SGLANG;
	t = render(m, r);
	check_format(t);
	names = SY_METRICS_SWITCHYARD;
	ck_assert(value_of(t, "sgl_router_sticky_total{outcome=\"hit\"}") == 2);
	ck_assert(value_of(t, "sgl_router_stale_requests_total{outcome=\"expired\"}") == 1);
	free(t);
	sbt_destroy(r, path);
}
END_TEST

START_TEST(test_region_counters_and_worker_gauges)
{
	char path[64];
	struct statebus_params p = sbt_small();
	struct statebus_region *r = sbt_create(sbt_path(path, sizeof(path)), &p);
	ck_assert_int_eq(statebus_writer_lock(r, true), SY_OK);
	struct statebus_worker w = sbt_worker("http://10.0.0.1:30001", 1);
	uint32_t slot, gen;
	ck_assert_int_eq(statebus_worker_add(r, &w, &slot, &gen), SY_OK);
	statebus_counter_add(r, STATEBUS_CTR_KV_BATCHES, 41);
	statebus_counter_add(r, STATEBUS_CTR_KV_SEQUENCE_GAPS, 2);
	struct rt_metrics *m = rt_metrics_create(1, 8);
	rt_metrics_worker(m, 0, slot, RT_OUT_BACKPRESSURE);
	char *t = render(m, r);
	check_format(t);
	ck_assert(value_of(t, "switchyard_kv_event_batches_total") == 41);
	ck_assert(value_of(t, "switchyard_kv_event_sequence_gaps_total") == 2);
	ck_assert(value_of(t, "switchyard_statebus_live") == 0);
	ck_assert(value_of(t, "switchyard_worker_requests_total{worker_url=\"http://10.0.0.1:30001\","
			      "model_id=\"default-model\",mode=\"plain\",outcome=\"backpressure\"}") == 1);
	ck_assert(value_of(t, "switchyard_workers{mode=\"plain\"}") == 1);
	ck_assert(value_of(t, "switchyard_worker_cb_state{worker_url=\"http://10.0.0.1:30001\","
			      "model_id=\"default-model\",mode=\"plain\"}") == 2);
	for (unsigned i = 0; i < STATEBUS_CTR_COUNT_; i++)
		ck_assert_ptr_nonnull(strstr(t, statebus_counter_name(i)));
	/* No load report yet: unknown, so no load samples (never a 0). */
#define LAB "{worker_url=\"http://10.0.0.1:30001\",model_id=\"default-model\",mode=\"plain\"}"
	ck_assert(value_of(t, "switchyard_worker_load_fresh" LAB) == 0);
	ck_assert_ptr_null(strstr(t, "switchyard_worker_load_running_requests{"));
	free(t);
	struct statebus_load_report rep = {.num_running_reqs = 3, .num_waiting_reqs = 2,
					   .num_tokens = 100, .max_total_num_tokens = 1000,
					   .recv_mono_ns = sy_mono_ns()};
	ck_assert_int_eq(statebus_load_write(r, slot, gen, 0, &rep), SY_OK);
	t = render(m, r);
	check_format(t);
	ck_assert(value_of(t, "switchyard_worker_load_fresh" LAB) == 1);
	ck_assert(value_of(t, "switchyard_worker_load_running_requests" LAB) == 3);
	ck_assert(value_of(t, "switchyard_worker_load_waiting_requests" LAB) == 2);
	ck_assert(value_of(t, "switchyard_worker_load_kv_tokens" LAB) == 100);
	ck_assert(value_of(t, "switchyard_worker_load_kv_capacity_tokens" LAB) == 1000);
#undef LAB
	free(t);
	sbt_destroy(r, path);
}
END_TEST

START_TEST(test_outcome_classes)
{
	ck_assert_int_eq(rt_outcome_of_status(200), RT_OUT_SUCCESS);
	ck_assert_int_eq(rt_outcome_of_status(404), RT_OUT_CLIENT_ERROR);
	ck_assert_int_eq(rt_outcome_of_status(429), RT_OUT_BACKPRESSURE);
	ck_assert_int_eq(rt_outcome_of_status(503), RT_OUT_BACKPRESSURE);
	ck_assert_int_eq(rt_outcome_of_status(502), RT_OUT_ERROR);
	ck_assert_int_eq(rt_outcome_of_status(0), RT_OUT_ERROR);
}
END_TEST

START_TEST(test_sglang_names_carry_the_same_counts)
{
	char path[64];
	struct statebus_params p = sbt_small();
	struct statebus_region *r = sbt_create(sbt_path(path, sizeof(path)), &p);
	ck_assert_int_eq(statebus_writer_lock(r, true), SY_OK);
	struct statebus_worker w = sbt_worker("http://10.0.0.1:30001", 1);
	uint32_t slot, gen;
	ck_assert_int_eq(statebus_worker_add(r, &w, &slot, &gen), SY_OK);
	struct rt_metrics *m = rt_metrics_create(2, 8);
	for (unsigned i = 0; i < 3; i++) {
		rt_metrics_request(m, i % 2, ROUTE_CHAT_COMPLETIONS);
		rt_metrics_response(m, i % 2, ROUTE_CHAT_COMPLETIONS, i ? 200 : 503);
		rt_metrics_worker(m, i % 2, slot, i ? RT_OUT_SUCCESS : RT_OUT_ERROR);
		rt_metrics_decision(m, 0, i == 2 ? 1 : 0, "cache_aware", "cache_hit");
		rt_metrics_duration(m, 1, 30000000ull);
	}
	names = SY_METRICS_SGLANG;
	char *t = render(m, r);
	check_format(t);
	ck_assert_ptr_null(strstr(t, "switchyard_"));
	ck_assert(value_of(t, "sgl_router_requests_total{route=\"/v1/chat/completions\","
			      "method=\"POST\"}") == 3);
	ck_assert(value_of(t, "smg_http_requests_total{method=\"POST\",path=\"/v1/chat/completions\"}") == 3);
	ck_assert(value_of(t, "smg_router_requests_total{router_type=\"http\",connection_mode=\"http\","
			      "endpoint=\"chat\"}") == 3);
	ck_assert(value_of(t, "smg_http_responses_total{status_code=\"503\",error_code=\"\"}") == 1);
	ck_assert(value_of(t, "sgl_router_request_errors_total{route=\"/v1/chat/completions\","
			      "error_type=\"503\"}") == 1);
	ck_assert(value_of(t, "sgl_router_worker_health{worker=\"http://10.0.0.1:30001\","
			      "worker_url=\"http://10.0.0.1:30001\",model_id=\"default-model\","
			      "mode=\"plain\"}") == 1);
	ck_assert(value_of(t, "sgl_router_processed_requests_total{worker=\"http://10.0.0.1:30001\"}") == 3);
	ck_assert(value_of(t, "smg_worker_health{worker=\"http://10.0.0.1:30001\"}") == 1);
	ck_assert(value_of(t, "smg_worker_errors_total{worker_type=\"regular\",connection_mode=\"http\","
			      "error_type=\"backend_error\"}") == 1);
	ck_assert(value_of(t, "sgl_router_active_workers") == 1);
	ck_assert(value_of(t, "smg_worker_pool_size{worker_type=\"regular\",connection_mode=\"http\"}") == 1);
	ck_assert(value_of(t, "smg_worker_selection_total{connection_mode=\"http\",policy=\"cache_aware\"}") == 3);
	ck_assert(value_of(t, "sgl_router_request_duration_seconds_count") == 3);
	ck_assert(value_of(t, "smg_router_request_duration_seconds_count{router_type=\"http\","
			      "connection_mode=\"http\"}") == 3);
	free(t);
	names = SY_METRICS_BOTH;
	t = render(m, r);
	check_format(t); /* no family twice */
	ck_assert(value_of(t, "switchyard_requests_total{route=\"/v1/chat/completions\","
			      "method=\"POST\"}") == 3);
	ck_assert(value_of(t, "sgl_router_requests_total{route=\"/v1/chat/completions\","
			      "method=\"POST\"}") == 3);
	free(t);
	names = SY_METRICS_SWITCHYARD;
	sbt_destroy(r, path);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("exposition");
	tcase_add_test(tc, test_exposition_format_and_prefix);
	tcase_add_test(tc, test_counters_are_summed_over_processes);
	tcase_add_test(tc, test_decisions_carry_their_stage);
	tcase_add_test(tc, test_reference_section10_families);
	tcase_add_test(tc, test_cache_counters_are_summed_over_processes);
	tcase_add_test(tc, test_queue_families_and_bounded_tenant_labels);
	tcase_add_test(tc, test_histogram_buckets_exact_and_cumulative);
	tcase_add_test(tc, test_region_counters_and_worker_gauges);
	tcase_add_test(tc, test_outcome_classes);
	tcase_add_test(tc, test_sglang_names_carry_the_same_counts);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sy_check_run(suite());
}
