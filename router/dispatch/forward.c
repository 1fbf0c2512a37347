/* forward.c — the upstream path of a selection (see forward.h), over an
 * exchange of the upstream client (router/upstream/client.h).
 *
 * One struct fwd per client request, allocated in the request's pool with a
 * dispose callback (h2o_mem_alloc_shared): whatever ends the request —
 * completion, error, client cancel — h2o clears the pool and fwd_dispose()
 * releases the upstream exchange, the timer, the in-flight guards and the
 * generation reference, in one place.
 *
 * Response body flow (one send in flight, as h2o requires):
 *   on_body: data accumulates in the exchange's body buffer; if nothing is
 *            being sent, swap that buffer out (`sending`) and h2o_send it.
 *   proceed: the send completed; empty `sending`, keep it as the spare;
 *            if more arrived meanwhile, swap and send again.
 *   end:     at end of stream the remaining bytes are detached (`tail`) and
 *            sent with FINAL (ERROR if the upstream body broke off).
 * The response is started (h2o_start_response) with the first bytes or the
 * end, not with the upstream head: a body that breaks off before its first
 * byte still gets a proper error (502 upstream_body_incomplete).
 */
#include "router/http/response.h"
#include "router/http/access_log.h"
#include "router/dispatch/forward.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "router/core/buf.h"
#include "router/dispatch/stall.h"
#include "router/http/metrics.h"
#include "router/upstream/client.h"
#include "router/upstream/pool.h"

/* Largest upstream response head passed on (bytes, names + values). */
#define RT_MAX_UPSTREAM_HEAD_BYTES 65536

struct fwd {
	h2o_req_t *req;             /* NULL once disposed */
	struct router_gen *gen;         /* reference */
	enum route route;
	struct infer_request *ir;
	struct selection sel;
	uint64_t t_selected;        /* selection's end: first attempt's dispatch stamp */
	struct worker_exclude ex;
	h2o_iovec_t body;
	h2o_iovec_t head;           /* request head (pool) */
	struct rt_upstream *up;
	struct rt_exchange ux;      /* the upstream exchange (its head timer: --request-timeout-secs) */
	h2o_timeout_entry_t idle_timer;
	h2o_generator_t generator;  /* first member used by h2o: must stay first of its own */
	h2o_buffer_t *sending;      /* swapped-out data h2o is sending */
	h2o_buffer_t *tail;         /* detached input at end of stream */
	uint32_t guard_slot;        /* main target's in-flight guard */
	bool guard_held;
	bool stall_held;            /* counted by stall detection (a streamed
				       request's exchange runs: stall.h) */
	bool started;               /* the upstream head arrived */
	bool res_started;           /* h2o_start_response was called */
	bool send_in_flight;
	bool eos;                   /* upstream finished (or was cut) */
	bool body_error;            /* upstream body broke off */
	bool idle_timed_out;
	bool final_sent;
	bool streaming;             /* text/event-stream */
	bool ttft_done;
	int status;                 /* upstream status */
	unsigned attempts;
	uint64_t t_start, t_dispatch, t_connect_start;
	uint64_t bytes_out;
};

/* Detached PD prefill request: malloc'd, lives until its upstream ends. */
struct prefill {
	struct rt_exchange ux;
	h2o_timeout_entry_t timer;
	char *mem;                  /* request head + body */
	struct selected_worker w;   /* the prefill worker (copy) */
	int cb_threshold;
	int status;
};

static void fwd_connect(struct fwd *f);

static struct fwd *fwd_of_generator(h2o_generator_t *g)
{
	return (struct fwd *)((char *)g - offsetof(struct fwd, generator));
}

/* ---- guards ------------------------------------------------------------ */

static void guard_release(struct fwd *f)
{
	if (!f->guard_held)
		return;
	f->guard_held = false;
	if (rt_w.region)
		statebus_inflight_release(rt_w.region, rt_w.proc_slot, f->guard_slot);
}

static void guard_acquire(struct fwd *f, uint32_t slot, uint64_t now_ns)
{
	guard_release(f);
	if (rt_w.region &&
	    statebus_inflight_acquire(rt_w.region, rt_w.proc_slot, slot, now_ns) == SY_OK) {
		f->guard_slot = slot;
		f->guard_held = true;
	}
}

