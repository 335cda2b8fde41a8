/* Helpers the transform tests share: float bits, and float64 -> float16
 * rounded once, found independently of dsview's routine. */
#ifndef DSV_TESTS_XFORM_TEST_H
#define DSV_TESTS_XFORM_TEST_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "dsview/xform.h"

static inline float f32(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static inline uint32_t bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

/* float64 -> float16 rounded once, found independently of dsview's
 * routine: the nearest of the float16 values around the float32 route's
 * answer (differences of doubles within a factor 2 are exact), ties to
 * even, 65536 standing for infinity. */
static inline uint16_t ref_f64_to_f16(double d)
{
	uint16_t sign = signbit(d) ? 0x8000 : 0, h = dsv_f32_to_f16((float)d);
	double a = fabs(d), best_diff = INFINITY;
	int best = -1;
	if (isnan(d)) {
		uint64_t u;
		memcpy(&u, &d, 8);
		return (uint16_t)(sign | 0x7e00 | ((u >> 42) & 0x3ff));
	}
	for (int m = (h & 0x7fff) - 1; m <= (h & 0x7fff) + 1; m++) {
		if (m < 0 || m > 0x7c00)
			continue;
		double v = m == 0x7c00 ? 65536.0 : (double)dsv_f16_to_f32((uint16_t)m);
		double diff = fabs(a - v);
		if (diff < best_diff || (diff == best_diff && !(m & 1))) {
			best_diff = diff;
			best = m;
		}
	}
	return (uint16_t)(sign | best);
}

#endif
