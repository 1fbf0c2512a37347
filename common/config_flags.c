/* config_flags.c — command-line flags over the configuration (DESIGN.md §5).
 *
 * Naming rule: a flag's YAML key is its name without "--", '-' → '_', under
 * the program's section ("router" for switchyard-router, "statebus" for the
 * statebus, ...): --request-timeout-secs → router.request_timeout_secs.
 * Names that do not follow the rule by themselves come from the settled
 * tables below, which are searched first. A flag's value is parsed by the
 * same typed parser as the YAML value (sy_cfg_set_scalar), so both accept
 * the same spellings and fail with the same reason, named by the flag.
 */
#include "common/config.h"
#include "common/config_schema.h"
#include "common/config_sglang.h"
#include "common/errors.h"

#include <errno.h>
#include <stdlib.h>

#include <stdio.h>
#include <string.h>

#define FLAG_MAX 128 /* bytes of a flag name, "--" included */

struct flag_alias {
	const char *flag;
	const char *key; /* dotted key path */
};

/* Settled exceptions of DESIGN.md §5, valid in every program's section. */
static const struct flag_alias settled[] = {
	{"--shm", "state.shm_path"},
	{"--shm-group", "state.group"},
	{"--control-endpoint", "statebus.control_endpoint"},
	{"--query-endpoint", "statebus.query_endpoint"},
	{"--tokenizer", "router.tokenizer.kind"},
	{"--tokenizer-path", "router.tokenizer.path"},
	{"--log-level", "log.level"},
	{"--log-format", "log.format"},
	{"--worker-urls", "worker_urls"}, /* multi-valued; builds workers[] (finish) */
	{"--model-id", "model_id"},
	{"--termination-grace-secs", "router.shutdown_drain_secs"}, /* SGLang's other name */
	/* health probes: the statebus's, or the router master's without one */
	{"--health-interval-ms", "statebus.health_interval_ms"},
	{"--health-timeout-ms", "statebus.health_timeout_ms"},
	{"--health-failure-threshold", "statebus.health_failure_threshold"},
	{"--health-success-threshold", "statebus.health_success_threshold"},
	{NULL, NULL},
};

/* Policy and admission flags (DESIGN.md §5, reference/policy-defaults.md §1,
 * §5, §11): the `policy` section, whatever the program's section. Values are
 * checked by the schema hooks (config.c): removed policy names, --filter
 * prefix_cache, --affinity-mode soft and --decode-policy
 * legacy_host_affinity are refused there with their replacement. The legacy
 * --max-in-flight needs --filter overloaded and becomes
 * admission.max_inflight_requests in sy_config_finish(). */
static const struct flag_alias admission[] = {
	{"--policy", "policy.type"},
	{"--prefill-policy", "policy.prefill_policy"},
	{"--decode-policy", "policy.decode_policy"},
	{"--power-of-n-choices", "policy.power_of_n_choices"},
	{"--filter", "policy.filter"},
	{"--max-in-flight", "policy.max_in_flight"},
	{"--chat-routing", "policy.chat_routing"},
	{"--affinity-mode", "policy.affinity_mode"},
	{"--sticky-fallback", "policy.sticky_fallback"},
	{"--affinity-idle-timeout-secs", "policy.affinity_idle_timeout_secs"},
	{"--session-affinity-mode", "policy.session_affinity_mode"},
	{"--max-running-requests", "policy.admission.max_running_requests"},
	{"--max-waiting-requests", "policy.admission.max_waiting_requests"},
	{"--max-kv-tokens", "policy.admission.max_kv_tokens"},
	{"--max-pending-prefill-tokens", "policy.admission.max_pending_prefill_tokens"},
	{"--max-inflight-requests", "policy.admission.max_inflight_requests"},
	/* cache_aware (reference §2; the naming rule under `policy`) */
	{"--cache-affinity-min-matched-tokens", "policy.cache_affinity_min_matched_tokens"},
	{"--cache-affinity-min-match-ratio", "policy.cache_affinity_min_match_ratio"},
	{"--cache-candidate-min-workers", "policy.cache_candidate_min_workers"},
	{"--cache-candidate-ratio", "policy.cache_candidate_ratio"},
	{"--cache-candidate-max-workers", "policy.cache_candidate_max_workers"},
	{"--cache-switch-margin-tokens", "policy.cache_switch_margin_tokens"},
	{"--worker-queue-limit", "policy.worker_queue_limit"},
	{"--saturation-queue-floor", "policy.saturation_queue_floor"},
	{"--min-load-choices", "policy.min_load_choices"},
	{"--disable-pressure-guard", "policy.disable_pressure_guard"},
	{"--pressure-abs-threshold-tokens", "policy.pressure_abs_threshold_tokens"},
	{"--pressure-abs-threshold-ms", "policy.pressure_abs_threshold_ms"},
	{"--pressure-rel-threshold", "policy.pressure_rel_threshold"},
	{"--cache-predicted-weight", "policy.cache_predicted_weight"},
	{"--cache-predicted-window-ms", "policy.cache_predicted_window_ms"},
	{"--cache-predicted-half-life-ms", "policy.cache_predicted_half_life_ms"},
	{"--cache-prefix-provider", "policy.cache_prefix_provider"},
	{"--kv-indexer-endpoint", "policy.kv_indexer_endpoint"},
	{"--kv-indexer-timeout-ms", "policy.kv_indexer_timeout_ms"},
	{"--kv-indexer-max-inflight", "policy.kv_indexer_max_inflight"},
	{NULL, NULL},
};

