/* pd.c — span scanner and body splicing (see pd.h).
 *
 * The scanner only skips values of a body that is already known to be valid
 * JSON: strings (with escapes), nested arrays/objects, and scalars up to the
 * next delimiter. It is bounded by the body length and never reads past it;
 * on anything unexpected it reports failure and the caller keeps the body.
 */
#include "router/dispatch/rewrite.h"

#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <stdlib.h>
#include <unistd.h>

#include "router/core/buf.h"

/* ---- scanner ------------------------------------------------------------ */

struct span {
	const char *p, *end;
};

static void ws(struct span *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

/* Skips one value; returns 0 or -1. */
static int skip_value(struct span *s)
{
	ws(s);
	if (s->p >= s->end)
		return -1;
	char c = *s->p;
	if (c == '"') {
		for (s->p++; s->p < s->end; s->p++) {
			if (*s->p == '\\') {
				s->p++;
				continue;
			}
			if (*s->p == '"') {
				s->p++;
				return 0;
			}
		}
		return -1;
	}
	if (c == '{' || c == '[') {
		int depth = 0;
		for (; s->p < s->end; s->p++) {
			char d = *s->p;
			if (d == '"') {
				if (skip_value(s) != 0)
					return -1;
				s->p--;
			} else if (d == '{' || d == '[') {
				depth++;
			} else if (d == '}' || d == ']') {
				if (--depth == 0) {
					s->p++;
					return 0;
				}
			}
		}
		return -1;
	}
	while (s->p < s->end && *s->p != ',' && *s->p != '}' && *s->p != ']' && *s->p != ' ' &&
	       *s->p != '\n' && *s->p != '\r' && *s->p != '\t')
		s->p++;
	return 0;
}

struct member {
	h2o_iovec_t key;   /* without quotes, raw (escapes not decoded) */
	h2o_iovec_t value; /* the value's bytes */
};

/* Iterator over the members of the object at `body` (any number of them).
 * member_iter_init: 0, or -1 when `body` does not start an object.
 * member_next: 1 with *m set, 0 at the closing '}', -1 when malformed. */
struct member_iter {
	struct span s;
	bool first, done;
};

static int member_iter_init(struct member_iter *it, h2o_iovec_t body)
{
	it->s = (struct span){body.base, body.base + body.len};
	it->first = true;
	it->done = false;
	ws(&it->s);
	if (it->s.p >= it->s.end || *it->s.p != '{')
		return -1;
	it->s.p++;
	ws(&it->s);
	if (it->s.p < it->s.end && *it->s.p == '}')
		it->done = true;
	return 0;
}

static int member_next(struct member_iter *it, struct member *m)
{
	struct span *s = &it->s;
	if (it->done)
		return 0;
	if (!it->first) {
		ws(s);
		if (s->p < s->end && *s->p == '}') {
			it->done = true;
			return 0;
		}
		if (s->p >= s->end || *s->p != ',')
			return -1;
		s->p++;
	}
	it->first = false;
	ws(s);
	if (s->p >= s->end || *s->p != '"')
		return -1;
	const char *k0 = s->p + 1;
	if (skip_value(s) != 0)
		return -1;
	const char *k1 = s->p - 1;
	ws(s);
	if (s->p >= s->end || *s->p != ':')
		return -1;
	s->p++;
	ws(s);
	const char *v0 = s->p;
	if (skip_value(s) != 0 || s->p == v0)
		return -1;
	m->key = h2o_iovec_init(k0, (size_t)(k1 - k0));
	m->value = h2o_iovec_init(v0, (size_t)(s->p - v0));
	return 1;
}

static bool key_is(const struct member *m, const char *k)
{
	return h2o_memis(m->key.base, m->key.len, k, strlen(k));
}

/* Length of the array at `v` (-1 if not an array); *nested: first element
 * is itself an array/string kind check done by the caller. */
static int array_len(h2o_iovec_t v, char *first)
{
	struct span s = {v.base, v.base + v.len};
	ws(&s);
	if (s.p >= s.end || *s.p != '[')
		return -1;
	s.p++;
	ws(&s);
	*first = 0;
	if (s.p < s.end && *s.p == ']')
		return 0;
	int n = 0;
	for (;;) {
		ws(&s);
		if (n == 0 && s.p < s.end)
			*first = *s.p;
		if (skip_value(&s) != 0)
			return -1;
		n++;
		ws(&s);
		if (s.p < s.end && *s.p == ',') {
			s.p++;
			continue;
		}
		return n;
	}
}

/* ---- PD ---------------------------------------------------------------- */

uint64_t rt_pd_room(void)
{
	uint64_t r = 0;
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
		/* Fallback: a process-local xorshift seeded from time and pid. */
		static uint64_t x;
		if (x == 0)
			x = (uint64_t)(uintptr_t)&r ^ ((uint64_t)getpid() << 32) ^ 0x9e3779b97f4a7c15ull;
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		r = x;
	}
	return r & (uint64_t)INT64_MAX;
}

