/* test_vllm.c — re-hashing of vLLM blocks onto the router's chain, the
 * engine id → own id map (capacity, eviction, clears) and the LoRA /
 * extra-keys namespaces (statebus/daemon/vllm.c). */
#include <check.h>
#include <string.h>

#include "common/blockhash.h"
#include "common/errors.h"
#include "statebus-t.h"
#include "vllm.h"
#include "sy_check.h"

static struct sbd_vmap map;
static struct sbd_vllm_scratch scr;

static void setup(void) { ck_assert_int_eq(sbd_vmap_init(&map, 1024), SY_OK); }
static void teardown(void)
{
	sbd_vmap_free(&map);
	sbd_vllm_scratch_free(&scr);
}

static uint32_t toks[64];

static void fill_tokens(void)
{
	for (uint32_t i = 0; i < 64; i++)
		toks[i] = 1000 + i * 7;
}

/* A BlockStored of n blocks of 4 tokens starting at toks[first*4]. */
static struct sbd_kv_event stored(const int64_t *hashes, uint32_t n, uint32_t first,
				  bool has_parent, int64_t parent)
{
	fill_tokens();
	struct sbd_kv_event e = {.type = SBD_EV_STORED, .hashes = hashes, .n_hashes = n,
				 .tokens = toks + first * 4, .n_tokens = n * 4, .block_size = 4,
				 .has_parent = has_parent, .parent = parent, .group_idx = -1};
	return e;
}

/* The router's ids of toks[0 .. nblocks*4) under an optional seed. */
static void router_chain(uint32_t nblocks, const struct sy_blockhash_digest *seed, int64_t *ids)
{
	struct sy_blockhash_params p;
	ck_assert_int_eq(sy_blockhash_params_init(&p, 4, false, NULL, 0), 0);
	if (seed) {
		p.has_seed = true;
		p.seed = *seed;
	}
	fill_tokens();
	ck_assert_int_eq(sy_blockhash_chain(toks, nblocks * 4, &p, ids, nblocks, NULL), nblocks);
}

START_TEST(test_root_chain_gets_the_routers_sglang_ids_not_the_engines)
{
	const int64_t vids[3] = {111, 222, 333}; /* opaque engine ids */
	struct sbd_kv_event e = stored(vids, 3, 0, false, 0);
	struct sbd_vllm_store st;
	ck_assert_int_eq(sbd_vllm_rehash(&map, &scr, 2, 0, &e, 4, STATEBUS_TIER_DEVICE, &st),
			 SBD_VLLM_OK);
	int64_t want[3];
	router_chain(3, NULL, want);
	ck_assert_uint_eq(st.n, 3);
	ck_assert(!st.has_parent);
	for (int i = 0; i < 3; i++)
		ck_assert(st.ids[i] == want[i]);
	ck_assert_uint_eq(map.used, 3);
	ck_assert_ptr_nonnull(sbd_vmap_find(&map, 2, 0, 222));
	ck_assert_ptr_null(sbd_vmap_find(&map, 2, 1, 222)); /* per rank */
	ck_assert_ptr_null(sbd_vmap_find(&map, 3, 0, 222)); /* per worker */
}
END_TEST

START_TEST(test_child_event_continues_the_chain_from_the_parents_digest)
{
	const int64_t a[2] = {-5, 77}, b[2] = {9000, 9001};
	struct sbd_kv_event e1 = stored(a, 2, 0, false, 0);
	struct sbd_kv_event e2 = stored(b, 2, 2, true, 77);
	struct sbd_vllm_store st;
	ck_assert_int_eq(sbd_vllm_rehash(&map, &scr, 0, 0, &e1, 4, 1, &st), SBD_VLLM_OK);
	ck_assert_int_eq(sbd_vllm_rehash(&map, &scr, 0, 0, &e2, 4, 1, &st), SBD_VLLM_OK);
	int64_t want[4];
	router_chain(4, NULL, want);
	ck_assert(st.has_parent);
	ck_assert(st.parent == want[1]);
	ck_assert(st.ids[0] == want[2] && st.ids[1] == want[3]);
}
END_TEST

