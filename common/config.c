/* config.c — switchyard's configuration schema and its life cycle.
 *
 * The schema is data: one sy_cfg_section per struct of config-t.h, one row
 * per key, built with the SY_CFG_*_F macros of config_schema.h (key = member
 * name, so the C names and the YAML keys cannot drift apart). A section
 * (buckets, policy, ...) is a struct in config-t.h, a field array here and
 * one row in root_fields — the loader, the flags, defaults
 * and freeing follow from the tables. Loading is config_yaml.c, flags are
 * config_flags.c; this file holds the tables, file reading and
 * sy_config_finish() (derived defaults and cross-field checks).
 */
#include "common/config.h"
#include "common/config_schema.h"
#include "common/errors.h"
#include "common/url.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* ---- value hooks -------------------------------------------------------- */

static int hook_worker_url(const char *in, size_t len, char **out, const char **why)
{
	char *buf = malloc(len + 1);
	if (buf == NULL)
		return SY_ENOMEM;
	int rc = sy_url_normalize(in, len, buf, len + 1, why);
	if (rc < 0) {
		free(buf);
		return rc == SY_ENOSPC ? SY_ENOMEM : rc; /* cannot happen: cap = len + 1 */
	}
	*out = buf;
	return SY_OK;
}

/* ZeroMQ endpoints: transport ipc, tcp or inproc, and something after it. */
static int hook_zmq_endpoint(const char *in, size_t len, char **out, const char **why)
{
	static const char *const schemes[] = {"ipc://", "tcp://", "inproc://"};
	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
		size_t n = strlen(schemes[i]);
		if (len > n && memcmp(in, schemes[i], n) == 0) {
			if ((*out = strndup(in, len)) == NULL)
				return SY_ENOMEM;
			return SY_OK;
		}
	}
	*why = "must be a ZeroMQ endpoint (ipc://PATH, tcp://HOST:PORT or inproc://NAME)";
	return SY_EINVAL;
}

/* state.shm_path: an absolute path the state plane can hold (statebus
 * regions keep their path in 256 bytes incl. NUL; see statebus-t.h). */
static int hook_shm_path(const char *in, size_t len, char **out, const char **why)
{
	if (in[0] != '/') {
		*why = "must be an absolute path";
		return SY_EINVAL;
	}
	if (len > SY_CONFIG_SHM_PATH_MAX) {
		*why = "must be at most 255 bytes long";
		return SY_EINVAL;
	}
	if ((*out = strndup(in, len)) == NULL)
		return SY_ENOMEM;
	return SY_OK;
}

/* state.group: a group name as useradd/groupadd accept it (letters, digits,
 * '_', '-', '.', a trailing '$'; not starting with '-'; ≤ 32 bytes). Whether
 * the group exists is checked where the region is created. */
static int hook_group_name(const char *in, size_t len, char **out, const char **why)
{
	bool ok = len > 0 && len <= 32 && in[0] != '-';
	for (size_t i = 0; ok && i < len; i++) {
		char c = in[i];
		ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		     c == '_' || c == '-' || c == '.' || (c == '$' && i == len - 1);
	}
	if (!ok) {
		*why = "must be a group name (letters, digits, '_', '-', '.'; at most 32 bytes)";
		return SY_EINVAL;
	}
	if ((*out = strndup(in, len)) == NULL)
		return SY_ENOMEM;
	return SY_OK;
}

const char *const sy_policy_names[SY_POLICY_COUNT] = {
	"round_robin", "random", "power_of_n", "cache_aware", "session_aware", "sticky", "load_based",
};

/* Policy type names (reference/policy-defaults.md §1, §11): sy_policy_names
 * and power_of_two pass; whether a group can run one is decided when the
 * router builds its generation. Removed or dropped names are refused here
 * with their replacement. */
static int hook_policy_type(const char *in, size_t len, char **out, const char **why)
{
	static const struct {
		const char *name, *why;
	} refused[] = {
		{"cache_aware_zmq", "removed (SGLang PR #38108); use cache_aware"},
		{"legacy_host_affinity", "dropped in reorg; use power_of_n"},
		{"fused_score", "not supported; use power_of_n or cache_aware"},
		{"score_policy", "not supported; use power_of_n or cache_aware"},
		{"manual", "legacy SMG policy; use sticky (header x-sgl-routing-key, idle 600 s)"},
		{"consistent_hashing", "legacy SMG policy; use sticky or session_aware"},
		{"prefix_hash", "legacy SMG policy; use cache_aware"},
		{"bucket", "legacy SMG policy; use `buckets` in the configuration file"},
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		if (strlen(refused[i].name) == len && memcmp(in, refused[i].name, len) == 0) {
			*why = refused[i].why;
			return SY_EINVAL;
		}
	}
	for (size_t i = 0; i <= SY_POLICY_COUNT; i++) {
		const char *name = i < SY_POLICY_COUNT ? sy_policy_names[i] : "power_of_two";
		if (strlen(name) == len && memcmp(in, name, len) == 0) {
			if ((*out = strndup(in, len)) == NULL)
				return SY_ENOMEM;
			return SY_OK;
		}
	}
	*why = "must be one of round_robin, random, power_of_n, power_of_two, cache_aware, "
	       "session_aware, sticky, load_based";
	return SY_EINVAL;
}

/* policy.cache_prefix_provider: where cache_aware asks for prefix depths
 * (SGLang --cache-prefix-provider): "local" (this host's statebus index) or
 * "indexer" (another statebus's query endpoint, kv_indexer_endpoint). */
static int hook_prefix_provider(const char *in, size_t len, char **out, const char **why)
{
	if ((len == 5 && memcmp(in, "local", 5) == 0) || (len == 7 && memcmp(in, "indexer", 7) == 0)) {
		if ((*out = strndup(in, len)) == NULL)
			return SY_ENOMEM;
		return SY_OK;
	}
	*why = "must be local or indexer";
	return SY_EINVAL;
}

/* One accepted value, or a refused one with its replacement. */
static int hook_choice(const char *in, size_t len, char **out, const char **why,
		       const char *accepted, const char *refused, const char *refused_why,
		       const char *otherwise)
{
	if (strlen(accepted) == len && memcmp(in, accepted, len) == 0) {
		if ((*out = strndup(in, len)) == NULL)
			return SY_ENOMEM;
		return SY_OK;
	}
	*why = refused != NULL && strlen(refused) == len && memcmp(in, refused, len) == 0
		       ? refused_why
		       : otherwise;
	return SY_EINVAL;
}

static int hook_filter(const char *in, size_t len, char **out, const char **why)
{
	return hook_choice(in, len, out, why, "overloaded", "prefix_cache",
			   "dropped in reorg; use the cache-aware candidate thresholds "
			   "(cache_affinity_min_matched_tokens, cache_affinity_min_match_ratio)",
			   "must be overloaded");
}

static int hook_chat_routing(const char *in, size_t len, char **out, const char **why)
{
	return hook_choice(in, len, out, why, "reorg", NULL, NULL,
			   "must be reorg (the bucket-first design is always on)");
}

static int hook_affinity_mode(const char *in, size_t len, char **out, const char **why)
{
	return hook_choice(in, len, out, why, "strict", "soft", "rejected in reorg; use strict",
			   "must be strict");
}

/* router.upstream_client: lean is the one upstream client; h2o's own client
 * is refused with the reason. */
static int hook_upstream_client(const char *in, size_t len, char **out, const char **why)
{
	return hook_choice(in, len, out, why, "lean", "h2o",
			   "h2o is no longer offered: h2o 2.2's client passes a peer close after "
			   "a whole chunk on as a complete response; use lean (the default)",
			   "must be lean");
}

/* Fallback of sticky (reference/policy-defaults.md §4.4). */
static int hook_sticky_fallback(const char *in, size_t len, char **out, const char **why)
{
	static const char *const ok[] = {"round_robin", "random", "power_of_two", "power_of_n",
					 "load_based"};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		if (strlen(ok[i]) == len && memcmp(in, ok[i], len) == 0) {
			if ((*out = strndup(in, len)) == NULL)
				return SY_ENOMEM;
			return SY_OK;
		}
	}
	*why = "must be round_robin, random, power_of_two, power_of_n or load_based";
	return SY_EINVAL;
}

/* Session bindings are scoped by bucket (the binding key names model,
 * bucket and stage): the global modes of SGLang are not offered. */
