/* forward.c — the upstream path of a selection (see forward.h), over
 * exchanges of the upstream client (router/upstream/client.h); the PD
 * prefill leg is pd.c.
 *
 * One struct fwd per client request (forward-int.h), allocated in the
 * request's pool with a dispose callback (h2o_mem_alloc_shared): whatever
 * ends the request — completion, error, client cancel — h2o clears the
 * pool and fwd_dispose() releases the upstream exchange, the timers, the
 * in-flight guards, the client watch and the generation reference, in one
 * place.
 *
 * Attempts: attempt_start() runs the current selection (plain: one
 * exchange; PD: pd.c). A failure before any byte reached the client goes
 * through rt_fwd_fail(): with retries left (router.retry_max_retries) the
 * failed worker joins f->ex, selection runs again without it (its filter
 * leaves excluded workers out), the body is rebuilt for the new selection
 * and the next attempt starts after the backoff (a 10 ms tick checks the
 * due time, so no attempt starts from inside the callback that failed);
 * otherwise the error is answered. An SGLang PD attempt is retried only
 * while neither leg was sent; a vLLM one (prefill, then decode) like a
 * plain one, until a byte reached the client.
 *
 * Response body flow (one send in flight, as h2o requires):
 *   on_body: data accumulates in the exchange's body buffer; if nothing is
 *            being sent, swap that buffer out (`sending`) and h2o_send it.
 *            A response's first send (its head, and for a non-streamed
 *            answer its whole body) waits for the end of the loop turn (a
 *            zero timeout), so the answers of one turn reach the clients
 *            back to back and wake each reader once; later sends (streamed
 *            events) go out at once, so a token is never held.
 *   proceed: the send completed; empty `sending`, keep it as the spare;
 *            if more arrived meanwhile, swap and send again.
 *   end:     at end of stream the remaining bytes are detached (`tail`) and
 *            sent with FINAL (ERROR if the upstream body broke off).
 * A streamed (text/event-stream) response is started with its first bytes;
 * any other body is held until it is complete (up to router.max_body_bytes,
 * past which it is passed on as it comes), so a body that breaks off gets
 * a proper 502 upstream_body_incomplete instead of a truncated 200.
 *
 * Client gone: HTTP/2 disposes the request at once; HTTP/1 is watched
 * (router/http/client_watch.h) and client_gone() aborts the upstream
 * request(s) — a closed connection is SGLang's abort — releases the guards
 * and answers 499 to nobody (or cuts a started response). Outcome
 * `cancelled`.
 */
#include "router/http/response.h"
#include "router/http/access_log.h"
#include "router/dispatch/forward.h"
#include "router/dispatch/forward-int.h"
#include "router/http/req_alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/log.h"
#include "router/core/buf.h"
#include "router/policies/policy.h"
#include "router/dispatch/stall.h"
#include "router/http/metrics.h"
#include "router/http/queue_run.h"

/* Largest upstream response head passed on (bytes, names + values). */
#define RT_MAX_UPSTREAM_HEAD_BYTES 65536

/* Period of the backoff tick (ms). */
#define RETRY_TICK_MS 10

static h2o_timeout_t retry_tick;
static bool retry_tick_ready;
static h2o_timeout_t send_turn; /* 0 ms: the end of the current loop turn */
static bool send_turn_ready;

static void attempt_start(struct fwd *f);
static void do_send(struct fwd *f);

static struct fwd *fwd_of_generator(h2o_generator_t *g)
{
	return (struct fwd *)((char *)g - offsetof(struct fwd, generator));
}

static uint64_t since_start(const struct fwd *f) { return sy_mono_ns() - f->t_start; }

/* ---- guards ------------------------------------------------------------ */

static void guard_release(struct fwd *f)
{
	if (!f->guard_held)
		return;
	f->guard_held = false;
	if (rt_w.region)
		statebus_inflight_release(rt_w.region, rt_w.proc_slot, f->guard_slot);
	rt_queue_kick(); /* a request waiting here may go now */
}

static void guard_acquire(struct fwd *f, uint32_t slot, uint64_t now_ns)
{
	if (f->guard_held && f->guard_slot == slot)
		return; /* already counted (rt_fwd_guard) */
	guard_release(f);
	if (f->ir->reserved && f->ir->reserved_slot == slot) {
		/* the reservation taken with the selection (infer.c) */
		f->ir->reserved = false;
		f->guard_slot = slot;
		f->guard_held = true;
		return;
	}
	if (rt_w.region &&
	    statebus_inflight_acquire(rt_w.region, rt_w.proc_slot, slot, now_ns) == SY_OK) {
		f->guard_slot = slot;
		f->guard_held = true;
	}
}

