/* tokenizer.h — text and chat messages → token ids, one interface for every
 * tokenizer kind, shared by the router and the mock engine so that both
 * tokenize a request identically (the ids feed the SGLang block-hash chain,
 * common/blockhash.h, and must equal what the engine prefills).
 *
 * Kinds (`--tokenizer bytes|hf|off`, YAML `router.tokenizer: {kind, path}`):
 *   "bytes"  token id = each byte of the UTF-8 text (0..255); decode gives the
 *            bytes back. Path ignored. Chat messages are rendered with the
 *            plain ChatML rendering below, then tokenized byte by byte.
 *   "hf"     a Hugging Face tokenizer directory: tokenizer.json (byte-level
 *            BPE: Qwen 2/3, Llama 3, GPT-2 style) + tokenizer_config.json
 *            (chat_template, bos/eos tokens). Token ids equal HF tokenizers'
 *            (Rust) encode(text, add_special_tokens=false); chat text equals
 *            what the model's Jinja chat template renders (built-in C
 *            renderers chosen by the template's fingerprint; see
 *            docs/tokenizer.md). Open fails with a message naming any
 *            unsupported component or unknown chat template.
 *   "off"    no tokenizer. Open succeeds and returns a tokenizer whose
 *            encode and decode calls return SY_EUNSUPPORTED (leaving `out`
 *            unchanged); render_chat still works, so a caller can estimate
 *            the size of the rendered prompt. Callers check
 *            sy_tokenizer_has_ids() once and fall back to a size estimate.
 *
 * Plain chat rendering (ChatML; also docs/tokenizer.md). For each message, in
 * order:
 *     "<|im_start|>" role "\n" content "<|im_end|>" "\n"
 * and, when add_generation_prompt is true, once at the end:
 *     "<|im_start|>assistant\n"
 * Roles are written as given (any non-empty byte string; an empty role is
 * SY_EINVAL); content may be empty. Nothing is escaped or trimmed. Fields
 * beyond role and content (name, tool_call_id) are not rendered.
 *
 * Ownership: a tokenizer is immutable after open; it may be shared by threads
 * and inherited across fork(). Output containers (struct sy_tokens, struct
 * sy_textbuf) are owned by the caller; encode/render/decode APPEND to them,
 * so one container can be reset and reused per request without reallocating.
 * On any error an output container is left exactly as it was (same length;
 * its capacity may have grown).
 *
 * Errors: 0 on success or a negative sy_err (common/errors.h): SY_EINVAL
 * (bad argument, unknown kind, empty role), SY_ENOMEM, SY_ERANGE (size
 * overflow, or decode of an id the tokenizer does not have),
 * SY_EUNSUPPORTED (component not supported, or no ids with "off"),
 * SY_EMALFORMED (text that is not valid UTF-8 given to "hf"; malformed
 * JSON in tools / tool_calls / template kwargs).
 */
#ifndef SY_COMMON_TOKENIZER_H
#define SY_COMMON_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- output containers (caller-owned) ---- */

/* A growable array of token ids. Zero-initialised (or sy_tokens_init()) is
 * empty and owns nothing; `ids` is heap memory owned by the struct, released
 * by sy_tokens_free(). `len` ids are valid, `cap` are allocated. */
struct sy_tokens {
	uint32_t *ids;
	size_t len;
	size_t cap;
};

/* Empties `t` without allocating. */
void sy_tokens_init(struct sy_tokens *t);

/* Sets len to 0 and keeps the allocation (reuse per request). */
void sy_tokens_reset(struct sy_tokens *t);

/* Releases the allocation; `t` is empty afterwards and may be reused. */
void sy_tokens_free(struct sy_tokens *t);

/* Makes room for `extra` more ids past len. 0, SY_ENOMEM or SY_ERANGE. */
int sy_tokens_reserve(struct sy_tokens *t, size_t extra);

/* Appends ids[0..n). 0, SY_ENOMEM or SY_ERANGE (t unchanged on error). */
int sy_tokens_append(struct sy_tokens *t, const uint32_t *ids, size_t n);

/* A growable byte buffer (rendered chat text, decoded text). Zero-initialised
 * is empty. `data` is heap memory owned by the struct; after any successful
 * append it holds `len` bytes followed by a NUL (not counted in len), so it
 * can be printed; the text itself may contain NUL bytes. */
struct sy_textbuf {
	char *data;
	size_t len;
	size_t cap;
};

/* Empties `b` without allocating. */
void sy_textbuf_init(struct sy_textbuf *b);

/* Sets len to 0 (and data[0] to NUL if allocated); keeps the allocation. */
void sy_textbuf_reset(struct sy_textbuf *b);

/* Releases the allocation; `b` is empty afterwards and may be reused. */
void sy_textbuf_free(struct sy_textbuf *b);

