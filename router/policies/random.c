/* random.c — random policy (reference/policy-defaults.md §4.2; SGLang
 * policies/random.rs): a uniform draw over the group's candidates from the
 * per-process generator (router_rng_below), then admission on the pick;
 * a rejection is PICK_ADMISSION_REJECTED without a redraw.
 */
#include "router/policies/policy.h"

static enum pick_outcome random_pick(struct policy *p, struct pick_ctx *ctx, struct pick *out)
{
	size_t i = (size_t)router_rng_below(ctx->n);
	out->reason = "random";
	if (policy_admit(p, ctx, i, out) != ADMIT_OK)
		return PICK_ADMISSION_REJECTED;
	out->worker = &ctx->cands[i];
	return PICK_OK;
}

const struct policy_ops policy_random_ops = {
	.name = "random",
	.pick = random_pick,
	.destroy = NULL,
};
