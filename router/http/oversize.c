/* oversize.c — every oversize request body gets the router's JSON 413.
 *
 * h2o reads a request body before any handler runs and refuses one over
 * `max_request_entity_size` itself (a Content-Length over it at once, a
 * chunked body as soon as it grows past it) with a plain-text 413 through
 * h2o_send_error_generic(). That response still passes through the output
 * filters of the path it is attached to — the host's fallback path, or the
 * matched path — so a filter on both rewrites it: JSON error body,
 * `x-router-error-code: payload_too_large`, `x-request-id`, counted in the
 * metrics and the access log. Our own 413s (http/infer.c) already carry
 * x-router-error-code and pass unchanged. h2o still closes the connection
 * after its 413 (the rest of the body is never read). HTTP/2 is out of
 * reach: h2o 2.2 resets such a stream (REFUSED_STREAM) without a response;
 * worker.c sets h2o's limit to twice the router's so that this only
 * happens past 2× the limit.
 */
#include <stdio.h>
#include <string.h>

#include "router/http/response.h"
#include "router/http/access_log.h"
#include "router/core/buf.h"
#include "router/http/error_body.h"
#include "router/http/metrics.h"
#include "router/worker.h"
#include "router/core/generation.h"

/* Output stream that replaces whatever body h2o sends with `body`. */
struct oversize_ostream {
	h2o_ostream_t super;
	h2o_iovec_t body;
	bool sent;
};

static void oversize_do_send(h2o_ostream_t *self, h2o_req_t *req, h2o_iovec_t *bufs,
			     size_t bufcnt, h2o_send_state_t state)
{
	struct oversize_ostream *o = (struct oversize_ostream *)self;
	(void)bufs;
	(void)bufcnt;
	if (!o->sent && !h2o_send_state_is_in_progress(state)) {
		o->sent = true;
		h2o_ostream_send_next(&o->super, req, &o->body, 1, state);
		return;
	}
	h2o_ostream_send_next(&o->super, req, NULL, 0, state);
}

static void oversize_on_setup(h2o_filter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
	(void)self;
	if (req->res.status != 413 ||
	    h2o_find_header_by_str(&req->res.headers, H2O_STRLIT("x-router-error-code"), -1) >= 0) {
		h2o_setup_next_ostream(req, slot);
		return;
	}
	unsigned long long limit = rt_w.gen ? (unsigned long long)rt_w.gen->cfg.router.max_body_bytes : 0;
	struct router_error e;
	router_error_clear(&e);
	router_error_set(&e, 413, "payload_too_large", -1,
			 "request body exceeds the limit of %llu bytes", limit);
	struct rt_buf b = {0};
	rt_error_body(&b, &e);
	h2o_iovec_t body = b.oom ? h2o_iovec_init(H2O_STRLIT("{}\n"))
				 : h2o_strdup(&req->pool, b.p, b.n);
	rt_buf_free(&b);

	const char *method = NULL;
	h2o_iovec_t path = req->path_normalized.base ? req->path_normalized : req->input.path;
	enum route route = route_lookup(path.base, path.len, &method);
	rt_metrics_request(rt_w.metrics, rt_w.index, route);
	rt_metrics_response(rt_w.metrics, rt_w.index, route, 413);
	h2o_iovec_t id = rt_request_id(req);
	memset(&req->res.headers, 0, sizeof(req->res.headers));
	req->res.reason = rt_reason(413);
	req->res.content_length = body.len;
	h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
		       H2O_STRLIT("application/json"));
	h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-router-error-code"), 0,
			      NULL, H2O_STRLIT("payload_too_large"));
	h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-request-id"), 0, NULL,
			      id.base, id.len);
	rt_access_log(req, route, 413, NULL, 0, body.len);

	struct oversize_ostream *o =
		(struct oversize_ostream *)h2o_add_ostream(req, sizeof(*o), slot);
	o->super.do_send = oversize_do_send;
	o->body = body;
	o->sent = false;
	h2o_setup_next_ostream(req, &o->super.next);
}

void rt_oversize_install(h2o_hostconf_t *hc, h2o_pathconf_t *pc)
{
	h2o_filter_t *f = h2o_create_filter(pc, sizeof(*f));
	f->on_setup_ostream = oversize_on_setup;
	f = h2o_create_filter(&hc->fallback_path, sizeof(*f));
	f->on_setup_ostream = oversize_on_setup;
}
