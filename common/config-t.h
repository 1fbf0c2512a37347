/* config-t.h — the types of switchyard's configuration (functions: config.h).
 *
 * One struct sy_config holds everything both daemons read from the YAML file
 * (`--config FILE`, DESIGN.md §5) and from their flags. Each nested struct is
 * one YAML mapping; each member's name is its YAML key (the schema tables in
 * config.c take the key from the member name). Units are in the key names
 * (_secs, _ms, _bytes). Ownership: the struct owns every string and array
 * reachable from it; only sy_config_free() releases them. A NULL string or a
 * 0 integer documented as "absent" means the key was not given.
 *
 * `policy` (the default policy of every group, admission caps, legacy
 * policy flags) and `buckets` (buckets with engine groups) are the router's
 * selection settings (reference/policy-defaults.md §1, §5, §6, §11).
 */
#ifndef SY_COMMON_CONFIG_T_H
#define SY_COMMON_CONFIG_T_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where a value or mapping came from: 1-based line and column in the file
 * named by sy_config.source; {0, 0} when it came from a flag or a default. */
struct sy_config_mark {
	uint32_t line;
	uint32_t col;
};

/* A failed load, flag or check. `msg` is the whole, printable message:
 *   "FILE:LINE:COL: KEY.PATH: reason"   (from the YAML file)
 *   "--flag: reason"                    (from a flag)
 *   "KEY.PATH: reason"                  (a cross-field check on flag values)
 * Key paths are dotted with 0-based sequence indexes:
 * "workers[1].kv_events.block_size". */
struct sy_config_error {
	int code;            /* 0, or the sy_err code the function returned */
	uint32_t line, col;  /* 1-based position; 0 when not from the file */
	char key[160];       /* key path or flag ("" when none applies) */
	char msg[512];       /* NUL-terminated, truncated to fit */
};

/* Longest state.shm_path in bytes (the state plane stores the region path in
 * 256 bytes incl. NUL). */
#define SY_CONFIG_SHM_PATH_MAX 255
/* model_id when none is given (config.c); a worker left with it takes the
 * model name its engine reports, where the statebus discovers one. */
#define SY_CONFIG_DEFAULT_MODEL_ID "default-model"

enum sy_worker_role {
	SY_ROLE_PLAIN = 0,   /* serves whole requests */
	SY_ROLE_PREFILL = 1, /* PD disaggregation: prefill stage */
	SY_ROLE_DECODE = 2,  /* PD disaggregation: decode stage */
};

/* workers[].engine: which engine a worker runs (DESIGN.md §9). AUTO: the
 * statebus discovers it (/server_info → SGLang; else /v1/models and
 * /version → vLLM). */
enum sy_engine_kind {
	SY_ENGINE_AUTO = 0,
	SY_ENGINE_SGLANG = 1,
	SY_ENGINE_VLLM = 2,
};

/* statebus.kv_events: subscribe to engines' KV events, or not (approximate
 * mode for every worker: the index holds only the routers' predictions). */
enum sy_kv_events_mode {
	SY_KV_EVENTS_ON = 0,
	SY_KV_EVENTS_OFF = 1,
};

/* workers[].kv_events.subscribe: the worker's own choice over the fleet's. */
enum sy_kv_subscribe {
	SY_KV_SUBSCRIBE_FLEET = 0, /* as statebus.kv_events */
	SY_KV_SUBSCRIBE_ON = 1,
	SY_KV_SUBSCRIBE_OFF = 2,
};

enum sy_tokenizer_kind {
	SY_TOKENIZER_UNSET = -1, /* not given: sy_config_finish picks hf when a
				    tokenizer or model path is given, else bytes */
	SY_TOKENIZER_BYTES = 0, /* token = UTF-8 byte value */
	SY_TOKENIZER_HF = 1,    /* HF tokenizer.json under tokenizer.path */
	SY_TOKENIZER_OFF = 2,   /* no tokenization: body-size estimate */
};

