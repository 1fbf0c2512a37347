/* tokenize.c — POST /v1/tokenize and POST /v1/detokenize
 * (reference/policy-defaults.md §7, docs/tokenizer.md "For the router"),
 * with the tokenizer of the worker's current generation, so the ids are
 * exactly those the router hashes for routing.
 *
 *   /v1/tokenize   {"prompt": "..."}  → {"tokens": [...], "count": N}
 *                  (sy_tokenizer_encode_prompt: as the engine tokenizes a
 *                  completions prompt, with the post-processor's BOS)
 *                  {"messages": [...], "add_generation_prompt": true,
 *                   "tools", "tool_choice", "chat_template_kwargs"}
 *                  → {"tokens": [...], "count": N, "text": "<rendered>"}
 *                  (the chat template's text, then encode_text of it: the
 *                  ids the chat route routes on when add_generation_prompt
 *                  is true, the default)
 *   /v1/detokenize {"tokens": [...], "skip_special_tokens": false}
 *                  → {"text": "..."}
 *
 * Errors are the router's JSON error bodies: 400 bad_request for a body
 * that is not a JSON object, a missing or mistyped field, a chat the
 * template cannot render, an id outside the vocabulary, or tokenizer "off"
 * (no token ids); 413 over router.max_body_bytes; 500 internal_error when
 * memory runs out. Cold path: jansson, one DOM per request. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/tokenizer/chat-request.h"
#include "common/tokenizer/tokenizer.h"
#include "router/http/response.h"
#include "router/core/buf.h"
#include "router/core/generation.h"
#include "router/http/routes.h"
#include "router/core/generation.h"

/* Appends `len` bytes as a JSON string body, replacing each byte that does
 * not start a valid UTF-8 sequence by U+FFFD (the "bytes" tokenizer can
 * decode ids to any bytes; "hf" decode is already lossy-valid). */
static void put_text(struct rt_buf *b, const char *s, size_t len)
{
	size_t i = 0, run = 0;
	while (i < len) {
		unsigned char c = (unsigned char)s[i];
		size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
		bool ok = n > 0 && i + n <= len;
		for (size_t k = 1; ok && k < n; k++)
			ok = ((unsigned char)s[i + k] >> 6) == 2;
		if (ok && n == 2)
			ok = c >= 0xc2;
		if (ok && n == 3) {
			unsigned char d = (unsigned char)s[i + 1];
			ok = !(c == 0xe0 && d < 0xa0) && !(c == 0xed && d >= 0xa0);
		}
		if (ok && n == 4) {
			unsigned char d = (unsigned char)s[i + 1];
			ok = c <= 0xf4 && !(c == 0xf0 && d < 0x90) && !(c == 0xf4 && d >= 0x90);
		}
		if (ok) {
			i += n;
			run += n;
			continue;
		}
		rt_buf_json_str(b, s + i - run, run);
		rt_buf_puts(b, "\xef\xbf\xbd");
		run = 0;
		i++;
	}
	rt_buf_json_str(b, s + len - run, run);
}

static void put_ids(struct rt_buf *b, const struct sy_tokens *t)
{
	rt_buf_puts(b, "{\"tokens\":[");
	for (size_t i = 0; i < t->len; i++)
		rt_buf_printf(b, i ? ",%u" : "%u", (unsigned)t->ids[i]);
	rt_buf_printf(b, "],\"count\":%zu", t->len);
}

/* Maps a tokenizer error to the response. */
static int tok_error(h2o_req_t *req, enum route route, int rc, const char *what)
{
	if (rc == SY_ENOMEM)
		return rt_send_errorf(req, route, 500, "internal_error", "out of memory");
	if (rc == SY_ERANGE && route == ROUTE_DETOKENIZE)
		return rt_send_errorf(req, route, 400, "bad_request", "tokens: an id is not in the tokenizer's vocabulary");
	return rt_send_errorf(req, route, 400, "bad_request", "%s: %s", what,
			      rc == SY_EMALFORMED ? "malformed JSON in tools, tool_calls or "
						    "chat_template_kwargs, or invalid UTF-8"
			      : rc == SY_EINVAL   ? "the chat template does not accept these messages"
						  : sy_strerror(rc));
}

