/* test_log.c — level filter, text and JSON-lines formats, escaping. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/log.h"
#include "sy_check.h"

/* Captures what the logger writes through a pipe. */
static size_t capture(char *buf, size_t cap, void (*emit)(void))
{
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	sy_log_set_fd(p[1]);
	emit();
	sy_log_set_fd(2);
	close(p[1]);
	size_t n = 0;
	ssize_t r;
	while (n + 1 < cap && (r = read(p[0], buf + n, cap - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
	close(p[0]);
	return n;
}

static void emit_levels(void)
{
	sy_debug("hidden %d", 1);
	sy_info("shown %d", 2);
	sy_error("also shown");
}

static void emit_json(void)
{
	sy_warn("quote \" backslash \\ newline\n tab\t ctl\x01 end");
}

START_TEST(test_level_filter_drops_lower_levels)
{
	char buf[4096];
	sy_log_init("unit", SY_LOG_INFO, SY_LOG_TEXT);
	capture(buf, sizeof(buf), emit_levels);
	ck_assert_ptr_null(strstr(buf, "hidden"));
	ck_assert_ptr_nonnull(strstr(buf, "info  unit["));
	ck_assert_ptr_nonnull(strstr(buf, "]: shown 2\n"));
	ck_assert_ptr_nonnull(strstr(buf, "error unit["));
}
END_TEST

START_TEST(test_json_lines_are_one_escaped_object_per_line)
{
	char buf[4096];
	sy_log_init("unit", SY_LOG_DEBUG, SY_LOG_JSON);
	size_t n = capture(buf, sizeof(buf), emit_json);
	ck_assert_uint_gt(n, 0);
	ck_assert_int_eq(buf[0], '{');
	ck_assert_int_eq(buf[n - 1], '\n');
	ck_assert_ptr_null(memchr(buf, '\n', n - 1)); /* exactly one line */
	ck_assert_ptr_nonnull(strstr(buf, "\"level\":\"warn\""));
	ck_assert_ptr_nonnull(strstr(buf, "\"prog\":\"unit\""));
	ck_assert_ptr_nonnull(
		strstr(buf, "\"msg\":\"quote \\\" backslash \\\\ newline\\n tab\\t ctl\\u0001 end\"}"));
}
END_TEST

START_TEST(test_level_and_format_parse)
{
	enum sy_log_level l;
	enum sy_log_format f;
	ck_assert_int_eq(sy_log_level_parse("WARNING", &l), 0);
	ck_assert_int_eq(l, SY_LOG_WARN);
	ck_assert_int_eq(sy_log_level_parse("debug", &l), 0);
	ck_assert_int_eq(l, SY_LOG_DEBUG);
	ck_assert_int_eq(sy_log_level_parse("verbose", &l), SY_EINVAL);
	ck_assert_int_eq(sy_log_format_parse("json", &f), 0);
	ck_assert_int_eq(f, SY_LOG_JSON);
	ck_assert_int_eq(sy_log_format_parse("xml", &f), SY_EINVAL);
}
END_TEST

START_TEST(test_escape_stops_on_whole_escape_when_full)
{
	char out[6];
	unsigned long n = sy_json_escape(out, sizeof(out), "ab\"cd", 5);
	/* "ab\"" needs 4 bytes, 'c' a 5th, NUL the 6th. */
	ck_assert_uint_eq(n, 5);
	ck_assert_str_eq(out, "ab\\\"c");
	n = sy_json_escape(out, 4, "a\x02", 2);
	ck_assert_str_eq(out, "a"); /* \u0002 does not fit: not split */
	ck_assert_uint_eq(n, 1);
}
END_TEST

/* A JSON line is valid UTF-8 whatever bytes the message holds (a client's
 * Host header, a file name): invalid bytes become \ufffd, valid sequences
 * pass, and a sequence is never cut when the output is full. */
START_TEST(test_escape_replaces_invalid_utf8)
{
	char out[128];
	const char in[] = "a\xff b\xc3\xa9 c\xed\xa0\x80 d\xc0\xaf e\xf0\x9f\x98\x80 f\xe2\x82";
	sy_json_escape(out, sizeof(out), in, sizeof(in) - 1);
	ck_assert_str_eq(out, "a\\ufffd b\xc3\xa9 c\\ufffd\\ufffd\\ufffd d\\ufffd\\ufffd "
			      "e\xf0\x9f\x98\x80 f\\ufffd\\ufffd");
	unsigned long n = sy_json_escape(out, 4, "ab\xc3\xa9", 4);
	ck_assert_uint_eq(n, 2); /* é needs 2 bytes, only 1 left before the NUL */
	ck_assert_str_eq(out, "ab");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("format");
	tcase_add_test(tc, test_level_filter_drops_lower_levels);
	tcase_add_test(tc, test_json_lines_are_one_escaped_object_per_line);
	tcase_add_test(tc, test_level_and_format_parse);
	tcase_add_test(tc, test_escape_stops_on_whole_escape_when_full);
	tcase_add_test(tc, test_escape_replaces_invalid_utf8);
	suite_add_tcase(s, tc);
	return sy_check_run(s);
}
