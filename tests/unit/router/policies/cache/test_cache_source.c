/* test_cache_source.c — prefix sources and memos (router/policies/
 * cache_source.h, digest_memo.h) and the remote prefix-query protocol
 * (statebus-query.h): the digest memo equals the plain chain; the local
 * source keeps the max over DP ranks; the remote source against a real
 * query server (a thread answering with statebus_query_answer() from the
 * same region over ipc) — scenarios 15 and 16 with their exact numbers,
 * each unavailability kept distinguishable; the decoders hold their caps
 * under truncation and mutation; router_select fills the memo itself; the
 * wait table of queries sent without waiting (a ROUTER socket of the test
 * answering when told): replies matched by id in any order, a reply after
 * the deadline or after a cancel counted late, the deadline expiring a
 * waiter, the in-flight bound shedding without dropping live waiters. */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zmq.h>

#include "common/blockhash.h"
#include "common/clock.h"
#include "common/config.h"
#include "router/core/generation.h"
#include "router/policies/cache/cache_aware.h"
#include "router/policies/cache/cache_source.h"
#include "router/policies/cache/digest_memo.h"
#include "router/core/select.h"
#include "tests/unit/router/router_fixture.h"
#include "statebus-query.h"
#include "tests/unit/sy_check.h"

static struct rfx fx;
static void setup(void) { rfx_open(&fx); router_rng_seed(11); }
static void teardown(void) { rfx_close(&fx); }

/* ---- digest memo ---------------------------------------------------------------- */

START_TEST(test_digest_memo_chain_equals_plain_chain_with_shared_prefixes)
{
	enum { N = 700 };
	static uint32_t base[N], tok[N];
	static int64_t want[N], got[N];
	struct digest_memo *m;
	ck_assert_int_eq(digest_memo_create(64, &m), SY_OK); /* small: evictions happen */
	for (size_t i = 0; i < N; i++)
		base[i] = (uint32_t)((i * 2654435761u) % 151936u);
	const uint32_t sizes[] = {1, 3, 16, 64};
	for (size_t si = 0; si < 4; si++) {
		for (int bigram = 0; bigram < 2; bigram++) {
			for (int salted = 0; salted < 2; salted++) {
				struct sy_blockhash_params p;
				ck_assert_int_eq(sy_blockhash_params_init(&p, sizes[si], bigram,
									  salted ? "t" : NULL,
									  salted ? 1 : 0),
						 SY_OK);
				for (int round = 0; round < 6; round++) {
					/* prompts share a prefix and differ after it */
					size_t n = 100 + (size_t)round * 100;
					memcpy(tok, base, sizeof(tok));
					tok[n / 2] ^= (uint32_t)round;
					ssize_t a = sy_blockhash_chain(tok, n, &p, want, N, NULL);
					ssize_t b = digest_memo_chain(m, tok, n, &p, got, N);
					ck_assert_int_eq(a, b);
					ck_assert_int_gt(a, 0);
					ck_assert_mem_eq(want, got, (size_t)a * sizeof(int64_t));
				}
			}
		}
	}
	struct digest_memo_stats st;
	digest_memo_get_stats(m, &st);
	ck_assert_uint_gt(st.hits, 0);
	ck_assert_uint_gt(st.misses, 0);
	ck_assert_uint_gt(st.evictions, 0);
	ck_assert_uint_eq(st.entries, 64);
	digest_memo_destroy(m);
}
END_TEST

/* The prompt shortcut and the prefix keys: a repeated prompt is served
 * whole, but never across modes (block size, bigram, salt) nor for a prompt
 * that differs anywhere, even in its last token; every result equals the
 * plain chain. */
START_TEST(test_digest_memo_prompt_shortcut_keeps_modes_apart)
{
	enum { N = 300 };
	static uint32_t tok[N];
	static int64_t want[N], got[N];
	struct digest_memo *m;
	ck_assert_int_eq(digest_memo_create(0, &m), SY_OK);
	for (size_t i = 0; i < N; i++)
		tok[i] = (uint32_t)((i * 40503u) % 151936u);
	struct sy_blockhash_params ps[5];
	sy_blockhash_params_init(&ps[0], 16, false, NULL, 0);
	sy_blockhash_params_init(&ps[1], 16, true, NULL, 0);
	sy_blockhash_params_init(&ps[2], 16, false, "s", 1);
	sy_blockhash_params_init(&ps[3], 8, false, NULL, 0);
	sy_blockhash_params_init(&ps[4], 32, false, NULL, 0);
	struct digest_memo_stats st;
	for (int round = 0; round < 3; round++) {
		for (size_t k = 0; k < 5; k++) {
			for (size_t n = N - 1; n <= N; n++) { /* a prompt and its one-token-shorter twin */
				tok[N - 1] = (uint32_t)round; /* rounds differ in the last token only */
				ssize_t a = sy_blockhash_chain(tok, n, &ps[k], want, N, NULL);
				ssize_t b = digest_memo_chain(m, tok, n, &ps[k], got, N);
				ck_assert_int_eq(a, b);
				ck_assert_mem_eq(want, got, (size_t)a * sizeof(int64_t));
				b = digest_memo_chain(m, tok, n, &ps[k], got, N); /* again: the shortcut */
				ck_assert_int_eq(a, b);
				ck_assert_mem_eq(want, got, (size_t)a * sizeof(int64_t));
			}
		}
	}
	digest_memo_get_stats(m, &st);
	/* every second call is a repeat; the shorter twins repeat across rounds too */
	ck_assert_uint_ge(st.prompt_hits, 3 * 5 * 2);
	ck_assert_uint_gt(st.misses, 0);
	digest_memo_destroy(m);
}
END_TEST

START_TEST(test_digest_memo_golden_and_repeat_hits)
{
	struct digest_memo *m;
	ck_assert_int_eq(digest_memo_create(0, &m), SY_OK);
	struct sy_blockhash_params p;
	sy_blockhash_params_init(&p, 4, false, NULL, 0);
	uint32_t t[4] = {1, 2, 3, 4};
	int64_t id = 0;
	for (int k = 0; k < 2; k++) {
		ck_assert_int_eq(digest_memo_chain(m, t, 4, &p, &id, 1), 1);
		ck_assert_int_eq(id, INT64_C(-3488128144981237669));
	}
	sy_blockhash_params_init(&p, 2, true, NULL, 0);
	uint32_t b[5] = {10, 20, 30, 40, 50};
	int64_t ids[2];
	ck_assert_int_eq(digest_memo_chain(m, b, 5, &p, ids, 2), 2);
	ck_assert_int_eq(ids[0], INT64_C(-8847804484166691499));
	ck_assert_int_eq(ids[1], INT64_C(4989791362144317498));
	struct digest_memo_stats st;
	digest_memo_get_stats(m, &st);
	ck_assert_uint_eq(st.hits, 1);
	ck_assert_uint_eq(st.misses, 3);
	ck_assert_int_eq(digest_memo_chain(m, b, 5, &p, ids, 1), SY_ENOSPC);
	digest_memo_destroy(m);
}
END_TEST

/* ---- helpers ------------------------------------------------------------------- */

static uint32_t toks8[8] = {21, 22, 23, 24, 25, 26, 27, 28};

