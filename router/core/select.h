/* select.h — the ordered bucket-attempt loop (DESIGN.md §4 steps 2–5;
 * reference/policy-defaults.md §6 "Handler"): from a prepared request to a
 * complete selection, or an error value. No dispatch happens here.
 *
 *   model unknown (no live or configured worker serves it) → 404 model_not_found
 *   resolve: PICK_INVALID_SIGNAL → 400 bad_request (message names the signal)
 *            empty               → 400 no_matching_bucket
 *   for each bucket in order: bucket_pick_engines() (candidates filtered by
 *            health, breakers and exclusions: buckets.h engine_group_pick)
 *            PICK_OK                                  → done
 *            NO_CANDIDATES / ADMISSION_REJECTED /
 *            NO_ADMISSIBLE_ENGINE                     → next bucket, all picks redone
 *            INVALID_SIGNAL / INVALID_CONFIGURATION /
 *            OUTSIDE_CANDIDATES                       → 500 internal_error at once
 *   exhausted: any admission rejection → 503 policy_selection_failed with
 *            err->details = every {worker, limit}; otherwise the stage of the
 *            last failure: 503 no_healthy_workers (plain) /
 *            no_prefill_workers_available / no_decode_workers_available.
 *
 * Two steps. router_select_begin refreshes the fleet snapshot, checks the
 * model, resolves the buckets once (into the caller's array) and fills the
 * prefix memo from that resolution (DESIGN.md §4 step 3): local sources at
 * once, indexer queries sent and left pending (PREFIX_FILL_SEND) or waited
 * for (PREFIX_FILL_WAIT). router_select_finish runs the picks over the same
 * resolution, synchronously, once the memo has no pending entry (a pick
 * reads a pending entry as unavailable). router_select is both with the
 * generation's arrays and, for a request that brings no memo, the
 * generation's shared memo (reset per selection), waiting on indexers: for
 * tests, benchmarks and tools; the data plane (router/http/infer.c) uses the
 * two steps with a per-request memo and never waits.
 *
 * Cost: one fleet refresh check, the resolver over the generation's buckets,
 * per attempted group one filter pass over the fleet snapshot, the policy
 * (power_of_n reads the load of its N samples only) and one admission
 * check; bench/decision measures it (target p99 ≤ 2 µs).
 */
#ifndef SY_ROUTER_SELECT_H
#define SY_ROUTER_SELECT_H

#include <stdbool.h>
#include <stdint.h>

#include "router/core/generation.h"
#include "router/core/prepare.h"
#include "router/policies/cache/cache_source.h"
#include "router/core/error.h"
#include "statebus.h"

/* A chosen worker, copied out of the snapshot (valid after selection). */
struct selected_worker {
	uint32_t slot;            /* workers-table slot (in-flight guard column) */
	uint32_t generation;      /* validate again before dispatch if delayed */
	uint16_t bootstrap_port;  /* PD bootstrap port, 0 = none (JSON null) */
	uint8_t engine;           /* enum statebus_engine_kind: the PD protocol
				     of a PD selection is its prefill's */
	bool cb_probe;            /* carries its breaker's half-open probe, taken
				     at cb_probe_ns: the attempt reports, or
				     hands it back (statebus_breaker_release_probe) */
	uint64_t cb_probe_ns;
	int64_t inflight_cap;     /* its group's admission max_inflight_requests
				     (router in-flight, all processes), -1 none:
				     the dispatch guard re-checks it */
	char id[STATEBUS_WORKER_ID_MAX]; /* worker ID = normalised URL: upstream
					    address and x-switchyard-worker */
};

/* A complete selection. Plain: `worker` only. PD: `worker` is the decode
 * worker (its response goes to the client), `prefill` the prefill worker
 * (bootstrap_host from its ID, bootstrap_port from it). Strings are static
 * or borrowed from the generation the request holds. */
struct selection {
	bool pd;
	struct selected_worker worker;
	struct selected_worker prefill;   /* pd only */
	const char *bucket_id;            /* x-switchyard-bucket */
	const char *reason;               /* x-switchyard-reason: policy decision
					     reason of `worker` ("power_of_n", ...) */
	const char *prefill_reason;       /* pd only: x-switchyard-prefill-reason,
					     the prefill group's decision reason */
	const char *policy;               /* policy name of `worker`'s group */
	const char *prefill_policy;       /* pd only: policy name of the prefill group */
	uint32_t buckets_tried;           /* attempts before success (≥ 1) */
	uint32_t reselected;              /* picks redone in their group because the
					     picked worker had been removed since the
					     fleet snapshot (0 normally) */
};

