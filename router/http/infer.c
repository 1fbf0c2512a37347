/* infer.c — the inference routes, top to bottom (infer.h): body limit,
 * preparation, the sampling conflict check, selection (begin; wait for
 * indexer replies without blocking the loop; picks), the one body rewrite
 * (router/dispatch/body_rewrite.h: sampling override, input ids, PD
 * bootstrap fields), dispatch. Nothing is
 * dispatched before a complete selection; a forwarding failure never
 * restarts selection (only the opt-in retry in forward.c selects again). */
#include "router/http/infer.h"
#include "router/http/req_alloc.h"

#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/errors.h"
#include "router/dispatch/body_rewrite.h"
#include "router/policies/cache/cache_source.h"
#include "router/dispatch/forward.h"
#include "router/http/metrics.h"
#include "router/http/response.h"
#include "router/http/routes.h"
#include "router/upstream/pool.h"
#include "router/worker.h"

/* ---- preparation ----------------------------------------------------------- */

static bool header_fn(void *ctx, const char *name, size_t len, struct router_span *value)
{
	h2o_req_t *req = ctx;
	ssize_t i = h2o_find_header_by_str(&req->headers, name, len, -1);
	if (i < 0)
		return false;
	value->ptr = req->headers.entries[i].value.base;
	value->len = req->headers.entries[i].value.len;
	return true;
}

/* Preparation scratch of finished requests, handed to the next ones so
 * the hot path does not malloc and free it per request (router_prepare
 * resets a buffer before use). One cache per worker process; only buffers
 * up to PREP_CACHE_MAX_BYTES are kept, so one huge request does not pin
 * its memory. */
#define PREP_CACHE_N 16
#define PREP_CACHE_MAX_BYTES (256u * 1024u)

static struct prepare_buf prep_cache[PREP_CACHE_N];
static unsigned prep_cached;

/* Prefix memos of finished requests, likewise (reset: nothing pending). */
static struct prefix_memo memo_cache[PREP_CACHE_N];
static unsigned memo_cached;

/* The request no longer waits: timer stopped, waiters cancelled, the
 * generation reference and the in-flight count dropped. */
static void wait_end(struct infer_request *ir)
{
	if (ir->gen == NULL)
		return;
	rt_prefix_wait_stop(&ir->wait);
	prefix_memo_cancel(&ir->memo);
	router_gen_unref(ir->gen);
	ir->gen = NULL;
	rt_w.active_requests--;
}

static void infer_request_dispose(void *p)
{
	struct infer_request *ir = p;
	rt_queue_leave(ir);
	rt_queue_token_put(ir);
	rt_infer_unreserve(ir);
	wait_end(ir);
	if (ir->pr.memo != NULL) {
		prefix_memo_reset(&ir->memo);
		if (memo_cached < PREP_CACHE_N)
			memo_cache[memo_cached++] = ir->memo;
		else
			prefix_memo_free(&ir->memo);
	}
	if (prep_cached < PREP_CACHE_N && prepare_buf_bytes(&ir->buf) <= PREP_CACHE_MAX_BYTES)
		prep_cache[prep_cached++] = ir->buf;
	else
		prepare_buf_free(&ir->buf);
}

struct infer_request *rt_infer_prepare(struct router_gen *g, enum route route, h2o_req_t *req,
				       uint64_t t_start_ns, struct router_error *err)
{
	static struct rt_req_list irs = {.size = sizeof(struct infer_request), .max = 256};
	struct infer_request *ir = rt_req_alloc(&req->pool, &irs, infer_request_dispose);
	if (prep_cached > 0)
		ir->buf = prep_cache[--prep_cached];
	else
		prepare_buf_init(&ir->buf);
	ir->route = route;
	ir->t_start_ns = t_start_ns;
	router_error_clear(err);
	ir->req = req;
	int rc = router_prepare(&g->prepare, route, req->entity.base, req->entity.len, header_fn,
				req, &ir->buf, &ir->pr, err);
	if (g->has_cache_policy) {
		if (memo_cached > 0)
			ir->memo = memo_cache[--memo_cached];
		else
			prefix_memo_init(&ir->memo, NULL);
		ir->memo.digests = g->digests;
		ir->memo.on_ready = NULL;
		ir->memo.ready_arg = NULL;
		ir->pr.memo = &ir->memo;
	} else {
		ir->pr.memo = NULL;
	}
	ir->t_prepared_ns = sy_mono_ns();
	return rc == 0 ? ir : NULL;
}

/* ---- selection --------------------------------------------------------------- */

