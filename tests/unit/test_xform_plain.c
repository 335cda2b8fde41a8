/* Plain casts are exact (numpy's astype): int64/uint64 at the rounding
 * boundaries, -0.0, NaN payloads, infinities and subnormals of every float
 * source into every output on every kernel variant, float64 -> float16
 * rounded once; with a transform declared, -0.0 follows the formula. */
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

/* Runs a plain cast of one element of S (its bits in in) to each output
 * on every kernel variant this CPU has; checks the bits. */
static void check_plain_elem(dsv_dtype S, uint64_t in, const uint32_t want[3])
{
	static const dsv_dtype outs[] = { DSV_F32, DSV_BF16, DSV_F16 };
	/* a run of 37 copies, so the vector loops and their tails both see it */
	unsigned char src[37 * 8 + 1], dst[37 * 4 + 1];
	size_t es = dsv_dtype_size(S);
	for (size_t i = 0; i < 37; i++)
		memcpy(src + 1 + i * es, &in, es); /* little-endian host */
	for (size_t k = 0; dsv_xform_kernel_at(k); k++) {
		if (dsv_xform_force_kernel(dsv_xform_kernel_at(k)))
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
						 dsv_xform_kernel_at(k), dsv_dtype_name(S),
						 (unsigned long long)in, dsv_dtype_name(outs[b]), i,
						 got, want[b]);
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
			u = (u & ~0x3ffffffffffull) + 0x20000000000ull +
			    (uint64_t)(rand_r(&seed) % 3) - 1;
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_int64_plain_vectors),
		cmocka_unit_test(test_float_plain_specials),
		cmocka_unit_test(test_f64_to_f16_random),
		cmocka_unit_test(test_negative_zero_formula),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
