/* admin.c — POST /flush_cache (fan-out) and the /workers admin API.
 *
 * /flush_cache sends each active worker its engine's flush at once
 * (SGLang: POST /flush_cache; vLLM: POST /reset_prefix_cache) (one
 * exchange of the upstream client each, head timeout --request-timeout-secs)
 * and answers when all have answered (or failed): 200 when every worker
 * said 2xx, else 502, with {"results":[{"worker","status"}]}.
 *
 * /workers (only with --admin-api-key; "Authorization: Bearer KEY"):
 *   GET                 the workers table as JSON (switchyard's fields and
 *                       the SGLang router's: total, stats, WorkerInfo)
 *   GET /workers/<url-encoded ID>                  one worker
 *   POST {"url","role"|"worker_type","model"|"model_id","bootstrap_port"}
 *                                                  add a worker
 *   DELETE /workers/<url-encoded ID> (or ?url=ID)  remove a worker
 * and the old SGLang router's spellings behind the same key: GET
 * /list_workers ({"urls"}), POST /add_worker?url=U[&worker_type=&model_id=
 * &bootstrap_port=] and POST /remove_worker?url=U (text answers).
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
		const char *path =
			w.engine == STATEBUS_ENGINE_VLLM ? "/reset_prefix_cache" : "/flush_cache";
		int len = snprintf(head, sizeof(head),
				   "POST %.*s%s HTTP/1.1\r\nhost: %.*s\r\ncontent-length: 0\r\n\r\n",
				   (int)up->prefix.len, up->prefix.base, path, (int)up->authority.len,
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

/* SGLang router's worker_type of a role. */
static const char *worker_type(unsigned r)
{
	return r == STATEBUS_WORKER_PREFILL ? "prefill" : r == STATEBUS_WORKER_DECODE ? "decode" : "regular";
}

/* Load of slot s as the SGLang router reports it: the engine's running +
 * waiting requests when its report is fresh, else this router's in-flight
 * requests. */
static int64_t worker_load(struct statebus_region *r, uint32_t s, uint64_t now)
{
	struct statebus_load_view v;
	if (statebus_load_view(r, s, now, &v) == SY_OK)
		return (int64_t)(v.num_running_reqs + v.num_waiting_reqs);
	int64_t infl = 0;
	statebus_inflight_sum(r, s, &infl, NULL);
	return infl;
}

/* Percent-encodes `id` for a path segment. */
static void put_encoded(struct rt_buf *b, const char *id)
{
	static const char hex[] = "0123456789ABCDEF";
	for (const char *p = id; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~')
			rt_buf_printf(b, "%c", c);
		else
			rt_buf_printf(b, "%%%c%c", hex[c >> 4], hex[c & 15]);
	}
}

/* One worker as JSON: switchyard's fields (worker, model, role, state,
 * healthy, slot, generation, bootstrap_port, in_flight) and the SGLang
 * router's WorkerInfo (id, url, model_id, worker_type, is_healthy, load,
 * connection_mode, priority, cost). */
static void worker_json(struct rt_buf *b, struct statebus_region *r, uint32_t s,
			const struct statebus_worker *w, uint64_t now)
{
	int64_t infl = 0;
	statebus_inflight_sum(r, s, &infl, NULL);
	rt_buf_puts(b, "{\"worker\":\"");
	rt_buf_json_str(b, w->id, strlen(w->id));
	rt_buf_puts(b, "\",\"id\":\"");
	rt_buf_json_str(b, w->id, strlen(w->id));
	rt_buf_puts(b, "\",\"url\":\"");
	rt_buf_json_str(b, w->id, strlen(w->id));
	rt_buf_puts(b, "\",\"model\":\"");
	rt_buf_json_str(b, w->model, strlen(w->model));
	rt_buf_puts(b, "\",\"model_id\":\"");
	rt_buf_json_str(b, w->model, strlen(w->model));
	rt_buf_printf(b,
		      "\",\"role\":\"%s\",\"worker_type\":\"%s\",\"state\":\"%s\",\"healthy\":%s,"
		      "\"is_healthy\":%s,\"slot\":%u,\"generation\":%u,\"bootstrap_port\":",
		      role_name(w->role), worker_type(w->role),
		      w->state == STATEBUS_WORKER_ACTIVE ? "active" : "removing",
		      w->healthy ? "true" : "false", w->healthy ? "true" : "false", s, w->generation);
	if (w->bootstrap_port)
		rt_buf_printf(b, "%u", w->bootstrap_port);
	else
		rt_buf_puts(b, "null");
	rt_buf_printf(b,
		      ",\"in_flight\":%lld,\"load\":%lld,\"connection_mode\":\"http\","
		      "\"priority\":50,\"cost\":1.0}",
		      (long long)infl, (long long)worker_load(r, s, now));
}

