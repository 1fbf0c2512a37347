/* test_sockio.c — read / writev / close as the router defines them
 * (router/http/sockio.c, compiled into this program, so its calls reach
 * them): sockets go through recv / sendmsg, every other descriptor through
 * libc, and a descriptor number that changes kind keeps working. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "tests/unit/sy_check.h"

/* writev of "ab" + "cde" into w, read of up to 16 bytes from r → the bytes read. */
static ssize_t round_trip(int w, int r, char *out)
{
	struct iovec iov[2] = {{"ab", 2}, {"cde", 3}};
	ck_assert_int_eq(writev(w, iov, 2), 5);
	return read(r, out, 16);
}

START_TEST(test_socket_pair_moves_bytes)
{
	int sv[2];
	char buf[16];
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(round_trip(sv[0], sv[1], buf), 5);
	ck_assert_int_eq(memcmp(buf, "abcde", 5), 0);
	close(sv[0]);
	ck_assert_int_eq(read(sv[1], buf, sizeof buf), 0); /* EOF as read() reports it */
	close(sv[1]);
}
END_TEST

START_TEST(test_pipe_eventfd_and_file_go_through_libc)
{
	int p[2];
	char buf[16];
	ck_assert_int_eq(pipe(p), 0);
	for (int k = 0; k < 2; k++) { /* the second time with the descriptor known */
		ck_assert_int_eq(round_trip(p[1], p[0], buf), 5);
		ck_assert_int_eq(memcmp(buf, "abcde", 5), 0);
	}
	close(p[0]);
	close(p[1]);

	int e = eventfd(0, 0);
	ck_assert_int_ge(e, 0);
	uint64_t one = 1, got = 0;
	ck_assert_int_eq(write(e, &one, sizeof one), (ssize_t)sizeof one);
	ck_assert_int_eq(read(e, &got, sizeof got), (ssize_t)sizeof got);
	ck_assert_uint_eq(got, 1);
	close(e);

	char path[] = "/tmp/sy-test-sockio-XXXXXX";
	int f = mkstemp(path);
	ck_assert_int_ge(f, 0);
	unlink(path);
	struct iovec iov[2] = {{"hello ", 6}, {"file", 4}};
	ck_assert_int_eq(writev(f, iov, 2), 10);
	ck_assert_int_eq(lseek(f, 0, SEEK_SET), 0);
	ck_assert_int_eq(read(f, buf, sizeof buf), 10);
	ck_assert_int_eq(memcmp(buf, "hello file", 10), 0);
	close(f);
}
END_TEST

/* A pipe's descriptor numbers, closed, then taken by a socket pair (the
 * lowest free numbers): the socket still works; and the other way round. */
START_TEST(test_descriptor_reused_by_another_kind)
{
	int p[2], sv[2];
	char buf[16];
	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(round_trip(p[1], p[0], buf), 5);
	int low = p[0] < p[1] ? p[0] : p[1];
	close(p[0]);
	close(p[1]);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert(sv[0] == low || sv[1] == low);
	ck_assert_int_eq(round_trip(sv[0], sv[1], buf), 5);
	ck_assert_int_eq(round_trip(sv[1], sv[0], buf), 5);
	/* the socket's numbers become a pipe again, closed by dup2 (not
	 * through close(): the hint is stale and must not matter) */
	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(dup2(p[0], sv[0]), sv[0]);
	ck_assert_int_eq(dup2(p[1], sv[1]), sv[1]);
	ck_assert_int_eq(round_trip(sv[1], sv[0], buf), 5);
	ck_assert_int_eq(memcmp(buf, "abcde", 5), 0);
	close(p[0]);
	close(p[1]);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

START_TEST(test_errors_are_the_callers)
{
	char buf[4];
	int sv[2];
	errno = 0;
	ck_assert_int_eq(read(-1, buf, sizeof buf), -1);
	ck_assert_int_eq(errno, EBADF);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	errno = 0;
	ck_assert_int_eq(read(sv[0], buf, sizeof buf), -1); /* nothing yet */
	ck_assert(errno == EAGAIN || errno == EWOULDBLOCK);
	close(sv[1]);
	/* a write to a closed peer: EPIPE, and no SIGPIPE (default action
	 * here would end this test process) */
	signal(SIGPIPE, SIG_DFL);
	struct iovec iov = {"x", 1};
	errno = 0;
	ck_assert_int_eq(writev(sv[0], &iov, 1), -1);
	ck_assert_int_eq(errno, EPIPE);
	close(sv[0]);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("sockio");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_socket_pair_moves_bytes);
	tcase_add_test(tc, test_pipe_eventfd_and_file_go_through_libc);
	tcase_add_test(tc, test_descriptor_reused_by_another_kind);
	tcase_add_test(tc, test_errors_are_the_callers);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sy_check_run(suite());
}
