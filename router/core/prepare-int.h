/* prepare-int.h — internals shared by prepare.c (tokens, peak, headers) and
 * prepare_scan.c (the yajl SAX pass). Not part of the contract.
 *
 * The scan stores only offsets into buf->text / buf->tokens (both may grow
 * and move while scanning); prepare.c turns them into pointers after the
 * scan.
 */
#ifndef SY_ROUTER_PREPARE_INT_H
#define SY_ROUTER_PREPARE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "router/core/prepare.h"

#define PREPARE_MAX_FRAMES 8      /* known nesting: top/messages/message/parts/part */
#define PREPARE_MAX_SKIP_DEPTH 256 /* nesting allowed inside skipped values */
#define PREPARE_MAX_N 1024        /* "n" / sampling_params.n upper bound */

/* A decoded string in buf->text. */
struct prep_str {
	size_t off, len;
	bool set;
};

/* A raw JSON value of the body (still escaped): [off, off + len). */
struct prep_raw {
	size_t off, len; /* len 0 = absent */
};

/* One chat message (offsets into buf->text; tool_calls into the body). */
struct prep_msg {
	struct prep_str role, content, name, tool_call_id;
	struct prep_str reasoning;  /* reasoning_content (set even when empty) */
	struct prep_raw tool_calls; /* the raw tool_calls array */
	bool content_string;        /* content was a JSON string */
	bool no_forward;            /* message-level tools / function_call */
};

/* One prompt item: text (in buf->text) or token IDs (in buf->tokens). */
struct prep_item {
	bool ids;
	size_t off, len; /* text: byte range; ids: index range in tokens */
};

/* Scan results other than buffers. */
struct prep_result {
	struct prep_str model;
	struct prep_str cache_salt;
	bool has_max_tokens, has_max_completion_tokens, has_max_new_tokens;
	uint64_t max_tokens, max_completion_tokens, max_new_tokens;
	bool has_max_output_tokens;     /* /v1/responses */
	uint64_t max_output_tokens;
	bool stream;
	uint32_t n;
	bool has_messages, has_prompt, has_text, has_input_ids;
	struct body_members body;    /* counts and flags; arrays set by prepare.c */
	/* chat only: template inputs and the input-ids forwarding gate */
	struct prep_raw tools;       /* raw `tools` array */
	struct prep_raw kwargs;      /* raw `chat_template_kwargs` object */
	bool tool_choice_none;       /* "tool_choice": "none" (tools not rendered) */
	bool no_forward;             /* a field the gate excludes (prepare.h) */
};

/* Runs the validating scan; `sampling` (may be NULL) names the members of
 * role BODY_SAMPLING. Returns 0, SY_EINVAL (err: 400 with offset) or
 * SY_ENOMEM. Fills `res`, buf->msgs / items / text / tokens / top / sub. */
int prepare_scan(enum route route, const struct sampling_override *sampling,
		 const char *body, size_t len, struct prepare_buf *buf, struct prep_result *res,
		 struct router_error *err);

#endif
