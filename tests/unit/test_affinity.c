/* test_affinity.c — the state plane's affinity store (statebus/affinity.c):
 * scoped keys, first assignment and its concurrent winner, CAS replacement,
 * idle expiry and tombstone reuse (scenario 25's timings), worker
 * invalidation, abandoned claims and stripe locks of dead processes, a full
 * probe window, survival across close/reopen and index resets, and forked
 * processes racing first assignments for 1,000 sessions. */
#include <check.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "statebus/sb-int.h"
#include "sb_test.h"
#include "sy_check.h"

#define SEC UINT64_C(1000000000)
#define T0 (UINT64_C(5000) * SEC)

static char path[64];
static struct statebus_region *r;
static uint32_t wslot[4], wgen[4];

static void setup(void)
{
	sbt_path(path, sizeof(path));
	struct statebus_params p = sbt_small();
	p.affinity_entries = 4096;
	r = sbt_create(path, &p);
	ck_assert_int_eq(statebus_writer_lock(r, true), SY_OK);
	const char *ids[4] = {"http://a", "http://b", "http://c", "http://d"};
	for (int i = 0; i < 4; i++) {
		struct statebus_worker w = sbt_worker(ids[i], 1);
		ck_assert_int_eq(statebus_worker_add(r, &w, &wslot[i], &wgen[i]), SY_OK);
	}
	statebus_writer_unlock(r);
}

static void teardown(void)
{
	sbt_destroy(r, path);
}

static struct statebus_affinity_key key_of(const char *session)
{
	struct statebus_affinity_key k;
	ck_assert_int_eq(statebus_affinity_key_make(STATEBUS_AFFINITY_SESSION, 0, "m", 1, "default",
						    7, session, strlen(session), &k),
			 SY_OK);
	return k;
}

START_TEST(test_key_scope_separates_kind_stage_model_bucket_and_lengths)
{
	struct statebus_affinity_key a, b;
	ck_assert_int_eq(statebus_affinity_key_make(STATEBUS_AFFINITY_SESSION, 0, "m", 1, "bk", 2,
						    "s1", 2, &a), SY_OK);
	ck_assert_int_eq(statebus_affinity_key_make(STATEBUS_AFFINITY_SESSION, 0, "m", 1, "bk", 2,
						    "s1", 2, &b), SY_OK);
	ck_assert(a.lo == b.lo && a.hi == b.hi); /* deterministic across calls and processes */
	struct statebus_affinity_key o[5];
	statebus_affinity_key_make(STATEBUS_AFFINITY_STICKY, 0, "m", 1, "bk", 2, "s1", 2, &o[0]);
	statebus_affinity_key_make(STATEBUS_AFFINITY_SESSION, 1, "m", 1, "bk", 2, "s1", 2, &o[1]);
	statebus_affinity_key_make(STATEBUS_AFFINITY_SESSION, 0, "n", 1, "bk", 2, "s1", 2, &o[2]);
	statebus_affinity_key_make(STATEBUS_AFFINITY_SESSION, 0, "m", 1, "b", 1, "ks1", 3, &o[3]);
	statebus_affinity_key_make(STATEBUS_AFFINITY_SESSION, 0, "m", 1, "bk", 2, "s2", 2, &o[4]);
	for (int i = 0; i < 5; i++)
		ck_assert_msg(!(o[i].lo == a.lo && o[i].hi == a.hi), "scope %d collides", i);
	ck_assert_int_eq(statebus_affinity_key_make(7, 0, "m", 1, "b", 1, "k", 1, &a), SY_EINVAL);
	ck_assert_int_eq(statebus_affinity_key_make(STATEBUS_AFFINITY_SESSION, 3, "m", 1, "b", 1,
						    "k", 1, &a), SY_EINVAL);
}
END_TEST

