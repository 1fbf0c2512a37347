/* policy.h — the policy contract (DESIGN.md §2, §4; SGLang reorg
 * policies_reorg/mod.rs `Policy`): an engine group hands its policy a
 * per-pick snapshot of the candidates; the policy returns one of them or an
 * outcome. policy_pick() is synchronous and never blocks: anything slow (the
 * prefix lookup of cache_aware) is hoisted before the picks into
 * pick_request.memo (router_select_begin, router/core/select.h).
 *
 * Candidates: live workers of the group (model, health, role, membership
 * filtered), sorted by worker ID, as `struct engine_candidate` in one array.
 * A policy must answer with a pointer INTO that array (identity, not ID
 * equality — engine_group_pick() checks it and (slot, generation), else
 * PICK_OUTSIDE_CANDIDATES). Load is read lazily, at most once per candidate
 * per pick (pick_ctx_load), so a policy that looks at two engines pays for
 * two.
 *
 * Policies own their state (the affinity policies' handles, cache_aware's
 * settings) inside `struct policy`, which lives in a configuration
 * generation (router/core/generation.h): process-local, single-threaded,
 * reset by a reload. Rotation cursors are the exception: one per engine
 * group in the state plane (policy_rotate; statebus cursors.c), shared by
 * every router process of the host and kept across reloads.
 *
 * Implemented here: round_robin (policies/round_robin.c), random
 * (policies/random.c), power_of_n (policies/power_of_n.c; power_of_two =
 * power_of_n with N = 2), load_based (policies/load_based.c), cache_aware
 * (policies/cache/cache_aware.c, prefix sources in policies/cache/cache_source.c),
 * and the affinity policies session_aware (policies/session_aware.c) and
 * sticky (policies/sticky.c), whose bindings live in the state plane's
 * affinity store (policies/affinity.c, statebus/affinity.c).
 */
#ifndef SY_ROUTER_POLICIES_POLICY_H
#define SY_ROUTER_POLICIES_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "router/policies/admission.h"
#include "router/core/prepare.h"
#include "statebus.h"

/* Outcomes of every selection step (DESIGN.md §2; SGLang PickError). */
enum pick_outcome {
	PICK_OK = 0,
	PICK_NO_MATCHING_BUCKET,     /* resolver: no bucket accepts the request */
	PICK_NO_CANDIDATES,          /* group: no live worker passes the filters */
	PICK_NO_ADMISSIBLE_ENGINE,   /* policy: every evaluated candidate rejected
					(cache_aware) */
	PICK_ADMISSION_REJECTED,     /* policy: the chosen engine failed admission */
	PICK_INVALID_SIGNAL,         /* bad request signal (SLO target, peak < input) */
	PICK_INVALID_CONFIGURATION,  /* e.g. a policy kind a stage refuses */
	PICK_OUTSIDE_CANDIDATES,     /* policy answered with a non-candidate */
};

/* Stage of a group; values equal enum statebus_worker_role. */
enum engine_stage {
	STAGE_PLAIN = 0,
	STAGE_PREFILL = 1,
	STAGE_DECODE = 2,
};

/* One candidate of a pick. `id` borrows from the worker cache of the
 * generation and is valid for the pick (copy it into a selection). */
struct engine_candidate {
	uint32_t slot;           /* workers-table slot */
	uint32_t generation;     /* slot generation at snapshot time */
	const char *id;          /* worker ID (normalised URL) */
	uint16_t bootstrap_port; /* PD bootstrap port, 0 = none */
	uint16_t dp_size;        /* DP ranks */
	uint8_t engine;          /* enum statebus_engine_kind */
	bool load_read;          /* `load` filled for this pick */
	bool cb_probe;           /* usable only as its breaker's half-open probe
				    (engine_group_pick takes it when picked) */
	struct engine_load load; /* valid when load_read */
};

/* Admission rejections collected over one request's picks (all buckets). */
struct pick_rejections {
	struct router_error *err; /* rejections are appended to err->details */
	size_t count;             /* rejections in this request */
};

/* The per-pick snapshot a policy reads. Built by engine_group_pick(). */
struct pick_ctx {
	const struct pick_request *req;
	const struct statebus_region *region;
	uint64_t now_ns;                 /* CLOCK_MONOTONIC of the selection */
	enum engine_stage stage;
	const char *bucket_id;           /* part of affinity binding keys */
	struct engine_candidate *cands;  /* sorted by id; n ≥ 1 when a policy runs */
	size_t n;
	const struct engine_candidate *prefill; /* decode stage of PD: the prefill
						   pick of the same bucket; else NULL */
	struct pick_rejections *rej;     /* may be NULL (no collection) */
};

/* The snapshot load of candidate i (read on first use: statebus_load_view
 * at ctx->now_ns and statebus_inflight_sum; unknown stays unknown). */
const struct engine_load *pick_ctx_load(struct pick_ctx *ctx, size_t i);

/* A policy's answer. */
struct pick {
	const struct engine_candidate *worker; /* into ctx->cands when PICK_OK */
	const char *reason;  /* static decision reason, e.g. "power_of_n" */
	enum admission_limit rejected_by; /* PICK_ADMISSION_REJECTED: the cap */
};

