/* respond.h — response bodies as SGLang's OpenAI-compatible server and its
 * native /generate produce them: chat.completion(.chunk), text_completion,
 * /generate {text, output_ids, meta_info}, SSE `data:` framing, errors.
 *
 * Generated text is deterministic: output token i of a request is a word
 * picked by hashing (seed, i), the seed being derived from the prompt's
 * tokens; token ids are 1000 + the word's index. Every builder appends to
 * a caller-owned sbuf.
 */
#ifndef SY_MOCK_RESPOND_H
#define SY_MOCK_RESPOND_H

#include <stddef.h>
#include <stdint.h>

#include "tools/mock-engine/engine.h"

/* Word (with a leading space) of output token `i`; *len set. Static string. */
const char *textgen_word(uint64_t seed, int i, size_t *len);

/* Token id of output token `i`. */
uint32_t textgen_token_id(uint64_t seed, int i);

/* Seed of a prompt (FNV-1a over its token ids). */
uint64_t textgen_seed(const uint32_t *tokens, size_t n);

/* Whole non-streaming body (chat, completion or /generate, by r->kind). */
void respond_full_body(const struct mreq *r, struct sbuf *o);

/* SSE events before the first token (chat: the role delta). */
void respond_stream_head(const struct mreq *r, struct sbuf *o);

/* SSE event of output token `i` (r->gen_text already holds tokens 0..i for
 * /generate's cumulative text). */
void respond_stream_token(const struct mreq *r, int i, struct sbuf *o);

/* SSE events after the last token: finish_reason, optional usage, [DONE]. */
void respond_stream_tail(const struct mreq *r, struct sbuf *o);

/* OpenAI-style error body {"error":{"message","type","param","code"}}. */
void respond_error_body(struct sbuf *o, int status, const char *type, const char *msg);

#endif
