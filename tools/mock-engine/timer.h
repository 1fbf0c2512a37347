/* timer.h — µs-resolution one-shot timers on a binary min-heap.
 *
 * h2o 2.2's timeouts have one fixed duration per queue; the timing model
 * needs arbitrary due times (prefill end, the next decode token, PD
 * deadlines), so the main loop runs these itself: it sleeps in
 * h2o_evloop_run() until the earliest due time (ms granularity, rounded up)
 * and then calls mock_timers_run(). Entries are embedded in their owners
 * (no allocation per arm); the heap array grows on demand.
 */
#ifndef SY_MOCK_TIMER_H
#define SY_MOCK_TIMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mock_timer;
typedef void (*mock_timer_cb)(struct mock_timer *t);

struct mock_timer {
	uint64_t due_us;   /* monotonic µs (sy_mono_us) */
	mock_timer_cb cb;
	size_t idx;        /* heap slot + 1; 0 when not armed */
};

struct mock_timers {
	struct mock_timer **heap;
	size_t n, cap;
};

/* Arms (or re-arms) `t` to fire at `due_us`. Returns 0 or SY_ENOMEM. */
int mock_timer_arm(struct mock_timers *ts, struct mock_timer *t, uint64_t due_us,
		   mock_timer_cb cb);

/* Disarms `t` if armed. */
void mock_timer_cancel(struct mock_timers *ts, struct mock_timer *t);

static inline bool mock_timer_armed(const struct mock_timer *t) { return t->idx != 0; }

/* Due time of the earliest timer, or UINT64_MAX when none is armed. */
uint64_t mock_timers_next(const struct mock_timers *ts);

/* Fires, in due order, every timer due at or before `now_us` (a callback
 * may re-arm its timer or others). Returns the number fired. */
size_t mock_timers_run(struct mock_timers *ts, uint64_t now_us);

void mock_timers_free(struct mock_timers *ts);

#endif
