/* sb-int.h — internal layout of the state-plane region (libstatebus only,
 * and white-box tests).
 *
 * Region layout (every table 64-byte aligned, in this order, offsets and
 * sizes recorded in the header so that attach can bounds-check them):
 *
 *   0      header (SB_HDR_SIZE bytes): identity, capacities, table
 *          descriptors; then one cache line each for the global epoch, the
 *          index incarnation, the statebus liveness fields, the index
 *          and affinity bookkeeping; the counters block.
 *   procs     max_procs × struct sb_proc (64 B): pid, start time, role, epoch
 *   workers   max_workers × struct sb_worker_rec: seqlock + statebus_worker
 *   load      max_workers × max_dp_ranks × struct sb_load_rec (64 B each)
 *   inflight  max_procs × max_workers × struct sb_inflight (32 B)
 *   inodes    (index_nodes + 1) × struct sb_index_node (64 B); node 0 is
 *             the root, never allocated (index.c)
 *   ibuckets  power-of-two ≥ index_nodes × uint32_t: hash-chain heads
 *   iovf      (index_overflow + 1) × struct sb_index_ovf (64 B); record 0
 *             unused (0 = none)
 *   streams   max_workers × max_dp_ranks × struct sb_stream_rec (128 B):
 *             seqlock + statebus_stream (KV-event stream state)
 *   affinity  affinity_entries × struct sb_affinity_entry (64 B): the
 *             open-addressing binding table (affinity.c)
 *   afflocks  SB_AFFINITY_LOCKS × struct sb_affinity_lock (64 B): stripe
 *             locks serialising first assignments of one key (affinity.c)
 *   prings    max_procs × struct sb_pring (128 B + 64 KiB): one prediction
 *             ring per proc slot, written by that process only (predict.c)
 *   pentries  (predict entries + 1) × struct sb_pred_entry (32 B): the
 *             predicted-ownership pool; entry 0 unused (predict.c)
 *   pbuckets  power-of-two ≥ predict entries × uint32_t: (node, worker,
 *             rank) → entry chains
 *   pworkers  max_workers × struct sb_pred_worker (128 B): each worker's
 *             predicted entries in last-predicted order, capacity, counts
 *   health    max_workers × struct sb_health_rec (128 B): passive health,
 *             stall and breaker words of each worker slot, written with
 *             single-word atomics by any process (health.c)
 *   cursors   STATEBUS_CURSORS × struct sb_cursor_rec (64 B): one rotation
 *             cursor per engine group, claimed by CAS and advanced by
 *             atomic add from any router process (cursors.c)
 *   queue     (max_procs + 1) × struct sb_queue_rec (64 B): the router
 *             queue's wake counter, concurrency tokens and depths per proc
 *             slot, the last row the statebus writer's (queue.c)
 *
 * Writer-only fields (index bookkeeping, seqlock words of workers and load)
 * are changed only by the holder of the writer lock.
 */
#ifndef SY_STATEBUS_SB_INT_H
#define SY_STATEBUS_SB_INT_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

#include "statebus.h"

#define SB_LINE 64
#define SB_ALIGNED __attribute__((aligned(SB_LINE)))
#define SB_HDR_SIZE 4096u

/* Cheap always-on invariant check (HAProxy BUG_ON): a broken invariant stops
 * loudly rather than corrupting shared memory. */
