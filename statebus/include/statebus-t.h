/* statebus-t.h — types of libstatebus, the shared-memory state plane.
 *
 * Types only (HAProxy style): structs, enums and constants shared by the
 * functions in statebus.h and by the internal layout in statebus/sb-int.h.
 * Everything that lives in the region is made of fixed-width integers,
 * fixed-size char arrays and offsets (never pointers), so the region is
 * position-independent and the same bytes mean the same thing in every
 * process of the host. See DESIGN.md §3 and statebus/region.c for the layout.
 */
#ifndef SY_STATEBUS_T_H
#define SY_STATEBUS_T_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------ */
/* Region                                                                   */

/* Layout version of this build. Any change to a shared struct or to the
 * order of tables bumps it; a region of another version is refused with
 * SY_EVERSION ("run `syctl destroy`"), never guessed at. */
#define STATEBUS_LAYOUT_VERSION 8u /* 2: radix index tables; 3: + streams table;
                                     4: + affinity store (entries, stripe locks);
                                     5: + worker engine kind, scraped load,
                                        prediction rings and predicted entries,
                                        owner word with a fifth tier bit;
                                     6: − arena tables and root words,
                                        + proc slots high-water mark;
                                     7: + health table (passive health, stalls,
                                        circuit breakers);
                                     8: + rotation cursors table, header
                                        index mode word, worker LoRA
                                        adapter list, queue table (router
                                        queue wake counters, concurrency
                                        tokens) */

/* Magic at offset 0 of the region, "SYSTBUS1" little-endian. Written last by
 * the creator (release barrier), so a region with this magic is initialised. */
#define STATEBUS_MAGIC UINT64_C(0x3153554254535953)

#define STATEBUS_DEFAULT_PATH "/dev/shm/switchyard"

/* Defaults of struct statebus_params (a zero field means "default"). */
#define STATEBUS_DEFAULT_MAX_WORKERS 256u
#define STATEBUS_DEFAULT_MAX_DP_RANKS 16u
#define STATEBUS_DEFAULT_MAX_PROCS 64u
#define STATEBUS_DEFAULT_INDEX_NODES 131072u /* radix index nodes (8 MiB) */
#define STATEBUS_DEFAULT_AFFINITY_ENTRIES 65536u /* affinity bindings (4 MiB) */
/* Load freshness window: a rank's report older than this is stale
 * (SGLang EngineReportedLoadTable, sglang-wire.md §13). */
#define STATEBUS_LOAD_FRESH_NS UINT64_C(5000000000)

/* Rotation cursors (cursors.c): entries of the table (one per engine
 * group of every router of the host) and the probe window of a lookup. */
#define STATEBUS_CURSORS 512u
#define STATEBUS_CURSOR_PROBES 64u

/* Hard limits checked at creation and attach (SY_ERANGE / SY_EMALFORMED). */
#define STATEBUS_MAX_WORKERS_LIMIT 65536u
#define STATEBUS_MAX_DP_RANKS_LIMIT 1024u
#define STATEBUS_MAX_PROCS_LIMIT 4096u
#define STATEBUS_INDEX_NODES_MIN 16u
#define STATEBUS_INDEX_NODES_MAX (1u << 26)  /* 4 GiB of nodes */
#define STATEBUS_AFFINITY_ENTRIES_MIN 64u    /* power of two */
#define STATEBUS_AFFINITY_ENTRIES_MAX (1u << 24)

/* Capacities of a region, fixed at creation. Passed to
 * statebus_region_open() by the creating process (NULL = all defaults);
 * ignored by attaching processes, which read them from the header. */
struct statebus_params {
	uint32_t max_workers;       /* worker slots (default 256) */
	uint32_t max_dp_ranks;      /* load records per worker (default 16) */
	uint32_t max_procs;         /* process slots = in-flight rows (default 64) */
	uint64_t load_fresh_ns;     /* freshness window, ns (default 5 s) */
	uint32_t index_nodes;       /* radix index capacity in nodes = indexed
	                               (block, position) pairs (default 131072;
	                               64 B each + 4 B of hash bucket) */
	uint32_t index_overflow;    /* overflow owner records, 7 owners each, for
	                               blocks with more than one owner (default
	                               index_nodes / 4; 64 B each) */
	uint32_t affinity_entries;  /* affinity store capacity in bindings, a power
	                               of two (default 65536; 64 B each) */
	/* Access, not stored in the region: used by a STATEBUS_CREATE opener
	 * (on a new region, and on an existing one it owns); never filled by
	 * statebus_region_info(). */
	const char *group;          /* group name (state.group) the file is
	                               chgrp'd to, mode 0640, so that its members
	                               can attach read-only; NULL or "" = the
	                               creator's group. Borrowed for the call. */
};

