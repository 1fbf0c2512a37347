/* config_check.c — every setting the configuration accepts is read by
 * something it builds (DESIGN.md §5; reference/policy-defaults.md §11:
 * unsupported settings and incompatible combinations are refused at start-up,
 * never accepted and ignored).
 *
 * The consumer table has one row per leaf key of the schema, named by its
 * section ("policy", "router", "bucket", ...) and key, saying who reads it:
 *   ALWAYS  a module reads it whatever else is configured (`reader` says which);
 *   NOOP    accepted for compatibility and deliberately without effect;
 *   WHEN    read only in some combinations: a value other than the default
 *           outside them is refused with the key, the reason and what to use.
 * tests/unit/test_config_policy.c walks the schema and fails for a key
 * without a row, a row without a key, and a WHEN row without a probe that
 * shows the refusal.
 *
 * Policy keys are judged per engine group, over the groups the router builds
 * (the configured buckets, else the default buckets of
 * sy_config_default_stages): a key in a group's own policy block must be read
 * by that group's policy; a top-level key must be read by at least one group
 * that inherits it (does not set its own). The type a group runs follows the
 * rule of router/core/generation.c: its own type; else decode →
 * decode_policy, prefill → prefill_policy, then policy.type; else power_of_n.
 */
#include "common/config.h"
#include "common/config_schema.h"
#include "common/errors.h"

#include <stdio.h>
#include <string.h>

/* Policy kinds: sy_policy_names indexes, and power_of_two after them. */
#define K_RR (1u << 0)
#define K_RANDOM (1u << 1)
#define K_PON (1u << 2)
#define K_CACHE (1u << 3)
#define K_SESSION (1u << 4)
#define K_STICKY (1u << 5)
#define K_LOAD (1u << 6)
#define K_TWO (1u << 7)
#define KIND_TWO 7
#define GROUPS_MAX (2 * SY_CONFIG_MAX_BUCKETS + 3)

/* One engine group the router will build. */
struct eff_group {
	const struct sy_config_policy *own; /* the group's policy block; NULL: default bucket */
	int role;                           /* enum sy_worker_role = its stage */
	int kind;                           /* sy_policy_names index, or KIND_TWO */
	bool fallback_pon;                  /* sticky: its fallback is power_of_n */
	bool indexer;                       /* cache_prefix_provider indexer */
	char path[48];                      /* "buckets[3].groups.prefill" */
	struct sy_config_mark mark;         /* where its policy block is */
};

struct ctx {
	const struct sy_config *cfg;
	struct eff_group g[GROUPS_MAX];
	size_t n;
	unsigned kinds; /* K_* of every group */
};

struct row;
typedef bool (*reads_fn)(const struct ctx *c, const struct eff_group *g, bool top);
typedef int (*check_fn)(const struct ctx *c, const struct row *r, struct sy_config_error *err);

struct row {
	struct sy_config_consumer c;
	/* Policy and admission keys (WHEN): does group g read the key (top:
	 * the top-level value, own: its own block's)? */
	reads_fn reads;
	bool top_only;         /* refused inside groups (checked by config.c) */
	const char *inherit;   /* top value reaches groups not setting this key
				  (NULL: the row's own key; "" : every group) */
	const char *own_msg;   /* reason for a group's own key; %s = its kind */
	const char *two_msg;   /* own_msg for a power_of_two group, if different */
	const char *top_msg;   /* reason for an unread top-level key */
	check_fn check;        /* other WHEN rows */
};

static const char *kind_name(int kind)
{
	return kind == KIND_TWO ? "power_of_two" : sy_policy_names[kind];
}

static int kind_of(const char *type)
{
	if (strcmp(type, "power_of_two") == 0)
		return KIND_TWO;
	for (int i = 0; i < SY_POLICY_COUNT; i++)
		if (strcmp(type, sy_policy_names[i]) == 0)
			return i;
	return 2; /* unknown names are refused by the schema hook */
}

static const struct sy_cfg_section *section_of(const char *key)
{
	const struct sy_cfg_field *f = sy_cfg_find(sy_config_schema(), key, strlen(key));
	return f != NULL ? f->sub : NULL;
}

static const struct sy_cfg_field *policy_field(const char *section, const char *key)
{
	const struct sy_cfg_section *p = section_of("policy");
	if (strcmp(section, "admission") == 0)
		p = sy_cfg_find(p, "admission", 9)->sub;
	return sy_cfg_find(p, key, strlen(key));
}

static const void *policy_obj(const char *section, const struct sy_config_policy *p)
{
	return strcmp(section, "admission") == 0 ? (const void *)&p->admission : (const void *)p;
}

static void add_group(struct ctx *c, const struct sy_config_group *cg, int role, const char *path,
		      struct sy_config_mark mark)
{
	const struct sy_config_policy *top = &c->cfg->policy;
	const struct sy_config_policy *own = cg != NULL ? &cg->policy : NULL;
	struct eff_group *g = &c->g[c->n++];
	const char *type = NULL;

