/* policy.c — the policy contract's glue: names, instance set-up, the
 * admission hook shared by every policy, and the per-process random number
 * generator (policy.h).
 *
 * Random numbers: a splitmix64 sequence per process (per thread), seeded
 * from getrandom() on first use and again in every forked child (a
 * pthread_atfork handler clears the "seeded" mark), so N router processes
 * forked from one master never draw the same samples. Not cryptographic.
 */
#include "router/policies/policy.h"
#include "common/config.h"
#include "common/errors.h"
#include "router/policies/cache/cache_aware.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

/* ---- names ------------------------------------------------------------- */

_Static_assert(POLICY_KIND_INVALID_ == SY_POLICY_COUNT,
	       "enum policy_kind follows common/config.h's sy_policy_names");

const char *policy_kind_name(enum policy_kind k)
{
	return (unsigned)k < SY_POLICY_COUNT ? sy_policy_names[k] : "unknown";
}

int policy_kind_parse(const char *name, enum policy_kind *kind, uint32_t *n_choices)
{
	if (name == NULL)
		return SY_EINVAL;
	if (strcmp(name, "power_of_two") == 0) {
		*kind = POLICY_POWER_OF_N;
		if (n_choices != NULL)
			*n_choices = 2;
		return SY_OK;
	}
	for (size_t i = 0; i < SY_POLICY_COUNT; i++) {
		if (strcmp(name, sy_policy_names[i]) == 0) {
			*kind = (enum policy_kind)i;
			return SY_OK;
		}
	}
	return SY_EINVAL;
}

/* ---- instances ----------------------------------------------------------- */

extern const struct policy_ops policy_round_robin_ops;
extern const struct policy_ops policy_random_ops;
extern const struct policy_ops policy_power_of_n_ops;
extern const struct policy_ops policy_load_based_ops;
extern const struct policy_ops policy_session_aware_ops;
extern const struct policy_ops policy_sticky_ops;

/* A sub-policy of an affinity policy (its fallback), same stage and caps. */
static int fallback_new(struct policy *p, enum policy_kind kind, uint32_t n, const char **why)
{
	struct policy *f = malloc(sizeof(*f));
	if (f == NULL)
		return SY_ENOMEM;
	int rc = policy_init(f, kind, p->stage, &p->admission, n, why);
	if (rc != SY_OK) {
		free(f);
		return rc;
	}
	if (p->fallback != NULL) {
		policy_destroy(p->fallback);
		free(p->fallback);
	}
	p->fallback = f;
	return SY_OK;
}

int policy_init(struct policy *p, enum policy_kind kind, enum engine_stage stage,
		const struct admission_limits *admission, uint32_t n_choices, const char **why)
{
	memset(p, 0, sizeof(*p));
	p->kind = kind;
	p->stage = stage;
	if (admission != NULL)
		p->admission = *admission;
	else
		admission_limits_none(&p->admission);
	p->n_choices = n_choices;
	switch (kind) {
	case POLICY_ROUND_ROBIN:
		p->ops = &policy_round_robin_ops;
		return SY_OK;
	case POLICY_RANDOM:
		p->ops = &policy_random_ops;
		return SY_OK;
	case POLICY_POWER_OF_N:
		if (n_choices == 0) {
			if (why)
				*why = "power_of_n needs power_of_n_choices ≥ 1";
			return SY_EINVAL;
		}
		p->ops = &policy_power_of_n_ops;
		return SY_OK;
	case POLICY_CACHE_AWARE:
		return cache_aware_init(p, why);
	case POLICY_SESSION_AWARE:
		/* New and keyless sessions: power-of-N (reference §4.3). */
		p->ops = &policy_session_aware_ops;
		p->idle_ttl_ms = STATEBUS_AFFINITY_DEFAULT_TTL_MS;
		return fallback_new(p, POLICY_POWER_OF_N, n_choices ? n_choices : 2, why);
	case POLICY_STICKY:
		p->ops = &policy_sticky_ops;
		p->idle_ttl_ms = STATEBUS_AFFINITY_DEFAULT_TTL_MS;
		return fallback_new(p, POLICY_ROUND_ROBIN, 0, why);
	case POLICY_LOAD_BASED:
		p->ops = &policy_load_based_ops;
		return SY_OK;
	case POLICY_KIND_INVALID_:
		break;
	}
	if (why)
		*why = "unknown policy kind";
	return SY_EINVAL;
}

int policy_set_affinity(struct policy *p, enum policy_kind fallback, uint32_t fallback_n,
			uint32_t idle_ttl_ms, const char **why)
{
	if (p->kind != POLICY_SESSION_AWARE && p->kind != POLICY_STICKY) {
		if (why)
			*why = "affinity options apply to session_aware and sticky only";
		return SY_EINVAL;
	}
	p->idle_ttl_ms = idle_ttl_ms ? idle_ttl_ms : STATEBUS_AFFINITY_DEFAULT_TTL_MS;
	if (p->kind == POLICY_SESSION_AWARE)
		return SY_OK;
	if (fallback != POLICY_ROUND_ROBIN && fallback != POLICY_RANDOM &&
	    fallback != POLICY_POWER_OF_N && fallback != POLICY_LOAD_BASED) {
		if (why)
			*why = "a sticky fallback must be round_robin, random, power_of_two, "
			       "power_of_n or load_based";
		return SY_EINVAL;
	}
	return fallback_new(p, fallback, fallback_n ? fallback_n : 2, why);
}