/* A worker of model "m" whose KV events are indexed in `bs`-token blocks. */
static uint32_t kv_worker(const char *id, uint32_t bs, uint16_t dp)
{
	struct statebus_worker w = sbt_worker(id, dp);
	snprintf(w.model, sizeof(w.model), "m");
	w.kv_block_size = bs;
	w.has_cache_signal = 1;
	uint32_t slot, gen;
	ck_assert_int_eq(statebus_worker_add(fx.r, &w, &slot, &gen), SY_OK);
	return slot;
}

static void hold_rank(const int64_t *ids, uint32_t slot, uint32_t rank, size_t blocks)
{
	ck_assert_int_eq(statebus_index_store(fx.r, slot, rank, false, 0, ids, blocks,
					      STATEBUS_TIER_DEVICE, RF_NOW),
			 SY_OK);
}

static struct pick_request req_of(struct prefix_memo *m, const uint32_t *t, size_t n)
{
	struct pick_request r = {0};
	r.model.ptr = "m";
	r.model.len = 1;
	r.token_ids = t;
	r.n_token_ids = n;
	r.input_tokens = n;
	r.memo = m;
	return r;
}

/* Initialises m and chains it over toks8 (block size 1) → the request
 * that names m. */
static struct pick_request memo_of_toks8(struct prefix_memo *m)
{
	prefix_memo_init(m, NULL);
	struct pick_request r = req_of(m, toks8, 8);
	ck_assert_int_eq(prefix_memo_chain(m, &r, 1, false), PREFIX_FOUND);
	return r;
}

START_TEST(test_local_source_max_over_ranks_capped_and_generation_checked)
{
	struct prefix_memo m;
	struct pick_request req = memo_of_toks8(&m);
	uint32_t a = kv_worker("http://a", 1, 2);
	hold_rank(m.ids, a, 0, 3);
	hold_rank(m.ids, a, 1, 5);
	struct cache_source local;
	cache_source_init_local(&local);
	const struct prefix_memo_entry *e = prefix_memo_lookup(&m, &local, fx.r, &req, false);
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(e->status, PREFIX_FOUND);
	ck_assert_uint_eq(e->n_depths, 1);
	ck_assert_uint_eq(prefix_entry_depth(e, a, rfx_gen(&fx, a), "http://a"), 5);
	ck_assert_uint_eq(prefix_entry_depth(e, a, rfx_gen(&fx, a) + 1, "http://a"), 0);
	/* a second lookup is the memo's */
	ck_assert_ptr_eq(prefix_memo_lookup(&m, &local, fx.r, &req, false), e);
	ck_assert_uint_eq(m.lookups, 1);
	ck_assert_uint_eq(local.stats.lookups, 1);
	prefix_memo_free(&m);
}
END_TEST

/* A prediction this process pushed counts before the statebus applied it,
 * and is forgotten once applied (the index answers from then on). */
START_TEST(test_local_source_counts_own_pending_predictions_until_applied)
{
	prefix_pending_clear();
	struct prefix_memo m;
	struct pick_request req = memo_of_toks8(&m);
	uint32_t a = kv_worker("http://a", 1, 1);
	uint32_t b = kv_worker("http://b", 1, 1);
	hold_rank(m.ids, b, 0, 3);
	struct statebus_prediction pr = {.worker = a, .worker_gen = rfx_gen(&fx, a),
					 .now_ns = sy_mono_ns()};
	/* the first 6 blocks of the request's chain, then another branch */
	int64_t chain[7];
	memcpy(chain, m.ids, 6 * sizeof(*chain));
	chain[6] = 424242;
	ck_assert_int_eq(statebus_predict_push(fx.r, fx.proc, &pr, chain, 7), SY_OK);
	prefix_pending_add(a, pr.worker_gen, chain, 7, statebus_predict_ring_pos(fx.r, fx.proc),
			   sy_mono_ns());
	ck_assert(!statebus_predict_applied(fx.r, fx.proc, statebus_predict_ring_pos(fx.r, fx.proc)));
	struct cache_source local;
	cache_source_init_local(&local);
	const struct prefix_memo_entry *e = prefix_memo_lookup(&m, &local, fx.r, &req, false);
	ck_assert_uint_eq(e->n_depths, 2);
	const struct prefix_depth *d = prefix_entry_find(e, a, pr.worker_gen, NULL);
	ck_assert_ptr_nonnull(d);
	ck_assert_uint_eq(d->blocks, 6);
	ck_assert_uint_eq(d->predicted, 6);
	ck_assert_uint_lt(d->predicted_age_ms, PREFIX_PENDING_MAX_AGE_MS);
	ck_assert_uint_eq(prefix_entry_depth(e, b, rfx_gen(&fx, b), NULL), 3);
	/* one pushed longer ago than the bound (no statebus draining) is dropped */
	prefix_pending_add(b, rfx_gen(&fx, b), m.ids, 8, statebus_predict_ring_pos(fx.r, fx.proc),
			   sy_mono_ns() - (PREFIX_PENDING_MAX_AGE_MS + 1) * UINT64_C(1000000));
	struct prefix_memo m2;
	prefix_memo_init(&m2, NULL);
	struct pick_request req2 = req_of(&m2, toks8, 8);
	ck_assert_int_eq(prefix_memo_chain(&m2, &req2, 1, false), PREFIX_FOUND);
	const struct prefix_memo_entry *e2 = prefix_memo_lookup(&m2, &local, fx.r, &req2, false);
	ck_assert_uint_eq(prefix_entry_depth(e2, b, rfx_gen(&fx, b), NULL), 3);
	prefix_memo_free(&m2);

	/* applied: the index holds it; the pending copy is forgotten */
	ck_assert_int_eq(statebus_predict_drain(fx.r, sy_mono_ns(), 64), 1);
	ck_assert(statebus_predict_applied(fx.r, fx.proc, statebus_predict_ring_pos(fx.r, fx.proc)));
	prefix_memo_reset(&m);
	req = req_of(&m, toks8, 8);
	ck_assert_int_eq(prefix_memo_chain(&m, &req, 1, false), PREFIX_FOUND);
	e = prefix_memo_lookup(&m, &local, fx.r, &req, false);
	ck_assert_uint_eq(prefix_entry_depth(e, a, pr.worker_gen, NULL), 6);
	ck_assert_int_eq(statebus_index_clear_worker(fx.r, a), SY_OK);
	prefix_memo_reset(&m);
	req = req_of(&m, toks8, 8);
	ck_assert_int_eq(prefix_memo_chain(&m, &req, 1, false), PREFIX_FOUND);
	e = prefix_memo_lookup(&m, &local, fx.r, &req, false);
	ck_assert_uint_eq(prefix_entry_depth(e, a, pr.worker_gen, NULL), 0);
	prefix_memo_free(&m);
}
END_TEST

START_TEST(test_no_token_ids_or_block_size_is_no_chain)
{
	struct prefix_memo m;
	prefix_memo_init(&m, NULL);
	struct pick_request req = req_of(&m, NULL, 0);
	req.input_tokens = 100; /* tokenizer off: an estimate without IDs */
	ck_assert_int_eq(prefix_memo_chain(&m, &req, 16, false), PREFIX_NO_CHAIN);
	prefix_memo_reset(&m);
	req = req_of(&m, toks8, 8);
	ck_assert_int_eq(prefix_memo_chain(&m, &req, 0, false), PREFIX_NO_CHAIN);
	prefix_memo_free(&m);
}
END_TEST

