/* test_hf.c — the "hf" tokenizer on a small synthetic byte-level BPE
 * (written to a temporary directory by each test): pipeline order, BPE
 * paths, NFC, added tokens, post-processor, lossy decode, errors naming
 * unsupported components, chat-template fingerprint errors and fallback,
 * the tojson and strip helpers of chat templates, and concurrent use.
 * Real tokenizers are tested against Hugging Face's own implementation in
 * tests/tokenizer/ (oracle tests).
 */
#include <check.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/tokenizer/chat-template.h"
#include "common/tokenizer/hf-internal.h"
#include "common/tokenizer/tokenizer.h"
#include "sy_check.h"

static const char QWEN_PATTERN[] =
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
	"?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

static char dir[64];

/* UTF-8 of the byte-level char of byte b */
static void bl(char *dst, uint8_t b)
{
	uint32_t cp = hf_byte_to_cp(b);
	if (cp < 0x80) {
		dst[0] = (char)cp;
		dst[1] = 0;
	} else {
		dst[0] = (char)(0xC0 | cp >> 6);
		dst[1] = (char)(0x80 | (cp & 0x3F));
		dst[2] = 0;
	}
}

/* ids: byte b → b; "ab" 256, "abc" 257, "ĠĠ" 258; added <|x|> 300 (special),
 * <y> 301. */
