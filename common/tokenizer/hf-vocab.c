/* hf-vocab.c — the BPE model and the added tokens of tokenizer.json:
 * vocabulary (byte-level strings decoded to raw bytes, in one blob, with an
 * open-addressing hash whose slots hold each token's first 8 bytes),
 * merges ((left, right) → rank, merged id), the HF_TOK_WHOLE marks, and
 * the added-token sets (raw and normalised), sorted for leftmost-longest
 * matching (hf-added.c).
 */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "common/errors.h"
#include "common/tokenizer/hf-load.h"

uint64_t hf_hash_bytes(const uint8_t *p, size_t n)
{
	return XXH3_64bits(p, n);
}

/* First min(n, 8) bytes, zero-padded, as a little-endian word. */
static inline uint64_t head8(const uint8_t *p, size_t n)
{
	uint64_t w = 0;
	memcpy(&w, p, n < 8 ? n : 8);
	return w;
}

/* Slot hash: short words mix their 8-byte head (no call), longer XXH3. */
static inline uint64_t word_hash(const uint8_t *p, size_t n, uint64_t h8)
{
	if (n <= 8) {
		uint64_t x = (h8 ^ (uint64_t)n << 59) * 0x9E3779B97F4A7C15ull;
		return x ^ (x >> 29);
	}
	return hf_hash_bytes(p, n);
}

uint32_t hf_vocab_find(const struct hf_vocab *v, const uint8_t *p, size_t n)
{
	if (n > 255)
		return HF_NO_ID; /* no vocabulary token is that long (checked at load) */
	uint64_t h8 = head8(p, n), h = word_hash(p, n, h8);
	uint32_t tl = (uint32_t)(h >> 40) << 8 | (uint32_t)n, i = (uint32_t)h & v->mask;
	for (;;) {
		const struct hf_vslot *s = &v->slots[i];
		if (s->id == HF_NO_ID)
			return HF_NO_ID;
		if (s->tag_len == tl && s->head == h8) {
			if (n <= 8)
				return s->id;
			const struct hf_span *sp = &v->span[s->id];
			if (memcmp(v->blob + sp->off + 8, p + 8, n - 8) == 0)
				return s->id;
		}
		i = (i + 1) & v->mask;
	}
}

static void vocab_insert(struct hf_vocab *v, uint32_t id)
{
	const struct hf_span *s = &v->span[id];
	const uint8_t *p = v->blob + s->off;
	uint64_t h8 = head8(p, s->len), h = word_hash(p, s->len, h8);
	uint32_t i = (uint32_t)h & v->mask;
	while (v->slots[i].id != HF_NO_ID)
		i = (i + 1) & v->mask;
	v->slots[i] = (struct hf_vslot){h8, id, (uint32_t)(h >> 40) << 8 | s->len};
}

/* Appends bytes to the blob; returns the offset or -1 on ENOMEM. */
static long blob_add(struct hf_vocab *v, const void *p, size_t n)
{
	if (v->blob_len + n > v->blob_cap) {
		size_t cap = v->blob_cap ? v->blob_cap * 2 : 1 << 20;
		while (cap < v->blob_len + n)
			cap *= 2;
		uint8_t *b = realloc(v->blob, cap);
		if (!b)
			return -1;
		v->blob = b;
		v->blob_cap = cap;
	}
	memcpy(v->blob + v->blob_len, p, n);
	v->blob_len += n;
	return (long)(v->blob_len - n);
}

/* Byte-level string (UTF-8 of alphabet code points) → raw bytes in dst
 * (capacity ≥ strlen). Returns the length or -1 if a char is outside the
 * alphabet. */
static long bytelevel_decode(const struct load *L, const char *s, size_t n, uint8_t *dst)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t i = 0, k = 0;
	while (i < n) {
		uint32_t cp;
		if (p[i] < 0x80) {
			cp = p[i++];
		} else if ((p[i] & 0xE0) == 0xC0 && i + 1 < n) {
			cp = (uint32_t)(p[i] & 0x1F) << 6 | (p[i + 1] & 0x3F);
			i += 2;
		} else {
			return -1;
		}
		if (cp >= 0x144 || L->inv[cp] < 0)
			return -1;
		dst[k++] = (uint8_t)L->inv[cp];
	}
	return (long)k;
}

