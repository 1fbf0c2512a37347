/* health.c — the health table: per worker slot, the passive-health, stall
 * and circuit-breaker words every router process reads at pick time and
 * may change (DESIGN.md §9 "Health is a candidate filter").
 *
 * Who writes what (the statebus stays the single writer of the workers
 * table and its `healthy` bit, the active probe result):
 * - worker_gen and a cleared record: the writer-lock holder when the slot
 *   is added or removed (statebus_worker_add / _remove), before the slot
 *   becomes ACTIVE — so a record always belongs to the slot's generation;
 * - down_ns (passive down): set by any router process that saw a connect
 *   failure, a reset before the first response byte or a head timeout
 *   (CAS 0 → now: the first mark wins, later ones keep it); cleared only by
 *   the active prober — the statebus, or the router master while no
 *   statebus is live — after a probe *sent after* the mark succeeded (CAS
 *   mark → 0), so a probe that raced the failure never revives a worker;
 * - stall_ns: set by a router process whose streamed requests to the
 *   worker got no byte for the stall timeout while nothing else arrived
 *   from it either (last_byte_ns); cleared by any process that receives a
 *   byte from the worker, or by a probe sent after the mark;
 * - last_byte_ns: any router process, at most every 1 ms per worker (a
 *   plain store: the latest writer is close enough to the latest byte);
 * - the breaker word and cb_failures: any router process, by CAS / atomic
 *   add, as the state machine of reference/policy-defaults.md §9 shared
 *   by all processes of the host.
 * A writer checks worker_gen before and after its change and undoes a mark
 * that landed on a slot reused meanwhile; a reader treats a record of
 * another generation as clear (the pick is validated against the workers
 * table anyway).
 *
 * Breaker word: (since_ns << 2) | state. CLOSED is 0. OPEN carries the
 * opening time; HALF_OPEN the time its one probe was handed out. A probe
 * whose request never reports (its process died) is handed out again
 * after a cool-down; a probe whose request was cancelled is handed back
 * at once (statebus_breaker_release_probe).
 */
#include <string.h>

#include "sb-int.h"

#define CB_WORD(since, state) ((uint64_t)(since) << 2 | (uint64_t)(state))
#define CB_STATE(w) ((uint32_t)((w) & 3u))
#define CB_SINCE(w) ((w) >> 2)
#define LAST_BYTE_STEP_NS UINT64_C(1000000) /* 1 ms */

static struct sb_health_rec *rec_of(const struct statebus_region *r, uint32_t slot, uint32_t gen)
{
	if (slot >= r->hdr->max_workers)
		return NULL;
	struct sb_health_rec *h = sb_health_at(r, slot);
	if (CMM_LOAD_SHARED(h->worker_gen) != gen)
		return NULL;
	return h;
}

void sb_health_reset(struct statebus_region *r, uint32_t slot, uint32_t gen)
{
	struct sb_health_rec *h = sb_health_at(r, slot);
	CMM_STORE_SHARED(h->worker_gen, 0);
	cmm_smp_wmb();
	CMM_STORE_SHARED(h->down_reason, 0);
	CMM_STORE_SHARED(h->down_ns, 0);
	CMM_STORE_SHARED(h->stall_ns, 0);
	CMM_STORE_SHARED(h->cb, 0);
	CMM_STORE_SHARED(h->last_byte_ns, 0);
	CMM_STORE_SHARED(h->cleared_ns, 0);
	CMM_STORE_SHARED(h->cb_failures, 0);
	CMM_STORE_SHARED(h->downs, 0);
	CMM_STORE_SHARED(h->stalls, 0);
	CMM_STORE_SHARED(h->cb_opens, 0);
	CMM_STORE_SHARED(h->recoveries, 0);
	cmm_smp_wmb();
	CMM_STORE_SHARED(h->worker_gen, gen);
}

