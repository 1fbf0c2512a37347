/* routes_admin.c — GET /health, /v1/models, /server_info, /v1/loads,
 * /get_load; /flush_cache; the mock's own /mock/stats, /mock/reset,
 * /mock/faults, /mock/restart_events. With --engine vllm: vLLM's routes
 * instead — /v1/models (base model and LoRA adapters), /version, /metrics
 * (Prometheus text, vllm: names), POST /reset_prefix_cache — and none of
 * SGLang's (/server_info, /v1/loads, /get_load, /flush_cache, /get_model_info
 * answer 404). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/clock.h"
#include "common/errors.h"
#include "tools/mock-engine/http.h"

static bool is(h2o_req_t *req, const char *path)
{
	return h2o_memis(req->path_normalized.base, req->path_normalized.len, path, strlen(path));
}

static bool is_post(h2o_req_t *req)
{
	return h2o_memis(req->method.base, req->method.len, H2O_STRLIT("POST"));
}

static void put_str(struct sbuf *o, const char *s)
{
	if (s)
		sbuf_json_str(o, s, strlen(s));
	else
		sbuf_puts(o, "null");
}

static void server_info(struct mock_engine *e, struct sbuf *o)
{
	const struct mock_config *c = &e->cfg;
	sbuf_printf(o, "{\"model_path\":%s,\"served_model_name\":%s,\"tokenizer_path\":", e->model_json,
		    e->model_json);
	put_str(o, c->tokenizer_path);
	sbuf_puts(o, ",\"tokenizer\":");
	put_str(o, c->tokenizer);
	sbuf_puts(o, ",\"host\":");
	put_str(o, c->host);
	sbuf_printf(o,
		    ",\"port\":%d,\"version\":\"switchyard-mock-0.1\",\"tp_size\":1,\"dp_size\":%d,"
		    "\"enable_dp_attention\":%s,\"page_size\":%u,\"max_running_requests\":%d,"
		    "\"max_total_num_tokens\":%zu,\"enable_http2\":false,\"disaggregation_mode\":",
		    c->port, c->dp_size, c->dp_size > 1 ? "true" : "false", c->block_size,
		    c->max_running, c->cache_tokens);
	/* SGLang's ServerArgs.disaggregation_mode is Literal["null", "prefill",
	 * "decode"] with default "null" — the *string*, which /server_info
	 * serialises as is. */
	put_str(o, c->pd_mode == MOCK_PD_PREFILL  ? "prefill"
		   : c->pd_mode == MOCK_PD_DECODE ? "decode"
						  : "null");
	sbuf_printf(o, ",\"disaggregation_bootstrap_port\":%d,\"speculative_algorithm\":",
		    c->bootstrap_port);
	put_str(o, c->spec_algo);
	if (c->kv_port > 0) {
		sbuf_printf(o, ",\"kv_events\":{\"publisher\":\"zmq\",\"endpoint\":\"tcp://%s:%d\","
			       "\"endpoint_host\":",
			    c->host, c->kv_port);
		put_str(o, c->host);
		sbuf_printf(o, ",\"endpoint_port_base\":%d,\"topic\":", c->kv_port);
		put_str(o, c->topic);
		sbuf_printf(o, ",\"block_size\":%u,\"dp_size\":%d", c->block_size, c->dp_size);
		if (c->load_port > 0)
			sbuf_printf(o, ",\"load_endpoint_port_base\":%d,\"load_topic\":\"load\"",
				    c->load_port);
		if (c->replay_port > 0)
			sbuf_printf(o, ",\"replay_port_base\":%d,\"replay_endpoint\":\"tcp://%s:%d\","
				       "\"buffer_steps\":%zu",
				    c->replay_port, c->host, c->replay_port, c->replay_buffer_steps);
		sbuf_printf(o, ",\"event_encoding\":\"%s\"}",
			    c->encoding == KVEV_ENC_MAP ? "map" : "array");
	}
	sbuf_printf(o,
		    ",\"mock\":{\"prefill_us_per_token\":%" PRIu64 ",\"decode_us_per_token\":%" PRIu64
		    ",\"cache_tokens\":%zu,\"hash\":\"%s\"}}",
		    c->prefill_us, c->decode_us, c->cache_tokens,
		    mock_tok_hash_is_sglang() ? "sglang-sha256" : "stand-in");
}

