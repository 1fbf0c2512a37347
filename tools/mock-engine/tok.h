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

/* True when the hashes come from the shared SGLang chain (common/blockhash);
 * kept for /server_info's "mock.hash" field. Always true now. */
bool mock_tok_hash_is_sglang(void);

#endif
