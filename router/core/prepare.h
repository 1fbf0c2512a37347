/* prepare.h — request preparation (DESIGN.md §4 step 1): one validating pass
 * over the JSON body, tokenization, expected peak and header keys, producing
 * the `struct pick_request` that selection reads.
 *
 * The body is scanned once with yajl's SAX parser (no DOM copy): malformed
 * JSON → 400 bad_request naming the byte offset; strings are UTF-8-checked by
 * yajl. Validation messages name the field with its path
 * ("messages[2].role: expected a string", "max_tokens: must be an integer in
 * 0..18446744073709551615"). Unknown fields are skipped (not validated
 * beyond JSON syntax); known fields that do not belong to the route are
 * skipped too. A duplicated known top-level field is an error.
 *
 * Routes and the fields read (everything else is skipped):
 *   /v1/chat/completions  model, messages (required, non-empty array of
 *                         objects: role string (required), content string |
 *                         null | array of content parts ({"type":"text",
 *                         "text": string} parts are concatenated without a
 *                         separator; other part types are skipped), name,
 *                         tool_call_id strings, tool_calls array (raw),
 *                         reasoning_content string), tools (raw array;
 *                         not rendered when tool_choice is "none"),
 *                         chat_template_kwargs (raw object), max_tokens,
 *                         max_completion_tokens (wins when both), stream, n,
 *                         cache_salt. Tokens = the chat rendered by the
 *                         configured tokenizer's chat template with the
 *                         generation prompt (sy_tokenizer_encode_chat_ex):
 *                         what the engine prefills. A template that cannot
 *                         render the request (malformed tool arguments,
 *                         ...) → 400 naming "messages".
 *                         Also read for the input-ids forwarding gate
 *                         (below): input_ids, functions, chat_template,
 *                         reasoning, reasoning_effort, task,
 *                         continue_final_message, messages[].tools /
 *                         function_call.
 *   /v1/completions       model, prompt (required: string — tokenized alone
 *                         as the engine does, sy_tokenizer_encode_prompt: with
 *                         the post-processor's BOS; array of token IDs — used as
 *                         given; array of strings or of token-ID arrays — a
 *                         batch), max_tokens, stream, n, cache_salt.
 *   /generate             model (optional), text (string or array of
 *                         strings) or input_ids (array of IDs, or array of
 *                         arrays: a batch) — exactly one of them,
 *                         sampling_params.max_new_tokens, sampling_params.n,
 *                         stream, cache_salt.
 * Input-ids forwarding (pick_request.forward_ids; SGLang's router does the
 * same): on the chat route only, when opts->forward_input_ids (an "hf"
 * tokenizer whose chat template was recognised, and forwarding not
 * disabled) and the request has the plain shape SGLang's router forwards:
 * every content a string, no tools / functions / tool_calls / tool
 * messages / reasoning_content, no chat_template, chat_template_kwargs,
 * reasoning, reasoning_effort or task, no continue_final_message and the
 * last message not an assistant's, no system message after the first, no
 * two user messages in a row, and no caller input_ids. Completions and
 * /generate never forward (the engine tokenizes text as the router does).
 *
 * Batches: input_tokens is the largest item's count (what must fit a
 * bucket), token_ids are the first item's (what a prefix lookup hashes),
 * batch_size the number of items (1 for a single prompt).
 *
 * Tokenizer kind "off": input_tokens = ceil(body length in bytes / 4)
 * (ROUTER_PREPARE_BYTES_PER_TOKEN, a switchyard choice: the reference names
 * no estimate) with no token IDs (n_token_ids 0, tokens_estimated true);
 * token-ID inputs are still counted exactly.
 *
 * Expected peak = input_tokens + requested output (max_completion_tokens /
 * max_tokens / sampling_params.max_new_tokens), computed in uint64_t with an
 * overflow check (overflow → 400 naming the field). Without a requested
 * output has_peak is false (the resolver then checks input_tokens).
 *
 * Headers (looked up once through the caller's callback, names lower-case):
 *   session key   opts->session_header   (default "x-session-id")
 *   routing key   opts->routing_header   (default "x-sgl-routing-key")
 *   TTFT target   "x-sgl-ttft-slo-ms"    read only when opts->read_ttft_slo
 *   TPS target    "x-sgl-tps-slo"        read only when opts->read_tps_slo
 * An SLO header that is not a decimal number → 400 naming the header; range
 * checks (TTFT 0, TPS ≤ 0) belong to the resolver (InvalidSignal → 400).
 *
 * Ownership and lifetime: `struct prepare_buf` is owned by the caller (one
 * per request, or one per process reset per request); it owns the token IDs
 * and decoded strings. The pick_request borrows from three places and is
 * valid while all of them live: the prepare_buf (model, cache_salt, token
 * IDs, body members), the body (member offsets refer to it) and the header storage (session
 * and routing keys are the spans the callback returned — h2o keeps them in
 * the request pool). Nothing is allocated per request beyond the buffer's
 * growth (kept across resets).
 *
 * Body members (pick_request.body; DESIGN.md §4 step 6, sglang-wire.md §15,
 * policy-defaults.md §7): the scan records every top-level member — and on
 * /generate every member of an object "sampling_params" — as spans of the
 * body (key with its quotes, value as written), in order, with the role the
 * data plane gives it. Keys are compared after JSON unescaping (yajl hands
 * decoded keys), so "bootstrap\u005froom" is bootstrap_room and "\u006e"
 * is n. The body rewrite (router/dispatch/body_rewrite.h) builds the
 * forwarded body from these records alone.
 */
