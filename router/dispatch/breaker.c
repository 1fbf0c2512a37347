/* breaker.c — circuit breaker state machine (see breaker.h). */
#include "router/dispatch/breaker.h"

#include <stdlib.h>

struct rt_cb {
	uint32_t gen;
	uint8_t state;          /* enum rt_cb_state */
	bool probe_out;         /* half-open probe in flight */
	uint32_t failures;      /* consecutive */
	uint64_t opened_ns;
};

struct rt_breakers {
	uint32_t slots;
	struct rt_cb cb[];
};

struct rt_breakers *rt_breakers_create(uint32_t slots)
{
	struct rt_breakers *b = calloc(1, sizeof(*b) + (size_t)slots * sizeof(struct rt_cb));
	if (b)
		b->slots = slots;
	return b;
}

static struct rt_cb *get(struct rt_breakers *b, uint32_t slot, uint32_t gen)
{
	if (b == NULL || slot >= b->slots)
		return NULL;
	struct rt_cb *c = &b->cb[slot];
	if (c->gen != gen)
		*c = (struct rt_cb){.gen = gen};
	return c;
}

bool rt_breaker_allow(struct rt_breakers *b, uint32_t slot, uint32_t gen, int threshold,
		      uint64_t cool_down_ns, uint64_t now_ns, bool *probe)
{
	*probe = false;
	struct rt_cb *c;
	if (threshold <= 0 || (c = get(b, slot, gen)) == NULL)
		return true;
	switch (c->state) {
	case RT_CB_CLOSED:
		return true;
	case RT_CB_OPEN:
		if (now_ns - c->opened_ns < cool_down_ns)
			return false;
		c->state = RT_CB_HALF_OPEN;
		c->probe_out = true;
		*probe = true;
		return true;
	default: /* half-open: one probe at a time */
		if (c->probe_out)
			return false;
		c->probe_out = true;
		*probe = true;
		return true;
	}
}

void rt_breaker_report(struct rt_breakers *b, uint32_t slot, uint32_t gen, int threshold,
		       enum rt_cb_result r, uint64_t now_ns)
{
	struct rt_cb *c;
	if (threshold <= 0 || (c = get(b, slot, gen)) == NULL)
		return;
	switch (r) {
	case RT_CB_SUCCESS:
		c->failures = 0;
		c->state = RT_CB_CLOSED;
		c->probe_out = false;
		break;
	case RT_CB_BACKPRESSURE:
		if (c->state == RT_CB_HALF_OPEN) {
			c->state = RT_CB_CLOSED;
			c->probe_out = false;
			c->failures = 0;
		}
		break;
	case RT_CB_FAILURE:
		if (c->state == RT_CB_OPEN)
			break; /* ignored while open */
		if (c->state == RT_CB_HALF_OPEN || ++c->failures >= (uint32_t)threshold) {
			c->state = RT_CB_OPEN;
			c->opened_ns = now_ns;
			c->probe_out = false;
		}
		break;
	}
}

enum rt_cb_state rt_breaker_state(struct rt_breakers *b, uint32_t slot)
{
	if (b == NULL || slot >= b->slots)
		return RT_CB_CLOSED;
	return (enum rt_cb_state)b->cb[slot].state;
}
