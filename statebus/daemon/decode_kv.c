/* decode_kv.c — KV-event batch decoder (sglang-wire.md §4–§7, checklist §16).
 *
 * Two levels of failure:
 * - the batch: not an array/map, no event list, or msgpack that does not
 *   parse (truncated, reserved byte, a length over the bytes left, nesting
 *   over SY_MP_MAX_DEPTH, trailing bytes) → the whole batch is refused;
 * - one event: well-formed msgpack of the wrong shape, an unknown tag, or
 *   more hashes than the cap → that event is skipped and tallied, the rest
 *   of the batch is kept (sglang-wire.md §5, §6: prefer skipping only what
 *   is bad; token_ids over their cap only drop the token field).
 * Each event's extent is found first by skipping it on a copy of the
 * cursor (which validates the msgpack), then it is decoded in a cursor
 * limited to that extent, so a bad event can never desynchronise the rest.
 * Scratch grows to at most one hash per input byte and one event per input
 * byte — bounded by the message, never by a wire length.
 */
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/errors.h"
#include "common/mpcursor.h"
#include "wire.h"

void sbd_kv_decoder_free(struct sbd_kv_decoder *d)
{
	free(d->hashes);
	free(d->tokens);
	free(d->events);
	memset(d, 0, sizeof(*d));
}

/* State of one decode call. */
struct kv_ctx {
	struct sbd_kv_decoder *d;
	size_t n_hashes; /* used entries of d->hashes */
	size_t n_tokens; /* used entries of d->tokens */
};

/* A block id: int (i64 bits), or bin (vLLM 32-byte hash: an opaque id made
 * of its first 8 bytes read BE; shorter bins are zero-extended). */
static bool read_hash(struct sy_cursor *c, int64_t *out)
{
	if (sy_mp_peek(c) == SY_MP_BIN) {
		const uint8_t *p;
		uint32_t len;
		if (!sy_mp_read_bin(c, &p, &len))
			return false;
		uint64_t v = 0;
		for (uint32_t i = 0; i < 8; i++)
			v = v << 8 | (i < len ? p[i] : 0);
		*out = (int64_t)v;
		return true;
	}
	return sy_mp_read_i64(c, out);
}

enum { EV_OK = 0, EV_BAD = 1, EV_UNKNOWN_TAG = 2, EV_OVERSIZED = 3 };

static int read_hashes(struct kv_ctx *k, struct sy_cursor *c, struct sbd_kv_event *ev)
{
	uint32_t n;
	if (!sy_mp_read_array(c, &n))
		return EV_BAD;
	if (n > SBD_MAX_HASHES_PER_EVENT)
		return EV_OVERSIZED;
	ev->hashes = (const int64_t *)(uintptr_t)k->n_hashes;
	ev->n_hashes = n;
	if (n == 0)
		return EV_OK; /* no scratch needed (it may still be NULL) */
	if (sy_grow((void **)&k->d->hashes, &k->d->hashes_cap, k->n_hashes + n, sizeof(int64_t)))
		return -1;
	int64_t *h = k->d->hashes + k->n_hashes;
	for (uint32_t i = 0; i < n; i++)
		if (!read_hash(c, &h[i]))
			return EV_BAD;
	/* Stored as an offset until the batch is complete (realloc may move). */
	ev->hashes = (const int64_t *)(uintptr_t)k->n_hashes;
	ev->n_hashes = n;
	k->n_hashes += n;
	return EV_OK;
}

/* Consumes a nil; false (nothing read) where the next item is another type. */
static bool read_nil(struct sy_cursor *c)
{
	if (sy_mp_peek(c) != SY_MP_NIL)
		return false;
	sy_mp_read_nil(c);
	return true;
}

static int read_parent(struct sy_cursor *c, struct sbd_kv_event *ev)
{
	if (read_nil(c)) {
		ev->has_parent = false;
		return EV_OK;
	}
	ev->has_parent = true;
	return read_hash(c, &ev->parent) ? EV_OK : EV_BAD;
}

