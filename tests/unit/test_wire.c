/* test_wire.c — KV-event and LoadStat decoders (statebus/daemon/decode_*.c)
 * on golden bytes from python3-msgpack (wire_golden.h), forged lengths,
 * truncation and unknown tags (sglang-wire.md §4–§7, §12). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/mpcursor.h"
#include "tests/unit/wire_golden.h"
#include "wire.h"
#include "sy_check.h"

static struct sbd_kv_decoder dec;

static void teardown(void) { sbd_kv_decoder_free(&dec); }

START_TEST(test_array_form_batch_decodes_every_event_and_field)
{
	struct sbd_kv_batch b;
	ck_assert_int_eq(sbd_kv_decode(&dec, g_array_batch, sizeof(g_array_batch), &b), SY_OK);
	ck_assert_double_eq(b.ts, 1700000000.5);
	ck_assert(b.has_rank);
	ck_assert_int_eq(b.rank, 0);
	ck_assert_uint_eq(b.n_events, 5);
	const struct sbd_kv_event *e = b.events;
	ck_assert_uint_eq(e[0].type, SBD_EV_STORED);
	ck_assert_uint_eq(e[0].n_hashes, 3);
	ck_assert_int_eq(e[0].hashes[0], 1);
	ck_assert_int_eq(e[0].hashes[1], -2);
	/* uint64 above i64 max keeps its 64 bits */
	ck_assert_int_eq(e[0].hashes[2], (int64_t)(UINT64_C(9223372036854775808) + 5));
	ck_assert(!e[0].has_parent);
	ck_assert_uint_eq(e[0].n_tokens, 4);
	ck_assert_int_eq(e[0].block_size, 4);
	ck_assert_uint_eq(e[0].medium, SBD_MEDIUM_GPU);
	ck_assert_uint_eq(e[1].type, SBD_EV_STORED);
	ck_assert(e[1].has_parent);
	ck_assert_int_eq(e[1].parent, 1);
	ck_assert_uint_eq(e[1].medium, SBD_MEDIUM_ABSENT); /* 6 positions: no medium */
	ck_assert_uint_eq(e[2].type, SBD_EV_REMOVED);
	ck_assert_int_eq(e[2].hashes[0], -2);
	ck_assert_uint_eq(e[2].medium, SBD_MEDIUM_CPU_PINNED);
	ck_assert_uint_eq(e[3].medium, SBD_MEDIUM_ABSENT);
	ck_assert_uint_eq(e[4].type, SBD_EV_CLEARED);
	ck_assert_uint_eq(b.unknown_tags + b.bad_events + b.oversized_events, 0);
}
END_TEST

START_TEST(test_map_form_events_ignore_unknown_keys_and_accept_bigram_pairs)
{
	struct sbd_kv_batch b;
	ck_assert_int_eq(sbd_kv_decode(&dec, g_map_batch, sizeof(g_map_batch), &b), SY_OK);
	ck_assert_uint_eq(b.n_events, 3);
	ck_assert_int_eq(b.rank, 3);
	ck_assert_uint_eq(b.events[0].type, SBD_EV_STORED);
	ck_assert_uint_eq(b.events[0].n_hashes, 2);
	ck_assert_int_eq(b.events[0].hashes[1], 11);
	ck_assert_uint_eq(b.events[0].n_tokens, 4); /* two pairs */
	ck_assert_uint_eq(b.events[0].medium, SBD_MEDIUM_CPU);
	ck_assert_uint_eq(b.events[1].type, SBD_EV_REMOVED);
	ck_assert_int_eq(b.events[1].hashes[0], 11);
	ck_assert_uint_eq(b.events[2].type, SBD_EV_CLEARED);
}
END_TEST

