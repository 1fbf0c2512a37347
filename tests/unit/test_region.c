/* test_region.c — region create/attach, validation of a hostile header,
 * layout-version mismatch, incarnation, liveness and bounds-checked offsets. */
#include <check.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "sb_test.h"
#include "statebus/sb-int.h"
#include "sy_check.h"

START_TEST(test_create_then_attach_sees_same_capacities)
{
	char path[64];
	struct statebus_region *a = sbt_create_small(path, sizeof(path));
	struct statebus_region *b = NULL;
	char err[256];
	ck_assert_int_eq(statebus_region_open(path, NULL, STATEBUS_ATTACH_ONLY, &b, err, sizeof(err)), SY_OK);
	struct statebus_header_info ia, ib;
	statebus_region_info(a, &ia);
	statebus_region_info(b, &ib);
	ck_assert_uint_eq(ia.magic, STATEBUS_MAGIC);
	ck_assert_uint_eq(ib.layout_version, STATEBUS_LAYOUT_VERSION);
	ck_assert_uint_eq(ib.params.max_workers, 8);
	ck_assert_uint_eq(ib.params.max_dp_ranks, 4);
	ck_assert_uint_eq(ib.params.arena_block_count, 64);
	ck_assert_uint_eq(ib.params.load_fresh_ns, STATEBUS_LOAD_FRESH_NS);
	ck_assert_uint_eq(ia.total_size, ib.total_size);
	ck_assert_uint_eq(ib.arena_free, 64);
	/* a second CREATE attaches and ignores its params */
	struct statebus_params other = {.max_workers = 99};
	struct statebus_region *c = sbt_create(path, &other);
	ck_assert_uint_eq(statebus_workers_capacity(c), 8);
	statebus_region_close(a);
	statebus_region_close(b);
	statebus_region_close(c);
	ck_assert_int_eq(statebus_region_destroy(path), SY_OK);
	ck_assert_int_eq(statebus_region_destroy(path), SY_ENOENT);
}
END_TEST

START_TEST(test_attach_only_missing_region_is_enoent)
{
	char path[64], err[256] = "";
	sbt_path(path, sizeof(path));
	struct statebus_region *r = NULL;
	ck_assert_int_eq(statebus_region_open(path, NULL, STATEBUS_ATTACH_ONLY, &r, err, sizeof(err)), SY_ENOENT);
	ck_assert_ptr_null(r);
	ck_assert(strlen(err) > 0);
}
END_TEST

START_TEST(test_region_survives_creator_exit)
{
	char path[64];
	sbt_path(path, sizeof(path));
	pid_t pid = fork();
	if (pid == 0) {
		struct statebus_region *r = NULL;
		struct statebus_params p = sbt_small();
		if (statebus_region_open(path, &p, STATEBUS_CREATE, &r, NULL, 0) != SY_OK)
			_exit(1);
		if (statebus_writer_lock(r, true) != SY_OK)
			_exit(2);
		struct statebus_worker w = sbt_worker("http://a:1", 1);
		uint32_t s, g;
		if (statebus_worker_add(r, &w, &s, &g) != SY_OK)
			_exit(3);
		_exit(0); /* no close: the process just ends */
	}
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	struct statebus_region *r = NULL;
	ck_assert_int_eq(statebus_region_open(path, NULL, STATEBUS_ATTACH_ONLY, &r, NULL, 0), SY_OK);
	uint32_t slot, gen;
	ck_assert_int_eq(statebus_worker_find(r, "http://a:1", &slot, &gen), SY_OK);
	/* the dead creator's writer lock was released by the kernel */
	ck_assert_int_eq(statebus_writer_lock(r, false), SY_OK);
	sbt_destroy(r, path);
}
END_TEST

/* Rewrites bytes of the region file directly, as a corrupting process would. */
static void poke(const char *path, off_t off, const void *v, size_t n)
{
	int fd = open(path, O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, v, n, off), (ssize_t)n);
	close(fd);
}

