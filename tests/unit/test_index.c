/* test_index.c — radix index (statebus/index.c): reference scenarios of
 * policy-defaults.md §12 (20 prefix depths, 21 tiers, 22 pump restart at
 * the index level) with their exact numbers, parent rules, removal and
 * pruning, clears, generations, eviction and reset. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "sb_test.h"
#include "statebus/sb-int.h"
#include "sy_check.h"

struct fx {
	char path[64];
	struct statebus_region *r;
	uint32_t a, b, c; /* worker slots */
};

static void fx_open(struct fx *f, uint32_t index_nodes, uint32_t overflow)
{
	sbt_path(f->path, sizeof(f->path));
	struct statebus_params p = sbt_small();
	p.index_nodes = index_nodes;
	p.index_overflow = overflow;
	f->r = sbt_create(f->path, &p);
	ck_assert_int_eq(statebus_proc_claim(f->r, STATEBUS_PROC_TOOL, NULL), SY_OK);
	ck_assert_int_eq(statebus_writer_lock(f->r, true), SY_OK);
	struct statebus_worker w = sbt_worker("http://a:1", 2);
	uint32_t gen;
	ck_assert_int_eq(statebus_worker_add(f->r, &w, &f->a, &gen), SY_OK);
	w = sbt_worker("http://b:1", 2);
	ck_assert_int_eq(statebus_worker_add(f->r, &w, &f->b, &gen), SY_OK);
	w = sbt_worker("http://c:1", 2);
	ck_assert_int_eq(statebus_worker_add(f->r, &w, &f->c, &gen), SY_OK);
}

static void fx_close(struct fx *f)
{
	statebus_region_close(f->r);
	statebus_region_destroy(f->path);
}

/* Depth of (worker, rank) in a match of hashes, 0 if absent. */
static uint32_t depth_of(struct fx *f, const int64_t *h, size_t n, uint32_t worker, uint32_t rank,
			 uint32_t *tiers)
{
	struct statebus_index_match m[16];
	int k = statebus_index_match(f->r, h, n, m, 16);
	ck_assert_int_ge(k, 0);
	for (int i = 0; i < k; i++)
		if (m[i].worker == worker && m[i].rank == rank) {
			if (tiers)
				*tiers = m[i].tiers;
			return m[i].depth;
		}
	return 0;
}

static struct statebus_index_stats stats(struct fx *f)
{
	struct statebus_index_stats s;
	statebus_index_stats(f->r, &s);
	return s;
}

#define DEV STATEBUS_TIER_DEVICE
#define HOST STATEBUS_TIER_HOST

/* Scenario 20: chain [1,2,3,4]; A stores all, B the first 2, C all then
 * block 2 removed → A 4, B 2, C 1; match_prefix still 4 blocks for {A, C}. */
START_TEST(test_prefix_depths_scenario_20)
{
	struct fx f;
	fx_open(&f, 64, 16);
	const int64_t h[] = {1, 2, 3, 4};
	ck_assert_int_eq(statebus_index_store(f.r, f.a, 0, false, 0, h, 4, DEV, 1), SY_OK);
	ck_assert_int_eq(statebus_index_store(f.r, f.b, 0, false, 0, h, 2, DEV, 2), SY_OK);
	ck_assert_int_eq(statebus_index_store(f.r, f.c, 0, false, 0, h, 4, DEV, 3), SY_OK);
	ck_assert_int_eq(statebus_index_remove(f.r, f.c, 0, &h[1], 1, STATEBUS_TIER_ALL), SY_OK);
	ck_assert_uint_eq(depth_of(&f, h, 4, f.a, 0, NULL), 4);
	ck_assert_uint_eq(depth_of(&f, h, 4, f.b, 0, NULL), 2);
	ck_assert_uint_eq(depth_of(&f, h, 4, f.c, 0, NULL), 1);
	struct statebus_index_match m[8];
	uint32_t blocks = 0;
	int k = statebus_index_path(f.r, h, 4, &blocks, m, 8);
	ck_assert_uint_eq(blocks, 4);
	ck_assert_int_eq(k, 2);
	ck_assert_uint_eq(m[0].worker + m[1].worker, f.a + f.c);
	ck_assert_uint_eq(m[0].depth, 4);
	ck_assert_uint_eq(stats(&f).nodes, 4);
	fx_close(&f);
}
END_TEST

