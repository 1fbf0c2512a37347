/* test_prepare.c — router_prepare (router/core/prepare.h): the three routes,
 * validation messages with their paths and byte offsets, malformed JSON,
 * tokenization (bytes and off), batches, expected peak and its overflow,
 * header keys, and the body member records. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "common/errors.h"
#include "router/core/prepare.h"
#include "tests/unit/sy_check.h"

static struct sy_tokenizer *tok_bytes, *tok_off;
static struct router_prepare_opts opts;
static struct prepare_buf buf;
static struct pick_request req;
static struct router_error err;

struct hdr {
	const char *name, *value;
};
static struct hdr headers[4];

static bool lookup(void *ctx, const char *name, size_t len, struct router_span *v)
{
	(void)ctx;
	for (int i = 0; i < 4 && headers[i].name; i++) {
		if (strlen(headers[i].name) == len && memcmp(headers[i].name, name, len) == 0) {
			v->ptr = headers[i].value;
			v->len = strlen(headers[i].value);
			return true;
		}
	}
	return false;
}

static void setup(void)
{
	char e[128];
	ck_assert_int_eq(sy_tokenizer_open("bytes", NULL, &tok_bytes, e, sizeof(e)), SY_OK);
	ck_assert_int_eq(sy_tokenizer_open("off", NULL, &tok_off, e, sizeof(e)), SY_OK);
	opts = (struct router_prepare_opts){.tokenizer = tok_bytes, .default_model = "default-model",
					    .session_header = "x-session-id",
					    .routing_header = "x-sgl-routing-key"};
	prepare_buf_init(&buf);
	memset(headers, 0, sizeof(headers));
}

static void teardown(void)
{
	prepare_buf_free(&buf);
	sy_tokenizer_close(tok_bytes);
	sy_tokenizer_close(tok_off);
}

static int prep(enum route r, const char *body)
{
	return router_prepare(&opts, r, body, strlen(body), lookup, NULL, &buf, &req, &err);
}

static int chat(const char *body) { return prep(ROUTE_CHAT_COMPLETIONS, body); }

#define ck_bad(rc_expr, want_msg, want_off)                   \
	do {                                                  \
		ck_assert_int_eq((rc_expr), SY_EINVAL);       \
		ck_assert_int_eq(err.status, 400);            \
		ck_assert_str_eq(err.code, "bad_request");    \
		ck_assert_str_eq(err.message, (want_msg));    \
		ck_assert_int_eq(err.offset, (want_off));     \
	} while (0)

/* ChatML of one user message "hi" + generation prompt: 30 + 22 bytes. */
#define HI_TOKENS 52

START_TEST(test_chat_string_content_tokens_model_stream_n_salt)
{
	ck_assert_int_eq(chat("{\"model\":\"m1\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
			      "\"stream\":true,\"n\":2,\"cache_salt\":\"s\\u0041\"}"),
			 SY_OK);
	ck_assert_int_eq(req.route, ROUTE_CHAT_COMPLETIONS);
	ck_assert_uint_eq(req.model.len, 2);
	ck_assert(memcmp(req.model.ptr, "m1", 2) == 0);
	ck_assert_uint_eq(req.input_tokens, HI_TOKENS);
	ck_assert_uint_eq(req.n_token_ids, HI_TOKENS);
	ck_assert(!req.tokens_estimated);
	ck_assert_uint_eq(req.token_ids[0], '<');
	ck_assert_uint_eq(req.token_ids[HI_TOKENS - 1], '\n');
	ck_assert(req.stream);
	ck_assert_uint_eq(req.n, 2);
	ck_assert_uint_eq(req.cache_salt.len, 2);
	ck_assert(memcmp(req.cache_salt.ptr, "sA", 2) == 0);
	ck_assert(!req.has_peak);
	ck_assert_uint_eq(req.batch_size, 1);
	ck_assert_ptr_null(req.memo);
}
END_TEST

