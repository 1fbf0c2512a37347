/* statebus-query.h — the remote prefix-query protocol of the statebus
 * (DESIGN.md §1, §9 "Remote prefix queries"; docs/query.md).
 *
 * A statebus answers prefix queries on statebus.query_endpoint (ZeroMQ
 * ROUTER); a router whose cache_aware group has cache_prefix_provider
 * indexer asks it over a DEALER (router/policies/cache/cache_source.c). One
 * msgpack map per message, in both directions; unknown keys are skipped so
 * that either side may grow.
 *
 *   request  {"v": 1, "id": u64, "model": str, "block_size": u32,
 *             "bigram": bool, "predicted": bool?, "hashes": [i64, ...]}
 *   reply    {"v": 1, "id": u64, "status": str, "error": str?,
 *             "query_blocks": u32, "matches": [[url str, rank u32,
 *             depth u32], ...]}
 *   with "predicted": true, each match is [url, rank, depth,
 *             predicted_depth u32, predicted_age_ms u32, approximate bool]
 *
 * Protocol 1 grows compatibly: a server that does not know "predicted"
 * skips the key and answers three-field matches (its depth counts
 * predicted blocks as held); an asker reads three or more fields (extra
 * ones skipped), so old askers, which never ask, never see six.
 *
 * hashes = the request's SGLang block-hash chain (sglang-wire.md §11),
 * computed by the asker; matches = statebus_index_match() of that chain,
 * one entry per (worker, DP rank) with its contiguous depth in blocks and
 * the worker's ID (normalised URL). The asker keeps the max over ranks per
 * URL and caps it at query_blocks. status: "ok"; "rejected" (the model is
 * unknown there or its block size / bigram mode differs: the hashes cannot
 * mean the same blocks — the asker reports an invalid signal); "overloaded"
 * (the statebus sheds queries past its per-turn budget); "too_large" (more
 * than STATEBUS_QUERY_MAX_HASHES hashes or a frame over
 * STATEBUS_QUERY_MAX_BYTES); "bad_request" (not a valid request).
 *
 * Decoding is fuzz-safe: every length is checked against the bytes left
 * (common/mpcursor.h), arrays are capped before anything is stored, strings
 * are borrowed spans of the frame (valid while the frame lives). Encoding
 * writes into a caller-owned growable buffer. Nothing here touches a
 * socket or the region.
 */
#ifndef SY_STATEBUS_QUERY_H
#define SY_STATEBUS_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STATEBUS_QUERY_VERSION 1u
#define STATEBUS_QUERY_MAX_HASHES 65536u          /* = STATEBUS_INDEX_CHAIN_MAX */
#define STATEBUS_QUERY_MAX_BYTES (1024u * 1024u)  /* one frame, either way */
#define STATEBUS_QUERY_MAX_MATCHES 65536u         /* entries of one reply */
#define STATEBUS_QUERY_URL_MAX 255u               /* bytes of a worker URL */
#define STATEBUS_QUERY_MODEL_MAX 127u             /* bytes of a model name */
#define STATEBUS_QUERY_MATCH_FIELDS_MAX 16u       /* fields of one match array */

enum statebus_query_status {
	STATEBUS_QUERY_OK = 0,
	STATEBUS_QUERY_REJECTED = 1,
	STATEBUS_QUERY_OVERLOADED = 2,
	STATEBUS_QUERY_TOO_LARGE = 3,
	STATEBUS_QUERY_BAD_REQUEST = 4,
};

/* Wire name of a status ("ok", "rejected", ...). */
const char *statebus_query_status_name(enum statebus_query_status s);

/* A growable output buffer (malloc'd, owned by the caller; free(buf)). */
struct statebus_query_buf {
	uint8_t *buf;
	size_t len, cap;
	int err; /* sticky SY_ENOMEM */
};

/* A decoded request. model borrows the frame; hashes are decoded into the
 * caller's array (capacity hashes_cap) — n_hashes is the count on the
 * wire, which may exceed hashes_cap only when the decoder said too_large. */
struct statebus_query_request {
	uint64_t id;
	const char *model;  /* not NUL-terminated */
	uint32_t model_len;
	uint32_t block_size;
	bool bigram;
	bool predicted;     /* the asker reads predicted fields in matches */
	int64_t *hashes;
	uint32_t n_hashes;
};

/* One reply entry: worker URL (borrowed from the frame), rank, depth and,
 * when the server sent them (has_predicted), the predicted part. */
struct statebus_query_match {
	const char *url;   /* not NUL-terminated */
	uint32_t url_len;
	uint32_t rank;
	uint32_t depth;    /* blocks, predicted ones included */
	bool has_predicted;        /* the three fields below came on the wire */
	bool approximate;          /* the worker has no KV events: predictions
				      are its only cache signal */
	uint32_t predicted_depth;  /* blocks of depth past the engine-confirmed
				      prefix, ≤ depth (statebus_index_match) */
	uint32_t predicted_age_ms; /* age of the deepest predicted block's last
				      prediction when answered, ms (saturated) */
};

