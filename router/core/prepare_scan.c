/* prepare_scan.c — the one validating pass over a request body (DESIGN.md §4
 * step 1, §6): yajl's SAX parser drives a small frame machine; nothing is
 * copied except the strings selection needs (decoded by yajl into
 * buf->text) and token IDs (into buf->tokens).
 *
 * Frames: the top-level object, and below it only the shapes the routes
 * read — messages[] → message{} → content[] → part{}; prompt / text /
 * input_ids lists → inner ID lists; sampling_params{}. Any other value is
 * skipped by counting nesting (bounded by PREPARE_MAX_SKIP_DEPTH). Errors
 * name the path from the frames ("messages[2].content[0].text: expected a
 * string") and the byte offset yajl has reached (just past the offending
 * token).
 *
 * Body members (prepare.h): every top-level member, and every member of
 * /generate's sampling_params object, is recorded when its key arrives
 * (yajl's map-key callback passes the key decoded, so roles are decided on
 * the unescaped name): the key span ends where yajl has consumed to, it
 * starts at the first '"' after the previous member's end (past
 * whitespace and the separating comma), and the value starts after the
 * ':' that follows; the value's length is set when the value ends.
 */
#include "common/grow.h"
#include "router/core/prepare-int.h"
#include "common/errors.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

enum top_key {
	K_NONE = 0,
	K_MODEL,
	K_MESSAGES,
	K_PROMPT,
	K_TEXT,
	K_INPUT_IDS,
	K_MAX_TOKENS,
	K_MAX_COMPLETION_TOKENS,
	K_STREAM,
	K_N,
	K_CACHE_SALT,
	K_SAMPLING,
	K_BOOT_HOST,
	K_BOOT_PORT,
	K_BOOT_ROOM,
	K_TOOLS,          /* chat: template inputs */
	K_TOOL_CHOICE,
	K_KWARGS,
	K_FUNCTIONS,      /* chat: excluded from input-ids forwarding */
	K_CHAT_TEMPLATE,
	K_REASONING,
	K_REASONING_EFFORT,
	K_TASK,
	K_CONTINUE_FINAL,
	K_MAX_OUTPUT_TOKENS,
	K_COUNT_,
};

#define R_CHAT (1u << ROUTE_CHAT_COMPLETIONS)
#define R_COMPL (1u << ROUTE_COMPLETIONS)
#define R_GEN (1u << ROUTE_GENERATE)
#define R_ALL (R_CHAT | R_COMPL | R_GEN)
#define R_RESP (1u << ROUTE_RESPONSES)
#define R_MSG (1u << ROUTE_MESSAGES)
/* every inference route: embeddings and rerank read only the model */
#define R_INFER (R_ALL | 1u << ROUTE_EMBEDDINGS | 1u << ROUTE_RERANK | R_RESP | R_MSG)

/* A key name and its length (compared length first: a key is looked up
 * for every member of every request). */
#define KEY(s) s, sizeof(s) - 1

static const struct {
	const char *name;
	size_t len;
	unsigned routes;
} top_keys[K_COUNT_] = {
	[K_MODEL] = {KEY("model"), R_INFER},
	[K_MESSAGES] = {KEY("messages"), R_CHAT},
	[K_PROMPT] = {KEY("prompt"), R_COMPL},
	[K_TEXT] = {KEY("text"), R_GEN},
	[K_INPUT_IDS] = {KEY("input_ids"), R_GEN | R_CHAT}, /* chat: caller-owned, kept */
	[K_MAX_TOKENS] = {KEY("max_tokens"), R_CHAT | R_COMPL | R_MSG},
	[K_MAX_COMPLETION_TOKENS] = {KEY("max_completion_tokens"), R_CHAT},
	[K_STREAM] = {KEY("stream"), R_ALL | R_RESP | R_MSG},
	[K_N] = {KEY("n"), R_CHAT | R_COMPL},
	[K_CACHE_SALT] = {KEY("cache_salt"), R_ALL},
	[K_SAMPLING] = {KEY("sampling_params"), R_GEN},
	[K_BOOT_HOST] = {KEY("bootstrap_host"), R_ALL},
	[K_BOOT_PORT] = {KEY("bootstrap_port"), R_ALL},
	[K_BOOT_ROOM] = {KEY("bootstrap_room"), R_ALL},
	[K_TOOLS] = {KEY("tools"), R_CHAT},
	[K_TOOL_CHOICE] = {KEY("tool_choice"), R_CHAT},
	[K_KWARGS] = {KEY("chat_template_kwargs"), R_CHAT},
	[K_FUNCTIONS] = {KEY("functions"), R_CHAT},
	[K_CHAT_TEMPLATE] = {KEY("chat_template"), R_CHAT},
	[K_REASONING] = {KEY("reasoning"), R_CHAT},
	[K_REASONING_EFFORT] = {KEY("reasoning_effort"), R_CHAT},
	[K_TASK] = {KEY("task"), R_CHAT},
	[K_CONTINUE_FINAL] = {KEY("continue_final_message"), R_CHAT},
	[K_MAX_OUTPUT_TOKENS] = {KEY("max_output_tokens"), R_RESP},
};

_Static_assert(K_COUNT_ <= 32, "struct scan.seen has one bit per top key");

/* Keys of nested objects. */
enum sub_key {
	S_NONE = 0,
	S_ROLE,           /* message */
	S_CONTENT,
	S_NAME,
	S_TOOL_CALL_ID,
	S_TOOL_CALLS,
	S_REASONING,
	S_MSG_TOOLS,
	S_FUNCTION_CALL,
	S_TYPE,           /* content part */
	S_PART_TEXT,
	S_MAX_NEW_TOKENS, /* sampling_params */
	S_SAMPLING_N,
	S_COUNT_,
};

