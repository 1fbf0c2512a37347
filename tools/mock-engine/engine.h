/* engine.h — the mock engine: configuration, DP ranks, requests, scheduler.
 *
 * One process, one thread, one h2o event loop. Each DP rank has its own
 * prefix cache, waiting queue, running set, KV-event publisher and LoadStat
 * publisher, like one SGLang scheduler process per attention-DP rank.
 *
 * Life of a request (struct mreq, allocated from the h2o request's pool;
 * its dispose callback is the single place that releases everything):
 *   parse → [fail-rate: 500] → [stall-ms] → [decode mode: wait for the
 *   prefill's bootstrap READY] → QUEUED → (running < max_running) admit:
 *   cache acquire, prefill on the rank's serial prefill timeline
 *   (prefill_us_per_token × uncached tokens) → insert pages (events) →
 *   DECODE: output token i is ready at prefill_end + (i+1) × decode_us →
 *   finish: insert the output pages (prompt + output[:-1], SGLang
 *   cache_finished_req; engine.c cache_output), release pages, free the
 *   running slot.
 * Queue, running and token counts are real and feed LoadStat, /v1/loads and
 * /mock/stats.
 *
 * Invariant: the scheduler never runs inside an h2o callback that may be
 * disposing a request; it runs from mock_engine_tick() in the main loop
 * (handlers only enqueue and mark the rank).
 */
#ifndef SY_MOCK_ENGINE_H
#define SY_MOCK_ENGINE_H

#include <h2o.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/blockhash.h"
#include "tools/mock-engine/cache.h"
#include "tools/mock-engine/kvev.h"
#include "tools/mock-engine/loadstat.h"
#include "tools/mock-engine/publisher.h"
#include "tools/mock-engine/sbuf.h"
#include "tools/mock-engine/stats.h"
#include "tools/mock-engine/timer.h"
#include "tools/mock-engine/tok.h"

enum mock_pd_mode { MOCK_PD_NONE = 0, MOCK_PD_PREFILL, MOCK_PD_DECODE };

/* Which engine the mock speaks (--engine; docs/mock-engine.md). */
enum mock_engine_kind { MOCK_ENGINE_SGLANG = 0, MOCK_ENGINE_VLLM = 1 };

#define MOCK_MAX_LORA 8 /* --lora-modules names */

/* Command-line configuration (flags.c). Strings point into argv or are
 * static; never freed. */
struct mock_config {
	const char *host;            /* HTTP and ZMQ bind address (127.0.0.1) */
	int port;                    /* HTTP port */
	const char *model;           /* served model name */
	int kv_port;                 /* KV-event PUB base (rank r = base + r); 0 = off */
	int load_port;               /* LoadStat PUB base; 0 = off */
	int replay_port;             /* replay ROUTER base; 0 = off */
	const char *topic;           /* KV-event topic ("") */
	int dp_size;
	uint32_t block_size;         /* tokens per page */
	size_t cache_tokens;         /* KV capacity per rank, tokens */
	enum kvev_encoding encoding;
	int replay_frames;           /* 3 | 4 */
	size_t replay_buffer_steps;
	const char *medium;          /* "GPU" or NULL (left out) */
	const char *tokenizer, *tokenizer_path;
	int max_running;             /* per rank */
	uint64_t prefill_us;         /* µs per uncached prompt token */
	uint64_t decode_us;          /* µs per output token */
	int default_max_tokens;
	enum mock_pd_mode pd_mode;
	int bootstrap_port;          /* prefill: listen; advertised in /server_info */
	int pd_timeout_ms;           /* decode: wait for the prefill */
	const char *spec_algo;       /* NULL or e.g. "EAGLE" */
	bool bigram;                 /* from spec_algo */
	double fail_rate;
	int stall_ms;
	int drop_after_tokens;       /* 0 = off */
	unsigned skip_seq_every;     /* 0 = off */
	uint64_t seed;
	int load_interval_ms;        /* idle LoadStat resend (1000) */
	int kv_event_delay_ms;       /* KV-event batches published this long after
	                                the step that made them (0 = at once) */
	size_t max_body_bytes;       /* larger request bodies: 413 (64 MiB) */
	int engine;                  /* enum mock_engine_kind */
	const char *lora[MOCK_MAX_LORA]; /* vLLM LoRA adapter names served */
	int n_lora;
	const char *request_log;     /* --request-log: path, NULL = off */
};

