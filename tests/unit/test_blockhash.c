/* test_blockhash.c — the SGLang block-hash chain against the golden values of
 * ../shared/reference/sglang-wire.md §11, plus cases derived independently.
 *
 * "Derived" values were computed once with /usr/bin/python3 hashlib, by a
 * direct transcription of §11 (not from this code):
 *   prev = sha256(b"sglang-cache-salt-v1\0" + salt).digest() if salt else None
 *   units = [pack('<I', t) for t in toks]                       # unigram
 *         | [pack('<II', toks[j], toks[j+1]) for j in range(len(toks)-1)]
 *   for each page of block_size units:
 *       prev = sha256((prev or b"") + b"".join(page)).digest()
 *       id   = unpack('>q', prev[:8])[0]
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "common/blockhash.h"
#include "common/errors.h"
#include "sy_check.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static void hex_to_digest(const char *hex, struct sy_blockhash_digest *d)
{
	ck_assert_uint_eq(strlen(hex), 2 * SY_BLOCKHASH_DIGEST_LEN);
	for (int i = 0; i < SY_BLOCKHASH_DIGEST_LEN; i++) {
		unsigned v;
		ck_assert_int_eq(sscanf(hex + 2 * i, "%2x", &v), 1);
		d->b[i] = (uint8_t)v;
	}
}

/* Hashes `toks` and asserts the ids equal `want` exactly. */
static void check_chain(const uint32_t *toks, size_t n, uint32_t bs, bool bigram,
			const char *salt, const int64_t *want, size_t n_want)
{
	struct sy_blockhash_params p;
	ck_assert_int_eq(sy_blockhash_params_init(&p, bs, bigram, salt,
						  salt ? strlen(salt) : 0), SY_OK);
	int64_t ids[16];
	ssize_t got = sy_blockhash_chain(toks, n, &p, ids, N_OF(ids), NULL);
	ck_assert_int_eq(got, (ssize_t)n_want);
	ck_assert_uint_eq(sy_blockhash_count(n, bs, bigram), n_want);
	for (size_t i = 0; i < n_want; i++)
		ck_assert_msg(ids[i] == want[i], "page %zu: got %lld want %lld", i,
			      (long long)ids[i], (long long)want[i]);
}

/* ---- golden values, sglang-wire.md §11 ---- */

START_TEST(test_golden_unigram_one_page)
{
	static const uint32_t t[] = {1, 2, 3, 4};
	static const int64_t want[] = {-3488128144981237669LL};
	check_chain(t, N_OF(t), 4, false, NULL, want, N_OF(want));
}
END_TEST

START_TEST(test_golden_bigram_one_page)
{
	static const uint32_t t[] = {10, 20, 30, 40};
	static const int64_t want[] = {-2735951481331064195LL};
	check_chain(t, N_OF(t), 4, true, NULL, want, N_OF(want));
}
END_TEST

START_TEST(test_golden_bigram_two_pages_short_last)
{
	static const uint32_t t[] = {10, 20, 30, 40, 50};
	static const int64_t want[] = {-8847804484166691499LL, 4989791362144317498LL};
	check_chain(t, N_OF(t), 2, true, NULL, want, N_OF(want));
}
END_TEST

START_TEST(test_golden_bigram_of_two_tokens_equals_unigram)
{
	static const uint32_t t[] = {10, 20};
	static const int64_t want[] = {978178666101069530LL};
	check_chain(t, N_OF(t), 4, true, NULL, want, N_OF(want));
	check_chain(t, N_OF(t), 4, false, NULL, want, N_OF(want));
}
END_TEST

START_TEST(test_golden_sha256_of_empty_string_top_8_bytes)
{
	struct sy_blockhash_digest d;
	sy_blockhash_page(NULL, NULL, 0, false, &d);
	ck_assert(sy_blockhash_id(&d) == -2039914840885289964LL);
	struct sy_blockhash_digest e;
	hex_to_digest("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", &e);
	ck_assert_mem_eq(d.b, e.b, sizeof e.b);
}
END_TEST

/* ---- derived with python3 hashlib (see file top) ---- */

START_TEST(test_full_digest_is_returned_and_matches_id)
{
	static const uint32_t t[] = {1, 2, 3, 4};
	struct sy_blockhash_params p;
	ck_assert_int_eq(sy_blockhash_params_init(&p, 4, false, NULL, 0), SY_OK);
	int64_t id;
	struct sy_blockhash_digest d, want;
	ck_assert_int_eq(sy_blockhash_chain(t, 4, &p, &id, 1, &d), 1);
	hex_to_digest("cf97adeedb59e05bfd73a2b4c2a8885708c4f4f70c84c64b27120e72ab733b72", &want);
	ck_assert_mem_eq(d.b, want.b, sizeof want.b);
	ck_assert(sy_blockhash_id(&d) == id);
}
END_TEST

