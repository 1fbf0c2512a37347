/* pick_core.c — the data plane's adapter to the selection core
 * (router/core/prepare.h, gen.h, select.h): the implementation of pick.h.
 *
 * Per request: a struct prepare_buf and the pick_request live in the
 * request pool (the buffer is freed by the pool's dispose callback), so a
 * retry can run selection again on the same prepared request. Header
 * lookups borrow h2o's header values (request pool).
 */
#include "router/pick.h"

#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "router/core/buf.h"
#include "router/core/generation.h"
#include "router/http/metrics.h"
#include "router/core/prepare.h"
#include "router/rtgen.h"
#include "router/core/select.h"

struct core_req {
	struct prepare_buf buf;
	struct pick_request pr;
};

int rt_sel_build(struct rt_gen *g, char *err, size_t errcap)
{
	struct sy_config_error e;
	memset(&e, 0, sizeof(e));
	if (router_gen_build(&g->cfg, g->id, &g->sel, &e) != 0) {
		snprintf(err, errcap, "%s", e.msg[0] ? e.msg : "cannot build the selection core");
		g->sel = NULL;
		return -1;
	}
	sy_info("tokenizer %s (chat template %s), input-ids forwarding %s",
		sy_tokenizer_kind(g->sel->tokenizer), sy_tokenizer_chat_template(g->sel->tokenizer),
		g->sel->prepare.forward_input_ids ? "on" : "off");
	return 0;
}

void rt_sel_free(struct rt_gen *g)
{
	router_gen_unref(g->sel);
	g->sel = NULL;
}

static void from_router_error(h2o_req_t *req, const struct router_error *re,
			      struct rt_pick_error *e)
{
	e->status = re->status ? re->status : 500;
	snprintf(e->code, sizeof(e->code), "%s", re->code ? re->code : "internal_error");
	snprintf(e->message, sizeof(e->message), "%s", re->message);
	e->details_json = NULL;
	if (re->n_details > 0) {
		struct rt_buf b = {0};
		rt_buf_put(&b, "[", 1);
		for (size_t i = 0; i < re->n_details; i++) {
			rt_buf_puts(&b, i ? ",{\"worker\":\"" : "{\"worker\":\"");
			rt_buf_json_str(&b, re->details[i].worker, strlen(re->details[i].worker));
			rt_buf_puts(&b, "\",\"limit\":\"");
			const char *l = re->details[i].limit ? re->details[i].limit : "";
			rt_buf_json_str(&b, l, strlen(l));
			rt_buf_puts(&b, "\"}");
		}
		rt_buf_put(&b, "]", 1);
		if (!b.oom)
			e->details_json = h2o_strdup(&req->pool, b.p, b.n).base;
		rt_buf_free(&b);
	}
}

static bool header_fn(void *ctx, const char *name, size_t len, struct router_span *value)
{
	h2o_req_t *req = ctx;
	ssize_t i = h2o_find_header_by_str(&req->headers, name, len, -1);
	if (i < 0)
		return false;
	value->ptr = req->headers.entries[i].value.base;
	value->len = req->headers.entries[i].value.len;
	return true;
}

/* Preparation scratch of finished requests, handed to the next ones so
 * the hot path does not malloc and free it per request (router_prepare
 * resets a buffer before use). Per thread (a worker process has one);
 * only buffers up to PREP_CACHE_MAX_BYTES are kept, so one huge request
 * does not pin its memory. */
#define PREP_CACHE_N 16
#define PREP_CACHE_MAX_BYTES (256u * 1024u)

static __thread struct prepare_buf prep_cache[PREP_CACHE_N];
static __thread unsigned prep_cached;

static void core_dispose(void *p)
{
	struct core_req *c = p;
	if (prep_cached < PREP_CACHE_N && prepare_buf_bytes(&c->buf) <= PREP_CACHE_MAX_BYTES)
		prep_cache[prep_cached++] = c->buf;
	else
		prepare_buf_free(&c->buf);
}

