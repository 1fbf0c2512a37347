/* input_ids.c — appends the router's token ids to a chat body (input_ids.h).
 * One pass: the body up to its closing '}', then the member, then '}' and
 * whatever trailing whitespace followed. No DOM, no re-serialisation. */
#include "router/dispatch/input_ids.h"

#include <stdbool.h>
#include <string.h>

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Decimal digits of v into p (no NUL); returns the count. */
static size_t put_u32(char *p, uint32_t v)
{
	char tmp[10];
	size_t n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	for (size_t i = 0; i < n; i++)
		p[i] = tmp[n - 1 - i];
	return n;
}

int rt_input_ids_body(h2o_mem_pool_t *pool, h2o_iovec_t body, const uint32_t *ids, size_t n,
		      h2o_iovec_t *out)
{
	size_t close = body.len;
	while (close > 0 && is_ws(body.base[close - 1]))
		close--;
	if (close == 0 || body.base[close - 1] != '}')
		return -1;
	close--; /* at '}' */
	size_t last = close; /* last non-space byte before '}' */
	while (last > 0 && is_ws(body.base[last - 1]))
		last--;
	if (last == 0)
		return -1;
	bool empty = body.base[last - 1] == '{';

	/* ",\"input_ids\":[" + up to 10 digits and a comma per id + "]" */
	static const char key[] = "\"input_ids\":[";
	size_t cap = body.len + 1 + sizeof(key) + 1 + n * 11;
	char *p = h2o_mem_alloc_pool(pool, cap);
	size_t w = 0;
	memcpy(p, body.base, close);
	w = close;
	if (!empty)
		p[w++] = ',';
	memcpy(p + w, key, sizeof(key) - 1);
	w += sizeof(key) - 1;
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			p[w++] = ',';
		w += put_u32(p + w, ids[i]);
	}
	p[w++] = ']';
	memcpy(p + w, body.base + close, body.len - close); /* '}' and trailing space */
	w += body.len - close;
	*out = h2o_iovec_init(p, w);
	return 0;
}
