/* metrics-int.h — the layout of the router's metrics mapping, shared by
 * the exposition of switchyard's names (metrics.c) and of the SGLang
 * router's (metrics_sglang.c). Internal to router/http. */
#ifndef SY_ROUTER_METRICS_INT_H
#define SY_ROUTER_METRICS_INT_H

#include <stdint.h>

#include "router/core/buf.h"
#include "router/core/generation.h"
#include "router/http/metrics.h"

/* Status codes with their own label value; anything else counts as "other"
 * (slot RT_STATUS_SLOTS - 1). */
extern const int rt_status_slots[RT_STATUS_SLOTS - 1];
/* Histogram edges in seconds of the request-scale histograms. */
extern const double rt_edges_request[RT_HIST_BUCKETS];

struct rt_hist {
	uint64_t buckets[RT_HIST_BUCKETS + 1]; /* non-cumulative; last = +Inf */
	uint64_t count;
	uint64_t sum_ns;
};

/* One worker process's counters (one writer). */
struct rt_metrics_row {
	uint64_t requests[ROUTE_COUNT_];
	uint64_t responses[ROUTE_COUNT_][RT_STATUS_SLOTS];
	uint64_t decisions[RT_METRICS_LABELS];      /* by interned "policy\0reason" */
	uint64_t failures[RT_METRICS_LABELS];       /* by interned code */
	uint64_t sampling_rejections[RT_METRICS_LABELS]; /* by interned param */
	uint64_t stream[RT_STREAM_COUNT_];
	uint64_t retries;
	uint64_t pending_body_bytes;   /* gauge, set by the row's process */
	uint64_t h2_refused;
	uint64_t pool_replaced;  /* dead kept-alive upstream sockets replaced */
	uint64_t client_cancels; /* clients that went away before the answer ended */
	uint64_t stale;          /* requests ended by --request-timeout-secs */
	uint64_t reselected;     /* picks redone in their group after a removal race */
	uint64_t input_ids[RT_INPUT_IDS_COUNT_]; /* chat requests dispatched, by outcome */
	struct router_cache_totals cache;
	struct rt_hist duration;
	struct rt_hist ttft;
	struct rt_hist phase[RT_PHASE_COUNT_];
	/* The router queue (queue_run.h). */
	uint64_t queue_out[RT_QUEUE_CLASSES][RT_QUEUE_OUTCOMES]; /* left the queue */
	int64_t queue_depth[RT_QUEUE_CLASSES];                   /* gauge, ± adds */
	int64_t queue_tenant[RT_METRICS_LABELS];                 /* gauge by label */
	struct rt_hist queue_wait;                               /* enqueue → leave */
};

struct rt_label {
	uint32_t state; /* 0 free, 1 being written, 2 ready */
	char s[RT_METRICS_LABEL_MAX];
};

struct rt_metrics {
	uint32_t procs;
	uint32_t max_workers;
	size_t size;
	struct rt_label labels[RT_METRICS_LABELS];
	struct rt_metrics_row rows[];
	/* followed by worker cells [procs][max_workers][RT_OUT_COUNT_] */
};

static inline uint64_t *rt_metrics_worker_cells(struct rt_metrics *m)
{
	return (uint64_t *)(void *)&m->rows[m->procs];
}

static inline uint64_t rt_metrics_get(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

/* Cache-signal state of a worker (switchyard_worker_cache_signal{state}). */
enum rt_cache_signal {
	RT_CACHE_SIGNAL_OK = 0,              /* KV events accepted and indexed */
	RT_CACHE_SIGNAL_PREDICTED,           /* no KV events: predictions only
						(approximate mode, block size known) */
	RT_CACHE_SIGNAL_NO_KV_EVENTS,        /* no KV events and no predictions */
	RT_CACHE_SIGNAL_BLOCK_SIZE_MISMATCH, /* disagrees with its model's block size */
	RT_CACHE_SIGNAL_BAD_FACTS,           /* /server_info kv_events block unusable */
	RT_CACHE_SIGNAL_INDEX_OFF,           /* statebus.index off: nothing indexed */
	RT_CACHE_SIGNAL_COUNT_
};
extern const char *const rt_cache_signal_names[RT_CACHE_SIGNAL_COUNT_];

/* The state of worker `w` (read from slot `slot` of `region`, which may be
 * NULL) with the index on or off. */
unsigned rt_metrics_cache_signal(const struct statebus_region *region, uint32_t slot,
				 const struct statebus_worker *w, bool index_off);

/* Requests of worker `slot` with outcome `o`, over every row. */
uint64_t rt_metrics_worker_sum(struct rt_metrics *m, uint32_t slot, unsigned o);

/* Writes histogram `name` ({labels}, "" for none) summed over every row,
 * from the struct rt_hist at byte offset `hist_off` of a row, with bucket
 * `edges` (seconds). */
void rt_metrics_hist_text(struct rt_buf *b, struct rt_metrics *m, const char *name,
			  const char *labels, size_t hist_off, const double *edges);

/* The method label of route `r` ("GET", "POST", "ANY"). */
const char *rt_metrics_route_method(enum route r);

/* Appends the SGLang router's families (metrics_sglang.c) to `b`:
 * switchyard's families that the SGLang routers name sgl_router_*
 * (copied from `sy`, the switchyard exposition of this scrape, `sy_len`
 * bytes, with a `worker` label beside `worker_url`), and the families of
 * the old sgl-router and of SMG (smg_*) derived from the same counters. */
void rt_metrics_sglang_text(struct rt_buf *b, struct rt_metrics *m, struct statebus_region *region,
			    int (*cb_state)(uint32_t slot), const char *sy, size_t sy_len);

#endif
