/* pd.c — bootstrap server (prefill mode) and client (decode mode); the
 * protocol is described in pd.h. */
#include "tools/mock-engine/pd.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "tools/mock-engine/engine.h"

#define container_of(p, T, m) ((T *)((char *)(p) - offsetof(T, m)))

struct pd_conn {
	struct mock_pd *pd;
	h2o_socket_t *sock;
	uint64_t room;
	bool waiting;
	char wbuf[48];
	struct pd_conn *prev, *next;
};

struct mock_pd {
	struct mock_engine *eng;
	h2o_socket_t *listener;
	uint64_t ready[MOCK_PD_READY_ROOMS];
	size_t ready_n, ready_pos;
	struct pd_conn *conns;
};

/* ---- prefill side -------------------------------------------------------- */

static bool room_ready(const struct mock_pd *pd, uint64_t room)
{
	for (size_t i = 0; i < pd->ready_n; i++)
		if (pd->ready[i] == room)
			return true;
	return false;
}

static void conn_free(struct pd_conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		c->pd->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	free(c);
}

static void on_ready_written(h2o_socket_t *sock, const char *err)
{
	(void)err;
	struct pd_conn *c = sock->data;
	h2o_socket_close(sock);
	conn_free(c);
}

static void send_ready(struct pd_conn *c)
{
	c->waiting = false;
	h2o_socket_read_stop(c->sock);
	int k = snprintf(c->wbuf, sizeof(c->wbuf), "READY %" PRIu64 "\n", c->room);
	h2o_iovec_t iov = h2o_iovec_init(c->wbuf, (size_t)k);
	h2o_socket_write(c->sock, &iov, 1, on_ready_written);
}

static void on_srv_read(h2o_socket_t *sock, const char *err)
{
	struct pd_conn *c = sock->data;
	if (err) {
		h2o_socket_close(sock);
		conn_free(c);
		return;
	}
	h2o_buffer_t *in = sock->input;
	char *nl = memchr(in->bytes, '\n', in->size);
	if (!nl) {
		if (in->size > 64) {
			h2o_socket_close(sock);
			conn_free(c);
		}
		return;
	}
	char line[80];
	size_t l = (size_t)(nl - in->bytes);
	if (l >= sizeof(line))
		l = sizeof(line) - 1;
	memcpy(line, in->bytes, l);
	line[l] = 0;
	h2o_buffer_consume(&sock->input, in->size);
	uint64_t room;
	if (sscanf(line, "WAIT %" SCNu64, &room) != 1) {
		h2o_socket_close(sock);
		conn_free(c);
		return;
	}
	c->room = room;
	c->waiting = true;
	if (room_ready(c->pd, room))
		send_ready(c);
}

static void on_accept(h2o_socket_t *listener, const char *err)
{
	if (err)
		return;
	struct mock_pd *pd = listener->data;
	h2o_socket_t *sock;
	while ((sock = h2o_evloop_socket_accept(listener)) != NULL) {
		struct pd_conn *c = calloc(1, sizeof(*c));
		if (!c) {
			h2o_socket_close(sock);
			continue;
		}
		c->pd = pd;
		c->sock = sock;
		c->next = pd->conns;
		if (pd->conns)
			pd->conns->prev = c;
		pd->conns = c;
		sock->data = c;
		h2o_socket_read_start(sock, on_srv_read);
	}
}

void mock_pd_prefill_done(struct mock_engine *e, uint64_t room)
{
	struct mock_pd *pd = e->pd;
	if (!pd)
		return;
	pd->ready[pd->ready_pos] = room;
	pd->ready_pos = (pd->ready_pos + 1) % MOCK_PD_READY_ROOMS;
	if (pd->ready_n < MOCK_PD_READY_ROOMS)
		pd->ready_n++;
	for (struct pd_conn *c = pd->conns, *n; c; c = n) {
		n = c->next;
		if (c->waiting && c->room == room)
			send_ready(c);
	}
}

static int listen_tcp(const char *host, int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return -1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 128) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