/* ---- a query server thread ------------------------------------------------------ */

enum srv_mode { SRV_ANSWER, SRV_SILENT, SRV_OVERLOADED, SRV_TOO_LARGE };

struct srv {
	char ep[96];
	char path[64];
	enum srv_mode mode;
	volatile int stop;
	volatile int received;
	volatile int ready;
	pthread_t th;
	void *zctx;
};

static void *srv_main(void *arg)
{
	struct srv *s = arg;
	struct statebus_region *r = NULL;
	char err[128];
	ck_assert_int_eq(statebus_region_open(s->path, NULL, STATEBUS_ATTACH_ONLY, &r, err,
					      sizeof(err)),
			 SY_OK);
	uint32_t slot;
	ck_assert_int_eq(statebus_proc_claim(r, STATEBUS_PROC_STATEBUS, &slot), SY_OK);
	struct statebus_query_server qs;
	ck_assert_int_eq(statebus_query_server_init(&qs), SY_OK);
	void *z = zmq_socket(s->zctx, ZMQ_ROUTER);
	int zero = 0;
	zmq_setsockopt(z, ZMQ_LINGER, &zero, sizeof(zero));
	ck_assert_int_eq(zmq_bind(z, s->ep), 0);
	__atomic_store_n(&s->ready, 1, __ATOMIC_RELEASE);
	static uint8_t buf[STATEBUS_QUERY_MAX_BYTES];
	char id[256];
	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		zmq_pollitem_t it = {.socket = z, .events = ZMQ_POLLIN};
		if (zmq_poll(&it, 1, 10) <= 0)
			continue;
		int il = zmq_recv(z, id, sizeof(id), 0);
		int n = zmq_recv(z, buf, sizeof(buf), 0);
		if (il <= 0 || n < 0)
			continue;
		__atomic_add_fetch(&s->received, 1, __ATOMIC_ACQ_REL);
		if (s->mode == SRV_SILENT)
			continue;
		if (s->mode == SRV_TOO_LARGE) {
			struct statebus_query_request q = {.hashes = qs.hashes};
			statebus_query_decode_request(buf, (size_t)n, &q, STATEBUS_QUERY_MAX_HASHES);
			statebus_query_begin_reply(&qs.out, q.id, STATEBUS_QUERY_TOO_LARGE, NULL, 0, 0);
		} else {
			ck_assert_int_eq(statebus_query_answer(&qs, r, buf, (size_t)n,
							       s->mode == SRV_OVERLOADED),
					 SY_OK);
		}
		zmq_send(z, id, (size_t)il, ZMQ_SNDMORE);
		zmq_send(z, qs.out.buf, qs.out.len, 0);
	}
	zmq_close(z);
	statebus_query_server_free(&qs);
	statebus_region_close(r);
	return NULL;
}

static void srv_start(struct srv *s, enum srv_mode mode)
{
	static unsigned n;
	memset(s, 0, sizeof(*s));
	snprintf(s->ep, sizeof(s->ep), "ipc:///tmp/sy-q-%d-%u", (int)getpid(), n++);
	snprintf(s->path, sizeof(s->path), "%s", fx.path);
	s->mode = mode;
	s->zctx = zmq_ctx_new();
	ck_assert_int_eq(pthread_create(&s->th, NULL, srv_main, s), 0);
	while (!__atomic_load_n(&s->ready, __ATOMIC_ACQUIRE))
		usleep(1000);
}

static void srv_stop(struct srv *s)
{
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
	pthread_join(s->th, NULL);
	zmq_ctx_term(s->zctx);
	unlink(s->ep + 6);
}

/* Looks source `src` up for the 8-token request in 1-token blocks. */
/* Starts the fake indexer s answering (SRV_ANSWER) and the remote cache
 * source src (memo key 1) on it: 2000 ms timeout, at most 4 in flight;
 * asserts success. */
static void remote_start(struct srv *s, struct cache_source *src)
{
	srv_start(s, SRV_ANSWER);
	ck_assert_int_eq(cache_source_init_indexer(src, 1, s->ep, 2000, 4), SY_OK);
}

static const struct prefix_memo_entry *remote_lookup(struct prefix_memo *m, struct cache_source *src,
						     struct pick_request *req)
{
	*req = req_of(m, toks8, 8);
	if (!m->chain_done)
		ck_assert_int_eq(prefix_memo_chain(m, req, 1, false), PREFIX_FOUND);
	const struct prefix_memo_entry *e = prefix_memo_lookup(m, src, fx.r, req, true);
	ck_assert_ptr_nonnull(e);
	return e;
}

START_TEST(test_remote_source_answers_per_url_depths_from_a_real_server)
{
	uint32_t a = kv_worker("http://a", 1, 2);
	struct prefix_memo m;
	struct pick_request req = memo_of_toks8(&m);
	hold_rank(m.ids, a, 0, 2);
	hold_rank(m.ids, a, 1, 6);
	struct srv s;
	struct cache_source src;
	remote_start(&s, &src);
	const struct prefix_memo_entry *e = remote_lookup(&m, &src, &req);
	ck_assert_int_eq(e->status, PREFIX_FOUND);
	ck_assert_uint_eq(e->n_depths, 1);
	ck_assert_str_eq(e->depths[0].url, "http://a");
	ck_assert_uint_eq(e->depths[0].blocks, 6);
	ck_assert_int_eq(s.received, 1);
	ck_assert_uint_eq(src.inflight, 0);
	cache_source_close(&src);
	srv_stop(&s);
	prefix_memo_free(&m);
}
END_TEST

/* Predicted depth on the wire: a router asking "predicted" gets the
 * predicted part, its age and the worker's mode; a protocol-1 request
 * without the key gets three-field matches whose depth counts the
 * prediction, as before. */
