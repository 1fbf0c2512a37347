/* edge.h — the client edge of a worker process: what every connection
 * passes before a route runs (edge.c).
 *
 * - Strict HTTP/1 framing (RFC 9112 §6.3): more than one Transfer-Encoding,
 *   Transfer-Encoding with Content-Length, conflicting or malformed
 *   Content-Length, a transfer coding other than chunked → 400 and the
 *   connection closed, before any body byte is read; a chunk size that
 *   cannot be a length (≥ 2^63) → 400.
 * - The body limit (router.max_body_bytes) at the headers for a declared
 *   length (413 without `100 Continue`) and as a chunked body arrives.
 * - The process's request-body budget (router.max_pending_body_bytes):
 *   bytes of request bodies held by all connections of the process; a body
 *   that does not fit → 503 service_overloaded with Retry-After.
 * - HTTP/2: the reset budget per connection (rapid reset) and the same
 *   body budget (edge_h2.c).
 *
 * A refusal found while h2o reads a request becomes a verdict of the
 * connection; h2o answers it through its own error path and the output
 * filter (oversize.c) turns that into the verdict's JSON error.
 */
#ifndef SY_ROUTER_HTTP_EDGE_H
#define SY_ROUTER_HTTP_EDGE_H

#include <stdbool.h>
#include <stdint.h>

#include <h2o.h>

/* A refusal of the edge: the response that replaces h2o's own error. */
struct rt_edge_verdict {
	int status;              /* 400, 413, 503; 0: none */
	const char *code;        /* static error code */
	unsigned retry_after;    /* seconds for Retry-After; 0: no header */
	char message[160];       /* NUL-terminated */
};

/* Sets `v` (message printf-formatted, truncated). */
void rt_edge_verdict_set(struct rt_edge_verdict *v, int status, const char *code,
			 unsigned retry_after, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* Limits of the edge from the configuration (start and every reload), in
 * bytes: the body limit, the process's body budget, and h2o's own limit of
 * an HTTP/2 stream's body. */
void rt_edge_configure(uint64_t max_body_bytes, uint64_t max_pending_body_bytes,
		       uint64_t h2_stream_limit);

/* HTTP/2 connections refused by the edge (resets or bodies past the
 * budgets) since the process started. */
uint64_t rt_edge_h2_refused(void);

/* Checks that h2o's calls into picohttpparser and h2o_socket_read_start /
 * read_stop reach the edge (they are interposed: see edge.c). Returns 0, or -1 with
 * the reason in err. */
int rt_edge_selfcheck(char *err, size_t cap);

/* Accepts `sock` from a listener (`admin`: the admin listener): attaches
 * the edge's connection state, then hands the socket to h2o (h2o_accept
 * on `ctx`). */
void rt_edge_accept(h2o_accept_ctx_t *ctx, h2o_socket_t *sock, bool admin);

/* Whether req's connection came from the admin listener. */
bool rt_edge_is_admin(h2o_req_t *req);

/* At the start of a route: the body bytes the edge counted for `req` now
 * belong to `req` and return to the budget when its pool is cleared. */
void rt_edge_adopt_body(h2o_req_t *req);

/* The pending verdict of req's connection (taken: a second call returns
 * NULL), or NULL. */
bool rt_edge_take_verdict(h2o_req_t *req, struct rt_edge_verdict *out);

/* Request-body bytes held by this process (the budget's use). */
uint64_t rt_edge_pending_bytes(void);

#endif