START_TEST(test_other_layout_version_is_eversion_with_destroy_hint)
{
	char path[64], err[256] = "";
	sbt_path(path, sizeof(path));
	struct statebus_params p = sbt_small();
	statebus_region_close(sbt_create(path, &p));
	uint32_t v = STATEBUS_LAYOUT_VERSION + 7;
	poke(path, offsetof(struct statebus_hdr, layout_version), &v, sizeof(v));
	struct statebus_region *r = NULL;
	ck_assert_int_eq(statebus_region_open(path, NULL, STATEBUS_CREATE, &r, err, sizeof(err)), SY_EVERSION);
	ck_assert_ptr_null(r);
	char want[96];
	snprintf(want, sizeof(want), "has layout version %u, this build knows %u",
		 STATEBUS_LAYOUT_VERSION + 7, STATEBUS_LAYOUT_VERSION);
	ck_assert_msg(strstr(err, want) != NULL, "%s", err);
	ck_assert_ptr_nonnull(strstr(err, "syctl destroy"));
	statebus_region_destroy(path);
}
END_TEST

START_TEST(test_corrupt_header_fields_are_emalformed_not_crash)
{
	struct { off_t off; uint64_t val; size_t n; } cases[] = {
		{offsetof(struct statebus_hdr, magic), 0x1234, 8},
		{offsetof(struct statebus_hdr, total_size), 1u << 30, 8},
		{offsetof(struct statebus_hdr, header_size), 17, 4},
		{offsetof(struct statebus_hdr, max_workers), 0, 4},
		{offsetof(struct statebus_hdr, max_workers), 9, 4},
		{offsetof(struct statebus_hdr, arena_block_size), 100, 4},
		{offsetof(struct statebus_hdr, tables[SB_T_LOAD].off), UINT64_C(1) << 40, 8},
		{offsetof(struct statebus_hdr, tables[SB_T_ARENA].off), 4096 + 64, 8},
		{offsetof(struct statebus_hdr, tables[SB_T_ASTATE].size), UINT64_C(1) << 20, 8},
		{offsetof(struct statebus_hdr, tables[SB_T_WORKERS].stride), 8, 4},
		{offsetof(struct statebus_hdr, global_epoch), 0, 8},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char path[64], err[256] = "";
		sbt_path(path, sizeof(path));
		struct statebus_params p = sbt_small();
		statebus_region_close(sbt_create(path, &p));
		poke(path, cases[i].off, &cases[i].val, cases[i].n);
		struct statebus_region *r = NULL;
		int rc = statebus_region_open(path, NULL, STATEBUS_ATTACH_ONLY, &r, err, sizeof(err));
		ck_assert_msg(rc == SY_EMALFORMED, "case %zu: rc %d (%s)", i, rc, err);
		ck_assert_ptr_null(r);
		ck_assert_msg(strstr(err, path) != NULL, "case %zu: message names the region: %s", i, err);
		statebus_region_destroy(path);
	}
}
END_TEST

START_TEST(test_truncated_file_is_emalformed)
{
	char path[64], err[256] = "";
	sbt_path(path, sizeof(path));
	struct statebus_params p = sbt_small();
	statebus_region_close(sbt_create(path, &p));
	ck_assert_int_eq(truncate(path, 8192), 0);
	struct statebus_region *r = NULL;
	ck_assert_int_eq(statebus_region_open(path, NULL, STATEBUS_ATTACH_ONLY, &r, err, sizeof(err)), SY_EMALFORMED);
	ck_assert_int_eq(truncate(path, 100), 0);
	ck_assert_int_eq(statebus_region_open(path, NULL, STATEBUS_ATTACH_ONLY, &r, err, sizeof(err)), SY_EMALFORMED);
	statebus_region_destroy(path);
}
END_TEST

START_TEST(test_uninitialised_file_is_initialised_by_create_refused_by_attach)
{
	char path[64];
	sbt_path(path, sizeof(path));
	int fd = open(path, O_RDWR | O_CREAT, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 65536), 0); /* a creator died before the magic */
	close(fd);
	struct statebus_region *r = NULL;
	ck_assert_int_eq(statebus_region_open(path, NULL, STATEBUS_ATTACH_ONLY, &r, NULL, 0), SY_EBUSY);
	struct statebus_params p = sbt_small();
	r = sbt_create(path, &p);
	ck_assert_uint_eq(statebus_workers_capacity(r), 8);
	sbt_destroy(r, path);
}
END_TEST

