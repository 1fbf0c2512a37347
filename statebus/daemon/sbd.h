/* sbd.h — switchyard-statebus internals shared by the daemon's files.
 *
 * One process, one event-loop thread that is the region's single writer
 * (it holds the writer lock; no other thread touches the region), plus one
 * HTTP thread (http.c) that runs every /server_info and /health request
 * concurrently on libcurl's multi interface and hands results back through
 * a queue and a wake-up pipe, so no engine can block the loop or another
 * engine's requests. The loop (main.c) zmq_polls every SUB (and each KV
 * SUB's monitor PAIR),
 * replay DEALER, the control REP and the wake-up pipe, with timers for
 * heartbeat, sweeping, health, discovery retries and replay deadlines.
 *
 * Files: main.c (flags, config, start-up, loop, shutdown), fleet.c (worker
 * slots: add, adopt, discover, remove; block-size oracle), subscriber.c
 * (sockets, frames, sequencing, replay), apply.c (events → index, LoadStat
 * → load table), http.c (HTTP thread), control.c (control socket),
 * notify.c (sd_notify), query.c (remote prefix queries). Socket-free logic: wire.h, seq.h, ingest.h.
 *
 * Ownership: struct sbd owns everything reachable from it; a worker's
 * sockets are closed by sbd_sub_close() before its slot is removed.
 */
#ifndef SY_STATEBUS_DAEMON_SBD_H
#define SY_STATEBUS_DAEMON_SBD_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/config.h"
#include "ingest.h"
#include "seq.h"
#include "statebus-query.h"
#include "statebus.h"
#include "vllm.h"
#include "wire.h"

#define SBD_HELD_MAX 1024        /* live batches held during a replay (pump depth, §10) */
#define SBD_SOCKET_REBUILD_ERRORS 64 /* consecutive receive errors → rebuild (§10) */
#define SBD_RECV_BURST 256       /* messages taken from one socket per loop turn */
#define SBD_PREDICT_BURST 4096   /* predictions drained from the rings per loop turn */
#define SBD_LIVE_NS 5000000000ull /* heartbeat age past which a statebus is gone */

/* A live batch held while a replay fetch is in progress. */
struct sbd_held {
	int64_t seq;
	uint8_t *payload; /* malloc'd copy */
	size_t len;
};

/* One DP rank of a worker: its sockets and stream state. */
struct sbd_rank {
	void *kv_sub;                /* ZMQ SUB of KV events, NULL = none */
	void *load_sub;              /* ZMQ SUB of LoadStat, NULL = none */
	void *replay;                /* ZMQ DEALER while replaying, else NULL */
	void *kv_mon;                /* ZMQ PAIR reading kv_sub's monitor events
	                                (CONNECTED, DISCONNECTED), NULL = none */
	bool peer_lost;              /* kv_sub saw DISCONNECTED: the next CONNECTED is
	                                a new publisher process (resubscribe) */
	bool rebuild;                /* the replay running is a rebuild from seq 0 after a
	                                reconnect (not a gap fill) */
	bool old_drain;              /* draining what the lost publisher queued: data
	                                behind its stream is the new publisher's */
	bool dup_window;             /* a rebuild ended: live seqs in (live_max, dup_upto]
	                                are late copies of replayed batches */
	int64_t dup_upto;            /* cursor when the rebuild ended */
	int64_t live_max;            /* highest live seq of the new publisher seen since
	                                the peer was lost (-1 none) */
	bool resumed;                /* st was restored from the stream record after a
	                                statebus restart and no live batch came yet */
	bool resume_fill;            /* the replay running fills the gap of a resumed
	                                stream: a gap it cannot fill rebuilds the rank */
	bool rebuild_on_open;        /* after a statebus restart this rank has no
	                                cursor to resume from: rebuild it by replay
	                                from seq 0 once its sockets are open */
	struct statebus_stream st;   /* authoritative; published when dirty */
	bool dirty;
	uint32_t kv_errors;          /* consecutive receive errors */
	uint32_t load_errors;
	int64_t replay_to;           /* seq that revealed the gap (INT64_MAX: rebuild) */
	uint64_t replay_deadline_ns;
	struct sbd_held *held;       /* first = the batch that revealed the gap */
	uint32_t n_held;
	struct sbd_load_prev load_prev;
};

