/* queue_run.c — the router queue of one worker process (queue_run.h).
 *
 * Invariants: a waiting request is in `waiting` (the list the deadline scan
 * walks) and in the order (router/core/queue.h) unless a pass has popped
 * it; it holds a generation reference in ir->gen and no concurrency token;
 * the poll timer is linked while any request waits; a pass runs from the
 * timer callback only (never inside a request handler), and an entry it
 * popped is either dispatched, answered or put back before it returns.
 * The state-plane row of this process carries the per-class depth, so
 * router.queue_size bounds the queue over every process.
 */
#include "router/http/queue_run.h"

#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "router/core/generation.h"
#include "router/http/auth.h"
#include "router/http/infer.h"
#include "router/http/metrics.h"
#include "router/http/response.h"
#include "router/worker.h"
#include "statebus/include/statebus-queue.h"

static struct router_queue order;
static h2o_linklist_t waiting;
static bool ready;
static h2o_timeout_t poll_timeout;
static h2o_timeout_entry_t poll_timer;
static h2o_timeout_t kick_timeout;     /* zero delay: the next loop turn */
static h2o_timeout_entry_t kick_timer;
static uint64_t wakes_seen;    /* wake counter sum at the last pass */
static bool pass_due;          /* run a pass at the next tick whatever the sum */
static uint64_t next_deadline; /* earliest deadline of a waiting request */
static struct router_error recent; /* the process's last admission exhaustion */

static void on_poll(h2o_timeout_entry_t *t);

static void setup(void)
{
	if (ready)
		return;
	router_queue_init(&order);
	h2o_linklist_init_anchor(&waiting);
	h2o_timeout_init(rt_w.loop, &poll_timeout, RT_QUEUE_POLL_MS);
	poll_timer.cb = on_poll;
	h2o_timeout_init(rt_w.loop, &kick_timeout, 0);
	kick_timer.cb = on_poll;
	next_deadline = UINT64_MAX;
	ready = true;
}

static struct infer_request *ir_of(struct router_queue_entry *e)
{
	return H2O_STRUCT_FROM_MEMBER(struct infer_request, qw.e, e);
}

bool rt_queue_err_waits(const struct router_error *err)
{
	return err != NULL && err->status == 503 && err->code != NULL &&
	       strcmp(err->code, "policy_selection_failed") == 0;
}

/* ---- concurrency tokens ------------------------------------------------ */

static int64_t local_running; /* tokens held without a state plane */

bool rt_queue_token_take(const struct router_gen *g, struct infer_request *ir)
{
	int max = g->cfg.router.max_concurrent_requests;
	if (max < 0 || ir->qw.token)
		return true;
	if (rt_w.region == NULL) {
		if (local_running >= max)
			return false;
		local_running++;
		ir->qw.token = true;
		return true;
	}
	if (statebus_queue_running_take(rt_w.region, rt_w.proc_slot, max) != SY_OK)
		return false;
	ir->qw.token = true;
	return true;
}

/* Gives the token back without waking this process's queue (a pass that
 * could not use it). */
static void token_put_quiet(struct infer_request *ir)
{
	if (!ir->qw.token)
		return;
	ir->qw.token = false;
	if (rt_w.region != NULL)
		(void)statebus_queue_running_put(rt_w.region, rt_w.proc_slot);
	else if (local_running > 0)
		local_running--;
}

void rt_queue_token_put(struct infer_request *ir)
{
	if (!ir->qw.token)
		return;
	token_put_quiet(ir);
	rt_queue_kick();
}

bool rt_queue_busy(void) { return ready && order.n_queued > 0; }

/* ---- depth bookkeeping -------------------------------------------------- */

static void publish_depth(unsigned cls)
{
	if (rt_w.region != NULL)
		(void)statebus_queue_set_depth(rt_w.region, rt_w.proc_slot, cls,
					       router_queue_depth(&order, cls));
}

/* Requests waiting over every process (this one's own count when no state
 * plane is attached). */
static uint64_t depth_all(void)
{
	if (rt_w.region == NULL)
		return order.n_queued;
	return statebus_queue_depth_sum(rt_w.region);
}

static void outcome(struct infer_request *ir, enum statebus_queue_outcome o, uint64_t now)
{
	if (rt_w.region != NULL)
		(void)statebus_queue_count(rt_w.region, rt_w.proc_slot, o);
	uint64_t waited = ir->qw.t_enq_ns && now > ir->qw.t_enq_ns ? now - ir->qw.t_enq_ns : 0;
	rt_metrics_queue(rt_w.metrics, rt_w.index, ir->qw.e.cls, o, waited,
			 o == STATEBUS_QOUT_REJECTED_FULL);
}