/* Scenario 21: GPU and CPU_PINNED store [1,2,3]; GPU remove [3] → still 3
 * blocks, block 3 without a device owner; host remove [3] → 2 blocks. */
START_TEST(test_tiers_scenario_21_host_copy_keeps_ownership)
{
	struct fx f;
	fx_open(&f, 64, 16);
	const int64_t h[] = {1, 2, 3};
	uint32_t tiers = 0;
	ck_assert_int_eq(statebus_index_store(f.r, f.a, 0, false, 0, h, 3, DEV, 1), SY_OK);
	ck_assert_int_eq(statebus_index_store(f.r, f.a, 0, false, 0, h, 3, HOST, 2), SY_OK);
	ck_assert_uint_eq(depth_of(&f, h, 3, f.a, 0, &tiers), 3);
	ck_assert_uint_eq(tiers, DEV | HOST);
	ck_assert_int_eq(statebus_index_remove(f.r, f.a, 0, &h[2], 1, DEV), SY_OK);
	ck_assert_uint_eq(depth_of(&f, h, 3, f.a, 0, &tiers), 3);
	ck_assert_uint_eq(tiers, HOST); /* block 3 without a device owner */
	ck_assert_int_eq(statebus_index_remove(f.r, f.a, 0, &h[2], 1, HOST), SY_OK);
	ck_assert_uint_eq(depth_of(&f, h, 3, f.a, 0, &tiers), 2);
	ck_assert_uint_eq(tiers, DEV | HOST);
	ck_assert_uint_eq(stats(&f).nodes, 2); /* block 3 pruned */
	fx_close(&f);
}
END_TEST

/* Scenario 21, second half: an untagged (or unknown-medium) remove clears
 * every tier; a store with no tier (unknown medium) is refused. */
START_TEST(test_untagged_remove_clears_every_tier)
{
	struct fx f;
	fx_open(&f, 64, 16);
	const int64_t h[] = {1, 2, 3};
	ck_assert_int_eq(statebus_index_store(f.r, f.a, 0, false, 0, h, 3, DEV | HOST | STATEBUS_TIER_DISK, 1), SY_OK);
	ck_assert_int_eq(statebus_index_remove(f.r, f.a, 0, h, 3, STATEBUS_TIER_ALL), SY_OK);
	ck_assert_uint_eq(depth_of(&f, h, 3, f.a, 0, NULL), 0);
	ck_assert_uint_eq(stats(&f).nodes, 0);
	ck_assert_uint_eq(stats(&f).owners, 0);
	ck_assert_int_eq(statebus_index_store(f.r, f.a, 0, false, 0, h, 3, 0, 1), SY_EINVAL);
	ck_assert_int_eq(statebus_index_store(f.r, f.a, 0, false, 0, h, 3, 16, 1), SY_EINVAL);
	fx_close(&f);
}
END_TEST

/* Scenario 22 at the index level: hash 11 stored, then the rank restarts
 * (seq 0 / PublisherReset → clear rank), 22 and 33 stored → 11 gone. */
START_TEST(test_pump_restart_scenario_22_clear_rank)
{
	struct fx f;
	fx_open(&f, 64, 16);
	const int64_t h11 = 11, h22 = 22, h33 = 33;
	ck_assert_int_eq(statebus_index_store(f.r, f.a, 0, false, 0, &h11, 1, DEV, 1), SY_OK);
	ck_assert_int_eq(statebus_index_store(f.r, f.a, 1, false, 0, &h11, 1, DEV, 1), SY_OK);
	ck_assert_int_eq(statebus_index_clear_rank(f.r, f.a, 0), SY_OK);
	ck_assert_int_eq(statebus_index_store(f.r, f.a, 0, false, 0, &h22, 1, DEV, 2), SY_OK);
	ck_assert_int_eq(statebus_index_store(f.r, f.a, 0, true, 22, &h33, 1, DEV, 3), SY_OK);
	ck_assert_uint_eq(depth_of(&f, &h11, 1, f.a, 0, NULL), 0);
	ck_assert_uint_eq(depth_of(&f, &h11, 1, f.a, 1, NULL), 1); /* other rank kept */
	const int64_t c[] = {22, 33};
	ck_assert_uint_eq(depth_of(&f, c, 2, f.a, 0, NULL), 2);
	fx_close(&f);
}
END_TEST

