/* sampling_override.h — the router's sampling override
 * (reference/policy-defaults.md §7: --override-sampling-params JSON with
 * --sampling-param-conflict reject|allow), parsed once per generation.
 *
 * Preparation (prepare.h) matches the body's member keys, after JSON
 * unescaping, against the parameter names; the body rewrite
 * (router/dispatch/body_rewrite.h) compares the client's values and writes
 * the override's members. Parameters apply to the top-level object on
 * /v1/chat/completions and /v1/completions, inside "sampling_params" on
 * /generate.
 *
 * Value comparison is jansson's json_equal on the client's value as parsed
 * by jansson: numbers of one kind compare by value (0.7 equals 0.70; 1 does
 * not equal 1.0), strings after unescaping, arrays and objects deeply.
 */
#ifndef SY_ROUTER_SAMPLING_OVERRIDE_H
#define SY_ROUTER_SAMPLING_OVERRIDE_H

#include <stdbool.h>
#include <stddef.h>

struct json_t; /* jansson */

/* One parameter of the override. Strings are owned by the override. */
struct sampling_param {
	const char *key;      /* decoded name, NUL-terminated, key_len bytes */
	size_t key_len;
	const char *member;   /* `"key":value` as written into bodies (compact
				 JSON, jansson's encoding), member_len bytes */
	size_t member_len;
	struct json_t *value; /* the value, for comparison */
};

/* A parsed override: params in the order the JSON object lists them. */
struct sampling_override {
	struct sampling_param *params;
	size_t n;
	bool reject;             /* --sampling-param-conflict reject */
	size_t members_len;      /* Σ member_len + n − 1 (commas): the bytes of
				    all members joined, 0 when n is 0 */
	struct json_t *root;     /* owned */
};

/* Parses `json` (a JSON object; NULL → *out NULL, no override) into *out.
 * Names that the router writes itself (input_ids, bootstrap_host,
 * bootstrap_port, bootstrap_room) are refused. Returns 0, SY_ECONFIG with
 * a reason in why[cap] ("must be a JSON object: ..."), or SY_ENOMEM. */
int sampling_override_parse(const char *json, bool reject, struct sampling_override **out,
			    char *why, size_t cap);

/* Frees an override (NULL is a no-op). */
void sampling_override_free(struct sampling_override *ov);

/* Index of the parameter named by the `len` decoded bytes at `key`, or -1. */
int sampling_override_find(const struct sampling_override *ov, const char *key, size_t len);

/* Whether the raw JSON value `raw` (`len` bytes of the body) equals
 * parameter `i`'s value (file comment). A value jansson cannot parse
 * (an integer beyond int64, ...) differs. */
bool sampling_override_same(const struct sampling_override *ov, size_t i, const char *raw,
			    size_t len);

#endif
