/* fuzz_prepare.c — fuzz target: bytes → router_prepare on all three routes.
 *
 * The first byte picks the route (mod 3) and the tokenizer (bit 2: "off"),
 * the rest is the body. Properties: the call returns 0 or SY_EINVAL (never
 * anything else: no allocation failure is expected at these sizes); a 400
 * carries a code, a message and an offset within [-1, len]; on success the
 * counts agree (peak = input + max_tokens, token_ids inside the buffer,
 * n ≥ 1), and the body member records lie inside the body ('}' at
 * object_end; keys quoted; members ascending and disjoint; sampling_params
 * members inside its value; n_override agrees with the roles).
 */
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "router/core/prepare.h"
#include "tests/fuzz/fuzz.h"

static struct sy_tokenizer *tok[2];

/* One member record: key a quoted string, value non-empty, both inside
 * [lo, hi) and after `*at`. */
static void check_member(const char *body, const struct body_member *m, size_t lo, size_t hi,
			 size_t *at)
{
	if (m->key < lo || m->key < *at || m->key_len < 2 || m->value < m->key + m->key_len ||
	    m->value_len == 0 || m->value + m->value_len > hi)
		abort();
	if (body[m->key] != '"' || body[m->key + m->key_len - 1] != '"')
		abort();
	*at = m->value + m->value_len;
}

static void check_members(const char *body, size_t len, const struct pick_request *r)
{
	const struct body_members *b = &r->body;
	if (b->object_end >= len || body[b->object_end] != '}')
		abort();
	size_t at = 0, n_override = 0;
	const struct body_member *sp = NULL;
	for (size_t i = 0; i < b->n_top; i++) {
		check_member(body, &b->top[i], 0, b->object_end, &at);
		n_override += b->top[i].role == BODY_SAMPLING;
		if (b->top[i].role == BODY_SAMPLING_PARAMS)
			sp = &b->top[i];
	}
	if (b->n_sampling > 0 && (sp == NULL || !b->sampling_object))
		abort();
	at = 0;
	for (size_t i = 0; i < b->n_sampling; i++) {
		check_member(body, &b->sampling[i], sp->value, sp->value + sp->value_len, &at);
		n_override += b->sampling[i].role == BODY_SAMPLING;
	}
	if (n_override != b->n_override)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (tok[0] == NULL) {
		char e[64];
		if (sy_tokenizer_open("bytes", NULL, &tok[0], e, sizeof(e)) != SY_OK ||
		    sy_tokenizer_open("off", NULL, &tok[1], e, sizeof(e)) != SY_OK)
			abort();
	}
	enum route route = (enum route)(data[0] % 3);
	bool off = (data[0] & 4) != 0;
	const char *body = (const char *)data + 1;
	size_t len = size - 1;

	struct router_prepare_opts opts = {.tokenizer = tok[off], .default_model = "m"};
	struct prepare_buf buf;
	struct pick_request r;
	struct router_error err;
	prepare_buf_init(&buf);
	int rc = router_prepare(&opts, route, body, len, NULL, NULL, &buf, &r, &err);
	if (rc == SY_OK) {
		if (r.n < 1 || (r.has_peak && r.expected_peak != r.input_tokens + r.max_tokens))
			abort();
		if (r.token_ids != NULL && r.n_token_ids > buf.tokens.len)
			abort();
		if (r.model.ptr == NULL)
			abort();
		check_members(body, len, &r);
	} else if (rc == SY_EINVAL) {
		if (err.status != 400 || err.code == NULL || err.message[0] == '\0' ||
		    err.offset < -1 || err.offset > (int64_t)len)
			abort();
	} else {
		abort();
	}
	prepare_buf_free(&buf);
	return 0;
}
