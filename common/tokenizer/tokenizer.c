/* tokenizer.c — the generic tokenizer layer (see tokenizer.h): output
 * containers, the plain ChatML rendering, argument checks, kind dispatch.
 *
 * Invariant kept here for every kind: an output container is appended to,
 * never rewritten; when an op fails, its length is put back to what it was
 * on entry, so callers never see a half-encoded request.
 */
#include "common/tokenizer/tokenizer.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/tokenizer/tokenizer-impl.h"

/* ---- containers ---- */

/* Next capacity ≥ need: doubling from 64 elements, capped by max_elems. */
static int grow_cap(size_t cap, size_t need, size_t max_elems, size_t *out)
{
	if (need > max_elems)
		return SY_ERANGE;
	size_t c = cap < 64 ? 64 : cap;
	while (c < need)
		c = c > max_elems / 2 ? max_elems : c * 2;
	*out = c;
	return SY_OK;
}

void sy_tokens_init(struct sy_tokens *t)
{
	t->ids = NULL;
	t->len = 0;
	t->cap = 0;
}

void sy_tokens_reset(struct sy_tokens *t)
{
	t->len = 0;
}

void sy_tokens_free(struct sy_tokens *t)
{
	free(t->ids);
	sy_tokens_init(t);
}

int sy_tokens_reserve(struct sy_tokens *t, size_t extra)
{
	if (!t)
		return SY_EINVAL;
	if (extra <= t->cap - t->len)
		return SY_OK;
	if (extra > SIZE_MAX - t->len)
		return SY_ERANGE;
	size_t cap;
	int rc = grow_cap(t->cap, t->len + extra, SIZE_MAX / sizeof(uint32_t), &cap);
	if (rc)
		return rc;
	uint32_t *p = realloc(t->ids, cap * sizeof(uint32_t));
	if (!p)
		return SY_ENOMEM;
	t->ids = p;
	t->cap = cap;
	return SY_OK;
}

int sy_tokens_append(struct sy_tokens *t, const uint32_t *ids, size_t n)
{
	if (!t || (!ids && n))
		return SY_EINVAL;
	int rc = sy_tokens_reserve(t, n);
	if (rc)
		return rc;
	if (n)
		memcpy(t->ids + t->len, ids, n * sizeof(uint32_t));
	t->len += n;
	return SY_OK;
}

void sy_textbuf_init(struct sy_textbuf *b)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

void sy_textbuf_reset(struct sy_textbuf *b)
{
	b->len = 0;
	if (b->cap)
		b->data[0] = '\0';
}

void sy_textbuf_free(struct sy_textbuf *b)
{
	free(b->data);
	sy_textbuf_init(b);
}

/* Makes room for `extra` bytes plus the trailing NUL. */
static int textbuf_reserve(struct sy_textbuf *b, size_t extra)
{
	if (extra >= SIZE_MAX - b->len)
		return SY_ERANGE;
	size_t need = b->len + extra + 1;
	if (need <= b->cap)
		return SY_OK;
	size_t cap;
	int rc = grow_cap(b->cap, need, SIZE_MAX, &cap);
	if (rc)
		return rc;
	char *d = realloc(b->data, cap);
	if (!d)
		return SY_ENOMEM;
	b->data = d;
	b->cap = cap;
	return SY_OK;
}

int sy_textbuf_append(struct sy_textbuf *b, const void *p, size_t len)
{
	if (!b || (!p && len))
		return SY_EINVAL;
	int rc = textbuf_reserve(b, len);
	if (rc)
		return rc;
	if (len)
		memcpy(b->data + b->len, p, len);
	b->len += len;
	b->data[b->len] = '\0';
	return SY_OK;
}

/* ---- plain ChatML rendering ---- */

#define IM_START "<|im_start|>"
#define IM_END "<|im_end|>\n"
#define GEN_PROMPT IM_START "assistant\n"
#include "common/lit.h"

int sy_chatml_walk(const struct sy_chat_message *msgs, size_t n,
		   bool add_generation_prompt, sy_chatml_emit_fn emit, void *ctx)
{
	int rc;
	for (size_t i = 0; i < n; i++) {
		const struct sy_chat_message *m = &msgs[i];
		if ((rc = emit(ctx, SY_LIT(IM_START))) ||
		    (rc = emit(ctx, m->role.ptr, m->role.len)) ||
		    (rc = emit(ctx, SY_LIT("\n"))) ||
		    (m->content.len && (rc = emit(ctx, m->content.ptr, m->content.len))) ||
		    (rc = emit(ctx, SY_LIT(IM_END))))
			return rc;
	}
	if (add_generation_prompt)
		return emit(ctx, SY_LIT(GEN_PROMPT));
	return SY_OK;
}

