/* edge.c — the client edge (edge.h).
 *
 * Hooks. h2o 2.2 gives a handler no say before a request is read whole: it
 * parses the head and reads the body itself, through picohttpparser, which
 * libh2o-evloop exports and calls through its PLT. This executable defines
 * phr_parse_request and phr_decode_chunked, so h2o's calls reach these
 * first; they call the library's own (dlsym RTLD_NEXT) and judge the
 * result. It defines h2o_http2_accept and h2o_http2_handle_upgrade, to know
 * when a connection turns HTTP/2, and h2o_socket_read_start, to put a wrapper in front
 * of the read callback of every accepted socket: the wrapper marks the
 * connection whose bytes h2o is about to parse (`edge.current`), so a head
 * or a chunk is attributed to its connection — and only when the parsed
 * bytes lie in that connection's input buffer. rt_edge_selfcheck() refuses
 * to run when the interposition is not in effect (the executable exports
 * these symbols: export_dynamic in router/meson.build).
 *
 * Parking. h2o's HTTP/1 stops reading a connection while it serves a
 * request and starts again after the response; its epoll backend turns
 * each into an epoll_ctl (DEL, then ADD: an epoll item freed and made
 * again per request, ~7 % of a proxied small request's CPU). The
 * interposed h2o_socket_read_stop parks an edge socket instead: it stays
 * polled for reading, with H2O_SOCKET_FLAG_DONT_READ (h2o_socket_dont_read)
 * so h2o only reports readiness and reads nothing. The next read_start
 * unparks it with no epoll change. If the socket turns readable while
 * parked (pipelined bytes, the client's FIN), it is stopped for real, as
 * h2o asked: the bytes stay in the kernel until h2o reads again, so the
 * buffer that h2o's request points into never moves.
 *
 * Verdicts. A refused head is rewritten before h2o sees it: its
 * Content-Length, Transfer-Encoding and Expect headers are replaced by one
 * malformed Content-Length, so h2o answers 400 through
 * h2o_send_error_generic() and closes the connection without reading a
 * body byte (no 100 Continue either). A refused chunk makes the decoder
 * fail, with the same answer. The verdict waits in the connection state;
 * the output filter (oversize.c) renders it in place of h2o's text.
 *
 * Budget. A declared body is counted against the process's budget at its
 * head, a chunked body as it is decoded. The count belongs to the
 * connection until a route starts (rt_edge_adopt_body moves it into the
 * request's pool) and returns to the budget when the request ends, the
 * next head of the connection is parsed, or the connection closes.
 *
 * Invariants: edge.pending is the sum of every connection's `held`, every
 * HTTP/2 stream's count (edge_h2.c) and every adopted count not yet
 * released; edge.current is NULL or a live connection.
 */
#include "router/http/edge.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <h2o/http2.h>

#include "common/log.h"
#include "router/http/edge-int.h"
#include "router/http/picohttp.h"

struct rt_edge rt_edge;

/* ---- the library's own functions ------------------------------------------- */

typedef int (*parse_request_fn)(const char *, size_t, const char **, size_t *, const char **,
				size_t *, int *, struct phr_header *, size_t *, size_t);
typedef ssize_t (*decode_chunked_fn)(struct phr_chunked_decoder *, char *, size_t *);
typedef void (*read_start_fn)(h2o_socket_t *, h2o_socket_cb);
typedef void (*read_stop_fn)(h2o_socket_t *);
typedef void (*http2_accept_fn)(h2o_accept_ctx_t *, h2o_socket_t *, struct timeval);
typedef int (*http2_upgrade_fn)(h2o_req_t *, struct timeval);

static struct {
	parse_request_fn parse_request;
	decode_chunked_fn decode_chunked;
	read_start_fn read_start;
	read_stop_fn read_stop;
	http2_accept_fn http2_accept;
	http2_upgrade_fn http2_upgrade;
} lib;

