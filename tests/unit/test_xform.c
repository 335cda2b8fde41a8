/* Transform: bit-exact bf16/f16 vectors, one-rounding float32 results against
 * an independent double evaluation, and identical bytes across kernels. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dsview/xform.h"

static float f32(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static uint32_t bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

static void test_bf16_vectors(void **state)
{
	static const struct {
		uint32_t in;
		uint16_t out;
	} v[] = {
		{ 0x3f800000, 0x3f80 }, /* 1.0 */
		{ 0x3f808000, 0x3f80 }, /* tie, even stays */
		{ 0x3f818000, 0x3f82 }, /* tie, odd rounds up */
		{ 0x3f808001, 0x3f81 }, /* just above tie */
		{ 0x3f807fff, 0x3f80 }, /* just below tie */
		{ 0x3fff8000, 0x4000 }, /* rounds across the exponent */
		{ 0x7f7fffff, 0x7f80 }, /* max float -> inf */
		{ 0x7f800000, 0x7f80 }, { 0xff800000, 0xff80 }, /* +-inf */
		{ 0x00000000, 0x0000 }, { 0x80000000, 0x8000 }, /* +-0 */
		{ 0x00000001, 0x0000 }, /* smallest subnormal -> 0 */
		{ 0x00018000, 0x0002 }, /* subnormal tie to even */
		{ 0x7fc00000, 0x7fc0 }, /* quiet NaN */
		{ 0x7f800001, 0x7fc0 }, /* signalling NaN -> quiet */
		{ 0xff800001, 0xffc0 }, /* negative sNaN keeps sign */
		{ 0x7fbfffff, 0x7fff }, /* NaN whose rounding would carry: stays NaN */
	};
	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (dsv_f32_to_bf16(f32(v[i].in)) != v[i].out)
			fail_msg("bf16(0x%08x) = 0x%04x, want 0x%04x", v[i].in, dsv_f32_to_bf16(f32(v[i].in)),
				 v[i].out);
	assert_int_equal(bits(dsv_bf16_to_f32(0x3f82)), 0x3f820000);
}

static void test_f16_vectors(void **state)
{
	static const struct {
		float in;
		uint16_t out;
	} v[] = {
		{ 1.0f, 0x3c00 },
		{ 65504.0f, 0x7bff },
		{ 65519.99f, 0x7bff },
		{ 65520.0f, 0x7c00 }, /* overflow -> inf */
		{ -1e10f, 0xfc00 },
		{ 5.9604644775390625e-8f, 0x0001 },  /* 2^-24, smallest subnormal */
		{ 2.98023223876953125e-8f, 0x0000 }, /* 2^-25: tie to even 0 */
		{ 2.98023259404089e-8f, 0x0001 },    /* just above 2^-25 */
		{ 8.940696716308594e-8f, 0x0002 },   /* 1.5 * 2^-24: tie to even 2 */
		{ 1.4901161193847656e-7f, 0x0002 },  /* 2.5 * 2^-24: tie to even 2 */
		{ 6.097555160522461e-5f, 0x03ff },   /* largest subnormal */
		{ 6.103515625e-05f, 0x0400 },        /* smallest normal */
		{ 1.00048828125f, 0x3c00 },          /* 1 + 2^-11: tie to even */
		{ 1.00146484375f, 0x3c02 },          /* 1 + 3*2^-11: tie to even (up) */
		{ -0.0f, 0x8000 },
		{ 0.0f, 0x0000 },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (dsv_f32_to_f16(v[i].in) != v[i].out)
			fail_msg("f16(%.10g) = 0x%04x, want 0x%04x", (double)v[i].in, dsv_f32_to_f16(v[i].in),
				 v[i].out);
	assert_int_equal(dsv_f32_to_f16(f32(0x7f800000)), 0x7c00);
	assert_int_equal(dsv_f32_to_f16(f32(0xff800000)), 0xfc00);
	assert_int_equal(dsv_f32_to_f16(f32(0x7fc00000)), 0x7e00);
	assert_int_equal(dsv_f32_to_f16(f32(0xff800001)), 0xfe00);
	/* every half survives a round trip through float; NaNs stay NaN */
	for (uint32_t h = 0; h < 65536; h++) {
		float f = dsv_f16_to_f32((uint16_t)h);
		if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
			assert_true(isnan(f));
			continue;
		}
		if (dsv_f32_to_f16(f) != h)
			fail_msg("half 0x%04x -> %g -> 0x%04x", h, (double)f, dsv_f32_to_f16(f));
	}
}

/* Independent f16 reference: nearest of the two neighbours by exact double
 * arithmetic (ties to even), for finite values below the overflow limit. */
