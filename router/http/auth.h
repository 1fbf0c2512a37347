/* auth.h — bearer keys of the routes (auth.c).
 *
 * router.api_key guards the inference and model routes (chat, completions,
 * generate, embeddings, rerank, responses, messages, models, tokenize,
 * detokenize); router.admin_api_key guards the admin routes (/workers and
 * the old router's /list_workers, /add_worker, /remove_worker, /flush_cache,
 * /get_loads: the routes that change or expose the fleet and the engines).
 * /flush_cache and /get_loads take the API key while no admin key is set.
 * /health, /healthz, /readyz, /liveness, /readiness, /metrics and the
 * engine info SGLang's router serves openly (/get_server_info,
 * /get_model_info, /health_generate) stay open. A request without
 * `Authorization: Bearer <key>` of its route gets 401 unauthorized with
 * WWW-Authenticate: Bearer. Keys are compared in constant time and never
 * logged.
 */
#ifndef SY_ROUTER_HTTP_AUTH_H
#define SY_ROUTER_HTTP_AUTH_H

#include <stdbool.h>

#include <h2o.h>

#include "common/config.h"
#include "router/core/route.h"

/* The key `route` needs under `cfg`, or NULL (open). */
const char *rt_auth_key(const struct sy_config_router *cfg, enum route route);

/* Whether `req` carries `Authorization: Bearer <key>` (scheme
 * case-insensitive). */
bool rt_auth_bearer_is(h2o_req_t *req, const char *key);

/* Checks req's key for `route`: false when it may proceed, true when it
 * was refused (401 sent). */
bool rt_auth_refused(h2o_req_t *req, enum route route, const struct sy_config_router *cfg);

/* The identity of `req`'s bearer key for the queue's tenant (never the
 * key): "key-" and the first 8 hex digits of its SHA-256, or "anonymous"
 * without one. Writes a NUL-terminated name into out (cap ≥ 13 bytes);
 * returns its length. */
size_t rt_auth_identity(h2o_req_t *req, char *out, size_t cap);

#endif
