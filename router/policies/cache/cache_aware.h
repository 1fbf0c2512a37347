/* cache_aware.h — the cache-aware policy's parameters, source and counters
 * (reference/policy-defaults.md §2; SGLang policies_reorg/cache_aware.rs).
 * The algorithm is described at the top of cache_aware.c.
 *
 * A cache_aware policy instance is made by policy_init(POLICY_CACHE_AWARE)
 * with the reference defaults and the local source, then configured by the
 * generation builder (router/core/generation.c) with cache_aware_configure(). It refuses
 * decode groups (policy_init: SY_EINVAL; a pick on a decode stage:
 * PICK_INVALID_CONFIGURATION).
 */
#ifndef SY_ROUTER_POLICIES_CACHE_AWARE_H
#define SY_ROUTER_POLICIES_CACHE_AWARE_H

#include <stdbool.h>
#include <stdint.h>

#include "router/policies/cache/cache_source.h"
#include "router/policies/policy.h"

/* Reference defaults (§2). */
#define CACHE_AWARE_MIN_MATCHED_TOKENS 1024u
#define CACHE_AWARE_CANDIDATE_MIN_WORKERS 8u
#define CACHE_AWARE_CANDIDATE_RATIO 0.05
#define CACHE_AWARE_CANDIDATE_MAX_WORKERS 32u
#define CACHE_AWARE_SWITCH_MARGIN_TOKENS 1024u
#define CACHE_AWARE_MIN_LOAD_CHOICES 2u
#define CACHE_AWARE_PRESSURE_ABS_TOKENS 1024u
#define CACHE_AWARE_PRESSURE_REL 1.5
/* Predicted blocks (switchyard's; the reference has no predictions). */
#define CACHE_AWARE_PREDICTED_WEIGHT 1.0
#define CACHE_AWARE_PREDICTED_WINDOW_MS 2000u
#define CACHE_AWARE_PREDICTED_HALF_LIFE_MS 1000u

/* Parameters; "unset" values are negative. */
struct cache_aware_params {
	uint64_t min_matched_tokens;     /* tokens */
	double min_match_ratio;          /* matched / input; < 0 unset */
	uint32_t candidate_min_workers;
	double candidate_ratio;          /* of the group size */
	uint32_t candidate_max_workers;
	uint64_t switch_margin_tokens;   /* tokens */
	int64_t worker_queue_limit;      /* waiting requests; < 0 unset */
	int64_t saturation_queue_floor;  /* waiting requests; < 0 unset */
	uint32_t min_load_choices;       /* load fallback sample size, ≥ 1 */
	bool pressure_guard;             /* on by default */
	uint64_t pressure_abs_tokens;    /* tokens */
	double pressure_abs_ms;          /* ms; < 0 unset */
	double pressure_rel;             /* > 1 */
	/* Blocks a worker holds only by prediction (prefix_depth.predicted:
	 * dispatched there, no KV event yet) count predicted_weight each while
	 * their last prediction is at most predicted_window_ms old (the event
	 * latency: prefill plus publish delay), then the weight halves every
	 * predicted_half_life_ms (0: they stop counting after the window).
	 * Approximate-mode workers' predictions (no KV events will confirm
	 * them) count predicted_weight each, whatever their age: weight 0
	 * ignores predictions altogether. */
	double predicted_weight;         /* 0..1; default 1 (like a device block) */
	uint32_t predicted_window_ms;    /* ms; default 2000 */
	uint32_t predicted_half_life_ms; /* ms; default 1000 */
};

/* Decision labels of switchyard_cache_aware_decisions_total. */
enum cache_aware_decision {
	CACHE_AWARE_HIT = 0,          /* "cache_hit": a cache candidate won */
	CACHE_AWARE_MISS,             /* "cache_miss": no candidate, load fallback */
	CACHE_AWARE_WORKER_QUEUED,    /* "cache_worker_queued": candidates existed,
					 all held back by the soft queue gate;
					 load fallback */
	CACHE_AWARE_ALL_QUEUED,       /* "all_queued": saturation pin */
	CACHE_AWARE_DECISIONS_,
};

