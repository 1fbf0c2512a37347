/* blockhash.c — the SGLang block-hash chain (see blockhash.h).
 *
 * Speed (DESIGN.md §8): prompt hashing is the largest per-request cost of
 * cache-aware routing, so this file uses OpenSSL's low-level
 * SHA256_Init/Update/Final on a stack context (no EVP fetch, no allocation
 * per page). They are deprecated in OpenSSL 3, hence OPENSSL_API_COMPAT here
 * and only here. Tokens reach SHA-256 in as few Update calls as possible: on
 * a little-endian host a unigram page is already its own wire encoding and is
 * fed in place; otherwise (bigram pairs, big-endian hosts) units are packed
 * as LE u32 into a small stack buffer, a chunk at a time.
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

void sy_blockhash_page(const struct sy_blockhash_digest *prev,
		       const uint32_t *tokens, size_t n_units, bool bigram,
		       struct sy_blockhash_digest *out)
{
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
