/* infer.c — the inference routes: body limit, preparation, sampling
 * override, selection, dispatch (DESIGN.md §4). Nothing is dispatched
 * before a complete selection; a forwarding failure never restarts
 * selection (only the opt-in retry in forward.c picks again). */
#include <string.h>

#include "common/clock.h"
#include "router/dispatch/forward.h"
#include "router/dispatch/input_ids.h"
#include "router/http/metrics.h"
#include "router/dispatch/rewrite.h"
#include "router/pick.h"
#include "router/http/routes.h"
#include "router/rtgen.h"

int rt_route_infer(h2o_req_t *req, enum rt_route route)
{
	uint64_t t0 = sy_mono_ns();
	struct rt_gen *g = rt_w.gen;
	h2o_iovec_t body = req->entity;
	if (body.base == NULL || body.len == 0)
		return rt_send_error(req, route, 400, "bad_request", "a JSON request body is required",
				     NULL);
	if (body.len > g->cfg.router.max_body_bytes)
		return rt_send_errorf(req, route, 413, "payload_too_large",
				      "request body of %zu bytes exceeds the limit of %llu bytes",
				      body.len, (unsigned long long)g->cfg.router.max_body_bytes);

	struct rt_prepared *prep = h2o_mem_alloc_pool(&req->pool, sizeof(*prep));
	memset(prep, 0, sizeof(*prep));
	prep->t_start_ns = t0; /* one clock read for receipt and prepare start */
	struct rt_pick_error err = {0};
	if (rt_prepare(g, route, req, prep, &err) != 0)
		return rt_send_error(req, route, err.status, err.code, err.message, err.details_json);
	uint64_t t1 = prep->t_end_ns;
	rt_metrics_phase(rt_w.metrics, rt_w.index, RT_PHASE_PREPARE,
			 prep->prepare_ns ? prep->prepare_ns : t1 - t0);
	bool rewritten = false; /* time passed since t1 */
	if (prep->tokenize_ns)
		rt_metrics_phase(rt_w.metrics, rt_w.index, RT_PHASE_TOKENIZE, prep->tokenize_ns);
	if (prep->hash_ns)
		rt_metrics_phase(rt_w.metrics, rt_w.index, RT_PHASE_HASH, prep->hash_ns);

	if (g->sampling_override != NULL) {
		const char *param = NULL;
		h2o_iovec_t nb;
		int rc = rt_sampling_override(&req->pool, body, route, g->sampling_override,
					      g->cfg.router.sampling_param_conflict == SY_SAMPLING_REJECT,
					      &nb, &param);
		if (rc == -2) {
			rt_metrics_sampling_rejection(rt_w.metrics, rt_w.index, param);
			return rt_send_errorf(req, route, 400, "sampling_contract_violation",
					      "%s: differs from the router's sampling override", param);
		}
		if (rc == 0)
			body = nb;
		rewritten = true;
	}

	if (prep->input_ids != NULL &&
	    rt_input_ids_body(&req->pool, body, prep->input_ids, prep->n_input_ids, &body) != 0)
		return rt_send_error(req, route, 500, "internal_error",
				     "cannot add input_ids to the request", NULL);
	if (prep->input_ids != NULL)
		rewritten = true;

	struct rt_pick pick;
	uint64_t t2 = rewritten ? sy_mono_ns() : t1;
	if (rt_select(g, req, prep, NULL, t2, &pick, &err) != 0) {
		rt_metrics_phase(rt_w.metrics, rt_w.index, RT_PHASE_PICK, sy_mono_ns() - t2);
		rt_metrics_selection_failure(rt_w.metrics, rt_w.index, err.code);
		return rt_send_error(req, route, err.status, err.code, err.message, err.details_json);
	}
	pick.t_ns = sy_mono_ns(); /* also the dispatch stamp (forward.c) */
	rt_metrics_phase(rt_w.metrics, rt_w.index, RT_PHASE_PICK, pick.t_ns - t2);
	return rt_forward_start(req, g, route, prep, &pick, body, t0);
}