	memset(g, 0, sizeof(*g));
	g->own = own;
	g->role = role;
	if (own != NULL && own->type != NULL)
		type = own->type;
	else if (role == SY_ROLE_DECODE)
		type = top->decode_policy;
	else if (role == SY_ROLE_PREFILL && top->prefill_policy != NULL)
		type = top->prefill_policy;
	if (type == NULL && role != SY_ROLE_DECODE)
		type = top->type;
	g->kind = kind_of(type != NULL ? type : "power_of_n");
	c->kinds |= 1u << g->kind;
	const char *fb = own != NULL && own->sticky_fallback ? own->sticky_fallback
							     : top->sticky_fallback;
	g->fallback_pon = fb != NULL && strcmp(fb, "power_of_n") == 0;
	const char *prov = own != NULL && own->cache_prefix_provider ? own->cache_prefix_provider
								      : top->cache_prefix_provider;
	g->indexer = prov != NULL && strcmp(prov, "indexer") == 0;
	snprintf(g->path, sizeof(g->path), "%s", path);
	g->mark = own != NULL && own->mark.line ? own->mark : mark;
}

static void collect(struct ctx *c, const struct sy_config *cfg)
{
	static const char *const names[] = {"plain", "prefill", "decode"};
	char path[48];

	memset(c, 0, sizeof(*c));
	c->cfg = cfg;
	if (cfg->n_buckets == 0) {
		bool plain, pd;
		sy_config_default_stages(cfg, &plain, &pd);
		for (int k = 0; k < 3; k++)
			if (k == 0 ? plain : pd)
				add_group(c, NULL, k, "policy", cfg->policy.mark);
		return;
	}
	for (size_t i = 0; i < cfg->n_buckets && i < SY_CONFIG_MAX_BUCKETS; i++) {
		const struct sy_config_groups *gs = &cfg->buckets[i].groups;
		const struct sy_config_group *g[3] = {&gs->plain, &gs->prefill, &gs->decode};
		for (int k = 0; k < 3; k++) {
			if (g[k]->mark.line == 0)
				continue;
			snprintf(path, sizeof(path), "buckets[%zu].groups.%s", i, names[k]);
			add_group(c, g[k], k, path, g[k]->mark);
		}
	}
}

/* ---- who reads a policy key ---------------------------------------------- */

static bool reads_every(const struct ctx *c, const struct eff_group *g, bool top)
{
	(void)c, (void)g, (void)top;
	return true;
}

/* policy.type: a group's own type always; the top one by plain groups and
 * by prefill groups without prefill_policy. */
static bool reads_type(const struct ctx *c, const struct eff_group *g, bool top)
{
	if (!top)
		return true;
	return g->role == SY_ROLE_PLAIN ||
	       (g->role == SY_ROLE_PREFILL && c->cfg->policy.prefill_policy == NULL);
}

static bool reads_prefill(const struct ctx *c, const struct eff_group *g, bool top)
{
	(void)c, (void)top;
	return g->role == SY_ROLE_PREFILL;
}

static bool reads_decode(const struct ctx *c, const struct eff_group *g, bool top)
{
	(void)c, (void)top;
	return g->role == SY_ROLE_DECODE;
}

/* N: power_of_n, session_aware (new sessions), sticky with a power_of_n
 * fallback. power_of_two is N = 2. */
static bool reads_n(const struct ctx *c, const struct eff_group *g, bool top)
{
	(void)c, (void)top;
	unsigned k = 1u << g->kind;
	return (k & (K_PON | K_SESSION)) || ((k & K_STICKY) && g->fallback_pon);
}

static bool reads_session(const struct ctx *c, const struct eff_group *g, bool top)
{
	(void)c, (void)top;
	return g->kind == 4;
}

static bool reads_sticky(const struct ctx *c, const struct eff_group *g, bool top)
{
	(void)c, (void)top;
	return g->kind == 5;
}

static bool reads_affinity(const struct ctx *c, const struct eff_group *g, bool top)
{
	(void)c, (void)top;
	return g->kind == 4 || g->kind == 5;
}

static bool reads_cache(const struct ctx *c, const struct eff_group *g, bool top)
{
	(void)c, (void)top;
	return g->kind == 3;
}

static bool reads_indexer(const struct ctx *c, const struct eff_group *g, bool top)
{
	(void)c, (void)top;
	return g->kind == 3 && g->indexer;
}

/* ---- other combinations ---------------------------------------------------- */

static int refuse(const struct sy_config *cfg, struct sy_config_error *err,
		  struct sy_config_mark mark, const char *key, const char *why)
{
	sy_cfg_error(err, SY_ECONFIG, cfg->source, mark, key, "%s", why);
	return SY_ECONFIG;
}

static const struct sy_config_mark no_mark = {0, 0};

