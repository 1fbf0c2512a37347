/* kvev.c — KV event recording with SGLang's coalescing rules, and msgpack
 * encoding of a batch in both event encodings (see kvev.h). */
#include "common/grow.h"
#include "tools/mock-engine/kvev.h"

#include <openssl/evp.h>

#include <stdlib.h>
#include <string.h>

#include "common/errors.h"

static struct kvev *push_event(struct kvev_batch *b, enum kvev_type type)
{
	if (b->n == b->cap) {
		size_t nc = b->cap ? b->cap * 2 : 8;
		struct kvev *ne = realloc(b->ev, nc * sizeof(*ne));
		if (!ne)
			return NULL;
		memset(ne + b->cap, 0, (nc - b->cap) * sizeof(*ne));
		b->ev = ne;
		b->cap = nc;
	}
	struct kvev *e = &b->ev[b->n++];
	/* Slots are reused after a reset: keep their arrays, clear the rest. */
	e->type = type;
	e->n_hashes = 0;
	e->n_tokens = 0;
	e->has_parent = false;
	e->parent = 0;
	e->block_size = 0;
	return e;
}

static int append(struct kvev *e, const int64_t *hashes, size_t n, const uint32_t *tokens,
		  size_t ntok)
{
	if (sy_grow((void **)&e->hashes, &e->cap_hashes, e->n_hashes + n, sizeof(int64_t)) ||
	    sy_grow((void **)&e->tokens, &e->cap_tokens, e->n_tokens + ntok, sizeof(uint32_t)))
		return SY_ENOMEM;
	if (n)
		memcpy(e->hashes + e->n_hashes, hashes, n * sizeof(int64_t));
	if (ntok)
		memcpy(e->tokens + e->n_tokens, tokens, ntok * sizeof(uint32_t));
	e->n_hashes += n;
	e->n_tokens += ntok;
	return 0;
}

int kvev_batch_store(struct kvev_batch *b, bool has_parent, int64_t parent,
		     const int64_t *hashes, size_t n, const uint32_t *tokens, size_t ntok,
		     uint32_t block_size)
{
	if (n == 0)
		return 0;
	if (b->n > 0) {
		struct kvev *t = &b->ev[b->n - 1];
		if (t->type == KVEV_STORED && t->block_size == block_size && has_parent &&
		    t->lora == b->cur_lora &&
		    t->n_hashes > 0 && t->hashes[t->n_hashes - 1] == parent)
			return append(t, hashes, n, tokens, ntok);
	}
	struct kvev *e = push_event(b, KVEV_STORED);
	if (!e)
		return SY_ENOMEM;
	e->has_parent = has_parent;
	e->parent = parent;
	e->block_size = block_size;
	e->lora = b->cur_lora;
	int rc = append(e, hashes, n, tokens, ntok);
	if (rc)
		b->n--;
	return rc;
}

int kvev_batch_remove(struct kvev_batch *b, const int64_t *hashes, size_t n)
{
	if (n == 0)
		return 0;
	if (b->n > 0 && b->ev[b->n - 1].type == KVEV_REMOVED)
		return append(&b->ev[b->n - 1], hashes, n, NULL, 0);
	struct kvev *e = push_event(b, KVEV_REMOVED);
	if (!e)
		return SY_ENOMEM;
	int rc = append(e, hashes, n, NULL, 0);
	if (rc)
		b->n--;
	return rc;
}

int kvev_batch_clear(struct kvev_batch *b)
{
	return push_event(b, KVEV_CLEARED) ? 0 : SY_ENOMEM;
}

void kvev_batch_reset(struct kvev_batch *b) { b->n = 0; }

void kvev_batch_free(struct kvev_batch *b)
{
	for (size_t i = 0; i < b->cap; i++) {
		free(b->ev[i].hashes);
		free(b->ev[i].tokens);
	}
	free(b->ev);
	b->ev = NULL;
	b->n = b->cap = 0;
}

static void pack_cstr(msgpack_packer *pk, const char *s)
{
	size_t l = strlen(s);
	msgpack_pack_str(pk, l);
	msgpack_pack_str_body(pk, s, l);
}

static void pack_hashes(msgpack_packer *pk, const struct kvev *e)
{
	msgpack_pack_array(pk, e->n_hashes);
	for (size_t i = 0; i < e->n_hashes; i++)
		msgpack_pack_int64(pk, e->hashes[i]);
}

