/* hf-load.c — tokenizer.json → struct hf_model (cold path, jansson).
 *
 * Accepted (HF tokenizers serialisation, format "version": "1.0"):
 *   model          BPE (vocab object, merges as "a b" strings or [a, b]
 *                  pairs, ignore_merges); dropout null, byte_fallback false,
 *                  no continuing_subword_prefix / end_of_word_suffix
 *   normalizer     null, NFC, NFD, NFKC, NFKD, or a Sequence of one of them
 *   pre_tokenizer  Split (Regex or String pattern, Isolated or Removed, not
 *                  inverted) and ByteLevel (add_prefix_space false; use_regex
 *                  adds the GPT-2 split), alone or in a Sequence whose last
 *                  step is ByteLevel
 *   added_tokens   matched before BPE; lstrip/rstrip/single_word false
 *   post_processor null, ByteLevel, TemplateProcessing (single), Sequence
 *   decoder        null or ByteLevel
 * The model and added tokens are read in hf-vocab.c.
 * Anything else is SY_EUNSUPPORTED with a message naming the component, so a
 * tokenizer is never silently approximated.
 */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/tokenizer/hf-load.h"

static const char GPT2_PATTERN[] =
	"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

int hf_load_fail(struct load *L, int rc, const char *fmt, ...)
{
	if (L->err && L->errcap) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(L->err, L->errcap, fmt, ap);
		va_end(ap);
	}
	return rc;
}

/* ---- normalizer ---- */

static int norm_one(struct load *L, json_t *n)
{
	const char *type = hf_json_str(n, "type");
	static const struct { const char *name; enum hf_norm_kind k; } kinds[] = {
		{"NFC", HF_NORM_NFC}, {"NFD", HF_NORM_NFD},
		{"NFKC", HF_NORM_NFKC}, {"NFKD", HF_NORM_NFKD},
	};
	if (type && strcmp(type, "Sequence") == 0) {
		json_t *list = json_object_get(n, "normalizers"), *e;
		size_t i;
		json_array_foreach(list, i, e) {
			int rc = norm_one(L, e);
			if (rc)
				return rc;
		}
		return SY_OK;
	}
	for (size_t i = 0; type && i < sizeof kinds / sizeof kinds[0]; i++) {
		if (strcmp(type, kinds[i].name) != 0)
			continue;
		if (L->m->norm != HF_NORM_NONE)
			return hf_load_fail(L, SY_EUNSUPPORTED,
				    "tokenizer.json: more than one Unicode normalizer in a Sequence is not supported");
		L->m->norm = kinds[i].k;
		return SY_OK;
	}
	return hf_load_fail(L, SY_EUNSUPPORTED, "tokenizer.json: normalizer \"%s\" is not supported",
		    type ? type : "?");
}

/* ---- pre_tokenizer ---- */

static int add_step(struct load *L, const char *pattern, size_t len, bool literal,
		    enum hf_split_behavior b)
{
	struct hf_model *m = L->m;
	if (m->n_steps == HF_MAX_PRETOK_STEPS)
		return hf_load_fail(L, SY_EUNSUPPORTED, "tokenizer.json: more than %d Split pre-tokenizers",
			    HF_MAX_PRETOK_STEPS);
	struct hf_pretok_step *st = &m->steps[m->n_steps];
	int rc = hf_regex_compile(pattern, len, literal, &st->regex, L->err, L->errcap);
	if (rc)
		return rc;
	m->n_steps++;
	st->behavior = b;
	st->kind = (!literal && b == HF_ISOLATED) ? hf_scan_kind_for(pattern) : HF_SPLIT_ONIG;
	return SY_OK;
}

static int pretok_one(struct load *L, json_t *p, bool *bytelevel)
{
	const char *type = hf_json_str(p, "type");
	if (type && strcmp(type, "Sequence") == 0) {
		json_t *list = json_object_get(p, "pretokenizers"), *e;
		size_t i;
		json_array_foreach(list, i, e) {
			int rc = pretok_one(L, e, bytelevel);
			if (rc)
				return rc;
		}
		return SY_OK;
	}
	if (*bytelevel)
		return hf_load_fail(L, SY_EUNSUPPORTED,
			    "tokenizer.json: pre_tokenizer \"%s\" after ByteLevel is not supported",
			    type ? type : "?");
	if (type && strcmp(type, "ByteLevel") == 0) {
		if (hf_json_true(p, "add_prefix_space"))
			return hf_load_fail(L, SY_EUNSUPPORTED,
				    "tokenizer.json: ByteLevel pre_tokenizer add_prefix_space is not supported");
		*bytelevel = true;
		if (json_is_false(json_object_get(p, "use_regex")))
			return SY_OK;
		return add_step(L, GPT2_PATTERN, strlen(GPT2_PATTERN), false, HF_ISOLATED);
	}
	if (type && strcmp(type, "Split") == 0) {
		json_t *pat = json_object_get(p, "pattern");
		const char *re = hf_json_str(pat, "Regex"), *lit = hf_json_str(pat, "String");
		const char *beh = hf_json_str(p, "behavior");
		if ((!re && !lit) || hf_json_true(p, "invert"))
			return hf_load_fail(L, SY_EUNSUPPORTED,
				    "tokenizer.json: Split pre_tokenizer needs a Regex or String pattern, not inverted");
		enum hf_split_behavior b;
		if (beh && strcmp(beh, "Isolated") == 0)
			b = HF_ISOLATED;
		else if (beh && strcmp(beh, "Removed") == 0)
			b = HF_REMOVED;
		else
			return hf_load_fail(L, SY_EUNSUPPORTED,
				    "tokenizer.json: Split behavior \"%s\" is not supported (Isolated, Removed)",
				    beh ? beh : "?");
		json_t *s = json_object_get(pat, re ? "Regex" : "String");
		return add_step(L, json_string_value(s), json_string_length(s), !re, b);
	}
	return hf_load_fail(L, SY_EUNSUPPORTED, "tokenizer.json: pre_tokenizer \"%s\" is not supported",
		    type ? type : "?");
}

