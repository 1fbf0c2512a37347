/* stage.c — the per-pick load snapshot and the stage pressure comparison
 * (reference/policy-defaults.md §3; SGLang policies/admission.rs,
 * sglang-wire.md §13).
 *
 * Snapshot: a candidate's load is read once per pick, on first use:
 * statebus_load_view at the selection's time (fresh = every expected DP rank
 * within 5 s, native = V3 on every rank with capacities > 0) and
 * statebus_inflight_sum (router-local in-flight, summed over the router
 * processes' rows; with a fresh view also the dispatches made since the
 * report's capture, from the dispatch counters). A view of another slot
 * generation than the candidate's is unknown. Unknown is never zero: the flags say what may be read.
 *
 * Comparison, lower wins, next step only on a tie:
 *   step  prefill / plain                      decode
 *   1     estimated_prefill_queue_ms (both)    waiting
 *   2     pending (waiting uncached tokens)    running
 *   3     waiting                              KV fraction used/capacity,
 *                                              exact (128-bit cross product)
 *   4     running                              KV tokens in use
 *   5     local active                         local active
 * If either side lacks fresh native data, both compare by local active only.
 *
 * vLLM's scraped view (fresh /metrics on every rank: running, waiting, KV
 * usage; no pending tokens, no prefill throughput): when a side is scraped
 * and the other native or scraped, the steps that both sides know run in
 * the same order —
 *   prefill / plain: waiting, running, local active;
 *   decode: waiting, running, KV fraction (capacities when both know them,
 *           else the scraped usage), local active.
 * Missing or stale scraped data is unknown like a missing LoadStat: local
 * active only, never zeros.
 */
#include "router/policies/policy.h"

#include <string.h>

const struct engine_load *pick_ctx_load(struct pick_ctx *ctx, size_t i)
{
	struct engine_candidate *c = &ctx->cands[i];
	if (c->load_read)
		return &c->load;

	struct engine_load *l = &c->load;
	struct statebus_load_view v;
	memset(l, 0, sizeof(*l));
	if (ctx->region != NULL) {
		int rc = statebus_load_view(ctx->region, c->slot, ctx->now_ns, &v);
		if (rc == SY_OK && v.status == STATEBUS_LOAD_FRESH && v.worker_gen == c->generation) {
			l->fresh = true;
			l->running = v.num_running_reqs;
			l->waiting = v.num_waiting_reqs;
			if (v.scraped) {
				l->scraped = true;
				double u = v.kv_usage < 0 ? 0 : v.kv_usage > 1 ? 1 : v.kv_usage;
				l->kv_usage_ppm = (uint32_t)(u * 1e6 + 0.5);
				l->kv_used = v.num_tokens;
				l->kv_capacity = v.max_total_num_tokens;
				l->has_kv = v.max_total_num_tokens > 0;
			} else if (v.native) {
				l->native = true;
				l->has_kv = true;
				l->kv_used = v.num_total_tokens;
				l->kv_capacity = v.max_total_num_tokens;
				l->pending = v.num_waiting_uncached_tokens;
				if (v.has_throughput && v.prefill_tokens_per_s > 0) {
					l->has_queue_ms = true;
					l->queue_ms = 1000.0 * (double)l->pending /
						      v.prefill_tokens_per_s;
				}
			}
		}
		int64_t inflight = 0;
		uint64_t dispatches = 0;
		if (statebus_inflight_sum(ctx->region, c->slot, &inflight, &dispatches) == SY_OK) {
			if (inflight > 0)
				l->local_active = inflight;
			/* A reaped row lowers the sum: never negative. */
			if (l->fresh && dispatches > v.dispatches_at_capture)
				l->dispatches_since_capture = dispatches - v.dispatches_at_capture;
		}
	}
	c->load_read = true;
	return l;
}

static int cmp_u64(uint64_t a, uint64_t b) { return (a > b) - (a < b); }

static int cmp_i64(int64_t a, int64_t b) { return (a > b) - (a < b); }

/* IEEE-754 totalOrder, like Rust's f64::total_cmp. */
static int cmp_f64_total(double a, double b)
{
	int64_t x, y;
	memcpy(&x, &a, sizeof(x));
	memcpy(&y, &b, sizeof(y));
	x ^= (int64_t)((uint64_t)(x >> 63) >> 1);
	y ^= (int64_t)((uint64_t)(y >> 63) >> 1);
	return cmp_i64(x, y);
}

/* used_a / cap_a vs used_b / cap_b by cross-multiplication; equal when a
 * capacity is 0. */
static int cmp_fraction(uint64_t used_a, uint64_t cap_a, uint64_t used_b, uint64_t cap_b)
{
	if (cap_a == 0 || cap_b == 0)
		return 0;
	unsigned __int128 l = (unsigned __int128)used_a * cap_b;
	unsigned __int128 r = (unsigned __int128)used_b * cap_a;
	return (l > r) - (l < r);
}

int engine_stage_compare(enum engine_stage stage, const struct engine_load *a,
			 const struct engine_load *b)
{
	int c;

	if (!engine_load_comparable(a) || !engine_load_comparable(b))
		return cmp_i64(a->local_active, b->local_active);
	if (!a->native || !b->native) {
		/* a scraped side: the steps both know */
		if ((c = cmp_u64(a->waiting, b->waiting)) != 0)
			return c;
		if ((c = cmp_u64(a->running, b->running)) != 0)
			return c;
		if (stage == STAGE_DECODE) {
			if (a->has_kv && b->has_kv)
				c = cmp_fraction(a->kv_used, a->kv_capacity, b->kv_used,
						 b->kv_capacity);
			else if (a->scraped && b->scraped)
				c = cmp_u64(a->kv_usage_ppm, b->kv_usage_ppm);
			if (c != 0)
				return c;
		}
		return cmp_i64(a->local_active, b->local_active);
	}
	if (stage == STAGE_DECODE) {
		if ((c = cmp_u64(a->waiting, b->waiting)) != 0)
			return c;
		if ((c = cmp_u64(a->running, b->running)) != 0)
			return c;
		if ((c = cmp_fraction(a->kv_used, a->kv_capacity, b->kv_used, b->kv_capacity)) != 0)
			return c;
		if ((c = cmp_u64(a->kv_used, b->kv_used)) != 0)
			return c;
		return cmp_i64(a->local_active, b->local_active);
	}
	if (a->has_queue_ms && b->has_queue_ms &&
	    (c = cmp_f64_total(a->queue_ms, b->queue_ms)) != 0)
		return c;
	if ((c = cmp_u64(a->pending, b->pending)) != 0)
		return c;
	if ((c = cmp_u64(a->waiting, b->waiting)) != 0)
		return c;
	if ((c = cmp_u64(a->running, b->running)) != 0)
		return c;
	return cmp_i64(a->local_active, b->local_active);
}