START_TEST(test_unigram_short_last_page_is_hashed)
{
	static const uint32_t t[] = {1, 2, 3, 4, 5};
	static const int64_t want[] = {3817746824117602890LL, -4216701448867210342LL,
				       -2162440187081575450LL};
	check_chain(t, N_OF(t), 2, false, NULL, want, N_OF(want));
}
END_TEST

START_TEST(test_tokens_are_le_u32_including_high_bit)
{
	static const uint32_t t[] = {0, 0x7fffffffu, 0x80000000u, 0xffffffffu,
				     256, 65536, 16777216};
	static const int64_t want[] = {1679361928690476693LL, -3745906225244656346LL,
				       -7620427717818443232LL};
	check_chain(t, N_OF(t), 3, false, NULL, want, N_OF(want));
}
END_TEST

START_TEST(test_bigram_short_last_page)
{
	static const uint32_t t[] = {5, 6, 7, 8, 9, 10, 11};
	static const int64_t want[] = {-2900568514773989563LL, -3702028737701396861LL};
	check_chain(t, N_OF(t), 4, true, NULL, want, N_OF(want));
}
END_TEST

START_TEST(test_salt_seed_digest)
{
	struct sy_blockhash_digest d, want;
	sy_blockhash_salt_seed("tenant-a", 8, &d);
	hex_to_digest("f5d0f785efe6042a4e4b0297a4d712917e1763c850835e93df58b373fd47fd2c", &want);
	ck_assert_mem_eq(d.b, want.b, sizeof want.b);
}
END_TEST

START_TEST(test_salted_unigram_chain)
{
	static const uint32_t t[] = {1, 2, 3, 4, 5};
	static const int64_t want[] = {31502315585564397LL, -6358338539514506595LL,
				       1134643428898174472LL};
	check_chain(t, N_OF(t), 2, false, "tenant-a", want, N_OF(want));
}
END_TEST

START_TEST(test_salted_bigram_chain)
{
	static const uint32_t t[] = {5, 6, 7, 8, 9, 10, 11};
	static const int64_t want[] = {4431024094430704207LL, -3987902815995270066LL};
	check_chain(t, N_OF(t), 4, true, "tenant-a", want, N_OF(want));
}
END_TEST

START_TEST(test_empty_salt_means_no_seed)
{
	struct sy_blockhash_params p;
	ck_assert_int_eq(sy_blockhash_params_init(&p, 4, false, "", 0), SY_OK);
	ck_assert(!p.has_seed);
	static const uint32_t t[] = {1, 2, 3, 4};
	int64_t id;
	ck_assert_int_eq(sy_blockhash_chain(t, 4, &p, &id, 1, NULL), 1);
	ck_assert(id == -3488128144981237669LL);
}
END_TEST

/* t[i] = (i * 2654435761 + 12345) mod 151936, i < 4096 (a vocab-sized spread). */
static void make_long_prompt(uint32_t *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		t[i] = (uint32_t)(((uint64_t)i * 2654435761u + 12345u) % 151936u);
}

START_TEST(test_4096_tokens_block_16_both_modes)
{
	static uint32_t t[4096];
	static int64_t ids[256];
	make_long_prompt(t, 4096);
	struct sy_blockhash_params p;

	ck_assert_int_eq(sy_blockhash_params_init(&p, 16, false, NULL, 0), SY_OK);
	ck_assert_int_eq(sy_blockhash_chain(t, 4096, &p, ids, 256, NULL), 256);
	ck_assert(ids[0] == 1319779867550573888LL);
	ck_assert(ids[255] == -3455719747608360458LL);

	/* bigram: 4095 pairs → ceil(4095/16) = 256 pages, the last one short */
	ck_assert_int_eq(sy_blockhash_params_init(&p, 16, true, NULL, 0), SY_OK);
	ck_assert_int_eq(sy_blockhash_chain(t, 4096, &p, ids, 256, NULL), 256);
	ck_assert(ids[0] == 2503812258241435898LL);
	ck_assert(ids[255] == -2398444895900136899LL);
}
END_TEST

