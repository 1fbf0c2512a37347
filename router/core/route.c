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
		"/v1/chat/completions", "/v1/completions", "/generate", "/health", "/readyz",
		"/v1/models", "/metrics", "/flush_cache", "/workers", "/v1/tokenize",
		"/v1/detokenize", "other"};
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
		{"/health", ROUTE_HEALTH, "GET"},
		{"/healthz", ROUTE_HEALTH, "GET"},
		{"/readyz", ROUTE_READYZ, "GET"},
		{"/v1/models", ROUTE_MODELS, "GET"},
		{"/metrics", ROUTE_METRICS, "GET"},
		{"/flush_cache", ROUTE_FLUSH_CACHE, "POST"},
		{"/workers", ROUTE_WORKERS, NULL},
		{"/v1/tokenize", ROUTE_TOKENIZE, "POST"},
		{"/v1/detokenize", ROUTE_DETOKENIZE, "POST"},
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
