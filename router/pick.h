/* pick.h — the data plane's view of request preparation and selection.
 *
 * The one seam between the h2o data plane and the selection core
 * (router/core/prepare.h, router/core/select.h of the selection issue): routes and
 * forward.c see only these shapes, filled by pick.c from the core's
 * results. A selection is complete (plain, or prefill + decode from one
 * bucket) before anything is dispatched (DESIGN.md §4).
 */
#ifndef SY_ROUTER_PICK_H
#define SY_ROUTER_PICK_H

#include <stdbool.h>
#include <stdint.h>

#include <h2o.h>

#include "router/worker.h"
#include "statebus/include/statebus-t.h"

struct rt_gen;

/* One chosen engine: state-plane slot validated with its generation, and
 * its worker ID (the normalised base URL requests are sent to). */
struct rt_target {
	uint32_t slot;
	uint32_t gen;
	uint16_t bootstrap_port;             /* PD prefill: bootstrap port, 0 = unknown */
	char url[STATEBUS_WORKER_ID_MAX];
};

/* A complete selection. Strings are copies (they outlive a reload). */
struct rt_pick {
	bool pd;
	struct rt_target main;     /* the plain worker, or the decode worker (PD) */
	struct rt_target prefill;  /* PD only */
	char bucket[64];           /* bucket ID */
	char policy[32];           /* policy of the deciding group */
	char reason[64];           /* policy reason */
	uint64_t t_ns;             /* monotonic clock when the selection ended, set
				      by the caller (0 = unknown: read it) */
};

/* A refusal, ready to become the error response of DESIGN.md §9. */
struct rt_pick_error {
	int status;                /* 400, 404, 500, 503 */
	char code[48];             /* bad_request, model_not_found, ... */
	char message[320];         /* never contains worker URLs */
	char *details_json;        /* JSON value or NULL; allocated in the request pool */
};

/* What preparation found, kept with the request (pool-allocated). */
struct rt_prepared {
	void *core;                /* the selection core's prepared request (pool) */
	enum rt_route route;
	uint64_t prepare_ns;       /* phases, for the overhead histograms (0 = n/a) */
	uint64_t tokenize_ns;
	uint64_t hash_ns;
	const uint32_t *input_ids; /* non-NULL: forward these n_input_ids token ids
				      to the engine as "input_ids" (prepare.h,
				      input_ids.h); borrowed from the core */
	size_t n_input_ids;
	uint64_t t_start_ns;       /* in: receipt time (0 = read the clock) */
	uint64_t t_end_ns;         /* out: clock when preparation ended */
};

/* Workers a retry must avoid (slots). */
struct rt_exclude {
	unsigned n;
	uint32_t slots[4];
};

/* Prepares `req`'s body for selection under generation `g`. Returns 0, or
 * a negative sy_err with `err` filled (400 bad_request with the byte
 * offset for malformed JSON, 404 model_not_found, ...). */
int rt_prepare(struct rt_gen *g, enum rt_route route, h2o_req_t *req, struct rt_prepared *out,
	       struct rt_pick_error *err);

/* Selects the engine(s) for a prepared request, skipping `ex` (may be
 * NULL), at monotonic time `now_ns` (0 = read the clock). Returns 0 with
 * `out` filled, or a negative sy_err with `err`. */
int rt_select(struct rt_gen *g, h2o_req_t *req, struct rt_prepared *p, const struct rt_exclude *ex,
	      uint64_t now_ns, struct rt_pick *out, struct rt_pick_error *err);

/* Builds / frees the selection core's part of a generation. */
int rt_sel_build(struct rt_gen *g, char *err, size_t errcap);
void rt_sel_free(struct rt_gen *g);

/* Models served (for GET /v1/models): calls `fn` once per distinct model
 * of generation `g` and the state plane. */
void rt_models_each(struct rt_gen *g, void (*fn)(const char *model, void *arg), void *arg);

#endif
