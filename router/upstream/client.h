/* client.h — the upstream client: one HTTP/1.1 exchange (request out,
 * response in) with a worker over the worker process's own keep-alive
 * sockets (DESIGN.md §8, §9 "One upstream client").
 *
 * Idle sockets stay registered in the h2o event loop with reading started,
 * so a peer close is seen at once and reuse costs no liveness probe, fcntl
 * or epoll add/delete; the request goes out in one writev (head + body);
 * the response is parsed with h2o's bundled picohttpparser
 * (phr_parse_response, phr_decode_chunked). The sockets of one worker are
 * its struct rt_pool (pool.h).
 *
 * Shape of an exchange (the storage is the caller's: struct fwd in the
 * request pool, a detached prefill, a flush fan-out; nothing is allocated
 * per exchange):
 *
 *   rt_exchange_start ─► on_connect(err?) ─► on_head(err?, status, headers, eos)
 *                                        ─► on_body(NULL)* ─► on_body(rt_exchange_eos | error)
 *
 * A callback with an error, on_head with eos, and on_body with an end are
 * terminal: the exchange is inactive when they run, and the caller may
 * start a new exchange on the same storage from inside them. Any callback
 * may call rt_exchange_cancel(). Only on_connect may run from inside
 * rt_exchange_start (a kept-alive socket is ready at once; a connect may
 * fail at once); no callback runs from inside rt_exchange_cancel.
 *
 * A body is complete only when its framing says so: all content-length
 * bytes, the terminating 0-chunk of a chunked body, or the peer's close for
 * a body framed by the close. A peer close anywhere else (mid-chunk, after
 * a whole chunk, short of content-length) ends the exchange with an error.
 *
 * Body bytes accumulate in x->body; the caller takes them by consuming or
 * swapping the buffer (it then owns what it swapped out). The storage's own
 * buffer is released by rt_exchange_dispose().
 */
#ifndef SY_ROUTER_UPSTREAM_CLIENT_H
#define SY_ROUTER_UPSTREAM_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include <h2o.h>

struct rt_upstream;
struct rt_conn;
struct rt_exchange;

/* The end-of-body marker passed to on_body (compare by address). */
extern const char rt_exchange_eos[];

/* The connection could not be made (on_connect's error; compare by address). */
extern const char rt_exchange_connect_failed[];

/* The connection closed or was reset before the first response byte (on_head's
 * error; compare by address). */
extern const char rt_exchange_closed[];

/* The error of an exchange whose head timeout expired (compare by address;
 * passed to on_connect while connecting, to on_head afterwards). */
extern const char rt_exchange_timed_out[];

/* Callbacks of an exchange; `err` strings are static, safe to send to a
 * client (no worker URL). */
struct rt_exchange_cb {
	/* The connection is ready (err NULL), or cannot be made (terminal). */
	void (*on_connect)(struct rt_exchange *x, const char *err);
	/* The response head: status and headers (valid during the call only;
	 * a name is an h2o token when h2o knows it, see h2o_iovec_is_token).
	 * eos: no body follows (terminal). err: the connection failed before a
	 * complete head (terminal; status 0). */
	void (*on_head)(struct rt_exchange *x, const char *err, int status,
			const h2o_header_t *headers, size_t n, bool eos);
	/* More body bytes are in x->body (err NULL), or the body ended:
	 * err == rt_exchange_eos when complete, another string when it broke
	 * off (both terminal; bytes still in the buffer belong to the body). */
	void (*on_body)(struct rt_exchange *x, const char *err);
};

/* One exchange: caller-owned storage, prepared by rt_exchange_init().
 * `data` is the caller's. */
struct rt_exchange {
	const struct rt_exchange_cb *cb;
	void *data;
	bool active;                 /* started and not yet ended/cancelled */
	bool hold;                   /* connect only, until rt_exchange_send */
	bool fresh;                  /* a new connection, never a kept-alive one */
	bool connect_reported;       /* on_connect ran (once per exchange) */
	bool fresh_retry_done;       /* a reused socket died unanswered once already */
	h2o_iovec_t bufs[2];         /* request head + body (borrowed, must outlive the exchange) */
	struct rt_upstream *up;
	struct rt_conn *conn;        /* the connection while active, else NULL */
	h2o_buffer_t *body;          /* decoded body bytes */
	h2o_timeout_t *head_timeout; /* from start to the response head; NULL: none */
	h2o_timeout_entry_t head_timer;
};

/* Set-up for the process: the loop all exchanges run on, the idle
 * keep-alive timeout (ms) of pooled sockets (0: a socket is closed after
 * its response instead of kept) and a hook called each time a dead
 * kept-alive socket is replaced by a fresh connection (NULL: none). Call
 * once, before any exchange starts. */
void rt_client_init(h2o_loop_t *loop, uint64_t idle_ms, void (*on_replaced)(void));

/* Prepares the storage (an empty body buffer; no socket). */
void rt_exchange_init(struct rt_exchange *x, const struct rt_exchange_cb *cb, void *data);

/* Sends `head` + `body` (borrowed until the exchange ends) to `up` on a
 * kept-alive or new connection. `head_timeout` (NULL: none) bounds the time
 * until the response head, connect included; on expiry the exchange ends
 * with rt_exchange_timed_out. Results arrive through the callbacks. */
void rt_exchange_start(struct rt_exchange *x, struct rt_upstream *up, h2o_iovec_t head,
		       h2o_iovec_t body, h2o_timeout_t *head_timeout);

/* rt_exchange_start that stops once connected: on_connect reports the
 * connection (or its failure) and the request is written only by
 * rt_exchange_send() — so two exchanges can both be connected before
 * either request goes out (PD: the decode's connection exists before the
 * prefill body is sent). A failure while held ends the exchange through
 * on_head (rt_exchange_closed, rt_exchange_timed_out). `fresh`: make a new
 * connection even when a kept-alive one is idle (a kept-alive socket may
 * be dead without having told yet; a completed connect proves the peer
 * listens). */
void rt_exchange_connect(struct rt_exchange *x, struct rt_upstream *up, h2o_iovec_t head,
			 h2o_iovec_t body, h2o_timeout_t *head_timeout, bool fresh);

/* Writes the request of an exchange started with rt_exchange_connect (now,
 * or as soon as its connection is made). No-op otherwise. */
void rt_exchange_send(struct rt_exchange *x);

/* Aborts the exchange if active (its connection is closed, never reused);
 * no callback follows. Safe from inside a callback and when inactive. */
void rt_exchange_cancel(struct rt_exchange *x);

/* Cancels and releases the storage's buffer. */
void rt_exchange_dispose(struct rt_exchange *x);

#endif