/* workers[].kv_events: per-worker KV-event facts that /server_info does not
 * give (SGLang --kv-events-config, reference/sglang-wire.md). 0 / NULL: not
 * given (discovered, or derived from the worker URL). */
struct sy_config_kv_events {
	char *endpoint_host;         /* host of the engine's ZMQ PUB sockets */
	int endpoint_port_base;      /* port of DP rank 0; rank r at base + r */
	char *topic;                 /* ZMQ subscription topic */
	int block_size;              /* tokens per KV block (page size) */
	int dp_size;                 /* data-parallel ranks */
	int replay_port_base;        /* replay ROUTER socket of rank 0 */
	int load_endpoint_port_base; /* LoadStat PUB socket of rank 0 */
	int subscribe;               /* enum sy_kv_subscribe: KV events of this
	                                worker on, off, or as statebus.kv_events */
};

/* One static worker (an entry of `workers`, or a `worker_urls` item). */
struct sy_config_worker {
	char *url;                /* normalised (sy_url_normalize): the worker ID */
	int role;                 /* enum sy_worker_role */
	char *model;              /* NULL until sy_config_finish() fills model_id */
	bool model_default;       /* set by sy_config_finish(): neither workers[].model
	                             nor model_id was given (model is the built-in
	                             default) — the statebus then takes the name the
	                             engine reports in /server_info */
	int bootstrap_port;       /* PD bootstrap port, 1..65535; 0 absent */
	int engine;               /* enum sy_engine_kind (auto|sglang|vllm) */
	struct sy_config_kv_events kv_events;
	struct sy_config_mark mark; /* the entry's mapping */
};

/* A PD worker from SGLang's --prefill URL [PORT] / --decode URL flags. */
struct sy_config_pd_flag {
	char *url;          /* normalised worker ID */
	int role;           /* SY_ROLE_PREFILL or SY_ROLE_DECODE */
	int bootstrap_port; /* 0: from the engine */
};

struct sy_config_log {
	int level;  /* enum sy_log_level (debug|info|warn|error|off) */
	int format; /* enum sy_log_format (text|json) */
};

struct sy_config_state {
	char *shm_path; /* the state-plane region file */
	char *group;    /* group of the region file (mode 0640) and of the
	                   statebus's ipc sockets (mode 0660), so that its
	                   members (syctl, monitoring) read without root; NULL =
	                   the creating daemon's own group */
};

struct sy_config_tokenizer {
	int kind;   /* enum sy_tokenizer_kind */
	char *path; /* directory holding tokenizer.json, or the tokenizer.json
		       file itself; NULL absent. Given without `kind`, kind is
		       hf (SGLang --tokenizer-path) */
	char *model_path;    /* SGLang --model-path: a local model directory whose
				tokenizer.json is used when `path` is absent (kind
				hf); a hub model id is refused (no network) */
	char *chat_template; /* SGLang --chat-template: a file with the chat
				template that replaces the one in
				tokenizer_config.json; NULL absent */
	struct sy_config_mark mark;
};

/* Most re-dispatches of one request (router.retry_max_retries). */
#define WORKER_RETRIES_MAX 15
/* router.metrics_names: which names /metrics exposes. */
enum sy_metrics_names {
	SY_METRICS_SWITCHYARD = 0, /* switchyard_* */
	SY_METRICS_SGLANG = 1,     /* the SGLang router's names (docs/router.md) */
	SY_METRICS_BOTH = 2,       /* both sets */
};

