/* digest_memo.c — per-process prefix-key → digest memo (digest_memo.h,
 * DESIGN.md §8).
 *
 * Prefix keys: every page k of a chain gets a 128-bit key that stands for
 * the whole prefix up to and including page k,
 *
 *   key[-1] = XXH3-128(mode: block size, bigram, seed flag and seed digest)
 *   key[k]  = key[k−1] × C + XXH3-128(page k's token bytes)   (mod 2^128)
 *
 * with the per-process random XXH3 seed and odd multiplier C. The page
 * hashes are independent of each other (pipelined, inlined XXH3 of 64
 * bytes for 16-token pages), and the chaining step is one 128-bit
 * multiply-add, so a repeated 4,096-token prompt costs 256 short hashes,
 * 256 multiply-adds and 256 table probes — no SHA-256 and no 32-byte parent
 * compares. Two different prefixes get the same key only if their page
 * hashes satisfy a polynomial identity in the secret C (C is odd, so the
 * last differing page's hash difference is multiplied by an invertible
 * factor: for unpredictable page hashes the chance is ~2^-128 per pair).
 *
 * Table: 2^k entries in 4-way sets. The four keys of a set fill one cache
 * line (a probe reads one line, plus the digest's half line on a hit);
 * digests and LRU stamps live in parallel arrays: 52 bytes per entry. A
 * chunk's keys are computed first and their set lines prefetched, then the
 * chunk is probed in order. A miss hashes the page with sy_blockhash_page()
 * from the previous page's digest and stores it over the set's least
 * recently used way (a per-table tick stamps every use). Key (0, 0) marks
 * an empty way (a computed key of 0 is stored as (1, 0)).
 */
#include "router/policies/cache/digest_memo.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "common/errors.h"

#define WAYS 4
#define MIN_ENTRIES 64
#define MAX_ENTRIES (1u << 26)
#define CHUNK 32 /* pages whose keys are computed (and set lines prefetched) ahead */
#define PROMPT_PER_ENTRIES 256 /* one whole-prompt record per this many entries */
#define PROMPT_MAX_PAGES 1024  /* longer prompts skip the prompt shortcut */

/* One set's keys: WAYS × (lo, hi) in one cache line; (0, 0) = empty. */
struct dm_set {
	uint64_t key[WAYS][2];
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct dm_set) == 64, "a set's keys fill one cache line");

/* A whole prompt seen before: its key and its ids (the prompt shortcut). */
struct dm_prompt {
	uint64_t lo, hi;  /* XXH3-128 of (mode key, token bytes); (0, 0) = empty */
	size_t n;         /* tokens */
	size_t pages;
	int64_t *ids;     /* pages ids, PROMPT_MAX_PAGES allocated */
};

struct digest_memo {
	struct dm_set *sets;              /* sets (mask_sets + 1) */
	struct sy_blockhash_digest *dig;  /* entries: set × WAYS + way */
	uint32_t *stamp;                  /* entries: last use */
	size_t mask_sets;                 /* sets − 1 */
	uint64_t seed;                    /* XXH3 seed */
	unsigned __int128 mul;            /* C: odd */
	uint32_t tick;
	struct dm_prompt *prompts;        /* whole-prompt records (mask_prompts + 1) */
	size_t mask_prompts;
	struct digest_memo_stats st;
};

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

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
	m->sets = aligned_alloc(64, n / WAYS * sizeof(*m->sets));
	m->dig = malloc(n * sizeof(*m->dig));
	m->stamp = calloc(n, sizeof(*m->stamp));
	if (m->sets == NULL || m->dig == NULL || m->stamp == NULL) {
		digest_memo_destroy(m);
		return SY_ENOMEM;
	}
	memset(m->sets, 0, n / WAYS * sizeof(*m->sets));
	size_t np = n / PROMPT_PER_ENTRIES ? n / PROMPT_PER_ENTRIES : 1;
	if ((m->prompts = calloc(np, sizeof(*m->prompts))) == NULL) {
		digest_memo_destroy(m);
		return SY_ENOMEM;
	}
	m->mask_prompts = np - 1;
	m->mask_sets = n / WAYS - 1;
	if (getrandom(&m->seed, sizeof(m->seed), GRND_NONBLOCK) != (ssize_t)sizeof(m->seed)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		m->seed = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15u ^ (uint64_t)ts.tv_sec;
	}
	uint64_t x = m->seed;
	uint64_t hi = splitmix(&x), lo = splitmix(&x);
	m->mul = ((unsigned __int128)hi << 64 | lo) | 1u;
	m->st.entries = n;
	*out = m;
	return SY_OK;
}

