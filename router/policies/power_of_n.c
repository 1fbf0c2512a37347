/* power_of_n.c — power-of-N choices (reference/policy-defaults.md §3;
 * SGLang policies/power_of_n.rs). `power_of_two` is this policy with N = 2.
 *
 * Per pick: sample min(N, n) DISTINCT candidates uniformly, read each
 * sample's load once (the pick's snapshot), reduce them with the stage
 * pressure comparison (engine_stage_compare: queue time / pending / waiting
 * / running / local active for plain and prefill, waiting / running / KV
 * fraction / KV tokens / local active for decode; on vLLM's scraped view
 * the steps both sides know; local active only when either side lacks
 * fresh native or scraped data) where a full tie keeps the earlier
 * sample, then run admission ONCE, on the winner: a rejection is
 * PICK_ADMISSION_REJECTED, never a resample. A single candidate is returned
 * directly (its load is still read, for admission).
 *
 * Sampling: N = 2 draws i, then j from the other n − 1; small N draws with
 * rejection of repeats; N ≥ n takes every candidate, starting at a random
 * offset (so ties do not always favour the lowest ID); larger N uses
 * Floyd's algorithm over a bitmap. No allocation unless N > 16 and N < n.
 */
#include "router/policies/policy.h"

#include <stdlib.h>

#define SMALL_N 16

static size_t better(struct policy *p, struct pick_ctx *ctx, size_t best, size_t cand)
{
	const struct engine_load *b = pick_ctx_load(ctx, best);
	const struct engine_load *c = pick_ctx_load(ctx, cand);
	return engine_stage_compare(p->stage, c, b) < 0 ? cand : best;
}

/* Reduces the samples in `idx` (k ≥ 1, in sampling order). */
static size_t reduce(struct policy *p, struct pick_ctx *ctx, const size_t *idx, size_t k)
{
	size_t best = idx[0];
	pick_ctx_load(ctx, best);
	for (size_t j = 1; j < k; j++)
		best = better(p, ctx, best, idx[j]);
	return best;
}

static enum pick_outcome pon_pick(struct policy *p, struct pick_ctx *ctx, struct pick *out)
{
	size_t n = ctx->n, k = p->n_choices < n ? p->n_choices : n;
	size_t win;

	out->reason = "power_of_n";
	if (n == 1 || k <= 1) {
		win = n == 1 ? 0 : (size_t)router_rng_below(n);
		pick_ctx_load(ctx, win);
	} else if (k == 2) {
		size_t idx[2];
		idx[0] = (size_t)router_rng_below(n);
		idx[1] = (size_t)router_rng_below(n - 1);
		if (idx[1] >= idx[0])
			idx[1]++;
		win = reduce(p, ctx, idx, 2);
	} else if (k == n) {
		size_t start = (size_t)router_rng_below(n);
		win = start;
		pick_ctx_load(ctx, win);
		for (size_t j = 1; j < n; j++)
			win = better(p, ctx, win, (start + j) % n);
	} else if (k <= SMALL_N) {
		size_t idx[SMALL_N];
		for (size_t got = 0; got < k;) {
			size_t c = (size_t)router_rng_below(n), j = 0;
			while (j < got && idx[j] != c)
				j++;
			if (j == got)
				idx[got++] = c;
		}
		win = reduce(p, ctx, idx, k);
	} else {
		/* Floyd: for j in n−k .. n−1 take t ∈ [0, j]; if taken, take j. */
		uint64_t *bits = calloc((n + 63) / 64, sizeof(uint64_t));
		size_t *idx = malloc(k * sizeof(size_t));
		if (bits == NULL || idx == NULL) {
			free(bits);
			free(idx);
			return PICK_INVALID_CONFIGURATION; /* out of memory: a 500 */
		}
		size_t got = 0;
		for (size_t j = n - k; j < n; j++) {
			size_t t = (size_t)router_rng_below(j + 1);
			if (bits[t / 64] & (UINT64_C(1) << (t % 64)))
				t = j;
			bits[t / 64] |= UINT64_C(1) << (t % 64);
			idx[got++] = t;
		}
		win = reduce(p, ctx, idx, k);
		free(bits);
		free(idx);
	}
	if (policy_admit(p, ctx, win, out) != ADMIT_OK)
		return PICK_ADMISSION_REJECTED;
	out->worker = &ctx->cands[win];
	return PICK_OK;
}

const struct policy_ops policy_power_of_n_ops = {
	.name = "power_of_n",
	.pick = pon_pick,
	.destroy = NULL,
};
