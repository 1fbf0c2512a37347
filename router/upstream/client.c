/* client.c — the upstream client (see client.h).
 *
 * One struct rt_conn per TCP connection, malloc'd when the connection is
 * made and freed when it closes; an exchange borrows it. Per worker
 * (struct rt_pool in pool.h) idle connections wait on a list, most
 * recently used first, each with a keep-alive timer.
 *
 * Invariants
 * - Every connection's socket has reading started for its whole life, so
 *   it stays registered in epoll: reuse costs no epoll_ctl, no fcntl and no
 *   recv(MSG_PEEK); a peer that closes an idle connection is seen at once
 *   (on_read with no exchange) and the connection is freed.
 * - c->x and x->conn point at each other while an exchange runs; both are
 *   cleared together (detach) before any terminal callback.
 * - A connection is freed only outside its own callbacks: while one runs
 *   (c->in_cb), a cancel marks it doomed and the caller of the callback
 *   frees it afterwards.
 * - A connection goes back to the idle list only after a complete response
 *   with keep-alive framing (content-length or chunked, HTTP/1.1, no
 *   "connection: close") and nothing left over in its input.
 * - A reused connection that dies before the first response byte is
 *   replaced by a fresh one once (the peer closed it as idle while the
 *   request was on its way; it never saw the request); the replacement is
 *   reported to the on_replaced hook of rt_client_init (counted).
 * - A held exchange (rt_exchange_connect) parks its connected socket in
 *   L_HELD, reading, until rt_exchange_send writes the request; on_connect
 *   is reported once per exchange, so a held kept-alive socket that dies and
 *   is replaced is not reported again, and a failure after the report comes
 *   through on_head.
 * - A peer close ends the body as complete only for read-until-close
 *   framing; a chunked body is complete only with its 0-chunk (decoder
 *   result >= 0), a content-length body only with all its bytes. Any other
 *   close is ERR_BROKE_OFF (on_conn_end).
 * - An exchange's head timer is linked from start until its head is parsed
 *   or it ends, whichever comes first (also across the fresh-connection
 *   retry).
 * - Requests are written at the end of the event-loop turn that started
 *   them (a zero timeout: flush_timer), so the requests of one turn reach
 *   an engine back to back and wake it once, not once per request. The
 *   timer is linked only in L_HEAD before the write, and unlinked when the
 *   connection is freed.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "common/log.h"
#include "router/http/picohttp.h"
#include "router/upstream/client.h"
#include "router/upstream/pool.h"

#define MAX_HEADERS 100
#define MAX_HEAD_BYTES (64 * 1024)

enum lstate { L_CONNECTING, L_HELD, L_HEAD, L_BODY, L_IDLE };
enum lframing { F_LENGTH, F_CHUNKED, F_CLOSE };

/* One upstream connection (see file comment). */
struct rt_conn {
	h2o_socket_t *sock;
	struct rt_pool *pool;
	struct rt_exchange *x;              /* exchange; NULL when idle or detached */
	h2o_linklist_t idle_link;     /* in pool->idle while idle */
	h2o_timeout_entry_t idle_timer;
	h2o_timeout_entry_t flush_timer; /* the request waits for the end of the loop turn */
	enum lstate state;
	enum lframing framing;
	size_t remaining;             /* F_LENGTH: body bytes still due */
	struct phr_chunked_decoder dec;
	bool reused;                  /* served an earlier exchange */
	bool got_bytes;               /* a byte of the current response arrived */
	bool keepalive;               /* reusable after this response */
	bool in_cb;                   /* an exchange callback is running */
	bool doomed;                  /* cancelled during in_cb: free afterwards */
};

static h2o_loop_t *client_loop;
static h2o_timeout_t idle_timeout;
static h2o_timeout_t flush_turn; /* 0 ms: runs at the end of the current loop turn */
static bool keep_idle;
static void (*replaced_cb)(void);

