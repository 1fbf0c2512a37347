/* test_predict.c — predicted ownership (statebus/predict.c, index.c):
 * the prediction ring (push, drain, overflow, truncation, validation,
 * hostile ring contents), predicted entries in the index (match depths,
 * confirmation by BlockStored, BlockRemoved, clears, expiry, capacity
 * eviction, generation change, worker removal, reset), and a forked
 * producer pushing while the statebus side drains. */
#include <check.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "common/clock.h"
#include "sb_test.h"
#include "statebus/sb-int.h"
#include "sy_check.h"

#define DEV STATEBUS_TIER_DEVICE
#define PRED STATEBUS_TIER_PREDICTED
#define MS UINT64_C(1000000)

struct fx {
	char path[64];
	struct statebus_region *r;
	uint32_t proc;
	uint32_t a, b, ga, gb; /* worker slots and generations */
};

static void fx_open(struct fx *f, uint32_t index_nodes)
{
	sbt_path(f->path, sizeof(f->path));
	struct statebus_params p = sbt_small();
	p.index_nodes = index_nodes;
	f->r = sbt_create(f->path, &p);
	ck_assert_int_eq(statebus_proc_claim(f->r, STATEBUS_PROC_TOOL, &f->proc), SY_OK);
	ck_assert_int_eq(statebus_writer_lock(f->r, true), SY_OK);
	struct statebus_worker w = sbt_worker("http://a:1", 2);
	ck_assert_int_eq(statebus_worker_add(f->r, &w, &f->a, &f->ga), SY_OK);
	w = sbt_worker("http://b:1", 2);
	ck_assert_int_eq(statebus_worker_add(f->r, &w, &f->b, &f->gb), SY_OK);
}

static void fx_close(struct fx *f)
{
	statebus_region_close(f->r);
	statebus_region_destroy(f->path);
}

/* The match entry of (worker, rank), or depth 0. */
static struct statebus_index_match match_of(struct fx *f, const int64_t *h, size_t n,
					    uint32_t worker, uint32_t rank)
{
	struct statebus_index_match m[16];
	int k = statebus_index_match(f->r, h, n, m, 16);
	ck_assert_int_ge(k, 0);
	for (int i = 0; i < k; i++)
		if (m[i].worker == worker && m[i].rank == rank)
			return m[i];
	return (struct statebus_index_match){0};
}

static struct statebus_predict_worker pw(struct fx *f, uint32_t w)
{
	struct statebus_predict_worker o;
	ck_assert_int_eq(statebus_predict_worker_read(f->r, w, &o), SY_OK);
	return o;
}

static struct statebus_predict_stats pstats(struct fx *f)
{
	struct statebus_predict_stats s;
	statebus_predict_stats(f->r, &s);
	return s;
}

static struct statebus_prediction pred(uint32_t w, uint32_t gen, uint32_t rank, uint64_t now)
{
	return (struct statebus_prediction){.worker = w, .worker_gen = gen, .rank = rank,
					    .now_ns = now};
}

START_TEST(test_pushed_prediction_is_visible_after_drain_as_predicted_depth)
{
	struct fx f;
	fx_open(&f, 256);
	const int64_t h[] = {11, 12, 13, 14};
	struct statebus_prediction p = pred(f.a, f.ga, 1, 5 * MS);
	ck_assert_int_eq(statebus_predict_push(f.r, f.proc, &p, h, 4), SY_OK);
	ck_assert_uint_eq(match_of(&f, h, 4, f.a, 1).depth, 0); /* not drained yet */
	ck_assert_int_eq(statebus_predict_drain(f.r, 7 * MS, 64), 1);
	struct statebus_index_match m = match_of(&f, h, 4, f.a, 1);
	ck_assert_uint_eq(m.depth, 4);
	ck_assert_uint_eq(m.predicted_depth, 4);
	ck_assert_uint_eq(m.tiers, PRED);
	struct statebus_predict_stats s = pstats(&f);
	ck_assert_uint_eq(s.pushed, 1);
	ck_assert_uint_eq(s.drained, 1);
	ck_assert_uint_eq(s.applied, 1);
	ck_assert_uint_eq(s.lag_ns_max, 2 * MS);
	ck_assert_uint_eq(s.entries_used, 4);
	ck_assert_uint_eq(pw(&f, f.a).blocks, 4);
	ck_assert_int_eq(statebus_predict_drain(f.r, 8 * MS, 64), 0); /* ring empty */
	fx_close(&f);
}
END_TEST

