/* cache.c — radix/LRU prefix cache model over SGLang page hashes.
 *
 * Data structure (see cache.h for the contract): a fixed pool of nodes, a
 * chained hash map keyed by page hash, and one doubly linked LRU list
 * (head = most recent). Touching a path moves its nodes to the head from
 * the leaf up to the root, which keeps every node older than its ancestors.
 */
#include "tools/mock-engine/cache.h"

#include <stdbool.h>
#include <stdlib.h>

#include "common/errors.h"

struct node {
	int64_t hash;
	struct node *parent;
	struct node *hnext;            /* hash chain, or free list when unused */
	struct node *prev, *next;      /* LRU list */
	uint32_t nchildren;
	uint32_t lock;
};

struct mock_cache {
	uint32_t block_size;
	size_t cap_pages, used;
	struct node *pool;
	struct node *free_list;
	struct node **buckets;
	size_t nbuckets;               /* power of two */
	struct node *head, *tail;      /* LRU: head newest, tail oldest */
};

static size_t bucket_of(const struct mock_cache *c, int64_t h)
{
	uint64_t x = (uint64_t)h * 0x9E3779B97F4A7C15ull;
	return (size_t)(x >> 32) & (c->nbuckets - 1);
}

static struct node *lookup(const struct mock_cache *c, int64_t h)
{
	for (struct node *n = c->buckets[bucket_of(c, h)]; n; n = n->hnext)
		if (n->hash == h)
			return n;
	return NULL;
}

static void lru_unlink(struct mock_cache *c, struct node *n)
{
	if (n->prev)
		n->prev->next = n->next;
	else
		c->head = n->next;
	if (n->next)
		n->next->prev = n->prev;
	else
		c->tail = n->prev;
	n->prev = n->next = NULL;
}

static void lru_push_head(struct mock_cache *c, struct node *n)
{
	n->prev = NULL;
	n->next = c->head;
	if (c->head)
		c->head->prev = n;
	c->head = n;
	if (!c->tail)
		c->tail = n;
}

static void touch(struct mock_cache *c, struct node *n)
{
	lru_unlink(c, n);
	lru_push_head(c, n);
}

struct mock_cache *mock_cache_create(size_t capacity_tokens, uint32_t block_size)
{
	if (block_size == 0)
		return NULL;
	struct mock_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->block_size = block_size;
	c->cap_pages = capacity_tokens / block_size;
	c->nbuckets = 16;
	while (c->nbuckets < c->cap_pages * 2)
		c->nbuckets *= 2;
	c->buckets = calloc(c->nbuckets, sizeof(*c->buckets));
	c->pool = calloc(c->cap_pages ? c->cap_pages : 1, sizeof(*c->pool));
	if (!c->buckets || !c->pool) {
		mock_cache_destroy(c);
		return NULL;
	}
	for (size_t i = 0; i < c->cap_pages; i++) {
		c->pool[i].hnext = c->free_list;
		c->free_list = &c->pool[i];
	}
	return c;
}

void mock_cache_destroy(struct mock_cache *c)
{
	if (!c)
		return;
	free(c->buckets);
	free(c->pool);
	free(c);
}

size_t mock_cache_match(const struct mock_cache *c, const int64_t *hashes, size_t n)
{
	size_t i = 0;
	while (i < n && lookup(c, hashes[i]))
		i++;
	return i;
}

/* Touches path [0, n) leaf first, so ancestors end up newer. */
static void touch_path(struct mock_cache *c, const int64_t *hashes, size_t n)
{
	for (size_t i = n; i-- > 0;) {
		struct node *nd = lookup(c, hashes[i]);
		if (nd)
			touch(c, nd);
	}
}

size_t mock_cache_acquire(struct mock_cache *c, const int64_t *hashes, size_t n)
{
	size_t m = mock_cache_match(c, hashes, n);
	for (size_t i = 0; i < m; i++)
		lookup(c, hashes[i])->lock++;
	touch_path(c, hashes, m);
	return m;
}

static void remove_node(struct mock_cache *c, struct node *n)
{
	struct node **pp = &c->buckets[bucket_of(c, n->hash)];
	while (*pp != n)
		pp = &(*pp)->hnext;
	*pp = n->hnext;
	lru_unlink(c, n);
	if (n->parent)
		n->parent->nchildren--;
	n->hnext = c->free_list;
	c->free_list = n;
	c->used--;
}

/* Evicts the least recently used unlocked leaf. Returns false if none. */
static bool evict_one(struct mock_cache *c, struct kvev_batch *ev)
{
	for (struct node *n = c->tail; n; n = n->prev) {
		if (n->lock == 0 && n->nchildren == 0) {
			int64_t h = n->hash;
			remove_node(c, n);
			if (ev)
				(void)kvev_batch_remove(ev, &h, 1);
			return true;
		}
	}
	return false;
}

size_t mock_cache_insert(struct mock_cache *c, const int64_t *hashes, size_t n, size_t locked,
			 const uint32_t *page_tokens, size_t tokens_per_page,
			 struct kvev_batch *ev)
{
	/* All evictions first (SGLang evicts when it allocates, stores later). */
	size_t missing = 0;
	for (size_t i = locked; i < n; i++)
		if (!lookup(c, hashes[i]))
			missing++;
	while (c->used + missing > c->cap_pages && evict_one(c, ev))
		;
	size_t i = locked;
	for (; i < n; i++) {
		struct node *nd = lookup(c, hashes[i]);
		if (!nd) {
			if (!c->free_list)
				break;
			nd = c->free_list;
			c->free_list = nd->hnext;
			nd->hash = hashes[i];
			nd->parent = i ? lookup(c, hashes[i - 1]) : NULL;
			nd->nchildren = 0;
			nd->lock = 0;
			if (nd->parent)
				nd->parent->nchildren++;
			size_t b = bucket_of(c, nd->hash);
			nd->hnext = c->buckets[b];
			c->buckets[b] = nd;
			lru_push_head(c, nd);
			c->used++;
			if (ev)
				(void)kvev_batch_store(ev, i > 0, i ? hashes[i - 1] : 0, &hashes[i], 1,
						       page_tokens + i * tokens_per_page,
						       tokens_per_page, c->block_size);
		}
		nd->lock++;
	}
	touch_path(c, hashes, i);
	return i;
}

void mock_cache_release(struct mock_cache *c, const int64_t *hashes, size_t locked)
{
	for (size_t i = 0; i < locked; i++) {
		struct node *nd = lookup(c, hashes[i]);
		if (nd && nd->lock)
			nd->lock--;
	}
}

int mock_cache_clear(struct mock_cache *c, struct kvev_batch *ev)
{
	for (struct node *n = c->head; n; n = n->next)
		if (n->lock)
			return SY_EBUSY;
	while (c->head)
		remove_node(c, c->head);
	if (ev)
		(void)kvev_batch_clear(ev);
	return 0;
}

size_t mock_cache_pages(const struct mock_cache *c) { return c->used; }
size_t mock_cache_capacity_pages(const struct mock_cache *c) { return c->cap_pages; }
