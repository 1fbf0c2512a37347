/* pick.c — the data plane's adapter to request preparation and selection.
 *
 * INTERIM: until the selection core (router/prepare.h, gen.h, select.h)
 * is merged, this file holds a minimal stand-in so the data plane can be
 * built and tested end to end: the body is validated with jansson, the
 * model read, and the engine chosen round-robin among live, healthy
 * workers of that model in the state plane (plain first; prefill + decode
 * pairs when the model has no plain worker). The shapes in pick.h are the
 * contract; only this file changes when the core lands.
 */
#include "router/pick.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/errors.h"
#include "router/rtgen.h"

struct prepared_core {
	char model[STATEBUS_MODEL_MAX];
	bool has_model;
};

int rt_sel_build(struct rt_gen *g, char *err, size_t errcap)
{
	(void)err, (void)errcap;
	g->sel = NULL;
	return 0;
}

void rt_sel_free(struct rt_gen *g) { (void)g; }

static void set_err(struct rt_pick_error *e, int status, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void set_err(struct rt_pick_error *e, int status, const char *code, const char *fmt, ...)
{
	va_list ap;
	e->status = status;
	snprintf(e->code, sizeof(e->code), "%s", code);
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
	e->details_json = NULL;
}

int rt_prepare(struct rt_gen *g, enum rt_route route, h2o_req_t *req, struct rt_prepared *out,
	       struct rt_pick_error *err)
{
	uint64_t t0 = sy_mono_ns();
	struct prepared_core *c = h2o_mem_alloc_pool(&req->pool, sizeof(*c));
	memset(c, 0, sizeof(*c));
	out->core = c;
	out->route = route;
	json_error_t je;
	json_t *root = json_loadb(req->entity.base ? req->entity.base : "",
				  req->entity.base ? req->entity.len : 0, 0, &je);
	if (root == NULL) {
		set_err(err, 400, "bad_request", "malformed JSON at byte %d: %s", je.position, je.text);
		return SY_EMALFORMED;
	}
	if (!json_is_object(root)) {
		json_decref(root);
		set_err(err, 400, "bad_request", "the request body must be a JSON object");
		return SY_EINVAL;
	}
	json_t *model = json_object_get(root, "model");
	if (model != NULL && !json_is_string(model)) {
		json_decref(root);
		set_err(err, 400, "bad_request", "model: must be a string");
		return SY_EINVAL;
	}
	const char *m = model ? json_string_value(model) : g->cfg.model_id;
	snprintf(c->model, sizeof(c->model), "%s", m);
	c->has_model = model != NULL;
	if (route == RT_ROUTE_CHAT && !json_is_array(json_object_get(root, "messages"))) {
		json_decref(root);
		set_err(err, 400, "bad_request", "messages: required, an array of messages");
		return SY_EINVAL;
	}
	json_decref(root);
	out->prepare_ns = sy_mono_ns() - t0;
	return 0;
}

static bool excluded(const struct rt_exclude *ex, uint32_t slot)
{
	for (unsigned i = 0; ex && i < ex->n; i++)
		if (ex->slots[i] == slot)
			return true;
	return false;
}

static void target(struct rt_target *t, uint32_t slot, const struct statebus_worker *w)
{
	t->slot = slot;
	t->gen = w->generation;
	t->bootstrap_port = w->bootstrap_port;
	snprintf(t->url, sizeof(t->url), "%s", w->id);
}

int rt_select(struct rt_gen *g, h2o_req_t *req, struct rt_prepared *p, const struct rt_exclude *ex,
	      struct rt_pick *out, struct rt_pick_error *err)
{
	(void)req, (void)g;
	static unsigned rr[3];
	struct prepared_core *c = p->core;
	struct statebus_region *r = rt_w.region;
	uint32_t cap = r ? statebus_workers_capacity(r) : 0;
	uint32_t cand[3][64];
	struct statebus_worker wk[3][64];
	unsigned n[3] = {0, 0, 0};
	bool model_known = false;
	for (uint32_t s = 0; s < cap; s++) {
		struct statebus_worker w;
		if (statebus_worker_read(r, s, &w) != SY_OK || w.state != STATEBUS_WORKER_ACTIVE)
			continue;
		if (strcmp(w.model, c->model) != 0)
			continue;
		model_known = true;
		if (!w.healthy || excluded(ex, s) || w.role > 2 || n[w.role] >= 64)
			continue;
		wk[w.role][n[w.role]] = w;
		cand[w.role][n[w.role]++] = s;
	}
	if (!model_known) {
		set_err(err, 404, "model_not_found", "model '%s' is not served here", c->model);
		return SY_ENOENT;
	}
	memset(out, 0, sizeof(*out));
	snprintf(out->bucket, sizeof(out->bucket), "default");
	snprintf(out->policy, sizeof(out->policy), "round_robin");
	snprintf(out->reason, sizeof(out->reason), "round_robin");
	if (n[0] > 0) {
		unsigned i = rr[0]++ % n[0];
		target(&out->main, cand[0][i], &wk[0][i]);
		return 0;
	}
	if (n[1] == 0 && n[2] == 0) {
		set_err(err, 503, "no_healthy_workers", "no healthy worker serves model '%s'", c->model);
		return SY_ENOENT;
	}
	if (n[1] == 0) {
		set_err(err, 503, "no_prefill_workers_available",
			"no prefill worker available for model '%s'", c->model);
		return SY_ENOENT;
	}
	if (n[2] == 0) {
		set_err(err, 503, "no_decode_workers_available",
			"no decode worker available for model '%s'", c->model);
		return SY_ENOENT;
	}
	unsigned i = rr[1]++ % n[1], j = rr[2]++ % n[2];
	out->pd = true;
	target(&out->prefill, cand[1][i], &wk[1][i]);
	target(&out->main, cand[2][j], &wk[2][j]);
	return 0;
}

void rt_models_each(struct rt_gen *g, void (*fn)(const char *model, void *arg), void *arg)
{
	char seen[16][STATEBUS_MODEL_MAX];
	unsigned n = 0;
	struct statebus_region *r = rt_w.region;
	uint32_t cap = r ? statebus_workers_capacity(r) : 0;
	for (uint32_t s = 0; s < cap; s++) {
		struct statebus_worker w;
		if (statebus_worker_read(r, s, &w) != SY_OK || w.state != STATEBUS_WORKER_ACTIVE)
			continue;
		bool dup = false;
		for (unsigned k = 0; k < n; k++)
			dup |= strcmp(seen[k], w.model) == 0;
		if (dup || n >= 16)
			continue;
		snprintf(seen[n++], STATEBUS_MODEL_MAX, "%s", w.model);
		fn(w.model, arg);
	}
	if (n == 0)
		fn(g->cfg.model_id, arg);
}