START_TEST(test_match_reports_prediction_time_and_cache_signal)
{
	struct fx f;
	fx_open(&f, 256);
	const int64_t h[] = {1, 2, 3, 4, 5, 6};
	ck_assert_int_eq(statebus_index_predict(f.r, f.a, f.ga, 0, h, 5, 1), SY_OK);
	ck_assert_int_eq(statebus_index_store(f.r, f.a, 0, false, 0, h, 3, DEV, 2), SY_OK);
	struct statebus_index_match m = match_of(&f, h, 5, f.a, 0);
	ck_assert_uint_eq(m.predicted_depth, 2);
	ck_assert_uint_eq(m.predicted_ns, 1); /* block 5's last prediction */
	ck_assert_uint_eq(m.cache_signal, STATEBUS_CACHE_SIGNAL_NONE);
	/* a longer prompt predicted later: its deepest block carries the time */
	ck_assert_int_eq(statebus_index_predict(f.r, f.a, f.ga, 0, h, 6, 7), SY_OK);
	m = match_of(&f, h, 6, f.a, 0);
	ck_assert_uint_eq(m.predicted_depth, 3);
	ck_assert_uint_eq(m.predicted_ns, 7);
	/* all confirmed: no time */
	ck_assert_uint_eq(match_of(&f, h, 3, f.a, 0).predicted_ns, 0);
	ck_assert_int_eq(statebus_predict_set_worker(f.r, f.a, STATEBUS_CACHE_SIGNAL_PREDICTED, 0),
			 SY_OK);
	ck_assert_uint_eq(match_of(&f, h, 6, f.a, 0).cache_signal,
			  STATEBUS_CACHE_SIGNAL_PREDICTED);
	fx_close(&f);
}
END_TEST

START_TEST(test_block_stored_confirms_prediction_and_depths_split)
{
	struct fx f;
	fx_open(&f, 256);
	const int64_t h[] = {1, 2, 3, 4, 5};
	ck_assert_int_eq(statebus_index_predict(f.r, f.a, f.ga, 0, h, 5, 1), SY_OK);
	/* the engine stores the first three blocks: confirmed prefix 3 */
	ck_assert_int_eq(statebus_index_store(f.r, f.a, 0, false, 0, h, 3, DEV, 2), SY_OK);
	struct statebus_index_match m = match_of(&f, h, 5, f.a, 0);
	ck_assert_uint_eq(m.depth, 5);
	ck_assert_uint_eq(m.predicted_depth, 2);
	struct statebus_predict_worker w = pw(&f, f.a);
	ck_assert_uint_eq(w.confirmed, 3);
	ck_assert_uint_eq(w.blocks, 2);
	/* the confirmed blocks are plain device entries: a match of 3 is all confirmed */
	m = match_of(&f, h, 3, f.a, 0);
	ck_assert_uint_eq(m.depth, 3);
	ck_assert_uint_eq(m.predicted_depth, 0);
	ck_assert_uint_eq(m.tiers, DEV);
	/* a prediction over confirmed blocks leaves them confirmed */
	ck_assert_int_eq(statebus_index_predict(f.r, f.a, f.ga, 0, h, 5, 3), SY_OK);
	m = match_of(&f, h, 5, f.a, 0);
	ck_assert_uint_eq(m.predicted_depth, 2);
	ck_assert_uint_eq(pw(&f, f.a).blocks, 2);
	/* another rank is another ownership */
	ck_assert_uint_eq(match_of(&f, h, 5, f.a, 1).depth, 0);
	fx_close(&f);
}
END_TEST

