/* test_ingest.c — LoadStat → load record with derived throughput
 * (sglang-wire.md §13), medium → tiers (§7), /server_info facts (§10),
 * vLLM discovery (/v1/models, /version) and scraped /metrics. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "common/errors.h"
#include "ingest.h"
#include "seq.h"
#include "statebus-counters.h"
#include "statebus.h"
#include "sy_check.h"

static struct sbd_load_stat v3(uint64_t uncached, uint64_t busy_us)
{
	struct sbd_load_stat s = {.n_fields = 11, .num_running_reqs = 3, .num_waiting_reqs = 2,
				  .num_tokens = 1000, .max_total_num_tokens = 8000, .v3 = true,
				  .num_waiting_uncached_tokens = 512, .num_total_tokens = 1200,
				  .max_running_requests = 64,
				  .total_prefill_uncached_tokens = uncached,
				  .total_prefill_busy_us = busy_us};
	return s;
}

START_TEST(test_throughput_is_derived_between_the_two_latest_v3_samples)
{
	struct sbd_load_prev prev = {0};
	struct statebus_load_report rep;
	struct sbd_load_stat s = v3(10000, 2000000);
	sbd_load_report(&s, 5, &prev, &rep);
	ck_assert_uint_eq(rep.flags, STATEBUS_LOAD_HAS_REPORT | STATEBUS_LOAD_HAS_V3);
	ck_assert_uint_eq(rep.recv_mono_ns, 5);
	s = v3(20000, 3000000); /* 10,000 tokens in 1 s of busy time */
	sbd_load_report(&s, 6, &prev, &rep);
	ck_assert(rep.flags & STATEBUS_LOAD_HAS_THROUGHPUT);
	ck_assert_float_eq_tol(rep.prefill_tokens_per_s, 10000.0f, 1e-3f);
	s = v3(20000, 3500000); /* Δuncached 0: no throughput on this pair */
	sbd_load_report(&s, 7, &prev, &rep);
	ck_assert(!(rep.flags & STATEBUS_LOAD_HAS_THROUGHPUT));
	s = v3(20600, 3800000); /* 600 tokens / 0.3 s */
	sbd_load_report(&s, 8, &prev, &rep);
	ck_assert_float_eq_tol(rep.prefill_tokens_per_s, 2000.0f, 1e-2f);
	s = v3(100, 100); /* counters went back: restart, new baseline */
	sbd_load_report(&s, 9, &prev, &rep);
	ck_assert(!(rep.flags & STATEBUS_LOAD_HAS_THROUGHPUT));
	ck_assert_uint_eq(prev.uncached, 100);
}
END_TEST

START_TEST(test_basic_sample_has_no_v3_view_and_breaks_the_derivation)
{
	struct sbd_load_prev prev = {0};
	struct statebus_load_report rep;
	struct sbd_load_stat s = v3(10000, 2000000);
	sbd_load_report(&s, 1, &prev, &rep);
	struct sbd_load_stat basic = {.n_fields = 6, .num_running_reqs = 5, .num_waiting_reqs = 1,
				      .num_tokens = UINT64_C(1) << 40, .max_total_num_tokens = 10};
	sbd_load_report(&basic, 2, &prev, &rep);
	ck_assert_uint_eq(rep.flags, STATEBUS_LOAD_HAS_REPORT);
	ck_assert_uint_eq(rep.num_tokens, UINT32_MAX); /* saturated */
	ck_assert_uint_eq(rep.max_running_requests, 0);
	ck_assert(!prev.valid);
	s = v3(20000, 3000000);
	sbd_load_report(&s, 3, &prev, &rep);
	ck_assert(!(rep.flags & STATEBUS_LOAD_HAS_THROUGHPUT));
}
END_TEST

