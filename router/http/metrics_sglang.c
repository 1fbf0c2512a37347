/* metrics_sglang.c — the SGLang router's metric names (--metrics-names
 * sglang | both; docs/router.md "Metric names" has the mapping).
 *
 * Three sets, so that the dashboards built for each keep working:
 *   - the slim router's sgl_router_* families (sglang
 *     experimental/sgl-router server/metrics.rs): switchyard's families of
 *     the same meaning and labels, copied from this scrape's switchyard text
 *     with the prefix changed (and a `worker` label beside `worker_url` on
 *     the per-worker families, the old router's label);
 *   - the old sgl-router's sgl_router_* families that the slim router does
 *     not have (active_workers, worker_load, processed_requests_total,
 *     running_requests, cache_hits/misses_total, request_errors_total,
 *     cb_state, max_load, min_load);
 *   - SMG's smg_* families (sgl-model-gateway observability/metrics.rs)
 *     whose values switchyard has: http requests and responses, router
 *     requests, durations and TTFT, worker pool size, health, breaker state,
 *     running requests, selections, errors and retries.
 * Values are the same counters switchyard's names show; nothing is counted
 * twice.
 */
#include <stdio.h>
#include <string.h>

#include "common/errors.h"
#include "router/http/metrics-int.h"

/* switchyard families the SGLang routers name sgl_router_<same suffix>. */
static const char *const slim_families[] = {
	"requests_total", "responses_total", "worker_requests_total",
	"request_duration_seconds", "ttft_seconds", "stream_outcome_total", "active_load",
	"workers", "worker_health", "worker_cb_state", "worker_inflight_requests",
	"policy_decisions_total", "policy_selection_failures_total",
	"cache_admission_evaluated_total", "cache_admission_rejected_total",
	"cache_pressure_guard_compared_total", "cache_pressure_guard_override_total",
	"cache_aware_decisions_total", "sampling_contract_rejections_total", "retries_total",
	"stale_requests_total", "sticky_total", "cache_monitor_decisions_total",
	"input_ids_forwarding_total",
};

static bool slim_family(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(slim_families) / sizeof(slim_families[0]); i++)
		if (strlen(slim_families[i]) == len && memcmp(slim_families[i], name, len) == 0)
			return true;
	return false;
}

/* One line of a copied family: "switchyard_" → "sgl_router_", and a
 * `worker` label with worker_url's value before it. */
static void copy_line(struct rt_buf *b, const char *l, size_t n)
{
	static const char from[] = "switchyard_";
	const size_t fl = sizeof(from) - 1;
	for (size_t i = 0; i < n;) {
		if (n - i >= fl && memcmp(l + i, from, fl) == 0) {
			rt_buf_puts(b, "sgl_router_");
			i += fl;
			continue;
		}
		if (n - i > 12 && memcmp(l + i, "worker_url=\"", 12) == 0) {
			const char *v = l + i + 12, *e = memchr(v, '"', n - i - 12);
			while (e != NULL && e[-1] == '\\') /* escaped quote */
				e = memchr(e + 1, '"', (size_t)(l + n - e - 1));
			if (e != NULL) {
				rt_buf_puts(b, "worker=\"");
				rt_buf_put(b, v, (size_t)(e - v));
				rt_buf_puts(b, "\",");
			}
		}
		rt_buf_put(b, l + i, 1);
		i++;
	}
}

/* The slim router's families, copied from switchyard's text. */
static void copy_slim(struct rt_buf *b, const char *sy, size_t len)
{
	bool copy = false;
	for (const char *p = sy, *end = sy + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
		static const char help[] = "# HELP switchyard_";
		if (n > sizeof(help) - 1 && memcmp(p, help, sizeof(help) - 1) == 0) {
			const char *name = p + sizeof(help) - 1;
			size_t nlen = strcspn(name, " \n");
			copy = slim_family(name, nlen);
		}
		if (copy)
			copy_line(b, p, n);
		p += n;
	}
}

static void escaped(struct rt_buf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			rt_buf_put(b, "\\", 1);
		rt_buf_put(b, s, 1);
	}
}

static const char *worker_type(unsigned role)
{
	return role == STATEBUS_WORKER_PREFILL ? "prefill" : role == STATEBUS_WORKER_DECODE ? "decode"
											  : "regular";
}

