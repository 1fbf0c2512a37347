/* syctl_affinity.c — `syctl affinity [--json]`: the affinity store
 * (statebus/affinity.c): occupancy, counters, and every live entry with its
 * scope digest, kind, worker, age, idle time and expiry.
 *
 *   affinity --json → {"capacity": n, "bound": n, "claiming": n,
 *                      "tombstones": n, "empty": n, "counters": {"binds": n, ...},
 *                      "entries": [{"index": i, "state": "bound|claiming",
 *                        "kind": "session|sticky", "key": "32 hex digits",
 *                        "worker": URL|null, "slot": s, "generation": g,
 *                        "worker_valid": bool, "ttl_ms": n, "age_ms": n,
 *                        "idle_ms": n, "expires_in_ms": n, "claimer_pid": n}]}
 * A binding whose worker (slot, generation) is gone shows worker null and
 * worker_valid false (the next sweep tombstones it). Reads only: safe next
 * to routers and the statebus.
 */
#include <inttypes.h>
#include <stdio.h>

#include "common/clock.h"
#include "syctl.h"

static const char *kind_name(uint32_t k)
{
	return k == STATEBUS_AFFINITY_SESSION ? "session" : k == STATEBUS_AFFINITY_STICKY ? "sticky" : "?";
}

static uint64_t ms_since(uint64_t now, uint64_t t) { return now > t ? (now - t) / 1000000u : 0; }

int syctl_cmd_affinity(struct statebus_region *r, const struct syctl_opts *o)
{
	struct statebus_affinity_stats st;
	statebus_affinity_stats(r, &st);
	uint64_t now = sy_mono_ns();
	json_t *arr = o->json ? json_array() : NULL;
	if (!o->json) {
		printf("capacity %u: %u bound, %u claiming, %u tombstones, %u empty\n", st.capacity,
		       st.bound, st.claiming, st.tombstones, st.empty);
		printf("binds %" PRIu64 ", conflicts %" PRIu64 ", rebinds %" PRIu64
		       " (conflicts %" PRIu64 "), expired %" PRIu64 ", invalidated %" PRIu64
		       ", abandoned %" PRIu64 ", full %" PRIu64 ", busy %" PRIu64
		       ", lock steals %" PRIu64 ", sweeps %" PRIu64 "\n",
		       st.binds, st.bind_conflicts, st.rebinds, st.rebind_conflicts, st.expired,
		       st.invalidated, st.abandoned, st.full, st.busy, st.lock_steals, st.sweeps);
		printf("%7s %-8s %-8s %-32s %5s %6s %10s %10s %12s %s\n", "INDEX", "STATE", "KIND",
		       "KEY", "SLOT", "GEN", "AGE_MS", "IDLE_MS", "EXPIRES_MS", "WORKER");
	}
	for (uint32_t i = 0; i < st.capacity; i++) {
		struct statebus_affinity_info e;
		if (statebus_affinity_read(r, i, &e) != SY_OK ||
		    (e.state != STATEBUS_AFFINITY_BOUND && e.state != STATEBUS_AFFINITY_CLAIMING))
			continue;
		bool bound = e.state == STATEBUS_AFFINITY_BOUND;
		char key[40];
		snprintf(key, sizeof(key), "%016" PRIx64 "%016" PRIx64, e.key.hi, e.key.lo);
		struct statebus_worker w;
		bool valid = bound && statebus_worker_valid(r, e.worker, e.worker_gen) &&
			     statebus_worker_read(r, e.worker, &w) == SY_OK;
		uint64_t idle = ms_since(now, e.last_used_ns);
		int64_t expires = (int64_t)e.ttl_ms - (int64_t)idle;
		if (arr == NULL) {
			printf("%7u %-8s %-8s %-32s %5u %6u %10" PRIu64 " %10" PRIu64 " %12" PRId64
			       " %s\n", i, bound ? "bound" : "claiming", bound ? kind_name(e.kind) : "-",
			       bound ? key : "-", bound ? e.worker : 0, bound ? e.worker_gen : 0,
			       bound ? ms_since(now, e.created_ns) : 0, bound ? idle : 0,
			       bound ? expires : 0, valid ? w.id : bound ? "(gone)" : "-");
			continue;
		}
		json_t *j = json_object();
		json_object_set_new(j, "index", json_integer(i));
		json_object_set_new(j, "state", json_string(bound ? "bound" : "claiming"));
		if (!bound) {
			json_object_set_new(j, "claimer_pid", json_integer(e.worker_gen));
			json_array_append_new(arr, j);
			continue;
		}
		json_object_set_new(j, "kind", json_string(kind_name(e.kind)));
		json_object_set_new(j, "key", json_string(key));
		json_object_set_new(j, "worker", valid ? json_string(w.id) : json_null());
		json_object_set_new(j, "slot", json_integer(e.worker));
		json_object_set_new(j, "generation", json_integer(e.worker_gen));
		json_object_set_new(j, "worker_valid", json_boolean(valid));
		json_object_set_new(j, "ttl_ms", json_integer(e.ttl_ms));
		json_object_set_new(j, "age_ms", json_integer((json_int_t)ms_since(now, e.created_ns)));
		json_object_set_new(j, "idle_ms", json_integer((json_int_t)idle));
		json_object_set_new(j, "expires_in_ms", json_integer(expires));
		json_array_append_new(arr, j);
	}
	if (arr == NULL)
		return 0;
	json_t *t = json_object();
	json_object_set_new(t, "capacity", json_integer(st.capacity));
	json_object_set_new(t, "bound", json_integer(st.bound));
	json_object_set_new(t, "claiming", json_integer(st.claiming));
	json_object_set_new(t, "tombstones", json_integer(st.tombstones));
	json_object_set_new(t, "empty", json_integer(st.empty));
	json_t *c = json_object();
	const struct { const char *n; uint64_t v; } ctr[] = {
		{"binds", st.binds}, {"bind_conflicts", st.bind_conflicts},
		{"rebinds", st.rebinds}, {"rebind_conflicts", st.rebind_conflicts},
		{"expired", st.expired}, {"invalidated", st.invalidated},
		{"abandoned", st.abandoned}, {"full", st.full}, {"busy", st.busy},
		{"lock_steals", st.lock_steals}, {"sweeps", st.sweeps},
	};
	for (size_t i = 0; i < sizeof(ctr) / sizeof(ctr[0]); i++)
		json_object_set_new(c, ctr[i].n, json_integer((json_int_t)ctr[i].v));
	json_object_set_new(t, "counters", c);
	json_object_set_new(t, "entries", arr);
	return syctl_emit_json(t);
}