static int count_emit(void *ctx, const char *p, size_t len)
{
	(void)p;
	size_t *total = ctx;
	if (len > SIZE_MAX - *total)
		return SY_ERANGE;
	*total += len;
	return SY_OK;
}

int sy_chatml_length(const struct sy_chat_message *msgs, size_t n,
		     bool add_generation_prompt, size_t *len)
{
	*len = 0;
	return sy_chatml_walk(msgs, n, add_generation_prompt, count_emit, len);
}

static int textbuf_emit(void *ctx, const char *p, size_t len)
{
	return sy_textbuf_append(ctx, p, len);
}

static int chatml_render(const struct sy_chat_message *msgs, size_t n,
			 bool add_generation_prompt, struct sy_textbuf *out)
{
	size_t len;
	int rc = sy_chatml_length(msgs, n, add_generation_prompt, &len);
	if (rc)
		return rc;
	if ((rc = textbuf_reserve(out, len)) != SY_OK) /* one allocation */
		return rc;
	return sy_chatml_walk(msgs, n, add_generation_prompt, textbuf_emit, out);
}

/* ---- argument checks ---- */

static bool span_ok(const struct sy_chat_span *s)
{
	return s->ptr || s->len == 0;
}

static int check_messages(const struct sy_chat_message *msgs, size_t n)
{
	if (!msgs && n)
		return SY_EINVAL;
	for (size_t i = 0; i < n; i++) {
		const struct sy_chat_message *m = &msgs[i];
		if (m->role.len == 0 || !span_ok(&m->role) || !span_ok(&m->content) ||
		    !span_ok(&m->name) || !span_ok(&m->tool_call_id) ||
		    !span_ok(&m->tool_calls) || !span_ok(&m->reasoning_content))
			return SY_EINVAL;
	}
	return SY_OK;
}

/* ---- dispatch ---- */