/* Stall detection counts a streamed request while its exchange runs. */
static void stall_begin(struct fwd *f, uint64_t now_ns)
{
	if (f->stall_held || !f->ir->pr.stream)
		return;
	f->stall_held = true;
	rt_stall_begin(f->sel.worker.slot, f->sel.worker.generation, now_ns);
}

static void stall_end(struct fwd *f)
{
	if (!f->stall_held)
		return;
	f->stall_held = false;
	rt_stall_end(f->sel.worker.slot);
}

/* ---- request head -------------------------------------------------------- */

/* Hop-by-hop and router-owned request headers. h2o names the known ones
 * with tokens (compared by address); other names go through the list. */
static bool drop_request_header(const h2o_iovec_t *name)
{
	static const h2o_iovec_t drop[] = {
		{H2O_STRLIT("host")},		 {H2O_STRLIT("content-length")},
		{H2O_STRLIT("transfer-encoding")}, {H2O_STRLIT("connection")},
		{H2O_STRLIT("keep-alive")},	 {H2O_STRLIT("te")},
		{H2O_STRLIT("upgrade")},	 {H2O_STRLIT("expect")},
		{H2O_STRLIT("proxy-connection")},  {H2O_STRLIT("http2-settings")},
		{H2O_STRLIT("trailer")},	 {H2O_STRLIT("x-sgl-decode-url")}};
	if (h2o_iovec_is_token(name)) {
		const h2o_token_t *t = (const h2o_token_t *)name;
		if (t == H2O_TOKEN_HOST || t == H2O_TOKEN_CONTENT_LENGTH ||
		    t == H2O_TOKEN_TRANSFER_ENCODING || t == H2O_TOKEN_CONNECTION ||
		    t == H2O_TOKEN_KEEP_ALIVE || t == H2O_TOKEN_TE || t == H2O_TOKEN_UPGRADE ||
		    t == H2O_TOKEN_EXPECT || t == H2O_TOKEN_HTTP2_SETTINGS)
			return true;
	}
	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
		if (h2o_lcstris(name->base, name->len, drop[i].base, drop[i].len))
			return true;
	return false;
}

static char *put(char *w, const char *p, size_t n)
{
	memcpy(w, p, n);
	return w + n;
}

/* Builds "POST <prefix><path> HTTP/1.1" + headers into the pool. */
static h2o_iovec_t build_head(h2o_req_t *req, h2o_mem_pool_t *pool, const struct rt_upstream *up,
			      h2o_iovec_t path, size_t body_len, const char *decode_url)
{
	size_t cap = 256 + up->prefix.len + path.len + up->authority.len +
		     (decode_url ? strlen(decode_url) + 32 : 0);
	if (req != NULL)
		for (size_t i = 0; i < req->headers.size; i++)
			cap += req->headers.entries[i].name->len + req->headers.entries[i].value.len + 4;
	char *p = h2o_mem_alloc_pool(pool, cap), *w = p;
	w = put(w, H2O_STRLIT("POST "));
	w = put(w, up->prefix.base, up->prefix.len);
	w = put(w, path.base, path.len);
	w = put(w, H2O_STRLIT(" HTTP/1.1\r\nhost: "));
	w = put(w, up->authority.base, up->authority.len);
	w = put(w, H2O_STRLIT("\r\ncontent-length: "));
	w = rt_put_dec(w, body_len);
	w = put(w, H2O_STRLIT("\r\n"));
	bool ctype = false;
	if (req != NULL)
		for (size_t i = 0; i < req->headers.size; i++) {
			const h2o_header_t *h = &req->headers.entries[i];
			if (drop_request_header(h->name))
				continue;
			if (h->name == &H2O_TOKEN_CONTENT_TYPE->buf ||
			    h2o_lcstris(h->name->base, h->name->len, H2O_STRLIT("content-type")))
				ctype = true;
			memcpy(w, h->name->base, h->name->len);
			w += h->name->len;
			*w++ = ':';
			*w++ = ' ';
			memcpy(w, h->value.base, h->value.len);
			w += h->value.len;
			*w++ = '\r';
			*w++ = '\n';
		}
	if (!ctype)
		w = put(w, H2O_STRLIT("content-type: application/json\r\n"));
	if (decode_url) {
		w = put(w, H2O_STRLIT("x-sgl-decode-url: "));
		w = put(w, decode_url, strlen(decode_url));
		w = put(w, H2O_STRLIT("\r\n"));
	}
	*w++ = '\r';
	*w++ = '\n';
	return h2o_iovec_init(p, (size_t)(w - p));
}