START_TEST(test_chat_content_parts_concatenate_text_parts_only)
{
	ck_assert_int_eq(chat("{\"messages\":[{\"role\":\"user\",\"content\":["
			      "{\"type\":\"text\",\"text\":\"h\"},"
			      "{\"text\":\"junk\",\"type\":\"image_url\",\"image_url\":{\"url\":\"x\"}},"
			      "{\"text\":\"i\",\"type\":\"text\"}]}]}"),
			 SY_OK);
	ck_assert_uint_eq(req.input_tokens, HI_TOKENS);
	ck_assert_uint_eq(req.model.len, strlen("default-model")); /* default model */
	/* "<|im_start|>user\n" is 17 bytes, then "hi" */
	ck_assert_uint_eq(req.token_ids[17], 'h');
	ck_assert_uint_eq(req.token_ids[18], 'i');
}
END_TEST

START_TEST(test_chat_null_content_name_and_unknown_fields_are_fine)
{
	ck_assert_int_eq(chat("{\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\","
			      "\"parameters\":{\"a\":[1,{\"b\":null}]}}}],"
			      "\"messages\":[{\"role\":\"assistant\",\"content\":null,\"name\":\"n\","
			      "\"tool_calls\":[{\"id\":\"1\"}]},{\"role\":\"tool\",\"content\":\"r\","
			      "\"tool_call_id\":\"1\"}],\"temperature\":0.5,\"prompt\":5}"),
			 SY_OK);
	/* "<|im_start|>assistant\n<|im_end|>\n" 33 + "<|im_start|>tool\nr<|im_end|>\n" 29 + 22 */
	ck_assert_uint_eq(req.input_tokens, 33 + 29 + 22);
}
END_TEST

START_TEST(test_chat_max_tokens_and_peak_max_completion_tokens_wins)
{
	ck_assert_int_eq(chat("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":100}"),
			 SY_OK);
	ck_assert(req.has_peak && req.has_max_tokens);
	ck_assert_uint_eq(req.max_tokens, 100);
	ck_assert_uint_eq(req.expected_peak, HI_TOKENS + 100);
	ck_assert_int_eq(chat("{\"max_completion_tokens\":7,\"messages\":[{\"role\":\"user\","
			      "\"content\":\"hi\"}],\"max_tokens\":100}"),
			 SY_OK);
	ck_assert_uint_eq(req.expected_peak, HI_TOKENS + 7);
	ck_assert_int_eq(chat("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":null}"),
			 SY_OK);
	ck_assert(!req.has_peak);
}
END_TEST

START_TEST(test_chat_validation_names_the_field_and_offset)
{
	const char *b = "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\","
			"\"content\":\"b\"},{\"role\":5,\"content\":\"c\"}]}";
	ck_bad(chat(b), "messages[2].role: expected a string, not a number",
	       (int64_t)(strstr(b, ":5,") - b + 2));
	ck_bad(chat("{\"model\":\"m\"}"), "messages: required", 12);
	ck_bad(chat("{\"messages\":[]}"), "messages: expected a non-empty array of messages", 14);
	ck_bad(chat("{\"messages\":{}}"), "messages: expected a non-empty array of messages, not an object", 13);
	ck_bad(chat("{\"messages\":[{\"content\":\"x\"}]}"), "messages[0].role: required", 28);
	ck_bad(chat("{\"messages\":[{\"role\":\"\"}]}"), "messages[0].role: must not be empty", 23);
	ck_bad(chat("{\"messages\":[7]}"), "messages[0]: expected a message object, not a number", 14);
	ck_bad(chat("{\"messages\":[{\"role\":\"u\",\"content\":[{\"text\":\"x\"}]}]}"),
	       "messages[0].content[0].type: required", 48);
	ck_bad(chat("{\"messages\":[{\"role\":\"u\",\"content\":[{\"type\":\"text\"}]}]}"),
	       "messages[0].content[0].text: required", 51);
	ck_bad(chat("{\"messages\":[{\"role\":\"u\",\"content\":[{\"type\":\"text\",\"text\":1}]}]}"),
	       "messages[0].content[0].text: expected a string, not a number", 59);
	ck_bad(chat("{\"messages\":[{\"role\":\"u\",\"content\":true}]}"),
	       "messages[0].content: expected a string, an array of content parts or null, not a "
	       "boolean",
	       39);
	ck_bad(chat("{\"model\":5}"), "model: expected a string, not a number", 10);
	ck_bad(chat("{\"stream\":\"yes\"}"), "stream: expected a boolean, not a string", 15);
	ck_bad(chat("{\"n\":0}"), "n: must be an integer in 1..1024", 6);
	ck_bad(chat("{\"max_tokens\":-1}"), "max_tokens: must be an integer in 0..18446744073709551615",
	       16);
	ck_bad(chat("{\"max_tokens\":1.5}"),
	       "max_tokens: must be an integer in 0..18446744073709551615", 17);
	ck_bad(chat("{\"model\":\"a\",\"model\":\"b\"}"), "model: duplicate key", 20);
	ck_bad(chat("[1]"), "body: expected a JSON object, not an array", 1);
}
END_TEST

