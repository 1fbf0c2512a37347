/* test_mock_tok.c — mock engine tokenizer/hash adapter: ChatML rendering
 * with the bytes tokenizer, whole-page counting, and the SGLang block-hash
 * golden values (sglang-wire.md §11) through the adapter. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "tools/mock-engine/tok.h"
#include "sy_check.h"

START_TEST(test_chat_renders_chatml_bytes)
{
	struct mock_tok t;
	ck_assert_int_eq(mock_tok_init(&t, "bytes", NULL), 0);
	json_t *m = json_loads("[{\"role\":\"user\",\"content\":\"hi\"}]", 0, NULL);
	uint32_t *ids;
	size_t n;
	ck_assert_int_eq(mock_tok_chat(&t, m, &ids, &n), 0);
	const char *want = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n";
	ck_assert_uint_eq(n, strlen(want));
	for (size_t i = 0; i < n; i++)
		ck_assert_uint_eq(ids[i], (uint8_t)want[i]);
	free(ids);
	json_decref(m);
	/* content parts are concatenated; page hashes match the direct chain */
	json_t *parts = json_loads("[{\"role\":\"user\",\"content\":[{\"type\":\"text\","
				   "\"text\":\"h\"},{\"type\":\"text\",\"text\":\"i\"}]}]", 0, NULL);
	ck_assert_int_eq(mock_tok_chat(&t, parts, &ids, &n), 0);
	ck_assert_uint_eq(n, strlen(want));
	ck_assert_uint_eq(ids[17], 'h');
	ck_assert_uint_eq(ids[18], 'i');
	free(ids);
	json_decref(parts);
	json_t *bad = json_loads("[{\"content\":\"x\"}]", 0, NULL);
	ck_assert_int_ne(mock_tok_chat(&t, bad, &ids, &n), 0);
	json_decref(bad);
	mock_tok_close(&t);
}
END_TEST

START_TEST(test_only_whole_pages_count)
{
	ck_assert_uint_eq(mock_tok_full_pages(33, 16, false), 2);
	ck_assert_uint_eq(mock_tok_full_pages(33, 16, true), 2);
	ck_assert_uint_eq(mock_tok_full_pages(32, 16, true), 1);
	ck_assert_uint_eq(mock_tok_full_pages(1, 16, true), 0);
}
END_TEST

START_TEST(test_block_hash_golden_values)
{
	int64_t ids[4];
	const uint32_t u[] = {1, 2, 3, 4};
	ck_assert_int_eq(mock_tok_page_hashes(u, 4, 4, false, ids, 4), 1);
	ck_assert_int_eq(ids[0], -3488128144981237669LL);
	const uint32_t b[] = {10, 20, 30, 40, 50};
	/* [10,20,30,40] bigram/4 is a short page: the mock caches none */
	ck_assert_int_eq(mock_tok_page_hashes(b, 4, 4, true, ids, 4), 0);
	/* [10,20] bigram: one pair, whole at block size 1, same digest as golden */
	ck_assert_int_eq(mock_tok_page_hashes(b, 2, 1, true, ids, 4), 1);
	ck_assert_int_eq(ids[0], 978178666101069530LL);
	ck_assert_int_eq(mock_tok_page_hashes(b, 5, 2, true, ids, 4), 2);
	ck_assert_int_eq(ids[0], -8847804484166691499LL);
	ck_assert_int_eq(ids[1], 4989791362144317498LL);
}
END_TEST

START_TEST(test_pages_of_a_longer_sequence_extend_the_prompt_pages)
{
	/* the output pages cached at finish continue the prompt's chain */
	uint32_t seq[11];
	for (uint32_t i = 0; i < 11; i++)
		seq[i] = 100 + i;
	struct mock_pages p, q;
	ck_assert_int_eq(mock_tok_pages(seq, 5, 4, false, &p), 0);
	ck_assert_int_eq(mock_tok_pages(seq, 11, 4, false, &q), 0);
	ck_assert_uint_eq(p.n, 1);
	ck_assert_uint_eq(q.n, 2);
	ck_assert_uint_eq(q.tok_per_page, 4);
	ck_assert_ptr_null(q.tokens);
	ck_assert_int_eq(p.hashes[0], q.hashes[0]);
	mock_tok_pages_free(&p);
	mock_tok_pages_free(&q);
	/* bigram: flattened pairs per page */
	ck_assert_int_eq(mock_tok_pages(seq, 5, 2, true, &p), 0);
	ck_assert_uint_eq(p.n, 2);
	ck_assert_uint_eq(p.tok_per_page, 4);
	const uint32_t want[] = {100, 101, 101, 102, 102, 103, 103, 104};
	ck_assert_mem_eq(p.tokens, want, sizeof(want));
	mock_tok_pages_free(&p);
	ck_assert_ptr_null(p.hashes);
	ck_assert_int_lt(mock_tok_pages(seq, 5, 0, false, &p), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mock_tok");
	TCase *tc = tcase_create("tok");
	tcase_add_test(tc, test_chat_renders_chatml_bytes);
	tcase_add_test(tc, test_only_whole_pages_count);
	tcase_add_test(tc, test_block_hash_golden_values);
	tcase_add_test(tc, test_pages_of_a_longer_sequence_extend_the_prompt_pages);
	suite_add_tcase(s, tc);
	return sy_check_run(s);
}
