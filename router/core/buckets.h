/* buckets.h — buckets, engine groups and the resolver of the target design
 * (reference/policy-defaults.md §6; SGLang src/buckets_reorg.rs:
 * BucketResolver::resolve, Bucket::pick_engines, EngineGroup::pick).
 *
 * A bucket has an ID, a rank, inclusive input-token limits {min, max},
 * max_context_tokens, optional TTFT / TPS estimates and either one plain
 * group or a prefill + decode pair. A group owns its membership (all workers
 * of the model and role, or an explicit ID set) and one policy instance.
 * Buckets and groups are built by router_gen_build() (router/core/generation.h) and live
 * in a generation; groups hold mutable policy state (process-local).
 *
 * Resolution (bucket_resolver_resolve), per model — the buckets that name
 * the request's model in `models`, or, when none names it, the buckets
 * without `models`:
 *   1. peak < input → PICK_INVALID_SIGNAL;
 *   2. keep the model's buckets with min ≤ input ≤ max and (peak, or input
 *      without one) ≤ max_context_tokens;
 *   3. SLO penalties when enabled: SLO_FIRST penalises a bucket that does not
 *      meet the target, SLO_BEST_EFFORT one that does (TTFT met: 0 < estimate
 *      ≤ target; TPS met: finite estimate > 0 and ≥ target; no estimate = not
 *      met; a request without the target is neutral); an enabled target that
 *      is invalid (TTFT ≤ 0 / not finite; TPS ≤ 0, NaN, ∞) → INVALID_SIGNAL;
 *   4. sort by (penalty, min(limits.max, max_context) with unbounded last,
 *      rank, id) and return all.
 * An empty result is PICK_NO_MATCHING_BUCKET.
 */
#ifndef SY_ROUTER_BUCKETS_H
#define SY_ROUTER_BUCKETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "router/core/fleet_view.h"
#include "router/policies/policy.h"

#define BUCKET_UNBOUNDED UINT64_MAX /* limits.max / max_context_tokens absent */

enum slo_policy {
	SLO_DISABLED = 0,
	SLO_BEST_EFFORT = 1,
	SLO_FIRST = 2,
};

/* One engine group (EngineGroup). worker_ids is sorted (strcmp) and
 * deduplicated; member_bits caches membership per fleet entry position and
 * is rebuilt when the fleet's version changes. */
struct engine_group {
	enum engine_stage stage;
	bool all_workers;        /* no worker_ids: every worker of model and role */
	char **worker_ids;       /* explicit membership (may be empty) */
	size_t n_worker_ids;
	struct policy policy;
	uint64_t *member_bits;   /* internal: bit i = fleet entry i is a member */
	size_t member_words;
	uint64_t member_version; /* fleet version the bits belong to (0 = none) */
};

/* One bucket (Bucket). Plain: `plain`; PD: `prefill` then `decode`. */
struct bucket {
	char *id;                  /* unique, non-empty */
	uint32_t rank;             /* lower first among equal capacity */
	uint64_t min_input;        /* tokens, inclusive */
	uint64_t max_input;        /* tokens, inclusive; BUCKET_UNBOUNDED */
	uint64_t max_context;      /* tokens; BUCKET_UNBOUNDED */
	double ttft_ms;            /* estimate, ms; 0 = none */
	double tokens_per_second;  /* estimate; 0 = none */
	bool pd;
	char **models;             /* models served; none: every model no bucket
				      of the resolver names (per-model resolution) */
	size_t n_models;
	bool follows_fleet;        /* a default bucket that applies only while the
				      fleet has workers of its kind for the model
				      (plain: plain workers, or no PD ones; PD:
				      prefill or decode workers): engines report
				      their roles at run time */
	struct engine_group plain;
	struct engine_group prefill;
	struct engine_group decode;
};

/* What the resolver reads from a request. */
struct bucket_signal {
	const char *model;   /* the request's model (model_len bytes); NULL:
				every bucket, whatever its models */
	size_t model_len;
	uint64_t input_tokens;
	bool has_peak;
	uint64_t expected_peak;
	bool has_ttft;
	double ttft_ms;   /* target */
	bool has_tps;
	double tps;       /* target */
};

struct bucket_resolver {
	struct bucket *buckets;  /* borrowed */
	size_t n;
	enum slo_policy ttft_policy;
	enum slo_policy tps_policy;
};

/* Resolves `sig` into out[0..*n_out) (ordered, borrowed pointers; `cap` ≥
 * r->n suffices). Returns PICK_OK, PICK_NO_MATCHING_BUCKET (*n_out 0) or
 * PICK_INVALID_SIGNAL with *why a static reason naming the signal. */
enum pick_outcome bucket_resolver_resolve(const struct bucket_resolver *r,
					  const struct bucket_signal *sig, struct bucket **out,
					  size_t cap, size_t *n_out, const char **why);

/* Workers a selection must not return (workers-table slots): the engines a
 * retry already failed on. */
#define WORKER_EXCLUDE_MAX 16
struct worker_exclude {
	unsigned n;
	uint32_t slots[WORKER_EXCLUDE_MAX];
};

