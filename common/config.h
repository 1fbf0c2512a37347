/* config.h — the configuration of both daemons: YAML file + flags.
 *
 * Life of a configuration (DESIGN.md §5):
 *   struct sy_config cfg;
 *   struct sy_config_error err;
 *   sy_config_init_defaults(&cfg);                        built-in defaults
 *   sy_config_load_file(&cfg, path, &err);                --config FILE
 *   sy_config_apply_flag(&cfg, "router", "--port", "8080", &err);  flags win
 *   sy_config_finish(&cfg, &err);                         derived values, checks
 *   ... use cfg (read-only; a reload builds a new one) ...
 *   sy_config_free(&cfg);
 * Every function reports failure as a negative sy_err (common/errors.h) and
 * fills the caller's struct sy_config_error (may be NULL) with a printable
 * message; none prints or exits. After any failure the config is still
 * valid to free (possibly partly updated) and should not be used.
 * Not thread-safe per struct; no global state.
 *
 * The schema (one YAML file for both daemons; member names = keys):
 *   model_id: default-model
 *   log:      {level: info, format: text}
 *   state:    {shm_path: /dev/shm/switchyard, group (--shm-group; a group
 *              name: the region file is chgrp'd to it, mode 0640, and the
 *              statebus's ipc sockets, mode 0660; absent = the daemon's own
 *              group; the daemons' user must be a member)}
 *   workers:  [{url (required), role: plain|prefill|decode, model: <model_id>,
 *               bootstrap_port, kv_events: {endpoint_host, endpoint_port_base,
 *               topic, block_size, dp_size, replay_port_base,
 *               load_endpoint_port_base}}]
 *   worker_urls: [url, ...]        shorthand: plain workers with defaults
 *   router:   {host: 127.0.0.1, port: 30000, processes: 1,
 *              request_timeout_secs: 300, shutdown_drain_secs: 30,
 *              max_body_bytes: 33554432, max_pending_body_bytes: 268435456,
 *              tokenizer: {kind: bytes, path},
 *              chat_template_fallback: false,
 *              disable_input_ids_forwarding: false,
 *              access_log, admin_api_key, stream_idle_timeout_secs: 180,
 *              no_decision_headers: false, cb_threshold: 0 (off),
 *              cb_cool_down_secs: 30, retry_once: false,
 *              health_unknown_grace_secs: 0, stall_timeout_secs: 5,
 *              retry_max_retries: 0 (retry_once: 1), retry_initial_backoff_ms: 50,
 *              retry_max_backoff_ms: 30000, retry_backoff_multiplier: 1.5,
 *              retry_jitter_factor: 0.2, disable_retries: false,
 *              upstream_pool_idle_timeout_secs: 3,
 *              override_sampling_params (JSON object), sampling_param_conflict:
 *              reject|allow, max_connections_per_worker: 256,
 *              upstream_client: lean,
 *              queue_size: 100 (0 = no queue), queue_timeout_secs: 60,
 *              queue_timeout_header: x-switchyard-queue-timeout-ms,
 *              max_concurrent_requests: -1, priority_header: x-smg-priority,
 *              tenant_header, tenant_max_priority: default,
 *              tenant_priorities: [tenant=class], tenant_weights: [tenant=N]}
 *   statebus: {control_endpoint: ipc://<shm_path>.ctl, query_endpoint,
 *              health_interval_ms: 1000, health_timeout_ms: 5000,
 *              health_failure_threshold: 3, health_success_threshold: 2,
 *              discovery_timeout_ms: 2000, discovery_attempts: 3,
 *              discovery_backoff_ms: 100, discovery_retry_ms: 5000,
 *              replay_timeout_ms: 2000, heartbeat_interval_ms: 1000,
 *              affinity_sweep_interval_secs: 60, prediction_ttl_ms: 30000,
 *              prediction_drain_ms: 2, prediction_capacity_tokens: 0}
 *   router (selection keys): session_id_header: x-session-id,
 *              routing_key_header: x-sgl-routing-key,
 *              ttft_slo_policy / tps_slo_policy: disabled|best_effort|slo_first
 *   policy:   {type: power_of_n, power_of_n_choices: 2,
 *              admission: {max_running_requests, max_waiting_requests,
 *                          max_kv_tokens, max_pending_prefill_tokens,
 *                          max_inflight_requests},
 *              prefill_policy, decode_policy: power_of_n,
 *              filter: overloaded, max_in_flight, chat_routing: reorg,
 *              affinity_mode: strict, sticky_fallback: round_robin,
 *              affinity_idle_timeout_secs: 600, session_affinity_mode:
 *              bucket}                      (top-level: defaults of groups)
 *   buckets:  [{id (required), rank: 0, limits: {min: 0, max},
 *               max_context_tokens, ttft_ms, tokens_per_second,
 *               groups: {plain: GROUP} | {prefill: GROUP, decode: GROUP}}]
 *             GROUP = {worker_ids: [url, ...], policy: {type,
 *               power_of_n_choices, admission: {...}}}
 *             (reference/policy-defaults.md §6; omitted group policy keys
 *             come from the top-level policy)
 * Flags of the policy section (config_flags.c): --policy, --prefill-policy,
 * --decode-policy, --power-of-n-choices, --filter, --max-in-flight,
 * --chat-routing, --affinity-mode, --sticky-fallback,
 * --affinity-idle-timeout-secs, --session-affinity-mode and the five admission flags
 * --max-running-requests ... --max-inflight-requests.
 */
