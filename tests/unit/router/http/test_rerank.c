/* test_rerank.c — SMG's rerank request checks and response shape
 * (router/http/rerank.h). */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "router/http/rerank.h"
#include "tests/unit/sy_check.h"

static int parse(const char *body, bool full, struct rt_rerank *r, char *err)
{
	return rt_rerank_parse(body, strlen(body), full, r, err, 256);
}

/* Wraps `engine` under `r` for model "m" at time 1700000000 → the parsed
 * response (NULL: refused, reason in err). */
static json_t *wrap(const struct rt_rerank *r, const char *engine, char *err)
{
	struct rt_buf b = {0};
	json_t *j = NULL;
	if (rt_rerank_wrap(r, "m", 1, engine, strlen(engine), 1700000000, &b, err, 256) == 0) {
		json_error_t je;
		j = json_loadb(b.p, b.n, 0, &je);
		ck_assert_msg(j != NULL, "wrapped body is not JSON: %s (%s)", b.p, je.text);
	}
	rt_buf_free(&b);
	return j;
}

static const char *const ENGINE =
	"[{\"score\":0.9,\"document\":\"giant panda\",\"index\":1,\"meta_info\":{\"id\":\"x\"}},"
	"{\"score\":0.5,\"document\":\"a bear\",\"index\":2,\"extra\":true},"
	"{\"score\":0,\"document\":\"hi\",\"index\":0}]";

START_TEST(test_full_form_reads_top_k_return_documents_rid)
{
	struct rt_rerank r;
	char err[256];
	ck_assert_int_eq(parse("{\"query\":\"panda\",\"documents\":[\"a\",\"b\"],\"top_k\":2,"
			       "\"return_documents\":false,\"rid\":[\"r1\",\"r2\"],\"user\":\"u\"}",
			       true, &r, err), 0);
	ck_assert(r.has_top_k);
	ck_assert_uint_eq(r.top_k, 2);
	ck_assert(!r.return_documents);
	ck_assert_str_eq(r.rid, "[\"r1\",\"r2\"]");
	free(r.rid);
	ck_assert_int_eq(parse("{\"query\":\"q\",\"documents\":[\"a\"],\"top_k\":null,"
			       "\"return_documents\":null,\"rid\":null}", true, &r, err), 0);
	ck_assert(!r.has_top_k && r.return_documents && r.rid == NULL);
}
END_TEST

START_TEST(test_v1_form_reads_only_query_and_documents)
{
	struct rt_rerank r;
	char err[256];
	ck_assert_int_eq(parse("{\"query\":\"q\",\"documents\":[\"a\"],\"top_k\":1,"
			       "\"return_documents\":false,\"rid\":\"x\"}", false, &r, err), 0);
	ck_assert(!r.has_top_k && r.return_documents && r.rid == NULL);
	/* nor are their types checked, as SMG's V1RerankReqInput ignores them */
	ck_assert_int_eq(parse("{\"query\":\"q\",\"documents\":[\"a\"],\"top_k\":\"all\"}", false,
			       &r, err), 0);
}
END_TEST

START_TEST(test_bad_requests_name_the_member)
{
	static const struct {
		const char *body, *member;
		bool full;
	} bad[] = {
		{"{\"documents\":[\"a\"]}", "query:", false},
		{"{\"query\":\"  \\t\",\"documents\":[\"a\"]}", "query: must not be empty", false},
		{"{\"query\":7,\"documents\":[\"a\"]}", "query:", true},
		{"{\"query\":\"q\"}", "documents:", false},
		{"{\"query\":\"q\",\"documents\":[]}", "documents:", true},
		{"{\"query\":\"q\",\"documents\":\"a\"}", "documents:", true},
		{"{\"query\":\"q\",\"documents\":[\"a\"],\"top_k\":0}", "top_k:", true},
		{"{\"query\":\"q\",\"documents\":[\"a\"],\"top_k\":1.5}", "top_k:", true},
		{"{\"query\":\"q\",\"documents\":[\"a\"],\"return_documents\":1}", "return_documents:", true},
		{"{\"query\":\"q\",\"documents\":[\"a\"],\"rid\":[\"a\",1]}", "rid:", true},
		{"[1]", "expected a JSON object", true},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct rt_rerank r;
		char err[256] = "";
		ck_assert_msg(parse(bad[i].body, bad[i].full, &r, err) == -1, "accepted %s", bad[i].body);
		ck_assert_msg(strncmp(err, bad[i].member, strlen(bad[i].member)) == 0,
			      "%s: error '%s' does not start with '%s'", bad[i].body, err, bad[i].member);
		ck_assert(r.rid == NULL);
	}
}
END_TEST

