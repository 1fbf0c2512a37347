/* statebus-counters.h — meaning of the region's counters block.
 *
 * The statebus counts what it ingests in the header's counters block
 * (STATEBUS_COUNTERS_MAX 64-bit words, statebus_counter_add/get), so that a
 * router's /metrics and `syctl streams` read them from shared memory
 * (DESIGN.md §5). Indices are part of the layout: append only, never reuse.
 * Names are the Prometheus names (reference/policy-defaults.md §10 for the
 * switchyard_kv_event_* family); all are monotonic counters (`_total`).
 * Per-stream values (per worker × DP rank) live in the streams table.
 * The tallies per (event type, medium) are named
 * switchyard_kv_event_<stored|removed|cleared>_<gpu|cpu_pinned|disk|
 * external|untagged|unknown>_total; a /metrics exporter may instead render
 * them as one family with labels (statebus_kv_tally_labels()).
 */
#ifndef SY_STATEBUS_COUNTERS_H
#define SY_STATEBUS_COUNTERS_H

#include <stdbool.h>

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
	/* Tallies per (event type, medium) of the events in applied batches
	 * (policy-defaults.md §12 scenario 23, sglang-wire.md §7): 18 counters
	 * from STATEBUS_CTR_KV_TALLY_BASE, index = base + type · 6 + medium with
	 * enum statebus_tally_type and enum statebus_tally_medium
	 * (statebus_kv_tally_counter()). */
	STATEBUS_CTR_KV_TALLY_BASE = 26,
	/* A KV SUB lost its peer and connected again (engine killed and
	 * restarted on the same port, network cut): the rank was cleared and
	 * resubscribed (docs/statebus.md, switchyard extension of §9). */
	STATEBUS_CTR_KV_PEER_RECONNECTS = 44,
	/* A rank rebuilt by replay after a reconnect whose oldest batch was not
	 * seq 0 (the engine's buffer had moved on): the rank stays partial. */
	STATEBUS_CTR_KV_PARTIAL_REBUILDS = 45,
	/* vLLM engines (statebus/daemon/vllm.h, docs/statebus.md "vLLM
	 * engines"): blocks re-hashed from token_ids and indexed; BlockStored
	 * events not indexed because token_ids were missing (absent, nil,
	 * empty, over the cap), did not fit (count ≠ blocks × block_size,
	 * pairs, another block_size), named a parent not in the id map, came
	 * from a KV-cache group other than 0, or carried extra_keys that are
	 * not one entry per block; BlockRemoved ids not in the map; map
	 * entries evicted (and un-indexed) because the map was full. */
	STATEBUS_CTR_VLLM_REHASHED_BLOCKS = 46,
	STATEBUS_CTR_VLLM_TOKENS_MISSING = 47,
	STATEBUS_CTR_VLLM_TOKENS_MISMATCH = 48,
	STATEBUS_CTR_VLLM_PARENT_UNKNOWN = 49,
	STATEBUS_CTR_VLLM_OTHER_GROUP = 50,
	STATEBUS_CTR_VLLM_BAD_EXTRA = 51,
	STATEBUS_CTR_VLLM_REMOVE_UNKNOWN = 52,
	STATEBUS_CTR_VLLM_MAP_EVICTIONS = 53,
	/* Prometheus /metrics scrapes of vLLM engines stored in the load
	 * table, and scrapes that failed (HTTP error, timeout, unparsable). */
	STATEBUS_CTR_LOAD_SCRAPES = 54,
	STATEBUS_CTR_LOAD_SCRAPE_FAILURES = 55,
	/* A discovered worker refused: its role (plain, or prefill/decode)
	 * conflicts with its model's configured kind or with the model's
	 * registered workers (a model is one kind, common/config_models.c). */
	STATEBUS_CTR_WORKER_ROLE_CONFLICTS = 56,
	/* Statebus start-up with a surviving index (docs/statebus.md "Start-up
	 * and restart"): the index passed statebus_index_check() and was kept,
	 * or failed it (or was left mid-update) and was emptied. */
	STATEBUS_CTR_INDEX_KEPT = 57,
	STATEBUS_CTR_INDEX_DISCARDED = 58,
	/* Streams (worker × DP rank) of a kept index resumed from the cursor of
	 * their stream record; resumed streams whose gap replay could not fill
	 * (or whose engine restarted meanwhile), so the rank was cleared and
	 * rebuilt (by replay from seq 0 where the engine offers replay). */
	STATEBUS_CTR_KV_STREAMS_RESUMED = 59,
	STATEBUS_CTR_KV_RESUME_REBUILDS = 60,
	/* Rotation-cursor lookups that found the cursor table full (cursors.c):
	 * that group rotates on a process-local cursor. */
	STATEBUS_CTR_CURSORS_FULL = 61,
	STATEBUS_CTR_COUNT_ = 62,
};