static void set_err(char *errbuf, size_t errcap, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_err(char *errbuf, size_t errcap, const char *fmt, ...)
{
	if (!errbuf || errcap == 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(errbuf, errcap, fmt, ap);
	va_end(ap);
}

int sy_tokenizer_open_ex(const char *kind, const char *path, unsigned flags,
			 struct sy_tokenizer **out, char *errbuf, size_t errcap)
{
	if (errbuf && errcap)
		errbuf[0] = '\0';
	if (!out) {
		set_err(errbuf, errcap, "tokenizer: no output pointer");
		return SY_EINVAL;
	}
	*out = NULL;
	if (!kind) {
		set_err(errbuf, errcap, "tokenizer: no kind given (bytes, hf or off)");
		return SY_EINVAL;
	}
	if (strcmp(kind, "bytes") == 0)
		return sy_tokenizer_bytes_open(path, out, errbuf, errcap);
	if (strcmp(kind, "off") == 0)
		return sy_tokenizer_off_open(path, out, errbuf, errcap);
	if (strcmp(kind, "hf") == 0) {
		char dummy[1];
		if (!errbuf || !errcap) { /* hf always writes its reason somewhere */
			errbuf = dummy;
			errcap = sizeof dummy;
		}
		return sy_tokenizer_hf_open(path, flags, out, errbuf, errcap);
	}
	set_err(errbuf, errcap, "unknown tokenizer kind \"%.64s\" (expected bytes, hf or off)",
		kind);
	return SY_EINVAL;
}

int sy_tokenizer_open(const char *kind, const char *path,
		      struct sy_tokenizer **out, char *errbuf, size_t errcap)
{
	return sy_tokenizer_open_ex(kind, path, 0, out, errbuf, errcap);
}

int sy_tokenizer_open_files(const char *kind, const char *path, const char *chat_template,
			    unsigned flags, struct sy_tokenizer **out, char *errbuf, size_t errcap)
{
	if (chat_template == NULL || kind == NULL || strcmp(kind, "hf") != 0) {
		if (chat_template != NULL) {
			if (out)
				*out = NULL;
			set_err(errbuf, errcap, "a chat template file needs the hf tokenizer");
			return SY_EINVAL;
		}
		return sy_tokenizer_open_ex(kind, path, flags, out, errbuf, errcap);
	}
	char dummy[1];
	if (!errbuf || !errcap) {
		errbuf = dummy;
		errcap = sizeof dummy;
	}
	if (!out)
		return SY_EINVAL;
	*out = NULL;
	return sy_tokenizer_hf_open_files(path, chat_template, flags, out, errbuf, errcap);
}

void sy_tokenizer_close(struct sy_tokenizer *tok)
{
	if (tok)
		tok->ops->close(tok);
}

const char *sy_tokenizer_kind(const struct sy_tokenizer *tok)
{
	return tok ? tok->ops->kind : "none";
}

const char *sy_tokenizer_chat_template(const struct sy_tokenizer *tok)
{
	if (!tok)
		return "none";
	return tok->ops->template_name ? tok->ops->template_name(tok) : "chatml";
}

bool sy_tokenizer_has_ids(const struct sy_tokenizer *tok)
{
	return tok && tok->ops->encode_text;
}

int sy_tokenizer_encode_text(const struct sy_tokenizer *tok, const char *text,
			     size_t len, struct sy_tokens *out)
{
	if (!tok || !out || (!text && len))
		return SY_EINVAL;
	if (!tok->ops->encode_text)
		return SY_EUNSUPPORTED;
	size_t mark = out->len;
	int rc = tok->ops->encode_text(tok, text, len, out);
	if (rc)
		out->len = mark;
	return rc;
}

int sy_tokenizer_encode_prompt(const struct sy_tokenizer *tok, const char *text,
			       size_t len, struct sy_tokens *out)
{
	if (!tok || !out || (!text && len))
		return SY_EINVAL;
	if (!tok->ops->encode_prompt)
		return sy_tokenizer_encode_text(tok, text, len, out);
	size_t mark = out->len;
	int rc = tok->ops->encode_prompt(tok, text, len, out);
	if (rc)
		out->len = mark;
	return rc;
}

static bool opts_ok(const struct sy_chat_opts *o)
{
	return o && span_ok(&o->tools) && span_ok(&o->template_kwargs);
}

int sy_tokenizer_render_chat_ex(const struct sy_tokenizer *tok,
				const struct sy_chat_message *msgs, size_t n,
				const struct sy_chat_opts *opts, struct sy_textbuf *out)
{
	if (!tok || !out || !opts_ok(opts))
		return SY_EINVAL;
	int rc = check_messages(msgs, n);
	if (rc)
		return rc;
	size_t mark = out->len;
	if (tok->ops->render_chat)
		rc = tok->ops->render_chat(tok, msgs, n, opts, out);
	else
		rc = chatml_render(msgs, n, opts->add_generation_prompt, out);
	if (rc) {
		out->len = mark;
		if (out->cap)
			out->data[mark] = '\0';
	}
	return rc;
}

int sy_tokenizer_render_chat(const struct sy_tokenizer *tok,
			     const struct sy_chat_message *msgs, size_t n,
			     bool add_generation_prompt, struct sy_textbuf *out)
{
	struct sy_chat_opts o = {.add_generation_prompt = add_generation_prompt};
	return sy_tokenizer_render_chat_ex(tok, msgs, n, &o, out);
}

int sy_tokenizer_encode_chat_ex(const struct sy_tokenizer *tok,
				const struct sy_chat_message *msgs, size_t n,
				const struct sy_chat_opts *opts, struct sy_tokens *out)
{
	if (!tok || !out || !opts_ok(opts))
		return SY_EINVAL;
	int rc = check_messages(msgs, n);
	if (rc)
		return rc;
	if (!tok->ops->encode_text)
		return SY_EUNSUPPORTED;
	size_t mark = out->len;
	if (tok->ops->encode_chat) {
		rc = tok->ops->encode_chat(tok, msgs, n, opts, out);
	} else {
		struct sy_textbuf text;
		sy_textbuf_init(&text);
		rc = sy_tokenizer_render_chat_ex(tok, msgs, n, opts, &text);
		if (rc == SY_OK)
			rc = tok->ops->encode_text(tok, text.data, text.len, out);
		sy_textbuf_free(&text);
	}
	if (rc)
		out->len = mark;
	return rc;
}

int sy_tokenizer_encode_chat(const struct sy_tokenizer *tok,
			     const struct sy_chat_message *msgs, size_t n,
			     bool add_generation_prompt, struct sy_tokens *out)
{
	struct sy_chat_opts o = {.add_generation_prompt = add_generation_prompt};
	return sy_tokenizer_encode_chat_ex(tok, msgs, n, &o, out);
}

int sy_tokenizer_decode_ex(const struct sy_tokenizer *tok, const uint32_t *ids,
			   size_t n, bool skip_special, struct sy_textbuf *out)
{
	if (!tok || !out || (!ids && n))
		return SY_EINVAL;
	if (!tok->ops->decode)
		return SY_EUNSUPPORTED;
	size_t mark = out->len;
	int rc = tok->ops->decode_ex ? tok->ops->decode_ex(tok, ids, n, skip_special, out)
				     : tok->ops->decode(tok, ids, n, out);
	if (rc) {
		out->len = mark;
		if (out->cap)
			out->data[mark] = '\0';
	}
	return rc;
}

int sy_tokenizer_decode(const struct sy_tokenizer *tok, const uint32_t *ids,
			size_t n, struct sy_textbuf *out)
{
	return sy_tokenizer_decode_ex(tok, ids, n, false, out);
}