static h2o_iovec_t route_path(enum route r)
{
	switch (r) {
	case ROUTE_COMPLETIONS: return h2o_iovec_init(H2O_STRLIT("/v1/completions"));
	case ROUTE_GENERATE: return h2o_iovec_init(H2O_STRLIT("/generate"));
	default: return h2o_iovec_init(H2O_STRLIT("/v1/chat/completions"));
	}
}

/* ---- health and breakers ------------------------------------------------- */

/* Feeds the attempt's result to the worker's breaker in the region (shared
 * by every router process); the attempt's probe, if it carried one, is
 * thereby answered. */
static void breaker_report_w(struct selected_worker *w, int threshold, enum statebus_cb_result r)
{
	w->cb_probe = false;
	if (rt_w.region)
		statebus_breaker_report(rt_w.region, w->slot, w->generation, (uint32_t)threshold, r,
					sy_mono_ns());
}

static void breaker_report(struct fwd *f, enum statebus_cb_result r)
{
	breaker_report_w(&f->sel.worker, f->gen->cfg.router.cb_threshold, r);
}

/* A probe the attempt carries but will not answer (cancelled, moved on). */
static void breaker_release(struct selected_worker *w)
{
	if (w->cb_probe && rt_w.region)
		statebus_breaker_release_probe(rt_w.region, w->slot, w->generation, w->cb_probe_ns);
	w->cb_probe = false;
}

/* Passive health: a connect failure, a close before the first response
 * byte or a head timeout marks the worker down in the region at once, so
 * every router process leaves it out until an active probe passes. */
static void passive_down(const struct selected_worker *w, const char *err)
{
	enum statebus_down_reason why = err == rt_exchange_connect_failed ? STATEBUS_DOWN_CONNECT
					: err == rt_exchange_closed	  ? STATEBUS_DOWN_RESET
					: err == rt_exchange_timed_out	  ? STATEBUS_DOWN_TIMEOUT
									  : STATEBUS_DOWN_NONE;
	if (why == STATEBUS_DOWN_NONE || rt_w.region == NULL)
		return;
	if (statebus_health_mark_down(rt_w.region, w->slot, w->generation, why, sy_mono_ns()))
		sy_warn("worker %s marked down (%s): left out of selection until a health probe passes",
			w->id, err);
}

/* ---- PD prefill (detached) ------------------------------------------------ */

static void prefill_done(struct prefill *p, const char *err)
{
	rt_exchange_dispose(&p->ux);
	if (h2o_timeout_is_linked(&p->timer))
		h2o_timeout_unlink(&p->timer);
	if (rt_w.region)
		statebus_inflight_release(rt_w.region, rt_w.proc_slot, p->w.slot);
	if (err != NULL) {
		sy_warn("PD prefill at %s failed: %s (decode will time out on the room)", p->w.id, err);
		passive_down(&p->w, err);
		breaker_report_w(&p->w, p->cb_threshold, STATEBUS_CB_FAILURE);
		rt_metrics_worker(rt_w.metrics, rt_w.index, p->w.slot, RT_OUT_ERROR);
	} else {
		breaker_report_w(&p->w, p->cb_threshold,
				 p->status == 429 || p->status == 503 ? STATEBUS_CB_BACKPRESSURE
				 : p->status >= 500		      ? STATEBUS_CB_FAILURE
								      : STATEBUS_CB_SUCCESS);
		rt_metrics_worker(rt_w.metrics, rt_w.index, p->w.slot, rt_outcome_of_status(p->status));
		if (p->status >= 400)
			sy_warn("PD prefill at %s answered %d", p->w.id, p->status);
	}
	rt_w.active_requests--;
	free(p->mem);
	free(p);
}

static void prefill_on_timeout(h2o_timeout_entry_t *e)
{
	struct prefill *p = (struct prefill *)((char *)e - offsetof(struct prefill, timer));
	prefill_done(p, "timeout");
}

