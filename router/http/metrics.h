/* metrics.h — the router's Prometheus metrics, summed over its processes.
 *
 * Storage: one MAP_SHARED|MAP_ANONYMOUS mapping created by the master before
 * it forks, so every worker process (and every restarted one) sees the same
 * bytes; it dies with the router. Each worker process adds only to its own
 * row (index = worker index, kept across restarts so counters stay
 * monotonic), with single-writer adds (a relaxed atomic load and store, no
 * locked read-modify-write: the row has one writer); /metrics, served by whichever
 * process gets the scrape, sums every row. Names and labels follow
 * reference/policy-defaults.md §10 with the `switchyard_` prefix.
 *
 * Why not a table in the state-plane region: these counters belong to one
 * router instance (a Prometheus target), while the region is per host and
 * may serve several router instances; a private mapping also needs no
 * region layout change. In-flight gauges do come from the region.
 *
 * Label sets that are open-ended (policy reason, error code) are interned in
 * a small shared string table (RT_METRICS_LABELS entries, CAS-claimed); a
 * label that does not fit is counted under "other".
 */
#ifndef SY_ROUTER_METRICS_H
#define SY_ROUTER_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "router/worker.h"

#define RT_METRICS_LABELS 64     /* interned label strings */
#define RT_METRICS_LABEL_MAX 64  /* bytes incl. NUL */
#define RT_HIST_BUCKETS 16       /* finite bucket edges per histogram (+Inf implicit) */

/* Status classes counted per route (switchyard_responses_total). */
#define RT_STATUS_SLOTS 12

/* Outcome of a request at a worker (switchyard_worker_requests_total). */
enum rt_outcome {
	RT_OUT_SUCCESS = 0,      /* 2xx/3xx */
	RT_OUT_CLIENT_ERROR,     /* 4xx except 429 */
	RT_OUT_BACKPRESSURE,     /* 429, 503 */
	RT_OUT_ERROR,            /* 5xx, connect/timeout/body errors */
	RT_OUT_CANCELLED,        /* the client went away */
	RT_OUT_COUNT_
};

/* Router overhead phases (switchyard_router_phase_seconds{phase}). */
enum rt_phase {
	RT_PHASE_PREPARE = 0,    /* body scan + validation (incl. tokenize, hash) */
	RT_PHASE_TOKENIZE,       /* tokenization alone (when reported) */
	RT_PHASE_HASH,           /* block-hash chain + prefix lookup (when reported) */
	RT_PHASE_PICK,           /* bucket resolve + picks + admission */
	RT_PHASE_CONNECT,        /* upstream socket (pool hit or connect) */
	RT_PHASE_TTFB,           /* dispatch → upstream response headers */
	RT_PHASE_COUNT_
};

/* Stream outcomes (switchyard_stream_outcome_total{outcome}). */
enum rt_stream_outcome {
	RT_STREAM_COMPLETE = 0,
	RT_STREAM_CLIENT_CANCEL,
	RT_STREAM_UPSTREAM_ERROR,
	RT_STREAM_IDLE_TIMEOUT,
	RT_STREAM_COUNT_
};

/* Input-ids forwarding of a dispatched chat request
 * (switchyard_input_ids_forwarding_total{outcome}). */
enum rt_input_ids {
	RT_INPUT_IDS_FORWARDED = 0, /* the body carried the router's token ids */
	RT_INPUT_IDS_DISABLED,      /* router.disable_input_ids_forwarding */
	RT_INPUT_IDS_INELIGIBLE,    /* tokenizer not hf with a known template, or a
				       request shape SGLang does not forward */
	RT_INPUT_IDS_COUNT_
};

/* Creates the shared mapping for `procs` rows and `max_workers` per-worker
 * cells (master, before fork). Returns NULL on failure (errno set). */
struct rt_metrics *rt_metrics_create(unsigned procs, unsigned max_workers);

/* Recording, from worker process `row` (rt_w.index). Out-of-range indexes
 * are ignored; all never block. */
void rt_metrics_request(struct rt_metrics *m, unsigned row, enum route route);
void rt_metrics_response(struct rt_metrics *m, unsigned row, enum route route, int status);
void rt_metrics_worker(struct rt_metrics *m, unsigned row, uint32_t worker_slot,
		       enum rt_outcome outcome);
/* One policy decision of stage `stage` (enum engine_stage: 0 plain, 1
 * prefill, 2 decode; a PD request records two). */
void rt_metrics_decision(struct rt_metrics *m, unsigned row, unsigned stage, const char *policy,
			 const char *reason);
