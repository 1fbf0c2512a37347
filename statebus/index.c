/* index.c — the radix index of the state plane: which (worker, DP rank) holds
 * which block-hash prefix, in shared memory (DESIGN.md §3; SGLang HashTree,
 * sglang-wire.md §7, §8, §11).
 *
 * Data structure
 * --------------
 * A tree of block hashes. Node = one block hash at one position (the same
 * hash can sit under several parents); the root is node 0 and is implicit.
 * Nodes live in a fixed pool of 64-byte records (inodes table, one cache
 * line each), addressed by 32-bit index, never by pointer:
 *
 *   ibuckets[mix(hash) & mask] ──► node ─hnext─► node ─hnext─► 0
 *
 * One chained hash table keyed by the block hash alone serves both lookups:
 * "child of P with hash h" walks h's bucket for (hash == h, parent == P),
 * and BlockRemoved's "every node carrying h" walks the same bucket for
 * hash == h. Buckets ≥ nodes, so chains average under one node.
 *
 * Each node carries its owner set: one inline owner word (generation,
 * worker slot, rank, tier bits) and a chain of 64-byte overflow records of
 * seven more. An overflow record belongs to its node until the node is
 * reclaimed (owners removed leave free entries that are reused), so the
 * owner set of a live node never loses memory a reader may be reading.
 * Memory per indexed block with one owner: 64 B node + 4 B bucket.
 *
 * Match walk (statebus_index_match): the whole chain is known up front, so
 * the bucket words of the blocks IDX_PF_DIST ahead are prefetched while the
 * current block is resolved; the table bases are loaded once per walk. The
 * first node's current owners become the alive set; each later node is
 * checked only for the alive owners (no copy of its owner set), the
 * overflow chain is left as soon as every alive owner is found, and the
 * walk ends when none is left. Per block: one bucket word, the node line
 * and, only while an alive owner is still unfound, its overflow records.
 *
 * Writer-only bookkeeping (in the header's index section and in node
 * fields readers never read): the child count; an LRU list (lru_prev /
 * lru_next); the free list and the retire FIFO (both through lru_next).
 *
 * Invariants
 * ----------
 * I1 a live node is reachable from exactly one bucket chain; its hash and
 *    parent never change while it is linked; parent is live or the root.
 * I2 nchildren = live nodes whose parent is this node.
 * I3 LRU order: every node comes before (is older than) all its ancestors.
 *    So the LRU head is always a leaf: eviction takes the head. A store
 *    touches its parent's ancestor path to the tail (parent first), and
 *    places each node of the chain just before its parent.
 * I4 an ownership is identified by (worker slot, rank); its generation is
 *    the slot's at store time. A store by a newer generation replaces it;
 *    readers report only owners whose generation is the slot's current one.
 * I5 nodes + retired + free = index_nodes; a node is in exactly one of:
 *    live (buckets + LRU), retire FIFO, free list, never used (> node_hw).
 * I6 an unlinked node (pruned, evicted) keeps hash, parent, hnext and its
 *    owner set until reclaimed, so a reader standing on it finishes its walk.
 *
 * Concurrency (readers never write the index)
 * -----------
 * - Publication: a new node is fully written, then (write barrier) stored as
 *   its bucket's head; readers load heads and hnext with acquire order.
 * - Unlink: the predecessor's link (bucket head or hnext) is overwritten
 *   with the node's hnext in one store; the node goes to the retire FIFO.
 *   At the end of every writer operation the unlinked nodes are stamped
 *   with one epoch (sb_epoch_stamp, which advances the global epoch) and
 *   are reclaimed once every reader bracket open at that time has closed
 *   (sb_epoch_safe, epoch.c). Reclaimed nodes are poisoned (0x6b).
 * - Owner sets change in place under the node's seqlock (odd → write →
 *   even); readers copy the owner words, then retry if the sequence moved,
 *   up to SB_SEQ_RETRIES, after which the walk stops there (a shorter
 *   match, never a torn one).
 * - Reset (statebus start, or repair after a writer died mid-update — the
 *   `busy` word): every bucket head is cleared (nothing is reachable), the
 *   pools restart empty, and no pool entry is handed out again until the
 *   epoch stamped at the reset is safe (`hold`).
 * - Stats words in the header are single-word stores read individually.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "sb-int.h"

/* Owners one reader considers per node (a node with more is truncated). */
#define IDX_READ_OWNERS 256
/* Overflow records a reader follows per node. */
#define IDX_READ_OVF ((IDX_READ_OWNERS + SB_INDEX_OVF_OWNERS - 1) / SB_INDEX_OVF_OWNERS + 1)
#define STAMP_PENDING UINT64_MAX


/* ------------------------------------------------------------ accessors */

static inline struct sb_index_node *inode(const struct statebus_region *r, uint32_t i)
{
	return (struct sb_index_node *)sb_table(r, SB_T_INODES) + i;
}

static inline struct sb_index_ovf *iovf(const struct statebus_region *r, uint32_t i)
{
	return (struct sb_index_ovf *)sb_table(r, SB_T_IOVF) + i;
}

static inline uint32_t *bucket_at(const struct statebus_region *r, int64_t hash)
{
	uint64_t x = (uint64_t)hash;
	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 33;
	return (uint32_t *)sb_table(r, SB_T_IBUCKETS) + (x & (r->hdr->index_buckets - 1));
}