static void loads(struct mock_engine *e, struct sbuf *o, bool legacy)
{
	sbuf_puts(o, legacy ? "[" : "{\"timestamp\":");
	if (!legacy)
		sbuf_printf(o, "%.3f,\"dp_rank_count\":%d,\"loads\":[", sy_wall_seconds(), e->cfg.dp_size);
	for (int i = 0; i < e->cfg.dp_size; i++) {
		struct loadstat ls;
		const struct mock_rank *rk = &e->ranks[i];
		mock_rank_loadstat(rk, &ls);
		if (i)
			sbuf_puts(o, ",");
		if (legacy) {
			sbuf_printf(o,
				    "{\"dp_rank\":%d,\"num_reqs\":%" PRId64 ",\"num_waiting_reqs\":%" PRId64
				    ",\"num_tokens\":%" PRId64 "}",
				    i, ls.running + ls.waiting, ls.waiting, ls.num_tokens);
			continue;
		}
		double usage = ls.max_total_num_tokens
				       ? (double)ls.num_tokens / (double)ls.max_total_num_tokens
				       : 0.0;
		sbuf_printf(o,
			    "{\"dp_rank\":%d,\"num_running_reqs\":%" PRId64 ",\"num_waiting_reqs\":%" PRId64
			    ",\"num_waiting_uncached_tokens\":%" PRId64 ",\"num_used_tokens\":%" PRId64
			    ",\"num_total_tokens\":%" PRId64 ",\"max_total_num_tokens\":%" PRId64
			    ",\"max_running_requests\":%" PRId64 ",\"token_usage\":%.6f"
			    ",\"gen_throughput\":0.0,\"cache_hit_rate\":%.6f,\"utilization\":%.6f}",
			    i, ls.running, ls.waiting, ls.waiting_uncached, ls.num_tokens,
			    ls.total_tokens, ls.max_total_num_tokens, ls.max_running, usage,
			    rk->hit_prompt_tokens ? (double)rk->hit_cached_tokens /
							   (double)rk->hit_prompt_tokens
						 : 0.0,
			    ls.max_running ? (double)ls.running / (double)ls.max_running : 0.0);
	}
	sbuf_puts(o, legacy ? "]" : "]}");
}

static void faults_json(struct mock_engine *e, struct sbuf *o)
{
	sbuf_printf(o,
		    "{\"fail_rate\":%g,\"stall_ms\":%d,\"drop_after_tokens\":%d,\"skip_seq_every\":%u}",
		    e->faults.fail_rate, e->faults.stall_ms, e->faults.drop_after_tokens,
		    e->faults.skip_seq_every);
}

/* POST /mock/faults {fail_rate, stall_ms, drop_after_tokens, skip_seq_every}:
 * sets the given switches, keeps the others. */
static const char *set_faults(struct mock_engine *e, h2o_req_t *req)
{
	json_error_t jerr;
	json_t *root = json_loadb(req->entity.base ? req->entity.base : "",
				  req->entity.base ? req->entity.len : 0, 0, &jerr);
	if (!json_is_object(root)) {
		json_decref(root);
		return "body must be a JSON object";
	}
	const char *err = NULL;
	json_t *v;
	struct mock_faults f = e->faults;
	if ((v = json_object_get(root, "fail_rate"))) {
		if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 1)
			err = "fail_rate must be in [0, 1]";
		else
			f.fail_rate = json_number_value(v);
	}
	if ((v = json_object_get(root, "stall_ms"))) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > 3600000)
			err = "stall_ms must be an integer in [0, 3600000]";
		else
			f.stall_ms = (int)json_integer_value(v);
	}
	if ((v = json_object_get(root, "drop_after_tokens"))) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > 1000000)
			err = "drop_after_tokens must be an integer in [0, 1000000]";
		else
			f.drop_after_tokens = (int)json_integer_value(v);
	}
	if ((v = json_object_get(root, "skip_seq_every"))) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > 1000000000)
			err = "skip_seq_every must be an integer in [0, 1000000000]";
		else
			f.skip_seq_every = (unsigned)json_integer_value(v);
	}
	json_decref(root);
	if (!err)
		e->faults = f;
	return err;
}

/* vLLM's GET /v1/models: the base model, then each LoRA adapter with the
 * base as parent (vllm/entrypoints/openai/protocol.py ModelCard). */
