/* routes.h — the router's HTTP routes (DESIGN.md §9 "Routes",
 * reference/policy-defaults.md §7). Each takes the h2o request after the
 * method check in worker.c and returns 0 (handled). */
#ifndef SY_ROUTER_ROUTES_H
#define SY_ROUTER_ROUTES_H

#include <h2o.h>

#include "router/worker.h"

/* POST /v1/chat/completions, /v1/completions, /generate, /v1/embeddings,
 * /v1/rerank, /v1/responses, /v1/messages (infer.c). */
int rt_route_infer(h2o_req_t *req, enum route route);

/* GET /health, /healthz: liveness, "ok" (health.c). */
int rt_route_health(h2o_req_t *req);
/* GET /readyz: 200 while at least one model can get a complete selection
 * (router/core/readiness.h); else 503 with the selection's error code
 * (no_healthy_workers, no_prefill_workers_available,
 * no_decode_workers_available) and a message naming model, bucket and what
 * is missing; 503 draining once SIGTERM arrived. */
int rt_route_readyz(h2o_req_t *req);
/* GET /v1/models: OpenAI model list of the served models. */
int rt_route_models(h2o_req_t *req);
/* GET /metrics: Prometheus text, all router processes summed. */
int rt_route_metrics(h2o_req_t *req);

/* POST /flush_cache: fan-out to every worker (admin.c). */
int rt_route_flush_cache(h2o_req_t *req);
/* GET/POST/PUT/DELETE /workers[/ID]: admin API (404 without
 * --admin-api-key; the bearer is checked before the route, auth.h). */
int rt_route_workers(h2o_req_t *req, h2o_iovec_t path);
/* GET /list_workers, POST /add_worker?url=, /remove_worker?url= (the old
 * SGLang router's worker routes; admin.c, behind --admin-api-key). */
int rt_route_list_workers(h2o_req_t *req);
int rt_route_add_worker(h2o_req_t *req);
int rt_route_remove_worker(h2o_req_t *req);

/* SGLang router routes (sglang.c): GET /liveness ("OK"), /readiness
 * ({"status","healthy_workers","total_workers"}), /get_loads ({"loads",
 * "total_workers","successful","failed"}); /get_server_info,
 * /get_model_info, /health_generate answered by the first healthy worker. */
int rt_route_liveness(h2o_req_t *req);
int rt_route_readiness(h2o_req_t *req);
int rt_route_loads(h2o_req_t *req);
int rt_route_worker_get(h2o_req_t *req, enum route route);

/* POST /v1/tokenize, /v1/detokenize with the generation's tokenizer
 * (tokenize.c). */
int rt_route_tokenize(h2o_req_t *req, enum route route);

/* CORS (cors.c): the output filter that adds the allow headers for a
 * listed Origin, installed on path `pc`; and the preflight answer: true
 * when `req` was a CORS preflight and has been answered. */
void rt_cors_install(h2o_pathconf_t *pc);
bool rt_cors_preflight(h2o_req_t *req, enum route route);

#endif
