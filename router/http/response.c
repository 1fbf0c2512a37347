/* response.c — the router's own responses (response.h). */
#include "router/http/response.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "router/core/buf.h"
#include "router/http/error_body.h"
#include "router/http/access_log.h"
#include "router/http/metrics.h"
#include "router/worker.h"

const char *rt_reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 204: return "No Content";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 413: return "Payload Too Large";
	case 429: return "Too Many Requests";
	case 499: return "Client Closed Request";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return status < 400 ? "OK" : "Error";
	}
}

int rt_send_body(h2o_req_t *req, enum route route, int status, const char *ctype,
		 const char *body, size_t len)
{
	req->res.status = status;
	req->res.reason = rt_reason(status);
	if (ctype != NULL)
		h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, ctype,
			       strlen(ctype));
	h2o_iovec_t id = rt_request_id(req);
	h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-request-id"), 0, NULL,
			      id.base, id.len);
	rt_metrics_response(rt_w.metrics, rt_w.index, route, status);
	h2o_iovec_t copy = h2o_strdup(&req->pool, body, len);
	h2o_send_inline(req, copy.base, copy.len);
	return 0;
}

int rt_send_error(h2o_req_t *req, enum route route, const struct router_error *e)
{
	return rt_send_error_at(req, route, e, NULL, 0);
}

int rt_send_error_at(h2o_req_t *req, enum route route, const struct router_error *e,
		     const char *worker, uint64_t duration_ns)
{
	const char *code = e->code != NULL ? e->code : "internal_error";
	int status = e->status != 0 ? e->status : 500;
	if (rt_error_code_status(code) != status)
		sy_warn("error code %s sent with status %d (the code table says %d)", code, status,
			rt_error_code_status(code));
	struct rt_buf b = {0};
	rt_error_body(&b, e);
	h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-router-error-code"), 0,
			      NULL, code, strlen(code));
	if (b.oom) {
		static const char oom[] = "{\"error\":{\"type\":\"server_error\",\"code\":"
					  "\"internal_error\",\"message\":\"out of memory\"}}\n";
		rt_send_body(req, route, 500, "application/json", oom, sizeof(oom) - 1);
	} else {
		rt_send_body(req, route, status, "application/json", b.p, b.n);
	}
	rt_access_log(req, route, status, worker, duration_ns, b.n);
	rt_buf_free(&b);
	return 0;
}

int rt_send_errorf(h2o_req_t *req, enum route route, int status, const char *code,
		   const char *fmt, ...)
{
	struct router_error e;
	router_error_clear(&e);
	e.status = status;
	e.code = code;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e.message, sizeof(e.message), fmt, ap);
	va_end(ap);
	return rt_send_error(req, route, &e);
}

int rt_send_json(h2o_req_t *req, enum route route, struct rt_buf *b)
{
	if (b->oom) {
		rt_buf_free(b);
		return rt_send_errorf(req, route, 500, "internal_error", "out of memory");
	}
	int rc = rt_send_body(req, route, 200, "application/json", b->p, b->n);
	rt_buf_free(b);
	return rc;
}

bool rt_body_refused(h2o_req_t *req, enum route route, uint64_t max_body_bytes)
{
	h2o_iovec_t body = req->entity;
	if (body.base == NULL || body.len == 0) {
		rt_send_errorf(req, route, 400, "bad_request", "a JSON request body is required");
		return true;
	}
	if (body.len > max_body_bytes) {
		rt_send_errorf(req, route, 413, "payload_too_large",
			       "request body of %zu bytes exceeds the limit of %llu bytes", body.len,
			       (unsigned long long)max_body_bytes);
		return true;
	}
	return false;
}

int rt_send_dispatch_errorf(h2o_req_t *req, enum route route, const char *worker,
			    uint64_t duration_ns, int status, const char *code, const char *fmt, ...)
{
	struct router_error e;
	router_error_clear(&e);
	e.status = status;
	e.code = code;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e.message, sizeof(e.message), fmt, ap);
	va_end(ap);
	return rt_send_error_at(req, route, &e, worker, duration_ns);
}