static int check_tokenizer(const struct ctx *c, const struct row *r, struct sy_config_error *err)
{
	const struct sy_config_tokenizer *t = &c->cfg->router.tokenizer;
	if (t->kind == SY_TOKENIZER_HF)
		return SY_OK;
	if (strcmp(r->c.key, "path") == 0 && t->path != NULL)
		return refuse(c->cfg, err, t->mark, "router.tokenizer.path",
			      "only read with router.tokenizer.kind hf (--tokenizer hf); use "
			      "kind hf, or remove the path");

	if (strcmp(r->c.key, "chat_template_fallback") == 0 && c->cfg->router.chat_template_fallback)
		return refuse(c->cfg, err, no_mark, "router.chat_template_fallback",
			      "only read with router.tokenizer.kind hf (the other tokenizers "
			      "render no chat template); use kind hf, or remove it");
	return SY_OK;
}

static int check_sampling(const struct ctx *c, const struct row *r, struct sy_config_error *err)
{
	(void)r;
	const struct sy_config_router *rt = &c->cfg->router;
	if (rt->override_sampling_params != NULL || rt->sampling_param_conflict == SY_SAMPLING_REJECT)
		return SY_OK;
	return refuse(c->cfg, err, no_mark, "router.sampling_param_conflict",
		      "only read with router.override_sampling_params "
		      "(--override-sampling-params JSON); use an override, or remove it");
}

static int check_breaker(const struct ctx *c, const struct row *r, struct sy_config_error *err)
{
	const struct sy_cfg_field *f =
		sy_cfg_find(section_of("router"), r->c.key, strlen(r->c.key));
	if (c->cfg->router.cb_threshold > 0 || !sy_cfg_is_set(f, &c->cfg->router))
		return SY_OK;
	return refuse(c->cfg, err, no_mark, "router.cb_cool_down_secs",
		      "only read with the breaker on; use router.cb_threshold "
		      "(--cb-threshold N) to turn it on, or remove it");
}

static int check_retry(const struct ctx *c, const struct row *r, struct sy_config_error *err)
{
	const struct sy_cfg_field *f =
		sy_cfg_find(section_of("router"), r->c.key, strlen(r->c.key));
	if (c->cfg->router.retry_max_retries > 0 || !sy_cfg_is_set(f, &c->cfg->router))
		return SY_OK;
	char key[64];
	snprintf(key, sizeof(key), "router.%s", r->c.key);
	return refuse(c->cfg, err, no_mark, key,
		      "only read when retries are on; use router.retry_max_retries "
		      "(--retry-max-retries N, or --retry-once) to turn them on, or remove it");
}

static int check_queue(const struct ctx *c, const struct row *r, struct sy_config_error *err)
{
	const struct sy_cfg_field *f =
		sy_cfg_find(section_of("router"), r->c.key, strlen(r->c.key));
	if (c->cfg->router.queue_size > 0 || !sy_cfg_is_set(f, &c->cfg->router))
		return SY_OK;
	char key[64];
	snprintf(key, sizeof(key), "router.%s", r->c.key);
	return refuse(c->cfg, err, no_mark, key,
		      "only read by the router queue, which is off (router.queue_size 0); "
		      "use router.queue_size N (--queue-size N), or remove it");
}

static int check_headers(const struct ctx *c, const struct row *r, struct sy_config_error *err)
{
	const struct sy_cfg_field *f =
		sy_cfg_find(section_of("router"), r->c.key, strlen(r->c.key));
	bool session = strcmp(r->c.key, "session_id_header") == 0;
	if (!sy_cfg_is_set(f, &c->cfg->router) || (c->kinds & (session ? K_SESSION : K_STICKY)))
		return SY_OK;
	return refuse(c->cfg, err, no_mark,
		      session ? "router.session_id_header" : "router.routing_key_header",
		      session ? "only read by session_aware groups and no group runs "
				"session_aware; use --policy session_aware, or remove it"
			      : "only read by sticky groups and no group runs sticky; use "
				"--policy sticky, or remove it");
}

static int check_estimates(const struct ctx *c, const struct row *r, struct sy_config_error *err)
{
	const struct sy_config *cfg = c->cfg;
	bool ttft = strcmp(r->c.key, "ttft_ms") == 0;
	if ((ttft ? cfg->router.ttft_slo_policy : cfg->router.tps_slo_policy) != SY_SLO_DISABLED)
		return SY_OK;
	for (size_t i = 0; i < cfg->n_buckets; i++) {
		const struct sy_config_bucket *b = &cfg->buckets[i];
		if ((ttft ? b->ttft_ms : b->tokens_per_second) == 0)
			continue;
		char key[64];
		snprintf(key, sizeof(key), "buckets[%zu].%s", i, r->c.key);
		return refuse(cfg, err, b->mark, key,
			      ttft ? "only read with router.ttft_slo_policy best_effort or "
				     "slo_first; use one of them, or remove the estimate"
				   : "only read with router.tps_slo_policy best_effort or "
				     "slo_first; use one of them, or remove the estimate");
	}
	return SY_OK;
}

