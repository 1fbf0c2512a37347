/* prepare.c — router_prepare (prepare.h): scan (prepare_scan.c), then
 * tokenization, expected peak and header keys.
 *
 * Tokens: chat messages are rendered with the tokenizer's chat template
 * (tools, tool calls, reasoning, chat_template_kwargs) and the generation
 * prompt, then tokenized; a prompt / text string is tokenized as the engine
 * does (encode_prompt: with the post-processor's special tokens); token-ID
 * inputs are used as given. The input-ids forwarding gate (prepare.h) is
 * decided here for chat requests. With tokenizer "off" the input
 * size is estimated from the body (ceil(bytes / 4)) unless every item is
 * token IDs. The peak is input + requested output in uint64_t; an overflow
 * is a 400 naming the output field.
 */
#include "router/core/prepare.h"
#include "router/core/prepare-int.h"
#include "common/errors.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void prepare_buf_init(struct prepare_buf *b) { memset(b, 0, sizeof(*b)); }

void prepare_buf_free(struct prepare_buf *b)
{
	sy_textbuf_free(&b->text);
	sy_tokens_free(&b->tokens);
	free(b->msgs);
	free(b->items);
	free(b->chat);
	free(b->top);
	free(b->sub);
	memset(b, 0, sizeof(*b));
}

size_t prepare_buf_bytes(const struct prepare_buf *b)
{
	return b->text.cap + b->tokens.cap * sizeof(*b->tokens.ids) +
	       b->cap_msgs * sizeof(struct prep_msg) + b->cap_items * sizeof(struct prep_item) +
	       b->cap_chat * sizeof(*b->chat) + (b->cap_top + b->cap_sub) * sizeof(*b->top);
}

static void buf_reset(struct prepare_buf *b)
{
	sy_textbuf_reset(&b->text);
	sy_tokens_reset(&b->tokens);
	b->n_msgs = 0;
	b->n_items = 0;
	b->n_top = 0;
	b->n_sub = 0;
}

static struct router_span span_of(const struct prepare_buf *b, const struct prep_str *s)
{
	struct router_span r = {NULL, 0};
	if (s->set) {
		r.ptr = b->text.data != NULL ? b->text.data + s->off : "";
		r.len = s->len;
	}
	return r;
}

static struct sy_chat_span chat_span(const struct prepare_buf *b, const struct prep_str *s)
{
	struct sy_chat_span r = {NULL, 0};
	if (s->set && s->len > 0) {
		r.ptr = b->text.data + s->off;
		r.len = s->len;
	}
	return r;
}

bool router_prepare_can_forward(const struct sy_tokenizer *tok, bool disabled)
{
	if (disabled || tok == NULL || !sy_tokenizer_has_ids(tok))
		return false;
	return strcmp(sy_tokenizer_kind(tok), "hf") == 0 &&
	       strcmp(sy_tokenizer_chat_template(tok), "chatml-fallback") != 0;
}

/* A raw body span as a chat span (absent when len 0). */
static struct sy_chat_span raw_span(const char *body, const struct prep_raw *r)
{
	struct sy_chat_span x = {NULL, 0};
	if (r->len > 0) {
		x.ptr = body + r->off;
		x.len = r->len;
	}
	return x;
}

/* A raw JSON array with at least one element ("[ ]" is empty). */
static bool raw_nonempty(const char *body, const struct prep_raw *r)
{
	for (size_t i = 1; i + 1 < r->len; i++) {
		char c = body[r->off + i];
		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			return true;
	}
	return false;
}

static bool span_is(const struct sy_chat_span *s, const char *lit)
{
	size_t n = strlen(lit);
	return s->len == n && memcmp(s->ptr, lit, n) == 0;
}

/* SGLang's router's input-ids forwarding gate for a chat request (prepare.h). */
static bool chat_forwardable(const char *body, const struct prep_result *res,
			     const struct prepare_buf *b)
{
	const struct prep_msg *m = b->msgs;

	if (res->no_forward || raw_nonempty(body, &res->tools) || b->n_msgs == 0)
		return false;
	for (size_t i = 0; i < b->n_msgs; i++) {
		const struct sy_chat_message *c = &b->chat[i];
		if (!m[i].content_string || m[i].no_forward || m[i].reasoning.set ||
		    raw_nonempty(body, &m[i].tool_calls) || span_is(&c->role, "tool"))
			return false;
		if (i > 0 && span_is(&c->role, "system"))
			return false;
		if (i > 0 && span_is(&c->role, "user") && span_is(&b->chat[i - 1].role, "user"))
			return false;
	}
	return !span_is(&b->chat[b->n_msgs - 1].role, "assistant");
}

static int internal(struct router_error *err, int rc, const char *what)
{
	router_error_set(err, 500, "internal_error", -1, "request preparation failed: %s", what);
	return rc;
}

static uint64_t estimate(size_t body_len)
{
	return ((uint64_t)body_len + ROUTER_PREPARE_BYTES_PER_TOKEN - 1) /
	       ROUTER_PREPARE_BYTES_PER_TOKEN;
}

