/* test_body_rewrite.c — the one body rewrite (router/dispatch/body_rewrite.c)
 * over preparation's member records: PD bootstrap fields (sglang-wire.md
 * §15) replace the client's, the sampling override (policy-defaults.md §7)
 * is checked and applied, input ids are appended; client members spelled
 * with JSON escapes are treated as their plain spelling; output valid JSON
 * without duplicate members, within the bound. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "router/dispatch/body_rewrite.h"
#include "tests/unit/sy_check.h"

#define MSG "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]"

static struct sy_tokenizer *tok;
static struct router_prepare_opts opts;
static struct prepare_buf buf;
static struct pick_request req;
static struct sampling_override *ov;
static char *outs[8];
static int n_outs;

static void setup(void)
{
	char e[128];
	ck_assert_int_eq(sy_tokenizer_open("bytes", NULL, &tok, e, sizeof(e)), SY_OK);
	opts = (struct router_prepare_opts){.tokenizer = tok, .default_model = "m"};
	prepare_buf_init(&buf);
	ov = NULL;
	n_outs = 0;
}

static void teardown(void)
{
	for (int i = 0; i < n_outs; i++)
		free(outs[i]);
	prepare_buf_free(&buf);
	sampling_override_free(ov);
	sy_tokenizer_close(tok);
}

static void use_override(const char *json, bool reject)
{
	char why[128];
	sampling_override_free(ov);
	ck_assert_int_eq(sampling_override_parse(json, reject, &ov, why, sizeof(why)), SY_OK);
	opts.sampling = ov;
}

static int prep(enum route r, const char *body)
{
	struct router_error err;
	return router_prepare(&opts, r, body, strlen(body), NULL, NULL, &buf, &req, &err);
}

/* Prepares `body` (must succeed) and builds it with `rw`; the result is
 * NUL-terminated and checked against the bound. */
static const char *rewrite(enum route r, const char *body, struct body_rewrite rw)
{
	ck_assert_int_eq(prep(r, body), SY_OK);
	size_t bound = body_rewrite_bound(&rw, &req, strlen(body));
	char *out = malloc(bound + 1);
	memset(out, 0x5a, bound + 1);
	size_t n = body_rewrite_build(&rw, body, &req, out);
	ck_assert_uint_le(n, bound);
	ck_assert_int_eq(out[bound], 0x5a);
	out[n] = '\0';
	ck_assert_int_lt(n_outs, 8);
	outs[n_outs++] = out;
	return out;
}

/* Parses `s`, refusing duplicate members. */
static json_t *parsed(const char *s)
{
	json_error_t e;
	json_t *j = json_loads(s, JSON_REJECT_DUPLICATES, &e);
	ck_assert_msg(j != NULL, "not JSON without duplicates: %s (%s)", s, e.text);
	ck_assert(json_is_object(j));
	return j;
}

static struct body_rewrite pd(const char *host, uint16_t port)
{
	return (struct body_rewrite){.pd_host = host, .pd_host_len = strlen(host), .pd_port = port};
}

static unsigned batch_of(const char *body, enum route r)
{
	ck_assert_int_eq(prep(r, body), SY_OK);
	return body_rewrite_batch(&req);
}

START_TEST(test_client_bootstrap_fields_are_replaced_once)
{
	json_t *j = parsed(rewrite(ROUTE_CHAT_COMPLETIONS,
				   "{\"model\":\"m\",\"bootstrap_room\":5," MSG ","
				   "\"bootstrap_host\":\"evil\",\"bootstrap_port\":1}",
				   pd("10.0.0.1", 8998)));
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
	const char *out = rewrite(ROUTE_CHAT_COMPLETIONS,
				  "{ \"a\" : 1.50e3 , \"s\":\"x\\u0041\\\"}\" ,\"o\":{\"bootstrap_room\":7},"
				  MSG " }  ",
				  pd("h", 0));
	const char *want = "{\"a\":1.50e3,\"s\":\"x\\u0041\\\"}\",\"o\":{\"bootstrap_room\":7}," MSG
			   ",\"bootstrap_host\":\"h\",\"bootstrap_port\":null,\"bootstrap_room\":";
	ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "got %s", out);
	ck_assert_int_eq(out[strlen(out) - 1], '}');
}
END_TEST

START_TEST(test_port_zero_is_null_and_host_is_escaped)
{
	json_t *j = parsed(rewrite(ROUTE_GENERATE, "{\"text\":\"x\"}", pd("we\"ird\\host", 0)));
	ck_assert(json_is_null(json_object_get(j, "bootstrap_port")));
	ck_assert_str_eq(json_string_value(json_object_get(j, "bootstrap_host")), "we\"ird\\host");
	ck_assert_int_eq(json_object_size(j), 4);
	json_decref(j);
}
END_TEST

