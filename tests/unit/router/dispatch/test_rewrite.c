/* test_pd.c — PD bootstrap splicing (router/dispatch/rewrite.c, sglang-wire.md §15):
 * client bootstrap fields replaced, everything else kept byte for byte,
 * arrays of fresh rooms for n > 1 and batched inputs, rooms masked to i64,
 * output valid JSON. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "router/dispatch/rewrite.h"
#include "tests/unit/sy_check.h"

static h2o_mem_pool_t pool;

static void setup(void) { h2o_mem_init_pool(&pool); }
static void teardown(void) { h2o_mem_clear_pool(&pool); }

static json_t *splice(const char *body, const char *host, uint16_t port, unsigned batch)
{
	h2o_iovec_t out;
	ck_assert_int_eq(rt_pd_splice(&pool, h2o_iovec_init(body, strlen(body)), host, port, batch,
				      &out), 0);
	json_error_t e;
	json_t *j = json_loadb(out.base, out.len, JSON_REJECT_DUPLICATES, &e);
	ck_assert_msg(j != NULL, "not JSON: %.*s (%s)", (int)out.len, out.base, e.text);
	ck_assert(json_is_object(j));
	return j;
}

static unsigned batch_of(const char *body, enum route route)
{
	return rt_pd_batch_size(h2o_iovec_init(body, strlen(body)), route);
}

START_TEST(test_client_bootstrap_fields_are_replaced_once)
{
	json_t *j = splice("{\"model\":\"m\",\"bootstrap_room\":5,\"messages\":[],"
			   "\"bootstrap_host\":\"evil\",\"bootstrap_port\":1}",
			   "10.0.0.1", 8998, 1);
	ck_assert_str_eq(json_string_value(json_object_get(j, "bootstrap_host")), "10.0.0.1");
	ck_assert_int_eq(json_integer_value(json_object_get(j, "bootstrap_port")), 8998);
	json_t *room = json_object_get(j, "bootstrap_room");
	ck_assert(json_is_integer(room));
	ck_assert_int_ge(json_integer_value(room), 0);
	ck_assert_str_eq(json_string_value(json_object_get(j, "model")), "m");
	ck_assert_int_eq(json_object_size(j), 5); /* duplicates rejected by the parse */
	json_decref(j);
}
END_TEST

START_TEST(test_untouched_members_are_copied_byte_for_byte_in_order)
{
	const char *body = "{ \"a\" : 1.50e3 , \"s\":\"x\\u0041\\\"}\" ,\"o\":{\"bootstrap_room\":7}}";
	h2o_iovec_t out;
	ck_assert_int_eq(rt_pd_splice(&pool, h2o_iovec_init(body, strlen(body)), "h", 0, 1, &out), 0);
	const char *want = "{\"a\":1.50e3,\"s\":\"x\\u0041\\\"}\",\"o\":{\"bootstrap_room\":7},"
			   "\"bootstrap_host\":\"h\",\"bootstrap_port\":null,\"bootstrap_room\":";
	ck_assert_msg(out.len > strlen(want) && memcmp(out.base, want, strlen(want)) == 0,
		      "got %.*s", (int)out.len, out.base);
	ck_assert_int_eq(out.base[out.len - 1], '}');
}
END_TEST

START_TEST(test_port_zero_is_null_and_host_is_escaped)
{
	json_t *j = splice("{}", "we\"ird\\host", 0, 1);
	ck_assert(json_is_null(json_object_get(j, "bootstrap_port")));
	ck_assert_str_eq(json_string_value(json_object_get(j, "bootstrap_host")), "we\"ird\\host");
	ck_assert_int_eq(json_object_size(j), 3);
	json_decref(j);
}
END_TEST

START_TEST(test_batch_gives_arrays_of_fresh_rooms)
{
	json_t *j = splice("{\"model\":\"m\",\"n\":4,\"bootstrap_room\":[1,1,1,1]}", "h", 8998, 4);
	static const char *const keys[3] = {"bootstrap_host", "bootstrap_port", "bootstrap_room"};
	for (int k = 0; k < 3; k++) {
		json_t *a = json_object_get(j, keys[k]);
		ck_assert(json_is_array(a));
		ck_assert_int_eq(json_array_size(a), 4);
	}
	json_t *rooms = json_object_get(j, "bootstrap_room");
	for (size_t i = 0; i < 4; i++)
		for (size_t k = i + 1; k < 4; k++)
			ck_assert(json_integer_value(json_array_get(rooms, i)) !=
				  json_integer_value(json_array_get(rooms, k)));
	ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(j, "bootstrap_port"), 3)),
			 8998);
	json_decref(j);
}
END_TEST

START_TEST(test_rooms_are_masked_to_i64)
{
	uint64_t or_all = 0;
	for (int i = 0; i < 20000; i++) {
		uint64_t r = rt_pd_room();
		ck_assert_uint_le(r, (uint64_t)INT64_MAX);
		or_all |= r;
	}
	/* Random: bit 62 shows up, bit 63 never does. */
	ck_assert(or_all & (1ull << 62));
	ck_assert(!(or_all & (1ull << 63)));
}
END_TEST

