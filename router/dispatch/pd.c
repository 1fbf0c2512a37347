/* pd.c — the prefill leg of a PD attempt and the set-up and clean-up of
 * both legs (forward-int.h; sglang-wire.md §15).
 *
 * Set-up: the decode exchange (the client request's f->ux, always on a
 * fresh connection: a kept-alive socket to a decode that just died may not
 * have told yet) and the prefill exchange (struct prefill, malloc'd: it
 * may outlive the client request) are both started with
 * rt_exchange_connect; only when both are connected are both requests
 * written, prefill first. So an unreachable
 * decode never gets a prefill computed for nobody, and a failure while
 * connecting has sent nothing: that attempt may be retried elsewhere.
 *
 * Clean-up: a failure of either leg aborts the other (its connection
 * closed: the engine's abort) and releases its in-flight guard; the log
 * line names the request ID, the bootstrap room, both workers and the
 * stage. A decode that completes detaches the prefill, which finishes on
 * its own (guard held until it ends); a client that goes away aborts both.
 * Both workers' breakers get their results; the pick filter has checked
 * both (engine_group_pick per stage).
 *
 * vLLM (selection_pd_vllm: the prefill worker is a vLLM engine; the flow
 * of vLLM's disaggregation proxy): both guards are taken (the decode's
 * with rt_fwd_guard, so it counts the request meanwhile) and the prefill
 * request goes out alone
 * (kv_transfer_params asking for remote decode, max_tokens 1, not
 * streamed: body_rewrite.h), its answer is held (≤ VLLM_PREFILL_BODY_MAX
 * bytes) and read once complete: the "kv_transfer_params" object it
 * returns goes into the decode request (rt_infer_decode_body), which
 * then starts on f->ux as a plain exchange whose response is relayed as
 * any other. Until a byte reached the client every failure of either leg
 * may be retried (the whole pair again, the failed worker excluded): the
 * client has seen nothing, and a prefill's KV that no decode pulls is
 * freed by the engine. A prefill answer without kv_transfer_params is
 * passed on as vLLM's proxy does (the decode then computes the prompt
 * itself); a prefill answer that is not a JSON object fails the attempt.
 * A prefill that refuses the request itself (4xx other than 408 and 429:
 * a prompt over the context length, a bad parameter) is not an engine
 * failure: the client gets its status and message (in the router's error
 * shape), with no retry and no breaker failure.
 * The same X-Request-Id goes to both legs (access_log.h keeps it in the
 * request's headers).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/clock.h"
#include "common/log.h"
#include "router/dispatch/forward-int.h"
#include "router/dispatch/stall.h"
#include "router/http/access_log.h"
#include "router/http/metrics.h"
#include "router/http/response.h"
#include "router/worker.h"

/* Largest vLLM prefill answer read (bytes): one token's completion with
 * its kv_transfer_params (block ids: a few KiB for long prompts). */
#define VLLM_PREFILL_BODY_MAX (4u << 20)

/* The prefill leg: malloc'd, lives until its exchange ends or is aborted. */
struct prefill {
	struct rt_exchange ux;
	h2o_timeout_entry_t timer;  /* the whole prefill request */
	char *mem;                  /* request head + body (own copy) */
	size_t head_len, body_len;
	struct selected_worker w;   /* the prefill worker (copy) */
	struct fwd *f;              /* the client request; NULL once detached */
	int cb_threshold;
	int status;
	bool connected;
	bool guard;                 /* in-flight guard held */
	bool vllm;                  /* vLLM protocol: the answer is read (file comment) */
	bool relay;                 /* vLLM: a refusal of the request (4xx but 408 /
				       429) answered to the client (vllm_prefill_refused) */
};

const char *rt_pd_stage_name(enum pd_stage s)
{
	switch (s) {
	case PD_STAGE_PREFILL_CONNECT: return "prefill connect";
	case PD_STAGE_DECODE_CONNECT: return "decode connect";
	case PD_STAGE_PREFILL: return "prefill";
	default: return "decode";
	}
}

static void log_failure(struct fwd *f, enum pd_stage stage, const char *why)
{
	h2o_iovec_t id = f->req ? rt_request_id(f->req) : h2o_iovec_init(H2O_STRLIT("-"));
	if (selection_pd_vllm(&f->sel)) {
		sy_warn("PD request %.*s failed at %s (vLLM kv_transfer_params): prefill %s, "
			"decode %s: %s",
			(int)id.len, id.base, rt_pd_stage_name(stage), f->sel.prefill.id,
			f->sel.worker.id, why);
		return;
	}
	sy_warn("PD request %.*s failed at %s: bootstrap room %llu, prefill %s, decode %s: %s",
		(int)id.len, id.base, rt_pd_stage_name(stage), (unsigned long long)f->room,
		f->sel.prefill.id, f->sel.worker.id, why);
}

