/* test_load.c — load table: per-rank records, the aggregated view's
 * freshness and rank-completeness rules (sglang-wire.md §13), torn-read
 * freedom against a concurrent writer thread, and a writer killed mid-update. */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "sb_test.h"
#include "statebus/sb-int.h"
#include "sy_check.h"

#define SEC UINT64_C(1000000000)

struct fixture {
	char path[64];
	struct statebus_region *r;
	uint32_t slot, gen;
};

static void fx_open(struct fixture *f, uint16_t dp)
{
	sbt_path(f->path, sizeof(f->path));
	struct statebus_params p = sbt_small();
	f->r = sbt_create(f->path, &p);
	ck_assert_int_eq(statebus_writer_lock(f->r, true), SY_OK);
	struct statebus_worker w = sbt_worker("http://a:1", dp);
	ck_assert_int_eq(statebus_worker_add(f->r, &w, &f->slot, &f->gen), SY_OK);
}

static void fx_close(struct fixture *f)
{
	statebus_region_close(f->r);
	statebus_region_destroy(f->path);
}

static struct statebus_load_report rep(uint32_t running, uint32_t waiting, uint32_t tokens,
				       uint32_t max_total, uint64_t t)
{
	struct statebus_load_report x = {.num_running_reqs = running, .num_waiting_reqs = waiting,
					 .num_tokens = tokens, .max_total_num_tokens = max_total,
					 .recv_mono_ns = t};
	return x;
}

START_TEST(test_view_sums_ranks_and_captured_at_is_oldest)
{
	struct fixture f;
	fx_open(&f, 2);
	uint64_t t = 100 * SEC;
	struct statebus_load_report a = rep(1, 2, 300, 1000, t - 2 * SEC);
	struct statebus_load_report b = rep(4, 5, 600, 2000, t - 1 * SEC);
	ck_assert_int_eq(statebus_load_write(f.r, f.slot, f.gen, 0, &a), SY_OK);
	ck_assert_int_eq(statebus_load_write(f.r, f.slot, f.gen, 1, &b), SY_OK);
	ck_assert_int_eq(statebus_load_write(f.r, f.slot, f.gen, 2, &b), SY_EINVAL); /* rank ≥ dp_size */
	ck_assert_int_eq(statebus_load_write(f.r, f.slot, f.gen + 1, 0, &b), SY_ENOENT);
	struct statebus_load_view v;
	ck_assert_int_eq(statebus_load_view(f.r, f.slot, t, &v), SY_OK);
	ck_assert_uint_eq(v.status, STATEBUS_LOAD_FRESH);
	ck_assert_uint_eq(v.num_running_reqs, 5);
	ck_assert_uint_eq(v.num_waiting_reqs, 7);
	ck_assert_uint_eq(v.num_tokens, 900);
	ck_assert_uint_eq(v.max_total_num_tokens, 3000);
	ck_assert_uint_eq(v.captured_at_ns, t - 2 * SEC);
	ck_assert(!v.native);
	fx_close(&f);
}
END_TEST

START_TEST(test_missing_rank_is_unknown_not_partial_sum)
{
	struct fixture f;
	fx_open(&f, 2);
	uint64_t t = 100 * SEC;
	struct statebus_load_report a = rep(1, 2, 3, 4, t);
	ck_assert_int_eq(statebus_load_write(f.r, f.slot, f.gen, 0, &a), SY_OK);
	struct statebus_load_view v;
	ck_assert_int_eq(statebus_load_view(f.r, f.slot, t, &v), SY_ESTALE);
	ck_assert_uint_eq(v.status, STATEBUS_LOAD_UNKNOWN);
	ck_assert_uint_eq(v.reason, STATEBUS_LOAD_REASON_MISSING);
	ck_assert_uint_eq(v.num_running_reqs, 0);
	struct statebus_load_report out;
	ck_assert_int_eq(statebus_load_read_rank(f.r, f.slot, 1, &out), SY_ENOENT);
	ck_assert_int_eq(statebus_load_read_rank(f.r, f.slot, 0, &out), SY_OK);
	ck_assert_uint_eq(out.num_running_reqs, 1);
	fx_close(&f);
}
END_TEST

