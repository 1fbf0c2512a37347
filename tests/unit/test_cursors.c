/* test_cursors.c — the rotation-cursor table (statebus/cursors.c): one
 * cursor per key, claimed once and found again by every handle; atomic
 * advance (forked processes together never lose or repeat a value); a
 * full probe window refused and counted; read-only and bad arguments. */
#include <check.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sb_test.h"
#include "statebus-counters.h"
#include "tests/unit/sy_check.h"

static char path[64];
static struct statebus_region *r;

static void setup(void) { r = sbt_create_small(path, sizeof(path)); }

static void teardown(void) { sbt_destroy(r, path); }

START_TEST(test_one_cursor_per_key_shared_by_handles)
{
	struct statebus_region *r2 = NULL;
	char err[256];
	ck_assert_int_eq(statebus_region_open(path, NULL, STATEBUS_ATTACH_ONLY, &r2, err, sizeof(err)),
			 SY_OK);
	uint32_t a, b, c;
	ck_assert_int_eq(statebus_cursor_find(r, 42, &a), SY_OK);
	ck_assert_int_eq(statebus_cursor_find(r2, 42, &b), SY_OK);
	ck_assert_uint_eq(a, b);
	ck_assert_int_eq(statebus_cursor_find(r, 43, &c), SY_OK);
	ck_assert_uint_ne(a, c);
	/* one sequence over both handles: 0, 1, 2, 3 */
	for (uint64_t want = 0; want < 4; want++) {
		uint64_t v;
		ck_assert_int_eq(statebus_cursor_next(want % 2 ? r2 : r, a, 42, &v), SY_OK);
		ck_assert_uint_eq(v, want);
	}
	uint64_t key, value;
	ck_assert_int_eq(statebus_cursor_read(r, a, &key, &value), SY_OK);
	ck_assert_uint_eq(key, 42);
	ck_assert_uint_eq(value, 4);
	ck_assert_int_eq(statebus_cursor_read(r, c, &key, &value), SY_OK);
	ck_assert_uint_eq(value, 0);
	/* an entry that holds another key is not advanced */
	ck_assert_int_eq(statebus_cursor_next(r, a, 43, &value), SY_ENOENT);
	statebus_region_close(r2);
}
END_TEST

START_TEST(test_bad_arguments_and_read_only)
{
	uint32_t i;
	uint64_t v;
	ck_assert_int_eq(statebus_cursor_find(r, 0, &i), SY_EINVAL);
	ck_assert_int_eq(statebus_cursor_next(r, STATEBUS_CURSORS, 7, &v), SY_EINVAL);
	ck_assert_int_eq(statebus_cursor_read(r, STATEBUS_CURSORS, &v, &v), SY_EINVAL);
	ck_assert_uint_eq(statebus_cursors_capacity(r), STATEBUS_CURSORS);
	struct statebus_region *ro = NULL;
	char err[256];
	ck_assert_int_eq(statebus_region_open(path, NULL, STATEBUS_READ_ONLY, &ro, err, sizeof(err)),
			 SY_OK);
	ck_assert_int_eq(statebus_cursor_find(ro, 9, &i), SY_EPERM);
	statebus_region_close(ro);
}
END_TEST

/* Keys that all start at entry 0 fill its probe window; the next is refused
 * and counted, the earlier ones still found. */
START_TEST(test_full_probe_window_is_refused_and_counted)
{
	uint32_t i;
	for (uint64_t k = 1; k <= STATEBUS_CURSOR_PROBES; k++)
		ck_assert_int_eq(statebus_cursor_find(r, k * STATEBUS_CURSORS, &i), SY_OK);
	ck_assert_int_eq(statebus_cursor_find(r, (STATEBUS_CURSOR_PROBES + 1) * STATEBUS_CURSORS, &i),
			 SY_ENOSPC);
	ck_assert_uint_eq(statebus_counter_get(r, STATEBUS_CTR_CURSORS_FULL), 1);
	ck_assert_int_eq(statebus_cursor_find(r, 3 * STATEBUS_CURSORS, &i), SY_OK);
	ck_assert_uint_eq(i, 2);
	ck_assert_int_eq(statebus_cursor_find(r, 5, &i), SY_OK); /* another start */
}
END_TEST

/* 4 processes × 20,000 advances: the cursor ends at 80,000 and every value
 * was handed out once (each child sums what it got). */
START_TEST(test_forked_processes_advance_without_loss)
{
	enum { PROCS = 4, EACH = 20000 };
	uint32_t idx;
	ck_assert_int_eq(statebus_cursor_find(r, 77, &idx), SY_OK);
	int fds[PROCS][2];
	pid_t pids[PROCS];
	for (int p = 0; p < PROCS; p++) {
		ck_assert_int_eq(pipe(fds[p]), 0);
		pids[p] = fork();
		ck_assert_int_ge(pids[p], 0);
		if (pids[p] == 0) {
			uint64_t sum = 0, v;
			for (int k = 0; k < EACH; k++) {
				if (statebus_cursor_next(r, idx, 77, &v) != SY_OK)
					_exit(2);
				sum += v;
			}
			_exit(write(fds[p][1], &sum, sizeof(sum)) == sizeof(sum) ? 0 : 3);
		}
	}
	uint64_t total = 0;
	for (int p = 0; p < PROCS; p++) {
		int st;
		ck_assert_int_eq(waitpid(pids[p], &st, 0), pids[p]);
		ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		uint64_t s;
		ck_assert_int_eq(read(fds[p][0], &s, sizeof(s)), (ssize_t)sizeof(s));
		total += s;
		close(fds[p][0]);
		close(fds[p][1]);
	}
	uint64_t key, value, n = (uint64_t)PROCS * EACH;
	ck_assert_int_eq(statebus_cursor_read(r, idx, &key, &value), SY_OK);
	ck_assert_uint_eq(value, n);
	ck_assert_uint_eq(total, n * (n - 1) / 2); /* 0 + 1 + … + n-1: none lost, none twice */
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cursors");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_one_cursor_per_key_shared_by_handles);
	tcase_add_test(tc, test_bad_arguments_and_read_only);
	tcase_add_test(tc, test_full_probe_window_is_refused_and_counted);
	tcase_add_test(tc, test_forked_processes_advance_without_loss);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sy_check_run(suite());
}
