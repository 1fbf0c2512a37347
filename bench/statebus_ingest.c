/* statebus_ingest.c — radix index apply side of the statebus ingest path,
 * single core (run pinned: taskset -c 1 build/bench/bench_statebus_ingest
 * [conversations]). Not a test.
 *
 * Workload: 8 engines, 16-token blocks, chains of
 * 64 blocks. 64 system prompts of 16 blocks are shared by every
 * conversation that uses them; each conversation adds 48 blocks of its
 * own. A conversation is stored by one engine; one in four is stored by a
 * second engine too (a re-route), and one in four continues an earlier
 * conversation of the same engine (a multi-turn prefix: 32 shared blocks).
 * Half the events carry the whole chain with a nil parent, half come as the
 * engine sends them for a new radix node: [0, 16) then [16, 64) under
 * parent hash 15. Hashes are precomputed (SGLang ids are opaque i64 to the
 * index; bench_blockhash measures the SHA-256 chain).
 *
 * Prints: BlockStored blocks applied per second (target ≥ 1,000,000),
 * per-event store latency p50/p99 (the index part of event-to-visible:
 * a block is visible to readers when its store returns), bytes per indexed
 * block (index tables / capacity, and / live nodes; target ≤ 96), the
 * match latency of a 64-block chain, and BlockRemoved blocks per second.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "statebus.h"

#define ENGINES 8
#define CHAIN 64
#define SYS 16
#define SYSTEMS 64

static uint64_t mix(uint64_t x)
{
	x += UINT64_C(0x9e3779b97f4a7c15);
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

struct event {
	uint32_t worker;
	uint32_t n;
	bool has_parent;
	int64_t parent;
	const int64_t *hashes;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	uint32_t convs = argc > 1 ? (uint32_t)atoi(argv[1]) : 200000;
	uint32_t capacity = 1u << 21; /* 2 M nodes: the working set does not fit: evictions run */
	char path[64], err[256];
	snprintf(path, sizeof(path), "/dev/shm/sy-bench-ingest-%d", (int)getpid());
	unlink(path);
	struct statebus_params p = {.max_workers = 16, .max_dp_ranks = 1, .index_nodes = capacity};
	struct statebus_region *r = NULL;
	if (statebus_region_open(path, &p, STATEBUS_CREATE, &r, err, sizeof(err)) != SY_OK) {
		fprintf(stderr, "open: %s\n", err);
		return 1;
	}
	uint32_t proc, slots[ENGINES], gen;
	if (statebus_writer_lock(r, true) != SY_OK ||
	    statebus_proc_claim(r, STATEBUS_PROC_TOOL, &proc) != SY_OK)
		return 1;
	for (int e = 0; e < ENGINES; e++) {
		struct statebus_worker w = {.dp_size = 1};
		snprintf(w.id, sizeof(w.id), "http://engine%d:30000", e);
		if (statebus_worker_add(r, &w, &slots[e], &gen) != SY_OK)
			return 1;
	}

	/* Workload: chains and events, built before timing. */
	int64_t *chains = malloc((size_t)convs * CHAIN * sizeof(int64_t));
	struct event *ev = malloc((size_t)convs * 4 * sizeof(*ev));
	if (chains == NULL || ev == NULL)
		return 1;
	size_t nev = 0;
	uint64_t blocks_total = 0;
	for (uint32_t k = 0; k < convs; k++) {
		int64_t *h = chains + (size_t)k * CHAIN;
		uint64_t rnd = mix(k);
		uint32_t engine = (uint32_t)(rnd % ENGINES);
		uint32_t sys = (uint32_t)((rnd >> 8) % SYSTEMS);
		for (int i = 0; i < SYS; i++)
			h[i] = (int64_t)mix((uint64_t)sys << 32 | (uint64_t)i);
		uint32_t from = SYS;
		if ((rnd >> 16) % 4 == 0 && k >= 64) { /* multi-turn: extends an earlier one */
			uint32_t prev = k - 1 - (uint32_t)((rnd >> 24) % 63);
			memcpy(h, chains + (size_t)prev * CHAIN, 32 * sizeof(int64_t));
			engine = (uint32_t)(mix(prev) % ENGINES);
			from = 32;
		}
		for (int i = (int)from; i < CHAIN; i++)
			h[i] = (int64_t)mix(UINT64_C(1) << 63 | (uint64_t)k << 8 | (uint64_t)i);
		int stores = (rnd >> 32) % 4 == 0 ? 2 : 1;
		for (int s = 0; s < stores; s++) {
			uint32_t wk = slots[(engine + (uint32_t)s * 3) % ENGINES];
			if ((rnd >> (40 + s)) & 1) {
				ev[nev++] = (struct event){wk, CHAIN, false, 0, h};
			} else {
				ev[nev++] = (struct event){wk, SYS, false, 0, h};
				ev[nev++] = (struct event){wk, CHAIN - SYS, true, h[SYS - 1], h + SYS};
			}
			blocks_total += CHAIN;
		}
	}

	/* BlockStored apply rate and per-event latency. */
	uint64_t *lat = malloc(nev * sizeof(uint64_t));
	uint64_t dropped_calls = 0;
	uint64_t t0 = sy_mono_ns();
	for (size_t i = 0; i < nev; i++) {
		uint64_t a = sy_mono_ns();
		int rc = statebus_index_store(r, ev[i].worker, 0, ev[i].has_parent, ev[i].parent,
					      ev[i].hashes, ev[i].n, STATEBUS_TIER_DEVICE, a);
		uint64_t b = sy_mono_ns();
		lat[i] = b - a;
		if (rc != SY_OK)
			dropped_calls++;
	}
	uint64_t t1 = sy_mono_ns();
	qsort(lat, nev, sizeof(uint64_t), cmp_u64);
	struct statebus_index_stats s;
	statebus_index_stats(r, &s);
	double secs = (double)(t1 - t0) / 1e9;
	printf("bench_statebus_ingest: %u conversations, %zu BlockStored events, %llu blocks, "
	       "%d engines, chains of %d blocks\n", convs, nev, (unsigned long long)blocks_total,
	       ENGINES, CHAIN);
	printf("  store: %.0f blocks/s (%.1f ns/block), events p50 %.2f us p99 %.2f us max %.1f us\n",
	       (double)blocks_total / secs, (double)(t1 - t0) / (double)blocks_total,
	       (double)lat[nev / 2] / 1e3, (double)lat[nev * 99 / 100] / 1e3,
	       (double)lat[nev - 1] / 1e3);
	printf("  index: %u / %u nodes, %llu owners, overflow %u / %u, evictions %llu, dropped %llu "
	       "(%llu calls)\n", s.nodes, s.nodes_capacity, (unsigned long long)s.owners,
	       s.overflow_used, s.overflow_capacity, (unsigned long long)s.evictions,
	       (unsigned long long)s.dropped, (unsigned long long)dropped_calls);
	printf("  memory: %.1f bytes per node of capacity, %.1f bytes per live indexed block "
	       "(%llu index bytes)\n", (double)s.bytes / s.nodes_capacity,
	       (double)s.bytes / (s.nodes ? s.nodes : 1), (unsigned long long)s.bytes);

	/* Match latency: 64-block chains of recent conversations. */
	struct statebus_index_match m[16];
	uint32_t nm = 1000000, recent = convs < 10000 ? convs : 10000;
	volatile uint64_t sink = 0, depths = 0;
	t0 = sy_mono_ns();
	for (uint32_t i = 0; i < nm; i++) {
		const int64_t *h = chains + (size_t)(convs - 1 - (uint32_t)(mix(i) % recent)) * CHAIN;
		int k = statebus_index_match(r, h, CHAIN, m, 16);
		sink += (uint64_t)k;
		depths += k > 0 ? m[0].depth : 0;
	}
	t1 = sy_mono_ns();
	printf("  match (64-block chain; %.2f owners, first depth %.1f on average): %.0f ns\n",
	       (double)sink / nm, (double)depths / nm, (double)(t1 - t0) / nm);

	/* BlockRemoved apply rate: remove the last 48 blocks of recent chains. */
	uint32_t nr = recent;
	t0 = sy_mono_ns();
	for (uint32_t i = 0; i < nr; i++) {
		const int64_t *h = chains + (size_t)(convs - 1 - i) * CHAIN;
		for (int e = 0; e < ENGINES; e++)
			statebus_index_remove(r, slots[e], 0, h + SYS, CHAIN - SYS, STATEBUS_TIER_ALL);
	}
	t1 = sy_mono_ns();
	printf("  remove: %.0f hashes/s (per engine call of 48 hashes)\n",
	       (double)nr * ENGINES * (CHAIN - SYS) / ((double)(t1 - t0) / 1e9));
	free(lat);
	free(ev);
	free(chains);
	statebus_region_close(r);
	statebus_region_destroy(path);
	return 0;
}