START_TEST(test_parent_nil_one_and_missing_breadcrumb)
{
	struct fx f;
	fx_open(&f, 64, 16);
	const int64_t h[] = {1, 2}, tail[] = {3, 4}, orphan[] = {7, 8};
	ck_assert_int_eq(statebus_index_store(f.r, f.a, 0, false, 0, h, 2, DEV, 1), SY_OK);
	ck_assert_int_eq(statebus_index_store(f.r, f.a, 0, true, 2, tail, 2, DEV, 2), SY_OK);
	const int64_t full[] = {1, 2, 3, 4};
	ck_assert_uint_eq(depth_of(&f, full, 4, f.a, 0, NULL), 4);
	/* parent 99 unknown: attached at the root, breadcrumb counted */
	ck_assert_int_eq(statebus_index_store(f.r, f.b, 0, true, 99, orphan, 2, DEV, 3), SY_OK);
	ck_assert_uint_eq(depth_of(&f, orphan, 2, f.b, 0, NULL), 2);
	ck_assert_uint_eq(stats(&f).breadcrumbs, 1);
	fx_close(&f);
}
END_TEST

/* Parent 5 sits at two positions ([1,5] and [2,5]); the chain of B attaches
 * under the one B owns, whichever was stored more recently. */
START_TEST(test_parent_several_prefers_own)
{
	struct fx f;
	fx_open(&f, 64, 16);
	const int64_t p1[] = {1, 5}, p2[] = {2, 5}, t = 9;
	ck_assert_int_eq(statebus_index_store(f.r, f.b, 0, false, 0, p1, 2, DEV, 1), SY_OK);
	ck_assert_int_eq(statebus_index_store(f.r, f.a, 0, false, 0, p2, 2, DEV, 2), SY_OK);
	ck_assert_int_eq(statebus_index_store(f.r, f.b, 0, true, 5, &t, 1, DEV, 3), SY_OK);
	const int64_t q1[] = {1, 5, 9}, q2[] = {2, 5, 9};
	ck_assert_uint_eq(depth_of(&f, q1, 3, f.b, 0, NULL), 3);
	uint32_t blocks;
	struct statebus_index_match m[4];
	ck_assert_int_eq(statebus_index_path(f.r, q2, 3, &blocks, m, 4), 1);
	ck_assert_uint_eq(blocks, 2);
	/* neither owned by C: the most recently stored ([2,5]) wins */
	ck_assert_int_eq(statebus_index_store(f.r, f.c, 0, true, 5, &t, 1, DEV, 4), SY_OK);
	ck_assert_int_eq(statebus_index_path(f.r, q2, 3, &blocks, m, 4), 1);
	ck_assert_uint_eq(blocks, 3);
	ck_assert_uint_eq(m[0].worker, f.c);
	fx_close(&f);
}
END_TEST

/* BlockRemoved carries no parent: a hash at several positions is cleared at
 * every one of them; ownerless childless nodes are pruned upward, shared
 * interior nodes stay. */
START_TEST(test_remove_every_position_and_prune_upward)
{
	struct fx f;
	fx_open(&f, 64, 16);
	const int64_t x[] = {1, 5, 6}, y[] = {2, 5, 6};
	ck_assert_int_eq(statebus_index_store(f.r, f.a, 0, false, 0, x, 3, DEV, 1), SY_OK);
	ck_assert_int_eq(statebus_index_store(f.r, f.a, 0, false, 0, y, 3, DEV, 2), SY_OK);
	ck_assert_int_eq(statebus_index_store(f.r, f.b, 0, false, 0, x, 1, DEV, 3), SY_OK);
	ck_assert_uint_eq(stats(&f).nodes, 6);
	const int64_t rm[] = {6, 5};
	ck_assert_int_eq(statebus_index_remove(f.r, f.a, 0, rm, 2, DEV), SY_OK);
	ck_assert_uint_eq(depth_of(&f, x, 3, f.a, 0, NULL), 1);
	ck_assert_uint_eq(depth_of(&f, y, 3, f.a, 0, NULL), 1);
	ck_assert_uint_eq(stats(&f).nodes, 2);
	ck_assert_uint_eq(stats(&f).pruned, 4);
	/* node 1 keeps B after A leaves it */
	ck_assert_int_eq(statebus_index_remove(f.r, f.a, 0, x, 1, STATEBUS_TIER_ALL), SY_OK);
	ck_assert_uint_eq(depth_of(&f, x, 1, f.b, 0, NULL), 1);
	ck_assert_uint_eq(stats(&f).nodes, 2);
	/* removing an interior owner keeps the node while it has children */
	const int64_t z[] = {3, 4};
	ck_assert_int_eq(statebus_index_store(f.r, f.a, 0, false, 0, z, 2, DEV, 4), SY_OK);
	ck_assert_int_eq(statebus_index_store(f.r, f.b, 1, false, 0, z, 2, DEV, 5), SY_OK);
	ck_assert_int_eq(statebus_index_remove(f.r, f.a, 0, z, 1, DEV), SY_OK);
	ck_assert_uint_eq(depth_of(&f, z, 2, f.a, 0, NULL), 0); /* not contiguous */
	ck_assert_uint_eq(depth_of(&f, z, 2, f.b, 1, NULL), 2);
	ck_assert_uint_eq(stats(&f).nodes, 4);
	fx_close(&f);
}
END_TEST