static void pack_tokens(msgpack_packer *pk, const struct kvev *e)
{
	msgpack_pack_array(pk, e->n_tokens);
	for (size_t i = 0; i < e->n_tokens; i++)
		msgpack_pack_uint32(pk, e->tokens[i]);
}

/* `s`, or nil where it is NULL. */
static void pack_cstr_or_nil(msgpack_packer *pk, const char *s)
{
	if (s)
		pack_cstr(pk, s);
	else
		msgpack_pack_nil(pk);
}

/* The map key "type" and its value `type`. */
static void pack_type(msgpack_packer *pk, const char *type)
{
	pack_cstr(pk, "type");
	pack_cstr(pk, type);
}

static void pack_array_event(msgpack_packer *pk, const struct kvev *e, const char *medium)
{
	switch (e->type) {
	case KVEV_STORED:
		msgpack_pack_array(pk, medium ? 7 : 6);
		pack_cstr(pk, "BlockStored");
		pack_hashes(pk, e);
		if (e->has_parent)
			msgpack_pack_int64(pk, e->parent);
		else
			msgpack_pack_nil(pk);
		pack_tokens(pk, e);
		msgpack_pack_uint32(pk, e->block_size);
		msgpack_pack_nil(pk); /* lora_id */
		if (medium)
			pack_cstr(pk, medium);
		break;
	case KVEV_REMOVED:
		msgpack_pack_array(pk, medium ? 3 : 2);
		pack_cstr(pk, "BlockRemoved");
		pack_hashes(pk, e);
		if (medium)
			pack_cstr(pk, medium);
		break;
	case KVEV_CLEARED:
		msgpack_pack_array(pk, 1);
		pack_cstr(pk, "AllBlocksCleared");
		break;
	}
}

static void pack_map_event(msgpack_packer *pk, const struct kvev *e, const char *medium)
{
	switch (e->type) {
	case KVEV_STORED:
		msgpack_pack_map(pk, medium ? 7 : 6);
		pack_type(pk, "BlockStored");
		pack_cstr(pk, "block_hashes");
		pack_hashes(pk, e);
		pack_cstr(pk, "parent_block_hash");
		if (e->has_parent)
			msgpack_pack_int64(pk, e->parent);
		else
			msgpack_pack_nil(pk);
		pack_cstr(pk, "token_ids");
		pack_tokens(pk, e);
		pack_cstr(pk, "block_size");
		msgpack_pack_uint32(pk, e->block_size);
		pack_cstr(pk, "lora_id");
		msgpack_pack_nil(pk);
		if (medium) {
			pack_cstr(pk, "medium");
			pack_cstr(pk, medium);
		}
		break;
	case KVEV_REMOVED:
		msgpack_pack_map(pk, medium ? 3 : 2);
		pack_type(pk, "BlockRemoved");
		pack_cstr(pk, "block_hashes");
		pack_hashes(pk, e);
		if (medium) {
			pack_cstr(pk, "medium");
			pack_cstr(pk, medium);
		}
		break;
	case KVEV_CLEARED:
		msgpack_pack_map(pk, 1);
		pack_type(pk, "AllBlocksCleared");
		break;
	}
}

void kvev_vllm_id(uint64_t seed, int64_t id, uint8_t out[32])
{
	static const char dom[] = "switchyard-mock-vllm-v1";
	uint8_t msg[sizeof(dom) - 1 + 16];
	memcpy(msg, dom, sizeof(dom) - 1);
	for (int i = 0; i < 8; i++) {
		msg[sizeof(dom) - 1 + i] = (uint8_t)(seed >> (56 - 8 * i));
		msg[sizeof(dom) - 1 + 8 + i] = (uint8_t)((uint64_t)id >> (56 - 8 * i));
	}
	unsigned int len = 32;
	(void)EVP_Digest(msg, sizeof(msg), out, &len, EVP_sha256(), NULL);
}

static void pack_vllm_id(msgpack_packer *pk, uint64_t seed, int64_t id)
{
	uint8_t b[32];
	kvev_vllm_id(seed, id, b);
	msgpack_pack_bin(pk, sizeof(b));
	msgpack_pack_bin_body(pk, b, sizeof(b));
}

