/* queue.c — the router queue's order (queue.h): four class rings of
 * tenant flows, deficit round robin inside a class.
 *
 * Data structure. Each class keeps a circular doubly linked ring of the
 * flows that have entries linked; `ring` is the flow served next. A flow
 * is a doubly linked FIFO of entries. pop(): for the highest class with a
 * ring, look at its current flow: with a turn left (deficit ≥ 1) take its
 * head entry and spend the turn; otherwise give it `weight` turns and move
 * the ring on. A flow that empties leaves the ring and loses its turns
 * (classic DRR: no credit is kept while idle). Flows are found by (class,
 * tenant) in a chained hash; they are counted against ROUTER_QUEUE_FLOWS,
 * so a flood of tenant names costs at most that many allocations.
 *
 * unpop() makes the entry's flow the next one served with at least one
 * turn: entries put back in reverse pop order come out again in pop order
 * (the deficits are not restored exactly; a failed try neither costs nor
 * earns a tenant more than that one turn).
 *
 * Invariants: n_queued of the queue, a class and a flow equal the entries
 * linked in them; a flow is in its class ring iff n_queued > 0; a flow is
 * in the hash iff n_refs > 0 (the overflow flows are never in the hash).
 */
#include "router/core/queue.h"

#include <stdlib.h>
#include <string.h>

static uint32_t flow_hash(unsigned cls, const char *t, size_t n)
{
	uint32_t h = 2166136261u ^ cls;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)t[i]) * 16777619u;
	return h & (ROUTER_QUEUE_HASH - 1);
}

void router_queue_init(struct router_queue *q)
{
	memset(q, 0, sizeof(*q));
	for (unsigned c = 0; c < ROUTER_QUEUE_CLASSES; c++) {
		struct router_queue_flow *o = &q->cls[c].other;
		o->cls = (uint8_t)c;
		o->weight = 1;
		o->overflow = true;
		memcpy(o->tenant, "other", 6);
	}
}

void router_queue_free(struct router_queue *q)
{
	for (unsigned i = 0; i < ROUTER_QUEUE_HASH; i++) {
		struct router_queue_flow *f = q->hash[i];
		while (f != NULL) {
			struct router_queue_flow *n = f->hnext;
			free(f);
			f = n;
		}
	}
	router_queue_init(q);
}

static void ring_insert_front(struct router_queue_class *c, struct router_queue_flow *f)
{
	if (c->ring == NULL) {
		f->rnext = f->rprev = f;
	} else {
		f->rnext = c->ring;
		f->rprev = c->ring->rprev;
		f->rprev->rnext = f;
		c->ring->rprev = f;
	}
	f->in_ring = true;
	c->ring = f;
}

static void ring_insert_back(struct router_queue_class *c, struct router_queue_flow *f)
{
	ring_insert_front(c, f);
	c->ring = f->rnext; /* f is now the last before the old head */
}

static void ring_remove(struct router_queue_class *c, struct router_queue_flow *f)
{
	if (f->rnext == f) {
		c->ring = NULL;
	} else {
		f->rprev->rnext = f->rnext;
		f->rnext->rprev = f->rprev;
		if (c->ring == f)
			c->ring = f->rnext;
	}
	f->rnext = f->rprev = NULL;
	f->in_ring = false;
	f->deficit = 0;
}

static struct router_queue_flow *flow_get(struct router_queue *q, unsigned cls, const char *t,
					  size_t n, unsigned weight)
{
	uint32_t h = flow_hash(cls, t, n);
	for (struct router_queue_flow *f = q->hash[h]; f != NULL; f = f->hnext)
		if (f->cls == cls && strlen(f->tenant) == n && memcmp(f->tenant, t, n) == 0)
			return f;
	struct router_queue_flow *f = NULL;
	if (q->n_flows < ROUTER_QUEUE_FLOWS)
		f = calloc(1, sizeof(*f));
	if (f == NULL)
		return &q->cls[cls].other;
	f->cls = (uint8_t)cls;
	f->weight = (uint16_t)(weight < 1 ? 1 : weight > 1000 ? 1000 : weight);
	memcpy(f->tenant, t, n);
	f->tenant[n] = '\0';
	f->hnext = q->hash[h];
	q->hash[h] = f;
	q->n_flows++;
	return f;
}

