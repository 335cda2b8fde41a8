/*
 * Integer outputs ("dtype = int64|..."): a plain cast from an
 * integer source, optionally clamped, in exact integer arithmetic.
 *
 * The plan is checked once, at create, so the kernels never test a value's
 * range: either every source value fits the output type (XI_CAST), or clip
 * is given and its bounds, inside the output range, are re-expressed in the
 * source's own type (XI_CLAMP: clamping there and then converting gives the
 * value clamped to [LOW, HIGH], which fits), or no source value lies inside
 * [LOW, HIGH] and every output is one bound (XI_FILL). Bounds are compared
 * as integers (ival below), never through float64, so 64-bit limits are
 * exact. The kernels are one loop per (source, output) pair, stamped out
 * for the generic target, AVX2 and AVX-512 like the float kernels; integer
 * conversions are exact, so every variant gives the same bytes.
 */
#include <math.h>
#include <stdio.h>

#include "dsview/xform.h"
#include "xform/xform_i.h"

/* An integer in [INT64_MIN, UINT64_MAX]: value = neg ? (int64_t)bits : bits. */
typedef struct ival {
	uint64_t bits;
	int neg;
} ival;

static int ival_lt(ival a, ival b)
{
	if (a.neg != b.neg)
		return a.neg;
	return a.bits < b.bits; /* two's complement keeps the order within a sign */
}

static ival ival_s(int64_t v)
{
	return (ival){ (uint64_t)v, v < 0 };
}

static ival ival_u(uint64_t v)
{
	return (ival){ v, 0 };
}

static void int_range(dsv_dtype t, ival *lo, ival *hi)
{
	unsigned bits = (unsigned)dsv_dtype_size(t) * 8;
	int is_signed = t == DSV_I8 || t == DSV_I16 || t == DSV_I32 || t == DSV_I64;
	if (is_signed) {
		*lo = ival_s(bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1)));
		*hi = ival_s(bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1);
	} else {
		*lo = ival_u(0);
		*hi = ival_u(bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1);
	}
}

static const char *ival_str(ival v, char *buf, size_t cap)
{
	if (v.neg)
		snprintf(buf, cap, "%lld", (long long)(int64_t)v.bits);
	else
		snprintf(buf, cap, "%llu", (unsigned long long)v.bits);
	return buf;
}

/* v as an integer of t's range. @return 0, or -1 if v is not a whole
 * number inside it. Only powers of two and v itself meet float64: the
 * range test uses t's limits as exact powers of two (its maximum + 1). */
static int to_ival(double v, dsv_dtype t, ival *out)
{
	unsigned bits = (unsigned)dsv_dtype_size(t) * 8;
	int is_signed = t == DSV_I8 || t == DSV_I16 || t == DSV_I32 || t == DSV_I64;
	double top = ldexp(1.0, (int)bits - is_signed); /* max + 1 */
	double bottom = is_signed ? -top : 0.0;
	if (bits == 64 && v == top) {
		/* INT64_MAX and UINT64_MAX have no double: written as bounds,
		 * they arrive rounded up to 2^63 and 2^64, and mean the max */
		*out = is_signed ? ival_s(INT64_MAX) : ival_u(UINT64_MAX);
		return 0;
	}
	if (!(v >= bottom && v < top)) /* NaN fails too */
		return -1;
	if (v < 0) {
		int64_t s = (int64_t)v;
		if ((double)s != v)
			return -1;
		*out = ival_s(s);
	} else {
		uint64_t u = (uint64_t)v; /* v < 2^64: exact when v is whole */
		if ((double)u != v)
			return -1;
		*out = ival_u(u);
	}
	return 0;
}

int dsv_xform_int_plan(xform_int *ip, dsv_dtype src, dsv_dtype dst, const dsv_xform_params *p,
		       dsv_errbuf *eb)
{
	const char *sn = dsv_dtype_name(src), *dn = dsv_dtype_name(dst);
	ival smin, smax, dmin, dmax, lo, hi;
	char a[24], b[24];
	ip->mode = XI_CAST;
	ip->lo = ip->hi = ip->fill = 0;
	if (!dsv_dtype_is_int(src))
		return dsv_errf_key(eb, DSV_ERR_INVALID, "dtype",
				    "an integer output (%s) needs an integer source, not %s", dn,
				    sn);
	if (p->scale != 1.0 || p->offset != 0.0 || p->nchan != 0)
		return dsv_errf_key(eb, DSV_ERR_INVALID, "dtype",
				    "an integer output (%s) takes no scale, offset, mean or std",
				    dn);
	int_range(src, &smin, &smax);
	int_range(dst, &dmin, &dmax);
	if (!p->has_clip) {
		if (ival_lt(smin, dmin) || ival_lt(dmax, smax))
			return dsv_errf_key(eb, DSV_ERR_INVALID, "dtype",
					    "%s values may not fit %s (give clip = LOW HIGH)", sn,
					    dn);
		return 0;
	}
	if (to_ival(p->clip_lo, dst, &lo) || to_ival(p->clip_hi, dst, &hi))
		return dsv_errf_key(
			eb, DSV_ERR_INVALID, "clip",
			"clip = %.17g %.17g: bounds must be whole numbers from %s to %s "
			"(the %s range)",
			p->clip_lo, p->clip_hi, ival_str(dmin, a, sizeof(a)),
			ival_str(dmax, b, sizeof(b)), dn);
	if (ival_lt(hi, lo))
		return dsv_errf_key(eb, DSV_ERR_INVALID, "clip", "clip needs LOW <= HIGH");
	if (ival_lt(hi, smin) || ival_lt(smax, lo)) {
		/* every source value clamps to the same bound */
		ip->mode = XI_FILL;
		ip->fill = ival_lt(hi, smin) ? hi.bits : lo.bits;
		return 0;
	}
	lo = ival_lt(lo, smin) ? smin : lo;
	hi = ival_lt(smax, hi) ? smax : hi;
	if (!ival_lt(smin, lo) && !ival_lt(hi, smax))
		return 0; /* the clip holds the whole source range: a plain cast */
	ip->mode = XI_CLAMP;
	ip->lo = lo.bits;
	ip->hi = hi.bits;
	return 0;
}

