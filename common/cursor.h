/* cursor.h — bounds-checked binary cursor with a sticky error.
 *
 * After Knot DNS's wire_ctx: every read checks the bytes left; the first
 * failure sets `err` (SY_ETRUNC) and every later read returns zero without
 * moving, so a parser reads a whole structure and checks `err` once at the
 * end. The cursor borrows the buffer [pos, end): it never owns or frees it,
 * and the buffer must outlive the cursor. Big-endian (network, SGLang seq8)
 * and little-endian (SGLang token bytes) readers are both provided.
 */
#ifndef SY_COMMON_CURSOR_H
#define SY_COMMON_CURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/errors.h"

struct sy_cursor {
	const uint8_t *start; /* first byte of the buffer */
	const uint8_t *pos;   /* next byte to read */
	const uint8_t *end;   /* one past the last byte */
	int err;              /* 0, or the first error met (sticky) */
};

/* Initialises a cursor over `len` bytes at `buf` (borrowed). */
static inline struct sy_cursor sy_cursor_init(const void *buf, size_t len)
{
	const uint8_t *b = (const uint8_t *)buf;
	struct sy_cursor c = {b, b, b + len, SY_OK};
	return c;
}

/* Bytes left to read (0 once an error is set). */
static inline size_t sy_cursor_avail(const struct sy_cursor *c)
{
	return c->err ? 0 : (size_t)(c->end - c->pos);
}

/* Bytes consumed so far from the start. */
static inline size_t sy_cursor_offset(const struct sy_cursor *c)
{
	return (size_t)(c->pos - c->start);
}

/* Sets the sticky error if none is set yet. */
static inline void sy_cursor_fail(struct sy_cursor *c, int err)
{
	if (c->err == SY_OK)
		c->err = err;
}

/* True when `n` more bytes can be read; sets SY_ETRUNC otherwise. */
static inline bool sy_cursor_need(struct sy_cursor *c, size_t n)
{
	if (c->err)
		return false;
	if ((size_t)(c->end - c->pos) < n) {
		c->err = SY_ETRUNC;
		return false;
	}
	return true;
}

/* Advances by `n` bytes. */
static inline void sy_cursor_skip(struct sy_cursor *c, size_t n)
{
	if (sy_cursor_need(c, n))
		c->pos += n;
}

/* Copies `n` bytes into `dst`; on failure `dst` is zero-filled. */
static inline void sy_cursor_read(struct sy_cursor *c, void *dst, size_t n)
{
	if (sy_cursor_need(c, n)) {
		memcpy(dst, c->pos, n);
		c->pos += n;
	} else if (n) {
		memset(dst, 0, n);
	}
}

/* Returns a pointer to the next `n` bytes (borrowed) and advances, or NULL. */
static inline const uint8_t *sy_cursor_span(struct sy_cursor *c, size_t n)
{
	if (!sy_cursor_need(c, n))
		return NULL;
	const uint8_t *p = c->pos;
	c->pos += n;
	return p;
}

static inline uint8_t sy_cursor_u8(struct sy_cursor *c)
{
	if (!sy_cursor_need(c, 1))
		return 0;
	return *c->pos++;
}

static inline uint16_t sy_cursor_u16be(struct sy_cursor *c)
{
	if (!sy_cursor_need(c, 2))
		return 0;
	uint16_t v = (uint16_t)((uint16_t)c->pos[0] << 8 | c->pos[1]);
	c->pos += 2;
	return v;
}

static inline uint32_t sy_cursor_u32be(struct sy_cursor *c)
{
	if (!sy_cursor_need(c, 4))
		return 0;
	uint32_t v = (uint32_t)c->pos[0] << 24 | (uint32_t)c->pos[1] << 16 |
		     (uint32_t)c->pos[2] << 8 | (uint32_t)c->pos[3];
	c->pos += 4;
	return v;
}

static inline uint64_t sy_cursor_u64be(struct sy_cursor *c)
{
	uint64_t hi = sy_cursor_u32be(c);
	uint64_t lo = sy_cursor_u32be(c);
	return c->err ? 0 : (hi << 32 | lo);
}

static inline uint32_t sy_cursor_u32le(struct sy_cursor *c)
{
	if (!sy_cursor_need(c, 4))
		return 0;
	uint32_t v = (uint32_t)c->pos[0] | (uint32_t)c->pos[1] << 8 |
		     (uint32_t)c->pos[2] << 16 | (uint32_t)c->pos[3] << 24;
	c->pos += 4;
	return v;
}

static inline uint64_t sy_cursor_u64le(struct sy_cursor *c)
{
	uint64_t lo = sy_cursor_u32le(c);
	uint64_t hi = sy_cursor_u32le(c);
	return c->err ? 0 : (hi << 32 | lo);
}

/* Store helpers for the same byte orders (no bounds: caller sized `p`). */
static inline void sy_put_u32le(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static inline void sy_put_u64be(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		p[i] = (uint8_t)v;
		v >>= 8;
	}
}

static inline uint64_t sy_get_u64be(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

#endif
