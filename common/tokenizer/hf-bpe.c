/* hf-bpe.c — byte-level BPE of one pre-token (HF tokenizers `BPE` model).
 *
 * A word starts as one symbol per byte (the ByteLevel alphabet has every
 * byte); the adjacent pair with the lowest merge rank is merged, the
 * leftmost one on ties, until no adjacent pair has a merge. That is the
 * order of HF's priority queue (rank, then position). With ignore_merges
 * (Llama 3) a word that is itself in the vocabulary is one token.
 *
 * Short words (≤ SMALL bytes, nearly all) keep the rank of every adjacent
 * pair in an array and rescan it per merge: O(n²) with tiny n, no
 * allocation. A word that is itself a vocabulary token whose own BPE gives
 * it back (HF_TOK_WHOLE, found once at load for every token) is one hash
 * lookup — most words of real text. Longer words (whitespace runs, base64, long numbers in
 * Llama's 3-digit split are short) use a linked list and a binary heap,
 * O(n log n). Both give the same result; the oracle tests cover both.
 *
 * Per-thread word caches (direct-mapped, keyed by the model's serial so a
 * reloaded model never sees stale entries; short words inline, long ones as
 * heap copies) skip BPE for repeated words; thread-local, so no locks and
 * nothing shared between threads. They live as long as the thread.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/tokenizer/hf-internal.h"

#define SMALL 64
#define NO_RANK UINT32_MAX

/* ---- word cache ---- */

#define CACHE_BITS 14
#define CACHE_WORD 22
#define CACHE_IDS 6
struct cache_entry {
	uint64_t serial;
	uint8_t len, nids;
	uint8_t word[CACHE_WORD];
	uint32_t ids[CACHE_IDS];
};
static __thread struct cache_entry *cache;
static __thread bool cache_failed;

/* words longer than CACHE_WORD (whitespace and punctuation runs, long
 * identifiers): fewer slots, heap copies */
#define LCACHE_BITS 10
#define LCACHE_MAX_WORD 65536
struct lcache_entry {
	uint64_t serial, hash;
	uint8_t *word;
	uint32_t *ids;
	uint32_t len, nids;
};
static __thread struct lcache_entry *lcache;

/* Frees the calling thread's caches at its exit (pthread key destructor;
 * thread-local storage is still valid while destructors run). */
static pthread_key_t cache_key;
static pthread_once_t cache_key_once = PTHREAD_ONCE_INIT;

static void caches_free(void *unused)
{
	(void)unused;
	if (lcache)
		for (size_t i = 0; i < (size_t)1 << LCACHE_BITS; i++) {
			free(lcache[i].word);
			free(lcache[i].ids);
		}
	free(lcache);
	free(cache);
	lcache = NULL;
	cache = NULL;
}

static void cache_key_create(void)
{
	pthread_key_create(&cache_key, caches_free);
}

static void caches_register(void)
{
	pthread_once(&cache_key_once, cache_key_create);
	pthread_setspecific(cache_key, (void *)1);
}

static struct lcache_entry *lcache_slot(uint64_t h)
{
	if (!lcache) {
		caches_register();
		if (cache_failed)
			return NULL;
		lcache = calloc((size_t)1 << LCACHE_BITS, sizeof *lcache);
		if (!lcache) {
			cache_failed = true;
			return NULL;
		}
	}
	return &lcache[h >> (64 - LCACHE_BITS)];
}

static void lcache_store(struct lcache_entry *e, uint64_t serial, uint64_t h,
			 const uint8_t *p, size_t n, const uint32_t *ids, size_t nids)
{
	uint8_t *w = malloc(n);
	uint32_t *d = malloc(nids * sizeof *d + 1);
	if (!w || !d) {
		free(w);
		free(d);
		return;
	}
	free(e->word);
	free(e->ids);
	memcpy(w, p, n);
	memcpy(d, ids, nids * sizeof *d);
	*e = (struct lcache_entry){serial, h, w, d, (uint32_t)n, (uint32_t)nids};
}

static struct cache_entry *cache_slot(const uint8_t *p, size_t n)
{
	if (!cache) {
		if (cache_failed)
			return NULL;
		caches_register();
		/* per thread, lives as long as the thread (≈ 1 MiB) */
		cache = calloc((size_t)1 << CACHE_BITS, sizeof *cache);
		if (!cache) {
			cache_failed = true;
			return NULL;
		}
	}
	uint64_t h = hf_hash_bytes(p, n);
	return &cache[h >> (64 - CACHE_BITS)];
}

