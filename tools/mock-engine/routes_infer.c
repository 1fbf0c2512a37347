/* routes_infer.c — POST /v1/chat/completions, /v1/completions, /generate:
 * parse the JSON body (jansson; cold path is fine for a mock), tokenize,
 * hash the whole pages, read PD bootstrap fields, hand over to the engine. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "tools/mock-engine/http.h"
#include "tools/mock-engine/respond.h"

static int tokens_from_ids(json_t *arr, uint32_t **out, size_t *n)
{
	size_t len = json_array_size(arr);
	uint32_t *ids = malloc((len ? len : 1) * sizeof(*ids));
	if (!ids)
		return SY_ENOMEM;
	for (size_t i = 0; i < len; i++) {
		json_t *v = json_array_get(arr, i);
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > UINT32_MAX) {
			free(ids);
			return SY_EINVAL;
		}
		ids[i] = (uint32_t)json_integer_value(v);
	}
	*out = ids;
	*n = len;
	return 0;
}

/* Prompt → r->tokens by route kind. Returns 0 or an error message. */
static const char *read_prompt(struct mock_engine *e, struct mreq *r, json_t *root)
{
	int rc;
	switch (r->kind) {
	case MREQ_CHAT: {
		json_t *m = json_object_get(root, "messages");
		if (!json_is_array(m) || json_array_size(m) == 0)
			return "'messages' must be a non-empty array";
		/* As SGLang: ids sent with the chat (a router's input-ids
		 * forwarding) are prefilled verbatim, the template is skipped. */
		json_t *ids = json_object_get(root, "input_ids");
		if (json_is_array(ids)) {
			rc = tokens_from_ids(ids, &r->tokens, &r->n_tokens);
			return rc == 0 ? NULL : "'input_ids' must be non-negative integers";
		}
		rc = mock_tok_chat(&e->tok, m, &r->tokens, &r->n_tokens);
		return rc == 0 ? NULL : "each message needs a string 'role' and text 'content'";
	}
	case MREQ_COMPLETION: {
		json_t *p = json_object_get(root, "prompt");
		/* A batch — a list of strings or a list of token-id lists —
		 * is one choice per prompt in SGLang. The mock answers one
		 * prompt per request: a batch of one is that prompt, a larger
		 * batch is refused by name rather than half-answered. */
		if (json_is_array(p) && json_array_size(p) > 0 &&
		    (json_is_string(json_array_get(p, 0)) || json_is_array(json_array_get(p, 0)))) {
			if (json_array_size(p) > 1)
				return "batched prompts (a list of several prompts or token-id "
				       "lists) are not supported by the mock engine: send one "
				       "prompt per request";
			p = json_array_get(p, 0);
			if (!json_is_string(p) && !json_is_array(p))
				return "'prompt' must be a string, a list of strings or a list of token ids";
		}
		if (json_is_string(p))
			rc = mock_tok_text(&e->tok, json_string_value(p), json_string_length(p),
					   &r->tokens, &r->n_tokens);
		else if (json_is_array(p))
			rc = tokens_from_ids(p, &r->tokens, &r->n_tokens);
		else
			return "'prompt' must be a string, a list of strings or a list of token ids";
		return rc == 0 ? NULL : "'prompt' token ids must be non-negative integers";
	}
	case MREQ_GENERATE: {
		json_t *t = json_object_get(root, "text"), *ids = json_object_get(root, "input_ids");
		if (json_is_string(t))
			rc = mock_tok_text(&e->tok, json_string_value(t), json_string_length(t),
					   &r->tokens, &r->n_tokens);
		else if (json_is_array(ids))
			rc = tokens_from_ids(ids, &r->tokens, &r->n_tokens);
		else
			return "'text' (string) or 'input_ids' (list of ints) is required";
		return rc == 0 ? NULL : "'input_ids' must be non-negative integers";
	}
	}
	return "unknown route";
}