static int send_json(h2o_req_t *req, enum route route, int status, struct rt_buf *b)
{
	if (b->oom) {
		rt_buf_free(b);
		return rt_send_errorf(req, route, 500, "internal_error", "out of memory");
	}
	rt_send_body(req, route, status, "application/json", b->p, b->n);
	rt_buf_free(b);
	return 0;
}

static int workers_list(h2o_req_t *req)
{
	struct statebus_region *r = rt_w.region;
	uint32_t cap = r ? statebus_workers_capacity(r) : 0;
	uint64_t now = sy_mono_ns();
	struct rt_buf b = {0};
	unsigned n = 0, by_role[3] = {0, 0, 0};
	rt_buf_puts(&b, "{\"workers\":[");
	for (uint32_t s = 0; s < cap; s++) {
		struct statebus_worker w;
		if (statebus_worker_read(r, s, &w) != SY_OK || w.state == STATEBUS_WORKER_FREE)
			continue;
		if (n++)
			rt_buf_puts(&b, ",");
		worker_json(&b, r, s, &w, now);
		by_role[w.role <= STATEBUS_WORKER_DECODE ? w.role : 0]++;
	}
	rt_buf_printf(&b,
		      "],\"total\":%u,\"stats\":{\"prefill_count\":%u,\"decode_count\":%u,"
		      "\"regular_count\":%u},\"statebus_live\":%s}\n",
		      n, by_role[STATEBUS_WORKER_PREFILL], by_role[STATEBUS_WORKER_DECODE],
		      by_role[STATEBUS_WORKER_PLAIN],
		      r && statebus_daemon_live(r, now, 5000000000ull) ? "true" : "false");
	return send_json(req, ROUTE_WORKERS, 200, &b);
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

/* The value of query parameter `name`, decoded into out (cap); false when
 * absent or too long. */
static bool query_param(h2o_req_t *req, const char *name, char *out, size_t cap)
{
	if (req->query_at == SIZE_MAX)
		return false;
	const char *p = req->path.base + req->query_at + 1, *end = req->path.base + req->path.len;
	size_t nl = strlen(name);
	while (p < end) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *e = amp ? amp : end;
		if ((size_t)(e - p) > nl && memcmp(p, name, nl) == 0 && p[nl] == '=')
			return pct_decode(h2o_iovec_init(p + nl + 1, (size_t)(e - p) - nl - 1), out,
					  cap) == 0;
		p = e + 1;
	}
	return false;
}

/* The worker named by /workers/<url-encoded ID> or ?url=ID, normalised. */
static bool named_worker(h2o_req_t *req, h2o_iovec_t path, char *id, size_t cap)
{
	char raw[STATEBUS_WORKER_ID_MAX * 3];
	bool ok = path.len > 9 ? pct_decode(h2o_iovec_init(path.base + 9, path.len - 9), raw,
					    sizeof(raw)) == 0
			       : query_param(req, "url", raw, sizeof(raw));
	return ok && raw[0] != '\0' && statebus_worker_id_normalise(raw, id, cap) == SY_OK;
}

/* What an add names: the URL, role (plain|prefill|decode, or SGLang's
 * worker_type regular|prefill|decode), model (or model_id) and bootstrap
 * port. */
struct add_spec {
	char url[STATEBUS_WORKER_ID_MAX];
	char role[16];
	char model[STATEBUS_MODEL_MAX];
	long bootstrap_port;
};

/* Reply styles: switchyard's JSON (POST /workers), the old SGLang router's
 * text (/add_worker, /remove_worker). */
enum reply { REPLY_JSON, REPLY_TEXT };

static int spec_role(const char *role)
{
	if (role[0] == '\0' || strcmp(role, "plain") == 0 || strcmp(role, "regular") == 0)
		return STATEBUS_WORKER_PLAIN;
	if (strcmp(role, "prefill") == 0)
		return STATEBUS_WORKER_PREFILL;
	if (strcmp(role, "decode") == 0)
		return STATEBUS_WORKER_DECODE;
	return -1;
}

static int text_reply(h2o_req_t *req, enum route route, int status, const char *fmt,
		      const char *arg)
{
	char body[STATEBUS_WORKER_ID_MAX + 128];
	int n = snprintf(body, sizeof(body), fmt, arg);
	return rt_send_body(req, route, status, "text/plain; charset=utf-8", body,
			    (size_t)(n < (int)sizeof(body) ? n : (int)sizeof(body) - 1));
}