START_TEST(test_batch_size_n_and_batched_inputs)
{
	ck_assert_uint_eq(batch_of("{\"n\":3,\"messages\":[]}", ROUTE_CHAT_COMPLETIONS), 3);
	ck_assert_uint_eq(batch_of("{\"n\":1}", ROUTE_CHAT_COMPLETIONS), 1);
	ck_assert_uint_eq(batch_of("{\"n\":1025}", ROUTE_CHAT_COMPLETIONS), 1);
	ck_assert_uint_eq(batch_of("{\"prompt\":[\"a\",\"b\"]}", ROUTE_COMPLETIONS), 2);
	ck_assert_uint_eq(batch_of("{\"prompt\":[[1,2],[3],[4]]}", ROUTE_COMPLETIONS), 3);
	ck_assert_uint_eq(batch_of("{\"prompt\":[1,2,3]}", ROUTE_COMPLETIONS), 1);
	ck_assert_uint_eq(batch_of("{\"prompt\":\"one\"}", ROUTE_COMPLETIONS), 1);
	ck_assert_uint_eq(batch_of("{\"text\":[\"a\",\"b\"]}", ROUTE_GENERATE), 2);
	ck_assert_uint_eq(batch_of("{\"input_ids\":[[1],[2]]}", ROUTE_GENERATE), 2);
	ck_assert_uint_eq(batch_of("{\"input_ids\":[1,2]}", ROUTE_GENERATE), 1);
	ck_assert_uint_eq(batch_of("{\"n\":4,\"input_ids\":[1]}", ROUTE_GENERATE), 1);
	/* a prompt batch wins over n (SGLang: one room per prompt) */
	ck_assert_uint_eq(batch_of("{\"n\":2,\"prompt\":[\"a\",\"b\",\"c\"]}", ROUTE_COMPLETIONS), 3);
}
END_TEST

START_TEST(test_not_an_object_is_refused)
{
	h2o_iovec_t out;
	ck_assert_int_eq(rt_pd_splice(&pool, h2o_iovec_init(H2O_STRLIT("[1,2]")), "h", 1, 1, &out), -1);
}
END_TEST

/* A body of `n` members "k0".."k{n-1}" plus `tail` (without braces). */
static char *many_members(int n, const char *tail)
{
	size_t cap = (size_t)n * 16 + strlen(tail) + 8;
	char *s = malloc(cap);
	size_t o = 0;
	s[o++] = '{';
	for (int i = 0; i < n; i++)
		o += (size_t)snprintf(s + o, cap - o, "\"k%d\":%d,", i, i);
	o += (size_t)snprintf(s + o, cap - o, "%s}", tail);
	return s;
}

START_TEST(test_splice_has_no_member_limit)
{
	char *body = many_members(300, "\"bootstrap_room\":1");
	json_t *j = splice(body, "h", 1, 1);
	ck_assert_int_eq(json_object_size(j), 303);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "k299")), 299);
	json_decref(j);
	free(body);
}
END_TEST

START_TEST(test_sampling_override_cannot_be_bypassed_with_many_members)
{
	/* Found by fuzz_pd: past 256 members the scanner gave up and the
	 * override was silently not applied. */
	json_t *ov = json_loads("{\"temperature\":0}", 0, NULL);
	char *body = many_members(300, "\"temperature\":1.5");
	h2o_iovec_t out;
	const char *param = NULL;
	ck_assert_int_eq(rt_sampling_override(&pool, h2o_iovec_init(body, strlen(body)),
					      ROUTE_CHAT_COMPLETIONS, ov, true, &out, &param), -2);
	ck_assert_str_eq(param, "temperature");
	ck_assert_int_eq(rt_sampling_override(&pool, h2o_iovec_init(body, strlen(body)),
					      ROUTE_CHAT_COMPLETIONS, ov, false, &out, &param), 0);
	json_t *j = json_loadb(out.base, out.len, JSON_REJECT_DUPLICATES, NULL);
	ck_assert_ptr_nonnull(j);
	ck_assert(json_real_value(json_object_get(j, "temperature")) == 0.0 ||
		  json_integer_value(json_object_get(j, "temperature")) == 0);
	ck_assert_int_eq(json_object_size(j), 301);
	json_decref(j);
	free(body);
	/* /generate: inside sampling_params, added when missing. */
	const char *g = "{\"text\":\"x\"}";
	ck_assert_int_eq(rt_sampling_override(&pool, h2o_iovec_init(g, strlen(g)), ROUTE_GENERATE,
					      ov, true, &out, &param), 0);
	ck_assert(out.len == strlen("{\"text\":\"x\",\"sampling_params\":{\"temperature\":0}}") &&
		  memcmp(out.base, "{\"text\":\"x\",\"sampling_params\":{\"temperature\":0}}",
			 out.len) == 0);
	json_decref(ov);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("pd");
	TCase *tc = tcase_create("splice");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_client_bootstrap_fields_are_replaced_once);
	tcase_add_test(tc, test_untouched_members_are_copied_byte_for_byte_in_order);
	tcase_add_test(tc, test_port_zero_is_null_and_host_is_escaped);
	tcase_add_test(tc, test_batch_gives_arrays_of_fresh_rooms);
	tcase_add_test(tc, test_rooms_are_masked_to_i64);
	tcase_add_test(tc, test_batch_size_n_and_batched_inputs);
	tcase_add_test(tc, test_not_an_object_is_refused);
	tcase_add_test(tc, test_splice_has_no_member_limit);
	tcase_add_test(tc, test_sampling_override_cannot_be_bypassed_with_many_members);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sy_check_run(suite());
}
