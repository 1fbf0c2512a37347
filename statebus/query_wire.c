/* query_wire.c — msgpack codec of the remote prefix-query protocol
 * (statebus-query.h, docs/query.md).
 *
 * Encoding is a small hand-written msgpack writer (maps, arrays, str, uint,
 * int, bool: the shortest form of each) into a growable buffer; decoding
 * reads through the bounds-checked msgpack cursor (common/mpcursor.h), so a
 * forged length never allocates or reads past the frame: container sizes
 * are checked against the bytes left and against our caps before anything
 * is stored. Unknown map keys are skipped.
 */
#include "statebus-query.h"

#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/mpcursor.h"

const char *statebus_query_status_name(enum statebus_query_status s)
{
	switch (s) {
	case STATEBUS_QUERY_OK:
		return "ok";
	case STATEBUS_QUERY_REJECTED:
		return "rejected";
	case STATEBUS_QUERY_OVERLOADED:
		return "overloaded";
	case STATEBUS_QUERY_TOO_LARGE:
		return "too_large";
	case STATEBUS_QUERY_BAD_REQUEST:
		return "bad_request";
	}
	return "bad_request";
}

/* ---- writer ---------------------------------------------------------------- */

static void put(struct statebus_query_buf *b, const void *p, size_t n)
{
	if (b->err)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n)
			cap *= 2;
		uint8_t *nb = realloc(b->buf, cap);
		if (nb == NULL) {
			b->err = SY_ENOMEM;
			return;
		}
		b->buf = nb;
		b->cap = cap;
	}
	memcpy(b->buf + b->len, p, n);
	b->len += n;
}