START_TEST(test_map_batch_with_data_parallel_rank_is_tolerated)
{
	struct sbd_kv_batch b;
	ck_assert_int_eq(sbd_kv_decode(&dec, g_map_batch_struct, sizeof(g_map_batch_struct), &b), SY_OK);
	ck_assert_double_eq(b.ts, 2.0);
	ck_assert_int_eq(b.rank, 1);
	ck_assert_uint_eq(b.n_events, 1);
	ck_assert_int_eq(b.events[0].parent, 4);
	ck_assert_int_eq(b.events[0].block_size, 16);
	ck_assert_uint_eq(b.events[0].medium, SBD_MEDIUM_DISK);
}
END_TEST

START_TEST(test_unknown_tags_and_bad_events_are_skipped_rest_kept)
{
	struct sbd_kv_batch b;
	ck_assert_int_eq(sbd_kv_decode(&dec, g_unknown_tag, sizeof(g_unknown_tag), &b), SY_OK);
	ck_assert_uint_eq(b.unknown_tags, 2);
	ck_assert_uint_eq(b.bad_events, 1); /* BlockRemoved with a string for hashes */
	ck_assert_uint_eq(b.n_events, 1);
	ck_assert_int_eq(b.events[0].hashes[0], 9);
	ck_assert_uint_eq(b.events[0].medium, SBD_MEDIUM_UNKNOWN); /* "TAPE": apply drops it */
	ck_assert(!b.has_rank); /* nil rank */
}
END_TEST

START_TEST(test_bin_hashes_are_opaque_ids_of_their_first_eight_bytes)
{
	struct sbd_kv_batch b;
	ck_assert_int_eq(sbd_kv_decode(&dec, g_bin_hash, sizeof(g_bin_hash), &b), SY_OK);
	ck_assert_uint_eq(b.n_events, 1);
	ck_assert_int_eq(b.events[0].hashes[0], INT64_C(0x0102030405060708));
	ck_assert(b.events[0].has_parent);
	ck_assert_int_eq(b.events[0].parent, 0);
	ck_assert(!b.has_rank); /* two-element batch: no rank slot */
}
END_TEST

START_TEST(test_vllm_map_batch_keeps_tokens_lora_extra_keys_and_group)
{
	struct sbd_kv_batch b;
	ck_assert_int_eq(sbd_kv_decode(&dec, g_vllm_batch, sizeof(g_vllm_batch), &b), SY_OK);
	ck_assert_double_eq(b.ts, 3.5);
	ck_assert_int_eq(b.rank, 2);
	ck_assert_uint_eq(b.n_events, 3);
	const struct sbd_kv_event *e = &b.events[0];
	ck_assert_uint_eq(e->type, SBD_EV_STORED);
	ck_assert_uint_eq(e->n_hashes, 2);
	ck_assert_int_eq(e->hashes[0], (int64_t)UINT64_C(0xaaaaaaaaaaaaaaaa));
	ck_assert(!e->has_parent);
	ck_assert_uint_eq(e->n_tokens, 8);
	for (uint32_t i = 0; i < 8; i++)
		ck_assert_uint_eq(e->tokens[i], i + 1);
	ck_assert(!e->tokens_paired);
	ck_assert_int_eq(e->block_size, 4);
	ck_assert(e->has_lora_id);
	ck_assert_int_eq(e->lora_id, 7);
	ck_assert(e->has_lora_name);
	ck_assert(sy_mp_str_eq(e->lora_name, e->lora_name_len, "sql-lora"));
	ck_assert_ptr_nonnull(e->extra_keys);
	/* the raw array: [["mm-1", 0], nil] */
	struct sy_cursor c = sy_cursor_init(e->extra_keys, e->extra_keys_len);
	uint32_t n;
	ck_assert(sy_mp_read_array(&c, &n));
	ck_assert_uint_eq(n, 2);
	ck_assert(sy_mp_skip(&c) && sy_mp_read_nil(&c));
	ck_assert_uint_eq(sy_cursor_avail(&c), 0);
	ck_assert_int_eq(e->group_idx, 0);
	ck_assert_uint_eq(e->medium, SBD_MEDIUM_GPU);
	ck_assert_uint_eq(b.events[1].type, SBD_EV_REMOVED);
	ck_assert_int_eq(b.events[1].group_idx, 1);
	ck_assert_ptr_null(b.events[1].tokens);
	ck_assert_uint_eq(b.events[2].type, SBD_EV_CLEARED);
	ck_assert_int_eq(b.events[2].group_idx, -1);
}
END_TEST