/* A decoded reply. matches is the caller's array (capacity matches_cap);
 * error borrows the frame (NULL when absent). */
struct statebus_query_reply {
	uint64_t id;
	enum statebus_query_status status;
	const char *error;
	uint32_t error_len;
	uint32_t query_blocks;
	struct statebus_query_match *matches;
	uint32_t n_matches;
};

/* Encodes a request; `model` is `model_len` bytes; `predicted` asks for
 * six-field matches. Returns SY_OK or SY_ENOMEM
 * (b->len then undefined). b is reset first. */
int statebus_query_encode_request(struct statebus_query_buf *b, uint64_t id, const char *model,
				  size_t model_len, uint32_t block_size, bool bigram,
				  const int64_t *hashes, size_t n, bool predicted);

/* Decodes a request frame of `len` bytes. `out->hashes` must point to an
 * array of `hashes_cap` entries. Returns STATEBUS_QUERY_OK,
 * STATEBUS_QUERY_TOO_LARGE (frame over the byte cap, or more hashes than
 * STATEBUS_QUERY_MAX_HASHES or hashes_cap; out->id is valid when it could be
 * read) or STATEBUS_QUERY_BAD_REQUEST (not msgpack, wrong types, version,
 * missing keys, model too long, block_size 0). */
enum statebus_query_status statebus_query_decode_request(const uint8_t *frame, size_t len,
							 struct statebus_query_request *out,
							 uint32_t hashes_cap);

/* Starts a reply (b reset): header keys, then statebus_query_add_match()
 * exactly n_matches times, then nothing else (the array is the last value).
 * error may be NULL. Returns SY_OK or SY_ENOMEM. */
int statebus_query_begin_reply(struct statebus_query_buf *b, uint64_t id,
			       enum statebus_query_status st, const char *error,
			       uint32_t query_blocks, uint32_t n_matches);
int statebus_query_add_match(struct statebus_query_buf *b, const char *url, size_t url_len,
			     uint32_t rank, uint32_t depth);
/* The six-field match, for a request that asked "predicted". */
int statebus_query_add_match_predicted(struct statebus_query_buf *b, const char *url,
				       size_t url_len, uint32_t rank, uint32_t depth,
				       uint32_t predicted_depth, uint32_t predicted_age_ms,
				       bool approximate);

/* Decodes a reply frame. out->matches points to `matches_cap` entries.
 * Returns SY_OK, SY_EMALFORMED (not a valid reply: the asker treats it as
 * a rejection), SY_ERANGE (more matches than matches_cap or the cap, a URL
 * over STATEBUS_QUERY_URL_MAX, a frame over the byte cap). */
int statebus_query_decode_reply(const uint8_t *frame, size_t len, struct statebus_query_reply *out,
				uint32_t matches_cap);

/* ---- serving (query_serve.c) ---------------------------------------------
 * The answering side, socket-free so that the daemon and tests share it.
 * The model's block size and bigram mode are read from the workers table
 * (the first worker of the model with a cache signal — KV events with an
 * accepted stream, or predictions in approximate mode — and a block size:
 * the statebus's per-model oracle): a request that disagrees
 * is "rejected"; a model with no indexed worker is answered "ok" with no
 * matches (a confirmed miss: nothing is known there). Matches name the
 * worker's ID; owners of other models are left out. Cost: one scan of the
 * workers table per query plus statebus_index_match(). */
struct statebus_region;
struct statebus_index_match;

/* Scratch of a server (hashes, matches, reply buffer), kept across queries. */
struct statebus_query_server {
	int64_t *hashes;                       /* STATEBUS_QUERY_MAX_HASHES */
	struct statebus_index_match *matches;  /* cap_matches */
	size_t cap_matches;
	struct statebus_query_buf out;         /* the last reply */
	uint64_t answered, rejected, overloaded, too_large, bad; /* counters */
};

/* Allocates the scratch. Errors: SY_ENOMEM. */
int statebus_query_server_init(struct statebus_query_server *s);
void statebus_query_server_free(struct statebus_query_server *s);

/* Answers the request in `frame` (`len` bytes) from region `r` (a handle
 * with a claimed proc slot) into s->out. `overloaded`: answer
 * "overloaded" without looking (load shedding; the id is still echoed).
 * Returns SY_OK (a reply is ready, whatever its status) or SY_ENOMEM. */
int statebus_query_answer(struct statebus_query_server *s, struct statebus_region *r,
			  const uint8_t *frame, size_t len, bool overloaded);

#endif
