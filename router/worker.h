/* worker.h — the data plane of switchyard-router: one worker process.
 *
 * Process model (DESIGN.md §1, §9): a master (main.c) forks N worker
 * processes that share one listening socket; each worker runs one h2o event
 * loop (worker.c) and owns one proc slot (= in-flight row) of the state
 * plane. Everything here is per worker process and single-threaded; the
 * only memory shared between processes is the state-plane region and the
 * router's metrics mapping (metrics.h), both written with atomics.
 *
 * Invariants
 * - A request holds a reference to the configuration generation it started
 *   with (struct router_gen, refcounted); a SIGHUP reload installs a new one in
 *   router_worker.gen and the old one is freed when its last request ends.
 * - Every in-flight guard taken on the state plane is released exactly once,
 *   by the dispose callback of the request's memory pool (forward.c), so a
 *   completed, failed or cancelled request releases in one place.
 * - Error messages sent to clients never contain worker URLs; the decision
 *   headers do (unless --no-decision-headers).
 */
#ifndef SY_ROUTER_ROUTER_H
#define SY_ROUTER_ROUTER_H

#include <stdbool.h>
#include <stdint.h>

#include <h2o.h>

#include "common/config.h"
#include "router/core/route.h"
#include "statebus/include/statebus.h"

struct rt_metrics;
struct router_gen;
struct rt_upstreams;

/* Installs the filter that turns h2o's own plain-text 413 (body over
 * max_request_entity_size) into the router's JSON payload_too_large, on
 * path `pc` and on the host's fallback path (oversize.c). */
void rt_oversize_install(h2o_hostconf_t *hc, h2o_pathconf_t *pc);

/* One worker process of the router. A single static instance per process
 * (worker.c); fields are read by every module of the data plane. */
struct router_worker {
	unsigned index;                 /* 0..processes-1, stable across restarts */
	struct router_gen *gen;             /* current generation (one reference held) */
	char **argv;                    /* the master's argv, for reloads */
	int argc;

	struct statebus_region *region; /* attached region; NULL when unusable */
	uint32_t proc_slot;             /* own proc slot = in-flight row */

	h2o_evloop_t *loop;
	h2o_globalconf_t hconf;
	h2o_context_t hctx;
	h2o_accept_ctx_t accept_ctx;
	h2o_socket_t *listener;         /* NULL once draining stopped accepting */
	int listen_fd;
	h2o_socket_t *admin_listener;   /* --admin-port: admin routes only; NULL: none */
	int admin_listen_fd;            /* -1: no admin listener (set before rt_worker_main) */
	/* The metrics listener (--prometheus-port): GET /metrics, /health,
	 * /liveness, /readiness only. -1 / NULL when off. */
	int metrics_listen_fd;
	h2o_socket_t *metrics_listener;
	h2o_accept_ctx_t metrics_accept_ctx;

	/* Upstream timeouts (forward.c, admin.c; the upstream client is
	 * router/upstream/client.h). */
	h2o_timeout_t head_timeout;      /* --header-timeout-secs: until response headers */
	h2o_timeout_t request_timeout;   /* --request-timeout-secs: the whole request */
	h2o_timeout_t idle_timeout;      /* --stream-idle-timeout-secs: between body reads */
	h2o_timeout_t prefill_timeout;   /* detached PD prefill, whole request */
	struct rt_upstreams *upstreams;  /* connection facts and idle sockets per worker (pool.h) */

	struct rt_metrics *metrics;      /* shared metrics mapping (metrics.c) */

	bool draining;                   /* SIGTERM: /readyz 503, no new accepts */
	uint64_t drain_deadline_ns;
	uint64_t active_requests;        /* inference requests of this process in flight */
	int pid;                         /* getpid() of this worker, read once */
};

/* The process's worker (worker.c). */
extern struct router_worker rt_w;

/* Runs worker process `index` on listening socket `listen_fd` with the
 * configuration generation `gen` (its reference taken) until drained or
 * told to stop. Returns the process exit status. */
int rt_worker_main(unsigned index, int listen_fd, struct router_gen *gen, int argc, char **argv);

#endif
