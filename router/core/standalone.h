/* standalone.h — routing without a statebus (see standalone.c). */
#ifndef SY_ROUTER_DEGRADED_H
#define SY_ROUTER_DEGRADED_H

#include <stdbool.h>

#include "common/config.h"
#include "statebus/include/statebus.h"

/* True when a statebus announced itself and its heartbeat is fresh (5 s). */
bool rt_statebus_live(struct statebus_region *r);

/* Registers the static fleet of `cfg` that is missing from the workers
 * table, unless a statebus is live. Takes the writer lock without waiting.
 * Returns the number added (≥ 0), or SY_EBUSY / SY_EIO when the lock is
 * not available (try again later). */
int rt_degraded_register(struct statebus_region *r, const struct sy_config *cfg);

/* Reaps proc slots of dead processes (writer lock, no wait). Returns the
 * number reaped or a negative sy_err. */
int rt_reap(struct statebus_region *r);

/* Affinity idle-expiry sweep by the master while no statebus is live
 * (statebus_affinity_sweep), at most every statebus.affinity_sweep_interval_secs
 * of `cfg` at now_ns (CLOCK_MONOTONIC). Call it from the master's tick.
 * Returns the number of bindings tombstoned (0 when not due or a statebus
 * sweeps). */
int rt_affinity_sweep(struct statebus_region *r, const struct sy_config *cfg, uint64_t now_ns);

#endif
