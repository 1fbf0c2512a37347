/* cache_aware.c — send a request to the engine that already holds the
 * longest usable prefix of its prompt, without piling onto a hot engine
 * (reference/policy-defaults.md §2; SGLang policies_reorg/cache_aware.rs).
 *
 * Per pick, over the group's candidates (sorted by ID):
 *  1. Lookup: the request's memo entry of this instance's source
 *     (cache_source.h: the chain is hashed once per request and each source
 *     asked once, shared by every bucket attempt). Rejected → invalid
 *     signal. A local entry missing at pick time is looked up now; an
 *     indexer entry missing reads as unavailable (a miss).
 *  2. Candidates: exact matches of a candidate (local: slot + generation;
 *     indexer: its ID string) with depth blocks > 0, blocks held only by
 *     a prediction weighted (cache_aware_weighted_blocks);
 *     matched = input × blocks / query_blocks, uncached = input − matched;
 *     keep matched ≥ min_matched_tokens and, when set, matched / input ≥
 *     min_match_ratio. Sort by (uncached ↑, prefill pressure of §3, ID) and
 *     keep the first min(n, max_workers, max(min_workers, ⌈ratio × n⌉)),
 *     n = the group's size (⚑ the reference leaves open whether n is the
 *     group or the survivors; the group is the stricter reading).
 *  3. Soft queue gate (worker_queue_limit set): a candidate passes with no
 *     fresh load (fail open) or waiting < limit. When none passes, every
 *     engine of the group is provably queued and no floor is set, every
 *     candidate is let back in (reason saturation_pin).
 *  4. Hard admission on each evaluated (gate-passing or let-back) candidate;
 *     rejections are collected.
 *  5. Winner: least = the smallest uncached among the admitted; fold the
 *     admitted with uncached ≤ least + switch_margin in step-2 order: the
 *     current best L yields to the next R only when the pressure guard is
 *     on, every evaluated candidate has fresh native load, and L is more
 *     pressured than R (both queue times and abs_ms set: L_ms − R_ms >
 *     abs_ms and L_ms > R_ms × rel; else L_pending − R_pending > abs_tokens
 *     and L_pending > R_pending × rel). Reason cache_candidate.
 *  6. Saturation pin: nobody admitted, a floor is set and no engine of the
 *     group has fresh waiting < floor → the least-pressured gate-rejected
 *     candidate that admission accepts (reason saturation_pin).
 *  7. Miss: any hard rejection → PICK_NO_ADMISSIBLE_ENGINE (never a cold
 *     fallback). Otherwise power-of-k (k = min_load_choices; k ≥ pool = the
 *     exact minimum, 1 = uniform) over the gate-passing engines of the
 *     group (all of them when none pass), admission once on the winner
 *     (rejection → PICK_ADMISSION_REJECTED), reason no_cache_candidate.
 *
 * Costs: loads are read lazily through the pick snapshot (candidates, and
 * the whole group only when the gate or the floor needs it); scratch arrays
 * are the instance's, grown to the largest group seen (no allocation per
 * pick in the steady state). Process-local, single-threaded.
 */
#include "router/policies/cache/cache_aware.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"

struct ca_cand {
	uint32_t i;        /* index into ctx->cands */
	uint32_t blocks;
	uint64_t uncached; /* tokens */
};

struct ca_state {
	struct cache_aware_params prm;
	struct cache_source local;
	struct cache_source *src;
	struct cache_aware_stats st;
	struct ca_cand *c;     /* candidates (step 2), cap entries */
	uint32_t *ev, *gated, *adm, *pool;
	size_t cap;
};

const char *cache_aware_decision_name(enum cache_aware_decision d)
{
	switch (d) {
	case CACHE_AWARE_HIT:
		return "cache_hit";
	case CACHE_AWARE_MISS:
		return "cache_miss";
	case CACHE_AWARE_WORKER_QUEUED:
		return "cache_worker_queued";
	case CACHE_AWARE_ALL_QUEUED:
		return "all_queued";
	default:
		return "unknown";
	}
}

const char *cache_monitor_source_name(enum cache_monitor_source src)
{
	return src == CACHE_MONITOR_LOAD_REPORT ? "load_report" : "router_local";
}

const uint64_t cache_diverted_edges[CACHE_DIVERTED_EDGES] = {1,   2,   4,    8,    16,   32,   64,
							      128, 256, 512, 1024, 2048, 4096, 8192};