/* Fault switches, changeable at run time (POST /mock/faults). */
struct mock_faults {
	double fail_rate;
	int stall_ms;
	int drop_after_tokens;
	unsigned skip_seq_every;
};

struct mreq;
struct pd_lookup;

/* One encoded KV-event batch waiting for its publish time
 * (--kv-event-delay-ms); owned by its rank's queue. */
struct mock_delayed {
	struct mock_delayed *next;
	uint64_t due_us;             /* CLOCK_MONOTONIC µs */
	size_t len;
	char data[];
};

struct mock_rank {
	int idx;
	struct mock_engine *eng;
	struct mock_cache *cache;
	struct kvev_batch batch;      /* events of the current step */
	struct mock_delayed *dq_head, *dq_tail; /* encoded batches not yet published,
					 oldest first (--kv-event-delay-ms) */
	bool has_kv, has_load;
	struct mock_pub kv, load;
	h2o_socket_t *replay_watch;   /* dup of the ROUTER's ZMQ_FD in the loop */
	struct mreq *wait_head, *wait_tail;
	int64_t n_waiting, n_running, n_pd_wait;
	int64_t waiting_uncached;     /* Σ estimated uncached tokens of waiting */
	int64_t tokens_reqs;          /* Σ tokens of running + waiting requests */
	int64_t running_decode_tokens;/* output tokens held by running requests */
	uint64_t prefill_free_at;     /* µs, serial prefill timeline */
	int64_t total_prefill_uncached, total_prefill_busy_us;
	uint64_t hit_prompt_tokens;   /* Σ prompt tokens of finished requests (since
					 start or POST /mock/reset) */
	uint64_t hit_cached_tokens;   /* Σ their prefix-cache hits, tokens; the
					 rank's cache_hit_rate = cached / prompt */
	bool kick;                    /* schedule at the next tick */
	uint64_t prom_prompt_tokens;  /* monotonic (never reset): /metrics counters */
	uint64_t prom_generation_tokens;
	uint64_t prom_requests;       /* finished requests */
	struct loadstat last_ls;
	uint64_t last_ls_us;
	bool ls_sent;
};

struct mock_engine {
	struct mock_config cfg;
	struct mock_faults faults;
	struct mock_tok tok;
	h2o_evloop_t *loop;
	struct mock_timers timers;
	void *zctx;
	struct mock_rank *ranks;
	struct mock_stats stats;
	uint64_t rng;                 /* xorshift state for fail-rate */
	uint64_t next_id;
	unsigned rr;                  /* round-robin rank choice */
	char *model_json;             /* model name as a JSON string literal */
	struct mock_pd *pd;           /* bootstrap server / client state */
	uint64_t started_wall_s;
	int request_log_fd;           /* --request-log, opened O_APPEND; -1 = off */
	struct sy_blockhash_digest lora_seed[MOCK_MAX_LORA]; /* chain roots of the
					 adapters (sy_blockhash_lora_seed) */
};

enum mreq_kind { MREQ_CHAT, MREQ_COMPLETION, MREQ_GENERATE };
enum mreq_state {
	MS_NEW, MS_STALL, MS_PD_WAIT, MS_QUEUED, MS_PREFILL, MS_DECODE, MS_DONE
};

