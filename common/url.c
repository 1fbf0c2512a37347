/* url.c — worker URL normaliser (see url.h).
 *
 * One left-to-right pass: scheme, authority (host, optional port), path.
 * The output is written through a bounded appender that fails with
 * SY_ENOSPC instead of overrunning `out`; nothing else is allocated.
 */
#include "common/url.h"
#include "common/errors.h"

#include <stdbool.h>
#include <string.h>
#include <strings.h>

struct out_buf {
	char *p;
	size_t cap, len;
	bool full;
};

static void put(struct out_buf *o, const char *s, size_t n)
{
	if (o->full || o->len + n >= o->cap) {
		o->full = true;
		return;
	}
	memcpy(o->p + o->len, s, n);
	o->len += n;
}

static void put_lower(struct out_buf *o, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		put(o, &c, 1);
	}
}

static bool host_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_';
}

static bool ipv6_char(char c)
{
	return (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || (c >= '0' && c <= '9') ||
	       c == ':' || c == '.';
}

static int fail(const char **why, const char *reason)
{
	if (why != NULL)
		*why = reason;
	return SY_EINVAL;
}

int sy_url_normalize(const char *url, size_t len, char *out, size_t cap, const char **why)
{
	struct out_buf o = {out, cap, 0, cap == 0};
	size_t i, host_end, auth_end, path_end;

	if (cap > 0)
		out[0] = '\0';
	if (url == NULL || len == 0)
		return fail(why, "must not be empty");
	if (len > SY_URL_MAX)
		return fail(why, "is too long");
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)url[i];
		if (c <= 0x20 || c == 0x7f)
			return fail(why, "must not contain spaces or control characters");
		if (c == '?' || c == '#')
			return fail(why, "must not contain a query or fragment");
	}

	if (len >= 7 && strncasecmp(url, "http://", 7) == 0) {
		put(&o, "http://", 7);
		i = 7;
	} else if (len >= 8 && strncasecmp(url, "https://", 8) == 0) {
		put(&o, "https://", 8);
		i = 8;
	} else {
		return fail(why, "must start with http:// or https://");
	}

	auth_end = i;
	while (auth_end < len && url[auth_end] != '/')
		auth_end++;
	if (memchr(url + i, '@', auth_end - i) != NULL)
		return fail(why, "must not contain user information");
	if (auth_end == i)
		return fail(why, "has no host");

	if (url[i] == '[') { /* IPv6 literal */
		host_end = i + 1;
		while (host_end < auth_end && url[host_end] != ']') {
			if (!ipv6_char(url[host_end]))
				return fail(why, "has an invalid IPv6 address");
			host_end++;
		}
		if (host_end == auth_end || host_end == i + 1)
			return fail(why, "has an invalid IPv6 address");
		host_end++; /* keep ']' */
	} else {
		host_end = i;
		while (host_end < auth_end && url[host_end] != ':') {
			if (!host_char(url[host_end]))
				return fail(why, "has an invalid host");
			host_end++;
		}
		if (host_end == i)
			return fail(why, "has no host");
	}
	put_lower(&o, url + i, host_end - i);

	if (host_end < auth_end) {
		unsigned long port = 0;
		size_t p = host_end + 1;
		if (url[host_end] != ':' || p == auth_end)
			return fail(why, "has an invalid port");
		for (; p < auth_end; p++) {
			if (url[p] < '0' || url[p] > '9')
				return fail(why, "has an invalid port");
			port = port * 10 + (unsigned long)(url[p] - '0');
			if (port > 65535)
				return fail(why, "has an invalid port");
		}
		if (port == 0)
			return fail(why, "has an invalid port");
		char digits[8];
		size_t nd = 0;
		char rev[8];
		do {
			rev[nd++] = (char)('0' + port % 10);
			port /= 10;
		} while (port > 0);
		digits[0] = ':';
		for (size_t k = 0; k < nd; k++)
			digits[1 + k] = rev[nd - 1 - k];
		put(&o, digits, nd + 1);
	}

	path_end = len;
	while (path_end > auth_end && url[path_end - 1] == '/')
		path_end--;
	put(&o, url + auth_end, path_end - auth_end);

	if (o.full) {
		if (cap > 0)
			out[0] = '\0';
		return SY_ENOSPC;
	}
	out[o.len] = '\0';
	return (int)o.len;
}