void digest_memo_destroy(struct digest_memo *m)
{
	if (m == NULL)
		return;
	if (m->prompts != NULL)
		for (size_t i = 0; i <= m->mask_prompts; i++)
			free(m->prompts[i].ids);
	free(m->prompts);
	free(m->sets);
	free(m->dig);
	free(m->stamp);
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

static inline unsigned __int128 u128(XXH128_hash_t h)
{
	return (unsigned __int128)h.high64 << 64 | h.low64;
}

/* key[-1]: the chain's mode (block size, bigram, seed). */
static unsigned __int128 mode_key(const struct digest_memo *m, const struct sy_blockhash_params *p)
{
	struct {
		uint32_t block_size;
		uint8_t bigram, has_seed, pad[2];
		uint8_t seed[SY_BLOCKHASH_DIGEST_LEN];
	} k;
	memset(&k, 0, sizeof(k));
	k.block_size = p->block_size;
	k.bigram = p->bigram;
	k.has_seed = p->has_seed;
	if (p->has_seed)
		memcpy(k.seed, p->seed.b, sizeof(k.seed));
	return u128(XXH3_128bits_withSeed(&k, sizeof(k), m->seed));
}

/* The published id of a digest (sy_blockhash_id) without the byte loop. */
static inline int64_t digest_id(const struct sy_blockhash_digest *d)
{
	uint64_t u;
	memcpy(&u, d->b, sizeof(u));
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	u = __builtin_bswap64(u);
#endif
	int64_t v;
	memcpy(&v, &u, sizeof(v));
	return v;
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
	unsigned __int128 key = mode_key(m, p);

	/* the prompt shortcut: the same tokens in the same mode again */
	struct dm_prompt *pr = NULL;
	uint64_t plo = 0, phi = 0;
	if (pages <= PROMPT_MAX_PAGES) {
		XXH128_hash_t h = XXH3_128bits_withSeed(tokens, n * sizeof(uint32_t),
							 m->seed ^ (uint64_t)(key >> 64) ^ (uint64_t)key);
		plo = h.low64 | 1u; /* never (0, 0) */
		phi = h.high64;
		pr = &m->prompts[(size_t)(phi ^ phi >> 31) & m->mask_prompts];
		if (pr->lo == plo && pr->hi == phi && pr->n == n && pr->pages == pages) {
			memcpy(ids, pr->ids, pages * sizeof(*ids));
			m->st.hits += pages;
			m->st.prompt_hits++;
			return (ssize_t)pages;
		}
	}

	const struct sy_blockhash_digest *prev = p->has_seed ? &p->seed : NULL;
	struct sy_blockhash_digest d;
	uint64_t klo[CHUNK], khi[CHUNK];
	size_t kset[CHUNK];
	for (size_t base = 0; base < pages; base += CHUNK) {
		size_t end = pages - base < CHUNK ? pages : base + CHUNK;
		/* keys of the chunk; prefetch their sets */
		for (size_t k = base; k < end; k++) {
			size_t off = k * bs;
			size_t nu = units - off < bs ? units - off : bs;
			size_t bytes = (nu + (p->bigram && nu > 0 ? 1 : 0)) * sizeof(uint32_t);
			key = key * m->mul + u128(XXH3_128bits_withSeed(tokens + off, bytes, m->seed));
			uint64_t lo = (uint64_t)key, hi = (uint64_t)(key >> 64);
			if ((lo | hi) == 0)
				lo = 1;
			klo[k - base] = lo;
			khi[k - base] = hi;
			size_t set = (size_t)(hi ^ hi >> 29) & m->mask_sets;
			kset[k - base] = set;
			__builtin_prefetch(&m->sets[set], 0, 3);
		}
		/* probe in order */
		for (size_t k = base; k < end; k++) {
			size_t set = kset[k - base];
			uint64_t lo = klo[k - base], hi = khi[k - base];
			struct dm_set *s = &m->sets[set];
			size_t e0 = set * WAYS;
			m->tick++;
			int w;
			for (w = 0; w < WAYS; w++)
				if (s->key[w][0] == lo && s->key[w][1] == hi)
					break;
			if (w < WAYS) {
				m->stamp[e0 + (size_t)w] = m->tick;
				prev = &m->dig[e0 + (size_t)w];
				ids[k] = digest_id(prev);
				m->st.hits++;
				continue;
			}
			/* miss: hash the page, store it over the set's LRU way */
			size_t off = k * bs;
			size_t nu = units - off < bs ? units - off : bs;
			sy_blockhash_page(prev, tokens + off, nu, p->bigram, &d);
			m->st.misses++;
			int v = 0;
			for (w = 0; w < WAYS; w++) {
				if ((s->key[w][0] | s->key[w][1]) == 0) {
					v = w;
					break;
				}
				if ((int32_t)(m->stamp[e0 + (size_t)w] - m->stamp[e0 + (size_t)v]) < 0)
					v = w;
			}
			if (w == WAYS)
				m->st.evictions++;
			s->key[v][0] = lo;
			s->key[v][1] = hi;
			m->dig[e0 + (size_t)v] = d;
			m->stamp[e0 + (size_t)v] = m->tick;
			prev = &m->dig[e0 + (size_t)v];
			ids[k] = digest_id(prev);
		}
	}
	if (pr != NULL) {
		if (pr->ids == NULL)
			pr->ids = malloc(PROMPT_MAX_PAGES * sizeof(*pr->ids));
		if (pr->ids != NULL) { /* out of memory: no record, nothing else changes */
			memcpy(pr->ids, ids, pages * sizeof(*ids));
			pr->lo = plo;
			pr->hi = phi;
			pr->n = n;
			pr->pages = pages;
		}
	}
	return (ssize_t)pages;
}