/* Counts the load source of one decision: the loads this pick read. */
static void count_monitor(struct ca_state *s, const struct pick_ctx *ctx)
{
	bool any = false, all_native = true;
	for (size_t i = 0; i < ctx->n; i++) {
		if (!ctx->cands[i].load_read)
			continue;
		any = true;
		all_native &= ctx->cands[i].load.native;
	}
	s->st.monitor[any && all_native ? CACHE_MONITOR_LOAD_REPORT : CACHE_MONITOR_ROUTER_LOCAL]++;
}

/* A queue-gate diversion gave up `blocks` of prefix. */
static void count_diverted(struct ca_state *s, uint64_t blocks)
{
	size_t b = 0;
	while (b < CACHE_DIVERTED_EDGES && blocks > cache_diverted_edges[b])
		b++;
	s->st.diverted[b]++;
	s->st.diverted_sum += blocks;
}

void cache_aware_params_default(struct cache_aware_params *p)
{
	p->min_matched_tokens = CACHE_AWARE_MIN_MATCHED_TOKENS;
	p->min_match_ratio = -1;
	p->candidate_min_workers = CACHE_AWARE_CANDIDATE_MIN_WORKERS;
	p->candidate_ratio = CACHE_AWARE_CANDIDATE_RATIO;
	p->candidate_max_workers = CACHE_AWARE_CANDIDATE_MAX_WORKERS;
	p->switch_margin_tokens = CACHE_AWARE_SWITCH_MARGIN_TOKENS;
	p->worker_queue_limit = -1;
	p->saturation_queue_floor = -1;
	p->min_load_choices = CACHE_AWARE_MIN_LOAD_CHOICES;
	p->pressure_guard = true;
	p->pressure_abs_tokens = CACHE_AWARE_PRESSURE_ABS_TOKENS;
	p->pressure_abs_ms = -1;
	p->pressure_rel = CACHE_AWARE_PRESSURE_REL;
	p->predicted_weight = CACHE_AWARE_PREDICTED_WEIGHT;
	p->predicted_window_ms = CACHE_AWARE_PREDICTED_WINDOW_MS;
	p->predicted_half_life_ms = CACHE_AWARE_PREDICTED_HALF_LIFE_MS;
}

uint32_t cache_aware_weighted_blocks(const struct cache_aware_params *cp, uint32_t blocks,
				     uint32_t predicted, uint32_t age_ms)
{
	if (predicted > blocks)
		predicted = blocks;
	if (predicted == 0)
		return blocks;
	double w = cp->predicted_weight;
	if (age_ms > cp->predicted_window_ms) {
		uint32_t past = age_ms - cp->predicted_window_ms;
		w = cp->predicted_half_life_ms == 0
			    ? 0.0
			    : w * exp2(-(double)past / (double)cp->predicted_half_life_ms);
	}
	/* the tolerance keeps 0.5 × 8 at 4 */
	double x = floor((double)predicted * w + 1e-9);
	uint32_t kept = x <= 0 ? 0 : x >= (double)predicted ? predicted : (uint32_t)x;
	return blocks - predicted + kept;
}

uint32_t cache_aware_candidate_limit(const struct cache_aware_params *cp, size_t n)
{
	/* ⌈ratio × n⌉ with a tolerance, so that 0.05 × 160 is 8, not 9 */
	double r = ceil(cp->candidate_ratio * (double)n - 1e-9);
	uint64_t k = r > 0 ? (uint64_t)r : 0;
	if (k < cp->candidate_min_workers)
		k = cp->candidate_min_workers;
	if (k > cp->candidate_max_workers)
		k = cp->candidate_max_workers;
	if (k > n)
		k = n;
	return (uint32_t)k;
}

static struct ca_state *state_of(const struct policy *p)
{
	return p != NULL && p->kind == POLICY_CACHE_AWARE ? p->state : NULL;
}

struct cache_source *cache_aware_source(const struct policy *p)
{
	struct ca_state *s = state_of(p);
	return s != NULL ? s->src : NULL;
}

const struct cache_aware_stats *cache_aware_get_stats(const struct policy *p)
{
	struct ca_state *s = state_of(p);
	return s != NULL ? &s->st : NULL;
}