START_TEST(test_one_stale_rank_makes_worker_unknown_at_5s)
{
	struct fixture f;
	fx_open(&f, 2);
	uint64_t t = 100 * SEC;
	struct statebus_load_report a = rep(1, 1, 1, 1, t - 5 * SEC);      /* exactly 5 s: fresh */
	struct statebus_load_report b = rep(1, 1, 1, 1, t);
	statebus_load_write(f.r, f.slot, f.gen, 0, &a);
	statebus_load_write(f.r, f.slot, f.gen, 1, &b);
	struct statebus_load_view v;
	ck_assert_int_eq(statebus_load_view(f.r, f.slot, t, &v), SY_OK);
	ck_assert_int_eq(statebus_load_view(f.r, f.slot, t + 1, &v), SY_ESTALE);
	ck_assert_uint_eq(v.reason, STATEBUS_LOAD_REASON_STALE);
	statebus_region_set_fresh_ns(f.r, 10 * SEC); /* overridable window */
	ck_assert_int_eq(statebus_load_view(f.r, f.slot, t + 1, &v), SY_OK);
	fx_close(&f);
}
END_TEST

START_TEST(test_native_view_needs_v3_and_capacities_on_every_rank)
{
	struct fixture f;
	fx_open(&f, 2);
	uint64_t t = 100 * SEC;
	struct statebus_load_report a = rep(1, 1, 10, 100, t);
	a.flags = STATEBUS_LOAD_HAS_V3 | STATEBUS_LOAD_HAS_THROUGHPUT;
	a.num_waiting_uncached_tokens = 7;
	a.num_total_tokens = 11;
	a.max_running_requests = 32;
	a.prefill_tokens_per_s = 1000.0f;
	struct statebus_load_report b = a;
	statebus_load_write(f.r, f.slot, f.gen, 0, &a);
	statebus_load_write(f.r, f.slot, f.gen, 1, &b);
	struct statebus_load_view v;
	ck_assert_int_eq(statebus_load_view(f.r, f.slot, t, &v), SY_OK);
	ck_assert(v.native);
	ck_assert(v.has_throughput);
	ck_assert_uint_eq(v.num_waiting_uncached_tokens, 14);
	ck_assert_uint_eq(v.max_running_requests, 64);
	ck_assert(v.prefill_tokens_per_s > 1999.0 && v.prefill_tokens_per_s < 2001.0);
	b.max_running_requests = 0; /* one rank lacks a capacity */
	statebus_load_write(f.r, f.slot, f.gen, 1, &b);
	ck_assert_int_eq(statebus_load_view(f.r, f.slot, t, &v), SY_OK);
	ck_assert(!v.native);
	ck_assert_uint_eq(v.num_waiting_uncached_tokens, 0);
	ck_assert_uint_eq(v.num_running_reqs, 2); /* basic view stays */
	fx_close(&f);
}
END_TEST

START_TEST(test_reports_of_removed_worker_are_not_seen_by_new_one)
{
	struct fixture f;
	fx_open(&f, 1);
	uint64_t t = 100 * SEC;
	struct statebus_load_report a = rep(9, 9, 9, 9, t);
	statebus_load_write(f.r, f.slot, f.gen, 0, &a);
	ck_assert_int_eq(statebus_worker_remove(f.r, f.slot, f.gen), SY_OK);
	struct statebus_load_view v;
	ck_assert_int_eq(statebus_load_view(f.r, f.slot, t, &v), SY_ENOENT);
	struct statebus_worker w = sbt_worker("http://b:1", 1);
	uint32_t s2, g2;
	ck_assert_int_eq(statebus_worker_add(f.r, &w, &s2, &g2), SY_OK);
	ck_assert_uint_eq(s2, f.slot);
	ck_assert_int_eq(statebus_load_view(f.r, s2, t, &v), SY_ESTALE);
	ck_assert_uint_eq(v.reason, STATEBUS_LOAD_REASON_MISSING);
	fx_close(&f);
}
END_TEST

START_TEST(test_load_write_stores_dispatch_sum_at_receipt)
{
	struct fixture f;
	fx_open(&f, 1);
	struct statebus_region *rt = sbt_create(f.path, NULL);
	uint32_t proc;
	ck_assert_int_eq(statebus_proc_claim(rt, STATEBUS_PROC_ROUTER, &proc), SY_OK);
	for (int i = 0; i < 3; i++)
		statebus_inflight_acquire(rt, proc, f.slot, 5);
	struct statebus_load_report a = rep(1, 1, 1, 1, 100 * SEC);
	statebus_load_write(f.r, f.slot, f.gen, 0, &a);
	statebus_inflight_acquire(rt, proc, f.slot, 6);
	struct statebus_load_view v;
	ck_assert_int_eq(statebus_load_view(f.r, f.slot, 100 * SEC, &v), SY_OK);
	ck_assert_uint_eq(v.dispatches_at_capture, 3);
	uint64_t d;
	statebus_inflight_sum(rt, f.slot, NULL, &d);
	ck_assert_uint_eq(d - v.dispatches_at_capture, 1); /* dispatches since the report */
	statebus_region_close(rt);
	fx_close(&f);
}
END_TEST

