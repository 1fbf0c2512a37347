/* chat-template.h — built-in renderers of Hugging Face chat templates
 * (internal to common/tokenizer/).
 *
 * An "hf" tokenizer directory carries its Jinja chat template in
 * tokenizer_config.json (`chat_template`: a string, or a list of {name,
 * template} of which "default" is used) or in chat_template.jinja. We do not
 * run Jinja: the template text is fingerprinted (FNV-1a 64 of its exact
 * bytes) and mapped to a C renderer of that family that writes exactly what
 * the template renders for SGLang's template inputs (messages, tools as
 * function models, add_generation_prompt, chat_template_kwargs, bos_token,
 * eos_token). A template that no renderer knows is an open error, or plain
 * ChatML with the fallback flag. How to add a family: docs/tokenizer.md.
 */
#ifndef SY_COMMON_TOKENIZER_CHAT_TEMPLATE_H
#define SY_COMMON_TOKENIZER_CHAT_TEMPLATE_H

#include <jansson.h>

#include "common/tokenizer/tokenizer-impl.h"

struct sy_chat_template;

/* A renderer family. render appends the text for msgs (validated spans) to
 * out; errors SY_EINVAL (e.g. no messages where the template needs one),
 * SY_EMALFORMED (bad JSON in tools/tool_calls/kwargs), SY_ENOMEM. */
struct sy_chat_family {
	const char *name;
	int (*render)(const struct sy_chat_template *t, const struct sy_chat_message *msgs,
		      size_t n, const struct sy_chat_opts *opts, struct sy_textbuf *out);
};

/* A loaded template: the family plus the special-token strings the
 * template reads (owned, NUL-terminated, "" when the config has none). */
struct sy_chat_template {
	const struct sy_chat_family *family;
	char *bos_token;
	char *eos_token;
	uint64_t fingerprint; /* FNV-1a 64 of the template text; 0 if none */
};

/* Reads `config_path` (tokenizer_config.json; chat_template.jinja beside it
 * when the config has no template) and picks the family. Unknown or missing
 * template: SY_EUNSUPPORTED with the fingerprint in errbuf, unless
 * `fallback` (then family "chatml-fallback"). SY_EIO / SY_EMALFORMED for an
 * unreadable / invalid config. */
int sy_chat_template_load(struct sy_chat_template *t, const char *config_path,
			  bool fallback, char *errbuf, size_t errcap);
/* As sy_chat_template_load, with the template text read from the file
 * `template_path` when it is not NULL (SGLang --chat-template); the special
 * tokens still come from the config. SY_EIO when that file is unreadable. */
int sy_chat_template_load_ex(struct sy_chat_template *t, const char *config_path,
			     const char *template_path, bool fallback, char *errbuf, size_t errcap);
void sy_chat_template_free(struct sy_chat_template *t);

int sy_chat_template_render(const struct sy_chat_template *t,
			    const struct sy_chat_message *msgs, size_t n,
			    const struct sy_chat_opts *opts, struct sy_textbuf *out);

/* FNV-1a 64 of p[0..n) (template fingerprints). */
uint64_t sy_chat_fingerprint(const char *p, size_t n);

/* ---- helpers for renderers (chat-json.c) ---- */

/* Appends `v` as Jinja's `tojson` writes it in transformers (Python
 * json.dumps, ensure_ascii=False, separators ", " and ": ", keys in
 * document order; floats in Python repr). */
int sy_chat_tojson(const json_t *v, struct sy_textbuf *out);

/* `tojson(indent=N)`: Python json.dumps(ensure_ascii=False, indent=N) —
 * items separated by "," and a newline with N spaces per level, ": " after
 * keys, empty containers "[]" / "{}"; indent 0 = sy_chat_tojson. SY_EINVAL
 * for a negative indent. (@huggingface/jinja's tojson writes the same.) */
int sy_chat_tojson_indent(const json_t *v, int indent, struct sy_textbuf *out);

/* Parses a raw JSON span (NULL for len 0). SY_EMALFORMED on bad JSON. */
int sy_chat_parse(const struct sy_chat_span *s, json_t **out);

/* Appends SGLang's view of OpenAI tool `tool` ({"type":"function",
 * "function":{...}}): {"description", "name", "parameters", "strict"}. */
int sy_chat_tool_function_json(const json_t *tool, struct sy_textbuf *out);

/* The same function model as a new JSON object (keys description, name,
 * parameters, strict in that order; caller owns *out, json_decref).
 * SY_EMALFORMED when `tool` has no "function" object, SY_ENOMEM. */
int sy_chat_tool_function_model(const json_t *tool, json_t **out);

/* Appends a tool call's arguments as the template writes them after
 * SGLang's json.loads of the arguments string: a JSON string argument
 * (unparseable text, or a JSON string value) raw, anything else tojson. */
int sy_chat_tool_arguments(const json_t *arguments, struct sy_textbuf *out);

/* Python str.strip() / lstrip / rstrip on `chars` (NULL = whitespace as
 * str.isspace) over s[0..n): returns the kept sub-span. */
struct sy_chat_span sy_chat_strip(struct sy_chat_span s, const char *chars, bool left,
				  bool right);

/* Families (one file each). */
extern const struct sy_chat_family sy_chat_family_qwen3;
extern const struct sy_chat_family sy_chat_family_llama3;
extern const struct sy_chat_family sy_chat_family_llama31;

#endif
