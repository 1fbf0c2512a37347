/* hf-load.h — shared state of the tokenizer.json loader (internal to
 * hf-load.c and hf-vocab.c): the load context with its error buffer, and
 * small jansson accessors.
 */
#ifndef SY_COMMON_TOKENIZER_HF_LOAD_H
#define SY_COMMON_TOKENIZER_HF_LOAD_H

#include <jansson.h>

#include "common/tokenizer/hf-internal.h"

/* One load: the model being filled, where the reason of a failure goes,
 * and the inverse of the ByteLevel alphabet. */
struct load {
	struct hf_model *m;
	char *err;
	size_t errcap;
	int inv[0x144]; /* byte-level code point → byte, -1 if none */
};

/* Writes the formatted reason to L->err and returns rc. */
int hf_load_fail(struct load *L, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static inline const char *hf_json_str(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

static inline bool hf_json_null_or_empty(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return !v || json_is_null(v) || (json_is_string(v) && json_string_length(v) == 0);
}

static inline bool hf_json_true(json_t *o, const char *key)
{
	return json_is_true(json_object_get(o, key));
}

/* model (BPE vocab + merges, HF_TOK_WHOLE marks) and added_tokens; hf-vocab.c */
int hf_load_model(struct load *L, json_t *root);
int hf_load_added(struct load *L, json_t *root);

#endif