static int added(h2o_req_t *req, enum route route, enum reply style, const char *id, uint32_t slot,
		 uint32_t gen)
{
	if (style == REPLY_TEXT)
		return text_reply(req, route, 200, "Successfully added worker: %s", id);
	struct rt_buf b = {0};
	rt_buf_printf(&b, "{\"added\":true,\"slot\":%u,\"generation\":%u,\"status\":\"accepted\","
		      "\"worker_id\":\"", slot, gen);
	rt_buf_json_str(&b, id, strlen(id));
	rt_buf_puts(&b, "\",\"url\":\"");
	rt_buf_json_str(&b, id, strlen(id));
	rt_buf_puts(&b, "\",\"location\":\"/workers/");
	put_encoded(&b, id);
	rt_buf_puts(&b, "\"}\n");
	return send_json(req, route, 201, &b);
}

static int removed(h2o_req_t *req, enum route route, enum reply style, const char *id)
{
	if (style == REPLY_TEXT)
		return text_reply(req, route, 200, "Successfully removed worker: %s", id);
	struct rt_buf b = {0};
	rt_buf_puts(&b, "{\"removed\":true,\"status\":\"accepted\",\"worker_id\":\"");
	rt_buf_json_str(&b, id, strlen(id));
	rt_buf_puts(&b, "\"}\n");
	return send_json(req, route, 200, &b);
}