/* ---- model: vocab and merges ---- */

static int load_vocab(struct load *L, json_t *model, json_t *added)
{
	struct hf_vocab *v = &L->m->vocab;
	json_t *vocab = json_object_get(model, "vocab");
	if (!json_is_object(vocab))
		return hf_load_fail(L, SY_EMALFORMED, "tokenizer.json: model.vocab is not an object");
	uint64_t max_id = 0;
	const char *key;
	json_t *val;
	json_object_foreach(vocab, key, val) {
		if (!json_is_integer(val) || json_integer_value(val) < 0 ||
		    json_integer_value(val) >= UINT32_MAX - 1)
			return hf_load_fail(L, SY_EMALFORMED, "tokenizer.json: vocab id of \"%.40s\"", key);
		if ((uint64_t)json_integer_value(val) > max_id)
			max_id = (uint64_t)json_integer_value(val);
	}
	size_t i;
	json_array_foreach(added, i, val) {
		json_t *id = json_object_get(val, "id");
		if (!json_is_integer(id) || json_integer_value(id) < 0 ||
		    json_integer_value(id) >= UINT32_MAX - 1)
			return hf_load_fail(L, SY_EMALFORMED, "tokenizer.json: added_tokens[%zu].id", i);
		if ((uint64_t)json_integer_value(id) > max_id)
			max_id = (uint64_t)json_integer_value(id);
	}
	v->n_ids = (uint32_t)max_id + 1;
	v->span = calloc(v->n_ids, sizeof *v->span);
	v->flags = calloc(v->n_ids, 1);
	size_t nslots = 1024;
	while (nslots < (size_t)json_object_size(vocab) * 2)
		nslots *= 2;
	v->slots = malloc(nslots * sizeof *v->slots);
	if (!v->span || !v->flags || !v->slots)
		return hf_load_fail(L, SY_ENOMEM, "tokenizer.json: out of memory");
	memset(v->slots, 0xFF, nslots * sizeof *v->slots);
	v->mask = (uint32_t)(nslots - 1);
	uint8_t buf[1024];
	json_object_foreach(vocab, key, val) {
		size_t kl = strlen(key);
		uint32_t id = (uint32_t)json_integer_value(val);
		long bl = kl <= sizeof buf ? bytelevel_decode(L, key, kl, buf) : -1;
		if (bl > 255)
			return hf_load_fail(L, SY_EUNSUPPORTED,
				    "tokenizer.json: vocab token \"%.40s\" longer than 255 bytes", key);
		if (bl < 0)
			return hf_load_fail(L, SY_EUNSUPPORTED,
				    "tokenizer.json: vocab token \"%.40s\" is not in the ByteLevel "
				    "alphabet (only byte-level BPE is supported)", key);
		if (v->flags[id] & HF_TOK_PRESENT)
			return hf_load_fail(L, SY_EMALFORMED, "tokenizer.json: vocab id %u twice", id);
		long off = blob_add(v, buf, (size_t)bl);
		if (off < 0)
			return hf_load_fail(L, SY_ENOMEM, "tokenizer.json: out of memory");
		v->span[id] = (struct hf_span){(uint32_t)off, (uint32_t)bl};
		v->flags[id] = HF_TOK_PRESENT;
		vocab_insert(v, id);
	}
	for (unsigned b = 0; b < 256; b++) {
		uint8_t c = (uint8_t)b;
		v->byte_id[b] = hf_vocab_find(v, &c, 1);
		if (v->byte_id[b] == HF_NO_ID)
			return hf_load_fail(L, SY_EUNSUPPORTED,
				    "tokenizer.json: vocab lacks the ByteLevel token of byte 0x%02x", b);
	}
	return SY_OK;
}

/* Splits a merge entry into its two byte-level strings. */
static bool merge_parts(json_t *e, const char **a, size_t *al, const char **b, size_t *bl)
{
	if (json_is_string(e)) {
		const char *s = json_string_value(e);
		const char *sp = strchr(s, ' ');
		if (!sp || strchr(sp + 1, ' '))
			return false;
		*a = s, *al = (size_t)(sp - s), *b = sp + 1, *bl = strlen(sp + 1);
		return true;
	}
	if (json_is_array(e) && json_array_size(e) == 2 &&
	    json_is_string(json_array_get(e, 0)) && json_is_string(json_array_get(e, 1))) {
		*a = json_string_value(json_array_get(e, 0));
		*b = json_string_value(json_array_get(e, 1));
		*al = strlen(*a), *bl = strlen(*b);
		return true;
	}
	return false;
}

