/* digest_memo.c — per-process (parent digest, page hash) → digest memo
 * (digest_memo.h, DESIGN.md §8).
 *
 * Table: 2^k entries in sets of WAYS; the set of a page is picked by mixing
 * 8 bytes of the parent digest (uniform: it is SHA-256 output) with the low
 * half of the page's XXH3-128; a lookup compares the full key (page hash,
 * parent digest, unit count, flags) of the set's ways. A miss hashes the
 * page with sy_blockhash_page() and stores it over the least recently used
 * way (a per-table tick stamps every use).
 */
#include "router/policies/digest_memo.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <xxhash.h>

#include "common/errors.h"

#define WAYS 4
#define MIN_ENTRIES 64
#define MAX_ENTRIES (1u << 26)

#define F_VALID 1u
#define F_PARENT 2u
#define F_BIGRAM 4u

struct dm_entry {
	uint64_t page_lo, page_hi;             /* XXH3-128 of the page's token bytes */
	struct sy_blockhash_digest parent;     /* valid with F_PARENT */
	struct sy_blockhash_digest digest;     /* the page digest */
	uint32_t stamp;                        /* last use (LRU within the set) */
	uint16_t n_units;
	uint16_t flags;
};

struct digest_memo {
	struct dm_entry *e;
	size_t mask_sets; /* sets − 1 */
	uint64_t seed;
	uint32_t tick;
	struct digest_memo_stats st;
};

int digest_memo_create(size_t entries, struct digest_memo **out)
{
	*out = NULL;
	if (entries == 0)
		entries = DIGEST_MEMO_DEFAULT_ENTRIES;
	if (entries > MAX_ENTRIES)
		return SY_ERANGE;
	size_t n = MIN_ENTRIES;
	while (n < entries)
		n <<= 1;
	struct digest_memo *m = calloc(1, sizeof(*m));
	if (m == NULL)
		return SY_ENOMEM;
	m->e = calloc(n, sizeof(*m->e));
	if (m->e == NULL) {
		free(m);
		return SY_ENOMEM;
	}
	m->mask_sets = n / WAYS - 1;
	if (getrandom(&m->seed, sizeof(m->seed), GRND_NONBLOCK) != (ssize_t)sizeof(m->seed)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		m->seed = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15u ^ (uint64_t)ts.tv_sec;
	}
	m->st.entries = n;
	*out = m;
	return SY_OK;
}

void digest_memo_destroy(struct digest_memo *m)
{
	if (m == NULL)
		return;
	free(m->e);
	free(m);
}

void digest_memo_get_stats(const struct digest_memo *m, struct digest_memo_stats *out)
{
	if (m == NULL) {
		memset(out, 0, sizeof(*out));
		return;
	}
	*out = m->st;
}

/* Digest of one page through the memo. */
static void page(struct digest_memo *m, const struct sy_blockhash_digest *prev,
		 const uint32_t *t, size_t nu, bool bigram, struct sy_blockhash_digest *out)
{
	size_t bytes = (nu + (bigram && nu > 0 ? 1 : 0)) * sizeof(uint32_t);
	XXH128_hash_t h = XXH3_128bits_withSeed(t, bytes, m->seed);
	uint16_t flags = (uint16_t)(F_VALID | (prev ? F_PARENT : 0) | (bigram ? F_BIGRAM : 0));
	uint64_t p8 = 0;
	if (prev)
		memcpy(&p8, prev->b + 8, sizeof(p8));
	size_t set = (size_t)((h.low64 ^ p8) * 0x9e3779b97f4a7c15u >> 32) & m->mask_sets;
	struct dm_entry *s = &m->e[set * WAYS];
	struct dm_entry *victim = &s[0];

	m->tick++;
	for (int w = 0; w < WAYS; w++) {
		struct dm_entry *e = &s[w];
		if (e->page_lo == h.low64 && e->page_hi == h.high64 && e->flags == flags &&
		    e->n_units == nu &&
		    (!prev || memcmp(e->parent.b, prev->b, SY_BLOCKHASH_DIGEST_LEN) == 0)) {
			e->stamp = m->tick;
			*out = e->digest;
			m->st.hits++;
			return;
		}
		if (!(e->flags & F_VALID) ||
		    ((victim->flags & F_VALID) && (int32_t)(e->stamp - victim->stamp) < 0))
			victim = e;
	}
	struct sy_blockhash_digest d;
	sy_blockhash_page(prev, t, nu, bigram, &d);
	m->st.misses++;
	if (victim->flags & F_VALID)
		m->st.evictions++;
	victim->page_lo = h.low64;
	victim->page_hi = h.high64;
	if (prev)
		victim->parent = *prev;
	else
		memset(&victim->parent, 0, sizeof(victim->parent));
	victim->digest = d;
	victim->stamp = m->tick;
	victim->n_units = (uint16_t)nu;
	victim->flags = flags;
	*out = d;
}

ssize_t digest_memo_chain(struct digest_memo *m, const uint32_t *tokens, size_t n,
			  const struct sy_blockhash_params *p, int64_t *ids, size_t cap)
{
	if (m == NULL || p == NULL || p->block_size > UINT16_MAX)
		return sy_blockhash_chain(tokens, n, p, ids, cap, NULL);
	if (p->block_size == 0 || (!tokens && n) || (!ids && cap))
		return SY_EINVAL;
	size_t pages = sy_blockhash_count(n, p->block_size, p->bigram);
	if (pages > cap)
		return SY_ENOSPC;
	if (pages == 0)
		return 0;

	size_t units = p->bigram ? n - 1 : n;
	size_t bs = p->block_size;
	struct sy_blockhash_digest cur;
	const struct sy_blockhash_digest *prev = p->has_seed ? &p->seed : NULL;
	for (size_t k = 0, off = 0; k < pages; k++, off += bs) {
		size_t nu = units - off < bs ? units - off : bs;
		page(m, prev, tokens + off, nu, p->bigram, &cur);
		ids[k] = sy_blockhash_id(&cur);
		prev = &cur;
	}
	return (ssize_t)pages;
}