START_TEST(test_clear_rank_and_worker)
{
	struct fx f;
	fx_open(&f, 64, 16);
	const int64_t h[] = {1, 2, 3};
	for (uint32_t rk = 0; rk < 2; rk++) {
		ck_assert_int_eq(statebus_index_store(f.r, f.a, rk, false, 0, h, 3, DEV, 1), SY_OK);
		ck_assert_int_eq(statebus_index_store(f.r, f.b, rk, false, 0, h, 2, DEV, 1), SY_OK);
	}
	ck_assert_uint_eq(stats(&f).owners, 10);
	ck_assert_int_eq(statebus_index_clear_rank(f.r, f.a, 1), SY_OK);
	ck_assert_uint_eq(depth_of(&f, h, 3, f.a, 1, NULL), 0);
	ck_assert_uint_eq(depth_of(&f, h, 3, f.a, 0, NULL), 3);
	ck_assert_int_eq(statebus_index_clear_worker(f.r, f.a), SY_OK);
	ck_assert_uint_eq(depth_of(&f, h, 3, f.a, 0, NULL), 0);
	ck_assert_uint_eq(depth_of(&f, h, 3, f.b, 1, NULL), 2);
	ck_assert_uint_eq(stats(&f).nodes, 2);
	ck_assert_uint_eq(stats(&f).owners, 4);
	ck_assert_int_eq(statebus_index_clear_rank(f.r, 99, 0), SY_EINVAL);
	fx_close(&f);
}
END_TEST

/* A reused worker slot never inherits the old worker's ownership, whether
 * or not the index was cleared; a store by the new generation replaces it. */
START_TEST(test_reused_slot_never_inherits_ownership)
{
	struct fx f;
	fx_open(&f, 64, 16);
	const int64_t h[] = {1, 2, 3};
	ck_assert_int_eq(statebus_index_store(f.r, f.c, 0, false, 0, h, 3, DEV | HOST, 1), SY_OK);
	struct statebus_worker w;
	ck_assert_int_eq(statebus_worker_read(f.r, f.c, &w), SY_OK);
	ck_assert_int_eq(statebus_worker_remove(f.r, f.c, w.generation), SY_OK);
	ck_assert_uint_eq(depth_of(&f, h, 3, f.c, 0, NULL), 0); /* free slot */
	struct statebus_worker nw = sbt_worker("http://new:1", 1);
	uint32_t slot, gen;
	ck_assert_int_eq(statebus_worker_add(f.r, &nw, &slot, &gen), SY_OK);
	ck_assert_uint_eq(slot, f.c);
	ck_assert_uint_ne(gen, w.generation);
	ck_assert_uint_eq(depth_of(&f, h, 3, slot, 0, NULL), 0);
	uint32_t tiers = 0;
	ck_assert_int_eq(statebus_index_store(f.r, slot, 0, false, 0, h, 1, DEV, 2), SY_OK);
	ck_assert_uint_eq(depth_of(&f, h, 3, slot, 0, &tiers), 1);
	ck_assert_uint_eq(tiers, DEV); /* old HOST bit not inherited */
	struct statebus_index_match m[4];
	ck_assert_int_eq(statebus_index_match(f.r, h, 3, m, 4), 1);
	ck_assert_uint_eq(m[0].worker_gen, gen);
	fx_close(&f);
}
END_TEST