static void vllm_models(struct mock_engine *e, struct sbuf *o)
{
	sbuf_printf(o,
		    "{\"object\":\"list\",\"data\":[{\"id\":%s,\"object\":\"model\",\"created\":%" PRIu64
		    ",\"owned_by\":\"vllm\",\"root\":%s,\"parent\":null,\"max_model_len\":%zu,"
		    "\"permission\":[]}",
		    e->model_json, e->started_wall_s, e->model_json, e->cfg.cache_tokens);
	for (int i = 0; i < e->cfg.n_lora; i++) {
		sbuf_puts(o, ",{\"id\":");
		put_str(o, e->cfg.lora[i]);
		sbuf_printf(o, ",\"object\":\"model\",\"created\":%" PRIu64 ",\"owned_by\":\"vllm\","
			       "\"root\":", e->started_wall_s);
		put_str(o, e->cfg.lora[i]);
		sbuf_printf(o, ",\"parent\":%s,\"max_model_len\":null,\"permission\":[]}", e->model_json);
	}
	sbuf_puts(o, "]}");
}

/* vLLM's Prometheus exposition (vllm/v1/metrics/loggers.py names): one
 * sample per DP rank, labelled engine="<rank>" and model_name. */
static void vllm_metrics(struct mock_engine *e, struct sbuf *o)
{
	static const char *const help[][3] = {
		{"vllm:num_requests_running", "gauge", "Number of requests in model execution batches."},
		{"vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed."},
		{"vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage."},
		{"vllm:gpu_cache_usage_perc", "gauge", "GPU KV-cache usage. 1 means 100 percent usage."},
		{"vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed."},
		{"vllm:generation_tokens_total", "counter", "Number of generation tokens processed."},
		{"vllm:prefix_cache_queries_total", "counter", "Prefix cache queries, in tokens."},
		{"vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in tokens."},
	};
	for (size_t m = 0; m < sizeof(help) / sizeof(help[0]); m++) {
		sbuf_printf(o, "# HELP %s %s\n# TYPE %s %s\n", help[m][0], help[m][2], help[m][0],
			    help[m][1]);
		for (int i = 0; i < e->cfg.dp_size; i++) {
			const struct mock_rank *rk = &e->ranks[i];
			size_t cap = mock_cache_capacity_pages(rk->cache);
			double usage = cap ? (double)mock_cache_pages(rk->cache) / (double)cap : 0.0;
			sbuf_printf(o, "%s{engine=\"%d\",model_name=%s} ", help[m][0], i, e->model_json);
			switch (m) {
			case 0: sbuf_printf(o, "%" PRId64 ".0\n", rk->n_running); break;
			case 1: sbuf_printf(o, "%" PRId64 ".0\n", rk->n_waiting); break;
			case 2:
			case 3: sbuf_printf(o, "%.6f\n", usage); break;
			case 4: sbuf_printf(o, "%" PRIu64 ".0\n", rk->prom_prompt_tokens); break;
			case 5: sbuf_printf(o, "%" PRIu64 ".0\n", rk->prom_generation_tokens); break;
			case 6: sbuf_printf(o, "%" PRIu64 ".0\n", rk->prom_prompt_tokens); break;
			default: sbuf_printf(o, "%" PRIu64 ".0\n", rk->hit_cached_tokens); break;
			}
		}
	}
	sbuf_printf(o, "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"
		       "# TYPE vllm:cache_config_info gauge\n"
		       "vllm:cache_config_info{block_size=\"%u\",enable_prefix_caching=\"True\","
		       "num_gpu_blocks=\"%zu\"} 1.0\n",
		    e->cfg.block_size, mock_cache_capacity_pages(e->ranks[0].cache));
}

/* vLLM mode: its own routes. Returns false for a path it does not serve. */
static bool route_vllm(struct mock_engine *e, h2o_req_t *req, struct sbuf *o)
{
	if (is(req, "/v1/models")) {
		vllm_models(e, o);
		http_reply(req, 200, "application/json", o);
	} else if (is(req, "/version")) {
		sbuf_puts(o, "{\"version\":\"0.11.0\"}");
		http_reply(req, 200, "application/json", o);
	} else if (is(req, "/metrics")) {
		vllm_metrics(e, o);
		http_reply(req, 200, "text/plain; version=0.0.4; charset=utf-8", o);
	} else if (is(req, "/reset_prefix_cache")) {
		if (!is_post(req))
			http_error(req, 405, "MethodNotAllowed", "use POST");
		else if (mock_engine_flush_cache(e) == 0)
			http_reply(req, 200, NULL, NULL);
		else
			http_error(req, 400, "BadRequestError",
				   "prefix cache not reset: there are running or waiting requests");
	} else if (is(req, "/server_info") || is(req, "/get_server_info") ||
		   is(req, "/v1/loads") || is(req, "/get_load") || is(req, "/flush_cache") ||
		   is(req, "/health_generate") || is(req, "/get_model_info") ||
		   is(req, "/model_info")) {
		http_error(req, 404, "NotFoundError", "Not Found");
	} else {
		return false;
	}
	return true;
}

