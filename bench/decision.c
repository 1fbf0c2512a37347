/* decision.c — bench_decision: latency of one complete engine selection,
 * single core (run pinned: taskset -c 1 build/bench/bench_decision).
 *
 * A complete pick = router_select() on a generation with the catch-all
 * bucket from the flags (--policy power_of_two, admission caps on running,
 * KV and in-flight so the admission check runs): model lookup, bucket
 * resolution, the group filter over the fleet snapshot (model, role,
 * health, membership), power-of-two sampling with two load views and two
 * in-flight sums, the stage comparison, admission on the winner, and the
 * (slot, generation) validation of the pick. The fleet snapshot refreshes
 * every 20 ms of real time as in the router (its rescans are included).
 * The region has the default capacities (256 worker slots, 64 process
 * rows); workers carry fresh native load reports and in-flight counts.
 *
 * Prints p50 / p99 / p99.9 / max ns for 8 and 64 engines (timer overhead
 * subtracted, reported too), with power_of_two and with round_robin (whose
 * cursor is the group's shared counter in the region: one atomic add per
 * pick). Target: p99 ≤ 2 µs. Not a test.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/config.h"
#include "router/core/generation.h"
#include "router/core/select.h"
#include "statebus.h"

#define PICKS 300000u

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static uint64_t pct(const uint64_t *v, size_t n, double p)
{
	size_t i = (size_t)(p * (double)(n - 1));
	return v[i];
}

static int run(const char *policy, unsigned engines, uint64_t *lat, uint64_t timer_ns)
{
	char path[64], err[256];
	snprintf(path, sizeof(path), "/dev/shm/sy-bench-decision-%d-%u", (int)getpid(), engines);
	unlink(path);
	struct statebus_region *r = NULL;
	if (statebus_region_open(path, NULL, STATEBUS_CREATE, &r, err, sizeof(err)) != SY_OK) {
		fprintf(stderr, "open: %s\n", err);
		return 1;
	}
	uint32_t proc;
	if (statebus_writer_lock(r, true) != SY_OK ||
	    statebus_proc_claim(r, STATEBUS_PROC_ROUTER, &proc) != SY_OK)
		return 1;
	uint64_t t_reports = sy_mono_ns();
	for (unsigned i = 0; i < engines; i++) {
		struct statebus_worker w = {.dp_size = 1, .healthy = 1};
		snprintf(w.id, sizeof(w.id), "http://10.0.%u.%u:30000", i / 200, i % 200);
		snprintf(w.model, sizeof(w.model), "default-model");
		uint32_t slot, gen;
		if (statebus_worker_add(r, &w, &slot, &gen) != SY_OK)
			return 1;
		struct statebus_load_report rep = {
			.flags = STATEBUS_LOAD_HAS_REPORT | STATEBUS_LOAD_HAS_V3,
			.num_running_reqs = 10 + i % 7, .num_waiting_reqs = i % 3,
			.num_tokens = 1000 * (i % 5), .max_total_num_tokens = 100000,
			.num_waiting_uncached_tokens = 100 * (i % 4),
			.num_total_tokens = 1000 * (i % 5), .max_running_requests = 256,
			.recv_mono_ns = t_reports};
		if (statebus_load_write(r, slot, gen, 0, &rep) != SY_OK)
			return 1;
		for (unsigned k = 0; k < i % 4; k++)
			statebus_inflight_acquire(r, proc, slot, t_reports);
	}

	struct sy_config cfg;
	struct sy_config_error cerr;
	struct router_gen *g = NULL;
	if (sy_config_init_defaults(&cfg) != SY_OK ||
	    sy_config_apply_flag(&cfg, "router", "--policy", policy, &cerr) != SY_OK ||
	    sy_config_apply_flag(&cfg, "router", "--max-running-requests", "1000", &cerr) != SY_OK ||
	    sy_config_apply_flag(&cfg, "router", "--max-kv-tokens", "1000000", &cerr) != SY_OK ||
	    sy_config_apply_flag(&cfg, "router", "--max-inflight-requests", "1000", &cerr) != SY_OK ||
	    sy_config_finish(&cfg, &cerr) != SY_OK || router_gen_build(&cfg, 1, &g, &cerr) != SY_OK) {
		fprintf(stderr, "config: %s\n", cerr.msg);
		return 1;
	}

	struct pick_request req = {.route = ROUTE_CHAT_COMPLETIONS, .input_tokens = 2048,
				   .has_max_tokens = true, .max_tokens = 256, .has_peak = true,
				   .expected_peak = 2304, .n = 1};
	req.model.ptr = "default-model";
	req.model.len = strlen(req.model.ptr);
	struct selection sel;
	struct router_error e;

	for (unsigned i = 0; i < 10000; i++) /* warm-up */
		if (router_select(g, r, &req, sy_mono_ns(), &sel, &e) != SY_OK) {
			fprintf(stderr, "select: %s\n", e.message);
			return 1;
		}
	for (unsigned i = 0; i < PICKS; i++) {
		uint64_t t0 = sy_mono_ns();
		int rc = router_select(g, r, &req, t0, &sel, &e);
		uint64_t t1 = sy_mono_ns();
		if (rc != SY_OK)
			return 1;
		uint64_t d = t1 - t0;
		lat[i] = d > timer_ns ? d - timer_ns : 0;
	}
	router_gen_unref(g);
	sy_config_free(&cfg);
	statebus_region_close(r);
	statebus_region_destroy(path);
	return 0;
}

int main(void)
{
	uint64_t *lat = malloc(PICKS * sizeof(uint64_t));
	if (lat == NULL)
		return 1;
	/* timer overhead: median of back-to-back reads */
	for (unsigned i = 0; i < 100000; i++) {
		uint64_t a = sy_mono_ns();
		lat[i] = sy_mono_ns() - a;
	}
	qsort(lat, 100000, sizeof(uint64_t), cmp_u64);
	uint64_t timer = lat[50000];

	printf("| policy | engines | picks | p50 ns | p99 ns | p99.9 ns | max ns | target p99 |\n");
	printf("|---|---|---|---|---|---|---|---|\n");
	unsigned sizes[] = {8, 64};
	const char *policies[] = {"power_of_two", "round_robin"};
	for (int k = 0; k < 4; k++) {
		if (run(policies[k / 2], sizes[k % 2], lat, timer) != 0)
			return 1;
		qsort(lat, PICKS, sizeof(uint64_t), cmp_u64);
		printf("| %s | %u | %u | %llu | %llu | %llu | %llu | <= 2000 |\n", policies[k / 2],
		       sizes[k % 2], PICKS,
		       (unsigned long long)pct(lat, PICKS, 0.50),
		       (unsigned long long)pct(lat, PICKS, 0.99),
		       (unsigned long long)pct(lat, PICKS, 0.999),
		       (unsigned long long)lat[PICKS - 1]);
	}
	printf("\ntimer overhead subtracted: %llu ns per measurement\n", (unsigned long long)timer);
	free(lat);
	return 0;
}
