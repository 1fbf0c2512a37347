/* discovery.c — parse GET {worker}/server_info (sglang-wire.md §10), and
 * vLLM's /v1/models and /version (vLLM discovery, ingest.h).
 *
 * Read (top level, else inside "server_args"):
 *   kv_events: {endpoint_host, endpoint_port_base, topic, block_size,
 *               dp_size, load_endpoint_port_base, replay_port_base}
 *   disaggregation_mode ("prefill" | "decode" | anything else = not said),
 *   disaggregation_bootstrap_port, speculative_algorithm, dp_size,
 *   served_model_name (else model_path): the model name.
 * A block_size or dp_size present but out of range makes the KV facts
 * invalid (bad_facts), never "unknown".
 * No kv_events block → has_kv false (the caller logs and counts it: SGLang
 * hides this, a top user complaint). The HTTP part (timeouts, retries) is
 * in http.c; this file is pure so it is unit-tested on fixed bodies.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "common/errors.h"
#include "common/url.h"
#include "ingest.h"
#include "statebus.h"

int sbd_url_host(const char *url, char *out, size_t cap)
{
	const char *p = strstr(url, "://");
	if (p == NULL || cap == 0)
		return SY_EINVAL;
	p += 3;
	const char *end;
	if (*p == '[') {
		p++;
		end = strchr(p, ']');
		if (end == NULL)
			return SY_EINVAL;
	} else {
		end = p + strcspn(p, ":/");
	}
	size_t n = (size_t)(end - p);
	if (n == 0 || n >= cap)
		return SY_EINVAL;
	memcpy(out, p, n);
	out[n] = '\0';
	return SY_OK;
}

/* Key of `root`, else of root.server_args. */
static json_t *get(json_t *root, const char *key)
{
	json_t *v = json_object_get(root, key);
	if (v == NULL) {
		json_t *sa = json_object_get(root, "server_args");
		if (json_is_object(sa))
			v = json_object_get(sa, key);
	}
	return v;
}

static int int_in(json_t *v, int lo, int hi)
{
	if (!json_is_integer(v))
		return 0;
	json_int_t i = json_integer_value(v);
	return i >= lo && i <= hi ? (int)i : 0;
}

/* Copies string v; false when it does not fit (never silently truncated:
 * a cut host would connect elsewhere). */
static bool copy_str(char *dst, size_t cap, json_t *v)
{
	if (!json_is_string(v))
		return true;
	return snprintf(dst, cap, "%s", json_string_value(v)) < (int)cap;
}

/* dp_size: present but out of [1, 1024] is an error, never "1". */
static int dp_of(json_t *v, struct sbd_facts *out)
{
	int dp = int_in(v, 1, 1024);
	if (dp == 0 && v != NULL && !json_is_null(v))
		out->invalid = "dp_size out of [1, 1024]";
	return dp;
}

static bool wildcard(const char *h)
{
	return h[0] == '\0' || strcmp(h, "*") == 0 || strcmp(h, "0.0.0.0") == 0 ||
	       strcmp(h, "::") == 0 || strcmp(h, "[::]") == 0;
}

