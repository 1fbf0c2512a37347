/* state_plane.c — micro-benchmark of the state plane's hot paths, single
 * core (run pinned: taskset -c 1 build/bench/bench_state_plane).
 *
 * Prints ns/op for: a seqlock read of one 64-byte load record, a reader
 * epoch publish (statebus_read_enter + statebus_read_leave), a writer load
 * update (statebus_load_write: seqlock write + dispatch-counter sum), the
 * aggregated view of a dp_size=1 worker, and an in-flight acquire+release.
 * Targets (issue 2): read ≤ 50 ns, epoch publish ≤ 20 ns. Not a test.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/clock.h"
#include "statebus.h"

#define N 20000000u

static volatile uint64_t sink;

static double per_op(uint64_t t0, uint64_t t1, uint64_t n) { return (double)(t1 - t0) / (double)n; }

int main(void)
{
	char path[64], err[256];
	snprintf(path, sizeof(path), "/dev/shm/sy-bench-%d", (int)getpid());
	unlink(path);
	struct statebus_region *r = NULL;
	if (statebus_region_open(path, NULL, STATEBUS_CREATE, &r, err, sizeof(err)) != SY_OK) {
		fprintf(stderr, "open: %s\n", err);
		return 1;
	}
	uint32_t proc, slot, gen;
	if (statebus_writer_lock(r, true) != SY_OK ||
	    statebus_proc_claim(r, STATEBUS_PROC_TOOL, &proc) != SY_OK)
		return 1;
	struct statebus_worker w = {.dp_size = 1};
	snprintf(w.id, sizeof(w.id), "http://bench:1");
	if (statebus_worker_add(r, &w, &slot, &gen) != SY_OK)
		return 1;
	struct statebus_load_report rep = {.num_running_reqs = 3, .num_waiting_reqs = 4,
		.num_tokens = 1000, .max_total_num_tokens = 100000, .recv_mono_ns = sy_mono_ns()};

	/* writer load update */
	uint64_t t0 = sy_mono_ns();
	for (uint32_t i = 0; i < N / 4; i++) {
		rep.num_running_reqs = i;
		statebus_load_write(r, slot, gen, 0, &rep);
	}
	uint64_t t1 = sy_mono_ns();
	double write_ns = per_op(t0, t1, N / 4);

	/* seqlock read */
	struct statebus_load_report out;
	t0 = sy_mono_ns();
	for (uint32_t i = 0; i < N; i++) {
		statebus_load_read_rank(r, slot, 0, &out);
		sink += out.num_running_reqs;
	}
	t1 = sy_mono_ns();
	double read_ns = per_op(t0, t1, N);

	/* epoch publish */
	t0 = sy_mono_ns();
	for (uint32_t i = 0; i < N; i++) {
		statebus_read_enter(r);
		statebus_read_leave(r);
	}
	t1 = sy_mono_ns();
	double epoch_ns = per_op(t0, t1, N);

	/* aggregated view, dp_size 1 (worker snapshot + one record) */
	struct statebus_load_view v;
	uint64_t now = sy_mono_ns();
	t0 = sy_mono_ns();
	for (uint32_t i = 0; i < N / 10; i++) {
		statebus_load_view(r, slot, now, &v);
		sink += v.num_running_reqs;
	}
	t1 = sy_mono_ns();
	double view_ns = per_op(t0, t1, N / 10);

	/* in-flight guard */
	t0 = sy_mono_ns();
	for (uint32_t i = 0; i < N / 4; i++) {
		statebus_inflight_acquire(r, proc, slot, i);
		statebus_inflight_release(r, proc, slot);
	}
	t1 = sy_mono_ns();
	double inflight_ns = per_op(t0, t1, N / 4);

	printf("| op | ns/op | target |\n|---|---|---|\n");
	printf("| load-record read (seqlock, 64 B) | %.1f | <= 50 |\n", read_ns);
	printf("| reader epoch publish (enter+leave) | %.1f | <= 20 |\n", epoch_ns);
	printf("| writer load update | %.1f | - |\n", write_ns);
	printf("| load view (dp_size 1, incl. worker snapshot) | %.1f | - |\n", view_ns);
	printf("| in-flight acquire+release | %.1f | - |\n", inflight_ns);
	statebus_region_close(r);
	statebus_region_destroy(path);
	return 0;
}