/* More owners than the inline entry: overflow records, then reuse of the
 * entries freed by removal. */
START_TEST(test_many_owners_use_overflow)
{
	struct fx f;
	fx_open(&f, 64, 4);
	const int64_t h[] = {1, 2};
	uint32_t slots[3] = {f.a, f.b, f.c};
	for (int i = 0; i < 3; i++)
		for (uint32_t rk = 0; rk < 4; rk++)
			ck_assert_int_eq(statebus_index_store(f.r, slots[i], rk, false, 0, h, 2, DEV, 1), SY_OK);
	struct statebus_index_match m[16];
	ck_assert_int_eq(statebus_index_match(f.r, h, 2, m, 16), 12);
	for (int i = 0; i < 12; i++)
		ck_assert_uint_eq(m[i].depth, 2);
	ck_assert_uint_eq(stats(&f).overflow_used, 4); /* 11 extra owners × 2 nodes */
	ck_assert_int_eq(statebus_index_match(f.r, h, 2, m, 5), 5); /* capped */
	ck_assert_int_eq(statebus_index_clear_worker(f.r, f.b), SY_OK);
	ck_assert_int_eq(statebus_index_match(f.r, h, 2, m, 16), 8);
	fx_close(&f);
}
END_TEST

/* Many owners (inline + overflow) leaving the walk at staggered depths, in
 * the middle of the alive list: every one keeps its own depth and the tiers
 * of its deepest node (the walk reuses its per-step scratch; nothing of a
 * dropped or moved entry may leak into another). */
START_TEST(test_owners_drop_out_at_staggered_depths)
{
	struct fx f;
	fx_open(&f, 64, 16);
	const int64_t h[] = {11, 12, 13, 14, 15, 16};
	uint32_t slots[3] = {f.a, f.b, f.c};
	for (uint32_t k = 0; k < 12; k++) {
		size_t d = 6 - k % 6;
		uint32_t w = slots[k / 4], rk = k % 4;
		ck_assert_int_eq(statebus_index_store(f.r, w, rk, false, 0, h, d, DEV, 1), SY_OK);
		if (k % 3 == 0) /* also in host memory, the whole chain */
			ck_assert_int_eq(statebus_index_store(f.r, w, rk, false, 0, h, d, HOST, 1), SY_OK);
		else if (k % 3 == 1 && d > 1) /* host copy one block short */
			ck_assert_int_eq(statebus_index_store(f.r, w, rk, false, 0, h, d - 1, HOST, 1),
					 SY_OK);
	}
	for (size_t n = 1; n <= 6; n++)
		for (uint32_t k = 0; k < 12; k++) {
			size_t d = 6 - k % 6;
			uint32_t t = 0;
			uint32_t got = depth_of(&f, h, n, slots[k / 4], k % 4, &t);
			ck_assert_uint_eq(got, d < n ? d : n);
			uint32_t want = k % 3 == 0 ? DEV | HOST
					: k % 3 == 1 && got < d ? DEV | HOST : DEV;
			ck_assert_uint_eq(t, want);
		}
	fx_close(&f);
}
END_TEST

/* When the pool is full the least recently stored leaves go, counted; the
 * newest chain is whole; memory never grows. */
START_TEST(test_eviction_when_full_keeps_newest)
{
	struct fx f;
	fx_open(&f, 32, 8);
	int64_t h[8];
	for (int64_t chain = 0; chain < 40; chain++) {
		for (int i = 0; i < 8; i++)
			h[i] = chain * 100 + i + 1;
		int rc = statebus_index_store(f.r, f.a, 0, false, 0, h, 8, DEV, (uint64_t)chain);
		ck_assert_int_eq(rc, SY_OK);
		ck_assert_uint_eq(depth_of(&f, h, 8, f.a, 0, NULL), 8);
		ck_assert_uint_le(stats(&f).nodes, 32);
	}
	struct statebus_index_stats s = stats(&f);
	ck_assert_uint_gt(s.evictions, 0);
	ck_assert_uint_eq(s.dropped, 0);
	/* the oldest chain is gone, from its leaf up */
	for (int i = 0; i < 8; i++)
		h[i] = i + 1;
	ck_assert_uint_eq(depth_of(&f, h, 8, f.a, 0, NULL), 0);
	fx_close(&f);
}
END_TEST

