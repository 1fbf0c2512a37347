/* auth.c — bearer keys of the routes (auth.h). */
#include "router/http/auth.h"

#include <string.h>

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "router/http/response.h"

const char *rt_auth_key(const struct sy_config_router *cfg, enum route route)
{
	switch (route) {
	case ROUTE_CHAT_COMPLETIONS:
	case ROUTE_COMPLETIONS:
	case ROUTE_GENERATE:
	case ROUTE_EMBEDDINGS:
	case ROUTE_RERANK:
	case ROUTE_RESPONSES:
	case ROUTE_MESSAGES:
	case ROUTE_MODELS:
	case ROUTE_TOKENIZE:
	case ROUTE_DETOKENIZE:
		return cfg->api_key;
	case ROUTE_FLUSH_CACHE:
	case ROUTE_LOADS:
		return cfg->admin_api_key != NULL ? cfg->admin_api_key : cfg->api_key;
	case ROUTE_WORKERS:
	case ROUTE_LIST_WORKERS:
	case ROUTE_ADD_WORKER:
	case ROUTE_REMOVE_WORKER:
		return cfg->admin_api_key;
	default:
		return NULL;
	}
}

bool rt_auth_bearer_is(h2o_req_t *req, const char *key)
{
	ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_AUTHORIZATION, -1);
	if (i < 0)
		return false;
	h2o_iovec_t v = req->headers.entries[i].value;
	size_t kl = strlen(key);
	if (v.len < 7 || !h2o_lcstris(v.base, 7, H2O_STRLIT("bearer ")))
		return false;
	/* The length is no secret; the bytes are compared in constant time. */
	return v.len - 7 == kl && CRYPTO_memcmp(v.base + 7, key, kl) == 0;
}

bool rt_auth_refused(h2o_req_t *req, enum route route, const struct sy_config_router *cfg)
{
	const char *key = rt_auth_key(cfg, route);
	if (key == NULL || rt_auth_bearer_is(req, key))
		return false;
	h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_WWW_AUTHENTICATE, NULL,
		       H2O_STRLIT("Bearer"));
	rt_send_errorf(req, route, 401, "unauthorized",
		       "missing or wrong bearer token (Authorization: Bearer <%s>)",
		       key == cfg->admin_api_key ? "admin key" : "API key");
	return true;
}

size_t rt_auth_identity(h2o_req_t *req, char *out, size_t cap)
{
	ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_AUTHORIZATION, -1);
	h2o_iovec_t v = i >= 0 ? req->headers.entries[i].value : h2o_iovec_init(NULL, 0);
	if (v.len <= 7 || !h2o_lcstris(v.base, 7, H2O_STRLIT("bearer ")) || cap < 13) {
		size_t n = cap > 9 ? 9 : cap - 1;
		memcpy(out, "anonymous", n);
		out[n] = '\0';
		return n;
	}
	unsigned char md[SHA256_DIGEST_LENGTH];
	SHA256((const unsigned char *)v.base + 7, v.len - 7, md);
	static const char hex[] = "0123456789abcdef";
	memcpy(out, "key-", 4);
	for (int k = 0; k < 4; k++) {
		out[4 + 2 * k] = hex[md[k] >> 4];
		out[5 + 2 * k] = hex[md[k] & 15];
	}
	out[12] = '\0';
	return 12;
}
