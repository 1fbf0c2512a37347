/* breaker.h — opt-in circuit breaker per worker (reference/policy-defaults.md §9).
 *
 * Closed → Open after `threshold` consecutive failures (connect errors,
 * timeouts, 5xx other than 503). After `cool_down` one half-open probe is
 * let through; its success closes the breaker, its failure re-opens it.
 * Failures while Open are ignored. 429 and 503 (backpressure) never open it
 * and do not reset the streak, but they close a half-open breaker.
 * threshold 0 = off: every worker is always admitted.
 *
 * State is per router process (each process learns from its own traffic);
 * keyed by worker slot + generation, so a reused slot starts closed.
 */
#ifndef SY_ROUTER_BREAKER_H
#define SY_ROUTER_BREAKER_H

#include <stdbool.h>
#include <stdint.h>

struct rt_breakers;

enum rt_cb_state {
	RT_CB_CLOSED = 0,
	RT_CB_OPEN = 1,
	RT_CB_HALF_OPEN = 2,
};

/* Result classes fed back after each upstream attempt. */
enum rt_cb_result {
	RT_CB_SUCCESS = 0,      /* response headers with status < 500 (not 429) */
	RT_CB_FAILURE = 1,      /* connect error, timeout, 5xx except 503 */
	RT_CB_BACKPRESSURE = 2, /* 429 or 503 */
};

struct rt_breakers *rt_breakers_create(uint32_t slots);

/* May a request go to worker (slot, gen) at now_ns? Takes the half-open
 * probe when it is due (then *probe = true). */
bool rt_breaker_allow(struct rt_breakers *b, uint32_t slot, uint32_t gen, int threshold,
		      uint64_t cool_down_ns, uint64_t now_ns, bool *probe);

/* Feeds one outcome back. */
void rt_breaker_report(struct rt_breakers *b, uint32_t slot, uint32_t gen, int threshold,
		       enum rt_cb_result r, uint64_t now_ns);

/* Current state of slot `slot` (metrics gauge). */
enum rt_cb_state rt_breaker_state(struct rt_breakers *b, uint32_t slot);

#endif
