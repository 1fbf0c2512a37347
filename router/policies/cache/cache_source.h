/* cache_source.h — where cache_aware learns which engines hold a request's
 * prefix (DESIGN.md §4 step 3, §9; reference/policy-defaults.md §2 steps 1–2;
 * SGLang CacheSource / PrefixMemo of policies_reorg/cache_aware.rs).
 *
 * The chain. A request's SGLang block-hash chain (sglang-wire.md §11) is
 * computed once per request: block size and bigram mode come from the
 * workers of the request's model in the fleet snapshot (the statebus's
 * per-model oracle has already refused workers that disagree, DESIGN §9:
 * the first worker of the model, in ID order, with a cache signal, an
 * accepted KV stream and a block size decides), the token IDs from the
 * prepared request (the first batch item), the seed from its cache_salt.
 * Hashing goes through the generation's per-process digest memo
 * (digest_memo.h). query_blocks = the chain's length.
 *
 * Sources. A memo entry is keyed by source:
 *   local   — this host's radix index: statebus_index_match() inside a read
 *             bracket (the router process has a claimed proc slot);
 *             per (worker slot, generation) the max depth over DP ranks.
 *   indexer — another host's statebus, asked over ZeroMQ (DEALER to its
 *             statebus.query_endpoint; statebus-query.h, docs/query.md);
 *             per worker URL (exact string) the max depth over ranks.
 * Depths are capped at query_blocks. Outcomes of a lookup:
 *   PREFIX_FOUND       depths known (an empty list is a confirmed miss);
 *   PREFIX_NO_CHAIN    nothing to look up (no token IDs — tokenizer off —,
 *                      an empty prompt, or no block size known for the
 *                      model): a miss;
 *   PREFIX_UNAVAILABLE the indexer did not answer usefully — timeout,
 *                      unreachable, overloaded (its answer, or our own
 *                      in-flight bound), too large — a miss that stays
 *                      distinguishable from a confirmed one (`why`);
 *   PREFIX_REJECTED    the indexer refused the query (model or block size
 *                      mismatch, a reply we cannot decode): cache_aware
 *                      answers PICK_INVALID_SIGNAL.
 *
 * The memo (struct prefix_memo, pick_request.memo) lives for one request:
 * every bucket attempt and every group pick of the request reads the same
 * entries; each pick still filters the depths to its own candidates and
 * runs its own admission. prefix_memo_fill() fills it from the request's
 * resolved buckets (router_select_begin, router/core/select.h), before any
 * pick. policy_pick is synchronous: a local entry missing at pick time is
 * looked up then (cheap, never blocks); an indexer entry missing or still
 * waiting at pick time reads as unavailable (timeout) — a pick never waits
 * on a socket.
 *
 * Waiting. prefix_memo_fill(.., PREFIX_FILL_SEND) sends each indexer query
 * without waiting (ZMQ_DONTWAIT: a query that cannot be sent at once —
 * no connection yet — is unavailable, unreachable) and leaves its entry
 * pending: m->n_pending > 0. The source keeps a table of its waiting
 * queries (id → memo entry, at most max_inflight); cache_source_drain(),
 * called when the socket's ZMQ_FD turns readable, matches replies by id and
 * completes their entries, calling the memo's on_ready when its last one
 * completes. A reply after its entry's deadline (sent + timeout_ms) leaves
 * the entry unavailable (timeout) and counts as late; prefix_memo_expire()
 * times out what the deadline passed; prefix_memo_cancel() (the request
 * ended) takes the memo's waiters out of their sources' tables — their
 * replies then count as late. PREFIX_FILL_WAIT does the same but waits on
 * the socket (zmq_poll) up to the deadline: for synchronous callers
 * (router_select: tests, benchmarks, tools), never the data plane.
 *
 * Event loop. The socket of an indexer source is opened lazily (or by
 * cache_source_open) in the process that uses it; the process's event-loop
 * binding (cache_source_set_loop) is told of each socket opened (its ZMQ_FD,
 * edge-triggered) and before each close. The binding is optional: without
 * one, only PREFIX_FILL_WAIT completes entries.
 *
 * In-flight bound: a query whose reply did not come in time stays counted
 * until its late reply is drained; when max_inflight are outstanding the
 * next query is not sent (PREFIX_UNAVAILABLE, overloaded), and when none of
 * them is still waiting the socket is rebuilt, which drops them all.
 * Sockets are closed with the generation.
 *
 * Ownership: sources are built and owned by the configuration generation
 * and are process-local; policies borrow them. The memo's arrays grow as
 * needed and are kept across resets (no allocation per request in the
 * steady state when a memo is reused). Not thread-safe: one event loop per
 * process.
 */
