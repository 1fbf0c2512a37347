/* state_plane.c — micro-benchmark of the state plane's hot paths, single
 * core (run pinned: taskset -c 1 build/bench/bench_state_plane).
 *
 * Prints ns/op for: a seqlock read of one 64-byte load record, a reader
 * epoch publish (statebus_read_enter + statebus_read_leave), a writer load
 * update (statebus_load_write: seqlock write + dispatch-counter sum), the
 * aggregated view of a dp_size=1 worker, and an in-flight acquire+release.
 * Targets: read ≤ 50 ns, epoch publish ≤ 20 ns.
 *
 * Predictions (predict.c): the router-side cost of statebus_predict_push
 * of a 128-block chain (a 2,048-token prompt in 16-token blocks); the
 * statebus-side drain + apply per prediction; and push → visible in the
 * index (statebus_index_match reports the chain) with the drain done by a
 * forked process the way the statebus loop does it — busy-polling, and
 * waking every PRED_DRAIN_MS (statebus.prediction_drain_ms default, the
 * loop's poll timeout when idle) — as p50/p99/max over PRED_LAT_N pushes
 * (the drainer runs on CPU 0, so run the bench pinned to CPU 1).
 * Not a test.
 */
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "statebus.h"

#define N 20000000u

static volatile uint64_t sink;

static double per_op(uint64_t t0, uint64_t t1, uint64_t n) { return (double)(t1 - t0) / (double)n; }

#define PRED_BLOCKS 128
#define PRED_PUSHES 2000000u
#define PRED_APPLY_N 400
#define PRED_LAT_N 500
#define PRED_DRAIN_MS 2

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static volatile sig_atomic_t drainer_stop;
static void on_term(int sig) { (void)sig; drainer_stop = 1; }

/* Forked drainer: on CPU 0 (the caller runs pinned to another), takes the
 * writer lock and drains like the statebus loop (sleep_ms 0 = busy poll),
 * expiring predictions after 5 s, until SIGTERM. */
static pid_t start_drainer(const char *path, int sleep_ms)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	signal(SIGTERM, on_term);
	cpu_set_t cpus;
	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	(void)sched_setaffinity(0, sizeof(cpus), &cpus);
	struct statebus_region *r = NULL;
	char err[256];
	if (statebus_region_open(path, NULL, STATEBUS_ATTACH_ONLY, &r, err, sizeof(err)) != SY_OK ||
	    statebus_writer_lock(r, true) != SY_OK)
		_exit(1);
	struct timespec ts = {0, (long)sleep_ms * 1000000L};
	while (!drainer_stop) {
		uint64_t now = sy_mono_ns();
		(void)statebus_predict_drain(r, now, 4096);
		(void)statebus_predict_sweep(r, now, UINT64_C(5000000000));
		if (sleep_ms)
			nanosleep(&ts, NULL);
	}
	statebus_region_close(r);
	_exit(0);
}

/* push → visible latencies (ns) of PRED_LAT_N fresh chains, sorted into lat. */
static void pred_latency(struct statebus_region *r, uint32_t proc, uint32_t slot, uint32_t gen,
			 uint64_t *lat, int64_t base)
{
	int64_t h[PRED_BLOCKS];
	struct statebus_index_match m[4];
	for (int i = 0; i < PRED_LAT_N; i++) {
		for (int j = 0; j < PRED_BLOCKS; j++)
			h[j] = base + (int64_t)i * 1000 + j;
		struct statebus_prediction p = {.worker = slot, .worker_gen = gen, .now_ns = sy_mono_ns()};
		uint64_t t0 = sy_mono_ns();
		while (statebus_predict_push(r, proc, &p, h, PRED_BLOCKS) != SY_OK)
			;
		while (statebus_index_match(r, h, PRED_BLOCKS, m, 4) < 1 || m[0].depth != PRED_BLOCKS)
			if (sy_mono_ns() - t0 > UINT64_C(5000000000)) {
				fprintf(stderr, "prediction %d not visible after 5 s\n", i);
				exit(1);
			}
		lat[i] = sy_mono_ns() - t0;
	}
	qsort(lat, PRED_LAT_N, sizeof(*lat), cmp_u64);
}

