/* readiness.c — /readyz's verdict (readiness.h).
 *
 * One pass per (model, bucket serving it, group) over the fleet snapshot:
 * O(models × groups × fleet entries), no policy, no load read, nothing
 * written. A bucket serves the models its `models` names, or, when no
 * bucket names a model, that model if it names none (buckets.h). The
 * verdict stops at the first model and bucket that can form a selection;
 * otherwise it keeps the most specific failure (a PD bucket that has one
 * of its two stages ranks above a group without any candidate).
 */
#include "router/core/readiness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_id(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Candidates of group g for model index m in fleet f (engine_group_pick's
 * filter: model, role = stage, healthy, membership). */
static uint32_t candidates(const struct engine_group *g, const struct fleet *f, uint32_t m)
{
	uint32_t n = 0;
	for (size_t i = 0; i < f->n; i++) {
		const struct fleet_entry *e = &f->entries[i];
		if (e->model_idx != m || e->role != (uint8_t)g->stage || !e->healthy)
			continue;
		const char *id = e->id;
		if (!g->all_workers &&
		    bsearch(&id, g->worker_ids, g->n_worker_ids, sizeof(char *), cmp_id) == NULL)
			continue;
		n++;
	}
	return n;
}

static bool lists_model(const struct bucket *b, const char *model)
{
	for (size_t i = 0; i < b->n_models; i++)
		if (strcmp(b->models[i], model) == 0)
			return true;
	return false;
}

/* Whether bucket b serves `model` (the resolver's per-model rule,
 * buckets.h): named = some bucket lists the model. */
static bool serves(const struct bucket *b, const char *model, bool named)
{
	return named ? lists_model(b, model) : b->n_models == 0;
}

/* Workers of model index m known in f, healthy or not. */
static uint32_t known(const struct fleet *f, uint32_t m)
{
	uint32_t n = 0;
	for (size_t i = 0; i < f->n; i++)
		n += f->entries[i].model_idx == m;
	return n;
}

void router_readiness_check(struct router_gen *g, const struct statebus_region *r,
			    uint64_t now_ns, struct router_readiness *out)
{
	struct fleet *f = &g->fleet;
	if (r != NULL)
		(void)fleet_refresh(f, r, now_ns, false);
	out->ready = false;
	out->code = "no_healthy_workers";
	if (f->n == 0) {
		snprintf(out->message, sizeof(out->message), "no worker is known yet");
		return;
	}
	snprintf(out->message, sizeof(out->message),
		 "no bucket has a healthy worker for any model (%zu worker(s) known)", f->n);
	int best = 0; /* rank of the failure in out: 0 none yet, 1 empty group, 2 one PD stage */
	for (size_t m = 0; m < f->n_models; m++) {
		const char *model = f->models[m];
		uint32_t k = known(f, (uint32_t)m);
		bool named = false;
		for (size_t i = 0; i < g->n_buckets && !named; i++)
			named = lists_model(&g->buckets[i], model);
		for (size_t i = 0; i < g->n_buckets; i++) {
			const struct bucket *b = &g->buckets[i];
			if (!serves(b, model, named))
				continue;
			if (!b->pd) {
				uint32_t n = candidates(&b->plain, f, (uint32_t)m);
				if (n > 0) {
					out->ready = true;
					out->code = NULL;
					snprintf(out->message, sizeof(out->message),
						 "model \"%s\": bucket \"%s\" has %u healthy worker(s)",
						 model, b->id, n);
					return;
				}
				if (best < 1 && k > 0) {
					best = 1;
					snprintf(out->message, sizeof(out->message),
						 "model \"%s\": bucket \"%s\" has no healthy plain worker "
						 "(%u worker(s) of the model known)", model, b->id, k);
				}
				continue;
			}
			uint32_t np = candidates(&b->prefill, f, (uint32_t)m);
			uint32_t nd = candidates(&b->decode, f, (uint32_t)m);
			if (np > 0 && nd > 0) {
				out->ready = true;
				out->code = NULL;
				snprintf(out->message, sizeof(out->message),
					 "model \"%s\": bucket \"%s\" has %u healthy prefill and %u "
					 "healthy decode worker(s)", model, b->id, np, nd);
				return;
			}
			if (best < 2 && (np > 0 || nd > 0)) {
				best = 2;
				out->code = np > 0 ? "no_decode_workers_available"
						   : "no_prefill_workers_available";
				snprintf(out->message, sizeof(out->message),
					 "model \"%s\": bucket \"%s\" has %u healthy prefill and %u "
					 "healthy decode worker(s); a PD selection needs both", model,
					 b->id, np, nd);
			} else if (best < 1 && k > 0) {
				best = 1;
				snprintf(out->message, sizeof(out->message),
					 "model \"%s\": bucket \"%s\" has no healthy prefill or decode "
					 "worker (%u worker(s) of the model known)", model, b->id, k);
			}
		}
	}
}
