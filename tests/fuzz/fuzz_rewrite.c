/* fuzz_rewrite.c — preparation + the one body rewrite
 * (router/core/prepare.c, router/dispatch/body_rewrite.c) on arbitrary
 * bodies.
 *
 * The first byte picks the route (mod 3), a null bootstrap port (bit 2),
 * --sampling-param-conflict allow (bit 3), input ids (bit 4), no PD
 * (bit 5), and for PD vLLM's protocol (bit 6) with its prefill leg (bit 7
 * clear) or decode leg (bit 7 set); the rest is the body. Bodies preparation refuses are skipped.
 * Properties, with keys compared after JSON unescaping (yajl): the output
 * stays within body_rewrite_bound() and parses as one JSON object; each
 * member the router writes (bootstrap_host / _port / _room in PD,
 * input_ids, the override's keys on chat / completions, sampling_params on
 * /generate with the override's keys inside it; for a vLLM prefill
 * kv_transfer_params, stream, max_tokens, and max_completion_tokens when
 * the client sent it on chat, for a vLLM decode kv_transfer_params) occurs
 * exactly once; a vLLM prefill drops stream_options, min_tokens and
 * min_completion_tokens; every other top-level key occurs as often as in
 * the input. With reject, a
 * conflict names one of the override's parameters.
 */
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

#include "common/errors.h"
#include "router/dispatch/body_rewrite.h"
#include "tests/fuzz/fuzz.h"

#define MAX_KEYS 1024

static const char *const override_json = "{\"temperature\":0.5,\"top_k\":-1,\"stop\":[\"\\n\"]}";

/* Decoded keys of the top-level object and of its "sampling_params". */
struct keys {
	int depth;
	bool in_sampling;   /* inside the top-level sampling_params object */
	bool next_sampling; /* the last top-level key was sampling_params */
	char *top[MAX_KEYS], *sub[MAX_KEYS];
	size_t n_top, n_sub;
	bool overflow;
	bool has_nul; /* a key holds "\u0000": C strings cannot compare it */
};

static int k_start_map(void *c)
{
	struct keys *k = c;
	if (k->depth == 1 && k->next_sampling)
		k->in_sampling = true;
	k->depth++;
	return 1;
}

static int k_end_map(void *c)
{
	struct keys *k = c;
	k->depth--;
	if (k->depth == 1)
		k->in_sampling = false;
	return 1;
}

static int k_start_array(void *c)
{
	((struct keys *)c)->depth++;
	return 1;
}

static int k_end_array(void *c)
{
	((struct keys *)c)->depth--;
	return 1;
}

static int k_key(void *c, const unsigned char *s, size_t l)
{
	struct keys *k = c;
	char **arr = NULL;
	size_t *n = NULL;
	if (k->depth == 1) {
		arr = k->top, n = &k->n_top;
		k->next_sampling = l == 15 && memcmp(s, "sampling_params", 15) == 0;
	} else if (k->depth == 2 && k->in_sampling) {
		arr = k->sub, n = &k->n_sub;
	}
	if (arr == NULL)
		return 1;
	if (*n == MAX_KEYS) {
		k->overflow = true;
		return 1;
	}
	char *d = malloc(l + 1);
	if (d == NULL)
		abort();
	memcpy(d, s, l);
	d[l] = '\0';
	if (memchr(s, '\0', l) != NULL)
		k->has_nul = true;
	arr[(*n)++] = d;
	return 1;
}

static const yajl_callbacks key_cbs = {
	.yajl_start_map = k_start_map, .yajl_end_map = k_end_map,
	.yajl_start_array = k_start_array, .yajl_end_array = k_end_array,
	.yajl_map_key = k_key,
};

/* Collects the keys of `len` bytes of JSON; false when it does not parse. */
static bool collect(const char *s, size_t len, struct keys *k)
{
	memset(k, 0, sizeof(*k));
	yajl_handle h = yajl_alloc(&key_cbs, NULL, k);
	if (h == NULL)
		abort();
	bool ok = yajl_parse(h, (const unsigned char *)s, len) == yajl_status_ok &&
		  yajl_complete_parse(h) == yajl_status_ok;
	yajl_free(h);
	return ok;
}

static void keys_free(struct keys *k)
{
	for (size_t i = 0; i < k->n_top; i++)
		free(k->top[i]);
	for (size_t i = 0; i < k->n_sub; i++)
		free(k->sub[i]);
}

static size_t count(char *const *arr, size_t n, const char *key)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++)
		c += strcmp(arr[i], key) == 0;
	return c;
}

static bool is_written(const char *key, enum route route, bool pd, bool ids,
		       const struct sampling_override *ov, enum body_vllm_pd vllm, bool mct)
{
	if (vllm != VLLM_PD_NONE && strcmp(key, "kv_transfer_params") == 0)
		return true;
	if (vllm == VLLM_PD_PREFILL &&
	    (strcmp(key, "stream") == 0 || strcmp(key, "max_tokens") == 0 ||
	     (mct && strcmp(key, "max_completion_tokens") == 0)))
		return true;
	if (pd && (strcmp(key, "bootstrap_host") == 0 || strcmp(key, "bootstrap_port") == 0 ||
		   strcmp(key, "bootstrap_room") == 0))
		return true;
	if (ids && strcmp(key, "input_ids") == 0)
		return true;
	if (route == ROUTE_GENERATE)
		return strcmp(key, "sampling_params") == 0;
	return sampling_override_find(ov, key, strlen(key)) >= 0;
}