/* SMG's endpoint label of an inference route. */
static const char *endpoint_of(enum route r)
{
	switch (r) {
	case ROUTE_CHAT_COMPLETIONS: return "chat";
	case ROUTE_COMPLETIONS: return "completions";
	case ROUTE_GENERATE: return "generate";
	case ROUTE_EMBEDDINGS: return "embeddings";
	case ROUTE_RERANK: return "rerank";
	case ROUTE_RESPONSES: return "responses";
	case ROUTE_MESSAGES: return "messages";
	default: return NULL;
	}
}

static uint64_t sum_rows(struct rt_metrics *m, size_t off)
{
	uint64_t v = 0;
	for (unsigned p = 0; p < m->procs; p++)
		v += rt_metrics_get((const uint64_t *)(const void *)((const char *)&m->rows[p] + off));
	return v;
}

#define ROW_OFF(f) offsetof(struct rt_metrics_row, f)

/* Per-route request and response counters. */
static void routes_text(struct rt_buf *b, struct rt_metrics *m)
{
	rt_buf_puts(b, "# HELP smg_http_requests_total Total HTTP requests by method and path\n"
		       "# TYPE smg_http_requests_total counter\n");
	for (unsigned r = 0; r < ROUTE_COUNT_; r++)
		rt_buf_printf(b, "smg_http_requests_total{method=\"%s\",path=\"%s\"} %llu\n",
			      rt_metrics_route_method(r), route_name(r),
			      (unsigned long long)sum_rows(m, ROW_OFF(requests) + r * sizeof(uint64_t)));
	uint64_t by_status[RT_STATUS_SLOTS] = {0};
	rt_buf_puts(b, "# HELP sgl_router_request_errors_total Failed requests by route and error "
		       "type (HTTP status)\n# TYPE sgl_router_request_errors_total counter\n");
	for (unsigned r = 0; r < ROUTE_COUNT_; r++)
		for (unsigned s = 0; s < RT_STATUS_SLOTS; s++) {
			uint64_t v = sum_rows(m, ROW_OFF(responses) +
						       ((size_t)r * RT_STATUS_SLOTS + s) * sizeof(uint64_t));
			by_status[s] += v;
			if (v == 0 || (s < RT_STATUS_SLOTS - 1 && rt_status_slots[s] < 400))
				continue;
			char code[16];
			snprintf(code, sizeof(code), "%d", s < RT_STATUS_SLOTS - 1 ? rt_status_slots[s] : 0);
			rt_buf_printf(b, "sgl_router_request_errors_total{route=\"%s\",error_type=\"%s\"} "
				      "%llu\n", route_name(r), s < RT_STATUS_SLOTS - 1 ? code : "other",
				      (unsigned long long)v);
		}
	rt_buf_puts(b, "# HELP smg_http_responses_total Total HTTP responses by status_code and "
		       "error_code\n# TYPE smg_http_responses_total counter\n");
	for (unsigned s = 0; s < RT_STATUS_SLOTS; s++) {
		if (by_status[s] == 0)
			continue;
		char code[16];
		if (s < RT_STATUS_SLOTS - 1)
			snprintf(code, sizeof(code), "%d", rt_status_slots[s]);
		else
			snprintf(code, sizeof(code), "other");
		rt_buf_printf(b, "smg_http_responses_total{status_code=\"%s\",error_code=\"\"} %llu\n",
			      code, (unsigned long long)by_status[s]);
	}
	rt_buf_puts(b, "# HELP smg_router_requests_total Total routed requests by router_type, "
		       "backend_type, connection_mode, endpoint\n"
		       "# TYPE smg_router_requests_total counter\n");
	for (unsigned r = 0; r < ROUTE_COUNT_; r++)
		if (endpoint_of(r) != NULL)
			rt_buf_printf(b,
				      "smg_router_requests_total{router_type=\"http\",connection_mode="
				      "\"http\",endpoint=\"%s\"} %llu\n",
				      endpoint_of(r),
				      (unsigned long long)sum_rows(m, ROW_OFF(requests) +
									 r * sizeof(uint64_t)));
}

