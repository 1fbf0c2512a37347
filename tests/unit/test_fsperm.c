/* test_fsperm.c — common/fsperm.c: group lookup and the checks around a
 * unix socket bound in a shared directory (what may be at the path before
 * the bind, what must be there after it). Cases that need another owner
 * run only as root (lchown to nobody, uid/gid 65534). */
#include <check.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/fsperm.h"
#include "sy_check.h"

#define NOBODY 65534

static char dir[64];

static void setup(void)
{
	static unsigned n;
	snprintf(dir, sizeof(dir), "/dev/shm/sy-test-fsperm-%d-%u", (int)getpid(), n++);
	ck_assert_int_eq(mkdir(dir, 0700), 0);
}

static void teardown(void)
{
	char cmd[96];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Binds a unix socket at path under umask `mask`; returns its fd. */
static int bind_at(const char *path, mode_t mask)
{
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	mode_t old = umask(mask);
	int rc = bind(fd, (struct sockaddr *)&a, sizeof(a));
	umask(old);
	ck_assert_int_eq(rc, 0);
	return fd;
}

START_TEST(test_group_lookup_finds_root_and_refuses_unknown)
{
	gid_t g = 1;
	char err[256] = "";
	ck_assert_int_eq(sy_group_gid("root", &g, err, sizeof(err)), SY_OK);
	ck_assert_uint_eq(g, 0);
	ck_assert_int_eq(sy_group_gid("sy-no-such-group-x", &g, err, sizeof(err)), SY_ENOENT);
	ck_assert_msg(strstr(err, "does not exist") != NULL, "%s", err);
}
END_TEST

START_TEST(test_absent_path_and_own_socket_may_be_bound)
{
	char path[96], err[256] = "";
	snprintf(path, sizeof(path), "%s/s.ctl", dir);
	ck_assert_int_eq(sy_socket_path_check(path, "control socket", err, sizeof(err)), SY_OK);
	int fd = bind_at(path, 0117);
	ck_assert_int_eq(sy_socket_path_check(path, "control socket", err, sizeof(err)), SY_OK);
	close(fd);
}
END_TEST

START_TEST(test_symlink_and_non_socket_at_the_path_are_refused)
{
	char path[96], target[96], err[256] = "";
	snprintf(path, sizeof(path), "%s/s.ctl", dir);
	snprintf(target, sizeof(target), "%s/target", dir);
	FILE *f = fopen(target, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	ck_assert_int_eq(symlink(target, path), 0);
	ck_assert_int_eq(sy_socket_path_check(path, "control socket", err, sizeof(err)), SY_EPERM);
	ck_assert_msg(strstr(err, "control socket") && strstr(err, "is a symlink"), "%s", err);
	ck_assert_int_eq(sy_socket_path_check(target, "query endpoint", err, sizeof(err)), SY_EPERM);
	ck_assert_msg(strstr(err, "is not a socket"), "%s", err);
}
END_TEST

START_TEST(test_bound_socket_must_be_private_to_user_and_group)
{
	char path[96], err[256] = "";
	snprintf(path, sizeof(path), "%s/s.ctl", dir);
	int fd = bind_at(path, 0117);
	struct stat st;
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0660);
	ck_assert_int_eq(sy_socket_path_secure(path, (gid_t)-1, "control socket", err, sizeof(err)),
			 SY_OK);
	close(fd);
	unlink(path);
	fd = bind_at(path, 0); /* 0777: others could connect */
	ck_assert_int_eq(sy_socket_path_secure(path, (gid_t)-1, "control socket", err, sizeof(err)),
			 SY_EPERM);
	close(fd);
}
END_TEST

/* [root] a socket of another user at the path is refused; the group of our
 * own socket is set without following a symlink. */
START_TEST(test_socket_of_another_user_refused_and_group_applied)
{
	char path[96], err[256] = "";
	snprintf(path, sizeof(path), "%s/s.ctl", dir);
	int fd = bind_at(path, 0117);
	ck_assert_int_eq(sy_socket_path_secure(path, NOBODY, "control socket", err, sizeof(err)),
			 SY_OK);
	struct stat st;
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert_uint_eq(st.st_gid, NOBODY);
	ck_assert_int_eq(lchown(path, NOBODY, NOBODY), 0);
	ck_assert_int_eq(sy_socket_path_check(path, "control socket", err, sizeof(err)), SY_EPERM);
	ck_assert_msg(strstr(err, "owned by uid 65534"), "%s", err);
	ck_assert_int_eq(sy_socket_path_secure(path, (gid_t)-1, "control socket", err, sizeof(err)),
			 SY_EPERM);
	close(fd);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("fsperm");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_group_lookup_finds_root_and_refuses_unknown);
	tcase_add_test(tc, test_absent_path_and_own_socket_may_be_bound);
	tcase_add_test(tc, test_symlink_and_non_socket_at_the_path_are_refused);
	tcase_add_test(tc, test_bound_socket_must_be_private_to_user_and_group);
	if (geteuid() == 0)
		tcase_add_test(tc, test_socket_of_another_user_refused_and_group_applied);
	else
		fprintf(stderr, "test_fsperm: not root: the other-owner case is not run\n");
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sy_check_run(suite());
}
