/* chat-llama31.c — Meta's official Llama 3.1 Instruct chat template
 * (tokenizer_config.json of meta-llama/Llama-3.1-*-Instruct; pinned test
 * source: npm @huggingface/ollama-utils 0.0.18, entry library/llama3.1:8b,
 * 4,614 bytes, fingerprint 60848a05837ce656), rendered in C exactly as its
 * Jinja source does for SGLang's inputs. Walk-through, in template order:
 *   1. bos_token. chat_template_kwargs read by the template: custom_tools
 *      (replaces tools, passed through as given), tools_in_user_message
 *      (default true), date_string (default "26 Jul 2024"), builtin_tools
 *      (a list of tool names).
 *   2. A first system message is taken out; its content, trimmed, ends the
 *      system turn.
 *   3. System turn: header, "Environment: ipython\n" when builtin_tools or
 *      tools are given, "Tools: a, b\n\n" for builtin_tools (code_interpreter
 *      left out), the knowledge/today dates, the tool list (each tool
 *      `tojson(indent=4)`) when tools are not in the user message, the
 *      system message, <|eot_id|>.
 *   4. tools_in_user_message with tools: the next message (whatever its
 *      role) is consumed as the first user turn, prefixed with the tool
 *      instructions and list; no message left → SY_EINVAL (the template's
 *      raise_exception).
 *   5. Each remaining message: a plain turn (content trimmed) unless its
 *      role is tool/ipython or it has tool_calls; tool_calls must hold
 *      exactly one call (else SY_EINVAL), written as
 *      {"name": "N", "parameters": tojson(arguments)} or, for a builtin tool,
 *      <|python_tag|>N.call(k="v", ...), ended by <|eom_id|> when
 *      builtin_tools is given, else <|eot_id|>; tool/ipython → an ipython
 *      turn with the content `tojson`'d (a string is "iterable" in Jinja, so
 *      the template always quotes it).
 *   6. add_generation_prompt → the assistant header.
 * Inputs as SGLang gives them: tool_calls null = absent (SGLang drops None
 * fields), arguments after json.loads (kept as the string when not JSON),
 * tools as function models. Jinja truthiness for tools_in_user_message.
 */
#include <string.h>

#include "common/errors.h"
#include "common/tokenizer/chat-template.h"

#include "common/lit.h"

static int put(struct sy_textbuf *o, const char *p, size_t n)
{
	return sy_textbuf_append(o, p, n);
}

static int put_trim(struct sy_textbuf *o, struct sy_chat_span s)
{
	struct sy_chat_span t = sy_chat_strip(s, NULL, true, true);
	return put(o, t.ptr, t.len);
}

static bool span_is(struct sy_chat_span s, const char *lit)
{
	size_t n = strlen(lit);
	return s.len == n && memcmp(s.ptr, lit, n) == 0;
}

/* Jinja truthiness of a JSON value */
static bool truthy(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_NULL:
	case JSON_FALSE: return false;
	case JSON_TRUE: return true;
	case JSON_INTEGER: return json_integer_value(v) != 0;
	case JSON_REAL: return json_real_value(v) != 0.0;
	case JSON_STRING: return json_string_length(v) != 0;
	case JSON_ARRAY: return json_array_size(v) != 0;
	case JSON_OBJECT: return json_object_size(v) != 0;
	}
	return false;
}

static const char INSTR_FORMAT[] =
	"Respond in the format {\"name\": function name, \"parameters\": dictionary of argument "
	"name and its value}.Do not use variables.\n\n";
static const char INSTR_SYSTEM[] = "You have access to the following functions. To call a "
				   "function, please respond with JSON for a function call.";
static const char INSTR_USER[] =
	"Given the following functions, please respond with a JSON for a function call with its "
	"proper arguments that best answers the given prompt.\n\n";

/* the template context after its `set` prologue */
struct ctx {
	json_t *tools;	   /* array, or NULL for none (owned) */
	bool in_user;	   /* tools_in_user_message */
	const json_t *date; /* string */
	const json_t *builtin; /* builtin_tools, NULL when undefined */
};

/* each tool `tojson(indent=4)` + "\n\n" */
static int put_tools(struct sy_textbuf *o, const json_t *tools)
{
	int rc = SY_OK;
	for (size_t i = 0; rc == SY_OK && i < json_array_size(tools); i++) {
		if ((rc = sy_chat_tojson_indent(json_array_get(tools, i), 4, o)) == SY_OK)
			rc = put(o, SY_LIT("\n\n"));
	}
	return rc;
}

static bool builtin_has(const json_t *builtin, const json_t *name)
{
	size_t i;
	json_t *e;
	if (!json_is_string(name))
		return false;
	json_array_foreach(builtin, i, e) {
		if (json_is_string(e) && json_string_length(e) == json_string_length(name) &&
		    memcmp(json_string_value(e), json_string_value(name), json_string_length(e)) == 0)
			return true;
	}
	return false;
}

static int put_str(struct sy_textbuf *o, const json_t *s)
{
	return put(o, json_string_value(s), json_string_length(s));
}