struct sy_config_router {
	char *host;                /* listen address */
	int port;                  /* listen port, 1..65535 */
	int processes;             /* worker processes under the master */
	int request_timeout_secs;  /* whole request, from dispatch to the last
				      byte of the response (SGLang semantics) */
	int header_timeout_secs;   /* dispatch → response headers */
	int shutdown_drain_secs;   /* drain time on SIGTERM */
	uint64_t max_body_bytes;   /* request bodies above → 413 */
	uint64_t max_pending_body_bytes; /* request-body bytes all connections of a
	                                    process may hold; past it → 503 */
	struct sy_config_tokenizer tokenizer;
	bool chat_template_fallback; /* hf: an unknown chat template renders as
	                                plain ChatML instead of failing start-up */
	bool disable_input_ids_forwarding; /* true: chat bodies go to the engine
	                                      without the router's input_ids */
	char *access_log;          /* file path; NULL: no access log */
	char *api_key;             /* bearer key of the inference and model routes;
	                              NULL: open (also from api_key_file) */
	char *api_key_file;        /* file holding api_key (one line); NULL: none */
	char *admin_api_key;       /* bearer key of /workers and /flush_cache; NULL:
	                              admin API off (also from admin_api_key_file) */
	char *admin_api_key_file;  /* file holding admin_api_key; NULL: none */
	bool api_key_read, admin_api_key_read; /* the key files were read (finish) */
	char *admin_host;          /* admin listener address; NULL: router.host */
	int admin_port;            /* admin listener port (admin routes only there);
	                              0: none, admin routes on the main listener */
	char *tls_cert_path;       /* PEM certificate chain of the listener; NULL: no TLS */
	char *tls_key_path;        /* PEM private key of tls_cert_path */
	/* Data plane (reference/policy-defaults.md §7, §9). */
	int stream_idle_timeout_secs; /* max gap between upstream body bytes */
	bool no_decision_headers;  /* true: no x-switchyard-* decision headers */
	int cb_threshold;          /* consecutive failures that open a worker's
	                              breaker; 0 = breaker off (opt-in) */
	int cb_cool_down_secs;     /* open → half-open after this long */
	bool retry_once;           /* one re-dispatch (plain only) before any byte
	                              reached the client */
	int retry_max_retries;     /* re-dispatches of a request that failed before
	                              any byte reached the client, each to a worker
	                              not tried yet (SMG --retry-max-retries); the
	                              effective count after sy_config_finish
	                              (retry_once → 1, disable_retries → 0; default
	                              0: retries are opt-in) */
	int retry_initial_backoff_ms; /* wait before the first retry */
	int retry_max_backoff_ms;  /* cap of the wait */
	double retry_backoff_multiplier; /* growth of the wait per retry (≥ 1) */
	double retry_jitter_factor; /* the wait is scaled by 1 ± this × uniform(0,1) */
	bool disable_retries;      /* SMG --disable-retries: no retry at all */
	int upstream_pool_idle_timeout_secs; /* idle keep-alive upstream sockets are
	                              closed after this long (0 = not kept) */
	int stall_timeout_secs;    /* streamed requests in flight, no byte from
	                              the engine for this long → stalled, left
	                              out of selection (router/dispatch/stall.h);
	                              0 = no stall detection */
	int health_unknown_grace_secs; /* without a statebus: seconds after the
	                              master starts during which a worker not
	                              yet probed is picked (0 = never) */
	char *override_sampling_params; /* JSON object merged into requests; NULL off */
	int sampling_param_conflict;    /* enum sy_sampling_conflict */
	int max_connections_per_worker; /* keep-alive upstream sockets per worker
	                                   and process (socket pool capacity) */
	char *session_id_header;   /* session key header (default x-session-id) */
	char *routing_key_header;  /* routing key header (default x-sgl-routing-key) */
	int ttft_slo_policy;       /* enum sy_slo_policy, header x-sgl-ttft-slo-ms */
	int tps_slo_policy;        /* enum sy_slo_policy, header x-sgl-tps-slo */
	char *upstream_client;     /* "lean": the one upstream client
	                              (router/upstream/client.h); other values refused */
	/* SGLang router compatibility (README "Coming from SGLang's router"). */
	bool pd_disaggregation;    /* SGLang --pd-disaggregation: the fleet is
				      prefill + decode workers (--prefill/--decode) */
	char *prometheus_host;     /* metrics listener address; NULL absent */
	int prometheus_port;       /* metrics listener port, 0 = ephemeral; -1
				      absent. The listener runs when either is
				      given (defaults 0.0.0.0:29000, SGLang's) */
	int metrics_names;         /* enum sy_metrics_names */
	char **cors_allowed_origins; /* origins answered with CORS headers ("*" any) */
	size_t n_cors_allowed_origins;
	/* Router queue (DESIGN.md §9 "Queueing"; router/http/queue_run.c). */
	int queue_size;            /* requests waiting router-wide (all processes);
				      0 = no queue: admission exhaustion → 503 at once */
	int queue_timeout_secs;    /* longest wait in the queue → 503 */
	char *queue_timeout_header; /* request header (ms) that can shorten a
				      request's wait, never lengthen it */
	int max_concurrent_requests; /* router-wide requests between selection and
				      the end of the response (SMG semantics), over
				      every process; -1 = no cap */
	char *priority_header;     /* request header naming the class (system,
				      interactive, default, bulk); default
				      x-smg-priority */
	char *tenant_header;       /* trusted header naming the tenant; NULL: the
				      API key's identity (auth.c) */
	int tenant_max_priority;   /* enum sy_queue_class: highest class a tenant
				      not in tenant_priorities may ask for */
	char **tenant_priorities;  /* "tenant=class": a tenant's highest class */
	size_t n_tenant_priorities;
	char **tenant_weights;     /* "tenant=weight" (1..1000, default 1): share of
				      dequeues inside a class */
	size_t n_tenant_weights;
	char **request_id_headers; /* request headers whose value becomes the
				      request ID, first present wins (lower-case) */
	size_t n_request_id_headers;
};

