/* sglang.c — the SGLang router's info, health and load routes, with its
 * JSON shapes (sgl-model-gateway server.rs):
 *   GET /liveness         200 "OK"
 *   GET /readiness        200 {"status":"ready","healthy_workers","total_workers"}
 *                         (workers the active probe passed / ACTIVE workers);
 *                         503 {"status":"not ready","reason"} while draining or
 *                         while /readyz would say 503 (router/core/readiness.h:
 *                         no complete selection with selection's candidate
 *                         filter; the reason is its message)
 *   GET /get_loads        {"loads":[{"worker","worker_type","load"}],
 *   (/v1/loads)            "total_workers","successful","failed"}: load = the
 *                         engine's running + waiting requests when its report
 *                         is fresh, else this router's requests in flight
 *   GET /get_server_info, /get_model_info, /health_generate (and the
 *                         /server_info, /model_info spellings): the answer of
 *                         the first healthy worker (slot order) to the same
 *                         GET, status and body as it gave them; 503
 *                         no_healthy_workers without one.
 * The forwarded GET is one exchange of the upstream client with the header
 * timeout; its body is kept up to 1 MiB.
 */
#include <string.h>

#include "common/clock.h"
#include "common/errors.h"
#include "router/core/buf.h"
#include "router/core/generation.h"
#include "router/core/readiness.h"
#include "router/http/response.h"
#include "router/http/routes.h"
#include "router/upstream/client.h"
#include "router/upstream/pool.h"

#define WORKER_GET_MAX (1u << 20) /* bytes of a forwarded answer */

int rt_route_liveness(h2o_req_t *req)
{
	return rt_send_body(req, ROUTE_LIVENESS, 200, "text/plain; charset=utf-8", "OK", 2);
}

int rt_route_readiness(h2o_req_t *req)
{
	struct statebus_region *r = rt_w.region;
	uint32_t cap = r ? statebus_workers_capacity(r) : 0;
	unsigned total = 0, healthy = 0;
	for (uint32_t s = 0; s < cap; s++) {
		struct statebus_worker w;
		if (statebus_worker_read(r, s, &w) != SY_OK || w.state != STATEBUS_WORKER_ACTIVE)
			continue;
		total++;
		healthy += w.healthy != 0;
	}
	struct router_readiness rd = {.ready = false};
	if (!rt_w.draining)
		router_readiness_check(rt_w.gen, r, sy_mono_ns(), &rd);
	struct rt_buf b = {0};
	if (rd.ready) {
		rt_buf_printf(&b, "{\"status\":\"ready\",\"healthy_workers\":%u,\"total_workers\":%u}\n",
			      healthy, total);
	} else {
		const char *why = rt_w.draining ? "draining" : rd.message;
		rt_buf_puts(&b, "{\"status\":\"not ready\",\"reason\":\"");
		rt_buf_json_str(&b, why, strlen(why));
		rt_buf_puts(&b, "\"}\n");
	}
	if (b.oom) {
		rt_buf_free(&b);
		return rt_send_errorf(req, ROUTE_READINESS, 500, "internal_error", "out of memory");
	}
	int rc = rt_send_body(req, ROUTE_READINESS, rd.ready ? 200 : 503, "application/json", b.p,
			      b.n);
	rt_buf_free(&b);
	return rc;
}

int rt_route_loads(h2o_req_t *req)
{
	struct statebus_region *r = rt_w.region;
	uint32_t cap = r ? statebus_workers_capacity(r) : 0;
	uint64_t now = sy_mono_ns();
	struct rt_buf b = {0};
	unsigned n = 0;
	rt_buf_puts(&b, "{\"loads\":[");
	for (uint32_t s = 0; s < cap; s++) {
		struct statebus_worker w;
		if (statebus_worker_read(r, s, &w) != SY_OK || w.state != STATEBUS_WORKER_ACTIVE)
			continue;
		struct statebus_load_view v;
		int64_t load;
		if (statebus_load_view(r, s, now, &v) == SY_OK) {
			load = (int64_t)(v.num_running_reqs + v.num_waiting_reqs);
		} else {
			load = 0;
			statebus_inflight_sum(r, s, &load, NULL);
		}
		rt_buf_puts(&b, n++ ? ",{\"worker\":\"" : "{\"worker\":\"");
		rt_buf_json_str(&b, w.id, strlen(w.id));
		rt_buf_printf(&b, "\",\"worker_type\":\"%s\",\"load\":%lld}",
			      w.role == STATEBUS_WORKER_PREFILL  ? "prefill"
			      : w.role == STATEBUS_WORKER_DECODE ? "decode"
								 : "regular",
			      (long long)load);
	}
	rt_buf_printf(&b, "],\"total_workers\":%u,\"successful\":%u,\"failed\":0}\n", n, n);
	if (b.oom) {
		rt_buf_free(&b);
		return rt_send_errorf(req, ROUTE_LOADS, 500, "internal_error", "out of memory");
	}
	rt_send_body(req, ROUTE_LOADS, 200, "application/json", b.p, b.n);
	rt_buf_free(&b);
	return 0;
}

