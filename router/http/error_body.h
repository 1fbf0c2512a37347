/* error_body.h — the router's JSON error body and its code table (DESIGN.md
 * §9, reference/policy-defaults.md §8). Pure formatting, no h2o: errors.c
 * sends what this writes, the oversize filter (oversize.c) and the unit
 * tests use it directly.
 *
 *   {"error":{"type":"invalid_request_error"|"server_error","code":CODE,
 *             "message":MSG[,"details":DETAILS]}}\n
 * type: invalid_request_error for 4xx, server_error otherwise. Strings are
 * JSON-escaped (control bytes as \u00XX); details_json is copied verbatim
 * and must itself be valid JSON.
 */
#ifndef SY_ROUTER_ERROR_BODY_H
#define SY_ROUTER_ERROR_BODY_H

#include "router/core/buf.h"

/* Appends the error body to `b` (b->oom set on allocation failure). */
void rt_error_body(struct rt_buf *b, int status, const char *code, const char *message,
		   const char *details_json);

/* The status every router error code is sent with (DESIGN.md §9 and the
 * data plane's own codes: not_found 404, worker_not_found 404,
 * method_not_allowed 405, worker_exists 409, unauthorized 401, draining
 * 503); 0 for an unknown code. rt_send_error() warns when a code is sent
 * with another status. */
int rt_error_code_status(const char *code);

#endif