static uint16_t f16_ref(float f)
{
	double a = fabs((double)f);
	uint16_t sign = signbit(f) ? 0x8000 : 0;
	if (a >= 65520.0)
		return sign | 0x7c00;
	uint16_t best = 0;
	for (uint16_t lo = 0, hi = 0x7bff; lo <= hi;) { /* largest half <= a */
		uint16_t mid = (uint16_t)((lo + hi) / 2);
		if ((double)dsv_f16_to_f32(mid) <= a) {
			best = mid;
			lo = (uint16_t)(mid + 1);
		} else {
			if (mid == 0)
				break;
			hi = (uint16_t)(mid - 1);
		}
	}
	double below = dsv_f16_to_f32(best), above = dsv_f16_to_f32((uint16_t)(best + 1));
	if (below == a)
		return sign | best;
	double db = a - below, da = above - a;
	if (db < da || (db == da && !(best & 1)))
		return sign | best;
	return sign | (uint16_t)(best + 1);
}

static void test_f16_random_against_reference(void **state)
{
	unsigned seed = 1;
	(void)state;
	for (int i = 0; i < 200000; i++) {
		uint32_t u = ((uint32_t)rand_r(&seed) << 16) ^ (uint32_t)rand_r(&seed);
		/* focus on the half range: exponents 100..145 */
		u = (u & 0x807fffff) | ((100u + (u >> 23) % 46u) << 23);
		float f = f32(u);
		if (dsv_f32_to_f16(f) != f16_ref(f))
			fail_msg("f16(0x%08x) = 0x%04x, reference 0x%04x", u, dsv_f32_to_f16(f), f16_ref(f));
	}
}

static double load(dsv_dtype t, const void *q, size_t i)
{
	unsigned char p[8]; /* the buffers are unaligned on purpose */
	memcpy(p, (const unsigned char *)q + i * dsv_dtype_size(t), dsv_dtype_size(t));
	i = 0;
	switch (t) {
	case DSV_U8: return ((const uint8_t *)p)[i];
	case DSV_I8: return ((const int8_t *)p)[i];
	case DSV_U16: return ((const uint16_t *)p)[i];
	case DSV_I16: return ((const int16_t *)p)[i];
	case DSV_U32: return ((const uint32_t *)p)[i];
	case DSV_I32: return ((const int32_t *)p)[i];
	case DSV_U64: return (double)((const uint64_t *)p)[i];
	case DSV_I64: return (double)((const int64_t *)p)[i];
	case DSV_F16: return dsv_f16_to_f32(((const uint16_t *)p)[i]);
	case DSV_F32: return ((const float *)p)[i];
	case DSV_F64: return ((const double *)p)[i];
	default: return 0;
	}
}

static void fill_random(dsv_dtype t, void *p, size_t n, unsigned *seed)
{
	unsigned char *b = p;
	for (size_t i = 0; i < n * dsv_dtype_size(t); i++)
		b[i] = (unsigned char)rand_r(seed);
	for (size_t i = 0; t == DSV_F32 && i < n; i++) { /* sane magnitudes, some NaN and inf */
		float v = i % 97 == 5 ? NAN : i % 89 == 3 ? -INFINITY
			: (float)((rand_r(seed) % 200001) - 100000) / 37.0f;
		memcpy(b + i * 4, &v, 4);
	}
	for (size_t i = 0; t == DSV_F64 && i < n; i++) {
		double v = i % 97 == 5 ? NAN : (double)((rand_r(seed) % 2000001) - 1000000) / 3.0;
		memcpy(b + i * 8, &v, 8);
	}
}

/* A plain cast's float32: the C conversion from the source type, rounded
 * once (numpy's astype); -0.0 kept. */
static float plain_f32(dsv_dtype t, const void *q, size_t i)
{
	const unsigned char *p = (const unsigned char *)q + i * dsv_dtype_size(t);
	union {
		uint32_t u32;
		int32_t i32;
		uint64_t u64;
		int64_t i64;
		float f;
		double d;
	} v;
	memcpy(&v, p, dsv_dtype_size(t));
	switch (t) {
	case DSV_U32: return (float)v.u32;
	case DSV_I32: return (float)v.i32;
	case DSV_U64: return (float)v.u64;
	case DSV_I64: return (float)v.i64;
	case DSV_F32: return v.f;
	case DSV_F64: return (float)v.d;
	default: return (float)load(t, q, i); /* exact in float32 */
	}
}