START_TEST(test_block_removed_and_clears_drop_predictions)
{
	struct fx f;
	fx_open(&f, 256);
	const int64_t h[] = {1, 2, 3, 4};
	ck_assert_int_eq(statebus_index_predict(f.r, f.a, f.ga, 0, h, 4, 1), SY_OK);
	ck_assert_int_eq(statebus_index_predict(f.r, f.b, f.gb, 1, h, 4, 1), SY_OK);
	/* a tagged (GPU) removal still removes the prediction */
	ck_assert_int_eq(statebus_index_remove(f.r, f.a, 0, &h[2], 1, DEV), SY_OK);
	ck_assert_uint_eq(match_of(&f, h, 4, f.a, 0).depth, 2);
	ck_assert_uint_eq(pw(&f, f.a).removed, 1);
	ck_assert_uint_eq(pw(&f, f.a).blocks, 3); /* block 4 stays, unreachable from 2 */
	ck_assert_int_eq(statebus_index_clear_rank(f.r, f.a, 0), SY_OK);
	ck_assert_uint_eq(match_of(&f, h, 4, f.a, 0).depth, 0);
	ck_assert_uint_eq(pw(&f, f.a).blocks, 0);
	ck_assert_uint_eq(match_of(&f, h, 4, f.b, 1).depth, 4);
	ck_assert_int_eq(statebus_index_clear_worker(f.r, f.b), SY_OK);
	ck_assert_uint_eq(match_of(&f, h, 4, f.b, 1).depth, 0);
	ck_assert_uint_eq(pstats(&f).entries_used, 0);
	struct statebus_index_stats s;
	statebus_index_stats(f.r, &s);
	ck_assert_uint_eq(s.nodes, 0); /* ownerless nodes pruned */
	fx_close(&f);
}
END_TEST

START_TEST(test_expiry_drops_only_predictions_older_than_ttl)
{
	struct fx f;
	fx_open(&f, 256);
	const int64_t h[] = {1, 2, 3}, g[] = {7, 8};
	ck_assert_int_eq(statebus_index_predict(f.r, f.a, f.ga, 0, h, 3, 100 * MS), SY_OK);
	ck_assert_int_eq(statebus_index_predict(f.r, f.a, f.ga, 0, g, 2, 200 * MS), SY_OK);
	ck_assert_int_eq(statebus_index_store(f.r, f.a, 0, false, 0, h, 1, DEV, 150 * MS), SY_OK);
	ck_assert_int_eq(statebus_predict_sweep(f.r, 129 * MS, 30 * MS), 0);
	/* h's two predicted blocks are 30 ms old at 130 ms; g is not */
	ck_assert_int_eq(statebus_predict_sweep(f.r, 130 * MS, 30 * MS), 2);
	struct statebus_index_match m = match_of(&f, h, 3, f.a, 0);
	ck_assert_uint_eq(m.depth, 1); /* the confirmed block stays */
	ck_assert_uint_eq(m.predicted_depth, 0);
	ck_assert_uint_eq(match_of(&f, g, 2, f.a, 0).depth, 2);
	/* a refresh restarts the expiry */
	ck_assert_int_eq(statebus_index_predict(f.r, f.a, f.ga, 0, g, 2, 220 * MS), SY_OK);
	ck_assert_int_eq(statebus_predict_sweep(f.r, 240 * MS, 30 * MS), 0);
	ck_assert_int_eq(statebus_predict_sweep(f.r, 250 * MS, 30 * MS), 2);
	ck_assert_uint_eq(match_of(&f, g, 2, f.a, 0).depth, 0);
	struct statebus_predict_worker w = pw(&f, f.a);
	ck_assert_uint_eq(w.expired, 4);
	ck_assert_uint_eq(w.blocks, 0);
	fx_close(&f);
}
END_TEST

