/* route.c — route names and the path → route table (route.h). */
#include "router/core/route.h"

#include <string.h>

static bool path_is(const char *p, size_t len, const char *s)
{
	return strlen(s) == len && memcmp(p, s, len) == 0;
}

const char *route_name(enum route r)
{
	static const char *const names[ROUTE_COUNT_] = {
		"/v1/chat/completions", "/v1/completions", "/generate", "/v1/embeddings",
		"/v1/rerank", "/v1/responses", "/v1/messages", "/health", "/readyz",
		"/v1/models", "/metrics", "/flush_cache", "/workers", "/v1/tokenize",
		"/v1/detokenize", "/liveness", "/readiness", "/health_generate",
		"/get_server_info", "/get_model_info", "/get_loads", "/list_workers",
		"/add_worker", "/remove_worker", "other"};
	return (unsigned)r < ROUTE_COUNT_ ? names[r] : "other";
}

enum route route_lookup(const char *p, size_t len, const char **method)
{
	/* Drop a query string for matching. */
	for (size_t i = 0; i < len; i++)
		if (p[i] == '?')
			len = i;
	if (len > 1 && p[len - 1] == '/')
		len--;

	static const struct {
		const char *path;
		enum route route;
		const char *method;
	} table[] = {
		{"/v1/chat/completions", ROUTE_CHAT_COMPLETIONS, "POST"},
		{"/v1/completions", ROUTE_COMPLETIONS, "POST"},
		{"/generate", ROUTE_GENERATE, "POST"},
		{"/v1/embeddings", ROUTE_EMBEDDINGS, "POST"},
		{"/v1/rerank", ROUTE_RERANK, "POST"},
		{"/rerank", ROUTE_RERANK, "POST"},
		{"/v1/responses", ROUTE_RESPONSES, "POST"},
		{"/v1/messages", ROUTE_MESSAGES, "POST"},
		{"/health", ROUTE_HEALTH, "GET"},
		{"/healthz", ROUTE_HEALTH, "GET"},
		{"/readyz", ROUTE_READYZ, "GET"},
		{"/v1/models", ROUTE_MODELS, "GET"},
		{"/metrics", ROUTE_METRICS, "GET"},
		{"/flush_cache", ROUTE_FLUSH_CACHE, "POST"},
		{"/workers", ROUTE_WORKERS, NULL},
		{"/v1/tokenize", ROUTE_TOKENIZE, "POST"},
		{"/v1/detokenize", ROUTE_DETOKENIZE, "POST"},
		{"/liveness", ROUTE_LIVENESS, "GET"},
		{"/readiness", ROUTE_READINESS, "GET"},
		{"/health_generate", ROUTE_HEALTH_GENERATE, "GET"},
		{"/get_server_info", ROUTE_SERVER_INFO, "GET"},
		{"/server_info", ROUTE_SERVER_INFO, "GET"},
		{"/get_model_info", ROUTE_MODEL_INFO, "GET"},
		{"/model_info", ROUTE_MODEL_INFO, "GET"},
		{"/get_loads", ROUTE_LOADS, "GET"},
		{"/v1/loads", ROUTE_LOADS, "GET"},
		{"/list_workers", ROUTE_LIST_WORKERS, "GET"},
		{"/add_worker", ROUTE_ADD_WORKER, "POST"},
		{"/remove_worker", ROUTE_REMOVE_WORKER, "POST"},
	};
	*method = NULL;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (path_is(p, len, table[i].path)) {
			*method = table[i].method;
			return table[i].route;
		}
	if (len > 9 && memcmp(p, "/workers/", 9) == 0)
		return ROUTE_WORKERS;
	return ROUTE_OTHER;
}
