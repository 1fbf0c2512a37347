/* queue.c — the router queue's rows in the state plane (statebus-queue.h).
 *
 * rows[proc slot] and rows[max_procs] (the writer's), 64 bytes each. Only
 * the owner of a row writes it (the writer row: the statebus writer; a
 * reaper zeroes a dead owner's row). Counters are 64-bit and free-running;
 * readers only compare sums, so a zeroed row is at worst one extra wake.
 */
#include "sb-int.h"
#include "statebus-queue.h"

static struct sb_queue_rec *row(const struct statebus_region *r, uint32_t proc)
{
	if (proc == STATEBUS_QUEUE_WRITER)
		proc = r->hdr->max_procs;
	else if (proc >= r->hdr->max_procs)
		return NULL;
	return (struct sb_queue_rec *)sb_table(r, SB_T_QUEUE) + proc;
}

static uint32_t rows_claimed(const struct statebus_region *r)
{
	uint32_t n = CMM_LOAD_SHARED(r->hdr->procs_hw);
	return n > r->hdr->max_procs ? r->hdr->max_procs : n;
}

int statebus_queue_wake(struct statebus_region *r, uint32_t proc)
{
	struct sb_queue_rec *q = row(r, proc);
	if (q == NULL)
		return SY_EINVAL;
	(void)uatomic_add_return(&q->wakes, 1);
	return SY_OK;
}

uint64_t statebus_queue_wakes(const struct statebus_region *r)
{
	uint64_t s = CMM_LOAD_SHARED(row(r, STATEBUS_QUEUE_WRITER)->wakes);
	uint32_t n = rows_claimed(r);
	for (uint32_t p = 0; p < n; p++)
		s += CMM_LOAD_SHARED(row(r, p)->wakes);
	return s;
}

int64_t statebus_queue_running_sum(const struct statebus_region *r)
{
	int64_t s = 0;
	uint32_t n = rows_claimed(r);
	for (uint32_t p = 0; p < n; p++) {
		int64_t v = CMM_LOAD_SHARED(row(r, p)->running);
		if (v > 0)
			s += v;
	}
	return s;
}

uint64_t statebus_queue_depth_sum(const struct statebus_region *r)
{
	uint64_t s = 0;
	uint32_t n = rows_claimed(r);
	for (uint32_t p = 0; p < n; p++)
		for (unsigned c = 0; c < STATEBUS_QCLASS_COUNT_; c++)
			s += CMM_LOAD_SHARED(row(r, p)->queued[c]);
	return s;
}

int statebus_queue_running_take(struct statebus_region *r, uint32_t proc, int64_t max)
{
	struct sb_queue_rec *q = row(r, proc);
	if (q == NULL || proc == STATEBUS_QUEUE_WRITER)
		return SY_EINVAL;
	(void)uatomic_add_return(&q->running, 1); /* full barrier: raise, then read */
	int64_t s = statebus_queue_running_sum(r);
	if (s <= max)
		return SY_OK;
	(void)uatomic_add_return(&q->running, -1);
	if (s - 1 < max) /* room without us: a racer may have backed off too */
		(void)uatomic_add_return(&q->wakes, 1);
	return SY_EBUSY;
}

int statebus_queue_running_put(struct statebus_region *r, uint32_t proc)
{
	struct sb_queue_rec *q = row(r, proc);
	if (q == NULL || proc == STATEBUS_QUEUE_WRITER)
		return SY_EINVAL;
	int64_t v = CMM_LOAD_SHARED(q->running);
	while (v > 0) {
		int64_t old = uatomic_cmpxchg(&q->running, v, v - 1);
		if (old == v) {
			(void)uatomic_add_return(&q->wakes, 1);
			return SY_OK;
		}
		v = old;
	}
	return SY_ERANGE;
}

int statebus_queue_set_depth(struct statebus_region *r, uint32_t proc, unsigned cls, uint32_t n)
{
	struct sb_queue_rec *q = row(r, proc);
	if (q == NULL || cls >= STATEBUS_QCLASS_COUNT_)
		return SY_EINVAL;
	CMM_STORE_SHARED(q->queued[cls], n);
	return SY_OK;
}

int statebus_queue_count(struct statebus_region *r, uint32_t proc, unsigned o)
{
	struct sb_queue_rec *q = row(r, proc);
	if (q == NULL || o >= STATEBUS_QOUT_COUNT_)
		return SY_EINVAL;
	(void)uatomic_add_return(&q->outcomes[o], 1);
	return SY_OK;
}

int statebus_queue_read(const struct statebus_region *r, uint32_t proc,
			struct statebus_queue_info *out)
{
	const struct sb_queue_rec *q = row(r, proc);
	if (q == NULL)
		return SY_EINVAL;
	out->wakes = CMM_LOAD_SHARED(q->wakes);
	out->running = CMM_LOAD_SHARED(q->running);
	for (unsigned c = 0; c < STATEBUS_QCLASS_COUNT_; c++)
		out->queued[c] = CMM_LOAD_SHARED(q->queued[c]);
	for (unsigned o = 0; o < STATEBUS_QOUT_COUNT_; o++)
		out->outcomes[o] = CMM_LOAD_SHARED(q->outcomes[o]);
	return SY_OK;
}

int statebus_queue_zero_row(struct statebus_region *r, uint32_t proc)
{
	struct sb_queue_rec *q = row(r, proc);
	if (q == NULL || proc == STATEBUS_QUEUE_WRITER)
		return SY_EINVAL;
	CMM_STORE_SHARED(q->running, 0);
	for (unsigned c = 0; c < STATEBUS_QCLASS_COUNT_; c++)
		CMM_STORE_SHARED(q->queued[c], 0);
	/* the wake and outcome counters stay: sums only move forward */
	(void)uatomic_add_return(&q->wakes, 1); /* its running requests freed capacity */
	return SY_OK;
}