START_TEST(test_vllm_positional_event_reads_lora_name_and_group)
{
	struct sbd_kv_batch b;
	ck_assert_int_eq(sbd_kv_decode(&dec, g_vllm_array, sizeof(g_vllm_array), &b), SY_OK);
	ck_assert_uint_eq(b.n_events, 2);
	const struct sbd_kv_event *e = &b.events[0];
	ck_assert(e->has_parent);
	ck_assert_int_eq(e->parent, 4);
	ck_assert(!e->has_lora_id);
	ck_assert(e->has_lora_name);
	ck_assert(sy_mp_str_eq(e->lora_name, e->lora_name_len, "a"));
	ck_assert_ptr_null(e->extra_keys);
	ck_assert_int_eq(e->group_idx, 2);
	ck_assert_uint_eq(e->tokens[7], 8);
	ck_assert_int_eq(b.events[1].group_idx, 2);
	ck_assert_uint_eq(b.events[1].medium, SBD_MEDIUM_ABSENT);
}
END_TEST

START_TEST(test_tokens_of_several_events_and_pairs_are_kept_in_order)
{
	struct sbd_kv_batch b;
	ck_assert_int_eq(sbd_kv_decode(&dec, g_map_batch, sizeof(g_map_batch), &b), SY_OK);
	const struct sbd_kv_event *e = &b.events[0];
	ck_assert(e->tokens_paired);
	ck_assert_uint_eq(e->n_tokens, 4);
	ck_assert_uint_eq(e->tokens[0], 1);
	ck_assert_uint_eq(e->tokens[1], 2);
	ck_assert_uint_eq(e->tokens[2], 2);
	ck_assert_uint_eq(e->tokens[3], 3);
	ck_assert_int_eq(sbd_kv_decode(&dec, g_array_batch, sizeof(g_array_batch), &b), SY_OK);
	ck_assert_uint_eq(b.events[1].tokens[0], 5);
	ck_assert_uint_eq(b.events[0].tokens[3], 4);
}
END_TEST

START_TEST(test_every_truncation_of_a_golden_batch_is_refused)
{
	struct sbd_kv_batch b;
	for (size_t n = 0; n < sizeof(g_array_batch); n++) {
		uint8_t *copy = malloc(n ? n : 1); /* exact size: ASan sees any overread */
		memcpy(copy, g_array_batch, n);
		int rc = sbd_kv_decode(&dec, copy, n, &b);
		ck_assert_msg(rc == SY_ETRUNC || rc == SY_EMALFORMED, "len %zu rc %d", n, rc);
		ck_assert_uint_eq(b.n_events, 0);
		free(copy);
	}
	for (size_t n = 0; n < sizeof(g_map_batch); n++) {
		int rc = sbd_kv_decode(&dec, g_map_batch, n, &b);
		ck_assert_msg(rc != SY_OK, "map len %zu decoded", n);
	}
	for (size_t n = 0; n < sizeof(g_vllm_batch); n++) {
		uint8_t *copy = malloc(n ? n : 1);
		memcpy(copy, g_vllm_batch, n);
		ck_assert_msg(sbd_kv_decode(&dec, copy, n, &b) != SY_OK, "vllm len %zu decoded", n);
		free(copy);
	}
}
END_TEST

