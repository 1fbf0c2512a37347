/* sockio.c — socket reads and writes of the router as recv / send / sendmsg.
 *
 * Linux serves read() and writev() on a socket through the VFS: the file
 * position lock (fdget_pos), rw_verify_area, an iov_iter and the socket's
 * read_iter / write_iter, before the socket layer; recvfrom() and sendmsg()
 * enter the socket layer directly. h2o 2.2's event loop moves every byte of
 * the router's client and engine connections with read() and writev(),
 * about 0.5 µs more kernel time per proxied request than the socket calls
 * (perf, bench/proxy small JSON: ~3.5 % of the worker's CPU).
 *
 * libh2o-evloop calls both through its PLT, so this executable's
 * definitions come first (export_dynamic, as for edge.c). On a socket they
 * are the same operation (MSG_NOSIGNAL: SIGPIPE is ignored in the router
 * anyway); on any other descriptor — a pipe, an eventfd, a file — recv and
 * send / sendmsg fail with ENOTSOCK and the libc function (dlsym RTLD_NEXT) does
 * the call. `not_sock` remembers such descriptors below SOCKIO_HINTS so
 * the next call goes straight to libc; the interposed close() forgets a
 * descriptor. The hint is only a hint: a stale one costs one extra syscall
 * (ENOTSOCK) or one call through the VFS, never a wrong result.
 * A write of one piece, or of several that together fit SOCKIO_GATHER
 * bytes (a response head and a small body, a request to an engine), is
 * one send() of one buffer: sendmsg() costs a msghdr and an iovec array
 * copied in from user space and an iovec iterator, ~0.2 µs more kernel
 * time per call than send() (perf, bench/proxy small JSON), more than
 * copying 4 KiB here. Larger gathers stay one sendmsg(). Either way the
 * result is writev()'s: the count of leading bytes of the concatenation
 * that were queued.
 * rt_sockio_selfcheck() refuses to run when the interposition is not in
 * effect.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

/* Descriptors below this get a hint byte (64 KiB). */
#define SOCKIO_HINTS 65536
/* Gathers up to this many bytes are copied into one buffer and sent with
 * send(); larger ones go out with sendmsg(). */
#define SOCKIO_GATHER 4096

typedef ssize_t (*read_fn)(int, void *, size_t);
typedef ssize_t (*writev_fn)(int, const struct iovec *, int);
typedef int (*close_fn)(int);

static struct {
	read_fn read;
	writev_fn writev;
	close_fn close;
} lib;

/* 1: the descriptor is not a socket (learned from ENOTSOCK). Written
 * with relaxed atomics: the router's processes are single-threaded on
 * the data path, but libraries' threads may read or close too. */
static unsigned char not_sock[SOCKIO_HINTS];

static void resolve(void)
{
	if (lib.close != NULL)
		return;
	*(void **)&lib.read = dlsym(RTLD_NEXT, "read");
	*(void **)&lib.writev = dlsym(RTLD_NEXT, "writev");
	*(void **)&lib.close = dlsym(RTLD_NEXT, "close");
	if (lib.read == NULL || lib.writev == NULL || lib.close == NULL) {
		static const char msg[] = "switchyard-router: libc lacks read/writev/close\n";
		(void)!write(2, msg, sizeof(msg) - 1);
		abort();
	}
}

static bool hinted_not_sock(int fd)
{
	return fd >= 0 && fd < SOCKIO_HINTS && __atomic_load_n(&not_sock[fd], __ATOMIC_RELAXED);
}

static void hint(int fd, unsigned char v)
{
	if (fd >= 0 && fd < SOCKIO_HINTS)
		__atomic_store_n(&not_sock[fd], v, __ATOMIC_RELAXED);
}

ssize_t read(int fd, void *buf, size_t n)
{
	resolve();
	if (!hinted_not_sock(fd)) {
		ssize_t r = recvfrom(fd, buf, n, 0, NULL, NULL);
		if (r >= 0 || errno != ENOTSOCK)
			return r;
		hint(fd, 1);
	}
	return lib.read(fd, buf, n);
}

/* One sendto() when iov is one piece or gathers into SOCKIO_GATHER
 * bytes, else sendmsg(); MSG_NOSIGNAL. Returns what the call returned. */
static ssize_t sock_send(int fd, const struct iovec *iov, int iovcnt)
{
	if (iovcnt == 1)
		return sendto(fd, iov[0].iov_base, iov[0].iov_len, MSG_NOSIGNAL, NULL, 0);
	if (iovcnt > 1) {
		char buf[SOCKIO_GATHER];
		size_t n = 0;
		int i;
		for (i = 0; i < iovcnt && iov[i].iov_len <= sizeof buf - n; i++) {
			if (iov[i].iov_len != 0)
				memcpy(buf + n, iov[i].iov_base, iov[i].iov_len);
			n += iov[i].iov_len;
		}
		if (i == iovcnt)
			return sendto(fd, buf, n, MSG_NOSIGNAL, NULL, 0);
	}
	struct msghdr m = {.msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt};
	return sendmsg(fd, &m, MSG_NOSIGNAL);
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	resolve();
	if (!hinted_not_sock(fd)) {
		ssize_t r = sock_send(fd, iov, iovcnt);
		if (r >= 0 || errno != ENOTSOCK)
			return r;
		hint(fd, 1);
	}
	return lib.writev(fd, iov, iovcnt);
}

int close(int fd)
{
	resolve();
	hint(fd, 0);
	return lib.close(fd);
}