/* float64 -> float16 rounded once, found independently of dsview's
 * routine: the nearest of the float16 values around the float32 route's
 * answer (differences of doubles within a factor 2 are exact), ties to
 * even, 65536 standing for infinity. */
static uint16_t ref_f64_to_f16(double d)
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

/* Runs the plan and checks each element against the formula in double,
 * rounded once (and converted with the checked bf16/f16 functions). */
static void check_plan(dsv_dtype S, dsv_dtype D, const dsv_xform_params *p, uint64_t n, uint64_t e0)
{
	unsigned seed = (unsigned)(S * 31 + D * 7 + (unsigned)n);
	size_t es = dsv_dtype_size(S), os = dsv_dtype_size(D);
	unsigned char *src = malloc(n * es + 1), *dst = malloc(n * os + 1);
	dsv_xform *x;
	dsv_errbuf eb;
	int plain = p->scale == 1 && p->offset == 0 && !p->nchan && !p->has_clip;
	fill_random(S, src + 1, n, &seed); /* unaligned on purpose */
	if (dsv_xform_create(&x, S, D, p, &eb))
		fail_msg("create: %s", eb.msg);
	dsv_xform_run(x, dst + 1, src + 1, n, e0);
	for (uint64_t i = 0; i < n; i++) {
		double v = load(S, src + 1, i);
		double m = 0, s = 1;
		if (p->nchan) {
			uint64_t c = ((e0 + i) / p->chan_inner) % (uint64_t)p->nchan;
			m = p->mean[c];
			s = p->std[c];
		}
		double y = (v * p->scale + p->offset - m) / s;
		if (p->has_clip && y < p->clip_lo)
			y = p->clip_lo;
		if (p->has_clip && y > p->clip_hi)
			y = p->clip_hi;
		float f = (float)y;
		if (plain)
			f = plain_f32(S, src + 1, i);
		uint32_t want = D == DSV_F32 ? bits(f) : D == DSV_BF16 ? dsv_f32_to_bf16(f) : dsv_f32_to_f16(f);
		if (plain && D == DSV_F16 && S == DSV_F64)
			want = ref_f64_to_f16(load(S, src + 1, i));
		uint32_t got = 0;
		memcpy(&got, dst + 1 + i * os, os);
		if (D == DSV_F32 && isnan(f) && isnan(f32(got)))
			continue;
		if (got != want)
			fail_msg("%s->%s elem %llu (x=%g): got 0x%x want 0x%x", dsv_dtype_name(S),
				 dsv_dtype_name(D), (unsigned long long)i, v, got, want);
	}
	dsv_xform_destroy(x);
	free(src);
	free(dst);
}

static void test_all_dtypes_against_reference(void **state)
{
	static const dsv_dtype srcs[] = { DSV_U8,  DSV_I8,  DSV_U16, DSV_I16, DSV_U32, DSV_I32,
					  DSV_U64, DSV_I64, DSV_F16, DSV_F32, DSV_F64 };
	static const dsv_dtype outs[] = { DSV_F32, DSV_BF16, DSV_F16 };
	double mean[3] = { 0.485, 0.456, 0.406 }, std[3] = { 0.229, 0.224, 0.225 };
	(void)state;
	for (size_t a = 0; a < sizeof(srcs) / sizeof(srcs[0]); a++) {
		for (size_t b = 0; b < 3; b++) {
			dsv_xform_params p;
			dsv_xform_params_init(&p);
			check_plan(srcs[a], outs[b], &p, 1000, 0); /* plain cast */
			p.scale = 1.0 / 255;
			p.offset = 0.25;
			check_plan(srcs[a], outs[b], &p, 1001, 0); /* affine, no mean/std */
			p.scale = -3e38;
			check_plan(srcs[a], outs[b], &p, 1002, 0); /* overflows to -inf, NaN stays */
			p.scale = 1.0 / 255;
			p.nchan = 3;
			p.mean = mean;
			p.std = std;
			p.chan_inner = 1; /* HWC */
			check_plan(srcs[a], outs[b], &p, 3001, 7);
			p.chan_inner = 17; /* CHW-like */
			check_plan(srcs[a], outs[b], &p, 2000, 40);
			p.has_clip = 1;
			p.clip_lo = -1.5;
			p.clip_hi = 2;
			check_plan(srcs[a], outs[b], &p, 999, 123456789);
			p.nchan = 1;
			check_plan(srcs[a], outs[b], &p, 257, 3);
		}
	}
}