static int load_merges(struct load *L, json_t *model)
{
	struct hf_vocab *v = &L->m->vocab;
	struct hf_merges *mg = &L->m->merges;
	json_t *merges = json_object_get(model, "merges");
	if (!json_is_array(merges))
		return hf_load_fail(L, SY_EMALFORMED, "tokenizer.json: model.merges is not an array");
	size_t n = json_array_size(merges), nslots = 1024;
	while (nslots < n * 2)
		nslots *= 2;
	mg->slots = malloc(nslots * sizeof *mg->slots);
	if (!mg->slots)
		return hf_load_fail(L, SY_ENOMEM, "tokenizer.json: out of memory");
	for (size_t i = 0; i < nslots; i++)
		mg->slots[i].key = UINT64_MAX;
	mg->mask = nslots - 1;
	uint8_t buf[2048];
	size_t i;
	json_t *e;
	json_array_foreach(merges, i, e) {
		const char *a, *b;
		size_t al, bl;
		if (!merge_parts(e, &a, &al, &b, &bl) || al + bl > 1024)
			return hf_load_fail(L, SY_EMALFORMED, "tokenizer.json: merges[%zu] is not a pair", i);
		long la = bytelevel_decode(L, a, al, buf);
		long lb = la < 0 ? -1 : bytelevel_decode(L, b, bl, buf + la);
		if (lb < 0)
			return hf_load_fail(L, SY_EMALFORMED, "tokenizer.json: merges[%zu] outside the ByteLevel alphabet", i);
		uint32_t ia = hf_vocab_find(v, buf, (size_t)la);
		uint32_t ib = hf_vocab_find(v, buf + la, (size_t)lb);
		uint32_t im = hf_vocab_find(v, buf, (size_t)(la + lb));
		if (ia == HF_NO_ID || ib == HF_NO_ID || im == HF_NO_ID)
			return hf_load_fail(L, SY_EMALFORMED, "tokenizer.json: merges[%zu] names a token not in the vocab", i);
		uint64_t key = hf_pair_key(ia, ib);
		uint64_t s = (key * 0x9E3779B97F4A7C15ull) >> 20 & mg->mask;
		while (mg->slots[s].key != UINT64_MAX && mg->slots[s].key != key)
			s = (s + 1) & mg->mask;
		if (mg->slots[s].key == key)
			continue; /* a repeated pair keeps its first (lowest) rank */
		mg->slots[s] = (struct hf_merge_slot){key, (uint32_t)i, im};
		mg->count++;
	}
	return SY_OK;
}

int hf_load_model(struct load *L, json_t *root)
{
	json_t *model = json_object_get(root, "model");
	const char *type = model ? hf_json_str(model, "type") : NULL;
	if (!model || (type && strcmp(type, "BPE") != 0) ||
	    (!type && !json_object_get(model, "merges")))
		return hf_load_fail(L, SY_EUNSUPPORTED,
			    "tokenizer.json: model type \"%s\" is not supported (only BPE)",
			    type ? type : "?");
	json_t *dropout = json_object_get(model, "dropout");
	if (dropout && !json_is_null(dropout))
		return hf_load_fail(L, SY_EUNSUPPORTED, "tokenizer.json: BPE dropout is not supported");
	if (hf_json_true(model, "byte_fallback"))
		return hf_load_fail(L, SY_EUNSUPPORTED, "tokenizer.json: BPE byte_fallback is not supported");
	if (!hf_json_null_or_empty(model, "continuing_subword_prefix") ||
	    !hf_json_null_or_empty(model, "end_of_word_suffix"))
		return hf_load_fail(L, SY_EUNSUPPORTED,
			    "tokenizer.json: BPE continuing_subword_prefix/end_of_word_suffix are not supported");
	L->m->ignore_merges = hf_json_true(model, "ignore_merges");
	json_t *added = json_object_get(root, "added_tokens");
	if (added && !json_is_array(added))
		return hf_load_fail(L, SY_EMALFORMED, "tokenizer.json: added_tokens is not an array");
	json_t *empty = json_array();
	int rc = load_vocab(L, model, added ? added : empty);
	json_decref(empty);
	if (rc)
		return rc;
	if ((rc = load_merges(L, model)))
		return rc;
	if (!L->m->ignore_merges && (rc = hf_bpe_mark_whole(L->m)))
		return hf_load_fail(L, rc, "tokenizer.json: out of memory");
	return SY_OK;
}

