/* respond.c — SGLang/OpenAI response formatting and the deterministic text
 * generator (see respond.h). */
#include "tools/mock-engine/respond.h"

#include <inttypes.h>

static const char *const words[] = {
	" the", " a", " model", " cache", " router", " engine", " prefix", " token",
	" fast", " quiet", " river", " stone", " light", " green", " signal", " block",
	" page", " queue", " batch", " yard", " switch", " rail", " train", " north",
	" south", " east", " west", " cloud", " field", " wind", " rain", " sun",
	" is", " was", " runs", " holds", " sends", " waits", " reads", " writes",
	" and", " or", " with", " from", " into", " over", " under", " near",
	" one", " two", " three", " four", " many", " few", " all", " none",
	" here", " there", " now", " then", " soon", " late", " early", ".",
};
#define NWORDS (sizeof(words) / sizeof(words[0]))

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

static size_t word_index(uint64_t seed, int i) { return mix(seed + (uint64_t)i * 0x9E3779B97F4A7C15ull) % NWORDS; }

const char *textgen_word(uint64_t seed, int i, size_t *len)
{
	const char *w = words[word_index(seed, i)];
	*len = strlen(w);
	return w;
}

uint32_t textgen_token_id(uint64_t seed, int i) { return 1000u + (uint32_t)word_index(seed, i); }

uint64_t textgen_seed(const uint32_t *tokens, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++) {
		h ^= tokens[i];
		h *= 1099511628211ull;
	}
	return h;
}

static const char *id_prefix(const struct mreq *r)
{
	return r->kind == MREQ_CHAT ? "chatcmpl-" : "cmpl-";
}

static uint64_t created(const struct mreq *r) { return r->eng->started_wall_s + r->t_arrival / 1000000u; }

static void put_text(const struct mreq *r, struct sbuf *o, int upto)
{
	if (!sbuf_reserve(o, (size_t)upto * 10 + 2))
		return;
	o->p[o->n++] = '"';
	for (int i = 0; i < upto; i++) {
		size_t l;
		const char *w = textgen_word(r->seed, i, &l);
		sbuf_put(o, w, l); /* words need no escaping */
	}
	sbuf_put(o, "\"", 1);
}

static void put_usage(const struct mreq *r, struct sbuf *o)
{
	sbuf_printf(o,
		    "{\"prompt_tokens\":%zu,\"total_tokens\":%zu,\"completion_tokens\":%d,"
		    "\"prompt_tokens_details\":{\"cached_tokens\":%zu}}",
		    r->n_tokens, r->n_tokens + (size_t)r->generated, r->generated, r->cached_tokens);
}

static void put_meta(const struct mreq *r, struct sbuf *o, bool finished)
{
	sbuf_printf(o, "{\"id\":\"%016" PRIx64 "\",\"finish_reason\":", r->id);
	if (finished)
		sbuf_printf(o, "{\"type\":\"length\",\"length\":%d}", r->generated);
	else
		sbuf_puts(o, "null");
	sbuf_printf(o, ",\"prompt_tokens\":%zu,\"completion_tokens\":%d,\"cached_tokens\":%zu}",
		    r->n_tokens, r->generated, r->cached_tokens);
}

static void put_output_ids(const struct mreq *r, struct sbuf *o, int upto)
{
	sbuf_puts(o, "[");
	for (int i = 0; i < upto; i++)
		sbuf_printf(o, "%s%u", i ? "," : "", textgen_token_id(r->seed, i));
	sbuf_puts(o, "]");
}

/* vLLM prefill: the kv_transfer_params of its answer (NixlConnector's
 * names; remote_request_id = the room of the bootstrap listener). */
static void put_kv_transfer(const struct mreq *r, struct sbuf *o)
{
	const struct mock_engine *e = r->eng;
	if (e->cfg.engine != MOCK_ENGINE_VLLM || e->cfg.pd_mode != MOCK_PD_PREFILL || !r->has_room)
		return;
	sbuf_puts(o, ",\"kv_transfer_params\":{\"do_remote_prefill\":true,"
		     "\"do_remote_decode\":false,\"remote_block_ids\":[");
	for (size_t i = 0; i < r->n_pages; i++)
		sbuf_printf(o, "%s%zu", i ? "," : "", i);
	sbuf_printf(o, "],\"remote_engine_id\":\"mock-%d\",\"remote_request_id\":\"%" PRIu64 "\","
		       "\"remote_host\":\"%s\",\"remote_port\":%d,\"tp_size\":1}",
		    e->cfg.port, r->room, e->cfg.host, e->cfg.bootstrap_port);
}

