/* stats.c — counters and JSON rendering of GET /mock/stats. */
#include "tools/mock-engine/stats.h"

#include <inttypes.h>
#include <string.h>

static const uint64_t ttft_bounds_ms[MOCK_TTFT_BUCKETS - 1] = {
	1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000,
};

void mock_stats_finish(struct mock_stats *s, const struct mock_req_stat *r)
{
	s->completed++;
	s->prompt_tokens += r->prompt_tokens;
	s->cached_tokens += r->cached_tokens;
	s->completion_tokens += r->completion_tokens;
	size_t b = 0;
	while (b < MOCK_TTFT_BUCKETS - 1 && r->ttft_us > ttft_bounds_ms[b] * 1000)
		b++;
	s->ttft_hist[b]++;
	s->ttft_count++;
	s->ttft_sum_us += r->ttft_us;
	if (r->ttft_us > s->ttft_max_us)
		s->ttft_max_us = r->ttft_us;
	s->queue_sum_us += r->queue_us;
	if (r->queue_us > s->queue_max_us)
		s->queue_max_us = r->queue_us;
	s->recent[s->recent_n % MOCK_STATS_RECENT] = *r;
	s->recent_n++;
}

void mock_stats_reset(struct mock_stats *s) { memset(s, 0, sizeof(*s)); }

void mock_stats_json(const struct mock_stats *s, struct sbuf *o)
{
	double hit = s->prompt_tokens ? (double)s->cached_tokens / (double)s->prompt_tokens : 0.0;
	sbuf_printf(o,
		    "{\"requests\":%" PRIu64 ",\"completed\":%" PRIu64
		    ",\"bad_requests\":%" PRIu64 ",\"injected_failures\":%" PRIu64
		    ",\"dropped_streams\":%" PRIu64 ",\"client_aborts\":%" PRIu64
		    ",\"pd_timeouts\":%" PRIu64 ",\"prompt_tokens\":%" PRIu64
		    ",\"cached_tokens\":%" PRIu64 ",\"completion_tokens\":%" PRIu64
		    ",\"hit_ratio\":%.6f",
		    s->requests, s->completed, s->bad_requests, s->injected_failures,
		    s->dropped_streams, s->client_aborts, s->pd_timeouts, s->prompt_tokens,
		    s->cached_tokens, s->completion_tokens, hit);
	sbuf_puts(o, ",\"ttft_ms_histogram\":{\"buckets\":[");
	for (size_t i = 0; i < MOCK_TTFT_BUCKETS; i++) {
		if (i)
			sbuf_puts(o, ",");
		if (i < MOCK_TTFT_BUCKETS - 1)
			sbuf_printf(o, "{\"le\":%" PRIu64 ",\"count\":%" PRIu64 "}",
				    ttft_bounds_ms[i], s->ttft_hist[i]);
		else
			sbuf_printf(o, "{\"le\":\"+Inf\",\"count\":%" PRIu64 "}", s->ttft_hist[i]);
	}
	sbuf_printf(o,
		    "],\"count\":%" PRIu64 ",\"mean_ms\":%.3f,\"max_ms\":%.3f}"
		    ",\"queue\":{\"mean_ms\":%.3f,\"max_ms\":%.3f,\"peak_waiting\":%" PRId64
		    ",\"peak_running\":%" PRId64 "}",
		    s->ttft_count, s->ttft_count ? (double)s->ttft_sum_us / 1000.0 / (double)s->ttft_count : 0.0,
		    (double)s->ttft_max_us / 1000.0,
		    s->completed ? (double)s->queue_sum_us / 1000.0 / (double)s->completed : 0.0,
		    (double)s->queue_max_us / 1000.0, s->peak_waiting, s->peak_running);
	sbuf_puts(o, ",\"recent\":[");
	uint64_t n = s->recent_n < MOCK_STATS_RECENT ? s->recent_n : MOCK_STATS_RECENT;
	for (uint64_t i = 0; i < n; i++) {
		const struct mock_req_stat *r = &s->recent[(s->recent_n - n + i) % MOCK_STATS_RECENT];
		sbuf_printf(o,
			    "%s{\"id\":%" PRIu64 ",\"rank\":%d,\"prompt_tokens\":%" PRIu64
			    ",\"cached_tokens\":%" PRIu64 ",\"completion_tokens\":%" PRIu64
			    ",\"queue_us\":%" PRIu64 ",\"ttft_us\":%" PRIu64 ",\"e2e_us\":%" PRIu64 "}",
			    i ? "," : "", r->id, r->rank, r->prompt_tokens, r->cached_tokens,
			    r->completion_tokens, r->queue_us, r->ttft_us, r->e2e_us);
	}
	sbuf_puts(o, "]}");
}
