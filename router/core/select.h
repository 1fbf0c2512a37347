/* select.h — the ordered bucket-attempt loop (DESIGN.md §4 steps 2–5;
 * reference/policy-defaults.md §6 "Handler"): from a prepared request to a
 * complete selection, or an error value. No dispatch happens here.
 *
 *   model unknown (no live or configured worker serves it) → 404 model_not_found
 *   resolve: PICK_INVALID_SIGNAL → 400 bad_request (message names the signal)
 *            empty               → 400 no_matching_bucket
 *   for each bucket in order: bucket_pick_engines()
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
#include "router/core/error.h"
#include "statebus.h"

/* A chosen worker, copied out of the snapshot (valid after selection). */
struct selected_worker {
	uint32_t slot;            /* workers-table slot (in-flight guard column) */
	uint32_t generation;      /* validate again before dispatch if delayed */
	uint16_t bootstrap_port;  /* PD bootstrap port, 0 = none (JSON null) */
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
	const char *prefill_reason;       /* pd only */
	const char *policy;               /* policy name of `worker`'s group */
	uint32_t buckets_tried;           /* attempts before success (≥ 1) */
};

/* Runs selection for `req` under generation `g` on region `r` at `now_ns`
 * (CLOCK_MONOTONIC). Returns 0 with *out filled, or a negative sy_err with
 * *err filled: SY_ENOENT (404), SY_EINVAL (400), SY_EBUSY (503: exhausted),
 * SY_EMALFORMED (500: outside candidates / configuration / pick-time invalid
 * signal). `r` may be NULL (no state plane attached): every group is then
 * empty → 503 no_healthy_workers. Never blocks. */
int router_select(struct router_gen *g, struct statebus_region *r, const struct pick_request *req,
		  uint64_t now_ns, struct selection *out, struct router_error *err);

#endif