static void test_cancellation(void **state)
{
	/* pixel 124 at scale 1/255 minus mean 0.485: float32 maths would be off */
	double mean = 0.485, std = 0.229;
	dsv_xform_params p;
	dsv_xform *x;
	uint8_t px = 124;
	float out;
	(void)state;
	dsv_xform_params_init(&p);
	p.scale = 1.0 / 255;
	p.nchan = 1;
	p.mean = &mean;
	p.std = &std;
	assert_int_equal(dsv_xform_create(&x, DSV_U8, DSV_F32, &p, NULL), 0);
	dsv_xform_run(x, &out, &px, 1, 0);
	assert_int_equal(bits(out), bits((float)((124.0 * (1.0 / 255) - 0.485) / 0.229)));
	float naive = (124.0f * (1.0f / 255) - 0.485f) / 0.229f;
	assert_int_not_equal(bits(out), bits(naive)); /* the float32 route is wrong here */
	dsv_xform_destroy(x);
}

static void test_kernels_identical(void **state)
{
	static const char *const names[] = { "avx2", "avx512" };
	static const dsv_dtype srcs[] = { DSV_U8,  DSV_I16, DSV_F32, DSV_F16,
					  DSV_F64, DSV_U32, DSV_U64, DSV_I64 };
	static const dsv_dtype outs[] = { DSV_F32, DSV_BF16, DSV_F16 };
	double mean[3] = { 0.1, -2, 3 }, std[3] = { 0.3, 7, 0.01 };
	size_t n = 100003;
	unsigned seed = 9;
	(void)state;
	for (size_t a = 0; a < sizeof(srcs) / sizeof(srcs[0]); a++) {
		for (size_t b = 0; b < 3; b++) {
			for (int layout = -1; layout < 3; layout++) { /* -1: plain cast */
				dsv_xform_params p;
				dsv_xform *x;
				dsv_xform_params_init(&p);
				if (layout >= 0) {
					p.scale = 0.7;
					p.offset = -3;
				}
				if (layout > 0) {
					p.nchan = 3;
					p.mean = mean;
					p.std = std;
					p.chan_inner = layout == 1 ? 1 : 1000;
				}
				p.has_clip = layout == 2;
				p.clip_lo = -100;
				p.clip_hi = 1e6;
				unsigned char *src = malloc(n * 8 + 3), *ref = malloc(n * 4 + 3), *got = malloc(n * 4 + 3);
				fill_random(srcs[a], src + 3, n, &seed);
				assert_int_equal(dsv_xform_create(&x, srcs[a], outs[b], &p, NULL), 0);
				assert_int_equal(dsv_xform_force_kernel("scalar"), 0);
				dsv_xform_run(x, ref + 1, src + 3, n, 5);
				for (size_t k = 0; k < 2; k++) {
					if (dsv_xform_force_kernel(names[k]))
						continue; /* this CPU lacks it */
					memset(got, 0xa5, n * 4 + 3);
					dsv_xform_run(x, got + 2, src + 3, n, 5);
					if (memcmp(got + 2, ref + 1, n * dsv_dtype_size(outs[b])))
						fail_msg("%s differs from scalar for %s->%s layout %d", names[k],
							 dsv_dtype_name(srcs[a]), dsv_dtype_name(outs[b]), layout);
				}
				dsv_xform_destroy(x);
				free(src);
				free(ref);
				free(got);
			}
		}
	}
	assert_int_equal(dsv_xform_force_kernel("scalar"), 0);
	assert_string_equal(dsv_xform_kernel_name(), "scalar");
	assert_int_equal(dsv_xform_force_kernel("sse9"), DSV_ERR_UNSUPPORTED);
}

/* Runs a plain cast of one element of S (its bits in in) to each output
 * on every kernel variant this CPU has; checks the bits. */
static void check_plain_elem(dsv_dtype S, uint64_t in, const uint32_t want[3])
{
	static const char *const kernels[] = { "scalar", "avx2", "avx512" };
	static const dsv_dtype outs[] = { DSV_F32, DSV_BF16, DSV_F16 };
	/* a run of 37 copies, so the vector loops and their tails both see it */
	unsigned char src[37 * 8 + 1], dst[37 * 4 + 1];
	size_t es = dsv_dtype_size(S);
	for (size_t i = 0; i < 37; i++)
		memcpy(src + 1 + i * es, &in, es); /* little-endian host */
	for (size_t k = 0; k < 3; k++) {
		if (dsv_xform_force_kernel(kernels[k]))
			continue;
		for (size_t b = 0; b < 3; b++) {
			dsv_xform_params p;
			dsv_xform *x;
			size_t os = dsv_dtype_size(outs[b]);
			dsv_xform_params_init(&p);
			assert_int_equal(dsv_xform_create(&x, S, outs[b], &p, NULL), 0);
			dsv_xform_run(x, dst + 1, src + 1, 37, 0);
			for (size_t i = 0; i < 37; i++) {
				uint32_t got = 0;
				memcpy(&got, dst + 1 + i * os, os);
				if (got != want[b])
					fail_msg("%s %s(0x%llx) -> %s [%zu]: got 0x%x want 0x%x",
						 kernels[k], dsv_dtype_name(S), (unsigned long long)in,
						 dsv_dtype_name(outs[b]), i, got, want[b]);
			}
			dsv_xform_destroy(x);
		}
	}
	dsv_xform_force_kernel("scalar");
}