static void resolve(void)
{
	if (lib.read_start != NULL)
		return;
	*(void **)&lib.parse_request = dlsym(RTLD_NEXT, "phr_parse_request");
	*(void **)&lib.decode_chunked = dlsym(RTLD_NEXT, "phr_decode_chunked");
	*(void **)&lib.http2_accept = dlsym(RTLD_NEXT, "h2o_http2_accept");
	*(void **)&lib.http2_upgrade = dlsym(RTLD_NEXT, "h2o_http2_handle_upgrade");
	*(void **)&lib.read_stop = dlsym(RTLD_NEXT, "h2o_socket_read_stop");
	*(void **)&lib.read_start = dlsym(RTLD_NEXT, "h2o_socket_read_start");
	if (lib.parse_request == NULL || lib.decode_chunked == NULL || lib.read_start == NULL ||
	    lib.read_stop == NULL || lib.http2_accept == NULL || lib.http2_upgrade == NULL) {
		fprintf(stderr, "switchyard-router: libh2o-evloop lacks picohttpparser or "
				"h2o_socket_read_start/stop\n");
		abort();
	}
}

int rt_edge_selfcheck(char *err, size_t cap)
{
	resolve();
	if (dlsym(RTLD_DEFAULT, "phr_parse_request") != (void *)phr_parse_request ||
	    dlsym(RTLD_DEFAULT, "phr_decode_chunked") != (void *)phr_decode_chunked ||
	    dlsym(RTLD_DEFAULT, "h2o_socket_read_start") != (void *)h2o_socket_read_start ||
	    dlsym(RTLD_DEFAULT, "h2o_socket_read_stop") != (void *)h2o_socket_read_stop ||
	    dlsym(RTLD_DEFAULT, "h2o_http2_accept") != (void *)h2o_http2_accept ||
	    dlsym(RTLD_DEFAULT, "h2o_http2_handle_upgrade") != (void *)h2o_http2_handle_upgrade) {
		snprintf(err, cap, "the HTTP edge checks are not in effect: h2o's calls into "
				   "picohttpparser do not reach the router (build with export_dynamic)");
		return -1;
	}
	return 0;
}

/* ---- limits and the budget ------------------------------------------------ */

void rt_edge_configure(uint64_t max_body_bytes, uint64_t max_pending_body_bytes,
		       uint64_t h2_stream_limit)
{
	rt_edge.max_body = max_body_bytes;
	rt_edge.max_pending = max_pending_body_bytes;
	rt_edge.h2_stream_limit = h2_stream_limit;
}

uint64_t rt_edge_pending_bytes(void) { return rt_edge.pending; }

bool rt_edge_budget_take(uint64_t n)
{
	if (rt_edge.pending > rt_edge.max_pending || n > rt_edge.max_pending - rt_edge.pending)
		return false;
	rt_edge.pending += n;
	return true;
}

void rt_edge_budget_give(uint64_t n)
{
	if (n > rt_edge.pending) {
		sy_error("edge: body budget released %llu bytes with %llu held",
			 (unsigned long long)n, (unsigned long long)rt_edge.pending);
		n = rt_edge.pending;
	}
	rt_edge.pending -= n;
}

static void release_held(struct edge_conn *e)
{
	rt_edge_budget_give(e->held);
	e->held = 0;
}

void rt_edge_overloaded(struct rt_edge_verdict *v)
{
	rt_edge_verdict_set(v, 503, "service_overloaded", 1,
			    "request bodies in flight hold %llu of this process's %llu bytes; "
			    "retry later",
			    (unsigned long long)rt_edge.pending,
			    (unsigned long long)rt_edge.max_pending);
}

void rt_edge_verdict_set(struct rt_edge_verdict *v, int status, const char *code,
			 unsigned retry_after, const char *fmt, ...)
{
	va_list ap;
	v->status = status;
	v->code = code;
	v->retry_after = retry_after;
	va_start(ap, fmt);
	vsnprintf(v->message, sizeof(v->message), fmt, ap);
	va_end(ap);
}

/* ---- connections ---------------------------------------------------------- */

