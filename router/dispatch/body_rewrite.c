/* body_rewrite.c — one copy of the body with the router's changes
 * (body_rewrite.h).
 *
 * Invariant: the output never exceeds body_rewrite_bound(). The client's
 * kept members are written as `key:value` joined by ',' inside '{' '}',
 * which is at most the bytes they took in the body (that had at least
 * those separators); everything appended is bounded term by term below.
 */
#include "router/dispatch/body_rewrite.h"

#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/log.h"
#include "router/core/buf.h"

#include "common/lit.h"

#define U64_DIGITS 20
#define PD_KEYS_BYTES 64 /* "bootstrap_host":[] ... keys, brackets, commas */

/* What a vLLM PD prefill appends (vLLM's disaggregation proxy's values). */
static const char vllm_prefill_members[] =
	"\"kv_transfer_params\":{\"do_remote_decode\":true,\"do_remote_prefill\":false,"
	"\"remote_engine_id\":null,\"remote_block_ids\":null,\"remote_host\":null,"
	"\"remote_port\":null},\"stream\":false,\"max_tokens\":1";
static const char vllm_prefill_mct[] = "\"max_completion_tokens\":1";

/* Whether sampling-override parameter `key` is replaced in a vLLM prefill. */
static bool prefill_output_key(const char *key)
{
	static const char *const out[] = {"stream",	"stream_options",	 "max_tokens",
					  "max_completion_tokens", "min_tokens",
					  "min_completion_tokens", "kv_transfer_params"};
	for (size_t i = 0; i < sizeof(out) / sizeof(out[0]); i++)
		if (strcmp(key, out[i]) == 0)
			return true;
	return false;
}

static bool has_override(const struct body_rewrite *rw)
{
	return rw->sampling != NULL && rw->sampling->n > 0;
}

bool body_rewrite_needed(const struct body_rewrite *rw)
{
	return has_override(rw) || rw->input_ids != NULL || rw->pd_host != NULL ||
	       rw->vllm_pd != VLLM_PD_NONE;
}

int body_rewrite_check(const struct sampling_override *ov, const char *body,
		       const struct pick_request *req, const char **param)
{
	if (ov == NULL || !ov->reject || req->body.n_override == 0)
		return SY_OK;
	bool gen = req->route == ROUTE_GENERATE;
	const struct body_member *m = gen ? req->body.sampling : req->body.top;
	size_t n = gen ? req->body.n_sampling : req->body.n_top;
	for (size_t i = 0; i < n; i++) {
		if (m[i].role != BODY_SAMPLING)
			continue;
		if (!sampling_override_same(ov, m[i].param, body + m[i].value, m[i].value_len)) {
			*param = ov->params[m[i].param].key;
			return SY_EINVAL;
		}
	}
	return SY_OK;
}

unsigned body_rewrite_batch(const struct pick_request *req)
{
	if (req->batch_size > 1)
		return (unsigned)req->batch_size;
	if (req->route != ROUTE_GENERATE && req->n > 1)
		return req->n;
	return 1;
}

uint64_t body_rewrite_room(void)
{
	uint64_t r = 0;
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
		/* Fallback: a process-local xorshift seeded from an address and the pid. */
		static uint64_t x;
		if (x == 0)
			x = (uint64_t)(uintptr_t)&r ^ ((uint64_t)getpid() << 32) ^ 0x9e3779b97f4a7c15ull;
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		r = x;
	}
	return r & (uint64_t)INT64_MAX;
}

size_t body_rewrite_bound(const struct body_rewrite *rw, const struct pick_request *req,
			  size_t len)
{
	size_t n = len + 2;
	if (has_override(rw)) /* members, braces, a comma, "sampling_params": */
		n += rw->sampling->members_len + 4 + sizeof("\"sampling_params\":");
	if (rw->input_ids != NULL) /* ,"input_ids":[] and digits with a comma each */
		n += sizeof(",\"input_ids\":[]") + rw->n_input_ids * 11;
	if (rw->vllm_pd == VLLM_PD_PREFILL)
		n += sizeof(vllm_prefill_members) + sizeof(vllm_prefill_mct) + 2;
	if (rw->vllm_pd == VLLM_PD_DECODE && rw->kv_params != NULL)
		n += sizeof(",\"kv_transfer_params\":") + rw->kv_params_len;
	if (rw->pd_host != NULL) { /* per entry: quoted escaped host, port, room, commas */
		size_t batch = body_rewrite_batch(req);
		n += PD_KEYS_BYTES + 1 + rw->pd_host_len * 6 + 1 +
		     batch * (rw->pd_host_len * 6 + 3 + 6 + U64_DIGITS + 2);
	}
	return n;
}

/* ---- writer ------------------------------------------------------------- */

struct out {
	char *p;
	bool first; /* no member written yet in the current object */
};

static void put(struct out *o, const char *s, size_t n)
{
	memcpy(o->p, s, n);
	o->p += n;
}

static void put_u64(struct out *o, uint64_t v) { o->p = rt_put_dec(o->p, v); }

/* The separator before a member. */
static void sep(struct out *o)
{
	if (!o->first)
		*o->p++ = ',';
	o->first = false;
}

static void put_member(struct out *o, const char *body, const struct body_member *m)
{
	sep(o);
	put(o, body + m->key, m->key_len);
	*o->p++ = ':';
	put(o, body + m->value, m->value_len);
}

