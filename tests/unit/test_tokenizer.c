/* test_tokenizer.c — the tokenizer interface, the "bytes" tokenizer and the
 * plain ChatML rendering (common/tokenizer/tokenizer.h, docs/tokenizer.md).
 * Expected token arrays are the UTF-8 bytes of the text, written out by hand.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/tokenizer/tokenizer.h"
#include "sy_check.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
#define SPAN(s) ((struct sy_chat_span){(s), sizeof(s) - 1})

static struct sy_tokenizer *open_kind(const char *kind)
{
	struct sy_tokenizer *tok = NULL;
	char err[256];
	int rc = sy_tokenizer_open(kind, NULL, &tok, err, sizeof err);
	ck_assert_msg(rc == SY_OK, "open %s: %s", kind, err);
	ck_assert_ptr_nonnull(tok);
	return tok;
}

static void assert_ids(const struct sy_tokens *t, const uint32_t *want, size_t n)
{
	ck_assert_uint_eq(t->len, n);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(t->ids[i] == want[i], "id %zu: got %u want %u", i,
			      t->ids[i], want[i]);
}

static void encode_and_check(const char *text, const uint32_t *want, size_t n)
{
	struct sy_tokenizer *tok = open_kind("bytes");
	struct sy_tokens t;
	sy_tokens_init(&t);
	ck_assert_int_eq(sy_tokenizer_encode_text(tok, text, strlen(text), &t), SY_OK);
	assert_ids(&t, want, n);
	sy_tokens_free(&t);
	sy_tokenizer_close(tok);
}

/* ---- bytes: text ---- */

START_TEST(test_bytes_ascii_is_one_token_per_byte)
{
	static const uint32_t want[] = {72, 105, 33, 32, 10};
	encode_and_check("Hi! \n", want, N_OF(want));
}
END_TEST

START_TEST(test_bytes_two_byte_utf8_e_acute)
{
	static const uint32_t want[] = {99, 0xC3, 0xA9}; /* "cé", U+00E9 = C3 A9 */
	encode_and_check("c\xC3\xA9", want, N_OF(want));
}
END_TEST

START_TEST(test_bytes_three_byte_utf8_cjk)
{
	static const uint32_t want[] = {0xE4, 0xB8, 0xAD}; /* 中 U+4E2D = E4 B8 AD */
	encode_and_check("\xE4\xB8\xAD", want, N_OF(want));
}
END_TEST

START_TEST(test_bytes_four_byte_utf8_emoji)
{
	static const uint32_t want[] = {0xF0, 0x9F, 0x98, 0x80, 33}; /* 😀 U+1F600 */
	encode_and_check("\xF0\x9F\x98\x80!", want, N_OF(want));
}
END_TEST

START_TEST(test_bytes_empty_text_appends_nothing)
{
	struct sy_tokenizer *tok = open_kind("bytes");
	struct sy_tokens t;
	sy_tokens_init(&t);
	ck_assert_int_eq(sy_tokenizer_encode_text(tok, "", 0, &t), SY_OK);
	ck_assert_int_eq(sy_tokenizer_encode_text(tok, NULL, 0, &t), SY_OK);
	ck_assert_uint_eq(t.len, 0);
	sy_tokens_free(&t);
	sy_tokenizer_close(tok);
}
END_TEST

START_TEST(test_bytes_nul_byte_inside_text_is_token_zero)
{
	struct sy_tokenizer *tok = open_kind("bytes");
	struct sy_tokens t = {0};
	static const uint32_t want[] = {97, 0, 98};
	ck_assert_int_eq(sy_tokenizer_encode_text(tok, "a\0b", 3, &t), SY_OK);
	assert_ids(&t, want, 3);
	sy_tokens_free(&t);
	sy_tokenizer_close(tok);
}
END_TEST

START_TEST(test_encode_appends_and_reset_reuses_the_allocation)
{
	struct sy_tokenizer *tok = open_kind("bytes");
	struct sy_tokens t;
	sy_tokens_init(&t);
	ck_assert_int_eq(sy_tokenizer_encode_text(tok, "ab", 2, &t), SY_OK);
	ck_assert_int_eq(sy_tokenizer_encode_text(tok, "c", 1, &t), SY_OK);
	static const uint32_t want[] = {97, 98, 99};
	assert_ids(&t, want, 3);

	uint32_t *before = t.ids;
	size_t cap = t.cap;
	sy_tokens_reset(&t);
	ck_assert_uint_eq(t.len, 0);
	ck_assert_int_eq(sy_tokenizer_encode_text(tok, "xyz", 3, &t), SY_OK);
	ck_assert_ptr_eq(t.ids, before); /* no reallocation */
	ck_assert_uint_eq(t.cap, cap);
	static const uint32_t want2[] = {120, 121, 122};
	assert_ids(&t, want2, 3);
	sy_tokens_free(&t);
	ck_assert_ptr_null(t.ids);
	ck_assert_uint_eq(t.len + t.cap, 0);
	sy_tokenizer_close(tok);
}
END_TEST

