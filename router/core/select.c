/* select.c — router_select: the ordered bucket-attempt loop of DESIGN.md §4
 * steps 2–5 (select.h; SGLang reorg handler over BucketResolver and
 * Bucket::pick_engines).
 *
 * Invariants: the buckets are resolved once per selection and the prefix
 * memo is filled from that resolution; nothing is dispatched here; a
 * selection is complete (plain worker, or prefill and decode of the same
 * bucket) or it is an error; a pick that raced a removal (the picked worker
 * left the table inside the snapshot window) is redone in the same group
 * without it (buckets.c), so the race never moves a request to the next
 * bucket; the snapshot is then refreshed, and a selection that failed with
 * a stale snapshot is run once more after the refresh, so a race with the
 * statebus is never reported as a policy fault.
 */
#include "router/core/select.h"
#include "common/errors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ensure_scratch(struct router_gen *g, const struct statebus_region *r)
{
	size_t need = r != NULL ? statebus_workers_capacity(r) : 1;
	if (need == 0)
		need = 1;
	if (g->scratch_cap >= need)
		return SY_OK;
	for (int k = 0; k < 2; k++) {
		void *p = realloc(g->scratch[k], need * sizeof(struct engine_candidate));
		if (p == NULL)
			return SY_ENOMEM;
		g->scratch[k] = p;
	}
	g->scratch_cap = need;
	return SY_OK;
}

static void copy_worker(struct selected_worker *dst, const struct engine_candidate *c,
			uint64_t now_ns)
{
	dst->slot = c->slot;
	dst->generation = c->generation;
	dst->bootstrap_port = c->bootstrap_port;
	dst->engine = c->engine;
	dst->cb_probe = c->cb_probe;
	dst->cb_probe_ns = c->cb_probe ? now_ns : 0;
	/* snprintf(dst->id, …, "%s", c->id) without the formatter (hot path) */
	size_t n = strnlen(c->id, sizeof(dst->id) - 1);
	memcpy(dst->id, c->id, n);
	dst->id[n] = '\0';
}

static int model_len(const struct pick_request *req)
{
	return req->model.len > 100 ? 100 : (int)req->model.len;
}

/* One pass over the resolved buckets. Returns PICK_OK with `out` filled, or
 * the outcome that ends the request; *last_stage is the stage of the last
 * failure. */
static enum pick_outcome attempt(struct bucket *const *order, struct pick_env *env,
				 size_t n_order, struct selection *out,
				 enum engine_stage *last_stage)
{
	enum pick_outcome o = PICK_NO_CANDIDATES;
	struct bucket_pick bp;

	int roles = -1; /* of the request's model, read when a bucket follows the fleet */
	uint32_t tried = 0;
	for (size_t i = 0; i < n_order; i++) {
		struct bucket *b = order[i];
		if (b->pd && !route_generates(env->req->route))
			continue; /* embeddings, rerank, responses, messages: plain workers */
		if (b->follows_fleet) {
			if (roles < 0)
				roles = (int)fleet_model_roles(env->fleet, env->model_idx);
			bool has_pd = (roles & (1 << STATEBUS_WORKER_PREFILL |
						1 << STATEBUS_WORKER_DECODE)) != 0;
			if (b->pd ? !has_pd : (has_pd && !(roles & 1 << STATEBUS_WORKER_PLAIN)))
				continue;
		}
		o = bucket_pick_engines(b, env, &bp);
		out->buckets_tried = ++tried;
		if (o == PICK_OK) {
			out->pd = b->pd;
			out->bucket_id = b->id;
			copy_worker(&out->worker, bp.worker.worker, env->now_ns);
			out->worker.inflight_cap =
				(b->pd ? &b->decode : &b->plain)->policy.admission.max_inflight_requests;
			out->reason = bp.worker.reason;
			out->policy = b->pd ? b->decode.policy.ops->name : b->plain.policy.ops->name;
			if (b->pd) {
				copy_worker(&out->prefill, bp.prefill.worker, env->now_ns);
				out->prefill.inflight_cap =
					b->prefill.policy.admission.max_inflight_requests;
				out->prefill_reason = bp.prefill.reason;
				out->prefill_policy = b->prefill.policy.ops->name;
			}
			return PICK_OK;
		}
		*last_stage = bp.failed_stage;
		if (o == PICK_NO_CANDIDATES || o == PICK_ADMISSION_REJECTED ||
		    o == PICK_NO_ADMISSIBLE_ENGINE)
			continue;
		return o; /* invalid signal / configuration / outside candidates */
	}
	return o;
}

