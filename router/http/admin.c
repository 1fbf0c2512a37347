/* admin.c — POST /flush_cache (fan-out) and the /workers admin API.
 *
 * /flush_cache sends POST /flush_cache to every active worker at once (one
 * exchange of the upstream client each, head timeout --request-timeout-secs)
 * and answers when all have answered (or failed): 200 when every worker
 * said 2xx, else 502, with {"results":[{"worker","status"}]}.
 *
 * /workers (only with --admin-api-key; "Authorization: Bearer KEY"):
 *   GET                 the workers table as JSON
 *   POST {"url","role","model","bootstrap_port"}   add a worker
 *   DELETE /workers/<url-encoded ID> (or ?url=ID)  remove a worker
 * While a statebus runs, its workers table is authoritative and changes go
 * through its control socket (docs/control.md: ZeroMQ REQ to
 * statebus.control_endpoint, JSON ops add_worker / remove_worker); the call
 * blocks this process's loop for at most 2 s (admin path only). Without a
 * live statebus (degraded mode) the router edits the table itself under
 * the region's writer lock, like the master's registration of the static
 * fleet.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zmq.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "router/core/generation.h"
#include "router/http/response.h"
#include "router/core/buf.h"
#include "router/http/routes.h"
#include "router/upstream/client.h"
#include "router/upstream/pool.h"

/* ---- /flush_cache ---------------------------------------------------------- */

struct flush;

struct flush_one {
	struct flush *fl;
	struct rt_exchange ux;   /* initialised for every entry up to flush.n */
	int status;
	char url[STATEBUS_WORKER_ID_MAX];
};

struct flush {
	h2o_req_t *req;     /* NULL once disposed */
	unsigned n, pending;
	struct flush_one *one;
};

static void flush_finish(struct flush *fl)
{
	if (fl->req == NULL || fl->pending != 0)
		return;
	struct rt_buf b = {0};
	bool ok = true;
	rt_buf_puts(&b, "{\"results\":[");
	for (unsigned i = 0; i < fl->n; i++) {
		rt_buf_puts(&b, i ? ",{\"worker\":\"" : "{\"worker\":\"");
		rt_buf_json_str(&b, fl->one[i].url, strlen(fl->one[i].url));
		rt_buf_printf(&b, "\",\"status\":%d}", fl->one[i].status);
		ok &= fl->one[i].status >= 200 && fl->one[i].status < 300;
	}
	rt_buf_puts(&b, "]}\n");
	h2o_req_t *req = fl->req;
	fl->req = NULL;
	rt_send_body(req, ROUTE_FLUSH_CACHE, ok ? 200 : 502, "application/json",
		     b.oom ? "{}" : b.p, b.oom ? 2 : b.n);
	rt_buf_free(&b);
}

/* One worker's answer is in (status set) or failed (502). */
static void flush_one_done(struct flush_one *o, int status)
{
	o->status = status;
	o->fl->pending--;
	flush_finish(o->fl);
}

static void flush_on_connect(struct rt_exchange *x, const char *err)
{
	if (err != NULL)
		flush_one_done(x->data, 502);
}

static void flush_on_head(struct rt_exchange *x, const char *err, int status,
			  const h2o_header_t *h, size_t n, bool eos)
{
	(void)h, (void)n;
	struct flush_one *o = x->data;
	if (err != NULL)
		flush_one_done(o, 502);
	else if (eos)
		flush_one_done(o, status);
	else
		o->status = status;
}

static void flush_on_body(struct rt_exchange *x, const char *err)
{
	struct flush_one *o = x->data;
	h2o_buffer_consume(&x->body, x->body->size);
	if (err != NULL)
		flush_one_done(o, err == rt_exchange_eos ? o->status : 502);
}

static const struct rt_exchange_cb flush_cb = {flush_on_connect, flush_on_head, flush_on_body};

