/* stall.c — stall detection of one worker process (stall.h). */
#include "router/dispatch/stall.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "router/core/generation.h"
#include "router/worker.h"

struct stall_slot {
	uint32_t gen;         /* generation of the counted requests */
	uint32_t n;           /* streamed exchanges running */
	uint64_t progress_ns; /* last byte seen here, or the 0 → 1 dispatch */
};

static struct stall_slot *slots;
static uint32_t n_slots;
static h2o_timeout_t check_timeout;
static h2o_timeout_entry_t check_entry;
static h2o_loop_t *check_loop;

static void on_check(h2o_timeout_entry_t *e)
{
	(void)e;
	/* without health probes nothing would ever clear a stall mark */
	uint64_t t = rt_w.gen && !rt_w.gen->cfg.statebus.disable_health_check
			     ? (uint64_t)rt_w.gen->cfg.router.stall_timeout_secs * 1000000000u
			     : 0;
	rt_stall_check(sy_mono_ns(), t);
	h2o_timeout_link(check_loop, &check_timeout, &check_entry);
}

int rt_stall_init(h2o_loop_t *loop, uint32_t n, uint64_t timeout_ns)
{
	slots = calloc(n ? n : 1, sizeof(*slots));
	if (slots == NULL)
		return SY_ENOMEM;
	n_slots = n;
	uint64_t period_ms = timeout_ns / 4000000u;
	period_ms = period_ms > 250 ? 250 : period_ms < 10 ? 10 : period_ms;
	check_loop = loop;
	h2o_timeout_init(loop, &check_timeout, period_ms);
	check_entry.cb = on_check;
	h2o_timeout_link(loop, &check_timeout, &check_entry);
	return SY_OK;
}

void rt_stall_begin(uint32_t slot, uint32_t gen, uint64_t now_ns)
{
	if (slot >= n_slots)
		return;
	struct stall_slot *s = &slots[slot];
	if (s->gen != gen) {
		s->gen = gen;
		s->n = 0;
	}
	if (s->n++ == 0 && now_ns > s->progress_ns)
		s->progress_ns = now_ns;
}

void rt_stall_end(uint32_t slot)
{
	if (slot < n_slots && slots[slot].n > 0)
		slots[slot].n--;
}

void rt_stall_byte(uint32_t slot, uint32_t gen, uint64_t now_ns)
{
	if (slot < n_slots && slots[slot].gen == gen && now_ns > slots[slot].progress_ns)
		slots[slot].progress_ns = now_ns;
	if (rt_w.region)
		statebus_health_progress(rt_w.region, slot, gen, now_ns);
}

unsigned rt_stall_check(uint64_t now_ns, uint64_t timeout_ns)
{
	unsigned marked = 0;
	if (rt_w.region == NULL || timeout_ns == 0)
		return 0;
	for (uint32_t i = 0; i < n_slots; i++) {
		struct stall_slot *s = &slots[i];
		if (s->n == 0 || now_ns < s->progress_ns + timeout_ns)
			continue;
		struct statebus_health h;
		if (statebus_health_read(rt_w.region, i, &h) != SY_OK || h.worker_gen != s->gen ||
		    h.stalled_since_ns != 0 || now_ns < h.last_byte_ns + timeout_ns ||
		    now_ns < h.cleared_ns + timeout_ns)
			continue;
		if (statebus_health_mark_stalled(rt_w.region, i, s->gen, now_ns)) {
			marked++;
			struct statebus_worker w;
			if (statebus_worker_read(rt_w.region, i, &w) != SY_OK)
				snprintf(w.id, sizeof(w.id), "(slot %u)", i);
			sy_warn("worker %s stalled: %u streamed request(s) here got no byte for "
				"%llu ms; left out of selection until bytes flow or a probe passes",
				w.id, s->n, (unsigned long long)((now_ns - s->progress_ns) / 1000000u));
		}
	}
	return marked;
}