/* ---- added tokens ---- */

static int cmp_added(const void *a, const void *b)
{
	const struct hf_added *x = a, *y = b;
	if (x->content[0] != y->content[0])
		return x->content[0] < y->content[0] ? -1 : 1;
	if (x->len != y->len)
		return x->len > y->len ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static void build_set(struct hf_added_set *s, struct hf_added *toks, uint32_t n)
{
	qsort(toks, n, sizeof *toks, cmp_added);
	s->toks = toks;
	s->n = n;
	uint32_t k = 0;
	for (unsigned b = 0; b <= 256; b++) {
		s->first[b] = k;
		while (b < 256 && k < n && toks[k].content[0] == b)
			k++;
		if (b < 256)
			s->can_start[b] = s->first[b] != k;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (toks[i].len == 1) {
			s->has_len1[toks[i].content[0]] = true;
			continue;
		}
		unsigned pb = (unsigned)toks[i].content[0] << 8 | toks[i].content[1];
		s->pair[pb >> 3] |= (uint8_t)(1u << (pb & 7));
	}
}

int hf_load_added(struct load *L, json_t *root)
{
	struct hf_model *m = L->m;
	struct hf_vocab *v = &m->vocab;
	json_t *added = json_object_get(root, "added_tokens");
	size_t n = added ? json_array_size(added) : 0;
	m->added_store = calloc(n ? n : 1, sizeof *m->added_store);
	if (!m->added_store)
		return hf_load_fail(L, SY_ENOMEM, "tokenizer.json: out of memory");
	uint32_t n_raw = 0, n_norm = 0;
	/* two passes: non-normalised first (front), normalised after */
	for (int pass = 0; pass < 2; pass++) {
		size_t i;
		json_t *t;
		json_array_foreach(added, i, t) {
			const char *content = hf_json_str(t, "content");
			if (!content || !*content)
				return hf_load_fail(L, SY_EMALFORMED, "tokenizer.json: added_tokens[%zu].content", i);
			if (hf_json_true(t, "lstrip") || hf_json_true(t, "rstrip") || hf_json_true(t, "single_word"))
				return hf_load_fail(L, SY_EUNSUPPORTED,
					    "tokenizer.json: added token \"%.40s\" uses lstrip/rstrip/single_word, "
					    "which is not supported", content);
			bool normalized = hf_json_true(t, "normalized");
			if (normalized != (pass == 1))
				continue;
			uint32_t id = (uint32_t)json_integer_value(json_object_get(t, "id"));
			size_t cl = strlen(content);
			long off = blob_add(v, content, cl);
			if (off < 0)
				return hf_load_fail(L, SY_ENOMEM, "tokenizer.json: out of memory");
			v->span[id] = (struct hf_span){(uint32_t)off, (uint32_t)cl};
			v->flags[id] |= HF_TOK_PRESENT | HF_TOK_ADDED;
			if (hf_json_true(t, "special"))
				v->flags[id] |= HF_TOK_SPECIAL;
			m->added_store[n_raw + n_norm] = (struct hf_added){id, (uint32_t)cl, NULL};
			if (pass == 0)
				n_raw++;
			else
				n_norm++;
		}
	}
	/* blob may have moved while adding: resolve content pointers now */
	for (uint32_t k = 0; k < n_raw + n_norm; k++) {
		struct hf_added *a = &m->added_store[k];
		a->content = v->blob + v->span[a->id].off;
	}
	build_set(&m->added_raw, m->added_store, n_raw);
	build_set(&m->added_norm, m->added_store + n_raw, n_norm);
	return SY_OK;
}

