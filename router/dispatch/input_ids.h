/* input_ids.h — input-ids forwarding (reference/policy-defaults.md §7,
 * router/core/prepare.h "Input-ids forwarding"): the chat body sent to the engine
 * gains the router's token IDs as a top-level "input_ids" member, so the
 * engine prefills exactly the ids the router hashed and never re-tokenizes.
 * The client's members (messages included) are kept byte for byte, as
 * SGLang's router does. */
#ifndef SY_ROUTER_INPUT_IDS_H
#define SY_ROUTER_INPUT_IDS_H

#include <stddef.h>
#include <stdint.h>

#include <h2o.h>

/* Writes into *out (allocated in `pool`) a copy of the JSON object `body`
 * (validated by preparation; must not already have "input_ids") with
 * `"input_ids":[ids...]` appended as its last member. `n` may be 0 (an
 * empty array). Returns 0, or -1 when the body does not end in an object's
 * '}' (*out untouched). */
int rt_input_ids_body(h2o_mem_pool_t *pool, h2o_iovec_t body, const uint32_t *ids, size_t n,
		      h2o_iovec_t *out);

#endif