START_TEST(test_first_assignment_wins_and_a_second_bind_gets_the_winner)
{
	struct statebus_affinity_key k = key_of("s-1");
	struct statebus_affinity_binding b, w;
	ck_assert_int_eq(statebus_affinity_lookup(r, &k, T0, &b), SY_ENOENT);
	ck_assert_int_eq(statebus_affinity_bind(r, &k, STATEBUS_AFFINITY_SESSION, wslot[1], wgen[1],
						600000, T0, &b), SY_OK);
	ck_assert_uint_eq(b.worker, wslot[1]);
	ck_assert_int_eq(statebus_affinity_bind(r, &k, STATEBUS_AFFINITY_SESSION, wslot[2], wgen[2],
						600000, T0, &w), SY_EEXIST);
	ck_assert_uint_eq(w.worker, wslot[1]);
	ck_assert_uint_eq(w.worker_gen, wgen[1]);
	ck_assert_int_eq(statebus_affinity_lookup(r, &k, T0, &b), SY_OK);
	ck_assert_uint_eq(b.worker, wslot[1]);
	struct statebus_affinity_stats st;
	statebus_affinity_stats(r, &st);
	ck_assert_uint_eq(st.bound, 1);
	ck_assert_uint_eq(st.binds, 1);
	ck_assert_uint_eq(st.bind_conflicts, 1);
	ck_assert_uint_eq(st.capacity, 4096);
}
END_TEST

START_TEST(test_rebind_is_a_cas_on_the_state_seen_and_a_loser_gets_the_winner)
{
	struct statebus_affinity_key k = key_of("s-2");
	struct statebus_affinity_binding b, x, y;
	ck_assert_int_eq(statebus_affinity_bind(r, &k, STATEBUS_AFFINITY_SESSION, wslot[0], wgen[0],
						600000, T0, &b), SY_OK);
	/* Two routers saw the same binding; the first replacement wins. */
	ck_assert_int_eq(statebus_affinity_rebind(r, &k, &b, wslot[1], wgen[1], T0, &x), SY_OK);
	ck_assert_uint_eq(x.worker, wslot[1]);
	ck_assert_int_eq(statebus_affinity_rebind(r, &k, &b, wslot[2], wgen[2], T0, &y), SY_EEXIST);
	ck_assert_uint_eq(y.worker, wslot[1]);
	ck_assert_int_eq(statebus_affinity_lookup(r, &k, T0, &y), SY_OK);
	ck_assert_uint_eq(y.worker, wslot[1]);
	/* Gone meanwhile → ENOENT: bind afresh. */
	ck_assert_int_eq(statebus_affinity_unbind(r, &k, &x), SY_OK);
	ck_assert_int_eq(statebus_affinity_rebind(r, &k, &x, wslot[3], wgen[3], T0, &y), SY_ENOENT);
	ck_assert_int_eq(statebus_affinity_lookup(r, &k, T0, &y), SY_ENOENT);
	struct statebus_affinity_stats st;
	statebus_affinity_stats(r, &st);
	ck_assert_uint_eq(st.rebinds, 1);
	ck_assert_uint_eq(st.rebind_conflicts, 1);
	ck_assert_uint_eq(st.tombstones, 1);
}
END_TEST

/* Scenario 25 timings: idle 10 s; "old" used at t0, "new" at t6, a sweep at
 * t11 removes only "old". */
START_TEST(test_sweep_expires_only_bindings_idle_past_their_ttl_scenario25)
{
	struct statebus_affinity_key old = key_of("old"), new = key_of("new");
	struct statebus_affinity_binding b;
	ck_assert_int_eq(statebus_affinity_bind(r, &old, STATEBUS_AFFINITY_STICKY, wslot[0],
						wgen[0], 10000, T0, &b), SY_OK);
	ck_assert_int_eq(statebus_affinity_bind(r, &new, STATEBUS_AFFINITY_STICKY, wslot[1],
						wgen[1], 10000, T0 + 6 * SEC, &b), SY_OK);
	struct statebus_affinity_sweep_result res;
	ck_assert_int_eq(statebus_affinity_sweep(r, T0 + 10 * SEC, &res), 0); /* exactly 10 s: kept */
	ck_assert_int_eq(statebus_affinity_sweep(r, T0 + 11 * SEC, &res), 1);
	ck_assert_uint_eq(res.expired, 1);
	ck_assert_int_eq(statebus_affinity_lookup(r, &old, 0, &b), SY_ENOENT);
	ck_assert_int_eq(statebus_affinity_lookup(r, &new, 0, &b), SY_OK);
	/* A lookup hit is a use: it moves the expiry. */
	ck_assert_int_eq(statebus_affinity_lookup(r, &new, T0 + 15 * SEC, &b), SY_OK);
	ck_assert_int_eq(statebus_affinity_sweep(r, T0 + 24 * SEC, &res), 0);
	ck_assert_int_eq(statebus_affinity_sweep(r, T0 + 26 * SEC, &res), 1);
}
END_TEST