static void put_be(struct statebus_query_buf *b, uint8_t tag, uint64_t v, int bytes)
{
	uint8_t t[9];
	t[0] = tag;
	for (int i = 0; i < bytes; i++)
		t[1 + i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
	put(b, t, 1 + (size_t)bytes);
}

static void put_uint(struct statebus_query_buf *b, uint64_t v)
{
	if (v <= 0x7f) {
		uint8_t t = (uint8_t)v;
		put(b, &t, 1);
	} else if (v <= UINT8_MAX) {
		put_be(b, 0xcc, v, 1);
	} else if (v <= UINT16_MAX) {
		put_be(b, 0xcd, v, 2);
	} else if (v <= UINT32_MAX) {
		put_be(b, 0xce, v, 4);
	} else {
		put_be(b, 0xcf, v, 8);
	}
}

static void put_int(struct statebus_query_buf *b, int64_t v)
{
	if (v >= 0) {
		put_uint(b, (uint64_t)v);
	} else if (v >= -32) {
		uint8_t t = (uint8_t)(int8_t)v;
		put(b, &t, 1);
	} else if (v >= INT8_MIN) {
		put_be(b, 0xd0, (uint64_t)v & 0xff, 1);
	} else if (v >= INT16_MIN) {
		put_be(b, 0xd1, (uint64_t)v & 0xffff, 2);
	} else if (v >= INT32_MIN) {
		put_be(b, 0xd2, (uint64_t)v & 0xffffffffu, 4);
	} else {
		put_be(b, 0xd3, (uint64_t)v, 8);
	}
}

static void put_str(struct statebus_query_buf *b, const char *s, size_t n)
{
	if (n <= 31) {
		uint8_t t = (uint8_t)(0xa0 | n);
		put(b, &t, 1);
	} else if (n <= UINT8_MAX) {
		put_be(b, 0xd9, n, 1);
	} else if (n <= UINT16_MAX) {
		put_be(b, 0xda, n, 2);
	} else {
		put_be(b, 0xdb, n, 4);
	}
	put(b, s, n);
}

static void put_cstr(struct statebus_query_buf *b, const char *s) { put_str(b, s, strlen(s)); }

static void put_container(struct statebus_query_buf *b, bool map, uint32_t n)
{
	if (n <= 15) {
		uint8_t t = (uint8_t)((map ? 0x80 : 0x90) | n);
		put(b, &t, 1);
	} else if (n <= UINT16_MAX) {
		put_be(b, map ? 0xde : 0xdc, n, 2);
	} else {
		put_be(b, map ? 0xdf : 0xdd, n, 4);
	}
}

static void put_bool(struct statebus_query_buf *b, bool v)
{
	uint8_t t = v ? 0xc3 : 0xc2;
	put(b, &t, 1);
}

int statebus_query_encode_request(struct statebus_query_buf *b, uint64_t id, const char *model,
				  size_t model_len, uint32_t block_size, bool bigram,
				  const int64_t *hashes, size_t n, bool predicted)
{
	b->len = 0;
	b->err = SY_OK;
	put_container(b, true, predicted ? 7 : 6);
	put_cstr(b, "v");
	put_uint(b, STATEBUS_QUERY_VERSION);
	put_cstr(b, "id");
	put_uint(b, id);
	put_cstr(b, "model");
	put_str(b, model, model_len);
	put_cstr(b, "block_size");
	put_uint(b, block_size);
	put_cstr(b, "bigram");
	put_bool(b, bigram);
	if (predicted) {
		put_cstr(b, "predicted");
		put_bool(b, true);
	}
	put_cstr(b, "hashes");
	put_container(b, false, (uint32_t)n);
	for (size_t i = 0; i < n; i++)
		put_int(b, hashes[i]);
	return b->err;
}

int statebus_query_begin_reply(struct statebus_query_buf *b, uint64_t id,
			       enum statebus_query_status st, const char *error,
			       uint32_t query_blocks, uint32_t n_matches)
{
	b->len = 0;
	b->err = SY_OK;
	put_container(b, true, error != NULL ? 6 : 5);
	put_cstr(b, "v");
	put_uint(b, STATEBUS_QUERY_VERSION);
	put_cstr(b, "id");
	put_uint(b, id);
	put_cstr(b, "status");
	put_cstr(b, statebus_query_status_name(st));
	if (error != NULL) {
		put_cstr(b, "error");
		put_cstr(b, error);
	}
	put_cstr(b, "query_blocks");
	put_uint(b, query_blocks);
	put_cstr(b, "matches");
	put_container(b, false, n_matches);
	return b->err;
}

int statebus_query_add_match(struct statebus_query_buf *b, const char *url, size_t url_len,
			     uint32_t rank, uint32_t depth)
{
	put_container(b, false, 3);
	put_str(b, url, url_len);
	put_uint(b, rank);
	put_uint(b, depth);
	return b->err;
}

int statebus_query_add_match_predicted(struct statebus_query_buf *b, const char *url,
				       size_t url_len, uint32_t rank, uint32_t depth,
				       uint32_t predicted_depth, uint32_t predicted_age_ms,
				       bool approximate)
{
	put_container(b, false, 6);
	put_str(b, url, url_len);
	put_uint(b, rank);
	put_uint(b, depth);
	put_uint(b, predicted_depth);
	put_uint(b, predicted_age_ms);
	put_bool(b, approximate);
	return b->err;
}

/* ---- reader ---------------------------------------------------------------- */

static bool read_u32(struct sy_cursor *c, uint32_t *out)
{
	uint64_t v;
	if (!sy_mp_read_u64(c, &v))
		return false;
	if (v > UINT32_MAX) {
		sy_cursor_fail(c, SY_ERANGE);
		return false;
	}
	*out = (uint32_t)v;
	return true;
}

static bool read_bool(struct sy_cursor *c, bool *out)
{
	if (sy_mp_peek(c) != SY_MP_BOOL) {
		sy_cursor_fail(c, SY_EMALFORMED);
		return false;
	}
	/* 0xc2 false, 0xc3 true: one byte (peek saw it) */
	uint8_t t = *c->pos++;
	*out = t == 0xc3;
	return true;
}

/* Reads the value of key k when it is one both messages carry: "v" (must be
 * STATEBUS_QUERY_VERSION; sets *have_v) or "id" (into *id). Returns 1 when
 * k was one of them, 0 when not (nothing read), -1 for another version. */
static int read_common_key(struct sy_cursor *c, const uint8_t *k, uint32_t kl, uint64_t *id,
			   bool *have_v)
{
	if (sy_mp_str_eq(k, kl, "v")) {
		uint32_t v;
		if (read_u32(c, &v) && v != STATEBUS_QUERY_VERSION)
			return -1;
		*have_v = true;
		return 1;
	}
	if (sy_mp_str_eq(k, kl, "id")) {
		sy_mp_read_u64(c, id);
		return 1;
	}
	return 0;
}

enum statebus_query_status statebus_query_decode_request(const uint8_t *frame, size_t len,
							 struct statebus_query_request *out,
							 uint32_t hashes_cap)
{
	out->id = 0;
	out->model = NULL;
	out->model_len = 0;
	out->block_size = 0;
	out->bigram = false;
	out->predicted = false;
	out->n_hashes = 0;
	if (len > STATEBUS_QUERY_MAX_BYTES)
		return STATEBUS_QUERY_TOO_LARGE;

	struct sy_cursor c = sy_cursor_init(frame, len);
	uint32_t n;
	bool have_v = false, have_hashes = false, too_large = false;
	if (!sy_mp_read_map(&c, &n))
		return STATEBUS_QUERY_BAD_REQUEST;
	for (uint32_t i = 0; i < n && c.err == SY_OK; i++) {
		const uint8_t *k;
		uint32_t kl;
		if (!sy_mp_read_str(&c, &k, &kl))
			break;
		int common = read_common_key(&c, k, kl, &out->id, &have_v);
		if (common < 0)
			return STATEBUS_QUERY_BAD_REQUEST;
		if (common > 0)
			continue;
		if (sy_mp_str_eq(k, kl, "model")) {
			const uint8_t *p;
			uint32_t pl;
			if (sy_mp_read_str(&c, &p, &pl)) {
				out->model = (const char *)p;
				out->model_len = pl;
			}
		} else if (sy_mp_str_eq(k, kl, "block_size")) {
			read_u32(&c, &out->block_size);
		} else if (sy_mp_str_eq(k, kl, "bigram")) {
			read_bool(&c, &out->bigram);
		} else if (sy_mp_str_eq(k, kl, "predicted")) {
			read_bool(&c, &out->predicted);
		} else if (sy_mp_str_eq(k, kl, "hashes")) {
			uint32_t m;
			if (!sy_mp_read_array(&c, &m))
				break;
			have_hashes = true;
			out->n_hashes = m;
			if (m > STATEBUS_QUERY_MAX_HASHES || m > hashes_cap) {
				too_large = true;
				for (uint32_t j = 0; j < m && c.err == SY_OK; j++)
					sy_mp_skip(&c);
				continue;
			}
			for (uint32_t j = 0; j < m && c.err == SY_OK; j++)
				sy_mp_read_i64(&c, &out->hashes[j]);
		} else {
			sy_mp_skip(&c);
		}
	}
	if (c.err != SY_OK || !have_v || !have_hashes || out->model == NULL)
		return STATEBUS_QUERY_BAD_REQUEST;
	if (too_large)
		return STATEBUS_QUERY_TOO_LARGE;
	if (out->block_size == 0 || out->model_len == 0 ||
	    out->model_len > STATEBUS_QUERY_MODEL_MAX)
		return STATEBUS_QUERY_BAD_REQUEST;
	return STATEBUS_QUERY_OK;
}

static bool parse_status(const uint8_t *p, uint32_t len, enum statebus_query_status *out)
{
	for (int s = STATEBUS_QUERY_OK; s <= STATEBUS_QUERY_BAD_REQUEST; s++) {
		if (sy_mp_str_eq(p, len, statebus_query_status_name((enum statebus_query_status)s))) {
			*out = (enum statebus_query_status)s;
			return true;
		}
	}
	return false;
}

int statebus_query_decode_reply(const uint8_t *frame, size_t len, struct statebus_query_reply *out,
				uint32_t matches_cap)
{
	out->id = 0;
	out->status = STATEBUS_QUERY_BAD_REQUEST;
	out->error = NULL;
	out->error_len = 0;
	out->query_blocks = 0;
	out->n_matches = 0;
	if (len > STATEBUS_QUERY_MAX_BYTES)
		return SY_ERANGE;

	struct sy_cursor c = sy_cursor_init(frame, len);
	uint32_t n;
	bool have_status = false, have_v = false, range = false;
	if (!sy_mp_read_map(&c, &n))
		return SY_EMALFORMED;
	for (uint32_t i = 0; i < n && c.err == SY_OK; i++) {
		const uint8_t *k;
		uint32_t kl;
		if (!sy_mp_read_str(&c, &k, &kl))
			break;
		int common = read_common_key(&c, k, kl, &out->id, &have_v);
		if (common < 0)
			return SY_EMALFORMED;
		if (common > 0)
			continue;
		if (sy_mp_str_eq(k, kl, "status")) {
			const uint8_t *p;
			uint32_t pl;
			if (sy_mp_read_str(&c, &p, &pl)) {
				if (!parse_status(p, pl, &out->status))
					return SY_EMALFORMED;
				have_status = true;
			}
		} else if (sy_mp_str_eq(k, kl, "error")) {
			const uint8_t *p;
			if (sy_mp_read_str(&c, &p, &out->error_len))
				out->error = (const char *)p;
		} else if (sy_mp_str_eq(k, kl, "query_blocks")) {
			read_u32(&c, &out->query_blocks);
		} else if (sy_mp_str_eq(k, kl, "matches")) {
			uint32_t m;
			if (!sy_mp_read_array(&c, &m))
				break;
			if (m > STATEBUS_QUERY_MAX_MATCHES || m > matches_cap) {
				range = true;
				break;
			}
			for (uint32_t j = 0; j < m && c.err == SY_OK; j++) {
				struct statebus_query_match *e = &out->matches[j];
				uint32_t fields;
				const uint8_t *u;
				/* [url, rank, depth] (protocol 1), then optionally
				 * predicted_depth, predicted_age_ms, approximate; later
				 * fields are skipped */
				if (!sy_mp_read_array(&c, &fields) || fields < 3 ||
				    fields > STATEBUS_QUERY_MATCH_FIELDS_MAX) {
					sy_cursor_fail(&c, SY_EMALFORMED);
					break;
				}
				if (!sy_mp_read_str(&c, &u, &e->url_len))
					break;
				if (e->url_len == 0 || e->url_len > STATEBUS_QUERY_URL_MAX) {
					range = true;
					break;
				}
				e->url = (const char *)u;
				read_u32(&c, &e->rank);
				read_u32(&c, &e->depth);
				e->has_predicted = fields >= 6;
				e->predicted_depth = 0;
				e->predicted_age_ms = 0;
				e->approximate = false;
				if (e->has_predicted) {
					read_u32(&c, &e->predicted_depth);
					read_u32(&c, &e->predicted_age_ms);
					read_bool(&c, &e->approximate);
					if (c.err == SY_OK && e->predicted_depth > e->depth)
						sy_cursor_fail(&c, SY_EMALFORMED);
				}
				for (uint32_t f = e->has_predicted ? 6 : 3; f < fields && c.err == SY_OK; f++)
					sy_mp_skip(&c);
			}
			if (range)
				break;
			out->n_matches = m;
		} else {
			sy_mp_skip(&c);
		}
	}
	if (range)
		return SY_ERANGE;
	if (c.err != SY_OK || !have_v || !have_status)
		return SY_EMALFORMED;
	return SY_OK;
}
