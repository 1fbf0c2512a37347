/* chat-request.h — an OpenAI chat request body → the tokenizer's chat
 * inputs (struct sy_chat_message[], struct sy_chat_opts), for cold paths:
 * `POST /v1/tokenize` with messages, tools (sy-tokenize), tests. The hot
 * chat route fills the same structs from its own scanner's spans.
 *
 * Reads: messages[] (role, content: string, null → "", or an array of
 * {"type":"text","text":…} parts joined without separator; name,
 * tool_call_id, tool_calls, reasoning_content), tools (dropped when
 * tool_choice is "none", as SGLang does), add_generation_prompt (default
 * true), chat_template_kwargs.
 */
#ifndef SY_COMMON_TOKENIZER_CHAT_REQUEST_H
#define SY_COMMON_TOKENIZER_CHAT_REQUEST_H

#include "common/tokenizer/tokenizer.h"

/* Owns everything the spans point into; release with
 * sy_chat_request_free(). */
struct sy_chat_request {
	struct sy_chat_message *msgs;
	size_t n;
	struct sy_chat_opts opts;
	void *priv_; /* owned storage */
};

/* Parses `len` bytes of JSON `body`. 0, SY_EMALFORMED (bad JSON or shape;
 * a reason in errbuf), SY_ENOMEM. *req is empty on failure. */
int sy_chat_request_parse(const char *body, size_t len, struct sy_chat_request *req,
			  char *errbuf, size_t errcap);
void sy_chat_request_free(struct sy_chat_request *req);

#endif