/* SGLang-router options that are refused by name, with the reason and the
 * replacement: the dropped legacy options of reference/policy-defaults.md
 * §11, and the §1, §4 and §7 options switchyard does not offer. Value-dependent ones
 * (--policy cache_aware_zmq, --filter prefix_cache, --affinity-mode soft,
 * --decode-policy legacy_host_affinity) are refused by the schema hooks. */
static const struct flag_alias legacy[] = {
	{"--cache-threshold", "removed; use cache_aware's candidate thresholds "
			      "--cache-affinity-min-matched-tokens N / "
			      "--cache-affinity-min-match-ratio R"},
	{"--balance-abs-threshold",
	 "removed; use the pressure guard (--pressure-abs-threshold-tokens, "
	 "--pressure-rel-threshold) and --worker-queue-limit"},
	{"--balance-rel-threshold",
	 "removed; use the pressure guard (--pressure-abs-threshold-tokens, "
	 "--pressure-rel-threshold) and --worker-queue-limit"},
	{"--eviction-interval-secs", "removed; the index is bounded by engine removals and "
				     "the statebus index capacity, nothing replaces it: remove it"},
	{"--max-tree-size", "removed; the index is bounded by engine removals and the "
			    "statebus index capacity, nothing replaces it: remove it"},
	{"--prefix-cache-min-share", "dropped; use the cache-aware candidate thresholds"},
	{"--bucket-config", "legacy static buckets are not accepted; use `buckets` in the "
			    "configuration file"},
	{"--fuse", "the fused score is not offered; use --policy cache_aware (prefix affinity "
		   "with its load guards) or --policy power_of_n"},
	{"--stable-pair", "not needed: session_aware binds each stage of a session per bucket "
			  "(session_affinity_mode bucket), so its prefill and decode workers stay "
			  "paired; use --policy session_aware for the prefill and decode groups"},
	{"--dp-aware", "not supported: the router picks a worker and the engine its DP rank; use "
		       "one workers[] entry per engine (kv_events.dp_size for its ranks)"},
	{"--service-discovery", "Kubernetes discovery is not supported; use workers[] or "
				"--worker-urls, or add workers at run time with syctl (statebus "
				"control socket)"},
	{"--service-discovery-namespace", "Kubernetes discovery is not supported; use workers[] "
					  "or --worker-urls"},
	{"--selector", "Kubernetes discovery is not supported; use workers[] or --worker-urls"},
	{"--prefill-selector", "Kubernetes discovery is not supported; use workers[] entries "
			       "with role prefill"},
	{"--decode-selector", "Kubernetes discovery is not supported; use workers[] entries "
			      "with role decode"},
	{"--stale-request-timeout-secs", "no stale-request janitor: a request ends at "
					 "--request-timeout-secs (streams: "
					 "--stream-idle-timeout-secs); use those"},
	{NULL, NULL},
};

static const char *lookup(const struct flag_alias *t, const char *flag)
{
	for (; t->flag != NULL; t++)
		if (strcmp(t->flag, flag) == 0)
			return t->key;
	return NULL;
}

/* Follows dotted `key` through MAP fields from the root; `*obj` (when obj is
 * not NULL) moves along to the struct holding the final field. */