int cache_aware_configure(struct policy *p, const struct cache_aware_params *cp,
			  struct cache_source *src)
{
	struct ca_state *s = state_of(p);
	if (s == NULL || cp == NULL)
		return SY_EINVAL;
	if ((cp->saturation_queue_floor >= 0 &&
	     (cp->worker_queue_limit < 0 || cp->saturation_queue_floor < 1 ||
	      cp->saturation_queue_floor > cp->worker_queue_limit)) ||
	    !(cp->pressure_rel > 1.0) || !(cp->candidate_ratio > 0) ||
	    cp->candidate_min_workers > cp->candidate_max_workers || cp->min_load_choices == 0 ||
	    cp->worker_queue_limit == 0 || !(cp->predicted_weight >= 0 && cp->predicted_weight <= 1))
		return SY_EINVAL;
	s->prm = *cp;
	s->src = src != NULL ? src : &s->local;
	return SY_OK;
}

static void ca_destroy(struct policy *p)
{
	struct ca_state *s = p->state;
	if (s == NULL)
		return;
	cache_source_close(&s->local);
	free(s->c);
	free(s->ev);
	free(s->gated);
	free(s->adm);
	free(s->pool);
	free(s);
	p->state = NULL;
}

static int ensure_cap(struct ca_state *s, size_t n)
{
	if (n <= s->cap)
		return SY_OK;
	void *c = realloc(s->c, n * sizeof(*s->c));
	if (c == NULL)
		return SY_ENOMEM;
	s->c = c;
	uint32_t **arrs[] = {&s->ev, &s->gated, &s->adm, &s->pool};
	for (size_t k = 0; k < 4; k++) {
		void *a = realloc(*arrs[k], n * sizeof(uint32_t));
		if (a == NULL)
			return SY_ENOMEM;
		*arrs[k] = a;
	}
	s->cap = n;
	return SY_OK;
}

/* Step-2 order: (uncached, stage pressure, id = index). */
static int cand_cmp(struct pick_ctx *ctx, const struct ca_cand *a, const struct ca_cand *b)
{
	if (a->uncached != b->uncached)
		return a->uncached < b->uncached ? -1 : 1;
	int c = engine_stage_compare(ctx->stage, pick_ctx_load(ctx, a->i), pick_ctx_load(ctx, b->i));
	if (c != 0)
		return c;
	return (a->i > b->i) - (a->i < b->i);
}

static bool gate_passes(struct ca_state *s, struct pick_ctx *ctx, size_t i)
{
	if (s->prm.worker_queue_limit < 0)
		return true;
	const struct engine_load *l = pick_ctx_load(ctx, i);
	return !l->fresh || l->waiting < (uint64_t)s->prm.worker_queue_limit;
}

/* Every engine of the group has fresh load with waiting ≥ limit. */
static bool group_all_queued(struct ca_state *s, struct pick_ctx *ctx)
{
	for (size_t i = 0; i < ctx->n; i++) {
		const struct engine_load *l = pick_ctx_load(ctx, i);
		if (!l->fresh || l->waiting < (uint64_t)s->prm.worker_queue_limit)
			return false;
	}
	return true;
}

/* Some engine of the group has fresh waiting < floor. */
static bool group_below_floor(struct ca_state *s, struct pick_ctx *ctx)
{
	for (size_t i = 0; i < ctx->n; i++) {
		const struct engine_load *l = pick_ctx_load(ctx, i);
		if (l->fresh && l->waiting < (uint64_t)s->prm.saturation_queue_floor)
			return true;
	}
	return false;
}

/* L more pressured than R (pressure guard of step 5). */
static bool more_pressured(const struct cache_aware_params *prm, const struct engine_load *l,
			   const struct engine_load *r)
{
	if (l->has_queue_ms && r->has_queue_ms && prm->pressure_abs_ms >= 0)
		return l->queue_ms - r->queue_ms > prm->pressure_abs_ms &&
		       l->queue_ms > r->queue_ms * prm->pressure_rel;
	return l->pending > r->pending && l->pending - r->pending > prm->pressure_abs_tokens &&
	       (double)l->pending > (double)r->pending * prm->pressure_rel;
}

/* The request's entry of this instance's source. */
static const struct prefix_memo_entry *entry_of(struct ca_state *s, struct pick_ctx *ctx)
{
	struct prefix_memo *m = ctx->req != NULL ? ctx->req->memo : NULL;
	if (m == NULL || !m->chain_done)
		return NULL;
	/* A local lookup never blocks: the region handle is this process's own
	 * (the const of pick_ctx only says the policy does not write tables). */
	return prefix_memo_lookup(m, s->src, (struct statebus_region *)ctx->region, ctx->req,
				  false);
}