#ifndef SY_ROUTER_POLICIES_CACHE_SOURCE_H
#define SY_ROUTER_POLICIES_CACHE_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "router/policies/cache/digest_memo.h"
#include "router/core/prepare.h"
#include "statebus-query.h"
#include "statebus.h"

#define PREFIX_MEMO_MAX_SOURCES 8u  /* distinct sources per generation */
#define CACHE_SOURCE_LOCAL_KEY 0u   /* memo key of the local source */
#define CACHE_SOURCE_DEFAULT_TIMEOUT_MS 100u  /* SGLang indexer timeout */
#define CACHE_SOURCE_DEFAULT_MAX_INFLIGHT 32u /* SGLang: 32 queries in flight */

enum cache_source_kind {
	CACHE_SOURCE_LOCAL = 0,
	CACHE_SOURCE_INDEXER = 1,
};

enum prefix_status {
	PREFIX_FOUND = 0,
	PREFIX_NO_CHAIN,
	PREFIX_UNAVAILABLE,
	PREFIX_REJECTED,
};

/* Why an indexer lookup is PREFIX_UNAVAILABLE (SGLang's indexer errors). */
enum prefix_unavailable {
	PREFIX_WHY_NONE = 0,
	PREFIX_WHY_TIMEOUT,
	PREFIX_WHY_UNREACHABLE,
	PREFIX_WHY_OVERLOADED,
	PREFIX_WHY_TOO_LARGE,
};

/* Static names: "found", "no_chain", "unavailable", "rejected";
 * "none", "timeout", "unreachable", "overloaded", "too_large". */
const char *prefix_status_name(enum prefix_status s);
const char *prefix_unavailable_name(enum prefix_unavailable w);

/* Counters of one source (process-local, since the generation began). */
struct cache_source_stats {
	uint64_t lookups;       /* lookups made (one per request that needed it) */
	uint64_t found;         /* PREFIX_FOUND answers */
	uint64_t no_chain;      /* requests with nothing to look up (no chain) */
	uint64_t unavailable[PREFIX_WHY_TOO_LARGE + 1]; /* by why */
	uint64_t rejected;
	uint64_t late_replies;  /* indexer replies drained after their timeout */
};

struct prefix_memo;

/* A waiting query of an indexer source: reply `id` completes the source's
 * entry in `memo` (borrowed; the memo cancels its waits before it goes). */
struct cache_source_wait {
	uint64_t id;
	struct prefix_memo *memo;
};

/* One prefix source. Initialise with cache_source_init_local / _indexer. */
struct cache_source {
	enum cache_source_kind kind;
	uint32_t key;             /* memo key: CACHE_SOURCE_LOCAL_KEY, or ≥ 1 */
	char *endpoint;           /* indexer: ZeroMQ endpoint (owned) */
	uint32_t timeout_ms;      /* indexer: per query */
	uint32_t max_inflight;    /* indexer: outstanding queries */
	/* indexer connection (process-local, lazily opened) */
	void *zctx, *sock;
	int pid;                  /* process that opened them */
	uint64_t next_id;
	uint32_t inflight;
	struct statebus_query_buf out;
	uint8_t *in;              /* reply frame buffer (STATEBUS_QUERY_MAX_BYTES) */
	struct statebus_query_match *matches; /* decode scratch */
	struct cache_source_wait *waits;  /* waiting queries, n_waits ≤ max_inflight
					     (≤ inflight), unordered */
	uint32_t n_waits;
	void *watch;              /* the event-loop binding's handle, NULL = none */
	struct cache_source_stats stats;
};