static int hook_session_affinity_mode(const char *in, size_t len, char **out, const char **why)
{
	if ((len == 13 && memcmp(in, "global-rebind", 13) == 0) ||
	    (len == 15 && memcmp(in, "global-preserve", 15) == 0)) {
		*why = "not supported: session bindings are scoped by bucket and stage; use bucket";
		return SY_EINVAL;
	}
	return hook_choice(in, len, out, why, "bucket", NULL, NULL, "must be bucket");
}

/* Header names: token characters, stored lower-case (h2o looks headers up
 * lower-case). */
static int hook_header_name(const char *in, size_t len, char **out, const char **why)
{
	char *d = malloc(len + 1);
	if (d == NULL)
		return SY_ENOMEM;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_')) {
			free(d);
			*why = "must be an HTTP header name (letters, digits, '-', '_')";
			return SY_EINVAL;
		}
		d[i] = (char)((c >= 'A' && c <= 'Z') ? c + 32 : c);
	}
	d[len] = '\0';
	*out = d;
	return SY_OK;
}

/* A bearer key: 1..4096 visible ASCII characters (RFC 6750 token68 and
 * more, no spaces). Never echoed in a message. */
static const char *api_key_why(const char *in, size_t len)
{
	if (len == 0 || len > 4096)
		return "must be 1 to 4096 characters";
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)in[i] < 0x21 || (unsigned char)in[i] > 0x7e)
			return "must be visible ASCII characters without spaces";
	return NULL;
}

static int hook_api_key(const char *in, size_t len, char **out, const char **why)
{
	if ((*why = api_key_why(in, len)) != NULL)
		return SY_EINVAL;
	if ((*out = strndup(in, len)) == NULL)
		return SY_ENOMEM;
	return SY_OK;
}

/* Reads the key of `file_key` from `path` into *key (one line: a final
 * newline is not part of the key). */
static int read_key_file(const char *path, const char *file_key, const char *key_name,
			 char **key, struct sy_config_error *err)
{
	static const struct sy_config_mark none = {0, 0};
	char buf[4098];
	if (*key != NULL) {
		sy_cfg_error(err, SY_ECONFIG, NULL, none, file_key,
			     "set together with %s; give the key once", key_name);
		return SY_ECONFIG;
	}
	FILE *f = fopen(path, "re");
	if (f == NULL) {
		sy_cfg_error(err, SY_ECONFIG, NULL, none, file_key, "cannot read %s: %s", path,
			     strerror(errno));
		return SY_ECONFIG;
	}
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	if (n > 0 && buf[n - 1] == '\r')
		n--;
	const char *why = api_key_why(buf, n);
	if (why != NULL) {
		sy_cfg_error(err, SY_ECONFIG, NULL, none, file_key, "the key in %s %s", path, why);
		return SY_ECONFIG;
	}
	if ((*key = strndup(buf, n)) == NULL)
		return SY_ENOMEM;
	return SY_OK;
}

/* statebus.health_endpoint: an absolute request path without spaces. */
static int hook_http_path(const char *in, size_t len, char **out, const char **why)
{
	bool ok = len > 0 && len < 200 && in[0] == '/';
	for (size_t i = 0; ok && i < len; i++)
		ok = (unsigned char)in[i] > 0x20 && (unsigned char)in[i] < 0x7f;
	if (!ok) {
		*why = "must be an absolute path such as /health (no spaces, < 200 bytes)";
		return SY_EINVAL;
	}
	if ((*out = strndup(in, len)) == NULL)
		return SY_ENOMEM;
	return SY_OK;
}

/* router.cors_allowed_origins: "*" or an origin "scheme://host[:port]". */
static int hook_origin(const char *in, size_t len, char **out, const char **why)
{
	bool ok = (len == 1 && in[0] == '*') ||
		  (len > 7 && len < 256 && (memmem(in, len, "://", 3) != NULL) && in[len - 1] != '/');
	for (size_t i = 0; ok && i < len; i++)
		ok = (unsigned char)in[i] > 0x20 && (unsigned char)in[i] < 0x7f && in[i] != ',';
	if (!ok) {
		*why = "must be an origin such as https://app.example.com (scheme://host[:port], "
		       "no path) or *";
		return SY_EINVAL;
	}
	if ((*out = strndup(in, len)) == NULL)
		return SY_ENOMEM;
	return SY_OK;
}

int sy_queue_class_parse(const char *s, size_t len)
{
	static const char *const names[] = {"system", "interactive", "default", "bulk"};
	while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	while (len > 0 && (*s == ' ' || *s == '\t')) {
		s++;
		len--;
	}
	for (int i = 0; i < 4; i++)
		if (strlen(names[i]) == len && strncasecmp(names[i], s, len) == 0)
			return i;
	return -1;
}

int sy_tenant_entry_split(const char *s, size_t len, size_t *name_len, const char **value,
			  size_t *value_len)
{
	const char *eq = memchr(s, '=', len);
	if (eq == NULL || eq == s || (size_t)(eq - s) > SY_TENANT_MAX || eq + 1 == s + len)
		return SY_EINVAL;
	for (const char *p = s; p < s + len; p++)
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
			return SY_EINVAL;
	*name_len = (size_t)(eq - s);
	*value = eq + 1;
	*value_len = len - *name_len - 1;
	return SY_OK;
}

/* router.tenant_priorities: "tenant=class". */
static int hook_tenant_priority(const char *in, size_t len, char **out, const char **why)
{
	size_t nl, vl;
	const char *v;
	if (sy_tenant_entry_split(in, len, &nl, &v, &vl) != SY_OK ||
	    sy_queue_class_parse(v, vl) < 0) {
		*why = "must be tenant=class (class system, interactive, default or bulk; tenant "
		       "1..64 visible characters)";
		return SY_EINVAL;
	}
	if ((*out = strndup(in, len)) == NULL)
		return SY_ENOMEM;
	return SY_OK;
}

/* router.tenant_weights: "tenant=weight", weight 1..1000. */
static int hook_tenant_weight(const char *in, size_t len, char **out, const char **why)
{
	size_t nl, vl;
	const char *v;
	bool ok = sy_tenant_entry_split(in, len, &nl, &v, &vl) == SY_OK && vl <= 4;
	unsigned w = 0;
	for (size_t i = 0; ok && i < vl; i++) {
		ok = v[i] >= '0' && v[i] <= '9';
		w = w * 10 + (unsigned)(v[i] - '0');
	}
	if (!ok || w < 1 || w > 1000) {
		*why = "must be tenant=weight (weight 1..1000; tenant 1..64 visible characters)";
		return SY_EINVAL;
	}
	if ((*out = strndup(in, len)) == NULL)
		return SY_ENOMEM;
	return SY_OK;
}

/* ---- the schema ---------------------------------------------------------- */

static const char *const role_names[] = {"plain", "prefill", "decode", NULL};
static const char *const engine_names[] = {"auto", "sglang", "vllm", NULL};
static const char *const kv_events_names[] = {"on", "off", NULL};
static const char *const kv_subscribe_names[] = {"fleet", "on", "off", NULL};
static const char *const tokenizer_names[] = {"bytes", "hf", "off", NULL};
/* Same order as enum sy_log_level / sy_log_format (common/log.h). */
static const char *const log_level_names[] = {"debug", "info", "warn", "error", "off", NULL};
static const char *const log_format_names[] = {"text", "json", NULL};
static const char *const sampling_conflict_names[] = {"reject", "allow", NULL};
static const char *const slo_policy_names[] = {"disabled", "best_effort", "slo_first", NULL};
static const char *const metrics_names_names[] = {"switchyard", "sglang", "both", NULL};
static const char *const index_mode_names[] = {"auto", "on", "off", NULL};
static const char *const queue_class_names[] = {"system", "interactive", "default", "bulk", NULL};

