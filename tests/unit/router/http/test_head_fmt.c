/* test_head_fmt.c — the router's __sprintf_chk (router/http/head_fmt.c,
 * compiled into this program): h2o's three per-response formats give the
 * bytes libc's vsnprintf gives, and every other format, or an output that
 * might not fit, is libc's. */
#include <check.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "router/http/head_fmt.h"
#include "tests/unit/sy_check.h"

int __sprintf_chk(char *s, int flag, size_t slen, const char *fmt, ...);

#define HEAD_CL "HTTP/1.1 %d %s\r\nDate: %s\r\nConnection: %s\r\nContent-Length: %zu\r\n"
#define HEAD "HTTP/1.1 %d %s\r\nDate: %s\r\nConnection: %s\r\n"

static int fast(char *s, size_t slen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = rt_head_fmt(s, slen, fmt, ap);
	va_end(ap);
	return n;
}

START_TEST(test_heads_match_libc)
{
	static const int statuses[] = {100, 200, 204, 404, 502, 999, 0, -7, 2147483647};
	static const size_t lens[] = {0, 1, 9, 10, 146, 65535, 4294967296u, SIZE_MAX};
	const char *date = "Wed, 02 Dec 2026 06:51:42 GMT";
	char got[512], want[512];
	for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++) {
		for (size_t j = 0; j < sizeof lens / sizeof lens[0]; j++) {
			int n = fast(got, sizeof got, HEAD_CL, statuses[i], "OK", date, "keep-alive",
				     lens[j]);
			int m = snprintf(want, sizeof want, HEAD_CL, statuses[i], "OK", date,
					 "keep-alive", lens[j]);
			ck_assert_int_eq(n, m);
			ck_assert_str_eq(got, want);
		}
		int n = fast(got, sizeof got, HEAD, statuses[i], "Bad Gateway", date, "close");
		int m = snprintf(want, sizeof want, HEAD, statuses[i], "Bad Gateway", date, "close");
		ck_assert_int_eq(n, m);
		ck_assert_str_eq(got, want);
	}
	/* empty strings */
	ck_assert_int_eq(fast(got, sizeof got, HEAD, 200, "", "", ""),
			 snprintf(want, sizeof want, HEAD, 200, "", "", ""));
	ck_assert_str_eq(got, want);
}
END_TEST

START_TEST(test_chunk_sizes_match_libc)
{
	static const size_t sizes[] = {0, 1, 9, 10, 15, 16, 255, 4096, 0xabcdef, SIZE_MAX};
	char got[32], want[32];
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		int n = fast(got, sizeof got, "%zx\r\n", sizes[i]);
		int m = snprintf(want, sizeof want, "%zx\r\n", sizes[i]);
		ck_assert_int_eq(n, m);
		ck_assert_str_eq(got, want);
	}
}
END_TEST

START_TEST(test_others_are_libcs)
{
	char buf[64];
	memset(buf, 'z', sizeof buf);
	/* not one of the three: untouched, -1 */
	ck_assert_int_eq(fast(buf, sizeof buf, "%d-%s", 5, "x"), -1);
	ck_assert_int_eq(buf[0], 'z');
	ck_assert_int_eq(fast(buf, sizeof buf, "HTTP/1.1 %d\r\n", 200), -1);
	ck_assert_int_eq(fast(buf, sizeof buf, "%zu\r\n", (size_t)5), -1);
	/* might not fit: left to libc */
	ck_assert_int_eq(fast(buf, 8, "%zx\r\n", (size_t)5), -1);
	ck_assert_int_eq(fast(buf, 64, HEAD, 200, "OK", "Wed, 02 Dec 2026 06:51:42 GMT", "close"),
			 -1);
	ck_assert_int_eq(buf[0], 'z');
	/* through __sprintf_chk: the fast path and libc's give the same */
	ck_assert_int_eq(__sprintf_chk(buf, 1, sizeof buf, "%zx\r\n", (size_t)300), 5);
	ck_assert_str_eq(buf, "12c\r\n");
	ck_assert_int_eq(__sprintf_chk(buf, 1, sizeof buf, "%d-%s-%.2f", 5, "x", 1.5), 8);
	ck_assert_str_eq(buf, "5-x-1.50");
	ck_assert_int_eq(__sprintf_chk(buf, 1, (size_t)-1, "%s", "unknown size"), 12);
	ck_assert_str_eq(buf, "unknown size");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("head_fmt");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_heads_match_libc);
	tcase_add_test(tc, test_chunk_sizes_match_libc);
	tcase_add_test(tc, test_others_are_libcs);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sy_check_run(suite());
}
