/* statebus-queue.h — the router queue's words in the state plane
 * (queue.c; DESIGN.md §9 "Queueing").
 *
 * One 64-byte row per proc slot, plus one writer row (index max_procs) that
 * the statebus writer bumps. Each router process writes only its own row,
 * with atomics; readers sum the rows of the slots ever claimed (the
 * header's high-water mark) and the writer row.
 *
 *   wakes    a counter bumped whenever capacity can have freed: an
 *            in-flight guard released (statebus_inflight_release), a
 *            concurrency token returned, a load report or worker change
 *            written, a dead process reaped. A queued request is re-selected
 *            when the sum moved (router/http/queue_run.c polls it).
 *   running  requests of the process counted against the router-wide
 *            concurrency cap (router.max_concurrent_requests).
 *   queued   requests waiting in the process, per priority class (gauge).
 *   outcomes requests that left the queue, per outcome (counters).
 *
 * A row is zeroed when its proc slot is cleared (release or reap), so a
 * dead process's running requests no longer count. Nothing read here is
 * trusted beyond its range: sums are clamped at zero.
 */
#ifndef SY_STATEBUS_QUEUE_H
#define SY_STATEBUS_QUEUE_H

#include <stdint.h>

#include "statebus.h"

/* Priority classes, highest first (SMG x-smg-priority values). */
enum statebus_queue_class {
	STATEBUS_QCLASS_SYSTEM = 0,
	STATEBUS_QCLASS_INTERACTIVE = 1,
	STATEBUS_QCLASS_DEFAULT = 2,
	STATEBUS_QCLASS_BULK = 3,
	STATEBUS_QCLASS_COUNT_
};

/* How a request left the queue. */
enum statebus_queue_outcome {
	STATEBUS_QOUT_ADMITTED = 0,      /* dispatched after waiting */
	STATEBUS_QOUT_TIMED_OUT = 1,     /* deadline passed: 503 */
	STATEBUS_QOUT_CANCELLED = 2,     /* client went away while queued */
	STATEBUS_QOUT_REJECTED_FULL = 3, /* queue full on arrival: 503 */
	STATEBUS_QOUT_COUNT_
};

/* The writer row's index for statebus_queue_wake (the statebus writer). */
#define STATEBUS_QUEUE_WRITER UINT32_MAX

/* Copy of one row. */
struct statebus_queue_info {
	uint64_t wakes;
	int64_t running;
	uint32_t queued[STATEBUS_QCLASS_COUNT_];
	uint64_t outcomes[STATEBUS_QOUT_COUNT_];
};

/* Bumps the wake counter of row `proc` (a proc slot, or
 * STATEBUS_QUEUE_WRITER). Never blocks. Errors: SY_EINVAL (range). */
int statebus_queue_wake(struct statebus_region *r, uint32_t proc);

/* Sum of every row's wake counter (slots ever claimed + writer row): a
 * waiter compares it with the value it saw last (any change = re-try). */
uint64_t statebus_queue_wakes(const struct statebus_region *r);

/* Takes one concurrency token for process `proc` when the sum of running
 * over every process stays ≤ `max` (requests); returns SY_OK, or SY_EBUSY
 * (nothing held). Optimistic: the own row is raised first, the sum read,
 * and the raise undone when over; two racing processes may both back off
 * (both then wait for the next wake), never both pass over the cap.
 * Errors: SY_EINVAL (range). */
int statebus_queue_running_take(struct statebus_region *r, uint32_t proc, int64_t max);

/* Returns a token taken by statebus_queue_running_take and bumps the
 * process's wake counter. Errors: SY_EINVAL (range), SY_ERANGE (none
 * held; left at zero). */
int statebus_queue_running_put(struct statebus_region *r, uint32_t proc);

/* Sum of running over every process (≥ 0). */
int64_t statebus_queue_running_sum(const struct statebus_region *r);

/* Requests waiting over every process (Σ queued of every class). */
uint64_t statebus_queue_depth_sum(const struct statebus_region *r);

/* Sets process `proc`'s queue depth of class `cls` to `n` (requests), and
 * adds one to outcome `o` (STATEBUS_QOUT_COUNT_: none). Errors: SY_EINVAL. */
int statebus_queue_set_depth(struct statebus_region *r, uint32_t proc, unsigned cls, uint32_t n);
int statebus_queue_count(struct statebus_region *r, uint32_t proc, unsigned o);

/* Copy of row `proc` (a proc slot, or STATEBUS_QUEUE_WRITER). Errors:
 * SY_EINVAL. */
int statebus_queue_read(const struct statebus_region *r, uint32_t proc,
			struct statebus_queue_info *out);

/* Zeroes row `proc` (its slot is being cleared). Errors: SY_EINVAL. */
int statebus_queue_zero_row(struct statebus_region *r, uint32_t proc);

#endif