/* Tokens of a chat request. */
static int chat_tokens(const struct router_prepare_opts *opts, const char *body,
		       const struct prep_result *res, struct prepare_buf *b, size_t body_len,
		       struct pick_request *out, struct router_error *err)
{
	const struct prep_msg *m = b->msgs;

	if (opts->tokenizer == NULL || !sy_tokenizer_has_ids(opts->tokenizer)) {
		out->input_tokens = estimate(body_len);
		out->tokens_estimated = true;
		return SY_OK;
	}
	if (b->cap_chat < b->n_msgs) {
		void *p = realloc(b->chat, b->n_msgs * sizeof(*b->chat));
		if (p == NULL)
			return internal(err, SY_ENOMEM, "out of memory");
		b->chat = p;
		b->cap_chat = b->n_msgs;
	}
	for (size_t i = 0; i < b->n_msgs; i++) {
		b->chat[i] = (struct sy_chat_message){
			.role = chat_span(b, &m[i].role),
			.content = chat_span(b, &m[i].content),
			.name = chat_span(b, &m[i].name),
			.tool_call_id = chat_span(b, &m[i].tool_call_id),
			.tool_calls = raw_span(body, &m[i].tool_calls),
		};
		if (m[i].reasoning.set) /* present even when empty */
			b->chat[i].reasoning_content = (struct sy_chat_span){
				m[i].reasoning.len > 0 ? b->text.data + m[i].reasoning.off : "",
				m[i].reasoning.len};
	}
	struct sy_chat_opts co = {
		.add_generation_prompt = true,
		.tools = res->tool_choice_none ? (struct sy_chat_span){NULL, 0}
					       : raw_span(body, &res->tools),
		.template_kwargs = raw_span(body, &res->kwargs),
	};
	int rc = sy_tokenizer_encode_chat_ex(opts->tokenizer, b->chat, b->n_msgs, &co, &b->tokens);
	if (rc == SY_EMALFORMED || rc == SY_EINVAL) {
		router_error_set(err, 400, "bad_request", -1,
				 "messages: the chat template cannot render this request (%s)",
				 rc == SY_EMALFORMED ? "malformed tools, tool_calls or "
						       "chat_template_kwargs JSON, or invalid UTF-8"
						     : "a message the template does not accept");
		return SY_EINVAL;
	}
	if (rc != SY_OK)
		return internal(err, rc, "the tokenizer failed");
	out->input_tokens = b->tokens.len;
	out->token_ids = b->tokens.ids;
	out->n_token_ids = b->tokens.len;
	out->forward_ids = opts->forward_input_ids && chat_forwardable(body, res, b);
	return SY_OK;
}

/* Tokens of a prompt / text / input_ids request (one item or a batch). */
static int item_tokens(const struct router_prepare_opts *opts, struct prepare_buf *b,
		       size_t body_len, struct pick_request *out, struct router_error *err)
{
	struct prep_item *it = b->items;
	bool has_ids = opts->tokenizer != NULL && sy_tokenizer_has_ids(opts->tokenizer);
	uint64_t largest = 0;

	for (size_t i = 0; i < b->n_items; i++) {
		if (it[i].ids)
			continue;
		if (!has_ids) {
			out->input_tokens = estimate(body_len);
			out->tokens_estimated = true;
			out->batch_size = b->n_items;
			return SY_OK;
		}
		size_t start = b->tokens.len;
		if (it[i].len > 0) { /* an empty string has no tokens (and maybe no buffer) */
			int rc = sy_tokenizer_encode_prompt(opts->tokenizer, b->text.data + it[i].off,
							    it[i].len, &b->tokens);
			if (rc == SY_EMALFORMED) {
				router_error_set(err, 400, "bad_request", -1,
						 "prompt: not valid UTF-8 text");
				return SY_EINVAL;
			}
			if (rc != SY_OK)
				return internal(err, rc, "the tokenizer failed");
		}
		it[i].ids = true;
		it[i].off = start;
		it[i].len = b->tokens.len - start;
	}
	for (size_t i = 0; i < b->n_items; i++)
		if (it[i].len > largest)
			largest = it[i].len;
	out->input_tokens = largest;
	out->batch_size = b->n_items;
	if (b->n_items > 0) {
		out->token_ids = b->tokens.ids != NULL ? b->tokens.ids + it[0].off : NULL;
		out->n_token_ids = it[0].len;
	}
	return SY_OK;
}

/* Strict decimal header value → double (no hex, inf, nan; overflow → ∞,
 * which the resolver refuses). */
static bool parse_number(const char *p, size_t n, double *out)
{
	char tmp[64];
	if (n == 0 || n >= sizeof(tmp))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		if (!((c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' ||
		      c == 'E'))
			return false;
	}
	memcpy(tmp, p, n);
	tmp[n] = '\0';
	char *end;
	errno = 0;
	double v = strtod(tmp, &end);
	if (end != tmp + n || isnan(v))
		return false;
	*out = v;
	return true;
}

static int headers(const struct router_prepare_opts *opts, router_header_fn header, void *ctx,
		   struct pick_request *out, struct router_error *err)
{
	struct router_span v;