void respond_full_body(const struct mreq *r, struct sbuf *o)
{
	const char *model = r->eng->model_json;
	switch (r->kind) {
	case MREQ_CHAT:
		sbuf_printf(o, "{\"id\":\"chatcmpl-%016" PRIx64 "\",\"object\":\"chat.completion\","
			       "\"created\":%" PRIu64 ",\"model\":%s,\"choices\":[{\"index\":0,"
			       "\"message\":{\"role\":\"assistant\",\"content\":",
			    r->id, created(r), model);
		put_text(r, o, r->generated);
		sbuf_puts(o, ",\"reasoning_content\":null,\"tool_calls\":null},\"logprobs\":null,"
			     "\"finish_reason\":\"length\",\"matched_stop\":null}],\"usage\":");
		put_usage(r, o);
		put_kv_transfer(r, o);
		sbuf_puts(o, "}");
		break;
	case MREQ_COMPLETION:
		sbuf_printf(o, "{\"id\":\"cmpl-%016" PRIx64 "\",\"object\":\"text_completion\","
			       "\"created\":%" PRIu64 ",\"model\":%s,\"choices\":[{\"index\":0,\"text\":",
			    r->id, created(r), model);
		put_text(r, o, r->generated);
		sbuf_puts(o, ",\"logprobs\":null,\"finish_reason\":\"length\",\"matched_stop\":null}],"
			     "\"usage\":");
		put_usage(r, o);
		put_kv_transfer(r, o);
		sbuf_puts(o, "}");
		break;
	case MREQ_GENERATE:
		sbuf_puts(o, "{\"text\":");
		put_text(r, o, r->generated);
		sbuf_puts(o, ",\"output_ids\":");
		put_output_ids(r, o, r->generated);
		sbuf_puts(o, ",\"meta_info\":");
		put_meta(r, o, true);
		sbuf_puts(o, "}");
		break;
	}
}

static void chunk_open(const struct mreq *r, struct sbuf *o)
{
	sbuf_printf(o, "data: {\"id\":\"%s%016" PRIx64 "\",\"object\":\"%s\",\"created\":%" PRIu64
		       ",\"model\":%s,\"choices\":[",
		    id_prefix(r), r->id, r->kind == MREQ_CHAT ? "chat.completion.chunk" : "text_completion",
		    created(r), r->eng->model_json);
}

void respond_stream_head(const struct mreq *r, struct sbuf *o)
{
	if (r->kind != MREQ_CHAT)
		return;
	chunk_open(r, o);
	sbuf_puts(o, "{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
		     "\"logprobs\":null,\"finish_reason\":null}]}\n\n");
}

void respond_stream_token(const struct mreq *r, int i, struct sbuf *o)
{
	size_t l;
	const char *w = textgen_word(r->seed, i, &l);
	switch (r->kind) {
	case MREQ_CHAT:
		chunk_open(r, o);
		sbuf_puts(o, "{\"index\":0,\"delta\":{\"content\":\"");
		sbuf_put(o, w, l);
		sbuf_puts(o, "\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n");
		break;
	case MREQ_COMPLETION:
		chunk_open(r, o);
		sbuf_puts(o, "{\"index\":0,\"text\":\"");
		sbuf_put(o, w, l);
		sbuf_puts(o, "\",\"logprobs\":null,\"finish_reason\":null}]}\n\n");
		break;
	case MREQ_GENERATE: {
		/* SGLang's native stream carries the cumulative text. */
		struct mreq *m = (struct mreq *)r;
		sbuf_puts(o, "data: {\"text\":\"");
		sbuf_put(o, m->gen_text.p, m->gen_text.n);
		sbuf_puts(o, "\",\"output_ids\":");
		put_output_ids(r, o, i + 1);
		sbuf_puts(o, ",\"meta_info\":");
		struct mreq tmp = *r;
		tmp.generated = i + 1;
		put_meta(&tmp, o, i + 1 == r->max_tokens);
		sbuf_puts(o, ",\"index\":0}\n\n");
		break;
	}
	}
}

void respond_stream_tail(const struct mreq *r, struct sbuf *o)
{
	if (r->kind != MREQ_GENERATE) {
		chunk_open(r, o);
		if (r->kind == MREQ_CHAT)
			sbuf_puts(o, "{\"index\":0,\"delta\":{},\"logprobs\":null,"
				     "\"finish_reason\":\"length\",\"matched_stop\":null}]}\n\n");
		else
			sbuf_puts(o, "{\"index\":0,\"text\":\"\",\"logprobs\":null,"
				     "\"finish_reason\":\"length\",\"matched_stop\":null}]}\n\n");
		if (r->include_usage) {
			chunk_open(r, o);
			sbuf_puts(o, "],\"usage\":");
			put_usage(r, o);
			sbuf_puts(o, "}\n\n");
		}
	}
	sbuf_puts(o, "data: [DONE]\n\n");
}

void respond_error_body(struct sbuf *o, int status, const char *type, const char *msg)
{
	sbuf_puts(o, "{\"error\":{\"message\":");
	sbuf_json_str(o, msg, strlen(msg));
	sbuf_puts(o, ",\"type\":");
	sbuf_json_str(o, type, strlen(type));
	sbuf_printf(o, ",\"param\":null,\"code\":%d}}", status);
}
