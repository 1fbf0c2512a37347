/* test_inflight.c — per-process in-flight rows: own-row atomic counts,
 * sums across processes, release underflow, zeroing on release. */
#include <check.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sb_test.h"
#include "sy_check.h"

START_TEST(test_rows_of_two_processes_sum_per_worker)
{
	char path[64];
	uint32_t pa;
	struct statebus_region *a = sbt_create_small_router(path, sizeof(path), &pa);
	pid_t pid = fork();
	if (pid == 0) {
		uint32_t pb;
		struct statebus_region *b = sbt_child_attach_router(path, &pb);
		for (int i = 0; i < 1000; i++)
			statebus_inflight_acquire(b, pb, 2, 77);
		for (int i = 0; i < 400; i++)
			statebus_inflight_release(b, pb, 2);
		_exit(0); /* exits without releasing its slot: row stays until reaped */
	}
	for (int i = 0; i < 10; i++)
		statebus_inflight_acquire(a, pa, 2, 5);
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	int64_t n;
	uint64_t d;
	ck_assert_int_eq(statebus_inflight_sum(a, 2, &n, &d), SY_OK);
	ck_assert_int_eq(n, 610);
	ck_assert_uint_eq(d, 1010);
	struct statebus_inflight_info ci;
	ck_assert_int_eq(statebus_inflight_read(a, pa, 2, &ci), SY_OK);
	ck_assert_int_eq(ci.in_flight, 10);
	ck_assert_uint_eq(ci.last_dispatch_ns, 5);
	/* the dead process's row is zeroed by the reaper */
	ck_assert_int_eq(statebus_writer_lock(a, true), SY_OK);
	ck_assert_int_eq(statebus_procs_reap(a), 1);
	ck_assert_int_eq(statebus_inflight_sum(a, 2, &n, &d), SY_OK);
	ck_assert_int_eq(n, 10);
	ck_assert_uint_eq(d, 10);
	sbt_destroy(a, path);
}
END_TEST

/* The sum reads the rows of the slots ever claimed: a process that holds
 * the highest slot of the table is counted; slots never claimed are not
 * read (they are zero). */
START_TEST(test_sum_counts_the_highest_claimed_slot)
{
	char path[64];
	struct statebus_region *a = sbt_create_small(path, sizeof(path));
	uint32_t procs = sbt_small().max_procs;
	struct statebus_region *h[64] = {0};
	ck_assert_uint_le(procs, 64);
	uint32_t slot = 0;
	for (uint32_t i = 0; i < procs; i++) {
		ck_assert_int_eq(statebus_region_open(path, NULL, STATEBUS_ATTACH_ONLY, &h[i], NULL, 0),
				 SY_OK);
		ck_assert_int_eq(statebus_proc_claim(h[i], STATEBUS_PROC_ROUTER, &slot), SY_OK);
	}
	ck_assert_uint_eq(slot, procs - 1);
	ck_assert_int_eq(statebus_inflight_acquire(h[procs - 1], slot, 3, 9), SY_OK);
	ck_assert_int_eq(statebus_inflight_acquire(h[0], 0, 3, 9), SY_OK);
	int64_t n;
	uint64_t d;
	ck_assert_int_eq(statebus_inflight_sum(a, 3, &n, &d), SY_OK);
	ck_assert_int_eq(n, 2);
	ck_assert_uint_eq(d, 2);
	for (uint32_t i = 0; i < procs; i++)
		statebus_region_close(h[i]);
	sbt_destroy(a, path);
}
END_TEST

START_TEST(test_release_without_acquire_is_erange_and_stays_zero)
{
	char path[64];
	uint32_t pa;
	struct statebus_region *a = sbt_create_small_router(path, sizeof(path), &pa);
	ck_assert_int_eq(statebus_inflight_release(a, pa, 1), SY_ERANGE);
	int64_t n;
	statebus_inflight_sum(a, 1, &n, NULL);
	ck_assert_int_eq(n, 0);
	ck_assert_int_eq(statebus_inflight_acquire(a, pa, 8, 1), SY_EINVAL);
	ck_assert_int_eq(statebus_inflight_acquire(a, 8, 1, 1), SY_EINVAL);
	statebus_inflight_acquire(a, pa, 1, 1);
	statebus_proc_release(a); /* a clean exit zeroes the row */
	statebus_inflight_sum(a, 1, &n, NULL);
	ck_assert_int_eq(n, 0);
	sbt_destroy(a, path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("inflight");
	TCase *tc = tcase_create("inflight");
	tcase_add_test(tc, test_rows_of_two_processes_sum_per_worker);
	tcase_add_test(tc, test_sum_counts_the_highest_claimed_slot);
	tcase_add_test(tc, test_release_without_acquire_is_erange_and_stays_zero);
	suite_add_tcase(s, tc);
	return sy_check_run(s);
}