/* ---- torn reads: writer thread vs reader -------------------------------- */

struct torn_arg {
	struct fixture *f;
	volatile int stop;
	uint64_t writes;
};

/* Checksummed report for value x: every field derives from x. */
static struct statebus_load_report ck_rep(uint32_t x)
{
	struct statebus_load_report a = rep(x, x * 3 + 1, x ^ 0x5a5a5a5a, ~x, (uint64_t)x * 7 + 1);
	a.num_waiting_uncached_tokens = x * 5;
	a.num_total_tokens = x + 11;
	a.max_running_requests = x | 1;
	a.flags = STATEBUS_LOAD_HAS_V3;
	return a;
}

static bool ck_ok(const struct statebus_load_report *o)
{
	uint32_t x = o->num_running_reqs;
	return o->num_waiting_reqs == x * 3 + 1 && o->num_tokens == (x ^ 0x5a5a5a5a) &&
	       o->max_total_num_tokens == ~x && o->recv_mono_ns == (uint64_t)x * 7 + 1 &&
	       o->num_waiting_uncached_tokens == x * 5 && o->num_total_tokens == x + 11 &&
	       o->max_running_requests == (x | 1);
}

static void *writer_thread(void *p)
{
	struct torn_arg *a = p;
	uint32_t x = 1;
	while (!a->stop) {
		struct statebus_load_report r = ck_rep(x++);
		statebus_load_write(a->f->r, a->f->slot, a->f->gen, 0, &r);
		a->writes++;
	}
	return NULL;
}

START_TEST(test_seqlock_load_record_never_read_torn_under_writer_thread)
{
	struct fixture f;
	fx_open(&f, 1);
	struct statebus_region *rd = sbt_create(f.path, NULL);
	struct torn_arg a = {.f = &f};
	pthread_t th;
	ck_assert_int_eq(pthread_create(&th, NULL, writer_thread, &a), 0);
	uint64_t ok = 0, stale = 0, end = sy_mono_ns() + SEC / 2;
	while (sy_mono_ns() < end) {
		for (int i = 0; i < 1000; i++) {
			struct statebus_load_report o;
			int rc = statebus_load_read_rank(rd, f.slot, 0, &o);
			if (rc == SY_OK) {
				ck_assert_msg(ck_ok(&o), "torn read x=%u", o.num_running_reqs);
				ok++;
			} else {
				ck_assert_int_ne(rc, SY_EINVAL);
				stale++;
			}
		}
	}
	a.stop = 1;
	pthread_join(th, NULL);
	ck_assert_uint_gt(ok, 1000);
	ck_assert_uint_gt(a.writes, 1000);
	statebus_region_close(rd);
	fx_close(&f);
}
END_TEST

/* A writer process SIGKILLed between odd and even: the record reads as
 * unknown (SY_ESTALE / TORN), and after the next writer lock as absent. */
START_TEST(test_writer_killed_mid_load_update_reads_unknown_never_valid)
{
	struct fixture f;
	fx_open(&f, 1);
	struct statebus_load_report good = ck_rep(7);
	good.recv_mono_ns = 100 * SEC;
	ck_assert_int_eq(statebus_load_write(f.r, f.slot, f.gen, 0, &good), SY_OK);
	statebus_writer_unlock(f.r);
	pid_t pid = fork();
	if (pid == 0) {
		struct statebus_region *c = NULL;
		if (statebus_region_open(f.path, NULL, STATEBUS_ATTACH_ONLY, &c, NULL, 0) != SY_OK ||
		    statebus_writer_lock(c, true) != SY_OK)
			_exit(1);
		struct sb_load_rec *rec = sb_load_at(c, f.slot, 0);
		(void)sb_seq_write_begin(&rec->seq);
		rec->num_running_reqs = 12345; /* half of an update */
		raise(SIGKILL);
		_exit(2);
	}
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFSIGNALED(st));
	struct statebus_load_report o;
	ck_assert_int_eq(statebus_load_read_rank(f.r, f.slot, 0, &o), SY_ESTALE);
	ck_assert_uint_eq(o.num_running_reqs, 0);
	struct statebus_load_view v;
	ck_assert_int_eq(statebus_load_view(f.r, f.slot, 100 * SEC, &v), SY_ESTALE);
	ck_assert_uint_eq(v.status, STATEBUS_LOAD_UNKNOWN);
	ck_assert_uint_eq(v.reason, STATEBUS_LOAD_REASON_TORN);
	ck_assert_int_eq(statebus_writer_lock(f.r, true), SY_OK); /* repairs */
	ck_assert_int_eq(statebus_load_read_rank(f.r, f.slot, 0, &o), SY_ENOENT);
	ck_assert_int_eq(statebus_load_view(f.r, f.slot, 100 * SEC, &v), SY_ESTALE);
	ck_assert_uint_eq(v.reason, STATEBUS_LOAD_REASON_MISSING);
	fx_close(&f);
}
END_TEST

