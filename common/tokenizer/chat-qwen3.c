/* chat-qwen3.c — the Qwen3 chat template (ChatML with tools, tool
 * responses folded into user turns, and <think> reasoning), rendered in C
 * exactly as its Jinja source does for SGLang's inputs. Walk-through of the
 * template, in order:
 *   1. tools → a system turn: the first message's content if it is a system
 *      message, then "# Tools" and one `tojson` line per tool function;
 *      no tools → the first message as a system turn if it is one.
 *   2. last_query_index: the last user message whose content is not a
 *      <tool_response>…</tool_response> wrapper (scanning backwards while
 *      only tool responses were seen).
 *   3. per message: user, and system not first → a ChatML turn; assistant →
 *      its content with reasoning split off at "</think>" (or from
 *      reasoning_content), a <think> block only after last_query_index and
 *      only when last or non-empty, then its tool calls as <tool_call>
 *      blocks; tool → <tool_response> blocks, consecutive ones in one user
 *      turn.
 *   4. add_generation_prompt → "<|im_start|>assistant\n", plus an empty
 *      think block when chat_template_kwargs has enable_thinking: false.
 * Python string semantics (split, strip('\n'), startswith) are applied on
 * bytes, which is exact for these ASCII separators.
 */
#include <string.h>

#include "common/errors.h"
#include "common/tokenizer/chat-template.h"

#include "common/lit.h"

static int put(struct sy_textbuf *o, const char *p, size_t n)
{
	return sy_textbuf_append(o, p, n);
}

static int put_span(struct sy_textbuf *o, struct sy_chat_span s)
{
	return sy_textbuf_append(o, s.ptr, s.len);
}

static bool span_eq(struct sy_chat_span s, const char *lit)
{
	size_t n = strlen(lit);
	return s.len == n && memcmp(s.ptr, lit, n) == 0;
}

static bool starts_with(struct sy_chat_span s, const char *lit)
{
	size_t n = strlen(lit);
	return s.len >= n && memcmp(s.ptr, lit, n) == 0;
}

static bool ends_with(struct sy_chat_span s, const char *lit)
{
	size_t n = strlen(lit);
	return s.len >= n && memcmp(s.ptr + s.len - n, lit, n) == 0;
}

/* first / last occurrence of lit in s, or SIZE_MAX */
static size_t find(struct sy_chat_span s, const char *lit, bool last)
{
	size_t n = strlen(lit), at = SIZE_MAX;
	for (size_t i = 0; i + n <= s.len; i++) {
		if (memcmp(s.ptr + i, lit, n) == 0) {
			at = i;
			if (!last)
				break;
		}
	}
	return at;
}

static struct sy_chat_span sub(struct sy_chat_span s, size_t from, size_t to)
{
	return (struct sy_chat_span){s.ptr ? s.ptr + from : NULL, to - from};
}

static const char TOOLS_HEAD[] =
	"# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
	"You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
static const char TOOLS_TAIL[] =
	"\n</tools>\n\nFor each function call, return a json object with function name and "
	"arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "
	"<function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n";

static int render_tools_system(const struct sy_chat_message *msgs, size_t n, json_t *tools,
			       struct sy_textbuf *o)
{
	int rc = put(o, SY_LIT("<|im_start|>system\n"));
	if (rc == SY_OK && n && span_eq(msgs[0].role, "system")) {
		if ((rc = put_span(o, msgs[0].content)) == SY_OK)
			rc = put(o, SY_LIT("\n\n"));
	}
	if (rc == SY_OK)
		rc = put(o, SY_LIT(TOOLS_HEAD));
	for (size_t i = 0; rc == SY_OK && i < json_array_size(tools); i++) {
		if ((rc = put(o, SY_LIT("\n"))) == SY_OK)
			rc = sy_chat_tool_function_json(json_array_get(tools, i), o);
	}
	return rc ? rc : put(o, SY_LIT(TOOLS_TAIL));
}

static int render_tool_calls(const struct sy_chat_message *m, struct sy_chat_span content,
			     struct sy_textbuf *o)
{
	json_t *calls;
	int rc = sy_chat_parse(&m->tool_calls, &calls);
	if (rc)
		return rc;
	if (calls && !json_is_array(calls)) {
		json_decref(calls);
		return SY_EMALFORMED;
	}
	for (size_t j = 0; rc == SY_OK && j < json_array_size(calls); j++) {
		json_t *tc = json_array_get(calls, j);
		if ((j == 0 && content.len) || j > 0)
			rc = put(o, SY_LIT("\n"));
		json_t *f = json_object_get(tc, "function");
		if (f && !json_is_null(f))
			tc = f;
		json_t *name = json_object_get(tc, "name");
		if (rc == SY_OK)
			rc = put(o, SY_LIT("<tool_call>\n{\"name\": \""));
		if (rc == SY_OK && json_is_string(name))
			rc = put(o, json_string_value(name), json_string_length(name));
		if (rc == SY_OK)
			rc = put(o, SY_LIT("\", \"arguments\": "));
		if (rc == SY_OK)
			rc = sy_chat_tool_arguments(json_object_get(tc, "arguments"), o);
		if (rc == SY_OK)
			rc = put(o, SY_LIT("}\n</tool_call>"));
	}
	json_decref(calls);
	return rc;
}