static const struct sy_cfg_field *resolve(const char *key, void **obj)
{
	const struct sy_cfg_section *sec = sy_config_schema();
	const struct sy_cfg_field *f = NULL;
	const char *p = key;

	for (;;) {
		const char *dot = strchr(p, '.');
		size_t len = dot ? (size_t)(dot - p) : strlen(p);
		f = sy_cfg_find(sec, p, len);
		if (f == NULL)
			return NULL;
		if (dot == NULL)
			return f;
		if (f->type != SY_CFG_MAP)
			return NULL;
		if (obj != NULL)
			*obj = (char *)*obj + f->off;
		sec = f->sub;
		p = dot + 1;
	}
}

static bool valid_flag(const char *flag)
{
	if (strncmp(flag, "--", 2) != 0 || flag[2] == '\0' || flag[2] == '-')
		return false;
	for (const char *c = flag + 2; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-'))
			return false;
	return strlen(flag) < FLAG_MAX;
}

int sy_config_flag_to_key(const char *section, const char *flag, char *key, size_t cap)
{
	const char *mapped;
	int n;

	if (cap > 0)
		key[0] = '\0';
	if (flag == NULL || !valid_flag(flag))
		return SY_EINVAL;
	if ((mapped = lookup(legacy, flag)) != NULL) {
		n = snprintf(key, cap, "%s", mapped);
		return (size_t)n >= cap ? SY_ENOSPC : SY_EUNSUPPORTED;
	}
	const struct sy_sglang_flag *sg = sy_sglang_flag(flag);
	if (sg != NULL && (sg->action == SY_SGLANG_REFUSE || sg->action == SY_SGLANG_ROUTER)) {
		n = snprintf(key, cap, "%s%s",
			     sg->action == SY_SGLANG_ROUTER ? "only switchyard-router takes it: " : "",
			     sg->why);
		return (size_t)n >= cap ? SY_ENOSPC : SY_EUNSUPPORTED;
	}
	if (sg != NULL && sg->key != NULL) {
		n = snprintf(key, cap, "%s", sg->key);
	} else if ((mapped = lookup(settled, flag)) != NULL ||
		   (mapped = lookup(admission, flag)) != NULL) {
		n = snprintf(key, cap, "%s", mapped);
	} else {
		if (section != NULL && section[0] != '\0') {
			const struct sy_cfg_field *s = resolve(section, NULL);
			if (s == NULL || s->type != SY_CFG_MAP || strchr(section, '.') != NULL)
				return SY_EINVAL;
		}
		bool top = section == NULL || section[0] == '\0';
		n = snprintf(key, cap, "%s%s%s", top ? "" : section, top ? "" : ".", flag + 2);
		for (char *c = key; *c; c++)
			if (*c == '-')
				*c = '_';
	}
	if (n < 0 || (size_t)n >= cap)
		return SY_ENOSPC;
	return resolve(key, NULL) != NULL ? SY_OK : SY_ENOENT;
}

/* --worker-urls URL[,URL...]: the first use replaces the file's list. */
static int apply_worker_urls(struct sy_config *cfg, const struct sy_cfg_field *f,
			     const char *flag, const char *value, struct sy_config_error *err)
{
	static const struct sy_config_mark none = {0, 0};
	static const char seps[] = ", \t\n";
	char why[256];
	size_t added = 0;

	if (!cfg->worker_urls_from_flags) {
		sy_cfg_clear_list(f, cfg);
		cfg->worker_urls_from_flags = true;
	}
	for (const char *p = value; *p;) {
		p += strspn(p, seps);
		size_t len = strcspn(p, seps);
		if (len == 0)
			break;
		int rc = sy_cfg_set_scalar(f, cfg, p, len, false, none, why, sizeof(why));
		if (rc != SY_OK) {
			sy_cfg_error(err, rc, NULL, none, flag, "\"%.*s\": %s",
				     (int)(len > 200 ? 200 : len), p, why);
			return rc;
		}
		added++;
		p += len;
	}
	if (added == 0) {
		sy_cfg_error(err, SY_ECONFIG, NULL, none, flag, "needs at least one URL");
		return SY_ECONFIG;
	}
	return SY_OK;
}

/* A list flag other than --worker-urls: its values (separated by commas or
 * spaces) replace the list. */
static int apply_list(void *obj, const struct sy_cfg_field *f, const char *flag,
		      const char *value, struct sy_config_error *err)
{
	static const struct sy_config_mark none = {0, 0};
	static const char seps[] = ", \t\n";
	char why[256];

	sy_cfg_clear_list(f, obj);
	for (const char *p = value; *p;) {
		p += strspn(p, seps);
		size_t len = strcspn(p, seps);
		if (len == 0)
			break;
		int rc = sy_cfg_set_scalar(f, obj, p, len, false, none, why, sizeof(why));
		if (rc != SY_OK) {
			sy_cfg_error(err, rc, NULL, none, flag, "\"%.*s\": %s",
				     (int)(len > 200 ? 200 : len), p, why);
			return rc;
		}
		p += len;
	}
	return SY_OK;
}

/* An integer flag whose key is `scale` times finer (seconds → ms): checks
 * the range in the flag's own unit, then writes the scaled value. */
static int scale_value(const struct sy_cfg_field *f, unsigned scale, const char *flag,
		       const char *value, char *out, size_t cap, struct sy_config_error *err)
{
	static const struct sy_config_mark none = {0, 0};
	long long lo = (f->min + (int64_t)scale - 1) / (int64_t)scale, hi = f->max / (int64_t)scale;
	char *end;
	errno = 0;
	long long v = strtoll(value, &end, 10);
	if (errno != 0 || end == value || *end != '\0' || v < lo || v > hi) {
		sy_cfg_error(err, SY_ECONFIG, NULL, none, flag, "must be an integer in %lld..%lld",
			     lo, hi);
		return SY_ECONFIG;
	}
	snprintf(out, cap, "%lld", v * (long long)scale);
	return SY_OK;
}

/* Looks `value` up in a VALUES map "FROM=TO;...": true with *to (borrowed
 * into `map`, *to_len bytes, possibly empty) when listed. */
static bool map_value(const char *map, const char *value, const char **to, size_t *to_len)
{
	size_t vl = strlen(value);
	for (const char *p = map; *p;) {
		const char *eq = strchr(p, '='), *end = strchr(p, ';');
		if (end == NULL)
			end = p + strlen(p);
		if (eq != NULL && eq < end && (size_t)(eq - p) == vl && memcmp(p, value, vl) == 0) {
			*to = eq + 1;
			*to_len = (size_t)(end - eq - 1);
			return true;
		}
		p = *end ? end + 1 : end;
	}
	return false;
}

int sy_config_add_pd_worker(struct sy_config *cfg, const char *flag, int role, const char *url,
			    const char *bootstrap_port, struct sy_config_error *err)
{
	static const struct sy_config_mark none = {0, 0};
	const struct sy_cfg_field *f = resolve("worker_urls", NULL);
	int port = 0;

	if (err != NULL)
		memset(err, 0, sizeof(*err));
	if (url == NULL || url[0] == '\0') {
		sy_cfg_error(err, SY_ECONFIG, NULL, none, flag, "needs a worker URL");
		return SY_ECONFIG;
	}
	if (bootstrap_port != NULL && strcmp(bootstrap_port, "none") != 0 &&
	    strcmp(bootstrap_port, "null") != 0) {
		char *end;
		errno = 0;
		long v = strtol(bootstrap_port, &end, 10);
		if (role != SY_ROLE_PREFILL || errno != 0 || end == bootstrap_port || *end != '\0' ||
		    v < 1 || v > 65535) {
			sy_cfg_error(err, SY_ECONFIG, NULL, none, flag,
				     role == SY_ROLE_PREFILL
					     ? "bootstrap port \"%.40s\": must be an integer in "
					       "1..65535 or none"
					     : "takes one URL (\"%.40s\" is extra)",
				     bootstrap_port);
			return SY_ECONFIG;
		}
		port = (int)v;
	}
	size_t before = cfg->n_worker_urls;
	int rc = apply_worker_urls(cfg, f, flag, url, err);
	if (rc != SY_OK)
		return rc;
	if (cfg->n_worker_urls != before + 1) {
		sy_cfg_error(err, SY_ECONFIG, NULL, none, flag, "takes one URL, got \"%.80s\"", url);
		return SY_ECONFIG;
	}
	struct sy_config_pd_flag *grown =
		realloc(cfg->pd_flags, (cfg->n_pd_flags + 1) * sizeof(*grown));
	if (grown == NULL)
		return SY_ENOMEM;
	cfg->pd_flags = grown;
	struct sy_config_pd_flag *pf = &grown[cfg->n_pd_flags];
	if ((pf->url = strdup(cfg->worker_urls[before])) == NULL)
		return SY_ENOMEM;
	pf->role = role;
	pf->bootstrap_port = port;
	cfg->n_pd_flags++;
	return SY_OK;
}

bool sy_config_flag_is_list(const char *section, const char *flag)
{
	char key[512];
	if (sy_config_flag_to_key(section, flag, key, sizeof(key)) != SY_OK)
		return false;
	const struct sy_cfg_field *f = resolve(key, NULL);
	return f != NULL && f->type == SY_CFG_STRLIST;
}

int sy_config_apply_flag(struct sy_config *cfg, const char *section, const char *flag,
			 const char *value, struct sy_config_error *err)
{
	static const struct sy_config_mark none = {0, 0};
	char name[FLAG_MAX], key[512], why[256];
	const char *eq;

	if (err != NULL)
		memset(err, 0, sizeof(*err));
	if (flag == NULL)
		flag = "";
	if (value == NULL && (eq = strchr(flag, '=')) != NULL) {
		size_t n = (size_t)(eq - flag);
		snprintf(name, sizeof(name), "%.*s", (int)(n < FLAG_MAX ? n : FLAG_MAX - 1), flag);
		value = eq + 1;
	} else {
		snprintf(name, sizeof(name), "%s", flag);
	}

	int rc = sy_config_flag_to_key(section, name, key, sizeof(key));
	switch (rc) {
	case SY_OK:
		break;
	case SY_EUNSUPPORTED:
		sy_cfg_error(err, rc, NULL, none, name, "%s", key);
		return rc;
	case SY_ENOENT:
		sy_cfg_error(err, SY_ECONFIG, NULL, none, name, "unknown flag (no key %s)", key);
		return SY_ECONFIG;
	default:
		sy_cfg_error(err, SY_ECONFIG, NULL, none, name[0] ? name : NULL,
			     "not a valid flag name%s%s", section ? " in section " : "",
			     section ? section : "");
		return SY_ECONFIG;
	}

	void *obj = cfg;
	const struct sy_cfg_field *f = resolve(key, &obj);
	const struct sy_sglang_flag *sg = sy_sglang_flag(name);
	char scaled[32], mapped[64];
	if (sg != NULL && sg->action == SY_SGLANG_SET) {
		if (value != NULL && strcmp(value, "true") != 0) {
			sy_cfg_error(err, SY_ECONFIG, NULL, none, name, "takes no value");
			return SY_ECONFIG;
		}
		value = sg->value;
	} else if (sg != NULL && sg->action == SY_SGLANG_VALUES) {
		const char *to;
		size_t to_len;
		if (value == NULL || !map_value(sg->value, value, &to, &to_len)) {
			sy_cfg_error(err, SY_ECONFIG, NULL, none, name, "%s", sg->why);
			return SY_ECONFIG;
		}
		if (to_len == 0)
			return SY_OK; /* the value is switchyard's fixed behaviour */
		snprintf(mapped, sizeof(mapped), "%.*s", (int)to_len, to);
		value = mapped;
	} else if (sg != NULL && sg->scale > 1 && value != NULL && f->type == SY_CFG_INT) {
		if ((rc = scale_value(f, sg->scale, name, value, scaled, sizeof(scaled), err)) != SY_OK)
			return rc;
		value = scaled;
	}
	if (f->type == SY_CFG_MAP || f->type == SY_CFG_SEQ) {
		sy_cfg_error(err, SY_ECONFIG, NULL, none, name,
			     "%s is a section; set its keys in the configuration file", key);
		return SY_ECONFIG;
	}
	if (value == NULL) {
		if (f->type != SY_CFG_BOOL) {
			sy_cfg_error(err, SY_ECONFIG, NULL, none, name, "needs a value");
			return SY_ECONFIG;
		}
		value = "true";
	}
	if (f->type == SY_CFG_STRLIST && f == resolve("worker_urls", NULL))
		return apply_worker_urls(cfg, f, name, value, err);
	if (f->type == SY_CFG_STRLIST)
		return apply_list(obj, f, name, value, err);
	rc = sy_cfg_set_scalar(f, obj, value, strlen(value), false, none, why, sizeof(why));
	if (rc != SY_OK)
		sy_cfg_error(err, rc, NULL, none, name, "%s", why);
	return rc;
}
