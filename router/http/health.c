/* health.c — liveness, readiness (router/core/readiness.h), model list and
 * metrics routes. */
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/errors.h"
#include "router/core/generation.h"
#include "router/core/readiness.h"
#include "router/http/response.h"
#include "router/core/buf.h"
#include "router/http/metrics.h"
#include "router/http/routes.h"

int rt_route_health(h2o_req_t *req)
{
	return rt_send_body(req, ROUTE_HEALTH, 200, "text/plain; charset=utf-8", "ok\n", 3);
}

int rt_route_readyz(h2o_req_t *req)
{
	if (rt_w.draining)
		return rt_send_errorf(req, ROUTE_READYZ, 503, "draining", "the router is shutting down");
	struct router_readiness rd;
	router_readiness_check(rt_w.gen, rt_w.region, sy_mono_ns(), &rd);
	if (!rd.ready)
		return rt_send_errorf(req, ROUTE_READYZ, 503, rd.code, "not ready: %s", rd.message);
	return rt_send_body(req, ROUTE_READYZ, 200, "text/plain; charset=utf-8", "ready\n", 6);
}

/* One entry of the list; `parent` NULL for a model, its base model for a
 * LoRA adapter (as vLLM lists them). */
static void model_cb(const char *model, const char *parent, void *arg)
{
	struct rt_buf *b = arg;
	if (b->p[b->n - 1] != '[')
		rt_buf_puts(b, ",");
	rt_buf_puts(b, "{\"id\":\"");
	rt_buf_json_str(b, model, strlen(model));
	rt_buf_puts(b, "\",\"object\":\"model\",\"created\":0,\"owned_by\":\"switchyard\"");
	if (parent != NULL) {
		rt_buf_puts(b, ",\"parent\":\"");
		rt_buf_json_str(b, parent, strlen(parent));
		rt_buf_puts(b, "\"");
	}
	rt_buf_puts(b, "}");
}

/* Calls `fn` once per distinct model of generation `g` (configured) and
 * of the state plane (registered workers), then once per LoRA adapter the
 * workers serve (routable by name) with its base model. */
static void models_each(struct router_gen *g,
			void (*fn)(const char *model, const char *parent, void *arg), void *arg)
{
	fleet_refresh(&g->fleet, rt_w.region, sy_mono_ns(), false);
	for (size_t i = 0; i < g->fleet.n_models; i++)
		fn(g->fleet.models[i], NULL, arg);
	for (size_t i = 0; i < g->fleet.n_adapters; i++) {
		uint32_t base;
		const struct fleet_adapter *a = &g->fleet.adapters[i];
		/* a name that is also a model is routed as the model; the
		 * first base model of a name is the one routed */
		if (fleet_model_index(&g->fleet, a->name, strlen(a->name)) != FLEET_NO_MODEL ||
		    fleet_adapter_index(&g->fleet, a->name, strlen(a->name), &base) != i)
			continue;
		fn(a->name, g->fleet.models[a->model_idx], arg);
	}
}

int rt_route_models(h2o_req_t *req)
{
	struct rt_buf b = {0};
	rt_buf_puts(&b, "{\"object\":\"list\",\"data\":[");
	if (!b.oom)
		models_each(rt_w.gen, model_cb, &b);
	rt_buf_puts(&b, "]}\n");
	return rt_send_json(req, ROUTE_MODELS, &b);
}

/* Breaker state of a slot, from the region (shared by every process). */
static int cb_state(uint32_t slot)
{
	struct statebus_health h;
	return statebus_health_read(rt_w.region, slot, &h) == SY_OK ? (int)h.cb_state : 0;
}

int rt_route_metrics(h2o_req_t *req)
{
	char *text;
	size_t len;
	if (rt_metrics_render(rt_w.metrics, rt_w.region,
			      rt_w.gen->cfg.router.cb_threshold > 0 ? cb_state : NULL,
			      rt_w.gen->cfg.router.metrics_names, &text, &len) != 0)
		return rt_send_errorf(req, ROUTE_METRICS, 500, "internal_error", "out of memory");
	rt_send_body(req, ROUTE_METRICS, 200, "text/plain; version=0.0.4; charset=utf-8", text,
		     len);
	free(text);
	return 0;
}
