/* test_client.c — the upstream client (router/upstream/client.h) against a
 * scripted upstream on a 127.0.0.1 listener, both ends driven by one h2o
 * event loop inside the test: Content-Length and chunked bodies, keep-alive
 * reuse, truncated chunked bodies (inside a chunk, after a whole chunk)
 * ending in an error, a peer close before the head, the head timeout,
 * connect refused, cancel from a callback, the one fresh-connection
 * retry of a reused socket the peer dropped (reported to the hook), and
 * held exchanges (rt_exchange_connect: connected, written only on send;
 * fresh; a peer close while held).
 */
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <h2o.h>

#include "common/clock.h"
#include "router/upstream/client.h"
#include "router/upstream/pool.h"
#include "tests/unit/sy_check.h"

/* ---- the scripted upstream ------------------------------------------------ */

struct script {
	const char *resp;  /* bytes sent after each complete request; NULL: silent */
	bool close_after;  /* close the connection once `resp` is written */
	bool close_now;    /* close on the request without answering */
};

static h2o_evloop_t *loop;
static h2o_socket_t *listener;
static uint16_t port;
static struct script script;
static unsigned connections, requests;
static struct rt_upstreams *table;
static struct rt_upstream *up;
/* The upstream's open sockets (the loop keeps no list; teardown closes them). */
static h2o_socket_t *srv_socks[16];
/* A head timeout of 100 ms (registered with the loop for its lifetime). */
static h2o_timeout_t head_100ms;

static void srv_close(h2o_socket_t *sock)
{
	for (size_t i = 0; i < sizeof(srv_socks) / sizeof(srv_socks[0]); i++)
		if (srv_socks[i] == sock)
			srv_socks[i] = NULL;
	h2o_socket_close(sock);
}

static void srv_on_written(h2o_socket_t *sock, const char *err)
{
	(void)err;
	if (script.close_after)
		srv_close(sock);
}

/* One request per head + content-length body; answers per the script. */
static void srv_on_read(h2o_socket_t *sock, const char *err)
{
	if (err != NULL) {
		srv_close(sock);
		return;
	}
	for (;;) {
		h2o_buffer_t *in = sock->input;
		if (in->size == 0)
			return;
		char *end = memmem(in->bytes, in->size, "\r\n\r\n", 4);
		if (end == NULL)
			return;
		size_t head = (size_t)(end - in->bytes) + 4, body = 0;
		char *cl = memmem(in->bytes, head, "content-length: ", 16);
		if (cl != NULL)
			body = strtoul(cl + 16, NULL, 10);
		if (in->size < head + body)
			return;
		h2o_buffer_consume(&sock->input, head + body);
		requests++;
		if (script.close_now) {
			srv_close(sock);
			return;
		}
		if (script.resp == NULL)
			continue;
		h2o_iovec_t v = h2o_iovec_init(script.resp, strlen(script.resp));
		h2o_socket_write(sock, &v, 1, srv_on_written);
		if (script.close_after)
			return;
	}
}

static void srv_on_accept(h2o_socket_t *l, const char *err)
{
	if (err != NULL)
		return;
	h2o_socket_t *s = h2o_evloop_socket_accept(l);
	if (s == NULL)
		return;
	connections++;
	for (size_t i = 0; i < sizeof(srv_socks) / sizeof(srv_socks[0]); i++)
		if (srv_socks[i] == NULL) {
			srv_socks[i] = s;
			break;
		}
	h2o_socket_read_start(s, srv_on_read);
}

static int listen_loopback(uint16_t *p)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(fd, 16), 0);
	socklen_t len = sizeof(a);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*p = ntohs(a.sin_port);
	return fd;
}

/* ---- the client side -------------------------------------------------------- */

struct result {
	const char *connect_err;
	const char *head_err;
	const char *end;       /* on_body's terminal err */
	int status;
	bool connected, head_eos, done;
	unsigned body_calls;
	char body[256];
	size_t body_len;
	bool cancel_on_head;
};

static void take_body(struct rt_exchange *x, struct result *r)
{
	size_t n = x->body->size;
	if (n == 0)
		return;
	ck_assert_uint_le(r->body_len + n, sizeof(r->body));
	memcpy(r->body + r->body_len, x->body->bytes, n);
	r->body_len += n;
	h2o_buffer_consume(&x->body, n);
}

