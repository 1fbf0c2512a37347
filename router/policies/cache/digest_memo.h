/* digest_memo.h — the per-process digest memo of prompt hashing
 * (DESIGN.md §8): (parent digest, cheap 128-bit hash of the page's tokens)
 * → page digest, so that the pages of a shared prefix skip SHA-256.
 *
 * The SGLang block-hash chain (common/blockhash.h) costs one SHA-256 per
 * page; requests that reach a cache-aware router share prefixes by nature
 * (system prompts, earlier turns), so most pages of most prompts were hashed
 * before by the same process. The memo keys page k by a 128-bit prefix key
 * standing for pages 0..k and the mode (block size, bigram, seed):
 * key[k] = key[k−1] × C + XXH3-128(page k's token bytes) mod 2^128, with a
 * per-process random XXH3 seed and odd C (getrandom), so crafted collisions
 * are impractical; a hit returns the stored digest. On top, a prompt
 * shortcut: XXH3-128 of the whole token array (and mode) → the ids of a
 * prompt seen before, so an exact repeat is one long hash and one copy.
 * A result equals sy_blockhash_chain()'s (test_cache_source.c checks it
 * page for page).
 *
 * Bounds and concurrency: a fixed table of `entries` (rounded up to a power
 * of two, ≥ 64) in 4-way sets (the set's keys in one cache line), least
 * recently used way replaced; 52 bytes per entry, plus one prompt record
 * per 256 entries (ids of prompts up to 1,024 pages, 8 KiB each once used);
 * allocated at creation or a record's first use, never grown. Process-local
 * and single-threaded (router processes have one event loop): no locks. A
 * generation (router/core/generation.h) owns one when it has a cache_aware group.
 */
#ifndef SY_ROUTER_POLICIES_DIGEST_MEMO_H
#define SY_ROUTER_POLICIES_DIGEST_MEMO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/blockhash.h"

#define DIGEST_MEMO_DEFAULT_ENTRIES 65536u /* ≈ 3.3 MiB (+ ≤ 2 MiB prompts): 256 prompts of 4k tokens */

struct digest_memo;

/* Counters since creation. */
struct digest_memo_stats {
	uint64_t hits;      /* pages served from the memo */
	uint64_t misses;    /* pages hashed with SHA-256 (and stored) */
	uint64_t evictions; /* stored pages that replaced a valid entry */
	uint64_t prompt_hits; /* chains served whole by the prompt shortcut */
	size_t entries;     /* table capacity */
};

/* Creates a memo of `entries` pages (0 = default). Errors: SY_ENOMEM,
 * SY_ERANGE (over 2^26 entries). */
int digest_memo_create(size_t entries, struct digest_memo **out);

/* Frees the memo. NULL is a no-op. */
void digest_memo_destroy(struct digest_memo *m);

/* sy_blockhash_chain() through the memo: same arguments, same results and
 * errors (digests not offered). m NULL hashes without a memo. */
ssize_t digest_memo_chain(struct digest_memo *m, const uint32_t *tokens, size_t n,
			  const struct sy_blockhash_params *p, int64_t *ids, size_t cap);

/* Copies the counters. */
void digest_memo_get_stats(const struct digest_memo *m, struct digest_memo_stats *out);

#endif
