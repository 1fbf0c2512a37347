/* metrics.c — shared-mapping counters and the Prometheus exposition.
 *
 * Layout of the mapping (all uint64_t; relaxed atomic loads and stores, each
 * row written by its one worker process):
 *   struct rt_metrics (header + label table)
 *   rows[procs]            struct rt_metrics_row
 *   worker_cells[procs][max_workers][RT_OUT_COUNT_]
 * See metrics.h for why this is not in the state-plane region.
 */
#include "router/http/metrics.h"
#include "statebus/include/statebus-queue.h"
#include "router/http/metrics-int.h"

#include <string.h>
#include <sys/mman.h>

#include "common/clock.h"
#include "common/errors.h"
#include "router/core/buf.h"
#include "router/core/generation.h"
#include "statebus-counters.h"

const int rt_status_slots[RT_STATUS_SLOTS - 1] = {200, 400, 401, 404, 405, 413,
						 429, 500, 502, 503, 504};

const double rt_edges_request[RT_HIST_BUCKETS] = {
	0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 300, 600};
static const double edges_phase[RT_HIST_BUCKETS] = {
	1e-6, 2.5e-6, 5e-6, 10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6,
	1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 0.25};

#define status_slots rt_status_slots
#define edges_request rt_edges_request
#define worker_cells rt_metrics_worker_cells

struct rt_metrics *rt_metrics_create(unsigned procs, unsigned max_workers)
{
	size_t size = sizeof(struct rt_metrics) + (size_t)procs * sizeof(struct rt_metrics_row) +
		      (size_t)procs * max_workers * RT_OUT_COUNT_ * sizeof(uint64_t);
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	struct rt_metrics *m = p; /* zero-filled by the kernel */
	m->procs = procs;
	m->max_workers = max_workers;
	m->size = size;
	return m;
}

/* Single writer per row (metrics.h): a plain load + store, each atomic for
 * the readers, instead of a locked add on the hot path. */
static inline void add(uint64_t *c, uint64_t v)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}
#define get rt_metrics_get

uint64_t rt_metrics_worker_sum(struct rt_metrics *m, uint32_t slot, unsigned o)
{
	uint64_t v = 0;
	if (m == NULL || slot >= m->max_workers || o >= RT_OUT_COUNT_)
		return 0;
	for (unsigned p = 0; p < m->procs; p++)
		v += get(&worker_cells(m)[((size_t)p * m->max_workers + slot) * RT_OUT_COUNT_ + o]);
	return v;
}

static struct rt_metrics_row *row_of(struct rt_metrics *m, unsigned row)
{
	return m != NULL && row < m->procs ? &m->rows[row] : NULL;
}

/* Interns `s` (truncated to the label size); returns its index, or
 * RT_METRICS_LABELS - 1 ("other") when the table is full. */
static unsigned intern(struct rt_metrics *m, const char *s, size_t len)
{
	if (len >= RT_METRICS_LABEL_MAX)
		len = RT_METRICS_LABEL_MAX - 1;
	for (unsigned i = 0; i < RT_METRICS_LABELS - 1; i++) {
		struct rt_label *l = &m->labels[i];
		uint32_t st = __atomic_load_n(&l->state, __ATOMIC_ACQUIRE);
		if (st == 0) {
			uint32_t zero = 0;
			if (__atomic_compare_exchange_n(&l->state, &zero, 1, false, __ATOMIC_ACQ_REL,
							__ATOMIC_ACQUIRE)) {
				memcpy(l->s, s, len);
				l->s[len] = '\0';
				if (len + 1 < RT_METRICS_LABEL_MAX)
					l->s[len + 1] = '\0';
				__atomic_store_n(&l->state, 2, __ATOMIC_RELEASE);
				return i;
			}
			st = zero;
		}
		while (st == 1) /* another process is writing it: a few bytes, wait */
			st = __atomic_load_n(&l->state, __ATOMIC_ACQUIRE);
		if (memcmp(l->s, s, len) == 0 && l->s[len] == '\0')
			return i;
	}
	return RT_METRICS_LABELS - 1;
}

/* Interns `kind` (one letter) ':' `s`: kinds never collide. */
static unsigned intern_kind(struct rt_metrics *m, char kind, const char *s, size_t len)
{
	char key[RT_METRICS_LABEL_MAX];
	if (len > RT_METRICS_LABEL_MAX - 3)
		len = RT_METRICS_LABEL_MAX - 3;
	key[0] = kind;
	key[1] = ':';
	memcpy(key + 2, s, len);
	key[len + 2] = '\0';
	return intern(m, key, len + 2);
}

void rt_metrics_request(struct rt_metrics *m, unsigned row, enum route route)
{
	struct rt_metrics_row *r = row_of(m, row);
	if (r && (unsigned)route < ROUTE_COUNT_)
		add(&r->requests[route], 1);
}

void rt_metrics_response(struct rt_metrics *m, unsigned row, enum route route, int status)
{
	struct rt_metrics_row *r = row_of(m, row);
	if (!r || (unsigned)route >= ROUTE_COUNT_)
		return;
	unsigned s = RT_STATUS_SLOTS - 1;
	for (unsigned i = 0; i < RT_STATUS_SLOTS - 1; i++)
		if (status_slots[i] == status)
			s = i;
	add(&r->responses[route][s], 1);
}

void rt_metrics_worker(struct rt_metrics *m, unsigned row, uint32_t slot, enum rt_outcome o)
{
	if (!m || row >= m->procs || slot >= m->max_workers || (unsigned)o >= RT_OUT_COUNT_)
		return;
	add(&worker_cells(m)[((size_t)row * m->max_workers + slot) * RT_OUT_COUNT_ + o], 1);
}

/* Interning kind of a decision label: the stage's digit ('0' plain, '1'
 * prefill, '2' decode), so the stage label costs nothing at render time. */
static char decision_kind(unsigned stage)
{
	return (char)('0' + (stage < 3 ? stage : 0));
}

void rt_metrics_decision(struct rt_metrics *m, unsigned row, unsigned stage, const char *policy,
			 const char *reason)
{
	struct rt_metrics_row *r = row_of(m, row);
	if (!r)
		return;
	char key[RT_METRICS_LABEL_MAX];
	char kind = decision_kind(stage);
	/* "policy\0reason" packed; both parts truncated to fit. */
	size_t pl = strnlen(policy ? policy : "", 28), rl = strnlen(reason ? reason : "", 28);
	memcpy(key, policy ? policy : "", pl);
	key[pl] = '\0';
	memcpy(key + pl + 1, reason ? reason : "", rl);
	/* The same decision repeats request after request: try the label the
	 * last decision of this stage interned before scanning the table
	 * (checked against the table itself, so another mapping at the same
	 * address is safe). */
	static __thread unsigned last[3];
	unsigned *last_idx = &last[kind - '0'];
	size_t kl = pl + 1 + rl;
	const struct rt_label *l = &m->labels[*last_idx];
	if (!(*last_idx < RT_METRICS_LABELS - 1 &&
	      __atomic_load_n(&l->state, __ATOMIC_ACQUIRE) == 2 && l->s[0] == kind &&
	      l->s[1] == ':' && memcmp(l->s + 2, key, kl) == 0 && l->s[kl + 2] == '\0'))
		/* intern compares len bytes + the NUL: pass the packed length. */
		*last_idx = intern_kind(m, kind, key, kl);
	add(&r->decisions[*last_idx], 1);
}