/* Step one of selection (router_select_begin): indexer queries sent, not
 * awaited. */
static int infer_begin(struct router_gen *g, struct infer_request *ir, uint64_t now_ns,
		       struct router_error *err)
{
	if (ir->order == NULL)
		ir->order = h2o_mem_alloc_pool(&ir->req->pool,
					       (g->n_buckets ? g->n_buckets : 1) * sizeof(*ir->order));
	int rc = router_select_default_model(g, rt_w.region, &ir->pr, ir->model_buf,
					     sizeof(ir->model_buf), now_ns, err);
	if (rc != 0)
		return rc;
	(void)router_select_adapter(g, rt_w.region, &ir->pr, ir->model_buf, sizeof(ir->model_buf),
				    now_ns);
	rc = router_select_begin(g, rt_w.region, &ir->pr, now_ns, ir->order, &ir->n_order,
				 PREFIX_FILL_SEND, err);
	if (rc == 0)
		ir->resolved = true;
	return rc;
}

int rt_infer_select(struct router_gen *g, struct infer_request *ir,
		    const struct worker_exclude *ex, uint64_t now_ns, struct selection *out,
		    struct router_error *err)
{
	if (now_ns == 0)
		now_ns = sy_mono_ns();
	if (!ir->resolved) {
		int rc = infer_begin(g, ir, now_ns, err);
		if (rc != 0)
			return rc;
		(void)prefix_memo_expire(&ir->memo, UINT64_MAX); /* never waits here */
	}
	router_error_clear(err);
	int rc = router_select_finish(g, rt_w.region, &ir->pr, ir->order, ir->n_order, now_ns, ex,
				      out, err);
	struct router_cache_totals cd;
	if (router_gen_cache_delta(g, &cd))
		rt_metrics_cache(rt_w.metrics, rt_w.index, &cd);
	return rc;
}

/* ---- the body rewrite -------------------------------------------------------- */

int rt_infer_body(h2o_req_t *req, struct router_gen *g, const struct infer_request *ir,
		  const struct selection *sel, h2o_iovec_t *body, uint64_t *room)
{
	struct body_rewrite rw = {.sampling = g->sampling_override};
	const struct pick_request *pr = &ir->pr;
	char host[256];
	*body = req->entity;
	*room = 0;
	if (pr->forward_ids) {
		rw.input_ids = pr->token_ids;
		rw.n_input_ids = pr->n_token_ids;
	}
	if (selection_pd_vllm(sel)) {
		rw.vllm_pd = VLLM_PD_PREFILL; /* the decode's: rt_infer_decode_body */
	} else if (sel->pd) {
		uint16_t port;
		const char *path;
		if (rt_url_split(sel->prefill.id, host, sizeof(host), &port, &path) != 0)
			return -1;
		rw.pd_host = host;
		rw.pd_host_len = strlen(host);
		rw.pd_port = sel->prefill.bootstrap_port;
	}
	if (!body_rewrite_needed(&rw))
		return 0;
	char *out = h2o_mem_alloc_pool(&req->pool, body_rewrite_bound(&rw, pr, body->len));
	body->len = body_rewrite_build(&rw, body->base, pr, out);
	body->base = out;
	*room = rw.room;
	return 0;
}

/* ---- rerank ------------------------------------------------------------------ */

/* POST /rerank (SMG's RerankRequest) or /v1/rerank (its V1RerankReqInput):
 * checks the request and keeps what wraps the engine's answer
 * (http/rerank.h). Returns 0, or -1 after answering 400. */
static int rerank_prepare(h2o_req_t *req, struct infer_request *ir)
{
	bool full = h2o_memis(req->path_normalized.base, req->path_normalized.len,
			      H2O_STRLIT("/rerank"));
	char err[ROUTER_ERROR_MSG_MAX];
	if (rt_rerank_parse(req->entity.base, req->entity.len, full, &ir->rerank, err,
			    sizeof(err)) != 0) {
		rt_send_errorf(req, ROUTE_RERANK, 400, "bad_request", "%s", err);
		return -1;
	}
	if (ir->rerank.rid != NULL) {
		char *rid = ir->rerank.rid;
		ir->rerank.rid = h2o_strdup(&req->pool, rid, SIZE_MAX).base;
		free(rid);
	}
	return 0;
}

