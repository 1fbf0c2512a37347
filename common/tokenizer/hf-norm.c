/* hf-norm.c — Unicode normalizers of tokenizer.json (HF tokenizers NFC, NFD,
 * NFKC, NFKD) via utf8proc. Pure-ASCII text is unchanged by all four and
 * skips the library (the common case); for NFC, so is text whose every code
 * point is NFC-inert (hf-uclass.c: CJK, emoji, precomposed Latin, ...);
 * otherwise only windows around the unsafe code points go through
 * utf8proc_map (NFC), or the whole text (the other forms).
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

static bool cp_unsafe(const uint8_t *p, size_t i, size_t *len)
{
	uint8_t c = p[i];
	uint32_t cp;
	if (c < 0x80) {
		*len = 1;
		return false;
	}
	if (c < 0xE0) {
		*len = 2;
		cp = (uint32_t)(c & 0x1F) << 6 | (p[i + 1] & 0x3F);
	} else if (c < 0xF0) {
		*len = 3;
		cp = (uint32_t)(c & 0x0F) << 12 | (uint32_t)(p[i + 1] & 0x3F) << 6 | (p[i + 2] & 0x3F);
	} else {
		*len = 4;
		cp = (uint32_t)(c & 0x07) << 18 | (uint32_t)(p[i + 1] & 0x3F) << 12 |
		     (uint32_t)(p[i + 2] & 0x3F) << 6 | (p[i + 3] & 0x3F);
	}
	return (hf_uclass_stage2[(size_t)hf_uclass_stage1[cp >> 8] << 8 | (cp & 255)] &
		HF_UC_NFC_UNSAFE) != 0;
}

/* NFC of valid UTF-8 that has NFC-unsafe code points: only the windows
 * around them go through utf8proc. A window is a run of unsafe code points
 * plus the inert code point before it (a starter they may compose with);
 * inert code points are starters that compose with nothing before them, so
 * text outside the windows is unchanged. */
static int nfc_windows(const uint8_t *p, size_t n, uint8_t **outp, size_t *outn)
{
	struct sy_textbuf ob = {0};
	size_t copied = 0, prev = 0, i = 0;
	int rc = SY_OK;
	bool changed = false;
	while (i < n && rc == SY_OK) {
		size_t l;
		if (!cp_unsafe(p, i, &l)) {
			prev = i;
			i += l;
			continue;
		}
		size_t ws = i > 0 ? prev : 0, j = i;
		while (j < n && cp_unsafe(p, j, &l))
			j += l;
		utf8proc_uint8_t *dst = NULL;
		utf8proc_ssize_t r = utf8proc_map(p + ws, (utf8proc_ssize_t)(j - ws), &dst,
						  UTF8PROC_STABLE | UTF8PROC_COMPOSE);
		if (r < 0) {
			rc = r == UTF8PROC_ERROR_NOMEM ? SY_ENOMEM : SY_EMALFORMED;
			break;
		}
		if ((size_t)r != j - ws || memcmp(dst, p + ws, j - ws) != 0) {
			changed = true;
			if ((rc = sy_textbuf_append(&ob, p + copied, ws - copied)) == SY_OK)
				rc = sy_textbuf_append(&ob, dst, (size_t)r);
			copied = j;
		}
		free(dst);
		i = j;
	}
	if (rc == SY_OK && changed)
		rc = sy_textbuf_append(&ob, p + copied, n - copied);
	if (rc || !changed) {
		sy_textbuf_free(&ob);
		return rc;
	}
	*outp = (uint8_t *)ob.data;
	*outn = ob.len;
	return SY_OK;
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
		return nfc_windows(p, n, outp, outn);
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