/* statebus_region_open() flags. */
enum statebus_open_flags {
	STATEBUS_ATTACH_ONLY = 0, /* fail with SY_ENOENT if the region is absent */
	STATEBUS_CREATE = 1,      /* create and initialise it if absent */
	STATEBUS_READ_ONLY = 2,   /* attach only, mapped PROT_READ: for readers
	                             without write access (a member of the
	                             region's group); no proc slot, no read
	                             bracket, no writer lock (SY_EPERM) */
};

/* Number of 64-bit counters in the header (meanings in statebus-counters.h:
 * event decode failures, gaps, resets, evictions, ...). */
#define STATEBUS_COUNTERS_MAX 64u

/* Consistent copy of the header for tools (syctl header). */
struct statebus_header_info {
	uint64_t magic;
	uint32_t layout_version;
	uint64_t total_size;            /* bytes */
	struct statebus_params params;  /* capacities of this region */
	uint64_t created_wall_ns;       /* CLOCK_REALTIME at creation */
	uint64_t global_epoch;
	uint64_t index_incarnation;
	int32_t daemon_pid;             /* 0 = no statebus announced */
	uint64_t daemon_start_time;     /* /proc/<pid>/stat field 22, clock ticks */
	uint64_t daemon_heartbeat_ns;   /* CLOCK_MONOTONIC of the last heartbeat */
	uint32_t index_mode;            /* enum statebus_index_mode */
	/* Offsets (bytes from the region start) and sizes of every table. */
	uint64_t procs_off, procs_size;
	uint64_t workers_off, workers_size;
	uint64_t load_off, load_size;
	uint64_t inflight_off, inflight_size;
	uint64_t index_nodes_off, index_nodes_size;       /* radix index node pool */
	uint64_t index_buckets_off, index_buckets_size;   /* hash → node chains */
	uint64_t index_overflow_off, index_overflow_size; /* extra owner records */
	uint64_t streams_off, streams_size;               /* KV-event stream records */
	uint64_t affinity_off, affinity_size;             /* affinity bindings */
	uint64_t affinity_locks_off, affinity_locks_size; /* first-assignment stripe locks */
	uint64_t predict_rings_off, predict_rings_size;   /* one prediction ring per proc slot */
	uint64_t predict_entries_off, predict_entries_size; /* predicted-entry pool + its
	                                                       buckets + per-worker lists */
	uint64_t health_off, health_size;                 /* passive health / breakers */
	uint64_t cursors_off, cursors_size;               /* rotation cursors */
	uint64_t queue_off, queue_size;                   /* router queue rows */
};

/* Whether the statebus builds the radix index (statebus.index). */
enum statebus_index_mode {
	STATEBUS_INDEX_MODE_UNKNOWN = 0, /* no statebus has said */
	STATEBUS_INDEX_MODE_ON = 1,      /* KV events and predictions are indexed */
	STATEBUS_INDEX_MODE_OFF = 2,     /* no tree: no KV-event subscriptions,
	                                    no predictions; load and health only */
};

/* ------------------------------------------------------------------------ */
/* Process slots and epochs                                                 */

enum statebus_proc_role {
	STATEBUS_PROC_NONE = 0,
	STATEBUS_PROC_ROUTER = 1,   /* a router worker process (or thread) */
	STATEBUS_PROC_STATEBUS = 2, /* the statebus daemon */
	STATEBUS_PROC_TOOL = 3,     /* syctl, tests, benchmarks */
};

/* Epoch value a reader publishes while outside any read bracket. Real
 * epochs start at 1 and only grow (64 bits: no wrap in practice). */
#define STATEBUS_EPOCH_IDLE UINT64_C(0)

/* Copy of one process slot (syctl readers). */
struct statebus_proc_info {
	int32_t pid;          /* 0 = slot free */
	uint32_t role;        /* enum statebus_proc_role */
	uint64_t start_time;  /* /proc/<pid>/stat field 22 (clock ticks since boot) */
	uint64_t epoch;       /* published epoch, STATEBUS_EPOCH_IDLE outside brackets */
	uint64_t claimed_mono_ns;
};

/* ------------------------------------------------------------------------ */
/* Workers                                                                  */

enum statebus_worker_state {
	STATEBUS_WORKER_FREE = 0,     /* slot unused */
	STATEBUS_WORKER_ACTIVE = 1,   /* candidate for picks */
	STATEBUS_WORKER_REMOVING = 2, /* listed, draining: not valid for new picks */
};

enum statebus_worker_role {
	STATEBUS_WORKER_PLAIN = 0,
	STATEBUS_WORKER_PREFILL = 1,
	STATEBUS_WORKER_DECODE = 2,
};

