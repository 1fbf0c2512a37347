/* oversize.c — the router's JSON error in place of h2o's own error
 * responses: an oversize body (413), a request the edge refused while h2o
 * read it (edge.h: the verdict's status, code and Retry-After), any other
 * 400 h2o sends by itself.
 *
 * h2o reads a request body before any handler runs. Over HTTP/1 the edge
 * judges the head and every chunk as h2o parses them; a refusal makes h2o
 * send a plain-text 400 through h2o_send_error_generic() and close the
 * connection without reading the body. Over HTTP/2 h2o refuses a body past
 * its own max_request_entity_size (twice the router's limit, worker.c)
 * by resetting the stream (REFUSED_STREAM, no response possible); bodies
 * up to there reach http/infer.c, which answers 413 itself. h2o's error
 * responses still pass through the output filters of the path they are
 * attached to — the host's fallback path, or the matched path — so a
 * filter on both rewrites them: JSON error body, x-router-error-code,
 * x-request-id, Retry-After for a 503, counted in the metrics and the
 * access log. Responses that carry x-router-error-code (the router's own
 * errors) or x-request-id (the router's errors and an engine's answer as
 * dispatch/forward.c relays it, e.g. an engine's 400) pass unchanged: h2o's
 * own error responses carry neither.
 */
#include <stdio.h>
#include <string.h>

#include "router/http/response.h"
#include "router/http/access_log.h"
#include "router/core/buf.h"
#include "router/http/edge.h"
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
	struct rt_edge_verdict v;
	if (req->res.status < 400 ||
	    h2o_find_header_by_str(&req->res.headers, H2O_STRLIT("x-router-error-code"), -1) >= 0 ||
	    h2o_find_header_by_str(&req->res.headers, H2O_STRLIT("x-request-id"), -1) >= 0) {
		h2o_setup_next_ostream(req, slot);
		return;
	}
	if (!rt_edge_take_verdict(req, &v)) {
		unsigned long long limit = rt_w.gen ? (unsigned long long)rt_w.gen->cfg.router.max_body_bytes : 0;
		if (req->res.status == 413)
			rt_edge_verdict_set(&v, 413, "payload_too_large", 0,
					    "request body exceeds the limit of %llu bytes", limit);
		else if (req->res.status == 400)
			rt_edge_verdict_set(&v, 400, "bad_request", 0, "malformed HTTP request");
		else {
			h2o_setup_next_ostream(req, slot);
			return;
		}
	}
	struct router_error e;
	router_error_clear(&e);
	router_error_set(&e, v.status, v.code, -1, "%s", v.message);
	struct rt_buf b = {0};
	rt_error_body(&b, &e);
	h2o_iovec_t body = b.oom ? h2o_iovec_init(H2O_STRLIT("{}\n"))
				 : h2o_strdup(&req->pool, b.p, b.n);
	rt_buf_free(&b);

	const char *method = NULL;
	h2o_iovec_t path = req->path_normalized.base ? req->path_normalized : req->input.path;
	enum route route = route_lookup(path.base, path.len, &method);
	rt_metrics_request(rt_w.metrics, rt_w.index, route);
	rt_metrics_response(rt_w.metrics, rt_w.index, route, v.status);
	h2o_iovec_t id = rt_request_id(req);
	memset(&req->res.headers, 0, sizeof(req->res.headers));
	req->res.status = v.status;
	req->res.reason = rt_reason(v.status);
	req->res.content_length = body.len;
	h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
		       H2O_STRLIT("application/json"));
	h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-router-error-code"), 0,
			      NULL, v.code, strlen(v.code));
	h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-request-id"), 0, NULL,
			      id.base, id.len);
	if (v.retry_after > 0) {
		char ra[16];
		int n = snprintf(ra, sizeof(ra), "%u", v.retry_after);
		h2o_iovec_t rav = h2o_strdup(&req->pool, ra, (size_t)n);
		h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL, rav.base,
			       rav.len);
	}
	rt_access_log(req, route, v.status, NULL, 0, body.len);

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