/* Whether PD selection `s` runs vLLM's protocol (the prefill worker is a
 * vLLM engine: kv_transfer_params, prefill then decode) rather than
 * SGLang's bootstrap (both legs at once). */
static inline bool selection_pd_vllm(const struct selection *s)
{
	return s->pd && s->prefill.engine == STATEBUS_ENGINE_VLLM;
}

/* Runs selection for `req` under generation `g` on region `r` at `now_ns`
 * (CLOCK_MONOTONIC). Returns 0 with *out filled, or a negative sy_err with
 * *err filled: SY_ENOENT (404), SY_EINVAL (400), SY_EBUSY (503: exhausted),
 * SY_EMALFORMED (500: outside candidates / configuration / pick-time invalid
 * signal). `r` may be NULL (no state plane attached): every group is then
 * empty → 503 no_healthy_workers. Never blocks. */
int router_select(struct router_gen *g, struct statebus_region *r, const struct pick_request *req,
		  uint64_t now_ns, struct selection *out, struct router_error *err);

/* A request that names no model while the configuration names none
 * (model_id not given) goes to the one model the fleet serves: req->model
 * then points at `buf` (cap bytes, the caller's for as long as `req`).
 * Returns 0 (req untouched when it names a model, a model is configured,
 * or the default is served), SY_EBUSY with err 503 no_healthy_workers when
 * no worker is known yet, SY_EINVAL with err 400 bad_request when several
 * models are served. router_select does this itself. */
int router_select_default_model(struct router_gen *g, struct statebus_region *r,
				struct pick_request *req, char *buf, size_t cap, uint64_t now_ns,
				struct router_error *err);

/* A request whose model is not served but is a LoRA adapter some worker
 * serves (fleet_adapter_index; vLLM lists adapters with their parent in
 * /v1/models): req->lora takes the adapter's name (the span req->model
 * had) and req->model its base model, copied to `buf` (cap bytes, the
 * caller's for as long as `req`). Selection then keeps to the workers that
 * serve the adapter, and the prefix memo hashes the prompt in the
 * adapter's namespace (sy_blockhash_lora_seed), as the statebus indexes
 * that adapter's blocks. Returns 0 (req untouched otherwise). Never
 * blocks. router_select does this itself. */
int router_select_adapter(struct router_gen *g, struct statebus_region *r,
			  struct pick_request *req, char *buf, size_t cap, uint64_t now_ns);

/* Step one for `req` under `g` on `r` at `now_ns`: the 404 and 400 checks of
 * router_select, the resolution into `order` (caller's, room for
 * g->n_buckets; borrows g's buckets) with *n_order set, and, when `g` has a
 * cache_aware group and req->memo is not NULL, prefix_memo_fill(req->memo,
 * .., mode). Returns 0 (then the memo may have pending entries:
 * req->memo->n_pending), or a negative sy_err with *err filled (SY_ENOENT,
 * SY_EINVAL, SY_EMALFORMED, SY_ENOMEM). Blocks only with PREFIX_FILL_WAIT. */
int router_select_begin(struct router_gen *g, struct statebus_region *r,
			const struct pick_request *req, uint64_t now_ns, struct bucket **order,
			size_t *n_order, enum prefix_fill_mode mode, struct router_error *err);

/* Step two: the picks over `order[0..n_order)` (router_select_begin's) at
 * `now_ns`, after a fleet refresh check, never returning a worker in `ex`
 * (NULL: none; the candidate filter of every group leaves them out: a
 * retry's failed engines); results and errors as router_select. Never
 * blocks. */
int router_select_finish(struct router_gen *g, struct statebus_region *r,
			 const struct pick_request *req, struct bucket *const *order,
			 size_t n_order, uint64_t now_ns, const struct worker_exclude *ex,
			 struct selection *out, struct router_error *err);
/* router_select that never returns a worker in `ex` (NULL: none): the
 * candidate filter of every group leaves them out (a retry's failed
 * engines), so the policy chooses among the others. */
int router_select_excluding(struct router_gen *g, struct statebus_region *r,
			    const struct pick_request *req, uint64_t now_ns,
			    const struct worker_exclude *ex, struct selection *out,
			    struct router_error *err);

#endif
