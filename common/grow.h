/* grow.h — capacity growth of a malloc'd array: one rule for every
 * growable array outside the hot path's fixed pools. */
#ifndef SY_COMMON_GROW_H
#define SY_COMMON_GROW_H

#include <stdint.h>
#include <stdlib.h>

#include "common/errors.h"

/* Makes *p (an array of *cap elements of `elem` bytes, malloc'd or NULL)
 * hold at least `need` elements: doubling from 8, realloc'd. *p and *cap
 * change only on success. Returns SY_OK, or SY_ENOMEM when the allocation
 * fails or need × elem does not fit a size_t. */
static inline int sy_grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return SY_OK;
	if (elem == 0 || need > SIZE_MAX / 2 / elem)
		return SY_ENOMEM;
	size_t n = *cap ? *cap : 8;
	while (n < need)
		n *= 2;
	void *q = realloc(*p, n * elem);
	if (q == NULL)
		return SY_ENOMEM;
	*p = q;
	*cap = n;
	return SY_OK;
}

#endif