const char *rt_metrics_decision_stage(const struct rt_metrics *m, unsigned i)
{
	static const char *const stages[3] = {"plain", "prefill", "decode"};
	if (i >= RT_METRICS_LABELS - 1)
		return "other";
	char k = m->labels[i].s[0];
	return k >= '0' && k <= '2' ? stages[k - '0'] : "other";
}

void rt_metrics_selection_failure(struct rt_metrics *m, unsigned row, const char *code)
{
	struct rt_metrics_row *r = row_of(m, row);
	if (r)
		add(&r->failures[intern_kind(m, 'f', code, strlen(code))], 1);
}

void rt_metrics_sampling_rejection(struct rt_metrics *m, unsigned row, const char *param)
{
	struct rt_metrics_row *r = row_of(m, row);
	if (r)
		add(&r->sampling_rejections[intern_kind(m, 's', param, strlen(param))], 1);
}

static void hist_add(struct rt_hist *h, const double *edges, uint64_t ns)
{
	double s = (double)ns / 1e9;
	unsigned i = 0;
	while (i < RT_HIST_BUCKETS && s > edges[i])
		i++;
	add(&h->buckets[i], 1);
	add(&h->count, 1);
	add(&h->sum_ns, ns);
}

void rt_metrics_edge(struct rt_metrics *m, unsigned row, uint64_t pending_body_bytes,
		     uint64_t h2_refused_delta)
{
	if (m == NULL || row >= m->procs)
		return;
	struct rt_metrics_row *r = &m->rows[row];
	__atomic_store_n(&r->pending_body_bytes, pending_body_bytes, __ATOMIC_RELAXED);
	if (h2_refused_delta > 0)
		add(&r->h2_refused, h2_refused_delta);
}

void rt_metrics_duration(struct rt_metrics *m, unsigned row, uint64_t ns)
{
	struct rt_metrics_row *r = row_of(m, row);
	if (r)
		hist_add(&r->duration, edges_request, ns);
}

void rt_metrics_ttft(struct rt_metrics *m, unsigned row, uint64_t ns)
{
	struct rt_metrics_row *r = row_of(m, row);
	if (r)
		hist_add(&r->ttft, edges_request, ns);
}

void rt_metrics_phase(struct rt_metrics *m, unsigned row, enum rt_phase phase, uint64_t ns)
{
	struct rt_metrics_row *r = row_of(m, row);
	if (r && (unsigned)phase < RT_PHASE_COUNT_)
		hist_add(&r->phase[phase], edges_phase, ns);
}

void rt_metrics_stream(struct rt_metrics *m, unsigned row, enum rt_stream_outcome o)
{
	struct rt_metrics_row *r = row_of(m, row);
	if (r && (unsigned)o < RT_STREAM_COUNT_)
		add(&r->stream[o], 1);
}

void rt_metrics_retry(struct rt_metrics *m, unsigned row)
{
	struct rt_metrics_row *r = row_of(m, row);
	if (r)
		add(&r->retries, 1);
}

void rt_metrics_pool_replaced(struct rt_metrics *m, unsigned row)
{
	struct rt_metrics_row *r = row_of(m, row);
	if (r)
		add(&r->pool_replaced, 1);
}

void rt_metrics_client_cancel(struct rt_metrics *m, unsigned row)
{
	struct rt_metrics_row *r = row_of(m, row);
	if (r)
		add(&r->client_cancels, 1);
}

void rt_metrics_stale_request(struct rt_metrics *m, unsigned row)
{
	struct rt_metrics_row *r = row_of(m, row);
	if (r)
		add(&r->stale, 1);
}

void rt_metrics_reselected(struct rt_metrics *m, unsigned row, uint32_t n)
{
	struct rt_metrics_row *r = row_of(m, row);
	if (r && n > 0)
		add(&r->reselected, n);
}

void rt_metrics_input_ids(struct rt_metrics *m, unsigned row, enum rt_input_ids o)
{
	struct rt_metrics_row *r = row_of(m, row);
	if (r && (unsigned)o < RT_INPUT_IDS_COUNT_)
		add(&r->input_ids[o], 1);
}

void rt_metrics_queue(struct rt_metrics *m, unsigned row, unsigned cls, unsigned outcome,
		      uint64_t waited_ns, bool no_wait)
{
	struct rt_metrics_row *r = row_of(m, row);
	if (!r || cls >= RT_QUEUE_CLASSES || outcome >= RT_QUEUE_OUTCOMES)
		return;
	add(&r->queue_out[cls][outcome], 1);
	if (!no_wait)
		hist_add(&r->queue_wait, edges_request, waited_ns);
}

unsigned rt_metrics_queue_tenant_label(struct rt_metrics *m, const char *tenant)
{
	if (m == NULL)
		return RT_METRICS_LABELS - 1;
	size_t len = strnlen(tenant, RT_METRICS_LABEL_MAX - 3);
	unsigned tenants = 0;
	for (unsigned i = 0; i < RT_METRICS_LABELS - 1; i++) {
		const struct rt_label *l = &m->labels[i];
		if (__atomic_load_n(&l->state, __ATOMIC_ACQUIRE) != 2 || l->s[0] != 't' ||
		    l->s[1] != ':')
			continue;
		if (memcmp(l->s + 2, tenant, len) == 0 && l->s[len + 2] == '\0')
			return i;
		tenants++;
	}
	if (tenants >= RT_QUEUE_TENANT_LABELS)
		return RT_METRICS_LABELS - 1;
	return intern_kind(m, 't', tenant, len);
}

void rt_metrics_queue_depth(struct rt_metrics *m, unsigned row, unsigned cls, unsigned label,
			    int delta)
{
	struct rt_metrics_row *r = row_of(m, row);
	if (!r || cls >= RT_QUEUE_CLASSES || label >= RT_METRICS_LABELS)
		return;
	add((uint64_t *)&r->queue_depth[cls], (uint64_t)(int64_t)delta);
	add((uint64_t *)&r->queue_tenant[label], (uint64_t)(int64_t)delta);
}

void rt_metrics_queue_reset(struct rt_metrics *m, unsigned row)
{
	struct rt_metrics_row *r = row_of(m, row);
	if (!r)
		return;
	for (unsigned c = 0; c < RT_QUEUE_CLASSES; c++)
		__atomic_store_n(&r->queue_depth[c], 0, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < RT_METRICS_LABELS; i++)
		__atomic_store_n(&r->queue_tenant[i], 0, __ATOMIC_RELAXED);
}

