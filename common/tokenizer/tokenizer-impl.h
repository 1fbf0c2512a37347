/* tokenizer-impl.h — what a tokenizer kind implements (internal to
 * common/tokenizer/; callers use tokenizer.h only).
 *
 * A kind provides a static ops table and an open function listed in
 * tokenizer.c. The generic layer (tokenizer.c) checks arguments, restores an
 * output container's length when an op fails, and supplies defaults:
 * render_chat = the plain ChatML rendering, encode_chat = encode_text of the
 * rendered text. A kind overrides encode_chat when it can do better (bytes:
 * no intermediate text). An op that a kind lacks (NULL encode_text /
 * decode) is SY_EUNSUPPORTED.
 * Ops receive validated arguments: non-NULL tok and out, spans with
 * ptr != NULL or len == 0, every role non-empty.
 */
#ifndef SY_COMMON_TOKENIZER_IMPL_H
#define SY_COMMON_TOKENIZER_IMPL_H

#include "common/tokenizer/tokenizer.h"

struct sy_tokenizer_ops {
	const char *kind; /* static name, as passed to sy_tokenizer_open() */
	int (*encode_text)(const struct sy_tokenizer *tok, const char *text,
			   size_t len, struct sy_tokens *out);
	/* add_special_tokens=true; NULL = encode_text */
	int (*encode_prompt)(const struct sy_tokenizer *tok, const char *text,
			     size_t len, struct sy_tokens *out);
	int (*encode_chat)(const struct sy_tokenizer *tok,
			   const struct sy_chat_message *msgs, size_t n,
			   const struct sy_chat_opts *opts, struct sy_tokens *out);
	int (*render_chat)(const struct sy_tokenizer *tok,
			   const struct sy_chat_message *msgs, size_t n,
			   const struct sy_chat_opts *opts, struct sy_textbuf *out);
	int (*decode)(const struct sy_tokenizer *tok, const uint32_t *ids,
		      size_t n, struct sy_textbuf *out);
	/* NULL = decode (skip_special ignored) */
	int (*decode_ex)(const struct sy_tokenizer *tok, const uint32_t *ids,
			 size_t n, bool skip_special, struct sy_textbuf *out);
	/* NULL = "chatml" */
	const char *(*template_name)(const struct sy_tokenizer *tok);
	void (*close)(struct sy_tokenizer *tok); /* frees tok and its state */
};

/* Every tokenizer starts with this header; a kind with state embeds it first
 * in a larger struct and casts back (container_of style). */
struct sy_tokenizer {
	const struct sy_tokenizer_ops *ops;
};

/* Walks the plain ChatML rendering (tokenizer.h) piece by piece, calling
 * emit(ctx, bytes, len) for each piece in order; stops at the first non-zero
 * return and returns it. Messages must be validated first. */
typedef int (*sy_chatml_emit_fn)(void *ctx, const char *p, size_t len);
int sy_chatml_walk(const struct sy_chat_message *msgs, size_t n,
		   bool add_generation_prompt, sy_chatml_emit_fn emit, void *ctx);

/* Bytes of the plain ChatML rendering; SY_ERANGE on size_t overflow. */
int sy_chatml_length(const struct sy_chat_message *msgs, size_t n,
		     bool add_generation_prompt, size_t *len);

/* Kind constructors (listed in tokenizer.c). errbuf as sy_tokenizer_open(). */
int sy_tokenizer_bytes_open(const char *path, struct sy_tokenizer **out,
			    char *errbuf, size_t errcap);
int sy_tokenizer_off_open(const char *path, struct sy_tokenizer **out,
			  char *errbuf, size_t errcap);
/* As sy_tokenizer_hf_open with `path` a tokenizer directory or a
 * tokenizer.json file (its config beside it) and the chat template text
 * from the file `chat_template` when not NULL. */
int sy_tokenizer_hf_open_files(const char *path, const char *chat_template, unsigned flags,
			       struct sy_tokenizer **out, char *errbuf, size_t errcap);
int sy_tokenizer_hf_open(const char *path, unsigned flags, struct sy_tokenizer **out,
			 char *errbuf, size_t errcap); /* hf.c */

#endif