#define KV struct sy_config_kv_events
static const struct sy_cfg_field kv_fields[] = {
	SY_CFG_STR_F(KV, endpoint_host, NULL, SY_CFG_NULLABLE, NULL),
	SY_CFG_INT_F(KV, endpoint_port_base, 1, 65535, 0, SY_CFG_NULLABLE),
	SY_CFG_STR_F(KV, topic, NULL, SY_CFG_NULLABLE, NULL),
	SY_CFG_INT_F(KV, block_size, 1, 1 << 20, 0, SY_CFG_NULLABLE),
	SY_CFG_INT_F(KV, dp_size, 1, 1024, 0, SY_CFG_NULLABLE),
	SY_CFG_INT_F(KV, replay_port_base, 1, 65535, 0, SY_CFG_NULLABLE),
	SY_CFG_INT_F(KV, load_endpoint_port_base, 1, 65535, 0, SY_CFG_NULLABLE),
	SY_CFG_ENUM_F(KV, subscribe, kv_subscribe_names, SY_KV_SUBSCRIBE_FLEET),
};
static const struct sy_cfg_section kv_section =
	SY_CFG_SECTION("kv_events", KV, SY_CFG_NO_OFF, kv_fields);
#undef KV

#define W struct sy_config_worker
static const struct sy_cfg_field worker_fields[] = {
	SY_CFG_STR_F(W, url, NULL, SY_CFG_REQUIRED, hook_worker_url),
	SY_CFG_ENUM_F(W, role, role_names, SY_ROLE_PLAIN),
	SY_CFG_STR_F(W, model, NULL, SY_CFG_NULLABLE, NULL),
	SY_CFG_INT_F(W, bootstrap_port, 1, 65535, 0, SY_CFG_NULLABLE),
	SY_CFG_ENUM_F(W, engine, engine_names, SY_ENGINE_AUTO),
	SY_CFG_MAP_F(W, kv_events, kv_section),
};
static const struct sy_cfg_section worker_section =
	SY_CFG_SECTION("worker", W, offsetof(W, mark), worker_fields);
#undef W

#define L struct sy_config_log
static const struct sy_cfg_field log_fields[] = {
	SY_CFG_ENUM_F(L, level, log_level_names, 1 /* info */),
	SY_CFG_ENUM_F(L, format, log_format_names, 0 /* text */),
};
static const struct sy_cfg_section log_section =
	SY_CFG_SECTION("log", L, SY_CFG_NO_OFF, log_fields);
#undef L

#define S struct sy_config_state
static const struct sy_cfg_field state_fields[] = {
	SY_CFG_STR_F(S, shm_path, "/dev/shm/switchyard", 0, hook_shm_path),
	SY_CFG_STR_F(S, group, NULL, SY_CFG_NULLABLE, hook_group_name),
};
static const struct sy_cfg_section state_section =
	SY_CFG_SECTION("state", S, SY_CFG_NO_OFF, state_fields);
#undef S

#define T struct sy_config_tokenizer
static const struct sy_cfg_field tokenizer_fields[] = {
	SY_CFG_ENUM_F(T, kind, tokenizer_names, SY_TOKENIZER_UNSET),
	SY_CFG_STR_F(T, path, NULL, SY_CFG_NULLABLE, NULL),
	SY_CFG_STR_F(T, model_path, NULL, SY_CFG_NULLABLE, NULL),
	SY_CFG_STR_F(T, chat_template, NULL, SY_CFG_NULLABLE, NULL),
};
static const struct sy_cfg_section tokenizer_section =
	SY_CFG_SECTION("tokenizer", T, offsetof(T, mark), tokenizer_fields);
#undef T

#define R struct sy_config_router
static const struct sy_cfg_field router_fields[] = {
	SY_CFG_STR_F(R, host, "127.0.0.1", 0, NULL),
	SY_CFG_INT_F(R, port, 1, 65535, 30000, 0),
	SY_CFG_INT_F(R, processes, 1, 256, 1, 0),
	SY_CFG_INT_F(R, request_timeout_secs, 1, 86400, 1800, 0),
	SY_CFG_INT_F(R, header_timeout_secs, 1, 86400, 300, 0),
	SY_CFG_INT_F(R, shutdown_drain_secs, 0, 3600, 30, 0),
	SY_CFG_U64_F(R, max_body_bytes, 1, 1ull << 32, 32ull << 20),
	SY_CFG_U64_F(R, max_pending_body_bytes, 1, 1ull << 40, 256ull << 20),
	SY_CFG_MAP_F(R, tokenizer, tokenizer_section),
	SY_CFG_BOOL_F(R, chat_template_fallback, false),
	SY_CFG_BOOL_F(R, disable_input_ids_forwarding, false),
	SY_CFG_STR_F(R, access_log, NULL, SY_CFG_NULLABLE, NULL),
	SY_CFG_STR_F(R, api_key, NULL, SY_CFG_NULLABLE, hook_api_key),
	SY_CFG_STR_F(R, api_key_file, NULL, SY_CFG_NULLABLE, NULL),
	SY_CFG_STR_F(R, admin_api_key, NULL, SY_CFG_NULLABLE, hook_api_key),
	SY_CFG_STR_F(R, admin_api_key_file, NULL, SY_CFG_NULLABLE, NULL),
	SY_CFG_STR_F(R, admin_host, NULL, SY_CFG_NULLABLE, NULL),
	SY_CFG_INT_F(R, admin_port, 0, 65535, 0, 0),
	SY_CFG_STR_F(R, tls_cert_path, NULL, SY_CFG_NULLABLE, NULL),
	SY_CFG_STR_F(R, tls_key_path, NULL, SY_CFG_NULLABLE, NULL),
	SY_CFG_INT_F(R, stream_idle_timeout_secs, 1, 86400, 180, 0),
	SY_CFG_BOOL_F(R, no_decision_headers, false),
	SY_CFG_INT_F(R, cb_threshold, 0, 1000000, 0, 0),
	SY_CFG_INT_F(R, cb_cool_down_secs, 1, 86400, 30, 0),
	SY_CFG_BOOL_F(R, retry_once, false),
	SY_CFG_INT_F(R, retry_max_retries, 0, WORKER_RETRIES_MAX, -1, 0),
	SY_CFG_INT_F(R, retry_initial_backoff_ms, 0, 60000, 50, 0),
	SY_CFG_INT_F(R, retry_max_backoff_ms, 0, 3600000, 30000, 0),
	SY_CFG_DOUBLE_F(R, retry_backoff_multiplier, 1.0, 100.0, 1.5),
	SY_CFG_DOUBLE_F(R, retry_jitter_factor, 0.0, 1.0, 0.2),
	SY_CFG_BOOL_F(R, disable_retries, false),
	SY_CFG_INT_F(R, upstream_pool_idle_timeout_secs, 0, 3600, 3, 0),
	SY_CFG_INT_F(R, health_unknown_grace_secs, 0, 3600, 0, 0),
	SY_CFG_INT_F(R, stall_timeout_secs, 0, 86400, 5, 0),
	SY_CFG_STR_F(R, override_sampling_params, NULL, SY_CFG_NULLABLE, NULL),
	SY_CFG_ENUM_F(R, sampling_param_conflict, sampling_conflict_names, SY_SAMPLING_REJECT),
	SY_CFG_INT_F(R, max_connections_per_worker, 1, 65536, 256, 0),
	SY_CFG_STR_F(R, session_id_header, "x-session-id", 0, hook_header_name),
	SY_CFG_STR_F(R, routing_key_header, "x-sgl-routing-key", 0, hook_header_name),
	SY_CFG_ENUM_F(R, ttft_slo_policy, slo_policy_names, SY_SLO_DISABLED),
	SY_CFG_ENUM_F(R, tps_slo_policy, slo_policy_names, SY_SLO_DISABLED),
	SY_CFG_STR_F(R, upstream_client, "lean", 0, hook_upstream_client),
	SY_CFG_BOOL_F(R, pd_disaggregation, false),
	SY_CFG_STR_F(R, prometheus_host, NULL, SY_CFG_NULLABLE, NULL),
	SY_CFG_INT_F(R, prometheus_port, 0, 65535, -1, 0),
	SY_CFG_ENUM_F(R, metrics_names, metrics_names_names, SY_METRICS_SWITCHYARD),
	SY_CFG_STRLIST_F(R, cors_allowed_origins, n_cors_allowed_origins, SY_CFG_NO_OFF, 64,
			 hook_origin),
	SY_CFG_STRLIST_F(R, request_id_headers, n_request_id_headers, SY_CFG_NO_OFF, 16,
			 hook_header_name),
	SY_CFG_INT_F(R, queue_size, 0, 1000000, 100, 0),
	SY_CFG_INT_F(R, queue_timeout_secs, 1, 86400, 60, 0),
	SY_CFG_STR_F(R, queue_timeout_header, "x-switchyard-queue-timeout-ms", 0, hook_header_name),
	SY_CFG_INT_F(R, max_concurrent_requests, -1, 1000000, -1, 0),
	SY_CFG_STR_F(R, priority_header, "x-smg-priority", 0, hook_header_name),
	SY_CFG_STR_F(R, tenant_header, NULL, SY_CFG_NULLABLE, hook_header_name),
	SY_CFG_ENUM_F(R, tenant_max_priority, queue_class_names, SY_QCLASS_DEFAULT),
	SY_CFG_STRLIST_F(R, tenant_priorities, n_tenant_priorities, SY_CFG_NO_OFF, 256,
			 hook_tenant_priority),
	SY_CFG_STRLIST_F(R, tenant_weights, n_tenant_weights, SY_CFG_NO_OFF, 256,
			 hook_tenant_weight),
};
static const struct sy_cfg_section router_section =
	SY_CFG_SECTION("router", R, SY_CFG_NO_OFF, router_fields);