START_TEST(test_large_pages_are_fed_in_chunks)
{
	/* block 300: a bigram page (2,400 bytes) spans several stack chunks */
	static uint32_t t[1000];
	for (uint32_t i = 0; i < 1000; i++)
		t[i] = i;
	static const int64_t uni[] = {3586223578007471961LL, -659529737787978074LL,
				      -572600687985049158LL, 4888473700959073699LL};
	static const int64_t bi[] = {-1897114009897370260LL, 3168362136937318067LL,
				     3315299248940829737LL, 6232048185623018808LL};
	check_chain(t, 1000, 300, false, NULL, uni, N_OF(uni));
	check_chain(t, 1000, 300, true, NULL, bi, N_OF(bi));
}
END_TEST

/* Reference chain for the sweep below: a byte-by-byte transcription of §11
 * hashed with one-shot EVP_Digest (a different OpenSSL entry point from the
 * one blockhash.c uses). */
static void reference_chain(const uint32_t *t, size_t n, uint32_t bs, bool bigram,
			    const struct sy_blockhash_digest *seed, int64_t *ids,
			    size_t *pages)
{
	static uint8_t msg[32 + 8 * 512];
	size_t units = bigram ? (n < 2 ? 0 : n - 1) : n;
	struct sy_blockhash_digest prev;
	bool have_prev = seed != NULL;
	if (seed)
		prev = *seed;
	*pages = 0;
	for (size_t off = 0; off < units; off += bs) {
		size_t len = 0;
		if (have_prev) {
			memcpy(msg, prev.b, 32);
			len = 32;
		}
		for (size_t j = off; j < units && j < off + bs; j++) {
			for (int k = 0; k < (bigram ? 2 : 1); k++) {
				uint32_t v = t[j + (size_t)k];
				msg[len++] = (uint8_t)v;
				msg[len++] = (uint8_t)(v >> 8);
				msg[len++] = (uint8_t)(v >> 16);
				msg[len++] = (uint8_t)(v >> 24);
			}
		}
		unsigned int dl = 0;
		ck_assert(EVP_Digest(msg, len, prev.b, &dl, EVP_sha256(), NULL));
		ck_assert_uint_eq(dl, 32);
		have_prev = true;
		ids[(*pages)++] = sy_blockhash_id(&prev);
	}
}

START_TEST(test_sweep_block_sizes_against_reference)
{
	/* every padding boundary (message + 9 bytes crossing 64-byte blocks),
	 * with and without a previous digest, both paths (fast ≤ 245 unigram /
	 * 122 bigram units per page, Init/Update/Final above) */
	static uint32_t t[600];
	static int64_t got[600], want[600];
	make_long_prompt(t, 600);
	struct sy_blockhash_digest seed;
	sy_blockhash_salt_seed("x", 1, &seed);
	static const uint32_t sizes[] = {1, 2, 3, 5, 6, 7, 13, 14, 15, 16, 17, 29, 30,
					 31, 32, 33, 64, 121, 122, 123, 124, 244,
					 245, 246, 247, 512};
	for (size_t si = 0; si < N_OF(sizes); si++) {
		for (int mode = 0; mode < 4; mode++) {
			bool bigram = mode & 1, salted = mode & 2;
			struct sy_blockhash_params p;
			ck_assert_int_eq(sy_blockhash_params_init(&p, sizes[si], bigram,
								  salted ? "x" : NULL,
								  salted ? 1 : 0), SY_OK);
			for (size_t n = 0; n <= 600; n += (n < 40 ? 1 : 37)) {
				size_t pages;
				reference_chain(t, n, sizes[si], bigram,
						salted ? &seed : NULL, want, &pages);
				ssize_t r = sy_blockhash_chain(t, n, &p, got, 600, NULL);
				ck_assert_int_eq(r, (ssize_t)pages);
				for (size_t i = 0; i < pages; i++)
					ck_assert_msg(got[i] == want[i],
						      "bs %u bigram %d salted %d n %zu page %zu",
						      sizes[si], bigram, salted, n, i);
			}
		}
	}
}
END_TEST

/* ---- structure, resumption, errors ---- */

START_TEST(test_resume_from_digest_equals_tail_of_full_chain)
{
	static uint32_t t[100];
	make_long_prompt(t, 100);
	for (int bigram = 0; bigram <= 1; bigram++) {
		struct sy_blockhash_params p;
		ck_assert_int_eq(sy_blockhash_params_init(&p, 8, bigram, "s", 1), SY_OK);
		int64_t full[16], tail[16];
		struct sy_blockhash_digest dg[16];
		ssize_t n = sy_blockhash_chain(t, 100, &p, full, 16, dg);
		ck_assert_int_eq(n, 13);
		for (size_t k = 1; k < (size_t)n; k++) {
			struct sy_blockhash_params q = p;
			q.seed = dg[k - 1];
			ssize_t m = sy_blockhash_chain(t + 8 * k, 100 - 8 * k, &q, tail, 16, NULL);
			ck_assert_int_eq(m, n - (ssize_t)k);
			for (ssize_t i = 0; i < m; i++)
				ck_assert(tail[i] == full[k + i]);
		}
	}
}
END_TEST

