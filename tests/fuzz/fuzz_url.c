/* fuzz_url.c — fuzz target: bytes → sy_url_normalize.
 *
 * Properties: the output fits in len + 1 bytes, never exceeds the input
 * length, is NUL-terminated, and normalising it again changes nothing
 * (idempotence: a worker ID is its own normal form). A too-small buffer
 * yields SY_ENOSPC, never an overrun (ASan checks the exact-size heap copy).
 */
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/url.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	char *out = malloc(size + 1);
	if (out == NULL)
		return 0;
	int n = sy_url_normalize(in, size, out, size + 1, NULL);
	if (n >= 0) {
		if ((size_t)n > size || strlen(out) != (size_t)n)
			abort();
		char *again = malloc((size_t)n + 1);
		if (again == NULL)
			abort();
		int m = sy_url_normalize(out, (size_t)n, again, (size_t)n + 1, NULL);
		if (m != n || memcmp(again, out, (size_t)n) != 0)
			abort();
		/* One byte short of the result must be refused, not truncated. */
		if (n > 0 && sy_url_normalize(out, (size_t)n, again, (size_t)n, NULL) != SY_ENOSPC)
			abort();
		free(again);
	} else if (n != SY_EINVAL) {
		abort();
	}
	free(out);
	return 0;
}
