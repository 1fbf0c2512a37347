/* route_table.c — route names and the path → route table (no h2o state:
 * shared by the handler, the oversize filter, metrics and the unit tests). */
#include <string.h>

#include "router/worker.h"

static bool path_is(h2o_iovec_t p, const char *s) { return h2o_memis(p.base, p.len, s, strlen(s)); }

const char *rt_route_name(enum rt_route r)
{
	static const char *const names[RT_ROUTE_COUNT_] = {
		"/v1/chat/completions", "/v1/completions", "/generate", "/health", "/readyz",
		"/v1/models", "/metrics", "/flush_cache", "/workers", "/v1/tokenize",
		"/v1/detokenize", "other"};
	return (unsigned)r < RT_ROUTE_COUNT_ ? names[r] : "other";
}

enum rt_route rt_route_lookup(h2o_iovec_t p, const char **method)
{
	/* Drop a query string for matching. */
	for (size_t i = 0; i < p.len; i++)
		if (p.base[i] == '?')
			p.len = i;
	if (p.len > 1 && p.base[p.len - 1] == '/')
		p.len--;

	static const struct {
		const char *path;
		enum rt_route route;
		const char *method;
	} table[] = {
		{"/v1/chat/completions", RT_ROUTE_CHAT, "POST"},
		{"/v1/completions", RT_ROUTE_COMPLETIONS, "POST"},
		{"/generate", RT_ROUTE_GENERATE, "POST"},
		{"/health", RT_ROUTE_HEALTH, "GET"},
		{"/healthz", RT_ROUTE_HEALTH, "GET"},
		{"/readyz", RT_ROUTE_READYZ, "GET"},
		{"/v1/models", RT_ROUTE_MODELS, "GET"},
		{"/metrics", RT_ROUTE_METRICS, "GET"},
		{"/flush_cache", RT_ROUTE_FLUSH_CACHE, "POST"},
		{"/workers", RT_ROUTE_WORKERS, NULL},
		{"/v1/tokenize", RT_ROUTE_TOKENIZE, "POST"},
		{"/v1/detokenize", RT_ROUTE_DETOKENIZE, "POST"},
	};
	*method = NULL;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (path_is(p, table[i].path)) {
			*method = table[i].method;
			return table[i].route;
		}
	if (p.len > 9 && memcmp(p.base, "/workers/", 9) == 0)
		return RT_ROUTE_WORKERS;
	return RT_ROUTE_OTHER;
}