/* Router queue classes, highest first (x-smg-priority values); the same
 * order as enum statebus_queue_class. */
enum sy_queue_class {
	SY_QCLASS_SYSTEM = 0,
	SY_QCLASS_INTERACTIVE = 1,
	SY_QCLASS_DEFAULT = 2,
	SY_QCLASS_BULK = 3,
};

enum sy_sampling_conflict {
	SY_SAMPLING_REJECT = 0, /* a differing client value → 400 sampling_contract_violation */
	SY_SAMPLING_ALLOW = 1,  /* the override wins silently */
};

enum sy_slo_policy {
	SY_SLO_DISABLED = 0,    /* targets ignored (headers not read) */
	SY_SLO_BEST_EFFORT = 1, /* penalise buckets that meet the target */
	SY_SLO_FIRST = 2,       /* penalise buckets that do not meet it */
};

/* policy.admission / groups.*.policy.admission: hard caps
 * (reference/policy-defaults.md §5). -1 = absent (no cap / inherit). */
struct sy_config_admission {
	int64_t max_running_requests;       /* requests */
	int64_t max_waiting_requests;       /* requests */
	int64_t max_kv_tokens;              /* tokens */
	int64_t max_pending_prefill_tokens; /* tokens */
	int64_t max_inflight_requests;      /* router-local requests */
};

/* A policy block: the top-level `policy` (defaults of every group, from
 * --policy and friends) or a group's `policy`. A key left out of a group's
 * block comes from the top-level block. NULL / 0 / -1 = absent. */
