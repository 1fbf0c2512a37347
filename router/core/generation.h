/* generation.h — the configuration generation: everything a request needs
 * that a reload may change, built from one `struct sy_config` (DESIGN.md §9
 * "Configuration lifetime").
 *
 * A generation owns the configuration it was built from and the parsed
 * sampling override, and holds the buckets (with their engine groups and policy
 * instances, incl. round-robin cursors), the SLO policies, the preparation
 * options and tokenizer, the default model, and the process-local fleet
 * snapshot (router/core/fleet_view.h). It is reference-counted: the server holds one
 * reference for the current generation, each request takes one at its
 * start (router_gen_ref) and drops it at its end (router_gen_unref); SIGHUP
 * builds a new generation, swaps the server's pointer and unrefs the old one,
 * which is freed when its last request ends. Requests in flight keep their
 * generation, so buckets and bucket IDs they borrow stay valid.
 *
 * Processes: a generation is process-local mutable state (cursors, fleet
 * snapshot, membership caches). Built in the master before fork(), each
 * worker process owns an independent copy: round-robin cursors therefore
 * rotate per process (N processes each rotate over the same sorted
 * candidates; the fleet-wide spread stays even, but consecutive requests on
 * different processes may hit the same worker). A reload resets cursors.
 * Random draws use a per-process generator reseeded after fork()
 * (router_rng_*, policy.h). Not thread-safe: one event loop per process.
 *
 * Default buckets: without `buckets` in the configuration, catch-all
 * buckets (limits unbounded, context unbounded, rank 0) are built from the
 * top-level policy (`--policy`, `--power-of-n-choices`, admission flags):
 * "default" with a plain group and "default-pd" (prefill:
 * policy.prefill_policy or policy.type; decode: policy.decode_policy,
 * default power_of_n). Both follow the fleet (bucket.follows_fleet): the
 * roles the workers table holds — configured, or reported by the engines —
 * decide which one a request of a model tries, so discovered PD roles are
 * served without configuration. With router.pd_disaggregation only
 * "default-pd" is built.
 *
 * Default model: when model_id is not given, a request that names no model
 * goes to the one model the fleet serves (router_select); the built-in
 * model_id is then not listed as served.
 */
#ifndef SY_ROUTER_GEN_H
#define SY_ROUTER_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "router/core/buckets.h"
#include "router/core/fleet_view.h"
#include "router/policies/cache/cache_aware.h"
#include "router/policies/cache/cache_source.h"
#include "router/policies/cache/digest_memo.h"
#include "router/core/prepare.h"

/* Cache counters of one generation in one process (every cache_aware
 * instance, every prefix source, the digest memo), as plain uint64_t
 * fields so that deltas can be taken field by field. Source index 0 is the
 * local source, 1 every indexer source. Exported on /metrics by
 * router/http/metrics.c (rt_metrics_cache). */
#define ROUTER_CACHE_SOURCE_KINDS 2
struct router_cache_totals {
	uint64_t decisions[CACHE_AWARE_DECISIONS_];
	uint64_t admission_evaluated, admission_rejected;
	uint64_t guard_compared, guard_override;
	uint64_t monitor[CACHE_MONITOR_SOURCES_];
	uint64_t diverted[CACHE_DIVERTED_EDGES + 1];
	uint64_t diverted_sum;
	uint64_t digest_hits, digest_misses;
	uint64_t found[ROUTER_CACHE_SOURCE_KINDS];
	uint64_t no_chain[ROUTER_CACHE_SOURCE_KINDS];
	uint64_t rejected[ROUTER_CACHE_SOURCE_KINDS];
	uint64_t unavailable[ROUTER_CACHE_SOURCE_KINDS][PREFIX_WHY_TOO_LARGE + 1];
};

struct router_gen {
	uint64_t refs;                 /* atomic; the builder holds the first */
	uint64_t number;               /* caller-chosen sequence number (logs) */
	struct sy_config cfg;          /* the configuration it was built from (owned) */
	struct sampling_override *sampling_override; /* router.override_sampling_params
							parsed; NULL when not set */
	char *default_model;           /* model_id */
	bool default_model_implicit;   /* model_id was not given (the built-in one) */
	struct bucket *buckets;        /* n_buckets, config order */
	size_t n_buckets;
	struct bucket_resolver resolver; /* over buckets, with the SLO policies */
	struct sy_tokenizer *tokenizer;  /* owned */
	char *session_header;          /* lower-case header names, owned */
	char *routing_header;
	struct router_prepare_opts prepare; /* borrows from this generation */
	struct fleet fleet;            /* process-local workers snapshot */
	/* Selection scratch (sized to the region's worker capacity on use). */
	struct engine_candidate *scratch[2];
	size_t scratch_cap;
	struct bucket **order;         /* router_select's resolution, n_buckets */
	/* cache_aware: prefix sources (the local one first, then one per
	 * distinct indexer endpoint; policies borrow them), the per-process
	 * digest memo of prompt hashing, and the request memo router_select()
	 * uses when a request brings none (reset per selection). */
	bool has_cache_policy;
	struct cache_source sources[PREFIX_MEMO_MAX_SOURCES];
	size_t n_sources;
	struct digest_memo *digests;   /* owned; NULL without cache_aware */
	struct prefix_memo memo;
	struct router_cache_totals exported; /* totals already handed to metrics */
};

/* Builds a generation from a finished configuration (sy_config_finish done),
 * taking ownership of its contents: *cfg is zeroed on return, success or
 * not (sy_config_free on it is then a no-op). Parses the sampling override
 * (not a JSON object → SY_ECONFIG naming router.override_sampling_params),
 * opens the tokenizer, builds buckets (or the catch-all), resolves each
 * group's policy (type, N, admission; omitted keys come from the top-level
 * policy), and refuses combinations selection cannot run (cache_aware on a
 * decode group, affinity or pressure-guard keys on groups without the
 * policy that reads them). On success *out has one reference. Errors (err
 * filled, *out NULL): SY_ECONFIG (e.g. "buckets[1].groups.decode.policy.type:
 * cache_aware refuses decode groups; use power_of_n"), SY_EUNSUPPORTED (the
 * tokenizer cannot be opened: unsupported tokenizer.json component or chat
 * template), SY_ENOMEM. */
int router_gen_build(struct sy_config *cfg, uint64_t number, struct router_gen **out,
		     struct sy_config_error *err);

/* The generation's cache counters now (process-local). */
void router_gen_cache_totals(const struct router_gen *g, struct router_cache_totals *out);

/* What the cache counters gained since the previous call (or the build):
 * fills *delta and remembers the totals. Returns false when nothing moved
 * (or g has no cache_aware group). */
bool router_gen_cache_delta(struct router_gen *g, struct router_cache_totals *delta);

/* Takes a reference (request start). Returns g. */
struct router_gen *router_gen_ref(struct router_gen *g);

/* Drops a reference; frees the generation with the last one. NULL is a no-op. */
void router_gen_unref(struct router_gen *g);

/* Sets the fleet snapshot's refresh period (ns; 0 = rescan every selection,
 * for tests) and forces a rescan at the next selection. */
void router_gen_set_fleet_refresh(struct router_gen *g, uint64_t refresh_ns);

/* The breaker cool-down of g's configuration in ns (router.cb_cool_down_secs),
 * or 0 when breakers are off (router.cb_threshold 0): the candidate
 * filter's argument (engine_group_candidate, buckets.h). */
uint64_t router_gen_cb_cool_down_ns(const struct router_gen *g);

#endif
