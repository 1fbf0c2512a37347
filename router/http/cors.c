/* cors.c — CORS for --cors-allowed-origins (SGLang router's CORS layer).
 *
 * With router.cors_allowed_origins set, a request whose Origin is listed
 * (or any Origin when "*" is listed) gets Access-Control-Allow-Origin (the
 * origin, or "*"), Access-Control-Expose-Headers and Vary: Origin on its
 * response — added by an output filter, so every response carries them,
 * proxied or written by the router. A preflight (OPTIONS with Origin and
 * Access-Control-Request-Method) is answered here: 204 with the allowed
 * methods and the requested headers for a listed origin, 403 otherwise.
 * Without the setting nothing changes (OPTIONS gets 405).
 */
#include <string.h>

#include "router/core/generation.h"
#include "router/http/response.h"
#include "router/http/routes.h"

/* The allowed value for `origin`, or NULL. */
static const char *allowed(h2o_iovec_t origin)
{
	const struct sy_config_router *rc = &rt_w.gen->cfg.router;
	for (size_t i = 0; i < rc->n_cors_allowed_origins; i++) {
		const char *o = rc->cors_allowed_origins[i];
		if (strcmp(o, "*") == 0)
			return "*";
		if (strlen(o) == origin.len && h2o_lcstris(origin.base, origin.len, o, origin.len))
			return o;
	}
	return NULL;
}

static h2o_iovec_t origin_of(h2o_req_t *req)
{
	ssize_t i = h2o_find_header_by_str(&req->headers, H2O_STRLIT("origin"), -1);
	return i < 0 ? h2o_iovec_init(NULL, 0) : req->headers.entries[i].value;
}

static void add_allow(h2o_req_t *req, h2o_iovec_t origin, const char *value)
{
	h2o_mem_pool_t *p = &req->pool;
	h2o_headers_t *h = &req->res.headers;
	if (strcmp(value, "*") == 0)
		h2o_add_header(p, h, H2O_TOKEN_ACCESS_CONTROL_ALLOW_ORIGIN, NULL, H2O_STRLIT("*"));
	else
		h2o_add_header(p, h, H2O_TOKEN_ACCESS_CONTROL_ALLOW_ORIGIN, NULL, origin.base,
			       origin.len);
	h2o_add_header(p, h, H2O_TOKEN_VARY, NULL, H2O_STRLIT("Origin"));
}

static void cors_on_setup(h2o_filter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
	(void)self;
	h2o_iovec_t origin = origin_of(req);
	const char *v;
	if (rt_w.gen != NULL && rt_w.gen->cfg.router.n_cors_allowed_origins > 0 &&
	    origin.base != NULL && (v = allowed(origin)) != NULL &&
	    h2o_find_header(&req->res.headers, H2O_TOKEN_ACCESS_CONTROL_ALLOW_ORIGIN, -1) < 0) {
		add_allow(req, origin, v);
		h2o_add_header_by_str(&req->pool, &req->res.headers,
				      H2O_STRLIT("access-control-expose-headers"), 0, NULL,
				      H2O_STRLIT("*"));
	}
	h2o_setup_next_ostream(req, slot);
}

void rt_cors_install(h2o_pathconf_t *pc)
{
	h2o_filter_t *f = h2o_create_filter(pc, sizeof(*f));
	f->on_setup_ostream = cors_on_setup;
}

bool rt_cors_preflight(h2o_req_t *req, enum route route)
{
	if (rt_w.gen->cfg.router.n_cors_allowed_origins == 0 ||
	    !h2o_memis(req->method.base, req->method.len, H2O_STRLIT("OPTIONS")))
		return false;
	h2o_iovec_t origin = origin_of(req);
	ssize_t m = h2o_find_header_by_str(&req->headers,
					   H2O_STRLIT("access-control-request-method"), -1);
	if (origin.base == NULL || m < 0)
		return false;
	const char *v = allowed(origin);
	if (v == NULL) {
		rt_send_errorf(req, route, 403, "forbidden", "origin not allowed (--cors-allowed-origins)");
		return true;
	}
	add_allow(req, origin, v);
	h2o_mem_pool_t *p = &req->pool;
	h2o_headers_t *h = &req->res.headers;
	h2o_add_header_by_str(p, h, H2O_STRLIT("access-control-allow-methods"), 0, NULL,
			      H2O_STRLIT("GET, POST, PUT, DELETE, OPTIONS"));
	ssize_t rh = h2o_find_header_by_str(&req->headers,
					    H2O_STRLIT("access-control-request-headers"), -1);
	if (rh >= 0)
		h2o_add_header_by_str(p, h, H2O_STRLIT("access-control-allow-headers"), 0, NULL,
				      req->headers.entries[rh].value.base,
				      req->headers.entries[rh].value.len);
	h2o_add_header_by_str(p, h, H2O_STRLIT("access-control-max-age"), 0, NULL,
			      H2O_STRLIT("3600"));
	rt_send_body(req, route, 204, NULL, "", 0);
	return true;
}
