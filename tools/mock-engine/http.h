/* http.h — the mock engine's HTTP side: one h2o handler on "/" that
 * dispatches by method and path to the inference routes (routes_infer.c)
 * and the info/admin routes (routes_admin.c).
 */
#ifndef SY_MOCK_HTTP_H
#define SY_MOCK_HTTP_H

#include "tools/mock-engine/engine.h"

/* Configures h2o and listens on host:port (HTTP/1.1). Returns 0 or SY_EIO. */
int mock_http_start(struct mock_engine *e, const char *host, int port);

/* Stops listening (the listener socket is closed; run the loop once more
 * to let h2o free it). */
void mock_http_stop(void);

/* Sends `body` (may be NULL: empty) with `status` and content type. */
void http_reply(h2o_req_t *req, int status, const char *ctype, const struct sbuf *body);

/* Sends an OpenAI-style JSON error. */
void http_error(h2o_req_t *req, int status, const char *type, const char *msg);

/* Value of query parameter `name` of the request (borrowed, not
 * NUL-terminated), or {NULL, 0}. */
h2o_iovec_t http_query_param(h2o_req_t *req, const char *name);

/* Routes; each returns 0 after responding. */
int route_infer(struct mock_engine *e, h2o_req_t *req, enum mreq_kind kind);
int route_admin(struct mock_engine *e, h2o_req_t *req, bool *handled);

#endif