/* Members a vLLM prefill leaves out (max_completion_tokens: rewritten
 * when the client sent it on chat, else dropped). */
static bool is_dropped(const char *key, enum body_vllm_pd vllm, bool mct)
{
	return vllm == VLLM_PD_PREFILL &&
	       (strcmp(key, "stream_options") == 0 || strcmp(key, "min_tokens") == 0 ||
		strcmp(key, "min_completion_tokens") == 0 ||
		(!mct && strcmp(key, "max_completion_tokens") == 0));
}

static struct sy_tokenizer *tok;
static struct sampling_override *ov[2];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	char why[128];
	if (tok == NULL &&
	    (sy_tokenizer_open("bytes", NULL, &tok, why, sizeof(why)) != SY_OK ||
	     sampling_override_parse(override_json, true, &ov[0], why, sizeof(why)) != SY_OK ||
	     sampling_override_parse(override_json, false, &ov[1], why, sizeof(why)) != SY_OK))
		abort();
	enum route route = (enum route)(data[0] % 3);
	const struct sampling_override *o = ov[(data[0] & 8) != 0];
	bool ids = (data[0] & 16) != 0, pd = (data[0] & 32) == 0;
	enum body_vllm_pd vllm = !pd || (data[0] & 64) == 0 ? VLLM_PD_NONE
				 : (data[0] & 128)	    ? VLLM_PD_DECODE
							    : VLLM_PD_PREFILL;
	if (vllm != VLLM_PD_NONE)
		pd = false; /* no bootstrap fields on vLLM */
	const char *body = (const char *)data + 1;
	size_t len = size - 1;

	struct router_prepare_opts opts = {.tokenizer = tok, .default_model = "m", .sampling = o};
	struct prepare_buf buf;
	struct pick_request r;
	struct router_error err;
	prepare_buf_init(&buf);
	if (router_prepare(&opts, route, body, len, NULL, NULL, &buf, &r, &err) != SY_OK)
		goto out;
	const char *param = NULL;
	if (body_rewrite_check(o, body, &r, &param) != SY_OK) {
		if (!o->reject || param == NULL || sampling_override_find(o, param, strlen(param)) < 0)
			abort();
		goto out;
	}
	static const uint32_t some_ids[3] = {1, 0, 4294967295u};
	ids = ids && !r.body.has_input_ids; /* preparation never forwards over the client's */
	struct body_rewrite rw = {.sampling = o};
	if (ids) {
		rw.input_ids = some_ids;
		rw.n_input_ids = 3;
	}
	static const char kv[] = "{\"do_remote_prefill\":true,\"remote_block_ids\":[1,2]}";
	rw.vllm_pd = vllm;
	if (vllm == VLLM_PD_DECODE) {
		rw.kv_params = kv;
		rw.kv_params_len = sizeof(kv) - 1;
	}
	if (pd) {
		rw.pd_host = "h\"\\ost";
		rw.pd_host_len = strlen(rw.pd_host);
		rw.pd_port = (data[0] & 4) ? 0 : 8998;
	}
	size_t bound = body_rewrite_bound(&rw, &r, len);
	char *outb = malloc(bound);
	if (outb == NULL)
		abort();
	size_t n = body_rewrite_build(&rw, body, &r, outb);
	if (n > bound)
		abort();

	struct keys in, outk;
	if (!collect(body, len, &in) || !collect(outb, n, &outk) || outb[0] != '{')
		abort();
	bool mct = r.body.has_max_completion_tokens;
	if (!in.overflow && !outk.overflow && !in.has_nul) {
		for (size_t i = 0; i < outk.n_top; i++) {
			const char *k = outk.top[i];
			size_t c = count(outk.top, outk.n_top, k);
			if (is_dropped(k, vllm, mct) ||
			    (is_written(k, route, pd, ids, o, vllm, mct)
				     ? c != 1
				     : c != count(in.top, in.n_top, k)))
				abort();
		}
		for (size_t i = 0; i < in.n_top; i++)
			if (!is_written(in.top[i], route, pd, ids, o, vllm, mct) &&
			    !is_dropped(in.top[i], vllm, mct) && count(outk.top, outk.n_top, in.top[i]) == 0)
				abort();
		if (vllm == VLLM_PD_PREFILL &&
		    (count(outk.top, outk.n_top, "kv_transfer_params") != 1 ||
		     count(outk.top, outk.n_top, "max_completion_tokens") != (mct ? 1u : 0u)))
			abort();
		for (size_t i = 0; i < o->n; i++) {
			char *const *arr = route == ROUTE_GENERATE ? outk.sub : outk.top;
			size_t na = route == ROUTE_GENERATE ? outk.n_sub : outk.n_top;
			if (count(arr, na, o->params[i].key) != 1)
				abort();
		}
	}
	keys_free(&in);
	keys_free(&outk);
	free(outb);
out:
	prepare_buf_free(&buf);
	return 0;
}
