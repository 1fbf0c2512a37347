/* kvev.h — KV-cache events of one DP rank: record, coalesce, encode.
 *
 * A batch collects the events one scheduler step produced, in order, and is
 * encoded as the SGLang event batch `[ts, events, rank]` (sglang-wire.md §4)
 * with each event either positional, tag first (§5.1, KVEV_ENC_ARRAY) or a
 * map with a "type" key (§5.2, KVEV_ENC_MAP), or as vLLM encodes it (below).
 *
 * Coalescing follows SGLang's KVCacheEventRecorder (§8): a store appends to
 * the previous event when that is a store with the same block size and the
 * new parent equals its last hash; a removal appends to a previous removal.
 * The medium is the same for every event of a recorder (GPU by default, or
 * none = left out).
 *
 * vLLM form (KVEV_ENC_VLLM; vllm/distributed/kv_events.py, msgspec structs
 * with tag=True and omit_defaults, not array-like): the batch is a map
 * {ts, events, data_parallel_rank}; BlockStored is a map of type,
 * block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium,
 * lora_name (extra_keys and group_idx left out: their default None);
 * BlockRemoved of type, block_hashes, medium; AllBlocksCleared of type.
 * Block ids are vLLM's `bytes` form: 32 opaque bytes per block, here
 * SHA-256("switchyard-mock-vllm-v1" ‖ seed as 8 bytes BE ‖ SGLang id as 8
 * bytes BE) — deliberately unlike the router's chain, so a consumer must
 * re-hash token_ids to match prompts.
 */
#ifndef SY_MOCK_KVEV_H
#define SY_MOCK_KVEV_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum kvev_type {
	KVEV_STORED = 0,  /* "BlockStored" */
	KVEV_REMOVED = 1, /* "BlockRemoved" */
	KVEV_CLEARED = 2, /* "AllBlocksCleared" */
};

enum kvev_encoding {
	KVEV_ENC_ARRAY = 0, /* §5.1 positional arrays, tag first */
	KVEV_ENC_MAP = 1,   /* §5.2 maps with "type" */
	KVEV_ENC_VLLM = 2,  /* vLLM: map batch, map events, 32-byte bin ids */
};

/* One event. Arrays are owned by the batch (malloc'ed, grown on append). */
struct kvev {
	enum kvev_type type;
	int64_t *hashes;     /* block_hashes, SGLang i64 page ids */
	size_t n_hashes, cap_hashes;
	bool has_parent;     /* false: parent_block_hash is nil (root) */
	int64_t parent;
	uint32_t *tokens;    /* token_ids (bigram pages: flattened pairs) */
	size_t n_tokens, cap_tokens;
	uint32_t block_size; /* tokens per page */
	int lora;            /* LoRA adapter: 0 none, else 1 + index into the
			        batch's lora_names (vLLM form only) */
};

/* The events of one step, in order. Zero-initialise, then use. */
struct kvev_batch {
	struct kvev *ev;
	size_t n, cap;
	const char *medium; /* "GPU", ..., or NULL = leave the medium out */
	int cur_lora;       /* adapter of the stores recorded next (struct kvev.lora) */
	const char *const *lora_names; /* borrowed names of adapters 1.. (index lora − 1) */
	uint64_t vllm_seed; /* seed of the opaque vLLM ids */
};

/* Records a BlockStored of `n` page hashes with their `ntok` token ids
 * (copied). `has_parent`/`parent`: hash of the page before the first one.
 * Coalesces into the previous store when the chain continues (§8).
 * Returns 0 or SY_ENOMEM. */
int kvev_batch_store(struct kvev_batch *b, bool has_parent, int64_t parent,
		     const int64_t *hashes, size_t n, const uint32_t *tokens, size_t ntok,
		     uint32_t block_size);

/* Records a BlockRemoved of `n` hashes (copied); merges into a previous
 * removal. Returns 0 or SY_ENOMEM. */
int kvev_batch_remove(struct kvev_batch *b, const int64_t *hashes, size_t n);

/* Records AllBlocksCleared. Returns 0 or SY_ENOMEM. */
int kvev_batch_clear(struct kvev_batch *b);

/* Empties the batch, keeping its memory for the next step. */
void kvev_batch_reset(struct kvev_batch *b);

/* Frees everything the batch owns; it can be reused after (empty). */
void kvev_batch_free(struct kvev_batch *b);

/* Encodes `[ts, events, rank]` into `out` (appended). `ts` in wall-clock
 * seconds; `rank` < 0 encodes nil. Returns 0 or SY_ENOMEM. */
int kvev_encode(const struct kvev_batch *b, double ts, int rank, enum kvev_encoding enc,
		msgpack_sbuffer *out);

/* The opaque 32-byte vLLM id of SGLang page id `id` under `seed`. */
void kvev_vllm_id(uint64_t seed, int64_t id, uint8_t out[32]);

/* Parses "array" | "map" | "vllm". Returns 0 or SY_EINVAL. */
int kvev_encoding_parse(const char *s, enum kvev_encoding *out);

#endif