static int check_bootstrap(const struct ctx *c, const struct row *r, struct sy_config_error *err)
{
	(void)r;
	const struct sy_config *cfg = c->cfg;
	for (size_t i = 0; i < cfg->n_workers; i++) {
		const struct sy_config_worker *w = &cfg->workers[i];
		if (w->bootstrap_port == 0 || w->role == SY_ROLE_PREFILL)
			continue;
		char key[64];
		snprintf(key, sizeof(key), "workers[%zu].bootstrap_port", i);
		return refuse(cfg, err, w->mark, key,
			      "only read for prefill workers (decode workers get the prefill "
			      "worker's port); use role prefill, or remove it");
	}
	return SY_OK;
}

/* The KV-event endpoint keys of a worker are read only when its KV events
 * are on (statebus.kv_events, workers[].kv_events.subscribe). */
static int check_kv_endpoint(const struct ctx *c, const struct row *r,
			     struct sy_config_error *err)
{
	const struct sy_config *cfg = c->cfg;
	for (size_t i = 0; i < cfg->n_workers; i++) {
		const struct sy_config_kv_events *kv = &cfg->workers[i].kv_events;
		bool set = strcmp(r->c.key, "endpoint_host") == 0	   ? kv->endpoint_host != NULL
			   : strcmp(r->c.key, "endpoint_port_base") == 0 ? kv->endpoint_port_base != 0
			   : strcmp(r->c.key, "topic") == 0		   ? kv->topic != NULL
									   : kv->replay_port_base != 0;
		if (!set || sy_config_kv_events_on(cfg, kv))
			continue;
		char key[80], why[256];
		snprintf(key, sizeof(key), "workers[%zu].kv_events.%s", i, r->c.key);
		snprintf(why, sizeof(why),
			 "KV events are off for this worker (%s), so no subscription reads it; "
			 "remove it, or use workers[%zu].kv_events.subscribe: on",
			 kv->subscribe == SY_KV_SUBSCRIBE_OFF ? "its kv_events.subscribe off"
							      : "statebus.kv_events off",
			 i);
		return refuse(cfg, err, cfg->workers[i].mark, key, why);
	}
	return SY_OK;
}

/* Legacy --filter overloaded and --max-in-flight N come together (§11). */
static int check_filter(const struct ctx *c, const struct row *r, struct sy_config_error *err)
{
	const struct sy_config_policy *p = &c->cfg->policy;
	if (strcmp(r->c.key, "filter") == 0 && p->filter != NULL && p->max_in_flight == 0)
		return refuse(c->cfg, err, p->mark, "policy.filter",
			      "filter overloaded is the router-local in-flight cap and needs "
			      "max_in_flight (--max-in-flight N); or use max_inflight_requests "
			      "(--max-inflight-requests N)");
	if (strcmp(r->c.key, "max_in_flight") == 0 && p->max_in_flight > 0 && p->filter == NULL)
		return refuse(c->cfg, err, p->mark, "policy.max_in_flight",
			      "needs filter overloaded (--filter overloaded), or use "
			      "max_inflight_requests (--max-inflight-requests)");
	return SY_OK;
}

/* statebus.index off while something reads the index; on is always read
 * (the statebus builds it). */
static int check_index(const struct ctx *c, const struct row *r, struct sy_config_error *err)
{
	(void)r;
	const struct sy_config *cfg = c->cfg;
	if (cfg->statebus.index != SY_INDEX_OFF)
		return SY_OK;
	if (cfg->statebus.query_endpoint != NULL)
		return refuse(cfg, err, no_mark, "statebus.index",
			      "off, but statebus.query_endpoint answers remote prefix queries "
			      "from the index; use index auto or on, or remove the query endpoint");
	for (size_t i = 0; i < c->n; i++) {
		const struct eff_group *g = &c->g[i];
		if (g->kind != 3 || g->indexer)
			continue;
		char why[256];
		snprintf(why, sizeof(why),
			 "off, but %s runs cache_aware with the local prefix source, which "
			 "reads the index; use index auto or on, or cache_prefix_provider "
			 "indexer with kv_indexer_endpoint (a remote statebus)",
			 g->path);
		return refuse(cfg, err, no_mark, "statebus.index", why);
	}
	return SY_OK;
}

bool sy_config_index_needed(const struct sy_config *cfg, char *buf, size_t cap)
{
	struct ctx c; /* ~11 KiB */
	if (buf != NULL && cap > 0)
		buf[0] = '\0';
	if (cfg->statebus.query_endpoint != NULL) {
		if (buf != NULL && cap > 0)
			snprintf(buf, cap, "statebus.query_endpoint");
		return true;
	}
	collect(&c, cfg);
	for (size_t i = 0; i < c.n; i++) {
		if (c.g[i].kind != 3 || c.g[i].indexer)
			continue;
		if (buf != NULL && cap > 0)
			snprintf(buf, cap, "%s (cache_aware, local prefix source)", c.g[i].path);
		return true;
	}
	return false;
}