START_TEST(test_remote_source_carries_predicted_depth_and_old_askers_keep_three_fields)
{
	uint32_t a = kv_worker("http://a", 1, 1);
	struct prefix_memo m;
	struct pick_request req = memo_of_toks8(&m);
	hold_rank(m.ids, a, 0, 2);
	ck_assert_int_eq(statebus_predict_set_worker(fx.r, a, STATEBUS_CACHE_SIGNAL_EVENTS, 0),
			 SY_OK);
	ck_assert_int_eq(statebus_index_predict(fx.r, a, rfx_gen(&fx, a), 0, m.ids, 8,
						sy_mono_ns() - 500 * UINT64_C(1000000)),
			 SY_OK);
	struct srv s;
	struct cache_source src;
	remote_start(&s, &src);
	const struct prefix_memo_entry *e = remote_lookup(&m, &src, &req);
	ck_assert_int_eq(e->status, PREFIX_FOUND);
	ck_assert_uint_eq(e->n_depths, 1);
	ck_assert_uint_eq(e->depths[0].blocks, 8);
	ck_assert_uint_eq(e->depths[0].predicted, 6);
	ck_assert_uint_ge(e->depths[0].predicted_age_ms, 500);
	ck_assert_uint_lt(e->depths[0].predicted_age_ms, 60000);
	cache_source_close(&src);
	srv_stop(&s);

	/* the same server answering an old-style request (no "predicted") */
	struct statebus_query_server qs;
	ck_assert_int_eq(statebus_query_server_init(&qs), SY_OK);
	struct statebus_query_buf b = {0};
	for (int want = 0; want < 2; want++) {
		ck_assert_int_eq(statebus_query_encode_request(&b, 5, "m", 1, 1, false, m.ids, 8,
							       want == 1),
				 SY_OK);
		ck_assert_int_eq(statebus_query_answer(&qs, fx.r, b.buf, b.len, false), SY_OK);
		struct statebus_query_match mt[4];
		struct statebus_query_reply rep = {.matches = mt};
		ck_assert_int_eq(statebus_query_decode_reply(qs.out.buf, qs.out.len, &rep, 4),
				 SY_OK);
		ck_assert_uint_eq(rep.n_matches, 1);
		ck_assert_uint_eq(mt[0].depth, 8);
		ck_assert(mt[0].has_predicted == (want == 1));
		ck_assert_uint_eq(mt[0].predicted_depth, want == 1 ? 6 : 0);
		ck_assert(!mt[0].approximate);
	}
	/* approximate mode is reported as such */
	ck_assert_int_eq(statebus_predict_set_worker(fx.r, a, STATEBUS_CACHE_SIGNAL_PREDICTED, 0),
			 SY_OK);
	ck_assert_int_eq(statebus_query_answer(&qs, fx.r, b.buf, b.len, false), SY_OK);
	struct statebus_query_match mt[4];
	struct statebus_query_reply rep = {.matches = mt};
	ck_assert_int_eq(statebus_query_decode_reply(qs.out.buf, qs.out.len, &rep, 4), SY_OK);
	ck_assert(mt[0].approximate);
	free(b.buf);
	statebus_query_server_free(&qs);
	prefix_memo_free(&m);
}
END_TEST

START_TEST(test_query_reply_match_fields_three_six_or_more)
{
	struct statebus_query_buf b = {0};
	struct statebus_query_match mt[4];
	struct statebus_query_reply rep = {.matches = mt};
	ck_assert_int_eq(statebus_query_begin_reply(&b, 3, STATEBUS_QUERY_OK, NULL, 9, 2), SY_OK);
	statebus_query_add_match_predicted(&b, "http://a", 8, 1, 9, 4, 1234, true);
	statebus_query_add_match(&b, "http://b", 8, 0, 2);
	ck_assert_int_eq(statebus_query_decode_reply(b.buf, b.len, &rep, 4), SY_OK);
	ck_assert(mt[0].has_predicted && mt[0].approximate);
	ck_assert_uint_eq(mt[0].depth, 9);
	ck_assert_uint_eq(mt[0].predicted_depth, 4);
	ck_assert_uint_eq(mt[0].predicted_age_ms, 1234);
	ck_assert(!mt[1].has_predicted);
	ck_assert_uint_eq(mt[1].depth, 2);
	for (size_t cut = 0; cut < b.len; cut++)
		ck_assert_int_ne(statebus_query_decode_reply(b.buf, cut, &rep, 4), SY_OK);
	/* mutations never escape the frame (ASan build) */
	uint8_t *mut = malloc(b.len);
	uint64_t x = 7;
	for (int k = 0; k < 20000; k++) {
		memcpy(mut, b.buf, b.len);
		x = x * 6364136223846793005u + 1442695040888963407u;
		mut[(x >> 33) % b.len] = (uint8_t)(x >> 17);
		if (statebus_query_decode_reply(mut, b.len, &rep, 4) == SY_OK)
			for (uint32_t j = 0; j < rep.n_matches; j++)
				ck_assert_uint_le(mt[j].predicted_depth, mt[j].depth);
	}
	free(mut);
	/* predicted beyond depth is malformed */
	ck_assert_int_eq(statebus_query_begin_reply(&b, 3, STATEBUS_QUERY_OK, NULL, 9, 1), SY_OK);
	statebus_query_add_match_predicted(&b, "http://a", 8, 0, 3, 4, 0, false);
	ck_assert_int_eq(statebus_query_decode_reply(b.buf, b.len, &rep, 4), SY_EMALFORMED);
	/* a later protocol's seventh field is skipped; fewer than three is malformed */
	static const uint8_t seven[] = {0x84, 0xa1, 'v', 0x01, 0xa6, 's', 't', 'a', 't', 'u',
					's', 0xa2, 'o', 'k', 0xa2, 'i', 'd', 0x07, 0xa7, 'm',
					'a', 't', 'c', 'h', 'e', 's', 0x91, 0x97, 0xa1, 'u',
					0x00, 0x05, 0x02, 0x10, 0xc2, 0xa1, 'x'};
	ck_assert_int_eq(statebus_query_decode_reply(seven, sizeof(seven), &rep, 4), SY_OK);
	ck_assert_uint_eq(rep.n_matches, 1);
	ck_assert_uint_eq(mt[0].depth, 5);
	ck_assert_uint_eq(mt[0].predicted_depth, 2);
	ck_assert_uint_eq(mt[0].predicted_age_ms, 16);
	static const uint8_t two[] = {0x83, 0xa1, 'v', 0x01, 0xa6, 's', 't', 'a', 't', 'u', 's',
				      0xa2, 'o', 'k', 0xa7, 'm', 'a', 't', 'c', 'h', 'e', 's',
				      0x91, 0x92, 0xa1, 'u', 0x00};
	ck_assert_int_eq(statebus_query_decode_reply(two, sizeof(two), &rep, 4), SY_EMALFORMED);
	free(b.buf);
}
END_TEST

/* ---- scenario 15: one remote query serves three picks ---------------------------- */