static void prefill_free(struct prefill *p)
{
	rt_exchange_dispose(&p->ux);
	if (h2o_timeout_is_linked(&p->timer))
		h2o_timeout_unlink(&p->timer);
	if (p->guard && rt_w.region)
		statebus_inflight_release(rt_w.region, rt_w.proc_slot, p->w.slot);
	rt_fwd_breaker_release(&p->w);
	rt_w.active_requests--;
	free(p->mem);
	free(p);
}

/* Both connections exist: write both requests (prefill first). */
static void maybe_send(struct fwd *f)
{
	struct prefill *p = f->pf;
	if (p == NULL || !p->connected || !f->d_connected || f->legs_sent)
		return;
	f->legs_sent = true;
	rt_exchange_send(&p->ux);
	rt_exchange_send(&f->ux);
}

/* The prefill leg failed (`err`: a client-error string, or NULL with a
 * status ≥ 400 in p->status): results recorded, the decode leg aborted,
 * the client answered or its response cut. Frees p. */
static void prefill_failed(struct prefill *p, const char *err, enum pd_stage stage)
{
	char why[96];
	if (err != NULL)
		snprintf(why, sizeof(why), "%s", err);
	else
		snprintf(why, sizeof(why), "the prefill worker answered %d", p->status);
	if (err != NULL)
		rt_fwd_passive_down(&p->w, err);
	rt_fwd_breaker(&p->w, p->cb_threshold,
		       err == NULL && (p->status == 429 || p->status == 503) ? STATEBUS_CB_BACKPRESSURE
									      : STATEBUS_CB_FAILURE);
	rt_metrics_worker(rt_w.metrics, rt_w.index, p->w.slot, RT_OUT_ERROR);
	struct fwd *f = p->f;
	if (f == NULL) {
		sy_warn("PD prefill at %s failed after its decode ended: %s", p->w.id, why);
		prefill_free(p);
		return;
	}
	log_failure(f, stage, why);
	f->pf = NULL;
	p->f = NULL;
	bool sent = f->legs_sent && !p->vllm; /* vLLM: the decode has not started */
	struct selected_worker failed = p->w;
	prefill_free(p);
	if (f->ux.active || sent)
		rt_metrics_worker(rt_w.metrics, rt_w.index, f->sel.worker.slot, RT_OUT_CANCELLED);
	rt_fwd_release_main(f);
	rt_fwd_fail(f, &failed, !sent, err == rt_exchange_timed_out ? 504 : 502,
		    err == rt_exchange_timed_out ? "upstream_timeout" : "upstream_unreachable",
		    "the prefill worker failed");
}

/* The prefill request ended well: its result recorded; detached from f. */
static void prefill_ok(struct prefill *p)
{
	rt_fwd_breaker(&p->w, p->cb_threshold, STATEBUS_CB_SUCCESS);
	rt_metrics_worker(rt_w.metrics, rt_w.index, p->w.slot, rt_outcome_of_status(p->status));
	if (p->f != NULL)
		p->f->pf = NULL;
	prefill_free(p);
}

static void vllm_decode_start(struct fwd *f, const char *kv, size_t kv_len);

/* vLLM: the prefill's answer is complete in p->ux.body: its
 * kv_transfer_params go to the decode leg, which starts now. Frees p. */
static void vllm_prefill_done(struct prefill *p)
{
	h2o_buffer_t *b = p->ux.body;
	json_t *root = json_loadb(b->bytes, b->size, 0, NULL);
	if (!json_is_object(root)) {
		json_decref(root);
		prefill_failed(p, "the prefill worker's answer is not a JSON object",
			       PD_STAGE_PREFILL);
		return;
	}
	char *kv = NULL;
	json_t *params = json_object_get(root, "kv_transfer_params");
	if (json_is_object(params))
		kv = json_dumps(params, JSON_COMPACT | JSON_ENSURE_ASCII);
	else
		sy_debug("vLLM prefill at %s returned no kv_transfer_params: the decode computes "
			 "the prompt", p->w.id);
	json_decref(root);
	struct fwd *f = p->f;
	prefill_ok(p);
	if (f != NULL)
		vllm_decode_start(f, kv, kv ? strlen(kv) : 0);
	free(kv);
}