static void flow_put(struct router_queue *q, struct router_queue_flow *f)
{
	if (--f->n_refs > 0 || f->overflow)
		return;
	struct router_queue_flow **pp = &q->hash[flow_hash(f->cls, f->tenant, strlen(f->tenant))];
	while (*pp != f)
		pp = &(*pp)->hnext;
	*pp = f->hnext;
	q->n_flows--;
	free(f);
}

static void link_entry(struct router_queue *q, struct router_queue_flow *f,
		       struct router_queue_entry *e, bool front)
{
	if (front) {
		e->prev = NULL;
		e->next = f->head;
		if (f->head)
			f->head->prev = e;
		else
			f->tail = e;
		f->head = e;
	} else {
		e->next = NULL;
		e->prev = f->tail;
		if (f->tail)
			f->tail->next = e;
		else
			f->head = e;
		f->tail = e;
	}
	e->queued = true;
	f->n_queued++;
	q->cls[f->cls].n_queued++;
	q->n_queued++;
}

static void unlink_entry(struct router_queue *q, struct router_queue_entry *e)
{
	struct router_queue_flow *f = e->flow;
	if (e->prev)
		e->prev->next = e->next;
	else
		f->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		f->tail = e->prev;
	e->prev = e->next = NULL;
	e->queued = false;
	f->n_queued--;
	q->cls[f->cls].n_queued--;
	q->n_queued--;
	if (f->n_queued == 0)
		ring_remove(&q->cls[f->cls], f);
}

void router_queue_push(struct router_queue *q, struct router_queue_entry *e, unsigned cls,
		       const char *tenant, size_t tlen, unsigned weight)
{
	if (cls >= ROUTER_QUEUE_CLASSES)
		cls = SY_QCLASS_DEFAULT;
	if (tlen > SY_TENANT_MAX)
		tlen = SY_TENANT_MAX;
	struct router_queue_flow *f = flow_get(q, cls, tenant, tlen, weight);
	f->n_refs++;
	e->flow = f;
	e->cls = (uint8_t)cls;
	e->seq = ++q->seq;
	link_entry(q, f, e, false);
	if (!f->in_ring)
		ring_insert_back(&q->cls[cls], f);
}

struct router_queue_entry *router_queue_pop(struct router_queue *q)
{
	for (unsigned c = 0; c < ROUTER_QUEUE_CLASSES; c++) {
		struct router_queue_class *k = &q->cls[c];
		while (k->ring != NULL) {
			struct router_queue_flow *f = k->ring;
			if (f->deficit >= 1) {
				struct router_queue_entry *e = f->head;
				f->deficit--;
				unlink_entry(q, e);
				return e;
			}
			f->deficit += f->weight;
			k->ring = f->rnext;
		}
	}
	return NULL;
}

void router_queue_unpop(struct router_queue *q, struct router_queue_entry *e)
{
	struct router_queue_flow *f = e->flow;
	if (f == NULL || e->queued)
		return;
	struct router_queue_class *k = &q->cls[f->cls];
	link_entry(q, f, e, true);
	if (!f->in_ring)
		ring_insert_front(k, f);
	else
		k->ring = f;
	if (f->deficit < 1)
		f->deficit = 1; /* the turn this entry took, back */
}

void router_queue_finish(struct router_queue *q, struct router_queue_entry *e)
{
	if (e->flow == NULL)
		return;
	if (e->queued)
		unlink_entry(q, e);
	struct router_queue_flow *f = e->flow;
	e->flow = NULL;
	flow_put(q, f);
}

uint32_t router_queue_depth(const struct router_queue *q, unsigned cls)
{
	return cls < ROUTER_QUEUE_CLASSES ? q->cls[cls].n_queued : q->n_queued;
}
