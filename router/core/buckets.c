/* buckets.c — BucketResolver::resolve, EngineGroup::pick and
 * Bucket::pick_engines of the target design (buckets.h; SGLang
 * src/buckets_reorg.rs; reference/policy-defaults.md §6).
 *
 * Group filtering walks the fleet snapshot (sorted by ID) once with the
 * candidate filter readiness shares (engine_group_candidate): model index,
 * role = stage, membership (a bitmap over fleet positions, rebuilt only
 * when the fleet's version moves), active health, then the region's health
 * words, read live (not from the snapshot), so a worker another process
 * marked down a moment ago is already left out; the pick adds its
 * exclusion list. The policy gets the
 * survivors as a contiguous array; its answer must be a pointer into that
 * array (identity) whose (slot, generation) is still ACTIVE in the table.
 */
#include "router/core/buckets.h"
#include "common/errors.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- resolver -------------------------------------------------------------- */

static bool ttft_met(const struct bucket *b, double target)
{
	return b->ttft_ms > 0 && b->ttft_ms <= target;
}

static bool tps_met(const struct bucket *b, double target)
{
	return isfinite(b->tokens_per_second) && b->tokens_per_second > 0 &&
	       b->tokens_per_second >= target;
}

static unsigned penalty(enum slo_policy pol, bool has_target, bool met)
{
	if (pol == SLO_DISABLED || !has_target)
		return 0;
	if (pol == SLO_FIRST)
		return met ? 0 : 1;
	return met ? 1 : 0; /* best effort: a bucket that meets it yields */
}

static uint64_t capacity(const struct bucket *b)
{
	return b->max_input < b->max_context ? b->max_input : b->max_context;
}

static bool lists_model(const struct bucket *b, const char *model, size_t len)
{
	for (size_t i = 0; i < b->n_models; i++)
		if (strlen(b->models[i]) == len && memcmp(b->models[i], model, len) == 0)
			return true;
	return false;
}

/* Sort key order: (penalty, capacity with unbounded last, rank, id). */
static int cmp_order(const struct bucket *a, unsigned pa, const struct bucket *b, unsigned pb)
{
	if (pa != pb)
		return pa < pb ? -1 : 1;
	uint64_t ca = capacity(a), cb = capacity(b);
	if (ca != cb)
		return ca < cb ? -1 : 1; /* BUCKET_UNBOUNDED = UINT64_MAX sorts last */
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	return strcmp(a->id, b->id);
}

enum pick_outcome bucket_resolver_resolve(const struct bucket_resolver *r,
					  const struct bucket_signal *sig, struct bucket **out,
					  size_t cap, size_t *n_out, const char **why)
{
	unsigned pen[64];
	unsigned *pens = r->n <= 64 ? pen : NULL;
	size_t n = 0;

	*n_out = 0;
	if (sig->has_peak && sig->expected_peak < sig->input_tokens) {
		*why = "expected peak below input tokens";
		return PICK_INVALID_SIGNAL;
	}
	bool ttft_on = r->ttft_policy != SLO_DISABLED && sig->has_ttft;
	bool tps_on = r->tps_policy != SLO_DISABLED && sig->has_tps;
	if (ttft_on && !(isfinite(sig->ttft_ms) && sig->ttft_ms > 0)) {
		*why = "x-sgl-ttft-slo-ms: must be a finite number > 0";
		return PICK_INVALID_SIGNAL;
	}
	if (tps_on && !(isfinite(sig->tps) && sig->tps > 0)) {
		*why = "x-sgl-tps-slo: must be a finite number > 0";
		return PICK_INVALID_SIGNAL;
	}
	if (pens == NULL && (pens = malloc(r->n * sizeof(*pens))) == NULL) {
		*why = "out of memory";
		return PICK_INVALID_CONFIGURATION;
	}

	uint64_t need = sig->has_peak ? sig->expected_peak : sig->input_tokens;
	bool named = false;
	for (size_t i = 0; sig->model != NULL && i < r->n && !named; i++)
		named = lists_model(&r->buckets[i], sig->model, sig->model_len);
	for (size_t i = 0; i < r->n && n < cap; i++) {
		struct bucket *b = &r->buckets[i];
		if (sig->model != NULL &&
		    (named ? !lists_model(b, sig->model, sig->model_len) : b->n_models > 0))
			continue;
		if (sig->input_tokens < b->min_input || sig->input_tokens > b->max_input ||
		    need > b->max_context)
			continue;
		unsigned p = penalty(r->ttft_policy, ttft_on, ttft_on && ttft_met(b, sig->ttft_ms)) +
			     penalty(r->tps_policy, tps_on, tps_on && tps_met(b, sig->tps));
		/* insertion sort: n is small (≤ SY_CONFIG_MAX_BUCKETS) */
		size_t j = n;
		while (j > 0 && cmp_order(b, p, out[j - 1], pens[j - 1]) < 0) {
			out[j] = out[j - 1];
			pens[j] = pens[j - 1];
			j--;
		}
		out[j] = b;
		pens[j] = p;
		n++;
	}
	if (pens != pen)
		free(pens);
	*n_out = n;
	if (n == 0) {
		*why = "no bucket accepts the request";
		return PICK_NO_MATCHING_BUCKET;
	}
	return PICK_OK;
}