START_TEST(test_batch_gives_arrays_of_fresh_rooms)
{
	json_t *j = parsed(rewrite(ROUTE_CHAT_COMPLETIONS,
				   "{\"model\":\"m\",\"n\":4,\"bootstrap_room\":[1,1,1,1]," MSG "}",
				   pd("h", 8998)));
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
		uint64_t r = body_rewrite_room();
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
	ck_assert_uint_eq(batch_of("{\"n\":3," MSG "}", ROUTE_CHAT_COMPLETIONS), 3);
	ck_assert_uint_eq(batch_of("{\"n\":1," MSG "}", ROUTE_CHAT_COMPLETIONS), 1);
	ck_assert_int_eq(prep(ROUTE_CHAT_COMPLETIONS, "{\"n\":1025," MSG "}"), SY_EINVAL);
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
	ck_assert_int_eq(prep(ROUTE_GENERATE, "[1,2]"), SY_EINVAL);
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
	char *body = many_members(300, "\"bootstrap_room\":1," MSG);
	json_t *j = parsed(rewrite(ROUTE_CHAT_COMPLETIONS, body, pd("h", 1)));
	ck_assert_int_eq(json_object_size(j), 304);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "k299")), 299);
	json_decref(j);
	free(body);
}
END_TEST

START_TEST(test_sampling_override_cannot_be_bypassed_with_many_members)
{
	use_override("{\"temperature\":0}", true);
	char *body = many_members(300, "\"temperature\":1.5," MSG);
	const char *param = NULL;
	ck_assert_int_eq(prep(ROUTE_CHAT_COMPLETIONS, body), SY_OK);
	ck_assert_int_eq(body_rewrite_check(ov, body, &req, &param), SY_EINVAL);
	ck_assert_str_eq(param, "temperature");
	use_override("{\"temperature\":0}", false);
	ck_assert_int_eq(prep(ROUTE_CHAT_COMPLETIONS, body), SY_OK);
	ck_assert_int_eq(body_rewrite_check(ov, body, &req, &param), SY_OK);
	json_t *j = parsed(rewrite(ROUTE_CHAT_COMPLETIONS, body, (struct body_rewrite){.sampling = ov}));
	ck_assert(json_real_value(json_object_get(j, "temperature")) == 0.0 ||
		  json_integer_value(json_object_get(j, "temperature")) == 0);
	ck_assert_int_eq(json_object_size(j), 302);
	json_decref(j);
	free(body);
	/* /generate: inside sampling_params, added when missing. */
	use_override("{\"temperature\":0}", true);
	ck_assert_str_eq(rewrite(ROUTE_GENERATE, "{\"text\":\"x\"}", (struct body_rewrite){.sampling = ov}),
			 "{\"text\":\"x\",\"sampling_params\":{\"temperature\":0}}");
}
END_TEST

START_TEST(test_generate_override_inside_sampling_params)
{
	use_override("{\"temperature\":0.5,\"top_p\":1}", true);
	const char *param = NULL;
	const char *b = "{\"text\":\"x\",\"sampling_params\":{\"max_new_tokens\":4,\"temperature\":0.50},"
			"\"temperature\":3}";
	ck_assert_int_eq(prep(ROUTE_GENERATE, b), SY_OK);
	ck_assert_int_eq(body_rewrite_check(ov, b, &req, &param), SY_OK); /* 0.50 == 0.5 */
	ck_assert_str_eq(rewrite(ROUTE_GENERATE, b, (struct body_rewrite){.sampling = ov}),
			 "{\"text\":\"x\",\"sampling_params\":{\"max_new_tokens\":4,\"temperature\":0.5,"
			 "\"top_p\":1},\"temperature\":3}");
	/* null is replaced by the override's object */
	ck_assert_str_eq(rewrite(ROUTE_GENERATE, "{\"sampling_params\":null,\"text\":\"x\"}",
				 (struct body_rewrite){.sampling = ov}),
			 "{\"sampling_params\":{\"temperature\":0.5,\"top_p\":1},\"text\":\"x\"}");
	/* an integer is not a real: 1.0 differs from 1 */
	b = "{\"text\":\"x\",\"sampling_params\":{\"top_p\":1.0}}";
	ck_assert_int_eq(prep(ROUTE_GENERATE, b), SY_OK);
	ck_assert_int_eq(body_rewrite_check(ov, b, &req, &param), SY_EINVAL);
	ck_assert_str_eq(param, "top_p");
}
END_TEST