/* Load source a decision compared engines by (cache_monitor_decisions_total
 * {source}): every load the pick read was a fresh native report, or at
 * least one was not (or none was read), so router-local in-flight counts
 * decided. */
enum cache_monitor_source {
	CACHE_MONITOR_LOAD_REPORT = 0, /* "load_report" */
	CACHE_MONITOR_ROUTER_LOCAL,    /* "router_local" */
	CACHE_MONITOR_SOURCES_,
};

/* Histogram of the prefix depth a queue-gate diversion gave up
 * (switchyard_diverted_overlap_blocks): finite bucket edges in blocks,
 * powers of two 1 … 8192 (reference §10), then +Inf. */
#define CACHE_DIVERTED_EDGES 14
extern const uint64_t cache_diverted_edges[CACHE_DIVERTED_EDGES];

/* Process-local counters of one instance (metrics, tests). */
struct cache_aware_stats {
	uint64_t decisions[CACHE_AWARE_DECISIONS_];
	uint64_t monitor[CACHE_MONITOR_SOURCES_]; /* one per decision taken */
	uint64_t diverted[CACHE_DIVERTED_EDGES + 1]; /* non-cumulative; last = +Inf:
						       cache_worker_queued decisions by
						       the deepest gated candidate's blocks */
	uint64_t diverted_sum;          /* blocks */
	uint64_t admission_evaluated;   /* cache_admission_evaluated_total */
	uint64_t admission_rejected;    /* cache_admission_rejected_total */
	uint64_t guard_compared;        /* cache_pressure_guard_compared_total */
	uint64_t guard_override;        /* cache_pressure_guard_override_total */
	uint64_t invalid_signal;        /* rejected source answers */
	uint64_t no_admissible;         /* PICK_NO_ADMISSIBLE_ENGINE outcomes */
};

/* Static label of a decision ("cache_hit", ...). */
const char *cache_aware_decision_name(enum cache_aware_decision d);

/* Static label of a load source ("load_report", "router_local"). */
const char *cache_monitor_source_name(enum cache_monitor_source s);

/* Fills the reference defaults. */
void cache_aware_params_default(struct cache_aware_params *p);

/* Sets the parameters of a cache_aware instance and its source (`src`
 * borrowed, owned by the generation; NULL = the instance's local source).
 * Errors: SY_EINVAL (not a cache_aware instance, or parameters outside
 * their constraints: floor without limit or above it, rel ≤ 1, ratio ≤ 0,
 * min workers > max workers, min_load_choices 0, predicted_weight outside
 * 0..1). */
int cache_aware_configure(struct policy *p, const struct cache_aware_params *cp,
			  struct cache_source *src);

/* The instance's source (NULL when p is not cache_aware). */
struct cache_source *cache_aware_source(const struct policy *p);

/* The instance's counters (NULL when p is not cache_aware). */
const struct cache_aware_stats *cache_aware_get_stats(const struct policy *p);

/* Blocks a pick counts for a depth of `blocks` of which `predicted` are
 * held only by a prediction last made `age_ms` ago: (blocks − predicted) +
 * ⌊predicted × weight × 0.5^(max(0, age − window) / half_life)⌋ (half_life
 * 0: the predicted part is 0 past the window). predicted > blocks counts
 * as blocks. */
uint32_t cache_aware_weighted_blocks(const struct cache_aware_params *cp, uint32_t blocks,
				     uint32_t predicted, uint32_t age_ms);

/* Candidate bound of §2: min(n, max, max(min, ceil(ratio × n))). */
uint32_t cache_aware_candidate_limit(const struct cache_aware_params *cp, size_t n);

/* Set-up and teardown, called by policy_init / policy_destroy. */
int cache_aware_init(struct policy *p, const char **why);

#endif
