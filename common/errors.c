/* errors.c — one table of error names (see errors.h). */
#include "common/errors.h"

static const char *const sy_err_names[] = {
	[0] = "ok",
	[-SY_ENOMEM] = "out of memory",
	[-SY_EINVAL] = "invalid argument",
	[-SY_ERANGE] = "value out of range",
	[-SY_EMALFORMED] = "malformed input",
	[-SY_ETRUNC] = "input truncated",
	[-SY_ENOSPC] = "no space left in table",
	[-SY_ENOENT] = "not found",
	[-SY_EEXIST] = "already exists",
	[-SY_EVERSION] = "incompatible version",
	[-SY_EIO] = "system call failed",
	[-SY_EBUSY] = "busy",
	[-SY_ESTALE] = "stale or torn record",
	[-SY_ETIMEDOUT] = "timed out",
	[-SY_ECONFIG] = "invalid configuration",
	[-SY_EUNSUPPORTED] = "not supported",
	[-SY_EPERM] = "not permitted",
};

const char *sy_strerror(int err)
{
	if (err > 0 || err <= SY_ERR_MIN_)
		return "unknown error";
	return sy_err_names[-err];
}
