/* sticky.c — sticky routing keys (reference/policy-defaults.md §4.4; SGLang
 * policies/sticky.rs), with pins in the shared affinity store.
 *
 * The key is the routing-key header (router.routing_key_header, default
 * x-sgl-routing-key); binding key "sticky:{stage}:{len(model)}:{model}
 * {len(bucket)}:{bucket}{key}"; idle TTL 600 s; sweep 60 s.
 *   no key                          → fallback, no pin       ("no_routing_key")
 *   pinned worker is a candidate    → hit, admission on it   ("sticky_hit")
 *   new key                         → fallback, pin by CAS   ("sticky_new")
 *   pinned worker gone / unhealthy  → fallback, re-pin by CAS ("sticky_remap")
 * The fallback is round_robin (default), random, power_of_n (power_of_two)
 * or load_based (policy.sticky_fallback). Adding workers never moves a key:
 * a pin is only replaced when its worker stops being a candidate. Unlike
 * SGLang (per-replica pins, last writer wins), the first assignment wins
 * and every router process of the host follows it (DESIGN.md §9). Reason
 * names are switchyard's (the reference names none).
 */
#include "router/policies/affinity.h"

static const struct affinity_reasons sticky_reasons = {
	.hit = "sticky_hit",
	.assigned = "sticky_new",
	.remap = "sticky_remap",
};

static enum pick_outcome sticky_pick(struct policy *p, struct pick_ctx *ctx, struct pick *out)
{
	const struct router_span *key = &ctx->req->routing_key;
	if (key->ptr == NULL || key->len == 0) {
		enum pick_outcome o = policy_pick(p->fallback, ctx, out);
		out->reason = "no_routing_key";
		return o;
	}
	return affinity_pick(p, ctx, STATEBUS_AFFINITY_STICKY, key, &sticky_reasons, out);
}

const struct policy_ops policy_sticky_ops = {
	.name = "sticky",
	.pick = sticky_pick,
	.destroy = NULL,
};
