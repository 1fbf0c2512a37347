/* queue_run.h — the router queue of one worker process (DESIGN.md §9
 * "Queueing"): requests whose bucket pass ended in admission rejections,
 * or that found the router-wide concurrency cap reached, wait here and are
 * selected again from the bucket-first pass when capacity can have freed.
 *
 *   arrival  rt_route_infer → rt_queue_token_take (router.max_concurrent_
 *            requests, over every process through the state plane) →
 *            selection. Over the cap, 503 policy_selection_failed, or a
 *            non-empty local queue (arrivals go behind the waiting) →
 *            rt_queue_wait.
 *   waiting  class from router.priority_header (x-smg-priority) clamped by
 *            the tenant's maximum; tenant from router.tenant_header or the
 *            API key's identity (auth.c); order in router/core/queue.h.
 *   wake     a 1 ms timer runs while the queue holds requests and compares
 *            the state plane's wake counter sum (statebus-queue.h: bumped
 *            by every in-flight release and concurrency token return on
 *            the host, every load report and worker change); when it moved,
 *            a pass pops requests in order, takes a token and runs the
 *            picks again (rt_infer_select over the request's resolution,
 *            every bucket in order, fleet refreshed). Admitted → dispatched
 *            (the in-flight guard taken at dispatch is the reservation);
 *            admission again → back in place; any other outcome → that
 *            error. A request whose model and buckets already missed in
 *            this pass keeps its place untried; a pass looks at most at
 *            RT_QUEUE_SCAN requests and stops after RT_QUEUE_MISSES distinct
 *            misses, so one saturated model does not block another's.
 *   leaving  deadline (router.queue_timeout_secs, shortened by
 *            router.queue_timeout_header in ms) → 503 with the last
 *            selection's error (policy_selection_failed and its admission
 *            details, or service_overloaded for the concurrency cap) and
 *            Retry-After; queue full (router.queue_size over every
 *            process) → the same at once; the client gone (HTTP/2 reset,
 *            HTTP/1 watch, client_watch.h) → out at once.
 *
 * A waiting request holds a generation reference and counts in
 * rt_w.active_requests; its entry lives in the infer_request (request
 * pool) and the pool's dispose callback takes it out (rt_queue_leave).
 */
#ifndef SY_ROUTER_HTTP_QUEUE_RUN_H
#define SY_ROUTER_HTTP_QUEUE_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include <h2o.h>

#include "router/core/error.h"
#include "router/core/queue.h"
#include "router/http/client_watch.h"

struct infer_request;
struct router_gen;

/* Distinct (model, buckets) misses after which a pass stops, and the most
 * requests one pass looks at (the rest wait for the next wake). */
#define RT_QUEUE_MISSES 4
#define RT_QUEUE_SCAN 64
/* Poll period of the wake counter while requests wait (ms). */
#define RT_QUEUE_POLL_MS 1

/* A request's queue state (in struct infer_request, zeroed with it). */
struct rt_queue_wait {
	struct router_queue_entry e;
	h2o_linklist_t all;        /* in the process's list of waiting requests */
	struct rt_client_watch watch;
	uint64_t t_enq_ns;         /* entered the queue */
	uint64_t deadline_ns;      /* 503 at this time */
	struct router_error *last; /* the last selection's error (request pool) */
	unsigned tenant_label;     /* metrics label index of the tenant */
	bool waiting;              /* in the queue (or popped by a running pass) */
	bool token;                /* holds a concurrency token */
	bool at_cap;               /* queued by the concurrency cap */
	int cap;                   /* router.max_concurrent_requests then */
};

/* Takes a concurrency token for `ir` when router.max_concurrent_requests
 * is set (no-op returning true otherwise). False: the cap is reached. */
bool rt_queue_token_take(const struct router_gen *g, struct infer_request *ir);

/* Returns `ir`'s token, if it holds one. */
void rt_queue_token_put(struct infer_request *ir);

/* Whether an arrival should queue behind waiting requests (this process's
 * queue is not empty). */
bool rt_queue_busy(void);

/* Queues `ir` (prepared and resolved under `g`) after `err` (its last
 * selection error; NULL: the concurrency cap). Returns true when the
 * request now waits or was answered (queue full: 503 sent); false when
 * it may not wait (queue off, or `err` is not an admission exhaustion):
 * the caller answers `err`. */
bool rt_queue_wait(struct router_gen *g, struct infer_request *ir, const struct router_error *err);

/* Takes `ir` out of the queue if it waits (the request ends: client
 * gone, HTTP/2 reset): counted cancelled. Idempotent. */
void rt_queue_leave(struct infer_request *ir);

/* Capacity freed in this process (an in-flight guard or a token given
 * back): a pass runs at the next loop turn instead of the next poll. */
void rt_queue_kick(void);

/* Whether `err` is an admission exhaustion (503 policy_selection_failed). */
bool rt_queue_err_waits(const struct router_error *err);

#endif