static const char *read_max_tokens(struct mock_engine *e, struct mreq *r, json_t *root)
{
	json_t *v = NULL;
	if (r->kind == MREQ_CHAT) {
		v = json_object_get(root, "max_completion_tokens");
		if (!v || json_is_null(v))
			v = json_object_get(root, "max_tokens");
	} else if (r->kind == MREQ_COMPLETION) {
		v = json_object_get(root, "max_tokens");
	} else {
		v = json_object_get(json_object_get(root, "sampling_params"), "max_new_tokens");
	}
	r->max_tokens = e->cfg.default_max_tokens;
	if (v && !json_is_null(v)) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > 1000000)
			return "max tokens must be an integer in [0, 1000000]";
		r->max_tokens = (int)json_integer_value(v);
	}
	/* n > 1 (several choices per request) is not modelled: refuse it
	 * rather than answer one choice where the client expects n. */
	json_t *n = r->kind == MREQ_GENERATE
			    ? json_object_get(json_object_get(root, "sampling_params"), "n")
			    : json_object_get(root, "n");
	if (n && !json_is_null(n)) {
		if (!json_is_integer(n) || json_integer_value(n) < 1)
			return "'n' must be a positive integer";
		if (json_integer_value(n) > 1)
			return "n > 1 is not supported by the mock engine";
	}
	/* A prefill engine only computes the first token. */
	if (e->cfg.pd_mode == MOCK_PD_PREFILL && r->max_tokens > 1)
		r->max_tokens = 1;
	return NULL;
}

/* vLLM PD (NixlConnector's kv_transfer_params; docs/mock-engine.md): a
 * prefill engine needs do_remote_decode and a one-token, not streamed
 * request, and its answer returns the parameters of its KV (a room of its
 * bootstrap listener as remote_request_id); a decode engine needs them
 * back and waits on that room before it decodes. */
static const char *read_kv_transfer(struct mock_engine *e, struct mreq *r, json_t *root)
{
	json_t *kv = json_object_get(root, "kv_transfer_params");
	if (kv != NULL && !json_is_null(kv) && !json_is_object(kv))
		return "'kv_transfer_params' must be an object";
	if (e->cfg.pd_mode == MOCK_PD_PREFILL) {
		if (!json_is_true(json_object_get(kv, "do_remote_decode")))
			return "a vLLM prefill engine needs kv_transfer_params with do_remote_decode: true";
		if (r->stream)
			return "a vLLM prefill request must not stream";
		r->has_room = true;
		r->room = r->id;
		return NULL;
	}
	if (e->cfg.pd_mode != MOCK_PD_DECODE)
		return NULL;
	const char *host = json_string_value(json_object_get(kv, "remote_host"));
	const char *rid = json_string_value(json_object_get(kv, "remote_request_id"));
	json_t *port = json_object_get(kv, "remote_port");
	char *end = NULL;
	unsigned long long room = rid ? strtoull(rid, &end, 10) : 0;
	if (!json_is_true(json_object_get(kv, "do_remote_prefill")) || host == NULL ||
	    !json_is_integer(port) || json_integer_value(port) <= 0 ||
	    json_integer_value(port) > 65535 || rid == NULL || end == rid || *end != '\0' ||
	    !json_is_array(json_object_get(kv, "remote_block_ids")) ||
	    !json_is_string(json_object_get(kv, "remote_engine_id")))
		return "a vLLM decode engine needs the kv_transfer_params its prefill returned "
		       "(do_remote_prefill, remote_engine_id, remote_block_ids, remote_host, "
		       "remote_port, remote_request_id)";
	r->has_room = true;
	r->room = room;
	snprintf(r->bs_host, sizeof(r->bs_host), "%s", host);
	r->bs_port = (int)json_integer_value(port);
	return NULL;
}

static const char *read_bootstrap(struct mock_engine *e, struct mreq *r, json_t *root)
{
	if (e->cfg.engine == MOCK_ENGINE_VLLM)
		return read_kv_transfer(e, r, root);
	json_t *room = json_object_get(root, "bootstrap_room");
	json_t *host = json_object_get(root, "bootstrap_host");
	json_t *port = json_object_get(root, "bootstrap_port");
	if (json_is_integer(room) && json_integer_value(room) >= 0) {
		r->has_room = true;
		r->room = (uint64_t)json_integer_value(room);
	} else if (room && !json_is_null(room)) {
		return "'bootstrap_room' must be a non-negative integer";
	}
	if (json_is_string(host))
		snprintf(r->bs_host, sizeof(r->bs_host), "%s", json_string_value(host));
	if (json_is_integer(port) && json_integer_value(port) >= 0 &&
	    json_integer_value(port) <= 65535)
		r->bs_port = (int)json_integer_value(port);
	else if (port && !json_is_null(port))
		return "'bootstrap_port' must be an integer in [0, 65535] or null";
	if (e->cfg.pd_mode == MOCK_PD_DECODE &&
	    (!r->has_room || !r->bs_host[0] || r->bs_port <= 0 || r->bs_port > 65535))
		return "a decode engine needs bootstrap_host, bootstrap_port and bootstrap_room";
	return NULL;
}