int router_select_default_model(struct router_gen *g, struct statebus_region *r,
				struct pick_request *req, char *buf, size_t cap, uint64_t now_ns,
				struct router_error *err)
{
	if (!req->model_defaulted || !g->default_model_implicit)
		return SY_OK;
	fleet_refresh(&g->fleet, r, now_ns, false);
	if (fleet_model_index(&g->fleet, req->model.ptr, req->model.len) != FLEET_NO_MODEL)
		return SY_OK;
	size_t n_models;
	uint32_t only = fleet_only_model(&g->fleet, &n_models);
	if (only == FLEET_NO_MODEL && n_models == 0) {
		router_error_set(err, 503, "no_healthy_workers", -1, "no worker is known yet");
		return SY_EBUSY;
	}
	if (only == FLEET_NO_MODEL) {
		router_error_set(err, 400, "bad_request", -1,
				 "model: required, this router serves several models "
				 "(GET /v1/models lists them)");
		return SY_EINVAL;
	}
	snprintf(buf, cap, "%s", g->fleet.models[only]);
	req->model.ptr = buf;
	req->model.len = strlen(buf);
	return SY_OK;
}

int router_select_adapter(struct router_gen *g, struct statebus_region *r,
			  struct pick_request *req, char *buf, size_t cap, uint64_t now_ns)
{
	if (req->model.ptr == NULL || req->lora.ptr != NULL)
		return SY_OK;
	fleet_refresh(&g->fleet, r, now_ns, false);
	if (fleet_model_index(&g->fleet, req->model.ptr, req->model.len) != FLEET_NO_MODEL)
		return SY_OK;
	uint32_t base;
	if (fleet_adapter_index(&g->fleet, req->model.ptr, req->model.len, &base) ==
	    FLEET_NO_MODEL)
		return SY_OK;
	req->lora = req->model;
	snprintf(buf, cap, "%s", g->fleet.models[base]);
	req->model.ptr = buf;
	req->model.len = strlen(buf);
	return SY_OK;
}

/* The adapter filter of a pick of `req` over the snapshot `f`. */
static void adapter_filter(const struct fleet *f, const struct pick_request *req,
			   struct pick_env *env)
{
	env->adapter_asked = req->lora.ptr != NULL;
	env->adapter_bit = 0; /* an adapter gone from the fleet: no candidate */
	uint32_t base;
	uint32_t i = env->adapter_asked
			     ? fleet_adapter_index(f, req->lora.ptr, req->lora.len, &base)
			     : FLEET_NO_MODEL;
	if (i != FLEET_NO_MODEL && base == env->model_idx)
		env->adapter_bit = UINT64_C(1) << i;
}