static void cb_connect(struct rt_exchange *x, const char *err)
{
	struct result *r = x->data;
	r->connected = err == NULL;
	if (err != NULL) {
		ck_assert(!x->active);
		r->connect_err = err;
		r->done = true;
	}
}

static void cb_head(struct rt_exchange *x, const char *err, int status, const h2o_header_t *h,
		    size_t n, bool eos)
{
	(void)h, (void)n;
	struct result *r = x->data;
	r->status = status;
	r->head_err = err;
	r->head_eos = eos;
	if (err != NULL || eos) {
		ck_assert(!x->active);
		r->done = true;
	} else if (r->cancel_on_head) {
		rt_exchange_cancel(x);
		ck_assert(!x->active);
		r->done = true;
	}
}

static void cb_body(struct rt_exchange *x, const char *err)
{
	struct result *r = x->data;
	ck_assert(!r->done);
	r->body_calls++;
	take_body(x, r);
	if (err != NULL) {
		ck_assert(!x->active);
		r->end = err;
		r->done = true;
	}
}

static const struct rt_exchange_cb cbs = {cb_connect, cb_head, cb_body};

static const char REQ[] =
	"POST /v1/chat/completions HTTP/1.1\r\nhost: t\r\ncontent-length: 2\r\n\r\n";

/* Runs the loop until `done` or `ms` passed. */
static void run_until(bool *done, uint64_t ms)
{
	uint64_t end = sy_mono_ns() + ms * 1000000u;
	while (!*done && sy_mono_ns() < end)
		h2o_evloop_run(loop, 10);
}

/* Runs the loop for `ms` (lets late callbacks show up). */
static void run_for(uint64_t ms)
{
	bool never = false;
	run_until(&never, ms);
}

/* Sends REQ with body "hi" on `x` to `u`. */
static void start(struct rt_exchange *x, struct rt_upstream *u, h2o_timeout_t *head_timeout)
{
	rt_exchange_start(x, u, h2o_iovec_init(REQ, sizeof(REQ) - 1), h2o_iovec_init("hi", 2),
			  head_timeout);
}

/* One exchange against `up`; the result once done (or after 2 s). */
static void exchange(struct rt_exchange *x, struct result *r, h2o_timeout_t *head_timeout)
{
	memset(r->body, 0, sizeof(r->body));
	start(x, up, head_timeout);
	run_until(&r->done, 2000);
	ck_assert_msg(r->done, "exchange did not end");
}

/* exchange() on a freshly initialised `x` reporting into `r`. */
static void exchange_new(struct rt_exchange *x, struct result *r, h2o_timeout_t *head_timeout)
{
	rt_exchange_init(x, &cbs, r);
	exchange(x, r, head_timeout);
}

static void setup(void)
{
	loop = h2o_evloop_create();
	rt_client_init(loop, 2000, NULL);
	h2o_timeout_init(loop, &head_100ms, 100);
	int fd = listen_loopback(&port);
	listener = h2o_evloop_socket_create(loop, fd, H2O_SOCKET_FLAG_DONT_READ);
	h2o_socket_read_start(listener, srv_on_accept);
	memset(&script, 0, sizeof(script));
	connections = requests = 0;
	table = rt_upstreams_create(2, 8);
	ck_assert_ptr_nonnull(table);
	char url[64];
	const char *why = NULL;
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", port);
	up = rt_upstream_get(table, 0, url, &why);
	ck_assert_msg(up != NULL, "%s", why);
}

static void teardown(void)
{
	for (size_t i = 0; i < sizeof(srv_socks) / sizeof(srv_socks[0]); i++)
		if (srv_socks[i] != NULL)
			srv_close(srv_socks[i]);
	h2o_socket_close(listener);
	run_for(20); /* the loop frees closed sockets on its next turn */
}

static const char CL_RESP[] = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
			      "content-length: 11\r\n\r\n{\"ok\":true}";

/* ---- tests ------------------------------------------------------------------ */

