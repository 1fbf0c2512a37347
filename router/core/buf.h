/* buf.h — a growable byte buffer for cold-path text (metrics, JSON bodies).
 *
 * malloc-backed; a failed allocation sets `oom` and later appends do
 * nothing, so callers check once at the end. Not for the hot path: request
 * bodies and upstream data travel as h2o iovecs and buffers.
 */
#ifndef SY_ROUTER_BUF_H
#define SY_ROUTER_BUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rt_buf {
	char *p;      /* NUL-terminated when n > 0 and !oom */
	size_t n;     /* bytes used */
	size_t cap;   /* bytes allocated */
	bool oom;     /* an allocation failed: contents incomplete */
};

static inline bool rt_buf_reserve(struct rt_buf *b, size_t extra)
{
	if (b->oom)
		return false;
	if (b->n + extra + 1 <= b->cap)
		return true;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->n + extra + 1)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (p == NULL) {
		b->oom = true;
		return false;
	}
	b->p = p;
	b->cap = cap;
	return true;
}

static inline void rt_buf_put(struct rt_buf *b, const void *s, size_t len)
{
	if (!rt_buf_reserve(b, len))
		return;
	memcpy(b->p + b->n, s, len);
	b->n += len;
	b->p[b->n] = '\0';
}

static inline void rt_buf_puts(struct rt_buf *b, const char *s) { rt_buf_put(b, s, strlen(s)); }

static inline void rt_buf_vprintf(struct rt_buf *b, const char *fmt, va_list ap)
{
	va_list aq;
	va_copy(aq, ap);
	int n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n < 0 || !rt_buf_reserve(b, (size_t)n))
		return;
	vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
	b->n += (size_t)n;
}

static inline __attribute__((format(printf, 2, 3))) void rt_buf_printf(struct rt_buf *b,
								       const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	rt_buf_vprintf(b, fmt, ap);
	va_end(ap);
}

/* Appends `len` bytes of `s` as a JSON string body (no quotes). */
void rt_buf_json_str(struct rt_buf *b, const char *s, size_t len);

static inline void rt_buf_free(struct rt_buf *b)
{
	free(b->p);
	*b = (struct rt_buf){0};
}

/* Writes the decimal digits of `v` at `w` (room for 20 bytes, no NUL) and
 * returns the end: the hot path's integer formatter (request IDs, request
 * heads), without printf. */
static inline char *rt_put_dec(char *w, uint64_t v)
{
	char d[20];
	size_t n = 0;
	do
		d[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	while (n)
		*w++ = d[--n];
	return w;
}

#endif
