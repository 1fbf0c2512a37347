/* hf.c — the "hf" tokenizer kind: a Hugging Face tokenizer directory
 * (tokenizer.json + tokenizer_config.json) behind the tokenizer.h ops.
 *
 * Encode = HF tokenizers' Tokenizer::encode(text, add_special_tokens=false):
 * raw added tokens → normaliser → normalised added tokens → pre-tokeniser →
 * BPE (hf-internal.h). encode_prompt adds the post-processor's special
 * tokens (add_special_tokens=true, e.g. Llama 3's <|begin_of_text|>).
 * Decode = Tokenizer::decode with the ByteLevel decoder: token bytes are
 * concatenated and invalid UTF-8 is replaced by U+FFFD per maximal subpart
 * (Rust String::from_utf8_lossy).
 * A per-thread segment cache reuses the ids of text between added tokens
 * (message bodies of rendered chats) seen before; off with
 * SY_TOKENIZER_NO_SEGMENT_CACHE.
 * Chat rendering: the chat template of tokenizer_config.json, identified by
 * fingerprint (chat-template.h).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/errors.h"
#include "common/tokenizer/chat-template.h"
#include "common/tokenizer/hf-internal.h"

struct hf_tokenizer {
	struct sy_tokenizer base;
	struct hf_model model;
	struct sy_chat_template tmpl;
};

static const struct hf_model *model_of(const struct sy_tokenizer *tok)
{
	return &((const struct hf_tokenizer *)tok)->model;
}

/* ---- encode ---- */

static int bpe_piece(void *ctx, const uint8_t *p, size_t n)
{
	const struct hf_model **mp = ((void **)ctx)[0];
	return hf_bpe_word(*mp, p, n, ((void **)ctx)[1]);
}

int hf_encode_piece(const struct hf_model *m, const uint8_t *p, size_t n,
		    struct sy_tokens *out)
{
	void *ctx[2] = {(void *)&m, out};
	return hf_pretokenize(m, 0, p, n, bpe_piece, ctx);
}

/* A piece between raw added tokens: normalise, then split at normalised
 * added tokens. */
static int encode_segment(const struct hf_model *m, const uint8_t *p, size_t n,
			  struct sy_tokens *out)
{
	if (n == 0)
		return SY_OK;
	uint8_t *norm;
	size_t nn;
	int rc = hf_normalize(m->norm, p, n, &norm, &nn);
	if (rc)
		return rc;
	const uint8_t *q = norm ? norm : p;
	size_t pos = 0, at;
	const struct hf_added *a;
	while (rc == SY_OK && hf_added_find(&m->added_norm, q, nn, pos, &at, &a)) {
		rc = hf_encode_piece(m, q + pos, at - pos, out);
		if (rc == SY_OK)
			rc = sy_tokens_append(out, &a->id, 1);
		pos = at + a->len;
	}
	if (rc == SY_OK)
		rc = hf_encode_piece(m, q + pos, nn - pos, out);
	free(norm);
	return rc;
}

/* ---- per-thread segment cache (DESIGN §8: per-message token cache) ----
 *
 * Added tokens cut the text into segments that tokenize independently; in a
 * rendered chat every message body is such a segment ("user\n…" between
 * <|im_start|> and <|im_end|>), so the ids of a segment seen before — the
 * system prompt and earlier turns of a conversation — are reused. Exact:
 * a hit compares the whole segment. Direct-mapped, per thread (no locks),
 * bounded: SEG_SLOTS entries of at most SEG_MAX bytes; freed at thread exit
 * with the word caches' key. */
#define SEG_BITS 9
#define SEG_MIN 64
#define SEG_MAX 16384
struct seg_entry {
	uint64_t serial, hash;
	uint8_t *text;
	uint32_t *ids;
	uint32_t len, nids;
};
static __thread struct seg_entry *seg_cache;
static pthread_key_t seg_key;
static pthread_once_t seg_once = PTHREAD_ONCE_INIT;

static void seg_free(void *unused)
{
	(void)unused;
	for (size_t i = 0; seg_cache && i < (size_t)1 << SEG_BITS; i++) {
		free(seg_cache[i].text);
		free(seg_cache[i].ids);
	}
	free(seg_cache);
	seg_cache = NULL;
}

static void seg_key_create(void)
{
	pthread_key_create(&seg_key, seg_free);
}