#ifndef SY_ROUTER_PREPARE_H
#define SY_ROUTER_PREPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/tokenizer/tokenizer.h"
#include "router/core/error.h"
#include "router/core/route.h"
#include "router/core/sampling_override.h"

#define ROUTER_PREPARE_BYTES_PER_TOKEN 4 /* tokenizer "off" estimate */

/* A borrowed byte span (not NUL-terminated). ptr NULL ⇔ absent. */
struct router_span {
	const char *ptr;
	size_t len;
};

/* Looks up request header `name` (`name_len` bytes, lower-case). Returns true
 * and sets *value (borrowed; must outlive the pick_request) when present. */
typedef bool (*router_header_fn)(void *ctx, const char *name, size_t name_len,
				 struct router_span *value);

/* Per-generation preparation options (router_gen holds one: gen->prepare). */
struct router_prepare_opts {
	const struct sy_tokenizer *tokenizer; /* borrowed; "bytes", "hf" or "off" */
	const char *default_model;            /* model when the body names none */
	const char *session_header;           /* lower-case, e.g. "x-session-id" */
	const char *routing_header;           /* lower-case, e.g. "x-sgl-routing-key" */
	bool read_ttft_slo;                   /* router.ttft_slo_policy != disabled */
	bool read_tps_slo;                    /* router.tps_slo_policy != disabled */
	bool forward_input_ids;               /* router_prepare_can_forward() */
	const struct sampling_override *sampling; /* borrowed; NULL: none. Its
						     names get role BODY_SAMPLING */
};

/* What the data plane does with a body member. */
enum body_role {
	BODY_KEEP = 0,         /* copied as written */
	BODY_BOOTSTRAP,        /* client bootstrap_host / _port / _room: replaced in PD */
	BODY_SAMPLING,         /* named by opts->sampling (param = its index):
				  top-level on chat / completions, inside
				  sampling_params on /generate */
	BODY_SAMPLING_PARAMS,  /* /generate: the top-level "sampling_params" */
	BODY_INPUT_IDS,        /* top-level "input_ids" */
	BODY_KV_TRANSFER,      /* "kv_transfer_params" (vLLM PD: the router's
				  replace the client's) */
	BODY_PREFILL_OUTPUT,   /* "stream", "stream_options",
				  "max_tokens", "max_completion_tokens",
				  "min_tokens", "min_completion_tokens" not
				  named by the override (replaced or dropped in
				  a vLLM PD prefill) */
};

/* One member of an object of the body: body[key, key + key_len) is the key
 * as written (quotes and escapes included), body[value, value + value_len)
 * its value as written. Offsets in bytes. */
struct body_member {
	size_t key, key_len;
	size_t value, value_len;
	enum body_role role;
	unsigned param;        /* BODY_SAMPLING: index into opts->sampling->params */
};

/* The body's members as preparation found them (file comment). Arrays are
 * borrowed from the prepare_buf. */
struct body_members {
	const struct body_member *top;      /* top-level members, body order */
	size_t n_top;
	const struct body_member *sampling; /* /generate: members of the object
					       "sampling_params", body order */
	size_t n_sampling;
	size_t object_end;       /* offset of the top-level object's closing '}' */
	size_t n_override;       /* members with role BODY_SAMPLING */
	bool sampling_object;    /* /generate: "sampling_params" is an object */
	bool has_sampling_params; /* /generate: "sampling_params" present (object or null) */
	bool has_input_ids;      /* a top-level "input_ids" member is present */
	bool has_max_completion_tokens; /* chat: "max_completion_tokens" present */
};