static void pack_vllm_hashes(msgpack_packer *pk, const struct kvev *e, uint64_t seed)
{
	msgpack_pack_array(pk, e->n_hashes);
	for (size_t i = 0; i < e->n_hashes; i++)
		pack_vllm_id(pk, seed, e->hashes[i]);
}

static void pack_vllm_event(msgpack_packer *pk, const struct kvev *e, const struct kvev_batch *b)
{
	const char *medium = b->medium;
	switch (e->type) {
	case KVEV_STORED:
		msgpack_pack_map(pk, 8);
		pack_type(pk, "BlockStored");
		pack_cstr(pk, "block_hashes");
		pack_vllm_hashes(pk, e, b->vllm_seed);
		pack_cstr(pk, "parent_block_hash");
		if (e->has_parent)
			pack_vllm_id(pk, b->vllm_seed, e->parent);
		else
			msgpack_pack_nil(pk);
		pack_cstr(pk, "token_ids");
		pack_tokens(pk, e);
		pack_cstr(pk, "block_size");
		msgpack_pack_uint32(pk, e->block_size);
		pack_cstr(pk, "lora_id");
		if (e->lora > 0)
			msgpack_pack_int(pk, e->lora);
		else
			msgpack_pack_nil(pk);
		pack_cstr(pk, "medium");
		pack_cstr_or_nil(pk, medium);
		pack_cstr(pk, "lora_name");
		pack_cstr_or_nil(pk, e->lora > 0 && b->lora_names ? b->lora_names[e->lora - 1]
								   : NULL);
		break;
	case KVEV_REMOVED:
		msgpack_pack_map(pk, 3);
		pack_type(pk, "BlockRemoved");
		pack_cstr(pk, "block_hashes");
		pack_vllm_hashes(pk, e, b->vllm_seed);
		pack_cstr(pk, "medium");
		pack_cstr_or_nil(pk, medium);
		break;
	case KVEV_CLEARED:
		msgpack_pack_map(pk, 1);
		pack_type(pk, "AllBlocksCleared");
		break;
	}
}

/* Packer sink that remembers an allocation failure, so one check at the end
 * covers every pack call. */
struct sink {
	msgpack_sbuffer *sb;
	int failed;
};

static int sink_write(void *data, const char *buf, size_t len)
{
	struct sink *s = data;
	if (msgpack_sbuffer_write(s->sb, buf, len) != 0)
		s->failed = 1;
	return 0;
}

int kvev_encode(const struct kvev_batch *b, double ts, int rank, enum kvev_encoding enc,
		msgpack_sbuffer *out)
{
	struct sink sk = {out, 0};
	msgpack_packer pk;
	msgpack_packer_init(&pk, &sk, sink_write);
	if (enc == KVEV_ENC_VLLM) {
		msgpack_pack_map(&pk, 3);
		pack_cstr(&pk, "ts");
		msgpack_pack_double(&pk, ts);
		pack_cstr(&pk, "events");
		msgpack_pack_array(&pk, b->n);
		for (size_t i = 0; i < b->n; i++)
			pack_vllm_event(&pk, &b->ev[i], b);
		pack_cstr(&pk, "data_parallel_rank");
		if (rank < 0)
			msgpack_pack_nil(&pk);
		else
			msgpack_pack_int(&pk, rank);
		return sk.failed ? SY_ENOMEM : 0;
	}
	msgpack_pack_array(&pk, 3);
	msgpack_pack_double(&pk, ts);
	msgpack_pack_array(&pk, b->n);
	for (size_t i = 0; i < b->n; i++) {
		if (enc == KVEV_ENC_MAP)
			pack_map_event(&pk, &b->ev[i], b->medium);
		else
			pack_array_event(&pk, &b->ev[i], b->medium);
	}
	if (rank < 0)
		msgpack_pack_nil(&pk);
	else
		msgpack_pack_int(&pk, rank);
	return sk.failed ? SY_ENOMEM : 0;
}

int kvev_encoding_parse(const char *s, enum kvev_encoding *out)
{
	if (strcmp(s, "array") == 0)
		*out = KVEV_ENC_ARRAY;
	else if (strcmp(s, "map") == 0)
		*out = KVEV_ENC_MAP;
	else if (strcmp(s, "vllm") == 0)
		*out = KVEV_ENC_VLLM;
	else
		return SY_EINVAL;
	return 0;
}