/* Which engine a worker runs (DESIGN.md §9 "Engine kinds"): how its KV
 * events are indexed (SGLang ids directly; vLLM blocks re-hashed from their
 * token_ids) and where its load comes from (LoadStat; scraped /metrics). */
enum statebus_engine_kind {
	STATEBUS_ENGINE_SGLANG = 0,
	STATEBUS_ENGINE_VLLM = 1,
};

/* Why a worker's KV events are not indexed (0 = accepted). */
enum statebus_kv_rejected {
	STATEBUS_KV_OK = 0,
	STATEBUS_KV_BLOCK_SIZE_MISMATCH = 1, /* disagrees with the model's block size (DESIGN §9) */
	STATEBUS_KV_NO_ENDPOINT = 2,         /* no KV-event endpoint known */
	STATEBUS_KV_BAD_FACTS = 3,           /* /server_info kv_events block unusable */
};

#define STATEBUS_WORKER_ID_MAX 256   /* bytes incl. NUL */
#define STATEBUS_MODEL_MAX 128       /* bytes incl. NUL */
#define STATEBUS_HOST_MAX 64         /* bytes incl. NUL */
#define STATEBUS_TOPIC_MAX 64        /* bytes incl. NUL */
#define STATEBUS_LORA_LIST_MAX 512   /* bytes of a worker's adapter list */

/* One worker (engine) — the payload of a workers-table slot, and the copy
 * readers get. Strings are always NUL-terminated in a record read with
 * SY_OK. Ports are TCP ports, 0 = none/unknown. */
struct statebus_worker {
	uint32_t state;          /* enum statebus_worker_state (set by the table) */
	uint32_t generation;     /* bumped at each reuse of the slot (set by the table) */
	char id[STATEBUS_WORKER_ID_MAX];   /* normalised URL: statebus_worker_id_normalise() */
	char model[STATEBUS_MODEL_MAX];
	uint8_t role;            /* enum statebus_worker_role */
	uint8_t healthy;         /* 1 = last health check passed */
	uint8_t kv_bigram;       /* 1 = engine hashes in bigram mode (sglang-wire.md §11) */
	uint8_t has_cache_signal;/* 1 = KV events exist for this worker */
	uint16_t dp_size;        /* DP ranks (≥ 1, ≤ max_dp_ranks) */
	uint16_t bootstrap_port; /* PD bootstrap port, 0 = none */
	uint32_t kv_block_size;  /* tokens per KV block (page size), 0 = unknown */
	uint16_t kv_port_base;        /* KV-event PUB port of rank 0 (rank r: base + r) */
	uint16_t kv_replay_port_base; /* replay ROUTER port of rank 0, 0 = none */
	uint16_t load_port_base;      /* LoadStat PUB port of rank 0, 0 = none */
	uint16_t kv_rejected;         /* enum statebus_kv_rejected */
	char kv_endpoint_host[STATEBUS_HOST_MAX];
	char kv_topic[STATEBUS_TOPIC_MAX];
	uint32_t health_failures;     /* consecutive failed checks */
	uint8_t engine;               /* enum statebus_engine_kind */
	uint8_t reserved0[3];
	uint64_t health_checked_ns;   /* CLOCK_MONOTONIC of the last check, 0 = never */
	char lora_adapters[STATEBUS_LORA_LIST_MAX]; /* vLLM LoRA adapters the worker
	                              serves on top of `model` (/v1/models entries
	                              with a parent): names NUL-terminated one after
	                              the other, an empty name ends the list ("" =
	                              none); a name that does not fit is left out */
};

/* The fields of a worker record that selection reads for every candidate
 * of every request (statebus_worker_head_read): state, generation and
 * dp_size as in struct statebus_worker, without copying the rest of the
 * ~1 KiB record. */
struct statebus_worker_head {
	uint32_t state;      /* enum statebus_worker_state */
	uint32_t generation;
	uint16_t dp_size;    /* ≥ 1, ≤ max_dp_ranks when state is not FREE */
};

/* ------------------------------------------------------------------------ */
/* Load                                                                     */

/* statebus_load_report.flags */
#define STATEBUS_LOAD_HAS_REPORT 0x1u     /* a LoadStat was received */
#define STATEBUS_LOAD_HAS_V3 0x2u         /* the V3 extension was present */
#define STATEBUS_LOAD_HAS_THROUGHPUT 0x4u /* prefill_tokens_per_s is derived */
#define STATEBUS_LOAD_SCRAPED 0x8u        /* from a scrape of vLLM's /metrics (the
                                             scraped view), not a LoadStat */

