/* forward.c — h2o_http1client upstream path (see forward.h).
 *
 * One struct fwd per client request, allocated in the request's pool with a
 * dispose callback (h2o_mem_alloc_shared): whatever ends the request —
 * completion, error, client cancel — h2o clears the pool and fwd_dispose()
 * releases the upstream client, the timers, the in-flight guards and the
 * generation reference, in one place.
 *
 * Response body flow (one send in flight, as h2o requires):
 *   on_body: data accumulates in client->sock->input; if nothing is being
 *            sent, swap that buffer out (`sending`) and h2o_send it.
 *   proceed: the send completed; empty `sending`, keep it as the spare;
 *            if more arrived meanwhile, swap and send again.
 *   end:     at end of stream the remaining input is detached (`tail`) and
 *            sent with FINAL (ERROR if the upstream body broke off).
 */
#include "router/forward.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "router/breaker.h"
#include "router/metrics.h"
#include "router/pd.h"
#include "router/upstream.h"

/* Largest upstream response head passed on (bytes, names + values). */
#define RT_MAX_UPSTREAM_HEAD_BYTES 65536

struct fwd {
	h2o_req_t *req;             /* NULL once disposed */
	struct rt_gen *gen;         /* reference */
	enum rt_route route;
	struct rt_prepared *prep;
	struct rt_pick pick;
	struct rt_exclude ex;
	h2o_iovec_t body;
	h2o_iovec_t reqbufs[2];
	struct rt_upstream *up;
	h2o_http1client_t *client;  /* NULL when none in flight */
	h2o_timeout_entry_t head_timer;
	h2o_timeout_entry_t idle_timer;
	h2o_generator_t generator;  /* first member used by h2o: must stay first of its own */
	h2o_buffer_t *sending;      /* swapped-out data h2o is sending */
	h2o_buffer_t *tail;         /* detached input at end of stream */
	uint32_t guard_slot;        /* main target's in-flight guard */
	bool guard_held;
	bool probe;                 /* this attempt is a breaker half-open probe */
	bool started;               /* response headers went to the client */
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
	h2o_http1client_t *client;
	h2o_timeout_entry_t timer;
	h2o_iovec_t reqbufs[2];
	char *mem;                  /* request head + body */
	uint32_t slot, gen;
	char url[STATEBUS_WORKER_ID_MAX];
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

static void guard_acquire(struct fwd *f, uint32_t slot)
{
	guard_release(f);
	if (rt_w.region &&
	    statebus_inflight_acquire(rt_w.region, rt_w.proc_slot, slot, sy_mono_ns()) == SY_OK) {
		f->guard_slot = slot;
		f->guard_held = true;
	}
}

/* ---- request head -------------------------------------------------------- */

static bool drop_request_header(const h2o_iovec_t *name)
{
	static const char *const drop[] = {"host", "content-length", "transfer-encoding",
					   "connection", "keep-alive", "te", "upgrade", "expect",
					   "proxy-connection", "http2-settings", "trailer",
					   "x-sgl-decode-url"};
	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
		if (h2o_lcstris(name->base, name->len, drop[i], strlen(drop[i])))
			return true;
	return false;
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
	w += sprintf(w, "POST %.*s%.*s HTTP/1.1\r\nhost: %.*s\r\ncontent-length: %zu\r\n",
		     (int)up->prefix.len, up->prefix.base, (int)path.len, path.base,
		     (int)up->authority.len, up->authority.base, body_len);
	bool ctype = false;
	if (req != NULL)
		for (size_t i = 0; i < req->headers.size; i++) {
			const h2o_header_t *h = &req->headers.entries[i];
			if (drop_request_header(h->name))
				continue;
			if (h2o_lcstris(h->name->base, h->name->len, H2O_STRLIT("content-type")))
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
		w += sprintf(w, "content-type: application/json\r\n");
	if (decode_url)
		w += sprintf(w, "x-sgl-decode-url: %s\r\n", decode_url);
	*w++ = '\r';
	*w++ = '\n';
	return h2o_iovec_init(p, (size_t)(w - p));
}

static h2o_iovec_t route_path(enum rt_route r)
{
	switch (r) {
	case RT_ROUTE_COMPLETIONS: return h2o_iovec_init(H2O_STRLIT("/v1/completions"));
	case RT_ROUTE_GENERATE: return h2o_iovec_init(H2O_STRLIT("/generate"));
	default: return h2o_iovec_init(H2O_STRLIT("/v1/chat/completions"));
	}
}

/* ---- PD prefill (detached) ------------------------------------------------ */

static void prefill_done(struct prefill *p, const char *err)
{
	if (p->client) {
		h2o_http1client_cancel(p->client);
		p->client = NULL;
	}
	if (h2o_timeout_is_linked(&p->timer))
		h2o_timeout_unlink(&p->timer);
	if (rt_w.region)
		statebus_inflight_release(rt_w.region, rt_w.proc_slot, p->slot);
	if (err != NULL) {
		sy_warn("PD prefill at %s failed: %s (decode will time out on the room)", p->url, err);
		rt_metrics_worker(rt_w.metrics, rt_w.index, p->slot, RT_OUT_ERROR);
	} else {
		rt_metrics_worker(rt_w.metrics, rt_w.index, p->slot, rt_outcome_of_status(p->status));
		if (p->status >= 400)
			sy_warn("PD prefill at %s answered %d", p->url, p->status);
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

static int prefill_on_body(h2o_http1client_t *c, const char *errstr)
{
	struct prefill *p = c->data;
	h2o_buffer_consume(&c->sock->input, c->sock->input->size);
	if (errstr != NULL) {
		p->client = NULL; /* the client frees itself after we return */
		prefill_done(p, errstr == h2o_http1client_error_is_eos ? NULL : errstr);
	}
	return 0;
}

static h2o_http1client_body_cb prefill_on_head(h2o_http1client_t *c, const char *errstr, int minor,
					       int status, h2o_iovec_t msg, h2o_header_t *headers,
					       size_t n, int rlen)
{
	(void)minor, (void)msg, (void)headers, (void)n, (void)rlen;
	struct prefill *p = c->data;
	p->status = status;
	if (errstr != NULL) {
		p->client = NULL;
		prefill_done(p, errstr == h2o_http1client_error_is_eos ? NULL : errstr);
		return NULL;
	}
	return prefill_on_body;
}

static h2o_http1client_head_cb prefill_on_connect(h2o_http1client_t *c, const char *errstr,
						  h2o_iovec_t **reqbufs, size_t *cnt, int *is_head)
{
	struct prefill *p = c->data;
	if (errstr != NULL) {
		p->client = NULL;
		prefill_done(p, errstr);
		return NULL;
	}
	*reqbufs = p->reqbufs;
	*cnt = 2;
	*is_head = 0;
	return prefill_on_head;
}

static void prefill_start(struct fwd *f, h2o_iovec_t head_in_pool)
{
	const char *why = NULL;
	struct rt_upstream *up = rt_upstream_get(rt_w.upstreams, f->pick.prefill.slot,
						 f->pick.prefill.url, rt_w.loop, &why);
	struct prefill *p = calloc(1, sizeof(*p));
	if (up == NULL || p == NULL) {
		sy_warn("PD prefill at %s not sent: %s", f->pick.prefill.url, why ? why : "out of memory");
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
	p->reqbufs[0] = h2o_iovec_init(p->mem, head_in_pool.len);
	p->reqbufs[1] = h2o_iovec_init(p->mem + head_in_pool.len, f->body.len);
	p->slot = f->pick.prefill.slot;
	p->gen = f->pick.prefill.gen;
	snprintf(p->url, sizeof(p->url), "%s", f->pick.prefill.url);
	if (rt_w.region)
		statebus_inflight_acquire(rt_w.region, rt_w.proc_slot, p->slot, sy_mono_ns());
	rt_w.active_requests++;
	p->timer.cb = prefill_on_timeout;
	h2o_timeout_link(rt_w.loop, &rt_w.prefill_timeout, &p->timer);
	h2o_http1client_connect_with_pool(&p->client, p, &rt_w.client_ctx, &up->pool,
					  prefill_on_connect);
}

/* ---- response to the client ---------------------------------------------- */

static void add_header_str(h2o_req_t *req, const char *name, const char *value)
{
	h2o_iovec_t v = h2o_strdup(&req->pool, value, strlen(value));
	h2o_add_header_by_str(&req->pool, &req->res.headers, name, strlen(name), 0, NULL, v.base,
			      v.len);
}

static void decision_headers(struct fwd *f)
{
	h2o_req_t *req = f->req;
	if (f->pick.pd)
		add_header_str(req, "x-sgl-decode-url", f->pick.main.url);
	if (f->gen->cfg.router.no_decision_headers)
		return;
	add_header_str(req, "x-switchyard-worker", f->pick.main.url);
	if (f->pick.bucket[0])
		add_header_str(req, "x-switchyard-bucket", f->pick.bucket);
	if (f->pick.reason[0])
		add_header_str(req, "x-switchyard-reason", f->pick.reason);
	if (f->pick.pd)
		add_header_str(req, "x-switchyard-prefill-worker", f->pick.prefill.url);
}

static void do_send(struct fwd *f)
{
	if (f->req == NULL || f->send_in_flight || f->final_sent)
		return;
	h2o_iovec_t iov = {NULL, 0};
	h2o_send_state_t st = H2O_SEND_STATE_IN_PROGRESS;
	if (f->client != NULL) {
		h2o_buffer_t **in = &f->client->sock->input;
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
		st = f->body_error ? H2O_SEND_STATE_ERROR : H2O_SEND_STATE_FINAL;
		f->final_sent = true;
	} else {
		return;
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
	if (f->client != NULL) {
		h2o_http1client_cancel(f->client);
		f->client = NULL;
	}
	if (!f->final_sent && f->streaming)
		rt_metrics_stream(rt_w.metrics, rt_w.index, RT_STREAM_CLIENT_CANCEL);
	f->final_sent = true;
}

/* ---- upstream callbacks -------------------------------------------------- */

static void record_worker_outcome(struct fwd *f, enum rt_outcome o)
{
	rt_metrics_worker(rt_w.metrics, rt_w.index, f->pick.main.slot, o);
}

static void breaker_report(struct fwd *f, enum rt_cb_result r)
{
	rt_breaker_report(rt_w.breakers, f->pick.main.slot, f->pick.main.gen,
			  f->gen->cfg.router.cb_threshold, r, sy_mono_ns());
}

/* Re-dispatches to another worker when --retry-once allows it (plain only,
 * first failure, nothing sent to the client yet). Returns true when a new
 * attempt is under way. */
static bool try_retry(struct fwd *f, const char *msg)
{
	if (!f->gen->cfg.router.retry_once || f->pick.pd || f->attempts >= 2 || f->req == NULL ||
	    f->ex.n >= sizeof(f->ex.slots) / sizeof(f->ex.slots[0]))
		return false;
	struct rt_pick next;
	struct rt_pick_error err = {0};
	f->ex.slots[f->ex.n++] = f->pick.main.slot;
	if (rt_select(f->gen, f->req, f->prep, &f->ex, &next, &err) != 0 || next.pd)
		return false;
	sy_info("retrying on another worker after: %s", msg);
	rt_metrics_retry(rt_w.metrics, rt_w.index);
	guard_release(f);
	f->pick = next;
	fwd_connect(f);
	return true;
}

/* A failure before anything reached the client: retry once elsewhere when
 * allowed, else answer with the error. */
static void fail_before_head(struct fwd *f, int status, const char *code, const char *msg,
			     bool report)
{
	if (h2o_timeout_is_linked(&f->head_timer))
		h2o_timeout_unlink(&f->head_timer);
	if (report)
		breaker_report(f, RT_CB_FAILURE);
	record_worker_outcome(f, RT_OUT_ERROR);
	if (f->req == NULL || try_retry(f, msg))
		return;
	guard_release(f);
	rt_send_error(f->req, f->route, status, code, msg, NULL);
}

static void on_head_timeout(h2o_timeout_entry_t *e)
{
	struct fwd *f = (struct fwd *)((char *)e - offsetof(struct fwd, head_timer));
	if (f->client) {
		h2o_http1client_cancel(f->client);
		f->client = NULL;
	}
	fail_before_head(f, 504, "upstream_timeout",
			 "the worker did not answer within --request-timeout-secs", true);
}

static void on_idle_timeout(h2o_timeout_entry_t *e)
{
	struct fwd *f = (struct fwd *)((char *)e - offsetof(struct fwd, idle_timer));
	if (f->client) {
		h2o_http1client_cancel(f->client);
		f->client = NULL;
	}
	sy_warn("stream idle timeout at %s", f->pick.main.url);
	f->idle_timed_out = true;
	f->eos = true;
	f->body_error = true;
	breaker_report(f, RT_CB_FAILURE);
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

static int on_body(h2o_http1client_t *c, const char *errstr)
{
	struct fwd *f = c->data;
	if (!f->ttft_done && c->sock->input->size > 0) {
		f->ttft_done = true;
		rt_metrics_ttft(rt_w.metrics, rt_w.index, sy_mono_ns() - f->t_start);
	}
	if (errstr != NULL) {
		/* Detach what is left: the client frees itself after we return. */
		if (h2o_timeout_is_linked(&f->idle_timer))
			h2o_timeout_unlink(&f->idle_timer);
		f->tail = c->sock->input;
		h2o_buffer_init(&c->sock->input, &h2o_socket_buffer_prototype);
		f->client = NULL;
		f->eos = true;
		if (errstr != h2o_http1client_error_is_eos) {
			f->body_error = true;
			sy_warn("upstream body from %s broke off: %s", f->pick.main.url, errstr);
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
	return 0;
}

static h2o_http1client_body_cb on_head(h2o_http1client_t *c, const char *errstr, int minor,
				       int status, h2o_iovec_t msg, h2o_header_t *headers,
				       size_t num_headers, int rlen)
{
	(void)minor, (void)msg, (void)rlen;
	struct fwd *f = c->data;
	if (h2o_timeout_is_linked(&f->head_timer))
		h2o_timeout_unlink(&f->head_timer);
	if (errstr != NULL && errstr != h2o_http1client_error_is_eos) {
		f->client = NULL;
		fail_before_head(f, 502, "upstream_unreachable",
				 "the worker closed the connection before answering", true);
		return NULL;
	}
	/* Response headers bigger than any engine sends (h2o's client takes
	 * up to ~400 KiB) are not passed on to the client. */
	size_t head_bytes = 0;
	for (size_t i = 0; i < num_headers; i++)
		head_bytes += headers[i].name->len + headers[i].value.len + 4;
	if (head_bytes > RT_MAX_UPSTREAM_HEAD_BYTES) {
		f->client = NULL;
		fail_before_head(f, 502, "upstream_unreachable",
				 "the worker's response headers are too large", true);
		return NULL;
	}
	uint64_t now = sy_mono_ns();
	rt_metrics_phase(rt_w.metrics, rt_w.index, RT_PHASE_TTFB, now - f->t_dispatch);
	f->status = status;
	if (status == 429 || status == 503)
		breaker_report(f, RT_CB_BACKPRESSURE);
	else if (status >= 500)
		breaker_report(f, RT_CB_FAILURE);
	else
		breaker_report(f, RT_CB_SUCCESS);
	/* A 5xx (except backpressure) goes to another worker when allowed —
	 * nothing has reached the client yet. Otherwise it is passed on. */
	if (status >= 500 && status != 503) {
		char m[64];
		snprintf(m, sizeof(m), "the worker answered %d", status);
		struct rt_pick before = f->pick;
		if (try_retry(f, m)) {
			rt_metrics_worker(rt_w.metrics, rt_w.index, before.main.slot, RT_OUT_ERROR);
			return NULL; /* closes this client; f->client is the new one */
		}
	}
	h2o_req_t *req = f->req;
	req->res.status = status;
	req->res.reason = rt_reason(status);
	for (size_t i = 0; i < num_headers; i++) {
		const h2o_iovec_t *name = headers[i].name;
		if (h2o_iovec_is_token(name)) {
			const h2o_token_t *tok = (const h2o_token_t *)name;
			if (tok->proxy_should_drop_for_res || tok == H2O_TOKEN_SERVER ||
			    tok == H2O_TOKEN_DATE)
				continue;
			if (tok == H2O_TOKEN_CONTENT_LENGTH) {
				size_t cl = h2o_strtosize(headers[i].value.base, headers[i].value.len);
				if (cl != SIZE_MAX)
					req->res.content_length = cl;
				continue;
			}
			if (tok == H2O_TOKEN_CONTENT_TYPE &&
			    h2o_memis(headers[i].value.base,
				      headers[i].value.len < 17 ? headers[i].value.len : 17,
				      H2O_STRLIT("text/event-stream")))
				f->streaming = true;
			h2o_iovec_t v = h2o_strdup(&req->pool, headers[i].value.base, headers[i].value.len);
			h2o_add_header(&req->pool, &req->res.headers, tok, NULL, v.base, v.len);
		} else {
			if (h2o_lcstris(name->base, name->len, H2O_STRLIT("x-request-id")) ||
			    h2o_lcstris(name->base, name->len, H2O_STRLIT("keep-alive")) ||
			    (name->len > 13 && h2o_lcstris(name->base, 13, H2O_STRLIT("x-switchyard-"))))
				continue;
			h2o_iovec_t n = h2o_strdup(&req->pool, name->base, name->len);
			h2o_iovec_t v = h2o_strdup(&req->pool, headers[i].value.base, headers[i].value.len);
			h2o_add_header_by_str(&req->pool, &req->res.headers, n.base, n.len, 0, NULL, v.base,
					      v.len);
		}
	}
	h2o_iovec_t id = rt_request_id(req);
	h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-request-id"), 0, NULL,
			      id.base, id.len);
	decision_headers(f);
	rt_metrics_response(rt_w.metrics, rt_w.index, f->route, status);
	f->started = true;
	f->generator.proceed = on_proceed;
	f->generator.stop = on_stop;
	h2o_start_response(req, &f->generator);
	if (errstr == h2o_http1client_error_is_eos) {
		f->client = NULL;
		f->eos = true;
		record_worker_outcome(f, rt_outcome_of_status(status));
		do_send(f);
		return NULL;
	}
	arm_idle(f);
	return on_body;
}

static h2o_http1client_head_cb on_connect(h2o_http1client_t *c, const char *errstr,
					  h2o_iovec_t **reqbufs, size_t *cnt, int *is_head)
{
	struct fwd *f = c->data;
	rt_metrics_phase(rt_w.metrics, rt_w.index, RT_PHASE_CONNECT, sy_mono_ns() - f->t_connect_start);
	if (errstr != NULL) {
		f->client = NULL;
		fail_before_head(f, 502, "upstream_unreachable", "cannot connect to the worker", true);
		return NULL;
	}
	*reqbufs = f->reqbufs;
	*cnt = 2;
	*is_head = 0;
	return on_head;
}

/* Starts (or restarts, for a retry) the attempt at f->pick.main. */
static void fwd_connect(struct fwd *f)
{
	const char *why = NULL;
	f->attempts++;
	uint64_t now = sy_mono_ns();
	if (!rt_breaker_allow(rt_w.breakers, f->pick.main.slot, f->pick.main.gen,
			      f->gen->cfg.router.cb_threshold,
			      (uint64_t)f->gen->cfg.router.cb_cool_down_secs * 1000000000u, now,
			      &f->probe)) {
		guard_release(f);
		rt_send_error(f->req, f->route, 503, "breaker_open",
			      "the selected worker's circuit breaker is open", NULL);
		return;
	}
	f->up = rt_upstream_get(rt_w.upstreams, f->pick.main.slot, f->pick.main.url, rt_w.loop, &why);
	if (f->up == NULL) {
		guard_release(f);
		rt_send_error(f->req, f->route, 502, "upstream_unreachable", why, NULL);
		return;
	}
	guard_acquire(f, f->pick.main.slot);
	f->reqbufs[0] = build_head(f->req, &f->req->pool, f->up, route_path(f->route), f->body.len,
				   f->pick.pd ? f->pick.main.url : NULL);
	f->reqbufs[1] = f->body;
	f->t_dispatch = f->t_connect_start = now;
	h2o_timeout_link(rt_w.loop, &rt_w.head_timeout, &f->head_timer);
	h2o_http1client_connect_with_pool(&f->client, f, &rt_w.client_ctx, &f->up->pool, on_connect);
}

/* ---- lifetime ------------------------------------------------------------ */

static void fwd_dispose(void *p)
{
	struct fwd *f = p;
	if (f->client != NULL) {
		h2o_http1client_cancel(f->client);
		f->client = NULL;
	}
	if (h2o_timeout_is_linked(&f->head_timer))
		h2o_timeout_unlink(&f->head_timer);
	if (h2o_timeout_is_linked(&f->idle_timer))
		h2o_timeout_unlink(&f->idle_timer);
	if (!f->eos && f->started)
		record_worker_outcome(f, RT_OUT_CANCELLED);
	else if (!f->started && f->attempts > 0 && f->guard_held)
		record_worker_outcome(f, RT_OUT_CANCELLED);
	guard_release(f);
	uint64_t dur = sy_mono_ns() - f->t_start;
	rt_metrics_duration(rt_w.metrics, rt_w.index, dur);
	if (f->started && f->req)
		rt_access_log(f->req, f->route, f->status, f->pick.main.url, dur, f->bytes_out);
	if (f->sending)
		h2o_buffer_dispose(&f->sending);
	if (f->tail)
		h2o_buffer_dispose(&f->tail);
	f->req = NULL;
	rt_gen_unref(f->gen);
	rt_w.active_requests--;
}

int rt_forward_start(h2o_req_t *req, struct rt_gen *g, enum rt_route route,
		     struct rt_prepared *prep, const struct rt_pick *pick, h2o_iovec_t body,
		     uint64_t t_start_ns)
{
	struct fwd *f = h2o_mem_alloc_shared(&req->pool, sizeof(*f), fwd_dispose);
	memset(f, 0, sizeof(*f));
	f->req = req;
	f->gen = rt_gen_ref(g);
	f->route = route;
	f->prep = prep;
	f->pick = *pick;
	f->body = body;
	f->t_start = t_start_ns;
	f->head_timer.cb = on_head_timeout;
	f->idle_timer.cb = on_idle_timeout;
	h2o_buffer_init(&f->sending, &h2o_socket_buffer_prototype);
	h2o_buffer_init(&f->tail, &h2o_socket_buffer_prototype);
	rt_w.active_requests++;
	rt_metrics_decision(rt_w.metrics, rt_w.index, pick->policy, pick->reason);

	if (pick->pd) {
		/* Bootstrap fields of the chosen prefill worker, same body to both. */
		char host[256];
		uint16_t port;
		const char *path;
		if (rt_url_split(pick->prefill.url, host, sizeof(host), &port, &path) != 0 ||
		    rt_pd_splice(&req->pool, body, host, pick->prefill.bootstrap_port,
				 rt_pd_batch_size(body, route), &f->body) != 0) {
			return rt_send_error(req, route, 500, "internal_error",
					     "cannot add the PD bootstrap fields to the request", NULL);
		}
		const char *why = NULL;
		struct rt_upstream *pu = rt_upstream_get(rt_w.upstreams, pick->prefill.slot,
							 pick->prefill.url, rt_w.loop, &why);
		if (pu == NULL)
			return rt_send_error(req, route, 502, "upstream_unreachable", why, NULL);
		h2o_iovec_t phead = build_head(req, &req->pool, pu, route_path(route), f->body.len,
					       pick->main.url);
		prefill_start(f, phead);
	}
	fwd_connect(f);
	return 0;
}