static void flush_dispose(void *p)
{
	struct flush *fl = p;
	fl->req = NULL;
	for (unsigned i = 0; i < fl->n; i++)
		rt_exchange_dispose(&fl->one[i].ux);
}

int rt_route_flush_cache(h2o_req_t *req)
{
	struct statebus_region *r = rt_w.region;
	uint32_t cap = r ? statebus_workers_capacity(r) : 0;
	struct flush *fl = h2o_mem_alloc_shared(&req->pool, sizeof(*fl), flush_dispose);
	memset(fl, 0, sizeof(*fl));
	fl->one = h2o_mem_alloc_pool(&req->pool, sizeof(*fl->one) * (cap ? cap : 1));
	fl->req = req;
	fl->pending = 1; /* held while starting: a connect that fails at once must not finish */
	for (uint32_t s = 0; s < cap; s++) {
		struct statebus_worker w;
		if (statebus_worker_read(r, s, &w) != SY_OK || w.state != STATEBUS_WORKER_ACTIVE)
			continue;
		struct flush_one *o = &fl->one[fl->n];
		memset(o, 0, sizeof(*o));
		o->fl = fl;
		rt_exchange_init(&o->ux, &flush_cb, o);
		snprintf(o->url, sizeof(o->url), "%s", w.id);
		const char *why;
		struct rt_upstream *up = rt_upstream_get(rt_w.upstreams, s, w.id, &why);
		fl->n++;
		if (up == NULL) {
			o->status = 502;
			continue;
		}
		char head[512];
		int len = snprintf(head, sizeof(head),
				   "POST %.*s/flush_cache HTTP/1.1\r\nhost: %.*s\r\ncontent-length: 0\r\n\r\n",
				   (int)up->prefix.len, up->prefix.base, (int)up->authority.len,
				   up->authority.base);
		h2o_iovec_t reqbuf = h2o_strdup(&req->pool, head, (size_t)len);
		fl->pending++;
		rt_exchange_start(&o->ux, up, reqbuf, h2o_iovec_init(NULL, 0), &rt_w.head_timeout);
	}
	fl->pending--;
	if (fl->n == 0) {
		fl->req = NULL;
		return rt_send_errorf(req, ROUTE_FLUSH_CACHE, 503, "no_healthy_workers", "no worker to flush");
	}
	flush_finish(fl);
	return 0;
}

/* ---- /workers ------------------------------------------------------------------ */

/* The upstream client speaks plain HTTP only (router/upstream/client.h). */
#define HTTPS_REFUSED                                                                      \
	"https:// workers are not supported: the upstream client speaks plain HTTP only; " \
	"serve the engine over http:// or put a TLS proxy beside it"

static const char *role_name(unsigned r)
{
	return r == STATEBUS_WORKER_PREFILL ? "prefill" : r == STATEBUS_WORKER_DECODE ? "decode" : "plain";
}

