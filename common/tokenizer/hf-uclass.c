/* hf-uclass.c — Unicode classes for the pre-tokeniser scanners, taken from
 * Oniguruma itself so that the hand-written scanners agree with the regex
 * engine HF tokenizers uses (onig crate): \p{L}, \p{N}, \s (ctype SPACE).
 *
 * Table: two stages, 256 code points per block; identical blocks are shared
 * (most of the 0x110000 range is unassigned or one class). Built once per
 * process (pthread_once) by asking Oniguruma about every code point, about
 * 20 ms; read-only afterwards, so threads and forked children share it.
 */
#include <oniguruma.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "common/tokenizer/hf-internal.h"

#define N_BLOCKS (0x110000 >> 8)

const uint16_t *hf_uclass_stage1;
const uint8_t *hf_uclass_stage2;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static int ctype_of(const char *name)
{
	const UChar *p = (const UChar *)name;
	return ONIGENC_PROPERTY_NAME_TO_CTYPE(ONIG_ENCODING_UTF8, (UChar *)p,
					      (UChar *)p + strlen(name));
}

/* Marks the code points that NFC may change or combine (not "inert"):
 * non-starters (ccc != 0); characters whose NFC is not themselves
 * (singletons, composition exclusions); and every non-first element of a
 * canonical decomposition (conservatively: anything that may compose with
 * what precedes it, e.g. Hangul V/T jamo). A text made of inert code points
 * only is already NFC. */
static void nfc_unsafe(uint8_t *bits)
{
	for (utf8proc_int32_t cp = 0; cp < 0x110000; cp++) {
		const utf8proc_property_t *pr = utf8proc_get_property(cp);
		if (pr->combining_class != 0)
			bits[cp >> 3] |= (uint8_t)(1u << (cp & 7));
		bool hangul = cp >= 0xAC00 && cp <= 0xD7A3;
		if (!hangul && pr->decomp_seqindex == UINT16_MAX)
			continue;
		utf8proc_int32_t buf[16];
		int bc = 0;
		utf8proc_ssize_t n = utf8proc_decompose_char(cp, buf, 16, UTF8PROC_DECOMPOSE, &bc);
		if (n <= 0 || n > 16 || (n == 1 && buf[0] == cp))
			continue;
		for (utf8proc_ssize_t k = 1; k < n; k++)
			bits[buf[k] >> 3] |= (uint8_t)(1u << (buf[k] & 7));
		n = utf8proc_normalize_utf32(buf, n, UTF8PROC_COMPOSE | UTF8PROC_STABLE);
		if (n != 1 || buf[0] != cp)
			bits[cp >> 3] |= (uint8_t)(1u << (cp & 7));
	}
}

static void build(void)
{
	OnigEncoding encs[1] = {ONIG_ENCODING_UTF8};
	onig_initialize(encs, 1);
	int ct_l = ctype_of("L"), ct_n = ctype_of("N");
	static uint16_t s1[N_BLOCKS];
	uint8_t *s2 = malloc((size_t)N_BLOCKS * 256); /* worst case; shrunk below */
	uint8_t *unsafe = calloc(0x110000 / 8, 1);
	if (!s2 || !unsafe)
		abort(); /* start-up allocation of ~1 MiB; nothing sensible to do */
	nfc_unsafe(unsafe);
	size_t n_blocks = 0;
	uint8_t blk[256];
	for (uint32_t b = 0; b < N_BLOCKS; b++) {
		for (uint32_t i = 0; i < 256; i++) {
			OnigCodePoint cp = b << 8 | i;
			uint8_t c = HF_UC_OTHER;
			if (cp == '\r' || cp == '\n')
				c = HF_UC_NL;
			else if (ONIGENC_IS_CODE_CTYPE(ONIG_ENCODING_UTF8, cp, ct_l))
				c = HF_UC_L;
			else if (ONIGENC_IS_CODE_CTYPE(ONIG_ENCODING_UTF8, cp, ct_n))
				c = HF_UC_N;
			else if (ONIGENC_IS_CODE_CTYPE(ONIG_ENCODING_UTF8, cp, ONIGENC_CTYPE_SPACE))
				c = HF_UC_S;
			if (unsafe[cp >> 3] & (1u << (cp & 7)))
				c |= HF_UC_NFC_UNSAFE;
			blk[i] = c;
		}
		size_t k;
		for (k = 0; k < n_blocks; k++)
			if (memcmp(s2 + k * 256, blk, 256) == 0)
				break;
		if (k == n_blocks)
			memcpy(s2 + 256 * n_blocks++, blk, 256);
		s1[b] = (uint16_t)k;
	}
	free(unsafe);
	uint8_t *shrunk = realloc(s2, n_blocks * 256);
	hf_uclass_stage2 = shrunk ? shrunk : s2;
	hf_uclass_stage1 = s1;
}

void hf_uclass_init(void)
{
	pthread_once(&once, build);
}

bool hf_utf8_check(const uint8_t *p, size_t n, bool *nfc_unsafe)
{
	size_t i = 0;
	bool unsafe = false;
	while (i < n) {
		/* ASCII run, 8 bytes at a time */
		while (i + 8 <= n) {
			uint64_t w;
			memcpy(&w, p + i, 8);
			if (w & 0x8080808080808080ull)
				break;
			i += 8;
		}
		if (i >= n)
			break;
		uint8_t c = p[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		size_t len;
		uint32_t cp, min;
		if (c >= 0xC2 && c <= 0xDF) {
			len = 2, cp = c & 0x1F, min = 0x80;
		} else if (c >= 0xE0 && c <= 0xEF) {
			len = 3, cp = c & 0x0F, min = 0x800;
		} else if (c >= 0xF0 && c <= 0xF4) {
			len = 4, cp = c & 0x07, min = 0x10000;
		} else {
			return false;
		}
		if (n - i < len)
			return false;
		for (size_t k = 1; k < len; k++) {
			if ((p[i + k] & 0xC0) != 0x80)
				return false;
			cp = cp << 6 | (p[i + k] & 0x3F);
		}
		if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return false;
		if (nfc_unsafe && !unsafe)
			unsafe = (hf_uclass_stage2[(size_t)hf_uclass_stage1[cp >> 8] << 8 | (cp & 255)] &
				  HF_UC_NFC_UNSAFE) != 0;
		i += len;
	}
	if (nfc_unsafe)
		*nfc_unsafe = unsafe;
	return true;
}

bool hf_utf8_valid(const uint8_t *p, size_t n)
{
	return hf_utf8_check(p, n, NULL);
}

/* GPT-2 bytes_to_unicode: printable Latin-1 bytes ('!'..'~', '¡'..'¬',
 * '®'..'ÿ') stand for themselves; the other 68 bytes map, in byte order, to
 * U+0100, U+0101, ... */
static bool printable(unsigned b)
{
	return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
}

uint32_t hf_byte_to_cp(uint8_t b)
{
	if (printable(b))
		return b;
	uint32_t k = 0;
	for (unsigned x = 0; x < b; x++)
		if (!printable(x))
			k++;
	return 0x100 + k;
}

int hf_cp_to_byte(uint32_t cp)
{
	if (cp < 0x100)
		return printable(cp) ? (int)cp : -1;
	uint32_t k = cp - 0x100, seen = 0;
	for (unsigned x = 0; x < 256; x++) {
		if (printable(x))
			continue;
		if (seen++ == k)
			return (int)x;
	}
	return -1;
}
