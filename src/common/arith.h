/*
 * Overflow-checked arithmetic on sizes from untrusted headers (shapes,
 * chunk counts, offsets): every product or sum of them goes through
 * these. Reentrant.
 */
#ifndef DSV_COMMON_ARITH_H
#define DSV_COMMON_ARITH_H

#include <stdint.h>

#include "dsview/dsview.h"

/* @return 0, or DSV_ERR_OVERFLOW (then *out is not to be used). */
static inline int dsv_mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
	return __builtin_mul_overflow(a, b, out) ? DSV_ERR_OVERFLOW : 0;
}
static inline int dsv_add_u64(uint64_t a, uint64_t b, uint64_t *out)
{
	return __builtin_add_overflow(a, b, out) ? DSV_ERR_OVERFLOW : 0;
}

#endif