START_TEST(test_capacity_evicts_oldest_predictions_first)
{
	struct fx f;
	fx_open(&f, 256);
	ck_assert_int_eq(statebus_predict_set_worker(f.r, f.a, STATEBUS_CACHE_SIGNAL_PREDICTED, 4),
			 SY_OK);
	const int64_t h[] = {1, 2, 3}, g[] = {7, 8, 9}, big[] = {20, 21, 22, 23, 24, 25};
	ck_assert_int_eq(statebus_index_predict(f.r, f.a, f.ga, 0, h, 3, 1 * MS), SY_OK);
	ck_assert_int_eq(statebus_index_predict(f.r, f.a, f.ga, 0, g, 3, 2 * MS), SY_OK);
	struct statebus_predict_worker w = pw(&f, f.a);
	ck_assert_uint_eq(w.blocks, 4);
	ck_assert_uint_eq(w.evicted, 2);
	ck_assert_uint_eq(w.cache_signal, STATEBUS_CACHE_SIGNAL_PREDICTED);
	/* h's first two blocks were the oldest: h keeps nothing from the root */
	ck_assert_uint_eq(match_of(&f, h, 3, f.a, 0).depth, 0);
	ck_assert_uint_eq(match_of(&f, g, 3, f.a, 0).depth, 3);
	/* a chain longer than the capacity keeps its first capacity blocks */
	ck_assert_int_eq(statebus_index_predict(f.r, f.a, f.ga, 0, big, 6, 3 * MS), SY_OK);
	ck_assert_uint_eq(match_of(&f, big, 6, f.a, 0).depth, 4);
	ck_assert_uint_eq(pw(&f, f.a).blocks, 4);
	/* lowering the capacity evicts at once */
	ck_assert_int_eq(statebus_predict_set_worker(f.r, f.a, STATEBUS_CACHE_SIGNAL_PREDICTED, 1),
			 SY_OK);
	ck_assert_uint_eq(pw(&f, f.a).blocks, 1);
	ck_assert_int_eq(statebus_predict_set_worker(f.r, f.a, 9, 0), SY_EINVAL);
	fx_close(&f);
}
END_TEST

START_TEST(test_predictions_never_outlive_their_engine)
{
	struct fx f;
	fx_open(&f, 256);
	const int64_t h[] = {1, 2, 3};
	ck_assert_int_eq(statebus_index_predict(f.r, f.a, f.ga, 0, h, 3, 1), SY_OK);
	/* the slot is freed and reused by another engine: not reported, swept */
	ck_assert_int_eq(statebus_worker_remove(f.r, f.a, f.ga), SY_OK);
	struct statebus_worker w = sbt_worker("http://a2:1", 1);
	uint32_t slot, gen;
	ck_assert_int_eq(statebus_worker_add(f.r, &w, &slot, &gen), SY_OK);
	ck_assert_uint_eq(slot, f.a);
	ck_assert_uint_ne(gen, f.ga);
	ck_assert_uint_eq(match_of(&f, h, 3, f.a, 0).depth, 0);
	/* a prediction for the old generation is refused */
	ck_assert_int_eq(statebus_index_predict(f.r, f.a, f.ga, 0, h, 3, 2), SY_ESTALE);
	ck_assert_int_eq(statebus_predict_sweep(f.r, 3, 30000 * MS), 3);
	ck_assert_uint_eq(pstats(&f).entries_used, 0);
	ck_assert_uint_eq(pw(&f, f.a).removed, 3);
	/* the new generation's first prediction drops old entries too */
	ck_assert_int_eq(statebus_index_predict(f.r, f.b, f.gb, 0, h, 3, 4), SY_OK);
	ck_assert_int_eq(statebus_worker_remove(f.r, f.b, f.gb), SY_OK);
	ck_assert_int_eq(statebus_worker_add(f.r, &w, &slot, &gen), SY_EEXIST); /* same id */
	w = sbt_worker("http://b2:1", 1);
	ck_assert_int_eq(statebus_worker_add(f.r, &w, &slot, &gen), SY_OK);
	ck_assert_uint_eq(slot, f.b);
	ck_assert_int_eq(statebus_index_predict(f.r, f.b, gen, 0, h, 2, 5), SY_OK);
	struct statebus_predict_worker p = pw(&f, f.b);
	ck_assert_uint_eq(p.worker_gen, gen);
	ck_assert_uint_eq(p.blocks, 2);
	ck_assert_uint_eq(pstats(&f).entries_used, 2);
	/* a statebus restart (index reset) drops every prediction */
	ck_assert_int_eq(statebus_index_reset(f.r), SY_OK);
	ck_assert_uint_eq(pstats(&f).entries_used, 0);
	ck_assert_uint_eq(pw(&f, f.b).blocks, 0);
	ck_assert_uint_eq(match_of(&f, h, 2, f.b, 0).depth, 0);
	fx_close(&f);
}
END_TEST