START_TEST(test_medium_to_tiers)
{
	ck_assert_uint_eq(sbd_store_tiers(SBD_MEDIUM_ABSENT), STATEBUS_TIER_DEVICE);
	ck_assert_uint_eq(sbd_store_tiers(SBD_MEDIUM_GPU), STATEBUS_TIER_DEVICE);
	ck_assert_uint_eq(sbd_store_tiers(SBD_MEDIUM_CPU_PINNED), STATEBUS_TIER_HOST);
	ck_assert_uint_eq(sbd_store_tiers(SBD_MEDIUM_CPU), STATEBUS_TIER_HOST);
	ck_assert_uint_eq(sbd_store_tiers(SBD_MEDIUM_DISK), STATEBUS_TIER_DISK);
	ck_assert_uint_eq(sbd_store_tiers(SBD_MEDIUM_EXTERNAL), STATEBUS_TIER_EXTERNAL);
	ck_assert_uint_eq(sbd_store_tiers(SBD_MEDIUM_UNKNOWN), 0); /* dropped */
	ck_assert_uint_eq(sbd_remove_tiers(SBD_MEDIUM_ABSENT), STATEBUS_TIER_ALL);
	ck_assert_uint_eq(sbd_remove_tiers(SBD_MEDIUM_UNKNOWN), STATEBUS_TIER_ALL);
	ck_assert_uint_eq(sbd_remove_tiers(SBD_MEDIUM_GPU), STATEBUS_TIER_DEVICE);
	ck_assert_uint_eq(sbd_remove_tiers(SBD_MEDIUM_CPU), STATEBUS_TIER_HOST);
}
END_TEST

START_TEST(test_server_info_facts_wildcard_host_role_bigram)
{
	const char *body = "{\"disaggregation_mode\":\"prefill\",\"disaggregation_bootstrap_port\":8998,"
			   "\"speculative_algorithm\":\"Eagle3\",\"kv_events\":{\"publisher\":\"zmq\","
			   "\"endpoint_host\":\"*\",\"endpoint_port_base\":5557,\"topic\":\"kv\","
			   "\"block_size\":16,\"dp_size\":2,\"load_endpoint_port_base\":5560}}";
	struct sbd_facts f;
	char why[128];
	ck_assert_int_eq(sbd_discovery_parse(body, strlen(body), "http://10.0.0.7:30001", &f, why,
					     sizeof(why)), SY_OK);
	ck_assert(f.has_kv && f.bigram && !f.bigram_unrecognised);
	ck_assert_str_eq(f.endpoint_host, "10.0.0.7");
	ck_assert_int_eq(f.endpoint_port_base, 5557);
	ck_assert_str_eq(f.topic, "kv");
	ck_assert_int_eq(f.block_size, 16);
	ck_assert_int_eq(f.dp_size, 2);
	ck_assert_int_eq(f.load_port_base, 5560);
	ck_assert_int_eq(f.role, STATEBUS_WORKER_PREFILL);
	ck_assert_int_eq(f.bootstrap_port, 8998);
}
END_TEST

START_TEST(test_server_info_without_kv_events_and_nested_server_args)
{
	const char *body = "{\"server_args\":{\"disaggregation_mode\":\"decode\","
			   "\"speculative_algorithm\":\"NEXTN_MTP\",\"dp_size\":4}}";
	struct sbd_facts f;
	char why[128];
	ck_assert_int_eq(sbd_discovery_parse(body, strlen(body), "http://[::1]:8000", &f, why,
					     sizeof(why)), SY_OK);
	ck_assert(!f.has_kv && !f.bigram && f.bigram_unrecognised);
	ck_assert_int_eq(f.role, STATEBUS_WORKER_DECODE);
	ck_assert_int_eq(f.dp_size, 4);
	ck_assert_str_eq(f.endpoint_host, "::1");
	ck_assert_int_eq(sbd_discovery_parse("[1]", 3, "http://a", &f, why, sizeof(why)), SY_EMALFORMED);
	ck_assert_int_eq(sbd_discovery_parse("{", 1, "http://a", &f, why, sizeof(why)), SY_EMALFORMED);
}
END_TEST

/* QA: an out-of-range dp_size is an error, never read as dp 1 (which would
 * subscribe rank 0 only and take its load as the whole worker's); a host or
 * topic too long for the record is refused, never cut (a cut host connects
 * elsewhere). */
