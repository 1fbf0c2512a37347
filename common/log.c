/* log.c — text / JSON-lines logger (see log.h). */
#include "common/log.h"
#include "common/errors.h"
#include "common/clock.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static char g_prog[32] = "switchyard";
static enum sy_log_level g_level = SY_LOG_INFO;
static enum sy_log_format g_fmt = SY_LOG_TEXT;
static int g_fd = 2;

static const char *const level_names[] = {"debug", "info", "warn", "error", "off"};

void sy_log_init(const char *prog, enum sy_log_level level, enum sy_log_format fmt)
{
	if (prog != NULL)
		snprintf(g_prog, sizeof(g_prog), "%s", prog);
	g_level = level;
	g_fmt = fmt;
}

void sy_log_set_fd(int fd) { g_fd = fd; }

enum sy_log_level sy_log_level(void) { return g_level; }

int sy_log_level_parse(const char *s, enum sy_log_level *out)
{
	static const struct { const char *name; enum sy_log_level lvl; } map[] = {
		{"debug", SY_LOG_DEBUG}, {"info", SY_LOG_INFO}, {"warn", SY_LOG_WARN},
		{"warning", SY_LOG_WARN}, {"error", SY_LOG_ERROR}, {"off", SY_LOG_OFF},
	};
	if (s == NULL)
		return SY_EINVAL;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		if (strcasecmp(s, map[i].name) == 0) {
			*out = map[i].lvl;
			return SY_OK;
		}
	}
	return SY_EINVAL;
}

int sy_log_format_parse(const char *s, enum sy_log_format *out)
{
	if (s != NULL && strcasecmp(s, "text") == 0) {
		*out = SY_LOG_TEXT;
		return SY_OK;
	}
	if (s != NULL && strcasecmp(s, "json") == 0) {
		*out = SY_LOG_JSON;
		return SY_OK;
	}
	return SY_EINVAL;
}

/* Length of the valid UTF-8 sequence at s[0] (≥ 0x80), 0 when invalid:
 * no overlong forms, no surrogates, nothing above U+10FFFF. */
static unsigned long utf8_seq_len(const unsigned char *s, unsigned long left)
{
	unsigned long n;
	unsigned char lo = 0x80, hi = 0xbf;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 3;
		if (s[0] == 0xe0)
			lo = 0xa0;
		else if (s[0] == 0xed)
			hi = 0x9f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4;
		if (s[0] == 0xf0)
			lo = 0x90;
		else if (s[0] == 0xf4)
			hi = 0x8f;
	} else
		return 0;
	if (n > left || s[1] < lo || s[1] > hi)
		return 0;
	for (unsigned long i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

unsigned long sy_json_escape(char *out, unsigned long cap, const char *s, unsigned long len)
{
	static const char hex[] = "0123456789abcdef";
	unsigned long o = 0;
	if (cap == 0)
		return 0;
	for (unsigned long i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[7];
		unsigned long n;
		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			n = 2;
		} else if (c == '\n') {
			memcpy(esc, "\\n", 2);
			n = 2;
		} else if (c == '\t') {
			memcpy(esc, "\\t", 2);
			n = 2;
		} else if (c == '\r') {
			memcpy(esc, "\\r", 2);
			n = 2;
		} else if (c < 0x20 || c == 0x7f) {
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			n = 6;
		} else if (c >= 0x80) {
			n = utf8_seq_len((const unsigned char *)s + i, len - i);
			if (n == 0) {
				memcpy(esc, "\\ufffd", 6);
				n = 6;
			} else {
				memcpy(esc, s + i, n);
				i += n - 1;
			}
		} else {
			esc[0] = (char)c;
			n = 1;
		}
		if (o + n >= cap)
			break;
		memcpy(out + o, esc, n);
		o += n;
	}
	out[o] = '\0';
	return o;
}

static size_t format_ts(char *buf, size_t cap)
{
	uint64_t ns = sy_wall_ns();
	time_t secs = (time_t)(ns / 1000000000u);
	struct tm tm;
	gmtime_r(&secs, &tm);
	size_t n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
	int m = snprintf(buf + n, cap - n, ".%03uZ", (unsigned)((ns / 1000000u) % 1000u));
	return n + (m > 0 ? (size_t)m : 0);
}

void sy_logv(enum sy_log_level level, const char *fmt, va_list ap)
{
	if (level < g_level || level >= SY_LOG_OFF)
		return;
	char msg[SY_LOG_LINE_MAX];
	int mlen = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (mlen < 0)
		return;
	if ((size_t)mlen >= sizeof(msg))
		mlen = (int)sizeof(msg) - 1;
	char ts[40];
	format_ts(ts, sizeof(ts));

	char line[SY_LOG_LINE_MAX * 2 + 256];
	int n;
	if (g_fmt == SY_LOG_JSON) {
		char esc[SY_LOG_LINE_MAX * 2];
		sy_json_escape(esc, sizeof(esc), msg, (unsigned long)mlen);
		char prog[80];
		sy_json_escape(prog, sizeof(prog), g_prog, strlen(g_prog));
		n = snprintf(line, sizeof(line),
			     "{\"ts\":\"%s\",\"level\":\"%s\",\"prog\":\"%s\",\"pid\":%d,\"msg\":\"%s\"}\n",
			     ts, level_names[level], prog, (int)getpid(), esc);
	} else {
		n = snprintf(line, sizeof(line), "%s %-5s %s[%d]: %.*s\n", ts, level_names[level],
			     g_prog, (int)getpid(), mlen, msg);
	}
	if (n <= 0)
		return;
	if ((size_t)n >= sizeof(line)) {
		n = (int)sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	int saved = errno;
	ssize_t w = write(g_fd, line, (size_t)n);
	(void)w;
	errno = saved;
}

void sy_log(enum sy_log_level level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sy_logv(level, fmt, ap);
	va_end(ap);
}