START_TEST(test_malformed_json_names_the_byte_offset)
{
	ck_bad(chat("{\"model\": \"m\",}"),
	       "malformed JSON at byte 15: invalid object key (must be a string)", 15);
	ck_bad(chat("{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}"),
	       "malformed JSON at byte 42: premature EOF", 42);
	ck_bad(chat(""), "malformed JSON at byte 0: empty body", 0);
	ck_bad(chat("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]} x"),
	       "malformed JSON at byte 47: trailing garbage", 47);
	ck_bad(chat("{\"a\":[1 2]}"), "malformed JSON at byte 9: after array element, I expect ',' or ']'",
	       9);
	/* invalid UTF-8 inside a string */
	ck_assert_int_eq(chat("{\"model\":\"\xff\"}"), SY_EINVAL);
	ck_assert_int_ge(err.offset, 9);
	ck_assert_ptr_nonnull(strstr(err.message, "malformed JSON at byte"));
}
END_TEST

static int chat_n(const char *body, size_t n)
{
	return router_prepare(&opts, ROUTE_CHAT_COMPLETIONS, body, n, lookup, NULL, &buf, &req,
			      &err);
}

START_TEST(test_invalid_utf8_and_lone_surrogates_name_the_byte)
{
	/* Overlong '/', an encoded surrogate, above U+10FFFF, an overlong key,
	 * a lead byte past F4: in values, keys, skipped values alike (yajl's
	 * own check lets these through). */
	ck_bad(chat("{\"model\":\"ab\xc0\xaf\"}"), "invalid UTF-8 at byte 12", 12);
	ck_bad(chat("{\"model\":\"\xed\xa0\x80\"}"), "invalid UTF-8 at byte 10", 10);
	ck_bad(chat("{\"x\":\"\xf4\x90\x80\x80\"}"), "invalid UTF-8 at byte 6", 6);
	ck_bad(chat("{\"k\xe0\x80\x80\":1}"), "invalid UTF-8 at byte 3", 3);
	ck_bad(chat("{\"x\":[{\"y\":\"0123456789\xf5\x80\x80\x80\"}]}"), "invalid UTF-8 at byte 22", 22);
	/* With escapes the raw text is checked too. */
	ck_bad(chat("{\"model\":\"\\n\xc0\xaf\"}"), "invalid UTF-8 at byte 12", 12);
	/* Lone surrogate escapes, high or low, in values and keys. */
	ck_bad(chat("{\"model\":\"\\ud800\"}"), "lone surrogate escape \\ud800 at byte 10", 10);
	ck_bad(chat("{\"model\":\"a\\uDC00b\"}"), "lone surrogate escape \\uDC00 at byte 11", 11);
	ck_bad(chat("{\"model\":\"\\ud800\\u0041\"}"), "lone surrogate escape \\ud800 at byte 10", 10);
	ck_bad(chat("{\"\\ud83d\":1}"), "lone surrogate escape \\ud83d at byte 2", 2);
	ck_bad(chat("{\"messages\":[{\"role\":\"user\",\"content\":\"hi \\udfff\"}]}"),
	       "lone surrogate escape \\udfff at byte 42", 42);
	/* An escaped backslash before 'u' is no escape; a pair is fine;
	 * valid 2-, 3- and 4-byte sequences are fine. */
	ck_assert_int_eq(chat("{\"model\":\"m\\\\ud800\",\"messages\":[{\"role\":\"user\","
			      "\"content\":\"\\ud83d\\ude00 \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}]}"),
			 SY_OK);
	/* An overlong NUL past a run of ASCII (the word-at-a-time path). */
	const char nul[] = "{\"messages\":[{\"role\":\"user\",\"content\":\"abcdefghijklmnop\xc0\x80\"}]}";
	ck_bad(chat_n(nul, sizeof(nul) - 1), "invalid UTF-8 at byte 55", 55);
}
END_TEST