/* True when `slot` is in `ex` (NULL: none). */
bool worker_exclude_has(const struct worker_exclude *ex, uint32_t slot);

/* What the candidate filter says about one fleet entry for one group
 * (engine_group_candidate), in the order the checks run. */
enum candidate_verdict {
	CANDIDATE_OK = 0,        /* usable */
	CANDIDATE_PROBE,         /* usable only as its breaker's half-open probe
				    (a pick must win statebus_breaker_take_probe) */
	CANDIDATE_OUTSIDE,       /* another model or role, or not a member */
	CANDIDATE_UNHEALTHY,     /* active probe failed, or never probed (unknown) */
	CANDIDATE_DOWN,          /* passively down until a probe passes */
	CANDIDATE_STALLED,       /* stalled until bytes flow or a probe passes */
	CANDIDATE_BREAKER_OPEN,  /* breaker open, or its half-open probe is out */
};

/* Brings g's membership cache up to date with fleet f (a no-op for a
 * group of all workers, or when f's version has not moved). SY_OK or
 * SY_ENOMEM (the cache is then not usable: no entry is a member). */
int engine_group_sync(struct engine_group *g, const struct fleet *f);

/* The candidate filter of EngineGroup::pick and of readiness
 * (router/core/readiness.h), for entry i of fleet f (i < f->n) and the
 * model index model_idx: model, role = g's stage, membership (g synced
 * with f by engine_group_sync), the active probe result (`healthy`), then
 * the region's health words read live (statebus_health_pick at now_ns;
 * r NULL: none; cb_cool_down_ns 0 = breakers off). Reads only; takes no
 * breaker probe. Request-level exclusions are the pick's own. */
enum candidate_verdict engine_group_candidate(const struct engine_group *g, const struct fleet *f,
					      size_t i, uint32_t model_idx,
					      const struct statebus_region *r, uint64_t now_ns,
					      uint64_t cb_cool_down_ns);

/* Everything a group pick needs beyond the group: the request, the state
 * plane, the fleet snapshot, the request's model index, scratch candidate
 * arrays (fleet capacity each; two so that a decode pick can see the
 * prefill winner), the rejection collector, the excluded workers and the
 * breaker cool-down. */
struct pick_env {
	const struct pick_request *req;
	struct statebus_region *region;       /* health words: read, and the
						 breaker probe taken */
	uint64_t now_ns;
	struct fleet *fleet;
	uint32_t model_idx;
	bool adapter_asked;          /* the request names a LoRA adapter: only
					workers with adapter_bit in their
					fleet_entry.adapters are candidates */
	uint64_t adapter_bit;        /* 0: the adapter is served by nobody now */
	struct engine_candidate *scratch[2]; /* [0] plain/prefill, [1] decode */
	size_t scratch_cap;
	struct pick_rejections *rej;
	const struct worker_exclude *exclude; /* NULL: none */
	uint64_t cb_cool_down_ns;             /* 0: breakers off */
	bool stale;  /* set when a pick failed validation because the table
			moved since the snapshot: the group selected again
			without that worker; router_select refreshes the
			snapshot afterwards (and, when the selection failed,
			selects again once) */
	uint32_t reselected; /* picks redone in their group because the picked
				worker was removed since the snapshot */
	uint32_t skipped_down, skipped_stalled, skipped_breaker; /* candidates the
			health table left out (summed over the request's picks) */
};

/* EngineGroup::pick: keeps the fleet entries engine_group_candidate
 * accepts, in ID order — model, role (= stage), membership, the statebus's
 * active probe result (`healthy`: a worker never probed is unknown and
 * left out), then the region's health words read live: passive down,
 * stalled, breaker open or its probe out — minus env->exclude. No
 * candidate → PICK_NO_CANDIDATES without calling the policy; else
 * policy_pick on the snapshot, then checks that the answer is one of the
 * candidate objects and still valid in the table (slot, generation) → else
 * PICK_OUTSIDE_CANDIDATES. A picked candidate that is only usable as its
 * breaker's half-open probe must win the probe (statebus_breaker_take_probe);
 * when another process took it first, it is left out and the policy asked
 * again. Likewise a pick whose (slot, generation) the table no longer holds
 * (removed inside the snapshot window) is left out and the policy asked
 * again in the same group (env->stale set), before the bucket is given up. `prefill` is the prefill winner for a decode group (NULL
 * otherwise). */
enum pick_outcome engine_group_pick(struct engine_group *g, struct pick_env *env,
				    const char *bucket_id,
				    const struct engine_candidate *prefill, struct pick *out);

/* Result of Bucket::pick_engines. For PD, `worker` is decode (serves the
 * response) and `prefill` the prefill pick; `failed_stage` names the stage
 * whose group failed when the outcome is not PICK_OK. */
struct bucket_pick {
	struct pick worker;
	struct pick prefill;
	enum engine_stage failed_stage;
};

/* Bucket::pick_engines: plain pick, or prefill then decode from the same
 * bucket (a failure keeps its stage). */
enum pick_outcome bucket_pick_engines(struct bucket *b, struct pick_env *env,
				      struct bucket_pick *out);

#endif