int sbd_discovery_parse(const char *body, size_t len, const char *url, struct sbd_facts *out,
			char *why, size_t why_cap)
{
	memset(out, 0, sizeof(*out));
	out->role = -1;
	json_error_t jerr;
	json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(root)) {
		snprintf(why, why_cap, "/server_info is not a JSON object%s%s",
			 root ? "" : ": ", root ? "" : jerr.text);
		json_decref(root);
		return SY_EMALFORMED;
	}
	json_t *kv = get(root, "kv_events");
	if (json_is_object(kv)) {
		out->has_kv = true;
		if (!copy_str(out->endpoint_host, sizeof(out->endpoint_host),
			      json_object_get(kv, "endpoint_host")))
			out->invalid = "endpoint_host too long";
		out->endpoint_port_base = int_in(json_object_get(kv, "endpoint_port_base"), 1, 65535);
		if (!copy_str(out->topic, sizeof(out->topic), json_object_get(kv, "topic")))
			out->invalid = "topic too long";
		json_t *bs = json_object_get(kv, "block_size");
		out->block_size = int_in(bs, 1, 1 << 20);
		if (out->block_size == 0 && bs != NULL && !json_is_null(bs))
			out->invalid = "block_size out of [1, 1048576]"; /* never "unknown" */
		out->dp_size = dp_of(json_object_get(kv, "dp_size"), out);
		out->load_port_base = int_in(json_object_get(kv, "load_endpoint_port_base"), 1, 65535);
		out->replay_port_base = int_in(json_object_get(kv, "replay_port_base"), 1, 65535);
	}
	if (wildcard(out->endpoint_host))
		(void)sbd_url_host(url, out->endpoint_host, sizeof(out->endpoint_host));
	if (out->dp_size == 0 && out->invalid == NULL)
		out->dp_size = dp_of(get(root, "dp_size"), out);
	json_t *mode = get(root, "disaggregation_mode");
	if (json_is_string(mode)) {
		if (strcasecmp(json_string_value(mode), "prefill") == 0)
			out->role = STATEBUS_WORKER_PREFILL;
		else if (strcasecmp(json_string_value(mode), "decode") == 0)
			out->role = STATEBUS_WORKER_DECODE;
		else if (strcasecmp(json_string_value(mode), "null") == 0)
			out->role = STATEBUS_WORKER_PLAIN;
	}
	out->bootstrap_port = int_in(get(root, "disaggregation_bootstrap_port"), 1, 65535);
	json_t *cap = get(root, "max_total_num_tokens");
	if (json_is_integer(cap) && json_integer_value(cap) > 0)
		out->max_total_num_tokens = json_integer_value(cap);
	out->page_size = int_in(get(root, "page_size"), 1, 1 << 20);
	/* SGLang's /server_info is its ServerArgs flattened: served_model_name
	 * (defaults to model_path in the engine) and model_path */
	const char *mkeys[2] = {"served_model_name", "model_path"};
	for (int i = 0; i < 2 && out->model[0] == '\0'; i++) {
		json_t *m = get(root, mkeys[i]);
		if (json_is_string(m) && json_string_length(m) > 0 &&
		    json_string_length(m) < sizeof(out->model))
			snprintf(out->model, sizeof(out->model), "%s", json_string_value(m));
	}
	json_t *spec = get(root, "speculative_algorithm");
	if (json_is_string(spec)) {
		const char *a = json_string_value(spec);
		snprintf(out->speculative_algorithm, sizeof(out->speculative_algorithm), "%s", a);
		if (strcasecmp(a, "EAGLE") == 0 || strcasecmp(a, "EAGLE3") == 0 ||
		    strcasecmp(a, "FROZEN_KV_MTP") == 0) {
			out->bigram = true;
		} else {
			char up[32];
			size_t i;
			for (i = 0; a[i] && i + 1 < sizeof(up); i++)
				up[i] = (char)toupper((unsigned char)a[i]);
			up[i] = '\0';
			out->bigram_unrecognised = strstr(up, "EAGLE") || strstr(up, "MTP");
		}
	}
	json_decref(root);
	return SY_OK;
}

int sbd_vllm_models_parse(const char *body, size_t len, char *model, size_t cap,
			  uint32_t *n_adapters, char *adapters, size_t adapters_cap)
{
	*n_adapters = 0;
	if (cap)
		model[0] = '\0';
	size_t used = 0; /* bytes of `adapters` written, its final NUL not counted */
	if (adapters != NULL && adapters_cap > 0)
		adapters[0] = '\0';
	json_t *root = json_loadb(body, len, 0, NULL);
	json_t *data = json_object_get(root, "data");
	if (!json_is_array(data) || json_array_size(data) == 0) {
		json_decref(root);
		return SY_EMALFORMED;
	}
	const char *base = NULL, *first = NULL;
	size_t i;
	json_t *m;
	json_array_foreach(data, i, m) {
		const char *id = json_string_value(json_object_get(m, "id"));
		if (id == NULL)
			continue;
		if (first == NULL)
			first = id;
		json_t *parent = json_object_get(m, "parent");
		if (parent == NULL || json_is_null(parent)) {
			if (base == NULL)
				base = id;
		} else {
			(*n_adapters)++; /* a LoRA adapter of a base model */
			size_t l = strlen(id);
			if (adapters != NULL && l > 0 && l < STATEBUS_MODEL_MAX &&
			    used + l + 2 <= adapters_cap) {
				memcpy(adapters + used, id, l + 1);
				used += l + 1;
				adapters[used] = '\0';
			}
		}
	}
	const char *pick = base ? base : first;
	int rc = pick && strlen(pick) < cap ? SY_OK : SY_EMALFORMED;
	if (rc == SY_OK)
		memcpy(model, pick, strlen(pick) + 1);
	json_decref(root);
	return rc;
}

int sbd_vllm_version_parse(const char *body, size_t len, char *version, size_t cap)
{
	json_t *root = json_loadb(body, len, 0, NULL);
	const char *v = json_string_value(json_object_get(root, "version"));
	int rc = v && v[0] && strlen(v) < cap ? SY_OK : SY_EMALFORMED;
	if (rc == SY_OK)
		memcpy(version, v, strlen(v) + 1);
	else if (cap)
		version[0] = '\0';
	json_decref(root);
	return rc;
}