bool sy_config_policies_named(const struct sy_config *cfg)
{
	const struct sy_config_policy *p = &cfg->policy;
	return cfg->n_buckets > 0 || p->type != NULL || p->prefill_policy != NULL ||
	       p->decode_policy != NULL;
}

bool sy_config_index_on(const struct sy_config *cfg)
{
	if (cfg->statebus.index == SY_INDEX_ON)
		return true;
	if (cfg->statebus.index == SY_INDEX_OFF)
		return false;
	/* auto: a configuration that names no policy does not know the routers'
	 * (a statebus started from flags alone) — build it */
	return !sy_config_policies_named(cfg) || sy_config_index_needed(cfg, NULL, 0);
}

/* ---- the table ----------------------------------------------------------- */

#define ALWAYS(s, k, who) {.c = {s, k, SY_CONFIG_USE_ALWAYS, who}}
#define NOOP(s, k, why) {.c = {s, k, SY_CONFIG_USE_NOOP, why}}
#define CHECK(s, k, when, fn) {.c = {s, k, SY_CONFIG_USE_WHEN, when}, .check = fn}
#define POL(k, when, fn, own, top) \
	{.c = {"policy", k, SY_CONFIG_USE_WHEN, when}, .reads = fn, .own_msg = own, .top_msg = top}
#define TOP(k, when, fn, inh, top) \
	{.c = {"policy", k, SY_CONFIG_USE_WHEN, when}, .reads = fn, .top_only = true, \
	 .inherit = inh, .top_msg = top}
#define ADM(k) \
	{.c = {"admission", k, SY_CONFIG_USE_WHEN, "every group that does not set its own cap"}, \
	 .reads = reads_every, .top_msg = "every group sets its own cap, so the top-level one " \
					  "is read by none; use the groups' caps alone (remove it)"}

#define CACHE_OWN "only read by the cache_aware policy; this group runs %s: use type cache_aware, or remove it"
#define CACHE_TOP                                                                   \
	"only read by cache_aware groups that do not set their own, and there is "  \
	"none; use --policy cache_aware (or a group with policy type cache_aware), " \
	"or remove it"
#define CACHE(k) POL(k, "a cache_aware group", reads_cache, CACHE_OWN, CACHE_TOP)
#define GUARD(k)                                                                   \
	POL(k, "a cache_aware group", reads_cache,                                 \
	    "the pressure guard applies to cache_aware only (this group runs %s); use type " \
	    "cache_aware, or remove it", \
	    "the pressure guard applies to cache_aware only (no group runs cache_aware); use " \
	    "--policy cache_aware, or remove it")
#define INDEXER(k)                                                                   \
	POL(k, "a cache_aware group with cache_prefix_provider indexer", reads_indexer, \
	    "only read by a cache_aware group with cache_prefix_provider indexer (this " \
	    "group runs %s); use type cache_aware with cache_prefix_provider indexer, or remove it", \
	    "only read by a cache_aware group with cache_prefix_provider indexer; use "  \
	    "--cache-prefix-provider indexer with --kv-indexer-endpoint, or remove it")

