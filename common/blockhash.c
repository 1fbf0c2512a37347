/* blockhash.c — the SGLang block-hash chain (see blockhash.h).
 *
 * Speed (DESIGN.md §8): prompt hashing is the largest per-request cost of
 * cache-aware routing, so this file uses OpenSSL's low-level SHA-256 API
 * (SHA256_Transform, SHA256_Init/Update/Final) on a stack context: no EVP
 * fetch, no allocation per page. It is deprecated in OpenSSL 3, hence
 * OPENSSL_API_COMPAT here and only here.
 *
 * Fast path (pages whose padded message fits PAGE_BUF bytes: up to 245
 * unigram or 122 bigram units after a previous digest): the whole SHA-256
 * message — previous digest, units as LE u32, 0x80, zeros, 64-bit BE bit
 * length (FIPS 180-4 §5.1.1) — is laid out once in a stack buffer and run
 * through SHA256_Transform block by block, from a context whose state words
 * are copied from the IV; the digest is read from the public SHA256_CTX.h[]
 * words. This skips Update/Final's staging copies and the store-forwarding
 * stalls of SHA256_Init's scalar stores; at 16-token pages (2 blocks per
 * page: 32 + 64 bytes + padding) it measured 15–25% faster than
 * Init/Update/Final, close to the cost of the 512 SHA-256 blocks alone.
 * Slow path (bigger pages): Init/Update/Final; on a little-endian host a
 * unigram page is already its own wire encoding and is fed in place,
 * otherwise units are packed as LE u32 into a stack buffer, a chunk at a time.
 * test_blockhash.c sweeps block sizes 1..512 across both paths and every
 * padding boundary against an independent EVP one-shot reference.
 */
#define OPENSSL_API_COMPAT 0x10100000L

#include "common/blockhash.h"

#include <limits.h>
#include <string.h>

#include <openssl/sha.h>

#include "common/errors.h"

_Static_assert(SHA256_DIGEST_LENGTH == SY_BLOCKHASH_DIGEST_LEN,
	       "page digest is a SHA-256 digest");

#define SALT_DOMAIN "sglang-cache-salt-v1"
#define LORA_DOMAIN "switchyard-lora-v1"
#define EXTRA_DOMAIN "switchyard-extra-v1"

/* Tokens packed per SHA256_Update when a copy is needed (1 KiB of stack). */
#define PACK_TOKENS 256

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_IS_LE 1
#else
#define HOST_IS_LE 0
#endif

static inline uint32_t to_le32(uint32_t v)
{
#if HOST_IS_LE
	return v;
#else
	return __builtin_bswap32(v);
#endif
}

void sy_blockhash_salt_seed(const void *salt, size_t salt_len,
			    struct sy_blockhash_digest *out)
{
	static const uint8_t zero = 0;
	SHA256_CTX ctx;

	SHA256_Init(&ctx);
	SHA256_Update(&ctx, SALT_DOMAIN, sizeof(SALT_DOMAIN) - 1);
	SHA256_Update(&ctx, &zero, 1);
	if (salt_len)
		SHA256_Update(&ctx, salt, salt_len);
	SHA256_Final(out->b, &ctx);
}

void sy_blockhash_lora_seed(const void *name, size_t len, struct sy_blockhash_digest *out)
{
	static const uint8_t zero = 0;
	SHA256_CTX ctx;

	SHA256_Init(&ctx);
	SHA256_Update(&ctx, LORA_DOMAIN, sizeof(LORA_DOMAIN) - 1);
	SHA256_Update(&ctx, &zero, 1);
	if (len)
		SHA256_Update(&ctx, name, len);
	SHA256_Final(out->b, &ctx);
}

void sy_blockhash_fold(const struct sy_blockhash_digest *d, const void *bytes, size_t len,
		       struct sy_blockhash_digest *out)
{
	static const uint8_t zero = 0;
	SHA256_CTX ctx;

	SHA256_Init(&ctx);
	SHA256_Update(&ctx, d->b, sizeof(d->b));
	SHA256_Update(&ctx, EXTRA_DOMAIN, sizeof(EXTRA_DOMAIN) - 1);
	SHA256_Update(&ctx, &zero, 1);
	if (len)
		SHA256_Update(&ctx, bytes, len);
	SHA256_Final(out->b, &ctx);
}

int sy_blockhash_params_init(struct sy_blockhash_params *p, uint32_t block_size,
			     bool bigram, const void *salt, size_t salt_len)
{
	if (!p || block_size == 0 || (!salt && salt_len))
		return SY_EINVAL;
	memset(p, 0, sizeof *p);
	p->block_size = block_size;
	p->bigram = bigram;
	if (salt_len) {
		p->has_seed = true;
		sy_blockhash_salt_seed(salt, salt_len, &p->seed);
	}
	return SY_OK;
}

size_t sy_blockhash_count(size_t n_tokens, uint32_t block_size, bool bigram)
{
	if (block_size == 0)
		return 0;
	size_t units = n_tokens;
	if (bigram)
		units = n_tokens < 2 ? 0 : n_tokens - 1;
	return units / block_size + (units % block_size != 0);
}

/* Feeds units [0, n_units) of one page into ctx as LE u32 words. */
static void feed_units(SHA256_CTX *ctx, const uint32_t *t, size_t n_units,
		       bool bigram)
{
	if (!bigram && HOST_IS_LE) {
		SHA256_Update(ctx, t, n_units * sizeof(uint32_t));
		return;
	}
	uint32_t buf[PACK_TOKENS];
	size_t per = bigram ? PACK_TOKENS / 2 : PACK_TOKENS; /* units per chunk */
	for (size_t j = 0; j < n_units;) {
		size_t m = n_units - j < per ? n_units - j : per;
		size_t w = 0;
		if (bigram) {
			for (size_t u = 0; u < m; u++) {
				buf[w++] = to_le32(t[j + u]);
				buf[w++] = to_le32(t[j + u + 1]);
			}
		} else {
			for (size_t u = 0; u < m; u++)
				buf[w++] = to_le32(t[j + u]);
		}
		SHA256_Update(ctx, buf, w * sizeof(uint32_t));
		j += m;
	}
}

