/* sbuf.h — growable byte buffer for response bodies and SSE chunks.
 *
 * Owns `p` (malloc'ed); a failed allocation sets the sticky `oom` flag and
 * later appends do nothing, so builders check once at the end. Not
 * NUL-terminated unless sbuf_cstr() is called.
 */
#ifndef SY_MOCK_SBUF_H
#define SY_MOCK_SBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

struct sbuf {
	char *p;
	size_t n, cap;
	bool oom;
};

/* Makes room for `extra` more bytes. Returns false (and sets oom) on failure. */
static inline bool sbuf_reserve(struct sbuf *b, size_t extra)
{
	if (b->oom)
		return false;
	if (b->n + extra <= b->cap)
		return true;
	size_t nc = b->cap ? b->cap : 512;
	while (nc < b->n + extra)
		nc *= 2;
	char *np = realloc(b->p, nc);
	if (!np) {
		b->oom = true;
		return false;
	}
	b->p = np;
	b->cap = nc;
	return true;
}

static inline void sbuf_put(struct sbuf *b, const void *s, size_t len)
{
	if (sbuf_reserve(b, len)) {
		memcpy(b->p + b->n, s, len);
		b->n += len;
	}
}

static inline void sbuf_puts(struct sbuf *b, const char *s) { sbuf_put(b, s, strlen(s)); }

/* Appends printf-formatted text. */
__attribute__((format(printf, 2, 3))) static inline void sbuf_printf(struct sbuf *b,
								      const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char tmp[256];
	int k = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (k < 0)
		return;
	if ((size_t)k < sizeof(tmp)) {
		sbuf_put(b, tmp, (size_t)k);
		return;
	}
	if (!sbuf_reserve(b, (size_t)k + 1))
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->n, (size_t)k + 1, fmt, ap);
	va_end(ap);
	b->n += (size_t)k;
}

/* Appends `s` as a quoted JSON string. */
static inline void sbuf_json_str(struct sbuf *b, const char *s, size_t len)
{
	/* worst case \uXXXX per byte */
	if (!sbuf_reserve(b, len * 6 + 3))
		return;
	b->p[b->n++] = '"';
	b->n += sy_json_escape(b->p + b->n, b->cap - b->n, s, len);
	b->p[b->n++] = '"';
}

/* NUL-terminates (not counted in n) and returns p, or NULL after oom. */
static inline const char *sbuf_cstr(struct sbuf *b)
{
	if (!sbuf_reserve(b, 1))
		return NULL;
	b->p[b->n] = '\0';
	return b->p;
}

static inline void sbuf_free(struct sbuf *b)
{
	free(b->p);
	*b = (struct sbuf){0};
}

#endif
