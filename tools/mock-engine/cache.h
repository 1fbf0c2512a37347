/* cache.h — prefix cache model of one DP rank: a radix tree of KV pages.
 *
 * A page is `block_size` tokens (bigram mode: units) identified by its
 * SGLang block hash. Because each hash chains over every page before it, the
 * hash alone names a tree position, so the tree is a hash map of nodes with
 * parent links and child counts. Capacity is `capacity_tokens / block_size`
 * pages, all allocated at creation. Only whole pages are cached (as SGLang
 * with page_size > 1 keeps only page-aligned keys).
 *
 * Life of a request: acquire (longest cached prefix, touched and locked) →
 * insert the rest after prefill (evicting least-recently-used unlocked
 * leaves first, all evictions before the stores) → release when finished.
 * Every eviction is recorded as BlockRemoved and every new page as
 * BlockStored (parent = previous page's hash, nil at the root) into the
 * caller's kvev batch, which coalesces them as SGLang does (§8).
 *
 * Invariant: a node is never more recently used than its ancestors (paths are
 * touched leaf first), so the LRU end of the list is always a leaf or
 * locked; eviction walks it from the LRU end skipping locked/inner nodes.
 */
#ifndef SY_MOCK_CACHE_H
#define SY_MOCK_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "tools/mock-engine/kvev.h"

struct mock_cache;

/* Creates an empty cache of `capacity_tokens` (rounded down to whole pages)
 * with `block_size` tokens per page. Returns NULL when out of memory or when
 * block_size is 0. */
struct mock_cache *mock_cache_create(size_t capacity_tokens, uint32_t block_size);

void mock_cache_destroy(struct mock_cache *c);

/* Number of leading pages of `hashes[0..n)` that are cached. No side effects. */
size_t mock_cache_match(const struct mock_cache *c, const int64_t *hashes, size_t n);

/* Like match, then touches and locks those pages. Returns the count locked. */
size_t mock_cache_acquire(struct mock_cache *c, const int64_t *hashes, size_t n);

/* Inserts pages `hashes[locked..n)` after the `locked` pages the caller holds,
 * evicting LRU unlocked leaves as needed, and locks them. Pages already
 * present (inserted meanwhile by another request) are locked without an
 * event. `page_tokens` holds the token ids of page i at
 * [i*tokens_per_page, (i+1)*tokens_per_page) for the BlockStored events.
 * Stops early when every cached page is locked. Returns the new locked
 * count (≥ locked). Events go to `ev` (may be NULL). */
size_t mock_cache_insert(struct mock_cache *c, const int64_t *hashes, size_t n, size_t locked,
			 const uint32_t *page_tokens, size_t tokens_per_page,
			 struct kvev_batch *ev);

/* Unlocks the first `locked` pages of `hashes` (held by acquire/insert). */
void mock_cache_release(struct mock_cache *c, const int64_t *hashes, size_t locked);

/* Drops every page (SGLang /flush_cache) and records AllBlocksCleared into
 * `ev` (may be NULL). Returns 0, or SY_EBUSY (nothing changed) while pages
 * are locked by running requests. */
int mock_cache_clear(struct mock_cache *c, struct kvev_batch *ev);

/* Pages cached now, and the capacity in pages. */
size_t mock_cache_pages(const struct mock_cache *c);
size_t mock_cache_capacity_pages(const struct mock_cache *c);

#endif