struct prefix_memo; /* router/policies/cache/cache_source.h: per-request
		       block-hash chain and prefix-lookup results */

/* Everything selection reads about one request. Filled by router_prepare();
 * spans borrow as described in the file comment. */
struct pick_request {
	enum route route;
	struct router_span model;      /* from the body, else opts->default_model */
	bool model_defaulted;          /* the body named no model */
	uint64_t input_tokens;         /* tokens (largest batch item), or estimate */
	bool tokens_estimated;         /* tokenizer "off": body-size estimate */
	const uint32_t *token_ids;     /* first item's IDs, n_token_ids of them;
					  NULL when estimated */
	size_t n_token_ids;
	size_t batch_size;             /* prompt items (1 unless a batch) */
	bool has_max_tokens;           /* requested output given */
	uint64_t max_tokens;           /* tokens */
	bool has_peak;                 /* == has_max_tokens */
	uint64_t expected_peak;        /* input_tokens + max_tokens, no overflow */
	bool stream;                   /* "stream": true */
	uint32_t n;                    /* choices ("n", sampling_params.n), ≥ 1 */
	struct router_span cache_salt; /* decoded value, absent when ptr NULL */
	struct router_span lora;       /* the LoRA adapter the body's model names
					  (router_select_adapter: `model` is then
					  its base model), absent when ptr NULL */
	struct router_span session_key; /* header value, absent when ptr NULL/len 0 */
	struct router_span routing_key; /* header value, absent when ptr NULL/len 0 */
	bool has_ttft_slo;
	double ttft_slo_ms;            /* x-sgl-ttft-slo-ms, milliseconds */
	bool has_tps_slo;
	double tps_slo;                /* x-sgl-tps-slo, tokens per second */
	struct body_members body;      /* members the data plane rewrites */
	struct prefix_memo *memo;      /* the request's prefix memo (borrowed),
					  filled by router_select_begin (DESIGN
					  §4 step 3); NULL: none (router_select
					  then uses the generation's) */
	bool forward_ids;              /* chat: send token_ids to the engine as
					  "input_ids" (file comment) */
};

/* Per-request scratch owned by the caller: decoded strings, chat messages
 * and token IDs. Zero-initialise or prepare_buf_init(); reuse across
 * requests (router_prepare resets it); prepare_buf_free() at the end. */
struct prepare_buf {
	struct sy_textbuf text;    /* decoded strings: model, salt, contents */
	struct sy_tokens tokens;   /* token IDs of all items */
	void *msgs;                /* internal: message records (offsets) */
	size_t n_msgs, cap_msgs;
	void *items;               /* internal: prompt item records */
	size_t n_items, cap_items;
	struct sy_chat_message *chat; /* internal: spans built after the scan */
	size_t cap_chat;
	struct body_member *top;   /* body members (pick_request.body) */
	size_t n_top, cap_top;
	struct body_member *sub;   /* members of /generate's sampling_params */
	size_t n_sub, cap_sub;
};

void prepare_buf_init(struct prepare_buf *b);
void prepare_buf_free(struct prepare_buf *b);

/* Bytes of heap `b` holds (its capacities), for callers that keep
 * buffers around for reuse. */
size_t prepare_buf_bytes(const struct prepare_buf *b);

/* Prepares `len` bytes of `body` (borrowed) for `route`. Headers come from
 * `header(header_ctx, ...)` (may be NULL: no headers). On success fills *out
 * (borrowing from buf, body and header storage) and returns 0. On failure
 * returns SY_EINVAL with err = 400 bad_request (malformed JSON with its byte
 * offset, a field or header problem named in the message), or SY_ENOMEM /
 * SY_ERANGE with err = 500 internal_error; *out is then unspecified. */
int router_prepare(const struct router_prepare_opts *opts, enum route route,
		   const char *body, size_t len, router_header_fn header, void *header_ctx,
		   struct prepare_buf *buf, struct pick_request *out, struct router_error *err);

/* Whether a generation with tokenizer `tok` forwards input ids: false when
 * `disabled` (--disable-input-ids-forwarding), for kinds other than "hf",
 * and for an "hf" chat template rendered by the ChatML fallback (the
 * engine's own template is unknown). */
bool router_prepare_can_forward(const struct sy_tokenizer *tok, bool disabled);

#endif
