/* queue.h — the router queue's order (DESIGN.md §9 "Queueing"): which
 * waiting request is tried next. Pure data structure of one worker
 * process, no I/O, no clock (router/http/queue_run.c drives it).
 *
 * Order: strict priority between the four classes (system, interactive,
 * default, bulk); inside a class, deficit round robin between tenants
 * (each tenant's flow gets `weight` turns per round; a turn costs one
 * request); FIFO inside a tenant. A flow lives while it holds entries
 * (queued, or taken by router_queue_pop and not yet finished); at most
 * ROUTER_QUEUE_FLOWS flows exist at once, past that new tenants share the
 * class's overflow flow (named "other").
 *
 * A pass over the queue pops entries in order, tries each, and hands back
 * the ones that could not go (router_queue_unpop, in reverse pop order):
 * they return to the front of their flow, which becomes the next served
 * with at least one turn, so a failed try costs a tenant nothing and the
 * next pass sees the same order.
 *
 * Ownership: entries are the caller's (embedded in a request); the queue
 * links them. Flows are allocated by the queue (malloc, bounded) and freed
 * when their last entry finishes (router_queue_finish).
 */
#ifndef SY_ROUTER_CORE_QUEUE_H
#define SY_ROUTER_CORE_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"

#define ROUTER_QUEUE_CLASSES 4
#define ROUTER_QUEUE_FLOWS 1024
#define ROUTER_QUEUE_HASH 256 /* flow hash buckets (power of two) */

struct router_queue_flow;

/* One waiting request (caller's storage, zeroed before enqueue). */
struct router_queue_entry {
	struct router_queue_entry *prev, *next; /* in its flow while queued */
	struct router_queue_flow *flow;         /* set from enqueue to finish */
	uint8_t cls;                            /* enum sy_queue_class */
	bool queued;                            /* linked in its flow */
	uint64_t seq;                           /* arrival order in the process */
};

/* One tenant's FIFO in one class. */
struct router_queue_flow {
	struct router_queue_flow *hnext;        /* hash chain */
	struct router_queue_flow *rnext, *rprev; /* class ring of flows with entries */
	struct router_queue_entry *head, *tail;
	uint32_t n_queued;                      /* entries linked */
	uint32_t n_refs;                        /* entries enqueued and not finished */
	int32_t deficit;                        /* turns left this round */
	uint16_t weight;                        /* turns per round, 1..1000 */
	uint8_t cls;
	bool in_ring;
	bool overflow;                          /* the class's shared "other" flow */
	char tenant[SY_TENANT_MAX + 1];
};

struct router_queue_class {
	struct router_queue_flow *ring;         /* next flow to serve, NULL = none */
	uint32_t n_queued;
	struct router_queue_flow other;         /* overflow flow */
};

struct router_queue {
	struct router_queue_class cls[ROUTER_QUEUE_CLASSES];
	struct router_queue_flow *hash[ROUTER_QUEUE_HASH];
	uint32_t n_flows;                       /* allocated flows (not overflow) */
	uint32_t n_queued;                      /* entries linked, every class */
	uint64_t seq;
};

/* Initialises an empty queue. */
void router_queue_init(struct router_queue *q);

/* Frees every flow; entries still linked are dropped (their memory is the
 * caller's). */
void router_queue_free(struct router_queue *q);

/* Appends `e` (zeroed) to tenant `tenant` (tlen bytes, truncated to
 * SY_TENANT_MAX) of class `cls` with DRR weight `weight` (1..1000, taken
 * when the flow is created). Never fails: without room for a new flow the
 * class's overflow flow takes it. */
void router_queue_push(struct router_queue *q, struct router_queue_entry *e, unsigned cls,
		       const char *tenant, size_t tlen, unsigned weight);

/* Unlinks the next entry in order (NULL: empty); it still counts in its
 * flow until router_queue_finish or router_queue_unpop. */
struct router_queue_entry *router_queue_pop(struct router_queue *q);

/* Puts back an entry popped in this pass, at the front of its flow; the
 * flow becomes the next one served in its class, with at least one turn.
 * Entries popped in one pass go back in reverse pop order. */
void router_queue_unpop(struct router_queue *q, struct router_queue_entry *e);

/* Unlinks `e` wherever it is (a timeout or a client gone) if queued, and
 * ends its membership: the flow is freed with its last entry. Idempotent;
 * also ends an entry router_queue_pop returned. */
void router_queue_finish(struct router_queue *q, struct router_queue_entry *e);

/* Entries linked in class `cls` / in all. */
uint32_t router_queue_depth(const struct router_queue *q, unsigned cls);

#endif