START_TEST(test_skipped_values_are_bounded_in_depth)
{
	char body[1200];
	int n = snprintf(body, sizeof(body), "{\"x\":");
	for (int i = 0; i < 300; i++)
		body[n++] = '[';
	for (int i = 0; i < 300; i++)
		body[n++] = ']';
	snprintf(body + n, sizeof(body) - (size_t)n, "}");
	ck_assert_int_eq(chat(body), SY_EINVAL);
	ck_assert_str_eq(err.message, "body: JSON nested deeper than 256 levels");
}
END_TEST

START_TEST(test_completions_string_prompt_is_tokenized_alone)
{
	ck_assert_int_eq(prep(ROUTE_COMPLETIONS, "{\"prompt\":\"hello\",\"max_tokens\":3}"), SY_OK);
	ck_assert_uint_eq(req.input_tokens, 5);
	ck_assert_uint_eq(req.n_token_ids, 5);
	ck_assert_uint_eq(req.token_ids[0], 'h');
	ck_assert_uint_eq(req.expected_peak, 8);
	ck_assert_uint_eq(req.batch_size, 1);
}
END_TEST

START_TEST(test_completions_token_array_and_batches)
{
	ck_assert_int_eq(prep(ROUTE_COMPLETIONS, "{\"prompt\":[1,2,4294967295]}"), SY_OK);
	ck_assert_uint_eq(req.input_tokens, 3);
	ck_assert_uint_eq(req.token_ids[2], 4294967295u);
	ck_assert_int_eq(prep(ROUTE_COMPLETIONS, "{\"prompt\":[\"ab\",\"cde\"]}"), SY_OK);
	ck_assert_uint_eq(req.batch_size, 2);
	ck_assert_uint_eq(req.input_tokens, 3);
	ck_assert_uint_eq(req.n_token_ids, 2);
	ck_assert_uint_eq(req.token_ids[1], 'b');
	ck_assert_int_eq(prep(ROUTE_COMPLETIONS, "{\"prompt\":[[7,8,9],[1]]}"), SY_OK);
	ck_assert_uint_eq(req.batch_size, 2);
	ck_assert_uint_eq(req.input_tokens, 3);
	ck_assert_uint_eq(req.token_ids[0], 7);
	ck_bad(prep(ROUTE_COMPLETIONS, "{\"prompt\":[1,\"a\"]}"),
	       "prompt[1]: expected a token ID (integer 0..4294967295)", 16);
	ck_bad(prep(ROUTE_COMPLETIONS, "{\"prompt\":[4294967296]}"),
	       "prompt[0]: expected a token ID (integer 0..4294967295)", 21);
	ck_bad(prep(ROUTE_COMPLETIONS, "{\"prompt\":[[1],[\"x\"]]}"),
	       "prompt[1][0]: expected a token ID (integer 0..4294967295)", 19);
	ck_bad(prep(ROUTE_COMPLETIONS, "{\"prompt\":[]}"), "prompt: expected a non-empty array", 12);
	ck_bad(prep(ROUTE_COMPLETIONS, "{\"messages\":[]}"), "prompt: required", 14);
}
END_TEST