/* Appends `len` bytes at `p` (borrowed). 0, SY_ENOMEM or SY_ERANGE. */
int sy_textbuf_append(struct sy_textbuf *b, const void *p, size_t len);

/* ---- chat messages (borrowed) ---- */

/* A borrowed byte span: `len` bytes at `ptr`, not NUL-terminated; ptr may be
 * NULL only when len is 0. Spans point into the request body and must
 * outlive the call that reads them. */
struct sy_chat_span {
	const char *ptr;
	size_t len;
};

/* One chat message (OpenAI `messages[]` element), all spans borrowed.
 * Initialise with designated initialisers so that fields added later read
 * as absent (len 0):
 *   role          required, non-empty ("system", "user", "assistant", ...)
 *   content       text content (JSON string already unescaped), may be
 *                 empty; a JSON null content is given as empty
 *   name          optional participant name — not rendered by ChatML; for
 *                 hf chat templates that use it
 *   tool_call_id  optional, for role "tool" — not rendered by ChatML; for hf
 *                 chat templates
 *   tool_calls    optional, role "assistant": the RAW JSON text of the
 *                 message's OpenAI `tool_calls` array (still escaped, as in
 *                 the body), e.g. [{"id":"c1","type":"function","function":
 *                 {"name":"f","arguments":"{\"x\": 1}"}}]; len 0 = none.
 *                 Rendered by hf templates as SGLang does (arguments parsed
 *                 from their JSON string into an object, then tojson).
 *   reasoning_content  optional, role "assistant" (Qwen3 thinking): present
 *                 when ptr != NULL (even with len 0), absent when ptr NULL.
 * Multi-part content arrays are not represented: a caller joins text parts
 * or falls back. tool_calls and reasoning_content are spans like content. */
struct sy_chat_message {
	struct sy_chat_span role;
	struct sy_chat_span content;
	struct sy_chat_span name;
	struct sy_chat_span tool_call_id;
	struct sy_chat_span tool_calls;
	struct sy_chat_span reasoning_content;
};

/* Request-level inputs of a chat rendering (all spans borrowed; zero-
 * initialise, then set what the request has):
 *   add_generation_prompt  append the assistant header (chat completions)
 *   tools           RAW JSON text of the request's OpenAI `tools` array
 *                   ([{"type":"function","function":{...}}]); len 0 = none.
 *                   Rendered as SGLang passes them to the template: each
 *                   tool's function as {"description","name","parameters",
 *                   "strict"} in that order (missing → null, strict false).
 *   template_kwargs RAW JSON object `chat_template_kwargs`, e.g.
 *                   {"enable_thinking": false}; len 0 = none. Keys a
 *                   family does not use are ignored.
 * Malformed JSON in tools/tool_calls/template_kwargs → SY_EMALFORMED. */
struct sy_chat_opts {
	bool add_generation_prompt;
	struct sy_chat_span tools;
	struct sy_chat_span template_kwargs;
};

/* ---- tokenizers ---- */

struct sy_tokenizer; /* opaque; see common/tokenizer/tokenizer-impl.h */

/* Opens a tokenizer of `kind` ("bytes", "hf", "off"); `path` is the
 * tokenizer directory for "hf" (ignored otherwise, may be NULL). On success
 * stores it in *out (release with sy_tokenizer_close()) and returns 0. On
 * failure *out is NULL, a one-line reason is written to errbuf (NUL-
 * terminated, truncated to errcap; errbuf may be NULL when errcap is 0) and
 * the result is SY_EINVAL (NULL/unknown kind, no path for "hf"),
 * SY_EUNSUPPORTED ("hf": a tokenizer.json component or a chat template this
 * code does not implement — the message names it), SY_EMALFORMED / SY_EIO
 * (unreadable or invalid files) or SY_ENOMEM. Opening "hf" takes about a
 * second (11 MB of JSON); do it at start-up, then share or fork. */
int sy_tokenizer_open(const char *kind, const char *path,
		      struct sy_tokenizer **out, char *errbuf, size_t errcap);

/* Open flags. CHAT_TEMPLATE_FALLBACK (`--chat-template-fallback`): an "hf"
 * chat template that no built-in renderer recognises renders as plain
 * ChatML (tokenizer.h above) instead of failing open; the template name is
 * then "chatml-fallback". NO_SEGMENT_CACHE: below. */
enum {
	SY_TOKENIZER_CHAT_TEMPLATE_FALLBACK = 1u << 0,
	/* "hf": no per-thread segment cache. By default the ids of text between
	 * added tokens (each message body of a rendered chat) of at least 64
	 * and at most 16 KiB bytes are kept per thread (512 entries, exact:
	 * compared in full on a hit), so a conversation's earlier turns and a
	 * shared system prompt are not tokenized again (DESIGN.md §8).
	 * Benchmarks of cold tokenization set this. */
	SY_TOKENIZER_NO_SEGMENT_CACHE = 1u << 1,
};