int rt_infer_decode_body(h2o_req_t *req, struct router_gen *g, const struct infer_request *ir,
			 const char *kv, size_t kv_len, h2o_iovec_t *body)
{
	struct body_rewrite rw = {.sampling = g->sampling_override,
				  .vllm_pd = VLLM_PD_DECODE,
				  .kv_params = kv,
				  .kv_params_len = kv_len};
	const struct pick_request *pr = &ir->pr;
	if (pr->forward_ids) {
		rw.input_ids = pr->token_ids;
		rw.n_input_ids = pr->n_token_ids;
	}
	char *out = h2o_mem_alloc_pool(&req->pool, body_rewrite_bound(&rw, pr, ir->body.len));
	body->len = body_rewrite_build(&rw, ir->body.base, pr, out);
	body->base = out;
	return 0;
}

/* ---- the route ------------------------------------------------------------- */

/* Picks at `now_ns` and dispatch, after step one returned `rc` (err filled
 * when not 0). */
void rt_infer_predict(const struct infer_request *ir, const struct selection *sel, uint64_t now_ns)
{
	const struct prefix_memo *m = ir->pr.memo;
	if (rt_w.region == NULL || m == NULL || !m->chain_done || m->n_ids == 0 ||
	    statebus_index_mode(rt_w.region) == STATEBUS_INDEX_MODE_OFF)
		return; /* no tree to record the prediction in (statebus.index off) */
	const struct selected_worker *w = sel->pd ? &sel->prefill : &sel->worker;
	struct statebus_prediction p = {
		.worker = w->slot,
		.worker_gen = w->generation,
		.rank = 0,
		.model_tag = statebus_predict_model_tag(ir->pr.model.ptr, ir->pr.model.len),
		.now_ns = now_ns,
	};
	if (statebus_predict_push(rt_w.region, rt_w.proc_slot, &p, m->ids, m->n_ids) == SY_OK)
		prefix_pending_add(w->slot, w->generation, m->ids, m->n_ids,
				   statebus_predict_ring_pos(rt_w.region, rt_w.proc_slot), now_ns);
}

bool rt_infer_reserve(struct infer_request *ir, struct selection *sel, uint64_t now_ns,
		      struct router_error *err)
{
	const struct selected_worker *w = &sel->worker;
	if (rt_w.region == NULL || ir->reserved ||
	    statebus_inflight_acquire(rt_w.region, rt_w.proc_slot, w->slot, now_ns) != SY_OK)
		return true;
	ir->reserved = true;
	ir->reserved_slot = w->slot;
	int64_t n = 0;
	if (w->inflight_cap < 0 || statebus_inflight_sum(rt_w.region, w->slot, &n, NULL) != SY_OK ||
	    n <= w->inflight_cap)
		return true;
	rt_infer_unreserve(ir);
	if (sel->worker.cb_probe)
		statebus_breaker_release_probe(rt_w.region, sel->worker.slot, sel->worker.generation,
					       sel->worker.cb_probe_ns);
	if (sel->prefill.cb_probe)
		statebus_breaker_release_probe(rt_w.region, sel->prefill.slot,
					       sel->prefill.generation, sel->prefill.cb_probe_ns);
	router_error_clear(err);
	router_error_add_rejection(err, w->id, "max_inflight_requests");
	router_error_set(err, 503, "policy_selection_failed", -1,
			 "every bucket was tried; 1 worker(s) rejected the request at their "
			 "admission limits");
	return false;
}

void rt_infer_unreserve(struct infer_request *ir)
{
	if (!ir->reserved)
		return;
	ir->reserved = false;
	if (rt_w.region != NULL)
		statebus_inflight_release(rt_w.region, rt_w.proc_slot, ir->reserved_slot);
}

int rt_infer_dispatch(struct router_gen *g, struct infer_request *ir, const struct selection *sel,
		      uint64_t t_selected_ns)
{
	h2o_req_t *req = ir->req;
	rt_infer_predict(ir, sel, t_selected_ns);
	if (ir->route == ROUTE_CHAT_COMPLETIONS)
		rt_metrics_input_ids(rt_w.metrics, rt_w.index,
				     ir->pr.forward_ids                           ? RT_INPUT_IDS_FORWARDED
				     : g->cfg.router.disable_input_ids_forwarding ? RT_INPUT_IDS_DISABLED
										  : RT_INPUT_IDS_INELIGIBLE);
	h2o_iovec_t body;
	uint64_t room;
	if (rt_infer_body(req, g, ir, sel, &body, &room) != 0)
		return rt_send_errorf(req, ir->route, 500, "internal_error",
				      "cannot add the PD bootstrap fields to the request");
	return rt_forward_start(req, g, ir, sel, body, room, t_selected_ns);
}