static int refuse(h2o_req_t *req, enum route route, enum reply style, int status, const char *code,
		  const char *msg)
{
	if (style == REPLY_TEXT)
		return text_reply(req, route, status, "%s", msg);
	return rt_send_errorf(req, route, status, code, "%s", msg);
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

/* A change through the statebus (its table is authoritative while it
 * runs): op add_worker / remove_worker (docs/control.md). */
static int via_statebus(h2o_req_t *req, enum route route, enum reply style, json_t *op,
			bool add, const char *id)
{
	const char *why;
	json_t *reply = control_call(rt_w.gen->cfg.statebus.control_endpoint, op, &why);
	json_decref(op);
	if (reply == NULL)
		return refuse(req, route, style, 503, "service_overloaded", why);
	bool ok = json_is_true(json_object_get(reply, "ok"));
	const char *err = json_string_value(json_object_get(reply, "error"));
	int rc;
	if (ok && style == REPLY_TEXT) {
		rc = add ? added(req, route, style, id, 0, 0) : removed(req, route, style, id);
	} else if (ok) {
		char *txt = json_dumps(reply, JSON_COMPACT);
		rc = rt_send_body(req, route, add ? 201 : 200, "application/json", txt ? txt : "{}",
				  txt ? strlen(txt) : 2);
		free(txt);
	} else {
		rc = refuse(req, route, style, 400, "bad_request",
			    err ? err : "the statebus refused the change");
	}
	json_decref(reply);
	return rc;
}

static int add_worker(h2o_req_t *req, enum route route, enum reply style, const struct add_spec *sp)
{
	struct statebus_worker w;
	memset(&w, 0, sizeof(w));
	if (strncasecmp(sp->url, "https://", 8) == 0)
		return refuse(req, route, style, 400, "bad_request", HTTPS_REFUSED);
	int role = spec_role(sp->role);
	if (statebus_worker_id_normalise(sp->url, w.id, sizeof(w.id)) != SY_OK || role < 0 ||
	    sp->bootstrap_port < 0 || sp->bootstrap_port > 65535)
		return refuse(req, route, style, 400, "bad_request",
			      "url must be an http(s) URL, role (worker_type) plain|regular|prefill|"
			      "decode, bootstrap_port 0..65535");
	if (rt_w.region == NULL)
		return refuse(req, route, style, 503, "service_overloaded", "no state plane");
	if (statebus_daemon_live(rt_w.region, sy_mono_ns(), 5000000000ull)) {
		json_t *op = json_pack("{s:s, s:s, s:s}", "op", "add_worker", "url", w.id, "role",
				       role_name((unsigned)role));
		if (sp->model[0])
			json_object_set_new(op, "model", json_string(sp->model));
		if (sp->bootstrap_port > 0)
			json_object_set_new(op, "bootstrap_port", json_integer(sp->bootstrap_port));
		return via_statebus(req, route, style, op, true, w.id);
	}
	w.role = (uint8_t)role;
	snprintf(w.model, sizeof(w.model), "%s", sp->model[0] ? sp->model : rt_w.gen->cfg.model_id);
	w.bootstrap_port = (uint16_t)sp->bootstrap_port;
	w.healthy = 0; /* unknown until the master's first probe passes (prober.h) */
	w.dp_size = 1;
	uint32_t slot, gen;
	if (statebus_writer_lock(rt_w.region, true) != SY_OK)
		return refuse(req, route, style, 503, "service_overloaded", "the state plane is busy");
	int rc = statebus_worker_add(rt_w.region, &w, &slot, &gen);
	statebus_writer_unlock(rt_w.region);
	if (rc == SY_EEXIST)
		return refuse(req, route, style, 409, "worker_exists",
			      "a worker with this ID is already registered");
	if (rc != SY_OK)
		return refuse(req, route, style, 503, "service_overloaded", "cannot add the worker");
	sy_info("admin: added worker %s (slot %u)", w.id, slot);
	return added(req, route, style, w.id, slot, gen);
}

static int remove_worker(h2o_req_t *req, enum route route, enum reply style, const char *id)
{
	if (rt_w.region == NULL)
		return refuse(req, route, style, 503, "service_overloaded", "no state plane");
	if (statebus_daemon_live(rt_w.region, sy_mono_ns(), 5000000000ull))
		return via_statebus(req, route, style,
				    json_pack("{s:s, s:s}", "op", "remove_worker", "url", id), false, id);
	uint32_t slot, gen;
	if (statebus_worker_find(rt_w.region, id, &slot, &gen) != SY_OK)
		return refuse(req, route, style, 404, "worker_not_found", "no such worker");
	if (statebus_writer_lock(rt_w.region, true) != SY_OK)
		return refuse(req, route, style, 503, "service_overloaded", "the state plane is busy");
	int rc = statebus_worker_remove(rt_w.region, slot, gen);
	statebus_writer_unlock(rt_w.region);
	if (rc != SY_OK)
		return refuse(req, route, style, 404, "worker_not_found", "no such worker");
	sy_info("admin: removed worker %s (slot %u)", id, slot);
	return removed(req, route, style, id);
}

/* POST /workers: {"url", "role" | "worker_type", "model" | "model_id",
 * "bootstrap_port"}. */
static int workers_post(h2o_req_t *req)
{
	json_error_t je;
	json_t *root = json_loadb(req->entity.base ? req->entity.base : "", req->entity.len, 0, &je);
	struct add_spec sp;
	memset(&sp, 0, sizeof(sp));
	const char *url = json_string_value(json_object_get(root, "url"));
	const char *role = json_string_value(json_object_get(root, "role"));
	const char *model = json_string_value(json_object_get(root, "model"));
	if (role == NULL)
		role = json_string_value(json_object_get(root, "worker_type"));
	if (model == NULL)
		model = json_string_value(json_object_get(root, "model_id"));
	json_t *bp = json_object_get(root, "bootstrap_port");
	bool bad = root == NULL || !json_is_object(root) || url == NULL ||
		   strlen(url) >= sizeof(sp.url) || (role && strlen(role) >= sizeof(sp.role)) ||
		   (model && strlen(model) >= sizeof(sp.model)) ||
		   (bp != NULL && !json_is_null(bp) && !json_is_integer(bp));
	if (!bad) {
		snprintf(sp.url, sizeof(sp.url), "%s", url);
		snprintf(sp.role, sizeof(sp.role), "%s", role ? role : "");
		snprintf(sp.model, sizeof(sp.model), "%s", model ? model : "");
		sp.bootstrap_port = json_is_integer(bp) ? (long)json_integer_value(bp) : 0;
	}
	json_decref(root);
	if (bad)
		return rt_send_errorf(req, ROUTE_WORKERS, 400, "bad_request",
				      "body must be a JSON object {\"url\", \"role\" or \"worker_type\", "
				      "\"model\" or \"model_id\", \"bootstrap_port\"}");
	return add_worker(req, ROUTE_WORKERS, REPLY_JSON, &sp);
}

/* GET /workers/<url-encoded ID>: one worker (SGLang's WorkerInfo). */
static int workers_get_one(h2o_req_t *req, h2o_iovec_t path)
{
	char id[STATEBUS_WORKER_ID_MAX];
	uint32_t slot, gen;
	struct statebus_worker w;
	if (!named_worker(req, path, id, sizeof(id)))
		return rt_send_errorf(req, ROUTE_WORKERS, 400, "bad_request",
				      "name the worker: /workers/<url-encoded URL>");
	if (rt_w.region == NULL || statebus_worker_find(rt_w.region, id, &slot, &gen) != SY_OK ||
	    statebus_worker_read(rt_w.region, slot, &w) != SY_OK)
		return rt_send_errorf(req, ROUTE_WORKERS, 404, "worker_not_found", "no such worker");
	struct rt_buf b = {0};
	worker_json(&b, rt_w.region, slot, &w, sy_mono_ns());
	rt_buf_puts(&b, "\n");
	return send_json(req, ROUTE_WORKERS, 200, &b);
}

/* 404 without --admin-api-key (the bearer was checked before the route,
 * auth.h); 0 when the admin API is on. */
static int gate(h2o_req_t *req, enum route route)
{
	if (rt_w.gen->cfg.router.admin_api_key != NULL)
		return 0;
	rt_send_errorf(req, route, 404, "not_found",
		       "the admin API is off (start the router with --admin-api-key)");
	return 1;
}

int rt_route_workers(h2o_req_t *req, h2o_iovec_t path)
{
	if (gate(req, ROUTE_WORKERS))
		return 0;
	bool get = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET"));
	bool post = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("POST"));
	bool del = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("DELETE"));
	bool put = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("PUT")) ||
		   h2o_memis(req->method.base, req->method.len, H2O_STRLIT("PATCH"));
	if (get && path.len == 8)
		return workers_list(req);
	if (get)
		return workers_get_one(req, path);
	if (put)
		return rt_send_errorf(req, ROUTE_WORKERS, 400, "bad_request",
				      "workers have no priority, cost or labels to update; remove the "
				      "worker and add it again to change it");
	if (post && path.len == 8)
		return workers_post(req);
	if (!del) {
		h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL,
			       H2O_STRLIT("GET, POST, PUT, DELETE"));
		return rt_send_errorf(req, ROUTE_WORKERS, 405, "method_not_allowed",
				      "use GET, POST, PUT or DELETE");
	}
	char id[STATEBUS_WORKER_ID_MAX];
	if (!named_worker(req, path, id, sizeof(id)))
		return rt_send_errorf(req, ROUTE_WORKERS, 400, "bad_request",
				      "name the worker: DELETE /workers/<url-encoded URL> or ?url=URL");
	return remove_worker(req, ROUTE_WORKERS, REPLY_JSON, id);
}