START_TEST(test_peak_overflow_is_400_naming_the_field)
{
	ck_bad(prep(ROUTE_COMPLETIONS, "{\"prompt\":[1,2,3],\"max_tokens\":18446744073709551615}"),
	       "max_tokens: input tokens (3) + max_tokens overflow the expected peak", -1);
	ck_assert_int_eq(prep(ROUTE_COMPLETIONS,
			      "{\"prompt\":[1,2,3],\"max_tokens\":18446744073709551612}"),
			 SY_OK);
	ck_assert_uint_eq(req.expected_peak, UINT64_MAX);
	ck_bad(prep(ROUTE_COMPLETIONS, "{\"prompt\":[1],\"max_tokens\":18446744073709551616}"),
	       "max_tokens: must be an integer in 0..18446744073709551615", 47);
}
END_TEST

START_TEST(test_generate_text_input_ids_and_sampling_params)
{
	ck_assert_int_eq(prep(ROUTE_GENERATE, "{\"text\":\"abcd\",\"sampling_params\":{\"temperature\":0,"
					      "\"max_new_tokens\":16,\"n\":3}}"),
			 SY_OK);
	ck_assert_uint_eq(req.input_tokens, 4);
	ck_assert_uint_eq(req.expected_peak, 20);
	ck_assert_uint_eq(req.n, 3);
	ck_assert_int_eq(prep(ROUTE_GENERATE, "{\"input_ids\":[5,6],\"max_tokens\":99}"), SY_OK);
	ck_assert_uint_eq(req.input_tokens, 2);
	ck_assert(!req.has_peak); /* max_tokens is not a /generate field */
	ck_assert_int_eq(prep(ROUTE_GENERATE, "{\"input_ids\":[[5,6],[7]]}"), SY_OK);
	ck_assert_uint_eq(req.batch_size, 2);
	ck_assert_int_eq(prep(ROUTE_GENERATE, "{\"text\":[\"a\",\"bb\"]}"), SY_OK);
	ck_assert_uint_eq(req.batch_size, 2);
	ck_assert_uint_eq(req.input_tokens, 2);
	ck_bad(prep(ROUTE_GENERATE, "{\"text\":\"a\",\"input_ids\":[1]}"),
	       "text, input_ids: give only one of them", 27);
	ck_bad(prep(ROUTE_GENERATE, "{}"), "text or input_ids: required", 1);
	ck_bad(prep(ROUTE_GENERATE, "{\"text\":[1]}"), "text[0]: expected a string", 10);
	ck_bad(prep(ROUTE_GENERATE, "{\"input_ids\":\"x\"}"),
	       "input_ids: expected an array of token IDs, not a string", 16);
	ck_bad(prep(ROUTE_GENERATE, "{\"text\":\"a\",\"sampling_params\":{\"max_new_tokens\":\"9\"}}"),
	       "sampling_params.max_new_tokens: must be an integer in 0..18446744073709551615", 51);
}
END_TEST

START_TEST(test_tokenizer_off_estimates_from_body_size)
{
	opts.tokenizer = tok_off;
	const char *b = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"; /* 46 bytes */
	ck_assert_int_eq(chat(b), SY_OK);
	ck_assert(req.tokens_estimated);
	ck_assert_uint_eq(req.input_tokens, (strlen(b) + 3) / 4);
	ck_assert_ptr_null(req.token_ids);
	/* token-ID inputs stay exact */
	ck_assert_int_eq(prep(ROUTE_COMPLETIONS, "{\"prompt\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20]}"),
			 SY_OK);
	ck_assert(!req.tokens_estimated);
	ck_assert_uint_eq(req.input_tokens, 20);
}
END_TEST