/* token_ids: array of ints or of [int, int] pairs (bigram pages), kept
 * flattened in the decoder's scratch (as an offset until the batch is
 * complete). Over the cap → dropped and flagged. */
static int read_tokens(struct kv_ctx *k, struct sy_cursor *c, struct sbd_kv_event *ev)
{
	uint32_t n;
	if (read_nil(c))
		return EV_OK;
	if (!sy_mp_read_array(c, &n))
		return EV_BAD;
	if (n > SBD_MAX_TOKENS_PER_EVENT) {
		ev->tokens_dropped = true;
		for (uint32_t i = 0; i < n; i++)
			if (!sy_mp_skip(c))
				return EV_BAD;
		return EV_OK;
	}
	/* n ≤ bytes left, and a pair takes ≥ 3 bytes: 2n is bounded by the input */
	if (n > 0 && sy_grow((void **)&k->d->tokens, &k->d->tokens_cap, k->n_tokens + 2 * (size_t)n,
			  sizeof(uint32_t)))
		return -1;
	uint32_t *out = n > 0 ? k->d->tokens + k->n_tokens : NULL; /* no tokens: no buffer yet */
	uint64_t units = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t t, t2;
		if (sy_mp_peek(c) == SY_MP_ARRAY) {
			uint32_t m;
			if (!sy_mp_read_array(c, &m) || m != 2 || !sy_mp_read_u64(c, &t) ||
			    !sy_mp_read_u64(c, &t2) || t2 > UINT32_MAX)
				return EV_BAD;
			ev->tokens_paired = true;
			out[units++] = (uint32_t)(t > UINT32_MAX ? 0 : t);
			out[units++] = (uint32_t)t2;
		} else {
			if (!sy_mp_read_u64(c, &t))
				return EV_BAD;
			out[units++] = (uint32_t)(t > UINT32_MAX ? 0 : t);
		}
		if (t > UINT32_MAX)
			return EV_BAD;
	}
	if (units > SBD_MAX_TOKENS_PER_EVENT) {
		ev->tokens_dropped = true;
		units = 0;
	}
	ev->n_tokens = (uint32_t)units;
	ev->tokens = (const uint32_t *)(uintptr_t)k->n_tokens; /* offset, see read_hashes */
	k->n_tokens += units;
	return EV_OK;
}

/* lora_id: int or nil. */
static int read_lora_id(struct sy_cursor *c, struct sbd_kv_event *ev)
{
	if (read_nil(c))
		return EV_OK;
	ev->has_lora_id = sy_mp_read_i64(c, &ev->lora_id);
	return ev->has_lora_id ? EV_OK : EV_BAD;
}

/* lora_name: str or nil (borrowed span of the payload). */
static int read_lora_name(struct sy_cursor *c, struct sbd_kv_event *ev)
{
	if (read_nil(c))
		return EV_OK;
	ev->has_lora_name = sy_mp_read_str(c, &ev->lora_name, &ev->lora_name_len);
	return ev->has_lora_name ? EV_OK : EV_BAD;
}

/* extra_keys: nil, or an array (one entry per block): kept as its raw bytes
 * (validated by skipping it). */
static int read_extra_keys(struct sy_cursor *c, struct sbd_kv_event *ev)
{
	if (read_nil(c))
		return EV_OK;
	if (sy_mp_peek(c) != SY_MP_ARRAY)
		return EV_BAD;
	const uint8_t *start = c->pos;
	if (!sy_mp_skip(c))
		return EV_BAD;
	ev->extra_keys = start;
	ev->extra_keys_len = (uint32_t)(c->pos - start);
	return EV_OK;
}

/* An int ≥ 0 into *out, or nil (*out left as it is). */
static int read_nonneg(struct sy_cursor *c, int64_t *out)
{
	if (read_nil(c))
		return EV_OK;
	int64_t v;
	if (!sy_mp_read_i64(c, &v) || v < 0)
		return EV_BAD;
	*out = v;
	return EV_OK;
}