START_TEST(test_encode_grows_past_initial_capacity)
{
	struct sy_tokenizer *tok = open_kind("bytes");
	struct sy_tokens t = {0};
	static char text[10000];
	for (size_t i = 0; i < sizeof text; i++)
		text[i] = (char)(i * 7);
	for (int k = 0; k < 3; k++)
		ck_assert_int_eq(sy_tokenizer_encode_text(tok, text, sizeof text, &t), SY_OK);
	ck_assert_uint_eq(t.len, 3 * sizeof text);
	for (size_t i = 0; i < t.len; i++)
		ck_assert_uint_eq(t.ids[i], (unsigned char)text[i % sizeof text]);
	sy_tokens_free(&t);
	sy_tokenizer_close(tok);
}
END_TEST

/* ---- decode ---- */

START_TEST(test_bytes_decode_round_trip_all_byte_values)
{
	struct sy_tokenizer *tok = open_kind("bytes");
	char text[600];
	for (size_t i = 0; i < sizeof text; i++)
		text[i] = (char)(i % 256);
	struct sy_tokens t = {0};
	struct sy_textbuf out;
	sy_textbuf_init(&out);
	ck_assert_int_eq(sy_tokenizer_encode_text(tok, text, sizeof text, &t), SY_OK);
	ck_assert_int_eq(sy_textbuf_append(&out, "> ", 2), SY_OK);
	ck_assert_int_eq(sy_tokenizer_decode(tok, t.ids, t.len, &out), SY_OK);
	ck_assert_uint_eq(out.len, 2 + sizeof text); /* appended after "> " */
	ck_assert_mem_eq(out.data, "> ", 2);
	ck_assert_mem_eq(out.data + 2, text, sizeof text);
	ck_assert_int_eq(out.data[out.len], '\0');
	sy_textbuf_free(&out);
	sy_tokens_free(&t);
	sy_tokenizer_close(tok);
}
END_TEST

START_TEST(test_bytes_decode_utf8_text_round_trip)
{
	struct sy_tokenizer *tok = open_kind("bytes");
	const char *s = "caf\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80";
	struct sy_tokens t = {0};
	struct sy_textbuf out = {0};
	ck_assert_int_eq(sy_tokenizer_encode_text(tok, s, strlen(s), &t), SY_OK);
	ck_assert_int_eq(sy_tokenizer_decode(tok, t.ids, t.len, &out), SY_OK);
	ck_assert_str_eq(out.data, s);
	sy_textbuf_free(&out);
	sy_tokens_free(&t);
	sy_tokenizer_close(tok);
}
END_TEST

START_TEST(test_bytes_decode_id_above_255_is_erange_and_leaves_out)
{
	struct sy_tokenizer *tok = open_kind("bytes");
	static const uint32_t ids[] = {104, 105, 256};
	struct sy_textbuf out = {0};
	ck_assert_int_eq(sy_textbuf_append(&out, "keep", 4), SY_OK);
	ck_assert_int_eq(sy_tokenizer_decode(tok, ids, 3, &out), SY_ERANGE);
	ck_assert_uint_eq(out.len, 4);
	ck_assert_str_eq(out.data, "keep");
	ck_assert_int_eq(sy_tokenizer_decode(tok, NULL, 0, &out), SY_OK);
	ck_assert_int_eq(sy_tokenizer_decode(tok, NULL, 1, &out), SY_EINVAL);
	sy_textbuf_free(&out);
	sy_tokenizer_close(tok);
}
END_TEST

/* ---- chat rendering (ChatML) ---- */

static const struct sy_chat_message three_msgs[] = {
	{.role = SPAN("system"), .content = SPAN("You are terse.")},
	{.role = SPAN("user"), .content = SPAN("Hi \xC3\xA9")},
	{.role = SPAN("assistant"), .content = SPAN("Hello.")},
};

