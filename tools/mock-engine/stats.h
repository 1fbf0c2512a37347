/* stats.h — measurement counters of the mock engine (GET /mock/stats).
 *
 * Counts since start or the last POST /mock/reset: requests, prompt and
 * cached tokens (hit ratio = cached / prompt), a TTFT histogram in ms,
 * queue time, queue peaks, faults, and the last MOCK_STATS_RECENT requests
 * with their own cached tokens, queue time and TTFT (µs).
 */
#ifndef SY_MOCK_STATS_H
#define SY_MOCK_STATS_H

#include <stdint.h>

#include "tools/mock-engine/sbuf.h"

#define MOCK_TTFT_BUCKETS 13 /* upper bounds in ms, see stats.c; last = +Inf */
#define MOCK_STATS_RECENT 64

struct mock_req_stat {
	uint64_t id;
	int rank;
	uint64_t prompt_tokens, cached_tokens, completion_tokens;
	uint64_t queue_us, ttft_us, e2e_us;
};

struct mock_stats {
	uint64_t requests;          /* accepted (parsed) requests */
	uint64_t completed;
	uint64_t bad_requests;      /* 4xx */
	uint64_t injected_failures; /* fail-rate 500s */
	uint64_t dropped_streams;   /* drop-after-tokens */
	uint64_t client_aborts;     /* client went away before the end */
	uint64_t pd_timeouts;
	uint64_t prompt_tokens, cached_tokens, completion_tokens;
	uint64_t ttft_hist[MOCK_TTFT_BUCKETS];
	uint64_t ttft_count, ttft_sum_us, ttft_max_us;
	uint64_t queue_sum_us, queue_max_us;
	int64_t peak_waiting, peak_running; /* over all ranks, summed per rank peak */
	struct mock_req_stat recent[MOCK_STATS_RECENT];
	uint64_t recent_n;          /* total recorded; ring index = n % RECENT */
};

/* Records one finished request (prompt/cached tokens, queue and TTFT µs). */
void mock_stats_finish(struct mock_stats *s, const struct mock_req_stat *r);

/* Zeroes everything. */
void mock_stats_reset(struct mock_stats *s);

/* Appends the JSON object of GET /mock/stats to `out`. */
void mock_stats_json(const struct mock_stats *s, struct sbuf *out);

#endif