struct sy_config_policy {
	char *type;              /* round_robin | random | power_of_n |
				    power_of_two | cache_aware | session_aware |
				    sticky | load_based; top-level default
				    power_of_n (reorg) */
	int power_of_n_choices;  /* N of power_of_n; 0 absent (default 2) */
	struct sy_config_admission admission;
	/* Top-level only (refused inside a group): */
	char *prefill_policy;    /* --prefill-policy: prefill groups' type */
	char *decode_policy;     /* --decode-policy: decode groups' type
				    (default power_of_n) */
	char *filter;            /* --filter: "overloaded" (legacy, with
				    max_in_flight) */
	int max_in_flight;       /* --max-in-flight (legacy): with filter
				    overloaded → admission.max_inflight_requests */
	char *chat_routing;      /* --chat-routing: only "reorg" (no-op) */
	char *affinity_mode;     /* --affinity-mode: only "strict" (session_aware);
				    "soft" is refused */
	/* Affinity policies (session_aware, sticky; reference §4.3, §4.4): */
	char *sticky_fallback;   /* --sticky-fallback: round_robin (default) |
				    random | power_of_two | power_of_n |
				    load_based; only with type sticky */
	int affinity_idle_timeout_secs; /* --affinity-idle-timeout-secs: idle TTL
				    of session / sticky bindings; 0 absent (600) */
	char *session_affinity_mode; /* --session-affinity-mode: only "bucket"
				    (bindings are scoped by bucket and stage) */
	/* cache_aware (reference/policy-defaults.md §2). Valid at the top level
	 * (defaults of every cache_aware group) and in a cache_aware group's
	 * block; -1 (doubles: -1.0) = absent: inherit the top level, then the
	 * reference default (router/policies/cache/cache_aware.h). */
	int64_t cache_affinity_min_matched_tokens; /* tokens, ≥ 0; default 1024 */
	double cache_affinity_min_match_ratio;     /* 0..1; default unset */
	int64_t cache_candidate_min_workers;       /* ≥ 1; default 8 */
	double cache_candidate_ratio;              /* 0..1 (> 0); default 0.05 */
	int64_t cache_candidate_max_workers;       /* ≥ 1, ≥ min; default 32 */
	int64_t cache_switch_margin_tokens;        /* tokens, ≥ 0; default 1024 */
	int64_t worker_queue_limit;                /* waiting requests, ≥ 1; unset */
	int64_t saturation_queue_floor;            /* 1..worker_queue_limit; unset */
	int64_t min_load_choices;                  /* ≥ 1; default 2 */
	bool disable_pressure_guard;               /* true here or at the top: off */
	int64_t pressure_abs_threshold_tokens;     /* tokens, ≥ 0; default 1024 */
	double pressure_abs_threshold_ms;          /* ms, ≥ 0; default unset */
	double pressure_rel_threshold;             /* > 1; default 1.5 */
	double cache_predicted_weight;             /* 0..1; weight of a block held only
						      by a prediction; default 1 */
	int64_t cache_predicted_window_ms;         /* ms, ≥ 0: full weight this long
						      after the last prediction; 2000 */
	int64_t cache_predicted_half_life_ms;      /* ms, ≥ 0: then halves every this
						      long (0: stops counting); 1000 */
	char *cache_prefix_provider;               /* local (default) | indexer */
	char *kv_indexer_endpoint;                 /* ZMQ endpoint of another
						      statebus's query_endpoint */
	int64_t kv_indexer_timeout_ms;             /* ms, 1..60000; default 100 */
	int64_t kv_indexer_max_inflight;           /* queries, 1..4096; default 32 */
	struct sy_config_mark mark;
};

/* buckets[].limits: inclusive input-token range. */
struct sy_config_limits {
	int64_t min; /* tokens, default 0 */
	int64_t max; /* tokens, -1 = unbounded */
};

/* buckets[].groups.{plain,prefill,decode}. Given when mark.line > 0. */
struct sy_config_group {
	char **worker_ids;        /* normalised worker IDs (membership) */
	size_t n_worker_ids;
	bool worker_ids_given;    /* worker_ids: [...] present (may be empty) */
	struct sy_config_policy policy;
	struct sy_config_mark mark;
};

struct sy_config_groups {
	struct sy_config_group plain;
	struct sy_config_group prefill;
	struct sy_config_group decode;
	struct sy_config_mark mark;
};

/* One bucket (reference/policy-defaults.md §6, SGLang buckets_reorg.rs). */
struct sy_config_bucket {
	char *id;                   /* required, unique */
	int64_t rank;               /* 0..4294967295, default 0 */
	struct sy_config_limits limits;
	int64_t max_context_tokens; /* tokens, -1 = unbounded */
	double ttft_ms;             /* TTFT estimate, ms; 0 = none */
	double tokens_per_second;   /* TPS estimate; 0 = none */
	struct sy_config_groups groups; /* plain, or prefill + decode */
	char **models;              /* models the bucket serves; none: every model
				       that no bucket names (sy_config_bucket_serves) */
	size_t n_models;
	struct sy_config_mark mark;
};