/* One rank's last LoadStat (SGLang LoadStat, V3 extension; sglang-wire.md
 * §12) or scraped /metrics (vLLM: STATEBUS_LOAD_SCRAPED), as written by the
 * statebus and read back by readers. Counts are saturated at UINT32_MAX by
 * the writer. A scraped record: running and waiting from
 * vllm:num_requests_running / _waiting, num_tokens = KV usage × capacity
 * and max_total_num_tokens = num_gpu_blocks × block_size of
 * vllm:cache_config_info (both 0 when the capacity is not exposed), and the
 * `scraped` members instead of the V3 ones. */
struct statebus_load_report {
	uint32_t flags;                       /* STATEBUS_LOAD_* */
	uint32_t num_running_reqs;            /* requests */
	uint32_t num_waiting_reqs;            /* requests */
	uint32_t num_tokens;                  /* KV tokens in use */
	uint32_t max_total_num_tokens;        /* KV capacity, tokens; 0 = unknown */
	union {
		struct {                      /* HAS_V3 */
			uint32_t num_waiting_uncached_tokens; /* tokens */
			uint32_t num_total_tokens;            /* tokens */
			uint32_t max_running_requests;        /* requests */
		};
		struct {                      /* SCRAPED */
			uint32_t kv_usage_ppm;      /* vllm:kv_cache_usage_perc (or
			                               gpu_cache_usage_perc) × 10^6 */
			uint32_t prompt_tokens;     /* vllm:prompt_tokens_total, low 32 bits
			                               (wraps: take differences mod 2^32) */
			uint32_t generation_tokens; /* vllm:generation_tokens_total, low 32 bits */
		} scraped;
	};
	float prefill_tokens_per_s;           /* writer-derived from V3 cumulative
	                                         counters (§13); valid with HAS_THROUGHPUT */
	uint32_t worker_gen;                  /* worker generation the report belongs to
	                                         (set by statebus_load_write) */
	uint64_t recv_mono_ns;                /* CLOCK_MONOTONIC receive time */
	uint64_t dispatches_at_recv;          /* Σ in-flight dispatch counters of the
	                                         worker at receipt (set by statebus_load_write) */
};

enum statebus_load_status {
	STATEBUS_LOAD_UNKNOWN = 0, /* missing, stale, rank-incomplete or torn: never zeros */
	STATEBUS_LOAD_FRESH = 1,   /* every expected rank fresh */
};

/* Why a load view is unknown. */
enum statebus_load_reason {
	STATEBUS_LOAD_REASON_NONE = 0,       /* fresh */
	STATEBUS_LOAD_REASON_MISSING = 1,    /* some rank never reported */
	STATEBUS_LOAD_REASON_STALE = 2,      /* some rank older than the window */
	STATEBUS_LOAD_REASON_TORN = 3,       /* some record mid-write past the retry bound */
	STATEBUS_LOAD_REASON_NO_WORKER = 4,  /* slot free / bad dp_size */
};

/* Aggregated load of one worker over its dp_size ranks (sglang-wire.md §13).
 * Only meaningful when status == STATEBUS_LOAD_FRESH; sums are 0 otherwise
 * and must not be read as "idle". */
struct statebus_load_view {
	uint32_t status;            /* enum statebus_load_status */
	uint32_t reason;            /* enum statebus_load_reason */
	uint32_t dp_size;           /* expected ranks */
	uint32_t worker_gen;
	bool native;                /* V3 on every rank with max_total > 0, max_running > 0 */
	bool scraped;               /* every rank's record is a scraped /metrics one */
	double kv_usage;            /* scraped only: mean KV usage over ranks, 0..1 */
	bool has_throughput;        /* every rank has a derived throughput */
	uint64_t num_running_reqs;  /* Σ ranks, requests */
	uint64_t num_waiting_reqs;  /* Σ ranks, requests */
	uint64_t num_tokens;        /* Σ ranks, KV tokens in use */
	uint64_t max_total_num_tokens;        /* Σ ranks, tokens */
	uint64_t num_waiting_uncached_tokens; /* native only, Σ tokens */
	uint64_t num_total_tokens;            /* native only, Σ tokens */
	uint64_t max_running_requests;        /* native only, Σ requests */
	double prefill_tokens_per_s;          /* has_throughput only, Σ tokens/s */
	uint64_t captured_at_ns;    /* oldest rank's receive time (CLOCK_MONOTONIC) */
	uint64_t dispatches_at_capture; /* dispatch counter sum stored with that oldest rank */
};

/* ------------------------------------------------------------------------ */
/* KV-event streams                                                         */

/* State of one KV-event stream (worker × DP rank), written by the statebus
 * (receiver sequencing, sglang-wire.md §9) and read by `syctl streams` and
 * routers' /metrics. Counts are monotonic for the life of the worker slot's
 * generation; a reset stream keeps its counts. */