/* ---- class and tenant ------------------------------------------------------ */

static size_t tenant_of(const struct router_gen *g, h2o_req_t *req, char *out, size_t cap)
{
	const char *h = g->cfg.router.tenant_header;
	if (h != NULL) {
		ssize_t i = h2o_find_header_by_str(&req->headers, h, strlen(h), -1);
		if (i >= 0 && req->headers.entries[i].value.len > 0) {
			h2o_iovec_t v = req->headers.entries[i].value;
			size_t n = v.len < cap - 1 ? v.len : cap - 1;
			memcpy(out, v.base, n);
			out[n] = '\0';
			return n;
		}
	}
	return rt_auth_identity(req, out, cap);
}

/* The value of "tenant=value" in `list` for `tenant`, or NULL. */
static const char *tenant_setting(char *const *list, size_t n, const char *tenant, size_t tlen,
				  size_t *vlen)
{
	for (size_t i = 0; i < n; i++) {
		size_t nl;
		const char *v;
		if (sy_tenant_entry_split(list[i], strlen(list[i]), &nl, &v, vlen) == SY_OK &&
		    nl == tlen && memcmp(list[i], tenant, tlen) == 0)
			return v;
	}
	return NULL;
}

static unsigned class_of(const struct router_gen *g, h2o_req_t *req, const char *tenant,
			 size_t tlen)
{
	const struct sy_config_router *rc = &g->cfg.router;
	int cls = SY_QCLASS_DEFAULT;
	ssize_t i = h2o_find_header_by_str(&req->headers, rc->priority_header,
					   strlen(rc->priority_header), -1);
	if (i >= 0) {
		h2o_iovec_t v = req->headers.entries[i].value;
		int c = sy_queue_class_parse(v.base, v.len);
		if (c >= 0)
			cls = c;
	}
	size_t vl;
	const char *v = tenant_setting(rc->tenant_priorities, rc->n_tenant_priorities, tenant,
				       tlen, &vl);
	int max = v != NULL ? sy_queue_class_parse(v, vl) : rc->tenant_max_priority;
	if (max >= 0 && cls < max)
		cls = max; /* lower number = higher class */
	return (unsigned)cls;
}

static unsigned weight_of(const struct router_gen *g, const char *tenant, size_t tlen)
{
	const struct sy_config_router *rc = &g->cfg.router;
	size_t vl;
	const char *v = tenant_setting(rc->tenant_weights, rc->n_tenant_weights, tenant, tlen, &vl);
	unsigned w = 0;
	for (size_t k = 0; v != NULL && k < vl; k++)
		w = w * 10 + (unsigned)(v[k] - '0');
	return w ? w : 1;
}

/* The wait of `ir` under `g` (ns): the configured timeout, shortened by
 * the request's header (ms). */
static uint64_t wait_limit_ns(const struct router_gen *g, h2o_req_t *req)
{
	const struct sy_config_router *rc = &g->cfg.router;
	uint64_t lim = (uint64_t)rc->queue_timeout_secs * 1000000000u;
	ssize_t i = h2o_find_header_by_str(&req->headers, rc->queue_timeout_header,
					   strlen(rc->queue_timeout_header), -1);
	if (i >= 0) {
		h2o_iovec_t v = req->headers.entries[i].value;
		uint64_t ms = 0;
		bool ok = v.len > 0 && v.len <= 12;
		for (size_t k = 0; ok && k < v.len; k++) {
			ok = v.base[k] >= '0' && v.base[k] <= '9';
			ms = ms * 10 + (uint64_t)(v.base[k] - '0');
		}
		if (ok && ms * 1000000u < lim)
			lim = ms * 1000000u;
	}
	return lim;
}

/* ---- leaving ------------------------------------------------------------ */

/* Out of the order and the list; the generation reference is handed to
 * the caller (returned). */
static struct router_gen *unqueue(struct infer_request *ir)
{
	struct rt_queue_wait *w = &ir->qw;
	unsigned cls = w->e.cls;
	router_queue_finish(&order, &w->e);
	if (h2o_linklist_is_linked(&w->all))
		h2o_linklist_unlink(&w->all);
	rt_client_watch_stop(&w->watch);
	w->waiting = false;
	rt_metrics_queue_depth(rt_w.metrics, rt_w.index, cls, w->tenant_label, -1);
	publish_depth(cls);
	struct router_gen *g = ir->gen;
	ir->gen = NULL;
	rt_w.active_requests--;
	return g;
}