enum sbd_disc_state {
	SBD_DISC_PENDING = 0,  /* to submit at disc_next_ns */
	SBD_DISC_INFLIGHT = 1, /* the HTTP thread has it */
	SBD_DISC_DONE = 2,     /* facts known (or taken from the configuration) */
};

/* Per-worker-slot state of the daemon (process-local). */
struct sbd_worker {
	bool used;
	uint32_t slot, gen;
	struct statebus_worker rec;     /* last record written to the table */
	struct sy_config_kv_events kv;  /* configured KV facts (strings owned) */
	bool cfg_role_set;              /* role came from the configuration */
	int cfg_engine;                 /* enum sy_engine_kind from the configuration
	                                   (AUTO: discovered) */
	char vllm_model[STATEBUS_MODEL_MAX]; /* vLLM discovery: /v1/models' base model */
	char vllm_adapters[STATEBUS_LORA_LIST_MAX]; /* and its LoRA adapters
					   (statebus_worker.lora_adapters) */
	bool model_from_engine;         /* no model configured: take /server_info's
	                                   served_model_name / model_path */
	uint64_t order;                 /* registration order (adopted, configured,
	                                   added): precedence in the block-size oracle */
	int disc;                       /* enum sbd_disc_state */
	uint64_t disc_next_ns;
	bool health_inflight;
	uint64_t health_next_ns;
	uint64_t health_sent_ns;        /* when the running probe was submitted */
	uint32_t health_ok_streak;
	bool scrape_inflight;           /* vLLM: a GET /metrics runs */
	uint64_t scrape_next_ns;
	uint64_t kv_capacity_tokens;    /* /server_info max_total_num_tokens, 0 = unknown */
	uint32_t page_size;             /* /server_info page_size, 0 = unknown */
	bool restart_pending;           /* adopted at start-up, not subscribed yet: the
	                                   first sbd_sub_open resumes or rebuilds each
	                                   rank (subscriber.c "Statebus restart") */
	struct statebus_worker adopted; /* the record as adopted (KV facts the kept
	                                   index was built under) */
	uint32_t n_ranks;               /* ranks with state (= rec.dp_size once known) */
	struct sbd_rank *ranks;
};

struct sbd_http; /* http.c */
struct sbd_http_result;

/* The daemon. */
struct sbd {
	struct statebus_region *r;
	struct sy_config cfg;
	void *zctx;
	void *control;                  /* ZMQ REP, NULL when not bound */
	void *query;                    /* ZMQ ROUTER of prefix queries, NULL = off */
	struct statebus_query_server qs;
	struct sbd_worker *w;           /* statebus_workers_capacity() entries */
	uint32_t n_slots;
	uint32_t max_ranks;
	struct sbd_kv_decoder dec;
	struct sbd_vmap vmap;           /* vLLM engine id → own id, every vLLM worker */
	struct sbd_vllm_scratch vscr;
	/* Block size agreed per model, and the registration order of the
	 * worker that set it (the earliest-registered discovered one wins). */
	struct { char model[STATEBUS_MODEL_MAX]; uint32_t block_size; uint64_t order; } *models;
	uint32_t n_models;
	uint64_t next_order;            /* sbd_worker.order of the next new slot */
	struct sbd_http *http;
	int wake_fd;                    /* read end of the HTTP thread's pipe */
	uint64_t next_heartbeat_ns, next_sweep_ns;
	uint32_t mon_seq;               /* names the next inproc monitor endpoint */
	uint64_t next_affinity_sweep_ns; /* affinity idle-expiry sweep (affinity.c) */
	uint64_t scrapes, scrape_http_us, scrape_apply_ns; /* totals: cost per scrape */
	uint64_t next_predict_sweep_ns;  /* predicted-entry expiry sweep (predict.c) */
	bool index_kept;                 /* start-up kept the surviving index, and the
	                                    stream records describe it (main.c) */
	bool index_on;                   /* statebus.index resolved (sy_config_index_on):
	                                    false = no tree, no KV-event subscriptions,
	                                    no prediction drain; load and health only */
};

