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
 * runs its own admission. prefix_memo_fill() fills it before selection
 * (the handler calls it once per request; router_select() calls it itself
 * when the request arrives with an unfilled memo or none). policy_pick is
 * synchronous: a local entry missing at pick time is looked up then (cheap,
 * never blocks); an indexer entry missing at pick time reads as
 * unavailable — a pick never waits on a socket.
 *
 * Blocking (first version): the indexer query in prefix_memo_fill() waits
 * up to the source's timeout (default 100 ms) inside the event loop, since
 * the data plane has no asynchronous hook before selection yet. That is
 * why cache_prefix_provider defaults to local; switch to indexer only where
 * the remote statebus is close (same rack) — see docs/query.md.
 *
 * In-flight bound: a query whose reply did not come in time stays counted
 * until its late reply is drained; when max_inflight are outstanding the
 * next query is not sent (PREFIX_UNAVAILABLE, overloaded) and the socket is
 * rebuilt, which drops them all. Sockets are opened lazily in the process
 * that uses them (after fork) and closed with the generation.
 *
 * Ownership: sources belong to the generation (router/core/generation.h) and are
 * process-local; the memo's arrays grow as needed and are kept across
 * resets (no allocation per request in the steady state).
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
	struct cache_source_stats stats;
};

/* The local source (key 0). Never fails. */
void cache_source_init_local(struct cache_source *s);

/* An indexer source with memo key `key` (≥ 1) asking `endpoint` (copied);
 * timeout_ms / max_inflight 0 = defaults. Errors: SY_EINVAL, SY_ENOMEM. */
int cache_source_init_indexer(struct cache_source *s, uint32_t key, const char *endpoint,
			      uint32_t timeout_ms, uint32_t max_inflight);

/* Closes sockets and frees what the source owns. */
void cache_source_close(struct cache_source *s);

/* One source's answer for the request. */
struct prefix_depth {
	uint32_t slot;        /* local: worker slot; indexer: UINT32_MAX */
	uint32_t generation;  /* local: slot generation */
	const char *url;      /* indexer: worker URL (NUL-terminated, in the
				 entry's name buffer); local: NULL */
	uint32_t blocks;      /* max over DP ranks, ≤ query_blocks, ≥ 1 */
};

struct prefix_memo_entry {
	uint32_t source_key;
	enum prefix_status status;
	enum prefix_unavailable why;   /* PREFIX_UNAVAILABLE only */
	struct prefix_depth *depths;   /* n_depths, sorted (local: by slot;
					  indexer: by url, strcmp) */
	uint32_t n_depths, cap_depths;
	char *names;                   /* indexer: URL bytes */
	size_t names_len, names_cap;
};

/* The per-request memo (pick_request.memo). Zero-initialise or
 * prefix_memo_init(); prefix_memo_reset() between requests. */
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
};

/* Empty memo hashing through `digests` (borrowed, may be NULL). */
void prefix_memo_init(struct prefix_memo *m, struct digest_memo *digests);

/* Forgets the request (keeps the arrays). */
void prefix_memo_reset(struct prefix_memo *m);

/* Frees the arrays. */
void prefix_memo_free(struct prefix_memo *m);

/* Computes the request's chain once: block_size 0 (unknown) or no token IDs
 * → PREFIX_NO_CHAIN. Returns the chain status; SY_ENOMEM as a negative
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
 * request's model for an indexer. `allow_block`: false makes an indexer
 * lookup not done yet read as unavailable (timeout) instead of asking.
 * Returns the entry, or NULL on SY_ENOMEM / more than
 * PREFIX_MEMO_MAX_SOURCES sources. */
const struct prefix_memo_entry *prefix_memo_lookup(struct prefix_memo *m, struct cache_source *s,
						   struct statebus_region *r,
						   const struct pick_request *req, bool allow_block);

/* Test and replay hook: stores an indexer reply (decoded, its strings
 * borrowed only during the call) as source `key`'s entry, exactly as a
 * lookup would. Errors: SY_ENOMEM, SY_ENOSPC. */
int prefix_memo_put_reply(struct prefix_memo *m, uint32_t key,
			  const struct statebus_query_reply *reply);

/* Test hook: stores an unavailable / rejected entry for source `key`. */
int prefix_memo_put_status(struct prefix_memo *m, uint32_t key, enum prefix_status st,
			   enum prefix_unavailable why);

/* Depth (blocks) of candidate (slot, generation, id) in entry e, 0 when
 * absent. */
uint32_t prefix_entry_depth(const struct prefix_memo_entry *e, uint32_t slot, uint32_t generation,
			    const char *id);

/* Fills the memo for request `req` under generation `g` on region `r`
 * (DESIGN.md §4 step 3): resolves the request's buckets, and for every
 * cache_aware group among them computes the chain once and looks up its
 * source once (an indexer may block up to its timeout). Idempotent per
 * request (m->filled). Returns SY_OK (lookups that fail are recorded in
 * their entries, never returned), or SY_ENOMEM. */
struct router_gen;
int prefix_memo_fill(struct prefix_memo *m, struct router_gen *g, struct statebus_region *r,
		     const struct pick_request *req, uint64_t now_ns);

#endif