static void vllm_decode_start(struct fwd *f, const char *kv, size_t kv_len)
{
	h2o_iovec_t body;
	const char *why = NULL;
	if (f->req == NULL || f->cancelled || f->final_sent)
		return;
	(void)rt_infer_decode_body(f->req, f->gen, f->ir, kv, kv_len, &body);
	f->body = body;
	struct rt_upstream *du =
		rt_upstream_get(rt_w.upstreams, f->sel.worker.slot, f->sel.worker.id, &why);
	if (du == NULL) {
		rt_fwd_fail(f, &f->sel.worker, true, 502, "upstream_unreachable", why);
		return;
	}
	f->legs_sent = true;
	rt_fwd_open_main(f, du, sy_mono_ns(), false);
}

/* The router's code for a refusal `status` of an engine, and the status
 * it is answered with (a 4xx the code table has no code for is 400). */
static const char *refusal_code(int *status)
{
	switch (*status) {
	case 401: return "unauthorized";
	case 403: return "forbidden";
	case 404: return "not_found";
	case 413: return "payload_too_large";
	default: *status = 400; return "bad_request";
	}
}

/* vLLM: the prefill refused the request (p->relay): the client gets that
 * status (refusal_code) with the engine's message (OpenAI / vLLM error
 * shapes: error.message, message or detail). Frees p. */
static void vllm_prefill_refused(struct prefill *p)
{
	struct fwd *f = p->f;
	int status = p->status;
	char msg[ROUTER_ERROR_MSG_MAX] = "";
	json_t *root = json_loadb(p->ux.body->bytes, p->ux.body->size, 0, NULL);
	const char *m = json_string_value(json_object_get(json_object_get(root, "error"), "message"));
	if (m == NULL)
		m = json_string_value(json_object_get(root, "message"));
	if (m == NULL)
		m = json_string_value(json_object_get(root, "detail"));
	snprintf(msg, sizeof(msg), "%s", m ? m : "no message");
	json_decref(root);
	struct selected_worker w = p->w;
	prefill_ok(p); /* the engine answered: success for its breaker */
	if (f == NULL || f->req == NULL || f->cancelled || f->final_sent)
		return;
	rt_fwd_release_main(f);
	int engine_status = status;
	const char *code = refusal_code(&status);
	f->final_sent = true;
	f->status = status;
	rt_send_dispatch_errorf(f->req, f->route, w.id, sy_mono_ns() - f->t_start, status, code,
				"the prefill worker refused the request (%d): %s", engine_status, msg);
}

static void prefill_on_timeout(h2o_timeout_entry_t *e)
{
	struct prefill *p = H2O_STRUCT_FROM_MEMBER(struct prefill, timer, e);
	prefill_failed(p, rt_exchange_timed_out, PD_STAGE_PREFILL);
}

static void prefill_on_connect(struct rt_exchange *x, const char *err)
{
	struct prefill *p = x->data;
	if (err != NULL) {
		prefill_failed(p, err, PD_STAGE_PREFILL_CONNECT);
		return;
	}
	p->connected = true;
	if (p->f != NULL)
		maybe_send(p->f);
}

static void prefill_on_head(struct rt_exchange *x, const char *err, int status,
			    const h2o_header_t *headers, size_t n, bool eos)
{
	(void)headers, (void)n;
	struct prefill *p = x->data;
	if (err != NULL) {
		prefill_failed(p, err, p->f && p->f->legs_sent ? PD_STAGE_PREFILL
							       : PD_STAGE_PREFILL_CONNECT);
		return;
	}
	p->status = status;
	rt_stall_byte(p->w.slot, p->w.generation, sy_mono_ns());
	if (p->vllm && status >= 400 && status < 500 && status != 408 && status != 429) {
		p->relay = true;
		if (eos)
			vllm_prefill_refused(p);
		return;
	}
	if (status >= 400) {
		rt_exchange_cancel(&p->ux);
		prefill_failed(p, NULL, PD_STAGE_PREFILL);
		return;
	}
	if (eos && p->vllm)
		vllm_prefill_done(p);
	else if (eos)
		prefill_ok(p);
}

static void prefill_on_body(struct rt_exchange *x, const char *err)
{
	struct prefill *p = x->data;
	if (x->body->size > 0)
		rt_stall_byte(p->w.slot, p->w.generation, sy_mono_ns());
	if (!p->vllm) {
		h2o_buffer_consume(&x->body, x->body->size);
	} else if (x->body->size > VLLM_PREFILL_BODY_MAX) {
		rt_exchange_cancel(&p->ux);
		prefill_failed(p, "the prefill worker's answer is too large", PD_STAGE_PREFILL);
		return;
	}
	if (err == rt_exchange_eos && p->relay)
		vllm_prefill_refused(p);
	else if (err == rt_exchange_eos && p->vllm)
		vllm_prefill_done(p);
	else if (err == rt_exchange_eos)
		prefill_ok(p);
	else if (err != NULL)
		prefill_failed(p, err, PD_STAGE_PREFILL);
}