START_TEST(test_page_step_matches_chain_and_may_alias)
{
	static const uint32_t t[] = {10, 20, 30, 40, 50};
	struct sy_blockhash_digest d;
	sy_blockhash_page(NULL, t, 2, true, &d);
	ck_assert(sy_blockhash_id(&d) == -8847804484166691499LL);
	sy_blockhash_page(&d, t + 2, 2, true, &d); /* out aliases prev */
	ck_assert(sy_blockhash_id(&d) == 4989791362144317498LL);
}
END_TEST

START_TEST(test_count_pages)
{
	ck_assert_uint_eq(sy_blockhash_count(0, 16, false), 0);
	ck_assert_uint_eq(sy_blockhash_count(1, 16, false), 1);
	ck_assert_uint_eq(sy_blockhash_count(16, 16, false), 1);
	ck_assert_uint_eq(sy_blockhash_count(17, 16, false), 2);
	ck_assert_uint_eq(sy_blockhash_count(0, 16, true), 0);
	ck_assert_uint_eq(sy_blockhash_count(1, 16, true), 0);
	ck_assert_uint_eq(sy_blockhash_count(2, 16, true), 1);
	ck_assert_uint_eq(sy_blockhash_count(17, 16, true), 1);
	ck_assert_uint_eq(sy_blockhash_count(18, 16, true), 2);
	ck_assert_uint_eq(sy_blockhash_count(100, 0, false), 0);
}
END_TEST

START_TEST(test_no_blocks_for_empty_or_single_token_bigram)
{
	static const uint32_t t[] = {7};
	struct sy_blockhash_params p;
	int64_t ids[1] = {42};
	ck_assert_int_eq(sy_blockhash_params_init(&p, 4, true, NULL, 0), SY_OK);
	ck_assert_int_eq(sy_blockhash_chain(t, 1, &p, ids, 1, NULL), 0);
	ck_assert_int_eq(sy_blockhash_chain(NULL, 0, &p, NULL, 0, NULL), 0);
	ck_assert(ids[0] == 42);
	/* one token in unigram mode is one (short) page */
	p.bigram = false;
	ck_assert_int_eq(sy_blockhash_chain(t, 1, &p, ids, 1, NULL), 1);
	ck_assert(ids[0] == -1702009526849766914LL);
}
END_TEST

START_TEST(test_cap_too_small_is_enospc_and_writes_nothing)
{
	static const uint32_t t[] = {1, 2, 3, 4, 5};
	struct sy_blockhash_params p;
	int64_t ids[2] = {42, 43};
	ck_assert_int_eq(sy_blockhash_params_init(&p, 2, false, NULL, 0), SY_OK);
	ck_assert_int_eq(sy_blockhash_chain(t, 5, &p, ids, 2, NULL), SY_ENOSPC);
	ck_assert(ids[0] == 42 && ids[1] == 43);
}
END_TEST

START_TEST(test_invalid_arguments)
{
	static const uint32_t t[] = {1, 2};
	struct sy_blockhash_params p;
	int64_t ids[2];
	ck_assert_int_eq(sy_blockhash_params_init(&p, 0, false, NULL, 0), SY_EINVAL);
	ck_assert_int_eq(sy_blockhash_params_init(&p, 4, false, NULL, 3), SY_EINVAL);
	ck_assert_int_eq(sy_blockhash_params_init(&p, 4, false, NULL, 0), SY_OK);
	ck_assert_int_eq(sy_blockhash_chain(NULL, 2, &p, ids, 2, NULL), SY_EINVAL);
	ck_assert_int_eq(sy_blockhash_chain(t, 2, NULL, ids, 2, NULL), SY_EINVAL);
	ck_assert_int_eq(sy_blockhash_chain(t, 2, &p, NULL, 2, NULL), SY_EINVAL);
	p.block_size = 0;
	ck_assert_int_eq(sy_blockhash_chain(t, 2, &p, ids, 2, NULL), SY_EINVAL);
}
END_TEST

