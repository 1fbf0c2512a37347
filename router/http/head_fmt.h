/* head_fmt.h — direct formatting of the response heads and chunk sizes
 * h2o 2.2 formats with sprintf (head_fmt.c interposes __sprintf_chk). */
#ifndef SY_ROUTER_HEAD_FMT_H
#define SY_ROUTER_HEAD_FMT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

/* Formats into s (slen bytes, NUL-terminated) when fmt is one of h2o's
 * three per-response formats — "HTTP/1.1 %d %s\r\nDate: %s\r\nConnection:
 * %s\r\n" with or without "Content-Length: %zu\r\n", or "%zx\r\n" — with
 * the bytes vsprintf would write, and returns their count (no NUL).
 * Returns -1, having written nothing, for any other format or when the
 * output might not fit slen; the caller then formats with libc. */
int rt_head_fmt(char *s, size_t slen, const char *fmt, va_list ap);

#endif
