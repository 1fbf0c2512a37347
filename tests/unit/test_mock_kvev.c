/* test_mock_kvev.c — mock engine KV events: SGLang coalescing (§8) and both
 * msgpack encodings (§5.1 array, §5.2 map), decoded back with msgpack-c. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "tools/mock-engine/kvev.h"
#include "sy_check.h"

static msgpack_unpacked unpack(msgpack_sbuffer *sb)
{
	msgpack_unpacked u;
	msgpack_unpacked_init(&u);
	size_t off = 0;
	ck_assert_int_eq(msgpack_unpack_next(&u, sb->data, sb->size, &off), MSGPACK_UNPACK_SUCCESS);
	ck_assert_uint_eq(off, sb->size);
	return u;
}

static void assert_str(const msgpack_object *o, const char *s)
{
	ck_assert_int_eq(o->type, MSGPACK_OBJECT_STR);
	ck_assert_uint_eq(o->via.str.size, strlen(s));
	ck_assert(memcmp(o->via.str.ptr, s, strlen(s)) == 0);
}

static int64_t as_i64(const msgpack_object *o)
{
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
		return (int64_t)o->via.u64;
	ck_assert_int_eq(o->type, MSGPACK_OBJECT_NEGATIVE_INTEGER);
	return o->via.i64;
}

static const msgpack_object *map_get(const msgpack_object *m, const char *key)
{
	ck_assert_int_eq(m->type, MSGPACK_OBJECT_MAP);
	for (uint32_t i = 0; i < m->via.map.size; i++) {
		const msgpack_object *k = &m->via.map.ptr[i].key;
		if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == strlen(key) &&
		    memcmp(k->via.str.ptr, key, k->via.str.size) == 0)
			return &m->via.map.ptr[i].val;
	}
	return NULL;
}

START_TEST(test_chained_stores_coalesce_into_one_event)
{
	struct kvev_batch b = {0};
	int64_t h[3] = {-5, 7, 9};
	uint32_t t[6] = {1, 2, 3, 4, 5, 6};
	ck_assert_int_eq(kvev_batch_store(&b, false, 0, &h[0], 1, &t[0], 2, 2), 0);
	ck_assert_int_eq(kvev_batch_store(&b, true, -5, &h[1], 1, &t[2], 2, 2), 0);
	ck_assert_int_eq(kvev_batch_store(&b, true, 7, &h[2], 1, &t[4], 2, 2), 0);
	ck_assert_uint_eq(b.n, 1);
	ck_assert_uint_eq(b.ev[0].n_hashes, 3);
	ck_assert_uint_eq(b.ev[0].n_tokens, 6);
	ck_assert(!b.ev[0].has_parent);
	kvev_batch_free(&b);
}
END_TEST

START_TEST(test_store_with_other_parent_or_block_size_starts_new_event)
{
	struct kvev_batch b = {0};
	int64_t h = 1, h2 = 2, h3 = 3;
	uint32_t t[2] = {0, 0};
	kvev_batch_store(&b, false, 0, &h, 1, t, 2, 2);
	kvev_batch_store(&b, true, 99, &h2, 1, t, 2, 2);  /* parent is not the tail */
	kvev_batch_store(&b, true, 2, &h3, 1, t, 1, 1);   /* other block size */
	ck_assert_uint_eq(b.n, 3);
	ck_assert(b.ev[1].has_parent);
	ck_assert_int_eq(b.ev[1].parent, 99);
	kvev_batch_free(&b);
}
END_TEST

START_TEST(test_consecutive_removals_merge_but_not_across_a_store)
{
	struct kvev_batch b = {0};
	int64_t a = 1, c = 2, d = 3;
	uint32_t t = 0;
	kvev_batch_remove(&b, &a, 1);
	kvev_batch_remove(&b, &c, 1);
	kvev_batch_store(&b, false, 0, &d, 1, &t, 1, 1);
	kvev_batch_remove(&b, &a, 1);
	ck_assert_uint_eq(b.n, 3);
	ck_assert_int_eq(b.ev[0].type, KVEV_REMOVED);
	ck_assert_uint_eq(b.ev[0].n_hashes, 2);
	ck_assert_int_eq(b.ev[2].type, KVEV_REMOVED);
	kvev_batch_reset(&b);
	ck_assert_uint_eq(b.n, 0);
	kvev_batch_clear(&b);
	ck_assert_uint_eq(b.n, 1);
	ck_assert_int_eq(b.ev[0].type, KVEV_CLEARED);
	kvev_batch_free(&b);
}
END_TEST

static void fill(struct kvev_batch *b)
{
	int64_t s[2] = {-3488128144981237669LL, 42};
	uint32_t t[4] = {1, 2, 3, 4};
	int64_t r = 77;
	kvev_batch_remove(b, &r, 1);
	kvev_batch_store(b, true, 5, s, 2, t, 4, 2);
	kvev_batch_clear(b);
}

