/* tok.h — the mock engine's adapter to switchyard's tokenizer and block-hash
 * chain (common/tokenizer, common/blockhash).
 *
 * Every call site of the mock goes through these few functions, so the
 * shared implementations swap in here and nowhere else. Chat messages are
 * rendered with the plain ChatML template the router's `bytes` tokenizer
 * uses: `<|im_start|>{role}\n{content}<|im_end|>\n` per message, then
 * `<|im_start|>assistant\n`; the `bytes` tokenizer maps each byte to one
 * token id (0..255).
 */
#ifndef SY_MOCK_TOK_H
#define SY_MOCK_TOK_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct sy_tokenizer;

/* Tokenizer choice (--tokenizer, --tokenizer-path) and the opened shared
 * tokenizer (common/tokenizer/tokenizer.h). */
struct mock_tok {
	const char *kind;          /* "bytes" (default) */
	const char *path;          /* directory of tokenizer.json for "hf"; may be NULL */
	struct sy_tokenizer *tok;  /* owned; mock_tok_close() */
};

/* Opens the tokenizer. Returns 0, or the sy_tokenizer_open() error
 * (SY_EUNSUPPORTED for "hf" before it is built; "off" is refused with
 * SY_EUNSUPPORTED too: the mock needs ids). The reason is logged. */
int mock_tok_init(struct mock_tok *t, const char *kind, const char *path);

void mock_tok_close(struct mock_tok *t);

/* Renders `messages` (a JSON array of {role, content}; content a string or
 * an array of {type:"text", text}) and tokenizes it. On success *out is a
 * malloc'ed array of *n token ids (caller frees). Returns 0, SY_EINVAL for a
 * malformed messages array, or SY_ENOMEM. */
int mock_tok_chat(const struct mock_tok *t, json_t *messages, uint32_t **out, size_t *n);

/* Tokenizes `len` bytes of plain text. Same ownership and errors. */
int mock_tok_text(const struct mock_tok *t, const char *s, size_t len, uint32_t **out,
		  size_t *n);

/* Number of whole pages (only these are cached): floor(units / block_size),
 * units = n (unigram) or n − 1 (bigram, 0 when n < 2). */
size_t mock_tok_full_pages(size_t n, uint32_t block_size, bool bigram);

/* SGLang block ids (sglang-wire.md §11) of the whole pages of `tokens`,
 * written to ids[0..pages) (caller-owned, `cap` entries). Returns the page
 * count or a negative sy_err (SY_ENOSPC when cap is too small). */
ssize_t mock_tok_page_hashes(const uint32_t *tokens, size_t n, uint32_t block_size,
			     bool bigram, int64_t *ids, size_t cap);

/* The whole pages of one token sequence, as the cache and its BlockStored
 * events see them. Arrays malloc'ed, owned by the struct (mock_tok_pages_free). */
struct mock_pages {
	int64_t *hashes;      /* n SGLang page ids (§11), root first */
	uint32_t *tokens;     /* bigram: page i's flattened pairs at [i*tok_per_page,
			       * (i+1)*tok_per_page); NULL in unigram mode, where the
			       * sequence itself is that array */
	size_t n;             /* whole pages (mock_tok_full_pages) */
	size_t tok_per_page;  /* block_size (unigram) or 2 × block_size (bigram) */
};

/* Fills `out` with the whole pages of tokens[0..n) (borrowed). Returns 0,
 * SY_ENOMEM, or the block-hash error (SY_EINVAL for block_size 0). On error
 * `out` holds nothing to free. */
int mock_tok_pages(const uint32_t *tokens, size_t n, uint32_t block_size, bool bigram,
		   struct mock_pages *out);

/* mock_tok_pages() with the chain's first page seeded by `seed` (NULL =
 * unseeded, the same as mock_tok_pages): a LoRA adapter's namespace. */
struct sy_blockhash_digest;
int mock_tok_pages_seeded(const uint32_t *tokens, size_t n, uint32_t block_size, bool bigram,
			  const struct sy_blockhash_digest *seed, struct mock_pages *out);

/* Frees what mock_tok_pages() allocated; `p` is left empty. */
void mock_tok_pages_free(struct mock_pages *p);

/* True when the hashes come from the shared SGLang chain (common/blockhash);
 * kept for /server_info's "mock.hash" field. Always true now. */
bool mock_tok_hash_is_sglang(void);

#endif
