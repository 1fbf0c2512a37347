/* affinity.c — the affinity store: session and sticky bindings shared by
 * every router process of the host (DESIGN.md §3, §9).
 *
 * Table. A fixed open-addressing table of affinity_entries (a power of two)
 * 64-byte entries, linear probing from home = key.lo mod capacity over at
 * most SB_AFF_MAX_PROBE positions. A key is the 128-bit XXH3 digest of the
 * SGLang binding key string (statebus_affinity_key_make): model, bucket,
 * stage and the session / routing key, so two scopes never share an entry
 * short of a 128-bit collision. The value is a worker (slot, generation),
 * the idle TTL, and creation / last-use times. Entries never go back to
 * EMPTY: an expired or invalidated binding becomes a TOMBSTONE, which a
 * later first assignment reuses, so a key is always found before the first
 * EMPTY of its chain.
 *
 * State word. Everything a concurrent writer may change is one 64-bit word
 * (sb-int.h SB_AFF_STATE): status, a 14-bit version, worker slot and
 * generation. Every transition is a CAS on that word:
 *   EMPTY/TOMBSTONE(v) → CLAIMING(v+1, pid)   claim (first assignment)
 *   CLAIMING(v, pid)   → BOUND(v, slot, gen)  publish (release order)
 *   BOUND(v, s, g)     → BOUND(v, s', g')     rebind (replace an invalid worker)
 *   BOUND(v, ...)      → TOMBSTONE(v)         expiry / invalidation (sweep)
 *   CLAIMING(v, pid)   → TOMBSTONE(v)         sweep, when the claimer died
 * The key, kind, TTL and creation time are written only by the claimer while
 * the entry is CLAIMING and are immutable while it is BOUND. A reader loads
 * the state (acquire), copies the key, and loads the state again: the same
 * version means no claim happened in between, so the copy is never torn
 * (a seqlock whose sequence is the version). last_used_ns is the one field
 * any process stores (relaxed; at most every SB_AFF_TOUCH_NS).
 *
 * First assignment. Two routers may try to bind the same new key at once.
 * Every first assignment of key K runs under stripe lock K.hi mod
 * SB_AFFINITY_LOCKS (a pid word in the region, CAS 0 → pid): rescan the
 * chain (a winner that finished before us is now visible), then claim the
 * first TOMBSTONE or EMPTY position by CAS, write the key, publish BOUND,
 * unlock. Claims of different keys on one position race by CAS only (the
 * loser moves on). A loser of the same key finds the winner's binding and
 * gets SY_EEXIST with it, so every process converges on one binding. The
 * lock is held for a few stores; a waiter spins, then yields; a holder found
 * dead (/proc) is replaced by CAS, and a waiter gives up after
 * SB_AFF_LOCK_WAIT_NS (SY_EBUSY: the caller routes without binding). A
 * claimer that died leaves a CLAIMING entry, skipped by every scan and
 * tombstoned by the next sweep.
 *
 * Replacement. A binding whose worker is no longer a candidate (removed, or
 * the slot reused: another generation) is replaced by a CAS from the exact
 * state the caller saw (statebus_affinity_rebind); a loser gets the winner
 * (SY_EEXIST) and re-checks it; callers bound their retries.
 *
 * Sweep (statebus daemon, or the router master when no statebus runs):
 * tombstones bindings idle past their TTL, bindings whose worker (slot,
 * generation) is no longer valid, and claims of dead processes.
 *
 * Lifetime. The table is in the region: it survives restarts of every
 * daemon; the statebus's index reset never touches it.
 */
#include <sched.h>
#include <string.h>
#include <unistd.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "common/clock.h"
#include "sb-int.h"

#define SB_AFF_MAX_PROBE 128u
#define SB_AFF_TOUCH_NS UINT64_C(50000000)     /* 50 ms: last-use granularity */
#define SB_AFF_LOCK_WAIT_NS UINT64_C(200000000) /* 200 ms: give up a stripe lock */
#define SB_AFF_READ_RETRIES 64

