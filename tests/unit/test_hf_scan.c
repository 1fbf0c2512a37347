/* test_hf_scan.c — the hand-written pre-tokeniser scanners (hf-scan.c)
 * against Oniguruma running the same regex (the engine HF tokenizers uses):
 * identical pieces on edge cases, on seeded random strings over alphabets
 * that mix the classes at split boundaries, and on every code point of
 * Unicode in several contexts (planes 0-3 and 14 entirely, the first block
 * of the others). Also checks that the known patterns select
 * their scanner and others fall back to Oniguruma.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/tokenizer/hf-internal.h"
#include "sy_check.h"

static const char PAT_LLAMA3[] =
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
	"?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char PAT_QWEN2[] =
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
	"?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

#define MAXP 65536
struct pieces {
	size_t end[MAXP];
	size_t n;
	const uint8_t *base;
};

static int collect(void *ctx, const uint8_t *p, size_t n)
{
	struct pieces *ps = ctx;
	if (ps->n >= MAXP) /* (no ck_assert in hot loops: each one writes to Check's pipe) */
		abort();
	ps->end[ps->n++] = (size_t)(p - ps->base) + n;
	return SY_OK;
}

static struct pieces onig_p, scan_p;
static void *re_llama, *re_qwen;

static void setup(void)
{
	char err[256];
	if (!re_llama) {
		ck_assert_int_eq(hf_regex_compile(PAT_LLAMA3, strlen(PAT_LLAMA3), false, &re_llama,
						  err, sizeof err), SY_OK);
		ck_assert_int_eq(hf_regex_compile(PAT_QWEN2, strlen(PAT_QWEN2), false, &re_qwen,
						  err, sizeof err), SY_OK);
	}
}

/* compares both scanners with Oniguruma on s[0..n); returns mismatches */
static int compare(const uint8_t *s, size_t n, const char *what)
{
	int bad = 0;
	for (int k = 0; k < 2; k++) {
		enum hf_split_kind kind = k ? HF_SPLIT_SCAN_QWEN2 : HF_SPLIT_SCAN_LLAMA3;
		onig_p.n = scan_p.n = 0;
		onig_p.base = scan_p.base = s;
		if (hf_onig_split(k ? re_qwen : re_llama, HF_ISOLATED, s, n, collect, &onig_p))
			abort();
		for (size_t pos = 0; pos < n;) {
			size_t e = hf_scan_next(kind, s, n, pos);
			if (e <= pos)
				abort();
			collect(&scan_p, s + pos, e - pos);
			pos = e;
		}
		if (onig_p.n == scan_p.n &&
		    memcmp(onig_p.end, scan_p.end, onig_p.n * sizeof onig_p.end[0]) == 0)
			continue;
		size_t i = 0;
		while (i < onig_p.n && i < scan_p.n && onig_p.end[i] == scan_p.end[i])
			i++;
		fprintf(stderr, "%s [%s]: piece %zu ends at %zu (onig) vs %zu (scanner) in \"",
			what, k ? "qwen" : "llama", i, i < onig_p.n ? onig_p.end[i] : 0,
			i < scan_p.n ? scan_p.end[i] : 0);
		for (size_t b = 0; b < n && b < 80; b++)
			fprintf(stderr, s[b] < 0x20 || s[b] >= 0x7f ? "\\x%02x" : "%c", s[b]);
		fprintf(stderr, "\"\n");
		bad++;
	}
	return bad;
}