static inline uint32_t load_acq(const uint32_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

/* Child of `parent` with `hash`, or 0. Safe for readers (bounded walk,
 * bounds-checked indices) and the writer. */
static uint32_t find_child(const struct statebus_region *r, uint32_t parent, int64_t hash)
{
	uint32_t cap = r->hdr->index_nodes;
	uint32_t i = load_acq(bucket_at(r, hash));
	for (uint32_t steps = 0; i != 0 && i <= cap && steps <= cap; steps++) {
		const struct sb_index_node *n = inode(r, i);
		if (CMM_LOAD_SHARED(n->hash) == hash && CMM_LOAD_SHARED(n->parent) == parent)
			return i;
		i = load_acq(&n->hnext);
	}
	return 0;
}

/* Reader copy of node i's owner words (non-free entries) into buf.
 * Returns the count, or -1 when the node stayed mid-update. */
static int read_owners(const struct statebus_region *r, uint32_t i, sb_index_owner *buf, int cap)
{
	const struct sb_index_node *n = inode(r, i);
	uint32_t ovf_cap = r->hdr->index_overflow;
	for (int tries = 0; tries < SB_SEQ_RETRIES; tries++) {
		uint32_t s;
		if (!sb_seq_read_begin(&n->seq, &s)) {
			caa_cpu_relax();
			continue;
		}
		int k = 0;
		sb_index_owner o = CMM_LOAD_SHARED(n->own0);
		if (SB_OWN_TIERS(o) && k < cap)
			buf[k++] = o;
		uint32_t j = CMM_LOAD_SHARED(n->ovf);
		for (int steps = 0; j != 0 && j <= ovf_cap && steps < IDX_READ_OVF; steps++) {
			const struct sb_index_ovf *rec = iovf(r, j);
			for (int x = 0; x < SB_INDEX_OVF_OWNERS; x++) {
				o = CMM_LOAD_SHARED(rec->own[x]);
				if (SB_OWN_TIERS(o) && k < cap)
					buf[k++] = o;
			}
			j = CMM_LOAD_SHARED(rec->next);
		}
		if (!sb_seq_read_retry(&n->seq, s))
			return k;
	}
	return -1;
}

/* True when owner word o belongs to the current generation of its slot. */
static bool owner_current(const struct statebus_region *r, sb_index_owner o)
{
	uint32_t w = SB_OWN_WORKER(o);
	if (w >= r->hdr->max_workers)
		return false;
	const struct sb_worker_rec *rec = sb_worker_at(r, w);
	return CMM_LOAD_SHARED(rec->w.state) != STATEBUS_WORKER_FREE &&
	       CMM_LOAD_SHARED(rec->w.generation) == SB_OWN_GEN(o);
}

/* ---------------------------------------------------------------- readers */

/* Match walk prefetch distance (blocks ahead): the bucket words of the next
 * blocks are known from the chain alone, so their loads overlap the
 * current block's work. */
#define IDX_PF_DIST 8

/* Bucket number of `hash` (bucket_at() without the table base). */
static inline uint64_t bucket_no(int64_t hash, uint64_t mask)
{
	uint64_t x = (uint64_t)hash;
	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 33;
	return x & mask;
}

/* The tables of one match walk, loaded once (the header's geometry never
 * changes while a region is mapped). */
struct match_walk {
	const uint32_t *buckets;
	uint64_t mask;
	const struct sb_index_node *nodes;
	const struct sb_index_ovf *ovf;
	uint32_t node_cap, ovf_cap;
};

/* find_child() on the walk's tables, from bucket word *b. */
static inline uint32_t walk_child(const struct match_walk *w, const uint32_t *b, uint32_t parent,
				  int64_t hash)
{
	uint32_t i = load_acq(b);
	for (uint32_t steps = 0; i != 0 && i <= w->node_cap && steps <= w->node_cap; steps++) {
		const struct sb_index_node *n = &w->nodes[i];
		if (CMM_LOAD_SHARED(n->hash) == hash && CMM_LOAD_SHARED(n->parent) == parent)
			return i;
		i = load_acq(&n->hnext);
	}
	return 0;
}

/* Match step on node c for the alive entries want[0..na) (owner words
 * without tiers), under c's seqlock: tiers[a] receives the tiers of the
 * owner word equal to want[a] (the first one), 0 when c has none. tiers[0..na)
 * must be all 0 on entry (the caller clears what it consumed, so the common
 * path does no per-block clearing). Considers
 * the owners read_owners() would (first IDX_READ_OWNERS non-free words,
 * IDX_READ_OVF overflow records); stops reading once every alive entry is
 * found. Returns the number of entries found, or -1 when c stayed
 * mid-update. */
static int match_step(const struct match_walk *w, uint32_t c, const sb_index_owner *want,
		      uint32_t na, uint8_t *tiers)
{
	const struct sb_index_node *n = &w->nodes[c];
	const sb_index_owner key_mask = SB_OWN_KEY_MASK;
	for (int tries = 0; tries < SB_SEQ_RETRIES; tries++) {
		uint32_t s;
		if (!sb_seq_read_begin(&n->seq, &s)) {
			caa_cpu_relax();
			continue;
		}
		if (tries > 0)
			memset(tiers, 0, na); /* undo the torn attempt */
		uint32_t found = 0;
		int seen = 0;
		sb_index_owner o = CMM_LOAD_SHARED(n->own0);
		if (SB_OWN_TIERS(o)) {
			seen++;
			for (uint32_t a = 0; a < na; a++)
				if (want[a] == (o & key_mask)) {
					tiers[a] = (uint8_t)SB_OWN_TIERS(o);
					found++;
					break;
				}
		}
		uint32_t j = CMM_LOAD_SHARED(n->ovf);
		for (int steps = 0; found < na && j != 0 && j <= w->ovf_cap && steps < IDX_READ_OVF;
		     steps++) {
			const struct sb_index_ovf *rec = &w->ovf[j];
			for (int x = 0; x < SB_INDEX_OVF_OWNERS; x++) {
				o = CMM_LOAD_SHARED(rec->own[x]);
				if (SB_OWN_TIERS(o) == 0 || seen >= IDX_READ_OWNERS)
					continue;
				seen++;
				for (uint32_t a = 0; a < na; a++)
					if (want[a] == (o & key_mask)) {
						if (tiers[a] == 0) {
							tiers[a] = (uint8_t)SB_OWN_TIERS(o);
							found++;
						}
						break;
					}
			}
			j = CMM_LOAD_SHARED(rec->next);
		}
		if (!sb_seq_read_retry(&n->seq, s))
			return (int)found;
	}
	return -1;
}

int statebus_index_match(struct statebus_region *r, const int64_t *hashes, size_t n,
			 struct statebus_index_match *out, size_t cap)
{
	if ((n > 0 && hashes == NULL) || (cap > 0 && out == NULL))
		return SY_EINVAL;
	if (n == 0 || cap == 0)
		return 0;
	const struct statebus_hdr *hd = r->hdr;
	const struct match_walk w = {
		.buckets = sb_table(r, SB_T_IBUCKETS), .mask = hd->index_buckets - 1,
		.nodes = inode(r, 0), .ovf = iovf(r, 0),
		.node_cap = hd->index_nodes, .ovf_cap = hd->index_overflow};
	sb_index_owner own[IDX_READ_OWNERS]; /* first node's owners; then wanted words */
	uint32_t alive[IDX_READ_OWNERS];     /* out[] entries still matching */
	uint8_t tiers[IDX_READ_OWNERS];      /* all 0 between match steps */
	uint32_t pnode[IDX_READ_OWNERS];     /* out[x]: deepest predicted-only node */
	uint32_t na = 0;
	size_t cnt = 0;
	statebus_read_enter(r);
	for (size_t i = 0; i < n && i < IDX_PF_DIST; i++)
		__builtin_prefetch(&w.buckets[bucket_no(hashes[i], w.mask)], 0, 3);
	uint32_t c = walk_child(&w, &w.buckets[bucket_no(hashes[0], w.mask)], 0, hashes[0]);
	int k = c != 0 ? read_owners(r, c, own, IDX_READ_OWNERS) : -1;
	for (int x = 0; x < k && cnt < cap; x++) {
		if (!owner_current(r, own[x]))
			continue;
		/* predicted_depth holds the confirmed depth during the walk */
		out[cnt] = (struct statebus_index_match){
			.worker = SB_OWN_WORKER(own[x]), .worker_gen = SB_OWN_GEN(own[x]),
			.rank = SB_OWN_RANK(own[x]), .depth = 1, .tiers = SB_OWN_TIERS(own[x]),
			.predicted_depth = (SB_OWN_TIERS(own[x]) & STATEBUS_TIER_ALL) ? 1 : 0};
		pnode[cnt] = (SB_OWN_TIERS(own[x]) & STATEBUS_TIER_ALL) ? 0 : c;
		alive[na] = (uint32_t)cnt;
		own[na++] = SB_OWN(out[cnt].worker_gen, out[cnt].worker, out[cnt].rank, 0);
		cnt++;
	}
	/* own[0..na): the owner word (without tiers) each alive entry wants */
	memset(tiers, 0, na);
	uint32_t parent = c;
	for (size_t i = 1; i < n && na > 0; i++) {
		if (i + IDX_PF_DIST < n)
			__builtin_prefetch(&w.buckets[bucket_no(hashes[i + IDX_PF_DIST], w.mask)], 0, 3);
		if (i + IDX_PF_DIST / 2 < n) {
			/* its bucket word was prefetched IDX_PF_DIST / 2 blocks ago */
			uint32_t h = CMM_LOAD_SHARED(
				w.buckets[bucket_no(hashes[i + IDX_PF_DIST / 2], w.mask)]);
			if (h != 0 && h <= w.node_cap)
				__builtin_prefetch(&w.nodes[h], 0, 3);
		}
		c = walk_child(&w, &w.buckets[bucket_no(hashes[i], w.mask)], parent, hashes[i]);
		if (c == 0)
			break;
		int found = match_step(&w, c, own, na, tiers);
		if (found <= 0)
			break; /* mid-update: depths as found; or nobody left */
		uint32_t m = 0;
		for (uint32_t a = 0; a < na; a++) {
			uint8_t t = tiers[a];
			if (t == 0)
				continue;
			tiers[a] = 0;
			struct statebus_index_match *e = &out[alive[a]];
			e->depth = (uint32_t)i + 1;
			e->tiers = t;
			if ((t & STATEBUS_TIER_ALL) && e->predicted_depth == (uint32_t)i)
				e->predicted_depth = (uint32_t)i + 1;
			else if (!(t & STATEBUS_TIER_ALL))
				pnode[alive[a]] = c;
			alive[m] = alive[a];
			own[m++] = own[a];
		}
		na = m;
		parent = c;
	}
	for (size_t x = 0; x < cnt; x++) {
		struct statebus_index_match *e = &out[x];
		e->predicted_depth = e->depth - e->predicted_depth;
		if (e->predicted_depth == 0)
			continue; /* all confirmed: no line of the prediction tables read */
		e->cache_signal = CMM_LOAD_SHARED(sb_pworker_at(r, e->worker)->cache_signal);
		e->predicted_ns =
			pnode[x] != 0 ? sb_pred_last_ns_read(r, pnode[x], e->worker, e->rank) : 0;
	}
	statebus_read_leave(r);
	return (int)cnt;
}

int statebus_index_path(struct statebus_region *r, const int64_t *hashes, size_t n,
			uint32_t *blocks, struct statebus_index_match *out, size_t cap)
{
	if ((n > 0 && hashes == NULL) || (cap > 0 && out == NULL) || blocks == NULL)
		return SY_EINVAL;
	*blocks = 0;
	sb_index_owner own[IDX_READ_OWNERS];
	size_t cnt = 0;
	uint32_t parent = 0, depth = 0;
	statebus_read_enter(r);
	for (size_t i = 0; i < n; i++) {
		uint32_t c = find_child(r, parent, hashes[i]);
		if (c == 0)
			break;
		parent = c;
		depth++;
	}
	if (parent != 0) {
		int k = read_owners(r, parent, own, IDX_READ_OWNERS);
		for (int x = 0; x < k && cnt < cap; x++) {
			if (!owner_current(r, own[x]))
				continue;
			out[cnt++] = (struct statebus_index_match){
				.worker = SB_OWN_WORKER(own[x]), .worker_gen = SB_OWN_GEN(own[x]),
				.rank = SB_OWN_RANK(own[x]), .depth = depth, .tiers = SB_OWN_TIERS(own[x]),
				.predicted_depth =
					(SB_OWN_TIERS(own[x]) & STATEBUS_TIER_ALL) ? 0 : depth};
		}
	}
	statebus_read_leave(r);
	*blocks = depth;
	return (int)cnt;
}

void statebus_index_stats(const struct statebus_region *r, struct statebus_index_stats *out)
{
	const struct statebus_hdr *h = r->hdr;
	memset(out, 0, sizeof(*out));
	out->nodes = CMM_LOAD_SHARED(h->index.nodes);
	out->nodes_capacity = h->index_nodes;
	out->nodes_retired = CMM_LOAD_SHARED(h->index.retired);
	out->overflow_used = CMM_LOAD_SHARED(h->index.ovf_used);
	out->overflow_capacity = h->index_overflow;
	out->buckets = h->index_buckets;
	out->owners = CMM_LOAD_SHARED(h->index.owners);
	out->stored_blocks = CMM_LOAD_SHARED(h->index.stored_blocks);
	out->removed_blocks = CMM_LOAD_SHARED(h->index.removed_blocks);
	out->evictions = CMM_LOAD_SHARED(h->index.evictions);
	out->pruned = CMM_LOAD_SHARED(h->index.pruned);
	out->dropped = CMM_LOAD_SHARED(h->index.dropped);
	out->breadcrumbs = CMM_LOAD_SHARED(h->index.breadcrumbs);
	out->resets = CMM_LOAD_SHARED(h->index.resets);
	out->bytes = h->tables[SB_T_INODES].size + h->tables[SB_T_IBUCKETS].size +
		     h->tables[SB_T_IOVF].size;
}

static int owner_stats_cmp(const void *a, const void *b)
{
	const struct statebus_index_owner_stats *x = a, *y = b;
	if (x->worker != y->worker)
		return x->worker < y->worker ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->worker_gen < y->worker_gen ? -1 : x->worker_gen > y->worker_gen;
}

int statebus_index_owner_stats(struct statebus_region *r, int64_t worker,
			       struct statebus_index_owner_stats *out, size_t cap)
{
	if (cap > 0 && out == NULL)
		return SY_EINVAL;
	struct statebus_index_owner_stats *acc = NULL;
	size_t n = 0, alloc = 0;
	sb_index_owner own[IDX_READ_OWNERS];
	int rc = 0;
	statebus_read_enter(r);
	uint32_t hw = CMM_LOAD_SHARED(r->hdr->index.node_hw);
	if (hw > r->hdr->index_nodes)
		hw = r->hdr->index_nodes;
	for (uint32_t i = 1; i <= hw && rc == 0; i++) {
		if ((CMM_LOAD_SHARED(inode(r, i)->flags) & SB_INODE_LIVE) == 0)
			continue;
		int k = read_owners(r, i, own, IDX_READ_OWNERS);
		for (int x = 0; x < k; x++) {
			uint32_t w = SB_OWN_WORKER(own[x]), rk = SB_OWN_RANK(own[x]);
			uint32_t g = SB_OWN_GEN(own[x]), t = SB_OWN_TIERS(own[x]);
			if (worker >= 0 && (int64_t)w != worker)
				continue;
			size_t e = 0;
			while (e < n && !(acc[e].worker == w && acc[e].rank == rk && acc[e].worker_gen == g))
				e++;
			if (e == n) {
				if (n == alloc) {
					size_t na = alloc ? alloc * 2 : 16;
					void *p = realloc(acc, na * sizeof(*acc));
					if (p == NULL) {
						rc = SY_ENOMEM;
						break;
					}
					acc = p;
					alloc = na;
				}
				acc[n++] = (struct statebus_index_owner_stats){
					.worker = w, .worker_gen = g, .rank = rk};
			}
			acc[e].blocks++;
			for (int b = 0; b < 5; b++)
				if (t & (1u << b))
					acc[e].tier_blocks[b]++;
		}
	}
	statebus_read_leave(r);
	if (rc == 0) {
		if (n > 1)
			qsort(acc, n, sizeof(*acc), owner_stats_cmp);
		if (n > 0 && cap > 0)
			memcpy(out, acc, (n < cap ? n : cap) * sizeof(*acc));
		rc = (int)n;
	}
	free(acc);
	return rc;
}

/* ------------------------------------------------------ writer: pools */

/* Free nodes: never used, on the free list, or held after a reset. */
static uint32_t nodes_free(const struct statebus_region *r)
{
	const struct sb_index_hdr *h = &r->hdr->index;
	return r->hdr->index_nodes - h->nodes - h->retired;
}

/* Low watermark of free nodes kept ahead of stores, so that evicted nodes
 * have a grace period to pass before they are needed. */
static uint32_t watermark(const struct statebus_region *r)
{
	uint32_t wm = r->hdr->index_nodes / 256;
	return wm < 4 ? 4 : wm;
}

/* After a reset, pool entries may be reused only once the reset's epoch is
 * safe. Waits a little (reader brackets are short), reaping dead readers
 * once; false if still held. */
static bool hold_passed(struct statebus_region *r)
{
	struct sb_index_hdr *h = &r->hdr->index;
	if (h->hold == 0)
		return true;
	for (int spin = 0; spin < 2000; spin++) {
		if (sb_epoch_safe(r) > h->hold) {
			h->hold = 0;
			return true;
		}
		if (spin == 100)
			(void)statebus_procs_reap(r);
		sched_yield();
	}
	return false;
}

/* Stamps the nodes unlinked since the last stamp with one epoch. */
static void stamp_pending(struct statebus_region *r)
{
	struct sb_index_hdr *h = &r->hdr->index;
	if (h->ret_pending == 0)
		return;
	uint64_t e = sb_epoch_stamp(r);
	for (uint32_t i = h->ret_pending; i != 0; i = inode(r, i)->lru_next)
		inode(r, i)->stamp = e;
	h->ret_pending = 0;
}

static void ovf_free(struct statebus_region *r, uint32_t j)
{
	struct sb_index_hdr *h = &r->hdr->index;
	struct sb_index_ovf *rec = iovf(r, j);
	memset(rec, SB_POISON, sizeof(*rec));
	rec->reserved = h->ovf_free;
	h->ovf_free = j;
	CMM_STORE_SHARED(h->ovf_used, h->ovf_used - 1);
}

/* Frees retired nodes (and their overflow records) whose grace period has
 * passed. Returns the number freed. */
static uint32_t reclaim_nodes(struct statebus_region *r)
{
	struct sb_index_hdr *h = &r->hdr->index;
	stamp_pending(r);
	if (h->retired == 0)
		return 0;
	uint64_t safe = sb_epoch_safe(r);
	uint32_t freed = 0;
	while (h->ret_head != 0) {
		uint32_t i = h->ret_head;
		struct sb_index_node *n = inode(r, i);
		if (n->stamp >= safe)
			break;
		SB_BUG_ON((n->flags & SB_INODE_RETIRED) == 0);
		h->ret_head = n->lru_next;
		if (h->ret_head == 0)
			h->ret_tail = 0;
		for (uint32_t j = n->ovf, steps = 0; j != 0; steps++) {
			SB_BUG_ON(j > r->hdr->index_overflow || steps > r->hdr->index_overflow);
			uint32_t next = iovf(r, j)->next;
			ovf_free(r, j);
			j = next;
		}
		uint32_t seq = n->seq;
		memset(n, SB_POISON, sizeof(*n));
		n->seq = seq;
		n->flags = 0;
		n->lru_next = h->node_free;
		h->node_free = i;
		CMM_STORE_SHARED(h->retired, h->retired - 1);
		freed++;
	}
	return freed;
}

static uint32_t evict(struct statebus_region *r, uint32_t count, uint32_t protect);

/* A free overflow record; when none is left, evicts least recently used
 * leaves (never `protect`) and reclaims once. 0 if still none. */
static uint32_t ovf_alloc(struct statebus_region *r, uint32_t protect)
{
	struct sb_index_hdr *h = &r->hdr->index;
	if (!hold_passed(r))
		return 0;
	uint32_t j = 0;
	if (h->ovf_free != 0) {
		j = h->ovf_free;
		h->ovf_free = iovf(r, j)->reserved;
	} else if (h->ovf_hw < r->hdr->index_overflow) {
		j = ++h->ovf_hw;
	} else {
		(void)evict(r, watermark(r), protect);
		(void)reclaim_nodes(r);
		if (h->ovf_free == 0)
			return 0;
		j = h->ovf_free;
		h->ovf_free = iovf(r, j)->reserved;
	}
	struct sb_index_ovf *rec = iovf(r, j);
	memset(rec, 0, sizeof(*rec));
	CMM_STORE_SHARED(h->ovf_used, h->ovf_used + 1);
	return j;
}

/* ---------------------------------------------------------- writer: LRU */

static void lru_unlink(struct statebus_region *r, uint32_t i)
{
	struct sb_index_hdr *h = &r->hdr->index;
	struct sb_index_node *n = inode(r, i);
	if (n->lru_prev)
		inode(r, n->lru_prev)->lru_next = n->lru_next;
	else
		h->lru_head = n->lru_next;
	if (n->lru_next)
		inode(r, n->lru_next)->lru_prev = n->lru_prev;
	else
		h->lru_tail = n->lru_prev;
	n->lru_prev = n->lru_next = 0;
}

static void lru_push_tail(struct statebus_region *r, uint32_t i)
{
	struct sb_index_hdr *h = &r->hdr->index;
	struct sb_index_node *n = inode(r, i);
	n->lru_prev = h->lru_tail;
	n->lru_next = 0;
	if (h->lru_tail)
		inode(r, h->lru_tail)->lru_next = i;
	else
		h->lru_head = i;
	h->lru_tail = i;
}

/* Places node i (unlinked from the LRU) just before node at (I3), or at
 * the tail when at is the root. */
static void lru_place(struct statebus_region *r, uint32_t i, uint32_t at)
{
	if (at == 0) {
		lru_push_tail(r, i);
		return;
	}
	struct sb_index_node *n = inode(r, i), *a = inode(r, at);
	n->lru_next = at;
	n->lru_prev = a->lru_prev;
	if (a->lru_prev)
		inode(r, a->lru_prev)->lru_next = i;
	else
		r->hdr->index.lru_head = i;
	a->lru_prev = i;
}

/* Moves node p and its ancestors to the LRU tail, p first (I3). */
static void touch_up(struct statebus_region *r, uint32_t p)
{
	for (uint32_t steps = 0; p != 0 && steps <= r->hdr->index_nodes; steps++) {
		lru_unlink(r, p);
		lru_push_tail(r, p);
		p = inode(r, p)->parent;
	}
}

/* ------------------------------------------------- writer: link, unlink */

/* Releases the predicted entries of every predicted owner of node i (the
 * node is being unlinked; its owner words stay for readers, I6). */
static void forget_predicted(struct statebus_region *r, uint32_t i)
{
	struct sb_index_node *n = inode(r, i);
	if (SB_OWN_TIERS(n->own0) & STATEBUS_TIER_PREDICTED)
		(void)sb_pred_forget(r, i, SB_OWN_WORKER(n->own0), SB_OWN_RANK(n->own0), 0);
	for (uint32_t j = n->ovf; j != 0; j = iovf(r, j)->next)
		for (int x = 0; x < SB_INDEX_OVF_OWNERS; x++) {
			sb_index_owner o = iovf(r, j)->own[x];
			if (SB_OWN_TIERS(o) & STATEBUS_TIER_PREDICTED)
				(void)sb_pred_forget(r, i, SB_OWN_WORKER(o), SB_OWN_RANK(o), 0);
		}
}

/* Unlinks live node i from its bucket chain, its parent and the LRU, and
 * queues it for retirement (stamped at the end of the operation). */
static void node_unlink(struct statebus_region *r, uint32_t i)
{
	struct sb_index_hdr *h = &r->hdr->index;
	struct sb_index_node *n = inode(r, i);
	SB_BUG_ON((n->flags & SB_INODE_LIVE) == 0 || n->nchildren != 0);
	uint32_t *link = bucket_at(r, n->hash);
	uint32_t steps = 0;
	while (*link != i) {
		SB_BUG_ON(*link == 0 || ++steps > r->hdr->index_nodes);
		link = &inode(r, *link)->hnext;
	}
	CMM_STORE_SHARED(*link, n->hnext); /* readers on n keep walking via n->hnext */
	if (n->flags & SB_INODE_PRED)
		forget_predicted(r, i);
	if (n->parent != 0)
		inode(r, n->parent)->nchildren--;
	lru_unlink(r, i);
	n->flags = (uint16_t)((n->flags & ~SB_INODE_LIVE) | SB_INODE_RETIRED);
	CMM_STORE_SHARED(h->nodes, h->nodes - 1);
	CMM_STORE_SHARED(h->owners, h->owners - n->nowners);
	n->stamp = STAMP_PENDING;
	n->lru_next = 0;
	if (h->ret_tail)
		inode(r, h->ret_tail)->lru_next = i;
	else
		h->ret_head = i;
	h->ret_tail = i;
	if (h->ret_pending == 0)
		h->ret_pending = i;
	CMM_STORE_SHARED(h->retired, h->retired + 1);
}

/* Unlinks i and its ancestors while they are ownerless and childless,
 * stopping at `protect` (a node the caller stands on). */
static void prune_up(struct statebus_region *r, uint32_t i, uint32_t protect)
{
	while (i != 0 && i != protect) {
		struct sb_index_node *n = inode(r, i);
		if ((n->flags & SB_INODE_LIVE) == 0 || n->nowners != 0 || n->nchildren != 0)
			return;
		uint32_t p = n->parent;
		node_unlink(r, i);
		CMM_STORE_SHARED(r->hdr->index.pruned, r->hdr->index.pruned + 1);
		i = p;
	}
}

/* Evicts up to `count` least recently used leaves (I3: the LRU head is a
 * leaf), never `protect`; ancestors left ownerless and childless go too.
 * Returns the number evicted. */
static uint32_t evict(struct statebus_region *r, uint32_t count, uint32_t protect)
{
	struct sb_index_hdr *h = &r->hdr->index;
	uint32_t done = 0;
	while (done < count && h->lru_head != 0 && h->lru_head != protect) {
		uint32_t v = h->lru_head;
		uint32_t p = inode(r, v)->parent;
		node_unlink(r, v);
		CMM_STORE_SHARED(h->evictions, h->evictions + 1);
		prune_up(r, p, protect);
		done++;
	}
	return done;
}

/* A free node for a new child of `protect`, evicting if needed; 0 if none. */
static uint32_t node_alloc(struct statebus_region *r, uint32_t protect)
{
	struct sb_index_hdr *h = &r->hdr->index;
	if (!hold_passed(r))
		return 0;
	for (int attempt = 0; attempt < 3; attempt++) {
		uint32_t i = 0;
		if (h->node_free != 0) {
			i = h->node_free;
			h->node_free = inode(r, i)->lru_next;
		} else if (h->node_hw < r->hdr->index_nodes) {
			i = h->node_hw + 1;
			CMM_STORE_SHARED(h->node_hw, i);
		}
		if (i != 0) {
			struct sb_index_node *n = inode(r, i);
			uint32_t seq = (n->seq + 1) & ~1u; /* unreachable: no reader */
			memset(n, 0, sizeof(*n));
			n->seq = seq;
			return i;
		}
		if (attempt == 1)
			(void)evict(r, watermark(r), protect);
		(void)reclaim_nodes(r);
	}
	return 0;
}

/* Makes node `c`, filled in with its hash and first owner, reachable as a
 * child of `parent` (0: a root): hash chain, parent's child count, LRU
 * place, node and owner counts. */
static void node_publish(struct statebus_region *r, uint32_t c, uint32_t parent)
{
	struct sb_index_hdr *h = &r->hdr->index;
	struct sb_index_node *nn = inode(r, c);
	uint32_t *head = bucket_at(r, nn->hash);
	nn->hnext = *head;
	cmm_smp_wmb(); /* node complete before it is reachable */
	CMM_STORE_SHARED(*head, c);
	if (parent != 0)
		inode(r, parent)->nchildren++;
	lru_place(r, c, parent);
	CMM_STORE_SHARED(h->nodes, h->nodes + 1);
	CMM_STORE_SHARED(h->owners, h->owners + 1);
}

/* Keeps `watermark` nodes free or on their way (retired) ahead of a store. */
static void make_room(struct statebus_region *r, uint32_t protect)
{
	struct sb_index_hdr *h = &r->hdr->index;
	uint32_t wm = watermark(r);
	if (nodes_free(r) < 2 * wm)
		(void)reclaim_nodes(r);
	if (nodes_free(r) + h->retired < 2 * wm)
		(void)evict(r, 2 * wm - nodes_free(r) - h->retired, protect);
}

/* ------------------------------------------------------- writer: owners */

/* Pointer to the owner word of (worker, rank) on node n (any generation),
 * or NULL; *free_slot receives a free entry if one exists (else NULL). */
static sb_index_owner *owner_find(struct statebus_region *r, struct sb_index_node *n,
				  uint32_t worker, uint32_t rank, sb_index_owner **free_slot)
{
	*free_slot = NULL;
	sb_index_owner *o = &n->own0;
	if (SB_OWN_TIERS(*o) == 0)
		*free_slot = o;
	else if (SB_OWN_WORKER(*o) == worker && SB_OWN_RANK(*o) == rank)
		return o;
	for (uint32_t j = n->ovf; j != 0; j = iovf(r, j)->next) {
		struct sb_index_ovf *rec = iovf(r, j);
		for (int x = 0; x < SB_INDEX_OVF_OWNERS; x++) {
			o = &rec->own[x];
			if (SB_OWN_TIERS(*o) == 0) {
				if (*free_slot == NULL)
					*free_slot = o;
			} else if (SB_OWN_WORKER(*o) == worker && SB_OWN_RANK(*o) == rank) {
				return o;
			}
		}
	}
	return NULL;
}

/* Adds `tiers` to (worker, gen, rank) on node i (a newer generation
 * replaces the old ownership). SY_ENOSPC when no overflow record is left. */
static int owner_add(struct statebus_region *r, uint32_t i, uint32_t worker, uint32_t gen,
		     uint32_t rank, uint32_t tiers)
{
	struct sb_index_hdr *h = &r->hdr->index;
	struct sb_index_node *n = inode(r, i);
	sb_index_owner *free_slot;
	sb_index_owner *o = owner_find(r, n, worker, rank, &free_slot);
	if (o != NULL) {
		uint32_t t = SB_OWN_GEN(*o) == gen ? (SB_OWN_TIERS(*o) | tiers) : tiers;
		if ((SB_OWN_TIERS(*o) & STATEBUS_TIER_PREDICTED) && !(tiers & STATEBUS_TIER_PREDICTED)) {
			/* an engine-reported tier confirms (same generation) or
			 * replaces (older one) the prediction */
			t &= ~STATEBUS_TIER_PREDICTED;
			(void)sb_pred_forget(r, i, worker, rank, SB_OWN_GEN(*o) == gen ? 1 : 0);
		}
		sb_index_owner v = SB_OWN(gen, worker, rank, t);
		if (v != *o) {
			uint32_t s = sb_seq_write_begin(&n->seq);
			CMM_STORE_SHARED(*o, v);
			sb_seq_write_end(&n->seq, s);
		}
		return SY_OK;
	}
	uint32_t newrec = 0;
	if (free_slot == NULL) {
		newrec = ovf_alloc(r, i);
		if (newrec == 0)
			return SY_ENOSPC;
		free_slot = &iovf(r, newrec)->own[0];
	}
	uint32_t s = sb_seq_write_begin(&n->seq);
	CMM_STORE_SHARED(*free_slot, SB_OWN(gen, worker, rank, tiers));
	if (newrec != 0) {
		uint32_t *link = &n->ovf;
		while (*link != 0)
			link = &iovf(r, *link)->next;
		CMM_STORE_SHARED(*link, newrec);
	}
	sb_seq_write_end(&n->seq, s);
	n->nowners++;
	CMM_STORE_SHARED(h->owners, h->owners + 1);
	return SY_OK;
}

/* Clears `tiers` of the ownerships on node i matching worker and rank
 * (rank UINT32_MAX = every rank); ownerships left without tiers are
 * dropped. With `forget`, a cleared predicted tier also releases its
 * predicted entry. Returns true if anything changed. */
static bool owner_clear(struct statebus_region *r, uint32_t i, uint32_t worker, uint32_t rank,
			uint32_t tiers, bool forget)
{
	struct sb_index_hdr *h = &r->hdr->index;
	struct sb_index_node *n = inode(r, i);
	bool open = false;
	uint32_t s = 0;
	sb_index_owner *o = &n->own0;
	uint32_t j = n->ovf;
	int x = -1;
	for (;;) {
		if (SB_OWN_TIERS(*o) != 0 && SB_OWN_WORKER(*o) == worker &&
		    (rank == UINT32_MAX || SB_OWN_RANK(*o) == rank) && (SB_OWN_TIERS(*o) & tiers)) {
			if (!open) {
				s = sb_seq_write_begin(&n->seq);
				open = true;
			}
			uint32_t t = SB_OWN_TIERS(*o) & ~tiers;
			if (forget && (SB_OWN_TIERS(*o) & tiers & STATEBUS_TIER_PREDICTED))
				(void)sb_pred_forget(r, i, worker, SB_OWN_RANK(*o), 0);
			if (t == 0) {
				CMM_STORE_SHARED(*o, 0);
				n->nowners--;
				CMM_STORE_SHARED(h->owners, h->owners - 1);
			} else {
				CMM_STORE_SHARED(*o, SB_OWN(SB_OWN_GEN(*o), worker, SB_OWN_RANK(*o), t));
			}
		}
		if (j == 0)
			break;
		if (++x == SB_INDEX_OVF_OWNERS) {
			j = iovf(r, j)->next;
			x = 0;
			if (j == 0)
				break;
		}
		o = &iovf(r, j)->own[x];
	}
	if (open)
		sb_seq_write_end(&n->seq, s);
	return open;
}

/* ------------------------------------------------------ writer: public */

static void op_begin(struct statebus_region *r)
{
	sb_assert_writer(r);
	CMM_STORE_SHARED(r->hdr->index.busy, 1);
}

static void op_end(struct statebus_region *r)
{
	stamp_pending(r);
	CMM_STORE_SHARED(r->hdr->index.busy, 0);
}

/* Parent choice among the nodes carrying `parent` (§11 "Tree shape"). */
static uint32_t find_parent(struct statebus_region *r, int64_t parent, uint32_t worker, uint32_t gen,
			    uint32_t rank)
{
	uint32_t best = 0;
	int best_score = -1;
	uint64_t best_stamp = 0;
	for (uint32_t i = *bucket_at(r, parent); i != 0; i = inode(r, i)->hnext) {
		struct sb_index_node *n = inode(r, i);
		if (n->hash != parent || (n->flags & SB_INODE_LIVE) == 0)
			continue;
		int score = 0;
		sb_index_owner o = n->own0;
		uint32_t j = n->ovf;
		for (int x = -1;;) {
			if (SB_OWN_TIERS(o) && SB_OWN_WORKER(o) == worker && SB_OWN_GEN(o) == gen) {
				int sc = SB_OWN_RANK(o) == rank ? 2 : 1;
				score = sc > score ? sc : score;
			}
			if (j == 0)
				break;
			if (++x == SB_INDEX_OVF_OWNERS) {
				j = iovf(r, j)->next;
				x = 0;
				if (j == 0)
					break;
			}
			o = iovf(r, j)->own[x];
		}
		if (score > best_score || (score == best_score && n->stamp > best_stamp)) {
			best = i;
			best_score = score;
			best_stamp = n->stamp;
		}
	}
	return best;
}

int statebus_index_store(struct statebus_region *r, uint32_t worker, uint32_t rank,
			 bool has_parent, int64_t parent, const int64_t *hashes, size_t n,
			 uint32_t tiers, uint64_t now_ns)
{
	sb_assert_writer(r);
	if (worker >= r->hdr->max_workers || rank >= r->hdr->max_dp_ranks || tiers == 0 ||
	    tiers > STATEBUS_TIER_ALL || n > STATEBUS_INDEX_CHAIN_MAX || (n > 0 && hashes == NULL))
		return SY_EINVAL;
	const struct sb_worker_rec *wr = sb_worker_at(r, worker);
	if (wr->w.state == STATEBUS_WORKER_FREE)
		return SY_ENOENT;
	uint32_t gen = wr->w.generation;
	if (n == 0)
		return SY_OK;
	struct sb_index_hdr *h = &r->hdr->index;
	op_begin(r);
	uint32_t cur = 0;
	bool crumb = false;
	if (has_parent) {
		cur = find_parent(r, parent, worker, gen, rank);
		if (cur != 0) {
			touch_up(r, cur);
		} else {
			crumb = true;
			CMM_STORE_SHARED(h->breadcrumbs, h->breadcrumbs + 1);
		}
	}
	make_room(r, cur);
	int rc = SY_OK;
	size_t i;
	for (i = 0; i < n; i++) {
		uint32_t c = find_child(r, cur, hashes[i]);
		if (c == 0) {
			c = node_alloc(r, cur);
			if (c == 0) {
				rc = SY_ENOSPC;
				break;
			}
			struct sb_index_node *nn = inode(r, c);
			nn->hash = hashes[i];
			nn->parent = cur;
			nn->own0 = SB_OWN(gen, worker, rank, tiers);
			nn->nowners = 1;
			nn->flags = SB_INODE_LIVE;
			nn->stamp = now_ns;
			if (crumb && i == 0) {
				nn->flags |= SB_INODE_CRUMB;
				nn->crumb = parent;
			}
			node_publish(r, c, cur);
		} else {
			if (owner_add(r, c, worker, gen, rank, tiers) != SY_OK) {
				rc = SY_ENOSPC;
				break;
			}
			struct sb_index_node *nn = inode(r, c);
			nn->stamp = now_ns;
			if (crumb && i == 0 && (nn->flags & SB_INODE_CRUMB) == 0) {
				nn->flags |= SB_INODE_CRUMB;
				nn->crumb = parent;
			}
			lru_unlink(r, c);
			lru_place(r, c, cur);
		}
		cur = c;
	}
	CMM_STORE_SHARED(h->stored_blocks, h->stored_blocks + i);
	if (i < n)
		CMM_STORE_SHARED(h->dropped, h->dropped + (n - i));
	op_end(r);
	return rc;
}

int statebus_index_remove(struct statebus_region *r, uint32_t worker, uint32_t rank,
			  const int64_t *hashes, size_t n, uint32_t tiers)
{
	sb_assert_writer(r);
	if (worker >= r->hdr->max_workers || rank >= r->hdr->max_dp_ranks || tiers == 0 ||
	    tiers > STATEBUS_TIER_ALL || n > STATEBUS_INDEX_CHAIN_MAX || (n > 0 && hashes == NULL))
		return SY_EINVAL;
	struct sb_index_hdr *h = &r->hdr->index;
	op_begin(r);
	for (size_t k = 0; k < n; k++) {
		/* Unlinked nodes keep hnext (I6) and are not reclaimed during
		 * the operation, so the walk survives pruning. */
		uint32_t steps = 0;
		for (uint32_t i = *bucket_at(r, hashes[k]); i != 0 && steps <= r->hdr->index_nodes;
		     i = inode(r, i)->hnext, steps++) {
			struct sb_index_node *nn = inode(r, i);
			if (nn->hash != hashes[k] || (nn->flags & SB_INODE_LIVE) == 0)
				continue;
			if (owner_clear(r, i, worker, rank, tiers | STATEBUS_TIER_PREDICTED, true))
				prune_up(r, i, 0);
		}
	}
	CMM_STORE_SHARED(h->removed_blocks, h->removed_blocks + n);
	op_end(r);
	return SY_OK;
}

/* Drops (worker, rank) ownerships (rank UINT32_MAX = all) on every node. */
static void clear_owner_everywhere(struct statebus_region *r, uint32_t worker, uint32_t rank)
{
	op_begin(r);
	uint32_t hw = r->hdr->index.node_hw;
	for (uint32_t i = 1; i <= hw; i++) {
		if ((inode(r, i)->flags & SB_INODE_LIVE) == 0)
			continue;
		if (owner_clear(r, i, worker, rank, SB_TIER_EVERY, true))
			prune_up(r, i, 0);
	}
	op_end(r);
}

int statebus_index_clear_rank(struct statebus_region *r, uint32_t worker, uint32_t rank)
{
	sb_assert_writer(r);
	if (worker >= r->hdr->max_workers || rank >= r->hdr->max_dp_ranks)
		return SY_EINVAL;
	clear_owner_everywhere(r, worker, rank);
	return SY_OK;
}

int statebus_index_clear_worker(struct statebus_region *r, uint32_t worker)
{
	sb_assert_writer(r);
	if (worker >= r->hdr->max_workers)
		return SY_EINVAL;
	clear_owner_everywhere(r, worker, UINT32_MAX);
	return SY_OK;
}

int statebus_index_reset(struct statebus_region *r)
{
	sb_assert_writer(r);
	struct statebus_hdr *hd = r->hdr;
	struct sb_index_hdr *h = &hd->index;
	CMM_STORE_SHARED(h->busy, 1);
	uint32_t *b = sb_table(r, SB_T_IBUCKETS);
	for (uint32_t i = 0; i < hd->index_buckets; i++)
		CMM_STORE_SHARED(b[i], 0); /* nothing reachable any more */
	uint64_t resets = h->resets;
	memset(h, 0, sizeof(*h));
	h->busy = 1;
	h->resets = resets + 1;
	h->hold = sb_epoch_stamp(r); /* pools reused only after this grace period */
	sb_pred_reset(r);
	(void)uatomic_add_return(&hd->index_incarnation, 1);
	CMM_STORE_SHARED(h->busy, 0);
	return SY_OK;
}

int sb_index_repair(struct statebus_region *r)
{
	if (CMM_LOAD_SHARED(r->hdr->index.busy) == 0)
		return 0;
	(void)statebus_index_reset(r);
	return 1;
}

/* ------------------------------------------------ writer: start-up check */

#define CK_BUCKET 1u /* node states in statebus_index_check() */
#define CK_LRU 2u
#define CK_RETIRED 4u
#define CK_FREE 8u

struct check {
	struct statebus_region *r;
	uint8_t *node;   /* CK_* per node, 1..node_hw */
	uint8_t *ovf;    /* 1 owned, 2 free, per overflow record 1..ovf_hw */
	uint32_t *kids;  /* live children per node */
	uint32_t *pos;   /* LRU position per live node (1 = head) */
	char *err;
	size_t cap;
};

#define CK_FAIL(c, ...)                                \
	do {                                           \
		sb_errf((c)->err, (c)->cap, __VA_ARGS__); \
		return SY_EMALFORMED;                  \
	} while (0)

/* Claims node i's overflow chain for it; *owners receives its owner count. */
static int check_owners(struct check *c, uint32_t i, uint32_t *owners)
{
	const struct sb_index_hdr *h = &c->r->hdr->index;
	const struct sb_index_node *n = inode(c->r, i);
	uint32_t k = SB_OWN_TIERS(n->own0) != 0;
	for (uint32_t j = n->ovf, steps = 0; j != 0; j = iovf(c->r, j)->next, steps++) {
		if (j > h->ovf_hw || c->ovf[j] != 0 || steps > h->ovf_hw)
			CK_FAIL(c, "node %u: overflow record %u out of range or shared", i, j);
		c->ovf[j] = 1;
		for (int x = 0; x < SB_INDEX_OVF_OWNERS; x++)
			k += SB_OWN_TIERS(iovf(c->r, j)->own[x]) != 0;
	}
	*owners = k;
	return SY_OK;
}

/* Walks a node list linked through lru_next from `head`, marking `mark`;
 * `want` nodes expected, ending at `tail` (0: not checked), each with
 * flags & `flag` == `flag` (0: flags must be 0). */
static int check_list(struct check *c, const char *what, uint32_t head, uint32_t tail,
		      uint32_t want, uint8_t mark, uint16_t flag)
{
	const struct sb_index_hdr *h = &c->r->hdr->index;
	uint32_t n = 0, last = 0, prev = 0;
	for (uint32_t i = head; i != 0; i = inode(c->r, i)->lru_next) {
		const struct sb_index_node *nd = i <= h->node_hw ? inode(c->r, i) : NULL;
		if (nd == NULL || c->node[i] & (CK_LRU | CK_RETIRED | CK_FREE) || ++n > want)
			CK_FAIL(c, "%s: node %u out of range, repeated or past %u nodes", what, i, want);
		if (flag ? (nd->flags & flag) != flag : nd->flags != 0)
			CK_FAIL(c, "%s: node %u has flags %#x", what, i, nd->flags);
		if (mark == CK_LRU) {
			if (nd->lru_prev != prev)
				CK_FAIL(c, "LRU: node %u links back to %u, not %u", i, nd->lru_prev, prev);
			c->pos[i] = n;
		}
		c->node[i] |= mark;
		prev = last = i;
	}
	if (n != want || (tail != 0 && last != tail) || (want == 0 && tail != 0))
		CK_FAIL(c, "%s: %u nodes ending at %u, header says %u ending at %u", what, n, last,
			want, tail);
	return SY_OK;
}

static int check_run(struct check *c)
{
	struct statebus_region *r = c->r;
	const struct sb_index_hdr *h = &r->hdr->index;
	uint32_t hw = h->node_hw;
	/* I1: each bucket chain holds live nodes of its own hash, once each */
	const uint32_t *b = sb_table(r, SB_T_IBUCKETS);
	uint64_t mask = r->hdr->index_buckets - 1;
	uint32_t reached = 0;
	for (uint32_t k = 0; k < r->hdr->index_buckets; k++) {
		for (uint32_t i = b[k]; i != 0; i = inode(r, i)->hnext) {
			if (i > hw || c->node[i] & CK_BUCKET)
				CK_FAIL(c, "bucket %u: node %u out of range or linked twice", k, i);
			const struct sb_index_node *n = inode(r, i);
			if ((n->flags & SB_INODE_LIVE) == 0 || bucket_no(n->hash, mask) != k)
				CK_FAIL(c, "bucket %u: node %u not live or of another bucket", k, i);
			c->node[i] |= CK_BUCKET;
			reached++;
		}
	}
	if (reached != h->nodes)
		CK_FAIL(c, "%u nodes reachable from the buckets, header says %u", reached, h->nodes);
	/* I1 parents, I2 child counts, owner sets, overflow ownership */
	uint64_t owners = 0;
	for (uint32_t i = 1; i <= hw; i++) {
		const struct sb_index_node *n = inode(r, i);
		bool live = (n->flags & SB_INODE_LIVE) != 0;
		if (live != ((c->node[i] & CK_BUCKET) != 0) ||
		    (live && (n->flags & SB_INODE_RETIRED)) || (n->seq & 1u))
			CK_FAIL(c, "node %u: flags %#x, seq %u, %s a bucket", i, n->flags, n->seq,
				c->node[i] & CK_BUCKET ? "in" : "not in");
		if (!live && (n->flags & SB_INODE_RETIRED) == 0)
			continue;
		uint32_t k;
		if (check_owners(c, i, &k) != SY_OK)
			return SY_EMALFORMED;
		if (!live)
			continue;
		if (n->parent > hw || (n->parent != 0 &&
				       (inode(r, n->parent)->flags & SB_INODE_LIVE) == 0))
			CK_FAIL(c, "node %u: parent %u is not live", i, n->parent);
		if (k != n->nowners)
			CK_FAIL(c, "node %u: %u owners, %u counted", i, k, n->nowners);
		c->kids[n->parent]++;
		owners += k;
	}
	if (owners != h->owners)
		CK_FAIL(c, "%llu owners on live nodes, header says %llu",
			(unsigned long long)owners, (unsigned long long)h->owners);
	for (uint32_t i = 1; i <= hw; i++)
		if ((c->node[i] & CK_BUCKET) && inode(r, i)->nchildren != c->kids[i])
			CK_FAIL(c, "node %u: %u children, %u counted", i, c->kids[i],
				inode(r, i)->nchildren);
	/* I3 (the eviction order relies on it), I5 */
	if (check_list(c, "LRU", h->lru_head, h->lru_tail, h->nodes, CK_LRU, SB_INODE_LIVE) != SY_OK)
		return SY_EMALFORMED;
	for (uint32_t i = 1; i <= hw; i++) {
		uint32_t p = inode(r, i)->parent;
		if ((c->node[i] & CK_LRU) && p != 0 && c->pos[i] >= c->pos[p])
			CK_FAIL(c, "LRU: node %u is not older than its parent %u", i, p);
	}
	if (check_list(c, "retire FIFO", h->ret_head, h->ret_tail, h->retired, CK_RETIRED,
		       SB_INODE_RETIRED) != SY_OK ||
	    check_list(c, "free list", h->node_free, 0, hw - h->nodes - h->retired, CK_FREE, 0) != SY_OK)
		return SY_EMALFORMED;
	/* overflow records: owned by one node or on the free list, never both */
	uint32_t nfree = 0;
	for (uint32_t j = h->ovf_free; j != 0; j = iovf(r, j)->reserved) {
		if (j > h->ovf_hw || c->ovf[j] != 0 || ++nfree > h->ovf_hw)
			CK_FAIL(c, "overflow free list: record %u out of range or in use", j);
		c->ovf[j] = 2;
	}
	uint32_t owned = 0;
	for (uint32_t j = 1; j <= h->ovf_hw; j++)
		owned += c->ovf[j] == 1;
	if (owned != h->ovf_used || owned + nfree != h->ovf_hw)
		CK_FAIL(c, "overflow records: %u owned + %u free, header says %u used of %u", owned,
			nfree, h->ovf_used, h->ovf_hw);
	return sb_pred_check(r, c->err, c->cap);
}

int statebus_index_check(struct statebus_region *r, char *err, size_t cap)
{
	sb_assert_writer(r);
	const struct sb_index_hdr *h = &r->hdr->index;
	struct check c = {.r = r, .err = err, .cap = cap};
	if (h->busy != 0)
		CK_FAIL(&c, "an update was left unfinished");
	if (h->node_hw > r->hdr->index_nodes || h->ovf_hw > r->hdr->index_overflow ||
	    (uint64_t)h->nodes + h->retired > h->node_hw || h->ovf_used > h->ovf_hw ||
	    h->ret_pending != 0)
		CK_FAIL(&c, "pool counts out of range (%u live + %u retired of %u handed out, "
			"pool %u; %u overflow records of %u, pool %u)", h->nodes, h->retired,
			h->node_hw, r->hdr->index_nodes, h->ovf_used, h->ovf_hw,
			r->hdr->index_overflow);
	c.node = calloc((size_t)h->node_hw + 1, 1);
	c.ovf = calloc((size_t)h->ovf_hw + 1, 1);
	c.kids = calloc((size_t)h->node_hw + 1, sizeof(*c.kids));
	c.pos = calloc((size_t)h->node_hw + 1, sizeof(*c.pos));
	int rc = SY_ENOMEM;
	if (c.node && c.ovf && c.kids && c.pos)
		rc = check_run(&c);
	else
		sb_errf(err, cap, "out of memory checking %u nodes", h->node_hw);
	free(c.node);
	free(c.ovf);
	free(c.kids);
	free(c.pos);
	return rc;
}

/* ---------------------------------------------------- writer: predicted */

void sb_index_op_begin(struct statebus_region *r) { op_begin(r); }
void sb_index_op_end(struct statebus_region *r) { op_end(r); }

void sb_index_unpredict(struct statebus_region *r, uint32_t node, uint32_t worker, uint32_t rank)
{
	if (node == 0 || node > r->hdr->index_nodes)
		return;
	if ((inode(r, node)->flags & SB_INODE_LIVE) == 0)
		return;
	if (owner_clear(r, node, worker, rank, STATEBUS_TIER_PREDICTED, false))
		prune_up(r, node, 0);
}

/* Predicted ownership of (worker, gen, rank) on node c, unless the
 * ownership already holds an engine-reported tier of that generation
 * (then nothing changes). Records the predicted entry first, so a
 * predicted bit never exists without one. Returns SY_OK, 1 when the
 * ownership is confirmed already, SY_ENOSPC (entry pool full). */
static int predict_on(struct statebus_region *r, uint32_t c, uint32_t worker, uint32_t gen,
		      uint32_t rank, uint64_t now_ns)
{
	struct sb_index_node *n = inode(r, c);
	sb_index_owner *free_slot;
	sb_index_owner *o = owner_find(r, n, worker, rank, &free_slot);
	if (o != NULL && SB_OWN_GEN(*o) == gen && (SB_OWN_TIERS(*o) & STATEBUS_TIER_ALL))
		return 1;
	int rc = sb_pred_touch(r, c, worker, gen, rank, now_ns);
	if (rc != SY_OK)
		return rc;
	n->flags |= SB_INODE_PRED;
	if (owner_add(r, c, worker, gen, rank, STATEBUS_TIER_PREDICTED) != SY_OK) {
		(void)sb_pred_forget(r, c, worker, rank, 0);
		return SY_ENOSPC;
	}
	return SY_OK;
}

int statebus_index_predict(struct statebus_region *r, uint32_t worker, uint32_t gen, uint32_t rank,
			   const int64_t *hashes, size_t n, uint64_t now_ns)
{
	sb_assert_writer(r);
	if (worker >= r->hdr->max_workers || rank >= r->hdr->max_dp_ranks ||
	    n > STATEBUS_INDEX_CHAIN_MAX || (n > 0 && hashes == NULL))
		return SY_EINVAL;
	const struct sb_worker_rec *wr = sb_worker_at(r, worker);
	if (wr->w.state != STATEBUS_WORKER_ACTIVE || wr->w.generation != gen)
		return SY_ESTALE;
	uint64_t cap = sb_pworker_at(r, worker)->capacity_blocks;
	if (cap != 0 && n > cap)
		n = (size_t)cap; /* the engine cannot hold more: keep the prefix */
	if (n == 0)
		return SY_OK;
	op_begin(r);
	sb_pred_sync_gen(r, worker, gen);
	make_room(r, 0);
	uint32_t cur = 0;
	int rc = SY_OK;
	for (size_t i = 0; i < n && rc == SY_OK; i++) {
		uint32_t c = find_child(r, cur, hashes[i]);
		if (c == 0) {
			if (!sb_pred_room(r, worker, now_ns)) {
				rc = SY_ENOSPC;
				break;
			}
			c = node_alloc(r, cur);
			if (c == 0) {
				rc = SY_ENOSPC;
				break;
			}
			struct sb_index_node *nn = inode(r, c);
			nn->hash = hashes[i];
			nn->parent = cur;
			nn->flags = SB_INODE_LIVE | SB_INODE_PRED;
			nn->stamp = now_ns;
			SB_BUG_ON(sb_pred_touch(r, c, worker, gen, rank, now_ns) != SY_OK);
			nn->own0 = SB_OWN(gen, worker, rank, STATEBUS_TIER_PREDICTED);
			nn->nowners = 1;
			node_publish(r, c, cur);
		} else {
			int prc = predict_on(r, c, worker, gen, rank, now_ns);
			if (prc < 0) {
				rc = prc;
				break;
			}
			lru_unlink(r, c);
			lru_place(r, c, cur);
		}
		cur = c;
	}
	op_end(r);
	return rc;
}
