/* test_ingest.c — LoadStat → load record with derived throughput
 * (sglang-wire.md §13), medium → tiers (§7), /server_info facts (§10). */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "common/errors.h"
#include "ingest.h"
#include "statebus.h"

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
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
