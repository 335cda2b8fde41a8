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
#include "xform_test.h"
#include "xform/kernel_test.h"

static void test_bf16_vectors(void **state)
{
	static const struct {
		uint32_t in;
		uint16_t out;
	} v[] = {
		{ 0x3f800000, 0x3f80 },                         /* 1.0 */
		{ 0x3f808000, 0x3f80 },                         /* tie, even stays */
		{ 0x3f818000, 0x3f82 },                         /* tie, odd rounds up */
		{ 0x3f808001, 0x3f81 },                         /* just above tie */
		{ 0x3f807fff, 0x3f80 },                         /* just below tie */
		{ 0x3fff8000, 0x4000 },                         /* rounds across the exponent */
		{ 0x7f7fffff, 0x7f80 },                         /* max float -> inf */
		{ 0x7f800000, 0x7f80 }, { 0xff800000, 0xff80 }, /* +-inf */
		{ 0x00000000, 0x0000 }, { 0x80000000, 0x8000 }, /* +-0 */
		{ 0x00000001, 0x0000 },                         /* smallest subnormal -> 0 */
		{ 0x00018000, 0x0002 },                         /* subnormal tie to even */
		{ 0x7fc00000, 0x7fc0 },                         /* quiet NaN */
		{ 0x7f800001, 0x7fc0 },                         /* signalling NaN -> quiet */
		{ 0xff800001, 0xffc0 },                         /* negative sNaN keeps sign */
		{ 0x7fbfffff, 0x7fff }, /* NaN whose rounding would carry: stays NaN */
	};
	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (dsv_f32_to_bf16(f32(v[i].in)) != v[i].out)
			fail_msg("bf16(0x%08x) = 0x%04x, want 0x%04x", v[i].in,
				 dsv_f32_to_bf16(f32(v[i].in)), v[i].out);
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
			fail_msg("f16(%.10g) = 0x%04x, want 0x%04x", (double)v[i].in,
				 dsv_f32_to_f16(v[i].in), v[i].out);
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
			fail_msg("f16(0x%08x) = 0x%04x, reference 0x%04x", u, dsv_f32_to_f16(f),
				 f16_ref(f));
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
		float v = i % 97 == 5   ? NAN
			  : i % 89 == 3 ? -INFINITY
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
		uint32_t want = D == DSV_F32    ? bits(f)
				: D == DSV_BF16 ? dsv_f32_to_bf16(f)
						: dsv_f32_to_f16(f);
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
			check_plan(srcs[a], outs[b], &p, 1002,
				   0); /* overflows to -inf, NaN stays */
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
	static const dsv_dtype srcs[] = { DSV_U8,  DSV_I8,  DSV_I16, DSV_F32, DSV_F16, DSV_F64,
					  DSV_U16, DSV_U32, DSV_I32, DSV_U64, DSV_I64 };
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
				unsigned char *src = malloc(n * 8 + 3), *ref = malloc(n * 4 + 3),
					      *got = malloc(n * 4 + 3);
				fill_random(srcs[a], src + 3, n, &seed);
				assert_int_equal(dsv_xform_create(&x, srcs[a], outs[b], &p, NULL),
						 0);
				assert_int_equal(dsv_xform_force_kernel("scalar"), 0);
				dsv_xform_run(x, ref + 1, src + 3, n, 5);
				for (size_t k = 1; dsv_xform_kernel_at(k); k++) {
					const char *name = dsv_xform_kernel_at(k);
					if (dsv_xform_force_kernel(name))
						continue; /* this CPU lacks it */
					memset(got, 0xa5, n * 4 + 3);
					dsv_xform_run(x, got + 2, src + 3, n, 5);
					if (memcmp(got + 2, ref + 1, n * dsv_dtype_size(outs[b])))
						fail_msg("%s differs from scalar for %s->%s layout "
							 "%d",
							 name, dsv_dtype_name(srcs[a]),
							 dsv_dtype_name(outs[b]), layout);
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
	assert_int_equal(dsv_xform_create(&x, DSV_F32, DSV_I16, &p, &eb), DSV_ERR_INVALID);
	assert_int_equal(dsv_xform_create(&x, DSV_U8, DSV_F64, &p, &eb), DSV_ERR_INVALID);
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
		cmocka_unit_test(test_validation),
		cmocka_unit_test(test_nan_inf_rules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