/* sy_tokenizer_open() with flags (SY_TOKENIZER_*). */
int sy_tokenizer_open_ex(const char *kind, const char *path, unsigned flags,
			 struct sy_tokenizer **out, char *errbuf, size_t errcap);

/* sy_tokenizer_open_ex() where, for "hf", `path` may also be the
 * tokenizer.json file itself (tokenizer_config.json beside it), and
 * `chat_template` (NULL: none) names a file whose text replaces the
 * config's chat template (SGLang --chat-template); other kinds refuse a
 * chat template (SY_EINVAL). */
int sy_tokenizer_open_files(const char *kind, const char *path, const char *chat_template,
			    unsigned flags, struct sy_tokenizer **out, char *errbuf, size_t errcap);

/* Name of the chat rendering in use: "chatml" (bytes, off), or for "hf" the
 * recognised family ("qwen3", "llama3", ...) or "chatml-fallback". Static. */
const char *sy_tokenizer_chat_template(const struct sy_tokenizer *tok);

/* Releases `tok` (NULL is a no-op). */
void sy_tokenizer_close(struct sy_tokenizer *tok);

/* The kind `tok` was opened with ("bytes", "off", ...); static string. */
const char *sy_tokenizer_kind(const struct sy_tokenizer *tok);

/* False for "off": encode/decode return SY_EUNSUPPORTED, use an estimate. */
bool sy_tokenizer_has_ids(const struct sy_tokenizer *tok);

/* Appends the ids of `len` bytes of UTF-8 `text` (borrowed; may be NULL when
 * len is 0) to `out`. Errors: SY_EINVAL, SY_ENOMEM, SY_ERANGE,
 * SY_EUNSUPPORTED ("off"). */
int sy_tokenizer_encode_text(const struct sy_tokenizer *tok, const char *text,
			     size_t len, struct sy_tokens *out);

/* Appends the ids of a completions `prompt` as the engine tokenizes it
 * (HF encode with add_special_tokens=true: the post-processor's tokens, e.g.
 * Llama 3's <|begin_of_text|>, around the text). "bytes": as encode_text.
 * Errors as encode_text. */
int sy_tokenizer_encode_prompt(const struct sy_tokenizer *tok, const char *text,
			       size_t len, struct sy_tokens *out);

/* Appends the ids of the rendered chat (`n` messages, borrowed; with the
 * assistant generation prompt when add_generation_prompt) to `out`: exactly
 * encode_text(render_chat(...)). Errors as encode_text, plus SY_EINVAL for a
 * message with an empty role. */
int sy_tokenizer_encode_chat(const struct sy_tokenizer *tok,
			     const struct sy_chat_message *msgs, size_t n,
			     bool add_generation_prompt, struct sy_tokens *out);

/* Appends the text the engine would tokenize for these messages (the plain
 * ChatML rendering above for "bytes" and "off"; the model's chat template
 * for "hf") to `out`. Errors: SY_EINVAL (empty role, NULL span with len > 0),
 * SY_ENOMEM, SY_ERANGE. */
int sy_tokenizer_render_chat(const struct sy_tokenizer *tok,
			     const struct sy_chat_message *msgs, size_t n,
			     bool add_generation_prompt, struct sy_textbuf *out);

/* The chat functions with request-level options (tools, template kwargs;
 * struct sy_chat_opts). encode_chat_ex = encode_text(render_chat_ex(...)),
 * which is what SGLang's engine prefills for a chat request (the template
 * writes any BOS itself). Errors as the plain versions, plus SY_EMALFORMED
 * for malformed JSON in opts or in a message's tool_calls. */
int sy_tokenizer_render_chat_ex(const struct sy_tokenizer *tok,
				const struct sy_chat_message *msgs, size_t n,
				const struct sy_chat_opts *opts, struct sy_textbuf *out);
int sy_tokenizer_encode_chat_ex(const struct sy_tokenizer *tok,
				const struct sy_chat_message *msgs, size_t n,
				const struct sy_chat_opts *opts, struct sy_tokens *out);

/* Appends the text of ids[0..n) to `out`. "bytes": each id is one byte;
 * an id > 255 is SY_ERANGE. Errors also SY_EINVAL, SY_ENOMEM,
 * SY_EUNSUPPORTED ("off"). */
int sy_tokenizer_decode(const struct sy_tokenizer *tok, const uint32_t *ids,
			size_t n, struct sy_textbuf *out);

/* Decode with options (`POST /v1/detokenize`): skip_special drops special
 * tokens ("hf": added tokens marked special; "bytes": no effect). "hf"
 * decodes as HF tokenizers' ByteLevel decoder: token bytes concatenated,
 * invalid UTF-8 replaced by U+FFFD per maximal subpart. Errors as decode. */
int sy_tokenizer_decode_ex(const struct sy_tokenizer *tok, const uint32_t *ids,
			   size_t n, bool skip_special, struct sy_textbuf *out);

#endif