START_TEST(test_id_is_signed_big_endian_top_8_bytes)
{
	struct sy_blockhash_digest d;
	memset(&d, 0, sizeof d);
	d.b[0] = 0x80;
	ck_assert(sy_blockhash_id(&d) == INT64_MIN);
	memset(d.b, 0xff, 8);
	d.b[0] = 0x7f;
	ck_assert(sy_blockhash_id(&d) == INT64_MAX);
	memset(d.b, 0xff, sizeof d.b);
	ck_assert(sy_blockhash_id(&d) == -1);
	memset(&d, 0, sizeof d);
	d.b[7] = 1;
	d.b[8] = 0xff; /* bytes past the 8th never count */
	ck_assert(sy_blockhash_id(&d) == 1);
}
END_TEST

/* Values from Python's hashlib (independent of this code). */
START_TEST(test_lora_seed_starts_its_own_chain)
{
	struct sy_blockhash_digest seed;
	sy_blockhash_lora_seed("sql-lora", 8, &seed);
	static const uint8_t want[8] = {0x6f, 0xe1, 0x0a, 0x21, 0x81, 0x2a, 0xd5, 0xf0};
	ck_assert_mem_eq(seed.b, want, 8);
	struct sy_blockhash_params p;
	ck_assert_int_eq(sy_blockhash_params_init(&p, 4, false, NULL, 0), 0);
	const uint32_t t[4] = {1, 2, 3, 4};
	int64_t plain, lora, other;
	ck_assert_int_eq(sy_blockhash_chain(t, 4, &p, &plain, 1, NULL), 1);
	p.has_seed = true;
	p.seed = seed;
	struct sy_blockhash_digest dg;
	ck_assert_int_eq(sy_blockhash_chain(t, 4, &p, &lora, 1, &dg), 1);
	ck_assert(lora == INT64_C(-8133112792504990202));
	ck_assert(plain == INT64_C(-3488128144981237669)); /* the golden of §11 */
	sy_blockhash_lora_seed("sql-lorb", 8, &p.seed);
	ck_assert_int_eq(sy_blockhash_chain(t, 4, &p, &other, 1, NULL), 1);
	ck_assert(other != lora && other != plain);
	/* fold of extra keys [ "mm-1", 0 ] as msgpack bytes */
	const uint8_t extra[] = {0x92, 0xa4, 'm', 'm', '-', '1', 0x00};
	sy_blockhash_fold(&dg, extra, sizeof(extra), &dg); /* may alias */
	ck_assert(sy_blockhash_id(&dg) == INT64_C(-5090399494305857603));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("blockhash");
	TCase *g = tcase_create("golden");
	tcase_add_test(g, test_golden_unigram_one_page);
	tcase_add_test(g, test_golden_bigram_one_page);
	tcase_add_test(g, test_golden_bigram_two_pages_short_last);
	tcase_add_test(g, test_golden_bigram_of_two_tokens_equals_unigram);
	tcase_add_test(g, test_golden_sha256_of_empty_string_top_8_bytes);
	suite_add_tcase(s, g);

	TCase *d = tcase_create("derived");
	tcase_add_test(d, test_full_digest_is_returned_and_matches_id);
	tcase_add_test(d, test_unigram_short_last_page_is_hashed);
	tcase_add_test(d, test_tokens_are_le_u32_including_high_bit);
	tcase_add_test(d, test_bigram_short_last_page);
	tcase_add_test(d, test_salt_seed_digest);
	tcase_add_test(d, test_salted_unigram_chain);
	tcase_add_test(d, test_salted_bigram_chain);
	tcase_add_test(d, test_empty_salt_means_no_seed);
	tcase_add_test(d, test_4096_tokens_block_16_both_modes);
	tcase_add_test(d, test_large_pages_are_fed_in_chunks);
	tcase_add_test(d, test_sweep_block_sizes_against_reference);
	tcase_add_test(d, test_lora_seed_starts_its_own_chain);
	suite_add_tcase(s, d);

	TCase *a = tcase_create("api");
	tcase_add_test(a, test_resume_from_digest_equals_tail_of_full_chain);
	tcase_add_test(a, test_page_step_matches_chain_and_may_alias);
	tcase_add_test(a, test_count_pages);
	tcase_add_test(a, test_no_blocks_for_empty_or_single_token_bigram);
	tcase_add_test(a, test_cap_too_small_is_enospc_and_writes_nothing);
	tcase_add_test(a, test_invalid_arguments);
	tcase_add_test(a, test_id_is_signed_big_endian_top_8_bytes);
	suite_add_tcase(s, a);

	return sy_check_run(s);
}
