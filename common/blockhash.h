/* blockhash.h — the SGLang block-hash chain (router recomputes engine ids).
 *
 * Source: SGLang block-hash chain, mem_cache/utils.py (`get_hash_str`,
 * `hash_str_to_int64`); byte-level description and golden values in
 * ../shared/reference/sglang-wire.md §11.
 *
 * The prompt's token ids (of the rendered chat template, exactly what the
 * engine prefills) are cut into pages of `block_size` units; the last page
 * may be short and is still hashed. A unit is one token (unigram) or, in
 * bigram mode, one of the N−1 overlapping pairs (t[j], t[j+1]).
 *
 *   digest[k] = SHA-256( digest[k−1] (32 bytes, absent for the first page
 *                        unless a seed is set) ‖ units of page k, each
 *                        token as a 4-byte little-endian u32 )
 *   id[k]     = first 8 bytes of digest[k], big-endian, as a signed i64
 *
 * The chain always continues from the full 32-byte digest, never from the
 * truncated id. A non-empty cache_salt seeds the first page's "previous
 * digest" with SHA-256("sglang-cache-salt-v1" ‖ 0x00 ‖ salt bytes).
 *
 * Resuming a chain (e.g. from a per-process prefix memo, DESIGN.md §8): the
 * chain of tokens[k·block_size ..] with the seed set to digest[k−1] yields
 * exactly pages k, k+1, ... of the full chain, in both modes (in bigram mode
 * page k's units start at token k·block_size and read one token past the
 * page).
 *
 * Cost: one SHA-256 of 32 + 4·block_size bytes (unigram) or 32 +
 * 8·block_size bytes (bigram) per page; no allocation, thread-safe, all
 * buffers caller-owned.
 */
#ifndef SY_COMMON_BLOCKHASH_H
#define SY_COMMON_BLOCKHASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SY_BLOCKHASH_DIGEST_LEN 32 /* bytes of a page digest (SHA-256) */

/* One page digest: the full SHA-256 output that the chain continues from. */
struct sy_blockhash_digest {
	uint8_t b[SY_BLOCKHASH_DIGEST_LEN];
};

/* How a chain is cut and seeded. Plain value (no pointers): copy freely,
 * keep one per model in the configuration. Fill with
 * sy_blockhash_params_init() or by hand. */
struct sy_blockhash_params {
	uint32_t block_size;             /* units per page (tokens, or pairs in
					  * bigram mode); must be > 0 */
	bool bigram;                     /* units are overlapping token pairs */
	bool has_seed;                   /* first page is prefixed by `seed` */
	struct sy_blockhash_digest seed; /* "previous digest" of the first page:
					  * a salt seed or a resumed chain */
};

/* Fills `p`: block_size units per page, bigram flag, and the seed of the
 * cache_salt `salt` (`salt_len` bytes, borrowed, not NUL-terminated; NULL or
 * length 0 means no salt, like the engine's default).
 * Returns 0, or SY_EINVAL when block_size is 0 or salt is NULL with
 * salt_len > 0. */
int sy_blockhash_params_init(struct sy_blockhash_params *p, uint32_t block_size,
			     bool bigram, const void *salt, size_t salt_len);

/* Writes SHA-256("sglang-cache-salt-v1" ‖ 0x00 ‖ salt[0..salt_len)) to
 * `out`. Computes the value for any length; callers decide that an empty
 * salt means "no seed" (sy_blockhash_params_init() does). */
void sy_blockhash_salt_seed(const void *salt, size_t salt_len,
			    struct sy_blockhash_digest *out);

/* Namespaces (switchyard's own, not an engine format; docs/statebus.md
 * "vLLM engines"). Blocks of a LoRA adapter live in their own chain: its
 * first page's "previous digest" is the seed
 *   SHA-256("switchyard-lora-v1" ‖ 0x00 ‖ adapter name bytes)
 * so the same tokens under two adapters (or none) never share an id. A
 * router hashing a request for adapter `name` sets params.seed to this
 * value (has_seed). Writes the seed of the `len` bytes at `name` (borrowed;
 * may be NULL when len is 0) to `out`. */
void sy_blockhash_lora_seed(const void *name, size_t len, struct sy_blockhash_digest *out);

/* Folds engine-side extra keys of one page (multimodal hashes, cache salt,
 * prompt-embedding hashes: opaque bytes) into that page's digest:
 *   out = SHA-256(d ‖ "switchyard-extra-v1" ‖ 0x00 ‖ bytes)
 * The chain continues from `out`, so every later page is in the folded
 * namespace too. `out` may alias `d`; `bytes` may be NULL when len is 0. */
void sy_blockhash_fold(const struct sy_blockhash_digest *d, const void *bytes, size_t len,
		       struct sy_blockhash_digest *out);

/* Number of pages for `n_tokens` tokens: ceil(n / block_size) in unigram
 * mode, ceil((n − 1) / block_size) in bigram mode (0 when n < 2).
 * Returns 0 when block_size is 0. */
size_t sy_blockhash_count(size_t n_tokens, uint32_t block_size, bool bigram);

/* Hashes the chain of `n` tokens (`tokens` borrowed; may be NULL when n is 0)
 * under `p`. Writes one id per page to ids[0..pages) and, when `digests` is
 * not NULL, the full digest per page to digests[0..pages) (both arrays hold
 * `cap` entries, caller-owned).
 * Returns the number of pages (sy_blockhash_count()), or a negative sy_err:
 * SY_EINVAL (p NULL, block_size 0, tokens NULL with n > 0, ids NULL with
 * cap > 0), SY_ENOSPC (cap < pages; nothing is hashed or written). */
ssize_t sy_blockhash_chain(const uint32_t *tokens, size_t n,
			   const struct sy_blockhash_params *p, int64_t *ids,
			   size_t cap, struct sy_blockhash_digest *digests);

/* One step of the chain: hashes one page of `n_units` units into `out`.
 * `prev` is the previous page's digest (or the seed), NULL for an unseeded
 * first page. `tokens` holds n_units tokens (unigram) or n_units + 1 tokens
 * (bigram: unit j is tokens[j], tokens[j+1]); it may be NULL when n_units is
 * 0, which hashes `prev` alone (SHA-256 of nothing when prev is NULL).
 * `out` may alias `prev`. The building block for a per-process digest memo
 * keyed by (prev digest, page tokens). */
void sy_blockhash_page(const struct sy_blockhash_digest *prev,
		       const uint32_t *tokens, size_t n_units, bool bigram,
		       struct sy_blockhash_digest *out);

/* The published block id of `d`: its first 8 bytes read big-endian as a
 * two's-complement signed 64-bit integer (SGLang `hash_str_to_int64`). */
static inline int64_t sy_blockhash_id(const struct sy_blockhash_digest *d)
{
	uint64_t u = 0;
	for (int i = 0; i < 8; i++)
		u = (u << 8) | d->b[i];
	int64_t v;
	__builtin_memcpy(&v, &u, sizeof v); /* defined two's-complement reinterpretation */
	return v;
}

#endif