static void prefill_on_connect(struct rt_exchange *x, const char *err)
{
	if (err != NULL)
		prefill_done(x->data, err);
}

static void prefill_on_head(struct rt_exchange *x, const char *err, int status,
			    const h2o_header_t *headers, size_t n, bool eos)
{
	(void)headers, (void)n;
	struct prefill *p = x->data;
	p->status = status;
	if (err == NULL)
		rt_stall_byte(p->w.slot, p->w.generation, sy_mono_ns());
	if (err != NULL || eos)
		prefill_done(p, err);
}

static void prefill_on_body(struct rt_exchange *x, const char *err)
{
	struct prefill *p = x->data;
	if (x->body->size > 0)
		rt_stall_byte(p->w.slot, p->w.generation, sy_mono_ns());
	h2o_buffer_consume(&x->body, x->body->size);
	if (err != NULL)
		prefill_done(p, err == rt_exchange_eos ? NULL : err);
}

static const struct rt_exchange_cb prefill_cb = {prefill_on_connect, prefill_on_head, prefill_on_body};

static void prefill_start(struct fwd *f, h2o_iovec_t head_in_pool)
{
	const char *why = NULL;
	struct rt_upstream *up =
		rt_upstream_get(rt_w.upstreams, f->sel.prefill.slot, f->sel.prefill.id, &why);
	struct prefill *p = calloc(1, sizeof(*p));
	if (up == NULL || p == NULL) {
		sy_warn("PD prefill at %s not sent: %s", f->sel.prefill.id, why ? why : "out of memory");
		free(p);
		return;
	}
	/* The prefill outlives the client request: own copies. */
	p->mem = malloc(head_in_pool.len + f->body.len);
	if (p->mem == NULL) {
		free(p);
		return;
	}
	memcpy(p->mem, head_in_pool.base, head_in_pool.len);
	memcpy(p->mem + head_in_pool.len, f->body.base, f->body.len);
	p->w = f->sel.prefill;
	f->sel.prefill.cb_probe = false; /* the prefill answers it now */
	p->cb_threshold = f->gen->cfg.router.cb_threshold;
	if (rt_w.region)
		statebus_inflight_acquire(rt_w.region, rt_w.proc_slot, p->w.slot, sy_mono_ns());
	rt_w.active_requests++;
	p->timer.cb = prefill_on_timeout;
	h2o_timeout_link(rt_w.loop, &rt_w.prefill_timeout, &p->timer);
	rt_exchange_init(&p->ux, &prefill_cb, p);
	rt_exchange_start(&p->ux, up, h2o_iovec_init(p->mem, head_in_pool.len),
			  h2o_iovec_init(p->mem + head_in_pool.len, f->body.len), NULL);
}

/* ---- response to the client ---------------------------------------------- */

/* Values borrowed from f->sel (the generation, which the forward keeps referenced). */
static void add_header_str(h2o_req_t *req, const char *name, size_t name_len, const char *value)
{
	h2o_add_header_by_str(&req->pool, &req->res.headers, name, name_len, 0, NULL, value,
			      strlen(value));
}

static void decision_headers(struct fwd *f)
{
	h2o_req_t *req = f->req;
	if (f->sel.pd)
		add_header_str(req, H2O_STRLIT("x-sgl-decode-url"), f->sel.worker.id);
	if (f->gen->cfg.router.no_decision_headers)
		return;
	add_header_str(req, H2O_STRLIT("x-switchyard-worker"), f->sel.worker.id);
	if (f->sel.bucket_id != NULL && f->sel.bucket_id[0])
		add_header_str(req, H2O_STRLIT("x-switchyard-bucket"), f->sel.bucket_id);
	if (f->sel.reason != NULL && f->sel.reason[0])
		add_header_str(req, H2O_STRLIT("x-switchyard-reason"), f->sel.reason);
	if (f->sel.pd)
		add_header_str(req, H2O_STRLIT("x-switchyard-prefill-worker"), f->sel.prefill.id);
}

/* The upstream body broke off before its first byte: the prepared response
 * is dropped and an error sent instead (nothing has reached the client).
 * A stream idle timeout keeps cutting the started response instead. */
