/* response.h — the responses the router writes itself: the error value as
 * the error response of DESIGN.md §9, and plain bodies. Every one carries
 * x-request-id, is counted in the metrics and written to the access log.
 */
#ifndef SY_ROUTER_HTTP_RESPONSE_H
#define SY_ROUTER_HTTP_RESPONSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <h2o.h>

#include "router/core/buf.h"
#include "router/core/error.h"
#include "router/core/route.h"

/* Sends error `e`: its status, the body of router/http/error_body.h and
 * header x-router-error-code: CODE. A code sent with another status than
 * the code table's is logged as a warning. Always returns 0 (the h2o
 * handler's "handled"). */
int rt_send_error(h2o_req_t *req, enum route route, const struct router_error *e);

/* rt_send_error for a request that was dispatched: the access log names
 * `worker` (the last worker tried, NULL: none) and `duration_ns` (receipt
 * to now). */
int rt_send_error_at(h2o_req_t *req, enum route route, const struct router_error *e,
		     const char *worker, uint64_t duration_ns);

/* rt_send_errorf with the access-log facts of rt_send_error_at. */
int rt_send_dispatch_errorf(h2o_req_t *req, enum route route, const char *worker,
			    uint64_t duration_ns, int status, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));

/* Sends an error with `status`, static `code` and a printf-formatted
 * message (no worker URLs, truncated to ROUTER_ERROR_MSG_MAX). Returns 0. */
int rt_send_errorf(h2o_req_t *req, enum route route, int status, const char *code,
		   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Sends `status` with `body` (`len` bytes, copied into the pool) and
 * content-type `ctype` (NULL: none). Returns 0. */
int rt_send_body(h2o_req_t *req, enum route route, int status, const char *ctype,
		 const char *body, size_t len);

/* Sends 200 application/json with b's text, or 500 internal_error when b
 * ran out of memory; frees b. Returns 0. */
int rt_send_json(h2o_req_t *req, enum route route, struct rt_buf *b);

/* Sends 400 bad_request for a missing or empty request body, 413
 * payload_too_large for one over max_body_bytes; returns true when it did. */
bool rt_body_refused(h2o_req_t *req, enum route route, uint64_t max_body_bytes);

/* Reason phrase of an HTTP status ("OK", "Bad Request", ...). */
const char *rt_reason(int status);

#endif