static size_t put_cp(uint8_t *d, uint32_t cp)
{
	if (cp < 0x80) {
		d[0] = (uint8_t)cp;
		return 1;
	}
	if (cp < 0x800) {
		d[0] = (uint8_t)(0xC0 | cp >> 6);
		d[1] = (uint8_t)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		d[0] = (uint8_t)(0xE0 | cp >> 12);
		d[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
		d[2] = (uint8_t)(0x80 | (cp & 0x3F));
		return 3;
	}
	d[0] = (uint8_t)(0xF0 | cp >> 18);
	d[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3F));
	d[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
	d[3] = (uint8_t)(0x80 | (cp & 0x3F));
	return 4;
}

START_TEST(test_known_patterns_select_their_scanner)
{
	ck_assert_int_eq(hf_scan_kind_for(PAT_LLAMA3), HF_SPLIT_SCAN_LLAMA3);
	ck_assert_int_eq(hf_scan_kind_for(PAT_QWEN2), HF_SPLIT_SCAN_QWEN2);
	ck_assert_int_eq(hf_scan_kind_for("\\s+"), HF_SPLIT_ONIG);
}
END_TEST

START_TEST(test_scanner_equals_oniguruma_on_edge_cases)
{
	setup();
	static const char *const cases[] = {
		"Hello world", "don't DON'T we're WE'LL I'd 'S 's 'x", "it'\xC5\xBF x'\xC5\xBF",
		"  a   b\t\tc \n d\n\n  e   ", "x   ", "   ", "\n", "\r\n\r\n  \r\n", " \n \n ",
		"12345 1234567 a1b2 \xD9\xA1\xD9\xA2\xD9\xA3\xD9\xA4", "!!!hello (x) [y] ...\n\n",
		" !! ?? \n", "a \xEF\xBB\xBF b \xC2\x85 c\xC2\x85\xC2\x85 d", "\xC2\xA0\xC2\xA0x \xE3\x80\x80y",
		"\xE4\xBD\xA0\xE5\xA5\xBD\xEF\xBC\x8C\xE4\xB8\x96\xE7\x95\x8C", "\xF0\x9F\x98\x80 \xF0\x9F\x98\x80x",
		"e\xCC\x81 a\xCC\x88", "'", "''", "'ll'", "\t\tx", "\x0b\x0c x", "a\x00b", "",
	};
	int bad = 0;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		bad += compare((const uint8_t *)cases[i], strlen(cases[i]), "edge");
	bad += compare((const uint8_t *)"a\0 b", 4, "nul");
	ck_assert_int_eq(bad, 0);
}
END_TEST

START_TEST(test_scanner_equals_oniguruma_on_random_strings)
{
	setup();
	static const uint32_t alpha[] = {
		'a', 'Z', 's', 't', 'l', 'e', 'r', 'v', 'd', 'm', 'S', 'L', '\'', ' ', ' ', '\t',
		'\n', '\r', '0', '7', '.', '!', '(', '"', 0x17F, 0xA0, 0x85, 0xFEFF, 0x3000, 0x2028,
		0x4E2D, 0x1F600, 0x301, 0x661, 0xB2, 0x2167, 0x200B, 0x0B, 0x1C, 0x10FFFD, 0xE9,
	};
	uint32_t seed = 0x5eed;
	uint8_t buf[4 * 300];
	int bad = 0;
	for (int iter = 0; iter < 20000; iter++) {
		size_t len = 0, n = 1 + (seed % (iter % 10 == 0 ? 300 : 30));
		for (size_t k = 0; k < n; k++) {
			seed ^= seed << 13;
			seed ^= seed >> 17;
			seed ^= seed << 5;
			len += put_cp(buf + len, alpha[seed % (sizeof alpha / sizeof alpha[0])]);
		}
		bad += compare(buf, len, "random");
		if (bad > 10)
			break;
	}
	ck_assert_int_eq(bad, 0);
}
END_TEST

START_TEST(test_scanner_equals_oniguruma_on_every_code_point)
{
	setup();
	/* per code point X: "aX X'X1X\n XX  X" — X after a letter, after a
	 * space, after an apostrophe, before a digit, before a newline, doubled */
	static uint8_t buf[64 * 64];
	int bad = 0;
	/* planes 0-3 and 14 hold every assigned letter, number and space;
	 * planes 4-13, 15-16 are unassigned or private use (class "other") and
	 * are sampled at their first block */
	for (uint32_t base = 0; base < 0x110000 && bad < 10; base += 32) {
		if (base >= 0x40000 && (base & 0xFFFF) >= 0x100 && (base >> 16) != 14)
			continue;
		size_t len = 0;
		for (uint32_t cp = base; cp < base + 32; cp++) {
			if (cp >= 0xD800 && cp <= 0xDFFF)
				continue;
			static const char pre[] = "a \0'\0\0\n ";
			uint8_t x[4];
			size_t xl = put_cp(x, cp);
			for (size_t k = 0; k < 8; k++) {
				if (pre[k])
					buf[len++] = (uint8_t)pre[k];
				memcpy(buf + len, x, xl);
				len += xl;
				if (k == 4)
					buf[len++] = '1';
			}
			buf[len++] = ' ';
			buf[len++] = ' ';
		}
		bad += compare(buf, len, "sweep");
	}
	ck_assert_int_eq(bad, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hf_scan");
	TCase *t = tcase_create("scan");
	tcase_set_timeout(t, 300);
	tcase_add_test(t, test_known_patterns_select_their_scanner);
	tcase_add_test(t, test_scanner_equals_oniguruma_on_edge_cases);
	tcase_add_test(t, test_scanner_equals_oniguruma_on_random_strings);
	tcase_add_test(t, test_scanner_equals_oniguruma_on_every_code_point);
	suite_add_tcase(s, t);
	return sy_check_run(s);
}