int rt_route_list_workers(h2o_req_t *req)
{
	if (gate(req, ROUTE_LIST_WORKERS))
		return 0;
	struct statebus_region *r = rt_w.region;
	uint32_t cap = r ? statebus_workers_capacity(r) : 0;
	struct rt_buf b = {0};
	unsigned n = 0;
	rt_buf_puts(&b, "{\"urls\":[");
	for (uint32_t s = 0; s < cap; s++) {
		struct statebus_worker w;
		if (statebus_worker_read(r, s, &w) != SY_OK || w.state != STATEBUS_WORKER_ACTIVE)
			continue;
		rt_buf_puts(&b, n++ ? ",\"" : "\"");
		rt_buf_json_str(&b, w.id, strlen(w.id));
		rt_buf_puts(&b, "\"");
	}
	rt_buf_puts(&b, "]}\n");
	return send_json(req, ROUTE_LIST_WORKERS, 200, &b);
}

int rt_route_add_worker(h2o_req_t *req)
{
	if (gate(req, ROUTE_ADD_WORKER))
		return 0;
	struct add_spec sp;
	char port[16] = "";
	memset(&sp, 0, sizeof(sp));
	if (!query_param(req, "url", sp.url, sizeof(sp.url)) || sp.url[0] == '\0')
		return text_reply(req, ROUTE_ADD_WORKER, 400,
				  "Worker URL required. Provide 'url' query parameter%s", "");
	if (!query_param(req, "worker_type", sp.role, sizeof(sp.role)))
		sp.role[0] = '\0';
	if (!query_param(req, "model_id", sp.model, sizeof(sp.model)))
		sp.model[0] = '\0';
	if (query_param(req, "bootstrap_port", port, sizeof(port))) {
		char *end;
		sp.bootstrap_port = strtol(port, &end, 10);
		if (*end != '\0' || end == port)
			sp.bootstrap_port = -1;
	}
	return add_worker(req, ROUTE_ADD_WORKER, REPLY_TEXT, &sp);
}

int rt_route_remove_worker(h2o_req_t *req)
{
	if (gate(req, ROUTE_REMOVE_WORKER))
		return 0;
	char raw[STATEBUS_WORKER_ID_MAX], id[STATEBUS_WORKER_ID_MAX];
	if (!query_param(req, "url", raw, sizeof(raw)) || raw[0] == '\0' ||
	    statebus_worker_id_normalise(raw, id, sizeof(id)) != SY_OK)
		return text_reply(req, ROUTE_REMOVE_WORKER, 400,
				  "Worker URL required. Provide 'url' query parameter%s", "");
	return remove_worker(req, ROUTE_REMOVE_WORKER, REPLY_TEXT, id);
}