unsigned rt_pd_batch_size(h2o_iovec_t body, enum route route)
{
	struct member_iter it;
	struct member mb, *m = &mb;
	unsigned batch = 1;
	if (member_iter_init(&it, body) != 0)
		return 1;
	while (member_next(&it, &mb) == 1) {
		char first;
		int len;
		if (key_is(m, "n") && route != ROUTE_GENERATE) {
			long v = strtol(m->value.base, NULL, 10);
			if (v > 1 && v <= 1024)
				batch = (unsigned)v;
		} else if ((key_is(m, "prompt") && route == ROUTE_COMPLETIONS) ||
			   (key_is(m, "text") && route == ROUTE_GENERATE)) {
			/* a list of strings or of token lists is a batch */
			if ((len = array_len(m->value, &first)) > 1 && (first == '"' || first == '['))
				return (unsigned)len;
		} else if (key_is(m, "input_ids") && route == ROUTE_GENERATE) {
			if ((len = array_len(m->value, &first)) > 0 && first == '[')
				return (unsigned)len;
		}
	}
	return batch;
}

static bool is_bootstrap(const struct member *m)
{
	return key_is(m, "bootstrap_host") || key_is(m, "bootstrap_port") ||
	       key_is(m, "bootstrap_room");
}

int rt_pd_splice(h2o_mem_pool_t *pool, h2o_iovec_t body, const char *host, uint16_t port,
		 unsigned batch, h2o_iovec_t *out)
{
	struct member_iter it;
	struct member m;
	if (member_iter_init(&it, body) != 0)
		return -1;
	struct rt_buf b = {0};
	rt_buf_put(&b, "{", 1);
	bool first = true;
	int rc;
	while ((rc = member_next(&it, &m)) == 1) {
		if (is_bootstrap(&m))
			continue;
		if (!first)
			rt_buf_put(&b, ",", 1);
		first = false;
		rt_buf_put(&b, "\"", 1);
		rt_buf_put(&b, m.key.base, m.key.len);
		rt_buf_put(&b, "\":", 2);
		rt_buf_put(&b, m.value.base, m.value.len);
	}
	if (rc < 0) {
		rt_buf_free(&b);
		return -1;
	}
	if (!first)
		rt_buf_put(&b, ",", 1);
	char portv[8];
	if (port)
		snprintf(portv, sizeof(portv), "%u", port);
	else
		snprintf(portv, sizeof(portv), "null");
	if (batch <= 1) {
		rt_buf_puts(&b, "\"bootstrap_host\":\"");
		rt_buf_json_str(&b, host, strlen(host));
		rt_buf_printf(&b, "\",\"bootstrap_port\":%s,\"bootstrap_room\":%llu}", portv,
			      (unsigned long long)rt_pd_room());
	} else {
		rt_buf_puts(&b, "\"bootstrap_host\":[");
		for (unsigned k = 0; k < batch; k++) {
			rt_buf_puts(&b, k ? ",\"" : "\"");
			rt_buf_json_str(&b, host, strlen(host));
			rt_buf_puts(&b, "\"");
		}
		rt_buf_puts(&b, "],\"bootstrap_port\":[");
		for (unsigned k = 0; k < batch; k++)
			rt_buf_printf(&b, "%s%s", k ? "," : "", portv);
		rt_buf_puts(&b, "],\"bootstrap_room\":[");
		for (unsigned k = 0; k < batch; k++)
			rt_buf_printf(&b, "%s%llu", k ? "," : "", (unsigned long long)rt_pd_room());
		rt_buf_puts(&b, "]}");
	}
	if (b.oom) {
		rt_buf_free(&b);
		return -1;
	}
	*out = h2o_strdup(pool, b.p, b.n);
	rt_buf_free(&b);
	return 0;
}

