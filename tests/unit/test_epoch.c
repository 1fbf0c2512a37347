/* test_epoch.c — process slots, reader brackets, the grace-period
 * primitives (stamp/safe) and reaping of dead readers (kill -9 inside a
 * bracket). */
#include <check.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sb_test.h"
#include "statebus/sb-int.h"
#include "sy_check.h"

START_TEST(test_claim_release_and_slots_full_is_enospc)
{
	char path[64];
	sbt_path(path, sizeof(path));
	struct statebus_params p = sbt_small(); /* 8 proc slots */
	struct statebus_region *h[9];
	for (int i = 0; i < 8; i++) {
		h[i] = sbt_create(path, &p);
		uint32_t slot;
		ck_assert_int_eq(statebus_proc_claim(h[i], STATEBUS_PROC_ROUTER, &slot), SY_OK);
		ck_assert_int_eq(statebus_proc_self(h[i]), (int32_t)slot);
		ck_assert_int_eq(statebus_proc_claim(h[i], STATEBUS_PROC_ROUTER, &slot), SY_EEXIST);
	}
	h[8] = sbt_create(path, &p);
	uint32_t slot;
	ck_assert_int_eq(statebus_proc_claim(h[8], STATEBUS_PROC_TOOL, &slot), SY_ENOSPC);
	struct statebus_proc_info pi;
	ck_assert_int_eq(statebus_proc_read(h[8], 3, &pi), SY_OK);
	ck_assert_int_eq(pi.pid, getpid());
	ck_assert_uint_gt(pi.start_time, 0);
	ck_assert_uint_eq(pi.role, STATEBUS_PROC_ROUTER);
	ck_assert_int_eq(statebus_proc_read(h[8], 8, &pi), SY_EINVAL);
	statebus_region_close(h[3]); /* releases slot 3 */
	ck_assert_int_eq(statebus_proc_claim(h[8], STATEBUS_PROC_TOOL, &slot), SY_OK);
	ck_assert_uint_eq(slot, 3);
	for (int i = 0; i < 9; i++)
		if (i != 3)
			statebus_region_close(h[i]);
	statebus_region_destroy(path);
}
END_TEST

START_TEST(test_bracket_publishes_epoch_and_nests)
{
	char path[64];
	sbt_path(path, sizeof(path));
	struct statebus_region *r = sbt_create(path, NULL);
	uint32_t slot;
	ck_assert_int_eq(statebus_proc_claim(r, STATEBUS_PROC_ROUTER, &slot), SY_OK);
	struct statebus_proc_info pi;
	statebus_read_enter(r);
	statebus_read_enter(r);
	statebus_proc_read(r, slot, &pi);
	ck_assert_uint_eq(pi.epoch, 1);
	statebus_read_leave(r);
	statebus_proc_read(r, slot, &pi);
	ck_assert_uint_eq(pi.epoch, 1); /* still inside the outer bracket */
	statebus_read_leave(r);
	statebus_proc_read(r, slot, &pi);
	ck_assert_uint_eq(pi.epoch, STATEBUS_EPOCH_IDLE);
	sbt_destroy(r, path);
}
END_TEST

/* An item stamped while an older bracket is open is not safe to reclaim
 * until that bracket closes; a bracket opened after the stamp never holds it. */
START_TEST(test_stamp_waits_for_open_bracket_only)
{
	char path[64];
	struct statebus_region *w = sbt_create_small(path, sizeof(path));
	struct statebus_region *rd = sbt_create(path, NULL);
	ck_assert_int_eq(statebus_writer_lock(w, true), SY_OK);
	ck_assert_int_eq(statebus_proc_claim(rd, STATEBUS_PROC_ROUTER, NULL), SY_OK);
	ck_assert_uint_gt(sb_epoch_safe(w), 0);  /* nothing open: every past stamp is safe */
	statebus_read_enter(rd);                 /* reader may hold what is unpublished next */
	uint64_t e = sb_epoch_stamp(w);
	ck_assert_uint_eq(sb_epoch_stamp(w), e + 1); /* each stamp advances the epoch */
	ck_assert_uint_le(sb_epoch_safe(w), e);
	statebus_read_leave(rd);
	ck_assert_uint_gt(sb_epoch_safe(w), e + 1);
	e = sb_epoch_stamp(w);
	statebus_read_enter(rd);
	ck_assert_uint_gt(sb_epoch_safe(w), e);
	statebus_read_leave(rd);
	statebus_region_close(w);
	sbt_destroy(rd, path);
}
END_TEST

