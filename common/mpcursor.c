/* mpcursor.c — bounds-checked msgpack reader (see mpcursor.h).
 *
 * Marker bytes (msgpack spec): 0x00-0x7f positive fixint, 0x80-0x8f fixmap,
 * 0x90-0x9f fixarray, 0xa0-0xbf fixstr, 0xc0 nil, 0xc2/0xc3 bool, 0xc4-0xc6
 * bin8/16/32, 0xc7-0xc9 ext8/16/32, 0xca/0xcb float32/64, 0xcc-0xcf
 * uint8..64, 0xd0-0xd3 int8..64, 0xd4-0xd8 fixext, 0xd9-0xdb str8/16/32,
 * 0xdc/0xdd array16/32, 0xde/0xdf map16/32, 0xe0-0xff negative fixint.
 */
#include "common/mpcursor.h"

#include <string.h>

enum sy_mp_type sy_mp_peek(const struct sy_cursor *c)
{
	if (c->err || c->pos >= c->end)
		return SY_MP_NONE;
	uint8_t b = *c->pos;
	if (b <= 0x7f || b >= 0xe0)
		return SY_MP_INT;
	if (b <= 0x8f)
		return SY_MP_MAP;
	if (b <= 0x9f)
		return SY_MP_ARRAY;
	if (b <= 0xbf)
		return SY_MP_STR;
	switch (b) {
	case 0xc0: return SY_MP_NIL;
	case 0xc1: return SY_MP_INVALID;
	case 0xc2: case 0xc3: return SY_MP_BOOL;
	case 0xc4: case 0xc5: case 0xc6: return SY_MP_BIN;
	case 0xc7: case 0xc8: case 0xc9: return SY_MP_EXT;
	case 0xca: case 0xcb: return SY_MP_FLOAT;
	case 0xd9: case 0xda: case 0xdb: return SY_MP_STR;
	case 0xdc: case 0xdd: return SY_MP_ARRAY;
	case 0xde: case 0xdf: return SY_MP_MAP;
	case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8: return SY_MP_EXT;
	default: return SY_MP_INT; /* 0xcc-0xd3 */
	}
}

static bool mismatch(struct sy_cursor *c)
{
	sy_cursor_fail(c, c->pos >= c->end ? SY_ETRUNC : SY_EMALFORMED);
	return false;
}

bool sy_mp_read_nil(struct sy_cursor *c)
{
	if (sy_mp_peek(c) != SY_MP_NIL)
		return mismatch(c);
	c->pos++;
	return true;
}

/* Reads an integer; *neg tells whether it came from a signed encoding with
 * a negative value (so u64 and i64 readers can both use it). */
static bool read_int(struct sy_cursor *c, uint64_t *bits, bool *neg)
{
	if (sy_mp_peek(c) != SY_MP_INT)
		return mismatch(c);
	uint8_t b = sy_cursor_u8(c);
	int64_t s;
	*neg = false;
	if (b <= 0x7f) {
		*bits = b;
		return true;
	}
	if (b >= 0xe0) {
		s = (int8_t)b;
		goto sgn;
	}
	switch (b) {
	case 0xcc: *bits = sy_cursor_u8(c); break;
	case 0xcd: *bits = sy_cursor_u16be(c); break;
	case 0xce: *bits = sy_cursor_u32be(c); break;
	case 0xcf: *bits = sy_cursor_u64be(c); break;
	case 0xd0: s = (int8_t)sy_cursor_u8(c); goto sgn;
	case 0xd1: s = (int16_t)sy_cursor_u16be(c); goto sgn;
	case 0xd2: s = (int32_t)sy_cursor_u32be(c); goto sgn;
	default:   s = (int64_t)sy_cursor_u64be(c); goto sgn; /* 0xd3 */
	}
	return c->err == SY_OK;
sgn:
	*bits = (uint64_t)s;
	*neg = s < 0;
	return c->err == SY_OK;
}

bool sy_mp_read_i64(struct sy_cursor *c, int64_t *out)
{
	uint64_t bits;
	bool neg;
	if (!read_int(c, &bits, &neg))
		return false;
	*out = (int64_t)bits; /* two's complement reinterpretation, by design */
	return true;
}

bool sy_mp_read_u64(struct sy_cursor *c, uint64_t *out)
{
	uint64_t bits;
	bool neg;
	if (!read_int(c, &bits, &neg))
		return false;
	if (neg) {
		sy_cursor_fail(c, SY_EMALFORMED);
		return false;
	}
	*out = bits;
	return true;
}

bool sy_mp_read_number(struct sy_cursor *c, double *out)
{
	enum sy_mp_type t = sy_mp_peek(c);
	if (t == SY_MP_INT) {
		uint64_t bits;
		bool neg;
		if (!read_int(c, &bits, &neg))
			return false;
		*out = neg ? (double)(int64_t)bits : (double)bits;
		return true;
	}
	if (t != SY_MP_FLOAT)
		return mismatch(c);
	uint8_t b = sy_cursor_u8(c);
	if (b == 0xca) {
		uint32_t u = sy_cursor_u32be(c);
		float f;
		memcpy(&f, &u, sizeof(f));
		*out = f;
	} else {
		uint64_t u = sy_cursor_u64be(c);
		memcpy(out, &u, sizeof(*out));
	}
	return c->err == SY_OK;
}

