/* head_fmt.c — the formatting h2o asks of libc on every response, without
 * vfprintf.
 *
 * h2o 2.2's HTTP/1 writer formats each response head with one
 * sprintf("HTTP/1.1 %d %s\r\nDate: %s\r\nConnection: %s\r\n"
 * ["Content-Length: %zu\r\n"]) and each chunk of a chunked body (every
 * streamed token event) with sprintf("%zx\r\n"). Built with
 * _FORTIFY_SOURCE, libh2o-evloop calls __sprintf_chk through its PLT, so
 * this executable's definition comes first (export_dynamic, as for
 * sockio.c and edge.c). For exactly those three format strings it writes
 * the same bytes directly (vfprintf's format walk cost ~2,000
 * instructions a head and ~500 a chunk under callgrind); any other format,
 * and any output that would not fit `slen`, goes to libc's __vsprintf_chk,
 * which formats or aborts as it always did.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "router/http/head_fmt.h"

int __vsprintf_chk(char *s, int flag, size_t slen, const char *fmt, va_list ap);
int __sprintf_chk(char *s, int flag, size_t slen, const char *fmt, ...);

static const char HEAD_CL[] = "HTTP/1.1 %d %s\r\nDate: %s\r\nConnection: %s\r\nContent-Length: %zu\r\n";
static const char HEAD[] = "HTTP/1.1 %d %s\r\nDate: %s\r\nConnection: %s\r\n";
static const char CHUNK[] = "%zx\r\n";

/* Decimal (base 10) or lowercase hex (base 16) of v into out (≥ 20 bytes
 * free); returns the digits written. */
static size_t put_uint(char *out, uint64_t v, unsigned base)
{
	char tmp[24];
	size_t n = 0;
	do {
		tmp[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v != 0);
	for (size_t i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	return n;
}

static size_t put_int(char *out, int v)
{
	if (v < 0) {
		out[0] = '-';
		return 1 + put_uint(out + 1, (uint64_t)(-(int64_t)v), 10);
	}
	return put_uint(out, (uint64_t)v, 10);
}

#define PUT_LIT(dst, lit) (memcpy((dst), (lit), sizeof(lit) - 1), (dst) += sizeof(lit) - 1)

int rt_head_fmt(char *s, size_t slen, const char *fmt, va_list ap)
{
	if (fmt == NULL)
		return -1;
	if (fmt[0] == '%' && strcmp(fmt, CHUNK) == 0) {
		size_t v = va_arg(ap, size_t);
		if (slen < 16 + 3)
			return -1;
		size_t n = put_uint(s, v, 16);
		memcpy(s + n, "\r\n", 3);
		return (int)(n + 2);
	}
	if (fmt[0] != 'H')
		return -1;
	bool cl = strcmp(fmt, HEAD_CL) == 0;
	if (!cl && strcmp(fmt, HEAD) != 0)
		return -1;
	int status = va_arg(ap, int);
	const char *reason = va_arg(ap, const char *), *date = va_arg(ap, const char *),
		   *conn = va_arg(ap, const char *);
	size_t len = cl ? va_arg(ap, size_t) : 0;
	size_t lr = strlen(reason), ld = strlen(date), lc = strlen(conn);
	/* literal text + at most 11 status digits + 20 length digits + NUL */
	size_t need = sizeof(HEAD_CL) + 11 + 20 + lr + ld + lc;
	if (need > slen)
		return -1;
	char *d = s;
	PUT_LIT(d, "HTTP/1.1 ");
	d += put_int(d, status);
	*d++ = ' ';
	memcpy(d, reason, lr);
	d += lr;
	PUT_LIT(d, "\r\nDate: ");
	memcpy(d, date, ld);
	d += ld;
	PUT_LIT(d, "\r\nConnection: ");
	memcpy(d, conn, lc);
	d += lc;
	PUT_LIT(d, "\r\n");
	if (cl) {
		PUT_LIT(d, "Content-Length: ");
		d += put_uint(d, len, 10);
		PUT_LIT(d, "\r\n");
	}
	*d = '\0';
	return (int)(d - s);
}

int __sprintf_chk(char *s, int flag, size_t slen, const char *fmt, ...)
{
	va_list ap, fast;
	va_start(ap, fmt);
	va_copy(fast, ap);
	int n = rt_head_fmt(s, slen, fmt, fast);
	va_end(fast);
	if (n < 0)
		n = __vsprintf_chk(s, flag, slen, fmt, ap);
	va_end(ap);
	return n;
}