/* ---- kernels ---- */

typedef uint8_t u8_u;
typedef int8_t i8_u;

/* (ST) of a two's complement bit pattern: modulo 2^N, as GCC and Clang
 * define the conversion to a narrower signed type. */
#define DEFINE_INT1(SUF, ATTR, sn, ST, dn, DT)                                               \
	ATTR DSV_VECTORISE static void i_##sn##_##dn##_##SUF(const xform_int *ip, void *dst, \
							     const void *src, uint64_t n)    \
	{                                                                                    \
		const sn##_u *s = src;                                                       \
		dn##_u *o = dst;                                                             \
		if (ip->mode == XI_CAST) {                                                   \
			VEC_FOR(i, n, o[i] = (DT)s[i]);                                      \
		} else if (ip->mode == XI_CLAMP) {                                           \
			const ST lo = (ST)ip->lo, hi = (ST)ip->hi;                           \
			VEC_FOR(i, n, ST v = s[i]; v = v < lo ? lo : v;                      \
				o[i] = (DT)(v > hi ? hi : v));                               \
		} else {                                                                     \
			const DT f = (DT)ip->fill;                                           \
			VEC_FOR(i, n, o[i] = f);                                             \
		}                                                                            \
	}

#define DEFINE_INT_SRC(SUF, ATTR, sn, ST)             \
	DEFINE_INT1(SUF, ATTR, sn, ST, u8, uint8_t)   \
	DEFINE_INT1(SUF, ATTR, sn, ST, i8, int8_t)    \
	DEFINE_INT1(SUF, ATTR, sn, ST, u16, uint16_t) \
	DEFINE_INT1(SUF, ATTR, sn, ST, i16, int16_t)  \
	DEFINE_INT1(SUF, ATTR, sn, ST, u32, uint32_t) \
	DEFINE_INT1(SUF, ATTR, sn, ST, i32, int32_t)  \
	DEFINE_INT1(SUF, ATTR, sn, ST, u64, uint64_t) \
	DEFINE_INT1(SUF, ATTR, sn, ST, i64, int64_t)

#define INT_ROW(SUF, sn)                                                                      \
	{                                                                                     \
		i_##sn##_u8_##SUF, i_##sn##_i8_##SUF, i_##sn##_u16_##SUF, i_##sn##_i16_##SUF, \
			i_##sn##_u32_##SUF, i_##sn##_i32_##SUF, i_##sn##_u64_##SUF,           \
			i_##sn##_i64_##SUF                                                    \
	}

#define DEFINE_INT_KERNELS(SUF, ATTR)                                         \
	DEFINE_INT_SRC(SUF, ATTR, u8, uint8_t)                                \
	DEFINE_INT_SRC(SUF, ATTR, i8, int8_t)                                 \
	DEFINE_INT_SRC(SUF, ATTR, u16, uint16_t)                              \
	DEFINE_INT_SRC(SUF, ATTR, i16, int16_t)                               \
	DEFINE_INT_SRC(SUF, ATTR, u32, uint32_t)                              \
	DEFINE_INT_SRC(SUF, ATTR, i32, int32_t)                               \
	DEFINE_INT_SRC(SUF, ATTR, u64, uint64_t)                              \
	DEFINE_INT_SRC(SUF, ATTR, i64, int64_t)                               \
	const xform_int_fn dsv_xform_int_##SUF[XI_NTYPES][XI_NTYPES] = {      \
		[DSV_U8] = INT_ROW(SUF, u8),   [DSV_I8] = INT_ROW(SUF, i8),   \
		[DSV_U16] = INT_ROW(SUF, u16), [DSV_I16] = INT_ROW(SUF, i16), \
		[DSV_U32] = INT_ROW(SUF, u32), [DSV_I32] = INT_ROW(SUF, i32), \
		[DSV_U64] = INT_ROW(SUF, u64), [DSV_I64] = INT_ROW(SUF, i64), \
	};

DEFINE_INT_KERNELS(scalar, )
#if defined(__x86_64__)
DEFINE_INT_KERNELS(avx2, __attribute__((target("avx2"))))
DEFINE_INT_KERNELS(avx512, __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))))
#endif
