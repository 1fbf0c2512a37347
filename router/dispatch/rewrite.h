/* pd.h — JSON body surgery on a validated request body: PD bootstrap
 * fields (sglang-wire.md §15) and the sampling-parameter override
 * (reference/policy-defaults.md §7).
 *
 * The body has already been validated by request preparation, so these
 * functions walk it with a small span scanner (strings, escapes, nesting)
 * and never build a DOM of the whole body: they copy the untouched bytes
 * and splice new members in. Results live in the request pool.
 */
#ifndef SY_ROUTER_PD_H
#define SY_ROUTER_PD_H

#include <jansson.h>
#include <stdint.h>

#include <h2o.h>

#include "router/worker.h"

/* Fresh bootstrap room: random u64 AND INT64_MAX. */
uint64_t rt_pd_room(void);

/* Number of requests the body stands for: `n` (chat/completions) when
 * > 1, or the length of a batched prompt / text / input_ids; else 1. */
unsigned rt_pd_batch_size(h2o_iovec_t body, enum route route);

/* Writes into *out a copy of the JSON object `body` without any
 * bootstrap_host / bootstrap_port / bootstrap_room member and with those
 * three appended: host string, port (0 → null), fresh room(s) — arrays of
 * `batch` entries when batch > 1. Returns 0 or -1 (not an object). */
int rt_pd_splice(h2o_mem_pool_t *pool, h2o_iovec_t body, const char *host, uint16_t port,
		 unsigned batch, h2o_iovec_t *out);

/* Applies the sampling override (a JSON object) to `body`: top-level keys
 * for chat/completions, inside "sampling_params" for /generate. With
 * reject_conflicts, a client value that differs from the override fails
 * with -2 and *param set to the parameter's name (pool). Returns 0 (*out
 * set), -1 (body not an object), -2 (conflict). */
int rt_sampling_override(h2o_mem_pool_t *pool, h2o_iovec_t body, enum route route,
			 json_t *override, bool reject_conflicts, h2o_iovec_t *out,
			 const char **param);

#endif
