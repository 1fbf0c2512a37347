/* stall.h — stall detection in one router worker process (DESIGN.md §9
 * "Health is a candidate filter"; docs/router.md "Stalls").
 *
 * An engine is stalled when requests are in flight on it and none of them
 * has received a byte for --stall-timeout-secs (router.stall_timeout_secs,
 * default 5; off with statebus.disable_health_check). The evidence is streamed requests (`"stream": true`): an
 * engine sends SSE bytes as it generates, so silence on all of them means
 * it stopped; a non-streamed answer arrives in one piece at the end, so its
 * silence cannot tell a stall from a long generation — such requests count
 * only as progress (their bytes), never as evidence.
 *
 * Per worker slot this process counts its streamed requests whose upstream
 * exchange is running and the time of the last progress it saw: a byte from
 * the worker on any request, or the dispatch that made its count non-zero.
 * A check every stall_timeout / 4 (at most 250 ms, at least 10 ms) marks a
 * worker stalled in the region (statebus_health_mark_stalled) when it has
 * such requests and neither this process's progress, the region's
 * last_byte_ns (bytes seen by any router process) nor the last clear of a
 * mark is younger than the timeout. Every router process then leaves it
 * out of selection until a byte arrives (statebus_health_progress clears
 * the mark) or a probe sent after the mark passes. Stalls are counted in the
 * region (syctl workers, /metrics).
 */
#ifndef SY_ROUTER_STALL_H
#define SY_ROUTER_STALL_H

#include <stdbool.h>
#include <stdint.h>

#include <h2o.h>

/* Set-up for the process: `slots` worker slots, the loop of the periodic
 * check and the timeout of the configuration at start (its period; each
 * check reads the current generation's timeout). 0 or SY_ENOMEM. */
int rt_stall_init(h2o_loop_t *loop, uint32_t slots, uint64_t timeout_ns);

/* A streamed request's upstream exchange to (slot, gen) started at now_ns. */
void rt_stall_begin(uint32_t slot, uint32_t gen, uint64_t now_ns);

/* It ended (completed, failed, cancelled, moved to another worker). */
void rt_stall_end(uint32_t slot);

/* A byte from worker (slot, gen) arrived at now_ns, on any request. */
void rt_stall_byte(uint32_t slot, uint32_t gen, uint64_t now_ns);

/* One check at now_ns with timeout `timeout_ns` (the periodic timer runs
 * it; tests call it). Returns the number of workers this call marked. */
unsigned rt_stall_check(uint64_t now_ns, uint64_t timeout_ns);

#endif