#define THREE_MSGS_TEXT                                                        \
	"<|im_start|>system\nYou are terse.<|im_end|>\n"                       \
	"<|im_start|>user\nHi \xC3\xA9<|im_end|>\n"                            \
	"<|im_start|>assistant\nHello.<|im_end|>\n"

START_TEST(test_chatml_render_without_generation_prompt)
{
	struct sy_tokenizer *tok = open_kind("bytes");
	struct sy_textbuf out = {0};
	ck_assert_int_eq(sy_tokenizer_render_chat(tok, three_msgs, 3, false, &out), SY_OK);
	ck_assert_str_eq(out.data, THREE_MSGS_TEXT);
	ck_assert_uint_eq(out.len, strlen(THREE_MSGS_TEXT));
	sy_textbuf_free(&out);
	sy_tokenizer_close(tok);
}
END_TEST

START_TEST(test_chatml_render_with_generation_prompt)
{
	struct sy_tokenizer *tok = open_kind("bytes");
	struct sy_textbuf out = {0};
	ck_assert_int_eq(sy_tokenizer_render_chat(tok, three_msgs, 3, true, &out), SY_OK);
	ck_assert_str_eq(out.data, THREE_MSGS_TEXT "<|im_start|>assistant\n");
	sy_textbuf_free(&out);
	sy_tokenizer_close(tok);
}
END_TEST

START_TEST(test_chatml_render_appends)
{
	struct sy_tokenizer *tok = open_kind("bytes");
	struct sy_textbuf out = {0};
	const struct sy_chat_message m = {.role = SPAN("user"), .content = SPAN("x")};
	ck_assert_int_eq(sy_tokenizer_render_chat(tok, &m, 1, false, &out), SY_OK);
	ck_assert_int_eq(sy_tokenizer_render_chat(tok, &m, 1, true, &out), SY_OK);
	ck_assert_str_eq(out.data, "<|im_start|>user\nx<|im_end|>\n"
				   "<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n");
	sy_textbuf_reset(&out);
	ck_assert_uint_eq(out.len, 0);
	ck_assert_str_eq(out.data, "");
	sy_textbuf_free(&out);
	sy_tokenizer_close(tok);
}
END_TEST

START_TEST(test_chatml_empty_content_and_no_messages)
{
	struct sy_tokenizer *tok = open_kind("bytes");
	struct sy_textbuf out = {0};
	const struct sy_chat_message m = {.role = SPAN("user"), .content = {NULL, 0}};
	ck_assert_int_eq(sy_tokenizer_render_chat(tok, &m, 1, false, &out), SY_OK);
	ck_assert_str_eq(out.data, "<|im_start|>user\n<|im_end|>\n");
	sy_textbuf_reset(&out);
	ck_assert_int_eq(sy_tokenizer_render_chat(tok, NULL, 0, true, &out), SY_OK);
	ck_assert_str_eq(out.data, "<|im_start|>assistant\n");
	sy_textbuf_reset(&out);
	ck_assert_int_eq(sy_tokenizer_render_chat(tok, NULL, 0, false, &out), SY_OK);
	ck_assert_uint_eq(out.len, 0);
	sy_textbuf_free(&out);
	sy_tokenizer_close(tok);
}
END_TEST

START_TEST(test_chatml_name_and_tool_call_id_are_not_rendered)
{
	struct sy_tokenizer *tok = open_kind("bytes");
	struct sy_textbuf out = {0};
	const struct sy_chat_message m = {.role = SPAN("tool"), .content = SPAN("42"),
					  .name = SPAN("calc"),
					  .tool_call_id = SPAN("call_1")};
	ck_assert_int_eq(sy_tokenizer_render_chat(tok, &m, 1, false, &out), SY_OK);
	ck_assert_str_eq(out.data, "<|im_start|>tool\n42<|im_end|>\n");
	sy_textbuf_free(&out);
	sy_tokenizer_close(tok);
}
END_TEST

