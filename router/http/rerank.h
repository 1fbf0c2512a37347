/* rerank.h — the rerank routes as SGLang's model gateway (SMG) serves them.
 *
 * The engine's POST /v1/rerank answers a JSON list of results
 * [{"score", "document", "index", "meta_info"}, ...] (SGLang's
 * RerankResponse items, sorted by the engine). SMG does not pass that list
 * on: it answers
 *   {"results": [{"score", "document"?, "index", "meta_info"?}, ...],
 *    "model": MODEL, "usage": null, "object": "rerank",
 *    "id": RID | null, "created": UNIX_SECONDS}
 * keeping the engine's order, cut to "top_k" results, without "document"
 * when "return_documents" is false, each result with those four members
 * only. POST /rerank reads SMG's RerankRequest (query, documents, model,
 * top_k, return_documents (default true), rid, user); POST /v1/rerank
 * reads SMG's V1RerankReqInput — query and documents only, so top_k,
 * return_documents and rid are not applied there. The request body goes
 * to the engine as the client sent it; an engine answer other than 2xx is
 * passed on unchanged.
 */
#ifndef SY_ROUTER_HTTP_RERANK_H
#define SY_ROUTER_HTTP_RERANK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "router/core/buf.h"

/* What the router keeps of a rerank request to wrap the engine's answer. */
struct rt_rerank {
	bool has_top_k;
	uint64_t top_k;          /* results kept (≥ 1) when has_top_k */
	bool return_documents;   /* keep each result's "document" (default true) */
	char *rid;               /* "rid" as compact JSON text (a string or a list
				    of strings), reported as "id"; NULL: absent.
				    Owned by the caller of rt_rerank_parse */
};

/* Reads the rerank request `body` (`len` bytes, a JSON object already
 * validated by preparation). `full`: the /rerank form (top_k,
 * return_documents and rid read), else the /v1/rerank form (only query and
 * documents checked; defaults kept). Checks as SMG does: "query" a
 * non-blank string (or a list of content parts), "documents" a non-empty
 * list, "top_k" an integer ≥ 1 or null, "return_documents" a boolean or
 * null, "rid" a string, a list of strings or null. Returns 0 with *out
 * filled (out->rid malloc'd, free() it), or -1 with a message naming the
 * member in `err` (`errlen` bytes, NUL-terminated). */
int rt_rerank_parse(const char *body, size_t len, bool full, struct rt_rerank *out, char *err,
		    size_t errlen);

/* Builds SMG's rerank response (file comment) into `out` from the engine's
 * answer `engine` (`len` bytes): `model` (`model_len` bytes) is the model
 * reported, `created` the Unix time in seconds. Returns 0, or -1 with the
 * reason in `err` when the answer is not a JSON list of objects each with a
 * numeric "score" and an integer "index" ≥ 0 (or `out` ran out of memory). */
int rt_rerank_wrap(const struct rt_rerank *r, const char *model, size_t model_len,
		   const char *engine, size_t len, int64_t created, struct rt_buf *out, char *err,
		   size_t errlen);

#endif
