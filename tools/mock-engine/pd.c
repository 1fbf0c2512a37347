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

#include <h2o/hostinfo.h>
#include <h2o/multithread.h>

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

/* One asynchronous lookup of a request's bootstrap_host name: getaddrinfo
 * runs on h2o's resolver thread, the answer comes back to the loop through
 * lookup_receiver (on_resolved). malloc'ed and owned by pd.c, not by the
 * request: freed only when the answer arrives, even after the request has
 * gone (then `r` is NULL and the answer is dropped), so neither side ever
 * touches freed memory. */
struct pd_lookup {
	struct mreq *r;               /* NULL once nobody wants the answer */
	struct pd_lookup *prev, *next;/* in `lookups` */
};

/* Process-wide (one engine per process): the loop's message queue for
 * resolver answers, created on the first lookup, and the lookups whose
 * answer has not arrived yet. */
static h2o_multithread_queue_t *lookup_queue;
static h2o_multithread_receiver_t lookup_receiver;
static struct pd_lookup *lookups;

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
	/* Answers still to come are dropped. With a lookup still on h2o's
	 * resolver thread the queue stays (that thread will post into it); it
	 * remains reachable from lookup_queue. */
	for (struct pd_lookup *lk = lookups; lk; lk = lk->next) {
		if (lk->r)
			lk->r->bs_lookup = NULL;
		lk->r = NULL;
	}
	if (lookup_queue && !lookups) {
		h2o_multithread_unregister_receiver(lookup_queue, &lookup_receiver);
		h2o_multithread_destroy_queue(lookup_queue);
		lookup_queue = NULL;
	}
	free(pd);
	e->pd = NULL;
}

/* ---- decode side --------------------------------------------------------- */

static void pd_timer(struct mock_timer *t);
static void try_connect(struct mreq *r);

static void client_close(struct mreq *r)
{
	if (r->bs_lookup) { /* its answer is dropped when it arrives */
		r->bs_lookup->r = NULL;
		r->bs_lookup = NULL;
	}
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

static void on_resolved(h2o_hostinfo_getaddr_req_t *req, const char *errstr,
			struct addrinfo *res, void *cbdata)
{
	(void)req;
	struct pd_lookup *lk = cbdata;
	struct mreq *r = lk->r;
	if (lk->prev)
		lk->prev->next = lk->next;
	else
		lookups = lk->next;
	if (lk->next)
		lk->next->prev = lk->prev;
	free(lk);
	if (!r)
		return;
	r->bs_lookup = NULL;
	if (!errstr && res && res->ai_addrlen <= sizeof(r->bs_addr)) {
		memcpy(&r->bs_addr, res->ai_addr, res->ai_addrlen);
		r->bs_addrlen = res->ai_addrlen;
		mock_timer_cancel(&r->eng->timers, &r->timer);
		try_connect(r);
		return;
	}
	sy_warn("bootstrap_host '%s' does not resolve (%s): room %" PRIu64 " will time out",
		r->bs_host, errstr ? errstr : "no address", r->room);
	r->bs_unresolvable = true; /* the timer armed at the deadline fails r */
}

/* Fills r->bs_addr from a numeric bootstrap_host (IPv4 or IPv6) at once.
 * Returns false for a name, which needs the resolver. */
static bool parse_numeric(struct mreq *r)
{
	memset(&r->bs_addr, 0, sizeof(r->bs_addr));
	struct sockaddr_in *s4 = (struct sockaddr_in *)&r->bs_addr;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&r->bs_addr;
	if (inet_pton(AF_INET, r->bs_host, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)r->bs_port);
		r->bs_addrlen = sizeof(*s4);
		return true;
	}
	if (inet_pton(AF_INET6, r->bs_host, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)r->bs_port);
		r->bs_addrlen = sizeof(*s6);
		return true;
	}
	return false;
}

/* Starts the lookup of a bootstrap_host name off the loop; try_connect()
 * runs when the answer arrives. The request's timer stays armed at its
 * deadline meanwhile, so resolution time counts against --pd-timeout-ms.
 * Returns 0 or SY_ENOMEM. */
static int start_lookup(struct mreq *r)
{
	if (!lookup_queue) {
		lookup_queue = h2o_multithread_create_queue(r->eng->loop); /* aborts on OOM */
		h2o_multithread_register_receiver(lookup_queue, &lookup_receiver,
						  h2o_hostinfo_getaddr_receiver);
		/* a name that takes seconds to fail must not hold up the others */
		if (h2o_hostinfo_max_threads < 4)
			h2o_hostinfo_max_threads = 4;
	}
	struct pd_lookup *lk = malloc(sizeof(*lk));
	if (!lk)
		return SY_ENOMEM;
	lk->r = r;
	lk->prev = NULL;
	lk->next = lookups;
	if (lookups)
		lookups->prev = lk;
	lookups = lk;
	r->bs_lookup = lk;
	char port[8];
	int k = snprintf(port, sizeof(port), "%d", r->bs_port);
	h2o_hostinfo_getaddr(&lookup_receiver, h2o_iovec_init(r->bs_host, strlen(r->bs_host)),
			     h2o_iovec_init(port, (size_t)k), AF_UNSPEC, SOCK_STREAM, IPPROTO_TCP,
			     AI_ADDRCONFIG | AI_NUMERICSERV, on_resolved, lk);
	return 0;
}

static void try_connect(struct mreq *r)
{
	if (r->bs_lookup || r->bs_unresolvable) {
		/* waiting for the resolver, or nothing to connect to: the
		 * deadline decides */
		mock_timer_arm(&r->eng->timers, &r->timer, r->pd_deadline, pd_timer);
		return;
	}
	socklen_t len = r->bs_addrlen;
	struct sockaddr_storage ss = r->bs_addr;
	h2o_socket_t *sock = h2o_socket_connect(r->eng->loop, (struct sockaddr *)&ss, len,
						on_connect);
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
	r->bs_addrlen = 0;
	r->bs_unresolvable = false;
	if (!parse_numeric(r) && start_lookup(r) != 0) {
		sy_warn("cannot start resolving bootstrap_host '%s': room %" PRIu64
			" will time out", r->bs_host, r->room);
		r->bs_unresolvable = true;
	}
	try_connect(r);
}

void mock_pd_cancel(struct mreq *r) { client_close(r); }
