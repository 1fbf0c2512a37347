/* router_fixture.h — test helpers for the selection core: a temporary
 * state-plane region with workers and load reports written through the
 * statebus API, and a per-pick context over chosen candidates. Header-only,
 * test use. */
#ifndef SY_TESTS_ROUTER_FIXTURE_H
#define SY_TESTS_ROUTER_FIXTURE_H

#include <check.h>
#include <string.h>

#include "router/policies/policy.h"
#include "sb_test.h"

#define RF_NOW (UINT64_C(100000) * 1000000000u) /* selection time: t = 100000 s */
#define RF_SEC UINT64_C(1000000000)

struct rfx {
	char path[64];
	struct statebus_region *r;
	uint32_t proc; /* this test's proc slot (in-flight row) */
};

static inline void rfx_open(struct rfx *f)
{
	sbt_path(f->path, sizeof(f->path));
	struct statebus_params p = {.max_workers = 64, .max_dp_ranks = 4, .max_procs = 8};
	f->r = sbt_create(f->path, &p);
	ck_assert_int_eq(statebus_writer_lock(f->r, true), SY_OK);
	ck_assert_int_eq(statebus_proc_claim(f->r, STATEBUS_PROC_TOOL, &f->proc), SY_OK);
}

static inline void rfx_close(struct rfx *f)
{
	statebus_region_close(f->r);
	statebus_region_destroy(f->path);
}

/* Adds a worker; returns its slot. role: STATEBUS_WORKER_*. */
static inline uint32_t rfx_worker(struct rfx *f, const char *id, const char *model, int role,
				  bool healthy)
{
	struct statebus_worker w = sbt_worker(id, 1);
	snprintf(w.model, sizeof(w.model), "%s", model);
	w.role = (uint8_t)role;
	w.healthy = healthy;
	w.bootstrap_port = role == STATEBUS_WORKER_PREFILL ? 8998 : 0;
	uint32_t slot, gen;
	ck_assert_int_eq(statebus_worker_add(f->r, &w, &slot, &gen), SY_OK);
	return slot;
}

static inline uint32_t rfx_gen(struct rfx *f, uint32_t slot)
{
	struct statebus_worker w;
	ck_assert_int_eq(statebus_worker_read(f->r, slot, &w), SY_OK);
	return w.generation;
}

/* A LoadStat report for rank 0. native: V3 with capacities > 0. */
struct rfx_load {
	uint32_t running, waiting, kv_used, kv_cap, pending;
	float tokens_per_s; /* > 0: derived throughput known */
	bool basic_only;    /* old 4-field publisher: no V3 */
	uint64_t age_ns;    /* receive time = RF_NOW - age */
};

static inline void rfx_report(struct rfx *f, uint32_t slot, struct rfx_load l)
{
	struct statebus_load_report rep = {
		.flags = STATEBUS_LOAD_HAS_REPORT | (l.basic_only ? 0 : STATEBUS_LOAD_HAS_V3) |
			 (l.tokens_per_s > 0 ? STATEBUS_LOAD_HAS_THROUGHPUT : 0),
		.num_running_reqs = l.running,
		.num_waiting_reqs = l.waiting,
		.num_tokens = l.kv_used,
		.max_total_num_tokens = l.kv_cap,
		.num_waiting_uncached_tokens = l.pending,
		.num_total_tokens = l.kv_used,
		.max_running_requests = 256,
		.prefill_tokens_per_s = l.tokens_per_s,
		.recv_mono_ns = RF_NOW - l.age_ns,
	};
	ck_assert_int_eq(statebus_load_write(f->r, slot, rfx_gen(f, slot), 0, &rep), SY_OK);
}

/* Sets this process's in-flight count for a worker slot to n. */
static inline void rfx_inflight(struct rfx *f, uint32_t slot, int n)
{
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(statebus_inflight_acquire(f->r, f->proc, slot, RF_NOW), SY_OK);
}

/* A candidate array entry for a slot (id borrowed from `id`). */
static inline struct engine_candidate rfx_cand(struct rfx *f, uint32_t slot, const char *id)
{
	struct engine_candidate c = {.slot = slot, .generation = rfx_gen(f, slot), .id = id,
				     .dp_size = 1};
	return c;
}

#endif
