/* clock.h — monotonic and wall clocks.
 *
 * Monotonic time (CLOCK_MONOTONIC) orders events inside one host and is what
 * every shared-memory timestamp uses (receive times, dispatch stamps): it is
 * the same clock in every process of the host. Wall time (CLOCK_REALTIME) is
 * only for logs and wire timestamps. All functions are async-signal-safe and
 * allocation-free.
 */
#ifndef SY_COMMON_CLOCK_H
#define SY_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Monotonic time in nanoseconds since an arbitrary, boot-fixed origin. */
static inline uint64_t sy_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Monotonic time in microseconds. */
static inline uint64_t sy_mono_us(void) { return sy_mono_ns() / 1000u; }

/* Monotonic time in milliseconds. */
static inline uint64_t sy_mono_ms(void) { return sy_mono_ns() / 1000000u; }

/* Wall-clock time in nanoseconds since the Unix epoch. */
static inline uint64_t sy_wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Wall-clock time in milliseconds since the Unix epoch. */
static inline uint64_t sy_wall_ms(void) { return sy_wall_ns() / 1000000u; }

/* Wall-clock seconds since the Unix epoch as a double (wire timestamps). */
static inline double sy_wall_seconds(void) { return (double)sy_wall_ns() / 1e9; }

#endif
