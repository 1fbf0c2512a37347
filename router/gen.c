/* gen.c — configuration generations (gen.h): build from a finished
 * sy_config, reference counting, and freeing.
 *
 * Policy resolution for each group (reference/policy-defaults.md §1, §6,
 * §11): a key the group's policy block leaves out comes from the top-level
 * `policy`; the type defaults by stage — plain: policy.type; prefill:
 * policy.prefill_policy, else policy.type; decode: policy.decode_policy —
 * and finally to power_of_n (the reorg default, also for decode). N comes
 * from power_of_n_choices (default 2; power_of_two forces 2). Admission caps
 * are inherited one by one. Kinds selection cannot run yet (issue 6) stop
 * the build with a message naming the key.
 */
#include "router/gen.h"
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
	free(g);
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

/* Builds one group. `cg` NULL: a default group (all workers, top policy). */
static int build_group(struct engine_group *g, enum engine_stage stage,
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
	if (rc != SY_OK) {
		sy_cfg_error(err, SY_ECONFIG, cfg->source, mark, key, "%s", why);
		return SY_ECONFIG;
	}

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

static int build_bucket(struct bucket *b, size_t i, const struct sy_config *cfg,
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
	b->pd = cb->groups.plain.mark.line == 0;
	if (!b->pd) {
		snprintf(path, sizeof(path), "buckets[%zu].groups.plain", i);
		return build_group(&b->plain, STAGE_PLAIN, &cb->groups.plain, cfg, path, err);
	}
	snprintf(path, sizeof(path), "buckets[%zu].groups.prefill", i);
	if ((rc = build_group(&b->prefill, STAGE_PREFILL, &cb->groups.prefill, cfg, path, err)) !=
	    SY_OK)
		return rc;
	snprintf(path, sizeof(path), "buckets[%zu].groups.decode", i);
	return build_group(&b->decode, STAGE_DECODE, &cb->groups.decode, cfg, path, err);
}

/* Catch-all buckets from the flags (gen.h "Default buckets"). */
static int build_defaults(struct router_gen *g, const struct sy_config *cfg,
			  struct sy_config_error *err)
{
	bool plain = cfg->n_workers == 0, pd = false;
	int rc;

	for (size_t i = 0; i < cfg->n_workers; i++) {
		if (cfg->workers[i].role == SY_ROLE_PLAIN)
			plain = true;
		else
			pd = true;
	}
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
		if (!b->pd) {
			rc = build_group(&b->plain, STAGE_PLAIN, NULL, cfg, "policy", err);
		} else {
			rc = build_group(&b->prefill, STAGE_PREFILL, NULL, cfg, "policy", err);
			if (rc == SY_OK)
				rc = build_group(&b->decode, STAGE_DECODE, NULL, cfg, "policy", err);
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

	if ((g->default_model = strdup(cfg->model_id)) == NULL ||
	    (g->session_header = strdup(cfg->router.session_id_header)) == NULL ||
	    (g->routing_header = strdup(cfg->router.routing_key_header)) == NULL)
		return SY_ENOMEM;
	rc = sy_tokenizer_open_ex(sy_tokenizer_kind_name(cfg->router.tokenizer.kind),
				  cfg->router.tokenizer.path,
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
	if ((rc = fleet_add_static_model(&g->fleet, cfg->model_id)) != SY_OK)
		return rc;
	for (size_t i = 0; i < cfg->n_workers; i++)
		if (cfg->workers[i].model != NULL &&
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
			if ((rc = build_bucket(&g->buckets[i], i, cfg, err)) != SY_OK)
				return rc;
		}
	}
	if ((g->order = calloc(g->n_buckets ? g->n_buckets : 1, sizeof(*g->order))) == NULL)
		return SY_ENOMEM;

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
	return SY_OK;
}

int router_gen_build(const struct sy_config *cfg, uint64_t number, struct router_gen **out,
		     struct sy_config_error *err)
{
	static const struct sy_config_mark none = {0, 0};
	struct router_gen *g = calloc(1, sizeof(*g));

	*out = NULL;
	if (err != NULL)
		memset(err, 0, sizeof(*err));
	if (g == NULL) {
		sy_cfg_error(err, SY_ENOMEM, NULL, none, NULL, "out of memory");
		return SY_ENOMEM;
	}
	g->refs = 1;
	g->number = number;
	int rc = build(g, cfg, err);
	if (rc != SY_OK) {
		if (rc == SY_ENOMEM)
			sy_cfg_error(err, SY_ENOMEM, NULL, none, NULL, "out of memory");
		gen_free(g);
		return rc;
	}
	*out = g;
	return SY_OK;
}
