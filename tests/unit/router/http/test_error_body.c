/* test_error_body.c — the router's error bodies and code table
 * (router/http/error_body.c; DESIGN.md §9, reference/policy-defaults.md §8). */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>

#include "router/http/error_body.h"
#include "tests/unit/sy_check.h"

/* The body of an error value with `status`, `code`, `msg` and the
 * rejections `workers[i]`/`limits[i]` (n of them). */
static json_t *body_n(int status, const char *code, const char *msg, size_t n,
		      const char *const *workers, const char *const *limits)
{
	struct router_error re;
	router_error_clear(&re);
	router_error_set(&re, status, code, -1, "%s", msg);
	for (size_t i = 0; i < n; i++)
		router_error_add_rejection(&re, workers[i], limits[i]);
	struct rt_buf b = {0};
	rt_error_body(&b, &re);
	ck_assert(!b.oom);
	ck_assert_int_eq(b.p[b.n - 1], '\n');
	json_error_t e;
	json_t *j = json_loadb(b.p, b.n, JSON_REJECT_DUPLICATES, &e);
	ck_assert_msg(j != NULL, "not JSON: %s (%s)", b.p, e.text);
	rt_buf_free(&b);
	json_t *err = json_object_get(j, "error");
	ck_assert(json_is_object(err));
	ck_assert_str_eq(json_string_value(json_object_get(err, "code")), code);
	ck_assert_str_eq(json_string_value(json_object_get(err, "message")), msg);
	return j;
}

static json_t *body(int status, const char *code, const char *msg)
{
	return body_n(status, code, msg, 0, NULL, NULL);
}

START_TEST(test_codes_table_matches_design_section_9)
{
	static const struct {
		const char *code;
		int status;
	} want[] = {
		{"bad_request", 400},          {"no_matching_bucket", 400},
		{"sampling_contract_violation", 400}, {"model_not_found", 404},
		{"payload_too_large", 413},    {"no_healthy_workers", 503},
		{"no_prefill_workers_available", 503}, {"no_decode_workers_available", 503},
		{"policy_selection_failed", 503}, {"breaker_open", 503},
		{"service_overloaded", 503},   {"upstream_unreachable", 502},
		{"upstream_body_incomplete", 502}, {"upstream_invalid_response", 502},
		{"upstream_timeout", 504},
		{"internal_error", 500},       {"not_found", 404},
		{"method_not_allowed", 405},   {"unauthorized", 401},
		{"draining", 503},            {"worker_not_found", 404},
		{"worker_exists", 409},
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		ck_assert_msg(rt_error_code_status(want[i].code) == want[i].status, "%s",
			      want[i].code);
	ck_assert_int_eq(rt_error_code_status("no_such_code"), 0);
	ck_assert_int_eq(rt_error_code_status(NULL), 0);
}
END_TEST

START_TEST(test_type_follows_status)
{
	json_t *j = body(404, "model_not_found", "model \"x\" is not served");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "error"), "type")),
			 "invalid_request_error");
	json_decref(j);
	j = body(503, "no_healthy_workers", "none");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "error"), "type")),
			 "server_error");
	ck_assert_ptr_null(json_object_get(json_object_get(j, "error"), "details"));
	json_decref(j);
}
END_TEST

START_TEST(test_message_escaping_keeps_json_valid)
{
	json_t *j = body(400, "bad_request", "q\"b\\s\n\r\t\x01\x1f\x7f é");
	json_decref(j);
}
END_TEST

START_TEST(test_details_list_every_rejection_in_order)
{
	static const char *const workers[] = {"http://a:1", "http://b\"q:2"};
	static const char *const limits[] = {"max_running_requests", "max_kv_tokens"};
	json_t *j = body_n(503, "policy_selection_failed", "every pick was rejected", 2, workers,
			   limits);
	json_t *d = json_object_get(json_object_get(j, "error"), "details");
	ck_assert(json_is_array(d));
	ck_assert_int_eq(json_array_size(d), 2);
	for (size_t i = 0; i < 2; i++) {
		ck_assert_str_eq(json_string_value(json_object_get(json_array_get(d, i), "worker")),
				 workers[i]);
		ck_assert_str_eq(json_string_value(json_object_get(json_array_get(d, i), "limit")),
				 limits[i]);
	}
	json_decref(j);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("error_body");
	TCase *tc = tcase_create("bodies");
	tcase_add_test(tc, test_codes_table_matches_design_section_9);
	tcase_add_test(tc, test_type_follows_status);
	tcase_add_test(tc, test_message_escaping_keeps_json_valid);
	tcase_add_test(tc, test_details_list_every_rejection_in_order);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sy_check_run(suite());
}