START_TEST(test_content_length_body_completes_and_the_socket_is_reused)
{
	script.resp = CL_RESP;
	for (int i = 0; i < 3; i++) {
		struct rt_exchange x;
		struct result r = {0};
		exchange_new(&x, &r, NULL);
		ck_assert(r.connected);
		ck_assert_ptr_null(r.head_err);
		ck_assert_int_eq(r.status, 200);
		ck_assert_ptr_eq(r.end, rt_exchange_eos);
		ck_assert_str_eq(r.body, "{\"ok\":true}");
		ck_assert_uint_eq(up->pool.idle_count, 1);
		rt_exchange_dispose(&x);
	}
	ck_assert_uint_eq(requests, 3);
	ck_assert_uint_eq(connections, 1);
}
END_TEST

START_TEST(test_chunked_body_is_decoded_with_extension_and_trailer)
{
	script.resp = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
		      "5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nx-trailer: t\r\n\r\n";
	struct rt_exchange x;
	struct result r = {0};
	exchange_new(&x, &r, NULL);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_eq(r.end, rt_exchange_eos);
	ck_assert_str_eq(r.body, "hello, world");
	ck_assert_uint_eq(up->pool.idle_count, 1); /* chunked framing keeps the socket */
	rt_exchange_dispose(&x);
}
END_TEST

START_TEST(test_close_after_a_whole_chunk_without_the_last_chunk_is_an_error)
{
	script.resp = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\na\r\n0123456789\r\n";
	script.close_after = true;
	struct rt_exchange x;
	struct result r = {0};
	exchange_new(&x, &r, NULL);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_nonnull(r.end);
	ck_assert_ptr_ne(r.end, rt_exchange_eos);
	ck_assert_str_eq(r.body, "0123456789"); /* the bytes that came still belong to it */
	ck_assert_uint_eq(up->pool.idle_count, 0);
	rt_exchange_dispose(&x);
}
END_TEST

START_TEST(test_close_inside_a_chunk_is_an_error)
{
	script.resp = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\na\r\n01234";
	script.close_after = true;
	struct rt_exchange x;
	struct result r = {0};
	exchange_new(&x, &r, NULL);
	ck_assert_ptr_nonnull(r.end);
	ck_assert_ptr_ne(r.end, rt_exchange_eos);
	ck_assert_str_eq(r.body, "01234");
	rt_exchange_dispose(&x);
}
END_TEST

START_TEST(test_close_after_a_chunked_head_is_an_error_before_any_body_byte)
{
	script.resp = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n";
	script.close_after = true;
	struct rt_exchange x;
	struct result r = {0};
	exchange_new(&x, &r, NULL);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_nonnull(r.end);
	ck_assert_ptr_ne(r.end, rt_exchange_eos);
	ck_assert_uint_eq(r.body_len, 0);
	rt_exchange_dispose(&x);
}
END_TEST

START_TEST(test_close_short_of_content_length_is_an_error)
{
	script.resp = "HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n0123456789";
	script.close_after = true;
	struct rt_exchange x;
	struct result r = {0};
	exchange_new(&x, &r, NULL);
	ck_assert_ptr_ne(r.end, rt_exchange_eos);
	ck_assert_str_eq(r.body, "0123456789");
	rt_exchange_dispose(&x);
}
END_TEST

START_TEST(test_close_ends_a_body_framed_by_the_close)
{
	script.resp = "HTTP/1.0 200 OK\r\n\r\nall of it";
	script.close_after = true;
	struct rt_exchange x;
	struct result r = {0};
	exchange_new(&x, &r, NULL);
	ck_assert_ptr_eq(r.end, rt_exchange_eos);
	ck_assert_str_eq(r.body, "all of it");
	ck_assert_uint_eq(up->pool.idle_count, 0);
	rt_exchange_dispose(&x);
}
END_TEST

START_TEST(test_peer_close_before_the_head_is_an_error)
{
	script.close_now = true;
	struct rt_exchange x;
	struct result r = {0};
	exchange_new(&x, &r, NULL);
	ck_assert(r.connected);
	ck_assert_ptr_nonnull(r.head_err);
	ck_assert_int_eq(r.status, 0);
	ck_assert_uint_eq(r.body_calls, 0);
	rt_exchange_dispose(&x);
}
END_TEST

