/* Transform: integer outputs (every pair at the range limits, with and
 * without clip, every error with its key), the per-element mean/std path
 * against a float64 reference and across kernel variants, and
 * dsv_elems_to_f64. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsview/xform.h"
#include "xform_test.h"
#include "xform/kernel_test.h"

static const dsv_dtype ints[] = { DSV_U8,  DSV_I8,  DSV_U16, DSV_I16,
				  DSV_U32, DSV_I32, DSV_U64, DSV_I64 };

typedef __int128 i128; /* the reference: every value of every type, exactly */

static int is_signed(dsv_dtype t)
{
	return t == DSV_I8 || t == DSV_I16 || t == DSV_I32 || t == DSV_I64;
}

static i128 tmin(dsv_dtype t)
{
	return is_signed(t) ? -((i128)1 << (dsv_dtype_size(t) * 8 - 1)) : 0;
}

static i128 tmax(dsv_dtype t)
{
	return ((i128)1 << (dsv_dtype_size(t) * 8 - is_signed(t))) - 1;
}

static i128 get(dsv_dtype t, const unsigned char *p)
{
	uint64_t u = 0;
	memcpy(&u, p, dsv_dtype_size(t)); /* little-endian */
	unsigned bits = (unsigned)dsv_dtype_size(t) * 8;
	if (bits < 64 && is_signed(t) && (u >> (bits - 1)) & 1)
		return (i128)u - ((i128)1 << bits);
	if (bits == 64 && is_signed(t))
		return (i128)(int64_t)u;
	return (i128)u;
}

static void put(dsv_dtype t, unsigned char *p, i128 v)
{
	uint64_t u = (uint64_t)v; /* two's complement, cut to the size */
	memcpy(p, &u, dsv_dtype_size(t));
}

/* The source's interesting values: its limits and the output's, near each. */
static size_t limits(dsv_dtype s, dsv_dtype d, i128 *v)
{
	i128 base[] = { tmin(s), tmax(s), tmin(d), tmax(d), 0, 1000, -1000 };
	size_t n = 0;
	for (size_t k = 0; k < sizeof(base) / sizeof(base[0]); k++)
		for (int e = -2; e <= 2; e++)
			if (base[k] + e >= tmin(s) && base[k] + e <= tmax(s))
				v[n++] = base[k] + e;
	return n;
}

/* The largest double <= tmax(d) and the smallest >= tmin(d): whole bounds
 * a clip may give (2^63 - 1 and 2^64 - 1 are no doubles). */
static double dmax(dsv_dtype d)
{
	return dsv_dtype_size(d) == 8 ? ldexp(1.0, is_signed(d) ? 63 : 64) - 4096 : (double)tmax(d);
}

static void run_pair(dsv_dtype s, dsv_dtype d, const dsv_xform_params *p, int expect_ok)
{
	i128 v[64];
	size_t n = limits(s, d, v);
	unsigned char src[64 * 8 + 1], out[64 * 8 + 3];
	dsv_xform *x;
	dsv_errbuf eb = { 0 };
	int err = dsv_xform_create(&x, s, d, p, &eb);
	if (!expect_ok) {
		char want[128];
		assert_int_equal(err, DSV_ERR_INVALID);
		assert_string_equal(eb.key, "dtype");
		snprintf(want, sizeof(want), "%s values may not fit %s (give clip = LOW HIGH)",
			 dsv_dtype_name(s), dsv_dtype_name(d));
		assert_string_equal(eb.msg, want);
		return;
	}
	if (err)
		fail_msg("%s->%s: %s", dsv_dtype_name(s), dsv_dtype_name(d), eb.msg);
	for (size_t i = 0; i < n; i++)
		put(s, src + 1 + i * dsv_dtype_size(s), v[i]); /* unaligned on purpose */
	for (size_t k = 0; dsv_xform_kernel_at(k); k++) {
		if (dsv_xform_force_kernel(dsv_xform_kernel_at(k)))
			continue;
		memset(out, 0xa5, sizeof(out));
		dsv_xform_run(x, out + 3, src + 1, n, 0);
		for (size_t i = 0; i < n; i++) {
			i128 want = v[i];
			if (p->has_clip) {
				i128 lo = (i128)p->clip_lo, hi = (i128)p->clip_hi;
				want = want < lo ? lo : want > hi ? hi : want;
			}
			i128 got = get(d, out + 3 + i * dsv_dtype_size(d));
			if (got != want)
				fail_msg("%s %s->%s clip %d: elem %zu = %lld got %lld want %lld",
					 dsv_xform_kernel_at(k), dsv_dtype_name(s),
					 dsv_dtype_name(d), p->has_clip, i, (long long)v[i],
					 (long long)got, (long long)want);
		}
		assert_int_equal(out[2], 0xa5); /* nothing before or after */
		assert_int_equal(out[3 + n * dsv_dtype_size(d)], 0xa5);
	}
	dsv_xform_destroy(x);
}