extern volatile sig_atomic_t sbd_stop;

/* ---- fleet.c ---- */
/* Adopts every non-free slot of the workers table (router-master or
 * earlier registrations) and schedules its discovery. */
void sbd_fleet_adopt(struct sbd *d);
/* Adds (or adopts, on SY_EEXIST) configured worker `cw`; *slot receives
 * its slot. Errors: as statebus_worker_add (SY_ENOSPC, SY_EINVAL). */
int sbd_fleet_add(struct sbd *d, const struct sy_config_worker *cw, uint32_t *slot);
/* Removes worker `slot`: sockets closed, index and load cleared, slot freed. */
int sbd_fleet_remove(struct sbd *d, uint32_t slot);
/* A /server_info result for (slot, gen): body NULL = failed after retries. */
void sbd_fleet_discovered(struct sbd *d, uint32_t slot, uint32_t gen, const char *body,
			  size_t len, const char *error, long status);
/* A /v1/models or /version result (vLLM discovery) for (slot, gen). */
void sbd_fleet_vllm_discovered(struct sbd *d, const struct sbd_http_result *res);
/* Probe period of a worker that a router marked down or stalled (passive
 * health, statebus/health.c): the first probe goes out at once, then every
 * 250 ms (or the configured interval when shorter). */
#define SBD_HEALTH_MARKED_INTERVAL_NS UINT64_C(250000000)

/* A /health result for (slot, gen): the worker's `healthy` bit (unknown →
 * healthy at the first success; unhealthy → healthy after the success
 * threshold; healthy → unhealthy after the failure threshold), and on
 * success the passive marks set before the probe was sent are cleared. */
void sbd_fleet_health(struct sbd *d, uint32_t slot, uint32_t gen, bool ok, const char *error);
/* Submits due discovery and health jobs. */
void sbd_fleet_timers(struct sbd *d, uint64_t now);
/* Writes worker `w`'s record (rec) to the table, with its prediction
 * facts (cache signal, capacity in blocks). */
int sbd_fleet_publish(struct sbd *d, struct sbd_worker *w);
/* Capacity in blocks bounding w's predicted entries: tokens from
 * statebus.prediction_capacity_tokens, else /server_info
 * max_total_num_tokens, divided by the block size (KV events', else
 * page_size); 0 = unknown (pool bound only). */
uint64_t sbd_fleet_predict_capacity(const struct sbd *d, const struct sbd_worker *w);

/* ---- subscriber.c ---- */
/* (Re)opens the SUB sockets of every rank of `w` from its record. */
void sbd_sub_open(struct sbd *d, struct sbd_worker *w);
/* Closes every socket of `w` and drops held batches and replays. */
void sbd_sub_close(struct sbd *d, struct sbd_worker *w);
/* Drains readable sockets of rank `k` of `w`. which: 0 kv, 1 load, 2 replay,
 * 3 the KV SUB's monitor (its events are always handled before KV data). */
void sbd_sub_readable(struct sbd *d, struct sbd_worker *w, uint32_t k, int which);
/* Ends replays past their deadline; publishes dirty stream records. */
void sbd_sub_timers(struct sbd *d, uint64_t now);
/* Processes one KV payload with `seq` on rank k (sequencing, replay,
 * apply). Exposed for the replay path and tests. */
void sbd_sub_batch(struct sbd *d, struct sbd_worker *w, uint32_t k, int64_t seq,
		   const uint8_t *payload, size_t len, bool allow_replay);

/* ---- apply.c (the only caller of the index write API) ---- */
/* Applies a decoded batch of rank k of `w` to the index. */
void sbd_apply_batch(struct sbd *d, struct sbd_worker *w, uint32_t k,
		     const struct sbd_kv_batch *b, uint64_t now);