/* A shared prefix touched by a later store outlives newer-but-idle chains. */
START_TEST(test_eviction_takes_least_recently_stored)
{
	struct fx f;
	fx_open(&f, 16, 8);
	const int64_t hot[] = {1, 2, 3, 4};
	ck_assert_int_eq(statebus_index_store(f.r, f.a, 0, false, 0, hot, 4, DEV, 1), SY_OK);
	int64_t h[4];
	for (int64_t chain = 1; chain < 30; chain++) {
		for (int i = 0; i < 4; i++)
			h[i] = chain * 100 + i;
		ck_assert_int_eq(statebus_index_store(f.r, f.b, 0, false, 0, h, 4, DEV, 10), SY_OK);
		/* the hot chain is re-stored (extended by one block) each round */
		int64_t leaf = 1000 + chain;
		ck_assert_int_eq(statebus_index_store(f.r, f.a, 0, true, 4, &leaf, 1, DEV, 10), SY_OK);
		ck_assert_uint_eq(depth_of(&f, hot, 4, f.a, 0, NULL), 4);
	}
	ck_assert_uint_gt(stats(&f).evictions, 0);
	fx_close(&f);
}
END_TEST

/* A chain longer than the whole pool: stored as far as room allows, the
 * rest dropped and counted; no crash. */
START_TEST(test_chain_longer_than_pool_is_dropped_not_crashed)
{
	struct fx f;
	fx_open(&f, 16, 4);
	int64_t h[40];
	for (int i = 0; i < 40; i++)
		h[i] = i + 1;
	ck_assert_int_eq(statebus_index_store(f.r, f.a, 0, false, 0, h, 40, DEV, 1), SY_ENOSPC);
	struct statebus_index_stats s = stats(&f);
	ck_assert_uint_eq(s.nodes, 16);
	ck_assert_uint_eq(s.dropped, 24);
	ck_assert_uint_eq(depth_of(&f, h, 40, f.a, 0, NULL), 16);
	fx_close(&f);
}
END_TEST

/* Reset empties the index, bumps the incarnation, and the pools are usable
 * again once the grace period has passed; a dead writer's busy flag makes
 * the next writer reset. */
START_TEST(test_reset_and_repair)
{
	struct fx f;
	fx_open(&f, 32, 8);
	const int64_t h[] = {1, 2, 3};
	ck_assert_int_eq(statebus_index_store(f.r, f.a, 0, false, 0, h, 3, DEV, 1), SY_OK);
	uint64_t inc = statebus_region_incarnation(f.r);
	ck_assert_int_eq(statebus_index_reset(f.r), SY_OK);
	ck_assert_uint_eq(statebus_region_incarnation(f.r), inc + 1);
	ck_assert_uint_eq(depth_of(&f, h, 3, f.a, 0, NULL), 0);
	ck_assert_uint_eq(stats(&f).nodes, 0);
	for (int round = 0; round < 20; round++)
		ck_assert_int_eq(statebus_index_store(f.r, f.b, 0, false, 0, h, 3, DEV, 2), SY_OK);
	ck_assert_uint_eq(depth_of(&f, h, 3, f.b, 0, NULL), 3);
	/* simulate a writer killed mid-update */
	f.r->hdr->index.busy = 1;
	statebus_writer_unlock(f.r);
	ck_assert_int_eq(statebus_writer_lock(f.r, true), SY_OK);
	ck_assert_uint_eq(depth_of(&f, h, 3, f.b, 0, NULL), 0);
	ck_assert_uint_eq(stats(&f).resets, 2);
	fx_close(&f);
}
END_TEST

/* statebus_index_check() accepts every state the write API leaves:
 * shared nodes with overflow owners, removals and pruning, evictions of a
 * full pool, retired nodes waiting, predictions, clears, a reset. */
