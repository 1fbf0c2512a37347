/* vllm.c — vLLM block re-hashing and the engine id → own id map (vllm.h).
 *
 * The map: entries 1..cap of a fixed pool; a chained hash table keyed by
 * mix(worker, rank, key); a free list through hnext; one doubly linked LRU
 * list (head = least recently stored). Invariants: an entry with tiers ≠ 0
 * is in exactly one bucket chain and in the LRU list; a free entry is in
 * neither and is on the free list (or above hw, never used).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/errors.h"
#include "common/mpcursor.h"
#include "vllm.h"

_Static_assert(sizeof(struct sbd_vmap_entry) == 64, "one cache line per mapped block");

static uint32_t mix(uint32_t worker, uint32_t rank, int64_t key, uint32_t mask)
{
	uint64_t x = (uint64_t)key ^ ((uint64_t)worker << 48) ^ ((uint64_t)rank << 32);
	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 33;
	x *= UINT64_C(0xc4ceb9fe1a85ec53);
	x ^= x >> 33;
	return (uint32_t)x & mask;
}

int sbd_vmap_init(struct sbd_vmap *m, uint32_t cap)
{
	memset(m, 0, sizeof(*m));
	if (cap == 0 || cap > (1u << 26))
		return SY_EINVAL;
	uint32_t nb = 1;
	while (nb < cap)
		nb <<= 1;
	m->e = calloc((size_t)cap + 1, sizeof(*m->e));
	m->buckets = calloc(nb, sizeof(*m->buckets));
	if (m->e == NULL || m->buckets == NULL) {
		sbd_vmap_free(m);
		return SY_ENOMEM;
	}
	m->cap = cap;
	m->mask = nb - 1;
	return SY_OK;
}

void sbd_vmap_free(struct sbd_vmap *m)
{
	free(m->e);
	free(m->buckets);
	memset(m, 0, sizeof(*m));
}

double sbd_vmap_bytes_per_block(const struct sbd_vmap *m)
{
	if (m->cap == 0)
		return 0;
	return (double)sizeof(struct sbd_vmap_entry) +
	       (double)(m->mask + 1) * sizeof(uint32_t) / (double)m->cap;
}

struct sbd_vmap_entry *sbd_vmap_find(struct sbd_vmap *m, uint32_t worker, uint32_t rank,
				     int64_t key)
{
	if (m->cap == 0)
		return NULL;
	uint32_t i = m->buckets[mix(worker, rank, key, m->mask)];
	for (uint32_t steps = 0; i != 0 && steps < m->cap; steps++) {
		struct sbd_vmap_entry *e = &m->e[i];
		if (e->key == key && e->worker == worker && e->rank == rank)
			return e;
		i = e->hnext;
	}
	return NULL;
}

static void lru_unlink(struct sbd_vmap *m, uint32_t i)
{
	struct sbd_vmap_entry *e = &m->e[i];
	if (e->lru_prev)
		m->e[e->lru_prev].lru_next = e->lru_next;
	else
		m->lru_head = e->lru_next;
	if (e->lru_next)
		m->e[e->lru_next].lru_prev = e->lru_prev;
	else
		m->lru_tail = e->lru_prev;
	e->lru_prev = e->lru_next = 0;
}

static void lru_append(struct sbd_vmap *m, uint32_t i)
{
	struct sbd_vmap_entry *e = &m->e[i];
	e->lru_prev = m->lru_tail;
	e->lru_next = 0;
	if (m->lru_tail)
		m->e[m->lru_tail].lru_next = i;
	else
		m->lru_head = i;
	m->lru_tail = i;
}

/* Unlinks entry i from its bucket chain and the LRU, and frees it. */
static void release(struct sbd_vmap *m, uint32_t i)
{
	struct sbd_vmap_entry *e = &m->e[i];
	uint32_t *link = &m->buckets[mix(e->worker, e->rank, e->key, m->mask)];
	while (*link != 0 && *link != i)
		link = &m->e[*link].hnext;
	if (*link == i)
		*link = e->hnext;
	lru_unlink(m, i);
	memset(e, 0, sizeof(*e));
	e->hnext = m->free_head;
	m->free_head = i;
	m->used--;
}

