/* readiness.h — whether the router can serve a request now (GET /readyz,
 * DESIGN.md §9 "Routes").
 *
 * Ready = at least one model can get a complete selection: some bucket
 * serving it (per-model resolution, buckets.h) has a candidate for it in
 * its plain group, or one in its prefill group and one in its decode
 * group. A candidate is what selection's own filter accepts
 * (engine_group_candidate, buckets.h): a fleet entry of the model and the
 * group's role, a member of the group, healthy by the active probe, and
 * neither passively down, stalled nor breaker-open in the region's health
 * table (a breaker whose half-open probe is free counts).
 * Load and admission are not consulted: a busy fleet is ready (its
 * requests queue or get 503 policy_selection_failed), a fleet that cannot
 * form a selection is not.
 */
#ifndef SY_ROUTER_READINESS_H
#define SY_ROUTER_READINESS_H

#include <stdbool.h>
#include <stdint.h>

#include "router/core/error.h"
#include "router/core/generation.h"
#include "statebus.h"

/* The verdict. When not ready, `code` is the error code of the selection
 * that cannot be made (DESIGN.md §9): no_healthy_workers (nothing known,
 * nothing healthy, or a plain bucket without a candidate),
 * no_prefill_workers_available / no_decode_workers_available (a PD bucket
 * with only its other stage), the most specific over all models and
 * buckets; `message` names the model, bucket and what is missing, with
 * how many healthy workers the health table left out (passively down,
 * stalled, breaker open) when any (never a worker URL). When ready,
 * `message` names the model and bucket found. */
struct router_readiness {
	bool ready;
	const char *code;                    /* static; NULL when ready */
	char message[ROUTER_ERROR_MSG_MAX];
};

/* Evaluates readiness over generation g's buckets and its fleet snapshot
 * (refreshed from region r as selection would at now_ns; r may be NULL:
 * the snapshot as it is). Fills *out; never fails (an out-of-memory
 * refresh keeps the previous snapshot). */
void router_readiness_check(struct router_gen *g, const struct statebus_region *r,
			    uint64_t now_ns, struct router_readiness *out);

#endif