/* The stage label ("plain", "prefill", "decode", "other") of interned
 * decision label i. */
const char *rt_metrics_decision_stage(const struct rt_metrics *m, unsigned i);
void rt_metrics_selection_failure(struct rt_metrics *m, unsigned row, const char *code);
void rt_metrics_duration(struct rt_metrics *m, unsigned row, uint64_t ns);
/* The edge's figures of process `row`: body bytes held now (a gauge) and
 * HTTP/2 connections refused since the last call. */
void rt_metrics_edge(struct rt_metrics *m, unsigned row, uint64_t pending_body_bytes,
		     uint64_t h2_refused_delta);
void rt_metrics_ttft(struct rt_metrics *m, unsigned row, uint64_t ns);
void rt_metrics_phase(struct rt_metrics *m, unsigned row, enum rt_phase phase, uint64_t ns);
void rt_metrics_stream(struct rt_metrics *m, unsigned row, enum rt_stream_outcome o);
void rt_metrics_retry(struct rt_metrics *m, unsigned row);
/* A dead kept-alive upstream socket was replaced (upstream/client.h). */
void rt_metrics_pool_replaced(struct rt_metrics *m, unsigned row);
/* The router queue (queue_run.h): 4 classes (system, interactive,
 * default, bulk), 4 outcomes (admitted, timed_out, cancelled,
 * rejected_full: enum statebus_queue_outcome). Tenant labels are interned
 * ("t:" kind), at most RT_QUEUE_TENANT_LABELS of them, then "other". */
#define RT_QUEUE_CLASSES 4
#define RT_QUEUE_OUTCOMES 4
#define RT_QUEUE_TENANT_LABELS 16
/* A request of class `cls` left the queue with `outcome` after `waited_ns`
 * (not added to the wait histogram when `no_wait`: refused on arrival). */
void rt_metrics_queue(struct rt_metrics *m, unsigned row, unsigned cls, unsigned outcome,
		      uint64_t waited_ns, bool no_wait);
/* The label index of `tenant` (interned, or the "other" index). */
unsigned rt_metrics_queue_tenant_label(struct rt_metrics *m, const char *tenant);
/* Queue depth gauges: class `cls` and tenant label `label` move by `delta`. */
void rt_metrics_queue_depth(struct rt_metrics *m, unsigned row, unsigned cls, unsigned label,
			    int delta);
/* Zeroes row `row`'s queue depth gauges (a worker process starting in the
 * row of one that ended: its waiting requests are gone). */
void rt_metrics_queue_reset(struct rt_metrics *m, unsigned row);
/* A client went away before its inference answer ended. */
void rt_metrics_client_cancel(struct rt_metrics *m, unsigned row);
void rt_metrics_sampling_rejection(struct rt_metrics *m, unsigned row, const char *param);
/* A request ended by the whole-request timeout (--request-timeout-secs):
 * switchyard_stale_requests_total{outcome="expired"}. */
void rt_metrics_stale_request(struct rt_metrics *m, unsigned row);
/* `n` picks of one selection were redone in their group because the picked
 * worker had been removed since the fleet snapshot (selection.reselected). */
void rt_metrics_reselected(struct rt_metrics *m, unsigned row, uint32_t n);
/* The input-ids outcome of one dispatched chat request. */
void rt_metrics_input_ids(struct rt_metrics *m, unsigned row, enum rt_input_ids o);

/* Adds one process's cache counter deltas (router_gen_cache_delta,
 * router/core/generation.h) to row `row`: cache_aware decisions, admission and
 * pressure-guard counts, digest memo hits/misses, prefix-source outcomes. */
struct router_cache_totals;
void rt_metrics_cache(struct rt_metrics *m, unsigned row, const struct router_cache_totals *delta);

/* Outcome class of an upstream HTTP status. */
enum rt_outcome rt_outcome_of_status(int status);

/* Renders the exposition (Prometheus text 0.0.4) into a malloc'd buffer:
 * every row summed, plus gauges read from `region` (may be NULL): workers,
 * worker health, in-flight per worker, breaker state via `cb_state(slot)`
 * (may be NULL). `names` (enum sy_metrics_names) picks switchyard's
 * families, the SGLang router's (docs/router.md "Metric names"), or both.
 * *out / *len receive the text; returns 0 or SY_ENOMEM. */
int rt_metrics_render(struct rt_metrics *m, struct statebus_region *region,
		      int (*cb_state)(uint32_t slot), int names, char **out, size_t *len);

#endif