static void fail_before_body(struct fwd *f)
{
	h2o_req_t *req = f->req;
	f->final_sent = true;
	f->status = 502;
	req->res.headers = (h2o_headers_t){NULL, 0, 0};
	req->res.content_length = SIZE_MAX;
	rt_send_errorf(req, f->route, 502, "upstream_body_incomplete", "the worker's response broke off before its body");
}

static void do_send(struct fwd *f)
{
	if (f->req == NULL || f->send_in_flight || f->final_sent)
		return;
	h2o_iovec_t iov = {NULL, 0};
	h2o_send_state_t st = H2O_SEND_STATE_IN_PROGRESS;
	if (f->ux.active) {
		h2o_buffer_t **in = &f->ux.body;
		if ((*in)->size == 0)
			return;
		h2o_buffer_t *t = f->sending;
		f->sending = *in;
		*in = t;
		iov = h2o_iovec_init(f->sending->bytes, f->sending->size);
	} else if (f->eos) {
		if (f->tail != NULL && f->tail->size != 0) {
			h2o_buffer_t *t = f->sending;
			f->sending = f->tail;
			f->tail = t;
			iov = h2o_iovec_init(f->sending->bytes, f->sending->size);
		}
		if (f->body_error && !f->res_started && iov.len == 0 && !f->idle_timed_out) {
			fail_before_body(f);
			return;
		}
		st = f->body_error ? H2O_SEND_STATE_ERROR : H2O_SEND_STATE_FINAL;
		f->final_sent = true;
	} else {
		return;
	}
	if (!f->res_started) {
		f->res_started = true;
		rt_metrics_response(rt_w.metrics, rt_w.index, f->route, f->status);
		h2o_start_response(f->req, &f->generator);
	}
	f->send_in_flight = true;
	f->bytes_out += iov.len;
	h2o_send(f->req, &iov, iov.len ? 1 : 0, st);
}

static void on_proceed(h2o_generator_t *g, h2o_req_t *req)
{
	(void)req;
	struct fwd *f = fwd_of_generator(g);
	f->send_in_flight = false;
	if (f->sending)
		h2o_buffer_consume(&f->sending, f->sending->size);
	do_send(f);
}

static void on_stop(h2o_generator_t *g, h2o_req_t *req)
{
	(void)req;
	struct fwd *f = fwd_of_generator(g);
	/* The client went away mid-response: abort the upstream (the pool
	 * dispose that follows releases the rest). */
	rt_exchange_cancel(&f->ux);
	if (!f->final_sent && f->streaming)
		rt_metrics_stream(rt_w.metrics, rt_w.index, RT_STREAM_CLIENT_CANCEL);
	f->final_sent = true;
}

/* ---- upstream callbacks -------------------------------------------------- */

static void record_worker_outcome(struct fwd *f, enum rt_outcome o)
{
	rt_metrics_worker(rt_w.metrics, rt_w.index, f->sel.worker.slot, o);
}

/* Re-dispatches to another worker when --retry-once allows it (plain only,
 * first failure, nothing sent to the client yet). Returns true when a new
 * attempt is under way. */
static bool try_retry(struct fwd *f, const char *msg)
{
	if (!f->gen->cfg.router.retry_once || f->sel.pd || f->attempts >= 2 || f->req == NULL ||
	    f->ex.n >= sizeof(f->ex.slots) / sizeof(f->ex.slots[0]))
		return false;
	struct selection next;
	struct router_error err;
	f->ex.slots[f->ex.n++] = f->sel.worker.slot;
	if (rt_infer_select(f->gen, f->ir, &f->ex, 0, &next, &err) != 0 || next.pd)
		return false;
	sy_info("retrying on another worker after: %s", msg);
	rt_metrics_retry(rt_w.metrics, rt_w.index);
	guard_release(f);
	stall_end(f);
	rt_exchange_cancel(&f->ux);
	breaker_release(&f->sel.worker);
	f->sel = next;
	fwd_connect(f);
	return true;
}

/* A failure before anything reached the client: retry once elsewhere when
 * allowed, else answer with the error. */
