/* prefix_wait.h — the event-loop side of remote prefix lookups (DESIGN.md §4
 * step 3; docs/query.md): a worker process watches each indexer source's
 * ZeroMQ socket in its h2o loop, and a request whose prefix memo has pending
 * indexer entries waits on a timer instead of blocking the loop.
 *
 *   rt_prefix_wait_bind   once per worker process: the binding of
 *                         cache_source_set_loop — each indexer socket's
 *                         ZMQ_FD (a dup of it, so that closing the h2o socket
 *                         never closes ZeroMQ's fd) becomes an h2o socket
 *                         with H2O_SOCKET_FLAG_DONT_READ; readable →
 *                         cache_source_drain (replies matched by id).
 *   rt_prefix_wait_open   per generation installed: opens its indexer
 *                         sockets now, so that a first request finds a
 *                         connection (a query that cannot be sent at once is
 *                         unavailable, unreachable).
 *   rt_prefix_wait_start  per waiting request: sets the memo's on_ready and
 *                         links one h2o timeout at the memo's latest
 *                         deadline; whichever comes first — the last reply,
 *                         or the deadline (pending entries then time out:
 *                         unavailable, timeout) — calls `resume` from a timer
 *                         callback of the loop (never from inside a drain),
 *                         with no entry pending.
 *   rt_prefix_wait_stop   unlinks the timer and clears on_ready (the request
 *                         ended, or resumed); the caller cancels the memo.
 *
 * Lifetime: a struct rt_prefix_wait lives in the request (struct
 * infer_request, the request pool) with its memo; the request's dispose
 * callback stops it, so no timer or waiter outlives the request. One event
 * loop per process; not thread-safe. The ZeroMQ and memo logic stays in
 * router/policies/cache/cache_source.c, free of h2o.
 */
#ifndef SY_ROUTER_HTTP_PREFIX_WAIT_H
#define SY_ROUTER_HTTP_PREFIX_WAIT_H

#include <stdbool.h>

#include <h2o.h>

#include "router/policies/cache/cache_source.h"

struct router_gen;

/* One request waiting for its prefix memo. Zero-initialise. */
struct rt_prefix_wait {
	h2o_timeout_entry_t timer;     /* deadline, then the zero-delay resume */
	struct prefix_memo *memo;      /* borrowed: the request's */
	void (*resume)(struct rt_prefix_wait *w); /* called once, from the loop */
	bool active;                   /* between start and stop / resume */
};

/* Binds this process's indexer sockets to `loop` (borrowed; lives as long
 * as the process). Call once, before the first request. */
void rt_prefix_wait_bind(h2o_evloop_t *loop);

/* Opens the indexer sockets of `g` in this process (failures are left to
 * the first lookup, which reports them as unreachable). */
void rt_prefix_wait_open(struct router_gen *g);

/* Starts waiting for memo `m` (m->n_pending > 0): `resume(w)` is called
 * once from a timer callback when no entry is pending any more. */
void rt_prefix_wait_start(struct rt_prefix_wait *w, struct prefix_memo *m,
			  void (*resume)(struct rt_prefix_wait *w));

/* Stops waiting (no-op when not active): the timer is unlinked, the memo's
 * on_ready cleared; its pending entries stay pending (prefix_memo_cancel). */
void rt_prefix_wait_stop(struct rt_prefix_wait *w);

#endif