START_TEST(test_scenario15_one_remote_query_serves_three_picks)
{
	uint32_t a = kv_worker("http://a", 1, 1);
	uint32_t b = kv_worker("http://b", 1, 1);
	struct prefix_memo m;
	struct pick_request req = memo_of_toks8(&m);
	hold_rank(m.ids, a, 0, 8);
	hold_rank(m.ids, b, 0, 6);
	rfx_inflight(&fx, a, 1);
	struct srv s;
	struct cache_source src;
	remote_start(&s, &src);
	ck_assert_int_eq(remote_lookup(&m, &src, &req)->status, PREFIX_FOUND);

	struct admission_limits lim;
	admission_limits_none(&lim);
	lim.max_inflight_requests = 1; /* rejects a */
	struct cache_aware_params cp;
	cache_aware_params_default(&cp);
	cp.min_matched_tokens = 1;
	struct policy p;
	const char *why;
	ck_assert_int_eq(policy_init(&p, POLICY_CACHE_AWARE, STAGE_PLAIN, &lim, 2, &why), SY_OK);
	ck_assert_int_eq(cache_aware_configure(&p, &cp, &src), SY_OK);
	struct pick out;

	struct engine_candidate ga[1] = {rfx_cand(&fx, a, "http://a")};
	struct pick_ctx x = {.req = &req, .region = fx.r, .now_ns = RF_NOW, .stage = STAGE_PLAIN,
			     .cands = ga, .n = 1};
	ck_assert_int_eq(policy_pick(&p, &x, &out), PICK_NO_ADMISSIBLE_ENGINE);

	struct engine_candidate gb[1] = {rfx_cand(&fx, b, "http://b")};
	x.cands = gb;
	ck_assert_int_eq(policy_pick(&p, &x, &out), PICK_OK);
	ck_assert_str_eq(out.worker->id, "http://b");

	struct engine_candidate gab[2] = {rfx_cand(&fx, a, "http://a"), rfx_cand(&fx, b, "http://b")};
	x.cands = gab;
	x.n = 2;
	ck_assert_int_eq(policy_pick(&p, &x, &out), PICK_OK);
	ck_assert_str_eq(out.worker->id, "http://b");
	ck_assert_str_eq(out.reason, "cache_candidate");

	ck_assert_uint_eq(cache_aware_get_stats(&p)->admission_evaluated, 4);
	ck_assert_int_eq(s.received, 1);
	ck_assert_uint_eq(m.lookups, 1);

	/* a different namespace (another source) queries again */
	struct cache_source other;
	ck_assert_int_eq(cache_source_init_indexer(&other, 2, s.ep, 2000, 4), SY_OK);
	ck_assert_int_eq(remote_lookup(&m, &other, &req)->status, PREFIX_FOUND);
	ck_assert_int_eq(s.received, 2);
	ck_assert_uint_eq(m.lookups, 2);

	policy_destroy(&p);
	cache_source_close(&other);
	cache_source_close(&src);
	srv_stop(&s);
	prefix_memo_free(&m);
}
END_TEST

/* ---- scenario 16: indexer errors -------------------------------------------------- */

/* Picks over [a (busier), b] with the entry of `src`; returns the outcome. */
static enum pick_outcome s16_pick(struct pick_request *req, struct cache_source *src,
				  uint32_t a, uint32_t b, const char **who)
{
	struct cache_aware_params cp;
	cache_aware_params_default(&cp);
	cp.min_matched_tokens = 1;
	struct policy p;
	const char *why;
	ck_assert_int_eq(policy_init(&p, POLICY_CACHE_AWARE, STAGE_PLAIN, NULL, 2, &why), SY_OK);
	ck_assert_int_eq(cache_aware_configure(&p, &cp, src), SY_OK);
	struct engine_candidate c[2] = {rfx_cand(&fx, a, "http://a"), rfx_cand(&fx, b, "http://b")};
	struct pick_ctx x = {.req = req, .region = fx.r, .now_ns = RF_NOW, .stage = STAGE_PLAIN,
			     .cands = c, .n = 2};
	struct pick out;
	enum pick_outcome o = policy_pick(&p, &x, &out);
	static char id[64];
	if (o == PICK_OK) {
		snprintf(id, sizeof(id), "%s", out.worker->id);
		*who = id;
		ck_assert_str_eq(out.reason, "no_cache_candidate");
	}
	policy_destroy(&p);
	return o;
}

static void s16_case(enum srv_mode mode, bool no_server, uint32_t bs_worker,
		     enum prefix_status want_st, enum prefix_unavailable want_why)
{
	uint32_t a = kv_worker("http://a", bs_worker, 1);
	uint32_t b = kv_worker("http://b", bs_worker, 1);
	struct prefix_memo m;
	struct pick_request req = memo_of_toks8(&m);
	hold_rank(m.ids, a, 0, 8);
	rfx_inflight(&fx, a, 3); /* b is the least loaded */
	struct srv s;
	char ep[96];
	if (!no_server) {
		srv_start(&s, mode);
		snprintf(ep, sizeof(ep), "%s", s.ep);
	} else {
		snprintf(ep, sizeof(ep), "ipc:///tmp/sy-q-nobody-%d", (int)getpid());
	}
	struct cache_source src;
	ck_assert_int_eq(cache_source_init_indexer(&src, 1, ep, 50, 4), SY_OK);
	uint64_t t0 = sy_mono_ns();
	const struct prefix_memo_entry *e = remote_lookup(&m, &src, &req);
	uint64_t waited = sy_mono_ns() - t0;
	ck_assert_int_eq(e->status, want_st);
	ck_assert_int_eq(e->why, want_why);
	ck_assert_uint_lt(waited, 1000000000u); /* bounded by the 50 ms timeout */
	const char *who = NULL;
	if (want_st == PREFIX_REJECTED) {
		ck_assert_int_eq(s16_pick(&req, &src, a, b, &who), PICK_INVALID_SIGNAL);
	} else {
		ck_assert_int_eq(s16_pick(&req, &src, a, b, &who), PICK_OK);
		ck_assert_str_eq(who, "http://b");
	}
	cache_source_close(&src);
	if (!no_server)
		srv_stop(&s);
	prefix_memo_free(&m);
}

START_TEST(test_scenario16_timeout_is_a_miss_to_least_loaded)
{
	s16_case(SRV_SILENT, false, 1, PREFIX_UNAVAILABLE, PREFIX_WHY_TIMEOUT);
}
END_TEST

START_TEST(test_scenario16_unreachable_is_a_miss_to_least_loaded)
{
	s16_case(SRV_ANSWER, true, 1, PREFIX_UNAVAILABLE, PREFIX_WHY_UNREACHABLE);
}
END_TEST

START_TEST(test_scenario16_overloaded_is_a_miss_to_least_loaded)
{
	s16_case(SRV_OVERLOADED, false, 1, PREFIX_UNAVAILABLE, PREFIX_WHY_OVERLOADED);
}
END_TEST

START_TEST(test_scenario16_too_large_is_a_miss_to_least_loaded)
{
	s16_case(SRV_TOO_LARGE, false, 1, PREFIX_UNAVAILABLE, PREFIX_WHY_TOO_LARGE);
}
END_TEST

START_TEST(test_scenario16_rejected_is_invalid_signal)
{
	/* the server's model indexes 16-token blocks; the query says 1 */
	s16_case(SRV_ANSWER, false, 16, PREFIX_REJECTED, PREFIX_WHY_NONE);
}
END_TEST

START_TEST(test_inflight_bound_sheds_then_recovers)
{
	kv_worker("http://a", 1, 1);
	struct srv s;
	srv_start(&s, SRV_SILENT);
	struct cache_source src;
	ck_assert_int_eq(cache_source_init_indexer(&src, 1, s.ep, 20, 2), SY_OK);
	enum prefix_unavailable seen[3];
	for (int k = 0; k < 3; k++) {
		struct prefix_memo m;
		struct pick_request req;
		prefix_memo_init(&m, NULL);
		seen[k] = remote_lookup(&m, &src, &req)->why;
		prefix_memo_free(&m);
	}
	ck_assert_int_eq(seen[0], PREFIX_WHY_TIMEOUT);
	ck_assert_int_eq(seen[1], PREFIX_WHY_TIMEOUT);
	ck_assert_int_eq(seen[2], PREFIX_WHY_OVERLOADED); /* 2 outstanding: not sent */
	ck_assert_int_eq(s.received, 2);
	ck_assert_uint_eq(src.stats.unavailable[PREFIX_WHY_TIMEOUT], 2);
	ck_assert_uint_eq(src.stats.unavailable[PREFIX_WHY_OVERLOADED], 1);
	cache_source_close(&src);
	srv_stop(&s);
}
END_TEST

