/* test_queue_rows.c — the router queue's rows in the region
 * (statebus-queue.h): wake counter moves on release / token return / load
 * report, the concurrency cap over two processes, zeroing on reap. */
#include <check.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sb_test.h"
#include "statebus-queue.h"
#include "sy_check.h"

START_TEST(test_release_and_token_return_move_the_wake_sum)
{
	char path[64];
	uint32_t pa;
	struct statebus_region *a = sbt_create_small_router(path, sizeof(path), &pa);
	uint64_t w0 = statebus_queue_wakes(a);
	ck_assert_int_eq(statebus_inflight_acquire(a, pa, 1, 1), SY_OK);
	ck_assert_uint_eq(statebus_queue_wakes(a), w0); /* an acquire frees nothing */
	ck_assert_int_eq(statebus_inflight_release(a, pa, 1), SY_OK);
	uint64_t w1 = statebus_queue_wakes(a);
	ck_assert_uint_gt(w1, w0);
	ck_assert_int_eq(statebus_inflight_release(a, pa, 1), SY_ERANGE);
	ck_assert_uint_eq(statebus_queue_wakes(a), w1); /* nothing released, no wake */
	ck_assert_int_eq(statebus_queue_running_take(a, pa, 1), SY_OK);
	ck_assert_int_eq(statebus_queue_running_put(a, pa), SY_OK);
	ck_assert_uint_gt(statebus_queue_wakes(a), w1);
	ck_assert_int_eq(statebus_queue_running_put(a, pa), SY_ERANGE);
	ck_assert_int_eq(statebus_queue_wake(a, STATEBUS_QUEUE_WRITER), SY_OK);
	ck_assert_int_eq(statebus_queue_wake(a, 99), SY_EINVAL);
	sbt_destroy(a, path);
}
END_TEST

/* Two processes race for 50 tokens each under a cap of 30: the sum never
 * passes the cap, and tokens held by a process that dies are freed by the
 * reaper. */
START_TEST(test_cap_holds_over_two_processes_and_dies_with_its_holder)
{
	char path[64];
	uint32_t pa;
	struct statebus_region *a = sbt_create_small_router(path, sizeof(path), &pa);
	int fds[2];
	ck_assert_int_eq(pipe(fds), 0);
	pid_t pid = fork();
	if (pid == 0) {
		uint32_t pb;
		struct statebus_region *b = sbt_child_attach_router(path, &pb);
		int got = 0;
		for (int i = 0; i < 50; i++)
			if (statebus_queue_running_take(b, pb, 30) == SY_OK)
				got++;
		if (statebus_queue_running_sum(b) > 30)
			_exit(2);
		char c = (char)got;
		if (write(fds[1], &c, 1) != 1)
			_exit(3);
		_exit(0); /* dies holding its tokens */
	}
	int got = 0;
	for (int i = 0; i < 50; i++)
		if (statebus_queue_running_take(a, pa, 30) == SY_OK)
			got++;
	char c = 0;
	ck_assert_int_eq(read(fds[0], &c, 1), 1);
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ck_assert_int_le(got + c, 30);
	ck_assert_int_eq(statebus_queue_running_sum(a), got + c);
	ck_assert_int_eq(statebus_writer_lock(a, true), SY_OK);
	ck_assert_int_eq(statebus_procs_reap(a), 1);
	ck_assert_int_eq(statebus_queue_running_sum(a), got);
	statebus_writer_unlock(a);
	close(fds[0]);
	close(fds[1]);
	sbt_destroy(a, path);
}
END_TEST

START_TEST(test_depths_sum_over_processes_and_clear_on_release)
{
	char path[64];
	uint32_t pa;
	struct statebus_region *a = sbt_create_small_router(path, sizeof(path), &pa);
	ck_assert_int_eq(statebus_queue_set_depth(a, pa, STATEBUS_QCLASS_BULK, 7), SY_OK);
	ck_assert_int_eq(statebus_queue_set_depth(a, pa, STATEBUS_QCLASS_SYSTEM, 2), SY_OK);
	ck_assert_int_eq(statebus_queue_set_depth(a, pa, 4, 1), SY_EINVAL);
	ck_assert_uint_eq(statebus_queue_depth_sum(a), 9);
	ck_assert_int_eq(statebus_queue_count(a, pa, STATEBUS_QOUT_TIMED_OUT), SY_OK);
	struct statebus_queue_info qi;
	ck_assert_int_eq(statebus_queue_read(a, pa, &qi), SY_OK);
	ck_assert_uint_eq(qi.outcomes[STATEBUS_QOUT_TIMED_OUT], 1);
	ck_assert_uint_eq(qi.queued[STATEBUS_QCLASS_BULK], 7);
	statebus_proc_release(a);
	ck_assert_uint_eq(statebus_queue_depth_sum(a), 0);
	sbt_destroy(a, path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("queue_rows");
	TCase *tc = tcase_create("queue_rows");
	tcase_add_test(tc, test_release_and_token_return_move_the_wake_sum);
	tcase_add_test(tc, test_cap_holds_over_two_processes_and_dies_with_its_holder);
	tcase_add_test(tc, test_depths_sum_over_processes_and_clear_on_release);
	suite_add_tcase(s, tc);
	return sy_check_run(s);
}