START_TEST(test_ring_full_drops_and_counts_then_recovers)
{
	struct fx f;
	fx_open(&f, 4096);
	int64_t h[STATEBUS_PREDICT_CHAIN_MAX];
	for (size_t i = 0; i < STATEBUS_PREDICT_CHAIN_MAX; i++)
		h[i] = (int64_t)i + 1;
	struct statebus_prediction p = pred(f.a, f.ga, 0, 1);
	uint32_t per = STATEBUS_PREDICT_HDR_WORDS + STATEBUS_PREDICT_CHAIN_MAX;
	uint32_t fits = STATEBUS_PREDICT_RING_WORDS / per;
	for (uint32_t i = 0; i < fits; i++)
		ck_assert_int_eq(statebus_predict_push(f.r, f.proc, &p, h, STATEBUS_PREDICT_CHAIN_MAX),
				 SY_OK);
	ck_assert_int_eq(statebus_predict_push(f.r, f.proc, &p, h, STATEBUS_PREDICT_CHAIN_MAX),
			 SY_ENOSPC);
	ck_assert_uint_eq(pstats(&f).ring_full, 1);
	ck_assert_int_eq(statebus_predict_drain(f.r, 2, 1000), (int)fits);
	/* space again, and positions wrap around the ring */
	for (uint32_t i = 0; i < 3 * fits; i++) {
		ck_assert_int_eq(statebus_predict_push(f.r, f.proc, &p, h, 100), SY_OK);
		ck_assert_int_eq(statebus_predict_drain(f.r, 3, 1000), 1);
	}
	ck_assert_uint_eq(pstats(&f).malformed, 0);
	ck_assert_uint_eq(match_of(&f, h, 100, f.a, 0).depth, 100);
	/* drain budget */
	ck_assert_int_eq(statebus_predict_push(f.r, f.proc, &p, h, 2), SY_OK);
	ck_assert_int_eq(statebus_predict_push(f.r, f.proc, &p, h, 2), SY_OK);
	ck_assert_int_eq(statebus_predict_drain(f.r, 4, 1), 1);
	ck_assert_int_eq(statebus_predict_drain(f.r, 4, 1), 1);
	fx_close(&f);
}
END_TEST

START_TEST(test_long_chain_truncated_and_counted)
{
	struct fx f;
	fx_open(&f, 4096);
	size_t n = STATEBUS_PREDICT_CHAIN_MAX + 10;
	int64_t *h = calloc(n, sizeof(*h));
	for (size_t i = 0; i < n; i++)
		h[i] = (int64_t)i + 100;
	struct statebus_prediction p = pred(f.a, f.ga, 0, 1);
	ck_assert_int_eq(statebus_predict_push(f.r, f.proc, &p, h, n), SY_OK);
	ck_assert_uint_eq(pstats(&f).truncated, 10);
	ck_assert_int_eq(statebus_predict_drain(f.r, 2, 8), 1);
	ck_assert_uint_eq(match_of(&f, h, n, f.a, 0).depth, STATEBUS_PREDICT_CHAIN_MAX);
	free(h);
	fx_close(&f);
}
END_TEST

START_TEST(test_stale_and_foreign_predictions_dropped_at_drain)
{
	struct fx f;
	fx_open(&f, 256);
	const int64_t h[] = {1, 2};
	struct statebus_prediction p = pred(f.a, f.ga + 1, 0, 1); /* wrong generation */
	ck_assert_int_eq(statebus_predict_push(f.r, f.proc, &p, h, 2), SY_OK);
	p = pred(f.a, f.ga, 2, 1); /* rank ≥ dp_size 2 */
	ck_assert_int_eq(statebus_predict_push(f.r, f.proc, &p, h, 2), SY_OK);
	p = pred(7, 1, 0, 1); /* free slot */
	ck_assert_int_eq(statebus_predict_push(f.r, f.proc, &p, h, 2), SY_OK);
	p = pred(f.a, f.ga, 0, 1);
	p.model_tag = statebus_predict_model_tag("other", 5);
	ck_assert_int_eq(statebus_predict_push(f.r, f.proc, &p, h, 2), SY_OK);
	p.model_tag = statebus_predict_model_tag("default-model", 13);
	ck_assert_int_eq(statebus_predict_push(f.r, f.proc, &p, h, 2), SY_OK);
	ck_assert_int_eq(statebus_predict_drain(f.r, 2, 64), 5);
	struct statebus_predict_stats s = pstats(&f);
	ck_assert_uint_eq(s.stale, 4);
	ck_assert_uint_eq(s.applied, 1);
	ck_assert_uint_eq(match_of(&f, h, 2, f.a, 0).depth, 2);
	p.worker = 0x10000;
	ck_assert_int_eq(statebus_predict_push(f.r, f.proc, &p, h, 2), SY_EINVAL);
	ck_assert_int_eq(statebus_predict_push(f.r, 99, &p, h, 2), SY_EINVAL);
	fx_close(&f);
}
END_TEST