/* Per-worker gauges and counters under the old router's and SMG's names. */
static void workers_text(struct rt_buf *b, struct rt_metrics *m, struct statebus_region *region,
			 int (*cb_state)(uint32_t slot))
{
	struct rt_buf load = {0}, processed = {0}, cb = {0}, health = {0}, active = {0},
		      smg_cb = {0};
	uint64_t healthy = 0, errors[3] = {0, 0, 0};
	int64_t running = 0, max_load = 0, min_load = -1;
	unsigned per_type[3] = {0, 0, 0};
	uint32_t cap = region ? statebus_workers_capacity(region) : 0;
	for (uint32_t s = 0; s < cap; s++) {
		struct statebus_worker w;
		if (statebus_worker_read(region, s, &w) != SY_OK || w.state != STATEBUS_WORKER_ACTIVE)
			continue;
		unsigned role = w.role <= STATEBUS_WORKER_DECODE ? w.role : 0;
		per_type[role]++;
		healthy += w.healthy != 0;
		int64_t infl = 0;
		statebus_inflight_sum(region, s, &infl, NULL);
		running += infl;
		max_load = infl > max_load ? infl : max_load;
		min_load = min_load < 0 || infl < min_load ? infl : min_load;
		uint64_t done = 0;
		for (unsigned o = 0; o < RT_OUT_COUNT_; o++)
			done += rt_metrics_worker_sum(m, s, o);
		errors[role] += rt_metrics_worker_sum(m, s, RT_OUT_ERROR);
		struct rt_buf lab = {0};
		rt_buf_puts(&lab, "worker=\"");
		escaped(&lab, w.id);
		rt_buf_puts(&lab, "\"");
		const char *l = lab.p ? lab.p : "";
		rt_buf_printf(&load, "sgl_router_worker_load{%s} %lld\n", l, (long long)infl);
		rt_buf_printf(&processed, "sgl_router_processed_requests_total{%s} %llu\n", l,
			      (unsigned long long)done);
		rt_buf_printf(&health, "smg_worker_health{%s} %d\n", l, w.healthy ? 1 : 0);
		rt_buf_printf(&active, "smg_worker_requests_active{%s} %lld\n", l, (long long)infl);
		if (cb_state != NULL) {
			rt_buf_printf(&cb, "sgl_router_cb_state{%s} %d\n", l, cb_state(s));
			rt_buf_printf(&smg_cb, "smg_worker_cb_state{%s} %d\n", l, cb_state(s));
		}
		rt_buf_free(&lab);
	}
	rt_buf_printf(b,
		      "# HELP sgl_router_active_workers Healthy workers\n"
		      "# TYPE sgl_router_active_workers gauge\nsgl_router_active_workers %llu\n"
		      "# HELP sgl_router_running_requests Requests in flight over every worker\n"
		      "# TYPE sgl_router_running_requests gauge\nsgl_router_running_requests %lld\n"
		      "# HELP sgl_router_max_load Largest worker load (requests in flight)\n"
		      "# TYPE sgl_router_max_load gauge\nsgl_router_max_load %lld\n"
		      "# HELP sgl_router_min_load Smallest worker load (requests in flight)\n"
		      "# TYPE sgl_router_min_load gauge\nsgl_router_min_load %lld\n",
		      (unsigned long long)healthy, (long long)running, (long long)max_load,
		      (long long)(min_load < 0 ? 0 : min_load));
	static const struct {
		const char *name, *type, *help;
	} fam[] = {
		{"sgl_router_worker_load", "gauge", "Requests in flight per worker"},
		{"sgl_router_processed_requests_total", "counter", "Requests dispatched per worker"},
		{"sgl_router_cb_state", "gauge", "Circuit breaker state (0 closed, 1 open, 2 half-open)"},
		{"smg_worker_health", "gauge", "Worker health status (1=healthy, 0=unhealthy)"},
		{"smg_worker_requests_active", "gauge", "Currently running requests per worker"},
		{"smg_worker_cb_state", "gauge",
		 "Circuit breaker state per worker (0=closed, 1=open, 2=half_open)"},
	};
	struct rt_buf *bodies[] = {&load, &processed, &cb, &health, &active, &smg_cb};
	for (size_t i = 0; i < sizeof(fam) / sizeof(fam[0]); i++) {
		if ((bodies[i] == &cb || bodies[i] == &smg_cb) && cb_state == NULL)
			continue;
		rt_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", fam[i].name, fam[i].help, fam[i].name,
			      fam[i].type);
		if (bodies[i]->p != NULL)
			rt_buf_put(b, bodies[i]->p, bodies[i]->n);
		b->oom |= bodies[i]->oom;
		rt_buf_free(bodies[i]);
	}
	rt_buf_puts(b, "# HELP smg_worker_pool_size Current worker pool size by worker_type, "
		       "connection_mode\n# TYPE smg_worker_pool_size gauge\n");
	for (unsigned t = 0; t < 3; t++)
		rt_buf_printf(b, "smg_worker_pool_size{worker_type=\"%s\",connection_mode=\"http\"} %u\n",
			      worker_type(t), per_type[t]);
	rt_buf_puts(b, "# HELP smg_worker_errors_total Worker-level errors by worker_type, "
		       "connection_mode, error_type\n# TYPE smg_worker_errors_total counter\n");
	for (unsigned t = 0; t < 3; t++)
		rt_buf_printf(b,
			      "smg_worker_errors_total{worker_type=\"%s\",connection_mode=\"http\","
			      "error_type=\"backend_error\"} %llu\n",
			      worker_type(t), (unsigned long long)errors[t]);
}