/* ---- post_processor ---- */

static int post_one(struct load *L, json_t *p)
{
	const char *type = hf_json_str(p, "type");
	if (type && strcmp(type, "Sequence") == 0) {
		json_t *list = json_object_get(p, "processors"), *e;
		size_t i;
		json_array_foreach(list, i, e) {
			int rc = post_one(L, e);
			if (rc)
				return rc;
		}
		return SY_OK;
	}
	if (type && strcmp(type, "ByteLevel") == 0)
		return SY_OK; /* offsets only */
	if (!type || strcmp(type, "TemplateProcessing") != 0)
		return hf_load_fail(L, SY_EUNSUPPORTED, "tokenizer.json: post_processor \"%s\" is not supported",
			    type ? type : "?");
	struct hf_post *post = &L->m->post;
	json_t *single = json_object_get(p, "single"), *specials = json_object_get(p, "special_tokens");
	json_t *item;
	size_t i;
	bool seen_a = false;
	json_array_foreach(single, i, item) {
		json_t *sp = json_object_get(item, "SpecialToken");
		if (json_object_get(item, "Sequence")) {
			seen_a = true;
			continue;
		}
		const char *name = sp ? hf_json_str(sp, "id") : NULL;
		json_t *ids = name ? json_object_get(json_object_get(specials, name), "ids") : NULL;
		size_t k;
		json_t *idv;
		json_array_foreach(ids, k, idv) {
			uint32_t *dst = seen_a ? post->suffix : post->prefix;
			uint32_t *cnt = seen_a ? &post->n_suffix : &post->n_prefix;
			if (*cnt == HF_MAX_TEMPLATE_IDS || !json_is_integer(idv))
				return hf_load_fail(L, SY_EUNSUPPORTED, "tokenizer.json: TemplateProcessing template too long");
			dst[(*cnt)++] = (uint32_t)json_integer_value(idv);
		}
		if (!ids)
			return hf_load_fail(L, SY_EMALFORMED, "tokenizer.json: TemplateProcessing names an unknown special token");
	}
	return SY_OK;
}

/* ---- whole file ---- */

static int load_root(struct load *L, json_t *root)
{
	int rc = hf_load_model(L, root);
	if (rc)
		return rc;
	if ((rc = hf_load_added(L, root)))
		return rc;
	json_t *n = json_object_get(root, "normalizer");
	if (n && !json_is_null(n) && (rc = norm_one(L, n)))
		return rc;
	json_t *p = json_object_get(root, "pre_tokenizer");
	bool bytelevel = false;
	if (p && !json_is_null(p) && (rc = pretok_one(L, p, &bytelevel)))
		return rc;
	if (!bytelevel)
		return hf_load_fail(L, SY_EUNSUPPORTED,
			    "tokenizer.json: pre_tokenizer has no ByteLevel step (only byte-level BPE is supported)");
	json_t *post = json_object_get(root, "post_processor");
	if (post && !json_is_null(post) && (rc = post_one(L, post)))
		return rc;
	json_t *dec = json_object_get(root, "decoder");
	const char *dt = dec ? hf_json_str(dec, "type") : NULL;
	if (dec && !json_is_null(dec) && (!dt || strcmp(dt, "ByteLevel") != 0))
		return hf_load_fail(L, SY_EUNSUPPORTED, "tokenizer.json: decoder \"%s\" is not supported",
			    dt ? dt : "?");
	return SY_OK;
}

int hf_model_load(struct hf_model *m, const char *path, char *errbuf, size_t errcap)
{
	struct load L = {.m = m, .err = errbuf, .errcap = errcap};
	for (unsigned c = 0; c < 0x144; c++)
		L.inv[c] = hf_cp_to_byte(c);
	hf_uclass_init();
	json_error_t jerr;
	FILE *f = fopen(path, "rb");
	if (!f) {
		hf_load_fail(&L, SY_EIO, "cannot open %s: %s", path, strerror(errno));
		hf_model_free(m);
		return SY_EIO;
	}
	json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr);
	fclose(f);
	int rc;
	if (!root) {
		rc = hf_load_fail(&L, SY_EMALFORMED, "%s:%d: %s", path, jerr.line, jerr.text);
	} else {
		rc = load_root(&L, root);
		json_decref(root);
	}
	if (rc)
		hf_model_free(m);
	return rc;
}

void hf_model_free(struct hf_model *m)
{
	free(m->vocab.span);
	free(m->vocab.blob);
	free(m->vocab.flags);
	free(m->vocab.slots);
	free(m->merges.slots);
	free(m->added_store);
	for (unsigned i = 0; i < m->n_steps; i++)
		hf_regex_free(m->steps[i].regex);
	memset(m, 0, sizeof *m);
}