START_TEST(test_hostile_ring_contents_are_skipped_not_trusted)
{
	struct fx f;
	fx_open(&f, 256);
	struct sb_pring *q = sb_pring_at(f.r, f.proc);
	const int64_t h[] = {1, 2};
	/* garbage record: bad magic */
	q->words[0] = 0xdeadbeef;
	__atomic_store_n(&q->prod.tail, 4, __ATOMIC_RELEASE);
	ck_assert_int_eq(statebus_predict_drain(f.r, 1, 64), 0);
	ck_assert_uint_eq(pstats(&f).malformed, 1);
	ck_assert_uint_eq(q->cons.head, 4);
	/* a record claiming more hashes than were published */
	q->words[4] = SB_PRED_MAGIC | (uint64_t)400 << 16;
	q->prod.tail = 8;
	ck_assert_int_eq(statebus_predict_drain(f.r, 1, 64), 0);
	ck_assert_uint_eq(pstats(&f).malformed, 2);
	/* a tail further than the ring from the head */
	q->prod.tail = 8 + 10 * (uint64_t)STATEBUS_PREDICT_RING_WORDS;
	ck_assert_int_eq(statebus_predict_drain(f.r, 1, 64), 0);
	ck_assert_uint_eq(pstats(&f).malformed, 3);
	/* the ring works again afterwards */
	struct statebus_prediction p = pred(f.a, f.ga, 0, 1);
	ck_assert_int_eq(statebus_predict_push(f.r, f.proc, &p, h, 2), SY_OK);
	ck_assert_int_eq(statebus_predict_drain(f.r, 2, 64), 1);
	ck_assert_uint_eq(match_of(&f, h, 2, f.a, 0).depth, 2);
	fx_close(&f);
}
END_TEST

START_TEST(test_pool_exhaustion_cuts_chain_and_counts)
{
	struct fx f;
	fx_open(&f, 64); /* 32 predicted entries */
	int64_t h[40];
	for (int i = 0; i < 40; i++)
		h[i] = i + 1;
	ck_assert_int_eq(statebus_index_predict(f.r, f.a, f.ga, 0, h, 40, 1), SY_ENOSPC);
	ck_assert_uint_eq(match_of(&f, h, 40, f.a, 0).depth, 32);
	ck_assert_uint_ge(pstats(&f).pool_full, 1);
	/* a later prediction of the same worker evicts its oldest ones */
	const int64_t g[] = {100, 101};
	ck_assert_int_eq(statebus_index_predict(f.r, f.a, f.ga, 0, g, 2, 2), SY_OK);
	ck_assert_uint_eq(match_of(&f, g, 2, f.a, 0).depth, 2);
	ck_assert_uint_eq(pw(&f, f.a).evicted, 2);
	/* another worker's prediction finds no room (and steals none) */
	ck_assert_int_eq(statebus_index_predict(f.r, f.b, f.gb, 0, g, 2, 3), SY_ENOSPC);
	ck_assert_uint_eq(pstats(&f).entries_used, 32);
	fx_close(&f);
}
END_TEST

START_TEST(test_node_eviction_releases_predicted_entries)
{
	struct fx f;
	fx_open(&f, 64);
	int64_t h[64];
	for (int i = 0; i < 64; i++)
		h[i] = 1000 + i;
	ck_assert_int_eq(statebus_index_predict(f.r, f.a, f.ga, 0, h, 20, 1), SY_OK);
	/* engine stores fill the node pool: LRU leaves (predicted ones too) go */
	for (int k = 0; k < 6; k++) {
		int64_t c[16];
		for (int i = 0; i < 16; i++)
			c[i] = 5000 + k * 100 + i;
		(void)statebus_index_store(f.r, f.b, 0, false, 0, c, 16, DEV, 10 + k);
	}
	struct statebus_index_stats s;
	statebus_index_stats(f.r, &s);
	ck_assert_uint_gt(s.evictions, 0);
	/* P1: every predicted owner word still reachable has its entry */
	struct statebus_index_owner_stats os[8];
	int k = statebus_index_owner_stats(f.r, f.a, os, 8);
	uint64_t pred_words = k > 0 ? os[0].tier_blocks[4] : 0;
	ck_assert_uint_eq(pred_words, pw(&f, f.a).blocks);
	ck_assert_uint_eq(pstats(&f).entries_used, pw(&f, f.a).blocks);
	ck_assert_uint_lt(pw(&f, f.a).blocks, 20);
	fx_close(&f);
}
END_TEST