/* Bytes of the stack buffer holding one padded page message (fast path). */
#define PAGE_BUF 1024
_Static_assert(PAGE_BUF >= 128 && PAGE_BUF % 64 == 0, "page_fast zeroes 128-byte tails");

static inline void store_le32(uint8_t *p, uint32_t v)
{
	v = to_le32(v);
	memcpy(p, &v, 4);
}

static inline void store_be32(uint8_t *p, uint32_t v)
{
#if HOST_IS_LE
	v = __builtin_bswap32(v);
#endif
	memcpy(p, &v, 4);
}

/* SHA-256 initial hash value H(0), FIPS 180-4 §5.3.3. Copied into the
 * context as whole words (not SHA256_Init's scalar stores) so that the
 * SHA-NI code's 16-byte state loads forward from the stores. */
static const SHA_LONG sha256_iv[8] = {
	0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
	0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};
_Static_assert(sizeof(SHA_LONG) == 4, "SHA256_CTX.h holds 32-bit words");

/* Hashes one page by laying out the padded message itself; returns false
 * (and does nothing) when the message does not fit PAGE_BUF. */
static bool page_fast(const struct sy_blockhash_digest *prev,
		      const uint32_t *t, size_t n_units, bool bigram,
		      struct sy_blockhash_digest *out)
{
	size_t unit_bytes = bigram ? 8 : 4;
	size_t head = prev ? SY_BLOCKHASH_DIGEST_LEN : 0;
	if (n_units > (PAGE_BUF - head - 9) / unit_bytes)
		return false;
	size_t msg = head + n_units * unit_bytes;
	size_t padded = (msg + 9 + 63) & ~(size_t)63;
	uint8_t buf[PAGE_BUF] __attribute__((aligned(64)));

	/* Zero the tail first (constant size: no rep stos); the message below
	 * overwrites whatever of it is not padding. The zero run starts at
	 * msg + 1 > padded − 72, so the last 128 bytes cover it (padded ≥ 64,
	 * and PAGE_BUF ≥ 128 keeps buf + z + 128 inside buf). */
	size_t z = padded >= 128 ? padded - 128 : 0;
	memset(buf + z, 0, 128);
	if (prev)
		memcpy(buf, prev->b, SY_BLOCKHASH_DIGEST_LEN);
	uint8_t *w = buf + head;
	if (!bigram && HOST_IS_LE) {
		if (n_units)
			memcpy(w, t, n_units * 4);
	} else if (!bigram) {
		for (size_t j = 0; j < n_units; j++, w += 4)
			store_le32(w, t[j]);
	} else {
		for (size_t j = 0; j < n_units; j++, w += 8) {
			store_le32(w, t[j]);
			store_le32(w + 4, t[j + 1]);
		}
	}
	buf[msg] = 0x80;
	uint64_t bits = (uint64_t)msg * 8;
	store_be32(buf + padded - 8, (uint32_t)(bits >> 32));
	store_be32(buf + padded - 4, (uint32_t)bits);

	SHA256_CTX ctx;
	memcpy(ctx.h, sha256_iv, sizeof sha256_iv);
	for (size_t off = 0; off < padded; off += 64)
		SHA256_Transform(&ctx, buf + off);
	uint32_t h[8];
	for (int i = 0; i < 8; i++)
		store_be32((uint8_t *)&h[i], ctx.h[i]);
	memcpy(out->b, h, sizeof h);
	return true;
}

void sy_blockhash_page(const struct sy_blockhash_digest *prev,
		       const uint32_t *tokens, size_t n_units, bool bigram,
		       struct sy_blockhash_digest *out)
{
	if (page_fast(prev, tokens, n_units, bigram, out))
		return;

	SHA256_CTX ctx;

	SHA256_Init(&ctx);
	if (prev)
		SHA256_Update(&ctx, prev->b, sizeof prev->b);
	if (n_units)
		feed_units(&ctx, tokens, n_units, bigram);
	SHA256_Final(out->b, &ctx); /* prev already consumed: out may alias it */
}

ssize_t sy_blockhash_chain(const uint32_t *tokens, size_t n,
			   const struct sy_blockhash_params *p, int64_t *ids,
			   size_t cap, struct sy_blockhash_digest *digests)
{
	if (!p || p->block_size == 0 || (!tokens && n) || (!ids && cap))
		return SY_EINVAL;
	size_t pages = sy_blockhash_count(n, p->block_size, p->bigram);
	if (pages > cap)
		return SY_ENOSPC;
	if (pages > (size_t)SSIZE_MAX)
		return SY_ERANGE;
	if (pages == 0)
		return 0;

	size_t units = p->bigram ? n - 1 : n;
	size_t bs = p->block_size;
	struct sy_blockhash_digest cur;
	const struct sy_blockhash_digest *prev = p->has_seed ? &p->seed : NULL;

	for (size_t k = 0, off = 0; k < pages; k++, off += bs) {
		size_t nu = units - off < bs ? units - off : bs;
		sy_blockhash_page(prev, tokens + off, nu, p->bigram, &cur);
		ids[k] = sy_blockhash_id(&cur);
		if (digests)
			digests[k] = cur;
		prev = &cur;
	}
	return (ssize_t)pages;
}