/* Selections, retries, cache hits, durations. */
static void picks_text(struct rt_buf *b, struct rt_metrics *m)
{
	rt_buf_puts(b, "# HELP smg_worker_selection_total Worker selection events by policy\n"
		       "# TYPE smg_worker_selection_total counter\n");
	/* One sample per policy: summed over stages and reasons. */
	uint64_t v[RT_METRICS_LABELS];
	for (unsigned i = 0; i < RT_METRICS_LABELS; i++)
		v[i] = sum_rows(m, ROW_OFF(decisions) + i * sizeof(uint64_t));
	for (unsigned i = 0; i < RT_METRICS_LABELS; i++) {
		if (v[i] == 0)
			continue;
		const char *pol = i < RT_METRICS_LABELS - 1 ? m->labels[i].s + 2 : "other";
		uint64_t sum = v[i];
		for (unsigned j = i + 1; j < RT_METRICS_LABELS - 1; j++)
			if (v[j] != 0 && strcmp(m->labels[j].s + 2, pol) == 0) {
				sum += v[j];
				v[j] = 0;
			}
		rt_buf_puts(b, "smg_worker_selection_total{connection_mode=\"http\",policy=\"");
		escaped(b, pol);
		rt_buf_printf(b, "\"} %llu\n", (unsigned long long)sum);
	}
	rt_buf_printf(b,
		      "# HELP smg_worker_retries_total Total retry attempts\n"
		      "# TYPE smg_worker_retries_total counter\nsmg_worker_retries_total %llu\n",
		      (unsigned long long)sum_rows(m, ROW_OFF(retries)));
	size_t dec = ROW_OFF(cache) + offsetof(struct router_cache_totals, decisions);
	uint64_t hits = sum_rows(m, dec + CACHE_AWARE_HIT * sizeof(uint64_t)), misses = 0;
	for (int d = 0; d < CACHE_AWARE_DECISIONS_; d++)
		if (d != CACHE_AWARE_HIT)
			misses += sum_rows(m, dec + (size_t)d * sizeof(uint64_t));
	rt_buf_printf(b,
		      "# HELP sgl_router_cache_hits_total cache_aware picks of a worker holding the "
		      "prefix\n# TYPE sgl_router_cache_hits_total counter\n"
		      "sgl_router_cache_hits_total %llu\n"
		      "# HELP sgl_router_cache_misses_total cache_aware picks without a cache "
		      "candidate\n# TYPE sgl_router_cache_misses_total counter\n"
		      "sgl_router_cache_misses_total %llu\n",
		      (unsigned long long)hits, (unsigned long long)misses);
	rt_buf_puts(b, "# HELP smg_router_request_duration_seconds Router request duration\n"
		       "# TYPE smg_router_request_duration_seconds histogram\n");
	rt_metrics_hist_text(b, m, "smg_router_request_duration_seconds",
			     "router_type=\"http\",connection_mode=\"http\"", ROW_OFF(duration),
			     rt_edges_request);
	rt_buf_puts(b, "# HELP smg_router_ttft_seconds Time to first token\n"
		       "# TYPE smg_router_ttft_seconds histogram\n");
	rt_metrics_hist_text(b, m, "smg_router_ttft_seconds", "router_type=\"http\"", ROW_OFF(ttft),
			     rt_edges_request);
}

void rt_metrics_sglang_text(struct rt_buf *b, struct rt_metrics *m, struct statebus_region *region,
			    int (*cb_state)(uint32_t slot), const char *sy, size_t sy_len)
{
	copy_slim(b, sy, sy_len);
	routes_text(b, m);
	workers_text(b, m, region, cb_state);
	picks_text(b, m);
}