/* ---- a GET answered by a worker ---------------------------------------------- */

struct worker_get {
	h2o_req_t *req;          /* NULL once answered or disposed */
	enum route route;
	struct rt_exchange ux;
	int status;
	h2o_iovec_t ctype;       /* request pool */
	bool over;
};

static void wg_fail(struct worker_get *g, int status, const char *code, const char *msg)
{
	h2o_req_t *req = g->req;
	g->req = NULL;
	if (req != NULL)
		rt_send_errorf(req, g->route, status, code, "%s", msg);
}

static void wg_on_connect(struct rt_exchange *x, const char *err)
{
	if (err != NULL)
		wg_fail(x->data, err == rt_exchange_timed_out ? 504 : 502,
			err == rt_exchange_timed_out ? "upstream_timeout" : "upstream_unreachable",
			err);
}

static void wg_answer(struct worker_get *g)
{
	h2o_req_t *req = g->req;
	g->req = NULL;
	if (req == NULL)
		return;
	if (g->over) {
		rt_send_errorf(req, g->route, 502, "upstream_body_incomplete",
			       "the worker's answer is larger than 1 MiB");
		return;
	}
	char ct[128];
	snprintf(ct, sizeof(ct), "%.*s", (int)(g->ctype.len < 127 ? g->ctype.len : 127),
		 g->ctype.base ? g->ctype.base : "");
	rt_send_body(req, g->route, g->status, ct[0] ? ct : NULL, g->ux.body->bytes,
		     g->ux.body->size);
}

static void wg_on_head(struct rt_exchange *x, const char *err, int status, const h2o_header_t *h,
		       size_t n, bool eos)
{
	struct worker_get *g = x->data;
	if (err != NULL) {
		wg_on_connect(x, err);
		return;
	}
	g->status = status;
	for (size_t i = 0; i < n && g->req != NULL; i++)
		if (h[i].name == &H2O_TOKEN_CONTENT_TYPE->buf)
			g->ctype = h2o_strdup(&g->req->pool, h[i].value.base, h[i].value.len);
	if (eos)
		wg_answer(g);
}

static void wg_on_body(struct rt_exchange *x, const char *err)
{
	struct worker_get *g = x->data;
	if (x->body->size > WORKER_GET_MAX) {
		g->over = true;
		rt_exchange_cancel(x);
		wg_answer(g);
		return;
	}
	if (err == NULL)
		return;
	if (err == rt_exchange_eos)
		wg_answer(g);
	else
		wg_fail(g, 502, "upstream_body_incomplete", err);
}

static const struct rt_exchange_cb wg_cb = {wg_on_connect, wg_on_head, wg_on_body};

static void wg_dispose(void *p)
{
	struct worker_get *g = p;
	g->req = NULL;
	rt_exchange_dispose(&g->ux);
}

/* The engine path of a forwarded route. */
static const char *engine_path(enum route route)
{
	switch (route) {
	case ROUTE_SERVER_INFO: return "/get_server_info";
	case ROUTE_MODEL_INFO: return "/get_model_info";
	default: return "/health_generate";
	}
}

int rt_route_worker_get(h2o_req_t *req, enum route route)
{
	struct statebus_region *r = rt_w.region;
	uint32_t cap = r ? statebus_workers_capacity(r) : 0;
	struct statebus_worker w;
	uint32_t s;
	for (s = 0; s < cap; s++)
		if (statebus_worker_read(r, s, &w) == SY_OK && w.state == STATEBUS_WORKER_ACTIVE &&
		    w.healthy)
			break;
	if (s == cap)
		return rt_send_errorf(req, route, 503, "no_healthy_workers",
				      "no healthy worker to answer");
	const char *why;
	struct rt_upstream *up = rt_upstream_get(rt_w.upstreams, s, w.id, &why);
	if (up == NULL)
		return rt_send_errorf(req, route, 502, "upstream_unreachable", "%s", why);
	struct worker_get *g = h2o_mem_alloc_shared(&req->pool, sizeof(*g), wg_dispose);
	memset(g, 0, sizeof(*g));
	g->req = req;
	g->route = route;
	rt_exchange_init(&g->ux, &wg_cb, g);
	char head[512];
	int len = snprintf(head, sizeof(head), "GET %.*s%s HTTP/1.1\r\nhost: %.*s\r\n\r\n",
			   (int)up->prefix.len, up->prefix.base, engine_path(route),
			   (int)up->authority.len, up->authority.base);
	rt_exchange_start(&g->ux, up, h2o_strdup(&req->pool, head, (size_t)len),
			  h2o_iovec_init(NULL, 0), &rt_w.head_timeout);
	return 0;
}