START_TEST(test_wrap_keeps_order_and_the_four_members)
{
	struct rt_rerank r = {.return_documents = true};
	char err[256];
	json_t *j = wrap(&r, ENGINE, err);
	ck_assert(j != NULL);
	ck_assert_str_eq(json_string_value(json_object_get(j, "object")), "rerank");
	ck_assert_str_eq(json_string_value(json_object_get(j, "model")), "m");
	ck_assert(json_is_null(json_object_get(j, "usage")));
	ck_assert(json_is_null(json_object_get(j, "id")));
	ck_assert_int_eq(json_integer_value(json_object_get(j, "created")), 1700000000);
	json_t *res = json_object_get(j, "results");
	ck_assert_int_eq(json_array_size(res), 3);
	static const int order[] = {1, 2, 0};
	static const char *const docs[] = {"giant panda", "a bear", "hi"};
	for (size_t i = 0; i < 3; i++) {
		json_t *it = json_array_get(res, i);
		ck_assert_int_eq(json_integer_value(json_object_get(it, "index")), order[i]);
		ck_assert_str_eq(json_string_value(json_object_get(it, "document")), docs[i]);
		ck_assert(json_object_get(it, "extra") == NULL); /* only SMG's members */
	}
	json_t *first = json_array_get(res, 0);
	ck_assert(json_real_value(json_object_get(first, "score")) == 0.9);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(first, "meta_info"), "id")),
			 "x");
	ck_assert_int_eq(json_object_size(json_array_get(res, 1)), 3); /* no meta_info */
	json_decref(j);
}
END_TEST

START_TEST(test_wrap_applies_top_k_return_documents_and_rid)
{
	struct rt_rerank r = {.has_top_k = true, .top_k = 2, .return_documents = false,
			      .rid = "\"req-7\""};
	char err[256];
	json_t *j = wrap(&r, ENGINE, err);
	ck_assert(j != NULL);
	json_t *res = json_object_get(j, "results");
	ck_assert_int_eq(json_array_size(res), 2);
	for (size_t i = 0; i < 2; i++)
		ck_assert(json_object_get(json_array_get(res, i), "document") == NULL);
	ck_assert_str_eq(json_string_value(json_object_get(j, "id")), "req-7");
	json_decref(j);
	r.top_k = 10; /* more than the engine returned: all of them */
	j = wrap(&r, ENGINE, err);
	ck_assert_int_eq(json_array_size(json_object_get(j, "results")), 3);
	json_decref(j);
	/* an empty list stays an empty list */
	j = wrap(&r, "[]", err);
	ck_assert_int_eq(json_array_size(json_object_get(j, "results")), 0);
	json_decref(j);
}
END_TEST

START_TEST(test_wrap_refuses_what_is_not_a_result_list)
{
	static const char *const bad[] = {
		"", "{\"results\":[]}", "[1]", "[{\"index\":0}]", "[{\"score\":\"high\",\"index\":0}]",
		"[{\"score\":1,\"index\":-1}]", "[{\"score\":1,\"index\":0.5}]",
		"[{\"score\":1,\"index\":0,\"document\":5}]",
		/* a bad result past top_k is refused too: the whole list is checked */
		"[{\"score\":1,\"index\":0},{\"score\":1}]",
		"[{\"score\":1,\"index\":0}", /* cut */
	};
	struct rt_rerank r = {.has_top_k = true, .top_k = 1, .return_documents = true};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char err[256] = "";
		json_t *j = wrap(&r, bad[i], err);
		ck_assert_msg(j == NULL, "wrapped %s", bad[i]);
		ck_assert_msg(strstr(err, "rerank") != NULL, "%s: %s", bad[i], err);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("rerank");
	TCase *tc = tcase_create("rerank");
	tcase_add_test(tc, test_full_form_reads_top_k_return_documents_rid);
	tcase_add_test(tc, test_v1_form_reads_only_query_and_documents);
	tcase_add_test(tc, test_bad_requests_name_the_member);
	tcase_add_test(tc, test_wrap_keeps_order_and_the_four_members);
	tcase_add_test(tc, test_wrap_applies_top_k_return_documents_and_rid);
	tcase_add_test(tc, test_wrap_refuses_what_is_not_a_result_list);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sy_check_run(suite());
}