#undef R

#define B struct sy_config_statebus
static const struct sy_cfg_field statebus_fields[] = {
	SY_CFG_STR_F(B, control_endpoint, NULL, SY_CFG_NULLABLE, hook_zmq_endpoint),
	SY_CFG_STR_F(B, query_endpoint, NULL, SY_CFG_NULLABLE, hook_zmq_endpoint),
	SY_CFG_INT_F(B, health_interval_ms, 10, 3600000, 1000, 0),
	SY_CFG_INT_F(B, health_timeout_ms, 10, 600000, 5000, 0),
	SY_CFG_INT_F(B, health_failure_threshold, 1, 1000, 3, 0),
	SY_CFG_INT_F(B, health_success_threshold, 1, 1000, 2, 0),
	SY_CFG_STR_F(B, health_endpoint, "/health", 0, hook_http_path),
	SY_CFG_BOOL_F(B, disable_health_check, false),
	SY_CFG_INT_F(B, discovery_timeout_ms, 10, 600000, 2000, 0),
	SY_CFG_INT_F(B, discovery_attempts, 1, 100, 3, 0),
	SY_CFG_INT_F(B, discovery_backoff_ms, 1, 60000, 100, 0),
	SY_CFG_INT_F(B, discovery_retry_ms, 10, 3600000, 5000, 0),
	SY_CFG_INT_F(B, replay_timeout_ms, 10, 600000, 2000, 0),
	SY_CFG_INT_F(B, heartbeat_interval_ms, 10, 60000, 1000, 0),
	SY_CFG_INT_F(B, affinity_sweep_interval_secs, 1, 86400, 60, 0),
	SY_CFG_INT_F(B, metrics_interval_ms, 0, 3600000, 500, 0),
	SY_CFG_INT_F(B, vllm_map_blocks, 16, 1 << 26, 131072, 0),
	SY_CFG_ENUM_F(B, kv_events, kv_events_names, SY_KV_EVENTS_ON),
	SY_CFG_INT_F(B, prediction_ttl_ms, 10, 86400000, 30000, 0),
	SY_CFG_INT_F(B, prediction_drain_ms, 1, 1000, 2, 0),
	SY_CFG_INT_F(B, prediction_capacity_tokens, 0, INT64_MAX, 0, 0),
	SY_CFG_ENUM_F(B, index, index_mode_names, SY_INDEX_AUTO),
};
static const struct sy_cfg_section statebus_section =
	SY_CFG_SECTION("statebus", B, SY_CFG_NO_OFF, statebus_fields);
#undef B


/* Caps: -1 = absent (defaults are not range-checked; a value must be ≥ 0). */
#define A struct sy_config_admission
static const struct sy_cfg_field admission_fields[] = {
	SY_CFG_INT_F(A, max_running_requests, 0, INT64_MAX, -1, 0),
	SY_CFG_INT_F(A, max_waiting_requests, 0, INT64_MAX, -1, 0),
	SY_CFG_INT_F(A, max_kv_tokens, 0, INT64_MAX, -1, 0),
	SY_CFG_INT_F(A, max_pending_prefill_tokens, 0, INT64_MAX, -1, 0),
	SY_CFG_INT_F(A, max_inflight_requests, 0, INT64_MAX, -1, 0),
};
static const struct sy_cfg_section admission_section =
	SY_CFG_SECTION("admission", A, SY_CFG_NO_OFF, admission_fields);
#undef A

#define P struct sy_config_policy
static const struct sy_cfg_field policy_fields[] = {
	SY_CFG_STR_F(P, type, NULL, SY_CFG_NULLABLE, hook_policy_type),
	SY_CFG_INT_F(P, power_of_n_choices, 1, 1024, 0, 0),
	SY_CFG_MAP_F(P, admission, admission_section),
	SY_CFG_STR_F(P, prefill_policy, NULL, SY_CFG_NULLABLE, hook_policy_type),
	SY_CFG_STR_F(P, decode_policy, NULL, SY_CFG_NULLABLE, hook_policy_type),
	SY_CFG_STR_F(P, filter, NULL, SY_CFG_NULLABLE, hook_filter),
	SY_CFG_INT_F(P, max_in_flight, 1, INT32_MAX, 0, 0),
	SY_CFG_STR_F(P, chat_routing, NULL, SY_CFG_NULLABLE, hook_chat_routing),
	SY_CFG_STR_F(P, affinity_mode, NULL, SY_CFG_NULLABLE, hook_affinity_mode),
	SY_CFG_STR_F(P, sticky_fallback, NULL, SY_CFG_NULLABLE, hook_sticky_fallback),
	SY_CFG_INT_F(P, affinity_idle_timeout_secs, 1, 30 * 86400, 0, 0),
	SY_CFG_STR_F(P, session_affinity_mode, NULL, SY_CFG_NULLABLE, hook_session_affinity_mode),
	SY_CFG_INT_F(P, cache_affinity_min_matched_tokens, 0, INT64_MAX, -1, 0),
	SY_CFG_DOUBLE_F(P, cache_affinity_min_match_ratio, 0.0, 1.0, -1.0),
	SY_CFG_INT_F(P, cache_candidate_min_workers, 1, 65536, -1, 0),
	SY_CFG_DOUBLE_F(P, cache_candidate_ratio, 0.0, 1.0, -1.0),
	SY_CFG_INT_F(P, cache_candidate_max_workers, 1, 65536, -1, 0),
	SY_CFG_INT_F(P, cache_switch_margin_tokens, 0, INT64_MAX, -1, 0),
	SY_CFG_INT_F(P, worker_queue_limit, 1, INT64_MAX, -1, 0),
	SY_CFG_INT_F(P, saturation_queue_floor, 1, INT64_MAX, -1, 0),
	SY_CFG_INT_F(P, min_load_choices, 1, 65536, -1, 0),
	SY_CFG_BOOL_F(P, disable_pressure_guard, false),
	SY_CFG_INT_F(P, pressure_abs_threshold_tokens, 0, INT64_MAX, -1, 0),
	SY_CFG_DOUBLE_F(P, pressure_abs_threshold_ms, 0.0, 1e12, -1.0),
	SY_CFG_DOUBLE_F(P, pressure_rel_threshold, 0.0, 1e12, -1.0),
	SY_CFG_DOUBLE_F(P, cache_predicted_weight, 0.0, 1.0, -1.0),
	SY_CFG_INT_F(P, cache_predicted_window_ms, 0, 86400000, -1, 0),
	SY_CFG_INT_F(P, cache_predicted_half_life_ms, 0, 86400000, -1, 0),
	SY_CFG_STR_F(P, cache_prefix_provider, NULL, SY_CFG_NULLABLE, hook_prefix_provider),
	SY_CFG_STR_F(P, kv_indexer_endpoint, NULL, SY_CFG_NULLABLE, hook_zmq_endpoint),
	SY_CFG_INT_F(P, kv_indexer_timeout_ms, 1, 60000, -1, 0),
	SY_CFG_INT_F(P, kv_indexer_max_inflight, 1, 4096, -1, 0),
};
static const struct sy_cfg_section policy_section =
	SY_CFG_SECTION("policy", P, offsetof(P, mark), policy_fields);
#undef P

#define LI struct sy_config_limits
static const struct sy_cfg_field limits_fields[] = {
	SY_CFG_INT_F(LI, min, 0, INT64_MAX, 0, 0),
	SY_CFG_INT_F(LI, max, 0, INT64_MAX, -1, 0),
};
static const struct sy_cfg_section limits_section =
	SY_CFG_SECTION("limits", LI, SY_CFG_NO_OFF, limits_fields);
