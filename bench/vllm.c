/* bench/vllm.c — the statebus's vLLM paths on one core (not a test).
 *
 * 1. Re-hash + map per vLLM block: BlockStored events of 8 blocks of 16
 *    tokens each, parent-linked chains, through sbd_vllm_rehash() into a
 *    map of 131,072 entries — while it fills, and once every put evicts
 *    (memory-bound: the 8 MiB pool is touched at random) — ns per block.
 * 2. One /metrics scrape parsed (sbd_vllm_metrics_parse + a report per
 *    rank): the mock engine's body (~1.6 KB) and a vLLM-sized one (the same
 *    gauges after ~40 KB of histogram buckets) — µs per scrape.
 * 3. Map memory per block (sbd_vmap_bytes_per_block).
 * Usage: taskset -c 1 build/bench/bench_vllm
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "ingest.h"
#include "statebus-t.h"
#include "vllm.h"

#define BLOCK 16
#define PER_EVENT 8

static double rehash_ns_per_block(uint32_t events)
{
	struct sbd_vmap m;
	struct sbd_vllm_scratch s = {0};
	if (sbd_vmap_init(&m, 131072) != 0)
		return -1;
	uint32_t tok[BLOCK * PER_EVENT];
	int64_t ids[PER_EVENT];
	uint64_t t0 = sy_mono_ns();
	for (uint32_t e = 0; e < events; e++) {
		for (uint32_t i = 0; i < BLOCK * PER_EVENT; i++)
			tok[i] = e * 131 + i;
		for (uint32_t i = 0; i < PER_EVENT; i++)
			ids[i] = (int64_t)e * PER_EVENT + i + 1;
		bool child = e % 4 != 0; /* chains of 4 events */
		struct sbd_kv_event ev = {.type = SBD_EV_STORED, .hashes = ids, .n_hashes = PER_EVENT,
					  .tokens = tok, .n_tokens = BLOCK * PER_EVENT,
					  .block_size = BLOCK, .has_parent = child,
					  .parent = (int64_t)e * PER_EVENT, .group_idx = -1};
		struct sbd_vllm_store st;
		(void)sbd_vllm_rehash(&m, &s, 0, 0, &ev, BLOCK, STATEBUS_TIER_DEVICE, &st);
	}
	double ns = (double)(sy_mono_ns() - t0) / ((double)events * PER_EVENT);
	printf("vmap: %.1f B/block at capacity %u, %llu evictions\n", sbd_vmap_bytes_per_block(&m),
	       m.cap, (unsigned long long)m.evictions);
	sbd_vmap_free(&m);
	sbd_vllm_scratch_free(&s);
	return ns;
}

static void gauges(char *b, size_t *n, size_t cap)
{
	*n += (size_t)snprintf(b + *n, cap - *n,
		"# HELP vllm:num_requests_running Number of requests.\n"
		"# TYPE vllm:num_requests_running gauge\n"
		"vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3.0\n"
		"vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 1.0\n"
		"vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.42\n"
		"vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} 123456.0\n"
		"vllm:generation_tokens_total{engine=\"0\",model_name=\"m\"} 65432.0\n"
		"vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"8000\"} 1.0\n");
}

static double scrape_us(const char *body, size_t len, int iters)
{
	struct sbd_vllm_metrics *m = malloc(sizeof(*m));
	uint64_t t0 = sy_mono_ns();
	uint64_t sink = 0;
	for (int i = 0; i < iters; i++) {
		sbd_vllm_metrics_parse(body, len, m);
		struct statebus_load_report r;
		if (sbd_vllm_metrics_report(m, 0, 1, &r))
			sink += r.num_running_reqs;
	}
	double us = (double)(sy_mono_ns() - t0) / 1000.0 / iters;
	free(m);
	return sink ? us : -1;
}

int main(void)
{
	printf("re-hash + map, filling the map: %.0f ns per vLLM block (%u-token blocks, %u per "
	       "event)\n", rehash_ns_per_block(16000), BLOCK, PER_EVENT);
	printf("re-hash + map, every put evicting: %.0f ns per vLLM block\n",
	       rehash_ns_per_block(200000));
	static char small[4096], big[65536];
	size_t ns = 0, nb = 0;
	gauges(small, &ns, sizeof(small));
	for (int h = 0; nb < 40000; h++)
		nb += (size_t)snprintf(big + nb, sizeof(big) - nb,
				       "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"%d.0\","
				       "model_name=\"m\"} %d.0\n", h, h * 3);
	gauges(big, &nb, sizeof(big));
	printf("scrape parse + report: %.2f us (%zu-byte body), %.2f us (%zu-byte body)\n",
	       scrape_us(small, ns, 20000), ns, scrape_us(big, nb, 2000), nb);
	return 0;
}