enum { EMPTY = STATEBUS_AFFINITY_EMPTY, CLAIMING = STATEBUS_AFFINITY_CLAIMING,
       BOUND = STATEBUS_AFFINITY_BOUND, TOMBSTONE = STATEBUS_AFFINITY_TOMBSTONE };

static struct sb_affinity_entry *entry_at(const struct statebus_region *r, uint32_t i)
{
	return (struct sb_affinity_entry *)sb_table(r, SB_T_AFFINITY) + i;
}

static struct sb_affinity_lock *lock_at(const struct statebus_region *r, uint32_t i)
{
	return (struct sb_affinity_lock *)sb_table(r, SB_T_AFFLOCKS) + i;
}

static uint32_t cap_of(const struct statebus_region *r) { return r->hdr->affinity_entries; }

static uint32_t probe_len(const struct statebus_region *r)
{
	return cap_of(r) < SB_AFF_MAX_PROBE ? cap_of(r) : SB_AFF_MAX_PROBE;
}

static void count(const struct statebus_region *r, uint64_t *c)
{
	(void)r; /* counters live in the region header */
	(void)uatomic_add_return(c, 1);
}

/* ---- keys ----------------------------------------------------------------- */

static void upd_len(XXH3_state_t *st, size_t len)
{
	char num[24];
	int n = snprintf(num, sizeof(num), "%zu:", len);
	XXH3_128bits_update(st, num, (size_t)n);
}

int statebus_affinity_key_make(enum statebus_affinity_kind kind, uint32_t stage,
			       const char *model, size_t model_len, const char *bucket,
			       size_t bucket_len, const char *key, size_t key_len,
			       struct statebus_affinity_key *out)
{
	static const char *const stages[] = {"plain", "prefill", "decode"};
	if (out == NULL || stage > 2 || (model == NULL && model_len) ||
	    (bucket == NULL && bucket_len) || (key == NULL && key_len) ||
	    (kind != STATEBUS_AFFINITY_SESSION && kind != STATEBUS_AFFINITY_STICKY))
		return SY_EINVAL;
	XXH3_state_t st;
	XXH3_INITSTATE(&st);
	XXH3_128bits_reset(&st);
	const char *k = kind == STATEBUS_AFFINITY_SESSION ? "session:" : "sticky:";
	XXH3_128bits_update(&st, k, strlen(k));
	XXH3_128bits_update(&st, stages[stage], strlen(stages[stage]));
	XXH3_128bits_update(&st, ":", 1);
	upd_len(&st, model_len);
	XXH3_128bits_update(&st, model, model_len);
	upd_len(&st, bucket_len);
	XXH3_128bits_update(&st, bucket, bucket_len);
	XXH3_128bits_update(&st, key, key_len);
	XXH128_hash_t h = XXH3_128bits_digest(&st);
	out->lo = h.low64;
	out->hi = h.high64;
	return SY_OK;
}

/* ---- reading one entry ------------------------------------------------------ */

/* Loads entry i's state and, when BOUND, its key, consistently (same
 * version before and after the copy). Returns the state word (status
 * CLAIMING after SB_AFF_READ_RETRIES churned reads: skip it). */
static uint64_t entry_read(const struct sb_affinity_entry *e, struct statebus_affinity_key *k)
{
	for (int i = 0; i < SB_AFF_READ_RETRIES; i++) {
		uint64_t s1 = __atomic_load_n(&e->state, __ATOMIC_ACQUIRE);
		if (SB_AFF_STATUS(s1) != BOUND)
			return s1;
		k->lo = CMM_LOAD_SHARED(e->key_lo);
		k->hi = CMM_LOAD_SHARED(e->key_hi);
		cmm_smp_rmb();
		uint64_t s2 = CMM_LOAD_SHARED(e->state);
		if (SB_AFF_VERSION(s2) != SB_AFF_VERSION(s1))
			continue; /* reclaimed under us: the copy may be torn */
		return s2; /* BOUND (a rebind keeps the key: the latest word) or
			      TOMBSTONE (expired meanwhile) */
	}
	return SB_AFF_STATE(CLAIMING, 0, 0, 0);
}