START_TEST(test_array_encoding_matches_sglang_positions)
{
	struct kvev_batch b = {.medium = "GPU"};
	fill(&b);
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	ck_assert_int_eq(kvev_encode(&b, 1700000000.5, 1, KVEV_ENC_ARRAY, &sb), 0);
	msgpack_unpacked u = unpack(&sb);
	msgpack_object *top = &u.data;
	ck_assert_int_eq(top->type, MSGPACK_OBJECT_ARRAY);
	ck_assert_uint_eq(top->via.array.size, 3);
	ck_assert(top->via.array.ptr[0].type == MSGPACK_OBJECT_FLOAT64 ||
		  top->via.array.ptr[0].type == MSGPACK_OBJECT_FLOAT);
	ck_assert_int_eq(as_i64(&top->via.array.ptr[2]), 1);
	msgpack_object *evs = &top->via.array.ptr[1];
	ck_assert_uint_eq(evs->via.array.size, 3);

	msgpack_object *rm = &evs->via.array.ptr[0];
	ck_assert_uint_eq(rm->via.array.size, 3);
	assert_str(&rm->via.array.ptr[0], "BlockRemoved");
	ck_assert_int_eq(as_i64(&rm->via.array.ptr[1].via.array.ptr[0]), 77);
	assert_str(&rm->via.array.ptr[2], "GPU");

	msgpack_object *st = &evs->via.array.ptr[1];
	ck_assert_uint_eq(st->via.array.size, 7);
	assert_str(&st->via.array.ptr[0], "BlockStored");
	ck_assert_uint_eq(st->via.array.ptr[1].via.array.size, 2);
	ck_assert_int_eq(as_i64(&st->via.array.ptr[1].via.array.ptr[0]), -3488128144981237669LL);
	ck_assert_int_eq(as_i64(&st->via.array.ptr[2]), 5);
	ck_assert_uint_eq(st->via.array.ptr[3].via.array.size, 4);
	ck_assert_int_eq(as_i64(&st->via.array.ptr[3].via.array.ptr[3]), 4);
	ck_assert_int_eq(as_i64(&st->via.array.ptr[4]), 2);
	ck_assert_int_eq(st->via.array.ptr[5].type, MSGPACK_OBJECT_NIL);
	assert_str(&st->via.array.ptr[6], "GPU");

	msgpack_object *cl = &evs->via.array.ptr[2];
	ck_assert_uint_eq(cl->via.array.size, 1);
	assert_str(&cl->via.array.ptr[0], "AllBlocksCleared");
	msgpack_unpacked_destroy(&u);
	msgpack_sbuffer_destroy(&sb);
	kvev_batch_free(&b);
}
END_TEST

START_TEST(test_map_encoding_has_type_keys_and_nil_root_parent)
{
	struct kvev_batch b = {.medium = NULL};
	int64_t h = 11;
	uint32_t t[2] = {8, 9};
	kvev_batch_store(&b, false, 0, &h, 1, t, 2, 2);
	kvev_batch_remove(&b, &h, 1);
	kvev_batch_clear(&b);
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	ck_assert_int_eq(kvev_encode(&b, 1.0, -1, KVEV_ENC_MAP, &sb), 0);
	msgpack_unpacked u = unpack(&sb);
	msgpack_object *top = &u.data;
	ck_assert_int_eq(top->via.array.ptr[2].type, MSGPACK_OBJECT_NIL);
	msgpack_object *evs = &top->via.array.ptr[1];
	msgpack_object *st = &evs->via.array.ptr[0];
	assert_str(map_get(st, "type"), "BlockStored");
	ck_assert_int_eq(map_get(st, "parent_block_hash")->type, MSGPACK_OBJECT_NIL);
	ck_assert_int_eq(as_i64(&map_get(st, "block_hashes")->via.array.ptr[0]), 11);
	ck_assert_uint_eq(map_get(st, "token_ids")->via.array.size, 2);
	ck_assert_int_eq(as_i64(map_get(st, "block_size")), 2);
	ck_assert_int_eq(map_get(st, "lora_id")->type, MSGPACK_OBJECT_NIL);
	ck_assert_ptr_null(map_get(st, "medium")); /* left out when None */
	msgpack_object *rm = &evs->via.array.ptr[1];
	assert_str(map_get(rm, "type"), "BlockRemoved");
	ck_assert_uint_eq(rm->via.map.size, 2);
	msgpack_object *cl = &evs->via.array.ptr[2];
	ck_assert_uint_eq(cl->via.map.size, 1);
	assert_str(map_get(cl, "type"), "AllBlocksCleared");
	msgpack_unpacked_destroy(&u);
	msgpack_sbuffer_destroy(&sb);
	kvev_batch_free(&b);
}
END_TEST

START_TEST(test_encoding_names_parse)
{
	enum kvev_encoding e;
	ck_assert_int_eq(kvev_encoding_parse("map", &e), 0);
	ck_assert_int_eq(e, KVEV_ENC_MAP);
	ck_assert_int_eq(kvev_encoding_parse("array", &e), 0);
	ck_assert_int_eq(e, KVEV_ENC_ARRAY);
	ck_assert_int_ne(kvev_encoding_parse("json", &e), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mock_kvev");
	TCase *tc = tcase_create("kvev");
	tcase_add_test(tc, test_chained_stores_coalesce_into_one_event);
	tcase_add_test(tc, test_store_with_other_parent_or_block_size_starts_new_event);
	tcase_add_test(tc, test_consecutive_removals_merge_but_not_across_a_store);
	tcase_add_test(tc, test_array_encoding_matches_sglang_positions);
	tcase_add_test(tc, test_map_encoding_has_type_keys_and_nil_root_parent);
	tcase_add_test(tc, test_encoding_names_parse);
	suite_add_tcase(s, tc);
	return sy_check_run(s);
}
