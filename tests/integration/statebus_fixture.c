/* statebus_fixture — test-only program: fills a region with a known scenario
 * for the syctl integration test, then holds its process slot (so its
 * in-flight row stays) until stdin closes.
 *
 *   statebus_fixture --shm PATH
 *
 * Scenario (asserted by syctl_json.sh):
 *   slot of http://127.0.0.1:30001  plain,  dp 1, healthy, block 16:
 *        fresh V3 load: running 3, waiting 2, tokens 1000, max 8000,
 *        waiting_uncached 512, total 1200, max_running 64
 *   slot of http://127.0.0.1:30002  prefill, dp 2, bootstrap 8998, unhealthy:
 *        only rank 0 reported → load unknown ("missing")
 *   slot of http://127.0.0.1:30003  decode, dp 1: report 10 s old → "stale"
 *   in-flight: 2 requests dispatched to 30001 by this process.
 * Prints "ready" on stdout when done.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "statebus.h"

static int add(struct statebus_region *r, const char *url, int role, int dp, int healthy,
	       uint32_t *slot, uint32_t *gen)
{
	struct statebus_worker w;
	memset(&w, 0, sizeof(w));
	snprintf(w.id, sizeof(w.id), "%s", url);
	snprintf(w.model, sizeof(w.model), "default-model");
	w.role = (uint8_t)role;
	w.dp_size = (uint16_t)dp;
	w.healthy = (uint8_t)healthy;
	if (role == STATEBUS_WORKER_PREFILL)
		w.bootstrap_port = 8998;
	if (role == STATEBUS_WORKER_PLAIN) {
		w.has_cache_signal = 1;
		w.kv_block_size = 16;
		w.kv_port_base = 5557;
		snprintf(w.kv_endpoint_host, sizeof(w.kv_endpoint_host), "127.0.0.1");
	}
	int rc = statebus_worker_add(r, &w, slot, gen);
	if (rc != SY_OK)
		fprintf(stderr, "fixture: add %s: %s\n", url, sy_strerror(rc));
	return rc;
}

int main(int argc, char **argv)
{
	if (argc != 3 || strcmp(argv[1], "--shm") != 0) {
		fprintf(stderr, "usage: statebus_fixture --shm PATH\n");
		return 2;
	}
	char err[512];
	struct statebus_region *r;
	if (statebus_region_open(argv[2], NULL, STATEBUS_CREATE, &r, err, sizeof(err)) != SY_OK) {
		fprintf(stderr, "fixture: %s\n", err);
		return 1;
	}
	uint32_t proc;
	if (statebus_proc_claim(r, STATEBUS_PROC_TOOL, &proc) != SY_OK ||
	    statebus_writer_lock(r, true) != SY_OK)
		return 1;
	uint32_t s1, g1, s2, g2, s3, g3;
	uint64_t now = sy_mono_ns();
	if (add(r, "http://127.0.0.1:30001", STATEBUS_WORKER_PLAIN, 1, 1, &s1, &g1) ||
	    add(r, "http://127.0.0.1:30002", STATEBUS_WORKER_PREFILL, 2, 0, &s2, &g2) ||
	    add(r, "http://127.0.0.1:30003", STATEBUS_WORKER_DECODE, 1, 1, &s3, &g3))
		return 1;
	struct statebus_load_report rep = {
		.flags = STATEBUS_LOAD_HAS_REPORT | STATEBUS_LOAD_HAS_V3,
		.num_running_reqs = 3, .num_waiting_reqs = 2, .num_tokens = 1000,
		.max_total_num_tokens = 8000, .num_waiting_uncached_tokens = 512,
		.num_total_tokens = 1200, .max_running_requests = 64, .recv_mono_ns = now,
	};
	if (statebus_load_write(r, s1, g1, 0, &rep) || statebus_load_write(r, s2, g2, 0, &rep))
		return 1;
	rep.recv_mono_ns = now - 10 * UINT64_C(1000000000);
	if (statebus_load_write(r, s3, g3, 0, &rep))
		return 1;
	statebus_writer_unlock(r);
	statebus_inflight_acquire(r, proc, s1, now);
	statebus_inflight_acquire(r, proc, s1, now);
	printf("ready\n");
	fflush(stdout);
	char buf[64];
	while (read(0, buf, sizeof(buf)) > 0)
		;
	statebus_region_close(r);
	return 0;
}