/* Power-of-k over pool[0..np) (indices into ctx->cands). */
static size_t load_pick(struct ca_state *s, struct pick_ctx *ctx, uint32_t *pool, size_t np)
{
	size_t k = s->prm.min_load_choices;
	if (np == 1)
		return pool[0];
	if (k <= 1)
		return pool[router_rng_below(np)];
	if (k > np)
		k = np;
	if (k < np) {
		/* partial Fisher–Yates: pool[0..k) becomes the sample, in draw order */
		for (size_t j = 0; j < k; j++) {
			size_t t = j + (size_t)router_rng_below(np - j);
			uint32_t x = pool[j];
			pool[j] = pool[t];
			pool[t] = x;
		}
	}
	size_t best = pool[0];
	for (size_t j = 1; j < k; j++)
		if (engine_stage_compare(ctx->stage, pick_ctx_load(ctx, pool[j]),
					 pick_ctx_load(ctx, best)) < 0)
			best = pool[j];
	return best;
}

static enum pick_outcome ca_pick(struct policy *p, struct pick_ctx *ctx, struct pick *out)
{
	struct ca_state *s = p->state;
	const struct cache_aware_params *prm = &s->prm;
	size_t n = ctx->n;

	if (ctx->stage == STAGE_DECODE || s == NULL)
		return PICK_INVALID_CONFIGURATION;
	if (ensure_cap(s, n) != SY_OK)
		return PICK_INVALID_CONFIGURATION; /* out of memory: a 500 */

	/* 1. lookup */
	const struct prefix_memo_entry *e = entry_of(s, ctx);
	if (e != NULL && e->status == PREFIX_REJECTED) {
		s->st.invalid_signal++;
		return PICK_INVALID_SIGNAL;
	}

	/* 2. candidates */
	size_t nc = 0;
	const struct prefix_memo *m = ctx->req != NULL ? ctx->req->memo : NULL;
	if (e != NULL && m != NULL && e->status == PREFIX_FOUND && e->n_depths > 0 && m->n_ids > 0) {
		uint64_t input = m->input_tokens;
		for (size_t i = 0; i < n; i++) {
			const struct engine_candidate *c = &ctx->cands[i];
			const struct prefix_depth *d =
				prefix_entry_find(e, c->slot, c->generation, c->id);
			if (d == NULL)
				continue;
			uint32_t blocks =
				d->predicted == 0
					? d->blocks
					: cache_aware_weighted_blocks(prm, d->blocks, d->predicted,
								      d->approximate
									      ? 0
									      : d->predicted_age_ms);
			if (blocks == 0)
				continue;
			uint64_t matched =
				(uint64_t)((unsigned __int128)input * blocks / m->n_ids);
			if (matched < prm->min_matched_tokens)
				continue;
			if (prm->min_match_ratio >= 0 &&
			    (double)matched < prm->min_match_ratio * (double)input)
				continue;
			s->c[nc++] = (struct ca_cand){(uint32_t)i, blocks, input - matched};
		}
		/* insertion sort: stable, n small */
		for (size_t a = 1; a < nc; a++) {
			struct ca_cand x = s->c[a];
			size_t b = a;
			while (b > 0 && cand_cmp(ctx, &x, &s->c[b - 1]) < 0) {
				s->c[b] = s->c[b - 1];
				b--;
			}
			s->c[b] = x;
		}
		size_t lim = cache_aware_candidate_limit(prm, n);
		if (nc > lim)
			nc = lim;
	}

	/* 3. soft queue gate (indices into s->c) */
	size_t ne = 0, ng = 0;
	bool let_back = false;
	for (size_t j = 0; j < nc; j++) {
		if (gate_passes(s, ctx, s->c[j].i))
			s->ev[ne++] = (uint32_t)j;
		else
			s->gated[ng++] = (uint32_t)j;
	}
	if (ne == 0 && ng > 0 && prm->saturation_queue_floor < 0 && group_all_queued(s, ctx)) {
		for (size_t j = 0; j < nc; j++)
			s->ev[ne++] = (uint32_t)j;
		ng = 0;
		let_back = true;
	}

	/* 4. hard admission on every evaluated candidate */
	size_t na = 0;
	bool rejected = false;
	for (size_t j = 0; j < ne; j++) {
		s->st.admission_evaluated++;
		if (policy_admit(p, ctx, s->c[s->ev[j]].i, out) == ADMIT_OK) {
			s->adm[na++] = s->ev[j];
		} else {
			s->st.admission_rejected++;
			rejected = true;
		}
	}