static void fail_before_head(struct fwd *f, int status, const char *code, const char *msg,
			     bool report)
{
	stall_end(f);
	if (report)
		breaker_report(f, STATEBUS_CB_FAILURE);
	record_worker_outcome(f, RT_OUT_ERROR);
	if (f->req == NULL || try_retry(f, msg))
		return;
	guard_release(f);
	rt_send_errorf(f->req, f->route, status, code, "%s", msg);
}

/* The exchange failed before a response head: 504 when its head timeout
 * expired, else 502. */
static void fail_exchange(struct fwd *f, const char *err)
{
	passive_down(&f->sel.worker, err);
	if (err == rt_exchange_timed_out)
		fail_before_head(f, 504, "upstream_timeout",
				 "the worker did not answer within --request-timeout-secs", true);
	else
		fail_before_head(f, 502, "upstream_unreachable", err, true);
}

static void on_idle_timeout(h2o_timeout_entry_t *e)
{
	struct fwd *f = (struct fwd *)((char *)e - offsetof(struct fwd, idle_timer));
	rt_exchange_cancel(&f->ux);
	stall_end(f);
	sy_warn("stream idle timeout at %s", f->sel.worker.id);
	f->idle_timed_out = true;
	f->eos = true;
	f->body_error = true;
	/* bytes read but not yet sent still go out before the cut */
	h2o_buffer_t **b = &f->ux.body, *t = f->tail;
	f->tail = *b;
	*b = t;
	breaker_report(f, STATEBUS_CB_FAILURE);
	if (f->streaming)
		rt_metrics_stream(rt_w.metrics, rt_w.index, RT_STREAM_IDLE_TIMEOUT);
	do_send(f);
}

static void arm_idle(struct fwd *f)
{
	if (h2o_timeout_is_linked(&f->idle_timer))
		h2o_timeout_unlink(&f->idle_timer);
	h2o_timeout_link(rt_w.loop, &rt_w.idle_timeout, &f->idle_timer);
}

static void on_body(struct rt_exchange *x, const char *err)
{
	struct fwd *f = x->data;
	if (x->body->size > 0)
		rt_stall_byte(f->sel.worker.slot, f->sel.worker.generation, sy_mono_ns());
	if (err != NULL)
		stall_end(f);
	if (!f->ttft_done && x->body->size > 0) {
		f->ttft_done = true;
		rt_metrics_ttft(rt_w.metrics, rt_w.index, sy_mono_ns() - f->t_start);
	}
	if (err != NULL) {
		/* The exchange ended: detach what is left. */
		if (h2o_timeout_is_linked(&f->idle_timer))
			h2o_timeout_unlink(&f->idle_timer);
		h2o_buffer_t **b = &x->body, *t = f->tail;
		f->tail = *b;
		*b = t;
		f->eos = true;
		if (err != rt_exchange_eos) {
			f->body_error = true;
			sy_warn("upstream body from %s broke off: %s", f->sel.worker.id, err);
			record_worker_outcome(f, RT_OUT_ERROR);
			if (f->streaming)
				rt_metrics_stream(rt_w.metrics, rt_w.index, RT_STREAM_UPSTREAM_ERROR);
		} else {
			record_worker_outcome(f, rt_outcome_of_status(f->status));
			if (f->streaming)
				rt_metrics_stream(rt_w.metrics, rt_w.index, RT_STREAM_COMPLETE);
		}
	} else {
		arm_idle(f);
	}
	do_send(f);
}

/* True for response headers that are not passed on to the client. */
static bool drop_response_header(const h2o_iovec_t *name)
{
	if (h2o_iovec_is_token(name)) {
		const h2o_token_t *tok = (const h2o_token_t *)name;
		return tok->proxy_should_drop_for_res || tok == H2O_TOKEN_SERVER ||
		       tok == H2O_TOKEN_DATE || tok == H2O_TOKEN_CONTENT_LENGTH;
	}
	return h2o_lcstris(name->base, name->len, H2O_STRLIT("x-request-id")) ||
	       h2o_lcstris(name->base, name->len, H2O_STRLIT("keep-alive")) ||
	       (name->len > 13 && h2o_lcstris(name->base, 13, H2O_STRLIT("x-switchyard-")));
}