int statebus_health_read(const struct statebus_region *r, uint32_t slot, struct statebus_health *out)
{
	if (slot >= r->hdr->max_workers || out == NULL)
		return SY_EINVAL;
	const struct sb_health_rec *h = sb_health_at(r, slot);
	memset(out, 0, sizeof(*out));
	out->worker_gen = CMM_LOAD_SHARED(h->worker_gen);
	out->down_reason = CMM_LOAD_SHARED(h->down_reason);
	out->down_since_ns = CMM_LOAD_SHARED(h->down_ns);
	out->stalled_since_ns = CMM_LOAD_SHARED(h->stall_ns);
	out->last_byte_ns = CMM_LOAD_SHARED(h->last_byte_ns);
	out->cleared_ns = CMM_LOAD_SHARED(h->cleared_ns);
	uint64_t cb = CMM_LOAD_SHARED(h->cb);
	out->cb_state = CB_STATE(cb);
	out->cb_since_ns = CB_SINCE(cb);
	out->cb_failures = CMM_LOAD_SHARED(h->cb_failures);
	out->downs = CMM_LOAD_SHARED(h->downs);
	out->stalls = CMM_LOAD_SHARED(h->stalls);
	out->cb_opens = CMM_LOAD_SHARED(h->cb_opens);
	out->recoveries = CMM_LOAD_SHARED(h->recoveries);
	return SY_OK;
}

/* ---- passive down and stalls -------------------------------------------- */

/* CAS *word 0 → now (now ≥ 1); undone when the slot's generation moved
 * meanwhile. Returns true when this call set it. */
static bool mark(struct sb_health_rec *h, uint64_t *word, uint32_t gen, uint64_t now)
{
	if (now == 0)
		now = 1;
	if (uatomic_cmpxchg(word, 0, now) != 0)
		return false;
	if (CMM_LOAD_SHARED(h->worker_gen) != gen) {
		(void)uatomic_cmpxchg(word, now, 0);
		return false;
	}
	return true;
}

bool statebus_health_mark_down(struct statebus_region *r, uint32_t slot, uint32_t gen,
			       enum statebus_down_reason reason, uint64_t now_ns)
{
	struct sb_health_rec *h = rec_of(r, slot, gen);
	if (h == NULL || !mark(h, &h->down_ns, gen, now_ns))
		return false;
	CMM_STORE_SHARED(h->down_reason, (uint32_t)reason);
	(void)uatomic_add_return(&h->downs, 1);
	return true;
}

bool statebus_health_mark_stalled(struct statebus_region *r, uint32_t slot, uint32_t gen,
				  uint64_t now_ns)
{
	struct sb_health_rec *h = rec_of(r, slot, gen);
	if (h == NULL || !mark(h, &h->stall_ns, gen, now_ns))
		return false;
	(void)uatomic_add_return(&h->stalls, 1);
	return true;
}

void statebus_health_progress(struct statebus_region *r, uint32_t slot, uint32_t gen,
			      uint64_t now_ns)
{
	struct sb_health_rec *h = rec_of(r, slot, gen);
	if (h == NULL)
		return;
	uint64_t last = CMM_LOAD_SHARED(h->last_byte_ns);
	if (now_ns >= last + LAST_BYTE_STEP_NS)
		CMM_STORE_SHARED(h->last_byte_ns, now_ns);
	uint64_t st = CMM_LOAD_SHARED(h->stall_ns);
	if (st != 0 && uatomic_cmpxchg(&h->stall_ns, st, 0) == st)
		CMM_STORE_SHARED(h->cleared_ns, now_ns);
}

unsigned statebus_health_probe_ok(struct statebus_region *r, uint32_t slot, uint32_t gen,
				  uint64_t sent_ns, uint64_t now_ns)
{
	struct sb_health_rec *h = rec_of(r, slot, gen);
	if (h == NULL)
		return 0;
	unsigned cleared = 0;
	uint64_t d = CMM_LOAD_SHARED(h->down_ns);
	if (d != 0 && d < sent_ns && uatomic_cmpxchg(&h->down_ns, d, 0) == d)
		cleared |= STATEBUS_HEALTH_CLEARED_DOWN;
	uint64_t s = CMM_LOAD_SHARED(h->stall_ns);
	if (s != 0 && s < sent_ns && uatomic_cmpxchg(&h->stall_ns, s, 0) == s)
		cleared |= STATEBUS_HEALTH_CLEARED_STALL;
	if (cleared) {
		CMM_STORE_SHARED(h->cleared_ns, now_ns);
		(void)uatomic_add_return(&h->recoveries, 1);
	}
	return cleared;
}

/* ---- circuit breaker ------------------------------------------------------ */