START_TEST(test_tombstones_are_reused_by_later_first_assignments)
{
	struct statebus_affinity_key k = key_of("t");
	struct statebus_affinity_binding b, c;
	ck_assert_int_eq(statebus_affinity_bind(r, &k, STATEBUS_AFFINITY_SESSION, wslot[0], wgen[0],
						1000, T0, &b), SY_OK);
	ck_assert_int_eq(statebus_affinity_sweep(r, T0 + 2 * SEC, NULL), 1);
	ck_assert_int_eq(statebus_affinity_bind(r, &k, STATEBUS_AFFINITY_SESSION, wslot[3], wgen[3],
						1000, T0 + 2 * SEC, &c), SY_OK);
	ck_assert_uint_eq(c.index, b.index); /* same home, tombstone reused */
	ck_assert_uint_eq(c.worker, wslot[3]);
	struct statebus_affinity_stats st;
	statebus_affinity_stats(r, &st);
	ck_assert_uint_eq(st.tombstones, 0);
	ck_assert_uint_eq(st.bound, 1);
	struct statebus_affinity_info info;
	ck_assert_int_eq(statebus_affinity_read(r, c.index, &info), SY_OK);
	ck_assert_uint_eq(info.state, STATEBUS_AFFINITY_BOUND);
	ck_assert_uint_eq(info.kind, STATEBUS_AFFINITY_SESSION);
	ck_assert_uint_eq(info.ttl_ms, 1000);
	ck_assert(info.key.lo == k.lo && info.key.hi == k.hi);
}
END_TEST

START_TEST(test_sweep_invalidates_bindings_of_removed_or_reused_worker_slots)
{
	struct statebus_affinity_key k = key_of("w");
	struct statebus_affinity_binding b;
	ck_assert_int_eq(statebus_affinity_bind(r, &k, STATEBUS_AFFINITY_SESSION, wslot[2], wgen[2],
						600000, T0, &b), SY_OK);
	ck_assert_int_eq(statebus_affinity_sweep(r, T0, NULL), 0);
	ck_assert_int_eq(statebus_writer_lock(r, true), SY_OK);
	ck_assert_int_eq(statebus_worker_remove(r, wslot[2], wgen[2]), SY_OK);
	struct statebus_worker w = sbt_worker("http://e", 1);
	uint32_t s, g;
	ck_assert_int_eq(statebus_worker_add(r, &w, &s, &g), SY_OK); /* reuses the slot */
	statebus_writer_unlock(r);
	ck_assert_uint_eq(s, wslot[2]);
	ck_assert_uint_ne(g, wgen[2]);
	/* Before the sweep a lookup still names the old (slot, gen): callers
	 * treat it as unbound (not valid) and replace it. */
	ck_assert_int_eq(statebus_affinity_lookup(r, &k, T0, &b), SY_OK);
	ck_assert(!statebus_worker_valid(r, b.worker, b.worker_gen));
	struct statebus_affinity_sweep_result res;
	ck_assert_int_eq(statebus_affinity_sweep(r, T0, &res), 1);
	ck_assert_uint_eq(res.invalidated, 1);
	ck_assert_int_eq(statebus_affinity_lookup(r, &k, T0, &b), SY_ENOENT);
}
END_TEST

static pid_t dead_pid(void)
{
	pid_t p = fork();
	if (p == 0)
		_exit(0);
	waitpid(p, NULL, 0);
	return p;
}

START_TEST(test_claim_and_stripe_lock_of_a_dead_process_are_recovered)
{
	struct statebus_affinity_key k = key_of("dead");
	pid_t gone = dead_pid();
	/* A claimer died between claim and publish: its entry is CLAIMING. */
	struct sb_affinity_entry *e = (struct sb_affinity_entry *)sb_table(r, SB_T_AFFINITY) +
				      (k.lo & 4095);
	e->state = SB_AFF_STATE(STATEBUS_AFFINITY_CLAIMING, 1, 0, (uint32_t)gone);
	/* ... holding the key's stripe lock. */
	struct sb_affinity_lock *l =
		(struct sb_affinity_lock *)sb_table(r, SB_T_AFFLOCKS) + (k.hi % SB_AFFINITY_LOCKS);
	l->pid = gone;
	struct statebus_affinity_binding b;
	ck_assert_int_eq(statebus_affinity_bind(r, &k, STATEBUS_AFFINITY_SESSION, wslot[0], wgen[0],
						600000, T0, &b), SY_OK);
	ck_assert_uint_ne(b.index, (uint32_t)(k.lo & 4095)); /* the claimed entry is skipped */
	ck_assert_int_eq(l->pid, 0);
	struct statebus_affinity_sweep_result res;
	ck_assert_int_eq(statebus_affinity_sweep(r, T0, &res), 1);
	ck_assert_uint_eq(res.abandoned, 1);
	struct statebus_affinity_stats st;
	statebus_affinity_stats(r, &st);
	ck_assert_uint_eq(st.lock_steals, 1);
	ck_assert_uint_eq(st.claiming, 0);
	ck_assert_uint_eq(st.tombstones, 1);
	ck_assert_int_eq(statebus_affinity_lookup(r, &k, T0, &b), SY_OK);
}
END_TEST