START_TEST(test_headers_session_routing_and_slo)
{
	opts.read_ttft_slo = true;
	opts.read_tps_slo = false;
	headers[0] = (struct hdr){"x-session-id", "sess-1"};
	headers[1] = (struct hdr){"x-sgl-routing-key", "rk"};
	headers[2] = (struct hdr){"x-sgl-ttft-slo-ms", "250.5"};
	headers[3] = (struct hdr){"x-sgl-tps-slo", "bogus"}; /* not read: policy disabled */
	ck_assert_int_eq(chat("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"), SY_OK);
	ck_assert_uint_eq(req.session_key.len, 6);
	ck_assert(memcmp(req.session_key.ptr, "sess-1", 6) == 0);
	ck_assert_uint_eq(req.routing_key.len, 2);
	ck_assert(req.has_ttft_slo);
	ck_assert(req.ttft_slo_ms == 250.5);
	ck_assert(!req.has_tps_slo);
	opts.read_tps_slo = true;
	ck_bad(chat("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"),
	       "x-sgl-tps-slo: expected a number of tokens per second", -1);
	headers[3].value = "0";
	ck_assert_int_eq(chat("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"), SY_OK);
	ck_assert(req.has_tps_slo && req.tps_slo == 0); /* range: the resolver's job */
}
END_TEST

/* The member's key and value as written. */
static void ck_member(const char *body, const struct body_member *m, const char *key,
		      const char *value, enum body_role role)
{
	ck_assert_uint_eq(m->key_len, strlen(key));
	ck_assert(memcmp(body + m->key, key, m->key_len) == 0);
	ck_assert_uint_eq(m->value_len, strlen(value));
	ck_assert(memcmp(body + m->value, value, m->value_len) == 0);
	ck_assert_int_eq(m->role, role);
}

START_TEST(test_body_members_record_spans_and_roles_after_unescaping)
{
	const char *b = "{\"bootstrap_room\": 5, \"bootstrap\\u005fhost\" : [1,{}], "
			"\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}], "
			"\"bootstrap_port\": null ,\"input\\u005fids\":null}";
	ck_assert_int_eq(chat(b), SY_OK);
	ck_assert_uint_eq(req.body.n_top, 5);
	ck_member(b, &req.body.top[0], "\"bootstrap_room\"", "5", BODY_BOOTSTRAP);
	ck_member(b, &req.body.top[1], "\"bootstrap\\u005fhost\"", "[1,{}]", BODY_BOOTSTRAP);
	ck_member(b, &req.body.top[2], "\"messages\"", "[{\"role\":\"user\",\"content\":\"hi\"}]",
		  BODY_KEEP);
	ck_member(b, &req.body.top[3], "\"bootstrap_port\"", "null", BODY_BOOTSTRAP);
	ck_member(b, &req.body.top[4], "\"input\\u005fids\"", "null", BODY_INPUT_IDS);
	ck_assert(req.body.has_input_ids);
	ck_assert_uint_eq(req.body.object_end, strlen(b) - 1);
	ck_assert_uint_eq(req.body.n_override, 0);

	/* sampling keys: top-level on chat, inside sampling_params on /generate */
	struct sampling_override *ov;
	char why[64];
	ck_assert_int_eq(sampling_override_parse("{\"top_k\":1,\"temperature\":0}", true, &ov, why,
						 sizeof(why)), SY_OK);
	opts.sampling = ov;
	const char *c = "{\"temperatur\\u0065\":0.9,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
	ck_assert_int_eq(chat(c), SY_OK);
	ck_member(c, &req.body.top[0], "\"temperatur\\u0065\"", "0.9", BODY_SAMPLING);
	ck_assert_uint_eq(req.body.top[0].param, 1);
	ck_assert_uint_eq(req.body.n_override, 1);
	const char *g = "{\"input_ids\":[1],\"top_k\":2,\"sampling_params\":{ \"top_k\" : 3 ,\"x\":{}}}";
	ck_assert_int_eq(prep(ROUTE_GENERATE, g), SY_OK);
	ck_member(g, &req.body.top[1], "\"top_k\"", "2", BODY_KEEP);
	ck_member(g, &req.body.top[2], "\"sampling_params\"", "{ \"top_k\" : 3 ,\"x\":{}}",
		  BODY_SAMPLING_PARAMS);
	ck_assert(req.body.sampling_object && req.body.has_sampling_params);
	ck_assert_uint_eq(req.body.n_sampling, 2);
	ck_member(g, &req.body.sampling[0], "\"top_k\"", "3", BODY_SAMPLING);
	ck_member(g, &req.body.sampling[1], "\"x\"", "{}", BODY_KEEP);
	ck_assert_uint_eq(req.body.n_override, 1);
	opts.sampling = NULL;
	sampling_override_free(ov);

	ck_assert_int_eq(prep(ROUTE_GENERATE, "{\"input_ids\":[1]}"), SY_OK);
	ck_assert_uint_eq(req.body.object_end, 16);
	ck_bad(chat("{\"bootstrap_room\":1,\"bootstrap_room\":2}"), "bootstrap_room: duplicate key", 36);
	ck_bad(chat("{\"bootstrap_room\":1,\"bootstrap\\u005froom\":2}"),
	       "bootstrap_room: duplicate key", 41);
	ck_assert_int_eq(chat("{\"\\u006e\":3,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"),
			 SY_OK);
	ck_assert_uint_eq(req.n, 3);
}
END_TEST