/* One request in flight. Lives in req->pool; released by its dispose. */
struct mreq {
	struct mock_engine *eng;
	h2o_req_t *req;               /* NULL once the response is complete */
	struct mock_rank *rank;
	enum mreq_kind kind;
	enum mreq_state state;
	bool stream, include_usage;
	uint64_t id;
	uint32_t *tokens;             /* prompt token ids (malloc'ed) */
	size_t n_tokens;
	int64_t *hashes;              /* whole-page ids (malloc'ed) */
	uint32_t *page_tokens;        /* token ids per page for events (malloc'ed) */
	size_t n_pages, tok_per_page, locked;
	int64_t est_uncached;         /* counted in rank->waiting_uncached */
	size_t cached_tokens;
	int lora;                     /* vLLM LoRA adapter: 0 none, 1 + index of cfg.lora */
	int max_tokens, generated;
	uint64_t seed;
	uint64_t t_arrival, t_admit, t_prefill_end, t_first;
	struct mock_timer timer;
	struct mreq *qnext, *qprev;
	/* PD */
	bool has_room;
	uint64_t room;
	char bs_host[256];
	int bs_port;
	struct sockaddr_storage bs_addr; /* resolved once (pd.c): no DNS per retry */
	socklen_t bs_addrlen;            /* 0 = not resolved yet */
	struct pd_lookup *bs_lookup;     /* name lookup in flight off the loop (pd.c) */
	bool bs_unresolvable;            /* resolution failed: wait for the timeout */
	uint64_t pd_deadline;
	h2o_socket_t *pd_sock;
	char pd_wbuf[48];             /* "WAIT <room>\n" while it is written */
	bool pd_ready;
	/* streaming */
	h2o_generator_t gen;
	bool started, sending, final_pending, dropped;
	struct sbuf out, inflight;
	size_t text_bytes;            /* /generate: cumulative text so far */
	struct sbuf gen_text;
};

/* Creates the engine: ranks, caches, publishers (binds ZMQ sockets).
 * Returns 0 or a negative sy_err (logged). */
int mock_engine_init(struct mock_engine *e, const struct mock_config *cfg, h2o_evloop_t *loop);

/* --request-log: appends one line for inference request `req` as it
 * arrives ("<wall seconds.µs> <HTTP port> <x-request-id or -> <path>\n",
 * one write, so engines may share the file). No-op when off. */
void mock_engine_log_request(struct mock_engine *e, h2o_req_t *req);

/* Takes a parsed request: applies faults, routes it to a rank and queues
 * it. On an immediate error it has already responded. */
void mock_engine_submit(struct mreq *r);

/* Runs due timers, schedules ranks, flushes event batches and LoadStat,
 * answers replay requests. Called by the main loop after each loop turn. */
void mock_engine_tick(struct mock_engine *e);

/* Milliseconds the loop may sleep before the next tick is needed. */
int32_t mock_engine_wait_ms(struct mock_engine *e);

/* POST /flush_cache: clears every rank (AllBlocksCleared). Returns 0 or
 * SY_EBUSY while requests run. */
int mock_engine_flush_cache(struct mock_engine *e);

/* POST /mock/restart_events: END_SEQ (when `sentinel`) then seq 0 on every
 * rank's KV stream; the caches are emptied silently unless `keep_cache`. */
void mock_engine_restart_events(struct mock_engine *e, bool sentinel, bool keep_cache);

/* Clean shutdown: END_SEQ on every KV stream, close sockets. */
void mock_engine_shutdown(struct mock_engine *e);

/* Current LoadStat of a rank. */
void mock_rank_loadstat(const struct mock_rank *rk, struct loadstat *out);

/* Root seed of LoRA adapter `lora` (1-based, struct mreq.lora), or NULL for
 * the base model: its pages hash in the adapter's own namespace, as the
 * statebus re-hashes vLLM events that carry lora_name. */
const struct sy_blockhash_digest *mock_lora_seed(const struct mock_engine *e, int lora);

/* Allocates a request bound to `req` (pool-owned, disposed with it). */
struct mreq *mreq_new(struct mock_engine *e, h2o_req_t *req);

/* Fails the request with an OpenAI-style JSON error (if not started). */
void mreq_fail(struct mreq *r, int status, const char *type, const char *msg);

/* Called by pd.c: the prefill for r's room is done (queue r), or the wait
 * timed out (fail r with 500). */
void mreq_pd_ready(struct mreq *r);
void mreq_pd_timeout(struct mreq *r);

/* PD helpers (pd.c). */
int mock_pd_init(struct mock_engine *e);
void mock_pd_prefill_done(struct mock_engine *e, uint64_t room);
void mock_pd_wait(struct mreq *r);
void mock_pd_cancel(struct mreq *r);
void mock_pd_close(struct mock_engine *e);

#endif