/* Length of a str/bin/ext body, checked against the bytes left. */
static bool body(struct sy_cursor *c, uint32_t len, const uint8_t **p)
{
	*p = sy_cursor_span(c, len);
	return c->err == SY_OK;
}

static bool read_span(struct sy_cursor *c, enum sy_mp_type want, const uint8_t **p, uint32_t *len)
{
	if (sy_mp_peek(c) != want)
		return mismatch(c);
	uint8_t b = sy_cursor_u8(c);
	if (b >= 0xa0 && b <= 0xbf)
		*len = b & 0x1fu;
	else if (b == 0xd9 || b == 0xc4)
		*len = sy_cursor_u8(c);
	else if (b == 0xda || b == 0xc5)
		*len = sy_cursor_u16be(c);
	else
		*len = sy_cursor_u32be(c);
	if (c->err)
		return false;
	return body(c, *len, p);
}

bool sy_mp_read_str(struct sy_cursor *c, const uint8_t **p, uint32_t *len)
{
	return read_span(c, SY_MP_STR, p, len);
}

bool sy_mp_read_bin(struct sy_cursor *c, const uint8_t **p, uint32_t *len)
{
	return read_span(c, SY_MP_BIN, p, len);
}

static bool read_container(struct sy_cursor *c, enum sy_mp_type want, uint32_t *n)
{
	if (sy_mp_peek(c) != want)
		return mismatch(c);
	uint8_t b = sy_cursor_u8(c);
	if (b <= 0x9f)
		*n = b & 0x0fu;
	else if (b == 0xdc || b == 0xde)
		*n = sy_cursor_u16be(c);
	else
		*n = sy_cursor_u32be(c);
	if (c->err)
		return false;
	/* Every element takes at least one byte: a header promising more
	 * elements than bytes left is a lie, refused before anyone trusts it. */
	uint64_t need = (uint64_t)*n * (want == SY_MP_MAP ? 2u : 1u);
	if (need > (uint64_t)(c->end - c->pos)) {
		sy_cursor_fail(c, SY_EMALFORMED);
		return false;
	}
	return true;
}

bool sy_mp_read_array(struct sy_cursor *c, uint32_t *n)
{
	return read_container(c, SY_MP_ARRAY, n);
}

bool sy_mp_read_map(struct sy_cursor *c, uint32_t *n)
{
	return read_container(c, SY_MP_MAP, n);
}

static bool skip_depth(struct sy_cursor *c, unsigned depth)
{
	if (depth > SY_MP_MAX_DEPTH) {
		sy_cursor_fail(c, SY_EMALFORMED);
		return false;
	}
	const uint8_t *p;
	uint32_t n;
	double d;
	int64_t i;
	switch (sy_mp_peek(c)) {
	case SY_MP_NIL:
	case SY_MP_BOOL:
		c->pos++;
		return true;
	case SY_MP_INT:
		return sy_mp_read_i64(c, &i);
	case SY_MP_FLOAT:
		return sy_mp_read_number(c, &d);
	case SY_MP_STR:
		return sy_mp_read_str(c, &p, &n);
	case SY_MP_BIN:
		return sy_mp_read_bin(c, &p, &n);
	case SY_MP_ARRAY:
	case SY_MP_MAP: {
		bool map = sy_mp_peek(c) == SY_MP_MAP;
		if (!(map ? sy_mp_read_map(c, &n) : sy_mp_read_array(c, &n)))
			return false;
		uint64_t items = (uint64_t)n * (map ? 2u : 1u);
		for (uint64_t k = 0; k < items; k++)
			if (!skip_depth(c, depth + 1))
				return false;
		return true;
	}
	case SY_MP_EXT: {
		uint8_t b = sy_cursor_u8(c);
		uint32_t len;
		switch (b) {
		case 0xd4: len = 1; break;
		case 0xd5: len = 2; break;
		case 0xd6: len = 4; break;
		case 0xd7: len = 8; break;
		case 0xd8: len = 16; break;
		case 0xc7: len = sy_cursor_u8(c); break;
		case 0xc8: len = sy_cursor_u16be(c); break;
		default:   len = sy_cursor_u32be(c); break;
		}
		sy_cursor_skip(c, 1); /* ext type byte */
		sy_cursor_skip(c, len);
		return c->err == SY_OK;
	}
	case SY_MP_INVALID:
		sy_cursor_fail(c, SY_EMALFORMED);
		return false;
	case SY_MP_NONE:
	default:
		sy_cursor_fail(c, SY_ETRUNC);
		return false;
	}
}

bool sy_mp_skip(struct sy_cursor *c)
{
	return skip_depth(c, 0);
}

bool sy_mp_str_eq(const uint8_t *p, uint32_t len, const char *s)
{
	size_t n = strlen(s);
	return n == len && (len == 0 || memcmp(p, s, n) == 0);
}