START_TEST(test_head_timeout_ends_the_exchange_and_drops_the_socket)
{
	script.resp = NULL; /* silent */
	struct rt_exchange x;
	struct result r = {0};
	rt_exchange_init(&x, &cbs, &r);
	uint64_t t0 = sy_mono_ns();
	exchange(&x, &r, &head_100ms);
	uint64_t ms = (sy_mono_ns() - t0) / 1000000u;
	ck_assert_ptr_eq(r.head_err, rt_exchange_timed_out);
	ck_assert_msg(ms >= 80 && ms < 1000, "timed out after %llu ms", (unsigned long long)ms);
	ck_assert_uint_eq(up->pool.idle_count, 0);
	/* the next exchange gets a new connection and an answer */
	script.resp = CL_RESP;
	struct result r2 = {0};
	x.data = &r2;
	exchange(&x, &r2, &head_100ms);
	ck_assert_ptr_eq(r2.end, rt_exchange_eos);
	ck_assert_uint_eq(connections, 2);
	rt_exchange_dispose(&x);
}
END_TEST

START_TEST(test_head_timer_stops_at_the_head)
{
	/* head at once, body never: the head timeout does not fire afterwards */
	script.resp = "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n";
	struct rt_exchange x;
	struct result r = {0};
	rt_exchange_init(&x, &cbs, &r);
	start(&x, up, &head_100ms);
	bool got_head = false;
	uint64_t end = sy_mono_ns() + 2000000000u;
	while (!got_head && sy_mono_ns() < end) {
		h2o_evloop_run(loop, 10);
		got_head = r.status == 200;
	}
	ck_assert(got_head);
	run_for(300);
	ck_assert(!r.done);
	ck_assert(x.active);
	rt_exchange_dispose(&x);
	ck_assert(!x.active);
}
END_TEST

START_TEST(test_connect_refused_is_reported_to_on_connect)
{
	char url[64];
	const char *why = NULL;
	uint16_t dead;
	int fd = listen_loopback(&dead);
	close(fd); /* nothing listens there now */
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", dead);
	struct rt_upstream *u = rt_upstream_get(table, 1, url, &why);
	ck_assert_ptr_nonnull(u);
	struct rt_exchange x;
	struct result r = {0};
	rt_exchange_init(&x, &cbs, &r);
	start(&x, u, NULL);
	run_until(&r.done, 2000);
	ck_assert_ptr_nonnull(r.connect_err);
	ck_assert_ptr_null(r.head_err);
	rt_exchange_dispose(&x);
}
END_TEST

START_TEST(test_cancel_from_on_head_stops_callbacks_and_drops_the_socket)
{
	script.resp = CL_RESP;
	struct rt_exchange x;
	struct result r = {.cancel_on_head = true};
	exchange_new(&x, &r, NULL);
	run_for(50);
	ck_assert_int_eq(r.status, 200);
	ck_assert_uint_eq(r.body_calls, 0);
	ck_assert_uint_eq(up->pool.idle_count, 0);
	rt_exchange_dispose(&x);
}
END_TEST

START_TEST(test_reused_socket_dropped_by_the_peer_is_replaced_once)
{
	script.resp = CL_RESP;
	struct rt_exchange x;
	struct result r = {0};
	exchange_new(&x, &r, NULL);
	ck_assert_uint_eq(up->pool.idle_count, 1);
	/* the peer closes the kept-alive socket on the next request, unanswered */
	script.close_now = true;
	struct result r2 = {0};
	x.data = &r2;
	exchange(&x, &r2, NULL);
	ck_assert_ptr_nonnull(r2.head_err); /* the fresh connection failed the same way */
	ck_assert_uint_eq(connections, 2);
	ck_assert_uint_eq(requests, 3);
	rt_exchange_dispose(&x);
}
END_TEST

static unsigned replaced;
static void count_replaced(void) { replaced++; }