struct statebus_stream {
	int64_t cursor;            /* last applied seq, -1 = none yet / after a reset */
	uint64_t gaps;             /* forward gaps not filled (sequence_gaps_total) */
	uint64_t missing;          /* batches lost in them (missing_sequences_total) */
	uint64_t resets;           /* END_SEQ or seq-0 restarts (publisher_resets_total) */
	uint64_t skipped;          /* stale batches dropped (skipped_batches_total) */
	uint64_t decode_failures;  /* bad frames, malformed batches, skipped events */
	uint64_t batches;          /* batches applied */
	uint64_t events;           /* events applied */
	uint64_t last_event_ns;    /* CLOCK_MONOTONIC of the last batch received, 0 = never */
	uint32_t worker_gen;       /* generation of the worker slot it belongs to (0 = unused) */
	uint8_t untrusted;         /* 1 = gap/stale seen since the last reset or AllBlocksCleared */
	uint8_t subscribed;        /* 1 = a SUB socket is open for it */
	uint8_t replaying;         /* 1 = a replay fetch is in progress */
	uint8_t partial;           /* 1 = the first batch indexed since the rank was last
	                              empty (subscription, reconnect, reset) was not seq 0:
	                              blocks stored before it are missing until re-stored;
	                              cleared by a stream from seq 0 or AllBlocksCleared */
};

/* ------------------------------------------------------------------------ */
/* In-flight                                                                */

/* Copy of one in-flight cell (syctl inflight). */
struct statebus_inflight_info {
	int64_t in_flight;          /* requests currently dispatched */
	uint64_t dispatches;        /* monotonic dispatch counter */
	uint64_t last_dispatch_ns;  /* CLOCK_MONOTONIC, 0 = never */
};

/* ------------------------------------------------------------------------ */
/* Health (health.c; DESIGN.md §9 "Health is a candidate filter")           */

/* Why a router marked a worker passively down. */
enum statebus_down_reason {
	STATEBUS_DOWN_NONE = 0,
	STATEBUS_DOWN_CONNECT = 1, /* connect refused / failed */
	STATEBUS_DOWN_RESET = 2,   /* connection closed before the first response byte */
	STATEBUS_DOWN_TIMEOUT = 3, /* no response head within the request timeout */
};

/* Circuit breaker state (reference/policy-defaults.md §9; gauge values). */
enum statebus_cb_state {
	STATEBUS_CB_CLOSED = 0,
	STATEBUS_CB_OPEN = 1,
	STATEBUS_CB_HALF_OPEN = 2, /* one probe request is out */
};

/* Result class of one upstream attempt, fed to the breaker. */
enum statebus_cb_result {
	STATEBUS_CB_SUCCESS = 0,      /* response head with status < 500 (not 429) */
	STATEBUS_CB_FAILURE = 1,      /* connect error, reset, timeout, 5xx except 503 */
	STATEBUS_CB_BACKPRESSURE = 2, /* 429 or 503 */
};

/* What the health table says about a candidate (statebus_health_pick). */
enum statebus_pick_health {
	STATEBUS_PICK_OK = 0,           /* usable */
	STATEBUS_PICK_DOWN = 1,         /* passively down until a probe passes */
	STATEBUS_PICK_STALLED = 2,      /* stalled until bytes flow or a probe passes */
	STATEBUS_PICK_BREAKER_OPEN = 3, /* open, or its half-open probe is out */
	STATEBUS_PICK_PROBE = 4,        /* usable as the breaker's one half-open probe:
	                                   take it with statebus_breaker_take_probe */
};

/* statebus_health_probe_ok() result bits. */
#define STATEBUS_HEALTH_CLEARED_DOWN 0x1u
#define STATEBUS_HEALTH_CLEARED_STALL 0x2u

/* Copy of one worker slot's health record (statebus_health_read). Times
 * are CLOCK_MONOTONIC ns, 0 = never / not set. Counts are since the slot's
 * generation was added. */
struct statebus_health {
	uint32_t worker_gen;        /* generation the record belongs to */
	uint32_t down_reason;       /* enum statebus_down_reason of down_since_ns */
	uint64_t down_since_ns;     /* passively down since (0 = not down) */
	uint64_t stalled_since_ns;  /* stalled since (0 = not stalled) */
	uint64_t last_byte_ns;      /* last response byte from the worker, any
	                               router process (stored at most every 1 ms) */
	uint64_t cleared_ns;        /* last time a down mark or stall was cleared */
	uint32_t cb_state;          /* enum statebus_cb_state */
	uint32_t cb_failures;       /* consecutive breaker failures */
	uint64_t cb_since_ns;       /* open: opened at; half-open: probe sent at */
	uint64_t downs;             /* passive down marks */
	uint64_t stalls;            /* stalls detected */
	uint64_t cb_opens;          /* breaker openings */
	uint64_t recoveries;        /* down marks / stalls cleared by a probe */
};