/* A process's event-loop binding of indexer sockets. watch(): the socket of
 * `s` was opened, its ZMQ_FD is `fd` (owned by ZeroMQ: never close it;
 * edge-triggered: on each notification call cache_source_drain); store a
 * handle in s->watch; returns 0, or -1 (then the source works only with
 * PREFIX_FILL_WAIT). unwatch(): the socket is about to close; s->watch is
 * the handle (cleared by the caller). */
struct cache_source_loop {
	int (*watch)(void *ctx, struct cache_source *s, int fd);
	void (*unwatch)(void *ctx, struct cache_source *s);
	void *ctx;
};

/* Sets this process's binding (borrowed, lives as long as the process;
 * NULL = none). Sockets opened before keep their state. */
void cache_source_set_loop(const struct cache_source_loop *loop);

/* The local source (key 0). Never fails. */
void cache_source_init_local(struct cache_source *s);

/* An indexer source with memo key `key` (≥ 1) asking `endpoint` (copied);
 * timeout_ms / max_inflight 0 = defaults. Errors: SY_EINVAL, SY_ENOMEM. */
int cache_source_init_indexer(struct cache_source *s, uint32_t key, const char *endpoint,
			      uint32_t timeout_ms, uint32_t max_inflight);

/* Closes sockets and frees what the source owns. Entries still waiting on
 * it complete as unavailable (unreachable). */
void cache_source_close(struct cache_source *s);

/* Opens an indexer's socket in this process now (connecting takes a moment;
 * a query sent before the connection exists is unreachable). A local source
 * or an open socket: no-op. Errors: SY_ENOMEM, SY_EIO. */
int cache_source_open(struct cache_source *s);

/* Receives every reply waiting on the indexer socket (ZMQ_DONTWAIT until
 * EAGAIN, then ZMQ_EVENTS re-checked, as ZMQ_FD is edge-triggered), at
 * `now_ns` (CLOCK_MONOTONIC): a reply completes its waiting entry (or, past
 * the entry's deadline, times it out), any other counts as late; a memo
 * whose last pending entry completes has its on_ready called. Returns the
 * number of replies read (0 when none, or no socket). */
int cache_source_drain(struct cache_source *s, uint64_t now_ns);

/* One source's answer for the request. */
struct prefix_depth {
	uint32_t slot;        /* local: worker slot; indexer: UINT32_MAX */
	uint32_t generation;  /* local: slot generation */
	const char *url;      /* indexer: worker URL (NUL-terminated, in the
				 entry's name buffer); local: NULL */
	uint32_t blocks;      /* max over DP ranks, ≤ query_blocks, ≥ 1 */
	uint32_t predicted;   /* of `blocks`, those past the engine-confirmed
				 prefix that only a prediction holds, ≤ blocks
				 (0 from an indexer that sent no predicted
				 fields: its depth counts them as held) */
	bool approximate;     /* the worker has no KV events: predictions are
				 its only cache signal (approximate mode) */
	uint32_t predicted_age_ms; /* age of the deepest predicted block's last
				 prediction at lookup, ms (0 when predicted 0) */
};

struct prefix_memo_entry {
	uint32_t source_key;
	enum prefix_status status;     /* while pending: UNAVAILABLE, timeout */
	enum prefix_unavailable why;   /* PREFIX_UNAVAILABLE only */
	bool pending;                  /* query sent, its reply awaited */
	struct cache_source *src;      /* pending: the source (borrowed) */
	uint64_t query_id;             /* pending: the query's id */
	uint64_t deadline_ns;          /* pending: CLOCK_MONOTONIC */
	struct prefix_depth *depths;   /* n_depths, sorted (local: by slot;
					  indexer: by url, strcmp) */
	uint32_t n_depths, cap_depths;
	char *names;                   /* indexer: URL bytes */
	size_t names_len, names_cap;
};