void rt_fwd_guard(struct fwd *f, uint64_t now_ns) { guard_acquire(f, f->sel.worker.slot, now_ns); }

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

void rt_fwd_release_main(struct fwd *f)
{
	rt_exchange_cancel(&f->ux);
	if (h2o_timeout_is_linked(&f->idle_timer))
		h2o_timeout_unlink(&f->idle_timer);
	stall_end(f);
	guard_release(f);
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
	case ROUTE_EMBEDDINGS: return h2o_iovec_init(H2O_STRLIT("/v1/embeddings"));
	case ROUTE_RERANK: return h2o_iovec_init(H2O_STRLIT("/v1/rerank"));
	case ROUTE_RESPONSES: return h2o_iovec_init(H2O_STRLIT("/v1/responses"));
	case ROUTE_MESSAGES: return h2o_iovec_init(H2O_STRLIT("/v1/messages"));
	default: return h2o_iovec_init(H2O_STRLIT("/v1/chat/completions"));
	}
}

h2o_iovec_t rt_fwd_head(struct fwd *f, const struct rt_upstream *up, const char *decode_url)
{
	return build_head(f->req, &f->req->pool, up, route_path(f->route), f->body.len, decode_url);
}

/* ---- health and breakers ------------------------------------------------- */

void rt_fwd_breaker(struct selected_worker *w, int threshold, enum statebus_cb_result r)
{
	w->cb_probe = false; /* answered */
	if (rt_w.region)
		statebus_breaker_report(rt_w.region, w->slot, w->generation, (uint32_t)threshold, r,
					sy_mono_ns());
}

static void breaker_report(struct fwd *f, enum statebus_cb_result r)
{
	rt_fwd_breaker(&f->sel.worker, f->gen->cfg.router.cb_threshold, r);
}

void rt_fwd_breaker_release(struct selected_worker *w)
{
	if (w->cb_probe && rt_w.region)
		statebus_breaker_release_probe(rt_w.region, w->slot, w->generation, w->cb_probe_ns);
	w->cb_probe = false;
}

/* Passive health: a connect failure, a close before the first response
 * byte or a head timeout marks the worker down in the region at once, so
 * every router process leaves it out until an active probe passes. */
void rt_fwd_passive_down(const struct selected_worker *w, const char *err)
{
	enum statebus_down_reason why = err == rt_exchange_connect_failed ? STATEBUS_DOWN_CONNECT
					: err == rt_exchange_closed	  ? STATEBUS_DOWN_RESET
					: err == rt_exchange_timed_out	  ? STATEBUS_DOWN_TIMEOUT
									  : STATEBUS_DOWN_NONE;
	if (why == STATEBUS_DOWN_NONE || rt_w.region == NULL ||
	    (rt_w.gen != NULL && rt_w.gen->cfg.statebus.disable_health_check))
		return; /* without probes nothing would ever clear the mark */
	if (statebus_health_mark_down(rt_w.region, w->slot, w->generation, why, sy_mono_ns()))
		sy_warn("worker %s marked down (%s): left out of selection until a health probe passes",
			w->id, err);
}

static void record_worker_outcome(struct fwd *f, enum rt_outcome o)
{
	rt_metrics_worker(rt_w.metrics, rt_w.index, f->sel.worker.slot, o);
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
	if (f->sel.pd && f->sel.prefill_reason != NULL && f->sel.prefill_reason[0])
		add_header_str(req, H2O_STRLIT("x-switchyard-prefill-reason"),
			       f->sel.prefill_reason);
}

/* Ends the response with an error instead of the prepared one (nothing
 * has reached the client): the upstream body broke off before it was
 * complete (held body) or before its first byte. */
static void fail_before_body(struct fwd *f)
{
	h2o_req_t *req = f->req;
	f->final_sent = true;
	req->res.headers = (h2o_headers_t){NULL, 0, 0};
	req->res.content_length = SIZE_MAX;
	if (f->idle_timed_out) {
		f->status = 504;
		rt_send_dispatch_errorf(req, f->route, f->sel.worker.id, since_start(f), 504,
					"upstream_timeout",
					"the worker's response stalled for --stream-idle-timeout-secs");
		return;
	}
	f->status = 502;
	rt_send_dispatch_errorf(req, f->route, f->sel.worker.id, since_start(f), 502,
				"upstream_body_incomplete",
				"the worker's response broke off before its body was complete");
}

