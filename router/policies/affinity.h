/* affinity.h — the binding protocol shared by session_aware and sticky
 * (reference/policy-defaults.md §4.3, §4.4; DESIGN.md §9 "Affinity"), over
 * the state plane's affinity store (statebus.h, statebus/affinity.c).
 */
#ifndef SY_ROUTER_POLICIES_AFFINITY_H
#define SY_ROUTER_POLICIES_AFFINITY_H

#include "router/policies/policy.h"

/* Bounded re-checks of concurrent winners per pick. */
#define AFFINITY_RETRIES 4

/* Decision reasons of one affinity policy (static strings). */
struct affinity_reasons {
	const char *hit;      /* the binding's worker, admitted */
	const char *assigned; /* no binding: fallback pick, now bound */
	const char *remap;    /* binding's worker no longer a candidate: rebound */
};

/* Picks for binding key `key` (non-empty) of `kind` in ctx's scope (model
 * of the request, ctx->bucket_id, ctx->stage):
 *   bound to a candidate (slot and generation) → admission on it: admitted
 *     → reasons->hit; rejected → PICK_ADMISSION_REJECTED, binding kept;
 *   unbound → p->fallback picks (admission included; a rejection is
 *     returned as is and nothing is bound) → first-assignment CAS
 *     (reasons->assigned); a concurrent winner is re-checked as above;
 *   bound to a non-candidate → fallback pick → CAS replacement
 *     (reasons->remap); a concurrent replacement is re-checked.
 * A binding records placement only: nothing here touches in-flight
 * accounting. When the store cannot bind (full, lock timeout) or the
 * re-checks run out, the fallback's pick is used unbound. Without a region
 * the fallback decides alone. */
enum pick_outcome affinity_pick(struct policy *p, struct pick_ctx *ctx,
				enum statebus_affinity_kind kind, const struct router_span *key,
				const struct affinity_reasons *reasons, struct pick *out);

/* Index of the candidate with (slot, gen) in ctx->cands, or -1. */
long affinity_candidate(const struct pick_ctx *ctx, uint32_t slot, uint32_t gen);

#endif
