/* error.h — the error value every router step returns (prepare,
 * resolve, pick, select), mapped 1:1 to the HTTP error body by the data
 * plane: {"error":{"type","code","message","details"?}} plus header
 * `x-router-error-code: <code>` (DESIGN.md §9, reference/policy-defaults.md §8).
 *
 * Rules
 * - `code` is a static string of DESIGN.md §9 ("bad_request",
 *   "no_matching_bucket", "model_not_found", "no_healthy_workers",
 *   "no_prefill_workers_available", "no_decode_workers_available",
 *   "policy_selection_failed", "internal_error"); `type` follows from the
 *   status (router_error_type()).
 * - `message` never contains a worker URL (decision headers and `details` do
 *   name workers; messages do not). It names the JSON field or header at fault
 *   ("messages[2].role: expected a string").
 * - `offset` is the byte offset in the request body where the problem was
 *   found (malformed JSON: where yajl stopped; a bad field: just after the
 *   offending token), or -1 when the error is not about a body position.
 * - `details` lists admission rejections for 503 policy_selection_failed:
 *   one {worker, limit} per rejected pick, in the order they happened, at
 *   most ROUTER_ERROR_MAX_DETAILS (n_details_total counts all of them).
 * Plain value, no pointers into other objects except the static strings:
 * copy freely, keep it on the stack (≈ 4.7 KiB) or in the request pool.
 */
#ifndef SY_ROUTER_ROUTER_ERROR_H
#define SY_ROUTER_ROUTER_ERROR_H

#include <stddef.h>
#include <stdint.h>

#include "statebus-t.h"

#define ROUTER_ERROR_MSG_MAX 256
#define ROUTER_ERROR_MAX_DETAILS 16

/* One admission rejection: which worker, which cap ("max_running_requests",
 * ...; static string from admission_limit_name()). */
struct router_rejection {
	char worker[STATEBUS_WORKER_ID_MAX]; /* worker ID (normalised URL) */
	const char *limit;                   /* static cap name */
};

struct router_error {
	int status;                        /* HTTP status: 400, 404, 500, 503 */
	const char *code;                  /* static error code (see above) */
	char message[ROUTER_ERROR_MSG_MAX]; /* NUL-terminated, no worker URLs */
	int64_t offset;                    /* body byte offset, or -1 */
	size_t n_details;                  /* entries used in details[] */
	size_t n_details_total;            /* rejections seen (≥ n_details) */
	struct router_rejection details[ROUTER_ERROR_MAX_DETAILS];
};

/* Resets `e` to "no error" (status 0, code NULL, empty message, offset -1,
 * no details). */
void router_error_clear(struct router_error *e);

/* Sets status, code, offset and a printf-formatted message (truncated to
 * fit). Keeps details. Returns `status` for convenience. */
int router_error_set(struct router_error *e, int status, const char *code, int64_t offset,
		     const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Appends one rejection (worker ID copied, truncated to fit; limit static).
 * Beyond ROUTER_ERROR_MAX_DETAILS only n_details_total grows. */
void router_error_add_rejection(struct router_error *e, const char *worker, const char *limit);

/* "invalid_request_error" for 4xx, "server_error" otherwise (reference §8). */
const char *router_error_type(int status);

#endif