#define ERR_CONNECT rt_exchange_connect_failed
#define ERR_CLOSED rt_exchange_closed
static const char ERR_BAD_HEAD[] = "the worker sent an invalid response head";
static const char ERR_BROKE_OFF[] = "the worker closed the connection mid-body";
static const char ERR_BAD_CHUNK[] = "the worker sent an invalid chunked body";
static const char ERR_NOMEM[] = "out of memory";

static void on_read(h2o_socket_t *sock, const char *err);
static void connect_new(struct rt_exchange *x);
static void exchange_open(struct rt_exchange *x, struct rt_upstream *up, h2o_iovec_t head,
			  h2o_iovec_t body, h2o_timeout_t *head_timeout);
static void fail_head(struct rt_conn *c, const char *err);

const char rt_exchange_eos[] = "end of body";
const char rt_exchange_connect_failed[] = "cannot connect to the worker";
const char rt_exchange_closed[] = "the worker closed the connection before answering";
const char rt_exchange_timed_out[] = "the worker did not answer in time";

void rt_client_init(h2o_loop_t *loop, uint64_t idle_ms, void (*on_replaced)(void))
{
	client_loop = loop;
	keep_idle = idle_ms > 0;
	replaced_cb = on_replaced;
	h2o_timeout_init(loop, &idle_timeout, idle_ms);
	h2o_timeout_init(loop, &flush_turn, 0);
}

static void head_timer_stop(struct rt_exchange *x)
{
	if (h2o_timeout_is_linked(&x->head_timer))
		h2o_timeout_unlink(&x->head_timer);
}

/* ---- connection lifetime ------------------------------------------------- */

static void conn_free(struct rt_conn *c)
{
	if (h2o_linklist_is_linked(&c->idle_link)) {
		h2o_linklist_unlink(&c->idle_link);
		c->pool->idle_count--;
	}
	if (h2o_timeout_is_linked(&c->idle_timer))
		h2o_timeout_unlink(&c->idle_timer);
	if (h2o_timeout_is_linked(&c->flush_timer))
		h2o_timeout_unlink(&c->flush_timer);
	if (c->sock != NULL)
		h2o_socket_close(c->sock); /* no callback of it runs after this */
	free(c);
}

/* Frees `c` now, or after its running callback returns. */
static void conn_kill(struct rt_conn *c)
{
	if (c->in_cb)
		c->doomed = true;
	else
		conn_free(c);
}

/* Ends the pairing of `c` and its exchange; the exchange is inactive. */
static void detach(struct rt_conn *c)
{
	struct rt_exchange *x = c->x;
	c->x = NULL;
	if (x != NULL) {
		x->conn = NULL;
		x->active = false;
		head_timer_stop(x);
	}
}

static void on_idle_timeout(h2o_timeout_entry_t *e)
{
	conn_free(H2O_STRUCT_FROM_MEMBER(struct rt_conn, idle_timer, e));
}

/* Parks a connection whose response completed cleanly. */
static void pool_put(struct rt_conn *c)
{
	struct rt_pool *p = c->pool;
	if (!keep_idle || p->idle_count >= p->capacity) {
		conn_free(c);
		return;
	}
	c->reused = true;
	c->state = L_IDLE;
	h2o_linklist_insert(p->idle.next, &c->idle_link);
	p->idle_count++;
	h2o_timeout_link(client_loop, &idle_timeout, &c->idle_timer);
}

/* ---- request ------------------------------------------------------------- */

static void on_write(h2o_socket_t *sock, const char *err)
{
	struct rt_conn *c = sock->data;
	/* A failed write shows up on the read side too (EOF/reset), where the
	 * exchange ends; an early answer may still be readable. Nothing here. */
	(void)c, (void)err;
}

/* The loop turn that started the request ends: write it. */
static void on_flush(h2o_timeout_entry_t *e)
{
	struct rt_conn *c = H2O_STRUCT_FROM_MEMBER(struct rt_conn, flush_timer, e);
	struct rt_exchange *x = c->x;
	if (x != NULL && c->state == L_HEAD)
		h2o_socket_write(c->sock, x->bufs, x->bufs[1].len ? 2 : 1, on_write);
}