static bool query_is(h2o_req_t *req, const char *name, const char *val)
{
	h2o_iovec_t v = http_query_param(req, name);
	return v.base && h2o_memis(v.base, v.len, val, strlen(val));
}

struct rerank_hit {
	double score;
	size_t index;
};

static int rerank_order(const void *a, const void *b)
{
	const struct rerank_hit *x = a, *y = b;
	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* POST /v1/rerank as SGLang's engine answers it: a list with one result
 * per document, {"score", "document", "index"}, highest score first (ties
 * by index). The score is the share of the query's space-separated words
 * found in the document (a fixed relevance a test can recompute).
 * Returns false after answering 400 (or 500: out of memory). */
static bool mock_rerank(h2o_req_t *req, struct sbuf *o)
{
	json_t *b = json_loadb(req->entity.base, req->entity.len, 0, NULL);
	json_t *q = json_object_get(b, "query"), *docs = json_object_get(b, "documents");
	size_t n = json_array_size(docs);
	bool ok = json_is_string(q) && json_is_array(docs) && n > 0;
	for (size_t i = 0; ok && i < n; i++)
		ok = json_is_string(json_array_get(docs, i));
	struct rerank_hit *h = ok ? calloc(n, sizeof(*h)) : NULL;
	if (h == NULL) {
		json_decref(b);
		http_error(req, ok ? 500 : 400, ok ? "InternalServerError" : "BadRequestError",
			   ok ? "out of memory"
			      : "query (a string) and documents (a non-empty list of strings) required");
		return false;
	}
	char *words = strdup(json_string_value(q)), *save = NULL;
	unsigned n_words = 0;
	for (size_t i = 0; i < n; i++)
		h[i].index = i;
	for (char *w = words ? strtok_r(words, " ", &save) : NULL; w; w = strtok_r(NULL, " ", &save)) {
		n_words++;
		for (size_t i = 0; i < n; i++)
			if (strstr(json_string_value(json_array_get(docs, i)), w) != NULL)
				h[i].score += 1;
	}
	for (size_t i = 0; i < n && n_words > 0; i++)
		h[i].score /= n_words;
	qsort(h, n, sizeof(*h), rerank_order);
	sbuf_puts(o, "[");
	for (size_t i = 0; i < n; i++) {
		char *d = json_dumps(json_array_get(docs, h[i].index), JSON_ENCODE_ANY);
		sbuf_printf(o, "%s{\"score\":%.6g,\"document\":%s,\"index\":%zu,\"meta_info\":null}",
			    i ? "," : "", h[i].score, d ? d : "\"\"", h[i].index);
		free(d);
	}
	sbuf_puts(o, "]");
	free(words);
	free(h);
	json_decref(b);
	return true;
}

/* POST /v1/embeddings, /v1/rerank, /v1/responses, /v1/messages: answers
 * (fixed but for rerank) in the shape of each API (SGLang's engine, OpenAI Responses,
 * Anthropic Messages), naming the served model; counted as requests. */
static void mock_other_api(struct mock_engine *e, h2o_req_t *req, struct sbuf *o)
{
	if (!is_post(req)) {
		http_error(req, 405, "MethodNotAllowed", "use POST");
		return;
	}
	e->stats.requests++;
	if (is(req, "/v1/embeddings"))
		sbuf_printf(o,
			    "{\"object\":\"list\",\"model\":%s,\"data\":[{\"object\":\"embedding\","
			    "\"index\":0,\"embedding\":[0.25,0.5,0.75]}],\"usage\":{\"prompt_tokens\":%zu,"
			    "\"total_tokens\":%zu}}",
			    e->model_json, req->entity.len, req->entity.len);
	else if (is(req, "/v1/rerank")) {
		if (!mock_rerank(req, o))
			return;
	}
	else if (is(req, "/v1/responses"))
		sbuf_printf(o,
			    "{\"id\":\"resp_mock\",\"object\":\"response\",\"model\":%s,"
			    "\"status\":\"completed\",\"output\":[{\"type\":\"message\",\"role\":"
			    "\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"mock\"}]}]}",
			    e->model_json);
	else
		sbuf_printf(o,
			    "{\"id\":\"msg_mock\",\"type\":\"message\",\"role\":\"assistant\","
			    "\"model\":%s,\"content\":[{\"type\":\"text\",\"text\":\"mock\"}],"
			    "\"stop_reason\":\"end_turn\"}",
			    e->model_json);
	http_reply(req, 200, "application/json", o);
}

int route_admin(struct mock_engine *e, h2o_req_t *req, bool *handled)
{
	struct sbuf o = {0};
	*handled = true;
	if (e->cfg.engine == MOCK_ENGINE_VLLM && route_vllm(e, req, &o)) {
		/* answered */
	} else if (is(req, "/health") || is(req, "/health_generate")) {
		http_reply(req, 200, "text/plain", NULL);
	} else if (is(req, "/v1/models")) {
		sbuf_printf(&o,
			    "{\"object\":\"list\",\"data\":[{\"id\":%s,\"object\":\"model\",\"created\":%" PRIu64
			    ",\"owned_by\":\"sglang\",\"root\":%s,\"max_model_len\":%zu}]}",
			    e->model_json, e->started_wall_s, e->model_json, e->cfg.cache_tokens);
		http_reply(req, 200, "application/json", &o);
	} else if (is(req, "/server_info") || is(req, "/get_server_info")) {
		server_info(e, &o);
		http_reply(req, 200, "application/json", &o);
	} else if (is(req, "/v1/loads")) {
		loads(e, &o, false);
		http_reply(req, 200, "application/json", &o);
	} else if (is(req, "/get_load")) {
		loads(e, &o, true);
		http_reply(req, 200, "application/json", &o);
	} else if (is(req, "/flush_cache")) {
		if (mock_engine_flush_cache(e) == 0) {
			sbuf_puts(&o, "Cache flushed.\n");
			http_reply(req, 200, "text/plain", &o);
		} else {
			http_error(req, 400, "BadRequestError",
				   "Cache not flushed: there are running or waiting requests");
		}
	} else if (is(req, "/get_model_info") || is(req, "/model_info")) {
		sbuf_printf(&o,
			    "{\"model_path\":%s,\"tokenizer_path\":%s,\"is_generation\":true,"
			    "\"preferred_sampling_params\":null,\"weight_version\":\"default\"}",
			    e->model_json, e->model_json);
		http_reply(req, 200, "application/json", &o);
	} else if (is(req, "/v1/embeddings") || is(req, "/v1/rerank") || is(req, "/v1/responses") ||
		   is(req, "/v1/messages")) {
		mock_other_api(e, req, &o);
	} else if (is(req, "/mock/stats")) {
		mock_stats_json(&e->stats, &o);
		http_reply(req, 200, "application/json", &o);
	} else if (is(req, "/mock/reset")) {
		if (!is_post(req)) {
			http_error(req, 405, "MethodNotAllowed", "use POST");
		} else {
			mock_stats_reset(&e->stats);
			for (int i = 0; i < e->cfg.dp_size; i++)
				e->ranks[i].hit_prompt_tokens = e->ranks[i].hit_cached_tokens = 0;
			http_reply(req, 200, "application/json", &(struct sbuf){.p = "{}", .n = 2});
		}
	} else if (is(req, "/mock/faults")) {
		const char *err = is_post(req) ? set_faults(e, req) : NULL;
		if (err) {
			http_error(req, 400, "BadRequestError", err);
		} else {
			faults_json(e, &o);
			http_reply(req, 200, "application/json", &o);
		}
	} else if (is(req, "/mock/restart_events")) {
		if (!is_post(req)) {
			http_error(req, 405, "MethodNotAllowed", "use POST");
		} else {
			mock_engine_restart_events(e, !query_is(req, "sentinel", "0"),
						   query_is(req, "keep_cache", "1"));
			http_reply(req, 200, "application/json", &(struct sbuf){.p = "{}", .n = 2});
		}
	} else {
		*handled = false;
	}
	sbuf_free(&o);
	return 0;
}
