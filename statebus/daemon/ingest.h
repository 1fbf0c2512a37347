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

/* Host part of an http(s) worker URL (brackets of an IPv6 literal kept off).
 * Returns SY_OK or SY_EINVAL. */
int sbd_url_host(const char *url, char *out, size_t cap);

#endif