static int render_assistant(const struct sy_chat_message *m, bool after_query, bool last,
			    struct sy_textbuf *o)
{
	struct sy_chat_span content = m->content, reasoning = {"", 0};
	if (m->reasoning_content.ptr) {
		reasoning = m->reasoning_content;
	} else {
		size_t close = find(content, "</think>", true);
		if (close != SIZE_MAX) {
			struct sy_chat_span whole = content;
			/* content.split('</think>')[-1].lstrip('\n') */
			content = sy_chat_strip(sub(whole, close + 8, whole.len), "\n", true, false);
			/* content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') */
			struct sy_chat_span head =
				sy_chat_strip(sub(whole, 0, find(whole, "</think>", false)), "\n", false, true);
			size_t open = find(head, "<think>", true);
			if (open != SIZE_MAX)
				head = sub(head, open + 7, head.len);
			reasoning = sy_chat_strip(head, "\n", true, false);
		}
	}
	int rc = put(o, SY_LIT("<|im_start|>"));
	if (rc == SY_OK)
		rc = put_span(o, m->role);
	if (rc == SY_OK && after_query && (last || reasoning.len)) {
		if ((rc = put(o, SY_LIT("\n<think>\n"))) == SY_OK &&
		    (rc = put_span(o, sy_chat_strip(reasoning, "\n", true, true))) == SY_OK &&
		    (rc = put(o, SY_LIT("\n</think>\n\n"))) == SY_OK)
			rc = put_span(o, sy_chat_strip(content, "\n", true, false));
	} else if (rc == SY_OK) {
		if ((rc = put(o, SY_LIT("\n"))) == SY_OK)
			rc = put_span(o, content);
	}
	if (rc == SY_OK && m->tool_calls.len)
		rc = render_tool_calls(m, content, o);
	return rc ? rc : put(o, SY_LIT("<|im_end|>\n"));
}

static bool thinking_disabled(const struct sy_chat_opts *opts, int *rc)
{
	json_t *kw;
	*rc = sy_chat_parse(&opts->template_kwargs, &kw);
	bool off = kw && json_is_false(json_object_get(kw, "enable_thinking"));
	json_decref(kw);
	return off;
}

static int render(const struct sy_chat_template *t, const struct sy_chat_message *msgs,
		  size_t n, const struct sy_chat_opts *opts, struct sy_textbuf *o)
{
	(void)t;
	if (n == 0)
		return SY_EINVAL; /* the template reads messages[0] */
	json_t *tools;
	int rc = sy_chat_parse(&opts->tools, &tools);
	if (rc)
		return rc;
	if (tools && !json_is_array(tools)) {
		json_decref(tools);
		return SY_EMALFORMED;
	}
	if (json_array_size(tools))
		rc = render_tools_system(msgs, n, tools, o);
	else if (span_eq(msgs[0].role, "system") &&
		 (rc = put(o, SY_LIT("<|im_start|>system\n"))) == SY_OK &&
		 (rc = put_span(o, msgs[0].content)) == SY_OK)
		rc = put(o, SY_LIT("<|im_end|>\n"));
	json_decref(tools);
	if (rc)
		return rc;

	size_t last_query = n - 1;
	for (size_t k = n; k-- > 0;) {
		const struct sy_chat_message *m = &msgs[k];
		if (span_eq(m->role, "user") && !(starts_with(m->content, "<tool_response>") &&
						   ends_with(m->content, "</tool_response>"))) {
			last_query = k;
			break;
		}
	}
	for (size_t i = 0; rc == SY_OK && i < n; i++) {
		const struct sy_chat_message *m = &msgs[i];
		if (span_eq(m->role, "user") || (span_eq(m->role, "system") && i != 0)) {
			if ((rc = put(o, SY_LIT("<|im_start|>"))) == SY_OK &&
			    (rc = put_span(o, m->role)) == SY_OK && (rc = put(o, SY_LIT("\n"))) == SY_OK &&
			    (rc = put_span(o, m->content)) == SY_OK)
				rc = put(o, SY_LIT("<|im_end|>\n"));
		} else if (span_eq(m->role, "assistant")) {
			rc = render_assistant(m, i > last_query, i + 1 == n, o);
		} else if (span_eq(m->role, "tool")) {
			if (i == 0 || !span_eq(msgs[i - 1].role, "tool"))
				rc = put(o, SY_LIT("<|im_start|>user"));
			if (rc == SY_OK && (rc = put(o, SY_LIT("\n<tool_response>\n"))) == SY_OK &&
			    (rc = put_span(o, m->content)) == SY_OK)
				rc = put(o, SY_LIT("\n</tool_response>"));
			if (rc == SY_OK && (i + 1 == n || !span_eq(msgs[i + 1].role, "tool")))
				rc = put(o, SY_LIT("<|im_end|>\n"));
		}
	}
	if (rc || !opts->add_generation_prompt)
		return rc;
	bool no_think = thinking_disabled(opts, &rc);
	if (rc == SY_OK)
		rc = put(o, SY_LIT("<|im_start|>assistant\n"));
	if (rc == SY_OK && no_think)
		rc = put(o, SY_LIT("<think>\n\n</think>\n\n"));
	return rc;
}

const struct sy_chat_family sy_chat_family_qwen3 = {"qwen3", render};