/* one assistant tool call (tool_calls span known non-null) */
static int render_tool_call(const struct ctx *c, const struct sy_chat_message *m,
			    struct sy_textbuf *o)
{
	json_t *calls;
	int rc = sy_chat_parse(&m->tool_calls, &calls);
	if (rc)
		return rc;
	if (!json_is_array(calls)) {
		json_decref(calls);
		return SY_EMALFORMED;
	}
	if (json_array_size(calls) != 1) { /* "only supports single tool-calls" */
		json_decref(calls);
		return SY_EINVAL;
	}
	json_t *f = json_object_get(json_array_get(calls, 0), "function");
	json_t *name = json_object_get(f, "name");
	json_t *args = json_object_get(f, "arguments");
	json_t *parsed = NULL;
	if (!json_is_string(name)) {
		json_decref(calls);
		return SY_EINVAL; /* Python: str + non-str is a TypeError */
	}
	if (json_is_string(args)) { /* SGLang's json.loads, kept when not JSON */
		json_error_t err;
		parsed = json_loadb(json_string_value(args), json_string_length(args),
				    JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
		if (parsed)
			args = parsed;
	}
	rc = put(o, SY_LIT("<|start_header_id|>assistant<|end_header_id|>\n\n"));
	if (rc == SY_OK && c->builtin && builtin_has(c->builtin, name)) {
		if (!json_is_object(args))
			rc = SY_EINVAL; /* `arguments | items` needs a mapping */
		if (rc == SY_OK && (rc = put(o, SY_LIT("<|python_tag|>"))) == SY_OK &&
		    (rc = put_str(o, name)) == SY_OK)
			rc = put(o, SY_LIT(".call("));
		const char *k;
		size_t kl;
		json_t *v;
		bool first = true;
		if (rc == SY_OK) {
			json_object_keylen_foreach(args, k, kl, v) {
				if (rc == SY_OK && !json_is_string(v))
					rc = SY_EINVAL;
				if (rc == SY_OK && !first)
					rc = put(o, SY_LIT(", "));
				first = false;
				if (rc == SY_OK && (rc = put(o, k, kl)) == SY_OK &&
				    (rc = put(o, SY_LIT("=\""))) == SY_OK && (rc = put_str(o, v)) == SY_OK)
					rc = put(o, SY_LIT("\""));
			}
		}
		if (rc == SY_OK)
			rc = put(o, SY_LIT(")"));
	} else if (rc == SY_OK) {
		if ((rc = put(o, SY_LIT("{\"name\": \""))) == SY_OK && (rc = put_str(o, name)) == SY_OK &&
		    (rc = put(o, SY_LIT("\", \"parameters\": "))) == SY_OK)
			rc = args ? sy_chat_tojson(args, o) : put(o, SY_LIT("null"));
		if (rc == SY_OK)
			rc = put(o, SY_LIT("}"));
	}
	if (rc == SY_OK)
		rc = c->builtin ? put(o, SY_LIT("<|eom_id|>")) : put(o, SY_LIT("<|eot_id|>"));
	json_decref(parsed);
	json_decref(calls);
	return rc;
}

static int render_body(const struct sy_chat_template *t, const struct sy_chat_message *msgs,
		       size_t n, const struct sy_chat_opts *opts, const struct ctx *c,
		       struct sy_textbuf *o)
{
	if (n == 0)
		return SY_EINVAL; /* messages[0] of an empty list */
	int rc = put(o, t->bos_token, strlen(t->bos_token));
	size_t i = 0;
	struct sy_chat_span sys = {"", 0};
	if (span_is(msgs[0].role, "system"))
		sys = msgs[i++].content;
	if (rc == SY_OK)
		rc = put(o, SY_LIT("<|start_header_id|>system<|end_header_id|>\n\n"));
	if (rc == SY_OK && (c->builtin || c->tools))
		rc = put(o, SY_LIT("Environment: ipython\n"));
	if (rc == SY_OK && c->builtin) {
		rc = put(o, SY_LIT("Tools: "));
		bool first = true;
		size_t k;
		json_t *e;
		json_array_foreach(c->builtin, k, e) {
			if (json_is_string(e) && strcmp(json_string_value(e), "code_interpreter") == 0)
				continue;
			if (!json_is_string(e))
				rc = SY_EINVAL; /* join of non-strings: not rendered here */
			if (rc == SY_OK && !first)
				rc = put(o, SY_LIT(", "));
			first = false;
			if (rc == SY_OK)
				rc = put_str(o, e);
		}
		if (rc == SY_OK)
			rc = put(o, SY_LIT("\n\n"));
	}
	if (rc == SY_OK && (rc = put(o, SY_LIT("Cutting Knowledge Date: December 2023\nToday Date: "))) ==
				   SY_OK &&
	    (rc = put_str(o, c->date)) == SY_OK)
		rc = put(o, SY_LIT("\n\n"));
	if (rc == SY_OK && c->tools && !c->in_user) {
		if ((rc = put(o, SY_LIT(INSTR_SYSTEM))) == SY_OK && (rc = put(o, SY_LIT(INSTR_FORMAT))) == SY_OK)
			rc = put_tools(o, c->tools);
	}
	if (rc == SY_OK && (rc = put_trim(o, sys)) == SY_OK)
		rc = put(o, SY_LIT("<|eot_id|>"));
	if (rc == SY_OK && c->in_user && c->tools) {
		if (i == n)
			return SY_EINVAL; /* "no first user message" */
		struct sy_chat_span first = msgs[i++].content;
		if ((rc = put(o, SY_LIT("<|start_header_id|>user<|end_header_id|>\n\n"))) == SY_OK &&
		    (rc = put(o, SY_LIT(INSTR_USER))) == SY_OK &&
		    (rc = put(o, SY_LIT(INSTR_FORMAT))) == SY_OK && (rc = put_tools(o, c->tools)) == SY_OK &&
		    (rc = put_trim(o, first)) == SY_OK)
			rc = put(o, SY_LIT("<|eot_id|>"));
	}
	for (; rc == SY_OK && i < n; i++) {
		const struct sy_chat_message *m = &msgs[i];
		bool tool_role = span_is(m->role, "tool") || span_is(m->role, "ipython");
		bool has_calls = m->tool_calls.len && !(m->tool_calls.len == 4 &&
							 memcmp(m->tool_calls.ptr, "null", 4) == 0);
		if (!tool_role && !has_calls) {
			if ((rc = put(o, SY_LIT("<|start_header_id|>"))) == SY_OK &&
			    (rc = put(o, m->role.ptr, m->role.len)) == SY_OK &&
			    (rc = put(o, SY_LIT("<|end_header_id|>\n\n"))) == SY_OK &&
			    (rc = put_trim(o, m->content)) == SY_OK)
				rc = put(o, SY_LIT("<|eot_id|>"));
		} else if (has_calls) {
			rc = render_tool_call(c, m, o);
		} else {
			json_t *s = json_stringn_nocheck(m->content.ptr ? m->content.ptr : "",
							 m->content.len);
			if (!s)
				return SY_ENOMEM;
			if ((rc = put(o, SY_LIT("<|start_header_id|>ipython<|end_header_id|>\n\n"))) ==
				    SY_OK &&
			    (rc = sy_chat_tojson(s, o)) == SY_OK)
				rc = put(o, SY_LIT("<|eot_id|>"));
			json_decref(s);
		}
	}
	if (rc == SY_OK && opts->add_generation_prompt)
		rc = put(o, SY_LIT("<|start_header_id|>assistant<|end_header_id|>\n\n"));
	return rc;
}

static int render(const struct sy_chat_template *t, const struct sy_chat_message *msgs,
		  size_t n, const struct sy_chat_opts *opts, struct sy_textbuf *o)
{
	json_t *kw = NULL, *req_tools = NULL, *date_default = NULL;
	struct ctx c = {.in_user = true};
	int rc = sy_chat_parse(&opts->template_kwargs, &kw);
	if (rc == SY_OK && kw && !json_is_object(kw))
		rc = SY_EMALFORMED;
	if (rc == SY_OK)
		rc = sy_chat_parse(&opts->tools, &req_tools);
	if (rc == SY_OK && req_tools && !json_is_array(req_tools) && !json_is_null(req_tools))
		rc = SY_EMALFORMED;
	/* tools: custom_tools when defined, else the request's as function models */
	json_t *custom = kw ? json_object_get(kw, "custom_tools") : NULL;
	if (rc == SY_OK && custom) {
		if (json_is_array(custom))
			c.tools = json_incref(custom);
		else if (!json_is_null(custom))
			rc = SY_EINVAL; /* `for t in tools` over a non-list */
	} else if (rc == SY_OK && json_array_size(req_tools)) {
		c.tools = json_array();
		if (!c.tools)
			rc = SY_ENOMEM;
		for (size_t i = 0; rc == SY_OK && i < json_array_size(req_tools); i++) {
			json_t *fm;
			if ((rc = sy_chat_tool_function_model(json_array_get(req_tools, i), &fm)) ==
				    SY_OK &&
			    json_array_append_new(c.tools, fm) != 0)
				rc = SY_ENOMEM;
		}
	}
	json_t *v;
	if (rc == SY_OK && kw && (v = json_object_get(kw, "tools_in_user_message")))
		c.in_user = truthy(v);
	c.date = kw ? json_object_get(kw, "date_string") : NULL;
	if (rc == SY_OK && c.date && !json_is_string(c.date))
		rc = SY_EINVAL; /* "Today Date: " + non-string */
	if (rc == SY_OK && !c.date) {
		c.date = date_default = json_string("26 Jul 2024");
		if (!date_default)
			rc = SY_ENOMEM;
	}
	c.builtin = kw ? json_object_get(kw, "builtin_tools") : NULL;
	if (rc == SY_OK && c.builtin && !json_is_array(c.builtin))
		rc = SY_EINVAL;
	if (rc == SY_OK)
		rc = render_body(t, msgs, n, opts, &c, o);
	json_decref(date_default);
	json_decref(c.tools);
	json_decref(req_tools);
	json_decref(kw);
	return rc;
}

/* The Llama 3.1 family (known[] in chat-template.c). */
const struct sy_chat_family sy_chat_family_llama31 = {"llama31", render};