static void begin_exchange(struct rt_conn *c)
{
	struct rt_exchange *x = c->x;
	if (x->hold) {
		c->state = L_HELD; /* connected; the request waits for rt_exchange_send */
		return;
	}
	c->state = L_HEAD;
	c->got_bytes = false;
	if (!h2o_timeout_is_linked(&c->flush_timer))
		h2o_timeout_link(client_loop, &flush_turn, &c->flush_timer);
}

static void on_connect(h2o_socket_t *sock, const char *err)
{
	struct rt_conn *c = sock->data;
	struct rt_exchange *x = c->x;
	if (err != NULL) {
		detach(c);
		conn_free(c);
		if (x->connect_reported) /* the replacement of a held socket failed */
			x->cb->on_head(x, ERR_CLOSED, 0, NULL, 0, false);
		else
			x->cb->on_connect(x, ERR_CONNECT);
		return;
	}
	h2o_socket_read_start(sock, on_read);
	if (!x->connect_reported) {
		x->connect_reported = true;
		c->in_cb = true;
		x->cb->on_connect(x, NULL);
		c->in_cb = false;
		if (c->doomed) {
			conn_free(c);
			return;
		}
	}
	begin_exchange(c);
}

static void connect_new(struct rt_exchange *x)
{
	struct rt_pool *p = &x->up->pool;
	struct rt_conn *c = calloc(1, sizeof(*c));
	if (c == NULL) {
		x->active = false;
		head_timer_stop(x);
		x->cb->on_connect(x, ERR_NOMEM);
		return;
	}
	c->pool = p;
	c->idle_timer.cb = on_idle_timeout;
	c->flush_timer.cb = on_flush;
	c->state = L_CONNECTING;
	c->x = x;
	x->conn = c;
	c->sock = h2o_socket_connect(client_loop, (struct sockaddr *)&p->addr, p->addrlen, on_connect);
	if (c->sock == NULL) {
		detach(c);
		conn_free(c);
		if (x->connect_reported)
			x->cb->on_head(x, ERR_CLOSED, 0, NULL, 0, false);
		else
			x->cb->on_connect(x, ERR_CONNECT);
		return;
	}
	c->sock->data = c;
}

/* The head timeout expired: connecting, or waiting for the head. */
static void on_head_timeout(h2o_timeout_entry_t *e)
{
	struct rt_exchange *x = H2O_STRUCT_FROM_MEMBER(struct rt_exchange, head_timer, e);
	struct rt_conn *c = x->conn;
	if (c == NULL || c->state == L_CONNECTING) {
		if (c != NULL) {
			detach(c);
			conn_free(c);
		}
		x->active = false;
		if (x->connect_reported)
			x->cb->on_head(x, rt_exchange_timed_out, 0, NULL, 0, false);
		else
			x->cb->on_connect(x, rt_exchange_timed_out);
		return;
	}
	fail_head(c, rt_exchange_timed_out);
}

void rt_exchange_init(struct rt_exchange *x, const struct rt_exchange_cb *cb, void *data)
{
	x->cb = cb;
	x->data = data;
	x->active = false;
	x->conn = NULL;
	x->head_timeout = NULL;
	memset(&x->head_timer, 0, sizeof(x->head_timer));
	x->head_timer.cb = on_head_timeout;
	h2o_buffer_init(&x->body, &h2o_socket_buffer_prototype);
}

void rt_exchange_start(struct rt_exchange *x, struct rt_upstream *up, h2o_iovec_t head,
		       h2o_iovec_t body, h2o_timeout_t *head_timeout)
{
	x->hold = false;
	x->fresh = false;
	exchange_open(x, up, head, body, head_timeout);
}