static void on_conn_close(void *data)
{
	struct edge_conn *e = data;
	release_held(e);
	rt_edge_h2_close(e);
	if (rt_edge.current == e)
		rt_edge.current = NULL;
	free(e);
}

struct edge_conn *rt_edge_of_sock(h2o_socket_t *sock)
{
	return sock != NULL && sock->on_close.cb == on_conn_close ? sock->on_close.data : NULL;
}

struct edge_conn *rt_edge_of_req(h2o_req_t *req)
{
	if (req->conn == NULL || req->conn->callbacks->get_socket == NULL)
		return NULL;
	return rt_edge_of_sock(req->conn->callbacks->get_socket(req->conn));
}

/* The current connection when `p` points into its input buffer. */
static struct edge_conn *edge_for(const char *p)
{
	struct edge_conn *e = rt_edge.current;
	if (e == NULL)
		return NULL;
	const h2o_buffer_t *in = e->sock->input;
	if (in->bytes == NULL || p < in->bytes || p > in->bytes + in->size)
		return NULL;
	return e;
}

static void on_read(h2o_socket_t *sock, const char *err)
{
	struct edge_conn *e = sock->on_close.data;
	if (err == NULL && e->h2 != NULL)
		rt_edge_h2_before_read(e);
	rt_edge.current = e;
	e->inner_read(sock, err);
	if (rt_edge.current == e) /* still open */
		rt_edge.current = NULL;
}

/* Ends parking: h2o reads the socket again when it polls it. */
static void unpark(struct edge_conn *e)
{
	e->parked = false;
	h2o_socket_dont_read(e->sock, 0);
}

/* A parked socket turned readable: stop reading for real (see Parking). */
static void on_parked(h2o_socket_t *sock, const char *err)
{
	(void)err;
	struct edge_conn *e = sock->on_close.data;
	unpark(e);
	lib.read_stop(sock);
}

/* Interposed (see the file comment): wraps the read callback of the edge's
 * sockets. */
void h2o_socket_read_start(h2o_socket_t *sock, h2o_socket_cb cb)
{
	resolve();
	struct edge_conn *e = rt_edge_of_sock(sock);
	if (e != NULL && e->parked)
		unpark(e);
	if (e != NULL && cb != on_read) {
		e->inner_read = cb;
		rt_edge.current = e; /* h2o may parse buffered input at once */
		cb = on_read;
	}
	lib.read_start(sock, cb);
}

/* Interposed (see Parking in the file comment): an HTTP/1 edge socket
 * that h2o stops reading is parked instead. */
void h2o_socket_read_stop(h2o_socket_t *sock)
{
	resolve();
	struct edge_conn *e = rt_edge_of_sock(sock);
	if (e == NULL || e->h2 != NULL || e->parked || !h2o_socket_is_reading(sock)) {
		lib.read_stop(sock);
		return;
	}
	e->parked = true;
	h2o_socket_dont_read(sock, 1);
	lib.read_start(sock, on_parked);
}

/* Interposed: h2o takes a connection into HTTP/2 (ALPN h2, or the
 * prior-knowledge preface on a cleartext connection). */
void h2o_http2_accept(h2o_accept_ctx_t *ctx, h2o_socket_t *sock, struct timeval connected_at)
{
	resolve();
	struct edge_conn *e = rt_edge_of_sock(sock);
	if (e != NULL)
		rt_edge_h2_start(e);
	lib.http2_accept(ctx, sock, connected_at);
}

/* Interposed: h2o upgrades an HTTP/1 connection to h2c (101). */
int h2o_http2_handle_upgrade(h2o_req_t *req, struct timeval connected_at)
{
	resolve();
	int r = lib.http2_upgrade(req, connected_at);
	struct edge_conn *e = r == 0 ? rt_edge_of_req(req) : NULL;
	if (e != NULL)
		rt_edge_h2_start(e);
	return r;
}

