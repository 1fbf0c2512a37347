/* config_models.c — per-model buckets and the kind of each model
 * (reference/policy-defaults.md §6: the seed installs one bucket resolver
 * per model, and its registry rejects plain and PD engines in one model).
 *
 * A bucket with `models: [NAME...]` serves those models; a bucket without
 * serves every model that no bucket names. A model is served plain or
 * prefill + decode, never both: its static workers are all plain or all
 * prefill/decode, and the buckets that serve it are of one kind.
 * sy_config_check_models() refuses a configuration that breaks this; the
 * statebus refuses a discovered worker whose role breaks it
 * (statebus/daemon/fleet.c).
 */
#include "common/config.h"
#include "common/errors.h"
#include "common/config_schema.h"

#include <stdio.h>
#include <string.h>

static bool lists(const struct sy_config_bucket *b, const char *model, size_t len)
{
	for (size_t i = 0; i < b->n_models; i++)
		if (strlen(b->models[i]) == len && memcmp(b->models[i], model, len) == 0)
			return true;
	return false;
}

bool sy_config_bucket_serves(const struct sy_config *cfg, const struct sy_config_bucket *b,
			     const char *model, size_t len)
{
	if (b->n_models > 0)
		return lists(b, model, len);
	for (size_t i = 0; i < cfg->n_buckets; i++)
		if (lists(&cfg->buckets[i], model, len))
			return false;
	return true;
}

static bool bucket_pd(const struct sy_config_bucket *b) { return b->groups.plain.mark.line == 0; }

enum sy_model_kind sy_config_model_kind(const struct sy_config *cfg, const char *model)
{
	size_t len = strlen(model);
	for (size_t i = 0; i < cfg->n_workers; i++) {
		const struct sy_config_worker *w = &cfg->workers[i];
		if (w->role != SY_ROLE_PLAIN && w->model != NULL && strcmp(w->model, model) == 0)
			return SY_MODEL_PD;
	}
	for (size_t i = 0; i < cfg->n_buckets; i++)
		if (sy_config_bucket_serves(cfg, &cfg->buckets[i], model, len))
			return bucket_pd(&cfg->buckets[i]) ? SY_MODEL_PD : SY_MODEL_PLAIN;
	return SY_MODEL_ANY;
}

/* Fails the check: the message names the key, the reason and what to use. */
#define REFUSE(mark, key, ...)                                                      \
	do {                                                                        \
		sy_cfg_error(err, SY_ECONFIG, cfg->source, (mark), (key), __VA_ARGS__); \
		return SY_ECONFIG;                                                  \
	} while (0)

/* Static workers of one model: all plain or all prefill/decode. */
static int check_worker_kinds(const struct sy_config *cfg, struct sy_config_error *err)
{
	char key[64];
	for (size_t j = 1; j < cfg->n_workers; j++) {
		const struct sy_config_worker *w = &cfg->workers[j];
		for (size_t i = 0; i < j; i++) {
			const struct sy_config_worker *v = &cfg->workers[i];
			if ((v->role == SY_ROLE_PLAIN) == (w->role == SY_ROLE_PLAIN) ||
			    strcmp(v->model, w->model) != 0)
				continue;
			snprintf(key, sizeof(key), "workers[%zu].role", j);
			REFUSE(w->mark, key,
				      "model \"%.100s\" mixes plain and prefill/decode workers "
				      "(\"%.100s\" and \"%.100s\"); a model is served plain or "
				      "prefill + decode: use another model name for one kind, or "
				      "give every worker of the model the same kind",
				      w->model, v->url, w->url);
		}
	}
	return SY_OK;
}

/* The buckets serving `model` (`named`: a named model; else the buckets
 * without models) are of one kind. */