struct sbd_vmap_entry *sbd_vmap_put(struct sbd_vmap *m, uint32_t worker, uint32_t rank,
				    int64_t key, const struct sy_blockhash_digest *digest,
				    uint32_t tiers)
{
	struct sbd_vmap_entry *e = sbd_vmap_find(m, worker, rank, key);
	if (e != NULL) {
		uint32_t i = (uint32_t)(e - m->e);
		e->digest = *digest;
		e->tiers |= (uint8_t)tiers;
		lru_unlink(m, i);
		lru_append(m, i);
		return e;
	}
	uint32_t i;
	if (m->free_head != 0) {
		i = m->free_head;
		m->free_head = m->e[i].hnext;
	} else if (m->hw < m->cap) {
		i = ++m->hw;
	} else {
		uint32_t old = m->lru_head; /* full: the oldest entry goes */
		if (m->on_evict)
			m->on_evict(m->evict_ctx, &m->e[old]);
		m->evictions++;
		release(m, old);
		i = m->free_head;
		m->free_head = m->e[i].hnext;
	}
	e = &m->e[i];
	memset(e, 0, sizeof(*e));
	e->key = key;
	e->digest = *digest;
	e->worker = (uint16_t)worker;
	e->rank = (uint16_t)rank;
	e->tiers = (uint8_t)tiers;
	uint32_t *head = &m->buckets[mix(worker, rank, key, m->mask)];
	e->hnext = *head;
	*head = i;
	lru_append(m, i);
	m->used++;
	return e;
}

uint32_t sbd_vmap_remove_tiers(struct sbd_vmap *m, struct sbd_vmap_entry *e, uint32_t tiers)
{
	e->tiers &= (uint8_t)~tiers;
	uint32_t left = e->tiers;
	if (left == 0)
		release(m, (uint32_t)(e - m->e));
	return left;
}

uint32_t sbd_vmap_clear(struct sbd_vmap *m, uint32_t worker, uint32_t rank)
{
	uint32_t n = 0;
	for (uint32_t i = 1; i <= m->hw; i++) {
		struct sbd_vmap_entry *e = &m->e[i];
		if (e->tiers == 0)
			continue;
		if (worker != UINT32_MAX && (e->worker != worker ||
					     (rank != UINT32_MAX && e->rank != rank)))
			continue;
		release(m, i);
		n++;
	}
	return n;
}

/* ---------------------------------------------------------------- rehash */

void sbd_vllm_scratch_free(struct sbd_vllm_scratch *s)
{
	free(s->ids);
	free(s->dg);
	free(s->xbuf);
	memset(s, 0, sizeof(*s));
}

/* Copies the elements of one extra_keys entry (cursor at it) other than a
 * string equal to the adapter name into s->xbuf; *len their byte count.
 * nil → 0 bytes. Returns false on a wrong shape. */
static bool extra_of_block(struct sy_cursor *c, const struct sbd_kv_event *e,
			   struct sbd_vllm_scratch *s, size_t *len)
{
	*len = 0;
	if (sy_mp_peek(c) == SY_MP_NIL)
		return sy_mp_read_nil(c);
	uint32_t n;
	if (!sy_mp_read_array(c, &n))
		return false;
	for (uint32_t j = 0; j < n; j++) {
		const uint8_t *start = c->pos;
		if (sy_mp_peek(c) == SY_MP_STR && e->has_lora_name) {
			struct sy_cursor probe = *c;
			const uint8_t *p;
			uint32_t l;
			if (sy_mp_read_str(&probe, &p, &l) && l == e->lora_name_len &&
			    memcmp(p, e->lora_name, l) == 0) {
				*c = probe; /* the adapter name: already the namespace root */
				continue;
			}
		}
		if (!sy_mp_skip(c))
			return false;
		size_t el = (size_t)(c->pos - start);
		if (sy_grow((void **)&s->xbuf, &s->xbuf_cap, *len + el, 1))
			return false;
		memcpy(s->xbuf + *len, start, el);
		*len += el;
	}
	return true;
}