START_TEST(test_unknown_parent_and_missing_tokens_are_refused_without_mapping)
{
	const int64_t a[1] = {1};
	struct sbd_kv_event e = stored(a, 1, 0, true, 42);
	struct sbd_vllm_store st;
	ck_assert_int_eq(sbd_vllm_rehash(&map, &scr, 0, 0, &e, 4, 1, &st), SBD_VLLM_PARENT_UNKNOWN);
	e = stored(a, 1, 0, false, 0);
	e.n_tokens = 0;
	e.tokens = NULL;
	ck_assert_int_eq(sbd_vllm_rehash(&map, &scr, 0, 0, &e, 4, 1, &st), SBD_VLLM_NO_TOKENS);
	e = stored(a, 1, 0, false, 0);
	e.tokens_dropped = true;
	ck_assert_int_eq(sbd_vllm_rehash(&map, &scr, 0, 0, &e, 4, 1, &st), SBD_VLLM_NO_TOKENS);
	e = stored(a, 1, 0, false, 0);
	e.n_tokens = 3; /* not blocks × block_size */
	ck_assert_int_eq(sbd_vllm_rehash(&map, &scr, 0, 0, &e, 4, 1, &st), SBD_VLLM_TOKENS_MISMATCH);
	e = stored(a, 1, 0, false, 0);
	e.block_size = 16; /* not the worker's */
	ck_assert_int_eq(sbd_vllm_rehash(&map, &scr, 0, 0, &e, 4, 1, &st), SBD_VLLM_TOKENS_MISMATCH);
	e = stored(a, 1, 0, false, 0);
	e.group_idx = 1;
	ck_assert_int_eq(sbd_vllm_rehash(&map, &scr, 0, 0, &e, 4, 1, &st), SBD_VLLM_OTHER_GROUP);
	ck_assert_uint_eq(map.used, 0);
}
END_TEST

START_TEST(test_lora_name_seeds_the_root_and_adapters_never_share_ids)
{
	const int64_t a[2] = {1, 2}, b[2] = {3, 4}, c[2] = {5, 6};
	struct sbd_vllm_store st;
	struct sbd_kv_event e = stored(a, 2, 0, false, 0);
	ck_assert_int_eq(sbd_vllm_rehash(&map, &scr, 0, 0, &e, 4, 1, &st), SBD_VLLM_OK);
	int64_t base0 = st.ids[0];
	e = stored(b, 2, 0, false, 0);
	e.has_lora_name = true;
	e.lora_name = (const uint8_t *)"sql-lora";
	e.lora_name_len = 8;
	e.has_lora_id = true;
	e.lora_id = 3;
	ck_assert_int_eq(sbd_vllm_rehash(&map, &scr, 0, 0, &e, 4, 1, &st), SBD_VLLM_OK);
	struct sy_blockhash_digest seed;
	sy_blockhash_lora_seed("sql-lora", 8, &seed);
	int64_t want[2];
	router_chain(2, &seed, want);
	ck_assert(st.ids[0] == want[0] && st.ids[1] == want[1]);
	ck_assert(st.ids[0] != base0);
	/* only the deprecated lora_id: its own namespace "lora_id:3" */
	e = stored(c, 2, 0, false, 0);
	e.has_lora_id = true;
	e.lora_id = 3;
	ck_assert_int_eq(sbd_vllm_rehash(&map, &scr, 0, 0, &e, 4, 1, &st), SBD_VLLM_OK);
	sy_blockhash_lora_seed("lora_id:3", 9, &seed);
	router_chain(2, &seed, want);
	ck_assert(st.ids[0] == want[0]);
}
END_TEST

