/* standalone.c — the master's duties while no statebus runs (DESIGN.md §5).
 *
 * Without a live statebus (header heartbeat), the master registers the
 * static fleet of the configuration in the workers table under the region's
 * writer lock — role, model and bootstrap port from the file, health
 * unknown until the master's own probes (prober.h) answer — and reaps the proc slots of dead processes. Routing then uses
 * router-local load (the in-flight rows). A statebus that starts later
 * adopts these slots by worker ID; while it is live the master leaves the
 * table alone. Likewise the master sweeps the affinity store (idle expiry,
 * invalidated workers, abandoned claims) only while no statebus is live.
 */
#include "router/core/standalone.h"

#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"

/* Heartbeat age beyond which the statebus counts as gone. */
#define STATEBUS_LIVE_NS 5000000000ull

bool rt_statebus_live(struct statebus_region *r)
{
	return statebus_daemon_live(r, sy_mono_ns(), STATEBUS_LIVE_NS);
}

int rt_degraded_register(struct statebus_region *r, const struct sy_config *cfg)
{
	if (rt_statebus_live(r))
		return 0;
	int rc = statebus_writer_lock(r, false);
	if (rc != SY_OK)
		return rc; /* someone else writes now; next tick */
	int added = 0;
	for (size_t i = 0; i < cfg->n_workers; i++) {
		const struct sy_config_worker *cw = &cfg->workers[i];
		struct statebus_worker w;
		memset(&w, 0, sizeof(w));
		if (statebus_worker_id_normalise(cw->url, w.id, sizeof(w.id)) != SY_OK)
			continue;
		uint32_t slot, gen;
		if (statebus_worker_find(r, w.id, &slot, &gen) == SY_OK)
			continue;
		snprintf(w.model, sizeof(w.model), "%s", cw->model ? cw->model : cfg->model_id);
		w.role = (uint8_t)cw->role; /* enum sy_worker_role matches the table's roles */
		w.bootstrap_port = (uint16_t)cw->bootstrap_port;
		w.dp_size = (uint16_t)(cw->kv_events.dp_size > 0 ? cw->kv_events.dp_size : 1);
		w.kv_block_size = (uint32_t)(cw->kv_events.block_size > 0 ? cw->kv_events.block_size : 0);
		/* unknown until the master's first probe (prober.h); picked
		 * meanwhile only within router.health_unknown_grace_secs */
		w.healthy = cfg->router.health_unknown_grace_secs > 0;
		int arc = statebus_worker_add(r, &w, &slot, &gen);
		if (arc == SY_OK) {
			added++;
			sy_info("degraded mode: registered %s (%s, slot %u)", w.id,
				sy_worker_role_name(cw->role), slot);
		} else if (arc != SY_EEXIST) {
			sy_warn("degraded mode: cannot register %s: %s", w.id, sy_strerror(arc));
		}
	}
	statebus_writer_unlock(r);
	return added;
}

int rt_reap(struct statebus_region *r)
{
	int rc = statebus_writer_lock(r, false);
	if (rc != SY_OK)
		return rc;
	int n = statebus_procs_reap(r);
	statebus_writer_unlock(r);
	if (n > 0)
		sy_info("reaped %d dead process slot(s)", n);
	return n;
}

int rt_affinity_sweep(struct statebus_region *r, const struct sy_config *cfg, uint64_t now_ns)
{
	static uint64_t next_ns;
	if (now_ns < next_ns)
		return 0;
	next_ns = now_ns + (uint64_t)cfg->statebus.affinity_sweep_interval_secs * 1000000000u;
	if (rt_statebus_live(r))
		return 0;
	struct statebus_affinity_sweep_result res;
	int n = statebus_affinity_sweep(r, now_ns, &res);
	if (n > 0)
		sy_info("affinity sweep: %u expired, %u invalidated, %u abandoned", res.expired,
			res.invalidated, res.abandoned);
	return n;
}