#undef LI

#define G struct sy_config_group
static const struct sy_cfg_field group_fields[] = {
	SY_CFG_STRLIST_GIVEN_F(G, worker_ids, n_worker_ids, worker_ids_given,
			       SY_CONFIG_MAX_WORKERS, hook_worker_url),
	SY_CFG_MAP_F(G, policy, policy_section),
};
static const struct sy_cfg_section group_section =
	SY_CFG_SECTION("group", G, offsetof(G, mark), group_fields);
#undef G

#define GS struct sy_config_groups
static const struct sy_cfg_field groups_fields[] = {
	SY_CFG_MAP_F(GS, plain, group_section),
	SY_CFG_MAP_F(GS, prefill, group_section),
	SY_CFG_MAP_F(GS, decode, group_section),
};
static const struct sy_cfg_section groups_section =
	SY_CFG_SECTION("groups", GS, offsetof(GS, mark), groups_fields);
#undef GS

#define BK struct sy_config_bucket
static const struct sy_cfg_field bucket_fields[] = {
	SY_CFG_STR_F(BK, id, NULL, SY_CFG_REQUIRED, NULL),
	SY_CFG_INT_F(BK, rank, 0, UINT32_MAX, 0, 0),
	SY_CFG_MAP_F(BK, limits, limits_section),
	SY_CFG_INT_F(BK, max_context_tokens, 0, INT64_MAX, -1, 0),
	SY_CFG_DOUBLE_F(BK, ttft_ms, 0, 1e12, 0),
	SY_CFG_DOUBLE_F(BK, tokens_per_second, 0, 1e12, 0),
	SY_CFG_MAP_F(BK, groups, groups_section),
	SY_CFG_STRLIST_F(BK, models, n_models, SY_CFG_NO_OFF, SY_CONFIG_MAX_MODELS, NULL),
};
static const struct sy_cfg_section bucket_section =
	SY_CFG_SECTION("bucket", BK, offsetof(BK, mark), bucket_fields);
#undef BK

#define C struct sy_config
static const struct sy_cfg_field root_fields[] = {
	SY_CFG_STR_F(C, model_id, SY_CONFIG_DEFAULT_MODEL_ID, 0, NULL),
	SY_CFG_MAP_F(C, log, log_section),
	SY_CFG_MAP_F(C, state, state_section),
	SY_CFG_SEQ_F(C, workers, n_workers, worker_section, SY_CONFIG_MAX_WORKERS),
	SY_CFG_STRLIST_F(C, worker_urls, n_worker_urls, offsetof(C, worker_url_marks),
			 SY_CONFIG_MAX_WORKERS, hook_worker_url),
	SY_CFG_MAP_F(C, router, router_section),
	SY_CFG_MAP_F(C, statebus, statebus_section),
	SY_CFG_MAP_F(C, policy, policy_section),
	SY_CFG_SEQ_F(C, buckets, n_buckets, bucket_section, SY_CONFIG_MAX_BUCKETS),
};
static const struct sy_cfg_section root_section =
	SY_CFG_SECTION("config", C, SY_CFG_NO_OFF, root_fields);
#undef C

const struct sy_cfg_section *sy_config_schema(void) { return &root_section; }

const char *sy_worker_role_name(int role)
{
	return role >= 0 && role <= SY_ROLE_DECODE ? role_names[role] : "unknown";
}

const char *sy_engine_kind_name(int kind)
{
	return kind >= 0 && kind <= SY_ENGINE_VLLM ? engine_names[kind] : "unknown";
}

const char *sy_tokenizer_kind_name(int kind)
{
	return kind >= 0 && kind <= SY_TOKENIZER_OFF ? tokenizer_names[kind] : "unknown";
}

/* ---- life cycle ---------------------------------------------------------- */

int sy_config_init_defaults(struct sy_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	return sy_cfg_defaults(&root_section, cfg);
}

void sy_config_free(struct sy_config *cfg)
{
	if (cfg == NULL)
		return;
	sy_cfg_free(&root_section, cfg);
	free(cfg->source);
	for (size_t i = 0; i < cfg->n_pd_flags; i++)
		free(cfg->pd_flags[i].url);
	free(cfg->pd_flags);
	memset(cfg, 0, sizeof(*cfg));
}

static int set_source(struct sy_config *cfg, const char *name)
{
	char *s = strdup(name);
	if (s == NULL)
		return SY_ENOMEM;
	free(cfg->source);
	cfg->source = s;
	return SY_OK;
}

int sy_config_load_string(struct sy_config *cfg, const char *name, const char *text,
			  size_t len, struct sy_config_error *err)
{
	static const struct sy_config_mark none = {0, 0};

	if (name == NULL)
		name = "<string>";
	if (err != NULL)
		memset(err, 0, sizeof(*err));
	if (set_source(cfg, name) != SY_OK) {
		sy_cfg_error(err, SY_ENOMEM, NULL, none, NULL, "%s: out of memory", name);
		return SY_ENOMEM;
	}
	if (len > SY_CONFIG_MAX_BYTES) {
		sy_cfg_error(err, SY_ECONFIG, NULL, none, NULL, "%s: larger than %u bytes", name,
			     SY_CONFIG_MAX_BYTES);
		return SY_ECONFIG;
	}
	return sy_cfg_load_yaml(&root_section, cfg, cfg->source, text, len, err);
}

int sy_config_load_file(struct sy_config *cfg, const char *path, struct sy_config_error *err)
{
	static const struct sy_config_mark none = {0, 0};
	size_t cap = SY_CONFIG_MAX_BYTES + 1, len = 0;
	int rc;

	FILE *fp = fopen(path, "rb");
	if (fp == NULL) {
		sy_cfg_error(err, SY_EIO, NULL, none, NULL, "%s: cannot open: %s", path,
			     strerror(errno));
		return SY_EIO;
	}
	char *buf = malloc(cap);
	if (buf == NULL) {
		fclose(fp);
		sy_cfg_error(err, SY_ENOMEM, NULL, none, NULL, "%s: out of memory", path);
		return SY_ENOMEM;
	}
	len = fread(buf, 1, cap, fp);
	if (ferror(fp)) {
		sy_cfg_error(err, SY_EIO, NULL, none, NULL, "%s: cannot read: %s", path,
			     strerror(errno));
		rc = SY_EIO;
	} else {
		rc = sy_config_load_string(cfg, path, buf, len, err);
	}
	free(buf);
	fclose(fp);
	return rc;
}

/* ---- finish: the fleet, derived defaults, cross-field checks --------------- */

static const struct sy_cfg_field *root_field(const char *key)
{
	return sy_cfg_find(&root_section, key, strlen(key));
}

/* Position and key path of fleet entry i: workers[i] first, then worker_urls. */
static void fleet_where(const struct sy_config *cfg, size_t i, struct sy_config_mark *m,
			char *path, size_t cap)
{
	if (i < cfg->n_workers) {
		*m = cfg->workers[i].mark;
		snprintf(path, cap, "workers[%zu].url", i);
	} else {
		i -= cfg->n_workers;
		*m = cfg->worker_url_marks[i];
		snprintf(path, cap, "worker_urls[%zu]", i);
	}
}

static const char *fleet_url(const struct sy_config *cfg, size_t i)
{
	return i < cfg->n_workers ? cfg->workers[i].url : cfg->worker_urls[i - cfg->n_workers];
}

/* Two entries of the file's fleet with one worker ID → error with both lines. */
static int check_file_duplicates(struct sy_config *cfg, struct sy_config_error *err)
{
	size_t n = cfg->n_workers + cfg->n_worker_urls;
	char path[64], first_path[64];
	struct sy_config_mark m, first;

	for (size_t j = 1; j < n; j++) {
		for (size_t i = 0; i < j; i++) {
			if (strcmp(fleet_url(cfg, i), fleet_url(cfg, j)) != 0)
				continue;
			fleet_where(cfg, i, &first, first_path, sizeof(first_path));
			fleet_where(cfg, j, &m, path, sizeof(path));
			sy_cfg_error(err, SY_ECONFIG, cfg->source, m, path,
				     "duplicate worker \"%s\" (first at line %u, %s)",
				     fleet_url(cfg, j), (unsigned)first.line, first_path);
			return SY_ECONFIG;
		}
	}
	return SY_OK;
}

