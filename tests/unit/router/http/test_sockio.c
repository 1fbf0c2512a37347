/* test_sockio.c — read / writev / close as the router defines them
 * (router/http/sockio.c, compiled into this program, so its calls reach
 * them): sockets go through recv / send / sendmsg, gathered writes
 * arrive whole or as a reported prefix, every other descriptor through
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

/* writev of pieces[0..n) into w; reads everything back from r (blocking)
 * and checks it is the concatenation. */
static void gather_round_trip(int w, int r, const struct iovec *pieces, int n, size_t total)
{
	char *want = malloc(total), *got = malloc(total);
	size_t off = 0;
	ck_assert_ptr_nonnull(want);
	ck_assert_ptr_nonnull(got);
	for (int i = 0; i < n; i++) {
		memcpy(want + off, pieces[i].iov_base, pieces[i].iov_len);
		off += pieces[i].iov_len;
	}
	ck_assert_int_eq(writev(w, pieces, n), (ssize_t)total);
	for (off = 0; off < total;) {
		ssize_t k = read(r, got + off, total - off);
		ck_assert_int_gt(k, 0);
		off += (size_t)k;
	}
	ck_assert_int_eq(memcmp(want, got, total), 0);
	free(want);
	free(got);
}

START_TEST(test_gathers_small_and_large)
{
	int sv[2];
	static char a[3000], b[1000], c[3000];
	memset(a, 'a', sizeof a);
	memset(b, 'b', sizeof b);
	memset(c, 'c', sizeof c);
	b[0] = 'B';
	c[sizeof c - 1] = 'C';
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	/* one piece; an empty piece among two (one send); three pieces over
	 * the gather buffer (one sendmsg) */
	struct iovec one[1] = {{a, 1}};
	struct iovec two[3] = {{a, 3000}, {b, 0}, {b, 1000}};
	struct iovec three[3] = {{a, 3000}, {b, 1000}, {c, 3000}};
	gather_round_trip(sv[0], sv[1], one, 1, 1);
	gather_round_trip(sv[0], sv[1], two, 3, 4000);
	gather_round_trip(sv[0], sv[1], three, 3, 7000);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/* A gathered write into a nearly full socket queues a prefix of the
 * concatenation and says how long it is, as writev() does. */
START_TEST(test_partial_gather_is_a_prefix)
{
	int sv[2], small = 4096;
	static char fill[1 << 16], a[1500], b[1500], got[1 << 18];
	memset(a, 'x', sizeof a);
	memset(b, 'y', sizeof b);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	ck_assert_int_eq(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
	size_t filled = 0;
	for (;;) { /* fill until the queue refuses a whole gather */
		struct iovec f = {fill, 512};
		ssize_t k = writev(sv[0], &f, 1);
		if (k < 0) {
			ck_assert(errno == EAGAIN || errno == EWOULDBLOCK);
			break;
		}
		filled += (size_t)k;
	}
	size_t drained = 0;
	while (drained < filled) { /* room again */
		ssize_t k = read(sv[1], got, filled - drained < 700 ? filled - drained : 700);
		ck_assert_int_gt(k, 0);
		drained += (size_t)k;
		if (drained >= 1200)
			break;
	}
	struct iovec two[2] = {{a, sizeof a}, {b, sizeof b}};
	ssize_t sent = writev(sv[0], two, 2);
	ck_assert_int_gt(sent, 0);
	ck_assert_int_le(sent, 3000);
	size_t rest = filled - drained + (size_t)sent, off = 0;
	while (off < rest) {
		ssize_t k = read(sv[1], got + off, rest - off);
		ck_assert_int_gt(k, 0);
		off += (size_t)k;
	}
	for (ssize_t i = 0; i < sent; i++)
		ck_assert_int_eq(got[filled - drained + (size_t)i], i < 1500 ? 'x' : 'y');
	errno = 0;
	ck_assert_int_eq(read(sv[1], got, 1), -1); /* nothing beyond the reported count */
	ck_assert(errno == EAGAIN || errno == EWOULDBLOCK);
	close(sv[0]);
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
	tcase_add_test(tc, test_gathers_small_and_large);
	tcase_add_test(tc, test_partial_gather_is_a_prefix);
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