START_TEST(test_chatml_empty_role_is_einval_and_leaves_outputs)
{
	struct sy_tokenizer *tok = open_kind("bytes");
	const struct sy_chat_message msgs[] = {
		{.role = SPAN("user"), .content = SPAN("fine")},
		{.role = {"", 0}, .content = SPAN("no role")},
	};
	struct sy_textbuf out = {0};
	struct sy_tokens t = {0};
	ck_assert_int_eq(sy_textbuf_append(&out, "keep", 4), SY_OK);
	ck_assert_int_eq(sy_tokens_append(&t, (const uint32_t[]){7}, 1), SY_OK);
	ck_assert_int_eq(sy_tokenizer_render_chat(tok, msgs, 2, true, &out), SY_EINVAL);
	ck_assert_int_eq(sy_tokenizer_encode_chat(tok, msgs, 2, true, &t), SY_EINVAL);
	ck_assert_str_eq(out.data, "keep");
	ck_assert_uint_eq(t.len, 1);
	/* NULL span with a length is rejected too */
	const struct sy_chat_message bad = {.role = SPAN("user"), .content = {NULL, 3}};
	ck_assert_int_eq(sy_tokenizer_render_chat(tok, &bad, 1, false, &out), SY_EINVAL);
	ck_assert_int_eq(sy_tokenizer_render_chat(tok, NULL, 1, false, &out), SY_EINVAL);
	sy_textbuf_free(&out);
	sy_tokens_free(&t);
	sy_tokenizer_close(tok);
}
END_TEST

START_TEST(test_bytes_encode_chat_equals_bytes_of_rendered_text)
{
	struct sy_tokenizer *tok = open_kind("bytes");
	for (int gen = 0; gen <= 1; gen++) {
		struct sy_textbuf text = {0};
		struct sy_tokens t = {0};
		ck_assert_int_eq(sy_tokenizer_render_chat(tok, three_msgs, 3, gen, &text), SY_OK);
		ck_assert_int_eq(sy_tokens_append(&t, (const uint32_t[]){1, 2}, 2), SY_OK);
		ck_assert_int_eq(sy_tokenizer_encode_chat(tok, three_msgs, 3, gen, &t), SY_OK);
		ck_assert_uint_eq(t.len, 2 + text.len);
		ck_assert_uint_eq(t.ids[0], 1);
		ck_assert_uint_eq(t.ids[1], 2);
		for (size_t i = 0; i < text.len; i++)
			ck_assert_uint_eq(t.ids[2 + i], (unsigned char)text.data[i]);
		/* the first ids spell "<|im_start|>system\n" */
		static const uint32_t head[] = {'<', '|', 'i', 'm', '_', 's', 't', 'a',
						'r', 't', '|', '>', 's', 'y', 's', 't',
						'e', 'm', '\n'};
		for (size_t i = 0; i < N_OF(head); i++)
			ck_assert_uint_eq(t.ids[2 + i], head[i]);
		sy_textbuf_free(&text);
		sy_tokens_free(&t);
	}
	sy_tokenizer_close(tok);
}
END_TEST

/* ---- kinds ---- */

START_TEST(test_open_hf_missing_dir_is_eio_naming_the_file)
{
	struct sy_tokenizer *tok = (struct sy_tokenizer *)&tok; /* poison */
	char err[256];
	ck_assert_int_eq(sy_tokenizer_open("hf", "/nonexistent", &tok, err, sizeof err),
			 SY_EIO);
	ck_assert_ptr_null(tok);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent/tokenizer.json"));
}
END_TEST

START_TEST(test_open_hf_without_path_is_einval)
{
	struct sy_tokenizer *tok = (struct sy_tokenizer *)&tok;
	char err[256];
	ck_assert_int_eq(sy_tokenizer_open("hf", NULL, &tok, err, sizeof err), SY_EINVAL);
	ck_assert_ptr_null(tok);
	ck_assert_ptr_nonnull(strstr(err, "path"));
}
END_TEST

START_TEST(test_open_unknown_kind_is_einval)
{
	struct sy_tokenizer *tok = NULL;
	char err[256];
	ck_assert_int_eq(sy_tokenizer_open("sentencepiece", NULL, &tok, err, sizeof err),
			 SY_EINVAL);
	ck_assert_ptr_null(tok);
	ck_assert_ptr_nonnull(strstr(err, "sentencepiece"));
	ck_assert_int_eq(sy_tokenizer_open(NULL, NULL, &tok, err, sizeof err), SY_EINVAL);
	ck_assert_int_eq(sy_tokenizer_open("Bytes", NULL, &tok, NULL, 0), SY_EINVAL);
	/* a tiny error buffer is truncated, still NUL-terminated */
	char small[8];
	ck_assert_int_eq(sy_tokenizer_open("nope", NULL, &tok, small, sizeof small),
			 SY_EINVAL);
	ck_assert_uint_eq(strlen(small), sizeof small - 1);
}
END_TEST