#define SB_BUG_ON(cond)                                                        \
	do {                                                                   \
		if (caa_unlikely(cond)) {                                      \
			fprintf(stderr, "statebus BUG at %s:%d: %s\n", __FILE__, \
				__LINE__, #cond);                              \
			abort();                                               \
		}                                                              \
	} while (0)

/* Bounded seqlock retries before a record reads as unknown (SY_ESTALE). */
#define SB_SEQ_RETRIES 256

enum sb_table_id {
	SB_T_PROCS = 0,
	SB_T_WORKERS,
	SB_T_LOAD,
	SB_T_INFLIGHT,
	SB_T_INODES,
	SB_T_IBUCKETS,
	SB_T_IOVF,
	SB_T_STREAMS,
	SB_T_AFFINITY,
	SB_T_AFFLOCKS,
	SB_T_PRINGS,
	SB_T_PENTRIES,
	SB_T_PBUCKETS,
	SB_T_PWORKERS,
	SB_T_HEALTH,
	SB_T_CURSORS,
	SB_T_QUEUE,
	SB_T_COUNT_,
};

struct sb_table {
	uint64_t off;    /* bytes from region start, multiple of 64 */
	uint64_t size;   /* bytes, = count × stride rounded up to 64 */
	uint32_t count;  /* elements */
	uint32_t stride; /* bytes per element */
};

/* Fill byte of index entries reclaimed after a grace period (index.c). */
#define SB_POISON 0x6b

struct statebus_hdr {
	/* identity and layout — immutable once the magic is published */
	uint64_t magic;
	uint32_t layout_version;
	uint32_t header_size;
	uint64_t total_size;
	uint32_t max_workers;
	uint32_t max_dp_ranks;
	uint32_t max_procs;
	uint32_t reserved0;
	uint64_t load_fresh_ns;
	uint64_t created_wall_ns;
	uint32_t index_nodes;
	uint32_t index_overflow;
	uint32_t index_buckets;               /* power of two */
	uint32_t affinity_entries;            /* power of two */
	struct sb_table tables[SB_T_COUNT_];

	uint64_t global_epoch SB_ALIGNED;      /* ≥ 1; advanced by sb_epoch_stamp() */
	uint64_t index_incarnation SB_ALIGNED;
	uint64_t streams_incarnation;          /* index incarnation the stream
	                                          records' cursors belong to (0 =
	                                          none); in the padding of the
	                                          incarnation's line */
	/* Proc slots ever claimed: 1 + the highest slot index a process has
	 * held (raised by statebus_proc_claim, never lowered). In-flight rows
	 * at or past it are zero, so readers sum only the rows below it
	 * (clamped to max_procs: nothing in the region is trusted). */
	uint32_t procs_hw SB_ALIGNED;

	struct {
		int32_t pid;
		uint32_t index_mode;   /* enum statebus_index_mode (statebus.index) */
		uint64_t start_time;
		uint64_t heartbeat_ns;
	} daemon SB_ALIGNED;

	struct sb_index_hdr {                  /* writer-only, read by stats */
		uint32_t busy;                 /* 1 while an update runs (repair) */
		uint32_t node_hw;              /* nodes ever handed out (1-based) */
		uint32_t node_free;            /* free list head (lru_next links) */
		uint32_t nodes;                /* live nodes */
		uint32_t lru_head;             /* least recently used (a leaf) */
		uint32_t lru_tail;             /* most recently used */
		uint32_t ret_head;             /* retire FIFO (lru_next links) */
		uint32_t ret_tail;
		uint32_t retired;              /* nodes in the retire FIFO */
		uint32_t ovf_hw;               /* overflow records ever handed out */
		uint32_t ovf_free;             /* free list head (next links) */
		uint32_t ovf_used;
		uint32_t ret_pending;          /* first FIFO node not yet stamped */
		uint32_t reserved;
		uint64_t hold;                 /* after a reset: no pool entry is
		                                  reused until the epoch passes it */
		uint64_t owners;
		uint64_t stored_blocks;
		uint64_t removed_blocks;
		uint64_t evictions;
		uint64_t pruned;
		uint64_t dropped;
		uint64_t breadcrumbs;
		uint64_t resets;
		uint32_t pe_hw;                /* predicted entries ever handed out */
		uint32_t pe_free;              /* their free list (next links) */
		uint32_t pe_used;              /* predicted entries in use */
		uint32_t reserved1;
		uint64_t pe_pool_full;         /* predicted blocks not recorded: pool full */
	} index SB_ALIGNED;

	struct sb_predict_hdr {                /* writer-only (the draining statebus) */
		uint64_t drained;
		uint64_t applied;
		uint64_t stale;
		uint64_t malformed;
		uint64_t lag_ns_sum;
		uint64_t lag_ns_max;
	} predict SB_ALIGNED;

	struct sb_affinity_hdr {               /* counters, atomic adds from any process */
		uint64_t binds;
		uint64_t bind_conflicts;
		uint64_t rebinds;
		uint64_t rebind_conflicts;
		uint64_t expired;
		uint64_t invalidated;
		uint64_t abandoned;
		uint64_t full;
		uint64_t busy;
		uint64_t lock_steals;
		uint64_t sweeps;
	} affinity SB_ALIGNED;

	uint64_t counters[STATEBUS_COUNTERS_MAX] SB_ALIGNED;
};
_Static_assert(sizeof(struct statebus_hdr) <= SB_HDR_SIZE, "header fits its page");
_Static_assert(offsetof(struct statebus_hdr, procs_hw) ==
		       offsetof(struct statebus_hdr, index_incarnation) + SB_LINE,
	       "the incarnation line keeps its size");

struct sb_proc {
	int32_t pid;          /* 0 = free; claimed by CAS 0 → pid */
	uint32_t role;
	uint64_t start_time;  /* 0 while being claimed */
	uint64_t epoch;       /* STATEBUS_EPOCH_IDLE or the epoch read at enter */
	uint64_t claimed_ns;
} SB_ALIGNED;
_Static_assert(sizeof(struct sb_proc) == SB_LINE, "one proc slot per cache line");

struct sb_worker_rec {
	uint32_t seq;         /* seqlock: odd while the writer updates */
	uint32_t reserved;
	struct statebus_worker w;
} SB_ALIGNED;

/* One (worker, DP rank) LoadStat record: exactly one cache line, so a
 * seqlock read touches one line (DESIGN §8: ~140 ns when split). */
struct sb_load_rec {
	uint32_t seq;
	uint32_t flags;
	uint32_t num_running_reqs;
	uint32_t num_waiting_reqs;
	uint32_t num_tokens;
	uint32_t max_total_num_tokens;
	uint32_t num_waiting_uncached_tokens; /* SCRAPED: kv_usage_ppm */
	uint32_t num_total_tokens;            /* SCRAPED: prompt_tokens */
	uint32_t max_running_requests;        /* SCRAPED: generation_tokens */
	float prefill_tokens_per_s;
	uint32_t worker_gen;
	uint32_t reserved;
	uint64_t recv_mono_ns;
	uint64_t dispatches_at_recv;
} SB_ALIGNED;
_Static_assert(sizeof(struct sb_load_rec) == SB_LINE, "load record is one cache line");

struct sb_inflight {
	int64_t in_flight;
	uint64_t dispatches;
	uint64_t last_dispatch_ns;
	uint64_t reserved;
};
_Static_assert(sizeof(struct sb_inflight) == 32, "in-flight cell is 32 bytes");

/* One KV-event stream (worker × rank): seqlock + the public record. */
struct sb_stream_rec {
	uint32_t seq;
	uint32_t reserved;
	struct statebus_stream s;
} SB_ALIGNED;
_Static_assert(sizeof(struct sb_stream_rec) == 2 * SB_LINE, "stream record is two cache lines");

/* One worker slot's health words (health.c): the first cache line is what
 * a pick reads, the second holds counters. The breaker word packs
 * (since_ns << 2) | enum statebus_cb_state so that one CAS moves both. */
struct sb_health_rec {
	uint32_t worker_gen;    /* set by the writer when the slot is added */
	uint32_t down_reason;
	uint64_t down_ns;       /* passive down since, 0 = up */
	uint64_t stall_ns;      /* stalled since, 0 = not */
	uint64_t cb;            /* breaker word */
	uint64_t last_byte_ns;
	uint64_t cleared_ns;
	uint32_t cb_failures;
	uint32_t reserved;
	uint64_t reserved1;
	uint64_t downs SB_ALIGNED;
	uint64_t stalls;
	uint64_t cb_opens;
	uint64_t recoveries;
} SB_ALIGNED;
_Static_assert(sizeof(struct sb_health_rec) == 2 * SB_LINE, "health record is two cache lines");

/* One rotation cursor (cursors.c): key 0 = free, claimed by CAS and never
 * released; value advanced by atomic fetch-and-add. */
struct sb_cursor_rec {
	uint64_t key;
	uint64_t value;
	uint64_t reserved[6];
} SB_ALIGNED;
_Static_assert(sizeof(struct sb_cursor_rec) == SB_LINE, "cursor is one cache line");
/* One proc slot's router-queue words (queue.c, statebus-queue.h). */
struct sb_queue_rec {
	uint64_t wakes;       /* capacity can have freed (bumped by the owner) */
	int64_t running;      /* concurrency tokens held by the owner */
	uint32_t queued[4];   /* depth per class (STATEBUS_QCLASS_COUNT_) */
	uint64_t outcomes[4]; /* per enum statebus_queue_outcome */
} SB_ALIGNED;
_Static_assert(sizeof(struct sb_queue_rec) == SB_LINE, "queue record is one cache line");

/* Radix index (index.c). One owner entry is one 64-bit word, so readers
 * load it in one access: generation (bits 0–31), worker slot (32–47), DP
 * rank (48–58), tier bits (59–63: STATEBUS_TIER_*, PREDICTED the highest).
 * tiers == 0 (word 0) marks a free entry. */
typedef uint64_t sb_index_owner;
#define SB_OWN(gen, worker, rank, tiers)                                        \
	((uint64_t)(uint32_t)(gen) | (uint64_t)((worker) & 0xffffu) << 32 |    \
	 (uint64_t)((rank) & 0x7ffu) << 48 | (uint64_t)((tiers) & 0x1fu) << 59)
#define SB_OWN_GEN(o) ((uint32_t)(o))
#define SB_OWN_WORKER(o) ((uint32_t)((o) >> 32) & 0xffffu)
#define SB_OWN_RANK(o) ((uint32_t)((o) >> 48) & 0x7ffu)
#define SB_OWN_TIERS(o) ((uint32_t)((o) >> 59))
/* The owner word without its tier bits (identity of an ownership). */
#define SB_OWN_KEY_MASK (~(UINT64_C(0x1f) << 59))
/* Every tier an ownership can hold, predicted included. */
#define SB_TIER_EVERY (STATEBUS_TIER_ALL | STATEBUS_TIER_PREDICTED)

#define SB_INDEX_RANK_MAX 2047u
#define SB_INDEX_OVF_OWNERS 7
#define SB_INODE_LIVE 0x1u     /* flags: linked in the index */
#define SB_INODE_CRUMB 0x2u    /* flags: crumb holds the missing parent's hash */
#define SB_INODE_RETIRED 0x4u  /* flags: in the retire FIFO */
#define SB_INODE_PRED 0x8u     /* flags: a predicted owner was added since allocation
                                  (node_unlink then releases predicted entries) */

/* One index node = one block hash at one tree position: one cache line.
 * Reader-visible: hnext, parent, hash (immutable while linked, except
 * hnext, which changes by single atomic stores), and the owner set (own0 +
 * the ovf chain) under seq. The rest is writer-only; lru_next/lru_prev also
 * link the free list and the retire FIFO, stamp holds the retire epoch. */
struct sb_index_node {
	uint32_t seq;          /* seqlock of the owner set */
	uint32_t hnext;        /* next node of the same hash bucket, 0 = end */
	uint32_t parent;       /* parent node, 0 = root */
	uint32_t ovf;          /* first overflow owner record, 0 = none */
	int64_t hash;          /* block hash (SGLang i64 id) */
	sb_index_owner own0;
	uint32_t lru_prev;     /* writer: LRU order (older) */
	uint32_t lru_next;     /* writer: LRU order (newer); free/retire link */
	uint32_t nchildren;    /* writer */
	uint16_t nowners;      /* writer: owner entries in use */
	uint16_t flags;        /* writer: SB_INODE_* */
	uint64_t stamp;        /* writer: last store (ns); retire epoch when retired */
	int64_t crumb;         /* writer: breadcrumb parent hash (SB_INODE_CRUMB) */
} SB_ALIGNED;
_Static_assert(sizeof(struct sb_index_node) == SB_LINE, "index node is one cache line");

/* Overflow owner record: 7 more owners of one node, chained. Belongs to its
 * node until the node is reclaimed (never recycled while the node lives). */
struct sb_index_ovf {
	uint32_t next;         /* next record of the same node, 0 = end */
	uint32_t reserved;     /* free-list link while free */
	sb_index_owner own[SB_INDEX_OVF_OWNERS];
} SB_ALIGNED;
_Static_assert(sizeof(struct sb_index_ovf) == SB_LINE, "overflow record is one cache line");

/* Affinity store (affinity.c). The state word packs everything a CAS must
 * change at once: status (bits 62–63, enum statebus_affinity_state),
 * version (48–61, bumped by every claim so a reader can tell that key
 * fields did not change under it), worker slot (32–47) and generation
 * (0–31; the claimer's pid while CLAIMING). */
#define SB_AFF_STATUS(s) ((uint32_t)((s) >> 62))
#define SB_AFF_VERSION(s) ((uint32_t)((s) >> 48) & 0x3fffu)
#define SB_AFF_SLOT(s) ((uint32_t)((s) >> 32) & 0xffffu)
#define SB_AFF_GEN(s) ((uint32_t)(s))
#define SB_AFF_STATE(status, version, slot, gen)                                   \
	((uint64_t)(status) << 62 | (uint64_t)((version) & 0x3fffu) << 48 |         \
	 (uint64_t)((slot) & 0xffffu) << 32 | (uint64_t)(uint32_t)(gen))
#define SB_AFFINITY_LOCKS 256u

/* One binding: one cache line. key/kind/ttl/created are written only while
 * the entry is CLAIMING (by its claimer alone) and are immutable while it is
 * BOUND; last_used_ns is stored by any process (relaxed, monotonic-ish). */
struct sb_affinity_entry {
	uint64_t state;
	uint64_t key_lo;
	uint64_t key_hi;
	uint64_t last_used_ns;
	uint64_t created_ns;
	uint32_t ttl_ms;
	uint32_t kind;
	uint64_t reserved[2];
} SB_ALIGNED;
_Static_assert(sizeof(struct sb_affinity_entry) == SB_LINE, "affinity entry is one cache line");

/* A stripe lock: pid of the holder, 0 = free. */
struct sb_affinity_lock {
	int32_t pid;
	uint32_t reserved;
	uint64_t taken_ns;
} SB_ALIGNED;
_Static_assert(sizeof(struct sb_affinity_lock) == SB_LINE, "affinity lock is one cache line");

/* Writer-lock repair of an index left mid-update by a dead writer: resets
 * it (index.c). Returns 1 when it did, else 0. */
int sb_index_repair(struct statebus_region *r);

/* Clears slot `slot`'s health record and gives it generation `gen`
 * (health.c). [writer] */
void sb_health_reset(struct statebus_region *r, uint32_t slot, uint32_t gen);

/* Epoch primitives of the index's deferred reclamation (epoch.c).
 * sb_epoch_stamp: returns the epoch to stamp blocks unpublished just before
 * (write barrier first) and advances the global epoch. sb_epoch_safe:
 * every retired item stamped strictly below the returned epoch is
 * unreachable by any reader (full barriers around the reader scan). */
uint64_t sb_epoch_stamp(struct statebus_region *r);
uint64_t sb_epoch_safe(struct statebus_region *r);

/* Table base (bounds were checked at open, so a cast is safe). */
static inline void *sb_table(const struct statebus_region *r, enum sb_table_id t)
{
	return r->base + r->hdr->tables[t].off;
}

static inline struct sb_proc *sb_proc_at(const struct statebus_region *r, uint32_t i)
{
	return (struct sb_proc *)sb_table(r, SB_T_PROCS) + i;
}

static inline struct sb_worker_rec *sb_worker_at(const struct statebus_region *r, uint32_t i)
{
	return (struct sb_worker_rec *)((uint8_t *)sb_table(r, SB_T_WORKERS) +
					(uint64_t)i * r->hdr->tables[SB_T_WORKERS].stride);
}

static inline struct sb_load_rec *sb_load_at(const struct statebus_region *r, uint32_t w, uint32_t rank)
{
	return (struct sb_load_rec *)sb_table(r, SB_T_LOAD) + (uint64_t)w * r->hdr->max_dp_ranks + rank;
}

static inline struct sb_inflight *sb_inflight_at(const struct statebus_region *r, uint32_t p, uint32_t w)
{
	return (struct sb_inflight *)sb_table(r, SB_T_INFLIGHT) + (uint64_t)p * r->hdr->max_workers + w;
}

static inline struct sb_stream_rec *sb_stream_at(const struct statebus_region *r, uint32_t w, uint32_t rank)
{
	return (struct sb_stream_rec *)sb_table(r, SB_T_STREAMS) + (uint64_t)w * r->hdr->max_dp_ranks + rank;
}

static inline struct sb_health_rec *sb_health_at(const struct statebus_region *r, uint32_t w)
{
	return (struct sb_health_rec *)sb_table(r, SB_T_HEALTH) + w;
}

/* Prediction ring of one proc slot (predict.c). Single producer (the
 * process owning the slot) and single consumer (the statebus writer):
 * the producer writes records at `tail`, then publishes tail with release
 * order; the consumer reads up to tail (acquire), then publishes head.
 * Positions are free-running word counts (index = pos mod ring words). A
 * record: STATEBUS_PREDICT_HDR_WORDS header words (w0 = magic 0x7072 |
 * n hashes << 16 | worker << 32 | rank << 48; w1 = generation | model tag
 * << 32; w2 = dispatch time ns; w3 = chain length before truncation), then
 * n block hashes. The consumer trusts none of it: bad positions or a bad
 * record skip to tail (counted). */
#define SB_PRED_MAGIC 0x7072u
struct sb_pring {
	struct {                      /* written by the producer only */
		uint64_t tail;
		uint64_t pushed;
		uint64_t full;
		uint64_t truncated;
	} prod SB_ALIGNED;
	struct {                      /* written by the consumer only */
		uint64_t head;
	} cons SB_ALIGNED;
	uint64_t words[STATEBUS_PREDICT_RING_WORDS];
} SB_ALIGNED;

/* One predicted ownership (node, worker, rank) with its last prediction
 * time; linked in its worker's list (oldest first) and in its hash chain.
 * Writer-only: readers see predicted ownership through the owner words. */
struct sb_pred_entry {
	uint32_t node;    /* index node, 0 = free entry */
	uint32_t hnext;   /* next entry of the same bucket; free-list link */
	uint32_t prev;    /* worker list: older */
	uint32_t next;    /* worker list: newer */
	uint32_t gen;     /* worker generation */
	uint16_t worker;
	uint16_t rank;
	uint64_t last_ns; /* CLOCK_MONOTONIC of the last prediction */
};
_Static_assert(sizeof(struct sb_pred_entry) == 32, "predicted entry is 32 bytes");

/* Per worker slot: the list of its predicted entries and its counters.
 * List and counts are writer-only (cleared by an index reset); capacity
 * and cache_signal are set by the statebus and survive a reset. */
struct sb_pred_worker {
	uint32_t head;            /* oldest prediction, 0 = none */
	uint32_t tail;            /* newest */
	uint32_t gen;             /* generation of the entries listed */
	uint32_t cache_signal;    /* enum statebus_cache_signal */
	uint64_t capacity_blocks; /* 0 = pool bound only */
	uint64_t blocks;
	uint64_t predicted, confirmed, expired, evicted, removed;
	uint64_t reserved[6];
} SB_ALIGNED;
_Static_assert(sizeof(struct sb_pred_worker) == 2 * SB_LINE, "pred worker is two lines");

/* Predicted entries in a region of `index_nodes` nodes (predict.c). */
static inline uint32_t sb_pred_entries_for(uint32_t index_nodes) { return index_nodes / 2; }

/* Predicted-entry bookkeeping, called by index.c inside a writer operation
 * (predict.c). touch: records or refreshes (node, worker, gen, rank) as
 * the worker's newest prediction at now_ns; returns SY_OK or SY_ENOSPC
 * (pool exhausted, counted). forget: drops its entry if any and counts it
 * under `why` (0 removed, 1 confirmed); returns true if one existed.
 * forget_node: drops every entry of node i (node unlinked). reset: empties
 * the pool and the worker lists (index reset). */
int sb_pred_touch(struct statebus_region *r, uint32_t node, uint32_t worker, uint32_t gen,
		  uint32_t rank, uint64_t now_ns);
bool sb_pred_forget(struct statebus_region *r, uint32_t node, uint32_t worker, uint32_t rank,
		    int why);
void sb_pred_reset(struct statebus_region *r);
/* Structural check of the predicted-entry pool (statebus_index_check):
 * counts within the pool, every worker list bounded, doubly linked, of
 * its own worker, entries naming a node in range, listed = in use.
 * SY_OK or SY_EMALFORMED with the first problem in err. */
int sb_pred_check(const struct statebus_region *r, char *err, size_t cap);
/* room: true when a new entry for `worker` can be recorded (evicting the
 * worker's oldest entry predicted before now_ns if the pool is full).
 * sync_gen: drops the worker's entries of another generation than `gen`
 * and restarts its counts (call before walking a chain). */
bool sb_pred_room(struct statebus_region *r, uint32_t worker, uint64_t now_ns);
/* Reader side (inside a read bracket): last prediction time (CLOCK_MONOTONIC
 * ns) of the entry (node, worker, rank), 0 when none is found. Reads the
 * writer-only pool with single loads and a bounded chain walk: an entry
 * released or reused meanwhile gives 0 or another plausible stamp, never a
 * fault. */
uint64_t sb_pred_last_ns_read(const struct statebus_region *r, uint32_t node, uint32_t worker,
			      uint32_t rank);
void sb_pred_sync_gen(struct statebus_region *r, uint32_t worker, uint32_t gen);

/* index.c for predict.c: clears the predicted ownership (worker, rank) of
 * node i (any generation) and prunes what it leaves ownerless; does not
 * touch the entry pool. */
void sb_index_unpredict(struct statebus_region *r, uint32_t node, uint32_t worker, uint32_t rank);
/* index.c: op bracket of a writer operation (busy word, retire stamping). */
void sb_index_op_begin(struct statebus_region *r);
void sb_index_op_end(struct statebus_region *r);

static inline struct sb_pring *sb_pring_at(const struct statebus_region *r, uint32_t p)
{
	return (struct sb_pring *)sb_table(r, SB_T_PRINGS) + p;
}

static inline struct sb_pred_entry *sb_pentry_at(const struct statebus_region *r, uint32_t i)
{
	return (struct sb_pred_entry *)sb_table(r, SB_T_PENTRIES) + i;
}

static inline struct sb_pred_worker *sb_pworker_at(const struct statebus_region *r, uint32_t w)
{
	return (struct sb_pred_worker *)sb_table(r, SB_T_PWORKERS) + w;
}

/* Seqlock, writer side (writer lock held): odd → write → even. */
static inline uint32_t sb_seq_write_begin(uint32_t *seq)
{
	uint32_t s = CMM_LOAD_SHARED(*seq);
	SB_BUG_ON(s & 1u);
	CMM_STORE_SHARED(*seq, s + 1);
	cmm_smp_wmb();
	return s;
}

static inline void sb_seq_write_end(uint32_t *seq, uint32_t s)
{
	cmm_smp_wmb();
	CMM_STORE_SHARED(*seq, s + 2);
}

/* Seqlock, reader side: begin returns false while odd (a write is in
 * progress); retry returns true when the copy must be discarded. */
static inline bool sb_seq_read_begin(const uint32_t *seq, uint32_t *s)
{
	*s = CMM_LOAD_SHARED(*seq);
	cmm_smp_rmb();
	return (*s & 1u) == 0;
}

static inline bool sb_seq_read_retry(const uint32_t *seq, uint32_t s)
{
	cmm_smp_rmb();
	return CMM_LOAD_SHARED(*seq) != s;
}

static inline void sb_assert_writer(const struct statebus_region *r)
{
	SB_BUG_ON(!r->writer_locked);
}

/* /proc/<pid>/stat: start time (field 22, clock ticks since boot) and
 * whether the process is alive (exists and is not a zombie). Returns
 * SY_OK, or SY_ENOENT when gone. pid 0 = self. */
int sb_proc_stat(int32_t pid, uint64_t *start_time);

/* Writer-lock repair of records left odd by a killed writer (load.c,
 * workers.c). Return the number of records repaired. */
int sb_load_repair(struct statebus_region *r);
int sb_workers_repair(struct statebus_region *r);
int sb_streams_repair(struct statebus_region *r);

/* Σ of the in-flight dispatch counters of worker slot w (inflight.c). */
uint64_t sb_inflight_dispatches(const struct statebus_region *r, uint32_t w);

/* Opens the region file (region_file.c): parent directory without symlinks
 * of other users, the file exclusive-created 0640 (STATEBUS_CREATE, when
 * absent) or opened O_NOFOLLOW and judged by its owner, mode, type and link
 * count; with `group` (creators) the file is chgrp'd to it, mode 0640.
 * flags: STATEBUS_CREATE / STATEBUS_READ_ONLY. *fd_out: the open file.
 * Errors: SY_EPERM (refused: symlink, other owner, group/other-writable,
 * not a regular file, hard-linked; or permission denied), SY_ENOENT (absent,
 * or no such group), SY_EINVAL (path names no file), SY_EIO, SY_ENOMEM. */
int sb_region_file_open(const char *path, int flags, const char *group, int *fd_out,
			char *err, size_t cap);

/* Writes a formatted message into err (cap bytes). */
void sb_errf(char *err, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