/* Event types of the tallies (sglang-wire.md §5 tags). */
enum statebus_tally_type {
	STATEBUS_TALLY_STORED = 0,  /* BlockStored */
	STATEBUS_TALLY_REMOVED = 1, /* BlockRemoved */
	STATEBUS_TALLY_CLEARED = 2, /* AllBlocksCleared (carries no medium: untagged) */
	STATEBUS_TALLY_TYPES = 3,
};

/* Mediums of the tallies (sglang-wire.md §7). "CPU" counts as CPU_PINNED
 * (the tier it is stored in; also counted by medium_cpu_total); a missing
 * or nil medium is "untagged"; any other string is "unknown". */
enum statebus_tally_medium {
	STATEBUS_TALLY_GPU = 0,
	STATEBUS_TALLY_CPU_PINNED = 1,
	STATEBUS_TALLY_DISK = 2,
	STATEBUS_TALLY_EXTERNAL = 3,
	STATEBUS_TALLY_UNTAGGED = 4,
	STATEBUS_TALLY_UNKNOWN = 5,
	STATEBUS_TALLY_MEDIUMS = 6,
};

/* Counter index of the tally (type, medium); both must be in range (else
 * the result is past the tallies: callers pass enum values only). */
static inline unsigned statebus_kv_tally_counter(unsigned type, unsigned medium)
{
	return STATEBUS_CTR_KV_TALLY_BASE + type * STATEBUS_TALLY_MEDIUMS + medium;
}

/* Label values of a tally counter for a Prometheus exposition
 * (`switchyard_kv_event_tally_total{event="stored",medium="GPU"}`): true
 * with *event and *medium set (static strings) when `idx` is a tally. */
static inline bool statebus_kv_tally_labels(unsigned idx, const char **event, const char **medium)
{
	static const char *const ev[STATEBUS_TALLY_TYPES] = {"stored", "removed", "cleared"};
	static const char *const md[STATEBUS_TALLY_MEDIUMS] = {
		"GPU", "CPU_PINNED", "DISK", "EXTERNAL", "untagged", "unknown"};
	if (idx < STATEBUS_CTR_KV_TALLY_BASE ||
	    idx >= STATEBUS_CTR_KV_TALLY_BASE + STATEBUS_TALLY_TYPES * STATEBUS_TALLY_MEDIUMS)
		return false;
	unsigned t = idx - STATEBUS_CTR_KV_TALLY_BASE;
	*event = ev[t / STATEBUS_TALLY_MEDIUMS];
	*medium = md[t % STATEBUS_TALLY_MEDIUMS];
	return true;
}

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
		"switchyard_kv_event_stored_gpu_total",
		"switchyard_kv_event_stored_cpu_pinned_total",
		"switchyard_kv_event_stored_disk_total",
		"switchyard_kv_event_stored_external_total",
		"switchyard_kv_event_stored_untagged_total",
		"switchyard_kv_event_stored_unknown_total",
		"switchyard_kv_event_removed_gpu_total",
		"switchyard_kv_event_removed_cpu_pinned_total",
		"switchyard_kv_event_removed_disk_total",
		"switchyard_kv_event_removed_external_total",
		"switchyard_kv_event_removed_untagged_total",
		"switchyard_kv_event_removed_unknown_total",
		"switchyard_kv_event_cleared_gpu_total",
		"switchyard_kv_event_cleared_cpu_pinned_total",
		"switchyard_kv_event_cleared_disk_total",
		"switchyard_kv_event_cleared_external_total",
		"switchyard_kv_event_cleared_untagged_total",
		"switchyard_kv_event_cleared_unknown_total",
		"switchyard_kv_event_peer_reconnects_total",
		"switchyard_kv_event_partial_rebuilds_total",
		"switchyard_kv_event_vllm_rehashed_blocks_total",
		"switchyard_kv_event_vllm_tokens_missing_total",
		"switchyard_kv_event_vllm_tokens_mismatch_total",
		"switchyard_kv_event_vllm_parent_unknown_total",
		"switchyard_kv_event_vllm_other_group_total",
		"switchyard_kv_event_vllm_bad_extra_keys_total",
		"switchyard_kv_event_vllm_remove_unknown_total",
		"switchyard_kv_event_vllm_map_evictions_total",
		"switchyard_load_scrapes_total",
		"switchyard_load_scrape_failures_total",
		"switchyard_worker_role_conflicts_total",
		"switchyard_statebus_index_kept_total",
		"switchyard_statebus_index_discarded_total",
		"switchyard_kv_event_streams_resumed_total",
		"switchyard_kv_event_resume_rebuilds_total",
		"switchyard_rotation_cursors_full_total",
	};
	return idx < STATEBUS_CTR_COUNT_ ? names[idx] : NULL;
}

#endif