void rt_exchange_connect(struct rt_exchange *x, struct rt_upstream *up, h2o_iovec_t head,
			 h2o_iovec_t body, h2o_timeout_t *head_timeout, bool fresh)
{
	x->hold = true;
	x->fresh = fresh;
	exchange_open(x, up, head, body, head_timeout);
}

void rt_exchange_send(struct rt_exchange *x)
{
	if (!x->active || !x->hold)
		return;
	x->hold = false;
	if (x->conn != NULL && x->conn->state == L_HELD)
		begin_exchange(x->conn);
	/* still connecting: begins once connected */
}

static void exchange_open(struct rt_exchange *x, struct rt_upstream *up, h2o_iovec_t head,
			  h2o_iovec_t body, h2o_timeout_t *head_timeout)
{
	x->up = up;
	x->bufs[0] = head;
	x->bufs[1] = body;
	x->active = true;
	x->connect_reported = false;
	x->fresh_retry_done = false;
	x->head_timeout = head_timeout;
	if (head_timeout != NULL)
		h2o_timeout_link(client_loop, head_timeout, &x->head_timer);
	struct rt_pool *p = &up->pool;
	if (x->fresh || h2o_linklist_is_empty(&p->idle)) {
		connect_new(x);
		return;
	}
	struct rt_conn *c = H2O_STRUCT_FROM_MEMBER(struct rt_conn, idle_link, p->idle.next);
	h2o_linklist_unlink(&c->idle_link);
	p->idle_count--;
	h2o_timeout_unlink(&c->idle_timer);
	c->x = x;
	x->conn = c;
	/* Connected already: nothing can fail here, so on_connect runs now. */
	x->connect_reported = true;
	c->in_cb = true;
	x->cb->on_connect(x, NULL);
	c->in_cb = false;
	if (c->doomed) {
		conn_free(c);
		return;
	}
	begin_exchange(c);
}

void rt_exchange_cancel(struct rt_exchange *x)
{
	head_timer_stop(x);
	if (!x->active)
		return;
	x->active = false;
	struct rt_conn *c = x->conn;
	if (c == NULL)
		return;
	detach(c);
	conn_kill(c);
}

void rt_exchange_dispose(struct rt_exchange *x)
{
	rt_exchange_cancel(x);
	if (x->body != NULL)
		h2o_buffer_dispose(&x->body);
}

/* ---- response ------------------------------------------------------------ */

/* The exchange ends: `err` is rt_exchange_eos or a body error. */
static void end_exchange(struct rt_conn *c, const char *err)
{
	struct rt_exchange *x = c->x;
	bool reuse = err == rt_exchange_eos && c->keepalive && c->sock->input->size == 0;
	detach(c);
	if (reuse)
		pool_put(c);
	else
		conn_free(c);
	x->cb->on_body(x, err);
}

/* Failure before a complete head. */
static void fail_head(struct rt_conn *c, const char *err)
{
	struct rt_exchange *x = c->x;
	detach(c);
	conn_free(c);
	x->cb->on_head(x, err, 0, NULL, 0, false);
}

/* Moves `take` body bytes from the start of *in into *out and drops
 * `consumed` bytes of *in (take <= consumed <= size). Swaps the buffers
 * instead of copying when *out is empty and *in is used up. Returns 0 or
 * -1 (out of memory). */
static int move_body(h2o_buffer_t **in, h2o_buffer_t **out, size_t take, size_t consumed)
{
	if ((*out)->size == 0 && consumed == (*in)->size) {
		h2o_buffer_t *t = *out;
		*out = *in;
		*in = t;
		(*out)->size = take;
		return 0;
	}
	if (take != 0) {
		h2o_iovec_t dst = h2o_buffer_reserve(out, take);
		if (dst.base == NULL)
			return -1;
		memcpy(dst.base, (*in)->bytes, take);
		(*out)->size += take;
	}
	h2o_buffer_consume(in, consumed);
	return 0;
}