void rt_metrics_cache(struct rt_metrics *m, unsigned row, const struct router_cache_totals *delta)
{
	struct rt_metrics_row *r = row_of(m, row);
	if (!r || delta == NULL)
		return;
	uint64_t *c = (uint64_t *)(void *)&r->cache;
	const uint64_t *d = (const uint64_t *)(const void *)delta;
	for (size_t i = 0; i < sizeof(r->cache) / sizeof(uint64_t); i++)
		if (d[i] != 0)
			add(&c[i], d[i]);
}

enum rt_outcome rt_outcome_of_status(int status)
{
	if (status == 429 || status == 503)
		return RT_OUT_BACKPRESSURE;
	if (status >= 500 || status <= 0)
		return RT_OUT_ERROR;
	if (status >= 400)
		return RT_OUT_CLIENT_ERROR;
	return RT_OUT_SUCCESS;
}

/* ---- exposition -------------------------------------------------------- */

static const char *const outcome_names[RT_OUT_COUNT_] = {"success", "client_error",
							  "backpressure", "error", "cancelled"};
static const char *const phase_names[RT_PHASE_COUNT_] = {"prepare", "tokenize", "hash",
							  "pick", "upstream_connect", "ttfb"};
static const char *const stream_names[RT_STREAM_COUNT_] = {"complete", "client_cancel",
							    "upstream_error", "idle_timeout"};

const char *rt_metrics_route_method(enum route r)
{
	switch (r) {
	case ROUTE_CHAT_COMPLETIONS:
	case ROUTE_COMPLETIONS:
	case ROUTE_GENERATE:
	case ROUTE_EMBEDDINGS:
	case ROUTE_RERANK:
	case ROUTE_RESPONSES:
	case ROUTE_MESSAGES:
	case ROUTE_ADD_WORKER:
	case ROUTE_REMOVE_WORKER:
	case ROUTE_FLUSH_CACHE:
	case ROUTE_TOKENIZE:
	case ROUTE_DETOKENIZE:
		return "POST";
	case ROUTE_OTHER:
	case ROUTE_WORKERS:
		return "ANY";
	default:
		return "GET";
	}
}

static void label_esc(struct rt_buf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			rt_buf_put(b, "\\", 1);
		if (*s == '\n') {
			rt_buf_puts(b, "\\n");
			continue;
		}
		rt_buf_put(b, s, 1);
	}
}

void rt_metrics_hist_text(struct rt_buf *b, struct rt_metrics *m, const char *name,
			  const char *labels, size_t hist_off, const double *edges)
{
	uint64_t cum = 0, count = 0, sum = 0;
	uint64_t bk[RT_HIST_BUCKETS + 1] = {0};
	for (unsigned p = 0; p < m->procs; p++) {
		const struct rt_hist *h = (const void *)((const char *)&m->rows[p] + hist_off);
		for (unsigned i = 0; i <= RT_HIST_BUCKETS; i++)
			bk[i] += get(&h->buckets[i]);
		count += get(&h->count);
		sum += get(&h->sum_ns);
	}
	const char *sep = labels[0] ? "," : "";
	for (unsigned i = 0; i < RT_HIST_BUCKETS; i++) {
		cum += bk[i];
		rt_buf_printf(b, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, sep, edges[i],
			      (unsigned long long)cum);
	}
	cum += bk[RT_HIST_BUCKETS];
	rt_buf_printf(b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep,
		      (unsigned long long)cum);
	const char *lo = labels[0] ? "{" : "", *lc = labels[0] ? "}" : "";
	rt_buf_printf(b, "%s_sum%s%s%s %.9f\n%s_count%s%s%s %llu\n", name, lo, labels, lc,
		      (double)sum / 1e9, name, lo, labels, lc, (unsigned long long)count);
}

/* Sum over rows of the uint64_t at byte offset `off` of struct
 * router_cache_totals. */
static uint64_t cache_sum(struct rt_metrics *m, size_t off)
{
	uint64_t v = 0;
	for (unsigned p = 0; p < m->procs; p++)
		v += get((const uint64_t *)(const void *)((const char *)&m->rows[p].cache + off));
	return v;
}

#define CACHE_OFF(field) offsetof(struct router_cache_totals, field)