START_TEST(test_params_over_limits_are_erange)
{
	char path[64];
	sbt_path(path, sizeof(path));
	struct statebus_params p = sbt_small();
	p.arena_block_size = 100; /* not a multiple of 64 */
	struct statebus_region *r = NULL;
	ck_assert_int_eq(statebus_region_open(path, &p, STATEBUS_CREATE, &r, NULL, 0), SY_ERANGE);
	ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST

START_TEST(test_incarnation_bump_is_seen_by_other_handles)
{
	char path[64];
	struct statebus_region *w = sbt_create_small(path, sizeof(path));
	struct statebus_region *rd = sbt_create(path, NULL);
	uint64_t before = statebus_region_incarnation(rd);
	ck_assert_int_eq(statebus_writer_lock(w, true), SY_OK);
	ck_assert_uint_eq(statebus_region_bump_incarnation(w), before + 1);
	ck_assert_uint_eq(statebus_region_incarnation(rd), before + 1);
	/* the writer lock excludes a second handle, even in the same process */
	ck_assert_int_eq(statebus_writer_lock(rd, false), SY_EBUSY);
	statebus_writer_unlock(w);
	ck_assert_int_eq(statebus_writer_lock(rd, false), SY_OK);
	statebus_region_close(w);
	sbt_destroy(rd, path);
}
END_TEST

START_TEST(test_daemon_liveness_follows_pid_and_heartbeat)
{
	char path[64];
	sbt_path(path, sizeof(path));
	struct statebus_region *r = sbt_create(path, NULL);
	uint64_t now = sy_mono_ns();
	ck_assert(!statebus_daemon_live(r, now, 3000000000ull));
	statebus_daemon_announce(r, now);
	ck_assert(statebus_daemon_live(r, now + 1000, 3000000000ull));
	ck_assert(!statebus_daemon_live(r, now + 4000000000ull, 3000000000ull));
	statebus_daemon_heartbeat(r, now + 4000000000ull);
	ck_assert(statebus_daemon_live(r, now + 4000000000ull, 3000000000ull));
	statebus_daemon_withdraw(r);
	ck_assert(!statebus_daemon_live(r, now, 3000000000ull));
	sbt_destroy(r, path);
}
END_TEST

START_TEST(test_ptr_rejects_out_of_region_offsets)
{
	char path[64];
	sbt_path(path, sizeof(path));
	struct statebus_region *r = sbt_create(path, NULL);
	struct statebus_header_info h;
	statebus_region_info(r, &h);
	ck_assert_ptr_nonnull(statebus_ptr(r, h.arena_off, 256));
	ck_assert_ptr_null(statebus_ptr(r, 0, 8));
	ck_assert_ptr_null(statebus_ptr(r, h.total_size, 1));
	ck_assert_ptr_null(statebus_ptr(r, h.total_size - 8, 16));
	ck_assert_ptr_null(statebus_ptr(r, UINT64_MAX - 4, 8));
	ck_assert_ptr_nonnull(statebus_ptr(r, h.total_size - 8, 8));
	statebus_counter_add(r, 3, 5);
	statebus_counter_add(r, STATEBUS_COUNTERS_MAX, 5);
	ck_assert_uint_eq(statebus_counter_get(r, 3), 5);
	ck_assert_uint_eq(statebus_counter_get(r, STATEBUS_COUNTERS_MAX), 0);
	sbt_destroy(r, path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("region");
	TCase *tc = tcase_create("region");
	tcase_add_test(tc, test_create_then_attach_sees_same_capacities);
	tcase_add_test(tc, test_attach_only_missing_region_is_enoent);
	tcase_add_test(tc, test_region_survives_creator_exit);
	tcase_add_test(tc, test_other_layout_version_is_eversion_with_destroy_hint);
	tcase_add_test(tc, test_corrupt_header_fields_are_emalformed_not_crash);
	tcase_add_test(tc, test_truncated_file_is_emalformed);
	tcase_add_test(tc, test_uninitialised_file_is_initialised_by_create_refused_by_attach);
	tcase_add_test(tc, test_params_over_limits_are_erange);
	tcase_add_test(tc, test_incarnation_bump_is_seen_by_other_handles);
	tcase_add_test(tc, test_daemon_liveness_follows_pid_and_heartbeat);
	tcase_add_test(tc, test_ptr_rejects_out_of_region_offsets);
	suite_add_tcase(s, tc);
	return sy_check_run(s);
}
