/* load_based.c — least load (reference/policy-defaults.md §4.1; SGLang
 * policies/load_based.rs; dispatch correction: sglang-wire.md §13).
 *
 * Per pick, over every candidate's snapshot load (pick_ctx_load):
 *   all candidates fresh (basic report of every DP rank within 5 s) →
 *     load = waiting + running + dispatches since the report's captured_at
 *     (Σ in-flight dispatch counters now − the sum the statebus stored with
 *     the oldest rank's report: requests sent after the engine counted);
 *   otherwise (telemetry fallback) → load = router-local in-flight, for all.
 * SGLang min-max scales the loads and takes the best; scaling keeps the
 * order and the ties, so the least load wins directly. Ties are broken by a
 * rotating cursor (the group's shared cursor, policy_rotate): the k-th tie of a pick
 * takes tied[cursor mod k]. Admission runs once, on the winner; a rejection
 * is PICK_ADMISSION_REJECTED. No allocation: ties are found in two passes.
 */
#include "router/policies/policy.h"

static uint64_t load_of(const struct engine_load *l, bool fresh)
{
	if (fresh)
		return l->waiting + l->running + l->dispatches_since_capture;
	return l->local_active > 0 ? (uint64_t)l->local_active : 0;
}

static enum pick_outcome lb_pick(struct policy *p, struct pick_ctx *ctx, struct pick *out)
{
	bool fresh = true;
	for (size_t i = 0; i < ctx->n; i++)
		if (!pick_ctx_load(ctx, i)->fresh)
			fresh = false;
	uint64_t best = UINT64_MAX;
	size_t ties = 0;
	for (size_t i = 0; i < ctx->n; i++) {
		uint64_t v = load_of(&ctx->cands[i].load, fresh);
		if (v < best) {
			best = v;
			ties = 1;
		} else if (v == best) {
			ties++;
		}
	}
	size_t want = (size_t)(policy_rotate(p, ctx) % ties), win = 0;
	for (size_t i = 0; i < ctx->n; i++) {
		if (load_of(&ctx->cands[i].load, fresh) != best)
			continue;
		if (want-- == 0) {
			win = i;
			break;
		}
	}
	out->reason = "load_based";
	if (policy_admit(p, ctx, win, out) != ADMIT_OK)
		return PICK_ADMISSION_REJECTED;
	out->worker = &ctx->cands[win];
	return PICK_OK;
}

const struct policy_ops policy_load_based_ops = {
	.name = "load_based",
	.pick = lb_pick,
	.destroy = NULL,
};