/* ------------------------------------------------------------------------ */
/* Radix index (index.c; SGLang HashTree, sglang-wire.md §7, §11)           */

/* Tier bits of an ownership (sglang-wire.md §7). A (worker, rank) owns a
 * block when any bit is set: a host copy keeps a worker a candidate after
 * the device copy was evicted. */
#define STATEBUS_TIER_DEVICE 1u   /* medium "GPU", or medium absent */
#define STATEBUS_TIER_HOST 2u     /* "CPU_PINNED" (and "CPU", counted by the decoder) */
#define STATEBUS_TIER_DISK 4u     /* "DISK" */
#define STATEBUS_TIER_EXTERNAL 8u /* "EXTERNAL" */
#define STATEBUS_TIER_ALL 15u     /* untagged BlockRemoved: every engine-reported tier */
/* Predicted ownership: a router dispatched a prompt with this block to the
 * (worker, rank) and no KV event has confirmed it yet (statebus_index_predict).
 * Never set together with an engine-reported tier: a BlockStored of the same
 * (worker, rank, block) replaces it with the stored tier. */
#define STATEBUS_TIER_PREDICTED 16u

/* Hashes per store/remove call (sglang-wire.md §6 per-event cap). */
#define STATEBUS_INDEX_CHAIN_MAX 65536u

/* One result of statebus_index_match() / statebus_index_path(). */
struct statebus_index_match {
	uint32_t worker;     /* worker slot */
	uint32_t worker_gen; /* generation of that slot the ownership belongs to
	                        (always the slot's current one: stale owners of a
	                        reused slot are never reported) */
	uint32_t rank;       /* DP rank */
	uint32_t depth;      /* match: contiguous blocks owned from the root, in any
	                        tier (predicted included), ≥ 1; path: the path
	                        length (blocks) */
	uint32_t tiers;      /* STATEBUS_TIER_* bits held on the deepest counted block */
	uint32_t predicted_depth; /* match: blocks of `depth` past the longest
	                        engine-confirmed prefix (depth − confirmed depth:
	                        0 = all confirmed, depth = only predicted); path:
	                        depth when the last node's ownership is predicted */
	uint32_t cache_signal; /* match, when predicted_depth > 0: the worker's enum
	                        statebus_cache_signal (PREDICTED: approximate mode,
	                        predictions are its only signal); else 0 */
	uint64_t predicted_ns; /* match: CLOCK_MONOTONIC of the last prediction of
	                        the deepest predicted-only block when
	                        predicted_depth > 0 (read without the writer's
	                        lock: a best-effort stamp), else 0; path: 0 */
};

/* Index occupancy and counters (statebus_index_stats()). Counts are read
 * individually (a live index moves while they are read). */
struct statebus_index_stats {
	uint32_t nodes;             /* live nodes (indexed block positions) */
	uint32_t nodes_capacity;    /* params.index_nodes */
	uint32_t nodes_retired;     /* unlinked, waiting for a grace period */
	uint32_t overflow_used;     /* overflow owner records in use */
	uint32_t overflow_capacity; /* params.index_overflow */
	uint32_t buckets;           /* hash buckets (power of two) */
	uint64_t owners;            /* (node, worker, rank) ownerships */
	uint64_t stored_blocks;     /* blocks applied by statebus_index_store */
	uint64_t removed_blocks;    /* hashes applied by statebus_index_remove */
	uint64_t evictions;         /* leaves evicted because the pool was full */
	uint64_t pruned;            /* ownerless childless nodes removed */
	uint64_t dropped;           /* blocks not stored: pool or overflow exhausted */
	uint64_t breadcrumbs;       /* chains attached at the root, parent unknown */
	uint64_t resets;            /* statebus_index_reset() calls (incl. repairs) */
	uint64_t bytes;             /* region bytes of the index tables */
};

/* Per (worker, rank) ownership totals (statebus_index_owner_stats()). */
struct statebus_index_owner_stats {
	uint32_t worker;       /* worker slot */
	uint32_t worker_gen;
	uint32_t rank;
	uint32_t reserved;
	uint64_t blocks;       /* nodes owned in any tier */
	uint64_t tier_blocks[5]; /* nodes per tier: DEVICE, HOST, DISK, EXTERNAL, PREDICTED */
};

/* ------------------------------------------------------------------------ */
/* Predictions (predict.c; DESIGN.md §9 "Predicted ownership")              */