static bool key_eq(const struct statebus_affinity_key *a, const struct statebus_affinity_key *b)
{
	return a->lo == b->lo && a->hi == b->hi;
}

static void fill(struct statebus_affinity_binding *out, uint32_t idx, uint64_t s)
{
	out->worker = SB_AFF_SLOT(s);
	out->worker_gen = SB_AFF_GEN(s);
	out->index = idx;
	out->reserved = 0;
	out->token = s;
}

static void touch(struct sb_affinity_entry *e, uint64_t now_ns)
{
	uint64_t last = CMM_LOAD_SHARED(e->last_used_ns);
	if (now_ns > last && now_ns - last >= SB_AFF_TOUCH_NS)
		CMM_STORE_SHARED(e->last_used_ns, now_ns);
}

/* Scans K's chain: SY_OK with *idx and *state of its BOUND entry, else
 * SY_ENOENT. */
static int find(const struct statebus_region *r, const struct statebus_affinity_key *key,
		uint32_t *idx, uint64_t *state)
{
	uint32_t mask = cap_of(r) - 1, n = probe_len(r);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t j = (uint32_t)(key->lo + i) & mask;
		struct statebus_affinity_key k;
		uint64_t s = entry_read(entry_at(r, j), &k);
		uint32_t st = SB_AFF_STATUS(s);
		if (st == EMPTY)
			return SY_ENOENT;
		if (st == BOUND && key_eq(&k, key)) {
			*idx = j;
			*state = s;
			return SY_OK;
		}
	}
	return SY_ENOENT;
}

int statebus_affinity_lookup(const struct statebus_region *r,
			     const struct statebus_affinity_key *key, uint64_t now_ns,
			     struct statebus_affinity_binding *out)
{
	if (r == NULL || key == NULL || out == NULL)
		return SY_EINVAL;
	uint32_t idx;
	uint64_t s;
	int rc = find(r, key, &idx, &s);
	if (rc != SY_OK)
		return rc;
	if (now_ns != 0)
		touch(entry_at(r, idx), now_ns);
	fill(out, idx, s);
	return SY_OK;
}

/* ---- stripe locks --------------------------------------------------------- */

static int stripe_lock(const struct statebus_region *r, struct sb_affinity_lock *l, int32_t self)
{
	uint64_t start = 0;
	for (unsigned spin = 0;; spin++) {
		int32_t cur = CMM_LOAD_SHARED(l->pid);
		if (cur == 0) {
			if (uatomic_cmpxchg(&l->pid, 0, self) == 0)
				return SY_OK;
			continue;
		}
		if (spin < 256) {
			caa_cpu_relax();
			continue;
		}
		if (spin % 16 == 0) {
			uint64_t st;
			if (cur != self && sb_proc_stat(cur, &st) != SY_OK) {
				if (uatomic_cmpxchg(&l->pid, cur, self) == cur) {
					count(r, &r->hdr->affinity.lock_steals);
					return SY_OK;
				}
				continue;
			}
			uint64_t now = sy_mono_ns();
			if (start == 0)
				start = now;
			else if (now - start > SB_AFF_LOCK_WAIT_NS)
				return SY_EBUSY;
		}
		sched_yield();
	}
}

static void stripe_unlock(struct sb_affinity_lock *l, int32_t self)
{
	/* Release: the BOUND word is visible before the lock reads free. A lock
	 * stolen from us (we were thought dead) is left to its new holder. */
	(void)uatomic_cmpxchg(&l->pid, self, 0);
}

/* ---- first assignment ------------------------------------------------------- */

