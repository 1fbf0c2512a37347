/* round_robin.c — round_robin policy (reference/policy-defaults.md §4.2;
 * SGLang policies/round_robin.rs).
 *
 * A cursor per policy instance — in reorg one per engine group and stage —
 * walks the group's candidates sorted by worker ID: pick cands[cursor mod n],
 * then advance the cursor. Admission runs on the pick; a rejection is
 * PICK_ADMISSION_REJECTED (no second try: the handler moves to the next
 * bucket). The cursor is the group's one cursor in the state plane
 * (policy_rotate: an atomic add, no lock), shared by every router process
 * of the host and kept across reloads, so clients spread over the
 * processes still see A, B, A, B; without a region it is the process's own.
 * When the candidate set changes size the rotation simply continues modulo
 * the new size.
 */
#include "router/policies/policy.h"

static enum pick_outcome rr_pick(struct policy *p, struct pick_ctx *ctx, struct pick *out)
{
	size_t i = (size_t)(policy_rotate(p, ctx) % ctx->n);
	out->reason = "round_robin";
	if (policy_admit(p, ctx, i, out) != ADMIT_OK)
		return PICK_ADMISSION_REJECTED;
	out->worker = &ctx->cands[i];
	return PICK_OK;
}

const struct policy_ops policy_round_robin_ops = {
	.name = "round_robin",
	.pick = rr_pick,
	.destroy = NULL,
};