/* Words (uint64) of one proc slot's prediction ring: a power of two. One
 * prediction takes STATEBUS_PREDICT_HDR_WORDS + its hashes. */
#define STATEBUS_PREDICT_RING_WORDS 8192u /* 64 KiB per proc slot */
#define STATEBUS_PREDICT_HDR_WORDS 4u
/* Block hashes kept per prediction; a longer chain is truncated (counted). */
#define STATEBUS_PREDICT_CHAIN_MAX 512u
/* Default lifetime of a predicted entry (statebus.prediction_ttl_ms). */
#define STATEBUS_PREDICT_DEFAULT_TTL_MS 30000u

/* One dispatch a router hands to the statebus (statebus_predict_push):
 * the prompt's block-hash chain was sent to (worker slot, generation,
 * DP rank). */
struct statebus_prediction {
	uint32_t worker;     /* worker slot */
	uint32_t worker_gen; /* its generation at pick time (stale: dropped) */
	uint32_t rank;       /* DP rank (< the worker's dp_size) */
	uint32_t model_tag;  /* statebus_predict_model_tag(model), 0 = not checked */
	uint64_t now_ns;     /* CLOCK_MONOTONIC of the dispatch */
};

/* How a worker's cache state is known (statebus_predict_worker.cache_signal). */
enum statebus_cache_signal {
	STATEBUS_CACHE_SIGNAL_NONE = 0,      /* neither KV events nor predictions */
	STATEBUS_CACHE_SIGNAL_EVENTS = 1,    /* KV events (predictions bridge their delay) */
	STATEBUS_CACHE_SIGNAL_PREDICTED = 2, /* no KV events: predictions only (approximate) */
};

/* Predicted-entry state of one worker slot (statebus_predict_worker_read).
 * Counts since the slot's current generation first predicted. */
struct statebus_predict_worker {
	uint32_t worker_gen;     /* generation the entries belong to (0 = none yet) */
	uint32_t cache_signal;   /* enum statebus_cache_signal (set by the statebus) */
	uint64_t capacity_blocks;/* predicted blocks kept at most, 0 = only the pool bound */
	uint64_t blocks;         /* predicted entries held now */
	uint64_t predicted;      /* entries created or refreshed */
	uint64_t confirmed;      /* turned into engine-reported ownership (BlockStored) */
	uint64_t expired;        /* dropped by the TTL sweep */
	uint64_t evicted;        /* dropped for capacity (oldest prediction first) */
	uint64_t removed;        /* dropped by BlockRemoved, clears, node eviction */
};

/* Region-wide prediction counters (statebus_predict_stats). */
struct statebus_predict_stats {
	uint32_t rings;           /* proc slots (one ring each) */
	uint32_t ring_words;      /* STATEBUS_PREDICT_RING_WORDS */
	uint32_t entries_capacity;/* predicted-entry pool */
	uint32_t entries_used;
	uint64_t pushed;          /* predictions written by producers (Σ rings) */
	uint64_t ring_full;       /* predictions dropped by producers: ring full */
	uint64_t truncated;       /* hashes cut from chains over STATEBUS_PREDICT_CHAIN_MAX */
	uint64_t drained;         /* predictions read by the statebus */
	uint64_t applied;         /* of them applied to the index */
	uint64_t stale;           /* of them dropped: worker slot free / other generation /
	                             rank or model tag wrong */
	uint64_t malformed;       /* ring contents that failed validation (skipped) */
	uint64_t pool_full;       /* predicted blocks not recorded: entry pool exhausted */
	uint64_t lag_ns_sum;      /* Σ (drain time − dispatch time) of drained predictions */
	uint64_t lag_ns_max;
};

/* ------------------------------------------------------------------------ */
/* Affinity store (affinity.c; DESIGN.md §3, §9)                            */

/* 128-bit scope digest of a binding: XXH3-128 of the SGLang binding key
 * string "{kind}:{stage}:{len(model)}:{model}{len(bucket)}:{bucket}{key}"
 * (statebus_affinity_key_make). Two distinct scopes collide with
 * probability ~2^-128 per pair: a collision would share one binding, which
 * we accept as negligible (≪ 2^-90 for 2^16 live bindings). */
struct statebus_affinity_key {
	uint64_t lo; /* low 64 bits: home position = lo mod capacity */
	uint64_t hi; /* high 64 bits: first-assignment stripe lock = hi mod locks */
};

/* What a binding is for (part of the key string and shown by syctl). */
enum statebus_affinity_kind {
	STATEBUS_AFFINITY_SESSION = 1, /* session_aware: "session:..." */
	STATEBUS_AFFINITY_STICKY = 2,  /* sticky: "sticky:..." */
};