START_TEST(test_buffer_is_reused_across_requests)
{
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(chat("{\"model\":\"abc\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"),
				 SY_OK);
		ck_assert_uint_eq(req.input_tokens, HI_TOKENS);
		ck_assert(memcmp(req.model.ptr, "abc", 3) == 0);
	}
	ck_assert_str_eq(route_name(ROUTE_GENERATE), "/generate");
}
END_TEST

/* The input-ids forwarding gate (prepare.h): SGLang's router's plain shapes. */
START_TEST(test_forward_gate_plain_chat_shapes_only)
{
	static const char *const yes[] = {
		"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
		"{\"messages\":[{\"role\":\"system\",\"content\":\"s\"},{\"role\":\"user\","
		"\"content\":\"a\"},{\"role\":\"assistant\",\"content\":\"b\"},{\"role\":\"user\","
		"\"content\":\"c\"}],\"tools\":[],\"tool_choice\":\"auto\",\"input_ids\":null}",
		"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\",\"tool_calls\":[ ],"
		"\"reasoning_content\":null}],\"chat_template_kwargs\":null}",
	};
	static const char *const no[] = {
		"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":[{\"type\":"
		"\"function\",\"function\":{\"name\":\"f\"}}]}",
		"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"chat_template_kwargs\":"
		"{\"enable_thinking\":false}}",
		"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"input_ids\":[1,2]}",
		"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"reasoning_effort\":\"low\"}",
		"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"chat_template\":\"x\"}",
		"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"continue_final_message\":true}",
		"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"functions\":[]}",
		"{\"messages\":[{\"role\":\"user\",\"content\":null}]}",
		"{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"}]}]}",
		"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\","
		"\"content\":\"\",\"tool_calls\":[{\"id\":\"c\"}]},{\"role\":\"user\",\"content\":\"b\"}]}",
		"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"tool\","
		"\"content\":\"r\"},{\"role\":\"user\",\"content\":\"b\"}]}",
		"{\"messages\":[{\"role\":\"user\",\"content\":\"a\",\"reasoning_content\":\"\"}]}",
		"{\"messages\":[{\"role\":\"user\",\"content\":\"a\",\"tools\":[]}]}",
		"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"system\","
		"\"content\":\"s\"}]}",
		"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"user\","
		"\"content\":\"b\"}]}",
		"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\","
		"\"content\":\"b\"}]}",
	};
	opts.forward_input_ids = true;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		ck_assert_msg(chat(yes[i]) == SY_OK, "%s: %s", yes[i], err.message);
		ck_assert_msg(req.forward_ids, "should forward: %s", yes[i]);
		ck_assert_ptr_nonnull(req.token_ids);
	}
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		ck_assert_msg(chat(no[i]) == SY_OK, "%s: %s", no[i], err.message);
		ck_assert_msg(!req.forward_ids, "should not forward: %s", no[i]);
		ck_assert_uint_gt(req.n_token_ids, 0); /* still tokenized for routing */
	}
	/* Off for the generation: never; never for completions / generate. */
	opts.forward_input_ids = false;
	ck_assert_int_eq(chat(yes[0]), SY_OK);
	ck_assert(!req.forward_ids);
	opts.forward_input_ids = true;
	ck_assert_int_eq(prep(ROUTE_COMPLETIONS, "{\"prompt\":\"hi\"}"), SY_OK);
	ck_assert(!req.forward_ids);
	ck_assert_int_eq(prep(ROUTE_GENERATE, "{\"text\":\"hi\"}"), SY_OK);
	ck_assert(!req.forward_ids);
	/* Only "hf" with a recognised template forwards. */
	ck_assert(!router_prepare_can_forward(tok_bytes, false));
	ck_assert(!router_prepare_can_forward(tok_off, false));
	ck_assert(!router_prepare_can_forward(NULL, false));
}
END_TEST

