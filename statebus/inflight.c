/* inflight.c — per-process in-flight rows.
 *
 * rows[proc slot][worker slot] = {in_flight, dispatches, last_dispatch_ns}
 * (32 bytes). Only the process owning proc slot p writes row p, with atomic
 * adds (no locks, no cross-process contention on a row); readers sum the
 * column of a worker over every proc slot. The row of a dead process is
 * zeroed by statebus_procs_reap() before its slot is freed; a column is
 * zeroed when its worker slot is reused. in_flight never goes below zero:
 * a release without an acquire is reported, not applied. A release bumps
 * the releasing process's queue wake counter (statebus-queue.h).
 */
#include "sb-int.h"
#include "statebus-queue.h"

static bool in_range(const struct statebus_region *r, uint32_t p, uint32_t w)
{
	return p < r->hdr->max_procs && w < r->hdr->max_workers;
}

int statebus_inflight_acquire(struct statebus_region *r, uint32_t proc, uint32_t worker,
			      uint64_t now_ns)
{
	if (!in_range(r, proc, worker))
		return SY_EINVAL;
	struct sb_inflight *c = sb_inflight_at(r, proc, worker);
	(void)uatomic_add_return(&c->in_flight, 1);
	(void)uatomic_add_return(&c->dispatches, 1);
	CMM_STORE_SHARED(c->last_dispatch_ns, now_ns);
	return SY_OK;
}

int statebus_inflight_release(struct statebus_region *r, uint32_t proc, uint32_t worker)
{
	if (!in_range(r, proc, worker))
		return SY_EINVAL;
	struct sb_inflight *c = sb_inflight_at(r, proc, worker);
	int64_t v = CMM_LOAD_SHARED(c->in_flight);
	while (v > 0) {
		int64_t old = uatomic_cmpxchg(&c->in_flight, v, v - 1);
		if (old == v) {
			(void)statebus_queue_wake(r, proc); /* capacity freed */
			return SY_OK;
		}
		v = old;
	}
	return SY_ERANGE;
}

int statebus_inflight_sum(const struct statebus_region *r, uint32_t worker,
			  int64_t *in_flight, uint64_t *dispatches)
{
	if (worker >= r->hdr->max_workers)
		return SY_EINVAL;
	int64_t n = 0;
	uint64_t d = 0;
	uint32_t procs = CMM_LOAD_SHARED(r->hdr->procs_hw);
	if (procs > r->hdr->max_procs)
		procs = r->hdr->max_procs;
	for (uint32_t p = 0; p < procs; p++) {
		const struct sb_inflight *c = sb_inflight_at(r, p, worker);
		n += CMM_LOAD_SHARED(c->in_flight);
		d += CMM_LOAD_SHARED(c->dispatches);
	}
	if (in_flight)
		*in_flight = n;
	if (dispatches)
		*dispatches = d;
	return SY_OK;
}

uint64_t sb_inflight_dispatches(const struct statebus_region *r, uint32_t w)
{
	uint64_t d = 0;
	(void)statebus_inflight_sum(r, w, NULL, &d);
	return d;
}

int statebus_inflight_read(const struct statebus_region *r, uint32_t proc, uint32_t worker,
			   struct statebus_inflight_info *out)
{
	if (!in_range(r, proc, worker))
		return SY_EINVAL;
	const struct sb_inflight *c = sb_inflight_at(r, proc, worker);
	out->in_flight = CMM_LOAD_SHARED(c->in_flight);
	out->dispatches = CMM_LOAD_SHARED(c->dispatches);
	out->last_dispatch_ns = CMM_LOAD_SHARED(c->last_dispatch_ns);
	return SY_OK;
}

int statebus_inflight_zero_row(struct statebus_region *r, uint32_t proc)
{
	if (proc >= r->hdr->max_procs)
		return SY_EINVAL;
	for (uint32_t w = 0; w < r->hdr->max_workers; w++) {
		struct sb_inflight *c = sb_inflight_at(r, proc, w);
		CMM_STORE_SHARED(c->in_flight, 0);
		CMM_STORE_SHARED(c->dispatches, 0);
		CMM_STORE_SHARED(c->last_dispatch_ns, 0);
	}
	return SY_OK;
}

int statebus_inflight_zero_worker(struct statebus_region *r, uint32_t worker)
{
	if (worker >= r->hdr->max_workers)
		return SY_EINVAL;
	for (uint32_t p = 0; p < r->hdr->max_procs; p++) {
		struct sb_inflight *c = sb_inflight_at(r, p, worker);
		CMM_STORE_SHARED(c->in_flight, 0);
		CMM_STORE_SHARED(c->dispatches, 0);
		CMM_STORE_SHARED(c->last_dispatch_ns, 0);
	}
	return SY_OK;
}