/* A reader process killed with SIGKILL inside read_enter holds reclamation
 * back only until statebus_procs_reap(), which also zeroes its in-flight row. */
START_TEST(test_reader_killed_inside_bracket_does_not_block_reclaim_after_reap)
{
	char path[64];
	struct statebus_region *w = sbt_create_small(path, sizeof(path));
	ck_assert_int_eq(statebus_writer_lock(w, true), SY_OK);
	struct statebus_worker wk = sbt_worker("http://e:1", 1);
	uint32_t ws, wg;
	ck_assert_int_eq(statebus_worker_add(w, &wk, &ws, &wg), SY_OK);
	int pfd[2];
	ck_assert_int_eq(pipe(pfd), 0);
	pid_t pid = fork();
	if (pid == 0) {
		struct statebus_region *r = NULL;
		uint32_t slot;
		if (statebus_region_open(path, NULL, STATEBUS_ATTACH_ONLY, &r, NULL, 0) != SY_OK ||
		    statebus_proc_claim(r, STATEBUS_PROC_ROUTER, &slot) != SY_OK)
			_exit(1);
		statebus_inflight_acquire(r, slot, ws, 1);
		statebus_read_enter(r);
		char c = 'x';
		if (write(pfd[1], &c, 1) != 1)
			_exit(2);
		for (;;)
			pause(); /* mid-read, forever */
	}
	close(pfd[1]);
	char c;
	ck_assert_int_eq(read(pfd[0], &c, 1), 1);
	close(pfd[0]);
	int64_t inf;
	statebus_inflight_sum(w, ws, &inf, NULL);
	ck_assert_int_eq(inf, 1);
	uint64_t e = sb_epoch_stamp(w);
	ck_assert_uint_le(sb_epoch_safe(w), e); /* live reader in its bracket */
	kill(pid, SIGKILL);
	siginfo_t si;
	ck_assert_int_eq(waitid(P_PID, pid, &si, WEXITED | WNOWAIT), 0); /* dead, still a zombie */
	ck_assert_uint_le(sb_epoch_safe(w), e); /* dead, but its slot still holds the epoch */
	ck_assert_int_eq(statebus_procs_reap(w), 1); /* zombie counts as gone */
	ck_assert_uint_gt(sb_epoch_safe(w), e);
	statebus_inflight_sum(w, ws, &inf, NULL);
	ck_assert_int_eq(inf, 0);
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFSIGNALED(st));
	ck_assert_int_eq(statebus_procs_reap(w), 0);
	sbt_destroy(w, path);
}
END_TEST

START_TEST(test_reap_keeps_live_slots)
{
	char path[64];
	sbt_path(path, sizeof(path));
	struct statebus_region *w = sbt_create(path, NULL);
	struct statebus_region *rd = sbt_create(path, NULL);
	ck_assert_int_eq(statebus_writer_lock(w, true), SY_OK);
	ck_assert_int_eq(statebus_proc_claim(rd, STATEBUS_PROC_ROUTER, NULL), SY_OK);
	ck_assert_int_eq(statebus_procs_reap(w), 0);
	ck_assert_int_ge(statebus_proc_self(rd), 0);
	statebus_region_close(rd);
	sbt_destroy(w, path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("epoch");
	TCase *tc = tcase_create("epoch");
	tcase_add_test(tc, test_claim_release_and_slots_full_is_enospc);
	tcase_add_test(tc, test_bracket_publishes_epoch_and_nests);
	tcase_add_test(tc, test_stamp_waits_for_open_bracket_only);
	tcase_add_test(tc, test_reader_killed_inside_bracket_does_not_block_reclaim_after_reap);
	tcase_add_test(tc, test_reap_keeps_live_slots);
	suite_add_tcase(s, tc);
	return sy_check_run(s);
}