/* group_idx: int ≥ 0 or nil. */
static int read_group(struct sy_cursor *c, struct sbd_kv_event *ev)
{
	return read_nonneg(c, &ev->group_idx);
}

/* block_size: int ≥ 0 or nil. */
static int read_block_size(struct sy_cursor *c, struct sbd_kv_event *ev)
{
	return read_nonneg(c, &ev->block_size);
}

static int read_medium(struct sy_cursor *c, struct sbd_kv_event *ev)
{
	if (read_nil(c)) {
		ev->medium = SBD_MEDIUM_ABSENT;
		return EV_OK;
	}
	const uint8_t *p;
	uint32_t len;
	if (!sy_mp_read_str(c, &p, &len))
		return EV_BAD;
	static const struct { const char *s; uint8_t m; } map[] = {
		{"GPU", SBD_MEDIUM_GPU},	 {"CPU_PINNED", SBD_MEDIUM_CPU_PINNED},
		{"CPU", SBD_MEDIUM_CPU},	 {"DISK", SBD_MEDIUM_DISK},
		{"EXTERNAL", SBD_MEDIUM_EXTERNAL},
	};
	ev->medium = SBD_MEDIUM_UNKNOWN;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (sy_mp_str_eq(p, len, map[i].s))
			ev->medium = map[i].m;
	return EV_OK;
}

static int tag_type(const uint8_t *p, uint32_t len)
{
	if (sy_mp_str_eq(p, len, "BlockStored"))
		return SBD_EV_STORED;
	if (sy_mp_str_eq(p, len, "BlockRemoved"))
		return SBD_EV_REMOVED;
	if (sy_mp_str_eq(p, len, "AllBlocksCleared"))
		return SBD_EV_CLEARED;
	return 0;
}

#define TRY(x)                          \
	do {                            \
		int rc_ = (x);          \
		if (rc_ != EV_OK)       \
			return rc_;     \
	} while (0)

/* Older form: [tag, ...positions] (sglang-wire.md §5.1). */
static int decode_array_event(struct kv_ctx *k, struct sy_cursor *c, struct sbd_kv_event *ev)
{
	uint32_t n;
	const uint8_t *tag;
	uint32_t tlen;
	if (!sy_mp_read_array(c, &n) || n == 0 || !sy_mp_read_str(c, &tag, &tlen))
		return EV_BAD;
	int type = tag_type(tag, tlen);
	if (type == 0)
		return EV_UNKNOWN_TAG;
	ev->type = (uint8_t)type;
	if (type == SBD_EV_STORED) {
		if (n < 3)
			return EV_BAD;
		TRY(read_hashes(k, c, ev));
		TRY(read_parent(c, ev));
		if (n > 3)
			TRY(read_tokens(k, c, ev));
		if (n > 4)
			TRY(read_block_size(c, ev));
		if (n > 5)
			TRY(read_lora_id(c, ev));
		if (n > 6)
			TRY(read_medium(c, ev));
		/* vLLM continues: lora_name, extra_keys, group_idx, ... */
		if (n > 7)
			TRY(read_lora_name(c, ev));
		if (n > 8)
			TRY(read_extra_keys(c, ev));
		if (n > 9)
			TRY(read_group(c, ev));
	} else if (type == SBD_EV_REMOVED) {
		if (n < 2)
			return EV_BAD;
		TRY(read_hashes(k, c, ev));
		if (n > 2)
			TRY(read_medium(c, ev));
		if (n > 3)
			TRY(read_group(c, ev));
	}
	/* Further positions (kv_cache_spec_*, ...) are ignored: the caller's
	 * cursor already spans the whole event. */
	return EV_OK;
}