/* HTTP/1.1 chunk framing of relayed bodies, written here instead of by
 * h2o's chunked filter (lib/handler/chunked.c), which formats every chunk
 * size with sprintf — a fifth of the router's instructions per streamed
 * token event. Same wire result (RFC 9112 §7.1): the filter steps aside for
 * a response that already has transfer-encoding, so this applies exactly
 * where the filter would (HTTP/1.1, status 200, no content-length, not HEAD)
 * and adds the header itself. */
static bool own_chunks_apply(h2o_req_t *req)
{
	if (req->version != 0x101 || req->res.status != 200 || req->res.content_length != SIZE_MAX ||
	    h2o_memis(req->input.method.base, req->input.method.len, H2O_STRLIT("HEAD")) ||
	    h2o_find_header(&req->res.headers, H2O_TOKEN_TRANSFER_ENCODING, -1) != -1)
		return false;
	h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_TRANSFER_ENCODING, NULL,
		       H2O_STRLIT("chunked"));
	return true;
}

/* bufs[0..return) frame `data` as one chunk (none when empty), then the
 * last chunk on FINAL, or a broken chunk on ERROR so the client sees the
 * cut (as h2o's filter does). f->chunk_head holds the size line until the
 * send completes (one send in flight). */
static size_t chunk_frame(struct fwd *f, h2o_iovec_t data, h2o_send_state_t st, h2o_iovec_t bufs[3])
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;
	if (data.len != 0) {
		char tmp[sizeof f->chunk_head];
		size_t k = 0, v = data.len;
		do {
			tmp[k++] = hex[v & 15];
			v >>= 4;
		} while (v != 0);
		for (size_t i = 0; i < k; i++)
			f->chunk_head[i] = tmp[k - 1 - i];
		f->chunk_head[k] = '\r';
		f->chunk_head[k + 1] = '\n';
		bufs[n++] = h2o_iovec_init(f->chunk_head, k + 2);
		bufs[n++] = data;
		if (st == H2O_SEND_STATE_IN_PROGRESS)
			bufs[n++] = h2o_iovec_init(H2O_STRLIT("\r\n"));
		else if (st == H2O_SEND_STATE_FINAL)
			bufs[n++] = h2o_iovec_init(H2O_STRLIT("\r\n0\r\n\r\n"));
		else
			bufs[n++] = h2o_iovec_init(H2O_STRLIT("\r\n1\r\n"));
	} else if (st == H2O_SEND_STATE_FINAL) {
		bufs[n++] = h2o_iovec_init(H2O_STRLIT("0\r\n\r\n"));
	} else if (st == H2O_SEND_STATE_ERROR) {
		bufs[n++] = h2o_iovec_init(H2O_STRLIT("\r\n1\r\n"));
	}
	return n;
}

/* A rerank answer that cannot be wrapped (http/rerank.h): 502
 * upstream_invalid_response with `msg` instead of the engine's body. */
static void rerank_refuse(struct fwd *f, const char *msg)
{
	h2o_req_t *req = f->req;
	sy_warn("rerank answer of %s refused: %s", f->sel.worker.id, msg);
	f->final_sent = true;
	req->res.headers = (h2o_headers_t){NULL, 0, 0};
	req->res.content_length = SIZE_MAX;
	f->status = 502;
	rt_send_dispatch_errorf(req, f->route, f->sel.worker.id, since_start(f), 502,
				"upstream_invalid_response", "%s", msg);
}

/* The complete rerank answer in f->tail, wrapped as SMG answers: *iov is
 * the new body (request pool). Returns 0, or -1 after answering 502. */
static int rerank_body(struct fwd *f, h2o_iovec_t *iov)
{
	const struct infer_request *ir = f->ir;
	struct rt_buf b = {0};
	char err[ROUTER_ERROR_MSG_MAX];
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	const char *in = f->tail != NULL ? f->tail->bytes : "";
	size_t n = f->tail != NULL ? f->tail->size : 0;
	if (rt_rerank_wrap(&ir->rerank, ir->pr.model.ptr, ir->pr.model.len, in, n,
			   (int64_t)now.tv_sec, &b, err, sizeof(err)) != 0) {
		rt_buf_free(&b);
		rerank_refuse(f, err);
		return -1;
	}
	iov->base = h2o_mem_alloc_pool(&f->req->pool, b.n);
	memcpy(iov->base, b.p, b.n);
	iov->len = b.n;
	f->req->res.content_length = b.n;
	rt_buf_free(&b);
	return 0;
}