int statebus_affinity_bind(const struct statebus_region *r,
			   const struct statebus_affinity_key *key, enum statebus_affinity_kind kind,
			   uint32_t worker, uint32_t worker_gen, uint32_t ttl_ms, uint64_t now_ns,
			   struct statebus_affinity_binding *out)
{
	if (r == NULL || key == NULL || out == NULL || worker >= r->hdr->max_workers ||
	    worker > 0xffffu || ttl_ms == 0 ||
	    (kind != STATEBUS_AFFINITY_SESSION && kind != STATEBUS_AFFINITY_STICKY))
		return SY_EINVAL;
	struct sb_affinity_hdr *c = &r->hdr->affinity;
	uint32_t idx;
	uint64_t s;
	if (find(r, key, &idx, &s) == SY_OK) {
		count(r, &c->bind_conflicts);
		touch(entry_at(r, idx), now_ns);
		fill(out, idx, s);
		return SY_EEXIST;
	}
	int32_t self = (int32_t)getpid();
	struct sb_affinity_lock *l = lock_at(r, (uint32_t)(key->hi % SB_AFFINITY_LOCKS));
	if (stripe_lock(r, l, self) != SY_OK) {
		count(r, &c->busy);
		return SY_EBUSY;
	}
	/* Under the lock nobody else assigns K: a winner that finished before
	 * we took it is visible now (lock CAS = full barrier). */
	if (find(r, key, &idx, &s) == SY_OK) {
		stripe_unlock(l, self);
		count(r, &c->bind_conflicts);
		touch(entry_at(r, idx), now_ns);
		fill(out, idx, s);
		return SY_EEXIST;
	}
	uint32_t mask = cap_of(r) - 1, n = probe_len(r);
	struct sb_affinity_entry *e = NULL;
	uint32_t ver = 0;
	for (uint32_t i = 0; i < n && e == NULL; i++) {
		uint32_t j = (uint32_t)(key->lo + i) & mask;
		struct sb_affinity_entry *x = entry_at(r, j);
		for (;;) {
			uint64_t cur = CMM_LOAD_SHARED(x->state);
			uint32_t st = SB_AFF_STATUS(cur);
			if (st != EMPTY && st != TOMBSTONE)
				break; /* taken: next position */
			uint32_t v = (SB_AFF_VERSION(cur) + 1) & 0x3fffu;
			uint64_t claim = SB_AFF_STATE(CLAIMING, v, 0, (uint32_t)self);
			if (uatomic_cmpxchg(&x->state, cur, claim) == cur) {
				e = x;
				idx = j;
				ver = v;
				break;
			}
			/* another key's claimer won this position: re-read it */
		}
	}
	if (e == NULL) {
		stripe_unlock(l, self);
		count(r, &c->full);
		return SY_ENOSPC;
	}
	CMM_STORE_SHARED(e->key_lo, key->lo);
	CMM_STORE_SHARED(e->key_hi, key->hi);
	CMM_STORE_SHARED(e->kind, (uint32_t)kind);
	CMM_STORE_SHARED(e->ttl_ms, ttl_ms);
	CMM_STORE_SHARED(e->created_ns, now_ns);
	CMM_STORE_SHARED(e->last_used_ns, now_ns);
	uint64_t claim = SB_AFF_STATE(CLAIMING, ver, 0, (uint32_t)self);
	uint64_t bound = SB_AFF_STATE(BOUND, ver, worker, worker_gen);
	/* uatomic_cmpxchg is a full barrier: the fields above precede BOUND. */
	uint64_t prev = uatomic_cmpxchg(&e->state, claim, bound);
	stripe_unlock(l, self);
	if (prev != claim)
		return SY_EBUSY; /* swept as abandoned: we were taken for dead */
	count(r, &c->binds);
	fill(out, idx, bound);
	return SY_OK;
}

/* ---- replacement, removal ------------------------------------------------------ */