typedef struct plain_vec {
	uint64_t in;
	uint32_t f32, bf16, f16;
} plain_vec;

static void check_plain_table(dsv_dtype S, const plain_vec *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		check_plain_elem(S, v[i].in, (const uint32_t[3]){ v[i].f32, v[i].bf16, v[i].f16 });
}

/* int64/uint64 at the rounding boundaries: numpy's astype(float32) and
 * astype(float16) bits, bfloat16 the RNE of the float32 (so 2^24 + 2^16 + 1
 * gives 2^24 in bfloat16, as int32 sources always have). Computed with
 * numpy 1.24; int64 -> float64 -> float32 would give 0x5a000000 for
 * 2^53 + 2^29 + 1. */
static void test_int64_plain_vectors(void **state)
{
	static const plain_vec i64[] = {
		{ (uint64_t)(int64_t)0ll, 0x00000000u, 0x0000u, 0x0000u },
		{ (uint64_t)(int64_t)-1ll, 0xbf800000u, 0xbf80u, 0xbc00u },
		{ (uint64_t)(int64_t)1ll, 0x3f800000u, 0x3f80u, 0x3c00u },
		{ (uint64_t)(int64_t)16777217ll, 0x4b800000u, 0x4b80u, 0x7c00u },
		{ (uint64_t)(int64_t)16777219ll, 0x4b800002u, 0x4b80u, 0x7c00u },
		{ (uint64_t)(int64_t)-16777217ll, 0xcb800000u, 0xcb80u, 0xfc00u },
		{ (uint64_t)(int64_t)9007199254740993ll, 0x5a000000u, 0x5a00u, 0x7c00u },
		{ (uint64_t)(int64_t)9007199791611905ll, 0x5a000001u, 0x5a00u, 0x7c00u },
		{ (uint64_t)(int64_t)-9007199791611905ll, 0xda000001u, 0xda00u, 0xfc00u },
		{ (uint64_t)(int64_t)9007199791611904ll, 0x5a000000u, 0x5a00u, 0x7c00u },
		{ (uint64_t)(int64_t)9223372036854775807ll, 0x5f000000u, 0x5f00u, 0x7c00u },
		{ (uint64_t)INT64_MIN, 0xdf000000u, 0xdf00u, 0xfc00u },
		{ (uint64_t)(int64_t)-9223372036854775807ll, 0xdf000000u, 0xdf00u, 0xfc00u },
		{ (uint64_t)(int64_t)4611686293305294849ll, 0x5e800001u, 0x5e80u, 0x7c00u },
		{ (uint64_t)(int64_t)257ll, 0x43808000u, 0x4380u, 0x5c04u },
		{ (uint64_t)(int64_t)259ll, 0x43818000u, 0x4382u, 0x5c0cu },
		{ (uint64_t)(int64_t)16842753ll, 0x4b808000u, 0x4b80u, 0x7c00u },
		{ (uint64_t)(int64_t)65504ll, 0x477fe000u, 0x4780u, 0x7bffu },
		{ (uint64_t)(int64_t)65519ll, 0x477fef00u, 0x4780u, 0x7bffu },
		{ (uint64_t)(int64_t)65520ll, 0x477ff000u, 0x4780u, 0x7c00u },
		{ (uint64_t)(int64_t)-65520ll, 0xc77ff000u, 0xc780u, 0xfc00u },
		{ (uint64_t)(int64_t)2049ll, 0x45001000u, 0x4500u, 0x6800u },
		{ (uint64_t)(int64_t)2051ll, 0x45003000u, 0x4500u, 0x6802u },
	};
	static const plain_vec u64[] = {
		{ (uint64_t)0x0ull, 0x00000000u, 0x0000u, 0x0000u },
		{ (uint64_t)0x1ull, 0x3f800000u, 0x3f80u, 0x3c00u },
		{ (uint64_t)0xffffffffffffffffull, 0x5f800000u, 0x5f80u, 0x7c00u },
		{ (uint64_t)0x8000000000000000ull, 0x5f000000u, 0x5f00u, 0x7c00u },
		{ (uint64_t)0x8000008000000000ull, 0x5f000000u, 0x5f00u, 0x7c00u },
		{ (uint64_t)0x8000008000000001ull, 0x5f000001u, 0x5f00u, 0x7c00u },
		{ (uint64_t)0x8000018000000000ull, 0x5f000002u, 0x5f00u, 0x7c00u },
		{ (uint64_t)0x20000020000001ull, 0x5a000001u, 0x5a00u, 0x7c00u },
		{ (uint64_t)0x100000001ull, 0x4f800000u, 0x4f80u, 0x7c00u },
		{ (uint64_t)0xffffff8000000000ull, 0x5f800000u, 0x5f80u, 0x7c00u },
		{ (uint64_t)0xffffff7fffffffffull, 0x5f7fffffu, 0x5f80u, 0x7c00u },
	};
	(void)state;
	check_plain_table(DSV_I64, i64, sizeof(i64) / sizeof(i64[0]));
	check_plain_table(DSV_U64, u64, sizeof(u64) / sizeof(u64[0]));
}