/* Fleet from the file: workers, then worker_urls as plain workers. */
static int merge_file_fleet(struct sy_config *cfg, struct sy_config_error *err)
{
	const struct sy_cfg_field *wf = root_field("workers");
	int rc = check_file_duplicates(cfg, err);
	if (rc != SY_OK)
		return rc;
	for (size_t k = 0; k < cfg->n_worker_urls; k++) {
		struct sy_config_worker *w = sy_cfg_seq_push(wf, cfg, &rc);
		if (w == NULL) {
			sy_cfg_error(err, rc, cfg->source, cfg->worker_url_marks[k], "worker_urls",
				     rc == SY_ECONFIG ? "more than %d workers in all"
						      : "out of memory (%d workers)",
				     SY_CONFIG_MAX_WORKERS);
			return rc;
		}
		w->url = cfg->worker_urls[k]; /* moved */
		w->mark = cfg->worker_url_marks[k];
		cfg->worker_urls[k] = NULL;
	}
	return SY_OK;
}

/* Fleet from --worker-urls: exactly those IDs; a file entry of the same ID
 * lends its settings (role, model, bootstrap port, kv_events). */
static int flag_fleet(struct sy_config *cfg, struct sy_config_error *err)
{
	static const struct sy_config_mark none = {0, 0};
	size_t n = cfg->n_worker_urls;
	struct sy_config_worker *fleet = calloc(n ? n : 1, sizeof(*fleet));
	int rc = SY_OK;

	if (fleet == NULL) {
		sy_cfg_error(err, SY_ENOMEM, NULL, none, "--worker-urls", "out of memory");
		return SY_ENOMEM;
	}
	for (size_t k = 0; k < n && rc == SY_OK; k++) {
		const char *url = cfg->worker_urls[k];
		for (size_t i = 0; i < k; i++) {
			if (strcmp(fleet[i].url, url) == 0) {
				sy_cfg_error(err, SY_ECONFIG, NULL, none, "--worker-urls",
					     "duplicate worker \"%s\"", url);
				rc = SY_ECONFIG;
				break;
			}
		}
		if (rc != SY_OK)
			break;
		size_t i = 0;
		while (i < cfg->n_workers &&
		       (cfg->workers[i].url == NULL || strcmp(cfg->workers[i].url, url) != 0))
			i++;
		if (i < cfg->n_workers) {
			fleet[k] = cfg->workers[i]; /* moved whole */
			memset(&cfg->workers[i], 0, sizeof(cfg->workers[i]));
			free(fleet[k].url);
		} else if ((rc = sy_cfg_defaults(&worker_section, &fleet[k])) != SY_OK) {
			sy_cfg_error(err, rc, NULL, none, "--worker-urls", "out of memory");
		}
		fleet[k].url = cfg->worker_urls[k]; /* moved */
		cfg->worker_urls[k] = NULL;
		for (size_t p = 0; p < cfg->n_pd_flags; p++) {
			if (strcmp(cfg->pd_flags[p].url, fleet[k].url) != 0)
				continue;
			fleet[k].role = cfg->pd_flags[p].role;
			if (cfg->pd_flags[p].bootstrap_port > 0)
				fleet[k].bootstrap_port = cfg->pd_flags[p].bootstrap_port;
		}
	}
	/* The file's fleet goes; the new one (complete or not: entries never
	 * reached are zeroed) is owned by cfg. */
	sy_cfg_clear_list(root_field("workers"), cfg);
	cfg->workers = fleet;
	cfg->n_workers = n;
	return rc;
}


/* ---- finish: the tokenizer ----------------------------------------------- */

/* A path that does not exist and reads like a Hugging Face hub id
 * ("org/name"): the router reads no network. */
static bool hub_id(const char *p)
{
	struct stat st;
	const char *slash = strchr(p, '/');
	return stat(p, &st) != 0 && p[0] != '/' && p[0] != '.' && slash != NULL && slash != p &&
	       slash[1] != '\0' && strchr(slash + 1, '/') == NULL;
}

/* SGLang's tokenizer flags (--tokenizer-path DIR|FILE, --model-path DIR,
 * --chat-template FILE): a path makes the hf tokenizer the default kind;
 * the tokenizer path wins over the model path; a hub id is refused; a
 * path or template the chosen kind cannot read is refused. */
static int finish_tokenizer(struct sy_config *cfg, struct sy_config_error *err)
{
	struct sy_config_tokenizer *t = &cfg->router.tokenizer;
	const char *paths[2] = {t->path, t->model_path};
	const char *keys[2] = {"router.tokenizer.path", "router.tokenizer.model_path"};
	for (int i = 0; i < 2; i++) {
		if (paths[i] != NULL && hub_id(paths[i])) {
			sy_cfg_error(err, SY_ECONFIG, cfg->source, t->mark, keys[i],
				     "\"%.200s\" looks like a Hugging Face hub id; the router reads no "
				     "network: download it (huggingface-cli download %.200s --local-dir "
				     "DIR) and give the directory",
				     paths[i], paths[i]);
			return SY_ECONFIG;
		}
	}
	bool given = t->path != NULL || t->model_path != NULL;
	if (t->kind == SY_TOKENIZER_UNSET)
		t->kind = given ? SY_TOKENIZER_HF : SY_TOKENIZER_BYTES;
	if (t->kind != SY_TOKENIZER_HF && (given || t->chat_template != NULL)) {
		const char *k = t->chat_template != NULL && !given ? "router.tokenizer.chat_template"
				: t->path != NULL                 ? "router.tokenizer.path"
								  : "router.tokenizer.model_path";
		sy_cfg_error(err, SY_ECONFIG, cfg->source, t->mark, k,
			     "the %s tokenizer reads no file; use kind hf (a path implies it: drop "
			     "--tokenizer %s), or remove the path",
			     sy_tokenizer_kind_name(t->kind), sy_tokenizer_kind_name(t->kind));
		return SY_ECONFIG;
	}
	if (t->kind == SY_TOKENIZER_HF && t->path == NULL && t->model_path != NULL &&
	    (t->path = strdup(t->model_path)) == NULL) {
		sy_cfg_error(err, SY_ENOMEM, NULL, t->mark, NULL, "out of memory");
		return SY_ENOMEM;
	}
	if (t->kind == SY_TOKENIZER_HF && t->path == NULL) {
		sy_cfg_error(err, SY_ECONFIG, cfg->source, t->mark, "router.tokenizer.path",
			     "required when router.tokenizer.kind is hf (or give "
			     "router.tokenizer.model_path)");
		return SY_ECONFIG;
	}
	return SY_OK;
}

/* ---- finish: policy section and buckets ----------------------------------- */

/* Legacy --filter overloaded --max-in-flight N → admission cap (§11); the
 * two without each other are refused by sy_config_check_consumed(). */
static int finish_policy(struct sy_config *cfg, struct sy_config_error *err)
{
	struct sy_config_policy *p = &cfg->policy;

	if (p->max_in_flight > 0 && p->filter != NULL) {
		int64_t *cap = &p->admission.max_inflight_requests;
		if (*cap >= 0 && *cap != p->max_in_flight) {
			sy_cfg_error(err, SY_ECONFIG, cfg->source, p->mark, "policy.max_in_flight",
				     "conflicts with admission.max_inflight_requests = %lld",
				     (long long)*cap);
			return SY_ECONFIG;
		}
		*cap = p->max_in_flight;
	}
	return SY_OK;
}

/* ---- cache_aware keys (reference/policy-defaults.md §2) ------------------ */

static int64_t eff_i(int64_t own, int64_t top) { return own >= 0 ? own : top; }
static double eff_d(double own, double top) { return own >= 0 ? own : top; }

/* The policy type a group of `role` runs (the rule of router/core/generation.c). */
static const char *group_type(const struct sy_config *cfg, const struct sy_config_policy *own,
			      int role)
{
	const struct sy_config_policy *top = &cfg->policy;
	if (own != NULL && own->type != NULL)
		return own->type;
	if (role == SY_ROLE_DECODE)
		return top->decode_policy ? top->decode_policy : "power_of_n";
	if (role == SY_ROLE_PREFILL && top->prefill_policy != NULL)
		return top->prefill_policy;
	return top->type ? top->type : "power_of_n";
}