	if (header == NULL)
		return SY_OK;
	if (opts->session_header != NULL &&
	    header(ctx, opts->session_header, strlen(opts->session_header), &v) && v.len > 0)
		out->session_key = v;
	if (opts->routing_header != NULL &&
	    header(ctx, opts->routing_header, strlen(opts->routing_header), &v) && v.len > 0)
		out->routing_key = v;
	if (opts->read_ttft_slo && header(ctx, "x-sgl-ttft-slo-ms", 17, &v)) {
		if (!parse_number(v.ptr, v.len, &out->ttft_slo_ms)) {
			router_error_set(err, 400, "bad_request", -1,
					 "x-sgl-ttft-slo-ms: expected a number of milliseconds");
			return SY_EINVAL;
		}
		out->has_ttft_slo = true;
	}
	if (opts->read_tps_slo && header(ctx, "x-sgl-tps-slo", 13, &v)) {
		if (!parse_number(v.ptr, v.len, &out->tps_slo)) {
			router_error_set(err, 400, "bad_request", -1,
					 "x-sgl-tps-slo: expected a number of tokens per second");
			return SY_EINVAL;
		}
		out->has_tps_slo = true;
	}
	return SY_OK;
}

int router_prepare(const struct router_prepare_opts *opts, enum route route,
		   const char *body, size_t len, router_header_fn header, void *header_ctx,
		   struct prepare_buf *buf, struct pick_request *out, struct router_error *err)
{
	struct prep_result res;
	int rc;

	router_error_clear(err);
	memset(out, 0, sizeof(*out));
	buf_reset(buf);
	out->route = route;

	rc = prepare_scan(route, opts->sampling, body, len, buf, &res, err);
	if (rc == SY_ENOMEM)
		return internal(err, rc, "out of memory");
	if (rc != SY_OK)
		return rc;

	int64_t end = (int64_t)res.body.object_end;
	switch (route) {
	case ROUTE_CHAT_COMPLETIONS:
		if (!res.has_messages) {
			router_error_set(err, 400, "bad_request", end, "messages: required");
			return SY_EINVAL;
		}
		rc = chat_tokens(opts, body, &res, buf, len, out, err);
		out->batch_size = 1;
		break;
	case ROUTE_COMPLETIONS:
		if (!res.has_prompt) {
			router_error_set(err, 400, "bad_request", end, "prompt: required");
			return SY_EINVAL;
		}
		rc = item_tokens(opts, buf, len, out, err);
		break;
	case ROUTE_GENERATE:
		if (res.has_text == res.has_input_ids) {
			router_error_set(err, 400, "bad_request", end,
					 res.has_text ? "text, input_ids: give only one of them"
						      : "text or input_ids: required");
			return SY_EINVAL;
		}
		rc = item_tokens(opts, buf, len, out, err);
		break;
	case ROUTE_EMBEDDINGS:
	case ROUTE_RERANK:
	case ROUTE_RESPONSES:
	case ROUTE_MESSAGES:
		/* Forwarded as sent; the input size is the body-size estimate. */
		out->input_tokens = (len + ROUTER_PREPARE_BYTES_PER_TOKEN - 1) /
				    ROUTER_PREPARE_BYTES_PER_TOKEN;
		out->tokens_estimated = true;
		out->batch_size = 1;
		break;
	default:
		router_error_set(err, 400, "bad_request", -1, "unknown route");
		return SY_EINVAL;
	}
	if (rc != SY_OK)
		return rc;

	/* Requested output and expected peak. */
	const char *field = NULL;
	if (res.has_max_completion_tokens) {
		out->max_tokens = res.max_completion_tokens, field = "max_completion_tokens";
	} else if (res.has_max_output_tokens) {
		out->max_tokens = res.max_output_tokens, field = "max_output_tokens";
	} else if (res.has_max_tokens) {
		out->max_tokens = res.max_tokens, field = "max_tokens";
	} else if (res.has_max_new_tokens) {
		out->max_tokens = res.max_new_tokens, field = "sampling_params.max_new_tokens";
	}
	if (field != NULL) {
		out->has_max_tokens = out->has_peak = true;
		if (__builtin_add_overflow(out->input_tokens, out->max_tokens, &out->expected_peak)) {
			router_error_set(err, 400, "bad_request", -1,
					 "%s: input tokens (%llu) + %s overflow the expected peak",
					 field, (unsigned long long)out->input_tokens, field);
			return SY_EINVAL;
		}
	}

	out->model = span_of(buf, &res.model);
	out->model_defaulted = out->model.ptr == NULL;
	if (out->model.ptr == NULL && opts->default_model != NULL) {
		out->model.ptr = opts->default_model;
		out->model.len = strlen(opts->default_model);
	}
	out->cache_salt = span_of(buf, &res.cache_salt);
	out->stream = res.stream;
	out->n = res.n;
	out->body = res.body;
	out->body.top = buf->top;
	out->body.n_top = buf->n_top;
	out->body.sampling = buf->sub;
	out->body.n_sampling = buf->n_sub;
	out->memo = NULL;
	return headers(opts, header, header_ctx, out, err);
}