int rt_prepare(struct rt_gen *g, enum rt_route route, h2o_req_t *req, struct rt_prepared *out,
	       struct rt_pick_error *err)
{
	uint64_t t0 = out->t_start_ns ? out->t_start_ns : sy_mono_ns();
	struct core_req *c = h2o_mem_alloc_shared(&req->pool, sizeof(*c), core_dispose);
	memset(c, 0, sizeof(*c));
	if (prep_cached > 0)
		c->buf = prep_cache[--prep_cached];
	else
		prepare_buf_init(&c->buf);
	out->core = c;
	out->route = route;
	enum route_kind kind = route == RT_ROUTE_COMPLETIONS ? ROUTE_COMPLETIONS
			       : route == RT_ROUTE_GENERATE  ? ROUTE_GENERATE
							     : ROUTE_CHAT_COMPLETIONS;
	struct router_error re;
	router_error_clear(&re);
	int rc = router_prepare(&g->sel->prepare, kind, req->entity.base, req->entity.len, header_fn,
				req, &c->buf, &c->pr, &re);
	out->t_end_ns = sy_mono_ns();
	out->prepare_ns = out->t_end_ns - t0;
	if (rc != 0) {
		from_router_error(req, &re, err);
		return rc;
	}
	if (c->pr.forward_ids) {
		out->input_ids = c->pr.token_ids;
		out->n_input_ids = c->pr.n_token_ids;
	}
	return 0;
}

/* Copies `src` (NULL = "") into dst[cap], truncated, NUL-terminated: the
 * hot path's snprintf(dst, cap, "%s", src) without the formatter. */
static void copy_str(char *dst, size_t cap, const char *src)
{
	size_t n = src != NULL ? strnlen(src, cap - 1) : 0;
	if (n)
		memcpy(dst, src, n);
	dst[n] = '\0';
}

static void copy_target(struct rt_target *t, const struct selected_worker *w)
{
	t->slot = w->slot;
	t->gen = w->generation;
	t->bootstrap_port = w->bootstrap_port;
	copy_str(t->url, sizeof(t->url), w->id);
}

static bool excluded(const struct rt_exclude *ex, uint32_t slot)
{
	for (unsigned i = 0; ex && i < ex->n; i++)
		if (ex->slots[i] == slot)
			return true;
	return false;
}

int rt_select(struct rt_gen *g, h2o_req_t *req, struct rt_prepared *p, const struct rt_exclude *ex,
	      uint64_t now_ns, struct rt_pick *out, struct rt_pick_error *err)
{
	if (now_ns == 0)
		now_ns = sy_mono_ns();
	struct core_req *c = p->core;
	struct selection sel;
	struct router_error re;
	/* The core has no exclusion list: a retry asks again a few times
	 * (round-robin moves on, random draws anew) and gives up when it keeps
	 * getting an excluded worker. */
	for (int attempt = 0; attempt < (ex && ex->n ? 4 : 1); attempt++) {
		router_error_clear(&re);
		int rc = router_select(g->sel, rt_w.region, &c->pr, now_ns, &sel, &re);
		struct router_cache_totals cd;
		if (router_gen_cache_delta(g->sel, &cd))
			rt_metrics_cache(rt_w.metrics, rt_w.index, &cd);
		if (rc != 0) {
			from_router_error(req, &re, err);
			return rc;
		}
		if (excluded(ex, sel.worker.slot))
			continue;
		memset(out, 0, sizeof(*out));
		out->pd = sel.pd;
		copy_target(&out->main, &sel.worker);
		if (sel.pd)
			copy_target(&out->prefill, &sel.prefill);
		copy_str(out->bucket, sizeof(out->bucket), sel.bucket_id);
		copy_str(out->policy, sizeof(out->policy), sel.policy);
		copy_str(out->reason, sizeof(out->reason), sel.reason);
		return 0;
	}
	err->status = 503;
	snprintf(err->code, sizeof(err->code), "no_healthy_workers");
	snprintf(err->message, sizeof(err->message), "no other worker to retry on");
	err->details_json = NULL;
	return SY_ENOENT;
}

void rt_models_each(struct rt_gen *g, void (*fn)(const char *model, void *arg), void *arg)
{
	fleet_refresh(&g->sel->fleet, rt_w.region, sy_mono_ns(), false);
	for (size_t i = 0; i < g->sel->fleet.n_models; i++)
		fn(g->sel->fleet.models[i], arg);
	if (g->sel->fleet.n_models == 0)
		fn(g->cfg.model_id, arg);
}