void policy_set_rotation(struct policy *p, const char *bucket_id, enum engine_stage stage)
{
	char id[320];
	int n = snprintf(id, sizeof(id), "rotation:%u:%s", (unsigned)stage, bucket_id);
	if (n < 0)
		return;
	size_t len = (size_t)n < sizeof(id) ? (size_t)n : sizeof(id) - 1;
	uint64_t key = XXH3_64bits(id, len);
	p->rotation_key = key != 0 ? key : 1;
	p->rotation_region = NULL;
	if (p->fallback != NULL) {
		n = snprintf(id, sizeof(id), "rotation:%u:%s:fallback", (unsigned)stage, bucket_id);
		len = n > 0 && (size_t)n < sizeof(id) ? (size_t)n : sizeof(id) - 1;
		key = XXH3_64bits(id, len);
		p->fallback->rotation_key = key != 0 ? key : 1;
		p->fallback->rotation_region = NULL;
	}
}

/* rotation_idx of a region whose cursor table had no room: rotate locally
 * (for the generation's life: a reload looks again). */
#define ROTATION_LOCAL UINT32_MAX

uint64_t policy_rotate(struct policy *p, const struct pick_ctx *ctx)
{
	const struct statebus_region *r = ctx->region;
	if (r == NULL || p->rotation_key == 0)
		return p->cursor++;
	uint64_t v;
	if (p->rotation_region == r) {
		if (p->rotation_idx == ROTATION_LOCAL)
			return p->cursor++;
		if (statebus_cursor_next(r, p->rotation_idx, p->rotation_key, &v) == SY_OK)
			return v;
		/* the entry holds another key: another region at this address */
	}
	uint32_t idx;
	p->rotation_region = r;
	if (statebus_cursor_find(r, p->rotation_key, &idx) == SY_OK &&
	    statebus_cursor_next(r, idx, p->rotation_key, &v) == SY_OK) {
		p->rotation_idx = idx;
		return v;
	}
	p->rotation_idx = ROTATION_LOCAL;
	return p->cursor++;
}

void policy_destroy(struct policy *p)
{
	if (p->ops != NULL && p->ops->destroy != NULL)
		p->ops->destroy(p);
	if (p->fallback != NULL) {
		policy_destroy(p->fallback);
		free(p->fallback);
	}
	p->fallback = NULL;
	p->ops = NULL;
	p->state = NULL;
}

enum pick_outcome policy_pick(struct policy *p, struct pick_ctx *ctx, struct pick *out)
{
	out->worker = NULL;
	out->reason = NULL;
	out->rejected_by = ADMIT_OK;
	if (p->ops == NULL)
		return PICK_INVALID_CONFIGURATION;
	return p->ops->pick(p, ctx, out);
}

enum admission_limit policy_admit(struct policy *p, struct pick_ctx *ctx, size_t i,
				  struct pick *out)
{
	const struct engine_load *l = pick_ctx_load(ctx, i);
	enum admission_limit lim = engine_admission_check(&p->admission, l);
	if (lim != ADMIT_OK) {
		out->rejected_by = lim;
		if (ctx->rej != NULL) {
			ctx->rej->count++;
			if (ctx->rej->err != NULL)
				router_error_add_rejection(ctx->rej->err, ctx->cands[i].id,
							   admission_limit_name(lim));
		}
	}
	return lim;
}

/* ---- random numbers ------------------------------------------------------ */

static __thread uint64_t rng_state;
static __thread bool rng_seeded;
static pthread_once_t rng_once = PTHREAD_ONCE_INIT;

static void rng_forget(void) { rng_seeded = false; }

static void rng_register(void) { pthread_atfork(NULL, NULL, rng_forget); }

void router_rng_seed(uint64_t seed)
{
	pthread_once(&rng_once, rng_register);
	rng_state = seed;
	rng_seeded = true;
}

static void rng_seed_fresh(void)
{
	uint64_t s = 0;
	if (getrandom(&s, sizeof(s), GRND_NONBLOCK) != (ssize_t)sizeof(s)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		s = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ ((uint64_t)getpid() << 16);
	}
	router_rng_seed(s);
}

uint64_t router_rng_next(void)
{
	if (__builtin_expect(!rng_seeded, 0))
		rng_seed_fresh();
	uint64_t z = (rng_state += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

uint64_t router_rng_below(uint64_t n)
{
	/* Multiply-shift (Lemire): bias ≤ n / 2^64, negligible here. */
	return (uint64_t)(((unsigned __int128)router_rng_next() * n) >> 64);
}