START_TEST(test_input_ids_are_appended_after_the_override)
{
	static const uint32_t ids[3] = {7, 0, 4294967295u};
	use_override("{\"temperature\":0}", false);
	struct body_rewrite rw = {.sampling = ov, .input_ids = ids, .n_input_ids = 3};
	ck_assert_str_eq(rewrite(ROUTE_CHAT_COMPLETIONS, "{" MSG ",\"temperature\":1}\n", rw),
			 "{" MSG ",\"temperature\":0,\"input_ids\":[7,0,4294967295]}");
	rw = (struct body_rewrite){.input_ids = ids, .n_input_ids = 0};
	ck_assert_str_eq(rewrite(ROUTE_CHAT_COMPLETIONS, "{" MSG "}", rw),
			 "{" MSG ",\"input_ids\":[]}");
	rw = pd("h", 1);
	rw.input_ids = ids;
	rw.n_input_ids = 1;
	const char *out = rewrite(ROUTE_CHAT_COMPLETIONS, "{" MSG "}", rw);
	const char *want = "{" MSG ",\"input_ids\":[7],\"bootstrap_host\":\"h\",\"bootstrap_port\":1,"
			   "\"bootstrap_room\":";
	ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "got %s", out);
	ck_assert(!body_rewrite_needed(&(struct body_rewrite){0}));
}
END_TEST

/* ---- vLLM PD (kv_transfer_params) ------------------------------------------ */

START_TEST(test_vllm_prefill_asks_remote_decode_one_token_not_streamed)
{
	const char *body = "{\"model\":\"m\"," MSG ",\"stream\":true,\"stream_options\":"
			   "{\"include_usage\":true},\"max_tokens\":64,\"max_completion_tokens\":64,"
			   "\"min_tokens\":2,\"min\\u005ftokens\":3,\"kv_transfer_params\":"
			   "{\"do_remote_decode\":false},\"temperature\":0.5}";
	json_t *j = parsed(rewrite(ROUTE_CHAT_COMPLETIONS, body,
				   (struct body_rewrite){.vllm_pd = VLLM_PD_PREFILL}));
	json_t *kv = json_object_get(j, "kv_transfer_params");
	ck_assert(json_is_true(json_object_get(kv, "do_remote_decode")));
	ck_assert(json_is_false(json_object_get(kv, "do_remote_prefill")));
	ck_assert_int_eq(json_object_size(kv), 6);
	ck_assert(json_is_null(json_object_get(kv, "remote_block_ids")));
	ck_assert(json_is_false(json_object_get(j, "stream")));
	ck_assert_int_eq(json_integer_value(json_object_get(j, "max_tokens")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "max_completion_tokens")), 1);
	ck_assert_ptr_null(json_object_get(j, "stream_options"));
	ck_assert_ptr_null(json_object_get(j, "min_tokens")); /* plain and escaped */
	ck_assert(json_real_value(json_object_get(j, "temperature")) == 0.5);
	json_decref(j);
	/* completions without max_completion_tokens: none added */
	j = parsed(rewrite(ROUTE_COMPLETIONS, "{\"prompt\":\"p\",\"max_tokens\":9}",
			   (struct body_rewrite){.vllm_pd = VLLM_PD_PREFILL}));
	ck_assert_ptr_null(json_object_get(j, "max_completion_tokens"));
	ck_assert_int_eq(json_integer_value(json_object_get(j, "max_tokens")), 1);
	json_decref(j);
}
END_TEST

START_TEST(test_vllm_prefill_drops_override_output_members)
{
	use_override("{\"max_tokens\":32,\"temperature\":0}", false);
	json_t *j = parsed(rewrite(ROUTE_CHAT_COMPLETIONS, "{" MSG ",\"max_tokens\":8}",
				   (struct body_rewrite){.sampling = ov, .vllm_pd = VLLM_PD_PREFILL}));
	ck_assert_int_eq(json_integer_value(json_object_get(j, "max_tokens")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "temperature")), 0);
	json_decref(j);
	/* the decode leg keeps the override's */
	const char *kv = "{\"do_remote_prefill\":true,\"remote_block_ids\":[1,2]}";
	j = parsed(rewrite(ROUTE_CHAT_COMPLETIONS, "{" MSG ",\"max_tokens\":8}",
			   (struct body_rewrite){.sampling = ov, .vllm_pd = VLLM_PD_DECODE,
						 .kv_params = kv, .kv_params_len = strlen(kv)}));
	ck_assert_int_eq(json_integer_value(json_object_get(j, "max_tokens")), 32);
	json_decref(j);
}
END_TEST

START_TEST(test_vllm_decode_gets_the_prefills_params_in_place_of_the_clients)
{
	const char *kv = "{\"do_remote_prefill\":true,\"remote_engine_id\":\"e\"}";
	const char *body = "{\"kv_transfer_params\":{\"x\":1}," MSG ",\"stream\":true,"
			   "\"max_tokens\":7,\"min_tokens\":2}";
	const char *out = rewrite(ROUTE_CHAT_COMPLETIONS, body,
				  (struct body_rewrite){.vllm_pd = VLLM_PD_DECODE, .kv_params = kv,
							.kv_params_len = strlen(kv)});
	ck_assert_str_eq(out, "{" MSG ",\"stream\":true,\"max_tokens\":7,\"min_tokens\":2,"
			      "\"kv_transfer_params\":{\"do_remote_prefill\":true,"
			      "\"remote_engine_id\":\"e\"}}");
	/* a prefill that returned none: the client's are still dropped */
	ck_assert_str_eq(rewrite(ROUTE_CHAT_COMPLETIONS, body,
				 (struct body_rewrite){.vllm_pd = VLLM_PD_DECODE}),
			 "{" MSG ",\"stream\":true,\"max_tokens\":7,\"min_tokens\":2}");
}
END_TEST

