/* tok.c — adapter to the shared tokenizer (common/tokenizer) and block-hash
 * chain (common/blockhash); see tok.h. */
#include "tools/mock-engine/tok.h"

#include <stdlib.h>
#include <string.h>

#include "common/blockhash.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/tokenizer/tokenizer.h"

int mock_tok_init(struct mock_tok *t, const char *kind, const char *path)
{
	t->kind = kind ? kind : "bytes";
	t->path = path;
	t->tok = NULL;
	char err[200];
	int rc = sy_tokenizer_open(t->kind, path, &t->tok, err, sizeof(err));
	if (rc) {
		sy_error("tokenizer: %s", err);
		return rc;
	}
	if (!sy_tokenizer_has_ids(t->tok)) {
		sy_error("tokenizer '%s' gives no token ids; the mock engine needs them", t->kind);
		mock_tok_close(t);
		return SY_EUNSUPPORTED;
	}
	return 0;
}

void mock_tok_close(struct mock_tok *t)
{
	sy_tokenizer_close(t->tok);
	t->tok = NULL;
}

/* Content as one span: a string, null (empty), or the concatenated "text"
 * parts of an array (copied into `scratch`). */
static int content_span(json_t *content, struct sy_textbuf *scratch, struct sy_chat_span *out)
{
	if (json_is_string(content)) {
		*out = (struct sy_chat_span){json_string_value(content), json_string_length(content)};
		return 0;
	}
	if (!content || json_is_null(content)) {
		*out = (struct sy_chat_span){NULL, 0};
		return 0;
	}
	if (!json_is_array(content))
		return SY_EINVAL;
	size_t start = scratch->len, i;
	json_t *part;
	json_array_foreach(content, i, part) {
		json_t *text = json_object_get(part, "text");
		if (json_is_string(text) &&
		    sy_textbuf_append(scratch, json_string_value(text), json_string_length(text)))
			return SY_ENOMEM;
	}
	/* offsets, resolved after all appends (the buffer may move) */
	*out = (struct sy_chat_span){(const char *)(uintptr_t)start, scratch->len - start};
	return 1;
}

int mock_tok_chat(const struct mock_tok *t, json_t *messages, uint32_t **out, size_t *n)
{
	size_t nm = json_array_size(messages);
	if (!json_is_array(messages) || nm == 0)
		return SY_EINVAL;
	struct sy_chat_message *msgs = calloc(nm, sizeof(*msgs));
	bool *rel = calloc(nm, sizeof(*rel));
	struct sy_textbuf scratch;
	sy_textbuf_init(&scratch);
	struct sy_tokens toks;
	sy_tokens_init(&toks);
	int rc = (msgs && rel) ? 0 : SY_ENOMEM;
	for (size_t i = 0; rc == 0 && i < nm; i++) {
		json_t *m = json_array_get(messages, i);
		json_t *role = json_object_get(m, "role");
		if (!json_is_string(role) || json_string_length(role) == 0) {
			rc = SY_EINVAL;
			break;
		}
		msgs[i].role = (struct sy_chat_span){json_string_value(role), json_string_length(role)};
		int k = content_span(json_object_get(m, "content"), &scratch, &msgs[i].content);
		if (k < 0)
			rc = k;
		rel[i] = k == 1;
	}
	for (size_t i = 0; rc == 0 && i < nm; i++)
		if (rel[i])
			msgs[i].content.ptr = scratch.data + (uintptr_t)msgs[i].content.ptr;
	if (rc == 0)
		rc = sy_tokenizer_encode_chat(t->tok, msgs, nm, true, &toks);
	if (rc == 0) {
		*out = toks.ids ? toks.ids : malloc(sizeof(uint32_t));
		*n = toks.len;
		if (!*out)
			rc = SY_ENOMEM;
	} else {
		sy_tokens_free(&toks);
	}
	sy_textbuf_free(&scratch);
	free(msgs);
	free(rel);
	return rc;
}

int mock_tok_text(const struct mock_tok *t, const char *s, size_t len, uint32_t **out,
		  size_t *n)
{
	struct sy_tokens toks;
	sy_tokens_init(&toks);
	int rc = sy_tokenizer_encode_text(t->tok, s, len, &toks);
	if (rc) {
		sy_tokens_free(&toks);
		return rc;
	}
	*out = toks.ids ? toks.ids : malloc(sizeof(uint32_t));
	*n = toks.len;
	return *out ? 0 : SY_ENOMEM;
}

size_t mock_tok_full_pages(size_t n, uint32_t block_size, bool bigram)
{
	if (block_size == 0)
		return 0;
	size_t units = bigram ? (n >= 2 ? n - 1 : 0) : n;
	return units / block_size;
}

static ssize_t page_hashes(const uint32_t *tokens, size_t n, uint32_t block_size, bool bigram,
			   const struct sy_blockhash_digest *seed, int64_t *ids, size_t cap)
{
	size_t pages = mock_tok_full_pages(n, block_size, bigram);
	if (pages > cap)
		return SY_ENOSPC;
	if (pages == 0)
		return 0;
	/* Tokens covering the whole pages only (bigram reads one past). */
	size_t used = pages * block_size + (bigram ? 1 : 0);
	struct sy_blockhash_params p;
	int rc = sy_blockhash_params_init(&p, block_size, bigram, NULL, 0);
	if (rc)
		return rc;
	if (seed) {
		p.has_seed = true;
		p.seed = *seed;
	}
	return sy_blockhash_chain(tokens, used, &p, ids, cap, NULL);
}

ssize_t mock_tok_page_hashes(const uint32_t *tokens, size_t n, uint32_t block_size,
			     bool bigram, int64_t *ids, size_t cap)
{
	return page_hashes(tokens, n, block_size, bigram, NULL, ids, cap);
}

int mock_tok_pages(const uint32_t *tokens, size_t n, uint32_t block_size, bool bigram,
		   struct mock_pages *out)
{
	return mock_tok_pages_seeded(tokens, n, block_size, bigram, NULL, out);
}

int mock_tok_pages_seeded(const uint32_t *tokens, size_t n, uint32_t block_size, bool bigram,
			  const struct sy_blockhash_digest *seed, struct mock_pages *out)
{
	*out = (struct mock_pages){0};
	if (block_size == 0)
		return SY_EINVAL;
	size_t pages = mock_tok_full_pages(n, block_size, bigram);
	int64_t *ids = malloc((pages ? pages : 1) * sizeof(*ids));
	if (!ids)
		return SY_ENOMEM;
	ssize_t k = page_hashes(tokens, n, block_size, bigram, seed, ids, pages);
	if (k < 0 || (size_t)k != pages) {
		free(ids);
		return k < 0 ? (int)k : SY_EINVAL;
	}
	out->hashes = ids;
	out->n = pages;
	out->tok_per_page = block_size;
	if (!bigram)
		return 0;
	/* Bigram pages carry their pairs flattened: [t_i, t_i+1, ...]. */
	out->tok_per_page = 2 * (size_t)block_size;
	out->tokens = malloc((pages * out->tok_per_page + 1) * sizeof(uint32_t));
	if (!out->tokens) {
		mock_tok_pages_free(out);
		return SY_ENOMEM;
	}
	for (size_t u = 0; u < pages * block_size; u++) {
		out->tokens[2 * u] = tokens[u];
		out->tokens[2 * u + 1] = tokens[u + 1];
	}
	return 0;
}

void mock_tok_pages_free(struct mock_pages *p)
{
	free(p->hashes);
	free(p->tokens);
	*p = (struct mock_pages){0};
}

bool mock_tok_hash_is_sglang(void) { return true; }