static void render_cache(struct rt_buf *b, struct rt_metrics *m)
{
	rt_buf_puts(b, "# HELP switchyard_cache_aware_decisions_total cache_aware picks, by "
		       "decision.\n# TYPE switchyard_cache_aware_decisions_total counter\n");
	for (int d = 0; d < CACHE_AWARE_DECISIONS_; d++)
		rt_buf_printf(b, "switchyard_cache_aware_decisions_total{decision=\"%s\"} %llu\n",
			      cache_aware_decision_name((enum cache_aware_decision)d),
			      (unsigned long long)cache_sum(m, CACHE_OFF(decisions) +
								   d * sizeof(uint64_t)));
	static const struct {
		const char *name, *help;
		size_t off;
	} plain[] = {
		{"switchyard_cache_admission_evaluated_total",
		 "Cache candidates put through hard admission.", CACHE_OFF(admission_evaluated)},
		{"switchyard_cache_admission_rejected_total",
		 "Cache candidates refused by hard admission.", CACHE_OFF(admission_rejected)},
		{"switchyard_cache_pressure_guard_compared_total",
		 "Pressure-guard comparisons between cache candidates.", CACHE_OFF(guard_compared)},
		{"switchyard_cache_pressure_guard_override_total",
		 "Pressure-guard comparisons that switched to the less pressured candidate.",
		 CACHE_OFF(guard_override)},
	};
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
		rt_buf_printf(b, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", plain[i].name,
			      plain[i].help, plain[i].name, plain[i].name,
			      (unsigned long long)cache_sum(m, plain[i].off));
	rt_buf_puts(b, "# HELP switchyard_cache_monitor_decisions_total cache_aware decisions by "
		       "the load source they compared engines by: load_report (every load read was "
		       "a fresh native report) or router_local (router in-flight counts).\n"
		       "# TYPE switchyard_cache_monitor_decisions_total counter\n");
	for (int k = 0; k < CACHE_MONITOR_SOURCES_; k++)
		rt_buf_printf(b, "switchyard_cache_monitor_decisions_total{source=\"%s\"} %llu\n",
			      cache_monitor_source_name((enum cache_monitor_source)k),
			      (unsigned long long)cache_sum(m, CACHE_OFF(monitor) +
								   k * sizeof(uint64_t)));
	rt_buf_puts(b, "# HELP switchyard_diverted_overlap_blocks Prefix depth (blocks) of the "
		       "deepest cache candidate a queue-gate diversion gave up "
		       "(cache_worker_queued decisions).\n"
		       "# TYPE switchyard_diverted_overlap_blocks histogram\n");
	uint64_t cum = 0;
	for (int h = 0; h <= CACHE_DIVERTED_EDGES; h++) {
		cum += cache_sum(m, CACHE_OFF(diverted) + h * sizeof(uint64_t));
		if (h < CACHE_DIVERTED_EDGES)
			rt_buf_printf(b, "switchyard_diverted_overlap_blocks_bucket{le=\"%llu\"} %llu\n",
				      (unsigned long long)cache_diverted_edges[h],
				      (unsigned long long)cum);
		else
			rt_buf_printf(b, "switchyard_diverted_overlap_blocks_bucket{le=\"+Inf\"} %llu\n",
				      (unsigned long long)cum);
	}
	rt_buf_printf(b, "switchyard_diverted_overlap_blocks_sum %llu\n"
			 "switchyard_diverted_overlap_blocks_count %llu\n",
		      (unsigned long long)cache_sum(m, CACHE_OFF(diverted_sum)),
		      (unsigned long long)cum);
	rt_buf_printf(b,
		      "# HELP switchyard_digest_memo_pages_total Prompt pages hashed through the "
		      "per-process digest memo: hit (served from the memo) or miss (SHA-256).\n"
		      "# TYPE switchyard_digest_memo_pages_total counter\n"
		      "switchyard_digest_memo_pages_total{result=\"hit\"} %llu\n"
		      "switchyard_digest_memo_pages_total{result=\"miss\"} %llu\n",
		      (unsigned long long)cache_sum(m, CACHE_OFF(digest_hits)),
		      (unsigned long long)cache_sum(m, CACHE_OFF(digest_misses)));
	rt_buf_puts(b, "# HELP switchyard_cache_prefix_lookups_total Prefix-source answers, by "
		       "source, outcome and (unavailable) reason.\n"
		       "# TYPE switchyard_cache_prefix_lookups_total counter\n");
	static const char *const kinds[ROUTER_CACHE_SOURCE_KINDS] = {"local", "indexer"};
	for (int k = 0; k < ROUTER_CACHE_SOURCE_KINDS; k++) {
		const struct {
			enum prefix_status st;
			size_t off;
		} outs[] = {
			{PREFIX_FOUND, CACHE_OFF(found) + k * sizeof(uint64_t)},
			{PREFIX_NO_CHAIN, CACHE_OFF(no_chain) + k * sizeof(uint64_t)},
			{PREFIX_REJECTED, CACHE_OFF(rejected) + k * sizeof(uint64_t)},
		};
		for (size_t i = 0; i < sizeof(outs) / sizeof(outs[0]); i++)
			rt_buf_printf(b,
				      "switchyard_cache_prefix_lookups_total{source=\"%s\",outcome=\"%s\","
				      "reason=\"none\"} %llu\n",
				      kinds[k], prefix_status_name(outs[i].st),
				      (unsigned long long)cache_sum(m, outs[i].off));
		for (int w = PREFIX_WHY_TIMEOUT; w <= PREFIX_WHY_TOO_LARGE; w++)
			rt_buf_printf(b,
				      "switchyard_cache_prefix_lookups_total{source=\"%s\",outcome=\"%s\","
				      "reason=\"%s\"} %llu\n",
				      kinds[k], prefix_status_name(PREFIX_UNAVAILABLE),
				      prefix_unavailable_name((enum prefix_unavailable)w),
				      (unsigned long long)cache_sum(
					      m, CACHE_OFF(unavailable) +
							 ((size_t)k * (PREFIX_WHY_TOO_LARGE + 1) + w) *
								 sizeof(uint64_t)));
	}
}

/* The statebus's counters, read from the region's counters block (DESIGN.md
 * §5: "a router's /metrics and syctl streams read them from there"), and
 * whether a statebus is live (header heartbeat, 5 s). Region-wide values:
 * every router of the host reports the same numbers. */
static void render_region_counters(struct rt_buf *b, struct statebus_region *region)
{
	for (unsigned i = 0; i < STATEBUS_CTR_COUNT_; i++) {
		const char *name = statebus_counter_name(i);
		if (name == NULL)
			continue;
		rt_buf_printf(b, "# HELP %s Counted by the statebus in the state plane.\n"
				 "# TYPE %s counter\n%s %llu\n",
			      name, name, name, (unsigned long long)statebus_counter_get(region, i));
	}
	rt_buf_printf(b, "# HELP switchyard_statebus_live 1 while a statebus writes the state "
			 "plane (heartbeat within 5 s).\n# TYPE switchyard_statebus_live gauge\n"
			 "switchyard_statebus_live %d\n",
		      statebus_daemon_live(region, sy_mono_ns(), 5000000000ull) ? 1 : 0);
}

const char *const rt_cache_signal_names[RT_CACHE_SIGNAL_COUNT_] = {
	"ok", "predicted", "no_kv_events", "block_size_mismatch", "bad_kv_facts", "index_off"};

unsigned rt_metrics_cache_signal(const struct statebus_region *region, uint32_t slot,
				 const struct statebus_worker *w, bool index_off)
{
	if (index_off)
		return RT_CACHE_SIGNAL_INDEX_OFF;
	if (w->kv_rejected == STATEBUS_KV_BLOCK_SIZE_MISMATCH)
		return RT_CACHE_SIGNAL_BLOCK_SIZE_MISMATCH;
	if (w->kv_rejected == STATEBUS_KV_BAD_FACTS)
		return RT_CACHE_SIGNAL_BAD_FACTS;
	if (w->has_cache_signal && w->kv_rejected == STATEBUS_KV_OK)
		return RT_CACHE_SIGNAL_OK;
	struct statebus_predict_worker pw;
	if (region != NULL && statebus_predict_worker_read(region, slot, &pw) == SY_OK &&
	    (pw.worker_gen == 0 || pw.worker_gen == w->generation) && /* 0: no entries yet */
	    pw.cache_signal == STATEBUS_CACHE_SIGNAL_PREDICTED &&
	    w->kv_block_size > 0)
		return RT_CACHE_SIGNAL_PREDICTED;
	return RT_CACHE_SIGNAL_NO_KV_EVENTS;
}