static int tokenize(h2o_req_t *req, const struct sy_tokenizer *tok, json_t *root, h2o_iovec_t body)
{
	const enum route route = ROUTE_TOKENIZE;
	struct sy_tokens ids;
	struct rt_buf b = {0};
	int rc;

	sy_tokens_init(&ids);
	json_t *prompt = json_object_get(root, "prompt");
	json_t *messages = json_object_get(root, "messages");
	if (messages != NULL && !json_is_null(messages)) {
		struct sy_chat_request cr;
		struct sy_textbuf text;
		char why[200] = "";
		if (!json_is_array(messages) || json_array_size(messages) == 0)
			return rt_send_errorf(req, route, 400, "bad_request", "messages: expected a non-empty array of messages");
		rc = sy_chat_request_parse(body.base, body.len, &cr, why, sizeof(why));
		if (rc == SY_ENOMEM)
			return tok_error(req, route, rc, "messages");
		if (rc != SY_OK)
			return rt_send_errorf(req, route, 400, "bad_request", "%s",
					      why[0] ? why : "messages: malformed");
		sy_textbuf_init(&text);
		rc = sy_tokenizer_render_chat_ex(tok, cr.msgs, cr.n, &cr.opts, &text);
		if (rc == SY_OK && text.len > 0)
			rc = sy_tokenizer_encode_text(tok, text.data, text.len, &ids);
		sy_chat_request_free(&cr);
		if (rc != SY_OK) {
			sy_textbuf_free(&text);
			sy_tokens_free(&ids);
			return tok_error(req, route, rc, "messages");
		}
		put_ids(&b, &ids);
		rt_buf_puts(&b, ",\"text\":\"");
		put_text(&b, text.data ? text.data : "", text.len);
		rt_buf_puts(&b, "\"}");
		sy_textbuf_free(&text);
	} else if (json_is_string(prompt)) {
		rc = sy_tokenizer_encode_prompt(tok, json_string_value(prompt),
						json_string_length(prompt), &ids);
		if (rc != SY_OK) {
			sy_tokens_free(&ids);
			return tok_error(req, route, rc, "prompt");
		}
		put_ids(&b, &ids);
		rt_buf_puts(&b, "}");
	} else {
		return rt_send_errorf(req, route, 400, "bad_request", "%s", prompt != NULL ? "prompt: expected a string"
						    : "prompt or messages: required");
	}
	sy_tokens_free(&ids);
	return rt_send_json(req, route, &b);
}

static int detokenize(h2o_req_t *req, const struct sy_tokenizer *tok, json_t *root)
{
	const enum route route = ROUTE_DETOKENIZE;
	json_t *tokens = json_object_get(root, "tokens");
	json_t *skip = json_object_get(root, "skip_special_tokens");
	if (!json_is_array(tokens))
		return rt_send_errorf(req, route, 400, "bad_request", "%s", tokens ? "tokens: expected an array of token ids"
					    : "tokens: required");
	if (skip != NULL && !json_is_boolean(skip) && !json_is_null(skip))
		return rt_send_errorf(req, route, 400, "bad_request", "skip_special_tokens: expected a boolean");

	size_t n = json_array_size(tokens);
	uint32_t *ids = malloc((n ? n : 1) * sizeof(*ids));
	if (ids == NULL)
		return tok_error(req, route, SY_ENOMEM, "tokens");
	for (size_t i = 0; i < n; i++) {
		json_t *v = json_array_get(tokens, i);
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > (json_int_t)UINT32_MAX) {
			free(ids);
			return rt_send_errorf(req, route, 400, "bad_request",
					      "tokens[%zu]: expected a token id (integer 0..4294967295)",
					      i);
		}
		ids[i] = (uint32_t)json_integer_value(v);
	}
	struct sy_textbuf text;
	sy_textbuf_init(&text);
	int rc = sy_tokenizer_decode_ex(tok, ids, n, json_is_true(skip), &text);
	free(ids);
	if (rc != SY_OK) {
		sy_textbuf_free(&text);
		return tok_error(req, route, rc, "tokens");
	}
	struct rt_buf b = {0};
	rt_buf_puts(&b, "{\"text\":\"");
	put_text(&b, text.data ? text.data : "", text.len);
	rt_buf_puts(&b, "\"}");
	sy_textbuf_free(&text);
	return rt_send_json(req, route, &b);
}

int rt_route_tokenize(h2o_req_t *req, enum route route)
{
	struct router_gen *g = rt_w.gen;
	h2o_iovec_t body = req->entity;
	if (rt_body_refused(req, route, g->cfg.router.max_body_bytes))
		return 0;
	const struct sy_tokenizer *tok = g->tokenizer;
	if (tok == NULL || !sy_tokenizer_has_ids(tok))
		return rt_send_errorf(req, route, 400, "bad_request", "the router has no token ids (--tokenizer off)");

	json_error_t jerr;
	json_t *root = json_loadb(body.base, body.len, 0, &jerr);
	if (root == NULL || !json_is_object(root)) {
		int rc = root == NULL
				 ? rt_send_errorf(req, route, 400, "bad_request",
						  "malformed JSON at byte %d: %s", jerr.position, jerr.text)
				 : rt_send_errorf(req, route, 400, "bad_request", "body: expected a JSON object");
		json_decref(root);
		return rc;
	}
	int rc = route == ROUTE_TOKENIZE ? tokenize(req, tok, root, body)
					    : detokenize(req, tok, root);
	json_decref(root);
	return rc;
}
