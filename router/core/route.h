/* route.h — the router's routes: one enum for the whole router (request
 * preparation, handlers, metrics labels, access log) and the path → route
 * table. No h2o. The first seven are the inference routes request
 * preparation reads (router/core/prepare.h); the first three generate
 * (they take PD buckets, the sampling override and input ids). */
#ifndef SY_ROUTER_CORE_ROUTE_H
#define SY_ROUTER_CORE_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

enum route {
	ROUTE_CHAT_COMPLETIONS = 0, /* POST /v1/chat/completions */
	ROUTE_COMPLETIONS,          /* POST /v1/completions */
	ROUTE_GENERATE,             /* POST /generate (SGLang native) */
	ROUTE_EMBEDDINGS,           /* POST /v1/embeddings */
	ROUTE_RERANK,               /* POST /v1/rerank, /rerank */
	ROUTE_RESPONSES,            /* POST /v1/responses (OpenAI Responses API) */
	ROUTE_MESSAGES,             /* POST /v1/messages (Anthropic Messages API) */
	ROUTE_HEALTH,               /* GET /health, /healthz */
	ROUTE_READYZ,               /* GET /readyz */
	ROUTE_MODELS,               /* GET /v1/models */
	ROUTE_METRICS,              /* GET /metrics */
	ROUTE_FLUSH_CACHE,          /* POST /flush_cache */
	ROUTE_WORKERS,              /* GET/POST/DELETE /workers (admin) */
	ROUTE_TOKENIZE,             /* POST /v1/tokenize */
	ROUTE_DETOKENIZE,           /* POST /v1/detokenize */
	/* SGLang router routes (router/http/sglang.c) */
	ROUTE_LIVENESS,             /* GET /liveness */
	ROUTE_READINESS,            /* GET /readiness */
	ROUTE_HEALTH_GENERATE,      /* GET /health_generate (a worker's) */
	ROUTE_SERVER_INFO,          /* GET /get_server_info, /server_info (a worker's) */
	ROUTE_MODEL_INFO,           /* GET /get_model_info, /model_info (a worker's) */
	ROUTE_LOADS,                /* GET /get_loads, /v1/loads */
	ROUTE_LIST_WORKERS,         /* GET /list_workers (admin) */
	ROUTE_ADD_WORKER,           /* POST /add_worker?url= (admin) */
	ROUTE_REMOVE_WORKER,        /* POST /remove_worker?url= (admin) */
	ROUTE_OTHER,                /* anything else (404) */
	ROUTE_COUNT_
};

/* Whether `r` is an inference route (prepared and dispatched). */
static inline bool route_is_inference(enum route r) { return r <= ROUTE_MESSAGES; }

/* Whether `r` generates text: PD buckets, the sampling override and input
 * ids forwarding apply to it. */
static inline bool route_generates(enum route r) { return r <= ROUTE_GENERATE; }

/* The route's path and metrics label ("/v1/chat/completions", ...,
 * "other"). Never NULL; static. */
const char *route_name(enum route r);

/* The route of request path `path` (`len` bytes; query string and one
 * trailing '/' ignored); *method is the one method it takes ("GET",
 * "POST"), or NULL when several or none apply (/workers, unknown routes). */
enum route route_lookup(const char *path, size_t len, const char **method);

#endif
