/* tok.c — adapter to the shared tokenizer and block-hash chain (tok.h). */
#include "tools/mock-engine/tok.h"

#include <stdlib.h>
#include <string.h>

#include "common/errors.h"

#if __has_include("common/blockhash.h")
#include "common/blockhash.h"
#define MOCK_HAVE_BLOCKHASH 1
#else
#define MOCK_HAVE_BLOCKHASH 0
#endif

int mock_tok_init(struct mock_tok *t, const char *kind, const char *path)
{
	t->kind = kind ? kind : "bytes";
	t->path = path;
	if (strcmp(t->kind, "bytes") != 0)
		return SY_EUNSUPPORTED;
	return 0;
}

/* Growable byte string for the rendered template. */
struct sbuf {
	char *p;
	size_t n, cap;
};

static int sb_put(struct sbuf *b, const char *s, size_t len)
{
	if (b->n + len > b->cap) {
		size_t nc = b->cap ? b->cap : 256;
		while (nc < b->n + len)
			nc *= 2;
		char *np = realloc(b->p, nc);
		if (!np)
			return SY_ENOMEM;
		b->p = np;
		b->cap = nc;
	}
	memcpy(b->p + b->n, s, len);
	b->n += len;
	return 0;
}

#define SB_LIT(b, s) sb_put((b), (s), sizeof(s) - 1)

static int render_content(struct sbuf *b, json_t *content)
{
	if (json_is_string(content))
		return sb_put(b, json_string_value(content), json_string_length(content));
	if (json_is_null(content))
		return 0;
	if (!json_is_array(content))
		return SY_EINVAL;
	size_t i;
	json_t *part;
	json_array_foreach(content, i, part) {
		json_t *text = json_object_get(part, "text");
		if (json_is_string(text) &&
		    sb_put(b, json_string_value(text), json_string_length(text)))
			return SY_ENOMEM;
	}
	return 0;
}

int mock_tok_chat(const struct mock_tok *t, json_t *messages, uint32_t **out, size_t *n)
{
	if (!json_is_array(messages))
		return SY_EINVAL;
	struct sbuf b = {0};
	size_t i;
	json_t *m;
	int rc = 0;
	json_array_foreach(messages, i, m) {
		json_t *role = json_object_get(m, "role");
		if (!json_is_string(role)) {
			rc = SY_EINVAL;
			goto out;
		}
		if ((rc = SB_LIT(&b, "<|im_start|>")) ||
		    (rc = sb_put(&b, json_string_value(role), json_string_length(role))) ||
		    (rc = SB_LIT(&b, "\n")) ||
		    (rc = render_content(&b, json_object_get(m, "content"))) ||
		    (rc = SB_LIT(&b, "<|im_end|>\n")))
			goto out;
	}
	if ((rc = SB_LIT(&b, "<|im_start|>assistant\n")))
		goto out;
	rc = mock_tok_text(t, b.p, b.n, out, n);
out:
	free(b.p);
	return rc;
}

int mock_tok_text(const struct mock_tok *t, const char *s, size_t len, uint32_t **out,
		  size_t *n)
{
	(void)t;
	uint32_t *ids = malloc((len ? len : 1) * sizeof(*ids));
	if (!ids)
		return SY_ENOMEM;
	for (size_t i = 0; i < len; i++)
		ids[i] = (uint8_t)s[i];
	*out = ids;
	*n = len;
	return 0;
}

size_t mock_tok_full_pages(size_t n, uint32_t block_size, bool bigram)
{
	if (block_size == 0)
		return 0;
	size_t units = bigram ? (n >= 2 ? n - 1 : 0) : n;
	return units / block_size;
}

ssize_t mock_tok_page_hashes(const uint32_t *tokens, size_t n, uint32_t block_size,
			     bool bigram, int64_t *ids, size_t cap)
{
	size_t pages = mock_tok_full_pages(n, block_size, bigram);
	if (pages > cap)
		return SY_ENOSPC;
	if (pages == 0)
		return 0;
	/* Tokens covering the whole pages only (bigram reads one past). */
	size_t used = pages * block_size + (bigram ? 1 : 0);
#if MOCK_HAVE_BLOCKHASH
	struct sy_blockhash_params p;
	int rc = sy_blockhash_params_init(&p, block_size, bigram, NULL, 0);
	if (rc)
		return rc;
	return sy_blockhash_chain(tokens, used, &p, ids, cap, NULL);
#else
	/* Stand-in until common/blockhash is merged: a chained FNV-1a, NOT the
	 * SGLang ids. Same shape (one id per page, chained). */
	uint64_t h = 1469598103934665603ull;
	for (size_t pg = 0; pg < pages; pg++) {
		size_t lo = pg * block_size, hi = lo + block_size + (bigram ? 1 : 0);
		for (size_t i = lo; i < hi && i < used; i++) {
			h ^= tokens[i];
			h *= 1099511628211ull;
		}
		ids[pg] = (int64_t)h;
	}
	return (ssize_t)pages;
#endif
}

bool mock_tok_hash_is_sglang(void) { return MOCK_HAVE_BLOCKHASH; }
