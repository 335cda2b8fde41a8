/*
 * Per-element transform maths shared by every kernel variant and the
 * CUDA backend (DSV_HD marks functions nvcc compiles for host and device).
 * Plain C on purpose: no vector extensions, no FMA (the build uses
 * -ffp-contract=off), so every caller rounds the same way.
 */
#ifndef DSV_XFORM_ELEM_H
#define DSV_XFORM_ELEM_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define DSV_HD __host__ __device__
#else
#define DSV_HD
#endif

static inline DSV_HD uint32_t dsv_f32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof(u));
	return u;
}

static inline DSV_HD float dsv_bits_f32(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof(f));
	return f;
}

/* Round to nearest even on the top 16 bits; NaN -> quiet NaN, sign kept. */
static inline DSV_HD uint16_t dsv_elem_f32_to_bf16(float f)
{
	uint32_t x = dsv_f32_bits(f);
	uint32_t nan = (uint32_t)((x >> 16) | 0x0040u);
	uint32_t rne = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
	/* a select, not a branch, so loops over it vectorise */
	return (uint16_t)((x & 0x7fffffffu) > 0x7f800000u ? nan : rne);
}

/* IEEE binary32 -> binary16, round to nearest even, overflow -> inf,
 * subnormals exact, NaN -> quiet NaN with the sign and the top 10 payload
 * bits kept (numpy's astype does the same for quiet NaNs; it keeps a
 * signalling NaN signalling, this quiets it). Every case is computed and
 * one selected, with no branch, so loops over it vectorise; it gives the
 * same half as the branching form for every one of the 2^32 floats. */
static inline DSV_HD uint16_t dsv_elem_f32_to_f16(float f)
{
	uint32_t x = dsv_f32_bits(f);
	uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
	uint32_t nan = 0x7e00u | ((ax >> 13) & 0x3ffu);
	/* a normal half: rebias the exponent, round the mantissa (>= 65520
	 * rounds past 65504 to the infinity 0x7c00 by itself) */
	uint32_t normal = (ax + 0xc8000fffu + ((ax >> 13) & 1u)) >> 13;
	/* below 2^-14: adding 0.5 leaves the value in units of 2^-24, the
	 * subnormal half's step, in the low mantissa bits, rounded to nearest
	 * even by the float addition itself (0x400 is 2^-14, the least normal) */
	uint32_t sub = dsv_f32_bits(dsv_bits_f32(ax) + 0.5f) - 0x3f000000u;
	int32_t sa = (int32_t)ax; /* < 2^31: signed compares, which AVX2 has */
	uint32_t r = sa > 0x7f800000    ? nan
		     : sa >= 0x47800000 ? 0x7c00u
		     : sa >= 0x38800000 ? normal
					: sub;
	return (uint16_t)(sign | r);
}

static inline DSV_HD uint64_t dsv_f64_bits(double d)
{
	uint64_t u;
	memcpy(&u, &d, sizeof(u));
	return u;
}

/* IEEE binary64 -> binary16 rounded once (numpy's astype(float16) from
 * float64; going through float32 would round twice: 1 + 2^-11 + 2^-40
 * becomes the tie 1 + 2^-11 and then 1). Same rules as the float32 one:
 * round to nearest even, overflow -> inf, subnormals exact, NaN -> quiet
 * NaN with the sign and the top 10 payload bits. */
static inline DSV_HD uint16_t dsv_elem_f64_to_f16(double d)
{
	uint64_t x = dsv_f64_bits(d);
	uint32_t sign = (uint32_t)(x >> 48) & 0x8000u;
	uint64_t ax = x & 0x7fffffffffffffffull;
	if (ax > 0x7ff0000000000000ull)
		return (uint16_t)(sign | 0x7e00u | (uint32_t)((ax >> 42) & 0x3ffu));
	if (ax >= 0x40effe0000000000ull) /* >= 65520 rounds past 65504: inf (inf too) */
		return (uint16_t)(sign | 0x7c00u);
	if (ax >= 0x3f10000000000000ull) /* >= 2^-14, normal half: rebias by 1008, round */
		return (uint16_t)(sign | (uint32_t)((ax - 0x3f00000000000000ull + 0x1ffffffffffull +
						     ((ax >> 42) & 1u)) >>
						    42));
	if (ax <= 0x3e60000000000000ull) /* <= 2^-25: rounds to zero (2^-25 ties to even 0) */
		return (uint16_t)sign;
	/* subnormal half: value / 2^-24, rounded to nearest even */
	uint32_t e = (uint32_t)(ax >> 52);
	uint64_t m = (ax & 0xfffffffffffffull) | 0x10000000000000ull;
	uint32_t shift = 1051u - e; /* 43..53 */
	uint64_t q = m >> shift, rem = m & ((1ull << shift) - 1u), half = 1ull << (shift - 1u);
	if (rem > half || (rem == half && (q & 1u)))
		q++;
	return (uint16_t)(sign | (uint32_t)q);
}

/* f, with a signalling NaN made quiet (payload kept): a float32 -> float32
 * plain cast gives quiet NaNs as every other conversion does. */
static inline DSV_HD float dsv_elem_quiet_f32(float f)
{
	uint32_t x = dsv_f32_bits(f);
	return dsv_bits_f32((x & 0x7fffffffu) > 0x7f800000u ? x | 0x400000u : x);
}

static inline DSV_HD float dsv_elem_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
	if (e == 0x1f)
		return dsv_bits_f32(sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0u));
	if (e == 0) {
		if (m == 0)
			return dsv_bits_f32(sign);
		/* subnormal: m * 2^-24, exact in float */
		float v = (float)m * 5.9604644775390625e-8f;
		return sign ? -v : v;
	}
	return dsv_bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

static inline DSV_HD float dsv_elem_bf16_to_f32(uint16_t h)
{
	return dsv_bits_f32((uint32_t)h << 16);
}

/* The transform of one value, in float64, rounded once to float32. */
static inline DSV_HD float dsv_elem_apply(double x, double scale, double offset, double mean,
					  double std, int has_clip, double lo, double hi)
{
	double y = (x * scale + offset - mean) / std;
	if (has_clip)
		y = y < lo ? lo : (y > hi ? hi : y); /* NaN compares false: stays NaN */
	return (float)y;
}

/* A plan as plain data, for the CUDA backend (src/gpu/dev_xform.h), which
 * computes per element what dsv_xform_run gives, whichever kernel runs it:
 * filled by dsv_xform_describe (elems.c). Pointers are the plan's own. */
typedef struct dsv_xform_desc {
	int src, dst; /* dsv_dtype */
	int is_int;   /* integer output: int_mode (XI_CAST, XI_CLAMP, XI_FILL) */
	int int_mode;
	uint64_t int_lo, int_hi, int_fill;
	double scale, offset;
	int nchan; /* >= 1 */
	uint64_t chan_inner;
	const double *mean, *std; /* the channels' (nchan each) */
	int has_clip;
	double lo, hi;
	/* the plan's kernels apply the formula to every element, never the
	 * plain cast (8-bit lookup tables, one channel per element) */
	int formula_only;
} dsv_xform_desc;

#ifdef __cplusplus
extern "C" {
#endif
struct dsv_xform;
void dsv_xform_describe(const struct dsv_xform *x, dsv_xform_desc *d);
#ifdef __cplusplus
}
#endif

#endif
