/* wire.h — decoders of the engines' ZeroMQ payloads (no sockets here).
 *
 * - KV-event batches (SGLang KV events, sglang-wire.md §4–§7): the batch
 *   `[ts, events, rank]` (map form tolerated), events in both generations
 *   (tagged positional arrays, and maps with "type"), caps of §6. vLLM's
 *   (vllm/distributed/kv_events.py: msgspec structs, tag=True, omit_defaults:
 *   a map batch {ts, events, data_parallel_rank}, map events with "type")
 *   decode the same way; its extra BlockStored fields (lora_name,
 *   extra_keys, group_idx) and BlockRemoved group_idx are kept.
 * - LoadStat (sglang-wire.md §12): basic and V3.
 * Both decode from borrowed bytes through common/mpcursor.h, which checks
 * every length against the bytes left before trusting it, so a forged
 * header can neither allocate absurd sizes nor read past the message.
 * Never crashes on input; errors are values.
 */
#ifndef SY_STATEBUS_DAEMON_WIRE_H
#define SY_STATEBUS_DAEMON_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Caps per event (sglang-wire.md §6). */
#define SBD_MAX_HASHES_PER_EVENT 65536u
#define SBD_MAX_TOKENS_PER_EVENT 1048576u

enum sbd_event_type {
	SBD_EV_STORED = 1,  /* BlockStored */
	SBD_EV_REMOVED = 2, /* BlockRemoved */
	SBD_EV_CLEARED = 3, /* AllBlocksCleared */
};

/* The `medium` field of an event (sglang-wire.md §7). */
enum sbd_medium {
	SBD_MEDIUM_ABSENT = 0,  /* field missing or nil: GPU for stores, "all" for removes */
	SBD_MEDIUM_GPU,
	SBD_MEDIUM_CPU_PINNED,
	SBD_MEDIUM_CPU,         /* emitted by some engine versions for the host tier */
	SBD_MEDIUM_DISK,
	SBD_MEDIUM_EXTERNAL,
	SBD_MEDIUM_UNKNOWN,     /* any other string */
};

/* One decoded event. `hashes` and `tokens` point into the decoder's scratch,
 * `lora_name` and `extra_keys` into the decoded payload (all valid until the
 * next sbd_kv_decode on that decoder, and the payload's lifetime). */
struct sbd_kv_event {
	uint8_t type;          /* enum sbd_event_type */
	uint8_t medium;        /* enum sbd_medium */
	bool has_parent;       /* BlockStored: parent_block_hash was not nil */
	bool tokens_dropped;   /* token_ids over the cap: ignored (counted) */
	bool tokens_paired;    /* token_ids came as [t, t'] pairs (bigram pages) */
	bool has_lora_id;      /* lora_id was an integer (vLLM, deprecated) */
	bool has_lora_name;    /* lora_name was a string (vLLM) */
	int64_t parent;        /* valid with has_parent */
	const int64_t *hashes; /* block ids, chain order; bin ids → first 8 bytes BE */
	uint32_t n_hashes;
	uint32_t n_tokens;     /* token units seen (a pair counts 2), 0 if dropped */
	const uint32_t *tokens;/* n_tokens token ids (pairs flattened), NULL when none */
	int64_t block_size;    /* tokens per page, -1 when absent */
	int64_t lora_id;       /* valid with has_lora_id */
	const uint8_t *lora_name; /* valid with has_lora_name: lora_name_len bytes */
	uint32_t lora_name_len;
	const uint8_t *extra_keys; /* raw msgpack of vLLM `extra_keys` (an array of
	                              one entry per block: nil or an array), NULL
	                              when absent or nil */
	uint32_t extra_keys_len;
	int64_t group_idx;     /* vLLM KV-cache group, -1 when absent or nil */
};

/* A decoded batch. Pointers into the decoder (see above). Tallies say what
 * was skipped inside an otherwise good batch. */
struct sbd_kv_batch {
	double ts;                   /* publisher wall-clock seconds */
	bool has_rank;
	int64_t rank;                /* informational: the socket's rank wins */
	const struct sbd_kv_event *events;
	uint32_t n_events;
	uint32_t unknown_tags;       /* events with an unknown tag: skipped */
	uint32_t bad_events;         /* events of a wrong shape: skipped */
	uint32_t oversized_events;   /* events over the hash cap: skipped */
	uint32_t tokens_dropped;     /* events whose token_ids exceeded the cap */
};

/* Reusable scratch for decoding (process-local). Zero-initialise; release
 * with sbd_kv_decoder_free. Grows to the largest batch seen, bounded by the
 * message size (never by a length read from the wire). */
struct sbd_kv_decoder {
	int64_t *hashes;
	size_t hashes_cap;
	uint32_t *tokens;
	size_t tokens_cap;
	struct sbd_kv_event *events;
	size_t events_cap;
};

void sbd_kv_decoder_free(struct sbd_kv_decoder *d);

/* Decodes the `len` bytes at `buf` (frame 2 of a KV message). Returns SY_OK
 * with *out filled (events may be fewer than on the wire: see tallies);
 * SY_EMALFORMED / SY_ETRUNC when the batch itself is malformed (not an array
 * or map, no event list, invalid or truncated msgpack, nesting over the
 * depth cap, trailing bytes) — the caller counts it and skips the batch;
 * SY_ENOMEM. */
int sbd_kv_decode(struct sbd_kv_decoder *d, const uint8_t *buf, size_t len,
		  struct sbd_kv_batch *out);

/* A decoded LoadStat (sglang-wire.md §12). Counts are as sent (u64). */
struct sbd_load_stat {
	uint32_t n_fields;          /* array length on the wire */
	uint64_t num_running_reqs;
	uint64_t num_waiting_reqs;
	uint64_t num_tokens;
	uint64_t max_total_num_tokens;
	bool has_rank;
	int64_t attn_dp_rank;       /* informational: the socket's rank wins */
	bool v3;                    /* all five V3 fields present and valid */
	bool partial_v3;            /* 7–10 fields, or a bad V3 field: basic kept (count it) */
	uint64_t num_waiting_uncached_tokens;
	uint64_t num_total_tokens;
	uint64_t max_running_requests;
	uint64_t total_prefill_uncached_tokens; /* cumulative */
	uint64_t total_prefill_busy_us;         /* cumulative µs */
};

/* Decodes a LoadStat payload. SY_OK; SY_EMALFORMED when the tag is not
 * "LoadStat", fewer than the four counts are present, a count is not a
 * non-negative integer, or the msgpack is invalid (never read as zeros);
 * SY_ETRUNC on truncated input. */
int sbd_load_decode(const uint8_t *buf, size_t len, struct sbd_load_stat *out);

#endif
