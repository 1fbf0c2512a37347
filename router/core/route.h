/* route.h — the router's routes: one enum for the whole router (request
 * preparation, handlers, metrics labels, access log) and the path → route
 * table. No h2o. The first three are the inference routes request
 * preparation reads (router/core/prepare.h). */
#ifndef SY_ROUTER_CORE_ROUTE_H
#define SY_ROUTER_CORE_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

enum route {
	ROUTE_CHAT_COMPLETIONS = 0, /* POST /v1/chat/completions */
	ROUTE_COMPLETIONS,          /* POST /v1/completions */
	ROUTE_GENERATE,             /* POST /generate (SGLang native) */
	ROUTE_HEALTH,               /* GET /health, /healthz */
	ROUTE_READYZ,               /* GET /readyz */
	ROUTE_MODELS,               /* GET /v1/models */
	ROUTE_METRICS,              /* GET /metrics */
	ROUTE_FLUSH_CACHE,          /* POST /flush_cache */
	ROUTE_WORKERS,              /* GET/POST/DELETE /workers (admin) */
	ROUTE_TOKENIZE,             /* POST /v1/tokenize */
	ROUTE_DETOKENIZE,           /* POST /v1/detokenize */
	ROUTE_OTHER,                /* anything else (404) */
	ROUTE_COUNT_
};

/* Whether `r` is an inference route (prepared and dispatched). */
static inline bool route_is_inference(enum route r) { return r <= ROUTE_GENERATE; }

/* The route's path and metrics label ("/v1/chat/completions", ...,
 * "other"). Never NULL; static. */
const char *route_name(enum route r);

/* The route of request path `path` (`len` bytes; query string and one
 * trailing '/' ignored); *method is the one method it takes ("GET",
 * "POST"), or NULL when several or none apply (/workers, unknown routes). */
enum route route_lookup(const char *path, size_t len, const char **method);

#endif