/* ---- small words ---- */

static int bpe_small(const struct hf_model *m, const uint8_t *p, size_t n,
		     struct sy_tokens *out)
{
	uint32_t sym[SMALL], rank[SMALL], mid[SMALL];
	size_t cnt = n;
	for (size_t i = 0; i < n; i++)
		sym[i] = m->vocab.byte_id[p[i]];
	for (size_t i = 0; i + 1 < cnt; i++) {
		const struct hf_merge_slot *s = hf_merge_find(&m->merges, sym[i], sym[i + 1]);
		rank[i] = s ? s->rank : NO_RANK;
		mid[i] = s ? s->id : 0;
	}
	while (cnt > 1) {
		size_t best = 0;
		for (size_t i = 1; i + 1 < cnt; i++)
			if (rank[i] < rank[best])
				best = i;
		if (rank[best] == NO_RANK)
			break;
		sym[best] = mid[best];
		/* drop symbol best+1 and pair (best+1, best+2) */
		memmove(sym + best + 1, sym + best + 2, (cnt - best - 2) * sizeof *sym);
		if (best + 2 < cnt) {
			memmove(rank + best + 1, rank + best + 2, (cnt - best - 3) * sizeof *rank);
			memmove(mid + best + 1, mid + best + 2, (cnt - best - 3) * sizeof *mid);
		}
		cnt--;
		/* recompute the pairs around the new symbol */
		for (size_t i = best ? best - 1 : 0; i <= best && i + 1 < cnt; i++) {
			const struct hf_merge_slot *s = hf_merge_find(&m->merges, sym[i], sym[i + 1]);
			rank[i] = s ? s->rank : NO_RANK;
			mid[i] = s ? s->id : 0;
		}
	}
	return sy_tokens_append(out, sym, cnt);
}

/* ---- long words: linked list + heap ---- */

struct hnode {
	uint32_t rank, pos, left, right; /* pair (left id, right id) at symbol pos */
};

static bool hless(const struct hnode *a, const struct hnode *b)
{
	return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

static void hpush(struct hnode *h, size_t *hn, struct hnode x)
{
	size_t i = (*hn)++;
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (!hless(&x, &h[parent]))
			break;
		h[i] = h[parent];
		i = parent;
	}
	h[i] = x;
}

static struct hnode hpop(struct hnode *h, size_t *hn)
{
	struct hnode top = h[0], x = h[--*hn];
	size_t i = 0, n = *hn;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && hless(&h[c + 1], &h[c]))
			c++;
		if (!hless(&h[c], &x))
			break;
		h[i] = h[c];
		i = c;
	}
	if (n)
		h[i] = x;
	return top;
}

static int bpe_large(const struct hf_model *m, const uint8_t *p, size_t n,
		     struct sy_tokens *out)
{
	uint32_t *sym = malloc(n * sizeof *sym);
	uint32_t *next = malloc(n * sizeof *next), *prev = malloc(n * sizeof *prev);
	struct hnode *heap = malloc((3 * n + 1) * sizeof *heap); /* n-1 initial pairs + 2 per merge */
	int rc = SY_ENOMEM;
	if (!sym || !next || !prev || !heap)
		goto done;
	size_t hn = 0;
	for (size_t i = 0; i < n; i++) {
		sym[i] = m->vocab.byte_id[p[i]];
		next[i] = (uint32_t)(i + 1);
		prev[i] = (uint32_t)i - 1; /* UINT32_MAX for the first */
	}
	for (size_t i = 0; i + 1 < n; i++) {
		const struct hf_merge_slot *s = hf_merge_find(&m->merges, sym[i], sym[i + 1]);
		if (s)
			hpush(heap, &hn, (struct hnode){s->rank, (uint32_t)i, sym[i], sym[i + 1]});
	}
	while (hn) {
		struct hnode x = hpop(heap, &hn);
		uint32_t r = next[x.pos];
		/* stale: the left symbol was merged away or changed, or its right neighbour changed */
		if (sym[x.pos] != x.left || r >= n || sym[r] != x.right || prev[x.pos] == UINT32_MAX - 1)
			continue;
		const struct hf_merge_slot *s = hf_merge_find(&m->merges, x.left, x.right);
		sym[x.pos] = s->id;
		next[x.pos] = next[r];
		if (next[r] < n)
			prev[next[r]] = x.pos;
		prev[r] = UINT32_MAX - 1; /* r removed */
		sym[r] = HF_NO_ID;
		if (prev[x.pos] != UINT32_MAX) {
			uint32_t l = prev[x.pos];
			const struct hf_merge_slot *t = hf_merge_find(&m->merges, sym[l], sym[x.pos]);
			if (t)
				hpush(heap, &hn, (struct hnode){t->rank, l, sym[l], sym[x.pos]});
		}
		if (next[x.pos] < n) {
			uint32_t q = next[x.pos];
			const struct hf_merge_slot *t = hf_merge_find(&m->merges, sym[x.pos], sym[q]);
			if (t)
				hpush(heap, &hn, (struct hnode){t->rank, x.pos, sym[x.pos], sym[q]});
		}
	}
	size_t cnt = 0;
	for (uint32_t i = 0; i < n; i = next[i])
		sym[cnt++] = sym[i];
	rc = sy_tokens_append(out, sym, cnt);
done:
	free(sym);
	free(next);
	free(prev);
	free(heap);
	return rc;
}

