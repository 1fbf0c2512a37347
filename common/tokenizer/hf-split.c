/* hf-split.c — pre-tokenisation: the Split steps of a tokenizer.json
 * pre_tokenizer (HF tokenizers `Split`, behaviours Isolated and Removed),
 * run by a hand-written scanner when the pattern is a known one
 * (hf-scan.c) and by Oniguruma otherwise — the engine and syntax
 * (ONIG_SYNTAX_DEFAULT, UTF-8) that HF's onig crate uses. A Sequence of
 * steps is applied recursively: each piece of step k is split by step k+1;
 * the pieces of the last step go to the callback (BPE). ByteLevel steps are
 * not listed here: BPE runs on raw bytes, so the byte mapping is implicit.
 */
#include <oniguruma.h>
#include <stdio.h>

#include "common/errors.h"
#include "common/tokenizer/hf-internal.h"

int hf_regex_compile(const char *pattern, size_t len, bool literal, void **out,
		     char *errbuf, size_t errcap)
{
	hf_uclass_init(); /* also initialises Oniguruma */
	OnigRegex re;
	OnigErrorInfo einfo;
	const UChar *pat = (const UChar *)pattern;
	int r = onig_new(&re, pat, pat + len, ONIG_OPTION_NONE, ONIG_ENCODING_UTF8,
			 literal ? ONIG_SYNTAX_ASIS : ONIG_SYNTAX_DEFAULT, &einfo);
	if (r != ONIG_NORMAL) {
		UChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
		onig_error_code_to_str(msg, r, &einfo);
		if (errbuf && errcap)
			snprintf(errbuf, errcap, "regex \"%.80s\": %s", pattern, (char *)msg);
		return SY_EUNSUPPORTED;
	}
	*out = re;
	return SY_OK;
}

void hf_regex_free(void *re)
{
	if (re)
		onig_free(re);
}

int hf_onig_split(void *regex, enum hf_split_behavior b, const uint8_t *p, size_t n,
		  hf_piece_fn fn, void *ctx)
{
	OnigRegex re = regex;
	OnigRegion *region = onig_region_new();
	if (!region)
		return SY_ENOMEM;
	const UChar *s = p, *end = p + n;
	size_t prev = 0, at = 0;
	int rc = SY_OK;
	while (at <= n) {
		int r = onig_search(re, s, end, s + at, end, region, ONIG_OPTION_NONE);
		if (r == ONIG_MISMATCH)
			break;
		if (r < 0) {
			rc = SY_EMALFORMED;
			break;
		}
		size_t ms = (size_t)region->beg[0], me = (size_t)region->end[0];
		if (me == ms) { /* empty match: step one char on */
			if (ms >= n)
				break;
			size_t l = 1;
			while (ms + l < n && (p[ms + l] & 0xC0) == 0x80)
				l++;
			at = ms + l;
			continue;
		}
		if (ms > prev && (rc = fn(ctx, p + prev, ms - prev)))
			break;
		if (b == HF_ISOLATED && (rc = fn(ctx, p + ms, me - ms)))
			break;
		prev = at = me;
	}
	if (rc == SY_OK && prev < n)
		rc = fn(ctx, p + prev, n - prev);
	onig_region_free(region, 1);
	return rc;
}

struct next_ctx {
	const struct hf_model *m;
	unsigned step;
	hf_piece_fn fn;
	void *ctx;
};

static int next_step(void *c, const uint8_t *p, size_t n)
{
	struct next_ctx *nc = c;
	return hf_pretokenize(nc->m, nc->step, p, n, nc->fn, nc->ctx);
}

int hf_pretokenize(const struct hf_model *m, unsigned from, const uint8_t *p,
		   size_t n, hf_piece_fn fn, void *ctx)
{
	if (n == 0)
		return SY_OK;
	if (from >= m->n_steps)
		return fn(ctx, p, n);
	const struct hf_pretok_step *st = &m->steps[from];
	hf_piece_fn f = fn;
	void *fc = ctx;
	struct next_ctx nc = {m, from + 1, fn, ctx};
	if (from + 1 < m->n_steps) {
		f = next_step;
		fc = &nc;
	}
	if (st->kind == HF_SPLIT_ONIG)
		return hf_onig_split(st->regex, st->behavior, p, n, f, fc);
	/* scanner: matches tile the text (behaviour Isolated) */
	size_t pos = 0;
	while (pos < n) {
		size_t e = hf_scan_next(st->kind, p, n, pos);
		int rc = f(fc, p + pos, e - pos);
		if (rc)
			return rc;
		pos = e;
	}
	return SY_OK;
}