int sbd_vllm_rehash(struct sbd_vmap *m, struct sbd_vllm_scratch *s, uint32_t worker,
		    uint32_t rank, const struct sbd_kv_event *e, uint32_t block_size,
		    uint32_t tiers, struct sbd_vllm_store *out)
{
	memset(out, 0, sizeof(*out));
	if (m->cap == 0 || block_size == 0 || tiers == 0 || e->type != SBD_EV_STORED)
		return SY_EINVAL;
	if (e->group_idx > 0)
		return SBD_VLLM_OTHER_GROUP;
	if (e->tokens_dropped || e->n_tokens == 0 || e->tokens == NULL)
		return SBD_VLLM_NO_TOKENS;
	if (e->tokens_paired || (e->block_size >= 0 && (uint64_t)e->block_size != block_size) ||
	    (uint64_t)e->n_tokens != (uint64_t)e->n_hashes * block_size)
		return SBD_VLLM_TOKENS_MISMATCH;
	struct sy_blockhash_digest prev;
	bool has_prev = false;
	if (e->has_parent) {
		const struct sbd_vmap_entry *pe = sbd_vmap_find(m, worker, rank, e->parent);
		if (pe == NULL)
			return SBD_VLLM_PARENT_UNKNOWN;
		prev = pe->digest; /* copied: the puts below may evict it */
		has_prev = true;
		out->has_parent = true;
		out->parent = sy_blockhash_id(&prev);
	} else if (e->has_lora_name) {
		sy_blockhash_lora_seed(e->lora_name, e->lora_name_len, &prev);
		has_prev = true;
	} else if (e->has_lora_id) {
		char name[40];
		int l = snprintf(name, sizeof(name), "lora_id:%lld", (long long)e->lora_id);
		sy_blockhash_lora_seed(name, (size_t)l, &prev);
		has_prev = true;
	}
	struct sy_cursor xc = sy_cursor_init(e->extra_keys, e->extra_keys ? e->extra_keys_len : 0);
	if (e->extra_keys != NULL) {
		uint32_t nx;
		if (!sy_mp_read_array(&xc, &nx) || nx != e->n_hashes)
			return SBD_VLLM_BAD_EXTRA;
	}
	uint32_t n = e->n_hashes < m->cap ? e->n_hashes : m->cap;
	if (sy_grow((void **)&s->ids, &s->ids_cap, n ? n : 1, sizeof(int64_t)) ||
	    sy_grow((void **)&s->dg, &s->dg_cap, n ? n : 1, sizeof(*s->dg)))
		return SY_ENOMEM;
	/* Hash first (no map change on a bad extra_keys entry), then map. */
	struct sy_blockhash_digest *dg = s->dg;
	for (uint32_t i = 0; i < n; i++) {
		sy_blockhash_page(has_prev ? &prev : NULL, e->tokens + (size_t)i * block_size,
				  block_size, false, &dg[i]);
		if (e->extra_keys != NULL) {
			size_t xl;
			if (!extra_of_block(&xc, e, s, &xl))
				return SBD_VLLM_BAD_EXTRA;
			if (xl > 0)
				sy_blockhash_fold(&dg[i], s->xbuf, xl, &dg[i]);
		}
		prev = dg[i];
		has_prev = true;
		s->ids[i] = sy_blockhash_id(&dg[i]);
	}
	for (uint32_t i = 0; i < n; i++)
		sbd_vmap_put(m, worker, rank, e->hashes[i], &dg[i], tiers);
	out->ids = s->ids;
	out->n = n;
	return SBD_VLLM_OK;
}

int sbd_vllm_remove(struct sbd_vmap *m, struct sbd_vllm_scratch *s, uint32_t worker,
		    uint32_t rank, const struct sbd_kv_event *e, uint32_t tiers,
		    const int64_t **ids, uint32_t *n, uint32_t *unknown)
{
	*ids = NULL;
	*n = 0;
	*unknown = 0;
	if (e->group_idx > 0)
		return SBD_VLLM_OTHER_GROUP;
	if (sy_grow((void **)&s->ids, &s->ids_cap, e->n_hashes ? e->n_hashes : 1, sizeof(int64_t)))
		return SY_ENOMEM;
	uint32_t k = 0;
	for (uint32_t i = 0; i < e->n_hashes; i++) {
		struct sbd_vmap_entry *me = sbd_vmap_find(m, worker, rank, e->hashes[i]);
		if (me == NULL) {
			(*unknown)++;
			continue;
		}
		s->ids[k++] = sy_blockhash_id(&me->digest);
		sbd_vmap_remove_tiers(m, me, tiers);
	}
	*ids = s->ids;
	*n = k;
	return SBD_VLLM_OK;
}