START_TEST(test_forged_huge_lengths_fail_without_allocating)
{
	struct sbd_kv_batch b;
	/* [ts, array32 of 2^32-1 events] in 15 bytes */
	const uint8_t forged_events[] = {0x92, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0, 0xdd, 0xff, 0xff, 0xff, 0xff};
	ck_assert_int_eq(sbd_kv_decode(&dec, forged_events, sizeof(forged_events), &b), SY_EMALFORMED);
	ck_assert_uint_eq(dec.events_cap, 0); /* nothing was allocated for it */
	/* one event whose block_hashes claims 2^32-1 elements */
	const uint8_t forged_hashes[] = {0x92, 0x00, 0x91, 0x92, 0xac, 'B', 'l', 'o', 'c', 'k', 'R',
					 'e', 'm', 'o', 'v', 'e', 'd', 0xdd, 0xff, 0xff, 0xff, 0xff};
	ck_assert_int_eq(sbd_kv_decode(&dec, forged_hashes, sizeof(forged_hashes), &b), SY_EMALFORMED);
	ck_assert_uint_le(dec.hashes_cap, 64);
	/* a map32 of 2^31 pairs, a str32 of 4 GB, a bin32 */
	const uint8_t forged_map[] = {0xdf, 0x80, 0, 0, 0};
	ck_assert_int_eq(sbd_kv_decode(&dec, forged_map, sizeof(forged_map), &b), SY_EMALFORMED);
	const uint8_t forged_str[] = {0x92, 0xdb, 0xff, 0xff, 0xff, 0xff, 'x'};
	ck_assert_int_ne(sbd_kv_decode(&dec, forged_str, sizeof(forged_str), &b), SY_OK);
}
END_TEST

START_TEST(test_nesting_over_the_depth_cap_is_malformed)
{
	struct sbd_kv_batch b;
	uint8_t deep[64];
	size_t n = 0;
	deep[n++] = 0x92;
	deep[n++] = 0x00;
	deep[n++] = 0x91; /* events: one event ... */
	while (n < sizeof(deep) - 1)
		deep[n++] = 0x91; /* ... nested 60 levels deep */
	deep[n++] = 0x00;
	ck_assert_int_eq(sbd_kv_decode(&dec, deep, n, &b), SY_EMALFORMED);
}
END_TEST

START_TEST(test_hash_cap_skips_the_event_token_cap_drops_only_tokens)
{
	/* Build [0, [["BlockRemoved", [65537 × 0]], ["BlockStored", [1], nil,
	 * [1048577 × 0], 1]]] by hand. */
	size_t hn = SBD_MAX_HASHES_PER_EVENT + 1, tn = SBD_MAX_TOKENS_PER_EVENT + 1;
	size_t cap = 64 + hn + tn;
	uint8_t *buf = malloc(cap), *p = buf;
	*p++ = 0x92; *p++ = 0x00; *p++ = 0x92;
	*p++ = 0x92; *p++ = 0xac; memcpy(p, "BlockRemoved", 12); p += 12;
	*p++ = 0xdd; *p++ = (uint8_t)(hn >> 24); *p++ = (uint8_t)(hn >> 16); *p++ = (uint8_t)(hn >> 8); *p++ = (uint8_t)hn;
	memset(p, 0, hn); p += hn;
	*p++ = 0x95; *p++ = 0xab; memcpy(p, "BlockStored", 11); p += 11;
	*p++ = 0x91; *p++ = 0x01; *p++ = 0xc0;
	*p++ = 0xdd; *p++ = (uint8_t)(tn >> 24); *p++ = (uint8_t)(tn >> 16); *p++ = (uint8_t)(tn >> 8); *p++ = (uint8_t)tn;
	memset(p, 0, tn); p += tn;
	*p++ = 0x01;
	struct sbd_kv_batch b;
	ck_assert_int_eq(sbd_kv_decode(&dec, buf, (size_t)(p - buf), &b), SY_OK);
	ck_assert_uint_eq(b.oversized_events, 1);
	ck_assert_uint_eq(b.tokens_dropped, 1);
	ck_assert_uint_eq(b.n_events, 1);
	ck_assert_uint_eq(b.events[0].type, SBD_EV_STORED);
	ck_assert(b.events[0].tokens_dropped);
	ck_assert_int_eq(b.events[0].hashes[0], 1);
	free(buf);
}
END_TEST