/* -0.0, infinities, subnormals, NaNs (quiet and signalling, with
 * payloads) and rounding ties through plain casts of each float type:
 * numpy's astype bits, except that signalling NaNs come out quiet. */
static void test_float_plain_specials(void **state)
{
	static const plain_vec f16[] = {
		{ 0x0ull, 0x00000000u, 0x0000u, 0x0000u },
		{ 0x8000ull, 0x80000000u, 0x8000u, 0x8000u },
		{ 0x7c00ull, 0x7f800000u, 0x7f80u, 0x7c00u },
		{ 0xfc00ull, 0xff800000u, 0xff80u, 0xfc00u },
		{ 0x1ull, 0x33800000u, 0x3380u, 0x0001u },
		{ 0x8001ull, 0xb3800000u, 0xb380u, 0x8001u },
		{ 0x3ffull, 0x387fc000u, 0x3880u, 0x03ffu },
		{ 0x400ull, 0x38800000u, 0x3880u, 0x0400u },
		{ 0x7e00ull, 0x7fc00000u, 0x7fc0u, 0x7e00u },
		{ 0xfe01ull, 0xffc02000u, 0xffc0u, 0xfe01u },
		{ 0x7e55ull, 0x7fcaa000u, 0x7fcau, 0x7e55u },
		{ 0x7c01ull, 0x7fc02000u, 0x7fc0u, 0x7e01u },
		{ 0x3c00ull, 0x3f800000u, 0x3f80u, 0x3c00u },
		{ 0x7bffull, 0x477fe000u, 0x4780u, 0x7bffu },
	};
	static const plain_vec f32v[] = {
		{ 0x0ull, 0x00000000u, 0x0000u, 0x0000u },
		{ 0x80000000ull, 0x80000000u, 0x8000u, 0x8000u },
		{ 0x7f800000ull, 0x7f800000u, 0x7f80u, 0x7c00u },
		{ 0xff800000ull, 0xff800000u, 0xff80u, 0xfc00u },
		{ 0x1ull, 0x00000001u, 0x0000u, 0x0000u },
		{ 0x80000001ull, 0x80000001u, 0x8000u, 0x8000u },
		{ 0x7fffffull, 0x007fffffu, 0x0080u, 0x0000u },
		{ 0x800000ull, 0x00800000u, 0x0080u, 0x0000u },
		{ 0x7fc00000ull, 0x7fc00000u, 0x7fc0u, 0x7e00u },
		{ 0xffc00001ull, 0xffc00001u, 0xffc0u, 0xfe00u },
		{ 0x7fc12345ull, 0x7fc12345u, 0x7fc1u, 0x7e09u },
		{ 0x7f812345ull, 0x7fc12345u, 0x7fc1u, 0x7e09u },
		{ 0x33800001ull, 0x33800001u, 0x3380u, 0x0001u },
		{ 0x33000000ull, 0x33000000u, 0x3300u, 0x0000u },
		{ 0x477fefffull, 0x477fefffu, 0x4780u, 0x7bffu },
		{ 0x477ff000ull, 0x477ff000u, 0x4780u, 0x7c00u },
		{ 0x387fc000ull, 0x387fc000u, 0x3880u, 0x03ffu },
		{ 0x3f808000ull, 0x3f808000u, 0x3f80u, 0x3c04u },
	};
	static const plain_vec f64[] = {
		{ 0x0ull, 0x00000000u, 0x0000u, 0x0000u },
		{ 0x8000000000000000ull, 0x80000000u, 0x8000u, 0x8000u },
		{ 0x7ff0000000000000ull, 0x7f800000u, 0x7f80u, 0x7c00u },
		{ 0xfff0000000000000ull, 0xff800000u, 0xff80u, 0xfc00u },
		{ 0x1ull, 0x00000000u, 0x0000u, 0x0000u },
		{ 0x8000000000000001ull, 0x80000000u, 0x8000u, 0x8000u },
		{ 0xfffffffffffffull, 0x00000000u, 0x0000u, 0x0000u },
		{ 0x36a0000000000000ull, 0x00000001u, 0x0000u, 0x0000u },
		{ 0x7ff8000000000000ull, 0x7fc00000u, 0x7fc0u, 0x7e00u },
		{ 0xfff8000000000001ull, 0xffc00000u, 0xffc0u, 0xfe00u },
		{ 0x7ff8123456789abcull, 0x7fc091a2u, 0x7fc0u, 0x7e04u },
		{ 0x7ff0123456789abcull, 0x7fc091a2u, 0x7fc0u, 0x7e04u },
		{ 0x3ff0020000000001ull, 0x3f801000u, 0x3f80u, 0x3c01u },
		{ 0x3ff0020000000000ull, 0x3f801000u, 0x3f80u, 0x3c00u },
		{ 0x3ff0060000000000ull, 0x3f803000u, 0x3f80u, 0x3c02u },
		{ 0x3e70000000000001ull, 0x33800000u, 0x3380u, 0x0001u },
		{ 0x3e60000000000000ull, 0x33000000u, 0x3300u, 0x0000u },
		{ 0x40effdffffffffffull, 0x477ff000u, 0x4780u, 0x7bffu },
		{ 0x40effe0000000000ull, 0x477ff000u, 0x4780u, 0x7c00u },
		{ 0x3f0ff80000000000ull, 0x387fc000u, 0x3880u, 0x03ffu },
		{ 0x3f0ffc0000000001ull, 0x387fe000u, 0x3880u, 0x0400u },
	};
	(void)state;
	check_plain_table(DSV_F16, f16, sizeof(f16) / sizeof(f16[0]));
	check_plain_table(DSV_F32, f32v, sizeof(f32v) / sizeof(f32v[0]));
	check_plain_table(DSV_F64, f64, sizeof(f64) / sizeof(f64[0]));
}

