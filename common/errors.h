/* errors.h — switchyard error codes: errors are values.
 *
 * Convention (Knot DNS style): 0 is success, failures are small negative
 * integers from enum sy_err. Functions that can fail return int (or ssize_t
 * counts, with negative values being sy_err codes). sy_strerror() gives a
 * static, human-readable name for any code; unknown codes map to a generic
 * string, never NULL.
 */
#ifndef SY_COMMON_ERRORS_H
#define SY_COMMON_ERRORS_H

enum sy_err {
	SY_OK = 0,
	SY_ENOMEM = -1,       /* allocation failed */
	SY_EINVAL = -2,       /* invalid argument or value */
	SY_ERANGE = -3,       /* value out of range / overflow */
	SY_EMALFORMED = -4,   /* malformed input (wire, JSON, YAML, msgpack) */
	SY_ETRUNC = -5,       /* input ended early (cursor ran past the end) */
	SY_ENOSPC = -6,       /* fixed-capacity table or buffer is full */
	SY_ENOENT = -7,       /* not found */
	SY_EEXIST = -8,       /* already exists */
	SY_EVERSION = -9,     /* incompatible layout or protocol version */
	SY_EIO = -10,         /* system call failed (see errno in the log) */
	SY_EBUSY = -11,       /* resource busy / retry later */
	SY_ESTALE = -12,      /* record stale, torn or mid-write: reads as unknown */
	SY_ETIMEDOUT = -13,   /* timed out */
	SY_ECONFIG = -14,     /* invalid configuration */
	SY_EUNSUPPORTED = -15,/* feature or component not supported */
	SY_EPERM = -16,       /* not permitted: a file or socket of another owner,
	                         with unsafe permissions, or reached by a symlink */
	SY_ERR_MIN_ = -17,    /* sentinel: lowest code + 1 */
};

/* Static description of code `err` ("ok", "out of memory", ...). Never NULL. */
const char *sy_strerror(int err);

#endif
