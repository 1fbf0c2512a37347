/* hf-scan.c — hand-written scanners for the split regexes of current
 * byte-level BPE models (Oniguruma runs them at about 21 MB/s; these run at
 * memory speed for ASCII). The Llama 3 pattern, and Qwen 2/3's with \p{N}
 * instead of \p{N}{1,3}:
 *
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N}{1,3}
 *   | ?[^\s\p{L}\p{N}]+[\r\n]* | \s*[\r\n]+ | \s+(?!\S) | \s+
 *
 * Every code point is matched by some alternative, so the matches tile the
 * text; the scanner returns the end of the leftmost-first match at pos,
 * worked out alternative by alternative (Oniguruma's backtracking order):
 *   1. "'" + s|t|m|d (2 chars) or re|ve|ll (3), case-insensitive; case
 *      folding also maps U+017F (long s) to s.
 *   2. an optional char that is not \r \n L N, then a run of L; or a run of L.
 *   3. 1..max N.
 *   4. an optional ' ' before a run of "other" (not \s L N), then [\r\n]*.
 *   5-7. c is \s; with W the maximal \s run from pos: if W holds \r or \n,
 *      up to and including the last of them (5); else if W reaches the end
 *      of the text, all of W (6); else W minus its last char when that
 *      leaves one (6: the lookahead (?!\S) holds before the last char),
 *      else W (7).
 * Classes come from Oniguruma's tables (hf-uclass.c). Input is valid UTF-8
 * (checked by the caller). Differential tests: tests/unit/test_hf_scan.c.
 */
#include <string.h>

#include "common/tokenizer/hf-internal.h"

static const char PAT_LLAMA3[] =
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
	"?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char PAT_QWEN2[] =
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
	"?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

enum hf_split_kind hf_scan_kind_for(const char *pattern)
{
	if (strcmp(pattern, PAT_LLAMA3) == 0)
		return HF_SPLIT_SCAN_LLAMA3;
	if (strcmp(pattern, PAT_QWEN2) == 0)
		return HF_SPLIT_SCAN_QWEN2;
	return HF_SPLIT_ONIG;
}

/* ASCII classes, the same as the table's for 0..127 */
static uint8_t ascii_class[128];
static void ascii_init(void)
{
	if (ascii_class['a'] == HF_UC_L)
		return;
	for (uint32_t c = 0; c < 128; c++)
		ascii_class[c] = (uint8_t)hf_uclass_of(c);
}

/* Decodes the code point at p[i] (valid UTF-8); stores its length. */
static inline uint32_t decode(const uint8_t *p, size_t i, size_t *len)
{
	uint8_t c = p[i];
	if (c < 0x80) {
		*len = 1;
		return c;
	}
	if (c < 0xE0) {
		*len = 2;
		return (uint32_t)(c & 0x1F) << 6 | (p[i + 1] & 0x3F);
	}
	if (c < 0xF0) {
		*len = 3;
		return (uint32_t)(c & 0x0F) << 12 | (uint32_t)(p[i + 1] & 0x3F) << 6 |
		       (p[i + 2] & 0x3F);
	}
	*len = 4;
	return (uint32_t)(c & 0x07) << 18 | (uint32_t)(p[i + 1] & 0x3F) << 12 |
	       (uint32_t)(p[i + 2] & 0x3F) << 6 | (p[i + 3] & 0x3F);
}

/* Class and length of the char at i (i < n). */
static inline enum hf_uclass cls_at(const uint8_t *p, size_t i, size_t *len)
{
	if (p[i] < 0x80) {
		*len = 1;
		return (enum hf_uclass)ascii_class[p[i]];
	}
	return hf_uclass_of(decode(p, i, len));
}

/* End of the run of class c starting at i. */
static inline size_t run_of(const uint8_t *p, size_t n, size_t i, enum hf_uclass c)
{
	while (i < n) {
		if (p[i] < 0x80) {
			if (ascii_class[p[i]] != c)
				break;
			i++;
			continue;
		}
		size_t l;
		if (cls_at(p, i, &l) != c)
			break;
		i += l;
	}
	return i;
}

static inline bool is_ws(enum hf_uclass c)
{
	return c == HF_UC_S || c == HF_UC_NL;
}

/* alternative 1: length of the contraction at i ('\'' at p[i]), or 0 */
static size_t contraction(const uint8_t *p, size_t n, size_t i)
{
	if (i + 1 >= n)
		return 0;
	uint8_t a = p[i + 1] | 0x20; /* ASCII lower case (non-letters never match below) */
	if (a == 's' || a == 't' || a == 'm' || a == 'd')
		return (p[i + 1] & 0x80) ? 0 : 2;
	if (p[i + 1] == 0xC5 && i + 2 < n && p[i + 2] == 0xBF) /* U+017F folds to s */
		return 3;
	if (i + 2 >= n || (p[i + 1] & 0x80))
		return 0;
	uint8_t b = p[i + 2] | 0x20;
	if (((a == 'r' || a == 'v') && b == 'e') || (a == 'l' && b == 'l'))
		return 3;
	return 0;
}

size_t hf_scan_next(enum hf_split_kind kind, const uint8_t *p, size_t n, size_t pos)
{
	ascii_init();
	size_t l0, l1 = 0;
	enum hf_uclass c0 = cls_at(p, pos, &l0);
	if (p[pos] == '\'') {
		size_t k = contraction(p, n, pos);
		if (k)
			return pos + k;
	}
	size_t i1 = pos + l0;
	enum hf_uclass c1 = i1 < n ? cls_at(p, i1, &l1) : HF_UC_NL; /* NL: "no letter" */
	if (c0 == HF_UC_L)
		return run_of(p, n, i1, HF_UC_L);
	if (c0 != HF_UC_NL && c0 != HF_UC_N && c1 == HF_UC_L && i1 < n)
		return run_of(p, n, i1 + l1, HF_UC_L);
	if (c0 == HF_UC_N) {
		if (kind == HF_SPLIT_SCAN_QWEN2)
			return i1;
		size_t e = i1;
		for (int k = 1; k < 3 && e < n; k++) {
			size_t l;
			if (cls_at(p, e, &l) != HF_UC_N)
				break;
			e += l;
		}
		return e;
	}
	size_t o = SIZE_MAX; /* start of the "other" run of alternative 4 */
	if (c0 == HF_UC_OTHER)
		o = pos;
	else if (p[pos] == ' ' && i1 < n && c1 == HF_UC_OTHER)
		o = i1;
	if (o != SIZE_MAX) {
		size_t e = run_of(p, n, o, HF_UC_OTHER);
		while (e < n && (p[e] == '\r' || p[e] == '\n'))
			e++;
		return e;
	}
	/* c0 is \s: alternatives 5-7 over the maximal whitespace run */
	size_t e = pos, last_nl = SIZE_MAX, last_start = pos;
	while (e < n) {
		size_t l;
		enum hf_uclass c = cls_at(p, e, &l);
		if (!is_ws(c))
			break;
		if (c == HF_UC_NL)
			last_nl = e;
		last_start = e;
		e += l;
	}
	if (last_nl != SIZE_MAX)
		return last_nl + 1;
	if (e == n)
		return e;
	if (last_start > pos)
		return last_start;
	return e;
}
