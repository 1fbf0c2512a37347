/* prober.h — active health probes by the router master while no statebus
 * is live (degraded mode, docs/router.md): the statebus's job when it
 * runs (statebus/daemon/fleet.c), with the same settings and rules.
 *
 * Every ACTIVE worker of the workers table gets GET <url> +
 * statebus.health_endpoint (default /health; 2xx = pass) every statebus.health_interval_ms, each bounded by
 * statebus.health_timeout_ms; a worker a router process marked down or
 * stalled (statebus/health.c) is probed at once and then every 250 ms.
 * Results:
 * - `healthy` of the worker record (under the writer lock, taken without
 *   waiting; a busy lock defers the write to the next tick): unknown
 *   (never checked) → healthy at the first pass and unhealthy at the first
 *   failure; healthy → unhealthy after statebus.health_failure_threshold
 *   consecutive failures; unhealthy → healthy after
 *   statebus.health_success_threshold consecutive passes;
 * - a pass clears the passive down mark / stall set before the probe was
 *   sent (statebus_health_probe_ok);
 * - router.health_unknown_grace_secs (default 0): for that long after the
 *   prober started, a worker registered unknown counts as healthy until its
 *   first result (standalone.c registers it so); afterwards a worker still
 *   never answered is unhealthy.
 * - statebus.disable_health_check: no probes; every ACTIVE worker is
 *   healthy.
 * Transfers run on a libcurl multi handle driven without blocking from
 * the master's loop; nothing waits longer than one tick.
 */
#ifndef SY_ROUTER_PROBER_H
#define SY_ROUTER_PROBER_H

#include <stdbool.h>
#include <stdint.h>

#include "common/config.h"
#include "statebus/include/statebus.h"

struct rt_prober;

/* A prober for `slots` worker slots, started at `now_ns` (the grace runs
 * from here). NULL when out of memory or libcurl cannot start. */
struct rt_prober *rt_prober_create(uint32_t slots, uint64_t now_ns);
void rt_prober_free(struct rt_prober *p);

/* One step at now_ns under configuration `cfg`: starts due probes, reaps
 * finished ones and writes their results. `active` false (a statebus is
 * live: it probes) aborts running probes and does nothing else. Never
 * blocks. Returns the number of results written. */
int rt_prober_tick(struct rt_prober *p, struct statebus_region *r, const struct sy_config *cfg,
		   uint64_t now_ns, bool active);

/* True when every ACTIVE worker has had at least one result (or none is
 * registered): the master's start-up wait. */
bool rt_prober_settled(const struct rt_prober *p, const struct statebus_region *r);

#endif
