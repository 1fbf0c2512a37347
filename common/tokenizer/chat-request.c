/* chat-request.c — OpenAI chat request JSON → chat inputs (jansson; see
 * chat-request.h). Strings of the parsed document back the spans; raw JSON
 * spans (tools, tool_calls, kwargs) are re-serialised compactly, which
 * keeps order and values (the renderers parse them again).
 */
#include "common/tokenizer/chat-request.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"

struct priv {
	json_t *root;
	char **owned;
	size_t n_owned;
};

static int own(struct priv *p, char *s)
{
	char **o = realloc(p->owned, (p->n_owned + 1) * sizeof *o);
	if (!o) {
		free(s);
		return SY_ENOMEM;
	}
	p->owned = o;
	p->owned[p->n_owned++] = s;
	return SY_OK;
}

static int raw_span(struct priv *p, json_t *v, struct sy_chat_span *out)
{
	if (!v || json_is_null(v))
		return SY_OK;
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!s || own(p, s))
		return SY_ENOMEM;
	*out = (struct sy_chat_span){s, strlen(s)};
	return SY_OK;
}

static struct sy_chat_span str_span(json_t *v)
{
	if (!json_is_string(v))
		return (struct sy_chat_span){NULL, 0};
	return (struct sy_chat_span){json_string_value(v), json_string_length(v)};
}

static int content_span(struct priv *p, json_t *c, struct sy_chat_span *out)
{
	if (!c || json_is_null(c)) {
		*out = (struct sy_chat_span){"", 0};
		return SY_OK;
	}
	if (json_is_string(c)) {
		*out = str_span(c);
		return SY_OK;
	}
	if (!json_is_array(c))
		return SY_EMALFORMED;
	size_t total = 0, i;
	json_t *part;
	json_array_foreach(c, i, part) {
		json_t *t = json_object_get(part, "text");
		if (!json_is_string(t))
			return SY_EMALFORMED;
		total += json_string_length(t);
	}
	char *s = malloc(total + 1);
	if (!s || own(p, s))
		return SY_ENOMEM;
	size_t k = 0;
	json_array_foreach(c, i, part) {
		json_t *t = json_object_get(part, "text");
		memcpy(s + k, json_string_value(t), json_string_length(t));
		k += json_string_length(t);
	}
	*out = (struct sy_chat_span){s, total};
	return SY_OK;
}

void sy_chat_request_free(struct sy_chat_request *req)
{
	struct priv *p = req->priv_;
	if (p) {
		for (size_t i = 0; i < p->n_owned; i++)
			free(p->owned[i]);
		free(p->owned);
		json_decref(p->root);
		free(p);
	}
	free(req->msgs);
	memset(req, 0, sizeof *req);
}

int sy_chat_request_parse(const char *body, size_t len, struct sy_chat_request *req,
			  char *errbuf, size_t errcap)
{
	memset(req, 0, sizeof *req);
	struct priv *p = calloc(1, sizeof *p);
	if (!p)
		return SY_ENOMEM;
	req->priv_ = p;
	json_error_t jerr;
	p->root = json_loadb(body, len, JSON_ALLOW_NUL, &jerr);
	json_t *msgs = json_object_get(p->root, "messages");
	if (!p->root || !json_is_array(msgs)) {
		snprintf(errbuf, errcap, "%s", p->root ? "no messages array" : jerr.text);
		sy_chat_request_free(req);
		return SY_EMALFORMED;
	}
	req->n = json_array_size(msgs);
	req->msgs = calloc(req->n ? req->n : 1, sizeof *req->msgs);
	int rc = req->msgs ? SY_OK : SY_ENOMEM;
	for (size_t i = 0; rc == SY_OK && i < req->n; i++) {
		json_t *m = json_array_get(msgs, i);
		struct sy_chat_message *cm = &req->msgs[i];
		cm->role = str_span(json_object_get(m, "role"));
		if (!cm->role.len) {
			snprintf(errbuf, errcap, "messages[%zu]: no role", i);
			rc = SY_EMALFORMED;
			break;
		}
		if ((rc = content_span(p, json_object_get(m, "content"), &cm->content))) {
			snprintf(errbuf, errcap, "messages[%zu]: bad content", i);
			break;
		}
		cm->name = str_span(json_object_get(m, "name"));
		cm->tool_call_id = str_span(json_object_get(m, "tool_call_id"));
		cm->reasoning_content = str_span(json_object_get(m, "reasoning_content"));
		json_t *tc = json_object_get(m, "tool_calls");
		if (json_is_array(tc) && json_array_size(tc))
			rc = raw_span(p, tc, &cm->tool_calls);
	}
	json_t *agp = json_object_get(p->root, "add_generation_prompt");
	req->opts.add_generation_prompt = !json_is_false(agp);
	const char *choice = json_string_value(json_object_get(p->root, "tool_choice"));
	if (rc == SY_OK && !(choice && strcmp(choice, "none") == 0))
		rc = raw_span(p, json_object_get(p->root, "tools"), &req->opts.tools);
	if (rc == SY_OK)
		rc = raw_span(p, json_object_get(p->root, "chat_template_kwargs"),
			      &req->opts.template_kwargs);
	if (rc)
		sy_chat_request_free(req);
	return rc;
}