enum statebus_pick_health statebus_health_pick(const struct statebus_region *r, uint32_t slot,
					       uint32_t gen, uint64_t now_ns,
					       uint64_t cb_cool_down_ns)
{
	const struct sb_health_rec *h = rec_of(r, slot, gen);
	if (h == NULL)
		return STATEBUS_PICK_OK;
	if (CMM_LOAD_SHARED(h->down_ns) != 0)
		return STATEBUS_PICK_DOWN;
	if (CMM_LOAD_SHARED(h->stall_ns) != 0)
		return STATEBUS_PICK_STALLED;
	if (cb_cool_down_ns == 0)
		return STATEBUS_PICK_OK;
	uint64_t cb = CMM_LOAD_SHARED(h->cb);
	switch (CB_STATE(cb)) {
	case STATEBUS_CB_CLOSED:
		return STATEBUS_PICK_OK;
	case STATEBUS_CB_OPEN:
	case STATEBUS_CB_HALF_OPEN:
		/* open past its cool-down, or a probe handed out that long ago
		 * without a report: the next pick may carry the probe */
		return now_ns >= CB_SINCE(cb) + cb_cool_down_ns ? STATEBUS_PICK_PROBE
								: STATEBUS_PICK_BREAKER_OPEN;
	default:
		return STATEBUS_PICK_BREAKER_OPEN;
	}
}

bool statebus_breaker_take_probe(struct statebus_region *r, uint32_t slot, uint32_t gen,
				 uint64_t now_ns, uint64_t cb_cool_down_ns)
{
	struct sb_health_rec *h = rec_of(r, slot, gen);
	if (h == NULL)
		return true;
	uint64_t cb = CMM_LOAD_SHARED(h->cb);
	if (CB_STATE(cb) == STATEBUS_CB_CLOSED)
		return true;
	if (now_ns < CB_SINCE(cb) + cb_cool_down_ns)
		return false;
	return uatomic_cmpxchg(&h->cb, cb, CB_WORD(now_ns, STATEBUS_CB_HALF_OPEN)) == cb;
}

void statebus_breaker_release_probe(struct statebus_region *r, uint32_t slot, uint32_t gen,
				    uint64_t probe_ns)
{
	struct sb_health_rec *h = rec_of(r, slot, gen);
	if (h == NULL)
		return;
	uint64_t cb = CB_WORD(probe_ns, STATEBUS_CB_HALF_OPEN);
	/* back to "open since 0": its cool-down is over, the next pick probes */
	(void)uatomic_cmpxchg(&h->cb, cb, CB_WORD(0, STATEBUS_CB_OPEN));
}

void statebus_breaker_report(struct statebus_region *r, uint32_t slot, uint32_t gen,
			     uint32_t threshold, enum statebus_cb_result res, uint64_t now_ns)
{
	struct sb_health_rec *h;
	if (threshold == 0 || (h = rec_of(r, slot, gen)) == NULL)
		return;
	uint64_t cb = CMM_LOAD_SHARED(h->cb);
	switch (res) {
	case STATEBUS_CB_SUCCESS:
		CMM_STORE_SHARED(h->cb_failures, 0);
		if (cb != 0)
			(void)uatomic_cmpxchg(&h->cb, cb, 0);
		break;
	case STATEBUS_CB_BACKPRESSURE:
		/* never opens, keeps the streak; closes a half-open breaker */
		if (CB_STATE(cb) == STATEBUS_CB_HALF_OPEN && uatomic_cmpxchg(&h->cb, cb, 0) == cb)
			CMM_STORE_SHARED(h->cb_failures, 0);
		break;
	case STATEBUS_CB_FAILURE:
		if (CB_STATE(cb) == STATEBUS_CB_OPEN)
			break; /* ignored while open: the cool-down runs from the opening */
		if (CB_STATE(cb) == STATEBUS_CB_HALF_OPEN) {
			if (uatomic_cmpxchg(&h->cb, cb, CB_WORD(now_ns, STATEBUS_CB_OPEN)) == cb)
				(void)uatomic_add_return(&h->cb_opens, 1);
			break;
		}
		if (uatomic_add_return(&h->cb_failures, 1) >= threshold &&
		    uatomic_cmpxchg(&h->cb, 0, CB_WORD(now_ns, STATEBUS_CB_OPEN)) == 0)
			(void)uatomic_add_return(&h->cb_opens, 1);
		break;
	}
}