/* Takes body bytes from the socket input into x->body per the framing.
 * Returns 1 (body complete), 0 (more to come) or -1 (bad framing, or out
 * of memory: *why). */
static int body_ingest(struct rt_conn *c, const char **why)
{
	h2o_buffer_t **in = &c->sock->input, **out = &c->x->body;
	size_t have = (*in)->size;
	*why = ERR_NOMEM;
	switch (c->framing) {
	case F_LENGTH: {
		size_t take = have < c->remaining ? have : c->remaining;
		if (take != 0 && move_body(in, out, take, take) != 0)
			return -1;
		c->remaining -= take;
		if (c->remaining != 0)
			return 0;
		if ((*in)->size != 0) /* bytes beyond the body: not reusable */
			c->keepalive = false;
		return 1;
	}
	case F_CHUNKED: {
		if (have == 0)
			return 0;
		size_t n = have;
		ssize_t r = phr_decode_chunked(&c->dec, (*in)->bytes, &n);
		if (r == -1) {
			*why = ERR_BAD_CHUNK;
			return -1;
		}
		if (r > 0)
			c->keepalive = false; /* bytes after the last chunk */
		if (move_body(in, out, n, have) != 0)
			return -1;
		return r >= 0 ? 1 : 0;
	}
	case F_CLOSE:
		if (have != 0 && move_body(in, out, have, have) != 0)
			return -1;
		return 0;
	}
	return -1;
}

/* Runs body_ingest and tells the exchange. */
static void body_step(struct rt_conn *c)
{
	struct rt_exchange *x = c->x;
	size_t before = x->body->size;
	const char *why;
	int r = body_ingest(c, &why);
	if (r != 0) {
		end_exchange(c, r > 0 ? rt_exchange_eos : why);
		return;
	}
	if (x->body->size == before)
		return;
	c->in_cb = true;
	x->cb->on_body(x, NULL);
	c->in_cb = false;
	if (c->doomed)
		conn_free(c);
}

static bool has_token(h2o_iovec_t v, const char *tok, size_t len)
{
	for (size_t i = 0; i + len <= v.len; i++)
		if (h2o_lcstris(v.base + i, len, tok, len) &&
		    (i + len == v.len || v.base[i + len] == ',' || v.base[i + len] == ' ') &&
		    (i == 0 || v.base[i - 1] == ',' || v.base[i - 1] == ' '))
			return true;
	return false;
}

/* Parses the response head in the socket input. Returns true when the
 * body phase began and the exchange is still on `c`. */