/* ---- engine groups ----------------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Rebuilds g's membership bitmap for the fleet's current entries. */
static int group_members(struct engine_group *g, const struct fleet *f)
{
	size_t words = (f->n + 63) / 64;
	g->member_version = 0;
	if (words > g->member_words) {
		uint64_t *bits = realloc(g->member_bits, words * sizeof(uint64_t));
		if (bits == NULL)
			return SY_ENOMEM;
		g->member_bits = bits;
		g->member_words = words;
	}
	if (g->member_words > 0)
		memset(g->member_bits, 0, g->member_words * sizeof(uint64_t));
	for (size_t i = 0; i < f->n; i++) {
		const char *id = f->entries[i].id;
		if (bsearch(&id, g->worker_ids, g->n_worker_ids, sizeof(char *), cmp_str) != NULL)
			g->member_bits[i / 64] |= UINT64_C(1) << (i % 64);
	}
	g->member_version = f->version;
	return SY_OK;
}

int engine_group_sync(struct engine_group *g, const struct fleet *f)
{
	if (g->all_workers || g->n_worker_ids == 0 || g->member_version == f->version)
		return SY_OK;
	return group_members(g, f);
}

enum candidate_verdict engine_group_candidate(const struct engine_group *g, const struct fleet *f,
					      size_t i, uint32_t model_idx,
					      const struct statebus_region *r, uint64_t now_ns,
					      uint64_t cb_cool_down_ns)
{
	const struct fleet_entry *e = &f->entries[i];
	if (e->model_idx != model_idx || e->role != (uint8_t)g->stage)
		return CANDIDATE_OUTSIDE;
	if (!g->all_workers &&
	    (g->n_worker_ids == 0 || g->member_version != f->version ||
	     i / 64 >= g->member_words || !(g->member_bits[i / 64] & (UINT64_C(1) << (i % 64)))))
		return CANDIDATE_OUTSIDE;
	if (!e->healthy)
		return CANDIDATE_UNHEALTHY;
	if (r == NULL)
		return CANDIDATE_OK;
	switch (statebus_health_pick(r, e->slot, e->generation, now_ns, cb_cool_down_ns)) {
	case STATEBUS_PICK_DOWN:
		return CANDIDATE_DOWN;
	case STATEBUS_PICK_STALLED:
		return CANDIDATE_STALLED;
	case STATEBUS_PICK_BREAKER_OPEN:
		return CANDIDATE_BREAKER_OPEN;
	case STATEBUS_PICK_PROBE:
		return CANDIDATE_PROBE;
	case STATEBUS_PICK_OK:
		break;
	}
	return CANDIDATE_OK;
}

bool worker_exclude_has(const struct worker_exclude *ex, uint32_t slot)
{
	for (unsigned i = 0; ex != NULL && i < ex->n; i++)
		if (ex->slots[i] == slot)
			return true;
	return false;
}

/* Workers left out on the next policy call of one group pick: probes lost
 * to another process, and picks that raced a removal (the table no longer
 * holds their (slot, generation)). */
#define LEFT_OUT_MAX 8

/* Fills c[] with the group's usable candidates; returns their count. */
static size_t collect(struct engine_group *g, struct pick_env *env, struct engine_candidate *c,
		      const uint32_t *lost, unsigned n_lost)
{
	struct fleet *f = env->fleet;
	size_t n = 0;
	for (size_t i = 0; i < f->n && n < env->scratch_cap; i++) {
		const struct fleet_entry *e = &f->entries[i];
		if (e->model_idx != env->model_idx || worker_exclude_has(env->exclude, e->slot) ||
		    (env->adapter_asked && (e->adapters & env->adapter_bit) == 0))
			continue;
		bool lost_here = false;
		for (unsigned j = 0; j < n_lost; j++)
			lost_here |= lost[j] == e->slot;
		if (lost_here)
			continue;
		enum candidate_verdict v = engine_group_candidate(
			g, f, i, env->model_idx, env->region, env->now_ns, env->cb_cool_down_ns);
		switch (v) {
		case CANDIDATE_OUTSIDE:
		case CANDIDATE_UNHEALTHY:
			continue;
		case CANDIDATE_DOWN:
			env->skipped_down++;
			continue;
		case CANDIDATE_STALLED:
			env->skipped_stalled++;
			continue;
		case CANDIDATE_BREAKER_OPEN:
			env->skipped_breaker++;
			continue;
		case CANDIDATE_OK:
		case CANDIDATE_PROBE:
			break;
		}
		struct engine_candidate *k = &c[n++];
		k->slot = e->slot;
		k->generation = e->generation;
		k->id = e->id;
		k->bootstrap_port = e->bootstrap_port;
		k->dp_size = e->dp_size;
		k->engine = e->engine;
		k->load_read = false;
		k->cb_probe = v == CANDIDATE_PROBE;
	}
	return n;
}

