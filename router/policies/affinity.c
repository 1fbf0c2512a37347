/* affinity.c — the binding protocol of session_aware and sticky
 * (affinity.h; reference/policy-defaults.md §4.3, §4.4).
 *
 * Order of a pick: look the scoped key up; reuse a binding to a current
 * candidate (admission decides, the binding stays either way); otherwise
 * let the fallback pick (with its admission), and only an admitted pick is
 * bound — first assignment by CAS in the shared store, or a CAS replacement
 * of a binding whose worker left the candidates. A lost CAS hands back the
 * winner, which is re-checked like a lookup hit (bounded: AFFINITY_RETRIES),
 * so every router process of the host converges on one worker per key
 * (DESIGN.md §9: ours converge where SGLang's per-replica pins are
 * last-writer-wins).
 */
#include "router/policies/affinity.h"

#include <string.h>

long affinity_candidate(const struct pick_ctx *ctx, uint32_t slot, uint32_t gen)
{
	for (size_t i = 0; i < ctx->n; i++)
		if (ctx->cands[i].slot == slot && ctx->cands[i].generation == gen)
			return (long)i;
	return -1;
}

static enum pick_outcome use(struct policy *p, struct pick_ctx *ctx, size_t i, const char *reason,
			     struct pick *out)
{
	out->reason = reason;
	if (policy_admit(p, ctx, i, out) != ADMIT_OK)
		return PICK_ADMISSION_REJECTED;
	out->worker = &ctx->cands[i];
	return PICK_OK;
}

enum pick_outcome affinity_pick(struct policy *p, struct pick_ctx *ctx,
				enum statebus_affinity_kind kind, const struct router_span *key,
				const struct affinity_reasons *reasons, struct pick *out)
{
	struct pick fb = {0};
	enum pick_outcome o;

	if (ctx->region == NULL || p->fallback == NULL) {
		if (p->fallback == NULL)
			return PICK_INVALID_CONFIGURATION;
		o = policy_pick(p->fallback, ctx, out);
		out->reason = reasons->assigned;
		return o;
	}
	const char *bucket = ctx->bucket_id ? ctx->bucket_id : "";
	struct statebus_affinity_key k;
	if (statebus_affinity_key_make(kind, (uint32_t)ctx->stage, ctx->req->model.ptr,
				       ctx->req->model.len, bucket, strlen(bucket), key->ptr,
				       key->len, &k) != SY_OK)
		return PICK_INVALID_SIGNAL;

	struct statebus_affinity_binding b, nb;
	int have = statebus_affinity_lookup(ctx->region, &k, ctx->now_ns, &b);
	const struct engine_candidate *picked = NULL;
	for (int attempt = 0; attempt < AFFINITY_RETRIES; attempt++) {
		bool rebinding = false;
		if (have == SY_OK) {
			long i = affinity_candidate(ctx, b.worker, b.worker_gen);
			if (i >= 0)
				return use(p, ctx, (size_t)i, reasons->hit, out);
			rebinding = true; /* invalid, unhealthy or outside the group */
		}
		if (picked == NULL) {
			o = policy_pick(p->fallback, ctx, &fb);
			if (o != PICK_OK) {
				out->rejected_by = fb.rejected_by;
				out->reason = rebinding ? reasons->remap : reasons->assigned;
				return o; /* nothing is bound for a rejected pick */
			}
			picked = fb.worker;
		}
		int rc = rebinding ? statebus_affinity_rebind(ctx->region, &k, &b, picked->slot,
							      picked->generation, ctx->now_ns, &nb)
				   : statebus_affinity_bind(ctx->region, &k, kind, picked->slot,
							    picked->generation, p->idle_ttl_ms,
							    ctx->now_ns, &nb);
		if (rc == SY_OK) {
			out->worker = picked;
			out->reason = rebinding ? reasons->remap : reasons->assigned;
			return PICK_OK;
		}
		if (rc == SY_EEXIST) { /* a concurrent winner: re-check it */
			b = nb;
			have = SY_OK;
			continue;
		}
		if (rc == SY_ENOENT) { /* expired or reused under us: bind afresh */
			have = SY_ENOENT;
			continue;
		}
		break; /* full or busy: route unbound */
	}
	if (picked == NULL) {
		/* Re-checks ran out while winners kept changing: decide alone. */
		o = policy_pick(p->fallback, ctx, &fb);
		if (o != PICK_OK) {
			out->rejected_by = fb.rejected_by;
			out->reason = reasons->assigned;
			return o;
		}
		picked = fb.worker;
	}
	out->worker = picked;
	out->reason = reasons->assigned;
	return PICK_OK;
}
