/* error_body.h — the JSON body of the router's error value (struct
 * router_error, router/core/error.h) and the code table (DESIGN.md §9,
 * reference/policy-defaults.md §8). Pure formatting, no h2o:
 * response.c sends what this writes, the oversize filter and the
 * unit tests use it directly.
 *
 *   {"error":{"type":"invalid_request_error"|"server_error","code":CODE,
 *             "message":MSG[,"details":[{"worker":ID,"limit":CAP},...]]}}\n
 * type: router_error_type(status). Strings are JSON-escaped (control bytes
 * as \u00XX); "details" is present when the error lists admission
 * rejections (503 policy_selection_failed).
 */
#ifndef SY_ROUTER_ERROR_BODY_H
#define SY_ROUTER_ERROR_BODY_H

#include "router/core/buf.h"
#include "router/core/error.h"

/* Appends the body of error `e` to `b` (b->oom set on allocation
 * failure). A NULL code is sent as internal_error. */
void rt_error_body(struct rt_buf *b, const struct router_error *e);

/* The status every router error code is sent with (DESIGN.md §9 and the
 * data plane's own codes: not_found 404, worker_not_found 404,
 * method_not_allowed 405, worker_exists 409, unauthorized 401, draining
 * 503); 0 for an unknown code. rt_send_error() warns when a code is sent
 * with another status. */
int rt_error_code_status(const char *code);

#endif
