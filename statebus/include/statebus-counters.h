/* statebus-counters.h — meaning of the region's counters block.
 *
 * The statebus counts what it ingests in the header's counters block
 * (STATEBUS_COUNTERS_MAX 64-bit words, statebus_counter_add/get), so that a
 * router's /metrics and `syctl streams` read them from shared memory
 * (DESIGN.md §5). Indices are part of the layout: append only, never reuse.
 * Names are the Prometheus names (reference/policy-defaults.md §10 for the
 * switchyard_kv_event_* family); all are monotonic counters (`_total`).
 * Per-stream values (per worker × DP rank) live in the streams table.
 */
#ifndef SY_STATEBUS_COUNTERS_H
#define SY_STATEBUS_COUNTERS_H

enum statebus_counter {
	/* sglang-wire.md §2, §5, §6: bad frames, malformed batches, unknown
	 * tags, events of a wrong shape or over the hash cap */
	STATEBUS_CTR_KV_DECODE_FAILURES = 0,
	STATEBUS_CTR_KV_SEQUENCE_GAPS = 1,      /* forward gaps not filled by replay (§9) */
	STATEBUS_CTR_KV_MISSING_SEQUENCES = 2,  /* batches lost in those gaps */
	STATEBUS_CTR_KV_SKIPPED_BATCHES = 3,    /* stale seq ≤ cursor (§9) */
	STATEBUS_CTR_KV_PUBLISHER_RESETS = 4,   /* END_SEQ, or seq 0 behind the cursor */
	STATEBUS_CTR_KV_BATCHES = 5,            /* batches applied */
	STATEBUS_CTR_KV_EVENTS = 6,             /* events applied */
	STATEBUS_CTR_KV_UNKNOWN_TAGS = 7,       /* events skipped: unknown tag (also a decode failure) */
	STATEBUS_CTR_KV_OVERSIZED_EVENTS = 8,   /* events skipped: > 65,536 hashes */
	STATEBUS_CTR_KV_TOKENS_DROPPED = 9,     /* token_ids over 1,048,576: field ignored */
	STATEBUS_CTR_KV_MEDIUM_CPU = 10,        /* "CPU" medium mapped to HOST (§7) */
	STATEBUS_CTR_KV_UNKNOWN_MEDIUM_STORES = 11, /* stores with an unknown medium: dropped */
	STATEBUS_CTR_KV_REPLAY_REQUESTS = 12,   /* replay fetches started (§3) */
	STATEBUS_CTR_KV_REPLAYED_BATCHES = 13,  /* batches recovered by replay */
	STATEBUS_CTR_KV_INDEX_ERRORS = 14,      /* index write API refused an event */
	STATEBUS_CTR_LOAD_REPORTS = 15,         /* LoadStat reports stored */
	STATEBUS_CTR_LOAD_DECODE_FAILURES = 16, /* malformed LoadStat / frames */
	STATEBUS_CTR_LOAD_PARTIAL_V3 = 17,      /* 7–10 fields or bad V3: basic kept */
	STATEBUS_CTR_WORKER_BLOCK_SIZE_MISMATCH = 18, /* workers rejected (DESIGN §9) */
	STATEBUS_CTR_WORKER_NO_CACHE_SIGNAL = 19,     /* no kv_events block (§10) */
	STATEBUS_CTR_DISCOVERY_FAILURES = 20,   /* /server_info given up after retries */
	STATEBUS_CTR_HEALTH_CHECK_FAILURES = 21,/* failed /health probes */
	STATEBUS_CTR_SOCKET_REBUILDS = 22,      /* SUB sockets rebuilt after 64 errors */
	STATEBUS_CTR_PROCS_REAPED = 23,         /* dead router-process slots reclaimed */
	STATEBUS_CTR_CONTROL_REQUESTS = 24,     /* control-socket requests served */
	STATEBUS_CTR_KV_BIGRAM_UNRECOGNISED = 25, /* EAGLE/MTP-like algorithm treated as unigram */
	STATEBUS_CTR_COUNT_ = 26,
};

/* Prometheus name of counter `idx`, or NULL for an unassigned index. */
static inline const char *statebus_counter_name(unsigned idx)
{
	static const char *const names[STATEBUS_CTR_COUNT_] = {
		"switchyard_kv_event_decode_failures_total",
		"switchyard_kv_event_sequence_gaps_total",
		"switchyard_kv_event_missing_sequences_total",
		"switchyard_kv_event_skipped_batches_total",
		"switchyard_kv_event_publisher_resets_total",
		"switchyard_kv_event_batches_total",
		"switchyard_kv_event_events_total",
		"switchyard_kv_event_unknown_tags_total",
		"switchyard_kv_event_oversized_events_total",
		"switchyard_kv_event_tokens_dropped_total",
		"switchyard_kv_event_medium_cpu_total",
		"switchyard_kv_event_unknown_medium_stores_total",
		"switchyard_kv_event_replay_requests_total",
		"switchyard_kv_event_replayed_batches_total",
		"switchyard_kv_event_index_errors_total",
		"switchyard_load_reports_total",
		"switchyard_load_decode_failures_total",
		"switchyard_load_partial_v3_total",
		"switchyard_worker_block_size_mismatch_total",
		"switchyard_worker_no_cache_signal_total",
		"switchyard_worker_discovery_failures_total",
		"switchyard_worker_health_check_failures_total",
		"switchyard_kv_event_socket_rebuilds_total",
		"switchyard_statebus_procs_reaped_total",
		"switchyard_statebus_control_requests_total",
		"switchyard_kv_event_bigram_unrecognised_total",
	};
	return idx < STATEBUS_CTR_COUNT_ ? names[idx] : NULL;
}

#endif
