/* token_upstream — an engine-like HTTP/1.1 upstream for bench/proxy that
 * streams each SSE token event with its own send(), as an inference engine's
 * server does (one chunk per generated token).
 *
 *   token_upstream --port P [--events N] [--interval-us U] [--event-bytes B]
 *
 * Every request (any method and path; the body, sized by Content-Length, is
 * read and dropped) gets a `200 text/event-stream` chunked response of N
 * events (default 64): `data: {"t":T,"choices":[{"delta":{"content":"tokK"}}]}\n\n`
 * (T: the send time, CLOCK_MONOTONIC µs, so a client on the same host can
 * tell how long the event took to reach it) padded to about B bytes, then `data: [DONE]\n\n` and the last chunk. One
 * event per stream is written on each tick of a U µs timer (default 1000:
 * one event per connection per millisecond), each event in its own send().
 * Keep-alive: the next request on a connection starts after the last chunk.
 *
 * One thread, epoll, a timerfd; up to 4096 connections; listens on
 * 127.0.0.1 only. Exits on SIGTERM/SIGINT. A benchmark tool: no config file,
 * errors go to stderr and end the process.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 4096
#define RBUF 65536

struct conn {
	int fd;
	size_t have;      /* bytes in rbuf */
	long need_body;   /* body bytes still to drop; -1 while in the head */
	int streaming;    /* a response is being streamed */
	int sent;         /* events sent of the current response */
	char rbuf[RBUF];
};

static struct conn *conns[MAX_CONNS];
static int n_events = 64, event_bytes = 0;
static volatile sig_atomic_t stop;

static void on_signal(int s) { (void)s; stop = 1; }

static void die(const char *what) { perror(what); exit(1); }

static void conn_close(int epfd, struct conn *c)
{
	epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	conns[c->fd] = NULL;
	free(c);
}

static int send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1; /* a full socket buffer counts as a gone client here */
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static const char HEAD[] = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
			   "cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n";

/* Parses as many complete requests as rbuf holds; starts a stream for one. */
static int on_input(struct conn *c)
{
	for (;;) {
		if (c->streaming)
			return 0;
		if (c->need_body > 0) {
			size_t take = c->have < (size_t)c->need_body ? c->have : (size_t)c->need_body;
			memmove(c->rbuf, c->rbuf + take, c->have - take);
			c->have -= take;
			c->need_body -= (long)take;
			if (c->need_body > 0)
				return 0;
			c->need_body = -1;
			c->streaming = 1;
			c->sent = 0;
			return send_all(c->fd, HEAD, sizeof HEAD - 1);
		}
		char *end = memmem(c->rbuf, c->have, "\r\n\r\n", 4);
		if (!end)
			return c->have == RBUF ? -1 : 0;
		size_t head = (size_t)(end - c->rbuf) + 4;
		long cl = 0;
		for (char *l = c->rbuf; l < end; l++) {
			if ((l == c->rbuf || l[-1] == '\n') && strncasecmp(l, "content-length:", 15) == 0)
				cl = strtol(l + 15, NULL, 10);
		}
		if (cl < 0)
			return -1;
		memmove(c->rbuf, c->rbuf + head, c->have - head);
		c->have -= head;
		c->need_body = cl;
		if (cl == 0) {
			c->need_body = -1;
			c->streaming = 1;
			c->sent = 0;
			return send_all(c->fd, HEAD, sizeof HEAD - 1);
		}
	}
}

static unsigned long long mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000u;
}

/* One event (or the end) of c's stream, in one send(). */
static int on_tick(struct conn *c)
{
	char ev[4096 + 64], chunk[4096 + 96];
	int n;
	if (c->sent < n_events) {
		n = snprintf(ev, sizeof ev, "data: {\"t\":%llu,\"choices\":[{\"delta\":{\"content\":\"tok%d\"}}]}",
			     mono_us(), c->sent);
		while (n < event_bytes - 2 && n < 4096)
			ev[n++] = ' ';
		ev[n++] = '\n';
		ev[n++] = '\n';
		int m = snprintf(chunk, sizeof chunk, "%x\r\n%.*s\r\n", n, n, ev);
		c->sent++;
		return send_all(c->fd, chunk, (size_t)m);
	}
	static const char last[] = "e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n";
	c->streaming = 0;
	if (send_all(c->fd, last, sizeof last - 1) < 0)
		return -1;
	return on_input(c); /* a pipelined next request */
}

int main(int argc, char **argv)
{
	int port = 0;
	long interval_us = 1000;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			goto usage;
		if (!strcmp(a, "--port"))
			port = atoi(v);
		else if (!strcmp(a, "--events"))
			n_events = atoi(v);
		else if (!strcmp(a, "--interval-us"))
			interval_us = atol(v);
		else if (!strcmp(a, "--event-bytes"))
			event_bytes = atoi(v);
		else
			goto usage;
		i++;
	}
	if (port <= 0 || port > 65535 || n_events < 0 || interval_us < 50 || event_bytes < 0 || event_bytes > 4096)
		goto usage;
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGPIPE, SIG_IGN);

	int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
	if (ls < 0)
		die("socket");
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (bind(ls, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(ls, 1024) < 0)
		die("bind/listen");
	int epfd = epoll_create1(0), tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
	if (epfd < 0 || tfd < 0)
		die("epoll/timerfd");
	struct itimerspec its = {.it_interval = {interval_us / 1000000, (interval_us % 1000000) * 1000},
				 .it_value = {interval_us / 1000000, (interval_us % 1000000) * 1000}};
	timerfd_settime(tfd, 0, &its, NULL);
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = ls};
	epoll_ctl(epfd, EPOLL_CTL_ADD, ls, &ev);
	ev.data.fd = tfd;
	epoll_ctl(epfd, EPOLL_CTL_ADD, tfd, &ev);

	struct epoll_event evs[256];
	while (!stop) {
		int n = epoll_wait(epfd, evs, 256, 200);
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if (fd == ls) {
				int cfd;
				while ((cfd = accept4(ls, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
					if (cfd >= MAX_CONNS) {
						close(cfd);
						continue;
					}
					setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
					struct conn *c = calloc(1, sizeof *c);
					if (!c)
						die("calloc");
					c->fd = cfd;
					c->need_body = -1;
					conns[cfd] = c;
					struct epoll_event ce = {.events = EPOLLIN, .data.fd = cfd};
					epoll_ctl(epfd, EPOLL_CTL_ADD, cfd, &ce);
				}
			} else if (fd == tfd) {
				uint64_t ticks;
				if (read(tfd, &ticks, sizeof ticks) < 0)
					continue;
				for (int f = 0; f < MAX_CONNS; f++) {
					struct conn *c = conns[f];
					if (c && c->streaming && on_tick(c) < 0)
						conn_close(epfd, c);
				}
			} else {
				struct conn *c = conns[fd];
				if (!c)
					continue;
				ssize_t r = read(fd, c->rbuf + c->have, RBUF - c->have);
				if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
					conn_close(epfd, c);
					continue;
				}
				if (r > 0) {
					c->have += (size_t)r;
					if (on_input(c) < 0)
						conn_close(epfd, c);
				}
			}
		}
	}
	return 0;
usage:
	fprintf(stderr, "usage: token_upstream --port P [--events N] [--interval-us U>=50] [--event-bytes B<=4096]\n");
	return 2;
}
