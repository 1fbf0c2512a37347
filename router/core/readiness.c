/* readiness.c — /readyz's verdict (readiness.h).
 *
 * One pass per (model, bucket serving it, group) over the fleet snapshot
 * with selection's own candidate filter (engine_group_candidate,
 * buckets.h): O(models × groups × fleet entries), no policy, no load read,
 * no breaker probe taken, nothing written to the region. A bucket serves
 * the models its `models` names, or, when no bucket names a model, that
 * model if it names none (buckets.h). The verdict stops at the first model
 * and bucket that can form a selection; otherwise it keeps the most
 * specific failure (a PD bucket that has one of its two stages ranks above
 * a group without any candidate).
 */
#include "router/core/readiness.h"

#include <stdio.h>
#include <string.h>

#include "common/errors.h"
#include "router/core/buckets.h"

/* What the candidate filter said about a group's entries of one model. */
struct tally {
	uint32_t usable;   /* CANDIDATE_OK or _PROBE */
	uint32_t down, stalled, breaker;
};

static void count(struct engine_group *g, const struct fleet *f, uint32_t m,
		  const struct statebus_region *r, uint64_t now_ns, uint64_t cool_ns,
		  struct tally *t)
{
	memset(t, 0, sizeof(*t));
	if (engine_group_sync(g, f) != SY_OK)
		return; /* out of memory: no member known, no candidate */
	for (size_t i = 0; i < f->n; i++) {
		switch (engine_group_candidate(g, f, i, m, r, now_ns, cool_ns)) {
		case CANDIDATE_OK:
		case CANDIDATE_PROBE:
			t->usable++;
			break;
		case CANDIDATE_DOWN:
			t->down++;
			break;
		case CANDIDATE_STALLED:
			t->stalled++;
			break;
		case CANDIDATE_BREAKER_OPEN:
			t->breaker++;
			break;
		case CANDIDATE_OUTSIDE:
		case CANDIDATE_UNHEALTHY:
			break;
		}
	}
}

/* "; left out: N passively down, N stalled, N breaker open" for the
 * healthy candidates the region's health words leave out, or "". */
static const char *left_out(const struct tally *a, const struct tally *b, char *buf, size_t cap)
{
	uint32_t down = a->down + (b ? b->down : 0), st = a->stalled + (b ? b->stalled : 0),
		 br = a->breaker + (b ? b->breaker : 0);
	buf[0] = '\0';
	if (down + st + br > 0)
		snprintf(buf, cap, "; left out: %u passively down, %u stalled, %u breaker open",
			 down, st, br);
	return buf;
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
	uint64_t cool_ns = router_gen_cb_cool_down_ns(g);
	char lo[96];
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
			struct bucket *b = &g->buckets[i];
			if (!serves(b, model, named))
				continue;
			if (!b->pd) {
				struct tally t;
				count(&b->plain, f, (uint32_t)m, r, now_ns, cool_ns, &t);
				if (t.usable > 0) {
					out->ready = true;
					out->code = NULL;
					snprintf(out->message, sizeof(out->message),
						 "model \"%s\": bucket \"%s\" has %u healthy worker(s)",
						 model, b->id, t.usable);
					return;
				}
				if (best < 1 && k > 0) {
					best = 1;
					snprintf(out->message, sizeof(out->message),
						 "model \"%s\": bucket \"%s\" has no healthy plain worker "
						 "(%u worker(s) of the model known%s)", model, b->id, k,
						 left_out(&t, NULL, lo, sizeof(lo)));
				}
				continue;
			}
			struct tally tp, td;
			count(&b->prefill, f, (uint32_t)m, r, now_ns, cool_ns, &tp);
			count(&b->decode, f, (uint32_t)m, r, now_ns, cool_ns, &td);
			uint32_t np = tp.usable, nd = td.usable;
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
					 "healthy decode worker(s); a PD selection needs both%s", model,
					 b->id, np, nd, left_out(np > 0 ? &td : &tp, NULL, lo, sizeof(lo)));
			} else if (best < 1 && k > 0) {
				best = 1;
				snprintf(out->message, sizeof(out->message),
					 "model \"%s\": bucket \"%s\" has no healthy prefill or decode "
					 "worker (%u worker(s) of the model known%s)", model, b->id, k,
					 left_out(&tp, &td, lo, sizeof(lo)));
			}
		}
	}
}