#ifndef SY_COMMON_CONFIG_H
#define SY_COMMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "common/config-t.h"

#define SY_CONFIG_MAX_BYTES (1u << 20) /* largest configuration file / string */
#define SY_CONFIG_MAX_WORKERS 1024     /* static fleet entries (workers + worker_urls) */
#define SY_CONFIG_MAX_BUCKETS 64       /* buckets[] entries */
#define SY_CONFIG_MAX_MODELS 64        /* buckets[].models entries */

/* Sets every key to its default. `cfg` is overwritten without being freed
 * (pass an uninitialised or freed struct). Returns 0 or SY_ENOMEM (then cfg
 * is freeable). */
int sy_config_init_defaults(struct sy_config *cfg);

/* Reads the YAML file at `path` (≤ SY_CONFIG_MAX_BYTES) over the values in
 * `cfg` (normally the defaults): keys in the file replace them; a list in
 * the file replaces the list. An empty file changes nothing. Records `path`
 * in cfg->source for later messages. Returns 0; SY_EIO (cannot read);
 * SY_EMALFORMED (YAML syntax); SY_ECONFIG (unknown or duplicate key, wrong
 * type, out of range, missing required key, too large, anchors, aliases,
 * tags, several documents, root not a mapping); SY_ENOMEM. Messages are
 * "PATH:LINE:COL: key.path: reason". */
int sy_config_load_file(struct sy_config *cfg, const char *path, struct sy_config_error *err);

/* As sy_config_load_file() on `len` bytes of YAML at `text` (borrowed, need
 * not be NUL-terminated), named `name` in messages ("<string>" when NULL). */
int sy_config_load_string(struct sy_config *cfg, const char *name, const char *text,
			  size_t len, struct sy_config_error *err);

/* Maps a flag to its YAML key by DESIGN.md §5: the settled exceptions first
 * (--shm → state.shm_path, --log-level → log.level, --tokenizer →
 * router.tokenizer.kind, --worker-urls → worker_urls, ...), else the name
 * without "--", '-' → '_', under `section` ("router", "statebus", "log",
 * "state"; NULL or "" for top-level keys). Writes the dotted key to `key`
 * (capacity `cap`). Returns 0 when the key exists in the schema; SY_ENOENT
 * when it does not (the candidate key is still written); SY_EUNSUPPORTED for
 * a legacy option (§11 of reference/policy-defaults.md; `key` gets the
 * message naming its replacement); SY_EINVAL for a malformed flag or an
 * unknown section; SY_ENOSPC when `cap` is too small. */
int sy_config_flag_to_key(const char *section, const char *flag, char *key, size_t cap);

/* Applies one command-line flag over `cfg`: `flag` is "--name" (or
 * "--name=value" with value NULL), `value` its argument (NULL for a bare
 * boolean flag, which means true). The value goes through the same typed
 * parser as the YAML value. --worker-urls may repeat and each value may list
 * several URLs separated by commas or spaces; the first use drops the file's
 * fleet (see sy_config_finish). Errors name the flag: "--port: must be an
 * integer in 1..65535". Returns 0, SY_ECONFIG (unknown flag, bad value,
 * missing value, a section flag), SY_EUNSUPPORTED (legacy option) or
 * SY_ENOMEM. */