int mock_pd_init(struct mock_engine *e)
{
	if (e->cfg.pd_mode == MOCK_PD_NONE)
		return 0;
	struct mock_pd *pd = calloc(1, sizeof(*pd));
	if (!pd)
		return SY_ENOMEM;
	pd->eng = e;
	e->pd = pd;
	if (e->cfg.pd_mode == MOCK_PD_PREFILL) {
		int fd = listen_tcp(e->cfg.host, e->cfg.bootstrap_port);
		if (fd < 0) {
			sy_error("cannot listen on bootstrap port %s:%d", e->cfg.host,
				 e->cfg.bootstrap_port);
			return SY_EIO;
		}
		pd->listener = h2o_evloop_socket_create(e->loop, fd, H2O_SOCKET_FLAG_DONT_READ);
		pd->listener->data = pd;
		h2o_socket_read_start(pd->listener, on_accept);
	}
	return 0;
}

void mock_pd_close(struct mock_engine *e)
{
	struct mock_pd *pd = e->pd;
	if (!pd)
		return;
	while (pd->conns) {
		h2o_socket_close(pd->conns->sock);
		conn_free(pd->conns);
	}
	if (pd->listener)
		h2o_socket_close(pd->listener);
	free(pd);
	e->pd = NULL;
}

/* ---- decode side --------------------------------------------------------- */

static void pd_timer(struct mock_timer *t);

static void client_close(struct mreq *r)
{
	if (r->pd_sock) {
		r->pd_sock->data = NULL;
		h2o_socket_close(r->pd_sock);
		r->pd_sock = NULL;
	}
}

static void retry_later(struct mreq *r)
{
	client_close(r);
	uint64_t at = sy_mono_us() + MOCK_PD_RETRY_US;
	if (at > r->pd_deadline)
		at = r->pd_deadline;
	mock_timer_arm(&r->eng->timers, &r->timer, at, pd_timer);
}

static void on_client_read(h2o_socket_t *sock, const char *err)
{
	struct mreq *r = sock->data;
	if (!r)
		return;
	if (err) {
		retry_later(r);
		return;
	}
	h2o_buffer_t *in = sock->input;
	if (!memchr(in->bytes, '\n', in->size))
		return;
	bool ok = in->size > 6 && memcmp(in->bytes, "READY ", 6) == 0;
	client_close(r);
	if (!ok) {
		retry_later(r);
		return;
	}
	mock_timer_cancel(&r->eng->timers, &r->timer);
	mreq_pd_ready(r);
}

static void on_client_written(h2o_socket_t *sock, const char *err)
{
	(void)sock;
	(void)err;
}

static void on_connect(h2o_socket_t *sock, const char *err)
{
	struct mreq *r = sock->data;
	if (!r)
		return;
	if (err) {
		retry_later(r);
		return;
	}
	int k = snprintf(r->pd_wbuf, sizeof(r->pd_wbuf), "WAIT %" PRIu64 "\n", r->room);
	h2o_iovec_t iov = h2o_iovec_init(r->pd_wbuf, (size_t)k);
	h2o_socket_write(sock, &iov, 1, on_client_written);
	h2o_socket_read_start(sock, on_client_read);
}

static void try_connect(struct mreq *r)
{
	struct sockaddr_storage ss;
	socklen_t len = 0;
	memset(&ss, 0, sizeof(ss));
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	if (inet_pton(AF_INET, r->bs_host, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)r->bs_port);
		len = sizeof(*s4);
	} else {
		struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
		char port[8];
		snprintf(port, sizeof(port), "%d", r->bs_port);
		if (getaddrinfo(r->bs_host, port, &hints, &ai) == 0) {
			memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
			len = ai->ai_addrlen;
			freeaddrinfo(ai);
		}
	}
	h2o_socket_t *sock = len ? h2o_socket_connect(r->eng->loop, (struct sockaddr *)&ss, len,
						     on_connect)
				 : NULL;
	if (!sock) {
		retry_later(r);
		return;
	}
	sock->data = r;
	r->pd_sock = sock;
	mock_timer_arm(&r->eng->timers, &r->timer, r->pd_deadline, pd_timer);
}

static void pd_timer(struct mock_timer *t)
{
	struct mreq *r = container_of(t, struct mreq, timer);
	if (sy_mono_us() >= r->pd_deadline) {
		client_close(r);
		mreq_pd_timeout(r);
		return;
	}
	try_connect(r);
}

void mock_pd_wait(struct mreq *r)
{
	r->pd_deadline = sy_mono_us() + (uint64_t)r->eng->cfg.pd_timeout_ms * 1000;
	try_connect(r);
}

void mock_pd_cancel(struct mreq *r) { client_close(r); }