static bool parse_head(struct rt_conn *c)
{
	struct phr_header ph[MAX_HEADERS];
	h2o_header_t hs[MAX_HEADERS];
	h2o_iovec_t names[MAX_HEADERS];
	int minor, status, rc;
	size_t nh;
	for (;;) {
		h2o_buffer_t *in = c->sock->input;
		const char *msg;
		size_t msg_len;
		nh = MAX_HEADERS;
		rc = phr_parse_response(in->bytes, in->size, &minor, &status, &msg, &msg_len, ph, &nh, 0);
		if (rc == -2) {
			if (in->size > MAX_HEAD_BYTES)
				fail_head(c, ERR_BAD_HEAD);
			return false;
		}
		if (rc < 0) {
			fail_head(c, ERR_BAD_HEAD);
			return false;
		}
		if (status >= 100 && status < 200 && status != 101) { /* interim: skip */
			h2o_buffer_consume(&c->sock->input, (size_t)rc);
			continue;
		}
		break;
	}
	bool chunked = false, close = minor == 0;
	size_t cl = SIZE_MAX;
	for (size_t i = 0; i < nh; i++) {
		h2o_strtolower((char *)ph[i].name, ph[i].name_len);
		const h2o_token_t *tok = h2o_lookup_token(ph[i].name, ph[i].name_len);
		h2o_iovec_t v = h2o_iovec_init(ph[i].value, ph[i].value_len);
		if (tok == H2O_TOKEN_CONTENT_LENGTH) {
			if ((cl = h2o_strtosize(v.base, v.len)) == SIZE_MAX) {
				fail_head(c, ERR_BAD_HEAD);
				return false;
			}
		} else if (tok == H2O_TOKEN_TRANSFER_ENCODING) {
			chunked = v.len >= 7 && h2o_lcstris(v.base + v.len - 7, 7, H2O_STRLIT("chunked"));
		} else if (tok == H2O_TOKEN_CONNECTION) {
			if (has_token(v, H2O_STRLIT("close")))
				close = true;
			else if (minor == 0 && has_token(v, H2O_STRLIT("keep-alive")))
				close = false;
		}
		if (tok != NULL) {
			hs[i].name = (h2o_iovec_t *)&tok->buf;
		} else {
			names[i] = h2o_iovec_init(ph[i].name, ph[i].name_len);
			hs[i].name = &names[i];
		}
		hs[i].orig_name = NULL;
		hs[i].value = v;
	}
	bool eos = false;
	if (status == 204 || status == 304) {
		c->framing = F_LENGTH;
		c->remaining = 0;
		eos = true;
	} else if (chunked) {
		c->framing = F_CHUNKED;
		memset(&c->dec, 0, sizeof(c->dec));
		c->dec.consume_trailer = 1;
	} else if (cl != SIZE_MAX) {
		c->framing = F_LENGTH;
		c->remaining = cl;
		eos = cl == 0;
	} else {
		c->framing = F_CLOSE;
		close = true;
	}
	c->keepalive = !close;
	c->state = L_BODY;
	struct rt_exchange *x = c->x;
	head_timer_stop(x);
	if (eos) {
		/* Complete already: the connection is done with before the
		 * (terminal) callback; the head bytes stay readable meanwhile. */
		detach(c);
		c->in_cb = true;
		x->cb->on_head(x, NULL, status, hs, nh, true);
		c->in_cb = false;
		h2o_buffer_consume(&c->sock->input, (size_t)rc);
		if (!c->doomed && c->keepalive && c->sock->input->size == 0)
			pool_put(c);
		else
			conn_free(c);
		return false;
	}
	c->in_cb = true;
	x->cb->on_head(x, NULL, status, hs, nh, false);
	c->in_cb = false;
	if (c->doomed) {
		conn_free(c);
		return false;
	}
	h2o_buffer_consume(&c->sock->input, (size_t)rc);
	return true;
}

/* EOF or a socket error while an exchange runs. */
static void on_conn_end(struct rt_conn *c)
{
	struct rt_exchange *x = c->x;
	if (c->state != L_BODY) {
		if (c->reused && !c->got_bytes && !x->fresh_retry_done) {
			/* Same exchange on a fresh connection; the head timer runs on. */
			x->fresh_retry_done = true;
			if (replaced_cb != NULL)
				replaced_cb();
			c->x = NULL;
			x->conn = NULL;
			conn_free(c);
			connect_new(x);
			return;
		}
		fail_head(c, ERR_CLOSED);
		return;
	}
	const char *why;
	int r = body_ingest(c, &why); /* bytes that came with the EOF */
	if (r < 0) {
		end_exchange(c, why);
		return;
	}
	c->keepalive = false;
	end_exchange(c, r > 0 || c->framing == F_CLOSE ? rt_exchange_eos : ERR_BROKE_OFF);
}

static void on_read(h2o_socket_t *sock, const char *err)
{
	struct rt_conn *c = sock->data;
	if (c->x == NULL) { /* idle: the peer closed it (or sent junk) */
		conn_free(c);
		return;
	}
	if (err != NULL) {
		on_conn_end(c);
		return;
	}
	if (sock->input->size != 0)
		c->got_bytes = true;
	if (c->state == L_HEAD && !parse_head(c))
		return;
	if (c->state == L_BODY && c->x != NULL)
		body_step(c);
}
