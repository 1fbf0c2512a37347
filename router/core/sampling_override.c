/* sampling_override.c — parse the override once, compare client values
 * (sampling_override.h). Each parameter's member text is built here so a
 * request's rewrite only copies bytes. */
#include "router/core/sampling_override.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/log.h"

static const char *const reserved[] = {"input_ids", "bootstrap_host", "bootstrap_port",
				       "bootstrap_room"};

void sampling_override_free(struct sampling_override *ov)
{
	if (ov == NULL)
		return;
	for (size_t i = 0; i < ov->n; i++)
		free((char *)ov->params[i].member);
	free(ov->params);
	json_decref(ov->root);
	free(ov);
}

/* `"key":value` into *p (malloc), or SY_ENOMEM. */
static int member_text(const char *key, size_t klen, json_t *v, char **p, size_t *len)
{
	char *val = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	if (val == NULL)
		return SY_ENOMEM;
	size_t vlen = strlen(val), cap = klen * 6 + 4 + vlen + 1;
	char *m = malloc(cap);
	if (m == NULL) {
		free(val);
		return SY_ENOMEM;
	}
	size_t o = 0;
	m[o++] = '"';
	o += sy_json_escape(m + o, cap - o, key, klen);
	m[o++] = '"';
	m[o++] = ':';
	memcpy(m + o, val, vlen);
	o += vlen;
	m[o] = '\0';
	free(val);
	*p = m;
	*len = o;
	return SY_OK;
}

int sampling_override_parse(const char *json, bool reject, struct sampling_override **out,
			    char *why, size_t cap)
{
	*out = NULL;
	if (json == NULL)
		return SY_OK;
	json_error_t je;
	json_t *root = json_loads(json, 0, &je);
	if (root == NULL || !json_is_object(root)) {
		snprintf(why, cap, "must be a JSON object%s%s", root ? "" : ": ",
			 root ? "" : je.text);
		json_decref(root);
		return SY_ECONFIG;
	}
	struct sampling_override *ov = calloc(1, sizeof(*ov));
	size_t n = json_object_size(root);
	if (ov == NULL || (n > 0 && (ov->params = calloc(n, sizeof(*ov->params))) == NULL)) {
		free(ov);
		json_decref(root);
		return SY_ENOMEM;
	}
	ov->root = root;
	ov->reject = reject;
	const char *k;
	size_t klen;
	json_t *v;
	json_object_keylen_foreach(root, k, klen, v)
	{
		for (size_t r = 0; r < sizeof(reserved) / sizeof(reserved[0]); r++) {
			if (strlen(reserved[r]) == klen && memcmp(reserved[r], k, klen) == 0) {
				snprintf(why, cap, "%s: set by the router, not a sampling parameter",
					 reserved[r]);
				sampling_override_free(ov);
				return SY_ECONFIG;
			}
		}
		struct sampling_param *p = &ov->params[ov->n];
		char *m;
		if (member_text(k, klen, v, &m, &p->member_len) != SY_OK) {
			sampling_override_free(ov);
			return SY_ENOMEM;
		}
		p->member = m;
		p->key = k;
		p->key_len = klen;
		p->value = v;
		ov->members_len += p->member_len + (ov->n > 0);
		ov->n++;
	}
	*out = ov;
	return SY_OK;
}

int sampling_override_find(const struct sampling_override *ov, const char *key, size_t len)
{
	for (size_t i = 0; ov != NULL && i < ov->n; i++)
		if (ov->params[i].key_len == len && memcmp(ov->params[i].key, key, len) == 0)
			return (int)i;
	return -1;
}

bool sampling_override_same(const struct sampling_override *ov, size_t i, const char *raw,
			    size_t len)
{
	json_t *have = json_loadb(raw, len, JSON_DECODE_ANY, NULL);
	bool same = have != NULL && json_equal(have, ov->params[i].value);
	json_decref(have);
	return same;
}
