/* test_mock_cache.c — mock engine prefix cache model: whole-page hits, LRU
 * leaf eviction with BlockRemoved, BlockStored coalescing with parents,
 * locking, flush. */
#include <check.h>
#include <stdlib.h>

#include "common/errors.h"
#include "tools/mock-engine/cache.h"
#include "sy_check.h"

static uint32_t toks[64];

static size_t insert_all(struct mock_cache *c, const int64_t *h, size_t n, struct kvev_batch *ev)
{
	size_t l = mock_cache_acquire(c, h, n);
	return mock_cache_insert(c, h, n, l, toks, 2, ev);
}

START_TEST(test_second_request_hits_the_shared_prefix)
{
	struct mock_cache *c = mock_cache_create(16, 2); /* 8 pages */
	struct kvev_batch ev = {0};
	int64_t a[3] = {10, 11, 12}, b[3] = {10, 11, 99};
	ck_assert_uint_eq(mock_cache_match(c, a, 3), 0);
	ck_assert_uint_eq(insert_all(c, a, 3, &ev), 3);
	/* one BlockStored, three hashes, root parent */
	ck_assert_uint_eq(ev.n, 1);
	ck_assert_int_eq(ev.ev[0].type, KVEV_STORED);
	ck_assert_uint_eq(ev.ev[0].n_hashes, 3);
	ck_assert(!ev.ev[0].has_parent);
	ck_assert_uint_eq(ev.ev[0].n_tokens, 6);
	mock_cache_release(c, a, 3);
	kvev_batch_reset(&ev);

	ck_assert_uint_eq(mock_cache_match(c, b, 3), 2);
	size_t l = mock_cache_acquire(c, b, 3);
	ck_assert_uint_eq(l, 2);
	ck_assert_uint_eq(mock_cache_insert(c, b, 3, l, toks, 2, &ev), 3);
	ck_assert_uint_eq(ev.n, 1);
	ck_assert(ev.ev[0].has_parent);
	ck_assert_int_eq(ev.ev[0].parent, 11);
	ck_assert_int_eq(ev.ev[0].hashes[0], 99);
	ck_assert_uint_eq(mock_cache_pages(c), 4);
	mock_cache_release(c, b, 3);
	kvev_batch_free(&ev);
	mock_cache_destroy(c);
}
END_TEST

START_TEST(test_full_cache_evicts_lru_leaves_before_storing)
{
	struct mock_cache *c = mock_cache_create(8, 2); /* 4 pages */
	struct kvev_batch ev = {0};
	int64_t a[2] = {1, 2}, b[2] = {3, 4}, d[2] = {5, 6};
	insert_all(c, a, 2, NULL);
	mock_cache_release(c, a, 2);
	insert_all(c, b, 2, NULL);
	mock_cache_release(c, b, 2);
	ck_assert_uint_eq(mock_cache_pages(c), 4);
	/* a is older: its leaf (2) then its root (1) go. */
	ck_assert_uint_eq(insert_all(c, d, 2, &ev), 2);
	ck_assert_uint_eq(ev.n, 2);
	ck_assert_int_eq(ev.ev[0].type, KVEV_REMOVED);
	ck_assert_uint_eq(ev.ev[0].n_hashes, 2);
	ck_assert_int_eq(ev.ev[0].hashes[0], 2);
	ck_assert_int_eq(ev.ev[0].hashes[1], 1);
	ck_assert_int_eq(ev.ev[1].type, KVEV_STORED);
	ck_assert_uint_eq(ev.ev[1].n_hashes, 2);
	ck_assert_uint_eq(mock_cache_match(c, a, 2), 0);
	ck_assert_uint_eq(mock_cache_match(c, b, 2), 2);
	mock_cache_release(c, d, 2);
	kvev_batch_free(&ev);
	mock_cache_destroy(c);
}
END_TEST

START_TEST(test_hit_refreshes_lru_so_other_prefix_is_evicted)
{
	struct mock_cache *c = mock_cache_create(8, 2);
	struct kvev_batch ev = {0};
	int64_t a[2] = {1, 2}, b[2] = {3, 4}, d[1] = {5};
	insert_all(c, a, 2, NULL);
	mock_cache_release(c, a, 2);
	insert_all(c, b, 2, NULL);
	mock_cache_release(c, b, 2);
	mock_cache_release(c, a, mock_cache_acquire(c, a, 2)); /* touch a */
	insert_all(c, d, 1, &ev);
	ck_assert_int_eq(ev.ev[0].type, KVEV_REMOVED);
	ck_assert_uint_eq(ev.ev[0].n_hashes, 1);
	ck_assert_int_eq(ev.ev[0].hashes[0], 4); /* b's leaf, not a's */
	ck_assert_uint_eq(mock_cache_match(c, a, 2), 2);
	kvev_batch_free(&ev);
	mock_cache_destroy(c);
}
END_TEST

START_TEST(test_locked_pages_are_never_evicted)
{
	struct mock_cache *c = mock_cache_create(4, 2); /* 2 pages */
	int64_t a[2] = {1, 2}, b[2] = {3, 4};
	ck_assert_uint_eq(insert_all(c, a, 2, NULL), 2); /* still locked */
	ck_assert_uint_eq(insert_all(c, b, 2, NULL), 0); /* no room */
	ck_assert_int_eq(mock_cache_clear(c, NULL), SY_EBUSY);
	mock_cache_release(c, a, 2);
	ck_assert_uint_eq(insert_all(c, b, 2, NULL), 2);
	mock_cache_release(c, b, 2);
	struct kvev_batch ev = {0};
	ck_assert_int_eq(mock_cache_clear(c, &ev), 0);
	ck_assert_uint_eq(mock_cache_pages(c), 0);
	ck_assert_uint_eq(ev.n, 1);
	ck_assert_int_eq(ev.ev[0].type, KVEV_CLEARED);
	kvev_batch_free(&ev);
	mock_cache_destroy(c);
}
END_TEST

int main(void)
{
	for (int i = 0; i < 64; i++)
		toks[i] = (uint32_t)i;
	Suite *s = suite_create("mock_cache");
	TCase *tc = tcase_create("cache");
	tcase_add_test(tc, test_second_request_hits_the_shared_prefix);
	tcase_add_test(tc, test_full_cache_evicts_lru_leaves_before_storing);
	tcase_add_test(tc, test_hit_refreshes_lru_so_other_prefix_is_evicted);
	tcase_add_test(tc, test_locked_pages_are_never_evicted);
	suite_add_tcase(s, tc);
	return sy_check_run(s);
}