static void on_head(struct rt_exchange *x, const char *err, int status, const h2o_header_t *headers,
		    size_t num_headers, bool eos)
{
	struct fwd *f = x->data;
	if (err != NULL) {
		fail_exchange(f, err);
		return;
	}
	/* Response headers bigger than any engine sends (h2o's client takes
	 * up to ~400 KiB) are not passed on to the client. */
	size_t head_bytes = 0;
	for (size_t i = 0; i < num_headers; i++)
		head_bytes += headers[i].name->len + headers[i].value.len + 4;
	if (head_bytes > RT_MAX_UPSTREAM_HEAD_BYTES) {
		if (!eos)
			rt_exchange_cancel(&f->ux); /* drop the exchange and its socket */
		fail_before_head(f, 502, "upstream_unreachable",
				 "the worker's response headers are too large", true);
		return;
	}
	uint64_t now = sy_mono_ns();
	rt_stall_byte(f->sel.worker.slot, f->sel.worker.generation, now);
	if (eos)
		stall_end(f);
	rt_metrics_phase(rt_w.metrics, rt_w.index, RT_PHASE_TTFB, now - f->t_dispatch);
	f->status = status;
	if (status == 429 || status == 503)
		breaker_report(f, STATEBUS_CB_BACKPRESSURE);
	else if (status >= 500)
		breaker_report(f, STATEBUS_CB_FAILURE);
	else
		breaker_report(f, STATEBUS_CB_SUCCESS);
	/* A 5xx (except backpressure) goes to another worker when allowed —
	 * nothing has reached the client yet. Otherwise it is passed on. */
	if (status >= 500 && status != 503 && f->gen->cfg.router.retry_once) {
		char m[64];
		snprintf(m, sizeof(m), "the worker answered %d", status);
		uint32_t before = f->sel.worker.slot;
		if (try_retry(f, m)) {
			rt_metrics_worker(rt_w.metrics, rt_w.index, before, RT_OUT_ERROR);
			return;
		}
	}
	h2o_req_t *req = f->req;
	req->res.status = status;
	req->res.reason = rt_reason(status);
	/* Names and values live in the exchange's input only during this
	 * call: copy them into the request pool (one block for all values). */
	size_t total = 0;
	for (size_t i = 0; i < num_headers; i++)
		total += headers[i].value.len;
	char *vals = h2o_mem_alloc_pool(&req->pool, total + 1), *w = vals;
	for (size_t i = 0; i < num_headers; i++) {
		const h2o_iovec_t *name = headers[i].name;
		if (drop_response_header(name)) {
			if (name == &H2O_TOKEN_CONTENT_LENGTH->buf) {
				size_t cl = h2o_strtosize(headers[i].value.base, headers[i].value.len);
				if (cl != SIZE_MAX)
					req->res.content_length = cl;
			}
			continue;
		}
		memcpy(w, headers[i].value.base, headers[i].value.len);
		h2o_iovec_t v = h2o_iovec_init(w, headers[i].value.len);
		w += v.len;
		if (h2o_iovec_is_token(name)) {
			const h2o_token_t *tok = (const h2o_token_t *)name;
			if (tok == H2O_TOKEN_CONTENT_TYPE &&
			    h2o_memis(v.base, v.len < 17 ? v.len : 17, H2O_STRLIT("text/event-stream")))
				f->streaming = true;
			h2o_add_header(&req->pool, &req->res.headers, tok, NULL, v.base, v.len);
		} else {
			h2o_iovec_t n = h2o_strdup(&req->pool, name->base, name->len);
			h2o_add_header_by_str(&req->pool, &req->res.headers, n.base, n.len, 0, NULL, v.base,
					      v.len);
		}
	}
	h2o_iovec_t id = rt_request_id(req);
	h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-request-id"), 0, NULL,
			      id.base, id.len);
	decision_headers(f);
	f->started = true;
	f->generator.proceed = on_proceed;
	f->generator.stop = on_stop;
	if (eos) {
		f->eos = true;
		record_worker_outcome(f, rt_outcome_of_status(status));
		do_send(f);
		return;
	}
	arm_idle(f);
}

static void on_connect(struct rt_exchange *x, const char *err)
{
	struct fwd *f = x->data;
	rt_metrics_phase(rt_w.metrics, rt_w.index, RT_PHASE_CONNECT, sy_mono_ns() - f->t_connect_start);
	if (err != NULL)
		fail_exchange(f, err);
}

