/* bytes.c — the "bytes" tokenizer: token id = byte value.
 *
 * Every byte of the UTF-8 text is one token, id 0..255 (so "é" = C3 A9 is
 * two tokens, 195 and 169). No vocabulary, no state: one static instance
 * serves every open. Chat messages use the plain ChatML rendering of
 * tokenizer.h, tokenized without building the text: the rendering's pieces
 * are appended as ids directly after one reserve of the exact length.
 * Decode gives the bytes back; an id above 255 is SY_ERANGE.
 */
#include <stdint.h>

#include "common/errors.h"
#include "common/tokenizer/tokenizer-impl.h"

static void bytes_to_ids(uint32_t *dst, const char *text, size_t len)
{
	const unsigned char *p = (const unsigned char *)text;
	for (size_t i = 0; i < len; i++)
		dst[i] = p[i];
}

static int bytes_encode_text(const struct sy_tokenizer *tok, const char *text,
			     size_t len, struct sy_tokens *out)
{
	(void)tok;
	if (len == 0) /* nothing to add; out->ids may still be NULL */
		return SY_OK;
	int rc = sy_tokens_reserve(out, len);
	if (rc)
		return rc;
	bytes_to_ids(out->ids + out->len, text, len);
	out->len += len;
	return SY_OK;
}

/* emit callback: room was reserved for the whole rendering */
static int tokens_emit(void *ctx, const char *p, size_t len)
{
	struct sy_tokens *out = ctx;
	if (len == 0)
		return SY_OK;
	bytes_to_ids(out->ids + out->len, p, len);
	out->len += len;
	return SY_OK;
}

static int bytes_encode_chat(const struct sy_tokenizer *tok,
			     const struct sy_chat_message *msgs, size_t n,
			     const struct sy_chat_opts *opts, struct sy_tokens *out)
{
	(void)tok;
	bool add_generation_prompt = opts->add_generation_prompt;
	size_t len;
	int rc = sy_chatml_length(msgs, n, add_generation_prompt, &len);
	if (rc == SY_OK)
		rc = sy_tokens_reserve(out, len);
	if (rc)
		return rc;
	return sy_chatml_walk(msgs, n, add_generation_prompt, tokens_emit, out);
}

static int bytes_decode(const struct sy_tokenizer *tok, const uint32_t *ids,
			size_t n, struct sy_textbuf *out)
{
	(void)tok;
	for (size_t i = 0; i < n; i++)
		if (ids[i] > 255)
			return SY_ERANGE;
	for (size_t i = 0; i < n;) { /* 256-byte chunks through a stack buffer */
		char chunk[256];
		size_t m = n - i < sizeof chunk ? n - i : sizeof chunk;
		for (size_t j = 0; j < m; j++)
			chunk[j] = (char)(unsigned char)ids[i + j];
		int rc = sy_textbuf_append(out, chunk, m);
		if (rc)
			return rc; /* the generic layer restores out->len */
		i += m;
	}
	return SY_OK;
}

static void bytes_close(struct sy_tokenizer *tok)
{
	(void)tok; /* static instance */
}

static const struct sy_tokenizer_ops bytes_ops = {
	.kind = "bytes",
	.encode_text = bytes_encode_text,
	.encode_chat = bytes_encode_chat,
	.render_chat = NULL, /* plain ChatML */
	.decode = bytes_decode,
	.close = bytes_close,
};

static struct sy_tokenizer bytes_instance = {.ops = &bytes_ops};

int sy_tokenizer_bytes_open(const char *path, struct sy_tokenizer **out,
			    char *errbuf, size_t errcap)
{
	(void)path;
	(void)errbuf;
	(void)errcap;
	*out = &bytes_instance;
	return SY_OK;
}