/* A forked producer (its own proc slot) pushes chains (hash i·1000 + j,
 * j < len, len = 1 + i mod 32) for SY_TORTURE_SECONDS, spinning when the
 * ring is full, while this process drains, sweeps and reclaims: every
 * pushed prediction is drained exactly once, validates and applies. */
START_TEST(test_forked_producer_pushes_while_statebus_drains)
{
	struct fx f;
	fx_open(&f, 1u << 16);
	const char *env = getenv("SY_TORTURE_SECONDS");
	int secs = env ? atoi(env) : 1;
	if (secs < 1)
		secs = 1;
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char err[256];
		struct statebus_region *c = NULL;
		if (statebus_region_open(f.path, NULL, STATEBUS_ATTACH_ONLY, &c, err, sizeof(err)) != SY_OK)
			_exit(2);
		uint32_t slot;
		if (statebus_proc_claim(c, STATEBUS_PROC_ROUTER, &slot) != SY_OK)
			_exit(3);
		uint64_t end = sy_mono_ns() + (uint64_t)secs * 1000000000u;
		int64_t h[32];
		for (uint64_t i = 1; sy_mono_ns() < end; i++) {
			uint32_t len = 1 + (uint32_t)(i % 32);
			for (uint32_t j = 0; j < len; j++)
				h[j] = (int64_t)(i * 1000 + j);
			struct statebus_prediction p = {.worker = f.a, .worker_gen = f.ga, .rank = 0,
							.now_ns = sy_mono_ns()};
			while (statebus_predict_push(c, slot, &p, h, len) == SY_ENOSPC)
				;
		}
		statebus_region_close(c);
		_exit(0);
	}
	uint64_t drained = 0;
	int status = 0;
	for (;;) {
		int n = statebus_predict_drain(f.r, sy_mono_ns(), 256);
		ck_assert_int_ge(n, 0);
		drained += (uint64_t)n;
		if (n == 0 && waitpid(pid, &status, WNOHANG) == pid)
			break;
		(void)statebus_predict_sweep(f.r, sy_mono_ns(), 50 * MS);
	}
	drained += (uint64_t)statebus_predict_drain(f.r, sy_mono_ns(), UINT32_MAX);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	struct statebus_predict_stats s = pstats(&f);
	ck_assert_uint_gt(s.pushed, 100);
	ck_assert_uint_eq(s.pushed, drained);
	ck_assert_uint_eq(s.drained, drained);
	ck_assert_uint_eq(s.malformed, 0);
	ck_assert_uint_eq(s.stale + s.applied, drained);
	ck_assert_uint_eq(s.applied, drained);
	fx_close(&f);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("predict");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_pushed_prediction_is_visible_after_drain_as_predicted_depth);
	tcase_add_test(tc, test_block_stored_confirms_prediction_and_depths_split);
	tcase_add_test(tc, test_match_reports_prediction_time_and_cache_signal);
	tcase_add_test(tc, test_block_removed_and_clears_drop_predictions);
	tcase_add_test(tc, test_expiry_drops_only_predictions_older_than_ttl);
	tcase_add_test(tc, test_capacity_evicts_oldest_predictions_first);
	tcase_add_test(tc, test_predictions_never_outlive_their_engine);
	tcase_add_test(tc, test_ring_full_drops_and_counts_then_recovers);
	tcase_add_test(tc, test_long_chain_truncated_and_counted);
	tcase_add_test(tc, test_stale_and_foreign_predictions_dropped_at_drain);
	tcase_add_test(tc, test_hostile_ring_contents_are_skipped_not_trusted);
	tcase_add_test(tc, test_pool_exhaustion_cuts_chain_and_counts);
	tcase_add_test(tc, test_node_eviction_releases_predicted_entries);
	tcase_add_test(tc, test_forked_producer_pushes_while_statebus_drains);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sy_check_run(suite());
}