/* Newer form: map with "type" (sglang-wire.md §5.2); unknown keys skipped. */
static int decode_map_event(struct kv_ctx *k, struct sy_cursor *c, struct sbd_kv_event *ev)
{
	uint32_t n;
	if (!sy_mp_read_map(c, &n))
		return EV_BAD;
	bool has_type = false, has_hashes = false;
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *key;
		uint32_t klen;
		if (!sy_mp_read_str(c, &key, &klen))
			return EV_BAD;
		if (sy_mp_str_eq(key, klen, "type")) {
			const uint8_t *tag;
			uint32_t tlen;
			if (!sy_mp_read_str(c, &tag, &tlen))
				return EV_BAD;
			int type = tag_type(tag, tlen);
			if (type == 0)
				return EV_UNKNOWN_TAG;
			ev->type = (uint8_t)type;
			has_type = true;
		} else if (sy_mp_str_eq(key, klen, "block_hashes")) {
			if (has_hashes)
				return EV_BAD;
			TRY(read_hashes(k, c, ev));
			has_hashes = true;
		} else if (sy_mp_str_eq(key, klen, "parent_block_hash")) {
			TRY(read_parent(c, ev));
		} else if (sy_mp_str_eq(key, klen, "token_ids")) {
			TRY(read_tokens(k, c, ev));
		} else if (sy_mp_str_eq(key, klen, "lora_id")) {
			TRY(read_lora_id(c, ev));
		} else if (sy_mp_str_eq(key, klen, "lora_name")) {
			TRY(read_lora_name(c, ev));
		} else if (sy_mp_str_eq(key, klen, "extra_keys")) {
			TRY(read_extra_keys(c, ev));
		} else if (sy_mp_str_eq(key, klen, "group_idx")) {
			TRY(read_group(c, ev));
		} else if (sy_mp_str_eq(key, klen, "block_size")) {
			TRY(read_block_size(c, ev));
		} else if (sy_mp_str_eq(key, klen, "medium")) {
			TRY(read_medium(c, ev));
		} else if (!sy_mp_skip(c)) { /* cache_salt, kv_cache_spec_*, anything new */
			return EV_BAD;
		}
	}
	if (!has_type)
		return EV_BAD;
	if (ev->type != SBD_EV_CLEARED && !has_hashes)
		return EV_BAD;
	return EV_OK;
}

/* Decodes the events array (cursor at its header). */
static int decode_events(struct kv_ctx *k, struct sy_cursor *c, struct sbd_kv_batch *out)
{
	uint32_t n;
	if (!sy_mp_read_array(c, &n))
		return c->err ? c->err : SY_EMALFORMED;
	/* n ≤ bytes left (checked by the reader), so this is bounded by len. */
	if (sy_grow((void **)&k->d->events, &k->d->events_cap, n ? n : 1, sizeof(struct sbd_kv_event)))
		return SY_ENOMEM;
	uint32_t kept = 0;
	for (uint32_t i = 0; i < n; i++) {
		/* Extent of the event: skipping validates its msgpack. */
		struct sy_cursor probe = *c;
		if (!sy_mp_skip(&probe))
			return probe.err ? probe.err : SY_EMALFORMED;
		struct sy_cursor ec = sy_cursor_init(c->pos, (size_t)(probe.pos - c->pos));
		*c = probe;
		struct sbd_kv_event ev = {.block_size = -1, .group_idx = -1};
		size_t mark = k->n_hashes, tmark = k->n_tokens;
		int rc;
		enum sy_mp_type t = sy_mp_peek(&ec);
		if (t == SY_MP_ARRAY)
			rc = decode_array_event(k, &ec, &ev);
		else if (t == SY_MP_MAP)
			rc = decode_map_event(k, &ec, &ev);
		else
			rc = EV_BAD;
		if (rc < 0)
			return SY_ENOMEM;
		if (rc != EV_OK) {
			k->n_hashes = mark; /* drop what the bad event decoded */
			k->n_tokens = tmark;
			if (rc == EV_UNKNOWN_TAG)
				out->unknown_tags++;
			else if (rc == EV_OVERSIZED)
				out->oversized_events++;
			else
				out->bad_events++;
			continue;
		}
		if (ev.tokens_dropped)
			out->tokens_dropped++;
		k->d->events[kept++] = ev;
	}
	out->n_events = kept;
	return SY_OK;
}

