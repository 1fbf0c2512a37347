/* log.h — process-wide logging: text or JSON lines, with levels.
 *
 * One line per record on stderr (or a caller-given fd). Text format:
 *   2026-11-30T03:25:44.123Z info  statebus: message
 * JSON-lines format (one object per line, stable keys):
 *   {"ts":"2026-11-30T03:25:44.123Z","level":"info","prog":"statebus","msg":"..."}
 * The message is formatted with printf rules, truncated at SY_LOG_LINE_MAX
 * bytes, and JSON-escaped in JSON mode. Each record is written with a single
 * write(2), so lines from several processes sharing a fd never interleave.
 * Configuration is process-global and not thread-safe to change; logging
 * itself is safe from any thread.
 */
#ifndef SY_COMMON_LOG_H
#define SY_COMMON_LOG_H

#include <stdarg.h>
#include <stdbool.h>

enum sy_log_level {
	SY_LOG_DEBUG = 0,
	SY_LOG_INFO = 1,
	SY_LOG_WARN = 2,
	SY_LOG_ERROR = 3,
	SY_LOG_OFF = 4,
};

enum sy_log_format {
	SY_LOG_TEXT = 0,
	SY_LOG_JSON = 1,
};

#define SY_LOG_LINE_MAX 4096 /* bytes per formatted message, before escaping */

/* Sets the program name shown in each record (copied; ≤ 31 bytes kept),
 * the minimum level and the format. Output goes to fd 2 until
 * sy_log_set_fd() is called. */
void sy_log_init(const char *prog, enum sy_log_level level, enum sy_log_format fmt);

/* Redirects records to `fd` (not owned; caller keeps it open). */
void sy_log_set_fd(int fd);

/* Current minimum level. */
enum sy_log_level sy_log_level(void);

/* Parses "debug|info|warn|warning|error|off" (case-insensitive).
 * Returns 0 and sets *out, or SY_EINVAL. */
int sy_log_level_parse(const char *s, enum sy_log_level *out);

/* Parses "text|json". Returns 0 and sets *out, or SY_EINVAL. */
int sy_log_format_parse(const char *s, enum sy_log_format *out);

/* Writes one record at `level` if it passes the level filter. */
void sy_log(enum sy_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void sy_logv(enum sy_log_level level, const char *fmt, va_list ap);

#define sy_debug(...) sy_log(SY_LOG_DEBUG, __VA_ARGS__)
#define sy_info(...) sy_log(SY_LOG_INFO, __VA_ARGS__)
#define sy_warn(...) sy_log(SY_LOG_WARN, __VA_ARGS__)
#define sy_error(...) sy_log(SY_LOG_ERROR, __VA_ARGS__)

/* Escapes `len` bytes of `s` as the inside of a JSON string into `out`
 * (capacity `cap`, always NUL-terminated when cap > 0). Control bytes become
 * \uXXXX; each byte that does not start a valid UTF-8 sequence becomes
 * \ufffd, so the output is always valid JSON (RFC 8259 wants UTF-8).
 * Returns the number of bytes written (excluding NUL); stops early, on a
 * whole escape or a whole UTF-8 sequence, when full. */
unsigned long sy_json_escape(char *out, unsigned long cap, const char *s, unsigned long len);

#endif
