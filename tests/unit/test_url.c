/* test_url.c — sy_url_normalize: the stable worker ID of DESIGN.md §3. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/url.h"
#include "sy_check.h"

static const char *norm(const char *in, char *out, size_t cap)
{
	int rc = sy_url_normalize(in, strlen(in), out, cap, NULL);
	return rc >= 0 ? out : NULL;
}

START_TEST(test_scheme_and_host_are_lower_cased_path_is_kept)
{
	char out[128];
	ck_assert_str_eq(norm("HTTP://Worker-1.LAN:30001/V1/Chat", out, sizeof(out)),
			 "http://worker-1.lan:30001/V1/Chat");
	ck_assert_str_eq(norm("HttpS://EXAMPLE.com", out, sizeof(out)), "https://example.com");
}
END_TEST

START_TEST(test_trailing_slashes_are_removed)
{
	char out[128];
	ck_assert_str_eq(norm("http://a:1/", out, sizeof(out)), "http://a:1");
	ck_assert_str_eq(norm("http://a:1///", out, sizeof(out)), "http://a:1");
	ck_assert_str_eq(norm("http://a/v1//", out, sizeof(out)), "http://a/v1");
}
END_TEST

START_TEST(test_port_loses_leading_zeros_but_default_port_stays)
{
	char out[128];
	ck_assert_str_eq(norm("http://a:030001", out, sizeof(out)), "http://a:30001");
	ck_assert_str_eq(norm("http://a:80", out, sizeof(out)), "http://a:80");
}
END_TEST

START_TEST(test_ipv6_literal_keeps_brackets_and_is_lower_cased)
{
	char out[128];
	ck_assert_str_eq(norm("https://[FE80::1]:8000/", out, sizeof(out)),
			 "https://[fe80::1]:8000");
	ck_assert_str_eq(norm("http://[::1]", out, sizeof(out)), "http://[::1]");
}
END_TEST

START_TEST(test_invalid_urls_are_refused_with_a_reason)
{
	static const struct {
		const char *url, *why;
	} cases[] = {
		{"", "must not be empty"},
		{"ftp://a", "must start with http:// or https://"},
		{"10.0.0.1:30001", "must start with http:// or https://"},
		{"http://", "has no host"},
		{"http:///x", "has no host"},
		{"http://:80", "has no host"},
		{"http://u:p@a", "must not contain user information"},
		{"http://a b", "must not contain spaces or control characters"},
		{"http://a/?q=1", "must not contain a query or fragment"},
		{"http://a#f", "must not contain a query or fragment"},
		{"http://a:0", "has an invalid port"},
		{"http://a:65536", "has an invalid port"},
		{"http://a:", "has an invalid port"},
		{"http://a:8x", "has an invalid port"},
		{"http://[::1", "has an invalid IPv6 address"},
		{"http://[]", "has an invalid IPv6 address"},
		{"http://[::1]x", "has an invalid port"},
		{"http://a%41", "has an invalid host"},
	};
	char out[64];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *why = NULL;
		int rc = sy_url_normalize(cases[i].url, strlen(cases[i].url), out, sizeof(out), &why);
		ck_assert_msg(rc == SY_EINVAL, "%s accepted", cases[i].url);
		ck_assert_str_eq(why, cases[i].why);
	}
}
END_TEST

START_TEST(test_small_output_buffer_is_enospc_never_overrun)
{
	char out[8];
	memset(out, 'X', sizeof(out));
	ck_assert_int_eq(sy_url_normalize("http://abcdef", 13, out, sizeof(out), NULL), SY_ENOSPC);
	ck_assert_str_eq(out, "");
	/* len + 1 always suffices, and the length is returned. */
	char fit[14];
	ck_assert_int_eq(sy_url_normalize("http://abcdef/", 14, fit, sizeof(fit), NULL), 13);
	ck_assert_str_eq(fit, "http://abcdef");
}
END_TEST

START_TEST(test_input_need_not_be_nul_terminated)
{
	char out[32];
	const char buf[] = {'h', 't', 't', 'p', ':', '/', '/', 'A', '/', '!'};
	ck_assert_int_eq(sy_url_normalize(buf, 9, out, sizeof(out), NULL), 8);
	ck_assert_str_eq(out, "http://a");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("url");
	TCase *tc = tcase_create("normalize");
	tcase_add_test(tc, test_scheme_and_host_are_lower_cased_path_is_kept);
	tcase_add_test(tc, test_trailing_slashes_are_removed);
	tcase_add_test(tc, test_port_loses_leading_zeros_but_default_port_stays);
	tcase_add_test(tc, test_ipv6_literal_keeps_brackets_and_is_lower_cased);
	tcase_add_test(tc, test_invalid_urls_are_refused_with_a_reason);
	tcase_add_test(tc, test_small_output_buffer_is_enospc_never_overrun);
	tcase_add_test(tc, test_input_need_not_be_nul_terminated);
	suite_add_tcase(s, tc);
	return sy_check_run(s);
}
