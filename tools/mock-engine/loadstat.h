/* loadstat.h — SGLang LoadStat report of one DP rank (sglang-wire.md §12).
 *
 * Encoded as the tagged positional array with the V3 extension:
 *   ["LoadStat", running, waiting, num_tokens, max_total_num_tokens, rank,
 *    waiting_uncached_tokens, total_tokens, max_running_requests,
 *    total_prefill_uncached_tokens, total_prefill_busy_us]
 * and sent as frames ["load", seq8 BE, payload] by the load publisher.
 */
#ifndef SY_MOCK_LOADSTAT_H
#define SY_MOCK_LOADSTAT_H

#include <msgpack.h>
#include <stdbool.h>
#include <stdint.h>

struct loadstat {
	int64_t running;                /* requests being prefilled or decoded */
	int64_t waiting;                /* requests queued (incl. PD transfer wait) */
	int64_t num_tokens;             /* KV tokens in use (cache + running decode) */
	int64_t max_total_num_tokens;   /* KV capacity in tokens (--cache-tokens) */
	int rank;                       /* attn DP rank; < 0 encodes nil */
	int64_t waiting_uncached;       /* V3: uncached prompt tokens of waiting reqs */
	int64_t total_tokens;           /* V3: tokens of running + waiting requests */
	int64_t max_running;            /* V3: --max-running */
	int64_t total_prefill_uncached; /* V3: cumulative uncached tokens prefilled */
	int64_t total_prefill_busy_us;  /* V3: cumulative prefill busy time, µs */
};

/* Appends the msgpack payload of `ls` to `out`. Returns 0 or SY_ENOMEM. */
int loadstat_encode(const struct loadstat *ls, msgpack_sbuffer *out);

/* True when every field is equal (decides "changed, send now"). */
bool loadstat_equal(const struct loadstat *a, const struct loadstat *b);

#endif