/* Cross-field checks of the cache_aware keys of one policy block (`own`
 * NULL: the top level alone) at `path` ("policy" or "buckets[i].groups.x"),
 * over the values the group will run with (own, else top-level). */
static int check_cache_policy(const struct sy_config *cfg, const struct sy_config_policy *own,
			      int role, const char *path, struct sy_config_mark mark,
			      struct sy_config_error *err)
{
	const struct sy_config_policy *top = &cfg->policy;
	const struct sy_config_policy *o = own != NULL ? own : top;
	const char *type = group_type(cfg, own, role);
	bool cache = strcmp(type, "cache_aware") == 0;
	char key[256];
	const char *k;

	if (cache && role == SY_ROLE_DECODE) {
		snprintf(key, sizeof(key), "%.200s.%s", path,
			 own != NULL && own->type != NULL ? "policy.type" : "decode_policy");
		sy_cfg_error(err, SY_ECONFIG, cfg->source, mark, key,
			     "cache_aware refuses decode groups (a decode engine prefills "
			     "nothing); use power_of_n");
		return SY_ECONFIG;
	}
	if (own != NULL && !cache)
		return SY_OK; /* its cache keys are refused by sy_config_check_consumed() */
	int64_t limit = eff_i(o->worker_queue_limit, top->worker_queue_limit);
	int64_t floor = eff_i(o->saturation_queue_floor, top->saturation_queue_floor);
	int64_t lo = eff_i(o->cache_candidate_min_workers, top->cache_candidate_min_workers);
	int64_t hi = eff_i(o->cache_candidate_max_workers, top->cache_candidate_max_workers);
	double rel = eff_d(o->pressure_rel_threshold, top->pressure_rel_threshold);
	double ratio = eff_d(o->cache_candidate_ratio, top->cache_candidate_ratio);
	const char *prov = o->cache_prefix_provider ? o->cache_prefix_provider
						   : top->cache_prefix_provider;
	const char *ep = o->kv_indexer_endpoint ? o->kv_indexer_endpoint : top->kv_indexer_endpoint;
	const char *pfx = own != NULL ? ".policy" : "";

	if (floor >= 0 && limit < 0)
		k = "saturation_queue_floor", snprintf(key, sizeof(key), "needs worker_queue_limit "
						       "(--worker-queue-limit): the floor only "
						       "applies under the soft queue gate; use both, or "
						       "remove it");
	else if (floor >= 0 && floor > limit)
		k = "saturation_queue_floor",
		snprintf(key, sizeof(key), "%lld is above worker_queue_limit %lld (1 <= floor <= limit)",
			 (long long)floor, (long long)limit);
	else if (lo >= 0 && hi >= 0 && lo > hi)
		k = "cache_candidate_min_workers",
		snprintf(key, sizeof(key), "%lld is above cache_candidate_max_workers %lld",
			 (long long)lo, (long long)hi);
	else if (rel >= 0 && rel <= 1.0)
		k = "pressure_rel_threshold", snprintf(key, sizeof(key), "must be > 1 (got %g)", rel);
	else if (ratio == 0.0)
		k = "cache_candidate_ratio", snprintf(key, sizeof(key), "must be > 0");
	else if (prov != NULL && strcmp(prov, "indexer") == 0 && ep == NULL)
		k = "kv_indexer_endpoint", snprintf(key, sizeof(key),
						    "required with cache_prefix_provider indexer");
	else if (ep != NULL && (prov == NULL || strcmp(prov, "indexer") != 0))
		k = "kv_indexer_endpoint", snprintf(key, sizeof(key),
						    "only read with cache_prefix_provider indexer; use "
						    "--cache-prefix-provider indexer, or remove it");
	else
		return SY_OK;
	char full[256];
	snprintf(full, sizeof(full), "%.180s%s.%s", path, pfx, k);
	sy_cfg_error(err, SY_ECONFIG, cfg->source, mark, full, "%s", key);
	return SY_ECONFIG;
}

/* Keys that only the top-level policy may carry. */
static int check_group_policy(const struct sy_config *cfg, const struct sy_config_group *g,
			      const char *path, struct sy_config_error *err)
{
	const struct sy_config_policy *p = &g->policy;
	const char *bad = p->prefill_policy ? "prefill_policy"
			  : p->decode_policy ? "decode_policy"
			  : p->filter        ? "filter"
			  : p->max_in_flight ? "max_in_flight"
			  : p->chat_routing  ? "chat_routing"
			  : p->affinity_mode ? "affinity_mode"
					     : NULL;
	char key[256];
	if (bad == NULL)
		return SY_OK;
	snprintf(key, sizeof(key), "%.200s.policy.%s", path, bad);
	sy_cfg_error(err, SY_ECONFIG, cfg->source, p->mark.line ? p->mark : g->mark, key,
		     "only valid in the top-level policy section");
	return SY_ECONFIG;
}

static const struct sy_config_worker *find_worker(const struct sy_config *cfg, const char *id)
{
	for (size_t i = 0; i < cfg->n_workers; i++)
		if (cfg->workers[i].url != NULL && strcmp(cfg->workers[i].url, id) == 0)
			return &cfg->workers[i];
	return NULL;
}

static int check_group(const struct sy_config *cfg, const struct sy_config_group *g, int role,
		       const char *path, struct sy_config_error *err)
{
	char key[192];
	int rc = check_group_policy(cfg, g, path, err);
	if (rc != SY_OK)
		return rc;
	rc = check_cache_policy(cfg, &g->policy, role, path,
				g->policy.mark.line ? g->policy.mark : g->mark, err);
	if (rc != SY_OK)
		return rc;
	for (size_t i = 0; i < g->n_worker_ids; i++) {
		snprintf(key, sizeof(key), "%.150s.worker_ids[%zu]", path, i);
		for (size_t j = 0; j < i; j++) {
			if (strcmp(g->worker_ids[i], g->worker_ids[j]) == 0) {
				sy_cfg_error(err, SY_ECONFIG, cfg->source, g->mark, key,
					     "duplicate worker \"%s\"", g->worker_ids[i]);
				return SY_ECONFIG;
			}
		}
		const struct sy_config_worker *w = find_worker(cfg, g->worker_ids[i]);
		if (w != NULL && w->role != role) {
			sy_cfg_error(err, SY_ECONFIG, cfg->source, g->mark, key,
				     "worker \"%s\" has role %s; a %s group takes %s workers",
				     g->worker_ids[i], sy_worker_role_name(w->role),
				     sy_worker_role_name(role), sy_worker_role_name(role));
			return SY_ECONFIG;
		}
	}
	return SY_OK;
}

/* Buckets of reference/policy-defaults.md §6. */
static int finish_buckets(struct sy_config *cfg, struct sy_config_error *err)
{
	char path[64], key[128];
	int rc;

	for (size_t i = 0; i < cfg->n_buckets; i++) {
		const struct sy_config_bucket *b = &cfg->buckets[i];
		const struct sy_config_groups *gs = &b->groups;
		snprintf(path, sizeof(path), "buckets[%zu]", i);
		for (size_t j = 0; j < i; j++) {
			if (strcmp(cfg->buckets[j].id, b->id) == 0) {
				snprintf(key, sizeof(key), "%s.id", path);
				sy_cfg_error(err, SY_ECONFIG, cfg->source, b->mark, key,
					     "duplicate bucket id \"%s\" (first at line %u)", b->id,
					     (unsigned)cfg->buckets[j].mark.line);
				return SY_ECONFIG;
			}
		}
		if (b->limits.max >= 0 && b->limits.min > b->limits.max) {
			snprintf(key, sizeof(key), "%s.limits", path);
			sy_cfg_error(err, SY_ECONFIG, cfg->source, b->mark, key,
				     "min %lld is above max %lld", (long long)b->limits.min,
				     (long long)b->limits.max);
			return SY_ECONFIG;
		}
		if (b->max_context_tokens >= 0 && b->max_context_tokens < b->limits.min) {
			snprintf(key, sizeof(key), "%s.max_context_tokens", path);
			sy_cfg_error(err, SY_ECONFIG, cfg->source, b->mark, key,
				     "%lld is below limits.min %lld: the bucket can never match",
				     (long long)b->max_context_tokens, (long long)b->limits.min);
			return SY_ECONFIG;
		}
		bool plain = gs->plain.mark.line > 0, pre = gs->prefill.mark.line > 0,
		     dec = gs->decode.mark.line > 0;
		snprintf(key, sizeof(key), "%s.groups", path);
		if (plain && (pre || dec)) {
			sy_cfg_error(err, SY_ECONFIG, cfg->source, gs->mark.line ? gs->mark : b->mark,
				     key, "a bucket is either plain or prefill + decode, not both");
			return SY_ECONFIG;
		}
		if (!plain && !(pre && dec)) {
			sy_cfg_error(err, SY_ECONFIG, cfg->source, gs->mark.line ? gs->mark : b->mark,
				     key, "needs a plain group, or both prefill and decode groups");
			return SY_ECONFIG;
		}
		static const char *const names[] = {"plain", "prefill", "decode"};
		const struct sy_config_group *g[] = {&gs->plain, &gs->prefill, &gs->decode};
		for (int k = 0; k < 3; k++) {
			if (g[k]->mark.line == 0)
				continue;
			snprintf(key, sizeof(key), "%s.groups.%s", path, names[k]);
			if ((rc = check_group(cfg, g[k], k, key, err)) != SY_OK)
				return rc;
		}
	}
	return SY_OK;
}