static int encode_segment_cached(const struct hf_model *m, const uint8_t *p, size_t n,
				 struct sy_tokens *out)
{
	if (!m->segment_cache || n < SEG_MIN || n > SEG_MAX)
		return encode_segment(m, p, n, out);
	if (!seg_cache) {
		pthread_once(&seg_once, seg_key_create);
		seg_cache = calloc((size_t)1 << SEG_BITS, sizeof *seg_cache);
		if (!seg_cache)
			return encode_segment(m, p, n, out);
		pthread_setspecific(seg_key, (void *)1);
	}
	uint64_t h = hf_hash_bytes(p, n);
	struct seg_entry *e = &seg_cache[h >> (64 - SEG_BITS)];
	if (e->serial == m->serial && e->hash == h && e->len == n && memcmp(e->text, p, n) == 0)
		return sy_tokens_append(out, e->ids, e->nids);
	size_t mark = out->len;
	int rc = encode_segment(m, p, n, out);
	if (rc)
		return rc;
	size_t k = out->len - mark;
	uint8_t *t = malloc(n);
	uint32_t *ids = malloc(k * sizeof *ids + 1);
	if (t && ids) {
		free(e->text);
		free(e->ids);
		memcpy(t, p, n);
		memcpy(ids, out->ids + mark, k * sizeof *ids);
		*e = (struct seg_entry){m->serial, h, t, ids, (uint32_t)n, (uint32_t)k};
	} else {
		free(t);
		free(ids);
	}
	return SY_OK;
}

int hf_encode_text(const struct hf_model *m, const uint8_t *p, size_t n,
		   struct sy_tokens *out)
{
	if (!hf_utf8_valid(p, n))
		return SY_EMALFORMED;
	size_t pos = 0, at;
	const struct hf_added *a;
	int rc = SY_OK;
	while (hf_added_find(&m->added_raw, p, n, pos, &at, &a)) {
		if ((rc = encode_segment_cached(m, p + pos, at - pos, out)) ||
		    (rc = sy_tokens_append(out, &a->id, 1)))
			return rc;
		pos = at + a->len;
	}
	return encode_segment_cached(m, p + pos, n - pos, out);
}

static int hf_op_encode_text(const struct sy_tokenizer *tok, const char *text,
			     size_t len, struct sy_tokens *out)
{
	return hf_encode_text(model_of(tok), (const uint8_t *)text, len, out);
}

static int hf_op_encode_prompt(const struct sy_tokenizer *tok, const char *text,
			       size_t len, struct sy_tokens *out)
{
	const struct hf_post *post = &model_of(tok)->post;
	int rc = sy_tokens_append(out, post->prefix, post->n_prefix);
	if (rc == SY_OK)
		rc = hf_op_encode_text(tok, text, len, out);
	if (rc == SY_OK)
		rc = sy_tokens_append(out, post->suffix, post->n_suffix);
	return rc;
}

/* ---- decode ---- */

/* Length of the valid UTF-8 sequence at p[0..n), or 0 with *bad = length
 * of the maximal invalid subpart (≥ 1) to replace by one U+FFFD. */
static size_t utf8_seq(const uint8_t *p, size_t n, size_t *bad)
{
	uint8_t c = p[0];
	size_t need;
	uint8_t lo = 0x80, hi = 0xBF;
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		need = 1;
	else if (c >= 0xE0 && c <= 0xEF) {
		need = 2;
		if (c == 0xE0)
			lo = 0xA0;
		if (c == 0xED)
			hi = 0x9F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		need = 3;
		if (c == 0xF0)
			lo = 0x90;
		if (c == 0xF4)
			hi = 0x8F;
	} else {
		*bad = 1;
		return 0;
	}
	size_t i = 1;
	for (; i <= need; i++) {
		if (i >= n)
			break;
		uint8_t b = p[i];
		uint8_t l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
		if (b < l || b > h)
			break;
	}
	if (i == need + 1)
		return need + 1;
	*bad = i;
	return 0;
}

static int append_lossy(struct sy_textbuf *out, const uint8_t *p, size_t n)
{
	size_t i = 0, start = 0;
	while (i < n) {
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		size_t bad = 0, l = utf8_seq(p + i, n - i, &bad);
		if (l) {
			i += l;
			continue;
		}
		int rc = sy_textbuf_append(out, p + start, i - start);
		if (rc == SY_OK)
			rc = sy_textbuf_append(out, "\xEF\xBF\xBD", 3);
		if (rc)
			return rc;
		i += bad;
		start = i;
	}
	return sy_textbuf_append(out, p + start, n - start);
}