static int check_handle(const struct statebus_region *r, const struct statebus_affinity_key *key,
			const struct statebus_affinity_binding *old)
{
	if (r == NULL || key == NULL || old == NULL || old->index >= cap_of(r) ||
	    SB_AFF_STATUS(old->token) != BOUND)
		return SY_EINVAL;
	return SY_OK;
}

int statebus_affinity_rebind(const struct statebus_region *r,
			     const struct statebus_affinity_key *key,
			     const struct statebus_affinity_binding *old, uint32_t worker,
			     uint32_t worker_gen, uint64_t now_ns,
			     struct statebus_affinity_binding *out)
{
	if (check_handle(r, key, old) != SY_OK || out == NULL || worker >= r->hdr->max_workers ||
	    worker > 0xffffu)
		return SY_EINVAL;
	struct sb_affinity_entry *e = entry_at(r, old->index);
	struct statebus_affinity_key k;
	uint64_t now = entry_read(e, &k);
	if (SB_AFF_STATUS(now) != BOUND || SB_AFF_VERSION(now) != SB_AFF_VERSION(old->token) ||
	    !key_eq(&k, key))
		return SY_ENOENT; /* expired or reused: bind afresh */
	uint64_t want = SB_AFF_STATE(BOUND, SB_AFF_VERSION(old->token), worker, worker_gen);
	uint64_t prev = uatomic_cmpxchg(&e->state, old->token, want);
	if (prev == old->token) {
		CMM_STORE_SHARED(e->last_used_ns, now_ns);
		count(r, &r->hdr->affinity.rebinds);
		fill(out, old->index, want);
		return SY_OK;
	}
	if (SB_AFF_STATUS(prev) == BOUND && SB_AFF_VERSION(prev) == SB_AFF_VERSION(old->token)) {
		count(r, &r->hdr->affinity.rebind_conflicts);
		fill(out, old->index, prev);
		return SY_EEXIST;
	}
	return SY_ENOENT;
}

int statebus_affinity_unbind(const struct statebus_region *r,
			     const struct statebus_affinity_key *key,
			     const struct statebus_affinity_binding *b)
{
	if (check_handle(r, key, b) != SY_OK)
		return SY_EINVAL;
	struct sb_affinity_entry *e = entry_at(r, b->index);
	struct statebus_affinity_key k;
	uint64_t now = entry_read(e, &k);
	if (SB_AFF_STATUS(now) != BOUND || SB_AFF_VERSION(now) != SB_AFF_VERSION(b->token) ||
	    !key_eq(&k, key))
		return SY_ENOENT;
	uint64_t tomb = SB_AFF_STATE(TOMBSTONE, SB_AFF_VERSION(now), 0, 0);
	return uatomic_cmpxchg(&e->state, now, tomb) == now ? SY_OK : SY_EBUSY;
}

/* ---- sweep ------------------------------------------------------------------- */

int statebus_affinity_sweep(const struct statebus_region *r, uint64_t now_ns,
			    struct statebus_affinity_sweep_result *res)
{
	if (r == NULL)
		return SY_EINVAL;
	struct statebus_affinity_sweep_result tally = {0};
	struct sb_affinity_hdr *c = &r->hdr->affinity;
	uint32_t cap = cap_of(r);
	for (uint32_t i = 0; i < cap; i++) {
		struct sb_affinity_entry *e = entry_at(r, i);
		uint64_t s = CMM_LOAD_SHARED(e->state);
		uint32_t st = SB_AFF_STATUS(s);
		uint64_t tomb = SB_AFF_STATE(TOMBSTONE, SB_AFF_VERSION(s), 0, 0);
		if (st == CLAIMING) {
			uint64_t start;
			if (sb_proc_stat((int32_t)SB_AFF_GEN(s), &start) != SY_OK &&
			    uatomic_cmpxchg(&e->state, s, tomb) == s) {
				tally.abandoned++;
				count(r, &c->abandoned);
			}
			continue;
		}
		if (st != BOUND)
			continue;
		uint64_t last = CMM_LOAD_SHARED(e->last_used_ns);
		uint64_t ttl_ns = (uint64_t)CMM_LOAD_SHARED(e->ttl_ms) * 1000000u;
		bool expired = now_ns > last && now_ns - last > ttl_ns;
		bool invalid = !expired && !statebus_worker_valid(r, SB_AFF_SLOT(s), SB_AFF_GEN(s));
		if (!expired && !invalid)
			continue;
		if (uatomic_cmpxchg(&e->state, s, tomb) != s)
			continue; /* rebound or swept meanwhile: next sweep decides */
		if (expired) {
			tally.expired++;
			count(r, &c->expired);
		} else {
			tally.invalidated++;
			count(r, &c->invalidated);
		}
	}
	count(r, &c->sweeps);
	if (res != NULL)
		*res = tally;
	return (int)(tally.expired + tally.invalidated + tally.abandoned);
}