int router_select_begin(struct router_gen *g, struct statebus_region *r,
			const struct pick_request *req, uint64_t now_ns, struct bucket **order,
			size_t *n_order, enum prefix_fill_mode mode, struct router_error *err)
{
	const char *why = NULL;

	router_error_clear(err);
	*n_order = 0;
	if (ensure_scratch(g, r) != SY_OK) {
		router_error_set(err, 500, "internal_error", -1, "out of memory");
		return SY_ENOMEM;
	}
	fleet_refresh(&g->fleet, r, now_ns, false);

	uint32_t model = fleet_model_index(&g->fleet, req->model.ptr, req->model.len);
	if (model == FLEET_NO_MODEL) {
		router_error_set(err, 404, "model_not_found", -1, "model \"%.*s\" is not served",
				 model_len(req), req->model.ptr);
		return SY_ENOENT;
	}

	struct bucket_signal sig = {
		.model = req->model.ptr,
		.model_len = req->model.len,
		.input_tokens = req->input_tokens,
		.has_peak = req->has_peak,
		.expected_peak = req->expected_peak,
		.has_ttft = req->has_ttft_slo,
		.ttft_ms = req->ttft_slo_ms,
		.has_tps = req->has_tps_slo,
		.tps = req->tps_slo,
	};
	enum pick_outcome o =
		bucket_resolver_resolve(&g->resolver, &sig, order, g->n_buckets, n_order, &why);
	if (o == PICK_INVALID_SIGNAL) {
		router_error_set(err, 400, "bad_request", -1, "%s", why);
		return SY_EINVAL;
	}
	if (o == PICK_NO_MATCHING_BUCKET) {
		if (req->has_peak)
			router_error_set(err, 400, "no_matching_bucket", -1,
					 "no bucket accepts %llu input tokens with an expected "
					 "peak of %llu tokens",
					 (unsigned long long)req->input_tokens,
					 (unsigned long long)req->expected_peak);
		else
			router_error_set(err, 400, "no_matching_bucket", -1,
					 "no bucket accepts %llu input tokens",
					 (unsigned long long)req->input_tokens);
		return SY_EINVAL;
	}
	if (o != PICK_OK) {
		router_error_set(err, 500, "internal_error", -1, "bucket resolution failed: %s", why);
		return SY_EMALFORMED;
	}

	/* DESIGN §4 step 3: the prefix memo, filled from this resolution. */
	if (g->has_cache_policy && req->memo != NULL &&
	    prefix_memo_fill(req->memo, order, *n_order, &g->fleet, r, req, mode) != SY_OK) {
		router_error_set(err, 500, "internal_error", -1, "out of memory");
		return SY_ENOMEM;
	}
	return SY_OK;
}

/* The picks of router_select / router_select_finish (snapshot current). */
static int picks(struct router_gen *g, struct statebus_region *r, const struct pick_request *req,
		 struct bucket *const *order, size_t n_order, uint64_t now_ns,
		 const struct worker_exclude *ex, struct selection *out, struct router_error *err)
{
	struct pick_rejections rej = {.err = err, .count = 0};
	enum pick_outcome o;

	router_error_clear(err);
	memset(out, 0, sizeof(*out));
	uint32_t model = fleet_model_index(&g->fleet, req->model.ptr, req->model.len);
	if (model == FLEET_NO_MODEL) {
		router_error_set(err, 404, "model_not_found", -1, "model \"%.*s\" is not served",
				 model_len(req), req->model.ptr);
		return SY_ENOENT;
	}
	struct pick_env env = {
		.req = req,
		.region = r,
		.now_ns = now_ns,
		.fleet = &g->fleet,
		.model_idx = model,
		.scratch = {g->scratch[0], g->scratch[1]},
		.scratch_cap = g->scratch_cap,
		.rej = &rej,
		.exclude = ex,
		.cb_cool_down_ns = router_gen_cb_cool_down_ns(g),
	};
	adapter_filter(&g->fleet, req, &env);
	enum engine_stage last_stage = STAGE_PLAIN;
	o = attempt(order, &env, n_order, out, &last_stage);
	if (o != PICK_OK && env.stale) {
		/* The table moved under the snapshot: refresh and try once more. */
		err->n_details = err->n_details_total = 0;
		rej.count = 0;
		env.stale = false;
		fleet_refresh(&g->fleet, r, now_ns, true);
		env.model_idx = fleet_model_index(&g->fleet, req->model.ptr, req->model.len);
		if (env.model_idx == FLEET_NO_MODEL) {
			router_error_set(err, 404, "model_not_found", -1,
					 "model \"%.*s\" is not served", model_len(req),
					 req->model.ptr);
			return SY_ENOENT;
		}
		adapter_filter(&g->fleet, req, &env);
		o = attempt(order, &env, n_order, out, &last_stage);
	}
	if (o == PICK_OK) {
		router_error_clear(err);
		out->reselected = env.reselected;
		if (env.stale) /* out holds copies: the snapshot may move */
			fleet_refresh(&g->fleet, r, now_ns, true);
		return SY_OK;
	}
	switch (o) {
	case PICK_NO_CANDIDATES:
	case PICK_ADMISSION_REJECTED:
	case PICK_NO_ADMISSIBLE_ENGINE:
		break;
	case PICK_INVALID_SIGNAL:
		router_error_set(err, 500, "internal_error", -1,
				 "engine selection failed: invalid routing signal");
		return SY_EMALFORMED;
	case PICK_OUTSIDE_CANDIDATES:
		router_error_set(err, 500, "internal_error", -1,
				 "engine selection failed: the policy answered outside its "
				 "candidates");
		return SY_EMALFORMED;
	default:
		router_error_set(err, 500, "internal_error", -1,
				 "engine selection failed: invalid configuration");
		return SY_EMALFORMED;
	}
	if (rej.count > 0) {
		router_error_set(err, 503, "policy_selection_failed", -1,
				 "every bucket was tried; %zu worker(s) rejected the request at "
				 "their admission limits",
				 rej.count);
		return SY_EBUSY;
	}
	switch (last_stage) {
	case STAGE_PREFILL:
		router_error_set(err, 503, "no_prefill_workers_available", -1,
				 "no prefill worker is available for model \"%.*s\"", model_len(req),
				 req->model.ptr);
		break;
	case STAGE_DECODE:
		router_error_set(err, 503, "no_decode_workers_available", -1,
				 "no decode worker is available for model \"%.*s\"", model_len(req),
				 req->model.ptr);
		break;
	default:
		router_error_set(err, 503, "no_healthy_workers", -1,
				 "no healthy worker is available for model \"%.*s\"", model_len(req),
				 req->model.ptr);
		break;
	}
	return SY_EBUSY;
}