static const struct rt_exchange_cb prefill_cb = {prefill_on_connect, prefill_on_head,
						 prefill_on_body};

/* The prefill leg of f's attempt at `pu` (vllm: vLLM's protocol), attached
 * to f with its guard and timer, its exchange initialised but not started;
 * NULL when out of memory (the attempt failed then). The prefill may
 * outlive the client request: head and body are own copies. */
static struct prefill *prefill_new(struct fwd *f, struct rt_upstream *pu, uint64_t now_ns,
				   bool vllm)
{
	struct prefill *p = calloc(1, sizeof(*p));
	h2o_iovec_t phead = rt_fwd_head(f, pu, vllm ? NULL : f->sel.worker.id);
	if (p == NULL || (p->mem = malloc(phead.len + f->body.len)) == NULL) {
		free(p);
		rt_fwd_fail(f, &f->sel.prefill, false, 500, "internal_error", "out of memory");
		return NULL;
	}
	memcpy(p->mem, phead.base, phead.len);
	memcpy(p->mem + phead.len, f->body.base, f->body.len);
	p->head_len = phead.len;
	p->body_len = f->body.len;
	p->w = f->sel.prefill;
	p->vllm = vllm;
	f->sel.prefill.cb_probe = false; /* the prefill leg answers it */
	p->cb_threshold = f->gen->cfg.router.cb_threshold;
	p->f = f;
	f->pf = p;
	f->d_connected = f->legs_sent = false;
	if (rt_w.region)
		p->guard = statebus_inflight_acquire(rt_w.region, rt_w.proc_slot, p->w.slot, now_ns) ==
			   SY_OK;
	rt_w.active_requests++;
	p->timer.cb = prefill_on_timeout;
	h2o_timeout_link(rt_w.loop, &rt_w.prefill_timeout, &p->timer);
	rt_exchange_init(&p->ux, &prefill_cb, p);
	return p;
}

void rt_pd_start(struct fwd *f, uint64_t now_ns)
{
	const char *why = NULL;
	bool vllm = selection_pd_vllm(&f->sel);
	struct rt_upstream *du =
		vllm ? NULL : rt_upstream_get(rt_w.upstreams, f->sel.worker.slot, f->sel.worker.id, &why);
	if (!vllm && du == NULL) {
		rt_fwd_fail(f, &f->sel.worker, true, 502, "upstream_unreachable", why);
		return;
	}
	struct rt_upstream *pu =
		rt_upstream_get(rt_w.upstreams, f->sel.prefill.slot, f->sel.prefill.id, &why);
	if (pu == NULL) {
		rt_fwd_fail(f, &f->sel.prefill, true, 502, "upstream_unreachable", why);
		return;
	}
	struct prefill *p = prefill_new(f, pu, now_ns, vllm);
	if (p == NULL)
		return;
	if (vllm) {
		/* alone, written at once: the decode follows its answer; the
		 * decode counts the request meanwhile, as in SGLang's flow */
		rt_fwd_guard(f, now_ns);
		p->connected = true;
		rt_exchange_start(&p->ux, pu, h2o_iovec_init(p->mem, p->head_len),
				  h2o_iovec_init(p->mem + p->head_len, p->body_len),
				  &rt_w.head_timeout);
		return;
	}
	/* decode first: a failure to connect it (reported at once or later)
	 * aborts the prefill before anything was written */
	rt_fwd_open_main(f, du, now_ns, true);
	if (f->pf != p)
		return; /* failed already */
	rt_exchange_connect(&p->ux, pu, h2o_iovec_init(p->mem, p->head_len),
			    h2o_iovec_init(p->mem + p->head_len, p->body_len), &rt_w.head_timeout,
			    false);
}

void rt_pd_decode_connected(struct fwd *f)
{
	f->d_connected = true;
	maybe_send(f);
}

void rt_pd_decode_failed(struct fwd *f, enum pd_stage stage, const char *why)
{
	log_failure(f, stage, why);
	rt_pd_abort(f);
}

void rt_pd_detach(struct fwd *f)
{
	struct prefill *p = f->pf;
	if (p == NULL)
		return;
	f->pf = NULL;
	p->f = NULL;
}

void rt_pd_abort(struct fwd *f)
{
	struct prefill *p = f->pf;
	if (p == NULL)
		return;
	f->pf = NULL;
	p->f = NULL;
	if (p->ux.active)
		rt_metrics_worker(rt_w.metrics, rt_w.index, p->w.slot, RT_OUT_CANCELLED);
	prefill_free(p);
}