START_TEST(test_extra_keys_fold_all_but_the_adapter_name)
{
	/* [["sql-lora"], ["sql-lora", "mm-1"]]: block 0 carries only the
	 * adapter name (already the root), block 1 a multimodal hash */
	static const uint8_t xk[] = {0x92, 0x91, 0xa8, 's', 'q', 'l', '-', 'l', 'o', 'r', 'a',
				     0x92, 0xa8, 's', 'q', 'l', '-', 'l', 'o', 'r', 'a',
				     0xa4, 'm', 'm', '-', '1'};
	const int64_t a[2] = {1, 2};
	struct sbd_kv_event e = stored(a, 2, 0, false, 0);
	e.has_lora_name = true;
	e.lora_name = (const uint8_t *)"sql-lora";
	e.lora_name_len = 8;
	e.extra_keys = xk;
	e.extra_keys_len = sizeof(xk);
	struct sbd_vllm_store st;
	ck_assert_int_eq(sbd_vllm_rehash(&map, &scr, 0, 0, &e, 4, 1, &st), SBD_VLLM_OK);
	struct sy_blockhash_digest seed, dg[2];
	sy_blockhash_lora_seed("sql-lora", 8, &seed);
	struct sy_blockhash_params p;
	sy_blockhash_params_init(&p, 4, false, NULL, 0);
	p.has_seed = true;
	p.seed = seed;
	int64_t ids[2];
	fill_tokens();
	ck_assert_int_eq(sy_blockhash_chain(toks, 8, &p, ids, 2, dg), 2);
	ck_assert(st.ids[0] == ids[0]); /* adapter-only extra keys: no fold */
	ck_assert(st.ids[1] != ids[1]); /* the image made block 1 its own */
	static const uint8_t mm[] = {0xa4, 'm', 'm', '-', '1'};
	sy_blockhash_fold(&dg[1], mm, sizeof(mm), &dg[1]);
	ck_assert(st.ids[1] == sy_blockhash_id(&dg[1]));
	/* an extra_keys list that is not one entry per block */
	static const uint8_t short_xk[] = {0x91, 0xc0};
	const int64_t b[2] = {7, 8};
	e = stored(b, 2, 0, false, 0);
	e.extra_keys = short_xk;
	e.extra_keys_len = sizeof(short_xk);
	ck_assert_int_eq(sbd_vllm_rehash(&map, &scr, 0, 0, &e, 4, 1, &st), SBD_VLLM_BAD_EXTRA);
	ck_assert_ptr_null(sbd_vmap_find(&map, 0, 0, 7));
}
END_TEST

START_TEST(test_remove_returns_own_ids_and_clears_tiers_exactly)
{
	const int64_t a[3] = {10, 11, 12};
	struct sbd_kv_event e = stored(a, 3, 0, false, 0);
	struct sbd_vllm_store st;
	ck_assert_int_eq(sbd_vllm_rehash(&map, &scr, 1, 2, &e, 4, STATEBUS_TIER_DEVICE, &st),
			 SBD_VLLM_OK);
	int64_t own[3];
	memcpy(own, st.ids, sizeof(own));
	e = stored(a + 1, 1, 1, true, 10); /* block 11 also offloaded to the host */
	ck_assert_int_eq(sbd_vllm_rehash(&map, &scr, 1, 2, &e, 4, STATEBUS_TIER_HOST, &st),
			 SBD_VLLM_OK);
	ck_assert(st.ids[0] == own[1]);
	const int64_t rm[3] = {11, 12, 99};
	struct sbd_kv_event r = {.type = SBD_EV_REMOVED, .hashes = rm, .n_hashes = 3,
				 .group_idx = -1};
	const int64_t *ids;
	uint32_t n, unknown;
	ck_assert_int_eq(sbd_vllm_remove(&map, &scr, 1, 2, &r, STATEBUS_TIER_DEVICE, &ids, &n,
					 &unknown), SBD_VLLM_OK);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(unknown, 1);
	ck_assert(ids[0] == own[1] && ids[1] == own[2]);
	struct sbd_vmap_entry *m11 = sbd_vmap_find(&map, 1, 2, 11);
	ck_assert_ptr_nonnull(m11); /* the host copy keeps it mapped */
	ck_assert_uint_eq(m11->tiers, STATEBUS_TIER_HOST);
	ck_assert_ptr_null(sbd_vmap_find(&map, 1, 2, 12));
	r.n_hashes = 1;
	ck_assert_int_eq(sbd_vllm_remove(&map, &scr, 1, 2, &r, STATEBUS_TIER_ALL, &ids, &n,
					 &unknown), SBD_VLLM_OK);
	ck_assert_uint_eq(n, 1);
	ck_assert_ptr_null(sbd_vmap_find(&map, 1, 2, 11));
	ck_assert_uint_eq(map.used, 1);
	r.group_idx = 1;
	ck_assert_int_eq(sbd_vllm_remove(&map, &scr, 1, 2, &r, 1, &ids, &n, &unknown),
			 SBD_VLLM_OTHER_GROUP);
}
END_TEST

static int64_t evicted[16];
static uint32_t n_evicted;

static void on_evict(void *ctx, const struct sbd_vmap_entry *e)
{
	(void)ctx;
	evicted[n_evicted++ % 16] = e->key;
}