START_TEST(test_not_a_batch_and_trailing_bytes_are_malformed)
{
	struct sbd_kv_batch b;
	const uint8_t str[] = {0xa1, 'x'};
	ck_assert_int_eq(sbd_kv_decode(&dec, str, sizeof(str), &b), SY_EMALFORMED);
	const uint8_t no_events[] = {0x92, 0x00, 0x00}; /* events slot is an int */
	ck_assert_int_eq(sbd_kv_decode(&dec, no_events, sizeof(no_events), &b), SY_EMALFORMED);
	uint8_t trailing[sizeof(g_map_batch) + 1];
	memcpy(trailing, g_map_batch, sizeof(g_map_batch));
	trailing[sizeof(g_map_batch)] = 0xc0;
	ck_assert_int_eq(sbd_kv_decode(&dec, trailing, sizeof(trailing), &b), SY_EMALFORMED);
	const uint8_t reserved[] = {0x92, 0x00, 0x91, 0xc1};
	ck_assert_int_eq(sbd_kv_decode(&dec, reserved, sizeof(reserved), &b), SY_EMALFORMED);
	ck_assert_int_eq(sbd_kv_decode(&dec, NULL, 0, &b), SY_ETRUNC);
}
END_TEST

START_TEST(test_integers_decode_by_value_in_every_encoding)
{
	const uint8_t enc[][9] = {
		{0x05}, {0xcc, 0x05}, {0xcd, 0x00, 0x05}, {0xce, 0, 0, 0, 5},
		{0xcf, 0, 0, 0, 0, 0, 0, 0, 5}, {0xd0, 0x05}, {0xd1, 0, 5}, {0xd2, 0, 0, 0, 5},
		{0xd3, 0, 0, 0, 0, 0, 0, 0, 5},
	};
	const size_t len[] = {1, 2, 3, 5, 9, 2, 3, 5, 9};
	for (size_t i = 0; i < sizeof(len) / sizeof(len[0]); i++) {
		struct sy_cursor c = sy_cursor_init(enc[i], len[i]);
		int64_t v = 0;
		ck_assert(sy_mp_read_i64(&c, &v));
		ck_assert_int_eq(v, 5);
		ck_assert_uint_eq(sy_cursor_avail(&c), 0);
	}
	const uint8_t neg[] = {0xff};
	struct sy_cursor c = sy_cursor_init(neg, 1);
	uint64_t u;
	ck_assert(!sy_mp_read_u64(&c, &u));
	ck_assert_int_eq(c.err, SY_EMALFORMED);
}
END_TEST

/* ---- LoadStat ------------------------------------------------------------ */

START_TEST(test_loadstat_six_elements_is_basic)
{
	struct sbd_load_stat s;
	ck_assert_int_eq(sbd_load_decode(g_load_basic, sizeof(g_load_basic), &s), SY_OK);
	ck_assert_uint_eq(s.num_running_reqs, 5);
	ck_assert_uint_eq(s.num_waiting_reqs, 1);
	ck_assert_uint_eq(s.num_tokens, 100);
	ck_assert_uint_eq(s.max_total_num_tokens, 1000);
	ck_assert(s.has_rank);
	ck_assert(!s.v3 && !s.partial_v3);
}
END_TEST

START_TEST(test_loadstat_eleven_elements_is_v3)
{
	struct sbd_load_stat s;
	ck_assert_int_eq(sbd_load_decode(g_load_v3, sizeof(g_load_v3), &s), SY_OK);
	ck_assert(s.v3 && !s.partial_v3);
	ck_assert_int_eq(s.attn_dp_rank, 1);
	ck_assert_uint_eq(s.num_waiting_uncached_tokens, 512);
	ck_assert_uint_eq(s.num_total_tokens, 1200);
	ck_assert_uint_eq(s.max_running_requests, 64);
	ck_assert_uint_eq(s.total_prefill_uncached_tokens, 10000);
	ck_assert_uint_eq(s.total_prefill_busy_us, 2000000);
}
END_TEST

