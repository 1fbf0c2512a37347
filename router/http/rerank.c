/* rerank.c — SMG's rerank request checks and response shape (rerank.h).
 * Cold path: jansson parses the request body again (only the members read
 * here) and the engine's answer, which is held complete before it is
 * wrapped (dispatch/forward.c). */
#include "router/http/rerank.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

static bool blank(const char *s)
{
	for (; *s != '\0'; s++)
		if (!isspace((unsigned char)*s))
			return false;
	return true;
}

int rt_rerank_parse(const char *body, size_t len, bool full, struct rt_rerank *out, char *err,
		    size_t errlen)
{
	memset(out, 0, sizeof(*out));
	out->return_documents = true;
	json_error_t je;
	json_t *o = json_loadb(body, len, JSON_ALLOW_NUL, &je);
	if (!json_is_object(o)) {
		snprintf(err, errlen, "expected a JSON object with query and documents");
		json_decref(o);
		return -1;
	}
	int rc = -1;
	json_t *q = json_object_get(o, "query"), *d = json_object_get(o, "documents");
	if (json_is_string(q)) {
		if (blank(json_string_value(q))) {
			snprintf(err, errlen, "query: must not be empty");
			goto out;
		}
	} else if (!json_is_array(q) || json_array_size(q) == 0) {
		snprintf(err, errlen, "query: expected a non-empty string");
		goto out;
	}
	if (!json_is_array(d) || json_array_size(d) == 0) {
		snprintf(err, errlen, "documents: expected a non-empty list");
		goto out;
	}
	if (full) {
		json_t *k = json_object_get(o, "top_k"), *rd = json_object_get(o, "return_documents");
		json_t *rid = json_object_get(o, "rid");
		if (k != NULL && !json_is_null(k)) {
			if (!json_is_integer(k) || json_integer_value(k) < 1) {
				snprintf(err, errlen, "top_k: expected an integer greater than 0");
				goto out;
			}
			out->has_top_k = true;
			out->top_k = (uint64_t)json_integer_value(k);
		}
		if (rd != NULL && !json_is_null(rd)) {
			if (!json_is_boolean(rd)) {
				snprintf(err, errlen, "return_documents: expected true or false");
				goto out;
			}
			out->return_documents = json_is_true(rd);
		}
		if (rid != NULL && !json_is_null(rid)) {
			bool ok = json_is_string(rid) || json_is_array(rid);
			for (size_t i = 0; ok && json_is_array(rid) && i < json_array_size(rid); i++)
				ok = json_is_string(json_array_get(rid, i));
			if (!ok) {
				snprintf(err, errlen, "rid: expected a string or a list of strings");
				goto out;
			}
			out->rid = json_dumps(rid, JSON_COMPACT | JSON_ENCODE_ANY);
			if (out->rid == NULL) {
				snprintf(err, errlen, "rid: out of memory");
				goto out;
			}
		}
	}
	rc = 0;
out:
	json_decref(o);
	return rc;
}

/* Appends `v` as compact JSON; reals with 9 significant digits (a score
 * of 0.9 stays 0.9; SMG carries scores as 32-bit floats). */
static void put_json(struct rt_buf *b, const json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(9));
	if (s == NULL) {
		b->oom = true;
		return;
	}
	rt_buf_puts(b, s);
	free(s);
}

int rt_rerank_wrap(const struct rt_rerank *r, const char *model, size_t model_len,
		   const char *engine, size_t len, int64_t created, struct rt_buf *out, char *err,
		   size_t errlen)
{
	json_error_t je;
	json_t *list = json_loadb(engine, len, 0, &je);
	int rc = -1;
	if (!json_is_array(list)) {
		snprintf(err, errlen, "the worker's rerank answer is not a JSON list of results");
		goto out;
	}
	size_t n = json_array_size(list);
	if (r->has_top_k && r->top_k < n)
		n = (size_t)r->top_k;
	rt_buf_puts(out, "{\"results\":[");
	for (size_t i = 0; i < json_array_size(list); i++) {
		json_t *it = json_array_get(list, i);
		json_t *score = json_object_get(it, "score"), *index = json_object_get(it, "index");
		json_t *doc = json_object_get(it, "document"), *meta = json_object_get(it, "meta_info");
		if (!json_is_object(it) || !json_is_number(score) || !json_is_integer(index) ||
		    json_integer_value(index) < 0 || (doc != NULL && !json_is_string(doc) && !json_is_null(doc)) ||
		    (meta != NULL && !json_is_object(meta) && !json_is_null(meta))) {
			snprintf(err, errlen,
				 "the worker's rerank result %zu is not {score: number, index: integer "
				 ">= 0, document: string, meta_info: object}", i);
			goto out;
		}
		if (i >= n)
			continue; /* checked, not kept */
		rt_buf_puts(out, i == 0 ? "{\"score\":" : ",{\"score\":");
		put_json(out, score);
		if (r->return_documents && json_is_string(doc)) {
			rt_buf_puts(out, ",\"document\":");
			put_json(out, doc);
		}
		rt_buf_printf(out, ",\"index\":%" PRId64, (int64_t)json_integer_value(index));
		if (json_is_object(meta)) {
			rt_buf_puts(out, ",\"meta_info\":");
			put_json(out, meta);
		}
		rt_buf_puts(out, "}");
	}
	rt_buf_puts(out, "],\"model\":\"");
	rt_buf_json_str(out, model, model_len);
	rt_buf_puts(out, "\",\"usage\":null,\"object\":\"rerank\",\"id\":");
	rt_buf_puts(out, r->rid != NULL ? r->rid : "null");
	rt_buf_printf(out, ",\"created\":%" PRId64 "}", created);
	if (out->oom) {
		snprintf(err, errlen, "out of memory building the rerank response");
		goto out;
	}
	rc = 0;
out:
	json_decref(list);
	return rc;
}