START_TEST(test_replacing_a_dead_kept_alive_socket_is_reported)
{
	rt_client_init(loop, 2000, count_replaced);
	replaced = 0;
	script.resp = CL_RESP;
	struct rt_exchange x;
	struct result r = {0};
	rt_exchange_init(&x, &cbs, &r);
	exchange(&x, &r, NULL);
	script.close_now = true;
	struct result r2 = {0};
	x.data = &r2;
	exchange(&x, &r2, NULL);
	ck_assert_uint_eq(replaced, 1);
	rt_exchange_dispose(&x);
}
END_TEST

START_TEST(test_held_exchange_connects_and_writes_only_when_sent)
{
	script.resp = CL_RESP;
	struct rt_exchange x;
	struct result r = {0};
	rt_exchange_init(&x, &cbs, &r);
	rt_exchange_connect(&x, up, h2o_iovec_init(REQ, sizeof(REQ) - 1), h2o_iovec_init("hi", 2),
			    NULL, false);
	run_until(&r.connected, 2000);
	ck_assert(r.connected);
	run_for(50);
	ck_assert_uint_eq(connections, 1);
	ck_assert_uint_eq(requests, 0); /* connected, nothing written */
	ck_assert(!r.done);
	rt_exchange_send(&x);
	run_until(&r.done, 2000);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_eq(r.end, rt_exchange_eos);
	ck_assert_uint_eq(requests, 1);
	/* fresh: a kept-alive socket is idle now, but a new one is made */
	struct result r2 = {0};
	x.data = &r2;
	rt_exchange_connect(&x, up, h2o_iovec_init(REQ, sizeof(REQ) - 1), h2o_iovec_init("hi", 2),
			    NULL, true);
	run_until(&r2.connected, 2000);
	ck_assert_uint_eq(connections, 2);
	rt_exchange_send(&x);
	run_until(&r2.done, 2000);
	ck_assert_int_eq(r2.status, 200);
	rt_exchange_dispose(&x);
}
END_TEST

START_TEST(test_held_exchange_whose_peer_closes_ends_in_on_head)
{
	struct rt_exchange x;
	struct result r = {0};
	rt_exchange_init(&x, &cbs, &r);
	rt_exchange_connect(&x, up, h2o_iovec_init(REQ, sizeof(REQ) - 1), h2o_iovec_init("hi", 2),
			    NULL, true);
	run_until(&r.connected, 2000);
	ck_assert(r.connected);
	run_for(20);
	for (size_t i = 0; i < sizeof(srv_socks) / sizeof(srv_socks[0]); i++)
		if (srv_socks[i] != NULL)
			srv_close(srv_socks[i]);
	run_until(&r.done, 2000);
	ck_assert_ptr_eq(r.head_err, rt_exchange_closed);
	ck_assert_uint_eq(requests, 0);
	rt_exchange_dispose(&x);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("router/upstream/client");
	TCase *tc = tcase_create("client");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_content_length_body_completes_and_the_socket_is_reused);
	tcase_add_test(tc, test_chunked_body_is_decoded_with_extension_and_trailer);
	tcase_add_test(tc, test_close_after_a_whole_chunk_without_the_last_chunk_is_an_error);
	tcase_add_test(tc, test_close_inside_a_chunk_is_an_error);
	tcase_add_test(tc, test_close_after_a_chunked_head_is_an_error_before_any_body_byte);
	tcase_add_test(tc, test_close_short_of_content_length_is_an_error);
	tcase_add_test(tc, test_close_ends_a_body_framed_by_the_close);
	tcase_add_test(tc, test_peer_close_before_the_head_is_an_error);
	tcase_add_test(tc, test_head_timeout_ends_the_exchange_and_drops_the_socket);
	tcase_add_test(tc, test_head_timer_stops_at_the_head);
	tcase_add_test(tc, test_connect_refused_is_reported_to_on_connect);
	tcase_add_test(tc, test_cancel_from_on_head_stops_callbacks_and_drops_the_socket);
	tcase_add_test(tc, test_reused_socket_dropped_by_the_peer_is_replaced_once);
	tcase_add_test(tc, test_replacing_a_dead_kept_alive_socket_is_reported);
	tcase_add_test(tc, test_held_exchange_connects_and_writes_only_when_sent);
	tcase_add_test(tc, test_held_exchange_whose_peer_closes_ends_in_on_head);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sy_check_run(suite());
}