START_TEST(test_loadstat_seven_to_ten_keeps_basic_and_flags_partial)
{
	struct sbd_load_stat s;
	ck_assert_int_eq(sbd_load_decode(g_load_partial, sizeof(g_load_partial), &s), SY_OK);
	ck_assert(!s.v3 && s.partial_v3);
	ck_assert_uint_eq(s.num_running_reqs, 3);
	ck_assert_uint_eq(s.num_waiting_uncached_tokens, 0); /* not half a V3 view */
	ck_assert_int_eq(sbd_load_decode(g_load_v3_bad, sizeof(g_load_v3_bad), &s), SY_OK);
	ck_assert(!s.v3 && s.partial_v3); /* -1 in a V3 slot: all or nothing */
	ck_assert(!s.has_rank);
	ck_assert_uint_eq(s.max_total_num_tokens, 8000);
}
END_TEST

START_TEST(test_loadstat_three_counts_or_bad_tag_is_malformed)
{
	struct sbd_load_stat s;
	ck_assert_int_eq(sbd_load_decode(g_load_short, sizeof(g_load_short), &s), SY_EMALFORMED);
	ck_assert_uint_eq(s.num_running_reqs, 0);
	ck_assert_int_eq(sbd_load_decode(g_load_badtag, sizeof(g_load_badtag), &s), SY_EMALFORMED);
	for (size_t n = 0; n < sizeof(g_load_v3); n++)
		ck_assert_int_ne(sbd_load_decode(g_load_v3, n, &s), SY_OK);
	const uint8_t neg[] = {0x95, 0xa8, 'L', 'o', 'a', 'd', 'S', 't', 'a', 't', 0xff, 0, 0, 0};
	ck_assert_int_eq(sbd_load_decode(neg, sizeof(neg), &s), SY_EMALFORMED);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("wire");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, test_array_form_batch_decodes_every_event_and_field);
	tcase_add_test(tc, test_map_form_events_ignore_unknown_keys_and_accept_bigram_pairs);
	tcase_add_test(tc, test_map_batch_with_data_parallel_rank_is_tolerated);
	tcase_add_test(tc, test_unknown_tags_and_bad_events_are_skipped_rest_kept);
	tcase_add_test(tc, test_bin_hashes_are_opaque_ids_of_their_first_eight_bytes);
	tcase_add_test(tc, test_vllm_map_batch_keeps_tokens_lora_extra_keys_and_group);
	tcase_add_test(tc, test_vllm_positional_event_reads_lora_name_and_group);
	tcase_add_test(tc, test_tokens_of_several_events_and_pairs_are_kept_in_order);
	tcase_add_test(tc, test_every_truncation_of_a_golden_batch_is_refused);
	tcase_add_test(tc, test_forged_huge_lengths_fail_without_allocating);
	tcase_add_test(tc, test_nesting_over_the_depth_cap_is_malformed);
	tcase_add_test(tc, test_hash_cap_skips_the_event_token_cap_drops_only_tokens);
	tcase_add_test(tc, test_not_a_batch_and_trailing_bytes_are_malformed);
	tcase_add_test(tc, test_integers_decode_by_value_in_every_encoding);
	tcase_add_test(tc, test_loadstat_six_elements_is_basic);
	tcase_add_test(tc, test_loadstat_eleven_elements_is_v3);
	tcase_add_test(tc, test_loadstat_seven_to_ten_keeps_basic_and_flags_partial);
	tcase_add_test(tc, test_loadstat_three_counts_or_bad_tag_is_malformed);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sy_check_run(suite());
}