static const struct row rows[] = {
	ALWAYS("config", "model_id", "the fleet (model of workers naming none) and prepare"),
	ALWAYS("config", "worker_urls", "sy_config_finish (plain workers of the fleet)"),
	ALWAYS("log", "level", "common/log.c in both daemons"),
	ALWAYS("log", "format", "common/log.c in both daemons"),
	ALWAYS("state", "shm_path", "the state-plane region of both daemons"),
	ALWAYS("state", "group", "the state-plane region's owner group (both daemons)"),
	ALWAYS("worker", "url", "the workers table (worker ID, upstream address)"),
	ALWAYS("worker", "role", "the workers table and the default buckets"),
	ALWAYS("worker", "model", "the workers table and the fleet's models"),
	ALWAYS("worker", "engine", "statebus discovery (sglang /server_info or vLLM)"),
	CHECK("worker", "bootstrap_port", "a prefill worker", check_bootstrap),
	CHECK("kv_events", "endpoint_host", "a worker with KV events on", check_kv_endpoint),
	CHECK("kv_events", "endpoint_port_base", "a worker with KV events on", check_kv_endpoint),
	CHECK("kv_events", "topic", "a worker with KV events on", check_kv_endpoint),
	ALWAYS("kv_events", "block_size", "statebus index (per-model block size)"),
	ALWAYS("kv_events", "dp_size", "statebus KV-event and LoadStat subscriptions"),
	CHECK("kv_events", "replay_port_base", "a worker with KV events on", check_kv_endpoint),
	ALWAYS("kv_events", "subscribe", "statebus KV-event subscription (per worker)"),
	ALWAYS("kv_events", "load_endpoint_port_base", "statebus LoadStat subscription"),
	ALWAYS("router", "host", "router listener"),
	ALWAYS("router", "port", "router listener"),
	ALWAYS("router", "processes", "router master (worker processes)"),
	ALWAYS("router", "request_timeout_secs", "router dispatch (the whole request)"),
	ALWAYS("router", "header_timeout_secs", "router dispatch (until the response head)"),
	ALWAYS("router", "pd_disaggregation", "the default buckets, /readiness"),
	ALWAYS("router", "prometheus_host", "router master (metrics listener)"),
	ALWAYS("router", "prometheus_port", "router master (metrics listener)"),
	ALWAYS("router", "metrics_names", "router /metrics"),
	ALWAYS("router", "cors_allowed_origins", "router CORS filter"),
	ALWAYS("router", "request_id_headers", "router request IDs"),
	ALWAYS("router", "shutdown_drain_secs", "router master (SIGTERM drain)"),
	ALWAYS("router", "max_body_bytes", "router request path (413)"),
	ALWAYS("router", "max_pending_body_bytes", "router edge (body budget, 503)"),
	ALWAYS("tokenizer", "kind", "router prepare (tokenizer)"),
	CHECK("tokenizer", "path", "router.tokenizer.kind hf", check_tokenizer),
	ALWAYS("tokenizer", "model_path", "router tokenizer (hf, when no tokenizer path)"),
	ALWAYS("tokenizer", "chat_template", "router tokenizer (hf chat template)"),
	CHECK("router", "chat_template_fallback", "router.tokenizer.kind hf", check_tokenizer),
	ALWAYS("router", "disable_input_ids_forwarding", "router prepare"),
	ALWAYS("router", "access_log", "router access log"),
	ALWAYS("router", "api_key", "router keys (inference and model routes)"),
	ALWAYS("router", "api_key_file", "router keys (read at start and reload)"),
	ALWAYS("router", "admin_api_key", "router admin API"),
	ALWAYS("router", "admin_api_key_file", "router admin API (read at start and reload)"),
	ALWAYS("router", "admin_host", "router admin listener (needs admin_port)"),
	ALWAYS("router", "admin_port", "router admin listener"),
	ALWAYS("router", "tls_cert_path", "router listener TLS"),
	ALWAYS("router", "tls_key_path", "router listener TLS"),
	ALWAYS("router", "stream_idle_timeout_secs", "router dispatch"),
	ALWAYS("router", "no_decision_headers", "router response headers"),
	ALWAYS("router", "cb_threshold", "router breaker"),
	CHECK("router", "cb_cool_down_secs", "router.cb_threshold > 0", check_breaker),
	ALWAYS("router", "retry_once", "router dispatch (retries)"),
	ALWAYS("router", "retry_max_retries", "router dispatch (retries)"),
	CHECK("router", "retry_initial_backoff_ms", "router.retry_max_retries > 0", check_retry),
	CHECK("router", "retry_max_backoff_ms", "router.retry_max_retries > 0", check_retry),
	CHECK("router", "retry_backoff_multiplier", "router.retry_max_retries > 0", check_retry),
	CHECK("router", "retry_jitter_factor", "router.retry_max_retries > 0", check_retry),
	ALWAYS("router", "disable_retries", "router dispatch (retries)"),
	ALWAYS("router", "upstream_pool_idle_timeout_secs", "router upstream socket pool"),
	ALWAYS("router", "stall_timeout_secs", "router stall detection"),
	ALWAYS("router", "health_unknown_grace_secs", "router master health prober (no statebus)"),
	ALWAYS("router", "override_sampling_params", "router body rewrite"),
	CHECK("router", "sampling_param_conflict", "router.override_sampling_params",
	      check_sampling),
	ALWAYS("router", "max_connections_per_worker", "router upstream socket pool"),
	CHECK("router", "session_id_header", "a session_aware group", check_headers),
	CHECK("router", "routing_key_header", "a sticky group", check_headers),
	ALWAYS("router", "ttft_slo_policy", "bucket resolver (x-sgl-ttft-slo-ms)"),
	ALWAYS("router", "tps_slo_policy", "bucket resolver (x-sgl-tps-slo)"),
	ALWAYS("router", "upstream_client", "router upstream"),
	ALWAYS("router", "queue_size", "router queue (admission exhaustion, concurrency cap)"),
	CHECK("router", "queue_timeout_secs", "router.queue_size > 0", check_queue),
	CHECK("router", "queue_timeout_header", "router.queue_size > 0", check_queue),
	ALWAYS("router", "max_concurrent_requests", "router concurrency cap (state plane)"),
	CHECK("router", "priority_header", "router.queue_size > 0", check_queue),
	CHECK("router", "tenant_header", "router.queue_size > 0", check_queue),
	CHECK("router", "tenant_max_priority", "router.queue_size > 0", check_queue),
	CHECK("router", "tenant_priorities", "router.queue_size > 0", check_queue),
	CHECK("router", "tenant_weights", "router.queue_size > 0", check_queue),
	ALWAYS("statebus", "control_endpoint", "statebus control socket, router admin"),
	ALWAYS("statebus", "query_endpoint", "statebus remote prefix queries"),
	ALWAYS("statebus", "health_interval_ms", "statebus / router master health prober"),
	ALWAYS("statebus", "health_timeout_ms", "statebus / router master health prober"),
	ALWAYS("statebus", "health_failure_threshold", "statebus / router master health prober"),
	ALWAYS("statebus", "health_success_threshold", "statebus / router master health prober"),
	ALWAYS("statebus", "health_endpoint", "statebus / router master health prober"),
	ALWAYS("statebus", "disable_health_check", "statebus / router master health prober"),
	ALWAYS("statebus", "discovery_timeout_ms", "statebus discovery"),
	ALWAYS("statebus", "discovery_attempts", "statebus discovery"),
	ALWAYS("statebus", "discovery_backoff_ms", "statebus discovery"),
	ALWAYS("statebus", "discovery_retry_ms", "statebus discovery"),
	ALWAYS("statebus", "replay_timeout_ms", "statebus replay"),
	ALWAYS("statebus", "heartbeat_interval_ms", "statebus heartbeat"),
	ALWAYS("statebus", "affinity_sweep_interval_secs", "statebus (or router master) sweep"),
	ALWAYS("statebus", "metrics_interval_ms", "statebus scrape of vLLM /metrics"),
	ALWAYS("statebus", "vllm_map_blocks", "statebus vLLM block-id map"),
	ALWAYS("statebus", "kv_events", "statebus KV-event subscriptions (approximate mode)"),
	ALWAYS("statebus", "prediction_ttl_ms", "statebus predicted index entries"),
	ALWAYS("statebus", "prediction_drain_ms", "statebus prediction drain"),
	ALWAYS("statebus", "prediction_capacity_tokens", "statebus predicted ownership bound"),
	CHECK("statebus", "index", "off: no cache_aware group with the local prefix source, "
	      "no statebus.query_endpoint", check_index),
	/* policy: per group */
	POL("type", "a group without its own type", reads_type, "",
	    "no group takes it: every group sets its own type, and prefill / decode groups "
	    "take prefill_policy / decode_policy; use those alone (remove it), or drop a "
	    "group's own type"),
	{.c = {"policy", "power_of_n_choices", SY_CONFIG_USE_WHEN,
	       "power_of_n, session_aware, sticky with fallback power_of_n"},
	 .reads = reads_n,
	 .own_msg = "only read by power_of_n, session_aware and sticky with fallback "
		    "power_of_n (this group runs %s); use type power_of_n, or remove it",
	 .two_msg = "power_of_two is power_of_n with N = 2; use type power_of_n with "
		    "power_of_n_choices",
	 .top_msg = "no group reads it: only power_of_n, session_aware and sticky with "
		    "fallback power_of_n do (power_of_two is power_of_n with N = 2); use "
		    "--policy power_of_n, or remove it"},
	TOP("prefill_policy", "a PD bucket's prefill group without its own type", reads_prefill,
	    "type",
	    "no PD bucket takes it (the fleet has no prefill workers, or every prefill group "
	    "sets its own type); use a prefill + decode fleet or bucket, or remove it"),
	TOP("decode_policy", "a PD bucket's decode group without its own type", reads_decode,
	    "type",
	    "no PD bucket takes it (the fleet has no decode workers, or every decode group "
	    "sets its own type); use a prefill + decode fleet or bucket, or remove it"),
	{.c = {"policy", "filter", SY_CONFIG_USE_WHEN, "with max_in_flight"}, .check = check_filter},
	{.c = {"policy", "max_in_flight", SY_CONFIG_USE_WHEN, "with filter overloaded"},
	 .check = check_filter},
	NOOP("policy", "chat_routing", "reorg is always the behaviour (reference §11)"),
	TOP("affinity_mode", "a session_aware group", reads_session, "",
	    "only read by session_aware groups (strict bindings) and no group runs "
	    "session_aware; use --policy session_aware, or remove it"),
	POL("sticky_fallback", "a sticky group", reads_sticky,
	    "only valid with policy sticky (this group runs %s); use type sticky, or remove it",
	    "no group runs policy sticky; use --policy sticky, or remove it"),
	POL("affinity_idle_timeout_secs", "a session_aware or sticky group", reads_affinity,
	    "only valid with policy session_aware or sticky (this group runs %s); use one of "
	    "them, or remove it",
	    "no group runs policy session_aware or sticky; use --policy session_aware or "
	    "sticky, or remove it"),
	POL("session_affinity_mode", "a session_aware group", reads_session,
	    "only read by session_aware (this group runs %s); use type session_aware, or remove it",
	    "only read by session_aware groups and no group runs session_aware; use "
	    "--policy session_aware, or remove it"),
	CACHE("cache_affinity_min_matched_tokens"),
	CACHE("cache_affinity_min_match_ratio"),
	CACHE("cache_candidate_min_workers"),
	CACHE("cache_candidate_ratio"),
	CACHE("cache_candidate_max_workers"),
	CACHE("cache_switch_margin_tokens"),
	CACHE("cache_predicted_weight"),
	CACHE("cache_predicted_window_ms"),
	CACHE("cache_predicted_half_life_ms"),
	CACHE("worker_queue_limit"),
	CACHE("saturation_queue_floor"),
	CACHE("min_load_choices"),
	GUARD("disable_pressure_guard"),
	GUARD("pressure_abs_threshold_tokens"),
	GUARD("pressure_abs_threshold_ms"),
	GUARD("pressure_rel_threshold"),
	CACHE("cache_prefix_provider"),
	INDEXER("kv_indexer_endpoint"),
	INDEXER("kv_indexer_timeout_ms"),
	INDEXER("kv_indexer_max_inflight"),
	ADM("max_running_requests"),
	ADM("max_waiting_requests"),
	ADM("max_kv_tokens"),
	ADM("max_pending_prefill_tokens"),
	ADM("max_inflight_requests"),
	ALWAYS("limits", "min", "bucket resolver"),
	ALWAYS("limits", "max", "bucket resolver"),
	ALWAYS("group", "worker_ids", "engine group membership"),
	ALWAYS("bucket", "id", "bucket resolver, x-switchyard-bucket"),
	ALWAYS("bucket", "rank", "bucket resolver"),
	ALWAYS("bucket", "max_context_tokens", "bucket resolver"),
	ALWAYS("bucket", "models", "per-model bucket resolver (sy_config_bucket_serves)"),
	CHECK("bucket", "ttft_ms", "router.ttft_slo_policy best_effort or slo_first",
	      check_estimates),
	CHECK("bucket", "tokens_per_second", "router.tps_slo_policy best_effort or slo_first",
	      check_estimates),
};