static void test_int_pairs(void **state)
{
	(void)state;
	for (size_t a = 0; a < 8; a++) {
		for (size_t b = 0; b < 8; b++) {
			dsv_dtype s = ints[a], d = ints[b];
			dsv_xform_params p;
			dsv_xform_params_init(&p);
			run_pair(s, d, &p, tmin(s) >= tmin(d) && tmax(s) <= tmax(d));
			p.has_clip = 1; /* the whole output range */
			p.clip_lo = (double)tmin(d);
			p.clip_hi = dmax(d);
			run_pair(s, d, &p, 1);
			p.clip_lo = -3; /* a narrow one, crossing zero where it may */
			p.clip_hi = 100;
			if (!is_signed(d))
				p.clip_lo = 3;
			run_pair(s, d, &p, 1);
			p.clip_lo = p.clip_hi = (double)tmin(d); /* one value */
			run_pair(s, d, &p, 1);
		}
	}
	assert_int_equal(dsv_xform_force_kernel("scalar"), 0);
}

/* Clip intervals outside the source's range: every output is one bound. */
static void test_int_fill(void **state)
{
	dsv_xform_params p;
	dsv_xform *x;
	uint8_t s8[5] = { 0, 1, 128, 254, 255 };
	uint16_t s16[3] = { 0, 1000, 65535 };
	int16_t o16[5];
	int8_t o8[3];
	uint64_t s64[3] = { 0, (uint64_t)1 << 63, UINT64_MAX }, o64[3];
	(void)state;
	dsv_xform_params_init(&p);
	p.has_clip = 1;
	p.clip_lo = 300;
	p.clip_hi = 400;
	assert_int_equal(dsv_xform_create(&x, DSV_U8, DSV_I16, &p, NULL), 0);
	dsv_xform_run(x, o16, s8, 5, 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(o16[i], 300);
	dsv_xform_destroy(x);
	p.clip_lo = -100;
	p.clip_hi = -50;
	assert_int_equal(dsv_xform_create(&x, DSV_U16, DSV_I8, &p, NULL), 0);
	dsv_xform_run(x, o8, s16, 3, 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(o8[i], -50);
	dsv_xform_destroy(x);
	/* uint64 above INT64_MAX clamps in integer arithmetic */
	p.clip_lo = 1;
	p.clip_hi = ldexp(1.0, 63); /* 2^63 */
	assert_int_equal(dsv_xform_create(&x, DSV_U64, DSV_U64, &p, NULL), 0);
	dsv_xform_run(x, o64, s64, 3, 0);
	assert_true(o64[0] == 1 && o64[1] == (uint64_t)1 << 63 && o64[2] == (uint64_t)1 << 63);
	dsv_xform_destroy(x);
	/* INT64_MAX written as a bound arrives as 2^63, and means INT64_MAX */
	int64_t i64[3];
	assert_int_equal(dsv_xform_create(&x, DSV_U64, DSV_I64, &p, NULL), 0);
	dsv_xform_run(x, i64, s64, 3, 0);
	assert_true(i64[0] == 1 && i64[1] == INT64_MAX && i64[2] == INT64_MAX);
	dsv_xform_destroy(x);
}

static void expect_err(dsv_dtype s, dsv_dtype d, const dsv_xform_params *p, const char *key,
		       const char *msg)
{
	dsv_xform *x = (dsv_xform *)&x;
	dsv_errbuf eb = { 0 };
	assert_int_equal(dsv_xform_create(&x, s, d, p, &eb), DSV_ERR_INVALID);
	assert_null(x);
	assert_string_equal(eb.key, key);
	assert_string_equal(eb.msg, msg);
}

static void test_int_errors(void **state)
{
	double mean = 0, sd = 1;
	dsv_xform_params p;
	(void)state;
	dsv_xform_params_init(&p);
	expect_err(DSV_F32, DSV_I16, &p, "dtype",
		   "an integer output (int16) needs an integer source, not float32");
	expect_err(DSV_F16, DSV_U8, &p, "dtype",
		   "an integer output (uint8) needs an integer source, not float16");
	expect_err(DSV_U32, DSV_I16, &p, "dtype",
		   "uint32 values may not fit int16 (give clip = LOW HIGH)");
	expect_err(DSV_I8, DSV_U64, &p, "dtype",
		   "int8 values may not fit uint64 (give clip = LOW HIGH)");
	expect_err(DSV_U64, DSV_I64, &p, "dtype",
		   "uint64 values may not fit int64 (give clip = LOW HIGH)");
	p.scale = 2;
	expect_err(DSV_I16, DSV_I64, &p, "dtype",
		   "an integer output (int64) takes no scale, offset, mean or std");
	dsv_xform_params_init(&p);
	p.offset = 1;
	expect_err(DSV_I16, DSV_I64, &p, "dtype",
		   "an integer output (int64) takes no scale, offset, mean or std");
	dsv_xform_params_init(&p);
	p.nchan = 1;
	p.mean = &mean;
	p.std = &sd;
	expect_err(DSV_I16, DSV_I64, &p, "dtype",
		   "an integer output (int64) takes no scale, offset, mean or std");
	dsv_xform_params_init(&p);
	p.has_clip = 1;
	p.clip_lo = 0.5;
	p.clip_hi = 10;
	expect_err(DSV_I16, DSV_I8, &p, "clip",
		   "clip = 0.5 10: bounds must be whole numbers from -128 to 127 (the int8 range)");
	p.clip_lo = -129;
	expect_err(
		DSV_I16, DSV_I8, &p, "clip",
		"clip = -129 10: bounds must be whole numbers from -128 to 127 (the int8 range)");
	p.clip_lo = 0;
	p.clip_hi = 65536;
	expect_err(
		DSV_I32, DSV_U16, &p, "clip",
		"clip = 0 65536: bounds must be whole numbers from 0 to 65535 (the uint16 range)");
	/* 2^63 is how INT64_MAX arrives (test_int_clip_limits); 2^64 is past it */
	p.clip_hi = ldexp(1.0, 64);
	expect_err(DSV_U64, DSV_I64, &p, "clip",
		   "clip = 0 1.8446744073709552e+19: bounds must be whole numbers from "
		   "-9223372036854775808 to 9223372036854775807 (the int64 range)");
	p.clip_lo = -1;
	p.clip_hi = 5;
	expect_err(DSV_I8, DSV_U32, &p, "clip",
		   "clip = -1 5: bounds must be whole numbers from 0 to 4294967295 (the uint32 "
		   "range)");
	p.clip_lo = 6;
	expect_err(DSV_I8, DSV_U32, &p, "clip", "clip needs LOW <= HIGH");
	p.clip_lo = NAN;
	p.clip_hi = 1;
	expect_err(DSV_I8, DSV_U32, &p, "clip",
		   "clip = nan 1: bounds must be whole numbers from 0 to 4294967295 (the uint32 "
		   "range)");
	dsv_xform_params_init(&p);
	expect_err(DSV_U8, DSV_F64, &p, "",
		   "output dtype must be float32, bfloat16, float16 or an integer type");
}

/* The plan's output for elements [e0, e0 + n) against the formula in
 * float64 rounded once, per-element mean/std (chan_inner 1). */
static void check_elementwise(dsv_dtype S, dsv_dtype D, int nchan, int clip, uint64_t n,
			      uint64_t e0)
{
	double *mean = malloc(sizeof(double) * (size_t)nchan),
	       *sd = malloc(sizeof(double) * (size_t)nchan);
	size_t es = dsv_dtype_size(S), os = dsv_dtype_size(D);
	unsigned char *src = malloc(n * es + 1), *ref = malloc(n * os), *got = malloc(n * os + 2);
	double *xv = malloc(sizeof(double) * n);
	unsigned seed = (unsigned)(nchan + S * 13 + D);
	dsv_xform_params p;
	dsv_xform *x;
	for (int c = 0; c < nchan; c++) {
		mean[c] = (double)(rand_r(&seed) % 20001 - 10000) / 7.0;
		sd[c] = 0.01 + (double)(rand_r(&seed) % 1000) / 3.0;
	}
	for (size_t i = 0; i < n * es; i++)
		src[1 + i] = (unsigned char)rand_r(&seed);
	if (S == DSV_F16) /* no NaN/inf halves: the reference compares bits */
		for (size_t i = 0; i < n; i++)
			src[1 + i * 2 + 1] &= 0x7b;
	dsv_elems_to_f64(S, src + 1, n, xv);
	dsv_xform_params_init(&p);
	p.scale = 0.37;
	p.offset = -1.5;
	p.nchan = nchan;
	p.mean = mean;
	p.std = sd;
	p.chan_inner = 1;
	p.has_clip = clip;
	p.clip_lo = -3;
	p.clip_hi = 2.5;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t c = (e0 + i) % (uint64_t)nchan;
		double y = (xv[i] * p.scale + p.offset - mean[c]) / sd[c];
		if (clip)
			y = y < p.clip_lo ? p.clip_lo : y > p.clip_hi ? p.clip_hi : y;
		float f = (float)y;
		uint32_t w = D == DSV_F32    ? bits(f)
			     : D == DSV_BF16 ? dsv_f32_to_bf16(f)
					     : dsv_f32_to_f16(f);
		memcpy(ref + i * os, &w, os);
	}
	assert_int_equal(dsv_xform_create(&x, S, D, &p, NULL), 0);
	for (size_t k = 0; dsv_xform_kernel_at(k); k++) {
		if (dsv_xform_force_kernel(dsv_xform_kernel_at(k)))
			continue;
		/* in pieces that start and stop mid-row, as reads do */
		for (uint64_t at = 0; at < n;) {
			uint64_t len = 1 + (uint64_t)rand_r(&seed) % (n / 3 + 1);
			if (len > n - at)
				len = n - at;
			dsv_xform_run(x, got + 2 + at * os, src + 1 + at * es, len, e0 + at);
			at += len;
		}
		for (uint64_t i = 0; i < n; i++)
			if (memcmp(got + 2 + i * os, ref + i * os, os))
				fail_msg("%s %s->%s nchan %d clip %d: elem %llu differs",
					 dsv_xform_kernel_at(k), dsv_dtype_name(S),
					 dsv_dtype_name(D), nchan, clip, (unsigned long long)i);
	}
	assert_int_equal(dsv_xform_force_kernel("scalar"), 0);
	dsv_xform_destroy(x);
	free(mean);
	free(sd);
	free(src);
	free(ref);
	free(got);
	free(xv);
}

static void test_elementwise(void **state)
{
	static const dsv_dtype srcs[] = { DSV_I16, DSV_U8,  DSV_I8,  DSV_U16, DSV_I32,
					  DSV_U64, DSV_I64, DSV_F16, DSV_F32, DSV_F64 };
	static const dsv_dtype outs[] = { DSV_F32, DSV_BF16, DSV_F16 };
	(void)state;
	for (size_t a = 0; a < sizeof(srcs) / sizeof(srcs[0]); a++)
		for (size_t b = 0; b < 3; b++)
			for (int clip = 0; clip < 2; clip++) {
				check_elementwise(srcs[a], outs[b], 100000, clip, 250007, 99990);
				check_elementwise(srcs[a], outs[b], 5, clip, 9001, 3);
			}
	check_elementwise(DSV_U8, DSV_F32, 3, 0, 4099, 1);       /* the 8-bit table (RGB) */
	check_elementwise(DSV_I8, DSV_BF16, 20000, 1, 50001, 7); /* past the table cap */
}

static void test_elems_to_f64(void **state)
{
	uint8_t u8[3] = { 0, 128, 255 };
	int8_t i8[3] = { -128, -1, 127 };
	uint16_t u16[2] = { 0, 65535 };
	int16_t i16[2] = { -32768, 32767 };
	uint32_t u32[2] = { 0, 4294967295u };
	int32_t i32[2] = { INT32_MIN, INT32_MAX };
	uint64_t u64[2] = { (uint64_t)1 << 53, UINT64_MAX };
	int64_t i64[2] = { INT64_MIN, -((int64_t)1 << 53) - 1 };
	uint16_t f16[4] = { 0x3c00, 0xc000, 0x0001, 0x7c00 };
	uint16_t bf16[2] = { 0x3f80, 0xc0a0 };
	float f32v[2] = { 0.1f, -3e38f };
	double f64v[2] = { 0.1, -1e300 }, o[5];
	unsigned char un[1 + 2 * 8];
	(void)state;
	dsv_elems_to_f64(DSV_U8, u8, 3, o);
	assert_true(o[0] == 0 && o[1] == 128 && o[2] == 255);
	dsv_elems_to_f64(DSV_I8, i8, 3, o);
	assert_true(o[0] == -128 && o[1] == -1 && o[2] == 127);
	dsv_elems_to_f64(DSV_U16, u16, 2, o);
	assert_true(o[0] == 0 && o[1] == 65535);
	dsv_elems_to_f64(DSV_I16, i16, 2, o);
	assert_true(o[0] == -32768 && o[1] == 32767);
	dsv_elems_to_f64(DSV_U32, u32, 2, o);
	assert_true(o[0] == 0 && o[1] == 4294967295.0);
	dsv_elems_to_f64(DSV_I32, i32, 2, o);
	assert_true(o[0] == -2147483648.0 && o[1] == 2147483647.0);
	dsv_elems_to_f64(DSV_U64, u64, 2, o);
	assert_true(o[0] == ldexp(1, 53) && o[1] == ldexp(1, 64));
	dsv_elems_to_f64(DSV_I64, i64, 2, o);
	assert_true(o[0] == -ldexp(1, 63) && o[1] == -ldexp(1, 53)); /* 2^53 + 1 ties to even */
	dsv_elems_to_f64(DSV_F16, f16, 4, o);
	assert_true(o[0] == 1 && o[1] == -2 && o[2] == ldexp(1, -24) && isinf(o[3]));
	dsv_elems_to_f64(DSV_BF16, bf16, 2, o);
	assert_true(o[0] == 1 && o[1] == -5);
	dsv_elems_to_f64(DSV_F32, f32v, 2, o);
	assert_true(o[0] == (double)0.1f && o[1] == (double)-3e38f);
	dsv_elems_to_f64(DSV_F64, f64v, 2, o);
	assert_true(o[0] == 0.1 && o[1] == -1e300);
	memcpy(un + 1, f64v, sizeof(f64v)); /* unaligned */
	dsv_elems_to_f64(DSV_F64, un + 1, 2, o);
	assert_true(o[0] == 0.1 && o[1] == -1e300);
	memcpy(un + 1, i16, sizeof(i16));
	dsv_elems_to_f64(DSV_I16, un + 1, 2, o);
	assert_true(o[0] == -32768 && o[1] == 32767);
}

static void test_dtype_helpers(void **state)
{
	(void)state;
	for (int t = 0; t < DSV_DTYPE__COUNT; t++) {
		int is_int = t <= DSV_I64;
		assert_int_equal(dsv_dtype_is_int((dsv_dtype)t), is_int);
		assert_int_equal(dsv_dtype_is_float((dsv_dtype)t), !is_int);
		assert_int_equal(dsv_dtype_is_output((dsv_dtype)t), t != DSV_F64);
	}
	assert_false(dsv_dtype_is_int(DSV_DTYPE_INVALID));
	assert_false(dsv_dtype_is_output(DSV_DTYPE_INVALID));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_int_pairs),    cmocka_unit_test(test_int_fill),
		cmocka_unit_test(test_int_errors),   cmocka_unit_test(test_elementwise),
		cmocka_unit_test(test_elems_to_f64), cmocka_unit_test(test_dtype_helpers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