/* 503 with Retry-After: the request's last admission exhaustion (or, for
 * one that queued behind others without a try of its own, the process's
 * latest), else the concurrency cap. */
static void answer_503(struct infer_request *ir, const struct router_error *last,
		       const char *why)
{
	h2o_req_t *req = ir->req;
	h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL,
		       H2O_STRLIT("1"));
	if (!rt_queue_err_waits(last) && !ir->qw.at_cap)
		last = &recent;
	if (rt_queue_err_waits(last)) {
		struct router_error e = *last;
		size_t n = strlen(e.message);
		snprintf(e.message + n, sizeof(e.message) - n, " (%s)", why);
		rt_send_error(req, ir->route, &e);
		return;
	}
	rt_send_errorf(req, ir->route, 503, "service_overloaded",
		       "the router's concurrency limit (%d requests) is reached (%s)",
		       ir->qw.cap, why);
}

void rt_queue_leave(struct infer_request *ir)
{
	if (!ir->qw.waiting)
		return;
	outcome(ir, STATEBUS_QOUT_CANCELLED, sy_mono_ns());
	router_gen_unref(unqueue(ir));
}

static void on_client_gone(struct rt_client_watch *cw)
{
	struct infer_request *ir = H2O_STRUCT_FROM_MEMBER(struct infer_request, qw.watch, cw);
	if (!ir->qw.waiting)
		return;
	outcome(ir, STATEBUS_QOUT_CANCELLED, sy_mono_ns());
	router_gen_unref(unqueue(ir));
	rt_send_errorf(ir->req, ir->route, 499, "client_closed_request",
		       "the client closed the connection while its request waited");
}

static void expire(uint64_t now)
{
	next_deadline = UINT64_MAX;
	h2o_linklist_t *n = waiting.next;
	while (n != &waiting) {
		struct infer_request *ir = H2O_STRUCT_FROM_MEMBER(struct infer_request, qw.all, n);
		n = n->next;
		if (ir->qw.deadline_ns > now) {
			if (ir->qw.deadline_ns < next_deadline)
				next_deadline = ir->qw.deadline_ns;
			continue;
		}
		outcome(ir, STATEBUS_QOUT_TIMED_OUT, now);
		struct router_gen *g = unqueue(ir);
		char why[64];
		snprintf(why, sizeof(why), "waited %llu ms in the router queue",
			 (unsigned long long)((now - ir->qw.t_enq_ns) / 1000000u));
		answer_503(ir, ir->qw.last, why);
		router_gen_unref(g);
	}
}

/* ---- passes --------------------------------------------------------------- */

enum try_result { TRY_GONE, TRY_MISS };

/* One popped request: token, picks, dispatch. TRY_GONE: it left the
 * queue (dispatched or answered); TRY_MISS: it stays. */
static enum try_result try_one(struct infer_request *ir, uint64_t now)
{
	struct router_gen *g = ir->gen;
	if (!rt_queue_token_take(g, ir))
		return TRY_MISS;
	struct router_error err;
	struct selection sel;
	if (rt_infer_select(g, ir, NULL, now, &sel, &err) != 0 ||
	    !rt_infer_reserve(ir, &sel, now, &err)) {
		if (rt_queue_err_waits(&err)) {
			*ir->qw.last = err;
			recent = err;
			token_put_quiet(ir);
			return TRY_MISS;
		}
		g = unqueue(ir); /* selection fails otherwise now: that answer */
		rt_metrics_selection_failure(rt_w.metrics, rt_w.index, err.code);
		rt_send_error(ir->req, ir->route, &err);
		router_gen_unref(g);
		return TRY_GONE;
	}
	outcome(ir, STATEBUS_QOUT_ADMITTED, now);
	g = unqueue(ir);
	(void)rt_infer_dispatch(g, ir, &sel, sy_mono_ns());
	router_gen_unref(g);
	return TRY_GONE;
}

/* What a request competes for: its model and its resolved buckets. Two
 * requests with the same key see the same admission answer in one pass. */
static uint64_t compete_key(const struct infer_request *ir)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < ir->pr.model.len; i++)
		h = (h ^ (unsigned char)ir->pr.model.ptr[i]) * 1099511628211ull;
	for (size_t i = 0; i < ir->n_order; i++)
		h = (h ^ (uint64_t)(uintptr_t)ir->order[i]) * 1099511628211ull;
	return h;
}

/* Pops up to RT_QUEUE_SCAN requests in order and tries each, except one
 * whose key already missed in this pass (it would miss too: it keeps its
 * place untried); stops after RT_QUEUE_MISSES distinct keys missed. So a
 * saturated model does not hold up the requests of another behind it. */