int router_select_finish(struct router_gen *g, struct statebus_region *r,
			 const struct pick_request *req, struct bucket *const *order,
			 size_t n_order, uint64_t now_ns, const struct worker_exclude *ex,
			 struct selection *out, struct router_error *err)
{
	if (ensure_scratch(g, r) != SY_OK) {
		router_error_clear(err);
		memset(out, 0, sizeof(*out));
		router_error_set(err, 500, "internal_error", -1, "out of memory");
		return SY_ENOMEM;
	}
	fleet_refresh(&g->fleet, r, now_ns, false);
	return picks(g, r, req, order, n_order, now_ns, ex, out, err);
}

int router_select(struct router_gen *g, struct statebus_region *r, const struct pick_request *req,
		  uint64_t now_ns, struct selection *out, struct router_error *err)
{
	return router_select_excluding(g, r, req, now_ns, NULL, out, err);
}

int router_select_excluding(struct router_gen *g, struct statebus_region *r,
			    const struct pick_request *req, uint64_t now_ns,
			    const struct worker_exclude *ex, struct selection *out,
			    struct router_error *err)
{
	struct pick_request local = *req;
	char model_buf[STATEBUS_MODEL_MAX];
	size_t n_order = 0;

	memset(out, 0, sizeof(*out));
	router_error_clear(err);
	if (g->has_cache_policy && local.memo == NULL) {
		prefix_memo_reset(&g->memo);
		local.memo = &g->memo;
	}
	req = &local;
	int drc = router_select_default_model(g, r, &local, model_buf, sizeof(model_buf), now_ns, err);
	if (drc != SY_OK)
		return drc;
	char base_buf[STATEBUS_MODEL_MAX];
	(void)router_select_adapter(g, r, &local, base_buf, sizeof(base_buf), now_ns);
	int rc = router_select_begin(g, r, req, now_ns, g->order, &n_order, PREFIX_FILL_WAIT, err);
	if (rc != SY_OK)
		return rc;
	return picks(g, r, req, g->order, n_order, now_ns, ex, out, err);
}