/* The per-request memo (pick_request.memo). Zero-initialise or
 * prefix_memo_init(); prefix_memo_reset() between requests. A memo with
 * pending entries must stay where it is (sources point at it) until they
 * complete or prefix_memo_cancel / _reset / _free. */
struct prefix_memo {
	bool filled;                   /* prefix_memo_fill() ran */
	bool chain_done;               /* the chain below is computed */
	enum prefix_status chain_status; /* PREFIX_FOUND or PREFIX_NO_CHAIN */
	uint32_t block_size;           /* tokens per block of the chain */
	bool bigram;
	uint64_t input_tokens;         /* the request's input (matched-token formula) */
	int64_t *ids;                  /* the chain: n_ids = query_blocks */
	size_t n_ids, cap_ids;
	struct prefix_memo_entry entries[PREFIX_MEMO_MAX_SOURCES];
	uint32_t n_entries;
	struct statebus_index_match *scratch; /* local match scratch */
	size_t cap_scratch;
	struct digest_memo *digests;   /* borrowed; NULL = hash without a memo */
	uint32_t chains;               /* chains computed this request (tests) */
	uint32_t lookups;              /* source lookups this request (tests) */
	uint32_t n_pending;            /* entries pending */
	/* Called by cache_source_drain when n_pending drops to 0 (never from
	 * prefix_memo_fill, _expire or _cancel). The callee must not drain a
	 * source nor free the memo inside; defer work to the event loop. */
	void (*on_ready)(struct prefix_memo *m, void *arg);
	void *ready_arg;
};

/* Empty memo hashing through `digests` (borrowed, may be NULL). */
void prefix_memo_init(struct prefix_memo *m, struct digest_memo *digests);

/* Forgets the request (keeps the arrays and on_ready); cancels pending
 * entries. */
void prefix_memo_reset(struct prefix_memo *m);

/* Cancels pending entries, then frees the arrays. */
void prefix_memo_free(struct prefix_memo *m);

/* The request ended: takes every pending entry out of its source's table
 * (the entries read as unavailable, timeout; their replies will count as
 * late; not counted as lookups). */
void prefix_memo_cancel(struct prefix_memo *m);

/* Times out, at `now_ns`, the pending entries whose deadline passed
 * (unavailable, timeout; counted). Returns the entries still pending. */
uint32_t prefix_memo_expire(struct prefix_memo *m, uint64_t now_ns);

/* The latest deadline of the pending entries (CLOCK_MONOTONIC ns), 0 when
 * none is pending. */
uint64_t prefix_memo_deadline(const struct prefix_memo *m);

/* Computes the request's chain once: block_size 0 (unknown) or no token IDs
 * → PREFIX_NO_CHAIN. Seeded with the request's cache_salt, or with its LoRA
 * adapter's namespace (sy_blockhash_lora_seed) when it names one. Returns the chain status; SY_ENOMEM as a negative
 * value. */
int prefix_memo_chain(struct prefix_memo *m, const struct pick_request *req, uint32_t block_size,
		      bool bigram);

/* The block size and bigram mode of `model` (`len` bytes) in the fleet
 * snapshot `f` (struct fleet, router/core/fleet_view.h): the first worker of the model
 * (ID order) with a cache signal, an accepted stream and a block size.
 * Returns false when none. */
struct fleet;
bool cache_model_blocks(const struct fleet *f, const char *model, size_t len,
			uint32_t *block_size, bool *bigram);

/* The entry of source `s` for this request, looked up on first use: the
 * chain must be computed (prefix_memo_chain). `r` is needed by the local
 * source (NULL → a confirmed miss: no index attached); `model` names the
 * request's model for an indexer. `allow_block`: true asks an indexer not
 * asked yet and waits for its answer (PREFIX_FILL_WAIT); false makes it read
 * as unavailable (timeout) instead of asking — what a pick does. Returns
 * the entry (pending ones included), or NULL on SY_ENOMEM / more than
 * PREFIX_MEMO_MAX_SOURCES sources. */
