/* mpcursor.h — bounds-checked msgpack reader on a sy_cursor.
 *
 * Hand-rolled instead of msgpack-c's unpacker because msgpack-c allocates
 * for an array or map header before it knows whether the bytes exist (a
 * forged 5-byte header makes it try ~96 GB, sglang-wire.md §6). Here every
 * container length is checked against the bytes left before anything is
 * trusted: an array of n elements needs ≥ n bytes, a map ≥ 2n, a str/bin/
 * ext its length. Nothing is allocated; strings and bins are borrowed spans
 * of the input. Integers are decoded by value whatever their encoding
 * (fixint, uint8..64, int8..64; sglang-wire.md conventions); a uint64 above
 * INT64_MAX is reinterpreted as the same 64 bits (SGLang/vLLM hash ids).
 * Errors are sticky on the cursor (SY_ETRUNC: ran out of bytes,
 * SY_EMALFORMED: wrong type, reserved byte 0xc1, a length over the bytes
 * left, nesting deeper than SY_MP_MAX_DEPTH).
 */
#ifndef SY_COMMON_MPCURSOR_H
#define SY_COMMON_MPCURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cursor.h"

#define SY_MP_MAX_DEPTH 32 /* nesting levels sy_mp_skip() accepts */

enum sy_mp_type {
	SY_MP_NONE = 0, /* end of input or error */
	SY_MP_NIL,
	SY_MP_BOOL,
	SY_MP_INT,      /* any integer encoding */
	SY_MP_FLOAT,    /* float32 or float64 */
	SY_MP_STR,
	SY_MP_BIN,
	SY_MP_ARRAY,
	SY_MP_MAP,
	SY_MP_EXT,
	SY_MP_INVALID,  /* 0xc1 (never used) */
};

/* Type of the next value without consuming it (SY_MP_NONE at the end or
 * after an error). */
enum sy_mp_type sy_mp_peek(const struct sy_cursor *c);

/* Readers: each consumes one value of the named type; on a type mismatch
 * it sets SY_EMALFORMED and consumes nothing. Return true on success. */
bool sy_mp_read_nil(struct sy_cursor *c);
/* Integer as i64 (uint64 > INT64_MAX reinterpreted bit for bit). */
bool sy_mp_read_i64(struct sy_cursor *c, int64_t *out);
/* Integer ≥ 0 (a negative integer is SY_EMALFORMED). */
bool sy_mp_read_u64(struct sy_cursor *c, uint64_t *out);
/* Integer or float as a double. */
bool sy_mp_read_number(struct sy_cursor *c, double *out);
/* str: *p borrows the bytes (not NUL-terminated), *len their count. */
bool sy_mp_read_str(struct sy_cursor *c, const uint8_t **p, uint32_t *len);
bool sy_mp_read_bin(struct sy_cursor *c, const uint8_t **p, uint32_t *len);
/* Container headers: *n elements (array) or key/value pairs (map), already
 * checked against the bytes left. */
bool sy_mp_read_array(struct sy_cursor *c, uint32_t *n);
bool sy_mp_read_map(struct sy_cursor *c, uint32_t *n);

/* Skips one whole value, recursing at most SY_MP_MAX_DEPTH levels. Work is
 * bounded by the input length (every element consumes ≥ 1 byte). */
bool sy_mp_skip(struct sy_cursor *c);

/* True when the `len` bytes at p equal the NUL-terminated `s`. */
bool sy_mp_str_eq(const uint8_t *p, uint32_t len, const char *s);

#endif
