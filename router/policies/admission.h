/* admission.h — hard admission caps of an engine group's policy
 * (reference/policy-defaults.md §5; SGLang policies_reorg/admission.rs,
 * PR #40271 `AdmissionLimits`).
 *
 * Five optional caps; an absent cap (ADMISSION_NO_CAP) admits everything:
 *   cap                         observed metric
 *   max_running_requests        running requests, fresh basic report
 *   max_waiting_requests        waiting requests, fresh basic report
 *   max_kv_tokens               native num_total_tokens (V3)
 *   max_pending_prefill_tokens  native num_waiting_uncached_tokens (V3)
 *   max_inflight_requests       router-local in-flight (always known)
 * metric ≥ cap → reject, naming the cap. An unknown metric (no fresh report,
 * or no native view for the native caps) fails open. Checks never reserve
 * capacity. Caps are checked in the order above; the first that rejects is
 * named. Unknown configuration keys are refused by the configuration schema
 * (common/config.c, policy.admission / groups.*.policy.admission).
 * Legacy `--filter overloaded --max-in-flight N` maps to
 * max_inflight_requests = N (config_flags.c / sy_config_finish).
 */
#ifndef SY_ROUTER_POLICIES_ADMISSION_H
#define SY_ROUTER_POLICIES_ADMISSION_H

#include <stdbool.h>
#include <stdint.h>

#define ADMISSION_NO_CAP (-1) /* an absent cap */

/* Caps in their units (requests, tokens); ADMISSION_NO_CAP when absent. */
struct admission_limits {
	int64_t max_running_requests;
	int64_t max_waiting_requests;
	int64_t max_kv_tokens;
	int64_t max_pending_prefill_tokens;
	int64_t max_inflight_requests;
};

/* Which cap rejected (ADMIT_OK: admitted). */
enum admission_limit {
	ADMIT_OK = 0,
	ADMIT_MAX_RUNNING_REQUESTS,
	ADMIT_MAX_WAITING_REQUESTS,
	ADMIT_MAX_KV_TOKENS,
	ADMIT_MAX_PENDING_PREFILL_TOKENS,
	ADMIT_MAX_INFLIGHT_REQUESTS,
};

/* One engine's load as a policy sees it during one pick (a snapshot: read
 * once per pick from statebus_load_view + statebus_inflight_sum, see
 * pick_ctx_load() in policy.h). Unknown is never zero: check the flags. */
struct engine_load {
	bool fresh;            /* every expected DP rank reported within 5 s */
	bool native;           /* fresh and V3 on every rank with max_total > 0
				  and max_running > 0 (sglang-wire.md §13) */
	bool scraped;          /* fresh from vLLM's /metrics on every rank (the
				  scraped view): running, waiting, KV usage;
				  no pending tokens, no queue time */
	bool has_kv;           /* kv_used / kv_capacity known: native, or
				  scraped with a KV capacity > 0 */
	bool has_queue_ms;     /* native and a derived prefill throughput > 0 */
	uint64_t running;      /* Σ num_running_reqs (fresh) */
	uint64_t waiting;      /* Σ num_waiting_reqs (fresh) */
	uint64_t kv_used;      /* Σ num_total_tokens (native) or KV usage ×
				  capacity (scraped), KV tokens in use (has_kv) */
	uint64_t kv_capacity;  /* Σ max_total_num_tokens (has_kv), tokens */
	uint32_t kv_usage_ppm; /* scraped: mean KV usage over ranks × 10^6 */
	uint64_t pending;      /* Σ num_waiting_uncached_tokens (native), tokens */
	double queue_ms;       /* estimated_prefill_queue_ms = 1000·pending/throughput */
	int64_t local_active;  /* router-local in-flight (Σ rows), always known */
	uint64_t dispatches_since_capture; /* fresh: dispatches of every router
				  process to this worker after the report's
				  captured_at (Σ in-flight dispatch counters now −
				  the sum stored with the oldest rank's report;
				  load_based's dispatch correction, sglang-wire.md §13) */
};

/* Whether the pressure comparison reads `l`'s engine figures (native or
 * scraped), not only its router-local count. */
static inline bool engine_load_comparable(const struct engine_load *l)
{
	return l->native || l->scraped;
}

/* No caps at all. */
void admission_limits_none(struct admission_limits *l);

/* The admission decision for one engine: ADMIT_OK or the cap that rejects. */
enum admission_limit engine_admission_check(const struct admission_limits *l,
					    const struct engine_load *load);

/* Static name of a cap ("max_running_requests", ...); "ok" for ADMIT_OK. */
const char *admission_limit_name(enum admission_limit lim);

#endif