/* Clears rank k of `w` in the index (reset, restart). */
void sbd_apply_clear_rank(struct sbd *d, struct sbd_worker *w, uint32_t k);
/* Clears every rank of slot `slot` in the index (worker removed). */
void sbd_apply_clear_worker(struct sbd *d, uint32_t slot);
/* Empties the index at start-up when it cannot be kept (bumps the
 * incarnation). */
void sbd_apply_reset(struct sbd *d);
/* Allocates the vLLM id map (statebus.vllm_map_blocks). SY_ENOMEM. */
int sbd_apply_init(struct sbd *d);
/* A GET /metrics result (vLLM): every rank with running and waiting
 * samples gets a scraped load record; the others keep theirs (which go
 * stale: unknown, never zero). Counted; its cost logged at debug. */
void sbd_scrape_result(struct sbd *d, const struct sbd_http_result *res);
/* Decodes and stores a LoadStat payload for rank k of `w`. */
void sbd_apply_load(struct sbd *d, struct sbd_worker *w, uint32_t k, const uint8_t *payload,
		    size_t len, uint64_t now);

/* ---- http.c ---- */
/* Jobs: DISCOVER GET /server_info; HEALTH GET /health; VLLM_MODELS GET
 * /v1/models and VLLM_VERSION GET /version (vLLM discovery; retried like
 * DISCOVER); METRICS GET /metrics (one attempt, health timeout). */
enum sbd_http_kind {
	SBD_HTTP_DISCOVER = 1,
	SBD_HTTP_HEALTH = 2,
	SBD_HTTP_VLLM_MODELS = 3,
	SBD_HTTP_VLLM_VERSION = 4,
	SBD_HTTP_METRICS = 5,
};
struct sbd_http_result {
	int kind;
	uint32_t slot, gen;
	bool ok;          /* health: 2xx; others: 2xx with a body */
	long status;      /* HTTP status of the last attempt, 0 = no answer */
	char *body;       /* body (malloc'd, NUL-terminated), or NULL */
	size_t len;
	uint64_t total_us;/* duration of the last transfer (curl TOTAL_TIME), µs */
	char error[160];  /* why it failed */
};
struct sbd_http_opts {
	long discovery_timeout_ms, health_timeout_ms;
	int discovery_attempts;
	long discovery_backoff_ms;
	const char *health_endpoint; /* path of the health probe (borrowed) */
};
/* Starts the HTTP thread; *wake_fd becomes readable when results wait. */
int sbd_http_start(struct sbd_http **out, const struct sbd_http_opts *o, int *wake_fd);
/* Queues a request for `url` (copied); it runs at once, concurrently with
 * the others (its result comes back through sbd_http_take). SY_ENOMEM. */
int sbd_http_submit(struct sbd_http *h, int kind, uint32_t slot, uint32_t gen, const char *url);
/* Takes one finished result (true) — caller frees out->body. */
bool sbd_http_take(struct sbd_http *h, struct sbd_http_result *out);
/* Stops and joins the thread, dropping queued work. */
void sbd_http_stop(struct sbd_http *h);

/* ---- bind.c ---- */
/* zmq_bind of socket s to ep; an ipc:// path is checked first (no symlink,
 * no file of another owner: SY_EPERM), created mode 0660 and chgrp'd to
 * state.group. `what` names the socket in err. Errors: SY_EPERM, SY_ENOENT
 * (no such group), SY_EIO (bind failed). */
int sbd_bind(struct sbd *d, void *s, const char *ep, const char *what, char *err, size_t cap);

/* ---- control.c ---- */
int sbd_control_open(struct sbd *d, char *err, size_t cap);
void sbd_control_readable(struct sbd *d);
void sbd_control_close(struct sbd *d);

/* ---- query.c (statebus.query_endpoint) ---- */
int sbd_query_open(struct sbd *d, char *err, size_t cap);
void sbd_query_readable(struct sbd *d);
void sbd_query_close(struct sbd *d);

/* ---- notify.c ---- */
void sbd_notify_ready(void);
void sbd_notify_stopping(void);
void sbd_notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