static void run_pass(uint64_t now)
{
	struct router_queue_entry *back[RT_QUEUE_SCAN];
	uint64_t missed[RT_QUEUE_MISSES];
	unsigned n_back = 0, n_missed = 0;
	while (n_missed < RT_QUEUE_MISSES && n_back < RT_QUEUE_SCAN) {
		struct router_queue_entry *e = router_queue_pop(&order);
		if (e == NULL)
			break;
		struct infer_request *ir = ir_of(e);
		uint64_t key = compete_key(ir);
		bool same = false;
		for (unsigned k = 0; k < n_missed && !same; k++)
			same = missed[k] == key;
		if (same) {
			back[n_back++] = e;
			continue;
		}
		if (try_one(ir, now) == TRY_MISS) {
			back[n_back++] = e;
			missed[n_missed++] = key;
		}
	}
	while (n_back > 0)
		router_queue_unpop(&order, back[--n_back]);
}

static void arm(void)
{
	if (!h2o_timeout_is_linked(&poll_timer) && !h2o_linklist_is_empty(&waiting))
		h2o_timeout_link(rt_w.loop, &poll_timeout, &poll_timer);
}

static void on_poll(h2o_timeout_entry_t *t)
{
	if (t == &kick_timer && h2o_timeout_is_linked(&poll_timer))
		h2o_timeout_unlink(&poll_timer); /* the pass runs now */
	else if (t == &poll_timer && h2o_timeout_is_linked(&kick_timer))
		h2o_timeout_unlink(&kick_timer);
	uint64_t now = sy_mono_ns();
	if (now >= next_deadline)
		expire(now);
	uint64_t wakes = rt_w.region != NULL ? statebus_queue_wakes(rt_w.region) : 0;
	if (pass_due || wakes != wakes_seen || rt_w.region == NULL) {
		pass_due = false;
		wakes_seen = wakes;
		run_pass(now);
	}
	arm();
}

void rt_queue_kick(void)
{
	if (!ready || order.n_queued == 0)
		return;
	pass_due = true;
	if (!h2o_timeout_is_linked(&kick_timer))
		h2o_timeout_link(rt_w.loop, &kick_timeout, &kick_timer);
}

/* ---- entering -------------------------------------------------------------- */

bool rt_queue_wait(struct router_gen *g, struct infer_request *ir, const struct router_error *err)
{
	const struct sy_config_router *rc = &g->cfg.router;
	if (rc->queue_size <= 0 || (err != NULL && !rt_queue_err_waits(err)))
		return false;
	setup();
	struct rt_queue_wait *w = &ir->qw;
	h2o_req_t *req = ir->req;
	uint64_t now = sy_mono_ns();
	token_put_quiet(ir);
	char tenant[SY_TENANT_MAX + 1];
	size_t tlen = tenant_of(g, req, tenant, sizeof(tenant));
	unsigned cls = class_of(g, req, tenant, tlen);
	if (w->last == NULL)
		w->last = h2o_mem_alloc_pool(&req->pool, sizeof(*w->last));
	if (err != NULL) {
		*w->last = *err;
		recent = *err;
	} else {
		router_error_clear(w->last);
	}
	w->cap = rc->max_concurrent_requests;
	w->at_cap = err == NULL && rc->max_concurrent_requests >= 0 && !rt_queue_busy();
	w->e.cls = (uint8_t)cls;
	if (depth_all() >= (uint64_t)rc->queue_size) {
		outcome(ir, STATEBUS_QOUT_REJECTED_FULL, now);
		char why[64];
		snprintf(why, sizeof(why), "the router queue is full (%d waiting)", rc->queue_size);
		answer_503(ir, w->last, why);
		return true;
	}
	router_queue_push(&order, &w->e, cls, tenant, tlen, weight_of(g, tenant, tlen));
	w->tenant_label = rt_metrics_queue_tenant_label(rt_w.metrics, tenant);
	rt_metrics_queue_depth(rt_w.metrics, rt_w.index, cls, w->tenant_label, +1);
	w->t_enq_ns = now;
	w->deadline_ns = now + wait_limit_ns(g, req);
	if (w->deadline_ns < next_deadline)
		next_deadline = w->deadline_ns;
	h2o_linklist_insert(&waiting, &w->all);
	w->waiting = true;
	ir->gen = router_gen_ref(g);
	rt_w.active_requests++;
	rt_client_watch_start(&w->watch, rt_w.loop, req, on_client_gone);
	publish_depth(cls);
	if (err == NULL)
		pass_due = true; /* queued behind others or at the cap: try at the next tick */
	arm();
	return true;
}
