/* forward.h — dispatch of a complete selection to its engine(s).
 *
 * The upstream path is one exchange of the upstream client per attempt
 * (router/upstream/client.h, DESIGN.md §8). Everything upstream-specific
 * lives behind rt_forward_start().
 *
 * Behaviour (DESIGN.md §4 step 6, §9; reference/policy-defaults.md §7, §9;
 * sglang-wire.md §15):
 * - in-flight guards on the state plane (own row) for each chosen engine,
 *   released exactly once: when the attempt ends or moves on (retry), or
 *   when the request's pool is disposed (completion, error, client cancel);
 * - header timeout (--request-timeout-secs) from dispatch to the response
 *   headers; stream idle timeout (--stream-idle-timeout-secs) between body
 *   reads; either cancels the upstream (504 upstream_timeout before the
 *   headers, a cut stream after);
 * - passive health: a connect failure, a close before the first response
 *   byte or a head timeout marks the worker down in the region; every
 *   result feeds the worker's breaker there; bytes feed stall detection;
 * - SSE: each read is handed to h2o at once (one send in flight, the next
 *   read queued behind it); any other body is held until complete (bounded
 *   by router.max_body_bytes), so a body cut after its head is a 502
 *   upstream_body_incomplete;
 * - retries (router.retry_max_retries, --retry-once = 1; SMG's backoff
 *   flags): a failure before any byte reached the client — connect error,
 *   close before the head, head timeout, status 408/429/500/502/503/504 —
 *   is re-dispatched to a worker not tried yet, chosen by selection with
 *   the failed ones excluded; a PD attempt only while neither leg was sent;
 * - client gone (HTTP/1 watched, router/http/client_watch.h; HTTP/2 reset):
 *   within ~50 ms the upstream request(s) are aborted (connection closed),
 *   the guards released, outcome `cancelled` — both legs for PD;
 * - PD (pd.c): the body carries the prefill worker's bootstrap fields
 *   (router/dispatch/body_rewrite.h); both connections are made before
 *   either request is written; a failure of either leg aborts the other;
 *   the decode answers the client; header x-sgl-decode-url on both upstream
 *   requests and the client response; a decode that completes lets its
 *   prefill finish on its own.
 */
#ifndef SY_ROUTER_FORWARD_H
#define SY_ROUTER_FORWARD_H

#include <h2o.h>

#include "router/core/generation.h"
#include "router/core/select.h"
#include "router/http/infer.h"

/* Forwards `req` (body `body`: the forwarded body, already rewritten by
 * the caller, borrowed from the request pool; `room` its first PD
 * bootstrap_room, 0 when not PD) to the
 * engine(s) of `sel` (copied; its strings borrow from `g`, which the
 * forward keeps referenced). `ir` is the prepared request (pool), for the
 * route, the receipt time and a retry's selection. `t_selected_ns` is when
 * selection ended: the dispatch stamp of the first attempt. Sends the
 * response (or an error) itself; returns 0. */
int rt_forward_start(h2o_req_t *req, struct router_gen *g, struct infer_request *ir,
		     const struct selection *sel, h2o_iovec_t body, uint64_t room,
		     uint64_t t_selected_ns);

#endif
