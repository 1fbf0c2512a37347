/* access_log.h — request IDs and the access log of a worker process.
 *
 * Access log (router.access_log, one file per router; each worker process
 * appends whole lines with one write(2), O_APPEND): one JSON object per
 * response, {"ts","request_id","method","path","route","status","worker",
 * "duration_ms","bytes","pid"}; "worker" is null for the router's own
 * answers. */
#ifndef SY_ROUTER_HTTP_ACCESS_LOG_H
#define SY_ROUTER_HTTP_ACCESS_LOG_H

#include <stdint.h>

#include <h2o.h>

#include "router/core/route.h"

/* Opens (O_APPEND, created 0644) the access log at `path` for this process;
 * a log already open is replaced. Returns 0, or -1 with errno. */
int rt_access_log_open(const char *path);

/* The request's ID: the value of the first --request-id-headers header
 * present (default: x-request-id) when it is 1..128 printable bytes, else
 * a generated "sy-<pid>-<seq>-<rand>". It is kept in the request headers
 * as x-request-id, so it travels upstream and back, and later calls find
 * it there. */
h2o_iovec_t rt_request_id(h2o_req_t *req);

/* Appends one line for `req` (answered with `status` by `worker`, a worker
 * ID or NULL, after `duration_ns`, `bytes_out` body bytes) when the access
 * log is configured. */
void rt_access_log(h2o_req_t *req, enum route route, int status, const char *worker,
		   uint64_t duration_ns, uint64_t bytes_out);

#endif
