/* generation.c — configuration generations (generation.h): build from a finished
 * sy_config, reference counting, and freeing.
 *
 * Policy resolution for each group (reference/policy-defaults.md §1, §6,
 * §11): a key the group's policy block leaves out comes from the top-level
 * `policy`; the type defaults by stage — plain: policy.type; prefill:
 * policy.prefill_policy, else policy.type; decode: policy.decode_policy —
 * and finally to power_of_n (the reorg default, also for decode). N comes
 * from power_of_n_choices (default 2; power_of_two forces 2). Admission caps
 * are inherited one by one. session_aware and sticky also take
 * sticky_fallback / affinity_idle_timeout_secs (inherited the same way).
 * A key no group reads was refused by sy_config_finish
 * (sy_config_check_consumed); kinds selection cannot run stop the build
 * with a message naming the key.
 */
#include "router/core/generation.h"
#include "router/policies/cache/cache_aware.h"
#include "common/config.h"
#include "common/config_schema.h"
#include "common/errors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_N_CHOICES 2

static void group_free(struct engine_group *g)
{
	for (size_t i = 0; i < g->n_worker_ids; i++)
		free(g->worker_ids[i]);
	free(g->worker_ids);
	free(g->member_bits);
	policy_destroy(&g->policy);
	memset(g, 0, sizeof(*g));
}

static void gen_free(struct router_gen *g)
{
	for (size_t i = 0; i < g->n_buckets; i++) {
		struct bucket *b = &g->buckets[i];
		free(b->id);
		for (size_t k = 0; k < b->n_models; k++)
			free(b->models[k]);
		free(b->models);
		group_free(&b->plain);
		group_free(&b->prefill);
		group_free(&b->decode);
	}
	free(g->buckets);
	sy_tokenizer_close(g->tokenizer);
	free(g->default_model);
	free(g->session_header);
	free(g->routing_header);
	fleet_free(&g->fleet);
	free(g->scratch[0]);
	free(g->scratch[1]);
	free(g->order);
	prefix_memo_free(&g->memo);
	for (size_t i = 0; i < g->n_sources; i++)
		cache_source_close(&g->sources[i]);
	digest_memo_destroy(g->digests);
	sampling_override_free(g->sampling_override);
	sy_config_free(&g->cfg);
	free(g);
}

void router_gen_cache_totals(const struct router_gen *g, struct router_cache_totals *out)
{
	memset(out, 0, sizeof(*out));
	if (!g->has_cache_policy)
		return;
	for (size_t i = 0; i < g->n_buckets; i++) {
		const struct bucket *b = &g->buckets[i];
		const struct engine_group *gs[3] = {&b->plain, &b->prefill, &b->decode};
		for (int k = 0; k < 3; k++) {
			const struct cache_aware_stats *st;
			if (gs[k]->policy.ops == NULL ||
			    (st = cache_aware_get_stats(&gs[k]->policy)) == NULL)
				continue;
			for (int d = 0; d < CACHE_AWARE_DECISIONS_; d++)
				out->decisions[d] += st->decisions[d];
			out->admission_evaluated += st->admission_evaluated;
			out->admission_rejected += st->admission_rejected;
			out->guard_compared += st->guard_compared;
			out->guard_override += st->guard_override;
			for (int m = 0; m < CACHE_MONITOR_SOURCES_; m++)
				out->monitor[m] += st->monitor[m];
			for (int h = 0; h <= CACHE_DIVERTED_EDGES; h++)
				out->diverted[h] += st->diverted[h];
			out->diverted_sum += st->diverted_sum;
		}
	}
	for (size_t i = 0; i < g->n_sources; i++) {
		const struct cache_source *s = &g->sources[i];
		int k = s->kind == CACHE_SOURCE_LOCAL ? 0 : 1;
		out->found[k] += s->stats.found;
		out->no_chain[k] += s->stats.no_chain;
		out->rejected[k] += s->stats.rejected;
		for (int w = 0; w <= PREFIX_WHY_TOO_LARGE; w++)
			out->unavailable[k][w] += s->stats.unavailable[w];
	}
	if (g->digests != NULL) {
		struct digest_memo_stats ds;
		digest_memo_get_stats(g->digests, &ds);
		out->digest_hits = ds.hits;
		out->digest_misses = ds.misses;
	}
}