/* ---- tools ---------------------------------------------------------------------- */

int statebus_affinity_read(const struct statebus_region *r, uint32_t index,
			   struct statebus_affinity_info *out)
{
	if (r == NULL || out == NULL || index >= cap_of(r))
		return SY_EINVAL;
	const struct sb_affinity_entry *e = entry_at(r, index);
	memset(out, 0, sizeof(*out));
	out->index = index;
	for (int i = 0; i < SB_AFF_READ_RETRIES; i++) {
		uint64_t s1 = __atomic_load_n(&e->state, __ATOMIC_ACQUIRE);
		out->state = SB_AFF_STATUS(s1);
		out->worker = SB_AFF_SLOT(s1);
		out->worker_gen = SB_AFF_GEN(s1);
		out->key.lo = CMM_LOAD_SHARED(e->key_lo);
		out->key.hi = CMM_LOAD_SHARED(e->key_hi);
		out->kind = CMM_LOAD_SHARED(e->kind);
		out->ttl_ms = CMM_LOAD_SHARED(e->ttl_ms);
		out->created_ns = CMM_LOAD_SHARED(e->created_ns);
		out->last_used_ns = CMM_LOAD_SHARED(e->last_used_ns);
		cmm_smp_rmb();
		if (CMM_LOAD_SHARED(e->state) == s1)
			return SY_OK;
	}
	return SY_ESTALE;
}

void statebus_affinity_stats(const struct statebus_region *r, struct statebus_affinity_stats *out)
{
	const struct sb_affinity_hdr *c = &r->hdr->affinity;
	memset(out, 0, sizeof(*out));
	out->capacity = cap_of(r);
	out->locks = SB_AFFINITY_LOCKS;
	for (uint32_t i = 0; i < out->capacity; i++) {
		switch (SB_AFF_STATUS(CMM_LOAD_SHARED(entry_at(r, i)->state))) {
		case EMPTY: out->empty++; break;
		case CLAIMING: out->claiming++; break;
		case BOUND: out->bound++; break;
		default: out->tombstones++; break;
		}
	}
	out->binds = CMM_LOAD_SHARED(c->binds);
	out->bind_conflicts = CMM_LOAD_SHARED(c->bind_conflicts);
	out->rebinds = CMM_LOAD_SHARED(c->rebinds);
	out->rebind_conflicts = CMM_LOAD_SHARED(c->rebind_conflicts);
	out->expired = CMM_LOAD_SHARED(c->expired);
	out->invalidated = CMM_LOAD_SHARED(c->invalidated);
	out->abandoned = CMM_LOAD_SHARED(c->abandoned);
	out->full = CMM_LOAD_SHARED(c->full);
	out->busy = CMM_LOAD_SHARED(c->busy);
	out->lock_steals = CMM_LOAD_SHARED(c->lock_steals);
	out->sweeps = CMM_LOAD_SHARED(c->sweeps);
}