/* float64 -> float16 against the independent reference over random bit
 * patterns concentrated on float16's range. */
static void test_f64_to_f16_random(void **state)
{
	unsigned seed = 77;
	dsv_xform *x;
	dsv_xform_params p;
	enum { N = 200000 };
	double *in = malloc(N * sizeof(double));
	uint16_t *out = malloc(N * sizeof(uint16_t));
	(void)state;
	for (size_t i = 0; i < N; i++) {
		uint64_t u = ((uint64_t)rand_r(&seed) << 33) ^ ((uint64_t)rand_r(&seed) << 11) ^
			     (uint64_t)rand_r(&seed);
		uint64_t e = 0x3e0 + (uint64_t)(rand_r(&seed) % 0x60); /* 2^-31 .. 2^64 */
		u = (u & 0x800fffffffffffffull) | (e << 52);
		if (i % 5 == 0) /* halfway cases and their neighbours */
			u = (u & ~0x3ffffffffffull) + 0x20000000000ull + (uint64_t)(rand_r(&seed) % 3) - 1;
		memcpy(&in[i], &u, 8);
	}
	dsv_xform_params_init(&p);
	assert_int_equal(dsv_xform_create(&x, DSV_F64, DSV_F16, &p, NULL), 0);
	dsv_xform_run(x, out, in, N, 0);
	for (size_t i = 0; i < N; i++)
		if (out[i] != ref_f64_to_f16(in[i]))
			fail_msg("f64 %a -> f16 0x%04x, want 0x%04x", in[i], out[i],
				 ref_f64_to_f16(in[i]));
	dsv_xform_destroy(x);
	free(in);
	free(out);
}

/* With a transform declared, -0.0 follows the formula's IEEE arithmetic
 * (x * scale + offset): -0.0 * 2 + 0 is +0.0; a plain cast keeps -0.0. */
