/* vllm.h — vLLM KV events onto the router's own block-hash chain.
 *
 * vLLM's block ids (sha256 / sha256_cbor / xxhash over parent, tokens and
 * extra keys, seeded by PYTHONHASHSEED) cannot be recomputed by the router,
 * so the statebus never indexes them. Each stored vLLM block is re-hashed
 * from the `token_ids` its BlockStored carries with the router's SGLang
 * chain (common/blockhash.h), parent-linked through the digest of the
 * parent block, and indexed under that own id. The engine's ids are kept
 * only in a map engine id → own digest per (worker slot, DP rank), so that
 * later BlockStored events find their parent's digest and BlockRemoved
 * events un-index exactly the blocks they name.
 *
 * Namespace (docs/statebus.md "vLLM engines"): a root block (no parent) of
 * a LoRA adapter starts from sy_blockhash_lora_seed(lora_name) — or of
 * "lora_id:<decimal>" when only the deprecated lora_id is given — instead of
 * the unseeded SGLang root. A block whose extra_keys entry holds anything
 * besides the adapter name (multimodal hashes, cache_salt, prompt-embedding
 * hashes) has those elements' raw msgpack bytes folded into its digest
 * (sy_blockhash_fold), which every later block inherits. Plain text blocks
 * of the base model therefore get exactly the ids the router computes for a
 * prompt, and different adapters never match each other.
 *
 * The map (struct sbd_vmap) is process-local writer state: a fixed pool of
 * 64-byte entries (one cache line) with a chained hash table of 32-bit
 * heads and one LRU list over every owner. When the pool is full the least
 * recently stored entry is evicted — the caller's on_evict un-indexes its
 * own id so the index never keeps a block it could no longer remove — and
 * counted. Memory per mapped block: sizeof(struct sbd_vmap_entry) = 64 B +
 * 4 B of bucket head at a power-of-two capacity (≤ 8 B otherwise):
 * sbd_vmap_bytes_per_block().
 *
 * KV-cache groups: only group_idx 0 (or absent) is indexed; events of other
 * groups (hybrid models' extra groups) are skipped and counted.
 * Socket-free and region-free: unit-tested directly (test_vllm.c).
 */
#ifndef SY_STATEBUS_DAEMON_VLLM_H
#define SY_STATEBUS_DAEMON_VLLM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/blockhash.h"
#include "wire.h"

/* One mapped vLLM block (64 B). `tiers` 0 = free entry. */
struct sbd_vmap_entry {
	int64_t key;                       /* engine block id (bin ids: first 8 bytes BE) */
	struct sy_blockhash_digest digest; /* own chain digest; own id = its first 8 bytes */
	uint32_t hnext;                    /* next entry of the bucket chain, 0 = end */
	uint32_t lru_prev, lru_next;       /* LRU neighbours (older, newer), 0 = none */
	uint16_t worker;                   /* worker slot */
	uint16_t rank;                     /* DP rank */
	uint8_t tiers;                     /* STATEBUS_TIER_* bits held, 0 = free */
	uint8_t reserved[3];
};

/* Called for an entry about to be evicted (still valid during the call). */
typedef void (*sbd_vmap_evict_fn)(void *ctx, const struct sbd_vmap_entry *e);

/* The map. Zero-initialise, then sbd_vmap_init. Entries are indexed from 1
 * (0 means "none" in links). */
struct sbd_vmap {
	struct sbd_vmap_entry *e;  /* cap + 1 entries */
	uint32_t *buckets;         /* mask + 1 heads */
	uint32_t cap, mask, used;
	uint32_t free_head;        /* free list through hnext */
	uint32_t hw;               /* entries handed out at least once */
	uint32_t lru_head, lru_tail; /* oldest, newest */
	uint64_t evictions;        /* entries evicted because the pool was full */
	sbd_vmap_evict_fn on_evict;
	void *evict_ctx;
};

/* Allocates a map of `cap` entries (1 ≤ cap ≤ 2^26). Returns SY_OK,
 * SY_EINVAL or SY_ENOMEM. */
int sbd_vmap_init(struct sbd_vmap *m, uint32_t cap);
void sbd_vmap_free(struct sbd_vmap *m);

