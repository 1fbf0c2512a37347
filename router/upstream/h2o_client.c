/* uclient.c — exchange dispatch and the h2o_http1client backend (see
 * uclient.h).
 *
 * h2o_http1client frees itself after a callback that ends it (an error,
 * NULL returned from on_head, an end passed to on_body); a cancel during
 * its own callback therefore only forgets the client (x->in_cb tells) and
 * the wrapper returns NULL / -1 so that h2o closes it.
 */
#include "router/upstream/client.h"

#include "router/worker.h"
#include "router/upstream/pool.h"

const char rt_ux_eos[] = "end of body";

void rt_ux_init(struct rt_ux *x, enum rt_ux_kind kind, const struct rt_ux_cb *cb, void *data)
{
	x->kind = kind;
	x->cb = cb;
	x->data = data;
	x->active = false;
	x->conn = NULL;
	x->client = NULL;
	x->in_cb = NULL;
	h2o_buffer_init(&x->body, &h2o_socket_buffer_prototype);
}

void rt_ux_start(struct rt_ux *x, struct rt_upstream *up, h2o_iovec_t head, h2o_iovec_t body)
{
	x->up = up;
	x->bufs[0] = head;
	x->bufs[1] = body;
	x->active = true;
	x->fresh_retry_done = false;
	if (x->kind == RT_UX_LEAN)
		rt_lean_start(x);
	else
		rt_h2o_ux_start(x);
}

void rt_ux_cancel(struct rt_ux *x)
{
	if (!x->active)
		return;
	if (x->kind == RT_UX_LEAN)
		rt_lean_cancel(x);
	else
		rt_h2o_ux_cancel(x);
	x->active = false;
}

h2o_buffer_t **rt_ux_body(struct rt_ux *x)
{
	if (x->kind == RT_UX_H2O && x->client != NULL)
		return &x->client->sock->input;
	return &x->body;
}

void rt_ux_dispose(struct rt_ux *x)
{
	rt_ux_cancel(x);
	if (x->body != NULL)
		h2o_buffer_dispose(&x->body);
}

/* ---- h2o_http1client backend ------------------------------------------- */

/* Ends the exchange from inside a callback of client `c`. */
static void h2o_end(struct rt_ux *x, h2o_http1client_t *c)
{
	if (x->client == c) {
		x->client = NULL;
		x->active = false;
	}
}

static int h2o_on_body(h2o_http1client_t *c, const char *errstr)
{
	struct rt_ux *x = c->data;
	if (x->client != c)
		return -1;
	if (errstr != NULL) {
		/* The client frees itself (and its input) when we return: keep
		 * the last bytes in the storage's own buffer. */
		h2o_buffer_t *t = x->body;
		x->body = c->sock->input;
		c->sock->input = t;
		h2o_end(x, c);
		x->cb->on_body(x, errstr == h2o_http1client_error_is_eos ? rt_ux_eos : errstr);
		return 0;
	}
	x->in_cb = c;
	x->cb->on_body(x, NULL);
	x->in_cb = NULL;
	return x->client == c ? 0 : -1;
}

static h2o_http1client_body_cb h2o_on_head(h2o_http1client_t *c, const char *errstr, int minor,
					   int status, h2o_iovec_t msg, h2o_header_t *headers,
					   size_t n, int rlen)
{
	(void)minor, (void)msg, (void)rlen;
	struct rt_ux *x = c->data;
	if (x->client != c)
		return NULL;
	if (errstr != NULL && errstr != h2o_http1client_error_is_eos) {
		h2o_end(x, c);
		x->cb->on_head(x, "the worker closed the connection before answering", 0, NULL, 0,
			       false);
		return NULL;
	}
	if (errstr == h2o_http1client_error_is_eos) {
		h2o_end(x, c);
		x->cb->on_head(x, NULL, status, headers, n, true);
		return NULL;
	}
	x->in_cb = c;
	x->cb->on_head(x, NULL, status, headers, n, false);
	x->in_cb = NULL;
	return x->client == c ? h2o_on_body : NULL;
}

static h2o_http1client_head_cb h2o_on_connect(h2o_http1client_t *c, const char *errstr,
					      h2o_iovec_t **reqbufs, size_t *cnt, int *is_head)
{
	struct rt_ux *x = c->data;
	if (x->client != c && x->client != NULL)
		return NULL;
	if (errstr != NULL) {
		x->client = NULL;
		x->active = false;
		x->cb->on_connect(x, "cannot connect to the worker");
		return NULL;
	}
	x->client = c;
	x->in_cb = c;
	x->cb->on_connect(x, NULL);
	x->in_cb = NULL;
	if (x->client != c)
		return NULL;
	*reqbufs = x->bufs;
	*cnt = 2;
	*is_head = 0;
	return h2o_on_head;
}

void rt_h2o_ux_start(struct rt_ux *x)
{
	h2o_http1client_t *c = NULL;
	x->client = NULL;
	h2o_http1client_connect_with_pool(&c, x, &rt_w.client_ctx, &x->up->pool, h2o_on_connect);
	/* A connect that failed at once has run on_connect (and maybe started
	 * a new exchange on x); otherwise c is the client in flight. */
	if (x->active && x->client == NULL && c != NULL)
		x->client = c;
}

void rt_h2o_ux_cancel(struct rt_ux *x)
{
	h2o_http1client_t *c = x->client;
	x->client = NULL;
	if (c != NULL && c != x->in_cb)
		h2o_http1client_cancel(c);
}