static int workers_list(h2o_req_t *req)
{
	struct statebus_region *r = rt_w.region;
	uint32_t cap = r ? statebus_workers_capacity(r) : 0;
	struct rt_buf b = {0};
	bool first = true;
	rt_buf_puts(&b, "{\"workers\":[");
	for (uint32_t s = 0; s < cap; s++) {
		struct statebus_worker w;
		if (statebus_worker_read(r, s, &w) != SY_OK || w.state == STATEBUS_WORKER_FREE)
			continue;
		int64_t infl = 0;
		statebus_inflight_sum(r, s, &infl, NULL);
		rt_buf_puts(&b, first ? "{\"worker\":\"" : ",{\"worker\":\"");
		first = false;
		rt_buf_json_str(&b, w.id, strlen(w.id));
		rt_buf_puts(&b, "\",\"model\":\"");
		rt_buf_json_str(&b, w.model, strlen(w.model));
		rt_buf_printf(&b,
			      "\",\"role\":\"%s\",\"state\":\"%s\",\"healthy\":%s,\"slot\":%u,"
			      "\"generation\":%u,\"bootstrap_port\":",
			      role_name(w.role), w.state == STATEBUS_WORKER_ACTIVE ? "active" : "removing",
			      w.healthy ? "true" : "false", s, w.generation);
		if (w.bootstrap_port)
			rt_buf_printf(&b, "%u", w.bootstrap_port);
		else
			rt_buf_puts(&b, "null");
		rt_buf_printf(&b, ",\"in_flight\":%lld}", (long long)infl);
	}
	uint64_t now = sy_mono_ns();
	rt_buf_printf(&b, "],\"statebus_live\":%s}\n",
		      r && statebus_daemon_live(r, now, 5000000000ull) ? "true" : "false");
	return rt_send_json(req, ROUTE_WORKERS, &b);
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
						  : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Percent-decodes `in` into `out` (cap). Returns 0 or -1. */
static int pct_decode(h2o_iovec_t in, char *out, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < in.len; i++) {
		char c = in.base[i];
		if (c == '%' && i + 2 < in.len + 0 && hexval(in.base[i + 1]) >= 0 &&
		    hexval(in.base[i + 2]) >= 0) {
			c = (char)(hexval(in.base[i + 1]) * 16 + hexval(in.base[i + 2]));
			i += 2;
		}
		if (o + 1 >= cap)
			return -1;
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
}

static int workers_add(h2o_req_t *req)
{
	json_error_t je;
	json_t *root = json_loadb(req->entity.base ? req->entity.base : "", req->entity.len, 0, &je);
	if (root == NULL || !json_is_object(root)) {
		if (root)
			json_decref(root);
		return rt_send_errorf(req, ROUTE_WORKERS, 400, "bad_request", "body must be a JSON object {\"url\",\"role\",\"model\","
				     "\"bootstrap_port\"}");
	}
	const char *url = json_string_value(json_object_get(root, "url"));
	const char *role = json_string_value(json_object_get(root, "role"));
	const char *model = json_string_value(json_object_get(root, "model"));
	json_int_t bport = json_integer_value(json_object_get(root, "bootstrap_port"));
	if (url != NULL && strncasecmp(url, "https://", 8) == 0) {
		json_decref(root);
		return rt_send_errorf(req, ROUTE_WORKERS, 400, "bad_request", HTTPS_REFUSED);
	}
	struct statebus_worker w;
	memset(&w, 0, sizeof(w));
	int rc = url ? statebus_worker_id_normalise(url, w.id, sizeof(w.id)) : SY_EINVAL;
	if (rc != SY_OK || (role && strcmp(role, "plain") && strcmp(role, "prefill") &&
			    strcmp(role, "decode")) || bport < 0 || bport > 65535) {
		json_decref(root);
		return rt_send_errorf(req, ROUTE_WORKERS, 400, "bad_request", "url must be an http(s) URL, role plain|prefill|decode, "
				     "bootstrap_port 0..65535");
	}
	w.role = !role || !strcmp(role, "plain") ? STATEBUS_WORKER_PLAIN
		 : !strcmp(role, "prefill")      ? STATEBUS_WORKER_PREFILL
						 : STATEBUS_WORKER_DECODE;
	snprintf(w.model, sizeof(w.model), "%s", model ? model : rt_w.gen->cfg.model_id);
	w.bootstrap_port = (uint16_t)bport;
	w.healthy = 0; /* unknown until the master's first probe passes (prober.h) */
	w.dp_size = 1;
	json_decref(root);
	uint32_t slot, gen;
	if (statebus_writer_lock(rt_w.region, true) != SY_OK)
		return rt_send_errorf(req, ROUTE_WORKERS, 503, "service_overloaded", "the state plane is busy");
	rc = statebus_worker_add(rt_w.region, &w, &slot, &gen);
	statebus_writer_unlock(rt_w.region);
	if (rc == SY_EEXIST)
		return rt_send_errorf(req, ROUTE_WORKERS, 409, "worker_exists", "a worker with this ID is already registered");
	if (rc != SY_OK)
		return rt_send_errorf(req, ROUTE_WORKERS, 503, "service_overloaded",
				      "cannot add the worker: %s", sy_strerror(rc));
	sy_info("admin: added worker %s (slot %u)", w.id, slot);
	char body[128];
	int n = snprintf(body, sizeof(body), "{\"added\":true,\"slot\":%u,\"generation\":%u}\n", slot,
			 gen);
	return rt_send_body(req, ROUTE_WORKERS, 201, "application/json", body, (size_t)n);
}

static int workers_delete(h2o_req_t *req, h2o_iovec_t path)
{
	char raw[STATEBUS_WORKER_ID_MAX * 3], id[STATEBUS_WORKER_ID_MAX];
	h2o_iovec_t enc = {NULL, 0};
	if (path.len > 9)
		enc = h2o_iovec_init(path.base + 9, path.len - 9);
	else if (req->query_at != SIZE_MAX) {
		const char *q = req->path.base + req->query_at + 1;
		size_t ql = req->path.len - req->query_at - 1;
		if (ql > 4 && memcmp(q, "url=", 4) == 0)
			enc = h2o_iovec_init(q + 4, ql - 4);
	}
	if (enc.len == 0 || pct_decode(enc, raw, sizeof(raw)) != 0 ||
	    statebus_worker_id_normalise(raw, id, sizeof(id)) != SY_OK)
		return rt_send_errorf(req, ROUTE_WORKERS, 400, "bad_request", "name the worker: DELETE /workers/<url-encoded URL> or ?url=URL");
	uint32_t slot, gen;
	if (statebus_worker_find(rt_w.region, id, &slot, &gen) != SY_OK)
		return rt_send_errorf(req, ROUTE_WORKERS, 404, "worker_not_found", "no such worker");
	if (statebus_writer_lock(rt_w.region, true) != SY_OK)
		return rt_send_errorf(req, ROUTE_WORKERS, 503, "service_overloaded", "the state plane is busy");
	int rc = statebus_worker_remove(rt_w.region, slot, gen);
	statebus_writer_unlock(rt_w.region);
	if (rc != SY_OK)
		return rt_send_errorf(req, ROUTE_WORKERS, 404, "worker_not_found", "no such worker");
	sy_info("admin: removed worker %s (slot %u)", id, slot);
	return rt_send_body(req, ROUTE_WORKERS, 200, "application/json", "{\"removed\":true}\n",
			    17);
}

/* One request/reply on the statebus control socket. Returns the reply
 * (jansson, caller decrefs) or NULL with *why set. */
static json_t *control_call(const char *endpoint, json_t *req, const char **why)
{
	void *ctx = zmq_ctx_new(), *s = ctx ? zmq_socket(ctx, ZMQ_REQ) : NULL;
	json_t *reply = NULL;
	char *txt = json_dumps(req, JSON_COMPACT);
	int ms = 2000, zero = 0;
	*why = "the statebus control socket did not answer";
	if (s != NULL && txt != NULL) {
		zmq_setsockopt(s, ZMQ_SNDTIMEO, &ms, sizeof(ms));
		zmq_setsockopt(s, ZMQ_RCVTIMEO, &ms, sizeof(ms));
		zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
		char buf[65536];
		int n;
		if (zmq_connect(s, endpoint) == 0 && zmq_send(s, txt, strlen(txt), 0) >= 0 &&
		    (n = zmq_recv(s, buf, sizeof(buf) - 1, 0)) >= 0) {
			if ((size_t)n > sizeof(buf) - 1)
				n = sizeof(buf) - 1;
			reply = json_loadb(buf, (size_t)n, 0, NULL);
			if (reply == NULL)
				*why = "the statebus control socket answered garbage";
		}
	}
	free(txt);
	if (s)
		zmq_close(s);
	if (ctx)
		zmq_ctx_term(ctx);
	return reply;
}

static int workers_via_statebus(h2o_req_t *req, h2o_iovec_t path, bool post)
{
	json_t *op = json_object();
	char raw[STATEBUS_WORKER_ID_MAX * 3];
	if (post) {
		json_t *in = json_loadb(req->entity.base ? req->entity.base : "", req->entity.len, 0, NULL);
		if (in == NULL || !json_is_object(in) || !json_is_string(json_object_get(in, "url"))) {
			if (in)
				json_decref(in);
			json_decref(op);
			return rt_send_errorf(req, ROUTE_WORKERS, 400, "bad_request", "body must be a JSON object with at least \"url\"");
		}
		const char *url = json_string_value(json_object_get(in, "url"));
		if (url != NULL && strncasecmp(url, "https://", 8) == 0) {
			json_decref(in);
			json_decref(op);
			return rt_send_errorf(req, ROUTE_WORKERS, 400, "bad_request", HTTPS_REFUSED);
		}
		json_object_update(op, in);
		json_decref(in);
		json_object_set_new(op, "op", json_string("add_worker"));
	} else {
		h2o_iovec_t enc = {NULL, 0};
		if (path.len > 9)
			enc = h2o_iovec_init(path.base + 9, path.len - 9);
		else if (req->query_at != SIZE_MAX && req->path.len - req->query_at > 5 &&
			 memcmp(req->path.base + req->query_at + 1, "url=", 4) == 0)
			enc = h2o_iovec_init(req->path.base + req->query_at + 5,
					     req->path.len - req->query_at - 5);
		if (enc.len == 0 || pct_decode(enc, raw, sizeof(raw)) != 0) {
			json_decref(op);
			return rt_send_errorf(req, ROUTE_WORKERS, 400, "bad_request", "name the worker: DELETE /workers/<url-encoded URL>");
		}
		json_object_set_new(op, "op", json_string("remove_worker"));
		json_object_set_new(op, "url", json_string(raw));
	}
	const char *why;
	json_t *reply = control_call(rt_w.gen->cfg.statebus.control_endpoint, op, &why);
	json_decref(op);
	if (reply == NULL)
		return rt_send_errorf(req, ROUTE_WORKERS, 503, "service_overloaded", "%s", why);
	char *txt = json_dumps(reply, JSON_COMPACT);
	bool ok = json_is_true(json_object_get(reply, "ok"));
	const char *err = json_string_value(json_object_get(reply, "error"));
	int rc;
	if (ok)
		rc = rt_send_body(req, ROUTE_WORKERS, post ? 201 : 200, "application/json",
				  txt ? txt : "{}", txt ? strlen(txt) : 2);
	else
		rc = rt_send_errorf(req, ROUTE_WORKERS, 400, "bad_request", "%s", err ? err : "the statebus refused the change");
	free(txt);
	json_decref(reply);
	return rc;
}

int rt_route_workers(h2o_req_t *req, h2o_iovec_t path)
{
	const char *key = rt_w.gen->cfg.router.admin_api_key;
	if (key == NULL)
		return rt_send_errorf(req, ROUTE_WORKERS, 404, "not_found", "the admin API is off (start the router with --admin-api-key)");
	/* The bearer was checked before the route (auth.h). */
	bool get = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET"));
	bool post = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("POST"));
	bool del = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("DELETE"));
	if (get && path.len == 8)
		return workers_list(req);
	if (!post && !del)
		return rt_send_errorf(req, ROUTE_WORKERS, 405, "method_not_allowed", "use GET, POST or DELETE");
	if (rt_w.region == NULL)
		return rt_send_errorf(req, ROUTE_WORKERS, 503, "service_overloaded", "no state plane");
	if (statebus_daemon_live(rt_w.region, sy_mono_ns(), 5000000000ull))
		return workers_via_statebus(req, path, post);
	return post ? workers_add(req) : workers_delete(req, path);
}