	/* 5. winner among the admitted */
	if (na > 0) {
		uint64_t least = UINT64_MAX;
		for (size_t j = 0; j < na; j++)
			if (s->c[s->adm[j]].uncached < least)
				least = s->c[s->adm[j]].uncached;
		uint64_t bound = least + prm->switch_margin_tokens < least
					 ? UINT64_MAX
					 : least + prm->switch_margin_tokens;
		bool guard = prm->pressure_guard;
		for (size_t j = 0; guard && j < ne; j++)
			if (!pick_ctx_load(ctx, s->c[s->ev[j]].i)->native)
				guard = false;
		size_t best = SIZE_MAX;
		for (size_t j = 0; j < na; j++) {
			const struct ca_cand *r = &s->c[s->adm[j]];
			if (r->uncached > bound)
				continue;
			if (best == SIZE_MAX) {
				best = r->i;
				continue;
			}
			if (!guard)
				continue;
			s->st.guard_compared++;
			if (more_pressured(prm, pick_ctx_load(ctx, best), pick_ctx_load(ctx, r->i))) {
				s->st.guard_override++;
				best = r->i;
			}
		}
		out->rejected_by = ADMIT_OK;
		out->worker = &ctx->cands[best];
		out->reason = let_back ? "saturation_pin" : "cache_candidate";
		s->st.decisions[let_back ? CACHE_AWARE_ALL_QUEUED : CACHE_AWARE_HIT]++;
		count_monitor(s, ctx);
		return PICK_OK;
	}

	/* 6. saturation pin under a floor */
	if (ng > 0 && prm->saturation_queue_floor >= 0 && !group_below_floor(s, ctx)) {
		/* order the gate-rejected by pressure, step-2 order on ties */
		for (size_t a = 1; a < ng; a++) {
			uint32_t x = s->gated[a];
			size_t b = a;
			while (b > 0 &&
			       engine_stage_compare(ctx->stage, pick_ctx_load(ctx, s->c[x].i),
						    pick_ctx_load(ctx, s->c[s->gated[b - 1]].i)) < 0) {
				s->gated[b] = s->gated[b - 1];
				b--;
			}
			s->gated[b] = x;
		}
		for (size_t j = 0; j < ng; j++) {
			uint32_t i = s->c[s->gated[j]].i;
			s->st.admission_evaluated++;
			if (policy_admit(p, ctx, i, out) == ADMIT_OK) {
				out->rejected_by = ADMIT_OK;
				out->worker = &ctx->cands[i];
				out->reason = "saturation_pin";
				s->st.decisions[CACHE_AWARE_ALL_QUEUED]++;
				count_monitor(s, ctx);
				return PICK_OK;
			}
			s->st.admission_rejected++;
			rejected = true;
		}
	}

	/* 7. miss */
	if (rejected) {
		s->st.no_admissible++;
		return PICK_NO_ADMISSIBLE_ENGINE;
	}
	size_t np = 0;
	for (size_t i = 0; i < n; i++)
		if (gate_passes(s, ctx, i))
			s->pool[np++] = (uint32_t)i;
	if (np == 0)
		for (size_t i = 0; i < n; i++)
			s->pool[np++] = (uint32_t)i;
	size_t win = load_pick(s, ctx, s->pool, np);
	out->reason = "no_cache_candidate";
	s->st.decisions[nc > 0 ? CACHE_AWARE_WORKER_QUEUED : CACHE_AWARE_MISS]++;
	count_monitor(s, ctx);
	if (nc > 0) /* step-2 order: the deepest candidate first */
		count_diverted(s, s->c[0].blocks);
	if (policy_admit(p, ctx, win, out) != ADMIT_OK)
		return PICK_ADMISSION_REJECTED;
	out->worker = &ctx->cands[win];
	return PICK_OK;
}

static const struct policy_ops policy_cache_aware_ops = {
	.name = "cache_aware",
	.pick = ca_pick,
	.destroy = ca_destroy,
};

int cache_aware_init(struct policy *p, const char **why)
{
	if (p->stage == STAGE_DECODE) {
		if (why)
			*why = "cache_aware refuses decode groups; use power_of_n";
		return SY_EINVAL;
	}
	struct ca_state *s = calloc(1, sizeof(*s));
	if (s == NULL) {
		if (why)
			*why = "out of memory";
		return SY_ENOMEM;
	}
	cache_aware_params_default(&s->prm);
	cache_source_init_local(&s->local);
	s->src = &s->local;
	p->state = s;
	p->ops = &policy_cache_aware_ops;
	return SY_OK;
}