static void put_override(struct out *o, const struct sampling_override *ov, bool prefill)
{
	for (size_t i = 0; i < ov->n; i++) {
		if (prefill && prefill_output_key(ov->params[i].key))
			continue;
		sep(o);
		put(o, ov->params[i].member, ov->params[i].member_len);
	}
}

/* /generate: the object "sampling_params" with the override applied. */
static void put_sampling_object(struct out *o, const char *body, const struct pick_request *req,
				const struct sampling_override *ov)
{
	struct out in = {o->p, true};
	*in.p++ = '{';
	for (size_t i = 0; req->body.sampling_object && i < req->body.n_sampling; i++)
		if (req->body.sampling[i].role != BODY_SAMPLING)
			put_member(&in, body, &req->body.sampling[i]);
	put_override(&in, ov, false);
	*in.p++ = '}';
	o->p = in.p;
}

/* Opens a bootstrap field: `,"name":` and '[' for a batch. */
static void pd_field(struct out *o, const char *name, size_t len, unsigned batch)
{
	sep(o);
	*o->p++ = '"';
	put(o, name, len);
	put(o, SY_LIT("\":"));
	if (batch > 1)
		*o->p++ = '[';
}

static void put_pd(struct out *o, struct body_rewrite *rw, unsigned batch)
{
	pd_field(o, SY_LIT("bootstrap_host"), batch);
	*o->p++ = '"';
	char *host = o->p; /* escaped once, then copied for each further entry */
	size_t hlen = sy_json_escape(host, rw->pd_host_len * 6 + 1, rw->pd_host, rw->pd_host_len);
	o->p += hlen;
	*o->p++ = '"';
	for (unsigned k = 1; k < batch; k++) {
		put(o, SY_LIT(",\""));
		memcpy(o->p, host, hlen);
		o->p += hlen;
		*o->p++ = '"';
	}
	if (batch > 1)
		*o->p++ = ']';
	pd_field(o, SY_LIT("bootstrap_port"), batch);
	for (unsigned k = 0; k < batch; k++) {
		if (k > 0)
			*o->p++ = ',';
		if (rw->pd_port != 0)
			put_u64(o, rw->pd_port);
		else
			put(o, SY_LIT("null"));
	}
	if (batch > 1)
		*o->p++ = ']';
	pd_field(o, SY_LIT("bootstrap_room"), batch);
	for (unsigned k = 0; k < batch; k++) {
		if (k > 0)
			*o->p++ = ',';
		uint64_t room = body_rewrite_room();
		if (k == 0)
			rw->room = room;
		put_u64(o, room);
	}
	if (batch > 1)
		*o->p++ = ']';
}

size_t body_rewrite_build(struct body_rewrite *rw, const char *body,
			  const struct pick_request *req, char *out)
{
	const struct sampling_override *ov = has_override(rw) ? rw->sampling : NULL;
	bool gen = req->route == ROUTE_GENERATE;
	struct out o = {out, true};

	*o.p++ = '{';
	for (size_t i = 0; i < req->body.n_top; i++) {
		const struct body_member *m = &req->body.top[i];
		if ((m->role == BODY_BOOTSTRAP && rw->pd_host != NULL) ||
		    (m->role == BODY_SAMPLING && ov != NULL && !gen) ||
		    (m->role == BODY_KV_TRANSFER && rw->vllm_pd != VLLM_PD_NONE) ||
		    (m->role == BODY_PREFILL_OUTPUT && rw->vllm_pd == VLLM_PD_PREFILL))
			continue;
		if (m->role == BODY_SAMPLING_PARAMS && ov != NULL) {
			sep(&o);
			put(&o, body + m->key, m->key_len);
			*o.p++ = ':';
			put_sampling_object(&o, body, req, ov);
			continue;
		}
		put_member(&o, body, m);
	}
	if (ov != NULL && !gen)
		put_override(&o, ov, rw->vllm_pd == VLLM_PD_PREFILL);
	if (ov != NULL && gen && !req->body.has_sampling_params) {
		sep(&o);
		put(&o, SY_LIT("\"sampling_params\":"));
		put_sampling_object(&o, body, req, ov);
	}
	if (rw->input_ids != NULL) {
		sep(&o);
		put(&o, SY_LIT("\"input_ids\":["));
		for (size_t i = 0; i < rw->n_input_ids; i++) {
			if (i > 0)
				*o.p++ = ',';
			put_u64(&o, rw->input_ids[i]);
		}
		*o.p++ = ']';
	}
	if (rw->pd_host != NULL)
		put_pd(&o, rw, body_rewrite_batch(req));
	if (rw->vllm_pd == VLLM_PD_PREFILL) {
		sep(&o);
		put(&o, vllm_prefill_members, sizeof(vllm_prefill_members) - 1);
		if (req->body.has_max_completion_tokens) {
			*o.p++ = ',';
			put(&o, vllm_prefill_mct, sizeof(vllm_prefill_mct) - 1);
		}
	}
	if (rw->vllm_pd == VLLM_PD_DECODE && rw->kv_params != NULL) {
		sep(&o);
		put(&o, SY_LIT("\"kv_transfer_params\":"));
		put(&o, rw->kv_params, rw->kv_params_len);
	}
	*o.p++ = '}';
	return (size_t)(o.p - out);
}