/* Chat template inputs are validated where they are read. */
START_TEST(test_chat_template_inputs_are_validated)
{
	ck_bad(chat("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":{}}"),
	       "tools: expected an array of tools, not an object", 54);
	ck_bad(chat("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
		    "\"chat_template_kwargs\":[]}"),
	       "chat_template_kwargs: expected an object, not an array", 69);
	ck_bad(chat("{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":{}}]}"),
	       "messages[0].tool_calls: expected an array of tool calls or null, not an object",
	       47);
	ck_bad(chat("{\"messages\":[{\"role\":\"assistant\",\"reasoning_content\":1}]}"),
	       "messages[0].reasoning_content: expected a string or null, not a number", 54);
	ck_bad(chat("{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"tools\":[],\"tools\":[]}"),
	       "tools: duplicate key", 62);
	/* Nested values inside captured spans are skipped, not validated. */
	ck_assert_int_eq(chat("{\"messages\":[{\"role\":\"assistant\",\"content\":\"a\","
			      "\"tool_calls\":[{\"function\":{\"arguments\":\"{}\"}}]}],"
			      "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\","
			      "\"parameters\":{\"type\":\"object\"}}}],"
			      "\"chat_template_kwargs\":{\"enable_thinking\":false}}"),
			 SY_OK);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("prepare");
	TCase *tc = tcase_create("prepare");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_chat_string_content_tokens_model_stream_n_salt);
	tcase_add_test(tc, test_chat_content_parts_concatenate_text_parts_only);
	tcase_add_test(tc, test_chat_null_content_name_and_unknown_fields_are_fine);
	tcase_add_test(tc, test_chat_max_tokens_and_peak_max_completion_tokens_wins);
	tcase_add_test(tc, test_chat_validation_names_the_field_and_offset);
	tcase_add_test(tc, test_malformed_json_names_the_byte_offset);
	tcase_add_test(tc, test_invalid_utf8_and_lone_surrogates_name_the_byte);
	tcase_add_test(tc, test_skipped_values_are_bounded_in_depth);
	tcase_add_test(tc, test_completions_string_prompt_is_tokenized_alone);
	tcase_add_test(tc, test_completions_token_array_and_batches);
	tcase_add_test(tc, test_peak_overflow_is_400_naming_the_field);
	tcase_add_test(tc, test_generate_text_input_ids_and_sampling_params);
	tcase_add_test(tc, test_tokenizer_off_estimates_from_body_size);
	tcase_add_test(tc, test_headers_session_routing_and_slo);
	tcase_add_test(tc, test_body_members_record_spans_and_roles_after_unescaping);
	tcase_add_test(tc, test_buffer_is_reused_across_requests);
	tcase_add_test(tc, test_forward_gate_plain_chat_shapes_only);
	tcase_add_test(tc, test_chat_template_inputs_are_validated);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sy_check_run(suite());
}