const struct prefix_memo_entry *prefix_memo_lookup(struct prefix_memo *m, struct cache_source *s,
						   struct statebus_region *r,
						   const struct pick_request *req, bool allow_block);

/* As prefix_memo_lookup, but an indexer not asked yet is sent the query and
 * not waited for (PREFIX_FILL_SEND): its entry is returned pending. */
const struct prefix_memo_entry *prefix_memo_ask(struct prefix_memo *m, struct cache_source *s,
						struct statebus_region *r,
						const struct pick_request *req);

/* Test and replay hook: stores an indexer reply (decoded, its strings
 * borrowed only during the call) as source `key`'s entry, exactly as a
 * lookup would. Errors: SY_ENOMEM, SY_ENOSPC. */
int prefix_memo_put_reply(struct prefix_memo *m, uint32_t key,
			  const struct statebus_query_reply *reply);

/* Test hook: stores an unavailable / rejected entry for source `key`. */
int prefix_memo_put_status(struct prefix_memo *m, uint32_t key, enum prefix_status st,
			   enum prefix_unavailable why);

/* Depth (blocks) of candidate (slot, generation, id) in entry e, 0 when
 * absent. prefix_entry_find: its whole depth record (borrowed from e),
 * NULL when absent. */
uint32_t prefix_entry_depth(const struct prefix_memo_entry *e, uint32_t slot, uint32_t generation,
			    const char *id);
const struct prefix_depth *prefix_entry_find(const struct prefix_memo_entry *e, uint32_t slot,
					     uint32_t generation, const char *id);

/* This process's predictions on their way to the index (the prediction
 * ring is drained every statebus.prediction_drain_ms): picks on the same
 * event loop right after a dispatch must already see it, or a burst on a
 * new prefix spreads before the statebus applied the first prediction.
 * prefix_pending_add records that this process pushed chain ids[0..n)
 * (the first STATEBUS_PREDICT_CHAIN_MAX kept, copied) for worker (slot,
 * generation), its ring at `pos` after the push (statebus_predict_ring_pos).
 * Until statebus_predict_applied says the statebus consumed the ring up to
 * pos — and at most PREFIX_PENDING_MAX_AGE_MS after now_ns (CLOCK_MONOTONIC
 * of the push), so that nothing lingers while no statebus drains —, local
 * lookups add the common prefix with the request's chain as that worker's
 * predicted depth (aged from now_ns). Process-local, single-threaded;
 * PREFIX_PENDING_MAX entries, the oldest replaced. prefix_pending_clear:
 * forgets them all (tests). */
#define PREFIX_PENDING_MAX 32u
#define PREFIX_PENDING_MAX_AGE_MS 1000u
void prefix_pending_add(uint32_t slot, uint32_t generation, const int64_t *ids, size_t n,
			uint64_t pos, uint64_t now_ns);
void prefix_pending_clear(void);

/* How prefix_memo_fill() treats indexer sources. */
enum prefix_fill_mode {
	PREFIX_FILL_SEND = 0,  /* send, do not wait: entries left pending */
	PREFIX_FILL_WAIT,      /* send and wait up to each source's timeout */
};

/* Fills the memo for request `req` from its resolved buckets (DESIGN.md §4
 * step 3): `order[0..n)` (borrowed, the resolver's output) and the fleet
 * snapshot `f` the resolution ran on, region `r` (local source; may be
 * NULL). For every cache_aware group among the buckets (a PD bucket's
 * prefill group) it computes the chain once (block size from `f`) and looks
 * its source up once: local at once, an indexer per `mode`. Idempotent per
 * request (m->filled). Returns SY_OK (lookups that fail are recorded in
 * their entries, never returned), or SY_ENOMEM. */
struct bucket;
int prefix_memo_fill(struct prefix_memo *m, struct bucket *const *order, size_t n,
		     const struct fleet *f, struct statebus_region *r,
		     const struct pick_request *req, enum prefix_fill_mode mode);

#endif