START_TEST(test_check_accepts_what_the_writer_leaves)
{
	struct fx f;
	fx_open(&f, 32, 16);
	char err[256] = "";
	ck_assert_int_eq(statebus_index_check(f.r, err, sizeof(err)), SY_OK);
	const int64_t h[] = {1, 2, 3, 4, 5, 6};
	for (uint32_t rank = 0; rank < 2; rank++) {
		ck_assert_int_eq(statebus_index_store(f.r, f.a, rank, false, 0, h, 6, DEV, 1), SY_OK);
		ck_assert_int_eq(statebus_index_store(f.r, f.b, rank, false, 0, h, 4, HOST, 2), SY_OK);
		ck_assert_int_eq(statebus_index_store(f.r, f.c, rank, false, 0, h, 2, DEV, 3), SY_OK);
	}
	ck_assert_msg(statebus_index_check(f.r, err, sizeof(err)) == SY_OK, "%s", err);
	ck_assert_int_eq(statebus_index_remove(f.r, f.a, 0, &h[3], 1, STATEBUS_TIER_ALL), SY_OK);
	ck_assert_int_eq(statebus_index_clear_rank(f.r, f.c, 1), SY_OK);
	uint32_t gen = sb_worker_at(f.r, f.b)->w.generation;
	const int64_t p[] = {1, 2, 70, 71};
	ck_assert_int_eq(statebus_index_predict(f.r, f.b, gen, 0, p, 4, 10), SY_OK);
	ck_assert_msg(statebus_index_check(f.r, err, sizeof(err)) == SY_OK, "%s", err);
	for (int64_t k = 0; k < 12; k++) { /* fills the pool: evictions */
		const int64_t q[] = {100 + 3 * k, 101 + 3 * k, 102 + 3 * k};
		(void)statebus_index_store(f.r, f.a, 1, false, 0, q, 3, DEV, 20 + (uint64_t)k);
	}
	ck_assert_uint_gt(stats(&f).evictions, 0);
	ck_assert_msg(statebus_index_check(f.r, err, sizeof(err)) == SY_OK, "%s", err);
	ck_assert_int_eq(statebus_index_clear_worker(f.r, f.a), SY_OK);
	ck_assert_msg(statebus_index_check(f.r, err, sizeof(err)) == SY_OK, "%s", err);
	ck_assert_int_eq(statebus_index_reset(f.r), SY_OK);
	ck_assert_msg(statebus_index_check(f.r, err, sizeof(err)) == SY_OK, "%s", err);
	fx_close(&f);
}
END_TEST

/* A fixture with a few shared chains, then one corruption applied by `k`. */
static int check_after_corruption(int k, char *err, size_t cap)
{
	struct fx f;
	fx_open(&f, 64, 8);
	const int64_t h[] = {1, 2, 3, 4};
	ck_assert_int_eq(statebus_index_store(f.r, f.a, 0, false, 0, h, 4, DEV, 1), SY_OK);
	ck_assert_int_eq(statebus_index_store(f.r, f.b, 0, false, 0, h, 3, DEV, 2), SY_OK);
	ck_assert_int_eq(statebus_index_store(f.r, f.c, 0, false, 0, h, 2, DEV, 3), SY_OK);
	ck_assert_int_eq(statebus_index_store(f.r, f.c, 1, false, 0, h, 2, DEV, 4), SY_OK);
	ck_assert_int_eq(statebus_index_check(f.r, err, cap), SY_OK);
	struct sb_index_hdr *ih = &f.r->hdr->index;
	struct sb_index_node *nodes = sb_table(f.r, SB_T_INODES);
	uint32_t leaf = ih->lru_head, root_child = nodes[leaf].parent;
	while (nodes[root_child].parent != 0)
		root_child = nodes[root_child].parent;
	switch (k) {
	case 0: ih->busy = 1; break;                        /* writer died mid-update */
	case 1: ih->nodes++; break;                         /* count torn */
	case 2: nodes[leaf].hnext = leaf; break;            /* bucket cycle */
	case 3: nodes[root_child].nchildren++; break;       /* I2 */
	case 4: ih->lru_head = root_child; break;           /* I3: head not a leaf */
	case 5: nodes[leaf].parent = 60; break;             /* parent past the pool */
	case 6: nodes[root_child].nowners--; break;         /* owner count */
	case 7: nodes[leaf].ovf = nodes[root_child].ovf; break; /* shared overflow */
	case 8: nodes[root_child].seq |= 1u; break;         /* seqlock left odd */
	case 9: ih->node_free = 2; break;                   /* live node on the free list */
	}
	int rc = statebus_index_check(f.r, err, cap);
	fx_close(&f);
	return rc;
}

/* Each torn or corrupted structure is reported, naming what is wrong. */
START_TEST(test_check_finds_a_torn_index)
{
	char err[256];
	err[0] = '\0';
	ck_assert_int_eq(check_after_corruption(_i, err, sizeof(err)), SY_EMALFORMED);
	ck_assert_msg(err[0] != '\0', "corruption %d: no reason given", _i);
}
END_TEST