/* Memory per mapped block in bytes: entry + this map's bucket share. */
double sbd_vmap_bytes_per_block(const struct sbd_vmap *m);

/* Entry of (worker, rank, key), or NULL. The pointer is valid until the next
 * put/remove/clear. */
struct sbd_vmap_entry *sbd_vmap_find(struct sbd_vmap *m, uint32_t worker, uint32_t rank,
				     int64_t key);

/* Maps (worker, rank, key) → digest with `tiers` OR-ed in (an existing entry
 * takes the new digest) and makes it the most recently stored. A full pool
 * evicts the oldest entry first (on_evict, counted). Returns the entry. */
struct sbd_vmap_entry *sbd_vmap_put(struct sbd_vmap *m, uint32_t worker, uint32_t rank,
				    int64_t key, const struct sy_blockhash_digest *digest,
				    uint32_t tiers);

/* Clears `tiers` of entry `e`; an entry left with none is freed. Returns the
 * tiers left. */
uint32_t sbd_vmap_remove_tiers(struct sbd_vmap *m, struct sbd_vmap_entry *e, uint32_t tiers);

/* Frees every entry of `worker` and `rank` (rank UINT32_MAX: every rank);
 * worker UINT32_MAX: everything. O(cap). Returns the entries freed. */
uint32_t sbd_vmap_clear(struct sbd_vmap *m, uint32_t worker, uint32_t rank);

/* Why a vLLM event was not indexed. */
enum sbd_vllm_verdict {
	SBD_VLLM_OK = 0,
	SBD_VLLM_NO_TOKENS = 1,       /* token_ids missing, empty or over the cap */
	SBD_VLLM_TOKENS_MISMATCH = 2, /* count ≠ blocks × block_size, pairs, or a
	                                 block_size other than the worker's */
	SBD_VLLM_PARENT_UNKNOWN = 3,  /* parent_block_hash not in the map */
	SBD_VLLM_OTHER_GROUP = 4,     /* group_idx > 0 */
	SBD_VLLM_BAD_EXTRA = 5,       /* extra_keys not one entry per block */
};

/* Scratch of the re-hash (process-local). Zero-initialise; grows to the
 * largest event seen (bounded by the per-event caps of wire.h). */
struct sbd_vllm_scratch {
	int64_t *ids;
	size_t ids_cap;
	struct sy_blockhash_digest *dg; /* own digests of one chain */
	size_t dg_cap;
	uint8_t *xbuf;   /* extra keys of one block minus the adapter name */
	size_t xbuf_cap;
};
void sbd_vllm_scratch_free(struct sbd_vllm_scratch *s);

/* What statebus_index_store should be given for a re-hashed BlockStored:
 * own ids of the chain (in the scratch, valid until its next use) and the
 * own id of the parent. */
struct sbd_vllm_store {
	bool has_parent;
	int64_t parent;
	const int64_t *ids;
	uint32_t n;
};

/* Re-hashes BlockStored `e` of (worker, rank) at `block_size` tokens per
 * block, maps each engine id to its own digest with `tiers` (non-zero), and
 * fills `out`. A chain longer than the map's capacity is cut to it. Returns
 * an enum sbd_vllm_verdict (the map is untouched unless SBD_VLLM_OK), or
 * SY_EINVAL / SY_ENOMEM. */
int sbd_vllm_rehash(struct sbd_vmap *m, struct sbd_vllm_scratch *s, uint32_t worker,
		    uint32_t rank, const struct sbd_kv_event *e, uint32_t block_size,
		    uint32_t tiers, struct sbd_vllm_store *out);

/* Translates BlockRemoved `e` of (worker, rank): clears `tiers` of every
 * mapped engine id it names and writes their own ids to the scratch
 * (*ids, *n). *unknown receives the ids not in the map. Returns SBD_VLLM_OK,
 * SBD_VLLM_OTHER_GROUP (nothing done), or SY_ENOMEM. */
int sbd_vllm_remove(struct sbd_vmap *m, struct sbd_vllm_scratch *s, uint32_t worker,
		    uint32_t rank, const struct sbd_kv_event *e, uint32_t tiers,
		    const int64_t **ids, uint32_t *n, uint32_t *unknown);

#endif
