/* uclient.h — one upstream HTTP/1.1 exchange, behind two interchangeable
 * clients (--upstream-client, router.upstream_client):
 *
 * - RT_UX_LEAN (lean.c): the worker process owns its keep-alive sockets per
 *   upstream; idle sockets stay registered in the h2o event loop (read
 *   started, so a peer close is seen at once and no liveness probe, fcntl
 *   or epoll add/delete is paid per request); the request goes out in one
 *   writev (head + body); the response is parsed with h2o's bundled
 *   picohttpparser (phr_parse_response, phr_decode_chunked).
 * - RT_UX_H2O (uclient_h2o.c): h2o_http1client over the h2o socket pool of
 *   the upstream (the fallback).
 *
 * Shape of an exchange (the storage is the caller's: struct fwd in the
 * request pool, or a detached prefill; nothing is allocated per exchange):
 *
 *   rt_ux_start ─► on_connect(err?) ─► on_head(err?, status, headers, eos)
 *                                  ─► on_body(NULL)* ─► on_body(RT_UX_EOS | error)
 *
 * A callback with an error, on_head with eos, and on_body with an end are
 * terminal: the exchange is inactive when they run, and the caller may
 * start a new exchange on the same storage from inside them. Any callback
 * may call rt_ux_cancel(). Only on_connect may run from inside rt_ux_start
 * (a kept-alive socket is ready at once; a connect may fail at once, as in
 * h2o's socket pool); no callback runs from inside rt_ux_cancel.
 *
 * Body bytes accumulate in *rt_ux_body(); the caller takes them by
 * swapping buffers (it then owns what it swapped out). The storage's own
 * buffer is released by rt_ux_dispose().
 */
#ifndef SY_ROUTER_UCLIENT_H
#define SY_ROUTER_UCLIENT_H

#include <stdbool.h>

#include <h2o.h>
#include <h2o/http1client.h>

struct rt_upstream;
struct rt_lconn;
struct rt_ux;

/* Which client carries the exchange (config enum sy_upstream_client). */
enum rt_ux_kind { RT_UX_H2O = 0, RT_UX_LEAN = 1 };

/* The end-of-body marker passed to on_body (compare by address). */
extern const char rt_ux_eos[];

/* Callbacks of an exchange; `err` strings are static, safe to send to a
 * client (no worker URL). */
struct rt_ux_cb {
	/* The connection is ready (err NULL), or cannot be made (terminal). */
	void (*on_connect)(struct rt_ux *x, const char *err);
	/* The response head: status and headers (valid during the call only;
	 * a name is an h2o token when h2o knows it, see h2o_iovec_is_token).
	 * eos: no body follows (terminal). err: the connection failed before a
	 * complete head (terminal; status 0). */
	void (*on_head)(struct rt_ux *x, const char *err, int status, const h2o_header_t *headers,
			size_t n, bool eos);
	/* More body bytes are in *rt_ux_body(x) (err NULL), or the body ended:
	 * err == rt_ux_eos when complete, another string when it broke off
	 * (both terminal; bytes still in the buffer belong to the body). */
	void (*on_body)(struct rt_ux *x, const char *err);
};

/* One exchange. Zero-initialise, then rt_ux_init(). `data` is the caller's. */
struct rt_ux {
	const struct rt_ux_cb *cb;
	void *data;
	enum rt_ux_kind kind;
	bool active;                 /* started and not yet ended/cancelled */
	h2o_iovec_t bufs[2];         /* request head + body (borrowed, must outlive the exchange) */
	struct rt_upstream *up;
	h2o_buffer_t *body;          /* decoded body bytes (lean) */
	/* lean */
	struct rt_lconn *conn;
	bool fresh_retry_done;       /* a reused socket died unanswered once already */
	/* h2o */
	h2o_http1client_t *client;
	h2o_http1client_t *in_cb;    /* client whose callback is running */
};

/* Prepares the storage (no allocation). */
void rt_ux_init(struct rt_ux *x, enum rt_ux_kind kind, const struct rt_ux_cb *cb, void *data);

/* Sends `head` + `body` (borrowed until the exchange ends) to `up` on a
 * kept-alive or new connection. Results arrive through the callbacks. */
void rt_ux_start(struct rt_ux *x, struct rt_upstream *up, h2o_iovec_t head, h2o_iovec_t body);

/* Aborts the exchange if active (its connection is closed, never reused);
 * no callback follows. Safe from inside a callback and when inactive. */
void rt_ux_cancel(struct rt_ux *x);

/* The buffer body bytes accumulate in (see file comment). */
h2o_buffer_t **rt_ux_body(struct rt_ux *x);

/* Cancels and releases the storage's buffer. */
void rt_ux_dispose(struct rt_ux *x);

/* ---- backends (lean.c, uclient_h2o.c) ---------------------------------- */

void rt_lean_start(struct rt_ux *x);
void rt_lean_cancel(struct rt_ux *x);
void rt_h2o_ux_start(struct rt_ux *x);
void rt_h2o_ux_cancel(struct rt_ux *x);

/* Lean client set-up for the worker process: the idle keep-alive timeout
 * (ms) of pooled sockets. Call once after the loop exists. */
void rt_lean_init(h2o_loop_t *loop, uint64_t idle_ms);

#endif