void rt_edge_accept(h2o_accept_ctx_t *ctx, h2o_socket_t *sock, bool admin)
{
	struct edge_conn *e = calloc(1, sizeof(*e));
	if (e == NULL) {
		h2o_socket_close(sock);
		return;
	}
	e->sock = sock;
	e->admin = admin;
	sock->on_close.cb = on_conn_close;
	sock->on_close.data = e;
	h2o_accept(ctx, sock);
}

/* ---- requests ------------------------------------------------------------- */

bool rt_edge_is_admin(h2o_req_t *req)
{
	struct edge_conn *e = rt_edge_of_req(req);
	return e != NULL && e->admin;
}

static void on_body_dispose(void *p) { rt_edge_budget_give(*(uint64_t *)p); }

void rt_edge_adopt_body(h2o_req_t *req)
{
	struct edge_conn *e = rt_edge_of_req(req);
	if (e == NULL)
		return;
	uint64_t n;
	if (e->h2 != NULL)
		n = rt_edge_h2_adopt(e, req);
	else {
		n = e->held;
		e->held = 0;
	}
	if (n == 0)
		return;
	uint64_t *owned = h2o_mem_alloc_shared(&req->pool, sizeof(*owned), on_body_dispose);
	*owned = n;
}

bool rt_edge_take_verdict(h2o_req_t *req, struct rt_edge_verdict *out)
{
	struct edge_conn *e = rt_edge_of_req(req);
	if (e == NULL || e->verdict.status == 0)
		return false;
	*out = e->verdict;
	e->verdict.status = 0;
	return true;
}

/* ---- HTTP/1 heads ------------------------------------------------------- */

static bool name_is(const struct phr_header *h, const char *name, size_t len)
{
	return h->name_len == len && strncasecmp(h->name, name, len) == 0;
}

/* A Content-Length value: 1*DIGIT that fits in 63 bits. */
static bool parse_length(const char *v, size_t len, uint64_t *out)
{
	uint64_t x = 0;
	if (len == 0 || len > 18)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9')
			return false;
		x = x * 10 + (uint64_t)(v[i] - '0');
	}
	*out = x;
	return true;
}

/* What h2o is made to see of a refused head: one Content-Length it cannot
 * parse (writable: h2o lower-cases header names in place). */
static char refused_name[] = "content-length";
static char refused_value[] = "-";

static void rewrite_refused(struct phr_header *headers, size_t *num_headers)
{
	size_t n = 0;
	for (size_t i = 0; i < *num_headers; i++) {
		const struct phr_header *h = &headers[i];
		if (h->name == NULL || name_is(h, "content-length", 14) ||
		    name_is(h, "transfer-encoding", 17) || name_is(h, "expect", 6))
			continue;
		headers[n++] = *h;
	}
	/* A refused head had an entity header, so there is room for one. */
	headers[n].name = refused_name;
	headers[n].name_len = sizeof(refused_name) - 1;
	headers[n].value = refused_value;
	headers[n].value_len = sizeof(refused_value) - 1;
	*num_headers = n + 1;
}