/* policy-defaults.md §12 scenario 24 with its exact numbers: ranks
 * (running 5, waiting 1) + (3, 2) → load 11, captured_at = the earlier
 * rank's time; one rank 3600 s old (window 5 s) → the worker is absent
 * (unknown, stale); expected ranks {0, 1} with only 0 reported → absent. */
START_TEST(test_scenario_24_load_table_exact_numbers)
{
	struct fixture f;
	fx_open(&f, 2);
	uint64_t t = 7200 * SEC;
	struct statebus_load_report r0 = rep(5, 1, 0, 100, t - 1 * SEC);
	struct statebus_load_report r1 = rep(3, 2, 0, 100, t - 2 * SEC);
	ck_assert_int_eq(statebus_load_write(f.r, f.slot, f.gen, 0, &r0), SY_OK);
	ck_assert_int_eq(statebus_load_write(f.r, f.slot, f.gen, 1, &r1), SY_OK);
	struct statebus_load_view v;
	ck_assert_int_eq(statebus_load_view(f.r, f.slot, t, &v), SY_OK);
	ck_assert_uint_eq(v.status, STATEBUS_LOAD_FRESH);
	ck_assert_uint_eq(v.num_running_reqs + v.num_waiting_reqs, 11);
	ck_assert_uint_eq(v.num_running_reqs, 8);
	ck_assert_uint_eq(v.num_waiting_reqs, 3);
	ck_assert_uint_eq(v.captured_at_ns, t - 2 * SEC); /* the earliest rank */
	struct statebus_load_report old = rep(3, 2, 0, 100, t - 3600 * SEC);
	ck_assert_int_eq(statebus_load_write(f.r, f.slot, f.gen, 1, &old), SY_OK);
	ck_assert_int_eq(statebus_load_view(f.r, f.slot, t, &v), SY_ESTALE);
	ck_assert_uint_eq(v.status, STATEBUS_LOAD_UNKNOWN);
	ck_assert_uint_eq(v.reason, STATEBUS_LOAD_REASON_STALE);
	ck_assert_uint_eq(v.num_running_reqs + v.num_waiting_reqs, 0); /* never a partial sum */
	fx_close(&f);

	fx_open(&f, 2); /* expected ranks {0, 1}, only 0 reported */
	ck_assert_int_eq(statebus_load_write(f.r, f.slot, f.gen, 0, &r0), SY_OK);
	ck_assert_int_eq(statebus_load_view(f.r, f.slot, t, &v), SY_ESTALE);
	ck_assert_uint_eq(v.status, STATEBUS_LOAD_UNKNOWN);
	ck_assert_uint_eq(v.reason, STATEBUS_LOAD_REASON_MISSING);
	fx_close(&f);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("load");
	TCase *tc = tcase_create("load");
	tcase_add_test(tc, test_view_sums_ranks_and_captured_at_is_oldest);
	tcase_add_test(tc, test_scenario_24_load_table_exact_numbers);
	tcase_add_test(tc, test_missing_rank_is_unknown_not_partial_sum);
	tcase_add_test(tc, test_one_stale_rank_makes_worker_unknown_at_5s);
	tcase_add_test(tc, test_native_view_needs_v3_and_capacities_on_every_rank);
	tcase_add_test(tc, test_reports_of_removed_worker_are_not_seen_by_new_one);
	tcase_add_test(tc, test_load_write_stores_dispatch_sum_at_receipt);
	tcase_add_test(tc, test_seqlock_load_record_never_read_torn_under_writer_thread);
	tcase_add_test(tc, test_writer_killed_mid_load_update_reads_unknown_never_valid);
	suite_add_tcase(s, tc);
	return sy_check_run(s);
}