/* State of one entry (statebus_affinity_info.state). */
enum statebus_affinity_state {
	STATEBUS_AFFINITY_EMPTY = 0,     /* never used: ends a probe chain */
	STATEBUS_AFFINITY_CLAIMING = 1,  /* a first assignment is being written */
	STATEBUS_AFFINITY_BOUND = 2,     /* key → (worker slot, generation) */
	STATEBUS_AFFINITY_TOMBSTONE = 3, /* expired / invalidated: reusable */
};

/* Idle TTL of SGLang's session and sticky bindings (600 s) and their sweep
 * period (60 s) (reference/policy-defaults.md §4.3, §4.4). */
#define STATEBUS_AFFINITY_DEFAULT_TTL_MS 600000u
#define STATEBUS_AFFINITY_DEFAULT_SWEEP_MS 60000u

/* A binding as a lookup or bind returned it. `index` and `token` name the
 * exact entry state observed, so statebus_affinity_rebind() replaces it
 * only if nobody changed it since (CAS). Valid until the next call. */
struct statebus_affinity_binding {
	uint32_t worker;      /* worker slot */
	uint32_t worker_gen;  /* generation of that slot at bind time */
	uint32_t index;       /* entry index in the table */
	uint32_t reserved;
	uint64_t token;       /* the entry's state word (opaque) */
};

/* Copy of one entry for tools (statebus_affinity_read). */
struct statebus_affinity_info {
	uint32_t index;
	uint32_t state;           /* enum statebus_affinity_state */
	uint32_t kind;            /* enum statebus_affinity_kind (BOUND only) */
	uint32_t worker;          /* BOUND: worker slot */
	uint32_t worker_gen;      /* BOUND: slot generation; CLAIMING: claimer pid */
	uint32_t ttl_ms;          /* idle TTL */
	struct statebus_affinity_key key;
	uint64_t created_ns;      /* CLOCK_MONOTONIC of the first assignment */
	uint64_t last_used_ns;    /* CLOCK_MONOTONIC of the last lookup hit / bind */
};

/* What one statebus_affinity_sweep() tombstoned. */
struct statebus_affinity_sweep_result {
	uint32_t expired;     /* idle longer than their TTL */
	uint32_t invalidated; /* worker (slot, generation) no longer valid */
	uint32_t abandoned;   /* claims left by dead processes */
};

/* Occupancy (one scan) and region-wide counters (statebus_affinity_stats). */
struct statebus_affinity_stats {
	uint32_t capacity;        /* params.affinity_entries */
	uint32_t bound;
	uint32_t claiming;
	uint32_t tombstones;
	uint32_t empty;
	uint32_t locks;           /* stripe locks */
	uint64_t binds;           /* first assignments won */
	uint64_t bind_conflicts;  /* first assignments lost to a concurrent winner */
	uint64_t rebinds;         /* invalid bindings replaced by CAS */
	uint64_t rebind_conflicts;/* replacements lost to a concurrent writer */
	uint64_t expired;         /* tombstoned by the sweep: idle past their TTL */
	uint64_t invalidated;     /* tombstoned by the sweep: worker (slot, gen) gone */
	uint64_t abandoned;       /* tombstoned by the sweep: claimer died mid-claim */
	uint64_t full;            /* first assignments refused: probe window full */
	uint64_t busy;            /* first assignments given up: stripe lock held too long */
	uint64_t lock_steals;     /* stripe locks taken over from dead holders */
	uint64_t sweeps;          /* statebus_affinity_sweep() runs */
};

/* ------------------------------------------------------------------------ */
/* Process-local handle                                                     */

/* An open region. Process-local (malloc'd by statebus_region_open, freed by
 * statebus_region_close); the pointers inside point into this process's
 * mapping and die with it. Fields are private except to the inline fast
 * path in statebus.h. Not shared between threads that read concurrently:
 * each reading thread opens its own handle (and claims its own slot). */
struct statebus_region {
	uint8_t *base;             /* mapping start */
	uint64_t size;             /* mapping length = file size, bytes */
	int fd;                    /* region file, for flock/OFD locks */
	uint64_t *global_epoch;    /* &header->global_epoch */
	uint64_t *self_epoch;      /* &own proc slot's epoch, NULL before claim */
	int32_t self_slot;         /* claimed proc slot, -1 = none */
	uint32_t read_depth;       /* nesting of read brackets (process-local) */
	bool writer_locked;        /* this handle holds the writer lock */
	uint64_t fresh_ns;         /* load freshness window used by this handle */
	bool read_only;            /* opened with STATEBUS_READ_ONLY */
	struct statebus_hdr *hdr;  /* internal layout (sb-int.h) */
	char path[256];
};

#endif
