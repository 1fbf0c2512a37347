/* ingest.h — socket-free pieces of the statebus's ingestion that map wire
 * values onto the region: LoadStat → load record (with the derived prefill
 * throughput), event medium → index tier bits, /server_info → engine facts.
 */
#ifndef SY_STATEBUS_DAEMON_INGEST_H
#define SY_STATEBUS_DAEMON_INGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "statebus-t.h"
#include "wire.h"

/* The previous V3 sample of one (worker, rank): cumulative counters. */
struct sbd_load_prev {
	bool valid;
	uint64_t uncached;  /* total_prefill_uncached_tokens */
	uint64_t busy_us;   /* total_prefill_busy_us */
};

/* Fills the load record of a decoded LoadStat received at now_ns
 * (CLOCK_MONOTONIC): counts saturated at UINT32_MAX, HAS_REPORT, HAS_V3 with
 * the V3 fields, and — between this sample and `prev` (the rank's previous
 * V3 sample) — prefill_tokens_per_s = 1e6 · Δuncached / Δbusy_us with
 * HAS_THROUGHPUT, only when both deltas are > 0 (sglang-wire.md §13).
 * Updates `prev` to this sample (invalidated by a non-V3 sample; counters
 * that went backwards — an engine restart — restart the derivation).
 * worker_gen and dispatches_at_recv are left for statebus_load_write. */
void sbd_load_report(const struct sbd_load_stat *s, uint64_t now_ns, struct sbd_load_prev *prev,
		     struct statebus_load_report *out);

/* Tier bits of an event's medium (sglang-wire.md §7). Stores: absent/GPU →
 * DEVICE, CPU_PINNED and CPU → HOST, DISK, EXTERNAL; unknown → 0 (drop).
 * Removes: absent or unknown → STATEBUS_TIER_ALL (clear every tier). */
uint32_t sbd_store_tiers(int medium);
uint32_t sbd_remove_tiers(int medium);

/* Region counter index (statebus-counters.h) of the tally of event `e`:
 * (type, medium) with "CPU" as CPU_PINNED, missing medium as untagged, any
 * other string as unknown; AllBlocksCleared is always untagged
 * (policy-defaults.md §12 scenario 23). */
unsigned sbd_tally_counter(const struct sbd_kv_event *e);

/* Engine facts from GET /server_info (sglang-wire.md §10). */
struct sbd_facts {
	bool has_kv;              /* a kv_events block was present */
	char endpoint_host[64];   /* wildcard replaced by the worker URL's host */
	int endpoint_port_base;   /* 0 = unknown */
	char topic[64];
	int block_size;           /* tokens per page, 0 = unknown */
	int dp_size;              /* 0 = unknown */
	int load_port_base;       /* 0 = none */
	int replay_port_base;     /* 0 = none */
	int role;                 /* enum statebus_worker_role, -1 = not said */
	int bootstrap_port;       /* 0 = none */
	int64_t max_total_num_tokens; /* KV capacity, tokens; 0 = not said */
	int page_size;            /* tokens per page (ServerArgs page_size), 0 = not said */
	bool bigram;              /* speculative_algorithm EAGLE/EAGLE3/FROZEN_KV_MTP */
	bool bigram_unrecognised; /* looked like EAGLE/MTP but is not in the list */
	char speculative_algorithm[32];
	char model[STATEBUS_MODEL_MAX]; /* served_model_name, else model_path; "" = not
				   * said (or too long for the record) */
	const char *invalid;      /* why the KV facts cannot be used (a dp_size out of
				   * [1, 1024], a block_size out of [1, 2^20], a host
				   * or topic too long), else NULL */
};

/* Parses a /server_info JSON body (`len` bytes) of worker `url` (its host
 * replaces a wildcard endpoint_host: "*", "0.0.0.0", "::", or missing).
 * Top-level keys, falling back to a nested "server_args" object. Returns
 * SY_OK; SY_EMALFORMED (not a JSON object) with `why` filled. */
int sbd_discovery_parse(const char *body, size_t len, const char *url, struct sbd_facts *out,
			char *why, size_t why_cap);

/* vLLM discovery (docs/statebus.md "vLLM engines"): GET /v1/models is an
 * OpenAI model list {"data": [{"id", "parent", ...}]}; the served model is
 * the first entry whose parent is null or absent (else the first entry),
 * the others are LoRA adapters (counted in *n_adapters). Copies its id to
 * model[cap] and, when `adapters` is not NULL, the adapters' ids to
 * adapters[adapters_cap] as struct statebus_worker.lora_adapters lists
 * them (NUL-terminated names, an empty one last; a name that does not fit,
 * or of STATEBUS_MODEL_MAX bytes or more, left out). Returns SY_OK,
 * SY_EMALFORMED (no list, no id, or too long). */
int sbd_vllm_models_parse(const char *body, size_t len, char *model, size_t cap,
			  uint32_t *n_adapters, char *adapters, size_t adapters_cap);

/* GET /version of vLLM: {"version": "x.y.z"}. Copies it to version[cap].
 * Returns SY_OK or SY_EMALFORMED. */
int sbd_vllm_version_parse(const char *body, size_t len, char *version, size_t cap);

/* Ranks one scrape of vLLM's /metrics reports (label engine="N"). */
#define SBD_SCRAPE_MAX_RANKS 64

/* One scrape of vLLM's Prometheus /metrics (text exposition 0.0.4; names
 * of vllm/v1/metrics/loggers.py), per DP rank (label engine="N", 0 when
 * absent). A value not present is not `has_*` — never read as zero. */
struct sbd_vllm_metrics {
	struct {
		bool has_running, has_waiting, has_usage, has_prompt, has_generation;
		bool has_gpu_usage;
		double gpu_usage;   /* vllm:gpu_cache_usage_perc as read */
		double running;     /* vllm:num_requests_running */
		double waiting;     /* vllm:num_requests_waiting */
		double usage;       /* vllm:kv_cache_usage_perc, else gpu_cache_usage_perc, 0..1 */
		double prompt;      /* vllm:prompt_tokens_total */
		double generation;  /* vllm:generation_tokens_total */
	} rank[SBD_SCRAPE_MAX_RANKS];
	uint32_t n_ranks;          /* 1 + highest rank seen, 0 = none */
	uint64_t num_gpu_blocks;   /* vllm:cache_config_info label, 0 = unknown */
	uint32_t block_size;       /* vllm:cache_config_info label, 0 = unknown */
	uint32_t bad_lines;        /* sample lines that did not parse (skipped) */
};

/* Parses `len` bytes of /metrics. Samples of several model_name label
 * values are summed per rank. Returns SY_OK, or SY_EMALFORMED when no
 * vllm:num_requests_* sample was found. */
int sbd_vllm_metrics_parse(const char *body, size_t len, struct sbd_vllm_metrics *out);

/* The scraped load record of rank `k` of `m` received at now_ns: running,
 * waiting (saturated), usage in ppm, token counters (low 32 bits), and with
 * a known capacity (cache_config_info) num_tokens / max_total_num_tokens.
 * Returns false when running or waiting is missing for that rank (unknown,
 * never zero: nothing is to be written). */
bool sbd_vllm_metrics_report(const struct sbd_vllm_metrics *m, uint32_t k, uint64_t now_ns,
			     struct statebus_load_report *out);

/* Host part of an http(s) worker URL (brackets of an IPv6 literal kept off).
 * Returns SY_OK or SY_EINVAL. */
int sbd_url_host(const char *url, char *out, size_t cap);

#endif
