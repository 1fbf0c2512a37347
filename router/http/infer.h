/* infer.h — the inference request path of a worker process (DESIGN.md §4):
 *
 *   rt_route_infer (routes.h)
 *     body limit → rt_infer_prepare: router_prepare (router/core/prepare.h)
 *     → sampling override, input ids (the body rewrite)
 *     → router_select_begin (router/core/select.h): buckets resolved once,
 *       prefix memo filled, indexer queries sent
 *     → [indexer replies pending: the request waits (http/prefix_wait.h),
 *        the event loop serves others; resumed on the last reply or the
 *        deadline]
 *     → rt_infer_select: router_select_finish → struct selection
 *     → rt_forward_start (router/dispatch/forward.h) with that selection.
 *
 * A `struct infer_request` lives in the h2o request's pool with a dispose
 * callback; it owns the preparation scratch and the prefix memo (both
 * handed back to per-process caches when the request ends) and the
 * pick_request, which borrows from them, from the request body and from
 * h2o's header storage — all of which live as long as the request. A
 * request that ends while waiting (client gone) leaves no waiter behind:
 * the dispose callback stops its timer and cancels its memo. While it
 * waits it holds a reference to its generation and counts in
 * rt_w.active_requests; so does a request waiting in the router queue
 * (queue_run.h), which may hold a concurrency token from selection to its
 * end (returned by the dispose callback). The opt-in retry (forward.c) selects again from the
 * same prepared request and resolution.
 */
#ifndef SY_ROUTER_HTTP_INFER_H
#define SY_ROUTER_HTTP_INFER_H

#include <stdint.h>

#include <h2o.h>

#include "router/core/error.h"
#include "router/core/generation.h"
#include "router/core/prepare.h"
#include "router/core/route.h"
#include "router/core/select.h"
#include "router/http/prefix_wait.h"
#include "router/http/rerank.h"
#include "router/http/queue_run.h"

/* One prepared inference request (request pool). */
struct infer_request {
	enum route route;              /* an inference route */
	struct prepare_buf buf;        /* preparation scratch (owned) */
	struct pick_request pr;        /* what selection reads; pr.memo = &memo
					  when the generation has cache_aware */
	uint64_t t_start_ns;           /* receipt (CLOCK_MONOTONIC) */
	uint64_t t_prepared_ns;        /* preparation ended */
	struct prefix_memo memo;       /* this request's prefix memo (owned) */
	struct bucket **order;         /* resolved buckets (pool), n_order */
	size_t n_order;
	bool resolved;                 /* router_select_begin succeeded */
	/* waiting for indexer replies */
	struct rt_prefix_wait wait;
	h2o_req_t *req;                /* the request, to resume it */
	struct router_gen *gen;        /* a reference while waiting, else NULL */
	h2o_iovec_t body;              /* the body to forward */
	uint64_t t_select_ns;          /* selection began */
	char model_buf[STATEBUS_MODEL_MAX]; /* pr.model when the body names none and
					       the fleet serves one model, or the
					       base model of the LoRA adapter it names */
	struct rt_rerank rerank;       /* ROUTE_RERANK: what wraps the engine's
					  answer (http/rerank.h); rerank.rid is
					  in the request pool */
	struct rt_queue_wait qw;       /* the router queue (queue_run.h) */
	bool reserved;                 /* holds the in-flight guard of reserved_slot,
					  taken by rt_infer_reserve for the
					  dispatch to adopt (forward.c) */
	uint32_t reserved_slot;
};

/* Prepares `req`'s body for `route` under generation `g`: returns the
 * pool-allocated request, or NULL with `err` filled (400 bad_request with
 * the byte offset for malformed JSON, ...). `t_start_ns` is the receipt
 * time. */
struct infer_request *rt_infer_prepare(struct router_gen *g, enum route route, h2o_req_t *req,
				       uint64_t t_start_ns, struct router_error *err);

/* Selects the engine(s) for `ir` under `g` at `now_ns` (0: read the clock),
 * never returning a worker in `ex` (may be NULL; struct worker_exclude,
 * router/core/buckets.h): selection leaves them out of every candidate
 * set. Runs the picks over the request's resolution
 * (router_select_finish); a request not resolved yet is resolved first,
 * and indexer entries still pending then read as unavailable (timeout) —
 * it never waits. Exports the cache counters' movement to the metrics.
 * Returns 0 with *out filled (strings borrowed from `g`), or a negative
 * sy_err with `err`. */
int rt_infer_select(struct router_gen *g, struct infer_request *ir,
		    const struct worker_exclude *ex, uint64_t now_ns, struct selection *out,
		    struct router_error *err);

/* Hands the dispatched prompt's block-hash chain to the statebus as
 * predicted ownership of the engine that will hold its KV cache — the plain
 * worker, or the PD prefill worker of `sel` (DESIGN.md §9 "Predicted
 * ownership"; docs/statebus.md) — at dispatch and at each retry's
 * dispatch. Only when a cache_aware group computed the chain for this
 * request; never blocks (a full ring drops it, counted by the statebus).
 * DP rank 0: the engine balances its own ranks. */
void rt_infer_predict(const struct infer_request *ir, const struct selection *sel, uint64_t now_ns);

/* The dispatch guard as the reservation: takes the in-flight guard of
 * sel->worker at `now_ns` and, when its group caps router in-flight
 * requests (admission max_inflight_requests), checks the sum over every
 * process again; over the cap (another process dispatched between this
 * selection's check and now) the guard is given back and `err` is the
 * admission rejection selection would have given (503
 * policy_selection_failed naming the worker): returns false. The guard is
 * adopted by the dispatch, or released when the request ends. */
bool rt_infer_reserve(struct infer_request *ir, struct selection *sel, uint64_t now_ns,
		      struct router_error *err);

/* Gives back a reservation not adopted (idempotent). */
void rt_infer_unreserve(struct infer_request *ir);

/* Dispatches `ir` under `g` with selection `sel` made at `t_selected_ns`:
 * predicted ownership, the body rewrite, rt_forward_start. Answers 500 when
 * the body cannot be built. Returns 0. */
int rt_infer_dispatch(struct router_gen *g, struct infer_request *ir, const struct selection *sel,
		      uint64_t t_selected_ns);

/* Builds the body forwarded for selection `sel` (body_rewrite.h: sampling
 * override, input ids, and for PD the prefill worker's bootstrap fields
 * with fresh rooms; for vLLM PD the prefill leg's kv_transfer_params,
 * one token, not streamed) from the request's body into its pool: *body is the
 * result (the body as received when nothing changes), *room the first
 * bootstrap_room written (0 when not PD). Returns 0, or -1 when the prefill
 * worker's ID gives no host. Run again for a retry that chose another
 * prefill worker. */
int rt_infer_body(h2o_req_t *req, struct router_gen *g, const struct infer_request *ir,
		  const struct selection *sel, h2o_iovec_t *body, uint64_t *room);

/* The body of the decode leg of a vLLM PD request (selection_pd_vllm; the
 * prefill leg's is rt_infer_body's): the request's body with the sampling
 * override and input ids as rt_infer_body, the client's kv_transfer_params
 * dropped and `kv` (kv_len bytes, the JSON object the prefill returned;
 * NULL: none) appended, into the request's pool. Returns 0. */
int rt_infer_decode_body(h2o_req_t *req, struct router_gen *g, const struct infer_request *ir,
			 const char *kv, size_t kv_len, h2o_iovec_t *body);

#endif