static int hf_decode(const struct sy_tokenizer *tok, const uint32_t *ids, size_t n,
		     bool skip_special, struct sy_textbuf *out)
{
	const struct hf_vocab *v = &model_of(tok)->vocab;
	size_t total = 0;
	for (size_t i = 0; i < n; i++) {
		if (ids[i] >= v->n_ids || !(v->flags[ids[i]] & HF_TOK_PRESENT))
			return SY_ERANGE;
		total += v->span[ids[i]].len;
	}
	uint8_t *buf = malloc(total ? total : 1);
	if (!buf)
		return SY_ENOMEM;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (skip_special && (v->flags[ids[i]] & HF_TOK_SPECIAL))
			continue;
		const struct hf_span *s = &v->span[ids[i]];
		memcpy(buf + k, v->blob + s->off, s->len);
		k += s->len;
	}
	int rc = append_lossy(out, buf, k);
	free(buf);
	return rc;
}

static int hf_op_decode(const struct sy_tokenizer *tok, const uint32_t *ids, size_t n,
			struct sy_textbuf *out)
{
	return hf_decode(tok, ids, n, false, out);
}

static int hf_op_decode_ex(const struct sy_tokenizer *tok, const uint32_t *ids, size_t n,
			   bool skip_special, struct sy_textbuf *out)
{
	return hf_decode(tok, ids, n, skip_special, out);
}

/* ---- chat ---- */

static int hf_op_render(const struct sy_tokenizer *tok, const struct sy_chat_message *msgs,
			size_t n, const struct sy_chat_opts *opts, struct sy_textbuf *out)
{
	const struct hf_tokenizer *h = (const struct hf_tokenizer *)tok;
	return sy_chat_template_render(&h->tmpl, msgs, n, opts, out);
}

static void hf_op_close(struct sy_tokenizer *tok)
{
	struct hf_tokenizer *h = (struct hf_tokenizer *)tok;
	hf_model_free(&h->model);
	sy_chat_template_free(&h->tmpl);
	free(h);
}

static const char *hf_op_template_name(const struct sy_tokenizer *tok)
{
	return ((const struct hf_tokenizer *)tok)->tmpl.family->name;
}

static const struct sy_tokenizer_ops hf_ops = {
	.kind = "hf",
	.encode_text = hf_op_encode_text,
	.encode_prompt = hf_op_encode_prompt,
	.encode_chat = NULL, /* render, then encode */
	.render_chat = hf_op_render,
	.decode = hf_op_decode,
	.decode_ex = hf_op_decode_ex,
	.template_name = hf_op_template_name,
	.close = hf_op_close,
};

int sy_tokenizer_hf_open(const char *path, unsigned flags, struct sy_tokenizer **out,
			 char *errbuf, size_t errcap)
{
	return sy_tokenizer_hf_open_files(path, NULL, flags, out, errbuf, errcap);
}

int sy_tokenizer_hf_open_files(const char *path, const char *chat_template, unsigned flags,
			       struct sy_tokenizer **out, char *errbuf, size_t errcap)
{
	static atomic_uint_fast64_t serials;
	if (!path || !*path) {
		snprintf(errbuf, errcap, "tokenizer \"hf\" needs a path (the tokenizer directory)");
		return SY_EINVAL;
	}
	/* A tokenizer.json file, or the directory holding it; the config
	 * (tokenizer_config.json) is beside the file. */
	struct stat st;
	char dir[4096];
	bool is_file = stat(path, &st) == 0 && S_ISREG(st.st_mode);
	if (is_file) {
		const char *slash = strrchr(path, '/');
		snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
	} else {
		snprintf(dir, sizeof dir, "%s", path);
	}
	struct hf_tokenizer *h = calloc(1, sizeof *h);
	if (!h)
		return SY_ENOMEM;
	h->base.ops = &hf_ops;
	h->model.segment_cache = !(flags & SY_TOKENIZER_NO_SEGMENT_CACHE);
	h->model.serial = atomic_fetch_add(&serials, 1) + 1;
	char file[8192];
	if (is_file)
		snprintf(file, sizeof file, "%s", path);
	else
		snprintf(file, sizeof file, "%s/tokenizer.json", dir);
	int rc = hf_model_load(&h->model, file, errbuf, errcap);
	if (rc == SY_OK) {
		snprintf(file, sizeof file, "%s/tokenizer_config.json", dir);
		rc = sy_chat_template_load_ex(&h->tmpl, file, chat_template,
					      (flags & SY_TOKENIZER_CHAT_TEMPLATE_FALLBACK) != 0,
					      errbuf, errcap);
		if (rc)
			hf_model_free(&h->model);
	}
	if (rc) {
		free(h);
		return rc;
	}
	*out = &h->base;
	return SY_OK;
}