#define N_ROWS (sizeof(rows) / sizeof(rows[0]))

const struct sy_config_consumer *sy_config_consumer(size_t i)
{
	return i < N_ROWS ? &rows[i].c : NULL;
}

void sy_config_default_stages(const struct sy_config *cfg, bool *plain, bool *pd)
{
	/* Both kinds: the default buckets follow the roles in the workers
	 * table, configured or reported by the engines (generation.h); PD
	 * mode declares prefill + decode only. */
	*plain = !cfg->router.pd_disaggregation;
	*pd = true;
}

/* A policy / admission row over every group. */
static int check_policy_row(const struct ctx *c, const struct row *r, struct sy_config_error *err)
{
	const struct sy_config *cfg = c->cfg;
	const struct sy_cfg_field *f = policy_field(r->c.section, r->c.key);
	const struct sy_cfg_field *inh =
		r->inherit == NULL ? f : r->inherit[0] ? policy_field("policy", r->inherit) : NULL;
	bool adm = strcmp(r->c.section, "admission") == 0;
	char key[160];

	if (!r->top_only) {
		for (size_t i = 0; i < c->n; i++) {
			const struct eff_group *g = &c->g[i];
			if (g->own == NULL || !sy_cfg_is_set(f, policy_obj(r->c.section, g->own)) ||
			    r->reads(c, g, false))
				continue;
			snprintf(key, sizeof(key), "%.60s.policy.%s%s", g->path, adm ? "admission." : "",
				 r->c.key);
			sy_cfg_error(err, SY_ECONFIG, cfg->source, g->mark, key,
				     g->kind == KIND_TWO && r->two_msg ? r->two_msg : r->own_msg,
				     kind_name(g->kind));
			return SY_ECONFIG;
		}
	}
	if (!sy_cfg_is_set(f, policy_obj(r->c.section, &cfg->policy)))
		return SY_OK;
	for (size_t i = 0; i < c->n; i++) {
		const struct eff_group *g = &c->g[i];
		bool inherits = inh == NULL || g->own == NULL ||
				!sy_cfg_is_set(inh, policy_obj(r->inherit ? "policy" : r->c.section,
							       g->own));
		if (inherits && r->reads(c, g, true))
			return SY_OK;
	}
	snprintf(key, sizeof(key), "policy.%s%s", adm ? "admission." : "", r->c.key);
	return refuse(cfg, err, cfg->policy.mark, key, r->top_msg);
}

int sy_config_check_consumed(const struct sy_config *cfg, struct sy_config_error *err)
{
	struct ctx c; /* ~11 KiB */
	int rc;

	collect(&c, cfg);
	for (size_t i = 0; i < N_ROWS; i++) {
		const struct row *r = &rows[i];
		if (r->c.use != SY_CONFIG_USE_WHEN)
			continue;
		rc = r->reads != NULL ? check_policy_row(&c, r, err) : r->check(&c, r, err);
		if (rc != SY_OK)
			return rc;
	}
	return SY_OK;
}