/* ---- codec caps ------------------------------------------------------------------ */

START_TEST(test_query_decoders_hold_caps_under_truncation_and_mutation)
{
	int64_t hs[40], out[40];
	for (int i = 0; i < 40; i++)
		hs[i] = (int64_t)(i * 0x9e3779b97f4a7c15u);
	struct statebus_query_buf b = {0};
	ck_assert_int_eq(statebus_query_encode_request(&b, 77, "model", 5, 16, true, hs, 40, false), SY_OK);
	struct statebus_query_request q = {.hashes = out};
	ck_assert_int_eq(statebus_query_decode_request(b.buf, b.len, &q, 40), STATEBUS_QUERY_OK);
	ck_assert_uint_eq(q.id, 77);
	ck_assert_uint_eq(q.block_size, 16);
	ck_assert(q.bigram);
	ck_assert_mem_eq(out, hs, sizeof(hs));
	ck_assert_int_eq(statebus_query_decode_request(b.buf, b.len, &q, 39),
			 STATEBUS_QUERY_TOO_LARGE);
	for (size_t cut = 0; cut < b.len; cut++)
		ck_assert_int_eq(statebus_query_decode_request(b.buf, cut, &q, 40),
				 STATEBUS_QUERY_BAD_REQUEST);
	/* forged array header: 2^32−1 hashes in a few bytes */
	static const uint8_t forged[] = {0x82, 0xa1, 'v', 0x01, 0xa6, 'h', 'a', 's', 'h', 'e',
					 's', 0xdd, 0xff, 0xff, 0xff, 0xff, 0x00};
	ck_assert_int_eq(statebus_query_decode_request(forged, sizeof(forged), &q, 40),
			 STATEBUS_QUERY_BAD_REQUEST);
	/* mutations never escape the frame (ASan build) */
	uint8_t *mut = malloc(b.len);
	uint64_t x = 1;
	for (int k = 0; k < 20000; k++) {
		memcpy(mut, b.buf, b.len);
		for (int j = 0; j < 3; j++) {
			x = x * 6364136223846793005u + 1442695040888963407u;
			mut[(x >> 33) % b.len] = (uint8_t)(x >> 17);
		}
		(void)statebus_query_decode_request(mut, b.len, &q, 40);
	}

	struct statebus_query_match mt[4];
	ck_assert_int_eq(statebus_query_begin_reply(&b, 9, STATEBUS_QUERY_OK, NULL, 40, 2), SY_OK);
	statebus_query_add_match(&b, "http://a", 8, 0, 3);
	statebus_query_add_match(&b, "http://b", 8, 1, 40);
	struct statebus_query_reply rep = {.matches = mt};
	ck_assert_int_eq(statebus_query_decode_reply(b.buf, b.len, &rep, 4), SY_OK);
	ck_assert_uint_eq(rep.id, 9);
	ck_assert_uint_eq(rep.n_matches, 2);
	ck_assert_uint_eq(rep.matches[1].depth, 40);
	ck_assert_int_eq(statebus_query_decode_reply(b.buf, b.len, &rep, 1), SY_ERANGE);
	for (size_t cut = 0; cut < b.len; cut++)
		ck_assert_int_ne(statebus_query_decode_reply(b.buf, cut, &rep, 4), SY_OK);
	mut = realloc(mut, b.len);
	for (int k = 0; k < 20000; k++) {
		memcpy(mut, b.buf, b.len);
		x = x * 6364136223846793005u + 1442695040888963407u;
		mut[(x >> 33) % b.len] = (uint8_t)(x >> 17);
		(void)statebus_query_decode_reply(mut, b.len, &rep, 4);
	}
	free(mut);
	free(b.buf);
}
END_TEST

/* ---- router_select fills the memo itself ------------------------------------------ */

START_TEST(test_router_select_fills_the_memo_and_routes_to_the_owner)
{
	uint32_t a = kv_worker("http://a", 1, 1);
	uint32_t b = kv_worker("http://b", 1, 1);
	struct prefix_memo tmp;
	prefix_memo_init(&tmp, NULL);
	struct pick_request req = req_of(NULL, toks8, 8);
	ck_assert_int_eq(prefix_memo_chain(&tmp, &req, 1, false), PREFIX_FOUND);
	hold_rank(tmp.ids, b, 0, 8);
	rfx_inflight(&fx, b, 2); /* b busier, yet it holds the prefix */
	(void)a;

	struct sy_config cfg;
	struct sy_config_error cerr;
	ck_assert_int_eq(sy_config_init_defaults(&cfg), SY_OK);
	const char *y = "model_id: m\npolicy: {type: cache_aware, "
			"cache_affinity_min_matched_tokens: 4}\n";
	ck_assert_int_eq(sy_config_load_string(&cfg, "t.yaml", y, strlen(y), &cerr), SY_OK);
	ck_assert_int_eq(sy_config_finish(&cfg, &cerr), SY_OK);
	struct router_gen *g;
	ck_assert_int_eq(router_gen_build(&cfg, 1, &g, &cerr), SY_OK);
	router_gen_set_fleet_refresh(g, 0);
	struct selection sel;
	struct router_error err;
	for (int k = 0; k < 3; k++) {
		ck_assert_int_eq(router_select(g, fx.r, &req, RF_NOW, &sel, &err), SY_OK);
		ck_assert_str_eq(sel.worker.id, "http://b");
		ck_assert_str_eq(sel.reason, "cache_candidate");
		ck_assert_uint_eq(g->memo.lookups, 1);
		ck_assert_uint_eq(g->memo.chains, 1);
	}
	struct digest_memo_stats st;
	digest_memo_get_stats(g->digests, &st);
	ck_assert_uint_eq(st.misses, 8);  /* the first request hashed 8 pages */
	ck_assert_uint_eq(st.hits, 16);   /* the two others hit the memo */
	router_gen_unref(g);
	sy_config_free(&cfg);
	prefix_memo_free(&tmp);
}
END_TEST


/* ---- wait table: queries sent without waiting ------------------------------------ */

/* A ROUTER of the test's own thread; it answers only when told. */
struct peer {
	char ep[96];
	void *zctx, *z;
	char ident[8][256];
	int ident_len[8];
	uint64_t ids[8];
	int n;
};

static void peer_start(struct peer *p)
{
	static unsigned k;
	memset(p, 0, sizeof(*p));
	snprintf(p->ep, sizeof(p->ep), "ipc:///tmp/sy-qw-%d-%u", (int)getpid(), k++);
	p->zctx = zmq_ctx_new();
	p->z = zmq_socket(p->zctx, ZMQ_ROUTER);
	int zero = 0;
	zmq_setsockopt(p->z, ZMQ_LINGER, &zero, sizeof(zero));
	ck_assert_int_eq(zmq_bind(p->z, p->ep), 0);
}

static void peer_stop(struct peer *p)
{
	zmq_close(p->z);
	zmq_ctx_term(p->zctx);
	unlink(p->ep + 6);
}