START_TEST(test_off_has_no_ids_but_renders)
{
	struct sy_tokenizer *tok = open_kind("off");
	ck_assert_str_eq(sy_tokenizer_kind(tok), "off");
	ck_assert(!sy_tokenizer_has_ids(tok));
	struct sy_tokens t = {0};
	struct sy_textbuf out = {0};
	ck_assert_int_eq(sy_tokenizer_encode_text(tok, "abc", 3, &t), SY_EUNSUPPORTED);
	ck_assert_int_eq(sy_tokenizer_encode_chat(tok, three_msgs, 3, true, &t),
			 SY_EUNSUPPORTED);
	ck_assert_uint_eq(t.len, 0);
	ck_assert_int_eq(sy_tokenizer_decode(tok, (const uint32_t[]){65}, 1, &out),
			 SY_EUNSUPPORTED);
	ck_assert_int_eq(sy_tokenizer_render_chat(tok, three_msgs, 3, false, &out), SY_OK);
	ck_assert_str_eq(out.data, THREE_MSGS_TEXT);
	sy_textbuf_free(&out);
	sy_tokenizer_close(tok);
}
END_TEST

START_TEST(test_bytes_kind_and_null_arguments)
{
	struct sy_tokenizer *tok = open_kind("bytes");
	ck_assert_str_eq(sy_tokenizer_kind(tok), "bytes");
	ck_assert(sy_tokenizer_has_ids(tok));
	struct sy_tokens t = {0};
	ck_assert_int_eq(sy_tokenizer_encode_text(NULL, "a", 1, &t), SY_EINVAL);
	ck_assert_int_eq(sy_tokenizer_encode_text(tok, "a", 1, NULL), SY_EINVAL);
	ck_assert_int_eq(sy_tokenizer_encode_text(tok, NULL, 1, &t), SY_EINVAL);
	ck_assert_int_eq(sy_tokens_append(&t, NULL, 1), SY_EINVAL);
	ck_assert_uint_eq(t.len, 0);
	ck_assert_int_eq(sy_tokenizer_open("bytes", NULL, NULL, NULL, 0), SY_EINVAL);
	sy_tokenizer_close(tok);
	sy_tokenizer_close(NULL); /* no-op */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tokenizer");
	TCase *b = tcase_create("bytes");
	tcase_add_test(b, test_bytes_ascii_is_one_token_per_byte);
	tcase_add_test(b, test_bytes_two_byte_utf8_e_acute);
	tcase_add_test(b, test_bytes_three_byte_utf8_cjk);
	tcase_add_test(b, test_bytes_four_byte_utf8_emoji);
	tcase_add_test(b, test_bytes_empty_text_appends_nothing);
	tcase_add_test(b, test_bytes_nul_byte_inside_text_is_token_zero);
	tcase_add_test(b, test_encode_appends_and_reset_reuses_the_allocation);
	tcase_add_test(b, test_encode_grows_past_initial_capacity);
	tcase_add_test(b, test_bytes_decode_round_trip_all_byte_values);
	tcase_add_test(b, test_bytes_decode_utf8_text_round_trip);
	tcase_add_test(b, test_bytes_decode_id_above_255_is_erange_and_leaves_out);
	suite_add_tcase(s, b);

	TCase *c = tcase_create("chat");
	tcase_add_test(c, test_chatml_render_without_generation_prompt);
	tcase_add_test(c, test_chatml_render_with_generation_prompt);
	tcase_add_test(c, test_chatml_render_appends);
	tcase_add_test(c, test_chatml_empty_content_and_no_messages);
	tcase_add_test(c, test_chatml_name_and_tool_call_id_are_not_rendered);
	tcase_add_test(c, test_chatml_empty_role_is_einval_and_leaves_outputs);
	tcase_add_test(c, test_bytes_encode_chat_equals_bytes_of_rendered_text);
	suite_add_tcase(s, c);

	TCase *k = tcase_create("kinds");
	tcase_add_test(k, test_open_hf_missing_dir_is_eio_naming_the_file);
	tcase_add_test(k, test_open_hf_without_path_is_einval);
	tcase_add_test(k, test_open_unknown_kind_is_einval);
	tcase_add_test(k, test_off_has_no_ids_but_renders);
	tcase_add_test(k, test_bytes_kind_and_null_arguments);
	suite_add_tcase(s, k);

	return sy_check_run(s);
}