static void test_negative_zero_formula(void **state)
{
	float in = -0.0f, out;
	dsv_xform *x;
	dsv_xform_params p;
	(void)state;
	dsv_xform_params_init(&p);
	p.scale = 2;
	assert_int_equal(dsv_xform_create(&x, DSV_F32, DSV_F32, &p, NULL), 0);
	dsv_xform_run(x, &out, &in, 1, 0);
	assert_int_equal(bits(out), 0);
	dsv_xform_destroy(x);
	dsv_xform_params_init(&p);
	assert_int_equal(dsv_xform_create(&x, DSV_F32, DSV_F32, &p, NULL), 0);
	dsv_xform_run(x, &out, &in, 1, 0);
	assert_int_equal(bits(out), 0x80000000u);
	dsv_xform_destroy(x);
}

static void test_validation(void **state)
{
	double mean[2] = { 0, 0 }, std[2] = { 1, 0 };
	dsv_xform_params p;
	dsv_xform *x;
	dsv_errbuf eb = { 0 };
	(void)state;
	dsv_xform_params_init(&p);
	p.nchan = 2;
	p.mean = mean;
	p.std = std;
	assert_int_equal(dsv_xform_create(&x, DSV_U8, DSV_F32, &p, &eb), DSV_ERR_INVALID);
	assert_non_null(strstr(eb.msg, "std[1]"));
	p.std = NULL;
	assert_int_equal(dsv_xform_create(&x, DSV_U8, DSV_F32, &p, &eb), DSV_ERR_INVALID);
	dsv_xform_params_init(&p);
	assert_int_equal(dsv_xform_create(&x, DSV_U8, DSV_I16, &p, &eb), DSV_ERR_INVALID);
	assert_int_equal(dsv_xform_create(&x, DSV_BF16, DSV_F32, &p, &eb), DSV_ERR_INVALID);
	p.has_clip = 1;
	p.clip_lo = 2;
	p.clip_hi = 1;
	assert_int_equal(dsv_xform_create(&x, DSV_U8, DSV_F32, &p, &eb), DSV_ERR_INVALID);
	dsv_xform_params_init(&p);
	p.scale = INFINITY;
	assert_int_equal(dsv_xform_create(&x, DSV_U8, DSV_F32, &p, &eb), DSV_ERR_INVALID);
}

static void test_nan_inf_rules(void **state)
{
	float in[4] = { NAN, INFINITY, -INFINITY, 1e30f };
	uint16_t bf[4], hf[4];
	float f[4];
	dsv_xform_params p;
	dsv_xform *xb, *xh, *xf;
	(void)state;
	dsv_xform_params_init(&p);
	assert_int_equal(dsv_xform_create(&xb, DSV_F32, DSV_BF16, &p, NULL), 0);
	assert_int_equal(dsv_xform_create(&xh, DSV_F32, DSV_F16, &p, NULL), 0);
	assert_int_equal(dsv_xform_create(&xf, DSV_F32, DSV_F32, &p, NULL), 0);
	dsv_xform_run(xb, bf, in, 4, 0);
	dsv_xform_run(xh, hf, in, 4, 0);
	dsv_xform_run(xf, f, in, 4, 0);
	assert_true((bf[0] & 0x7fc0) == 0x7fc0);
	assert_int_equal(bf[1], 0x7f80);
	assert_int_equal(bf[2], 0xff80);
	assert_int_equal(hf[0] & 0x7e00, 0x7e00);
	assert_int_equal(hf[1], 0x7c00);
	assert_int_equal(hf[2], 0xfc00);
	assert_int_equal(hf[3], 0x7c00); /* float16 overflow -> inf */
	assert_true(isnan(f[0]));
	assert_true(isinf(f[1]) && f[1] > 0);
	/* clip leaves NaN alone */
	p.has_clip = 1;
	p.clip_lo = -1;
	p.clip_hi = 1;
	dsv_xform_destroy(xf);
	assert_int_equal(dsv_xform_create(&xf, DSV_F32, DSV_F32, &p, NULL), 0);
	dsv_xform_run(xf, f, in, 4, 0);
	assert_true(isnan(f[0]));
	assert_true(f[1] == 1 && f[2] == -1 && f[3] == 1);
	dsv_xform_destroy(xb);
	dsv_xform_destroy(xh);
	dsv_xform_destroy(xf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bf16_vectors),
		cmocka_unit_test(test_f16_vectors),
		cmocka_unit_test(test_f16_random_against_reference),
		cmocka_unit_test(test_all_dtypes_against_reference),
		cmocka_unit_test(test_cancellation),
		cmocka_unit_test(test_kernels_identical),
		cmocka_unit_test(test_int64_plain_vectors),
		cmocka_unit_test(test_float_plain_specials),
		cmocka_unit_test(test_f64_to_f16_random),
		cmocka_unit_test(test_negative_zero_formula),
		cmocka_unit_test(test_validation),
		cmocka_unit_test(test_nan_inf_rules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