START_TEST(test_bad_arguments_and_empty_lookups)
{
	struct fx f;
	fx_open(&f, 32, 8);
	const int64_t h[] = {1};
	struct statebus_index_match m[2];
	ck_assert_int_eq(statebus_index_store(f.r, 100, 0, false, 0, h, 1, DEV, 1), SY_EINVAL);
	ck_assert_int_eq(statebus_index_store(f.r, f.a, 4, false, 0, h, 1, DEV, 1), SY_EINVAL);
	ck_assert_int_eq(statebus_index_store(f.r, 5, 0, false, 0, h, 1, DEV, 1), SY_ENOENT);
	ck_assert_int_eq(statebus_index_store(f.r, f.a, 0, false, 0, NULL, 1, DEV, 1), SY_EINVAL);
	ck_assert_int_eq(statebus_index_remove(f.r, f.a, 0, h, 1, 0), SY_EINVAL);
	ck_assert_int_eq(statebus_index_match(f.r, NULL, 1, m, 2), SY_EINVAL);
	ck_assert_int_eq(statebus_index_match(f.r, h, 1, m, 2), 0);
	ck_assert_int_eq(statebus_index_match(f.r, h, 0, m, 2), 0);
	ck_assert_int_eq(statebus_index_remove(f.r, f.a, 0, h, 1, DEV), SY_OK); /* unknown hash */
	fx_close(&f);
}
END_TEST

START_TEST(test_owner_stats_per_worker_and_tier)
{
	struct fx f;
	fx_open(&f, 32, 8);
	const int64_t h[] = {1, 2, 3};
	ck_assert_int_eq(statebus_index_store(f.r, f.a, 0, false, 0, h, 3, DEV, 1), SY_OK);
	ck_assert_int_eq(statebus_index_store(f.r, f.a, 0, false, 0, h, 1, HOST, 1), SY_OK);
	ck_assert_int_eq(statebus_index_store(f.r, f.b, 1, false, 0, h, 2, DEV, 1), SY_OK);
	struct statebus_index_owner_stats o[4];
	ck_assert_int_eq(statebus_index_owner_stats(f.r, -1, o, 4), 2);
	ck_assert_uint_eq(o[0].worker, f.a);
	ck_assert_uint_eq(o[0].blocks, 3);
	ck_assert_uint_eq(o[0].tier_blocks[0], 3);
	ck_assert_uint_eq(o[0].tier_blocks[1], 1);
	ck_assert_uint_eq(o[1].rank, 1);
	ck_assert_uint_eq(o[1].blocks, 2);
	ck_assert_int_eq(statebus_index_owner_stats(f.r, f.b, o, 4), 1);
	fx_close(&f);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("index");
	TCase *tc = tcase_create("index");
	tcase_add_test(tc, test_prefix_depths_scenario_20);
	tcase_add_test(tc, test_tiers_scenario_21_host_copy_keeps_ownership);
	tcase_add_test(tc, test_untagged_remove_clears_every_tier);
	tcase_add_test(tc, test_pump_restart_scenario_22_clear_rank);
	tcase_add_test(tc, test_parent_nil_one_and_missing_breadcrumb);
	tcase_add_test(tc, test_parent_several_prefers_own);
	tcase_add_test(tc, test_remove_every_position_and_prune_upward);
	tcase_add_test(tc, test_clear_rank_and_worker);
	tcase_add_test(tc, test_reused_slot_never_inherits_ownership);
	tcase_add_test(tc, test_many_owners_use_overflow);
	tcase_add_test(tc, test_owners_drop_out_at_staggered_depths);
	tcase_add_test(tc, test_eviction_when_full_keeps_newest);
	tcase_add_test(tc, test_eviction_takes_least_recently_stored);
	tcase_add_test(tc, test_chain_longer_than_pool_is_dropped_not_crashed);
	tcase_add_test(tc, test_reset_and_repair);
	tcase_add_test(tc, test_check_accepts_what_the_writer_leaves);
	tcase_add_loop_test(tc, test_check_finds_a_torn_index, 0, 10);
	tcase_add_test(tc, test_bad_arguments_and_empty_lookups);
	tcase_add_test(tc, test_owner_stats_per_worker_and_tier);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sy_check_run(suite());
}