static int check_bucket_kinds(const struct sy_config *cfg, const char *model, bool named,
			      struct sy_config_error *err)
{
	const struct sy_config_bucket *first = NULL;
	char key[64];
	for (size_t i = 0; i < cfg->n_buckets; i++) {
		const struct sy_config_bucket *b = &cfg->buckets[i];
		if (named ? !sy_config_bucket_serves(cfg, b, model, strlen(model)) : b->n_models > 0)
			continue;
		if (first == NULL) {
			first = b;
			continue;
		}
		if (bucket_pd(first) == bucket_pd(b))
			continue;
		snprintf(key, sizeof(key), "buckets[%zu].models", i);
		if (!named)
			REFUSE(b->mark, key,
				      "buckets \"%.100s\" and \"%.100s\" have no models and are of "
				      "different kinds (plain, prefill + decode); they would serve "
				      "one model both ways: use models: [NAME] to give each model "
				      "buckets of one kind",
				      first->id, b->id);
		REFUSE(b->mark, key,
			      "model \"%.100s\" is served by plain and prefill + decode buckets "
			      "(\"%.100s\", \"%.100s\"); a model is served one way: use models: "
			      "[NAME] to give it buckets of one kind",
			      model, first->id, b->id);
	}
	return SY_OK;
}

int sy_config_check_models(const struct sy_config *cfg, struct sy_config_error *err)
{
	char key[96];
	int rc = check_worker_kinds(cfg, err);
	if (rc != SY_OK || cfg->n_buckets == 0)
		return rc;
	if ((rc = check_bucket_kinds(cfg, NULL, false, err)) != SY_OK)
		return rc;
	for (size_t i = 0; i < cfg->n_buckets; i++)
		for (size_t k = 0; k < cfg->buckets[i].n_models; k++)
			if ((rc = check_bucket_kinds(cfg, cfg->buckets[i].models[k], true, err)) !=
			    SY_OK)
				return rc;
	for (size_t i = 0; i < cfg->n_workers; i++) {
		const struct sy_config_worker *w = &cfg->workers[i];
		const struct sy_config_bucket *b = NULL;
		for (size_t k = 0; k < cfg->n_buckets && b == NULL; k++)
			if (sy_config_bucket_serves(cfg, &cfg->buckets[k], w->model, strlen(w->model)))
				b = &cfg->buckets[k];
		snprintf(key, sizeof(key), "workers[%zu].model", i);
		if (b == NULL)
			REFUSE(w->mark, key,
				      "no bucket serves model \"%.100s\" (of worker \"%.100s\"); "
				      "use a bucket with models: [NAME], or one without models",
				      w->model, w->url);
		if (w->role != SY_ROLE_PLAIN && !bucket_pd(b)) {
			snprintf(key, sizeof(key), "workers[%zu].role", i);
			REFUSE(w->mark, key,
				      "worker \"%.100s\" is %s but model \"%.100s\" is served by plain "
				      "buckets; use prefill + decode buckets for the model",
				      w->url, sy_worker_role_name(w->role), w->model);
		}
	}
	/* explicit members serve the bucket's models */
	for (size_t i = 0; i < cfg->n_buckets; i++) {
		const struct sy_config_bucket *b = &cfg->buckets[i];
		const struct sy_config_group *gs[3] = {&b->groups.plain, &b->groups.prefill,
						       &b->groups.decode};
		static const char *const names[] = {"plain", "prefill", "decode"};
		for (int g = 0; g < 3; g++) {
			for (size_t m = 0; m < gs[g]->n_worker_ids; m++) {
				const char *id = gs[g]->worker_ids[m];
				for (size_t k = 0; k < cfg->n_workers; k++) {
					const struct sy_config_worker *w = &cfg->workers[k];
					if (strcmp(w->url, id) != 0 ||
					    sy_config_bucket_serves(cfg, b, w->model, strlen(w->model)))
						continue;
					snprintf(key, sizeof(key), "buckets[%zu].groups.%s.worker_ids[%zu]",
						 i, names[g], m);
					REFUSE(gs[g]->mark, key,
						      "worker \"%.100s\" serves model \"%.100s\", which "
						      "bucket \"%.100s\" does not serve; use the bucket's "
						      "models to list it, or another bucket",
						      id, w->model, b->id);
				}
			}
		}
	}
	return SY_OK;
}