/* Retries: --retry-once is --retry-max-retries 1; --disable-retries is 0.
 * Settings that contradict each other are refused, naming both. Afterwards
 * router.retry_max_retries is the effective count (≥ 0). */
static int finish_retries(struct sy_config *cfg, struct sy_config_error *err)
{
	static const struct sy_config_mark none = {0, 0};
	struct sy_config_router *r = &cfg->router;
	if (r->disable_retries && (r->retry_once || r->retry_max_retries > 0)) {
		sy_cfg_error(err, SY_ECONFIG, NULL, none, "router.disable_retries",
			     "conflicts with %s; keep one of them",
			     r->retry_once ? "router.retry_once" : "router.retry_max_retries");
		return SY_ECONFIG;
	}
	if (r->retry_once && r->retry_max_retries >= 0 && r->retry_max_retries != 1) {
		sy_cfg_error(err, SY_ECONFIG, NULL, none, "router.retry_once",
			     "means retry_max_retries 1 but retry_max_retries is %d; keep one of them",
			     r->retry_max_retries);
		return SY_ECONFIG;
	}
	if (r->retry_max_backoff_ms < r->retry_initial_backoff_ms) {
		sy_cfg_error(err, SY_ECONFIG, NULL, none, "router.retry_max_backoff_ms",
			     "%d is below router.retry_initial_backoff_ms %d; raise it or lower the "
			     "initial backoff", r->retry_max_backoff_ms, r->retry_initial_backoff_ms);
		return SY_ECONFIG;
	}
	if (r->retry_max_retries < 0)
		r->retry_max_retries = r->retry_once ? 1 : 0;
	if (r->disable_retries)
		r->retry_max_retries = 0;
	return SY_OK;
}

int sy_config_finish(struct sy_config *cfg, struct sy_config_error *err)
{
	static const struct sy_config_mark none = {0, 0};
	int rc;

	if (err != NULL)
		memset(err, 0, sizeof(*err));
	rc = cfg->worker_urls_from_flags ? flag_fleet(cfg, err) : merge_file_fleet(cfg, err);
	sy_cfg_clear_list(root_field("worker_urls"), cfg);
	cfg->worker_urls_from_flags = false; /* the fleet is built: a second finish keeps it */
	if (rc != SY_OK)
		return rc;

	for (size_t i = 0; i < cfg->n_workers; i++) {
		struct sy_config_worker *w = &cfg->workers[i];
		if (w->model == NULL) {
			w->model_default = strcmp(cfg->model_id, SY_CONFIG_DEFAULT_MODEL_ID) == 0;
			if ((w->model = strdup(cfg->model_id)) == NULL)
				goto nomem;
		}
	}

	if (cfg->statebus.control_endpoint == NULL) {
		size_t n = strlen(cfg->state.shm_path) + sizeof("ipc://.ctl");
		char *ep = malloc(n);
		if (ep == NULL)
			goto nomem;
		snprintf(ep, n, "ipc://%s.ctl", cfg->state.shm_path);
		cfg->statebus.control_endpoint = ep;
	}

	if (cfg->statebus.query_endpoint != NULL &&
	    strcmp(cfg->statebus.query_endpoint, cfg->statebus.control_endpoint) == 0) {
		sy_cfg_error(err, SY_ECONFIG, NULL, none, "statebus.query_endpoint",
			     "must differ from statebus.control_endpoint");
		return SY_ECONFIG;
	}

	if (cfg->router.api_key_file != NULL && !cfg->router.api_key_read) {
		if ((rc = read_key_file(cfg->router.api_key_file, "router.api_key_file",
					"router.api_key", &cfg->router.api_key, err)) != SY_OK)
			return rc;
		cfg->router.api_key_read = true;
	}
	if (cfg->router.admin_api_key_file != NULL && !cfg->router.admin_api_key_read) {
		if ((rc = read_key_file(cfg->router.admin_api_key_file, "router.admin_api_key_file",
					"router.admin_api_key", &cfg->router.admin_api_key, err)) !=
		    SY_OK)
			return rc;
		cfg->router.admin_api_key_read = true;
	}
	if (cfg->router.admin_host != NULL && cfg->router.admin_port == 0) {
		sy_cfg_error(err, SY_ECONFIG, NULL, none, "router.admin_host",
			     "needs router.admin_port: the admin listener is off without a port");
		return SY_ECONFIG;
	}
	if (cfg->router.admin_port != 0 && cfg->router.admin_port == cfg->router.port &&
	    (cfg->router.admin_host == NULL ||
	     strcmp(cfg->router.admin_host, cfg->router.host) == 0)) {
		sy_cfg_error(err, SY_ECONFIG, NULL, none, "router.admin_port",
			     "%d is the main listener's port; give the admin listener a port of its own",
			     cfg->router.admin_port);
		return SY_ECONFIG;
	}
	if ((cfg->router.tls_cert_path == NULL) != (cfg->router.tls_key_path == NULL)) {
		bool cert = cfg->router.tls_cert_path != NULL;
		sy_cfg_error(err, SY_ECONFIG, NULL, none,
			     cert ? "router.tls_cert_path" : "router.tls_key_path",
			     "needs %s too: TLS takes the certificate chain and its private key",
			     cert ? "router.tls_key_path" : "router.tls_cert_path");
		return SY_ECONFIG;
	}
	if (cfg->router.max_pending_body_bytes < cfg->router.max_body_bytes) {
		sy_cfg_error(err, SY_ECONFIG, NULL, none, "router.max_pending_body_bytes",
			     "%llu is below router.max_body_bytes %llu: a body of the allowed size "
			     "could never be held; raise it to at least %llu or lower max_body_bytes",
			     (unsigned long long)cfg->router.max_pending_body_bytes,
			     (unsigned long long)cfg->router.max_body_bytes,
			     (unsigned long long)cfg->router.max_body_bytes);
		return SY_ECONFIG;
	}
	if (cfg->n_pd_flags > 0 && !cfg->router.pd_disaggregation) {
		sy_cfg_error(err, SY_ECONFIG, NULL, none,
			     cfg->pd_flags[0].role == SY_ROLE_PREFILL ? "--prefill" : "--decode",
			     "needs --pd-disaggregation (router.pd_disaggregation: true), as in "
			     "SGLang's router");
		return SY_ECONFIG;
	}
	if ((rc = finish_tokenizer(cfg, err)) != SY_OK)
		return rc;
	if ((rc = finish_retries(cfg, err)) != SY_OK)
		return rc;
	if ((rc = finish_policy(cfg, err)) != SY_OK)
		return rc;
	if ((rc = check_cache_policy(cfg, NULL, SY_ROLE_PLAIN, "policy", cfg->policy.mark, err)) !=
	    SY_OK)
		return rc;
	if (cfg->policy.decode_policy != NULL &&
	    (rc = check_cache_policy(cfg, NULL, SY_ROLE_DECODE, "policy", cfg->policy.mark, err)) !=
		    SY_OK)
		return rc;
	if ((rc = finish_buckets(cfg, err)) != SY_OK)
		return rc;
	if ((rc = sy_config_check_models(cfg, err)) != SY_OK)
		return rc;
	return sy_config_check_consumed(cfg, err);

nomem:
	sy_cfg_error(err, SY_ENOMEM, NULL, none, NULL, "out of memory");
	return SY_ENOMEM;
}