START_TEST(test_full_probe_window_refuses_a_first_assignment)
{
	char p2[64];
	sbt_path(p2, sizeof(p2));
	struct statebus_params p = sbt_small();
	p.affinity_entries = 64; /* probe window = the whole table */
	struct statebus_region *s = sbt_create(p2, &p);
	struct statebus_affinity_binding b;
	char name[16];
	for (int i = 0; i < 64; i++) {
		snprintf(name, sizeof(name), "k%d", i);
		struct statebus_affinity_key k = key_of(name);
		ck_assert_int_eq(statebus_affinity_bind(s, &k, STATEBUS_AFFINITY_SESSION, 0, 1, 1000,
							T0, &b), SY_OK);
	}
	struct statebus_affinity_key k = key_of("one-too-many");
	ck_assert_int_eq(statebus_affinity_bind(s, &k, STATEBUS_AFFINITY_SESSION, 0, 1, 1000, T0, &b),
			 SY_ENOSPC);
	k = key_of("k17");
	ck_assert_int_eq(statebus_affinity_lookup(s, &k, T0, &b), SY_OK); /* all still found */
	struct statebus_affinity_stats st;
	statebus_affinity_stats(s, &st);
	ck_assert_uint_eq(st.full, 1);
	ck_assert_uint_eq(st.bound, 64);
	statebus_region_close(s);
	statebus_region_destroy(p2);
	p.affinity_entries = 100; /* not a power of two */
	char err[256];
	ck_assert_int_eq(statebus_region_open(p2, &p, STATEBUS_CREATE, &s, err, sizeof(err)),
			 SY_ERANGE);
}
END_TEST

START_TEST(test_bindings_survive_close_reopen_and_index_reset)
{
	struct statebus_affinity_key k = key_of("keep");
	struct statebus_affinity_binding b;
	ck_assert_int_eq(statebus_affinity_bind(r, &k, STATEBUS_AFFINITY_SESSION, wslot[3], wgen[3],
						600000, T0, &b), SY_OK);
	statebus_region_close(r);
	char err[256];
	ck_assert_int_eq(statebus_region_open(path, NULL, STATEBUS_ATTACH_ONLY, &r, err, sizeof(err)),
			 SY_OK);
	ck_assert_int_eq(statebus_writer_lock(r, true), SY_OK);
	ck_assert_int_eq(statebus_index_reset(r), SY_OK); /* a restarting statebus */
	statebus_writer_unlock(r);
	ck_assert_int_eq(statebus_affinity_lookup(r, &k, T0, &b), SY_OK);
	ck_assert_uint_eq(b.worker, wslot[3]);
	ck_assert_uint_eq(b.worker_gen, wgen[3]);
	struct statebus_header_info h;
	statebus_region_info(r, &h);
	ck_assert_uint_eq(h.layout_version, STATEBUS_LAYOUT_VERSION);
	ck_assert_uint_eq(h.params.affinity_entries, 4096);
	ck_assert_uint_eq(h.affinity_size, 4096 * 64);
}
END_TEST

/* ---- multi-process first assignment ---------------------------------------- */

#define SESSIONS 1000
#define RACERS 4

/* Every racer binds every session to its own worker, in the same order,
 * released together; each records the winner it was handed. */
