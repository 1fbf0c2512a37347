/* session_aware.c — session affinity (reference/policy-defaults.md §4.3;
 * SGLang reorg session_aware).
 *
 * The session key is the request's session header (router.session_id_header,
 * default x-session-id). Binding key
 * "session:{stage}:{len(model)}:{model}{len(bucket)}:{bucket}{session}" in
 * the shared affinity store, idle TTL policy.affinity_idle_timeout_secs
 * (600 s), swept every statebus.affinity_sweep_interval_secs (60 s).
 *   no or empty key            → power-of-N, nothing bound   ("no_session")
 *   bound to a candidate       → admission: reuse ("session_primary") or
 *                                PICK_ADMISSION_REJECTED, binding kept (the
 *                                handler advances to the next bucket)
 *   unbound / bound elsewhere  → power-of-N → admission → bind by CAS
 *                                ("assigned"); a concurrent winner is
 *                                re-checked (policies/affinity.c)
 * Bind only after admission; a binding records placement, never dispatch
 * accounting.
 */
#include "router/policies/affinity.h"

static const struct affinity_reasons session_reasons = {
	.hit = "session_primary",
	.assigned = "assigned",
	.remap = "assigned",
};

static enum pick_outcome session_pick(struct policy *p, struct pick_ctx *ctx, struct pick *out)
{
	const struct router_span *key = &ctx->req->session_key;
	if (key->ptr == NULL || key->len == 0) {
		enum pick_outcome o = policy_pick(p->fallback, ctx, out);
		out->reason = "no_session";
		return o;
	}
	return affinity_pick(p, ctx, STATEBUS_AFFINITY_SESSION, key, &session_reasons, out);
}

const struct policy_ops policy_session_aware_ops = {
	.name = "session_aware",
	.pick = session_pick,
	.destroy = NULL,
};