int sy_config_apply_flag(struct sy_config *cfg, const char *section, const char *flag,
			 const char *value, struct sy_config_error *err);

/* Whether `flag` (in `section`, as sy_config_flag_to_key) sets a list key
 * (--worker-urls, --cors-allowed-origins, ...): such a flag takes several
 * values. */
bool sy_config_flag_is_list(const char *section, const char *flag);

/* Adds a PD worker given on the command line (SGLang --prefill URL
 * [BOOTSTRAP_PORT], --decode URL): the URL joins the flags' fleet (as
 * --worker-urls) with `role` (SY_ROLE_PREFILL or SY_ROLE_DECODE) and, for
 * a prefill worker, `bootstrap_port` ("none", "null" or absent: from the
 * engine's /server_info). Errors name `flag`: a bad URL, a port out of
 * 1..65535, the same URL twice. Returns 0, SY_ECONFIG or SY_ENOMEM. */
int sy_config_add_pd_worker(struct sy_config *cfg, const char *flag, int role, const char *url,
			    const char *bootstrap_port, struct sy_config_error *err);

/* Completes `cfg` after the file and the flags: builds the fleet (workers):
 * without --worker-urls, the file's workers followed by its worker_urls as
 * plain workers; with --worker-urls, exactly those URLs, each taking the
 * file's `workers` entry of the same ID when one exists. worker_urls is then
 * empty. Fills each worker's model from model_id, statebus.control_endpoint
 * from "ipc://<state.shm_path>.ctl" when absent, and checks: no two workers
 * with one ID (the message gives both lines), tokenizer.kind hf needs
 * tokenizer.path, query_endpoint differs from control_endpoint; the policy
 * section (legacy --filter overloaded --max-in-flight N → admission
 * max_inflight_requests = N; either without the other is an error;
 * top-level-only keys refused inside groups) and buckets (unique IDs,
 * limits.min ≤ limits.max, max_context_tokens ≥ limits.min, each bucket
 * exactly plain or prefill + decode, no duplicate worker IDs in a group, a
 * configured worker only in groups of its role); last, settings that nothing
 * the configuration builds would read are refused (sy_config_check_consumed).
 * Calling it
 * again (e.g. after a later flag) keeps the fleet built by the first call.
 * Returns 0, SY_ECONFIG or SY_ENOMEM. */
int sy_config_finish(struct sy_config *cfg, struct sy_config_error *err);

/* Who reads a key (common/config_check.c): */
enum sy_config_use {
	SY_CONFIG_USE_ALWAYS = 0, /* read whatever else is configured */
	SY_CONFIG_USE_NOOP = 1,   /* accepted for compatibility, without effect */
	SY_CONFIG_USE_WHEN = 2,   /* read in some combinations; refused outside them */
};

/* One row of the consumer table: the leaf key `key` of the schema section
 * named `section` (struct sy_cfg_section.name: "policy", "router", ...),
 * how it is used and `reader` — the module that reads it (ALWAYS), why it
 * has no effect (NOOP) or the combination that reads it (WHEN). Static. */
struct sy_config_consumer {
	const char *section;
	const char *key;
	enum sy_config_use use;
	const char *reader;
};

/* Row i of the consumer table, or NULL past its end. */
const struct sy_config_consumer *sy_config_consumer(size_t i);

/* Refuses a setting that nothing the configuration builds would read (the
 * WHEN rows of the consumer table): a key with a value other than its
 * default outside the combinations that read it fails with the key, the
 * reason and what to use instead, e.g. "policy.worker_queue_limit: only
 * read by cache_aware groups ...". Called by sy_config_finish(). Returns 0
 * or SY_ECONFIG. */
int sy_config_check_consumed(const struct sy_config *cfg, struct sy_config_error *err);

/* The stages of the default buckets built without `buckets` (the rule of
 * router/core/generation.c): both (the buckets follow the roles the workers
 * table holds, configured or reported by the engines), or prefill + decode
 * only with router.pd_disaggregation. */
void sy_config_default_stages(const struct sy_config *cfg, bool *plain, bool *pd);

/* Whether the statebus builds its radix index under `cfg`
 * (statebus.index): on / off as set; auto → on when the configuration names
 * no policy (sy_config_policies_named false: a statebus started without
 * the routers' policies cannot know they need none), else
 * sy_config_index_needed. */
bool sy_config_index_on(const struct sy_config *cfg);