static json_t *base_tokenizer(void)
{
	json_t *vocab = json_object();
	char k[8];
	for (unsigned b = 0; b < 256; b++) {
		bl(k, (uint8_t)b);
		json_object_set_new(vocab, k, json_integer(b));
	}
	json_object_set_new(vocab, "ab", json_integer(256));
	json_object_set_new(vocab, "abc", json_integer(257));
	json_object_set_new(vocab, "\xC4\xA0\xC4\xA0", json_integer(258));
	static const char skeleton[] =
		"{\"version\": \"1.0\", \"normalizer\": {\"type\": \"NFC\"},"
		" \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": ["
		"  {\"type\": \"Split\", \"pattern\": {\"Regex\": \"\"}, \"behavior\": \"Isolated\","
		"   \"invert\": false},"
		"  {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": false,"
		"   \"use_regex\": false}]},"
		" \"model\": {\"type\": \"BPE\", \"dropout\": null, \"ignore_merges\": false,"
		"  \"merges\": [\"a b\", \"ab c\", \"\u0120 \u0120\"]},"
		" \"added_tokens\": ["
		"  {\"id\": 300, \"content\": \"<|x|>\", \"single_word\": false, \"lstrip\": false,"
		"   \"rstrip\": false, \"normalized\": false, \"special\": true},"
		"  {\"id\": 301, \"content\": \"<y>\", \"single_word\": false, \"lstrip\": false,"
		"   \"rstrip\": false, \"normalized\": false, \"special\": false}],"
		" \"post_processor\": {\"type\": \"TemplateProcessing\","
		"  \"single\": [{\"SpecialToken\": {\"id\": \"<|x|>\", \"type_id\": 0}},"
		"             {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}],"
		"  \"special_tokens\": {\"<|x|>\": {\"id\": \"<|x|>\", \"ids\": [300],"
		"                      \"tokens\": [\"<|x|>\"]}}},"
		" \"decoder\": {\"type\": \"ByteLevel\"}}";
	json_error_t e;
	json_t *root = json_loads(skeleton, 0, &e);
	ck_assert_msg(root != NULL, "fixture: %s", e.text);
	json_object_set_new(json_object_get(root, "model"), "vocab", vocab);
	json_t *split = json_array_get(
		json_object_get(json_object_get(root, "pre_tokenizer"), "pretokenizers"), 0);
	json_object_set_new(json_object_get(split, "pattern"), "Regex", json_string(QWEN_PATTERN));
	return root;
}

static void write_dir(json_t *tokenizer, const char *chat_template)
{
	strcpy(dir, "/tmp/sy_test_hf_XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char path[128];
	snprintf(path, sizeof path, "%s/tokenizer.json", dir);
	ck_assert_int_eq(json_dump_file(tokenizer, path, 0), 0);
	json_t *cfg = json_pack("{s:s, s:s}", "bos_token", "<|x|>", "eos_token", "<y>");
	if (chat_template)
		json_object_set_new(cfg, "chat_template", json_string(chat_template));
	snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
	ck_assert_int_eq(json_dump_file(cfg, path, 0), 0);
	json_decref(cfg);
	json_decref(tokenizer);
}

static void remove_dir(void)
{
	char path[128];
	snprintf(path, sizeof path, "%s/tokenizer.json", dir);
	unlink(path);
	snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
	unlink(path);
	rmdir(dir);
}

static struct sy_tokenizer *open_fixture(void)
{
	write_dir(base_tokenizer(), "{{ unknown }}");
	struct sy_tokenizer *tok = NULL;
	char err[512];
	int rc = sy_tokenizer_open_ex("hf", dir, SY_TOKENIZER_CHAT_TEMPLATE_FALLBACK, &tok, err,
				      sizeof err);
	remove_dir();
	ck_assert_msg(rc == SY_OK, "open: %s", err);
	return tok;
}

static void expect_ids(struct sy_tokenizer *tok, const char *text, size_t len,
		       const uint32_t *want, size_t n)
{
	struct sy_tokens t = {0};
	ck_assert_int_eq(sy_tokenizer_encode_text(tok, text, len, &t), SY_OK);
	ck_assert_uint_eq(t.len, n);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(t.ids[i] == want[i], "id %zu: got %u want %u", i, t.ids[i], want[i]);
	sy_tokens_free(&t);
}

#define IDS(...) ((const uint32_t[]){__VA_ARGS__}), sizeof((const uint32_t[]){__VA_ARGS__}) / 4

START_TEST(test_bpe_merges_by_rank_and_keeps_the_space_piece)
{
	struct sy_tokenizer *tok = open_fixture();
	expect_ids(tok, "abc abc", 7, IDS(257, 32, 257));
	expect_ids(tok, "abd", 3, IDS(256, 'd'));
	expect_ids(tok, "x  y", 4, IDS('x', 32, 32, 'y')); /* "\s+(?!\S)" leaves one space */
	expect_ids(tok, "x   ", 4, IDS('x', 258, 32));
	sy_tokenizer_close(tok);
}
END_TEST

START_TEST(test_long_words_take_the_heap_path_with_the_same_result)
{
	struct sy_tokenizer *tok = open_fixture();
	char text[300];
	uint32_t want[100];
	for (int i = 0; i < 100; i++) {
		memcpy(text + 3 * i, "abc", 3);
		want[i] = 257;
	}
	for (int k = 0; k < 2; k++) /* second time from the long-word cache */
		expect_ids(tok, text, 300, want, 100);
	expect_ids(tok, text, 30, want, 10);
	sy_tokenizer_close(tok);
}
END_TEST

START_TEST(test_added_tokens_split_before_bpe)
{
	struct sy_tokenizer *tok = open_fixture();
	expect_ids(tok, "ab<|x|>c<y><|x", 14, IDS(256, 300, 'c', 301, '<', '|', 'x'));
	sy_tokenizer_close(tok);
}
END_TEST

START_TEST(test_nfc_composes_before_bpe)
{
	struct sy_tokenizer *tok = open_fixture();
	expect_ids(tok, "e\xCC\x81", 3, IDS(0xC3, 0xA9)); /* e + U+0301 → é */
	expect_ids(tok, "\xC3\xA9", 2, IDS(0xC3, 0xA9));
	sy_tokenizer_close(tok);
}
END_TEST

START_TEST(test_invalid_utf8_is_emalformed_and_leaves_out)
{
	struct sy_tokenizer *tok = open_fixture();
	struct sy_tokens t = {0};
	ck_assert_int_eq(sy_tokenizer_encode_text(tok, "ab", 2, &t), SY_OK);
	ck_assert_int_eq(sy_tokenizer_encode_text(tok, "a\xC3", 2, &t), SY_EMALFORMED);
	ck_assert_int_eq(sy_tokenizer_encode_text(tok, "\xED\xA0\x80", 3, &t), SY_EMALFORMED);
	ck_assert_uint_eq(t.len, 1);
	sy_tokens_free(&t);
	sy_tokenizer_close(tok);
}
END_TEST

START_TEST(test_encode_prompt_adds_the_template_special_token)
{
	struct sy_tokenizer *tok = open_fixture();
	struct sy_tokens t = {0};
	ck_assert_int_eq(sy_tokenizer_encode_prompt(tok, "ab", 2, &t), SY_OK);
	ck_assert_uint_eq(t.len, 2);
	ck_assert_uint_eq(t.ids[0], 300);
	ck_assert_uint_eq(t.ids[1], 256);
	sy_tokens_free(&t);
	sy_tokenizer_close(tok);
}
END_TEST

START_TEST(test_decode_is_lossy_utf8_and_can_skip_specials)
{
	struct sy_tokenizer *tok = open_fixture();
	struct sy_textbuf b = {0};
	ck_assert_int_eq(sy_tokenizer_decode(tok, IDS(257, 32, 257), &b), SY_OK);
	ck_assert_str_eq(b.data, "abc abc");
	sy_textbuf_reset(&b);
	ck_assert_int_eq(sy_tokenizer_decode(tok, IDS(0xE4, 0xB8, 'a', 0xFF), &b), SY_OK);
	ck_assert_str_eq(b.data, "\xEF\xBF\xBD" "a" "\xEF\xBF\xBD"); /* maximal subparts */
	sy_textbuf_reset(&b);
	ck_assert_int_eq(sy_tokenizer_decode(tok, IDS(300, 97, 301), &b), SY_OK);
	ck_assert_str_eq(b.data, "<|x|>a<y>");
	sy_textbuf_reset(&b);
	ck_assert_int_eq(sy_tokenizer_decode_ex(tok, IDS(300, 97, 301), true, &b), SY_OK);
	ck_assert_str_eq(b.data, "a<y>"); /* <y> is not special */
	ck_assert_int_eq(sy_tokenizer_decode(tok, IDS(299), &b), SY_ERANGE);
	ck_assert_int_eq(sy_tokenizer_decode(tok, IDS(100000), &b), SY_ERANGE);
	ck_assert_str_eq(b.data, "a<y>");
	sy_textbuf_free(&b);
	sy_tokenizer_close(tok);
}
END_TEST

START_TEST(test_normalized_added_token_matches_after_nfc)
{
	json_t *t = base_tokenizer();
	json_t *y = json_array_get(json_object_get(t, "added_tokens"), 1);
	json_object_set_new(y, "content", json_string("\xC3\xA9!")); /* "é!" */
	json_object_set_new(y, "normalized", json_true());
	write_dir(t, "x");
	struct sy_tokenizer *tok = NULL;
	char err[512];
	int rc = sy_tokenizer_open_ex("hf", dir, SY_TOKENIZER_CHAT_TEMPLATE_FALLBACK, &tok, err,
				      sizeof err);
	remove_dir();
	ck_assert_msg(rc == SY_OK, "%s", err);
	expect_ids(tok, "ae\xCC\x81!", 5, IDS('a', 301)); /* e + U+0301 → é, then "é!" */
	expect_ids(tok, "a\xC3\xA9!", 4, IDS('a', 301));
	sy_tokenizer_close(tok);
}
END_TEST

START_TEST(test_segment_cache_is_exact_and_per_tokenizer)
{
	struct sy_tokenizer *a = open_fixture(), *b = open_fixture();
	char seg[200];
	memset(seg, 'a', sizeof seg);
	memcpy(seg + 100, "abc", 3);
	struct sy_tokens t1 = {0}, t2 = {0}, t3 = {0};
	ck_assert_int_eq(sy_tokenizer_encode_text(a, seg, sizeof seg, &t1), SY_OK);
	ck_assert_int_eq(sy_tokenizer_encode_text(a, seg, sizeof seg, &t2), SY_OK); /* hit */
	seg[150] = 'b'; /* same length and hash slot candidates, different text */
	ck_assert_int_eq(sy_tokenizer_encode_text(b, seg, sizeof seg, &t3), SY_OK);
	ck_assert_uint_eq(t1.len, t2.len);
	ck_assert_mem_eq(t1.ids, t2.ids, t1.len * sizeof t1.ids[0]);
	ck_assert(t3.len != t1.len || memcmp(t1.ids, t3.ids, t1.len * 4) != 0);
	sy_tokens_free(&t1);
	sy_tokens_free(&t2);
	sy_tokens_free(&t3);
	sy_tokenizer_close(a);
	sy_tokenizer_close(b);
}
END_TEST

/* ---- unsupported components: load errors naming them ---- */

static void expect_open_error(json_t *tokenizer, const char *tmpl, unsigned flags, int want,
			      const char *needle)
{
	write_dir(tokenizer, tmpl);
	struct sy_tokenizer *tok = (struct sy_tokenizer *)&tok;
	char err[512] = "";
	int rc = sy_tokenizer_open_ex("hf", dir, flags, &tok, err, sizeof err);
	remove_dir();
	ck_assert_msg(rc == want, "rc %d (%s)", rc, err);
	ck_assert_ptr_null(tok);
	ck_assert_msg(strstr(err, needle), "\"%s\" not in \"%s\"", needle, err);
}

START_TEST(test_unsupported_components_are_named_at_load)
{
	json_t *t = base_tokenizer();
	json_object_set_new(json_object_get(t, "model"), "type", json_string("WordPiece"));
	expect_open_error(t, "x", 1, SY_EUNSUPPORTED, "WordPiece");

	t = base_tokenizer();
	json_object_set_new(t, "pre_tokenizer", json_pack("{s:s}", "type", "Metaspace"));
	expect_open_error(t, "x", 1, SY_EUNSUPPORTED, "Metaspace");

	t = base_tokenizer();
	json_object_set_new(t, "normalizer", json_pack("{s:s}", "type", "Lowercase"));
	expect_open_error(t, "x", 1, SY_EUNSUPPORTED, "Lowercase");

	t = base_tokenizer();
	json_object_set_new(t, "decoder", json_pack("{s:s}", "type", "WordPiece"));
	expect_open_error(t, "x", 1, SY_EUNSUPPORTED, "decoder \"WordPiece\"");

	t = base_tokenizer();
	json_object_set_new(json_array_get(json_object_get(t, "added_tokens"), 0), "lstrip",
			    json_true());
	expect_open_error(t, "x", 1, SY_EUNSUPPORTED, "lstrip");

	t = base_tokenizer();
	json_t *split = json_array_get(
		json_object_get(json_object_get(t, "pre_tokenizer"), "pretokenizers"), 0);
	json_object_set_new(split, "behavior", json_string("MergedWithPrevious"));
	expect_open_error(t, "x", 1, SY_EUNSUPPORTED, "MergedWithPrevious");

	t = base_tokenizer();
	json_object_set_new(json_object_get(t, "model"), "byte_fallback", json_true());
	expect_open_error(t, "x", 1, SY_EUNSUPPORTED, "byte_fallback");

	t = base_tokenizer();
	json_object_set_new(t, "pre_tokenizer", json_pack("{s:s, s:{s:s}, s:s}", "type", "Split",
							  "pattern", "Regex", "x", "behavior",
							  "Isolated"));
	expect_open_error(t, "x", 1, SY_EUNSUPPORTED, "ByteLevel");
}
END_TEST

START_TEST(test_unknown_chat_template_fails_unless_fallback)
{
	expect_open_error(base_tokenizer(), "{{ messages }}", 0, SY_EUNSUPPORTED,
			  "--chat-template-fallback");
	expect_open_error(base_tokenizer(), NULL, 0, SY_EUNSUPPORTED, "no chat_template");

	struct sy_tokenizer *tok = open_fixture(); /* unknown template + fallback */
	ck_assert_str_eq(sy_tokenizer_chat_template(tok), "chatml-fallback");
	struct sy_chat_message m[] = {{.role = {"user", 4}, .content = {"ab", 2}}};
	struct sy_textbuf b = {0};
	ck_assert_int_eq(sy_tokenizer_render_chat(tok, m, 1, true, &b), SY_OK);
	ck_assert_str_eq(b.data, "<|im_start|>user\nab<|im_end|>\n<|im_start|>assistant\n");
	sy_textbuf_free(&b);
	sy_tokenizer_close(tok);
}
END_TEST

START_TEST(test_a_tokenizer_json_file_and_a_chat_template_file_open)
{
	write_dir(base_tokenizer(), NULL); /* the config has no template */
	char file[128], tmpl[128], err[512] = "";
	snprintf(file, sizeof file, "%s/tokenizer.json", dir);
	snprintf(tmpl, sizeof tmpl, "%s/mine.jinja", dir);
	FILE *f = fopen(tmpl, "w");
	ck_assert_ptr_nonnull(f);
	fputs("{{ my template }}", f);
	fclose(f);
	struct sy_tokenizer *tok = NULL;
	/* the file path: the directory's config is read beside it */
	int rc = sy_tokenizer_open_files("hf", file, NULL, SY_TOKENIZER_CHAT_TEMPLATE_FALLBACK, &tok,
					 err, sizeof err);
	ck_assert_msg(rc == SY_OK, "%s", err);
	sy_tokenizer_close(tok);
	/* an unknown template file is named in the refusal */
	rc = sy_tokenizer_open_files("hf", file, tmpl, 0, &tok, err, sizeof err);
	ck_assert_int_eq(rc, SY_EUNSUPPORTED);
	ck_assert_msg(strstr(err, "mine.jinja: unknown chat_template") != NULL, "%s", err);
	rc = sy_tokenizer_open_files("hf", dir, "/nonexistent.jinja", 0, &tok, err, sizeof err);
	ck_assert_int_eq(rc, SY_EIO);
	rc = sy_tokenizer_open_files("bytes", NULL, tmpl, 0, &tok, err, sizeof err);
	ck_assert_int_eq(rc, SY_EINVAL);
	unlink(tmpl);
	remove_dir();
}
END_TEST

/* ---- chat-template helpers ---- */

static void expect_tojson(const char *json, const char *want)
{
	json_error_t e;
	json_t *v = json_loads(json, JSON_DECODE_ANY, &e);
	ck_assert_ptr_nonnull(v);
	struct sy_textbuf b = {0};
	ck_assert_int_eq(sy_chat_tojson(v, &b), SY_OK);
	ck_assert_str_eq(b.data, want);
	sy_textbuf_free(&b);
	json_decref(v);
}

START_TEST(test_tojson_writes_python_json_dumps)
{
	expect_tojson("{\"b\":1,\"a\":[true,null,\"x\"]}", "{\"b\": 1, \"a\": [true, null, \"x\"]}");
	expect_tojson("[1.5, 100.0, 1e16, 1e-5, 0.1, -0.5, 123456789.125, 0.0001]",
		      "[1.5, 100.0, 1e+16, 1e-05, 0.1, -0.5, 123456789.125, 0.0001]");
	expect_tojson("\"a\\\"b\\\\\\n\\u0001\\u00e9/\"", "\"a\\\"b\\\\\\n\\u0001\xC3\xA9/\"");
	expect_tojson("{}", "{}");
	expect_tojson("[]", "[]");
}
END_TEST

START_TEST(test_strip_uses_python_whitespace)
{
	const char *s = " \xE3\x80\x80\x1Cx y\xC2\x85\t";
	struct sy_chat_span r = sy_chat_strip((struct sy_chat_span){s, strlen(s)}, NULL, true, true);
	ck_assert_uint_eq(r.len, 3);
	ck_assert_mem_eq(r.ptr, "x y", 3);
	const char *bom = "\xEF\xBB\xBFx"; /* U+FEFF is not Python whitespace */
	r = sy_chat_strip((struct sy_chat_span){bom, 4}, NULL, true, true);
	ck_assert_uint_eq(r.len, 4);
	r = sy_chat_strip((struct sy_chat_span){"\n\nab\n", 5}, "\n", true, false);
	ck_assert_uint_eq(r.len, 3);
}
END_TEST

/* ---- concurrency: one tokenizer, several threads, thread-local caches ---- */

static struct sy_tokenizer *shared_tok;

static void *worker(void *arg)
{
	(void)arg;
	struct sy_tokens t = {0};
	for (int i = 0; i < 2000; i++) {
		sy_tokens_reset(&t);
		if (sy_tokenizer_encode_text(shared_tok, "abc abd  ab<|x|>", 16, &t) || t.len != 8 ||
		    t.ids[0] != 257 || t.ids[7] != 300)
			return (void *)1;
	}
	sy_tokens_free(&t);
	return NULL;
}

START_TEST(test_threads_share_one_tokenizer)
{
	shared_tok = open_fixture();
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, worker, NULL), 0);
	for (int i = 0; i < 4; i++) {
		void *r;
		pthread_join(th[i], &r);
		ck_assert_ptr_null(r);
	}
	sy_tokenizer_close(shared_tok);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hf");
	TCase *t = tcase_create("hf");
	tcase_set_timeout(t, 60);
	tcase_add_test(t, test_bpe_merges_by_rank_and_keeps_the_space_piece);
	tcase_add_test(t, test_long_words_take_the_heap_path_with_the_same_result);
	tcase_add_test(t, test_added_tokens_split_before_bpe);
	tcase_add_test(t, test_nfc_composes_before_bpe);
	tcase_add_test(t, test_invalid_utf8_is_emalformed_and_leaves_out);
	tcase_add_test(t, test_encode_prompt_adds_the_template_special_token);
	tcase_add_test(t, test_decode_is_lossy_utf8_and_can_skip_specials);
	tcase_add_test(t, test_normalized_added_token_matches_after_nfc);
	tcase_add_test(t, test_segment_cache_is_exact_and_per_tokenizer);
	tcase_add_test(t, test_unsupported_components_are_named_at_load);
	tcase_add_test(t, test_unknown_chat_template_fails_unless_fallback);
	tcase_add_test(t, test_a_tokenizer_json_file_and_a_chat_template_file_open);
	tcase_add_test(t, test_tojson_writes_python_json_dumps);
	tcase_add_test(t, test_strip_uses_python_whitespace);
	tcase_add_test(t, test_threads_share_one_tokenizer);
	suite_add_tcase(s, t);
	return sy_check_run(s);
}