/* The router queue's families. */
static void render_queue(struct rt_buf *b, struct rt_metrics *m, struct statebus_region *region)
{
	static const char *const classes[RT_QUEUE_CLASSES] = {"system", "interactive", "default",
							      "bulk"};
	static const char *const outs[RT_QUEUE_OUTCOMES] = {"admitted", "timed_out", "cancelled",
							    "rejected_full"};
	rt_buf_puts(b, "# HELP switchyard_queue_depth Requests waiting in the router queue, by "
		       "class.\n# TYPE switchyard_queue_depth gauge\n");
	for (unsigned c = 0; c < RT_QUEUE_CLASSES; c++) {
		int64_t v = 0;
		for (unsigned p = 0; p < m->procs; p++)
			v += (int64_t)get((const uint64_t *)&m->rows[p].queue_depth[c]);
		rt_buf_printf(b, "switchyard_queue_depth{class=\"%s\"} %lld\n", classes[c],
			      (long long)(v > 0 ? v : 0));
	}
	rt_buf_puts(b, "# HELP switchyard_queue_tenant_depth Requests waiting in the router "
		       "queue, by tenant (at most 16 tenants, then \"other\").\n"
		       "# TYPE switchyard_queue_tenant_depth gauge\n");
	for (unsigned i = 0; i < RT_METRICS_LABELS; i++) {
		bool other = i == RT_METRICS_LABELS - 1;
		if (!other && (__atomic_load_n(&m->labels[i].state, __ATOMIC_ACQUIRE) != 2 ||
			       m->labels[i].s[0] != 't' || m->labels[i].s[1] != ':'))
			continue;
		int64_t v = 0;
		for (unsigned p = 0; p < m->procs; p++)
			v += (int64_t)get((const uint64_t *)&m->rows[p].queue_tenant[i]);
		if (other && v <= 0)
			continue;
		rt_buf_puts(b, "switchyard_queue_tenant_depth{tenant=\"");
		label_esc(b, other ? "other" : m->labels[i].s + 2);
		rt_buf_printf(b, "\"} %lld\n", (long long)(v > 0 ? v : 0));
	}
	rt_buf_puts(b, "# HELP switchyard_queue_requests_total Requests that left the router "
		       "queue, by class and outcome.\n"
		       "# TYPE switchyard_queue_requests_total counter\n");
	for (unsigned c = 0; c < RT_QUEUE_CLASSES; c++)
		for (unsigned o = 0; o < RT_QUEUE_OUTCOMES; o++) {
			uint64_t v = 0;
			for (unsigned p = 0; p < m->procs; p++)
				v += get(&m->rows[p].queue_out[c][o]);
			rt_buf_printf(b, "switchyard_queue_requests_total{class=\"%s\","
					 "outcome=\"%s\"} %llu\n",
				      classes[c], outs[o], (unsigned long long)v);
		}
	rt_buf_puts(b, "# HELP switchyard_queue_wait_seconds Time requests waited in the "
		       "router queue.\n# TYPE switchyard_queue_wait_seconds histogram\n");
	rt_metrics_hist_text(b, m, "switchyard_queue_wait_seconds", "",
			     offsetof(struct rt_metrics_row, queue_wait), edges_request);
	if (region != NULL)
		rt_buf_printf(b, "# HELP switchyard_queue_running Requests counted against "
				 "router.max_concurrent_requests (every router process of the "
				 "host).\n# TYPE switchyard_queue_running gauge\n"
				 "switchyard_queue_running %lld\n",
			      (long long)statebus_queue_running_sum(region));
}