START_TEST(test_forked_racers_converge_on_one_binding_per_session)
{
	size_t sz = sizeof(uint32_t) * RACERS * SESSIONS + 64;
	uint32_t *res = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert(res != MAP_FAILED);
	volatile uint32_t *go = res + RACERS * SESSIONS;
	memset(res, 0xff, sz - 64);
	*go = 0;
	pid_t kids[RACERS];
	for (int p = 0; p < RACERS; p++) {
		kids[p] = fork();
		ck_assert(kids[p] >= 0);
		if (kids[p] == 0) {
			struct statebus_region *c = NULL;
			char err[256];
			if (statebus_region_open(path, NULL, STATEBUS_ATTACH_ONLY, &c, err,
						 sizeof(err)) != SY_OK)
				_exit(2);
			__atomic_add_fetch(go, 1, __ATOMIC_SEQ_CST);
			while (__atomic_load_n(go, __ATOMIC_ACQUIRE) < RACERS)
				;
			char name[32];
			for (int s = 0; s < SESSIONS; s++) {
				snprintf(name, sizeof(name), "session-%d", s);
				struct statebus_affinity_key k;
				statebus_affinity_key_make(STATEBUS_AFFINITY_SESSION, 0, "m", 1,
							   "default", 7, name, strlen(name), &k);
				struct statebus_affinity_binding b;
				/* Odd racers look up first (the policies' path), even
				 * ones go straight to bind (which looks up itself). */
				int rc = p % 2 ? statebus_affinity_lookup(c, &k, T0, &b) : SY_ENOENT;
				if (rc == SY_ENOENT)
					rc = statebus_affinity_bind(c, &k, STATEBUS_AFFINITY_SESSION,
								    wslot[p], wgen[p], 600000, T0,
								    &b);
				if (rc != SY_OK && rc != SY_EEXIST)
					_exit(3);
				res[p * SESSIONS + s] = b.worker;
			}
			statebus_region_close(c);
			_exit(0);
		}
	}
	for (int p = 0; p < RACERS; p++) {
		int st = 0;
		ck_assert_int_eq(waitpid(kids[p], &st, 0), kids[p]);
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "racer %d status %d", p, st);
	}
	uint32_t won[RACERS] = {0};
	for (int s = 0; s < SESSIONS; s++) {
		uint32_t w = res[s];
		for (int p = 1; p < RACERS; p++)
			ck_assert_msg(res[p * SESSIONS + s] == w, "session %d: racer %d got %u, racer 0 %u",
				      s, p, res[p * SESSIONS + s], w);
		char name[32];
		snprintf(name, sizeof(name), "session-%d", s);
		struct statebus_affinity_key k = key_of(name);
		struct statebus_affinity_binding b;
		ck_assert_int_eq(statebus_affinity_lookup(r, &k, 0, &b), SY_OK);
		ck_assert_uint_eq(b.worker, w);
		for (int p = 0; p < RACERS; p++)
			won[p] += w == wslot[p];
	}
	struct statebus_affinity_stats st;
	statebus_affinity_stats(r, &st);
	ck_assert_uint_eq(st.bound, SESSIONS);    /* one entry per session, no duplicates */
	ck_assert_uint_eq(st.binds, SESSIONS);    /* exactly one first assignment won each */
	ck_assert_uint_eq(st.claiming, 0);
	ck_assert_uint_le(st.binds + st.bind_conflicts, (uint64_t)SESSIONS * RACERS);
	/* the two bind-first racers lose every session they did not win */
	ck_assert_uint_ge(st.bind_conflicts, (uint64_t)SESSIONS * 2 - won[0] - won[2]);
	ck_assert_uint_eq(won[0] + won[1] + won[2] + won[3], SESSIONS);
	munmap(res, sz);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("affinity");
	TCase *tc = tcase_create("store");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_key_scope_separates_kind_stage_model_bucket_and_lengths);
	tcase_add_test(tc, test_first_assignment_wins_and_a_second_bind_gets_the_winner);
	tcase_add_test(tc, test_rebind_is_a_cas_on_the_state_seen_and_a_loser_gets_the_winner);
	tcase_add_test(tc, test_sweep_expires_only_bindings_idle_past_their_ttl_scenario25);
	tcase_add_test(tc, test_tombstones_are_reused_by_later_first_assignments);
	tcase_add_test(tc, test_sweep_invalidates_bindings_of_removed_or_reused_worker_slots);
	tcase_add_test(tc, test_claim_and_stripe_lock_of_a_dead_process_are_recovered);
	tcase_add_test(tc, test_full_probe_window_refuses_a_first_assignment);
	tcase_add_test(tc, test_bindings_survive_close_reopen_and_index_reset);
	tcase_add_test(tc, test_forked_racers_converge_on_one_binding_per_session);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sy_check_run(suite());
}