enum policy_kind {
	POLICY_ROUND_ROBIN = 0,
	POLICY_RANDOM,
	POLICY_POWER_OF_N,
	POLICY_CACHE_AWARE,
	POLICY_SESSION_AWARE,
	POLICY_STICKY,
	POLICY_LOAD_BASED,
	POLICY_KIND_INVALID_, /* not a policy (error paths only) */
};

struct policy;

struct policy_ops {
	const char *name; /* "round_robin", "random", "power_of_n", ... */
	/* Picks from ctx->cands (n ≥ 1). Fills out->worker and out->reason on
	 * PICK_OK; runs admission itself (on the winner, or per candidate for
	 * cache_aware) and records rejections via policy_reject(). */
	enum pick_outcome (*pick)(struct policy *p, struct pick_ctx *ctx, struct pick *out);
	void (*destroy)(struct policy *p); /* releases `state`; may be NULL */
};

/* A policy instance of one engine group (one per group, per generation). */
struct policy {
	const struct policy_ops *ops;
	enum policy_kind kind;
	enum engine_stage stage;
	struct admission_limits admission;
	uint32_t n_choices;   /* power_of_n: N (≥ 1; default 2) */
	uint64_t cursor;      /* round_robin: next index (mod n); load_based:
				 tie-break rotation; the process-local cursor,
				 used only without a shared one (policy_rotate) */
	uint64_t rotation_key; /* the group's shared cursor in the state plane
				  (policy_set_rotation); 0 = none */
	const struct statebus_region *rotation_region; /* region of rotation_idx */
	uint32_t rotation_idx; /* its cursor entry; UINT32_MAX: the table had no
				  room, rotate on `cursor` */
	uint32_t idle_ttl_ms; /* session_aware, sticky: binding idle TTL
				 (default STATEBUS_AFFINITY_DEFAULT_TTL_MS) */
	struct policy *fallback; /* session_aware: power_of_n (N = n_choices);
				    sticky: its fallback (default round_robin);
				    owned, NULL otherwise */
	void *state;          /* the policy's own state (cache_aware, affinity) */
};

/* Parses a policy type name: "round_robin", "random", "power_of_n",
 * "power_of_two" (→ POWER_OF_N with *n_choices = 2 when n_choices is not
 * NULL), "cache_aware", "session_aware", "sticky", "load_based".
 * Returns 0 or SY_EINVAL. */
int policy_kind_parse(const char *name, enum policy_kind *kind, uint32_t *n_choices);

const char *policy_kind_name(enum policy_kind k);

/* Initialises `p` for `kind` at `stage`. Returns 0; SY_EINVAL when n_choices is 0 for power_of_n or for cache_aware on a
 * decode stage; SY_ENOMEM. cache_aware starts with the reference defaults
 * and the local source (cache_aware_configure() changes them). */
int policy_init(struct policy *p, enum policy_kind kind, enum engine_stage stage,
		const struct admission_limits *admission, uint32_t n_choices, const char **why);

/* Sets the affinity options of a session_aware or sticky policy after
 * policy_init: the sticky fallback kind (round_robin, random, power_of_n
 * with fallback_n choices, load_based; ignored for session_aware) and the
 * idle TTL in ms (0 = 600 s). Returns 0; SY_EINVAL (*why) for another
 * policy kind or a fallback that cannot be one; SY_ENOMEM. */
int policy_set_affinity(struct policy *p, enum policy_kind fallback, uint32_t fallback_n,
			uint32_t idle_ttl_ms, const char **why);

/* Names the group `p` serves — bucket `bucket_id`, stage — so that its
 * rotation (round_robin, load_based ties, a sticky fallback's round_robin)
 * uses one cursor in the state plane shared by every router process of the
 * host: key = XXH3-64 of "rotation:{stage}:{bucket_id}" (the fallback's
 * with ":fallback"). */
void policy_set_rotation(struct policy *p, const char *bucket_id, enum engine_stage stage);

/* The next value of p's rotation: the shared cursor of its group in
 * ctx->region (found on first use, atomic add), or the process-local
 * p->cursor when there is no region, no key or no room in the cursor
 * table (looked for once per region and policy instance). Never blocks. */
uint64_t policy_rotate(struct policy *p, const struct pick_ctx *ctx);

/* Releases what policy_init acquired. */
void policy_destroy(struct policy *p);

/* Calls p->ops->pick (ctx->n ≥ 1). */
enum pick_outcome policy_pick(struct policy *p, struct pick_ctx *ctx, struct pick *out);

/* Runs the policy's admission on candidate i: ADMIT_OK, or records the
 * rejection in ctx->rej and out->rejected_by and returns the cap. */
enum admission_limit policy_admit(struct policy *p, struct pick_ctx *ctx, size_t i,
				  struct pick *out);

/* Stage pressure comparison of reference §3: < 0 when candidate a is less
 * pressured than b (a wins), > 0 when b wins, 0 on a full tie. Compares by
 * local active only unless both loads are native. */
int engine_stage_compare(enum engine_stage stage, const struct engine_load *a,
			 const struct engine_load *b);

/* Per-process random numbers for policies (xoshiro-style, seeded from
 * getrandom; reseeded in a forked child). router_rng_seed() fixes the seed
 * (tests, benchmarks). router_rng_below(n) is uniform in [0, n), n ≥ 1. */
void router_rng_seed(uint64_t seed);
uint64_t router_rng_next(void);
uint64_t router_rng_below(uint64_t n);

#endif