/* Receives queries until `want` are held (bounded wait). */
static void peer_take(struct peer *p, int want)
{
	static uint8_t buf[STATEBUS_QUERY_MAX_BYTES];
	static int64_t hs[64];
	uint64_t end = sy_mono_ns() + 2000000000u;
	while (p->n < want && sy_mono_ns() < end) {
		zmq_pollitem_t it = {.socket = p->z, .events = ZMQ_POLLIN};
		if (zmq_poll(&it, 1, 10) <= 0)
			continue;
		int il = zmq_recv(p->z, p->ident[p->n], sizeof(p->ident[0]), 0);
		int n = zmq_recv(p->z, buf, sizeof(buf), 0);
		ck_assert_int_gt(il, 0);
		ck_assert_int_ge(n, 0);
		struct statebus_query_request q = {.hashes = hs};
		ck_assert_int_eq(statebus_query_decode_request(buf, (size_t)n, &q, 64),
				 STATEBUS_QUERY_OK);
		p->ident_len[p->n] = il;
		p->ids[p->n++] = q.id;
	}
	ck_assert_int_eq(p->n, want);
}

/* Answers held query k: ok, one match `url` at `depth` blocks. */
static void peer_answer(struct peer *p, int k, const char *url, uint32_t depth)
{
	struct statebus_query_buf b = {0};
	ck_assert_int_eq(statebus_query_begin_reply(&b, p->ids[k], STATEBUS_QUERY_OK, NULL, 8, 1),
			 SY_OK);
	statebus_query_add_match(&b, url, strlen(url), 0, depth);
	zmq_send(p->z, p->ident[k], (size_t)p->ident_len[k], ZMQ_SNDMORE);
	zmq_send(p->z, b.buf, b.len, 0);
	free(b.buf);
}

/* Opens `src` and waits until its DEALER has a connection (ZMQ_IMMEDIATE:
 * writable only then). */
static void src_connected(struct cache_source *src)
{
	ck_assert_int_eq(cache_source_open(src), SY_OK);
	uint64_t end = sy_mono_ns() + 2000000000u;
	int ev = 0;
	size_t el = sizeof(ev);
	while (sy_mono_ns() < end) {
		zmq_getsockopt(src->sock, ZMQ_EVENTS, &ev, &el);
		if (ev & ZMQ_POLLOUT)
			return;
		usleep(1000);
	}
	ck_abort_msg("no connection to the test peer");
}

/* Waits up to 10 ms for a reply on `src`, then drains it. */
static void drain_once(struct cache_source *src)
{
	zmq_pollitem_t it = {.socket = src->sock, .events = ZMQ_POLLIN};
	zmq_poll(&it, 1, 10);
	cache_source_drain(src, sy_mono_ns());
}

/* Drains `src` until `m` has no pending entry (bounded wait). */
static void drain_until_ready(struct cache_source *src, struct prefix_memo *m)
{
	uint64_t end = sy_mono_ns() + 2000000000u;
	while (m->n_pending > 0 && sy_mono_ns() < end)
		drain_once(src);
	ck_assert_uint_eq(m->n_pending, 0);
}

/* Drains `src` until it has counted a late reply (bounded wait). */
static void drain_until_late(struct cache_source *src)
{
	uint64_t end = sy_mono_ns() + 2000000000u;
	while (src->stats.late_replies == 0 && sy_mono_ns() < end)
		drain_once(src);
}

/* The wait-table set-up: worker http://a, the test peer `p`, and `src` an
 * indexer source on it (`timeout_ms`, `max_inflight`) with its connection up. */
static void wait_open(struct peer *p, struct cache_source *src, uint32_t timeout_ms,
		      uint32_t max_inflight)
{
	kv_worker("http://a", 1, 1);
	peer_start(p);
	ck_assert_int_eq(cache_source_init_indexer(src, 1, p->ep, timeout_ms, max_inflight), SY_OK);
	src_connected(src);
}

static int readies;
static void count_ready(struct prefix_memo *m, void *arg)
{
	ck_assert_ptr_eq(arg, m);
	readies++;
}

/* A memo over the 8-token request in 1-token blocks, on_ready counted. */
static void wmemo(struct prefix_memo *m, struct pick_request *req)
{
	prefix_memo_init(m, NULL);
	*req = req_of(m, toks8, 8);
	ck_assert_int_eq(prefix_memo_chain(m, req, 1, false), PREFIX_FOUND);
	m->on_ready = count_ready;
	m->ready_arg = m;
}

START_TEST(test_wait_table_matches_replies_by_id_in_any_order)
{
	struct peer p;
	struct cache_source src;
	wait_open(&p, &src, 2000, 4);
	struct prefix_memo m1, m2;
	struct pick_request r1, r2;
	wmemo(&m1, &r1);
	wmemo(&m2, &r2);
	readies = 0;
	const struct prefix_memo_entry *e1 = prefix_memo_ask(&m1, &src, fx.r, &r1);
	const struct prefix_memo_entry *e2 = prefix_memo_ask(&m2, &src, fx.r, &r2);
	ck_assert(e1->pending && e2->pending);
	ck_assert_int_eq(e1->status, PREFIX_UNAVAILABLE); /* what a pick reads meanwhile */
	ck_assert_int_eq(e1->why, PREFIX_WHY_TIMEOUT);
	ck_assert_ptr_eq(prefix_memo_lookup(&m1, &src, fx.r, &r1, false), e1); /* not re-sent */
	ck_assert_uint_eq(src.n_waits, 2);
	ck_assert_uint_eq(src.inflight, 2);
	peer_take(&p, 2);
	ck_assert_uint_ne(p.ids[0], p.ids[1]);
	peer_answer(&p, 1, "http://b", 3); /* the second query first */
	drain_until_ready(&src, &m2);
	ck_assert(e1->pending);
	ck_assert_int_eq(readies, 1);
	peer_answer(&p, 0, "http://a", 5);
	drain_until_ready(&src, &m1);
	ck_assert_int_eq(readies, 2);
	ck_assert_int_eq(e1->status, PREFIX_FOUND);
	ck_assert_str_eq(e1->depths[0].url, "http://a");
	ck_assert_uint_eq(e1->depths[0].blocks, 5);
	ck_assert_int_eq(e2->status, PREFIX_FOUND);
	ck_assert_str_eq(e2->depths[0].url, "http://b");
	ck_assert_uint_eq(e2->depths[0].blocks, 3);
	ck_assert_uint_eq(src.n_waits, 0);
	ck_assert_uint_eq(src.inflight, 0);
	ck_assert_uint_eq(src.stats.found, 2);
	ck_assert_uint_eq(src.stats.late_replies, 0);
	prefix_memo_free(&m1);
	prefix_memo_free(&m2);
	cache_source_close(&src);
	peer_stop(&p);
}
END_TEST