int rt_metrics_render(struct rt_metrics *m, struct statebus_region *region,
		      int (*cb_state)(uint32_t slot), int names, char **out, size_t *len)
{
	struct rt_buf b = {0};
	if (m == NULL)
		return SY_EINVAL;

	rt_buf_puts(&b, "# HELP switchyard_requests_total Requests received, by route.\n"
			"# TYPE switchyard_requests_total counter\n");
	for (unsigned r = 0; r < ROUTE_COUNT_; r++) {
		uint64_t v = 0;
		for (unsigned p = 0; p < m->procs; p++)
			v += get(&m->rows[p].requests[r]);
		rt_buf_printf(&b, "switchyard_requests_total{route=\"%s\",method=\"%s\"} %llu\n",
			      route_name(r), rt_metrics_route_method(r), (unsigned long long)v);
	}
	rt_buf_puts(&b, "# HELP switchyard_responses_total Responses sent, by route and status.\n"
			"# TYPE switchyard_responses_total counter\n");
	for (unsigned r = 0; r < ROUTE_COUNT_; r++)
		for (unsigned s = 0; s < RT_STATUS_SLOTS; s++) {
			uint64_t v = 0;
			for (unsigned p = 0; p < m->procs; p++)
				v += get(&m->rows[p].responses[r][s]);
			if (v == 0)
				continue;
			char code[8];
			if (s < RT_STATUS_SLOTS - 1)
				snprintf(code, sizeof(code), "%d", status_slots[s]);
			else
				snprintf(code, sizeof(code), "other");
			rt_buf_printf(&b,
				      "switchyard_responses_total{route=\"%s\",method=\"%s\","
				      "status_code=\"%s\"} %llu\n",
				      route_name(r), rt_metrics_route_method(r), code, (unsigned long long)v);
		}

	/* Per worker: requests by outcome, in-flight, health, breaker. */
	rt_buf_puts(&b, "# HELP switchyard_worker_requests_total Requests dispatched to a worker, "
			"by outcome.\n# TYPE switchyard_worker_requests_total counter\n");
	struct rt_buf gauges = {0};
	rt_buf_puts(&gauges, "# HELP switchyard_worker_inflight_requests Requests in flight at a "
			     "worker (all router processes of the host).\n"
			     "# TYPE switchyard_worker_inflight_requests gauge\n");
	/* One buffer per family: Prometheus text wants each family's samples
	 * in one group after its TYPE line. */
	struct rt_buf health = {0}, cbs = {0};
	rt_buf_puts(&health, "# HELP switchyard_worker_health 1 when the worker's last health "
			     "check passed.\n# TYPE switchyard_worker_health gauge\n");
	rt_buf_puts(&cbs, "# HELP switchyard_worker_cb_state Circuit breaker: 0 closed, 1 open, "
			  "2 half-open.\n# TYPE switchyard_worker_cb_state gauge\n");
	/* The region's health table (statebus/health.c), one family each. */
	static const char *const hfam[] = {
		"# HELP switchyard_worker_passive_down 1 while a router marked the worker down "
		"(connect failure, reset, timeout) and no probe has passed since.\n"
		"# TYPE switchyard_worker_passive_down gauge\n",
		"# HELP switchyard_worker_stalled 1 while the worker is stalled (streamed requests in "
		"flight, no byte for the stall timeout).\n# TYPE switchyard_worker_stalled gauge\n",
		"# HELP switchyard_worker_passive_down_total Passive down marks of the worker.\n"
		"# TYPE switchyard_worker_passive_down_total counter\n",
		"# HELP switchyard_worker_stalls_total Stalls detected on the worker.\n"
		"# TYPE switchyard_worker_stalls_total counter\n",
		"# HELP switchyard_worker_recoveries_total Down marks and stalls cleared by a "
		"passing probe.\n# TYPE switchyard_worker_recoveries_total counter\n",
	};
	struct rt_buf hb[5] = {{0}};
	for (int i = 0; i < 5; i++)
		rt_buf_puts(&hb[i], hfam[i]);
	/* The region's load table (the engines' LoadStat, or a vLLM engine's
	 * scraped /metrics): a sample only while the worker's view is fresh —
	 * an unknown load is absent, never 0 — and load_fresh says which. */
	static const char *const lfam[] = {
		"# HELP switchyard_worker_load_fresh 1 while the engine's reported load (LoadStat or "
		"scraped /metrics, every DP rank) is fresh; 0: unknown, the load samples are absent.\n"
		"# TYPE switchyard_worker_load_fresh gauge\n",
		"# HELP switchyard_worker_load_running_requests Requests the engine reports running "
		"(all DP ranks).\n# TYPE switchyard_worker_load_running_requests gauge\n",
		"# HELP switchyard_worker_load_waiting_requests Requests the engine reports queued "
		"(all DP ranks).\n# TYPE switchyard_worker_load_waiting_requests gauge\n",
		"# HELP switchyard_worker_load_kv_tokens KV-cache tokens the engine reports in use "
		"(all DP ranks).\n# TYPE switchyard_worker_load_kv_tokens gauge\n",
		"# HELP switchyard_worker_load_kv_capacity_tokens KV-cache capacity the engine "
		"reports, tokens (all DP ranks).\n"
		"# TYPE switchyard_worker_load_kv_capacity_tokens gauge\n",
	};
	struct rt_buf lb[5] = {{0}};
	for (int i = 0; i < 5; i++)
		rt_buf_puts(&lb[i], lfam[i]);
	uint64_t now_ns = sy_mono_ns();
	struct rt_buf sig = {0}, untr = {0};
	rt_buf_puts(&sig, "# HELP switchyard_worker_cache_signal The worker's cache signal, one "
			  "sample per state, 1 for the current one: ok (KV events indexed), "
			  "predicted (no KV events: dispatch predictions only), no_kv_events, "
			  "block_size_mismatch (disagrees with its model's block size: not indexed), "
			  "bad_kv_facts, index_off (statebus.index off).\n"
			  "# TYPE switchyard_worker_cache_signal gauge\n");
	rt_buf_puts(&untr, "# HELP switchyard_kv_event_stream_untrusted 1 while a KV-event stream "
			   "(worker, DP rank) saw a gap or stale batch since its last reset or "
			   "AllBlocksCleared.\n# TYPE switchyard_kv_event_stream_untrusted gauge\n");
	bool index_off = region != NULL &&
			 statebus_index_mode(region) == STATEBUS_INDEX_MODE_OFF;
	uint64_t n_workers[3] = {0, 0, 0};
	int64_t active = 0;
	uint32_t cap = region ? statebus_workers_capacity(region) : 0;
	for (uint32_t slot = 0; slot < cap; slot++) {
		struct statebus_worker w;
		if (statebus_worker_read(region, slot, &w) != SY_OK ||
		    w.state == STATEBUS_WORKER_FREE)
			continue;
		static const char *const modes[3] = {"plain", "prefill", "decode"};
		const char *mode = w.role < 3 ? modes[w.role] : "plain";
		if (w.role < 3)
			n_workers[w.role]++;
		struct rt_buf lab = {0};
		rt_buf_puts(&lab, "worker_url=\"");
		label_esc(&lab, w.id);
		rt_buf_puts(&lab, "\",model_id=\"");
		label_esc(&lab, w.model);
		rt_buf_printf(&lab, "\",mode=\"%s\"", mode);
		const char *l = lab.p ? lab.p : "";
		if (slot < m->max_workers)
			for (unsigned o = 0; o < RT_OUT_COUNT_; o++) {
				uint64_t v = 0;
				for (unsigned p = 0; p < m->procs; p++)
					v += get(&worker_cells(m)[((size_t)p * m->max_workers + slot) *
									  RT_OUT_COUNT_ + o]);
				rt_buf_printf(&b,
					      "switchyard_worker_requests_total{%s,outcome=\"%s\"} %llu\n",
					      l, outcome_names[o], (unsigned long long)v);
			}
		int64_t infl = 0;
		statebus_inflight_sum(region, slot, &infl, NULL);
		active += infl;
		rt_buf_printf(&gauges, "switchyard_worker_inflight_requests{%s} %lld\n", l,
			      (long long)infl);
		rt_buf_printf(&health, "switchyard_worker_health{%s} %d\n", l, w.healthy ? 1 : 0);
		if (cb_state)
			rt_buf_printf(&cbs, "switchyard_worker_cb_state{%s} %d\n", l, cb_state(slot));
		struct statebus_health h;
		if (statebus_health_read(region, slot, &h) != SY_OK || h.worker_gen != w.generation)
			memset(&h, 0, sizeof(h));
		rt_buf_printf(&hb[0], "switchyard_worker_passive_down{%s} %d\n", l,
			      h.down_since_ns != 0);
		rt_buf_printf(&hb[1], "switchyard_worker_stalled{%s} %d\n", l, h.stalled_since_ns != 0);
		rt_buf_printf(&hb[2], "switchyard_worker_passive_down_total{%s} %llu\n", l,
			      (unsigned long long)h.downs);
		rt_buf_printf(&hb[3], "switchyard_worker_stalls_total{%s} %llu\n", l,
			      (unsigned long long)h.stalls);
		rt_buf_printf(&hb[4], "switchyard_worker_recoveries_total{%s} %llu\n", l,
			      (unsigned long long)h.recoveries);
		struct statebus_load_view lv;
		bool fresh = statebus_load_view(region, slot, now_ns, &lv) == SY_OK &&
			     lv.worker_gen == w.generation;
		rt_buf_printf(&lb[0], "switchyard_worker_load_fresh{%s} %d\n", l, fresh ? 1 : 0);
		if (fresh) {
			rt_buf_printf(&lb[1], "switchyard_worker_load_running_requests{%s} %llu\n", l,
				      (unsigned long long)lv.num_running_reqs);
			rt_buf_printf(&lb[2], "switchyard_worker_load_waiting_requests{%s} %llu\n", l,
				      (unsigned long long)lv.num_waiting_reqs);
			rt_buf_printf(&lb[3], "switchyard_worker_load_kv_tokens{%s} %llu\n", l,
				      (unsigned long long)lv.num_tokens);
			rt_buf_printf(&lb[4], "switchyard_worker_load_kv_capacity_tokens{%s} %llu\n",
				      l, (unsigned long long)lv.max_total_num_tokens);
		}
		unsigned st = rt_metrics_cache_signal(region, slot, &w, index_off);
		for (unsigned k = 0; k < RT_CACHE_SIGNAL_COUNT_; k++)
			rt_buf_printf(&sig, "switchyard_worker_cache_signal{%s,state=\"%s\"} %d\n", l,
				      rt_cache_signal_names[k], k == st);
		uint32_t ranks = w.dp_size ? w.dp_size : 1;
		if (ranks > statebus_load_max_ranks(region))
			ranks = statebus_load_max_ranks(region);
		for (uint32_t k = 0; st == RT_CACHE_SIGNAL_OK && k < ranks; k++) {
			struct statebus_stream sm;
			if (statebus_stream_read(region, slot, k, &sm) != SY_OK ||
			    sm.worker_gen != w.generation)
				continue;
			rt_buf_puts(&untr, "switchyard_kv_event_stream_untrusted{worker_url=\"");
			label_esc(&untr, w.id);
			rt_buf_printf(&untr, "\",rank=\"%u\"} %d\n", k, sm.untrusted ? 1 : 0);
		}
		rt_buf_free(&lab);
	}
	rt_buf_put(&b, sig.p, sig.n);
	rt_buf_put(&b, untr.p, untr.n);
	b.oom |= sig.oom || untr.oom;
	rt_buf_free(&sig);
	rt_buf_free(&untr);
	if (region != NULL) {
		struct statebus_index_stats ist;
		statebus_index_stats(region, &ist);
		rt_buf_printf(&b, "# HELP switchyard_kv_tree_blocks Blocks (block positions) in the "
				  "statebus's radix index of the host; 0 with statebus.index off.\n"
				  "# TYPE switchyard_kv_tree_blocks gauge\nswitchyard_kv_tree_blocks %u\n",
			      ist.nodes);
	}
	if (gauges.p)
		rt_buf_put(&b, gauges.p, gauges.n);
	if (health.p)
		rt_buf_put(&b, health.p, health.n);
	if (cb_state && cbs.p)
		rt_buf_put(&b, cbs.p, cbs.n);
	for (int i = 0; i < 5; i++) {
		if (hb[i].p)
			rt_buf_put(&b, hb[i].p, hb[i].n);
		if (hb[i].oom)
			b.oom = true;
		rt_buf_free(&hb[i]);
	}
	for (int i = 0; i < 5; i++) {
		if (lb[i].p)
			rt_buf_put(&b, lb[i].p, lb[i].n);
		if (lb[i].oom)
			b.oom = true;
		rt_buf_free(&lb[i]);
	}
	if (gauges.oom || health.oom || cbs.oom)
		b.oom = true;
	rt_buf_free(&gauges);
	rt_buf_free(&health);
	rt_buf_free(&cbs);
	rt_buf_printf(&b,
		      "# HELP switchyard_workers Workers in the state plane, by mode.\n"
		      "# TYPE switchyard_workers gauge\n"
		      "switchyard_workers{mode=\"plain\"} %llu\n"
		      "switchyard_workers{mode=\"prefill\"} %llu\n"
		      "switchyard_workers{mode=\"decode\"} %llu\n"
		      "# HELP switchyard_active_load Requests in flight over every worker.\n"
		      "# TYPE switchyard_active_load gauge\nswitchyard_active_load %lld\n",
		      (unsigned long long)n_workers[0], (unsigned long long)n_workers[1],
		      (unsigned long long)n_workers[2], (long long)active);

	/* Labelled by interned strings. */
	rt_buf_puts(&b, "# HELP switchyard_policy_decisions_total Engine picks, by stage "
			"(plain, prefill, decode), policy and reason.\n# TYPE switchyard_policy_decisions_total counter\n");
	for (unsigned i = 0; i < RT_METRICS_LABELS; i++) {
		uint64_t v = 0;
		for (unsigned p = 0; p < m->procs; p++)
			v += get(&m->rows[p].decisions[i]);
		if (v == 0)
			continue;
		const char *pol = i < RT_METRICS_LABELS - 1 ? m->labels[i].s + 2 : "other";
		const char *rea = i < RT_METRICS_LABELS - 1 ? pol + strlen(pol) + 1 : "other";
		rt_buf_printf(&b, "switchyard_policy_decisions_total{stage=\"%s\",policy=\"",
			      rt_metrics_decision_stage(m, i));
		label_esc(&b, pol);
		rt_buf_puts(&b, "\",reason=\"");
		label_esc(&b, rea);
		rt_buf_printf(&b, "\"} %llu\n", (unsigned long long)v);
	}
	rt_buf_puts(&b, "# HELP switchyard_policy_selection_failures_total Requests no engine "
			"could be selected for, by error code.\n"
			"# TYPE switchyard_policy_selection_failures_total counter\n");
	for (unsigned i = 0; i < RT_METRICS_LABELS; i++) {
		uint64_t v = 0;
		for (unsigned p = 0; p < m->procs; p++)
			v += get(&m->rows[p].failures[i]);
		if (v == 0)
			continue;
		rt_buf_puts(&b, "switchyard_policy_selection_failures_total{code=\"");
		label_esc(&b, i < RT_METRICS_LABELS - 1 ? m->labels[i].s + 2 : "other");
		rt_buf_printf(&b, "\"} %llu\n", (unsigned long long)v);
	}
	rt_buf_puts(&b, "# HELP switchyard_sampling_contract_rejections_total Requests refused "
			"for a sampling parameter that differs from the override.\n"
			"# TYPE switchyard_sampling_contract_rejections_total counter\n");
	for (unsigned i = 0; i < RT_METRICS_LABELS; i++) {
		uint64_t v = 0;
		for (unsigned p = 0; p < m->procs; p++)
			v += get(&m->rows[p].sampling_rejections[i]);
		if (v == 0)
			continue;
		rt_buf_puts(&b, "switchyard_sampling_contract_rejections_total{param=\"");
		label_esc(&b, i < RT_METRICS_LABELS - 1 ? m->labels[i].s + 2 : "other");
		rt_buf_printf(&b, "\"} %llu\n", (unsigned long long)v);
	}
	/* sticky decisions by outcome: the sticky policy's reasons (sticky.c) */
	static const struct {
		const char *reason, *outcome;
	} sticky_map[] = {{"sticky_hit", "hit"},
			  {"sticky_new", "assigned"},
			  {"sticky_remap", "remap"},
			  {"no_routing_key", "no_routing_key"}};
	rt_buf_puts(&b, "# HELP switchyard_sticky_total sticky policy decisions, by outcome (hit, "
			"assigned, remap, no_routing_key).\n# TYPE switchyard_sticky_total counter\n");
	for (size_t k = 0; k < sizeof(sticky_map) / sizeof(sticky_map[0]); k++) {
		uint64_t v = 0;
		for (unsigned i = 0; i < RT_METRICS_LABELS - 1; i++) {
			const char *pol = m->labels[i].s + 2;
			if (rt_metrics_decision_stage(m, i)[0] == 'o' || strcmp(pol, "sticky") != 0 ||
			    strcmp(pol + strlen(pol) + 1, sticky_map[k].reason) != 0)
				continue;
			for (unsigned p = 0; p < m->procs; p++)
				v += get(&m->rows[p].decisions[i]);
		}
		rt_buf_printf(&b, "switchyard_sticky_total{outcome=\"%s\"} %llu\n",
			      sticky_map[k].outcome, (unsigned long long)v);
	}
	uint64_t stale = 0, reselected = 0, ids[RT_INPUT_IDS_COUNT_] = {0};
	for (unsigned p = 0; p < m->procs; p++) {
		stale += get(&m->rows[p].stale);
		reselected += get(&m->rows[p].reselected);
		for (unsigned o = 0; o < RT_INPUT_IDS_COUNT_; o++)
			ids[o] += get(&m->rows[p].input_ids[o]);
	}
	rt_buf_printf(&b, "# HELP switchyard_stale_requests_total Requests ended because they "
			  "outlived --request-timeout-secs (504 upstream_timeout).\n"
			  "# TYPE switchyard_stale_requests_total counter\n"
			  "switchyard_stale_requests_total{outcome=\"expired\"} %llu\n"
			  "# HELP switchyard_selection_reselected_total Picks redone in their group "
			  "because the picked worker was removed inside the fleet snapshot window.\n"
			  "# TYPE switchyard_selection_reselected_total counter\n"
			  "switchyard_selection_reselected_total %llu\n"
			  "# HELP switchyard_input_ids_forwarding_total Chat requests dispatched, by "
			  "whether the router's token ids went to the engine as input_ids.\n"
			  "# TYPE switchyard_input_ids_forwarding_total counter\n"
			  "switchyard_input_ids_forwarding_total{outcome=\"forwarded\"} %llu\n"
			  "switchyard_input_ids_forwarding_total{outcome=\"disabled\"} %llu\n"
			  "switchyard_input_ids_forwarding_total{outcome=\"ineligible\"} %llu\n",
		      (unsigned long long)stale, (unsigned long long)reselected,
		      (unsigned long long)ids[RT_INPUT_IDS_FORWARDED],
		      (unsigned long long)ids[RT_INPUT_IDS_DISABLED],
		      (unsigned long long)ids[RT_INPUT_IDS_INELIGIBLE]);
	render_queue(&b, m, region);
	rt_buf_puts(&b, "# HELP switchyard_stream_outcome_total Streamed responses, by outcome.\n"
			"# TYPE switchyard_stream_outcome_total counter\n");
	for (unsigned o = 0; o < RT_STREAM_COUNT_; o++) {
		uint64_t v = 0;
		for (unsigned p = 0; p < m->procs; p++)
			v += get(&m->rows[p].stream[o]);
		rt_buf_printf(&b, "switchyard_stream_outcome_total{outcome=\"%s\"} %llu\n",
			      stream_names[o], (unsigned long long)v);
	}
	uint64_t retries = 0;
	for (unsigned p = 0; p < m->procs; p++)
		retries += get(&m->rows[p].retries);
	rt_buf_printf(&b, "# HELP switchyard_retries_total Re-dispatches to another worker "
			  "before the first byte.\n# TYPE switchyard_retries_total counter\n"
			  "switchyard_retries_total %llu\n",
		      (unsigned long long)retries);
	uint64_t replaced = 0, cancels = 0;
	for (unsigned p = 0; p < m->procs; p++) {
		replaced += get(&m->rows[p].pool_replaced);
		cancels += get(&m->rows[p].client_cancels);
	}
	rt_buf_printf(&b, "# HELP switchyard_upstream_pool_replaced_total Kept-alive upstream "
			  "sockets found dead when reused and replaced by a fresh connection.\n"
			  "# TYPE switchyard_upstream_pool_replaced_total counter\n"
			  "switchyard_upstream_pool_replaced_total %llu\n"
			  "# HELP switchyard_client_cancels_total Inference requests whose client went "
			  "away before the answer ended (the upstream request is aborted).\n"
			  "# TYPE switchyard_client_cancels_total counter\n"
			  "switchyard_client_cancels_total %llu\n",
		      (unsigned long long)replaced, (unsigned long long)cancels);

	uint64_t pending = 0, refused = 0;
	for (unsigned p = 0; p < m->procs; p++) {
		pending += get(&m->rows[p].pending_body_bytes);
		refused += get(&m->rows[p].h2_refused);
	}
	rt_buf_printf(&b, "# HELP switchyard_pending_body_bytes Request-body bytes held by the "
			  "router's connections (--max-pending-body-bytes per process).\n"
			  "# TYPE switchyard_pending_body_bytes gauge\n"
			  "switchyard_pending_body_bytes %llu\n"
			  "# HELP switchyard_http2_connections_refused_total HTTP/2 connections closed "
			  "with GOAWAY for stream resets or request bodies past the budgets.\n"
			  "# TYPE switchyard_http2_connections_refused_total counter\n"
			  "switchyard_http2_connections_refused_total %llu\n",
		      (unsigned long long)pending, (unsigned long long)refused);

	rt_buf_puts(&b, "# HELP switchyard_request_duration_seconds Inference request duration, "
			"receipt to last byte.\n# TYPE switchyard_request_duration_seconds histogram\n");
	rt_metrics_hist_text(&b, m, "switchyard_request_duration_seconds", "",
		    offsetof(struct rt_metrics_row, duration), edges_request);
	rt_buf_puts(&b, "# HELP switchyard_ttft_seconds Receipt to the first response body byte "
			"from the engine.\n# TYPE switchyard_ttft_seconds histogram\n");
	rt_metrics_hist_text(&b, m, "switchyard_ttft_seconds", "", offsetof(struct rt_metrics_row, ttft),
		    edges_request);
	rt_buf_puts(&b, "# HELP switchyard_router_phase_seconds Router overhead per request, by "
			"phase.\n# TYPE switchyard_router_phase_seconds histogram\n");
	for (unsigned ph = 0; ph < RT_PHASE_COUNT_; ph++) {
		char lab[48];
		snprintf(lab, sizeof(lab), "phase=\"%s\"", phase_names[ph]);
		rt_metrics_hist_text(&b, m, "switchyard_router_phase_seconds", lab,
			    offsetof(struct rt_metrics_row, phase) + ph * sizeof(struct rt_hist),
			    edges_phase);
	}
	render_cache(&b, m);
	if (region != NULL)
		render_region_counters(&b, region);
	if (names != SY_METRICS_SWITCHYARD && !b.oom) {
		struct rt_buf sg = {0};
		rt_metrics_sglang_text(&sg, m, region, cb_state, b.p, b.n);
		if (names == SY_METRICS_SGLANG) {
			rt_buf_free(&b);
			b = sg;
		} else {
			if (sg.p != NULL)
				rt_buf_put(&b, sg.p, sg.n);
			b.oom |= sg.oom;
			rt_buf_free(&sg);
		}
	}
	if (b.oom || b.p == NULL) {
		rt_buf_free(&b);
		return SY_ENOMEM;
	}
	*out = b.p;
	*len = b.n;
	return SY_OK;
}