struct sy_config_statebus {
	char *control_endpoint;  /* ZMQ REP; default "ipc://<state.shm_path>.ctl" */
	char *query_endpoint;    /* ZMQ ROUTER for remote prefix queries; NULL off */
	int health_interval_ms;  /* worker health probe period */
	int health_timeout_ms;        /* one /health probe */
	int health_failure_threshold; /* consecutive failures → unhealthy */
	int health_success_threshold; /* consecutive successes → healthy again */
	char *health_endpoint;        /* path probed on each worker ("/health") */
	bool disable_health_check;    /* no probes: workers stay healthy, and no
	                                 passive down or stall marks (nothing
	                                 would clear them); breakers still apply */
	int discovery_timeout_ms;     /* one GET /server_info attempt */
	int discovery_attempts;       /* attempts per discovery round */
	int discovery_backoff_ms;     /* first retry delay, doubling */
	int discovery_retry_ms;       /* next round after a failed one */
	int replay_timeout_ms;        /* budget of one replay fetch (sglang-wire.md §3) */
	int heartbeat_interval_ms;    /* statebus heartbeat in the region header */
	int affinity_sweep_interval_secs; /* affinity idle-expiry sweep period (statebus,
	                                     or the router master without one); 60 */
	int metrics_interval_ms;      /* scrape period of vLLM workers' /metrics; 0 = off */
	int vllm_map_blocks;          /* capacity of the vLLM engine id → own id map in
	                                 blocks, all vLLM workers together (68 B each) */
	int kv_events;                /* enum sy_kv_events_mode: off = no KV-event
	                                 subscription, every worker in approximate
	                                 mode (workers[].kv_events.subscribe wins) */
	int prediction_ttl_ms;        /* lifetime of a predicted index entry since its
	                                 last prediction, ms; 30000 */
	int prediction_drain_ms;      /* longest wait of the statebus loop between two
	                                 drains of the prediction rings, ms; 2 */
	int64_t prediction_capacity_tokens; /* KV capacity per worker, tokens, bounding its
	                                 predicted blocks; 0 = /server_info
	                                 max_total_num_tokens (none: pool bound only) */
	int index;                    /* enum sy_index_mode: whether the statebus builds
	                                 the radix index (sy_config_index_on) */
};

/* statebus.index (--index): the statebus's radix index of KV blocks. */
enum sy_index_mode {
	SY_INDEX_AUTO = 0, /* on when a configured policy needs it (a cache_aware
	                      group with the local prefix source), the statebus
	                      answers remote prefix queries (query_endpoint), or
	                      the configuration names no policy at all */
	SY_INDEX_ON = 1,   /* always built (e.g. routers of another configuration
	                      on the host read it) */
	SY_INDEX_OFF = 2,  /* never built: no KV-event subscriptions, no tree, no
	                      predictions; load and health still run */
};

struct sy_config {
	char *model_id;                  /* model of workers that name none */
	struct sy_config_log log;
	struct sy_config_state state;
	struct sy_config_worker *workers; /* the static fleet, n_workers entries */
	size_t n_workers;
	char **worker_urls;              /* SGLang-style shorthand for plain workers; */
	struct sy_config_mark *worker_url_marks; /* merged into workers by finish */
	size_t n_worker_urls;
	struct sy_config_router router;
	struct sy_config_statebus statebus;
	struct sy_config_policy policy;  /* top-level default policy */
	struct sy_config_bucket *buckets; /* n_buckets; none → catch-all from flags */
	size_t n_buckets;

	char *source;                    /* name of the last file loaded, or NULL */
	bool worker_urls_from_flags;     /* --worker-urls given: it names the fleet */
	struct sy_config_pd_flag *pd_flags; /* --prefill / --decode, n_pd_flags of them
					       (folded into workers by finish) */
	size_t n_pd_flags;
};

#endif
