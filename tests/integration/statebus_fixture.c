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
 *   index (SGLang block-hash chain of tokens 1..64, block size 16 → 4 ids):
 *        30001 rank 0 all 4 blocks (device); 30002 rank 1 the first 2
 *        (host); 30003 rank 0 all 4 then block 2 removed → depths 4, 2, 1;
 *        and chain [1,2,3,4] at block size 4 (id -3488128144981237669,
 *        sglang-wire.md §11 golden) for 30001 rank 0 → 5 nodes, 10 owners.
 * Prints "ready" on stdout when done.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/blockhash.h"
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
	uint32_t tok[64];
	for (uint32_t i = 0; i < 64; i++)
		tok[i] = i + 1;
	int64_t ids[4], golden;
	struct sy_blockhash_params hp;
	if (sy_blockhash_params_init(&hp, 16, false, NULL, 0) != SY_OK ||
	    sy_blockhash_chain(tok, 64, &hp, ids, 4, NULL) != 4 ||
	    sy_blockhash_params_init(&hp, 4, false, NULL, 0) != SY_OK ||
	    sy_blockhash_chain(tok, 4, &hp, &golden, 1, NULL) != 1)
		return 1;
	if (statebus_index_store(r, s1, 0, false, 0, ids, 4, STATEBUS_TIER_DEVICE, now) ||
	    statebus_index_store(r, s2, 1, false, 0, ids, 2, STATEBUS_TIER_HOST, now) ||
	    statebus_index_store(r, s3, 0, false, 0, ids, 4, STATEBUS_TIER_DEVICE, now) ||
	    statebus_index_remove(r, s3, 0, &ids[1], 1, STATEBUS_TIER_ALL) ||
	    statebus_index_store(r, s1, 0, false, 0, &golden, 1, STATEBUS_TIER_DEVICE, now))
		return 1;
	statebus_writer_unlock(r);
	statebus_inflight_acquire(r, proc, s1, now);
	statebus_inflight_acquire(r, proc, s1, now);
	/* Affinity: a session bound to 30001 (TTL 600 s), a sticky key to 30003. */
	struct statebus_affinity_key ka, kb;
	struct statebus_affinity_binding b;
	if (statebus_affinity_key_make(STATEBUS_AFFINITY_SESSION, 0, "m", 1, "default", 7, "s-1", 3,
				       &ka) ||
	    statebus_affinity_key_make(STATEBUS_AFFINITY_STICKY, 2, "m", 1, "default", 7, "u", 1,
				       &kb) ||
	    statebus_affinity_bind(r, &ka, STATEBUS_AFFINITY_SESSION, s1, g1, 600000, now, &b) ||
	    statebus_affinity_bind(r, &kb, STATEBUS_AFFINITY_STICKY, s3, g3, 10000, now, &b))
		return 1;
	printf("ready\n");
	fflush(stdout);
	char buf[64];
	while (read(0, buf, sizeof(buf)) > 0)
		;
	statebus_region_close(r);
	return 0;
}
