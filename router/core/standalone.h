/* standalone.h — the router master's duties while no statebus runs
 * (standalone.c): the static fleet in the workers table, what each engine
 * says about itself, dead process slots, affinity expiry (health probes:
 * prober.h). */
#ifndef SY_ROUTER_STANDALONE_H
#define SY_ROUTER_STANDALONE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/config.h"
#include "statebus/include/statebus.h"

/* True when a statebus announced itself and its heartbeat is fresh (5 s). */
bool rt_statebus_live(struct statebus_region *r);

/* The master's view of its static fleet: discovery state per worker and
 * the transfers in flight (libcurl multi, never blocking). */
struct rt_standalone;

/* Creates the state for the static fleet of `cfg` (borrowed until the next
 * rt_standalone_configure). Returns 0 or SY_ENOMEM. */
int rt_standalone_create(const struct sy_config *cfg, struct rt_standalone **out);

/* Takes the static fleet of a reloaded configuration `cfg` (borrowed until
 * the next call); workers kept keep their discovery state.
 * Returns 0 or SY_ENOMEM (the previous fleet stays). */
int rt_standalone_configure(struct rt_standalone *s, const struct sy_config *cfg);

/* Registers the static workers missing from the workers table (with what
 * their engines reported, else the configuration: role, model, bootstrap
 * port; health unknown: healthy only within
 * router.health_unknown_grace_secs or with statebus.disable_health_check),
 * unless a statebus is live. Takes the writer lock without waiting. Returns
 * the number added (≥ 0), or SY_EBUSY / SY_EIO when the lock is not
 * available (try again later). */
int rt_standalone_register(struct rt_standalone *s, struct statebus_region *r);

/* Warns (log) about each active worker of the workers table that is not in
 * the static fleet: left by an earlier run on the same region or added at
 * run time, it stays a candidate. Reads the table only; returns how many. */
int rt_standalone_warn_unconfigured(const struct rt_standalone *s,
				    struct statebus_region *r);

/* One turn of the master's loop, waiting up to `wait_ms` for discovery
 * I/O (signals end the wait early). Without a live statebus: starts
 * discovery of workers not discovered yet, and again of a worker back to
 * healthy after the prober found it unhealthy (GET /server_info, else
 * /get_model_info, else /v1/models: model, role, bootstrap port, DP size,
 * page size; SGLang router discovery), and writes the results to the
 * workers table. With a live statebus nothing is started or written. */
void rt_standalone_tick(struct rt_standalone *s, struct statebus_region *r, int wait_ms);

/* True when every static worker was discovered or failed a whole round of
 * statebus.discovery_attempts: the master's start-up wait. */
bool rt_standalone_settled(const struct rt_standalone *s);

/* Ends the transfers in flight and frees `s`. NULL is a no-op. */
void rt_standalone_destroy(struct rt_standalone *s);

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