/* ---- client members spelled with JSON escapes ------------------------------ */

START_TEST(test_escaped_bootstrap_room_is_replaced_not_duplicated)
{
	const char *b = "{\"bootstrap\\u005froom\":5,\"bootstrap\\u005Fhost\":\"evil\"," MSG "}";
	const char *out = rewrite(ROUTE_CHAT_COMPLETIONS, b, pd("10.0.0.1", 8998));
	ck_assert_ptr_null(strstr(out, "\\u005"));
	ck_assert_ptr_null(strstr(out, "evil"));
	json_t *j = parsed(out);
	ck_assert_str_eq(json_string_value(json_object_get(j, "bootstrap_host")), "10.0.0.1");
	ck_assert(json_is_integer(json_object_get(j, "bootstrap_room")));
	ck_assert_int_eq(json_object_size(j), 4);
	json_decref(j);
	/* both spellings at once are one member given twice */
	ck_assert_int_eq(prep(ROUTE_CHAT_COMPLETIONS,
			      "{\"bootstrap_room\":1,\"bootstrap\\u005froom\":2," MSG "}"),
			 SY_EINVAL);
}
END_TEST

START_TEST(test_escaped_sampling_key_is_checked_against_the_override)
{
	use_override("{\"temperature\":0.7}", true);
	const char *param = NULL;
	const char *b = "{\"temperatur\\u0065\":0.9," MSG "}";
	ck_assert_int_eq(prep(ROUTE_CHAT_COMPLETIONS, b), SY_OK);
	ck_assert_int_eq(body_rewrite_check(ov, b, &req, &param), SY_EINVAL);
	ck_assert_str_eq(param, "temperature");
	b = "{\"text\":\"x\",\"sampling_params\":{\"temperatur\\u0065\":0.9}}";
	ck_assert_int_eq(prep(ROUTE_GENERATE, b), SY_OK);
	ck_assert_int_eq(body_rewrite_check(ov, b, &req, &param), SY_EINVAL);
	/* an equal value passes and the member is not duplicated */
	b = "{\"temperatur\\u0065\":0.70," MSG "}";
	ck_assert_int_eq(prep(ROUTE_CHAT_COMPLETIONS, b), SY_OK);
	ck_assert_int_eq(body_rewrite_check(ov, b, &req, &param), SY_OK);
	json_t *j = parsed(rewrite(ROUTE_CHAT_COMPLETIONS, b, (struct body_rewrite){.sampling = ov}));
	ck_assert(json_real_value(json_object_get(j, "temperature")) == 0.7);
	ck_assert_int_eq(json_object_size(j), 2);
	json_decref(j);
}
END_TEST

START_TEST(test_escaped_n_counts_for_the_batch)
{
	ck_assert_uint_eq(batch_of("{\"\\u006e\":3," MSG "}", ROUTE_CHAT_COMPLETIONS), 3);
	ck_assert_uint_eq(req.n, 3);
	json_t *j = parsed(rewrite(ROUTE_CHAT_COMPLETIONS, "{\"\\u006e\":3," MSG "}", pd("h", 1)));
	ck_assert_int_eq(json_array_size(json_object_get(j, "bootstrap_room")), 3);
	json_decref(j);
	ck_assert_int_eq(prep(ROUTE_CHAT_COMPLETIONS, "{\"n\":2,\"\\u006e\":3," MSG "}"), SY_EINVAL);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("body_rewrite");
	TCase *tc = tcase_create("rewrite");
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
	tcase_add_test(tc, test_generate_override_inside_sampling_params);
	tcase_add_test(tc, test_input_ids_are_appended_after_the_override);
	tcase_add_test(tc, test_escaped_bootstrap_room_is_replaced_not_duplicated);
	tcase_add_test(tc, test_escaped_sampling_key_is_checked_against_the_override);
	tcase_add_test(tc, test_escaped_n_counts_for_the_batch);
	tcase_add_test(tc, test_vllm_prefill_asks_remote_decode_one_token_not_streamed);
	tcase_add_test(tc, test_vllm_prefill_drops_override_output_members);
	tcase_add_test(tc, test_vllm_decode_gets_the_prefills_params_in_place_of_the_clients);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sy_check_run(suite());
}
