/* forward.h — dispatch of a complete selection to its engine(s).
 *
 * The upstream path is one exchange of the upstream client per attempt
 * (router/upstream/client.h, DESIGN.md §8). Everything upstream-specific
 * lives behind rt_forward_start().
 *
 * Behaviour (DESIGN.md §4 step 6, reference/policy-defaults.md §7, §9,
 * sglang-wire.md §15):
 * - in-flight guards on the state plane (own row) for each chosen engine,
 *   released exactly once when the request's pool is disposed (completion,
 *   error, client cancel), or when a retry moves to another worker;
 * - header timeout (--request-timeout-secs) from dispatch to the response
 *   headers; stream idle timeout (--stream-idle-timeout-secs) between body
 *   reads; either cancels the upstream (504 upstream_timeout before the
 *   headers, a cut stream after);
 * - SSE and any body: each read is handed to h2o at once (one send in
 *   flight, the next read queued behind it), so chunks are not held back;
 * - client cancel aborts the upstream request (not a PD prefill);
 * - opt-in single retry (--retry-once) to another worker for failures
 *   before any byte reached the client; never for PD;
 * - PD: the body arrives with the prefill worker's bootstrap fields
 *   (router/dispatch/body_rewrite.h), the same body goes to both, prefill
 *   detached (its failure is logged), decode answer to the client, header x-sgl-decode-url on both upstream requests and the
 *   client response.
 */
#ifndef SY_ROUTER_FORWARD_H
#define SY_ROUTER_FORWARD_H

#include <h2o.h>

#include "router/core/generation.h"
#include "router/core/select.h"
#include "router/http/infer.h"

/* Forwards `req` (body `body`: the forwarded body, already rewritten by
 * the caller, borrowed from the request pool) to the
 * engine(s) of `sel` (copied; its strings borrow from `g`, which the
 * forward keeps referenced). `ir` is the prepared request (pool), for the
 * route, the receipt time and a retry's selection. `t_selected_ns` is when
 * selection ended: the dispatch stamp of the first attempt. Sends the
 * response (or an error) itself; returns 0. */
int rt_forward_start(h2o_req_t *req, struct router_gen *g, struct infer_request *ir,
		     const struct selection *sel, h2o_iovec_t body, uint64_t t_selected_ns);

#endif