static void do_send(struct fwd *f)
{
	if (f->req == NULL || f->send_in_flight || f->final_sent)
		return;
	h2o_iovec_t iov = {NULL, 0};
	h2o_send_state_t st = H2O_SEND_STATE_IN_PROGRESS;
	if (f->ux.active) {
		h2o_buffer_t **in = &f->ux.body;
		if ((*in)->size == 0 || f->buffering)
			return;
		h2o_buffer_t *t = f->sending;
		f->sending = *in;
		*in = t;
		iov = h2o_iovec_init(f->sending->bytes, f->sending->size);
	} else if (f->eos) {
		if (f->body_error && !f->res_started && (f->buffering || f->tail->size == 0)) {
			fail_before_body(f);
			return;
		}
		if (f->rerank_wrap && !f->body_error) {
			if (rerank_body(f, &iov) != 0)
				return;
		} else if (f->tail != NULL && f->tail->size != 0) {
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
	if (!f->res_started) {
		f->res_started = true;
		rt_metrics_response(rt_w.metrics, rt_w.index, f->route, f->status);
		f->own_chunks = own_chunks_apply(f->req);
	}
	f->send_in_flight = true;
	f->bytes_out += iov.len;
	if (f->own_chunks) {
		f->pend_n = chunk_frame(f, iov, st, f->pend);
	} else {
		f->pend[0] = iov;
		f->pend_n = iov.len ? 1 : 0;
	}
	f->pend_st = st;
	if (f->res_begun) { /* a streamed event: out at once, never held */
		h2o_send(f->req, f->pend, f->pend_n, f->pend_st);
		return;
	}
	if (!send_turn_ready) {
		h2o_timeout_init(rt_w.loop, &send_turn, 0);
		send_turn_ready = true;
	}
	h2o_timeout_link(rt_w.loop, &send_turn, &f->send_timer);
}

/* The loop turn that queued the response's first send ends: start the
 * response and hand the send to h2o. */
static void on_send_turn(h2o_timeout_entry_t *e)
{
	struct fwd *f = H2O_STRUCT_FROM_MEMBER(struct fwd, send_timer, e);
	if (f->req == NULL)
		return;
	f->res_begun = true;
	h2o_start_response(f->req, &f->generator);
	h2o_send(f->req, f->pend, f->pend_n, f->pend_st); /* f may be gone after this */
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

/* The client went away: abort the upstream request(s) — a closed connection
 * is the engine's abort — and release the guards. `answer`: the watch saw
 * it (h2o did not), so the request still needs an ending: a 499 nobody
 * reads, or the cut of a started response. */
static void client_gone(struct fwd *f, bool answer)
{
	if (f->cancelled || f->req == NULL)
		return;
	f->cancelled = true;
	bool running = !f->final_sent;
	if (running) {
		rt_metrics_client_cancel(rt_w.metrics, rt_w.index);
		if (f->attempts > 0)
			record_worker_outcome(f, RT_OUT_CANCELLED);
		if (f->streaming)
			rt_metrics_stream(rt_w.metrics, rt_w.index, RT_STREAM_CLIENT_CANCEL);
		sy_debug("client of a request to %s went away: upstream request aborted",
			 f->sel.worker.id);
	}
	if (h2o_timeout_is_linked(&f->retry_timer))
		h2o_timeout_unlink(&f->retry_timer);
	rt_fwd_release_main(f);
	rt_pd_abort(f);
	rt_fwd_breaker_release(&f->sel.worker);
	rt_fwd_breaker_release(&f->sel.prefill);
	if (!answer || !running)
		return;
	if (!f->res_started) {
		f->final_sent = true;
		rt_send_dispatch_errorf(f->req, f->route, f->sel.worker.id, since_start(f), 499,
					"client_closed_request", "the client closed the connection");
		return;
	}
	f->eos = true;
	f->body_error = true;
	f->buffering = false;
	do_send(f);
}

static void on_client_gone(struct rt_client_watch *w)
{
	client_gone(H2O_STRUCT_FROM_MEMBER(struct fwd, watch, w), true);
}

static void on_stop(h2o_generator_t *g, h2o_req_t *req)
{
	(void)req;
	struct fwd *f = fwd_of_generator(g);
	/* h2o stopped the response (the client went away mid-response) */
	client_gone(f, false);
	f->final_sent = true;
}

/* ---- attempts and retries ------------------------------------------------ */

/* SMG's retryable statuses (408, 429, 500, 502, 503, 504). */
static bool retryable_status(int status)
{
	return status == 408 || status == 429 || status == 500 || status == 502 || status == 503 ||
	       status == 504;
}

/* Wait before retry number `k` (1-based), ms: initial × multiplier^(k-1),
 * at most the maximum, scaled by 1 ± jitter × uniform(0, 1). */
static uint64_t backoff_ms(const struct sy_config_router *rc, unsigned k)
{
	double d = rc->retry_initial_backoff_ms;
	for (unsigned i = 1; i < k && d < rc->retry_max_backoff_ms; i++)
		d *= rc->retry_backoff_multiplier;
	if (d > rc->retry_max_backoff_ms)
		d = rc->retry_max_backoff_ms;
	double u = (double)router_rng_below(1000001) / 1000000.0;
	d *= 1.0 + rc->retry_jitter_factor * (2.0 * u - 1.0);
	return d > 0 ? (uint64_t)d : 0;
}

static void on_retry_tick(h2o_timeout_entry_t *e)
{
	struct fwd *f = H2O_STRUCT_FROM_MEMBER(struct fwd, retry_timer, e);
	if (sy_mono_ns() < f->retry_due_ns) {
		h2o_timeout_link(rt_w.loop, &retry_tick, &f->retry_timer);
		return;
	}
	f->sel = f->next;
	rt_infer_predict(f->ir, &f->sel, sy_mono_ns());
	attempt_start(f);
}

/* Another attempt after a failure of worker `failed` (`msg`), when the
 * settings and the fleet allow: nothing reached the client, retries are
 * left, and selection without the failed workers finds one. Returns true
 * when the next attempt is scheduled. */
static bool try_retry(struct fwd *f, const struct selected_worker *failed, const char *msg)
{
	const struct sy_config_router *rc = &f->gen->cfg.router;
	if (f->req == NULL || f->cancelled || f->res_started || f->expired ||
	    (int)f->attempts > rc->retry_max_retries)
		return false;
	if (!worker_exclude_has(&f->ex, failed->slot)) {
		if (f->ex.n >= WORKER_EXCLUDE_MAX)
			return false;
		f->ex.slots[f->ex.n++] = failed->slot;
	}
	struct router_error err;
	if (rt_infer_select(f->gen, f->ir, &f->ex, 0, &f->next, &err) != 0)
		return false;
	h2o_iovec_t body;
	uint64_t room;
	if (rt_infer_body(f->req, f->gen, f->ir, &f->next, &body, &room) != 0) {
		rt_fwd_breaker_release(&f->next.worker);
		rt_fwd_breaker_release(&f->next.prefill);
		return false;
	}
	uint64_t wait = backoff_ms(rc, f->attempts);
	sy_warn("attempt %u at %s failed before any byte reached the client (%s); retrying on %s "
		"in %llu ms",
		f->attempts, failed->id, msg, f->next.worker.id, (unsigned long long)wait);
	rt_metrics_retry(rt_w.metrics, rt_w.index);
	/* tear the failed attempt down */
	rt_fwd_release_main(f);
	rt_pd_abort(f);
	rt_fwd_breaker_release(&f->sel.worker);
	rt_fwd_breaker_release(&f->sel.prefill);
	h2o_buffer_consume(&f->ux.body, f->ux.body->size);
	f->started = f->d_connected = f->legs_sent = false;
	f->streaming = f->buffering = f->eos = f->body_error = false;
	f->status = 0;
	f->req->res.headers = (h2o_headers_t){NULL, 0, 0};
	f->req->res.content_length = SIZE_MAX;
	f->body = body;
	f->room = room;
	if (!retry_tick_ready) {
		h2o_timeout_init(rt_w.loop, &retry_tick, RETRY_TICK_MS);
		retry_tick_ready = true;
	}
	f->retry_due_ns = sy_mono_ns() + wait * 1000000u;
	h2o_timeout_link(rt_w.loop, &retry_tick, &f->retry_timer);
	return true;
}

void rt_fwd_cut(struct fwd *f)
{
	rt_fwd_release_main(f);
	f->eos = true;
	f->body_error = true;
	f->buffering = false;
	do_send(f);
}

void rt_fwd_fail(struct fwd *f, const struct selected_worker *failed, bool retryable, int status,
		 const char *code, const char *msg)
{
	stall_end(f);
	if (f->req == NULL || f->cancelled || f->final_sent)
		return;
	if (retryable && try_retry(f, failed, msg))
		return;
	rt_fwd_release_main(f);
	rt_pd_abort(f);
	if (f->res_started) {
		rt_fwd_cut(f);
		return;
	}
	f->final_sent = true;
	f->status = status;
	rt_send_dispatch_errorf(f->req, f->route, failed->id, since_start(f), status, code, "%s",
				msg);
}

/* The main exchange failed before a response head: 504 when its head
 * timeout expired, else 502. */
static void fail_exchange(struct fwd *f, const char *err)
{
	/* an SGLang PD attempt is retried only while neither leg was sent; a
	 * vLLM one (the prefill done, the decode not answering) as a plain one */
	bool retryable = !f->sel.pd || !f->legs_sent || selection_pd_vllm(&f->sel);
	rt_fwd_passive_down(&f->sel.worker, err);
	if (f->sel.pd)
		rt_pd_decode_failed(f, f->legs_sent ? PD_STAGE_DECODE : PD_STAGE_DECODE_CONNECT, err);
	breaker_report(f, STATEBUS_CB_FAILURE);
	record_worker_outcome(f, RT_OUT_ERROR);
	if (err == rt_exchange_timed_out)
		rt_fwd_fail(f, &f->sel.worker, retryable, 504, "upstream_timeout",
			    "the worker did not answer within --header-timeout-secs");
	else
		rt_fwd_fail(f, &f->sel.worker, retryable, 502, "upstream_unreachable", err);
}

/* ---- upstream callbacks -------------------------------------------------- */

/* Cuts a started response (`idle`: the stream idle timeout, else the
 * whole-request timeout): what was read still goes out, then the response
 * ends incomplete. */
static void cut_response(struct fwd *f, bool idle)
{
	const char *why = idle ? "stream idle timeout" : "request timeout";
	if (h2o_timeout_is_linked(&f->idle_timer))
		h2o_timeout_unlink(&f->idle_timer);
	rt_exchange_cancel(&f->ux);
	stall_end(f);
	sy_warn("%s at %s", why, f->sel.worker.id);
	f->idle_timed_out = true;
	f->eos = true;
	f->body_error = true;
	/* bytes read but not yet sent still go out before the cut */
	h2o_buffer_t **b = &f->ux.body, *t = f->tail;
	f->tail = *b;
	*b = t;
	if (idle) {
		breaker_report(f, STATEBUS_CB_FAILURE);
		if (f->streaming)
			rt_metrics_stream(rt_w.metrics, rt_w.index, RT_STREAM_IDLE_TIMEOUT);
	} else {
		record_worker_outcome(f, RT_OUT_ERROR);
		if (f->streaming)
			rt_metrics_stream(rt_w.metrics, rt_w.index, RT_STREAM_UPSTREAM_ERROR);
	}
	if (f->sel.pd)
		rt_pd_decode_failed(f, PD_STAGE_DECODE, why);
	do_send(f);
}

static void on_idle_timeout(h2o_timeout_entry_t *e)
{
	cut_response((struct fwd *)((char *)e - offsetof(struct fwd, idle_timer)), true);
}

/* --request-timeout-secs passed (SGLang's whole-request timeout): before
 * the response head, 504 without a retry; after it, the response is cut. */
static void on_request_timeout(h2o_timeout_entry_t *e)
{
	struct fwd *f = (struct fwd *)((char *)e - offsetof(struct fwd, request_timer));
	f->expired = true;
	if (f->eos || f->req == NULL || f->cancelled || f->final_sent)
		return;
	rt_metrics_stale_request(rt_w.metrics, rt_w.index);
	if (f->started) {
		cut_response(f, false);
		return;
	}
	if (h2o_timeout_is_linked(&f->retry_timer))
		h2o_timeout_unlink(&f->retry_timer);
	rt_fwd_fail(f, &f->sel.worker, false, 504, "upstream_timeout",
		    "the request did not complete within --request-timeout-secs");
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
	uint64_t now = sy_mono_ns();
	if (x->body->size > 0) {
		rt_stall_byte(f->sel.worker.slot, f->sel.worker.generation, now);
		if (!f->ttft_done) {
			f->ttft_done = true;
			rt_metrics_ttft(rt_w.metrics, rt_w.index, now - f->t_start);
		}
		if (f->buffering && x->body->size > f->gen->cfg.router.max_body_bytes) {
			if (f->rerank_wrap) { /* must be whole to be wrapped */
				rt_exchange_cancel(&f->ux);
				stall_end(f);
				if (h2o_timeout_is_linked(&f->idle_timer))
					h2o_timeout_unlink(&f->idle_timer);
				f->eos = true;
				record_worker_outcome(f, RT_OUT_ERROR);
				rerank_refuse(f, "the worker's rerank answer is larger than "
						 "--max-body-bytes");
				return;
			}
			f->buffering = false; /* too big to hold: passed on as it comes */
		}
	}
	if (err == NULL) {
		arm_idle(f);
		do_send(f);
		return;
	}
	/* The exchange ended: detach what is left. */
	stall_end(f);
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
		if (f->sel.pd)
			rt_pd_decode_failed(f, PD_STAGE_DECODE, err);
	} else {
		record_worker_outcome(f, rt_outcome_of_status(f->status));
		if (f->streaming)
			rt_metrics_stream(rt_w.metrics, rt_w.index, RT_STREAM_COMPLETE);
		rt_pd_detach(f);
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
		if (f->sel.pd)
			rt_pd_decode_failed(f, PD_STAGE_DECODE, "response headers too large");
		breaker_report(f, STATEBUS_CB_FAILURE);
		record_worker_outcome(f, RT_OUT_ERROR);
		rt_fwd_fail(f, &f->sel.worker, !f->sel.pd || selection_pd_vllm(&f->sel), 502,
			    "upstream_unreachable", "the worker's response headers are too large");
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
	if (f->sel.pd && status >= 400) {
		/* the decode refused: its answer goes to the client, the prefill
		 * of that room is of no use */
		char m[64];
		snprintf(m, sizeof(m), "the decode worker answered %d", status);
		rt_pd_decode_failed(f, PD_STAGE_DECODE, m);
	}
	/* A retryable status (SMG's list) goes to another worker when allowed —
	 * nothing has reached the client yet. Otherwise it is passed on. */
	if ((!f->sel.pd || selection_pd_vllm(&f->sel)) && retryable_status(status) &&
	    f->gen->cfg.router.retry_max_retries > 0) {
		char m[64];
		snprintf(m, sizeof(m), "the worker answered %d", status);
		struct selected_worker failed = f->sel.worker;
		if (!eos)
			stall_end(f);
		if (try_retry(f, &failed, m)) {
			rt_metrics_worker(rt_w.metrics, rt_w.index, failed.slot, RT_OUT_ERROR);
			return;
		}
		if (!eos)
			stall_begin(f, now);
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
	f->buffering = !f->streaming && !eos;
	if (f->route == ROUTE_RERANK && status >= 200 && status < 300) {
		f->rerank_wrap = true; /* SMG's shape: held whole, then wrapped */
		f->buffering = !eos;
		req->res.content_length = SIZE_MAX; /* the wrapped body's, later */
	}
	f->generator.proceed = on_proceed;
	f->generator.stop = on_stop;
	if (eos) {
		f->eos = true;
		record_worker_outcome(f, rt_outcome_of_status(status));
		rt_pd_detach(f);
		do_send(f);
		return;
	}
	arm_idle(f);
}

static void on_connect(struct rt_exchange *x, const char *err)
{
	struct fwd *f = x->data;
	rt_metrics_phase(rt_w.metrics, rt_w.index, RT_PHASE_CONNECT, sy_mono_ns() - f->t_connect_start);
	if (f->sel.pd && !selection_pd_vllm(&f->sel) && err == NULL) {
		rt_pd_decode_connected(f);
		return;
	}
	if (err != NULL)
		fail_exchange(f, err);
}

static const struct rt_exchange_cb fwd_cb = {on_connect, on_head, on_body};

void rt_fwd_open_main(struct fwd *f, struct rt_upstream *up, uint64_t now_ns, bool hold)
{
	f->up = up;
	guard_acquire(f, f->sel.worker.slot, now_ns);
	stall_begin(f, now_ns);
	f->head = rt_fwd_head(f, up,
			      f->sel.pd && !selection_pd_vllm(&f->sel) ? f->sel.worker.id : NULL);
	f->t_dispatch = f->t_connect_start = now_ns;
	if (hold) /* PD decode: a fresh connection proves the decode listens */
		rt_exchange_connect(&f->ux, up, f->head, f->body, &rt_w.head_timeout, true);
	else
		rt_exchange_start(&f->ux, up, f->head, f->body, &rt_w.head_timeout);
}

/* Starts the attempt of f->sel (plain here, PD in pd.c). */
static void attempt_start(struct fwd *f)
{
	f->attempts++;
	/* The selection's end stamp serves the first attempt; a retry reads
	 * the clock. */
	uint64_t now = f->t_selected ? f->t_selected : sy_mono_ns();
	f->t_selected = 0;
	if (f->sel.pd) {
		rt_pd_start(f, now);
		return;
	}
	const char *why = NULL;
	struct rt_upstream *up = rt_upstream_get(rt_w.upstreams, f->sel.worker.slot, f->sel.worker.id, &why);
	if (up == NULL) {
		record_worker_outcome(f, RT_OUT_ERROR);
		rt_fwd_fail(f, &f->sel.worker, true, 502, "upstream_unreachable", why);
		return;
	}
	rt_fwd_open_main(f, up, now, false);
}

/* ---- lifetime ------------------------------------------------------------ */

static void fwd_dispose(void *p)
{
	struct fwd *f = p;
	rt_client_watch_stop(&f->watch);
	if (h2o_timeout_is_linked(&f->retry_timer))
		h2o_timeout_unlink(&f->retry_timer);
	if (h2o_timeout_is_linked(&f->send_timer))
		h2o_timeout_unlink(&f->send_timer);
	if (!f->final_sent && !f->cancelled && f->req != NULL) {
		/* the client left without the watch or h2o telling (HTTP/2 reset,
		 * connection closed): the same as client_gone */
		client_gone(f, false);
	}
	if (f->eos && !f->body_error)
		rt_pd_detach(f); /* the decode completed: the prefill ends on its own */
	else
		rt_pd_abort(f);
	rt_exchange_dispose(&f->ux);
	if (h2o_timeout_is_linked(&f->idle_timer))
		h2o_timeout_unlink(&f->idle_timer);
	if (h2o_timeout_is_linked(&f->request_timer))
		h2o_timeout_unlink(&f->request_timer);
	guard_release(f);
	stall_end(f);
	rt_fwd_breaker_release(&f->sel.worker);
	rt_fwd_breaker_release(&f->sel.prefill);
	uint64_t dur = sy_mono_ns() - f->t_start;
	rt_metrics_duration(rt_w.metrics, rt_w.index, dur);
	if (f->res_started && f->req)
		rt_access_log(f->req, f->route, f->status, f->sel.worker.id, dur, f->bytes_out);
	else if (f->cancelled && f->req && !f->final_sent)
		rt_access_log(f->req, f->route, 499, f->sel.worker.id, dur, 0);
	if (f->sending)
		h2o_buffer_dispose(&f->sending);
	if (f->tail)
		h2o_buffer_dispose(&f->tail);
	f->req = NULL;
	router_gen_unref(f->gen);
	rt_w.active_requests--;
}

int rt_forward_start(h2o_req_t *req, struct router_gen *g, struct infer_request *ir,
		     const struct selection *sel, h2o_iovec_t body, uint64_t room,
		     uint64_t t_selected_ns)
{
	static struct rt_req_list fwds = {.size = sizeof(struct fwd), .max = 256};
	struct fwd *f = rt_req_alloc(&req->pool, &fwds, fwd_dispose);
	f->req = req;
	f->gen = router_gen_ref(g);
	f->route = ir->route;
	f->ir = ir;
	f->sel = *sel;
	f->t_selected = t_selected_ns;
	f->body = body;
	f->room = room;
	f->t_start = ir->t_start_ns;
	f->idle_timer.cb = on_idle_timeout;
	f->retry_timer.cb = on_retry_tick;
	f->send_timer.cb = on_send_turn;
	f->request_timer.cb = on_request_timeout;
	h2o_timeout_link(rt_w.loop, &rt_w.request_timeout, &f->request_timer);
	h2o_buffer_init(&f->sending, &h2o_socket_buffer_prototype);
	h2o_buffer_init(&f->tail, &h2o_socket_buffer_prototype);
	rt_exchange_init(&f->ux, &fwd_cb, f);
	rt_client_watch_start(&f->watch, rt_w.loop, req, on_client_gone);
	rt_w.active_requests++;
	if (sel->pd) {
		rt_metrics_decision(rt_w.metrics, rt_w.index, STAGE_PREFILL, sel->prefill_policy,
				    sel->prefill_reason);
		rt_metrics_decision(rt_w.metrics, rt_w.index, STAGE_DECODE, sel->policy, sel->reason);
	} else {
		rt_metrics_decision(rt_w.metrics, rt_w.index, STAGE_PLAIN, sel->policy, sel->reason);
	}
	rt_metrics_reselected(rt_w.metrics, rt_w.index, sel->reselected);
	attempt_start(f);
	return 0;
}