bool router_gen_cache_delta(struct router_gen *g, struct router_cache_totals *delta)
{
	if (!g->has_cache_policy)
		return false; /* the totals stay 0: nothing moved */
	struct router_cache_totals now;
	router_gen_cache_totals(g, &now);
	uint64_t *d = (uint64_t *)(void *)delta;
	const uint64_t *n = (const uint64_t *)(const void *)&now;
	const uint64_t *e = (const uint64_t *)(const void *)&g->exported;
	bool moved = false;
	for (size_t i = 0; i < sizeof(now) / sizeof(uint64_t); i++) {
		d[i] = n[i] - e[i];
		moved |= d[i] != 0;
	}
	g->exported = now;
	return moved;
}

struct router_gen *router_gen_ref(struct router_gen *g)
{
	__atomic_add_fetch(&g->refs, 1, __ATOMIC_RELAXED);
	return g;
}

void router_gen_unref(struct router_gen *g)
{
	if (g != NULL && __atomic_sub_fetch(&g->refs, 1, __ATOMIC_ACQ_REL) == 0)
		gen_free(g);
}

void router_gen_set_fleet_refresh(struct router_gen *g, uint64_t refresh_ns)
{
	g->fleet.refresh_ns = refresh_ns;
	g->fleet.refreshed_ns = 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int64_t cap_of(int64_t group, int64_t top) { return group >= 0 ? group : top; }

/* Affinity options of a session_aware / sticky group (policy.h
 * policy_set_affinity), inherited key by key from the top-level policy
 * (the same keys on other groups are refused by sy_config_check_consumed). */
static int build_affinity(struct engine_group *g, enum policy_kind kind, uint32_t n,
			  const struct sy_config_policy *own, const struct sy_config *cfg,
			  const char *path, struct sy_config_mark mark, struct sy_config_error *err)
{
	const struct sy_config_policy *top = &cfg->policy;
	bool affinity = kind == POLICY_SESSION_AWARE || kind == POLICY_STICKY;
	char keybuf[192];

	if (!affinity)
		return SY_OK;
	const char *fb = own != NULL && own->sticky_fallback ? own->sticky_fallback
							     : top->sticky_fallback;
	int secs = own != NULL && own->affinity_idle_timeout_secs > 0
			   ? own->affinity_idle_timeout_secs
			   : top->affinity_idle_timeout_secs;
	enum policy_kind fk = POLICY_ROUND_ROBIN;
	uint32_t fn = n;
	if (fb != NULL && policy_kind_parse(fb, &fk, &fn) != SY_OK)
		fk = POLICY_KIND_INVALID_;
	const char *why = "invalid affinity options";
	int rc = policy_set_affinity(&g->policy, fk, fn, secs > 0 ? (uint32_t)secs * 1000u : 0, &why);
	if (rc == SY_ENOMEM)
		return rc;
	if (rc != SY_OK) {
		snprintf(keybuf, sizeof(keybuf), "%.150s.policy.sticky_fallback", path);
		sy_cfg_error(err, SY_ECONFIG, cfg->source, mark, keybuf, "%s", why);
		return SY_ECONFIG;
	}
	return SY_OK;
}

static int64_t pick_i(int64_t own, int64_t top, int64_t dflt)
{
	return own >= 0 ? own : top >= 0 ? top : dflt;
}

static double pick_d(double own, double top, double dflt)
{
	return own >= 0 ? own : top >= 0 ? top : dflt;
}

/* The source of a cache_aware group: local, or the indexer at its endpoint
 * (one source per distinct endpoint). */
static int cache_source_of(struct router_gen *g, const struct sy_config_policy *o,
			   const struct sy_config_policy *top, struct cache_source **out)
{
	const char *prov = o->cache_prefix_provider ? o->cache_prefix_provider
						   : top->cache_prefix_provider;
	const char *ep = o->kv_indexer_endpoint ? o->kv_indexer_endpoint : top->kv_indexer_endpoint;
	if (g->n_sources == 0) {
		cache_source_init_local(&g->sources[0]);
		g->n_sources = 1;
	}
	if (prov == NULL || strcmp(prov, "indexer") != 0 || ep == NULL) {
		*out = &g->sources[0];
		return SY_OK;
	}
	uint32_t tmo = (uint32_t)pick_i(o->kv_indexer_timeout_ms, top->kv_indexer_timeout_ms,
					CACHE_SOURCE_DEFAULT_TIMEOUT_MS);
	uint32_t infl = (uint32_t)pick_i(o->kv_indexer_max_inflight, top->kv_indexer_max_inflight,
					 CACHE_SOURCE_DEFAULT_MAX_INFLIGHT);
	for (size_t i = 1; i < g->n_sources; i++) {
		struct cache_source *s = &g->sources[i];
		if (strcmp(s->endpoint, ep) == 0 && s->timeout_ms == tmo && s->max_inflight == infl) {
			*out = s;
			return SY_OK;
		}
	}
	if (g->n_sources == PREFIX_MEMO_MAX_SOURCES)
		return SY_ENOSPC;
	int rc = cache_source_init_indexer(&g->sources[g->n_sources], (uint32_t)g->n_sources, ep,
					   tmo, infl);
	if (rc != SY_OK)
		return rc;
	*out = &g->sources[g->n_sources++];
	return SY_OK;
}

/* Parameters of a cache_aware group: its own keys, else the top level's,
 * else the reference defaults. */
static int configure_cache_aware(struct router_gen *g, struct policy *p,
				 const struct sy_config_policy *own,
				 const struct sy_config_policy *top, const char **why)
{
	const struct sy_config_policy *o = own != NULL ? own : top;
	struct cache_aware_params cp;
	cache_aware_params_default(&cp);
	cp.min_matched_tokens = (uint64_t)pick_i(o->cache_affinity_min_matched_tokens,
						 top->cache_affinity_min_matched_tokens,
						 CACHE_AWARE_MIN_MATCHED_TOKENS);
	cp.min_match_ratio =
		pick_d(o->cache_affinity_min_match_ratio, top->cache_affinity_min_match_ratio, -1);
	cp.candidate_min_workers = (uint32_t)pick_i(o->cache_candidate_min_workers,
						    top->cache_candidate_min_workers,
						    CACHE_AWARE_CANDIDATE_MIN_WORKERS);
	cp.candidate_ratio = pick_d(o->cache_candidate_ratio, top->cache_candidate_ratio,
				    CACHE_AWARE_CANDIDATE_RATIO);
	cp.candidate_max_workers = (uint32_t)pick_i(o->cache_candidate_max_workers,
						    top->cache_candidate_max_workers,
						    CACHE_AWARE_CANDIDATE_MAX_WORKERS);
	cp.switch_margin_tokens = (uint64_t)pick_i(o->cache_switch_margin_tokens,
						   top->cache_switch_margin_tokens,
						   CACHE_AWARE_SWITCH_MARGIN_TOKENS);
	cp.worker_queue_limit = pick_i(o->worker_queue_limit, top->worker_queue_limit, -1);
	cp.saturation_queue_floor =
		pick_i(o->saturation_queue_floor, top->saturation_queue_floor, -1);
	cp.min_load_choices = (uint32_t)pick_i(o->min_load_choices, top->min_load_choices,
					       CACHE_AWARE_MIN_LOAD_CHOICES);
	cp.pressure_guard = !(o->disable_pressure_guard || top->disable_pressure_guard);
	cp.pressure_abs_tokens = (uint64_t)pick_i(o->pressure_abs_threshold_tokens,
						  top->pressure_abs_threshold_tokens,
						  CACHE_AWARE_PRESSURE_ABS_TOKENS);
	cp.pressure_abs_ms = pick_d(o->pressure_abs_threshold_ms, top->pressure_abs_threshold_ms, -1);
	cp.pressure_rel = pick_d(o->pressure_rel_threshold, top->pressure_rel_threshold,
				 CACHE_AWARE_PRESSURE_REL);
	cp.predicted_weight = pick_d(o->cache_predicted_weight, top->cache_predicted_weight,
				     CACHE_AWARE_PREDICTED_WEIGHT);
	cp.predicted_window_ms = (uint32_t)pick_i(o->cache_predicted_window_ms,
						  top->cache_predicted_window_ms,
						  CACHE_AWARE_PREDICTED_WINDOW_MS);
	cp.predicted_half_life_ms = (uint32_t)pick_i(o->cache_predicted_half_life_ms,
						     top->cache_predicted_half_life_ms,
						     CACHE_AWARE_PREDICTED_HALF_LIFE_MS);

	struct cache_source *src = NULL;
	int rc = cache_source_of(g, o, top, &src);
	if (rc != SY_OK) {
		*why = rc == SY_ENOSPC ? "too many distinct kv_indexer_endpoint sources"
				       : "cannot set up the prefix source";
		return rc == SY_ENOMEM ? SY_ENOMEM : SY_ECONFIG;
	}
	if (cache_aware_configure(p, &cp, src) != SY_OK) {
		*why = "cache_aware parameters out of their constraints";
		return SY_ECONFIG;
	}
	if (g->digests == NULL && (rc = digest_memo_create(0, &g->digests)) != SY_OK)
		return SY_ENOMEM;
	if (!g->has_cache_policy) {
		prefix_memo_init(&g->memo, g->digests);
		g->has_cache_policy = true;
	}
	return SY_OK;
}

/* Builds one group. `cg` NULL: a default group (all workers, top policy). */
static int build_group(struct router_gen *gen, struct engine_group *g, enum engine_stage stage,
		       const struct sy_config_group *cg, const struct sy_config *cfg,
		       const char *path, struct sy_config_error *err)
{
	const struct sy_config_policy *top = &cfg->policy;
	const struct sy_config_policy *own = cg != NULL ? &cg->policy : NULL;
	const char *type = NULL, *key = NULL;
	struct sy_config_mark mark = top->mark;
	char keybuf[160];

	g->stage = stage;
	if (own != NULL && own->type != NULL) {
		type = own->type;
		snprintf(keybuf, sizeof(keybuf), "%s.policy.type", path);
		key = keybuf;
		mark = own->mark.line ? own->mark : cg->mark;
	} else if (stage == STAGE_DECODE) {
		type = top->decode_policy, key = "policy.decode_policy";
	} else if (stage == STAGE_PREFILL && top->prefill_policy != NULL) {
		type = top->prefill_policy, key = "policy.prefill_policy";
	}
	if (type == NULL && stage != STAGE_DECODE)
		type = top->type, key = "policy.type";
	if (type == NULL)
		type = "power_of_n", key = "policy.type";

	enum policy_kind kind;
	uint32_t n = (uint32_t)(own != NULL && own->power_of_n_choices > 0
					? own->power_of_n_choices
				: top->power_of_n_choices > 0 ? top->power_of_n_choices
							       : DEFAULT_N_CHOICES);
	if (policy_kind_parse(type, &kind, &n) != SY_OK) {
		sy_cfg_error(err, SY_ECONFIG, cfg->source, mark, key, "unknown policy %s", type);
		return SY_ECONFIG;
	}
	struct admission_limits lim;
	const struct sy_config_admission *ta = &top->admission;
	const struct sy_config_admission *oa = own != NULL ? &own->admission : ta;
	lim.max_running_requests = cap_of(oa->max_running_requests, ta->max_running_requests);
	lim.max_waiting_requests = cap_of(oa->max_waiting_requests, ta->max_waiting_requests);
	lim.max_kv_tokens = cap_of(oa->max_kv_tokens, ta->max_kv_tokens);
	lim.max_pending_prefill_tokens =
		cap_of(oa->max_pending_prefill_tokens, ta->max_pending_prefill_tokens);
	lim.max_inflight_requests = cap_of(oa->max_inflight_requests, ta->max_inflight_requests);

	const char *why = "invalid policy";
	int rc = policy_init(&g->policy, kind, stage, &lim, n, &why);
	if (rc == SY_OK && kind == POLICY_CACHE_AWARE)
		rc = configure_cache_aware(gen, &g->policy, own, top, &why);
	if (rc == SY_ENOMEM)
		return rc;
	if (rc != SY_OK) {
		sy_cfg_error(err, rc == SY_ENOMEM ? SY_ENOMEM : SY_ECONFIG, cfg->source, mark, key,
			     "%s", why);
		return rc == SY_ENOMEM ? SY_ENOMEM : SY_ECONFIG;
	}
	if ((rc = build_affinity(g, kind, n, own, cfg, path, mark, err)) != SY_OK)
		return rc;

	g->all_workers = cg == NULL || !cg->worker_ids_given;
	if (!g->all_workers && cg->n_worker_ids > 0) {
		g->worker_ids = calloc(cg->n_worker_ids, sizeof(char *));
		if (g->worker_ids == NULL)
			return SY_ENOMEM;
		for (size_t i = 0; i < cg->n_worker_ids; i++) {
			if ((g->worker_ids[i] = strdup(cg->worker_ids[i])) == NULL)
				return SY_ENOMEM;
			g->n_worker_ids++;
		}
		qsort(g->worker_ids, g->n_worker_ids, sizeof(char *), cmp_str);
	}
	return SY_OK;
}

static uint64_t bound(int64_t v) { return v < 0 ? BUCKET_UNBOUNDED : (uint64_t)v; }

/* Adds `model` to b->models unless it is there. */
static int add_model(struct bucket *b, const char *model)
{
	for (size_t k = 0; k < b->n_models; k++)
		if (strcmp(b->models[k], model) == 0)
			return SY_OK;
	char **grown = realloc(b->models, (b->n_models + 1) * sizeof(char *));
	if (grown == NULL)
		return SY_ENOMEM;
	b->models = grown;
	if ((b->models[b->n_models] = strdup(model)) == NULL)
		return SY_ENOMEM;
	b->n_models++;
	return SY_OK;
}

static int build_bucket(struct router_gen *g, struct bucket *b, size_t i, const struct sy_config *cfg,
			struct sy_config_error *err)
{
	const struct sy_config_bucket *cb = &cfg->buckets[i];
	char path[96];
	int rc;

	if ((b->id = strdup(cb->id)) == NULL)
		return SY_ENOMEM;
	b->rank = (uint32_t)cb->rank;
	b->min_input = (uint64_t)cb->limits.min;
	b->max_input = bound(cb->limits.max);
	b->max_context = bound(cb->max_context_tokens);
	b->ttft_ms = cb->ttft_ms;
	b->tokens_per_second = cb->tokens_per_second;
	for (size_t k = 0; k < cb->n_models; k++)
		if ((rc = add_model(b, cb->models[k])) != SY_OK)
			return rc;
	b->pd = cb->groups.plain.mark.line == 0;
	if (!b->pd) {
		snprintf(path, sizeof(path), "buckets[%zu].groups.plain", i);
		return build_group(g, &b->plain, STAGE_PLAIN, &cb->groups.plain, cfg, path, err);
	}
	snprintf(path, sizeof(path), "buckets[%zu].groups.prefill", i);
	if ((rc = build_group(g, &b->prefill, STAGE_PREFILL, &cb->groups.prefill, cfg, path, err)) !=
	    SY_OK)
		return rc;
	snprintf(path, sizeof(path), "buckets[%zu].groups.decode", i);
	return build_group(g, &b->decode, STAGE_DECODE, &cb->groups.decode, cfg, path, err);
}

/* Catch-all buckets from the flags (generation.h "Default buckets"). */
static int build_defaults(struct router_gen *g, const struct sy_config *cfg,
			  struct sy_config_error *err)
{
	/* Roles reported by the engines can add either kind at run time: both
	 * are built and follow the fleet, unless PD mode is declared
	 * (sy_config_default_stages). */
	bool follow = !cfg->router.pd_disaggregation, plain, pd;
	int rc;

	sy_config_default_stages(cfg, &plain, &pd);

	g->buckets = calloc(2, sizeof(struct bucket));
	if (g->buckets == NULL)
		return SY_ENOMEM;
	const char *ids[2] = {"default", "default-pd"};
	for (int k = 0; k < 2; k++) {
		if (k == 0 ? !plain : !pd)
			continue;
		struct bucket *b = &g->buckets[g->n_buckets++];
		if ((b->id = strdup(ids[k])) == NULL)
			return SY_ENOMEM;
		b->max_input = BUCKET_UNBOUNDED;
		b->max_context = BUCKET_UNBOUNDED;
		b->pd = k == 1;
		b->follows_fleet = follow;
		if (!b->pd) {
			rc = build_group(g, &b->plain, STAGE_PLAIN, NULL, cfg, "policy", err);
		} else {
			rc = build_group(g, &b->prefill, STAGE_PREFILL, NULL, cfg, "policy", err);
			if (rc == SY_OK)
				rc = build_group(g, &b->decode, STAGE_DECODE, NULL, cfg, "policy", err);
		}
		if (rc != SY_OK)
			return rc;
	}
	return SY_OK;
}

static int build(struct router_gen *g, const struct sy_config *cfg, struct sy_config_error *err)
{
	char why[256] = "";
	int rc;

	g->default_model_implicit = strcmp(cfg->model_id, SY_CONFIG_DEFAULT_MODEL_ID) == 0;
	if ((g->default_model = strdup(cfg->model_id)) == NULL ||
	    (g->session_header = strdup(cfg->router.session_id_header)) == NULL ||
	    (g->routing_header = strdup(cfg->router.routing_key_header)) == NULL)
		return SY_ENOMEM;
	rc = sy_tokenizer_open_files(sy_tokenizer_kind_name(cfg->router.tokenizer.kind),
				  cfg->router.tokenizer.path, cfg->router.tokenizer.chat_template,
				  cfg->router.chat_template_fallback
					  ? SY_TOKENIZER_CHAT_TEMPLATE_FALLBACK
					  : 0,
				  &g->tokenizer, why, sizeof(why));
	if (rc != SY_OK) {
		sy_cfg_error(err, rc, cfg->source, cfg->router.tokenizer.mark,
			     "router.tokenizer.kind", "%s", why);
		return rc;
	}

	fleet_init(&g->fleet, FLEET_DEFAULT_REFRESH_NS);
	/* Served even before a worker registers: the models the configuration
	 * names (not the built-in model_id, which engines rename). */
	if (!g->default_model_implicit &&
	    (rc = fleet_add_static_model(&g->fleet, cfg->model_id)) != SY_OK)
		return rc;
	for (size_t i = 0; i < cfg->n_workers; i++)
		if (cfg->workers[i].model != NULL && !cfg->workers[i].model_default &&
		    (rc = fleet_add_static_model(&g->fleet, cfg->workers[i].model)) != SY_OK)
			return rc;

	if (cfg->n_buckets == 0) {
		if ((rc = build_defaults(g, cfg, err)) != SY_OK)
			return rc;
	} else {
		g->buckets = calloc(cfg->n_buckets, sizeof(struct bucket));
		if (g->buckets == NULL)
			return SY_ENOMEM;
		for (size_t i = 0; i < cfg->n_buckets; i++) {
			g->n_buckets++;
			if ((rc = build_bucket(g, &g->buckets[i], i, cfg, err)) != SY_OK)
				return rc;
		}
	}
	if ((g->order = calloc(g->n_buckets ? g->n_buckets : 1, sizeof(*g->order))) == NULL)
		return SY_ENOMEM;
	for (size_t i = 0; i < g->n_buckets; i++) {
		struct bucket *b = &g->buckets[i];
		if (b->pd) {
			policy_set_rotation(&b->prefill.policy, b->id, STAGE_PREFILL);
			policy_set_rotation(&b->decode.policy, b->id, STAGE_DECODE);
		} else {
			policy_set_rotation(&b->plain.policy, b->id, STAGE_PLAIN);
		}
	}

	g->resolver.buckets = g->buckets;
	g->resolver.n = g->n_buckets;
	g->resolver.ttft_policy = (enum slo_policy)cfg->router.ttft_slo_policy;
	g->resolver.tps_policy = (enum slo_policy)cfg->router.tps_slo_policy;

	g->prepare.tokenizer = g->tokenizer;
	g->prepare.forward_input_ids = router_prepare_can_forward(
		g->tokenizer, cfg->router.disable_input_ids_forwarding);
	g->prepare.default_model = g->default_model;
	g->prepare.session_header = g->session_header;
	g->prepare.routing_header = g->routing_header;
	g->prepare.read_ttft_slo = g->resolver.ttft_policy != SLO_DISABLED;
	g->prepare.read_tps_slo = g->resolver.tps_policy != SLO_DISABLED;
	g->prepare.sampling = g->sampling_override;
	return SY_OK;
}

/* router.override_sampling_params (a JSON object text) → g->sampling_override. */
static int parse_sampling_override(struct router_gen *g, struct sy_config_error *err)
{
	static const struct sy_config_mark none = {0, 0};
	char why[256] = "";
	int rc = sampling_override_parse(g->cfg.router.override_sampling_params,
					 g->cfg.router.sampling_param_conflict == SY_SAMPLING_REJECT,
					 &g->sampling_override, why, sizeof(why));
	if (rc == SY_ECONFIG)
		sy_cfg_error(err, SY_ECONFIG, NULL, none, "router.override_sampling_params", "%s",
			     why);
	return rc;
}

int router_gen_build(struct sy_config *cfg, uint64_t number, struct router_gen **out,
		     struct sy_config_error *err)
{
	static const struct sy_config_mark none = {0, 0};
	struct router_gen *g = calloc(1, sizeof(*g));

	*out = NULL;
	if (err != NULL)
		memset(err, 0, sizeof(*err));
	if (g == NULL) {
		sy_config_free(cfg);
		sy_cfg_error(err, SY_ENOMEM, NULL, none, NULL, "out of memory");
		return SY_ENOMEM;
	}
	g->refs = 1;
	g->number = number;
	g->cfg = *cfg;
	memset(cfg, 0, sizeof(*cfg));
	int rc = parse_sampling_override(g, err);
	if (rc == SY_OK)
		rc = build(g, &g->cfg, err);
	if (rc != SY_OK) {
		if (rc == SY_ENOMEM)
			sy_cfg_error(err, SY_ENOMEM, NULL, none, NULL, "out of memory");
		gen_free(g);
		return rc;
	}
	*out = g;
	return SY_OK;
}

uint64_t router_gen_cb_cool_down_ns(const struct router_gen *g)
{
	return g->cfg.router.cb_threshold > 0
		       ? (uint64_t)g->cfg.router.cb_cool_down_secs * UINT64_C(1000000000)
		       : 0;
}