/* Batch as array [ts, events, rank, ...] (sglang-wire.md §4). */
static int decode_array_batch(struct kv_ctx *k, struct sy_cursor *c, struct sbd_kv_batch *out)
{
	uint32_t n;
	if (!sy_mp_read_array(c, &n) || n < 2)
		return SY_EMALFORMED;
	if (!sy_mp_read_number(c, &out->ts))
		return SY_EMALFORMED;
	int rc = decode_events(k, c, out);
	if (rc != SY_OK)
		return rc;
	for (uint32_t i = 2; i < n; i++) {
		if (i == 2 && sy_mp_peek(c) == SY_MP_INT) {
			out->has_rank = sy_mp_read_i64(c, &out->rank);
		} else if (!sy_mp_skip(c)) {
			return c->err ? c->err : SY_EMALFORMED;
		}
	}
	return SY_OK;
}

/* Batch as map {ts, events, data_parallel_rank | attn_dp_rank} (tolerated). */
static int decode_map_batch(struct kv_ctx *k, struct sy_cursor *c, struct sbd_kv_batch *out)
{
	uint32_t n;
	if (!sy_mp_read_map(c, &n))
		return SY_EMALFORMED;
	bool has_events = false;
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *key;
		uint32_t klen;
		if (!sy_mp_read_str(c, &key, &klen))
			return SY_EMALFORMED;
		if (sy_mp_str_eq(key, klen, "events") && !has_events) {
			int rc = decode_events(k, c, out);
			if (rc != SY_OK)
				return rc;
			has_events = true;
		} else if (sy_mp_str_eq(key, klen, "ts") && sy_mp_peek(c) != SY_MP_NIL) {
			if (!sy_mp_read_number(c, &out->ts))
				return SY_EMALFORMED;
		} else if ((sy_mp_str_eq(key, klen, "data_parallel_rank") ||
			    sy_mp_str_eq(key, klen, "attn_dp_rank")) && sy_mp_peek(c) == SY_MP_INT) {
			out->has_rank = sy_mp_read_i64(c, &out->rank);
		} else if (!sy_mp_skip(c)) {
			return c->err ? c->err : SY_EMALFORMED;
		}
	}
	return has_events ? SY_OK : SY_EMALFORMED;
}

int sbd_kv_decode(struct sbd_kv_decoder *d, const uint8_t *buf, size_t len,
		  struct sbd_kv_batch *out)
{
	memset(out, 0, sizeof(*out));
	if (buf == NULL && len > 0)
		return SY_EINVAL;
	struct kv_ctx k = {d, 0, 0};
	struct sy_cursor c = sy_cursor_init(buf, len);
	int rc;
	enum sy_mp_type t = sy_mp_peek(&c);
	if (t == SY_MP_ARRAY)
		rc = decode_array_batch(&k, &c, out);
	else if (t == SY_MP_MAP)
		rc = decode_map_batch(&k, &c, out);
	else
		rc = len == 0 ? SY_ETRUNC : SY_EMALFORMED;
	if (rc == SY_OK && c.err)
		rc = c.err;
	if (rc == SY_OK && sy_cursor_avail(&c) != 0)
		rc = SY_EMALFORMED; /* trailing bytes: not one msgpack value */
	if (rc != SY_OK) {
		memset(out, 0, sizeof(*out));
		return rc == SY_ETRUNC || rc == SY_ENOMEM ? rc : SY_EMALFORMED;
	}
	/* Offsets → pointers, now that scratch no longer moves. */
	for (uint32_t i = 0; i < out->n_events; i++) {
		struct sbd_kv_event *ev = &d->events[i];
		ev->hashes = ev->n_hashes ? d->hashes + (uintptr_t)ev->hashes : NULL;
		ev->tokens = ev->n_tokens ? d->tokens + (uintptr_t)ev->tokens : NULL;
	}
	out->events = d->events;
	return SY_OK;
}