/* ---- sampling override ------------------------------------------------- */

/* Rewrites object `obj` with the override's keys: returns 0 / -1 / -2. */
static int override_object(h2o_iovec_t obj, json_t *ov, bool reject, struct rt_buf *b,
			   h2o_mem_pool_t *pool, const char **param)
{
	struct member_iter it;
	struct member m;
	if (member_iter_init(&it, obj) != 0)
		return -1;
	rt_buf_put(b, "{", 1);
	bool first = true;
	int rc;
	while ((rc = member_next(&it, &m)) == 1) {
		char key[128];
		if (m.key.len < sizeof(key)) {
			memcpy(key, m.key.base, m.key.len);
			key[m.key.len] = '\0';
			json_t *want = json_object_get(ov, key);
			if (want != NULL) {
				json_t *have = json_loadb(m.value.base, m.value.len,
							  JSON_DECODE_ANY, NULL);
				bool same = have != NULL && json_equal(have, want);
				if (have)
					json_decref(have);
				if (!same && reject) {
					*param = h2o_strdup(pool, key, strlen(key)).base;
					return -2;
				}
				continue; /* the override's value is appended below */
			}
		}
		if (!first)
			rt_buf_put(b, ",", 1);
		first = false;
		rt_buf_put(b, "\"", 1);
		rt_buf_put(b, m.key.base, m.key.len);
		rt_buf_put(b, "\":", 2);
		rt_buf_put(b, m.value.base, m.value.len);
	}
	if (rc < 0)
		return -1;
	const char *k;
	json_t *v;
	json_object_foreach(ov, k, v)
	{
		char *txt = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		if (txt == NULL) {
			b->oom = true;
			return -1;
		}
		if (!first)
			rt_buf_put(b, ",", 1);
		first = false;
		rt_buf_put(b, "\"", 1);
		rt_buf_json_str(b, k, strlen(k));
		rt_buf_put(b, "\":", 2);
		rt_buf_puts(b, txt);
		free(txt);
	}
	rt_buf_put(b, "}", 1);
	return 0;
}

int rt_sampling_override(h2o_mem_pool_t *pool, h2o_iovec_t body, enum route route,
			 json_t *override, bool reject_conflicts, h2o_iovec_t *out,
			 const char **param)
{
	struct rt_buf b = {0};
	int rc;
	if (route != ROUTE_GENERATE) {
		rc = override_object(body, override, reject_conflicts, &b, pool, param);
	} else {
		struct member_iter it;
		struct member m;
		if (member_iter_init(&it, body) != 0)
			return -1;
		rc = 0;
		bool found = false, first = true;
		int more;
		rt_buf_put(&b, "{", 1);
		while (rc == 0 && (more = member_next(&it, &m)) == 1) {
			if (!first)
				rt_buf_put(&b, ",", 1);
			first = false;
			rt_buf_put(&b, "\"", 1);
			rt_buf_put(&b, m.key.base, m.key.len);
			rt_buf_put(&b, "\":", 2);
			if (key_is(&m, "sampling_params")) {
				found = true;
				rc = override_object(m.value, override, reject_conflicts, &b, pool,
						     param);
			} else {
				rt_buf_put(&b, m.value.base, m.value.len);
			}
		}
		if (rc == 0 && more < 0)
			rc = -1;
		if (rc == 0 && !found) {
			if (!first)
				rt_buf_put(&b, ",", 1);
			rt_buf_puts(&b, "\"sampling_params\":");
			rc = override_object(h2o_iovec_init(H2O_STRLIT("{}")), override, false, &b, pool,
					     param);
		}
		rt_buf_put(&b, "}", 1);
	}
	if (rc == 0 && !b.oom)
		*out = h2o_strdup(pool, b.p, b.n);
	else if (rc == 0)
		rc = -1;
	rt_buf_free(&b);
	return rc;
}