enum pick_outcome engine_group_pick(struct engine_group *g, struct pick_env *env,
				    const char *bucket_id,
				    const struct engine_candidate *prefill, struct pick *out)
{
	struct fleet *f = env->fleet;
	struct engine_candidate *c = env->scratch[g->stage == STAGE_DECODE ? 1 : 0];
	uint32_t lost[LEFT_OUT_MAX];
	unsigned n_lost = 0;

	out->worker = NULL;
	out->reason = NULL;
	out->rejected_by = ADMIT_OK;
	if (!g->all_workers && g->n_worker_ids == 0)
		return PICK_NO_CANDIDATES; /* explicit empty membership */
	if (engine_group_sync(g, f) != SY_OK)
		return PICK_INVALID_CONFIGURATION;
	for (;;) {
		size_t n = collect(g, env, c, lost, n_lost);
		if (n == 0)
			return PICK_NO_CANDIDATES;

		struct pick_ctx ctx = {
			.req = env->req,
			.region = env->region,
			.now_ns = env->now_ns,
			.stage = g->stage,
			.bucket_id = bucket_id,
			.cands = c,
			.n = n,
			.prefill = prefill,
			.rej = env->rej,
		};
		enum pick_outcome o = policy_pick(&g->policy, &ctx, out);
		if (o != PICK_OK)
			return o;
		/* Identity: the answer must be one of the candidate objects. */
		const struct engine_candidate *w = out->worker;
		uintptr_t lo = (uintptr_t)c, hi = (uintptr_t)(c + n), p = (uintptr_t)w;
		if (w == NULL || p < lo || p >= hi || (p - lo) % sizeof(*c) != 0) {
			out->worker = NULL;
			return PICK_OUTSIDE_CANDIDATES;
		}
		if (env->region != NULL && !statebus_worker_valid(env->region, w->slot, w->generation)) {
			/* Removed or reused since the snapshot: not a policy bug.
			 * Select again in this group without it (the bucket is
			 * not given up for a race); the caller refreshes the
			 * fleet after the selection. */
			env->stale = true;
			env->reselected++;
			out->worker = NULL;
			if (n_lost == LEFT_OUT_MAX)
				return PICK_NO_CANDIDATES;
			lost[n_lost++] = w->slot;
			continue;
		}
		if (!w->cb_probe || env->region == NULL ||
		    statebus_breaker_take_probe(env->region, w->slot, w->generation, env->now_ns,
						env->cb_cool_down_ns))
			return PICK_OK;
		/* Another process sent the half-open probe first. */
		env->skipped_breaker++;
		out->worker = NULL;
		if (n_lost == LEFT_OUT_MAX)
			return PICK_NO_CANDIDATES;
		lost[n_lost++] = w->slot;
	}
}

/* ---- buckets ------------------------------------------------------------------ */

enum pick_outcome bucket_pick_engines(struct bucket *b, struct pick_env *env,
				      struct bucket_pick *out)
{
	enum pick_outcome o;

	out->prefill.worker = NULL;
	out->prefill.reason = NULL;
	out->prefill.rejected_by = ADMIT_OK;
	if (!b->pd) {
		out->failed_stage = STAGE_PLAIN;
		return engine_group_pick(&b->plain, env, b->id, NULL, &out->worker);
	}
	out->failed_stage = STAGE_PREFILL;
	out->worker.worker = NULL;
	out->worker.reason = NULL;
	out->worker.rejected_by = ADMIT_OK;
	o = engine_group_pick(&b->prefill, env, b->id, NULL, &out->prefill);
	if (o != PICK_OK)
		return o;
	out->failed_stage = STAGE_DECODE;
	return engine_group_pick(&b->decode, env, b->id, out->prefill.worker, &out->worker);
}