START_TEST(test_wait_table_reply_after_the_deadline_is_a_timeout_and_late)
{
	struct peer p;
	struct cache_source src;
	wait_open(&p, &src, 30, 4);
	struct prefix_memo m;
	struct pick_request r;
	wmemo(&m, &r);
	readies = 0;
	const struct prefix_memo_entry *e = prefix_memo_ask(&m, &src, fx.r, &r);
	ck_assert(e->pending);
	peer_take(&p, 1);
	usleep(40000); /* past the 30 ms deadline */
	peer_answer(&p, 0, "http://a", 5);
	drain_until_ready(&src, &m);
	ck_assert_int_eq(readies, 1);
	ck_assert_int_eq(e->status, PREFIX_UNAVAILABLE);
	ck_assert_int_eq(e->why, PREFIX_WHY_TIMEOUT);
	ck_assert_uint_eq(src.stats.late_replies, 1);
	ck_assert_uint_eq(src.stats.unavailable[PREFIX_WHY_TIMEOUT], 1);
	ck_assert_uint_eq(src.inflight, 0);
	prefix_memo_free(&m);
	cache_source_close(&src);
	peer_stop(&p);
}
END_TEST

START_TEST(test_wait_table_deadline_expires_the_waiter_and_its_reply_counts_late)
{
	struct peer p;
	struct cache_source src;
	wait_open(&p, &src, 50, 4);
	struct prefix_memo m;
	struct pick_request r;
	wmemo(&m, &r);
	readies = 0;
	const struct prefix_memo_entry *e = prefix_memo_ask(&m, &src, fx.r, &r);
	uint64_t deadline = prefix_memo_deadline(&m);
	ck_assert_uint_gt(deadline, 0);
	ck_assert_uint_eq(prefix_memo_expire(&m, deadline - 1), 1); /* not yet */
	ck_assert_uint_eq(prefix_memo_expire(&m, deadline), 0);
	ck_assert_int_eq(readies, 0); /* the caller of expire resumes itself */
	ck_assert(!e->pending);
	ck_assert_int_eq(e->why, PREFIX_WHY_TIMEOUT);
	ck_assert_uint_eq(prefix_memo_deadline(&m), 0);
	ck_assert_uint_eq(src.n_waits, 0);
	ck_assert_uint_eq(src.inflight, 1); /* still outstanding */
	ck_assert_uint_eq(src.stats.unavailable[PREFIX_WHY_TIMEOUT], 1);
	peer_take(&p, 1);
	peer_answer(&p, 0, "http://a", 5);
	drain_until_late(&src);
	ck_assert_uint_eq(src.stats.late_replies, 1);
	ck_assert_uint_eq(src.inflight, 0);
	ck_assert_int_eq(e->why, PREFIX_WHY_TIMEOUT); /* the late answer changes nothing */
	prefix_memo_free(&m);
	cache_source_close(&src);
	peer_stop(&p);
}
END_TEST

START_TEST(test_wait_table_cancel_removes_the_waiter_and_its_reply_counts_late)
{
	struct peer p;
	struct cache_source src;
	wait_open(&p, &src, 2000, 4);
	struct prefix_memo *m = malloc(sizeof(*m)); /* freed before the reply: ASan */
	struct pick_request r;
	wmemo(m, &r);
	readies = 0;
	ck_assert(prefix_memo_ask(m, &src, fx.r, &r)->pending);
	ck_assert_uint_eq(src.n_waits, 1);
	prefix_memo_free(m); /* the request ended */
	free(m);
	ck_assert_uint_eq(src.n_waits, 0);
	ck_assert_uint_eq(src.stats.lookups, 0); /* a cancelled lookup is not counted */
	peer_take(&p, 1);
	peer_answer(&p, 0, "http://a", 5);
	drain_until_late(&src);
	ck_assert_uint_eq(src.stats.late_replies, 1);
	ck_assert_int_eq(readies, 0);
	ck_assert_uint_eq(src.inflight, 0);
	cache_source_close(&src);
	peer_stop(&p);
}
END_TEST

START_TEST(test_wait_table_inflight_bound_sheds_and_keeps_live_waiters)
{
	struct peer p;
	struct cache_source src;
	wait_open(&p, &src, 2000, 2);
	struct prefix_memo m[3];
	struct pick_request r[3];
	const struct prefix_memo_entry *e[3];
	for (int k = 0; k < 3; k++) {
		wmemo(&m[k], &r[k]);
		e[k] = prefix_memo_ask(&m[k], &src, fx.r, &r[k]);
	}
	void *sock = src.sock;
	ck_assert(e[0]->pending && e[1]->pending);
	ck_assert(!e[2]->pending);
	ck_assert_int_eq(e[2]->why, PREFIX_WHY_OVERLOADED);
	ck_assert_ptr_eq(src.sock, sock); /* live waiters: the socket is kept */
	peer_take(&p, 2);
	peer_answer(&p, 0, "http://a", 2);
	peer_answer(&p, 1, "http://a", 4);
	drain_until_ready(&src, &m[0]);
	drain_until_ready(&src, &m[1]);
	ck_assert_uint_eq(e[0]->depths[0].blocks, 2);
	ck_assert_uint_eq(e[1]->depths[0].blocks, 4);
	for (int k = 0; k < 3; k++)
		prefix_memo_free(&m[k]);
	cache_source_close(&src);
	peer_stop(&p);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cache_source");
	TCase *tc = tcase_create("cache_source");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_digest_memo_chain_equals_plain_chain_with_shared_prefixes);
	tcase_add_test(tc, test_digest_memo_golden_and_repeat_hits);
	tcase_add_test(tc, test_digest_memo_prompt_shortcut_keeps_modes_apart);
	tcase_add_test(tc, test_local_source_max_over_ranks_capped_and_generation_checked);
	tcase_add_test(tc, test_no_token_ids_or_block_size_is_no_chain);
	tcase_add_test(tc, test_local_source_counts_own_pending_predictions_until_applied);
	tcase_add_test(tc, test_remote_source_answers_per_url_depths_from_a_real_server);
	tcase_add_test(tc, test_remote_source_carries_predicted_depth_and_old_askers_keep_three_fields);
	tcase_add_test(tc, test_query_reply_match_fields_three_six_or_more);
	tcase_add_test(tc, test_scenario15_one_remote_query_serves_three_picks);
	tcase_add_test(tc, test_scenario16_timeout_is_a_miss_to_least_loaded);
	tcase_add_test(tc, test_scenario16_unreachable_is_a_miss_to_least_loaded);
	tcase_add_test(tc, test_scenario16_overloaded_is_a_miss_to_least_loaded);
	tcase_add_test(tc, test_scenario16_too_large_is_a_miss_to_least_loaded);
	tcase_add_test(tc, test_scenario16_rejected_is_invalid_signal);
	tcase_add_test(tc, test_inflight_bound_sheds_then_recovers);
	tcase_add_test(tc, test_query_decoders_hold_caps_under_truncation_and_mutation);
	tcase_add_test(tc, test_router_select_fills_the_memo_and_routes_to_the_owner);
	tcase_add_test(tc, test_wait_table_matches_replies_by_id_in_any_order);
	tcase_add_test(tc, test_wait_table_reply_after_the_deadline_is_a_timeout_and_late);
	tcase_add_test(tc, test_wait_table_deadline_expires_the_waiter_and_its_reply_counts_late);
	tcase_add_test(tc, test_wait_table_cancel_removes_the_waiter_and_its_reply_counts_late);
	tcase_add_test(tc, test_wait_table_inflight_bound_sheds_and_keeps_live_waiters);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sy_check_run(suite());
}