static const struct {
	const char *name;
	size_t len;
} sub_names[S_COUNT_] = {
	[S_ROLE] = {KEY("role")},
	[S_CONTENT] = {KEY("content")},
	[S_NAME] = {KEY("name")},
	[S_TOOL_CALL_ID] = {KEY("tool_call_id")},
	[S_TOOL_CALLS] = {KEY("tool_calls")},
	[S_REASONING] = {KEY("reasoning_content")},
	[S_MSG_TOOLS] = {KEY("tools")},
	[S_FUNCTION_CALL] = {KEY("function_call")},
	[S_TYPE] = {KEY("type")},
	[S_PART_TEXT] = {KEY("text")},
	[S_MAX_NEW_TOKENS] = {KEY("max_new_tokens")},
	[S_SAMPLING_N] = {KEY("n")},
};

enum frame_kind {
	FR_TOP,      /* the body object; key = enum top_key */
	FR_MESSAGES, /* messages[] */
	FR_MESSAGE,  /* messages[i]{}; key = enum sub_key */
	FR_PARTS,    /* messages[i].content[] */
	FR_PART,     /* content part {} */
	FR_LIST,     /* prompt / text / input_ids [] */
	FR_IDS,      /* inner token-ID list [] of a batch */
	FR_SAMPLING, /* sampling_params {} */
};

/* What a FR_LIST holds (decided by its first element). */
enum list_mode { LM_UNKNOWN, LM_IDS, LM_STRINGS, LM_ARRAYS };

struct frame {
	enum frame_kind kind;
	int key;      /* object frames: current key */
	size_t index; /* array frames: index of the current element */
};

struct scan {
	enum route route;
	const struct sampling_override *sampling;
	const char *body;
	size_t len;
	yajl_handle h;
	struct prepare_buf *buf;
	struct prep_result *res;
	struct router_error *err;
	bool failed; /* err set (400), or nomem */
	bool nomem;

	struct frame fr[PREPARE_MAX_FRAMES];
	int nfr;
	int skip;     /* nesting depth inside a skipped value, 0 = not skipping */
	int top_key;  /* FR_TOP's key of the member being read */
	unsigned seen; /* top keys seen (bit per enum top_key) */

	/* body members (prepare.h) */
	size_t member_start;   /* end of the previous top-level member (or just after '{') */
	size_t sub_start;      /* the same inside sampling_params */
	bool top_started, top_done;

	/* lists */
	enum list_mode list_mode;
	struct prep_item *cur_item; /* item being filled by ID elements (index) */
	size_t cur_item_idx;
	/* the content part being read */
	bool part_has_type, part_is_text, part_has_text;
	size_t part_text_off, part_text_len;
	size_t content_start; /* buf->text offset where this message's parts begin */
	/* a skipped container whose raw span is kept (tools, kwargs, tool_calls) */
	struct prep_raw *capture;
	size_t capture_start;
};

/* ---- buffers ------------------------------------------------------------------ */

static struct prep_msg *msgs(struct scan *s) { return (struct prep_msg *)s->buf->msgs; }
static struct prep_item *items(struct scan *s) { return (struct prep_item *)s->buf->items; }

static int nomem(struct scan *s)
{
	s->nomem = s->failed = true;
	return 0;
}

/* Stores a decoded string; returns 1, or 0 on allocation failure. */
static int store(struct scan *s, struct prep_str *dst, const unsigned char *v, size_t l)
{
	dst->off = s->buf->text.len;
	dst->len = l;
	dst->set = true;
	if (sy_textbuf_append(&s->buf->text, v, l) != SY_OK)
		return nomem(s);
	return 1;
}

/* ---- errors ------------------------------------------------------------------- */

/* Writes the path of the current value ("messages[2].role"). */
static void path(const struct scan *s, char *out, size_t cap)
{
	size_t used = 0;
	out[0] = '\0';
	for (int i = 0; i < s->nfr && used < cap; i++) {
		const struct frame *f = &s->fr[i];
		int n = 0;
		switch (f->kind) {
		case FR_TOP:
			if (f->key > K_NONE && f->key < K_COUNT_)
				n = snprintf(out + used, cap - used, "%s", top_keys[f->key].name);
			else
				n = snprintf(out + used, cap - used, "body");
			break;
		case FR_MESSAGE:
		case FR_PART:
		case FR_SAMPLING:
			if (f->key > S_NONE && f->key < S_COUNT_)
				n = snprintf(out + used, cap - used, ".%s", sub_names[f->key].name);
			break;
		default:
			n = snprintf(out + used, cap - used, "[%zu]", f->index);
			break;
		}
		if (n < 0)
			break;
		used += (size_t)n;
	}
	if (used == 0)
		snprintf(out, cap, "body");
}

