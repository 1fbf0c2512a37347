/* hf-norm.c — Unicode normalizers of tokenizer.json (HF tokenizers NFC, NFD,
 * NFKC, NFKD) via utf8proc. Pure-ASCII text is unchanged by all four and
 * skips the library (the common case); for NFC, so is text whose every code
 * point is NFC-inert (hf-uclass.c: CJK, emoji, precomposed Latin, ...).
 * Otherwise utf8proc_map builds the normalized copy.
 */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "common/errors.h"
#include "common/tokenizer/hf-internal.h"

static bool all_ascii(const uint8_t *p, size_t n)
{
	size_t i = 0;
	uint64_t acc = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		acc |= w;
	}
	for (; i < n; i++)
		acc |= p[i];
	return !(acc & 0x8080808080808080ull);
}

int hf_normalize(enum hf_norm_kind k, const uint8_t *p, size_t n,
		 uint8_t **outp, size_t *outn)
{
	*outp = NULL;
	*outn = n;
	if (k == HF_NORM_NONE || all_ascii(p, n))
		return SY_OK;
	if (k == HF_NORM_NFC) {
		bool unsafe;
		if (!hf_utf8_check(p, n, &unsafe))
			return SY_EMALFORMED;
		if (!unsafe)
			return SY_OK; /* every code point NFC-inert: already NFC */
	}
	utf8proc_option_t opt = UTF8PROC_STABLE;
	switch (k) {
	case HF_NORM_NFC: opt |= UTF8PROC_COMPOSE; break;
	case HF_NORM_NFD: opt |= UTF8PROC_DECOMPOSE; break;
	case HF_NORM_NFKC: opt |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
	case HF_NORM_NFKD: opt |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
	default: return SY_EINVAL;
	}
	if (n > (size_t)(SIZE_MAX / 64))
		return SY_ERANGE;
	utf8proc_uint8_t *dst = NULL;
	utf8proc_ssize_t r = utf8proc_map(p, (utf8proc_ssize_t)n, &dst, opt);
	if (r < 0)
		return r == UTF8PROC_ERROR_NOMEM ? SY_ENOMEM : SY_EMALFORMED;
	if ((size_t)r == n && memcmp(dst, p, n) == 0) {
		free(dst);
		return SY_OK;
	}
	*outp = dst;
	*outn = (size_t)r;
	return SY_OK;
}