static const struct rt_exchange_cb fwd_cb = {on_connect, on_head, on_body};

/* Starts (or restarts, for a retry) the attempt at f->sel.worker. */
static void fwd_connect(struct fwd *f)
{
	const char *why = NULL;
	f->attempts++;
	/* The selection's end stamp serves the first attempt; a retry reads
	 * the clock. */
	uint64_t now = f->t_selected ? f->t_selected : sy_mono_ns();
	f->t_selected = 0;
	f->up = rt_upstream_get(rt_w.upstreams, f->sel.worker.slot, f->sel.worker.id, &why);
	if (f->up == NULL) {
		guard_release(f);
		rt_send_errorf(f->req, f->route, 502, "upstream_unreachable", "%s", why);
		return;
	}
	guard_acquire(f, f->sel.worker.slot, now);
	stall_begin(f, now);
	f->head = build_head(f->req, &f->req->pool, f->up, route_path(f->route), f->body.len,
			     f->sel.pd ? f->sel.worker.id : NULL);
	f->t_dispatch = f->t_connect_start = now;
	rt_exchange_start(&f->ux, f->up, f->head, f->body, &rt_w.head_timeout);
}

/* ---- lifetime ------------------------------------------------------------ */

static void fwd_dispose(void *p)
{
	struct fwd *f = p;
	rt_exchange_dispose(&f->ux);
	if (h2o_timeout_is_linked(&f->idle_timer))
		h2o_timeout_unlink(&f->idle_timer);
	if (!f->eos && f->started)
		record_worker_outcome(f, RT_OUT_CANCELLED);
	else if (!f->started && f->attempts > 0 && f->guard_held)
		record_worker_outcome(f, RT_OUT_CANCELLED);
	guard_release(f);
	stall_end(f);
	breaker_release(&f->sel.worker);
	breaker_release(&f->sel.prefill);
	uint64_t dur = sy_mono_ns() - f->t_start;
	rt_metrics_duration(rt_w.metrics, rt_w.index, dur);
	if (f->started && f->req)
		rt_access_log(f->req, f->route, f->status, f->sel.worker.id, dur, f->bytes_out);
	if (f->sending)
		h2o_buffer_dispose(&f->sending);
	if (f->tail)
		h2o_buffer_dispose(&f->tail);
	f->req = NULL;
	router_gen_unref(f->gen);
	rt_w.active_requests--;
}

int rt_forward_start(h2o_req_t *req, struct router_gen *g, struct infer_request *ir,
		     const struct selection *sel, h2o_iovec_t body, uint64_t t_selected_ns)
{
	enum route route = ir->route;
	struct fwd *f = h2o_mem_alloc_shared(&req->pool, sizeof(*f), fwd_dispose);
	memset(f, 0, sizeof(*f));
	f->req = req;
	f->gen = router_gen_ref(g);
	f->route = route;
	f->ir = ir;
	f->sel = *sel;
	f->t_selected = t_selected_ns;
	f->body = body;
	f->t_start = ir->t_start_ns;
	f->idle_timer.cb = on_idle_timeout;
	h2o_buffer_init(&f->sending, &h2o_socket_buffer_prototype);
	h2o_buffer_init(&f->tail, &h2o_socket_buffer_prototype);
	rt_exchange_init(&f->ux, &fwd_cb, f);
	rt_w.active_requests++;
	rt_metrics_decision(rt_w.metrics, rt_w.index, sel->policy, sel->reason);

	if (sel->pd) {
		/* The body carries the prefill worker's bootstrap fields (infer.c);
		 * the same body goes to both. */
		const char *why = NULL;
		struct rt_upstream *pu =
			rt_upstream_get(rt_w.upstreams, sel->prefill.slot, sel->prefill.id, &why);
		if (pu == NULL)
			return rt_send_errorf(req, route, 502, "upstream_unreachable", "%s", why);
		h2o_iovec_t phead = build_head(req, &req->pool, pu, route_path(route), f->body.len,
					       sel->worker.id);
		prefill_start(f, phead);
	}
	fwd_connect(f);
	return 0;
}