static int judge_head(struct edge_conn *e, struct phr_header *headers, size_t *num_headers,
		      int head_len)
{
	if (e != NULL) {
		release_held(e); /* the previous request of the connection is over */
		e->verdict.status = 0;
		e->chunked = false;
		e->chunked_body = 0;
	}
	size_t n_cl = 0, n_te = 0;
	uint64_t cl = 0;
	bool cl_bad = false, cl_conflict = false, te_chunked = true;
	for (size_t i = 0; i < *num_headers; i++) {
		const struct phr_header *h = &headers[i];
		if (h->name == NULL) /* a folded continuation line */
			continue;
		if (name_is(h, "content-length", 14)) {
			uint64_t v = 0;
			if (!parse_length(h->value, h->value_len, &v))
				cl_bad = true;
			else if (n_cl > 0 && v != cl)
				cl_conflict = true;
			cl = v;
			n_cl++;
		} else if (name_is(h, "transfer-encoding", 17)) {
			if (h->value_len != 7 || strncasecmp(h->value, "chunked", 7) != 0)
				te_chunked = false;
			n_te++;
		}
	}
	if (n_cl == 0 && n_te == 0)
		return head_len;

	struct rt_edge_verdict v = {0};
	if (n_te > 1)
		rt_edge_verdict_set(&v, 400, "bad_request", 0, "more than one Transfer-Encoding header");
	else if (n_te > 0 && n_cl > 0)
		rt_edge_verdict_set(&v, 400, "bad_request", 0,
				    "Transfer-Encoding together with Content-Length "
				    "(RFC 9112 section 6.3)");
	else if (n_te > 0 && !te_chunked)
		rt_edge_verdict_set(&v, 400, "bad_request", 0,
				    "unsupported Transfer-Encoding: only chunked is accepted");
	else if (cl_bad)
		rt_edge_verdict_set(&v, 400, "bad_request", 0, "malformed Content-Length header");
	else if (cl_conflict)
		rt_edge_verdict_set(&v, 400, "bad_request", 0, "conflicting Content-Length headers");
	else if (n_cl > 0 && cl > rt_edge.max_body)
		rt_edge_verdict_set(&v, 413, "payload_too_large", 0,
				    "request body of %llu bytes exceeds the limit of %llu bytes",
				    (unsigned long long)cl, (unsigned long long)rt_edge.max_body);
	else if (n_cl > 0 && e != NULL && !rt_edge_budget_take(cl))
		rt_edge_overloaded(&v);
	else {
		if (e != NULL && n_cl > 0)
			e->held = cl;
		else if (e != NULL)
			e->chunked = true;
		return head_len;
	}
	if (e == NULL) {
		/* Not attributed to a connection (not expected): refuse bad framing
		 * with h2o's own 400; h2o's own limit stands for the rest. */
		if (rt_edge.unattributed++ == 0)
			sy_warn("edge: a request head was not attributed to its connection");
		return v.status == 400 ? -1 : head_len;
	}
	e->verdict = v;
	rewrite_refused(headers, num_headers);
	return head_len;
}

/* Interposed: h2o's HTTP/1 request-head parser. */
int phr_parse_request(const char *buf, size_t len, const char **method, size_t *method_len,
		      const char **path, size_t *path_len, int *minor_version,
		      struct phr_header *headers, size_t *num_headers, size_t last_len)
{
	resolve();
	int r = lib.parse_request(buf, len, method, method_len, path, path_len, minor_version,
				  headers, num_headers, last_len);
	if (r > 0)
		r = judge_head(edge_for(buf), headers, num_headers, r);
	return r;
}

/* ---- chunked bodies ------------------------------------------------------- */

/* Interposed: h2o's chunked decoder (also the upstream client's, where
 * the size check applies alike and nothing is attributed). */
ssize_t phr_decode_chunked(struct phr_chunked_decoder *d, char *buf, size_t *bufsz)
{
	resolve();
	struct edge_conn *e = edge_for(buf);
	ssize_t r = lib.decode_chunked(d, buf, bufsz);
	if (r == -1)
		return r;
	if (d->bytes_left_in_chunk > (size_t)INT64_MAX) {
		if (e != NULL)
			rt_edge_verdict_set(&e->verdict, 400, "bad_request", 0,
					    "chunk size overflows");
		return -1;
	}
	if (e == NULL || !e->chunked)
		return r;
	uint64_t got = *bufsz;
	e->chunked_body += got;
	if (e->chunked_body > rt_edge.max_body ||
	    d->bytes_left_in_chunk > rt_edge.max_body - e->chunked_body) {
		rt_edge_verdict_set(&e->verdict, 413, "payload_too_large", 0,
				    "request body exceeds the limit of %llu bytes",
				    (unsigned long long)rt_edge.max_body);
		return -1;
	}
	if (!rt_edge_budget_take(got)) {
		rt_edge_overloaded(&e->verdict);
		return -1;
	}
	e->held += got;
	return r;
}