START_TEST(test_server_info_out_of_range_dp_and_long_strings_are_invalid)
{
	struct sbd_facts f;
	char why[128];
	const char *dp = "{\"kv_events\":{\"endpoint_port_base\":5557,\"block_size\":16,"
			 "\"dp_size\":100000}}";
	ck_assert_int_eq(sbd_discovery_parse(dp, strlen(dp), "http://a:1", &f, why, sizeof(why)), SY_OK);
	ck_assert_ptr_nonnull(f.invalid);
	const char *top = "{\"dp_size\":0,\"kv_events\":{\"endpoint_port_base\":5557}}";
	ck_assert_int_eq(sbd_discovery_parse(top, strlen(top), "http://a:1", &f, why, sizeof(why)), SY_OK);
	ck_assert_ptr_nonnull(f.invalid);
	char body[512];
	char host[200];
	memset(host, 'h', sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	snprintf(body, sizeof(body), "{\"kv_events\":{\"endpoint_host\":\"%s\",\"endpoint_port_base\":5557}}", host);
	ck_assert_int_eq(sbd_discovery_parse(body, strlen(body), "http://a:1", &f, why, sizeof(why)), SY_OK);
	ck_assert_ptr_nonnull(f.invalid);
	snprintf(body, sizeof(body), "{\"kv_events\":{\"topic\":\"%s\",\"endpoint_port_base\":5557}}", host);
	ck_assert_int_eq(sbd_discovery_parse(body, strlen(body), "http://a:1", &f, why, sizeof(why)), SY_OK);
	ck_assert_ptr_nonnull(f.invalid);
	const char *ok = "{\"dp_size\":null,\"kv_events\":{\"endpoint_port_base\":5557,\"dp_size\":1024}}";
	ck_assert_int_eq(sbd_discovery_parse(ok, strlen(ok), "http://a:1", &f, why, sizeof(why)), SY_OK);
	ck_assert_ptr_null(f.invalid);
	ck_assert_int_eq(f.dp_size, 1024);
}
END_TEST

/* QA: a negative (or zero) block_size is bad_facts, never "unknown" (which
 * would subscribe the worker and index it under no agreed page size). */
START_TEST(test_server_info_bad_block_size_is_invalid)
{
	struct sbd_facts f;
	char why[128];
	const char *neg = "{\"kv_events\":{\"endpoint_port_base\":5557,\"block_size\":-16}}";
	ck_assert_int_eq(sbd_discovery_parse(neg, strlen(neg), "http://a:1", &f, why, sizeof(why)), SY_OK);
	ck_assert_ptr_nonnull(f.invalid);
	ck_assert_int_eq(f.block_size, 0);
	const char *zero = "{\"kv_events\":{\"endpoint_port_base\":5557,\"block_size\":0}}";
	ck_assert_int_eq(sbd_discovery_parse(zero, strlen(zero), "http://a:1", &f, why, sizeof(why)), SY_OK);
	ck_assert_ptr_nonnull(f.invalid);
	const char *str = "{\"kv_events\":{\"endpoint_port_base\":5557,\"block_size\":\"16\"}}";
	ck_assert_int_eq(sbd_discovery_parse(str, strlen(str), "http://a:1", &f, why, sizeof(why)), SY_OK);
	ck_assert_ptr_nonnull(f.invalid);
	const char *none = "{\"kv_events\":{\"endpoint_port_base\":5557,\"block_size\":null}}";
	ck_assert_int_eq(sbd_discovery_parse(none, strlen(none), "http://a:1", &f, why, sizeof(why)), SY_OK);
	ck_assert_ptr_null(f.invalid);
	ck_assert_int_eq(f.block_size, 0); /* not said: unknown */
}
END_TEST

/* SGLang's /server_info is its ServerArgs flattened: served_model_name
 * (which the engine defaults to model_path), else model_path. */
START_TEST(test_server_info_model_name)
{
	struct sbd_facts f;
	char why[128];
	const char *both = "{\"model_path\":\"/models/q\",\"served_model_name\":\"qwen\"}";
	ck_assert_int_eq(sbd_discovery_parse(both, strlen(both), "http://a:1", &f, why, sizeof(why)), SY_OK);
	ck_assert_str_eq(f.model, "qwen");
	const char *path = "{\"model_path\":\"/models/q\",\"served_model_name\":null}";
	ck_assert_int_eq(sbd_discovery_parse(path, strlen(path), "http://a:1", &f, why, sizeof(why)), SY_OK);
	ck_assert_str_eq(f.model, "/models/q");
	const char *nested = "{\"server_args\":{\"served_model_name\":\"m\"}}";
	ck_assert_int_eq(sbd_discovery_parse(nested, strlen(nested), "http://a:1", &f, why,
					     sizeof(why)), SY_OK);
	ck_assert_str_eq(f.model, "m");
	ck_assert_int_eq(sbd_discovery_parse("{}", 2, "http://a:1", &f, why, sizeof(why)), SY_OK);
	ck_assert_str_eq(f.model, "");
}
END_TEST

/* policy-defaults.md §12 scenario 23: seq 2 applied, 1 filtered, 5 →
 * batches_lost = 2; tallies kept per (event type, medium) — only for the
 * batches applied (seq 1's event is never tallied). */
static void tally_batch(struct statebus_stream *st, int64_t seq, const struct sbd_kv_event *ev,
			unsigned n, uint64_t tallies[STATEBUS_CTR_COUNT_])
{
	enum sbd_seq_verdict v = sbd_seq_admit(st, seq);
	if (v == SBD_SEQ_SKIP || v == SBD_SEQ_RESET)
		return;
	if (v == SBD_SEQ_GAP)
		sbd_seq_gap_lost(st, seq); /* no replay */
	for (unsigned i = 0; i < n; i++)
		tallies[sbd_tally_counter(&ev[i])]++;
	sbd_seq_commit(st, seq);
}

START_TEST(test_scenario_23_gaps_and_tallies_per_event_type_and_medium)
{
	uint64_t t[STATEBUS_CTR_COUNT_] = {0};
	struct statebus_stream st;
	sbd_seq_init(&st, 1);
	const struct sbd_kv_event seq2[] = {
		{.type = SBD_EV_STORED, .medium = SBD_MEDIUM_GPU},
		{.type = SBD_EV_STORED, .medium = SBD_MEDIUM_GPU},
		{.type = SBD_EV_REMOVED, .medium = SBD_MEDIUM_CPU_PINNED},
	};
	const struct sbd_kv_event seq1[] = {{.type = SBD_EV_STORED, .medium = SBD_MEDIUM_DISK}};
	const struct sbd_kv_event seq5[] = {
		{.type = SBD_EV_STORED, .medium = SBD_MEDIUM_EXTERNAL},
		{.type = SBD_EV_REMOVED, .medium = SBD_MEDIUM_ABSENT},
		{.type = SBD_EV_STORED, .medium = SBD_MEDIUM_CPU},
		{.type = SBD_EV_STORED, .medium = SBD_MEDIUM_UNKNOWN},
		{.type = SBD_EV_REMOVED, .medium = SBD_MEDIUM_DISK},
		{.type = SBD_EV_CLEARED, .medium = SBD_MEDIUM_GPU}, /* no medium on the wire */
	};
	tally_batch(&st, 2, seq2, 3, t);
	tally_batch(&st, 1, seq1, 1, t);
	tally_batch(&st, 5, seq5, 6, t);
	ck_assert_int_eq(st.cursor, 5);
	ck_assert_uint_eq(st.missing, 2); /* batches_lost */
	ck_assert_uint_eq(st.gaps, 1);
	ck_assert_uint_eq(st.skipped, 1);
	ck_assert_uint_eq(st.batches, 2);
	ck_assert(st.partial); /* first seq seen was 2 */
	unsigned S = STATEBUS_TALLY_STORED, R = STATEBUS_TALLY_REMOVED, C = STATEBUS_TALLY_CLEARED;
	const struct { unsigned type, medium; uint64_t n; } want[] = {
		{S, STATEBUS_TALLY_GPU, 2},      {S, STATEBUS_TALLY_CPU_PINNED, 1},
		{S, STATEBUS_TALLY_DISK, 0},     {S, STATEBUS_TALLY_EXTERNAL, 1},
		{S, STATEBUS_TALLY_UNTAGGED, 0}, {S, STATEBUS_TALLY_UNKNOWN, 1},
		{R, STATEBUS_TALLY_GPU, 0},      {R, STATEBUS_TALLY_CPU_PINNED, 1},
		{R, STATEBUS_TALLY_DISK, 1},     {R, STATEBUS_TALLY_EXTERNAL, 0},
		{R, STATEBUS_TALLY_UNTAGGED, 1}, {R, STATEBUS_TALLY_UNKNOWN, 0},
		{C, STATEBUS_TALLY_UNTAGGED, 1}, {C, STATEBUS_TALLY_GPU, 0},
	};
	uint64_t sum = 0;
	for (unsigned i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		ck_assert_uint_eq(t[statebus_kv_tally_counter(want[i].type, want[i].medium)], want[i].n);
	for (unsigned i = 0; i < STATEBUS_CTR_COUNT_; i++)
		sum += t[i];
	ck_assert_uint_eq(sum, 9); /* the 3 + 6 events applied; seq 1's never */
	/* names and labels in the region's counters block */
	ck_assert_str_eq(statebus_counter_name(statebus_kv_tally_counter(S, STATEBUS_TALLY_GPU)),
			 "switchyard_kv_event_stored_gpu_total");
	ck_assert_str_eq(statebus_counter_name(statebus_kv_tally_counter(C, STATEBUS_TALLY_UNKNOWN)),
			 "switchyard_kv_event_cleared_unknown_total");
	ck_assert_str_eq(statebus_counter_name(STATEBUS_CTR_KV_PEER_RECONNECTS),
			 "switchyard_kv_event_peer_reconnects_total");
	const char *ev, *md;
	ck_assert(statebus_kv_tally_labels(statebus_kv_tally_counter(R, STATEBUS_TALLY_CPU_PINNED),
					   &ev, &md));
	ck_assert_str_eq(ev, "removed");
	ck_assert_str_eq(md, "CPU_PINNED");
	ck_assert(!statebus_kv_tally_labels(STATEBUS_CTR_KV_PEER_RECONNECTS, &ev, &md));
	ck_assert_uint_le(STATEBUS_CTR_COUNT_, STATEBUS_COUNTERS_MAX);
}
END_TEST


START_TEST(test_vllm_models_takes_the_base_model_and_counts_adapters)
{
	const char body[] = "{\"object\":\"list\",\"data\":["
			    "{\"id\":\"sql-lora\",\"object\":\"model\",\"parent\":\"llama\"},"
			    "{\"id\":\"llama\",\"object\":\"model\",\"parent\":null},"
			    "{\"id\":\"chat-lora\",\"parent\":\"llama\"}]}";
	char m[STATEBUS_MODEL_MAX];
	uint32_t n;
	ck_assert_int_eq(sbd_vllm_models_parse(body, strlen(body), m, sizeof(m), &n, NULL, 0), SY_OK);
	ck_assert_str_eq(m, "llama");
	ck_assert_uint_eq(n, 2);
	char ad[STATEBUS_LORA_LIST_MAX];
	ck_assert_int_eq(sbd_vllm_models_parse(body, strlen(body), m, sizeof(m), &n, ad, sizeof(ad)),
			 SY_OK);
	ck_assert_int_eq(memcmp(ad, "sql-lora\0chat-lora\0\0", 20), 0);
	/* room for one name only: the second is left out, the list still ends */
	ck_assert_int_eq(sbd_vllm_models_parse(body, strlen(body), m, sizeof(m), &n, ad, 12), SY_OK);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(memcmp(ad, "sql-lora\0\0", 10), 0);
	const char bare[] = "{\"data\":[{\"id\":\"only\"}]}";
	ck_assert_int_eq(sbd_vllm_models_parse(bare, strlen(bare), m, sizeof(m), &n, NULL, 0), SY_OK);
	ck_assert_str_eq(m, "only");
	ck_assert_int_eq(sbd_vllm_models_parse("{}", 2, m, sizeof(m), &n, NULL, 0), SY_EMALFORMED);
	ck_assert_int_eq(sbd_vllm_models_parse("[1", 2, m, sizeof(m), &n, NULL, 0), SY_EMALFORMED);
	ck_assert_int_eq(sbd_vllm_models_parse(bare, strlen(bare), m, 4, &n, NULL, 0), SY_EMALFORMED);
	char v[32];
	ck_assert_int_eq(sbd_vllm_version_parse("{\"version\":\"0.11.0\"}", 20, v, sizeof(v)), SY_OK);
	ck_assert_str_eq(v, "0.11.0");
	ck_assert_int_eq(sbd_vllm_version_parse("{\"version\":7}", 13, v, sizeof(v)), SY_EMALFORMED);
}
END_TEST

static const char metrics_body[] =
	"# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
	"# TYPE vllm:num_requests_running gauge\n"
	"vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3.0\n"
	"vllm:num_requests_running{engine=\"1\",model_name=\"m\"} 1.0\n"
	"vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 2.0\n"
	"vllm:num_requests_waiting{engine=\"1\",model_name=\"m\"} 0.0\n"
	"vllm:gpu_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.9\n"
	"vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.25\n"
	"vllm:gpu_cache_usage_perc{engine=\"1\",model_name=\"m\"} 0.5\n"
	"vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} 4294967400.0\n"
	"vllm:generation_tokens_total{engine=\"0\",model_name=\"m\"} 17.0\n"
	"vllm:num_requests_running_extra{engine=\"0\"} 99\n"
	"vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} oops\n"
	"vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"1000\"} 1.0\n";

START_TEST(test_metrics_scrape_reads_vllm_gauges_per_rank)
{
	struct sbd_vllm_metrics m;
	ck_assert_int_eq(sbd_vllm_metrics_parse(metrics_body, strlen(metrics_body), &m), SY_OK);
	ck_assert_uint_eq(m.n_ranks, 2);
	ck_assert_uint_eq(m.bad_lines, 1);
	ck_assert_uint_eq(m.block_size, 16);
	ck_assert_uint_eq(m.num_gpu_blocks, 1000);
	struct statebus_load_report r;
	ck_assert(sbd_vllm_metrics_report(&m, 0, 42, &r));
	ck_assert_uint_eq(r.flags, STATEBUS_LOAD_HAS_REPORT | STATEBUS_LOAD_SCRAPED);
	ck_assert_uint_eq(r.num_running_reqs, 3);
	ck_assert_uint_eq(r.num_waiting_reqs, 2);
	ck_assert_uint_eq(r.scraped.kv_usage_ppm, 250000); /* kv_cache_usage_perc wins */
	ck_assert_uint_eq(r.max_total_num_tokens, 16000);
	ck_assert_uint_eq(r.num_tokens, 4000);
	ck_assert_uint_eq(r.scraped.prompt_tokens, 104); /* low 32 bits */
	ck_assert_uint_eq(r.scraped.generation_tokens, 17);
	ck_assert_uint_eq(r.recv_mono_ns, 42);
	ck_assert(sbd_vllm_metrics_report(&m, 1, 42, &r));
	ck_assert_uint_eq(r.scraped.kv_usage_ppm, 500000); /* older name alone */
	ck_assert(!sbd_vllm_metrics_report(&m, 2, 42, &r)); /* no such rank: unknown */
}
END_TEST

START_TEST(test_metrics_scrape_without_vllm_gauges_is_unknown_never_zero)
{
	struct sbd_vllm_metrics m;
	const char other[] = "# nothing\nprocess_cpu_seconds_total 1.5\n";
	ck_assert_int_eq(sbd_vllm_metrics_parse(other, strlen(other), &m), SY_EMALFORMED);
	const char half[] = "vllm:num_requests_running 2\n";  /* no waiting, no engine label */
	ck_assert_int_eq(sbd_vllm_metrics_parse(half, strlen(half), &m), SY_OK);
	struct statebus_load_report r;
	ck_assert(!sbd_vllm_metrics_report(&m, 0, 1, &r));
	const char broken[] = "vllm:num_requests_running{engine=\"0\" 1\nvllm:num_requests_waiting{engine=\"x\"} 1\n";
	ck_assert_int_eq(sbd_vllm_metrics_parse(broken, strlen(broken), &m), SY_EMALFORMED);
	ck_assert_uint_eq(m.bad_lines, 2);
	ck_assert_int_eq(sbd_vllm_metrics_parse("", 0, &m), SY_EMALFORMED);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("ingest");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_throughput_is_derived_between_the_two_latest_v3_samples);
	tcase_add_test(tc, test_basic_sample_has_no_v3_view_and_breaks_the_derivation);
	tcase_add_test(tc, test_medium_to_tiers);
	tcase_add_test(tc, test_server_info_facts_wildcard_host_role_bigram);
	tcase_add_test(tc, test_server_info_without_kv_events_and_nested_server_args);
	tcase_add_test(tc, test_server_info_out_of_range_dp_and_long_strings_are_invalid);
	tcase_add_test(tc, test_server_info_bad_block_size_is_invalid);
	tcase_add_test(tc, test_server_info_model_name);
	tcase_add_test(tc, test_vllm_models_takes_the_base_model_and_counts_adapters);
	tcase_add_test(tc, test_metrics_scrape_reads_vllm_gauges_per_rank);
	tcase_add_test(tc, test_metrics_scrape_without_vllm_gauges_is_unknown_never_zero);
	tcase_add_test(tc, test_scenario_23_gaps_and_tallies_per_event_type_and_medium);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sy_check_run(suite());
}