/* Whether `cfg` names the routers' policies: buckets, or policy.type,
 * prefill_policy or decode_policy set (file or flags). */
bool sy_config_policies_named(const struct sy_config *cfg);

/* Whether something `cfg` builds reads the statebus's index: a group the
 * router builds runs cache_aware with the local prefix source
 * (cache_prefix_provider local, the default), or statebus.query_endpoint
 * answers remote prefix queries. When `buf` is not NULL it receives (cap
 * bytes) the first reader found ("buckets[0].groups.plain (cache_aware,
 * local prefix source)", "statebus.query_endpoint"), or "". */
bool sy_config_index_needed(const struct sy_config *cfg, char *buf, size_t cap);

/* Per-model buckets: whether bucket `b` of `cfg` serves `model` (`len`
 * bytes): the buckets that name the model in `models` serve it; a model no
 * bucket names is served by the buckets without `models`. */
bool sy_config_bucket_serves(const struct sy_config *cfg, const struct sy_config_bucket *b,
			     const char *model, size_t len);

/* The kind of engines a model is served by: plain, or prefill + decode. */
enum sy_model_kind {
	SY_MODEL_ANY = 0,   /* not configured: the first registered workers decide */
	SY_MODEL_PLAIN = 1,
	SY_MODEL_PD = 2,
};

/* Whether the statebus subscribes to the KV events of a worker with
 * configured facts `kv` (zeroed for a worker added at run time):
 * kv->subscribe when on or off, else statebus.kv_events. */
static inline bool sy_config_kv_events_on(const struct sy_config *cfg,
					  const struct sy_config_kv_events *kv)
{
	if (kv->subscribe == SY_KV_SUBSCRIBE_ON || kv->subscribe == SY_KV_SUBSCRIBE_OFF)
		return kv->subscribe == SY_KV_SUBSCRIBE_ON;
	return cfg->statebus.kv_events != SY_KV_EVENTS_OFF;
}

/* The configured kind of `model` after sy_config_finish: PD when a static
 * worker of the model has role prefill or decode, or when the buckets
 * serving it are PD; PLAIN when the buckets serving it are plain; else ANY
 * (a worker's plain role may still be a default that discovery changes). */
enum sy_model_kind sy_config_model_kind(const struct sy_config *cfg, const char *model);

/* Refuses a configuration that serves one model both plain and prefill +
 * decode (static workers of both kinds, or buckets of both kinds serving it,
 * or a prefill/decode worker of a model served by plain buckets), a static
 * worker whose model no bucket serves, and an explicit group member of a
 * model its bucket does not serve. Called by sy_config_finish(). Returns 0
 * or SY_ECONFIG. */
int sy_config_check_models(const struct sy_config *cfg, struct sy_config_error *err);

/* Releases everything `cfg` owns and zeroes it. Safe on a zeroed struct and
 * after any failure above. */
void sy_config_free(struct sy_config *cfg);

/* The schema root (config_schema.h), for tools that list or document keys. */
struct sy_cfg_section;
const struct sy_cfg_section *sy_config_schema(void);

/* Names of enum values: "plain"/"prefill"/"decode", "bytes"/"hf"/"off",
 * "auto"/"sglang"/"vllm". */
const char *sy_worker_role_name(int role);
const char *sy_engine_kind_name(int kind);
const char *sy_tokenizer_kind_name(int kind);

/* Longest tenant name (bytes) in router.tenant_priorities / tenant_weights. */
#define SY_TENANT_MAX 64

/* The queue class named by s[0..len) (case-insensitive, blanks around
 * ignored): enum sy_queue_class, or -1. */
int sy_queue_class_parse(const char *s, size_t len);

/* Splits a "tenant=value" entry s[0..len): *name_len bytes of name at s,
 * the value at *value (*value_len bytes). Returns 0, or SY_EINVAL (no '=',
 * an empty part, a name over SY_TENANT_MAX, a blank or control byte). */
int sy_tenant_entry_split(const char *s, size_t len, size_t *name_len, const char **value,
			  size_t *value_len);

/* The policy type names selection runs (reference/policy-defaults.md §1),
 * SY_POLICY_COUNT of them, in the order of the router's enum policy_kind
 * (router/policies/policy.h). "power_of_two" is accepted besides them as
 * power_of_n with N = 2. Static. */
#define SY_POLICY_COUNT 7
extern const char *const sy_policy_names[SY_POLICY_COUNT];

#endif