START_TEST(test_full_map_evicts_the_least_recently_stored_and_counts)
{
	sbd_vmap_free(&map);
	ck_assert_int_eq(sbd_vmap_init(&map, 4), SY_OK);
	map.on_evict = on_evict;
	n_evicted = 0;
	struct sy_blockhash_digest d = {{0}};
	for (int64_t k = 1; k <= 4; k++)
		sbd_vmap_put(&map, 0, 0, k, &d, 1);
	sbd_vmap_put(&map, 0, 0, 1, &d, 1); /* re-stored: now the newest */
	sbd_vmap_put(&map, 0, 0, 5, &d, 1);
	sbd_vmap_put(&map, 0, 0, 6, &d, 1);
	ck_assert_uint_eq(map.evictions, 2);
	ck_assert_uint_eq(n_evicted, 2);
	ck_assert(evicted[0] == 2 && evicted[1] == 3);
	ck_assert_ptr_null(sbd_vmap_find(&map, 0, 0, 2));
	ck_assert_ptr_nonnull(sbd_vmap_find(&map, 0, 0, 1));
	ck_assert_uint_eq(map.used, 4);
	/* a chain longer than the map is cut to its capacity */
	const int64_t a[6] = {20, 21, 22, 23, 24, 25};
	struct sbd_kv_event e = stored(a, 6, 0, false, 0);
	struct sbd_vllm_store st;
	ck_assert_int_eq(sbd_vllm_rehash(&map, &scr, 0, 0, &e, 4, 1, &st), SBD_VLLM_OK);
	ck_assert_uint_eq(st.n, 4);
	ck_assert_ptr_nonnull(sbd_vmap_find(&map, 0, 0, 20));
	ck_assert_ptr_nonnull(sbd_vmap_find(&map, 0, 0, 23));
	ck_assert_uint_eq(map.used, 4);
}
END_TEST

START_TEST(test_clear_rank_worker_and_all)
{
	struct sy_blockhash_digest d = {{0}};
	for (uint32_t w = 0; w < 3; w++)
		for (uint32_t r = 0; r < 2; r++)
			for (int64_t k = 0; k < 5; k++)
				sbd_vmap_put(&map, w, r, k, &d, 1);
	ck_assert_uint_eq(map.used, 30);
	ck_assert_uint_eq(sbd_vmap_clear(&map, 1, 0), 5);
	ck_assert_ptr_null(sbd_vmap_find(&map, 1, 0, 3));
	ck_assert_ptr_nonnull(sbd_vmap_find(&map, 1, 1, 3));
	ck_assert_uint_eq(sbd_vmap_clear(&map, 2, UINT32_MAX), 10);
	ck_assert_uint_eq(sbd_vmap_clear(&map, UINT32_MAX, UINT32_MAX), 15);
	ck_assert_uint_eq(map.used, 0);
	/* freed entries are reused */
	for (int64_t k = 0; k < 30; k++)
		sbd_vmap_put(&map, 0, 0, k, &d, 1);
	ck_assert_uint_eq(map.hw, 30);
}
END_TEST

/* The memory figure of docs/statebus.md: bytes per mapped block for one
 * owner, from the sizes of the structures. */
START_TEST(test_map_costs_at_most_96_bytes_per_block)
{
	ck_assert_uint_eq(sizeof(struct sbd_vmap_entry), 64);
	struct sbd_vmap m2;
	ck_assert_int_eq(sbd_vmap_init(&m2, 131072), SY_OK);
	ck_assert_double_eq(sbd_vmap_bytes_per_block(&m2), 68.0);
	sbd_vmap_free(&m2);
	ck_assert_int_eq(sbd_vmap_init(&m2, 65537), SY_OK); /* worst case: buckets 2× */
	ck_assert(sbd_vmap_bytes_per_block(&m2) < 72.01);
	ck_assert(sbd_vmap_bytes_per_block(&m2) <= 96.0);
	sbd_vmap_free(&m2);
	ck_assert_int_eq(sbd_vmap_init(&m2, 0), SY_EINVAL);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("vllm");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_root_chain_gets_the_routers_sglang_ids_not_the_engines);
	tcase_add_test(tc, test_child_event_continues_the_chain_from_the_parents_digest);
	tcase_add_test(tc, test_unknown_parent_and_missing_tokens_are_refused_without_mapping);
	tcase_add_test(tc, test_lora_name_seeds_the_root_and_adapters_never_share_ids);
	tcase_add_test(tc, test_extra_keys_fold_all_but_the_adapter_name);
	tcase_add_test(tc, test_remove_returns_own_ids_and_clears_tiers_exactly);
	tcase_add_test(tc, test_full_map_evicts_the_least_recently_stored_and_counts);
	tcase_add_test(tc, test_clear_rank_worker_and_all);
	tcase_add_test(tc, test_map_costs_at_most_96_bytes_per_block);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sy_check_run(suite());
}