static int fail(struct scan *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Sets a 400 naming the current path; returns 0 (stops yajl). */
static int fail(struct scan *s, const char *fmt, ...)
{
	char p[128], why[160];
	va_list ap;

	if (s->failed)
		return 0;
	path(s, p, sizeof(p));
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	router_error_set(s->err, 400, "bad_request",
			 s->h != NULL ? (int64_t)yajl_get_bytes_consumed(s->h) : -1, "%s: %s", p,
			 why);
	s->failed = true;
	return 0;
}

/* ---- numbers ------------------------------------------------------------------ */

/* A JSON number that is a plain non-negative integer ≤ max. */
static bool parse_uint(const char *v, size_t l, uint64_t max, uint64_t *out)
{
	uint64_t x = 0;
	if (l == 0 || (v[0] == '0' && l > 1))
		return false;
	for (size_t i = 0; i < l; i++) {
		if (v[i] < '0' || v[i] > '9')
			return false;
		unsigned d = (unsigned)(v[i] - '0');
		if (x > (max - d) / 10)
			return false;
		x = x * 10 + d;
	}
	*out = x;
	return true;
}

/* ---- frames ------------------------------------------------------------------- */

static struct frame *top(struct scan *s) { return &s->fr[s->nfr - 1]; }

static int push(struct scan *s, enum frame_kind k)
{
	if (s->nfr == PREPARE_MAX_FRAMES)
		return fail(s, "nested too deeply");
	s->fr[s->nfr].kind = k;
	s->fr[s->nfr].key = 0;
	s->fr[s->nfr].index = 0;
	s->nfr++;
	return 1;
}

/* Whitespace as yajl's lexer takes it: JSON's four, and \v and \f, which
 * yajl accepts too (the spans must follow what the parser accepted). */
static bool is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* The first offset at or after `at` that is neither whitespace nor `sep`. */
static size_t past(const struct scan *s, size_t at, char sep)
{
	while (at < s->len && (is_ws(s->body[at]) || s->body[at] == sep))
		at++;
	return at;
}

/* Records the member whose key just ended (yajl consumed up to its closing
 * quote); `start` is the previous member's end. Returns 1, or 0 on nomem. */
/* The role of top-level key k[0..l) (decoded) in a vLLM PD prefill:
 * BODY_KV_TRANSFER, BODY_PREFILL_OUTPUT or BODY_KEEP. Given on every route
 * (only a vLLM PD rewrite reads it), so the members the rewrite writes are
 * never doubled. */
static enum body_role pd_output_role(const char *k, size_t l)
{
	static const struct {
		const char *name;
		size_t len;
	} out[] = {{KEY("stream")},	 {KEY("stream_options")},
		   {KEY("max_tokens")},	 {KEY("max_completion_tokens")},
		   {KEY("min_tokens")},	 {KEY("min_completion_tokens")}};
	if (l == 18 && memcmp(k, "kv_transfer_params", 18) == 0)
		return BODY_KV_TRANSFER;
	for (size_t i = 0; i < sizeof(out) / sizeof(out[0]); i++)
		if (out[i].len == l && memcmp(k, out[i].name, l) == 0)
			return BODY_PREFILL_OUTPUT;
	return BODY_KEEP;
}

static int member_begin(struct scan *s, bool sub, size_t start, enum body_role role,
			unsigned param)
{
	struct prepare_buf *b = s->buf;
	struct body_member **arr = sub ? &b->sub : &b->top;
	size_t *n = sub ? &b->n_sub : &b->n_top, *cap = sub ? &b->cap_sub : &b->cap_top;
	if (sy_grow((void **)arr, cap, *n + 1, sizeof(struct body_member)) != SY_OK)
		return nomem(s);
	size_t key_end = yajl_get_bytes_consumed(s->h);
	struct body_member *m = &(*arr)[(*n)++];
	m->key = past(s, start, ',');
	m->key_len = key_end - m->key;
	m->value = past(s, key_end, ':');
	m->value_len = 0;
	m->role = role;
	m->param = param;
	if (role == BODY_SAMPLING)
		s->res->body.n_override++;
	return 1;
}

/* A top-level member's value ended at `end`. */
static void top_member_done(struct scan *s, size_t end)
{
	struct body_member *m = &s->buf->top[s->buf->n_top - 1];
	m->value_len = end - m->value;
	s->member_start = end;
	s->top_key = K_NONE;
	s->fr[0].key = K_NONE;
}

/* The current value of the top frame is complete. */
static void value_done(struct scan *s)
{
	struct frame *f = top(s);
	switch (f->kind) {
	case FR_TOP:
		top_member_done(s, yajl_get_bytes_consumed(s->h));
		break;
	case FR_MESSAGES:
	case FR_PARTS:
	case FR_LIST:
	case FR_IDS:
		f->index++;
		break;
	case FR_SAMPLING: {
		size_t end = yajl_get_bytes_consumed(s->h);
		struct body_member *m = &s->buf->sub[s->buf->n_sub - 1];
		m->value_len = end - m->value;
		s->sub_start = end;
		f->key = 0;
		break;
	}
	default:
		f->key = 0;
		break;
	}
}

/* ---- value kinds -------------------------------------------------------------- */

enum vkind { V_NULL, V_BOOL, V_NUMBER, V_STRING, V_MAP, V_ARRAY };

static const char *kind_name(enum vkind k)
{
	static const char *const n[] = {"null", "a boolean", "a number", "a string", "an object",
					"an array"};
	return n[k];
}

/* Starts skipping a container value. */
static int skip_container(struct scan *s)
{
	s->skip = 1;
	return 1;
}

/* Starts skipping container value `k`, keeping its raw body span in *dst
 * (written when the container ends). */
static int capture_container(struct scan *s, struct prep_raw *dst)
{
	s->capture = dst;
	s->capture_start = yajl_get_bytes_consumed(s->h) - 1; /* at '[' or '{' */
	return skip_container(s);
}

/* A scalar or container that is skipped: scalars complete at once. */
static int skip_value(struct scan *s, enum vkind k)
{
	if (k == V_MAP || k == V_ARRAY)
		return skip_container(s);
	value_done(s);
	return 1;
}

/* Appends one token ID element to the item being filled. */
static int add_id(struct scan *s, const char *v, size_t l)
{
	uint64_t id;
	if (!parse_uint(v, l, UINT32_MAX, &id))
		return fail(s, "expected a token ID (integer 0..4294967295)");
	uint32_t x = (uint32_t)id;
	if (sy_tokens_append(&s->buf->tokens, &x, 1) != SY_OK)
		return nomem(s);
	items(s)[s->cur_item_idx].len++;
	value_done(s);
	return 1;
}

/* Opens a new prompt item. */
static int new_item(struct scan *s, bool ids, size_t off)
{
	struct prepare_buf *b = s->buf;
	if (sy_grow(&b->items, &b->cap_items, b->n_items + 1, sizeof(struct prep_item)) != SY_OK)
		return nomem(s);
	struct prep_item *it = &items(s)[b->n_items];
	it->ids = ids;
	it->off = off;
	it->len = 0;
	s->cur_item_idx = b->n_items++;
	return 1;
}

static int text_item(struct scan *s, const unsigned char *v, size_t l)
{
	if (!new_item(s, false, s->buf->text.len))
		return 0;
	items(s)[s->cur_item_idx].len = l;
	if (sy_textbuf_append(&s->buf->text, v, l) != SY_OK)
		return nomem(s);
	value_done(s);
	return 1;
}

/* An element of a prompt / text / input_ids list. */
static int list_value(struct scan *s, enum vkind k, const char *v, size_t l)
{
	int key = s->fr[0].key;
	enum list_mode want = k == V_NUMBER  ? LM_IDS
			      : k == V_STRING ? LM_STRINGS
			      : k == V_ARRAY  ? LM_ARRAYS
					      : LM_UNKNOWN;
	bool allowed = (want == LM_STRINGS && key != K_INPUT_IDS) ||
		       ((want == LM_IDS || want == LM_ARRAYS) && key != K_TEXT);
	if (s->list_mode != LM_UNKNOWN && want != s->list_mode)
		allowed = false;
	if (!allowed) {
		switch (s->list_mode) {
		case LM_IDS:
			return fail(s, "expected a token ID (integer 0..4294967295)");
		case LM_STRINGS:
			return fail(s, "expected a string");
		case LM_ARRAYS:
			return fail(s, "expected an array of token IDs");
		default:
			if (key == K_TEXT)
				return fail(s, "expected a string");
			if (key == K_INPUT_IDS)
				return fail(s, "expected a token ID or an array of token IDs");
			return fail(s, "expected a string, a token ID or an array of token IDs");
		}
	}
	if (s->list_mode == LM_UNKNOWN) {
		s->list_mode = want;
		if (want == LM_IDS && !new_item(s, true, s->buf->tokens.len))
			return 0;
	}
	if (want == LM_IDS)
		return add_id(s, v, l);
	if (want == LM_STRINGS)
		return text_item(s, (const unsigned char *)v, l);
	if (!new_item(s, true, s->buf->tokens.len)) /* LM_ARRAYS */
		return 0;
	return push(s, FR_IDS);
}

/* A value for top-level key s->top_key. */
/* `n` (top level, or sampling_params.n of /generate): null is skipped,
 * else an integer in 1..PREPARE_MAX_N. */
static int n_value(struct scan *s, enum vkind k, const char *v, size_t l)
{
	uint64_t x;
	if (k == V_NULL)
		return skip_value(s, k);
	if (k != V_NUMBER || !parse_uint(v, l, PREPARE_MAX_N, &x) || x == 0)
		return fail(s, "must be an integer in 1..%d", PREPARE_MAX_N);
	s->res->n = (uint32_t)x;
	value_done(s);
	return 1;
}

static int top_value(struct scan *s, enum vkind k, const char *v, size_t l)
{
	struct prep_result *r = s->res;
	uint64_t x;

	switch (s->top_key) {
	case K_MODEL:
		if (k == V_NULL)
			return skip_value(s, k);
		if (k != V_STRING)
			return fail(s, "expected a string, not %s", kind_name(k));
		if (l == 0)
			return fail(s, "must not be empty");
		if (!store(s, &r->model, (const unsigned char *)v, l))
			return 0;
		value_done(s);
		return 1;
	case K_CACHE_SALT:
		if (k == V_NULL)
			return skip_value(s, k);
		if (k != V_STRING)
			return fail(s, "expected a string, not %s", kind_name(k));
		if (!store(s, &r->cache_salt, (const unsigned char *)v, l))
			return 0;
		value_done(s);
		return 1;
	case K_STREAM:
		if (k == V_NULL)
			return skip_value(s, k);
		if (k != V_BOOL)
			return fail(s, "expected a boolean, not %s", kind_name(k));
		r->stream = l != 0;
		value_done(s);
		return 1;
	case K_N:
		return n_value(s, k, v, l);
	case K_MAX_TOKENS:
	case K_MAX_COMPLETION_TOKENS:
	case K_MAX_OUTPUT_TOKENS:
		if (k == V_NULL)
			return skip_value(s, k);
		if (k != V_NUMBER || !parse_uint(v, l, UINT64_MAX, &x))
			return fail(s, "must be an integer in 0..18446744073709551615");
		if (s->top_key == K_MAX_TOKENS) {
			r->has_max_tokens = true;
			r->max_tokens = x;
		} else if (s->top_key == K_MAX_OUTPUT_TOKENS) {
			r->has_max_output_tokens = true;
			r->max_output_tokens = x;
		} else {
			r->has_max_completion_tokens = true;
			r->max_completion_tokens = x;
		}
		value_done(s);
		return 1;
	case K_MESSAGES:
		if (k != V_ARRAY)
			return fail(s, "expected a non-empty array of messages, not %s", kind_name(k));
		r->has_messages = true;
		return push(s, FR_MESSAGES);
	case K_TOOLS:
		if (k == V_NULL)
			return skip_value(s, k);
		if (k != V_ARRAY)
			return fail(s, "expected an array of tools, not %s", kind_name(k));
		return capture_container(s, &r->tools);
	case K_KWARGS:
		if (k == V_NULL)
			return skip_value(s, k);
		if (k != V_MAP)
			return fail(s, "expected an object, not %s", kind_name(k));
		r->no_forward = true; /* SGLang's router forwards no kwargs request */
		return capture_container(s, &r->kwargs);
	case K_TOOL_CHOICE:
		if (k == V_STRING && l == 4 && memcmp(v, "none", 4) == 0)
			r->tool_choice_none = true;
		return skip_value(s, k);
	case K_CONTINUE_FINAL:
		if (k == V_BOOL && l != 0)
			r->no_forward = true;
		return skip_value(s, k);
	case K_FUNCTIONS:
	case K_CHAT_TEMPLATE:
	case K_REASONING:
	case K_REASONING_EFFORT:
	case K_TASK:
		if (k != V_NULL)
			r->no_forward = true;
		return skip_value(s, k);
	case K_PROMPT:
	case K_TEXT:
		if (k == V_STRING) {
			if (s->top_key == K_PROMPT)
				r->has_prompt = true;
			else
				r->has_text = true;
			return text_item(s, (const unsigned char *)v, l);
		}
		/* fall through */
	case K_INPUT_IDS:
		if (s->route == ROUTE_CHAT_COMPLETIONS) {
			/* The caller's own ids: passed through, never replaced. */
			if (k != V_NULL)
				r->no_forward = true;
			return skip_value(s, k);
		}
		if (k != V_ARRAY) {
			if (s->top_key == K_TEXT)
				return fail(s, "expected a string or an array of strings, not %s",
					    kind_name(k));
			if (s->top_key == K_INPUT_IDS)
				return fail(s, "expected an array of token IDs, not %s",
					    kind_name(k));
			return fail(s, "expected a string or an array, not %s", kind_name(k));
		}
		if (s->top_key == K_PROMPT)
			r->has_prompt = true;
		else if (s->top_key == K_TEXT)
			r->has_text = true;
		else
			r->has_input_ids = true;
		s->list_mode = LM_UNKNOWN;
		return push(s, FR_LIST);
	case K_SAMPLING:
		r->body.has_sampling_params = true;
		if (k == V_NULL)
			return skip_value(s, k);
		if (k != V_MAP)
			return fail(s, "expected an object, not %s", kind_name(k));
		r->body.sampling_object = true;
		s->sub_start = yajl_get_bytes_consumed(s->h);
		return push(s, FR_SAMPLING);
	default: /* unknown, other route, bootstrap_*: skipped */
		return skip_value(s, k);
	}
}

static int message_value(struct scan *s, enum vkind k, const char *v, size_t l)
{
	struct frame *f = top(s);
	struct prep_msg *m = &msgs(s)[s->buf->n_msgs - 1];
	struct prep_str *dst = NULL;

	switch (f->key) {
	case S_ROLE:
		if (k != V_STRING)
			return fail(s, "expected a string, not %s", kind_name(k));
		if (l == 0)
			return fail(s, "must not be empty");
		dst = &m->role;
		break;
	case S_CONTENT:
		if (k == V_NULL)
			return skip_value(s, k);
		if (k == V_ARRAY) {
			s->content_start = s->buf->text.len;
			m->content.off = s->content_start;
			m->content.len = 0;
			m->content.set = true;
			return push(s, FR_PARTS);
		}
		if (k != V_STRING)
			return fail(s, "expected a string, an array of content parts or null, not %s",
				    kind_name(k));
		dst = &m->content;
		m->content_string = true;
		break;
	case S_TOOL_CALLS:
		if (k == V_NULL)
			return skip_value(s, k);
		if (k != V_ARRAY)
			return fail(s, "expected an array of tool calls or null, not %s",
				    kind_name(k));
		return capture_container(s, &m->tool_calls);
	case S_REASONING:
		if (k == V_NULL)
			return skip_value(s, k);
		if (k != V_STRING)
			return fail(s, "expected a string or null, not %s", kind_name(k));
		dst = &m->reasoning;
		break;
	case S_MSG_TOOLS:
	case S_FUNCTION_CALL:
		if (k != V_NULL)
			m->no_forward = true;
		return skip_value(s, k);
	case S_NAME:
	case S_TOOL_CALL_ID:
		if (k == V_NULL)
			return skip_value(s, k);
		if (k != V_STRING)
			return fail(s, "expected a string, not %s", kind_name(k));
		dst = f->key == S_NAME ? &m->name : &m->tool_call_id;
		break;
	default:
		return skip_value(s, k);
	}
	if (!store(s, dst, (const unsigned char *)v, l))
		return 0;
	value_done(s);
	return 1;
}

static int part_value(struct scan *s, enum vkind k, const char *v, size_t l)
{
	struct frame *f = top(s);
	switch (f->key) {
	case S_TYPE:
		if (k != V_STRING)
			return fail(s, "expected a string, not %s", kind_name(k));
		s->part_has_type = true;
		s->part_is_text = l == 4 && memcmp(v, "text", 4) == 0;
		value_done(s);
		return 1;
	case S_PART_TEXT:
		if (k != V_STRING)
			return fail(s, "expected a string, not %s", kind_name(k));
		if (s->part_has_text)
			return fail(s, "duplicate key");
		s->part_has_text = true;
		s->part_text_off = s->buf->text.len;
		s->part_text_len = l;
		if (sy_textbuf_append(&s->buf->text, v, l) != SY_OK)
			return nomem(s);
		value_done(s);
		return 1;
	default:
		return skip_value(s, k);
	}
}

static int sampling_value(struct scan *s, enum vkind k, const char *v, size_t l)
{
	struct frame *f = top(s);
	struct prep_result *r = s->res;
	uint64_t x;

	switch (f->key) {
	case S_MAX_NEW_TOKENS:
		if (k == V_NULL)
			return skip_value(s, k);
		if (k != V_NUMBER || !parse_uint(v, l, UINT64_MAX, &x))
			return fail(s, "must be an integer in 0..18446744073709551615");
		r->has_max_new_tokens = true;
		r->max_new_tokens = x;
		value_done(s);
		return 1;
	case S_SAMPLING_N:
		return n_value(s, k, v, l);
	default:
		return skip_value(s, k);
	}
}

/* Dispatches a value (scalar, or the start of a container) by context. */
static int on_value(struct scan *s, enum vkind k, const char *v, size_t l)
{
	if (s->failed)
		return 0;
	if (s->skip > 0) {
		if (k == V_MAP || k == V_ARRAY) {
			if (++s->skip > PREPARE_MAX_SKIP_DEPTH)
				return fail(s, "JSON nested deeper than %d levels",
					    PREPARE_MAX_SKIP_DEPTH);
		}
		return 1;
	}
	if (s->nfr == 0) {
		if (k != V_MAP || s->top_started)
			return fail(s, "expected a JSON object, not %s", kind_name(k));
		s->top_started = true;
		s->member_start = yajl_get_bytes_consumed(s->h);
		return push(s, FR_TOP);
	}
	struct frame *f = top(s);
	switch (f->kind) {
	case FR_TOP:
		return top_value(s, k, v, l);
	case FR_MESSAGES: {
		if (k != V_MAP)
			return fail(s, "expected a message object, not %s", kind_name(k));
		struct prepare_buf *b = s->buf;
		if (sy_grow(&b->msgs, &b->cap_msgs, b->n_msgs + 1, sizeof(struct prep_msg)) != SY_OK)
			return nomem(s);
		memset(&msgs(s)[b->n_msgs++], 0, sizeof(struct prep_msg));
		return push(s, FR_MESSAGE);
	}
	case FR_MESSAGE:
		return message_value(s, k, v, l);
	case FR_PARTS:
		if (k != V_MAP)
			return fail(s, "expected a content part object, not %s", kind_name(k));
		s->part_has_type = s->part_is_text = s->part_has_text = false;
		return push(s, FR_PART);
	case FR_PART:
		return part_value(s, k, v, l);
	case FR_LIST:
		return list_value(s, k, v, l);
	case FR_IDS:
		if (k != V_NUMBER)
			return fail(s, "expected a token ID (integer 0..4294967295)");
		return add_id(s, v, l);
	case FR_SAMPLING:
		return sampling_value(s, k, v, l);
	}
	return fail(s, "unexpected value");
}

/* A container of the top frame ends: checks, then pops. */
static int on_end(struct scan *s, bool is_map)
{
	if (s->failed)
		return 0;
	if (s->skip > 0) {
		if (--s->skip == 0) {
			if (s->capture != NULL) {
				size_t end = yajl_get_bytes_consumed(s->h);
				s->capture->off = s->capture_start;
				s->capture->len = end - s->capture_start;
				s->capture = NULL;
			}
			value_done(s);
		}
		return 1;
	}
	(void)is_map; /* yajl guarantees bracket matching */
	struct frame *f = top(s);
	struct prep_msg *m;

	switch (f->kind) {
	case FR_TOP:
		s->res->body.object_end = yajl_get_bytes_consumed(s->h) - 1;
		s->top_done = true;
		s->nfr--;
		return 1;
	case FR_MESSAGES:
		if (f->index == 0) {
			s->nfr--;
			return fail(s, "expected a non-empty array of messages");
		}
		break;
	case FR_MESSAGE:
		m = &msgs(s)[s->buf->n_msgs - 1];
		if (!m->role.set) {
			f->key = S_ROLE;
			return fail(s, "required");
		}
		break;
	case FR_PART:
		if (!s->part_has_type) {
			f->key = S_TYPE;
			return fail(s, "required");
		}
		if (s->part_is_text && !s->part_has_text) {
			f->key = S_PART_TEXT;
			return fail(s, "required");
		}
		if (s->part_is_text) {
			/* Keep the text: parts of one content array are contiguous. */
			m = &msgs(s)[s->buf->n_msgs - 1];
			m->content.len = s->part_text_off + s->part_text_len - m->content.off;
		} else if (s->part_has_text) {
			/* Not a text part: drop what was stored for it. */
			s->buf->text.len = s->part_text_off;
		}
		break;
	case FR_LIST:
		if (f->index == 0) {
			s->nfr--;
			return fail(s, "expected a non-empty array");
		}
		break;
	case FR_IDS:
		if (f->index == 0) {
			s->nfr--;
			return fail(s, "expected a non-empty array of token IDs");
		}
		break;
	default:
		break;
	}
	s->nfr--;
	value_done(s);
	return 1;
}

/* ---- yajl callbacks ------------------------------------------------------------ */

static int cb_null(void *ctx) { return on_value(ctx, V_NULL, NULL, 0); }

static int cb_boolean(void *ctx, int b) { return on_value(ctx, V_BOOL, NULL, b ? 1 : 0); }

static int cb_number(void *ctx, const char *v, size_t l) { return on_value(ctx, V_NUMBER, v, l); }

static int check_token(struct scan *s, const unsigned char *v, size_t l);

static int cb_string(void *ctx, const unsigned char *v, size_t l)
{
	struct scan *s = ctx;
	if (!s->failed && !check_token(s, v, l))
		return 0;
	return on_value(ctx, V_STRING, (const char *)v, l);
}

static int cb_start_map(void *ctx) { return on_value(ctx, V_MAP, NULL, 0); }

static int cb_start_array(void *ctx) { return on_value(ctx, V_ARRAY, NULL, 0); }

static int cb_end_map(void *ctx) { return on_end(ctx, true); }

static int cb_end_array(void *ctx) { return on_end(ctx, false); }

static int key_is(const unsigned char *k, size_t l, const char *name, size_t len)
{
	return len == l && memcmp(k, name, l) == 0;
}

static int cb_map_key(void *ctx, const unsigned char *k, size_t l)
{
	struct scan *s = ctx;
	if (s->failed || !check_token(s, k, l))
		return 0;
	if (s->skip > 0)
		return 1;
	struct frame *f = top(s);
	int key = 0;

	if (f->kind == FR_TOP) {
		for (int i = K_MODEL; i < K_COUNT_; i++) {
			if (key_is(k, l, top_keys[i].name, top_keys[i].len)) {
				key = i;
				break;
			}
		}
		if (key != K_NONE && !(top_keys[key].routes & (1u << s->route)))
			key = K_NONE; /* another route's field: skipped */
		if (key != K_NONE) {
			f->key = key;
			if (s->seen & (1u << key))
				return fail(s, "duplicate key");
			s->seen |= 1u << key;
		}
		f->key = key;
		s->top_key = key;
		enum body_role role = BODY_KEEP;
		int param = -1;
		if (key == K_BOOT_HOST || key == K_BOOT_PORT || key == K_BOOT_ROOM)
			role = BODY_BOOTSTRAP;
		else if (key == K_SAMPLING)
			role = BODY_SAMPLING_PARAMS;
		else if (route_generates(s->route) && s->route != ROUTE_GENERATE &&
			 (param = sampling_override_find(s->sampling, (const char *)k, l)) >= 0)
			role = BODY_SAMPLING;
		else if (l == 9 && memcmp(k, "input_ids", 9) == 0)
			role = BODY_INPUT_IDS;
		else
			role = pd_output_role((const char *)k, l);
		if (key == K_MAX_COMPLETION_TOKENS)
			s->res->body.has_max_completion_tokens = true;
		if (role == BODY_INPUT_IDS)
			s->res->body.has_input_ids = true;
		return member_begin(s, false, s->member_start, role, param >= 0 ? (unsigned)param : 0);
	}
	int lo = S_NONE, hi = S_NONE;
	if (f->kind == FR_MESSAGE)
		lo = S_ROLE, hi = S_FUNCTION_CALL;
	else if (f->kind == FR_PART)
		lo = S_TYPE, hi = S_PART_TEXT;
	else if (f->kind == FR_SAMPLING)
		lo = S_MAX_NEW_TOKENS, hi = S_SAMPLING_N;
	for (int i = lo; lo != S_NONE && i <= hi; i++) {
		if (key_is(k, l, sub_names[i].name, sub_names[i].len)) {
			key = i;
			break;
		}
	}
	f->key = key;
	if (f->kind == FR_SAMPLING) {
		int param = sampling_override_find(s->sampling, (const char *)k, l);
		return member_begin(s, true, s->sub_start, param >= 0 ? BODY_SAMPLING : BODY_KEEP,
				    param >= 0 ? (unsigned)param : 0);
	}
	return 1;
}

/* ---- string text ---------------------------------------------------------------- */

/* Length of the strict UTF-8 sequence at p[0..n) (RFC 3629: no overlong
 * forms, no encoded surrogates, nothing above U+10FFFF), or 0. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
	unsigned char c = p[0];
	unsigned char lo = 0x80, hi = 0xBF;
	size_t len;
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		len = 2;
	else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		if (c == 0xE0)
			lo = 0xA0;
		else if (c == 0xED)
			hi = 0x9F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F;
	} else
		return 0;
	if (n < len || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if ((p[i] & 0xC0) != 0x80)
			return 0;
	return len;
}

static int hex4(const unsigned char *p)
{
	int v = 0;
	for (int i = 0; i < 4; i++) {
		int c = p[i], d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			d = (c | 0x20) - 'a' + 10;
		else
			return -1;
		v = v * 16 + d;
	}
	return v;
}

/* Checks the raw text of a string token, body[from..to) between its
 * quotes: strict UTF-8, and every \u escape of a surrogate one half of a
 * pair (yajl accepts overlong forms, encoded surrogates and lone surrogate
 * escapes). Sets the 400 at the offending byte and returns 0, or 1. */
static int check_text(struct scan *s, size_t from, size_t to)
{
	const unsigned char *b = (const unsigned char *)s->body;
	size_t i = from;
	while (i < to) {
		while (i + 8 <= to) { /* ASCII without escapes, a word at a time */
			uint64_t w;
			memcpy(&w, b + i, 8);
			uint64_t bs = w ^ 0x5C5C5C5C5C5C5C5Cull; /* '\\' bytes become 0 */
			if ((w & 0x8080808080808080ull) != 0 ||
			    ((bs - 0x0101010101010101ull) & ~bs & 0x8080808080808080ull) != 0)
				break;
			i += 8;
		}
		if (i >= to)
			break;
		unsigned char c = b[i];
		if (c == '\\') {
			if (i + 1 < to && b[i + 1] == 'u' && i + 6 <= to) {
				int cp = hex4(b + i + 2);
				if (cp >= 0xDC00 && cp <= 0xDFFF)
					goto lone;
				if (cp >= 0xD800 && cp <= 0xDBFF) {
					int lo = i + 12 <= to && b[i + 6] == '\\' && b[i + 7] == 'u'
							 ? hex4(b + i + 8)
							 : -1;
					if (lo < 0xDC00 || lo > 0xDFFF)
						goto lone;
					i += 12;
					continue;
				}
				i += 6;
			} else
				i += 2;
			continue;
		}
		size_t n = utf8_seq(b + i, to - i);
		if (n == 0) {
			router_error_set(s->err, 400, "bad_request", (int64_t)i,
					 "invalid UTF-8 at byte %zu", i);
			s->failed = true;
			return 0;
		}
		i += n;
	}
	return 1;
lone:
	router_error_set(s->err, 400, "bad_request", (int64_t)i,
			 "lone surrogate escape \\u%.4s at byte %zu", (const char *)b + i + 2, i);
	s->failed = true;
	return 0;
}

/* check_text() over the token just lexed: `v` is yajl's string, a span of
 * the body when the token has no escapes, else yajl's decoded copy (then
 * the token ends at the bytes consumed, and its opening quote is the first
 * '"' before that not escaped). */
static int check_token(struct scan *s, const unsigned char *v, size_t l)
{
	const unsigned char *b = (const unsigned char *)s->body;
	if (v >= b && v + l <= b + s->len)
		return check_text(s, (size_t)(v - b), (size_t)(v - b) + l);
	size_t end = yajl_get_bytes_consumed(s->h); /* just past the closing quote */
	if (end < 2 || end > s->len)
		return 1;
	size_t q = end - 1;
	while (q > 0) {
		q--;
		if (b[q] != '"')
			continue;
		size_t k = 0;
		while (k < q && b[q - 1 - k] == '\\')
			k++;
		if (k % 2 == 0)
			break;
	}
	return check_text(s, q + 1, end - 1);
}

static const yajl_callbacks callbacks = {
	.yajl_null = cb_null,
	.yajl_boolean = cb_boolean,
	.yajl_integer = NULL,
	.yajl_double = NULL,
	.yajl_number = cb_number,
	.yajl_string = cb_string,
	.yajl_start_map = cb_start_map,
	.yajl_map_key = cb_map_key,
	.yajl_end_map = cb_end_map,
	.yajl_start_array = cb_start_array,
	.yajl_end_array = cb_end_array,
};

/* ---- driver ---------------------------------------------------------------------- */

/* "lexical error: invalid char in json text.\n..." → "invalid char in json text" */
static void yajl_reason(yajl_handle h, const char *body, size_t len, char *out, size_t cap)
{
	unsigned char *e = yajl_get_error(h, 0, (const unsigned char *)body, len);
	const char *m = e != NULL ? (const char *)e : "invalid JSON";
	const char *colon = strstr(m, ": ");
	if (colon != NULL)
		m = colon + 2;
	size_t n = strcspn(m, "\n");
	while (n > 0 && (m[n - 1] == '.' || m[n - 1] == ' '))
		n--;
	snprintf(out, cap, "%.*s", (int)n, m);
	if (e != NULL)
		yajl_free_error(h, e);
}

/* ---- parser memory ---------------------------------------------------------------- */

/* yajl 2.1 has no reset: a handle is allocated per parse (the handle, its
 * lexer, byte stack and buffer). Those allocations are served from a
 * per-thread bump arena that is rewound at the start of every scan (one
 * parse at a time per thread), so the hot path does no malloc/free for
 * the parser; a parse that needs more than the arena (deep nesting, long
 * escaped strings) falls back to malloc for the overflow. Each block has
 * a size header so realloc can copy. */
#define SCAN_ARENA_BYTES 16384

struct scan_arena {
	size_t used;
	_Alignas(16) unsigned char mem[SCAN_ARENA_BYTES];
};

static __thread struct scan_arena scan_arena;

struct arena_hdr {
	size_t size;
	size_t pad; /* keeps the block 16-byte aligned */
};

static bool in_arena(const void *p)
{
	const unsigned char *c = p;
	return c >= scan_arena.mem && c < scan_arena.mem + SCAN_ARENA_BYTES;
}

static void *arena_malloc(void *ctx, size_t sz)
{
	(void)ctx;
	size_t need = sizeof(struct arena_hdr) + ((sz + 15) & ~(size_t)15);
	if (sz <= SCAN_ARENA_BYTES && need <= SCAN_ARENA_BYTES - scan_arena.used) {
		struct arena_hdr *h = (struct arena_hdr *)(scan_arena.mem + scan_arena.used);
		scan_arena.used += need;
		h->size = sz;
		return h + 1;
	}
	return malloc(sz);
}

static void arena_free(void *ctx, void *p)
{
	(void)ctx;
	if (p != NULL && !in_arena(p))
		free(p);
}

static void *arena_realloc(void *ctx, void *p, size_t sz)
{
	if (p == NULL)
		return arena_malloc(ctx, sz);
	if (!in_arena(p))
		return realloc(p, sz);
	size_t old = ((struct arena_hdr *)p - 1)->size;
	if (sz <= old)
		return p;
	void *q = arena_malloc(ctx, sz);
	if (q != NULL)
		memcpy(q, p, old);
	return q;
}

static yajl_alloc_funcs arena_funcs = {arena_malloc, arena_realloc, arena_free, NULL};

int prepare_scan(enum route route, const struct sampling_override *sampling,
		 const char *body, size_t len, struct prepare_buf *buf, struct prep_result *res,
		 struct router_error *err)
{
	struct scan s;
	char why[128];

	memset(&s, 0, sizeof(s));
	memset(res, 0, sizeof(*res));
	res->n = 1;
	s.route = route;
	s.sampling = sampling;
	s.body = body;
	s.len = len;
	s.buf = buf;
	s.res = res;
	s.err = err;
	scan_arena.used = 0; /* the previous scan's handle is freed */
	s.h = yajl_alloc(&callbacks, &arena_funcs, &s);
	if (s.h == NULL)
		return SY_ENOMEM;

	bool at_end = false;
	yajl_status st = yajl_parse(s.h, (const unsigned char *)body, len);
	if (st == yajl_status_ok) {
		st = yajl_complete_parse(s.h);
		at_end = true; /* a failure now means the body ended early */
	}
	int rc = SY_OK;
	if (s.nomem) {
		rc = SY_ENOMEM;
	} else if (s.failed) {
		rc = SY_EINVAL;
	} else if (st != yajl_status_ok) {
		size_t at = at_end ? len : yajl_get_bytes_consumed(s.h);
		yajl_reason(s.h, body, len, why, sizeof(why));
		if (len == 0)
			snprintf(why, sizeof(why), "empty body");
		router_error_set(err, 400, "bad_request", (int64_t)at,
				 "malformed JSON at byte %zu: %s", at, why);
		rc = SY_EINVAL;
	} else if (!s.top_done) {
		router_error_set(err, 400, "bad_request", 0, "body: expected a JSON object");
		rc = SY_EINVAL;
	}
	yajl_free(s.h);
	return rc;
}