int main(void)
{
	char path[64], err[256];
	snprintf(path, sizeof(path), "/dev/shm/sy-bench-%d", (int)getpid());
	unlink(path);
	struct statebus_region *r = NULL;
	/* index large enough for every chain of the prediction runs (no eviction) */
	struct statebus_params params = {.index_nodes = 1u << 19};
	if (statebus_region_open(path, &params, STATEBUS_CREATE, &r, err, sizeof(err)) != SY_OK) {
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

	/* prediction push (router side): only the pushes are timed; the ring
	 * is emptied between rounds by a drain that drops the records (stale
	 * generation), so the apply cost stays out of this figure */
	int64_t ph[PRED_BLOCKS];
	for (int j = 0; j < PRED_BLOCKS; j++)
		ph[j] = 7000000 + j;
	struct statebus_prediction pp = {.worker = slot, .worker_gen = gen + 1};
	uint64_t push_ns = 0, pushes = 0;
	while (pushes < PRED_PUSHES) {
		t0 = sy_mono_ns();
		uint32_t k = 0;
		pp.now_ns = t0;
		while (statebus_predict_push(r, proc, &pp, ph, PRED_BLOCKS) == SY_OK)
			k++;
		t1 = sy_mono_ns();
		push_ns += t1 - t0;
		pushes += k;
		(void)statebus_predict_drain(r, sy_mono_ns(), 1u << 20);
	}
	double pred_push_ns = per_op(0, push_ns, pushes);

	/* drain + apply (statebus side): PRED_APPLY_N distinct new chains; the
	 * first pass only faults the tables' pages in (a running statebus has
	 * them resident), the second is timed */
	uint64_t drain_ns = 0;
	pp.worker_gen = gen;
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < PRED_APPLY_N; i++) {
			for (int j = 0; j < PRED_BLOCKS; j++)
				ph[j] = 8000000 + (int64_t)(pass * PRED_APPLY_N + i) * 1000 + j;
			(void)statebus_predict_push(r, proc, &pp, ph, PRED_BLOCKS);
			t0 = sy_mono_ns();
			(void)statebus_predict_drain(r, t0, 16);
			if (pass == 1)
				drain_ns += sy_mono_ns() - t0;
		}
		(void)statebus_predict_sweep(r, sy_mono_ns() + 1, 1);
	}
	double pred_apply_ns = per_op(0, drain_ns, PRED_APPLY_N);

	/* push → visible, forked drainer */
	statebus_writer_unlock(r);
	uint64_t lat_busy[PRED_LAT_N], lat_tick[PRED_LAT_N];
	pid_t dp = start_drainer(path, 0);
	pred_latency(r, proc, slot, gen, lat_busy, 100000000);
	kill(dp, SIGTERM);
	waitpid(dp, NULL, 0);
	dp = start_drainer(path, PRED_DRAIN_MS);
	pred_latency(r, proc, slot, gen, lat_tick, 200000000);
	kill(dp, SIGTERM);
	waitpid(dp, NULL, 0);

	printf("| op | ns/op | target |\n|---|---|---|\n");
	printf("| load-record read (seqlock, 64 B) | %.1f | <= 50 |\n", read_ns);
	printf("| reader epoch publish (enter+leave) | %.1f | <= 20 |\n", epoch_ns);
	printf("| writer load update | %.1f | - |\n", write_ns);
	printf("| load view (dp_size 1, incl. worker snapshot) | %.1f | - |\n", view_ns);
	printf("| in-flight acquire+release | %.1f | - |\n", inflight_ns);
	printf("| prediction push, %d-block chain (router side) | %.1f | - |\n", PRED_BLOCKS,
	       pred_push_ns);
	printf("| prediction drain + apply, %d new blocks (statebus side) | %.1f | - |\n",
	       PRED_BLOCKS, pred_apply_ns);
	printf("\n| push -> visible in the index (%d-block chain, %d pushes) | p50 us | p99 us | max us |\n"
	       "|---|---|---|---|\n", PRED_BLOCKS, PRED_LAT_N);
	printf("| drainer busy-polling | %.1f | %.1f | %.1f |\n", lat_busy[PRED_LAT_N / 2] / 1e3,
	       lat_busy[PRED_LAT_N * 99 / 100] / 1e3, lat_busy[PRED_LAT_N - 1] / 1e3);
	printf("| drainer every %d ms (statebus idle loop) | %.1f | %.1f | %.1f |\n", PRED_DRAIN_MS,
	       lat_tick[PRED_LAT_N / 2] / 1e3, lat_tick[PRED_LAT_N * 99 / 100] / 1e3,
	       lat_tick[PRED_LAT_N - 1] / 1e3);
	statebus_region_close(r);
	statebus_region_destroy(path);
	return 0;
}