int hf_bpe_merge(const struct hf_model *m, const uint8_t *p, size_t n,
		 struct sy_tokens *out)
{
	if (n == 0)
		return SY_OK;
	return n > SMALL ? bpe_large(m, p, n, out) : bpe_small(m, p, n, out);
}

int hf_bpe_mark_whole(struct hf_model *m)
{
	struct hf_vocab *v = &m->vocab;
	struct sy_tokens t = {0};
	for (uint32_t id = 0; id < v->n_ids; id++) {
		if ((v->flags[id] & (HF_TOK_PRESENT | HF_TOK_ADDED)) != HF_TOK_PRESENT)
			continue;
		sy_tokens_reset(&t);
		int rc = hf_bpe_merge(m, v->blob + v->span[id].off, v->span[id].len, &t);
		if (rc) {
			sy_tokens_free(&t);
			return rc;
		}
		if (t.len == 1 && t.ids[0] == id)
			v->flags[id] |= HF_TOK_WHOLE;
	}
	sy_tokens_free(&t);
	return SY_OK;
}

int hf_bpe_word(const struct hf_model *m, const uint8_t *p, size_t n,
		struct sy_tokens *out)
{
	if (n == 0)
		return SY_OK;
	if (n == 1)
		return sy_tokens_append(out, &m->vocab.byte_id[p[0]], 1);
	/* a word that is a vocabulary token BPE maps to itself: one lookup */
	uint32_t id = hf_vocab_find(&m->vocab, p, n);
	if (id != HF_NO_ID && (m->ignore_merges || (m->vocab.flags[id] & HF_TOK_WHOLE)))
		return sy_tokens_append(out, &id, 1);
	if (n > CACHE_WORD) {
		uint64_t h = n <= LCACHE_MAX_WORD ? hf_hash_bytes(p, n) : 0;
		struct lcache_entry *le = h ? lcache_slot(h) : NULL;
		if (le && le->serial == m->serial && le->hash == h && le->len == n &&
		    memcmp(le->word, p, n) == 0)
			return sy_tokens_append(out, le->ids, le->nids);
		size_t mark = out->len;
		int rc = n > SMALL ? bpe_large(m, p, n, out) : bpe_small(m, p, n, out);
		if (rc == SY_OK && le)
			lcache_store(le, m->serial, h, p, n, out->ids + mark, out->len - mark);
		return rc;
	}
	struct cache_entry *ce = cache_slot(p, n);
	if (ce && ce->serial == m->serial && ce->len == n && memcmp(ce->word, p, n) == 0)
		return sy_tokens_append(out, ce->ids, ce->nids);
	size_t mark = out->len;
	int rc = bpe_small(m, p, n, out);
	size_t got = out->len - mark;
	if (rc == SY_OK && ce && got <= CACHE_IDS) {
		ce->serial = m->serial;
		ce->len = (uint8_t)n;
		ce->nids = (uint8_t)got;
		memcpy(ce->word, p, n);
		memcpy(ce->ids, out->ids + mark, got * sizeof *ce->ids);
	}
	return rc;
}