/* After step one returned `rc` (err filled when not 0): the concurrency
 * cap, the queue when others wait, the picks at `now_ns`, dispatch — or
 * the queue when the picks ended in admission rejections. */
static int infer_finish(struct infer_request *ir, struct router_gen *g, int rc, uint64_t now_ns,
			struct router_error *err)
{
	h2o_req_t *req = ir->req;
	uint64_t t2 = ir->t_select_ns;
	struct selection sel;
	if (rc == 0 && (rt_queue_busy() || !rt_queue_token_take(g, ir))) {
		/* behind the requests already waiting, or at the concurrency cap */
		if (rt_queue_wait(g, ir, NULL))
			return 0;
		if (!ir->qw.token && g->cfg.router.max_concurrent_requests >= 0) {
			h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL,
				       H2O_STRLIT("1"));
			return rt_send_errorf(req, ir->route, 503, "service_overloaded",
					      "the router's concurrency limit (%d requests) is "
					      "reached and router.queue_size is 0",
					      g->cfg.router.max_concurrent_requests);
		}
	}
	if (rc != 0 || rt_infer_select(g, ir, NULL, now_ns, &sel, err) != 0) {
		rt_metrics_phase(rt_w.metrics, rt_w.index, RT_PHASE_PICK, sy_mono_ns() - t2);
		rt_metrics_selection_failure(rt_w.metrics, rt_w.index, err->code);
		if (rc == 0 && rt_queue_wait(g, ir, err))
			return 0;
		return rt_send_error(req, ir->route, err);
	}
	uint64_t t3 = sy_mono_ns(); /* also the dispatch stamp (forward.c) */
	rt_metrics_phase(rt_w.metrics, rt_w.index, RT_PHASE_PICK, t3 - t2);
	if (!rt_infer_reserve(ir, &sel, t3, err)) {
		/* another process took the last place first */
		rt_metrics_selection_failure(rt_w.metrics, rt_w.index, err->code);
		if (rt_queue_wait(g, ir, err))
			return 0;
		return rt_send_error(req, ir->route, err);
	}
	return rt_infer_dispatch(g, ir, &sel, t3);
}

/* The last indexer reply came, or the deadline passed. */
static void resume(struct rt_prefix_wait *w)
{
	struct infer_request *ir = H2O_STRUCT_FROM_MEMBER(struct infer_request, wait, w);
	struct router_gen *g = ir->gen; /* kept until dispatch holds its own */
	struct router_error err;
	ir->gen = NULL;
	rt_w.active_requests--;
	(void)infer_finish(ir, g, 0, sy_mono_ns(), &err);
	router_gen_unref(g);
}

int rt_route_infer(h2o_req_t *req, enum route route)
{
	uint64_t t0 = sy_mono_ns();
	struct router_gen *g = rt_w.gen;
	h2o_iovec_t body = req->entity;
	if (rt_body_refused(req, route, g->cfg.router.max_body_bytes))
		return 0;

	struct router_error err;
	struct infer_request *ir = rt_infer_prepare(g, route, req, t0, &err);
	if (ir == NULL)
		return rt_send_error(req, route, &err);
	uint64_t t1 = ir->t_prepared_ns;
	rt_metrics_phase(rt_w.metrics, rt_w.index, RT_PHASE_PREPARE, t1 - t0);
	/* the sampling override applies to the routes that generate */
	const struct sampling_override *ov = route_generates(route) ? g->sampling_override : NULL;
	const char *param = NULL;
	if (body_rewrite_check(ov, body.base, &ir->pr, &param) != 0) {
		rt_metrics_sampling_rejection(rt_w.metrics, rt_w.index, param);
		return rt_send_errorf(req, route, 400, "sampling_contract_violation",
				      "%s: differs from the router's sampling override", param);
	}

	if (route == ROUTE_RERANK && rerank_prepare(req, ir) != 0)
		return 0;

	uint64_t t2 = ir->pr.body.n_override > 0 ? sy_mono_ns() : t1; /* values compared */
	ir->body = body;
	ir->t_select_ns = t2;
	int rc = infer_begin(g, ir, t2, &err);
	if (rc == 0 && ir->memo.n_pending > 0 && ir->pr.memo != NULL) {
		/* Indexer replies pending: wait on the loop, not in it. */
		ir->gen = router_gen_ref(g);
		rt_w.active_requests++;
		rt_prefix_wait_start(&ir->wait, &ir->memo, resume);
		return 0;
	}
	return infer_finish(ir, g, rc, t2, &err);
}
