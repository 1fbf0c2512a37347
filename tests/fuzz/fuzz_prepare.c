/* fuzz_prepare.c — fuzz target: bytes → router_prepare on all three routes.
 *
 * The first byte picks the route (mod 3) and the tokenizer (bit 2: "off"),
 * the rest is the body. Properties: the call returns 0 or SY_EINVAL (never
 * anything else: no allocation failure is expected at these sizes); a 400
 * carries a code, a message and an offset within [-1, len]; on success the
 * counts agree (peak = input + max_tokens, token_ids inside the buffer,
 * n ≥ 1), the splice facts lie inside the body ('}' at object_end, cuts
 * ascending and disjoint before it), and removing the cuts leaves text
 * that yajl-validates again as a JSON object when a member is inserted.
 */
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "router/core/prepare.h"
#include "tests/fuzz/fuzz.h"

static struct sy_tokenizer *tok[2];

static void check_splice(const char *body, size_t len, const struct pick_request *r)
{
	const struct prepare_splice *s = &r->splice;
	if (s->object_end >= len || body[s->object_end] != '}')
		abort();
	size_t at = 0;
	for (size_t k = 0; k < s->n_cut; k++) {
		if (s->cut[k].off < at || s->cut[k].off + s->cut[k].len > s->object_end)
			abort();
		at = s->cut[k].off + s->cut[k].len;
	}
	/* Rebuild and prepare again: must still be a valid body for the route. */
	char *out = malloc(len + 32);
	if (out == NULL)
		return;
	size_t o = 0;
	at = 0;
	for (size_t k = 0; k < s->n_cut; k++) {
		memcpy(out + o, body + at, s->cut[k].off - at);
		o += s->cut[k].off - at;
		at = s->cut[k].off + s->cut[k].len;
	}
	memcpy(out + o, body + at, s->object_end - at);
	o += s->object_end - at;
	const char *ins = s->members_kept ? ",\"bootstrap_room\":1" : "\"bootstrap_room\":1";
	memcpy(out + o, ins, strlen(ins));
	o += strlen(ins);
	memcpy(out + o, body + s->object_end, len - s->object_end);
	o += len - s->object_end;

	struct router_prepare_opts opts = {.tokenizer = tok[0], .default_model = "m"};
	struct prepare_buf buf;
	struct pick_request again;
	struct router_error err;
	prepare_buf_init(&buf);
	int rc = router_prepare(&opts, r->route, out, o, NULL, NULL, &buf, &again, &err);
	if (rc != SY_OK || again.splice.n_cut != 1 || again.input_tokens != r->input_tokens)
		abort();
	prepare_buf_free(&buf);
	free(out);
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
		/* The splice re-check re-tokenizes with "bytes": only when the
		 * count is exact and the rebuilt body would still be small. */
		if (!r.tokens_estimated && len < 4096)
			check_splice(body, len, &r);
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