/* vLLM: `model` names the base model or one of the LoRA adapters
 * (--lora-modules); anything else is vLLM's 404. SGLang mode ignores it.
 * Returns false when the model is unknown. */
static bool read_model(struct mock_engine *e, struct mreq *r, json_t *root)
{
	r->lora = 0;
	if (e->cfg.engine != MOCK_ENGINE_VLLM)
		return true;
	const char *m = json_string_value(json_object_get(root, "model"));
	if (m == NULL || strcmp(m, e->cfg.model) == 0)
		return true;
	for (int i = 0; i < e->cfg.n_lora; i++)
		if (strcmp(m, e->cfg.lora[i]) == 0) {
			r->lora = i + 1;
			return true;
		}
	return false;
}

static const char *hash_pages(struct mock_engine *e, struct mreq *r)
{
	struct mock_pages pg;
	int rc = mock_tok_pages_seeded(r->tokens, r->n_tokens, e->cfg.block_size, e->cfg.bigram,
				       mock_lora_seed(e, r->lora), &pg);
	if (rc)
		return rc == SY_ENOMEM ? "out of memory" : "block hashing failed";
	r->hashes = pg.hashes;
	r->page_tokens = pg.tokens;
	r->n_pages = pg.n;
	r->tok_per_page = pg.tok_per_page;
	return NULL;
}

int route_infer(struct mock_engine *e, h2o_req_t *req, enum mreq_kind kind)
{
	if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("POST"))) {
		http_error(req, 405, "MethodNotAllowed", "use POST");
		return 0;
	}
	mock_engine_log_request(e, req);
	json_error_t jerr;
	json_t *root = json_loadb(req->entity.base ? req->entity.base : "",
				  req->entity.base ? req->entity.len : 0, 0, &jerr);
	if (!root || !json_is_object(root)) {
		char msg[300];
		if (root)
			snprintf(msg, sizeof(msg), "request body must be a JSON object");
		else
			snprintf(msg, sizeof(msg), "malformed JSON at byte %d: %s", jerr.position,
				 jerr.text);
		json_decref(root);
		e->stats.bad_requests++;
		http_error(req, 400, "BadRequestError", msg);
		return 0;
	}
	struct mreq *r = mreq_new(e, req);
	r->kind = kind;
	if (!read_model(e, r, root)) {
		char msg[300];
		const char *m = json_string_value(json_object_get(root, "model"));
		snprintf(msg, sizeof(msg), "The model `%.200s` does not exist.", m ? m : "");
		json_decref(root);
		e->stats.bad_requests++;
		mreq_fail(r, 404, "NotFoundError", msg);
		return 0;
	}
	json_t *stream = json_object_get(root, "stream");
	r->stream = json_is_true(stream);
	r->include_usage =
		json_is_true(json_object_get(json_object_get(root, "stream_options"), "include_usage"));
	const char *err = stream && !json_is_boolean(stream) && !json_is_null(stream)
				  ? "'stream' must be a boolean"
				  : NULL;
	if (!err)
		err = read_prompt(e, r, root);
	if (!err)
		err = read_max_tokens(e, r, root);
	if (!err)
		err = read_bootstrap(e, r, root);
	if (!err)
		err = hash_pages(e, r);
	json_decref(root);
	if (err) {
		e->stats.bad_requests++;
		mreq_fail(r, 400, "BadRequestError", err);
		return 0;
	}
	r->seed = textgen_seed(r->tokens, r->n_tokens);
	mock_engine_submit(r);
	return 0;
}
