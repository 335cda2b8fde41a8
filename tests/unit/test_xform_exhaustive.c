/* Transform kernels, exhaustively: every uint8 and int8 value in every
 * channel, and every int16 value, through each output dtype (float32,
 * bfloat16, float16) and each kind of transform (plain cast, affine, clip,
 * mean/std over 1 to 4 channels, HWC and CHW), on every kernel variant this
 * processor has, each forced in turn. The expected bits are computed here,
 * element by element, in float64 rounded once to float32, then rounded to
 * nearest even to bfloat16 or float16 (xform_test.h), never by the kernels
 * themselves; every variant must give them bit for bit, whole and split
 * into odd-sized calls at unaligned addresses. */
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

typedef struct kind {
	const char *name;
	double scale, offset;
	int nchan;           /* 0: no mean/std */
	uint64_t chan_inner; /* 1: HWC; 0: one run of every value per channel (CHW) */
	int clip;
	double lo, hi;
} kind;

static const kind kinds[] = {
	{ "plain cast", 1, 0, 0, 1, 0, 0, 0 },
	{ "affine", 1.0 / 255, -0.25, 0, 1, 0, 0, 0 },
	{ "affine, clip", 0.7, -3, 0, 1, 1, -40, 90.5 },
	{ "affine, float16 overflow", 3.1, 7, 0, 1, 0, 0, 0 },
	{ "affine, float32 subnormals", 1e-42, 0, 0, 1, 0, 0, 0 },
	{ "affine, float32 overflow", 1.3e34, 5e33, 0, 1, 0, 0, 0 },
	{ "mean/std, 1 channel", 1.0 / 255, 0, 1, 1, 0, 0, 0 },
	{ "mean/std, 2 channels HWC", 1.0 / 255, 0, 2, 1, 0, 0, 0 },
	{ "mean/std, 3 channels HWC", 1.0 / 255, 0, 3, 1, 0, 0, 0 },
	{ "mean/std, 3 channels HWC, clip", 0.5, 1, 3, 1, 1, -1.5, 2.25 },
	{ "mean/std, 3 channels CHW", 1.0 / 255, 0, 3, 0, 0, 0, 0 },
	{ "mean/std, 4 channels HWC", 1.0 / 255, 0, 4, 1, 0, 0, 0 },
};

static const double means[4] = { 0.485, 0.456, 0.406, -7.25 };
static const double stds[4] = { 0.229, 0.224, 0.225, 3e-3 };

/* Round to nearest even on the top 16 bits (no NaN reaches here: every
 * source and parameter is finite, and infinities round to themselves). */
static uint16_t ref_bf16(float f)
{
	uint32_t u = bits(f);
	return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static uint32_t expect(const kind *k, dsv_dtype D, double v, int c)
{
	double y = v * k->scale + k->offset;
	if (k->nchan)
		y = (y - means[c]) / stds[c];
	if (k->clip)
		y = y < k->lo ? k->lo : y > k->hi ? k->hi : y;
	float f = (float)y;
	if (D == DSV_F32)
		return bits(f);
	if (D == DSV_BF16)
		return ref_bf16(f);
	return ref_f64_to_f16((double)f);
}

/* The source: nvals values (every value of the type, from vmin) per
 * channel, in an order that puts different values side by side. */
typedef struct layout {
	uint64_t n, inner;
	int nchan;
	int64_t vmin, nvals;
} layout;

/* A bijection of [0, mask + 1), mask + 1 a power of two: odd multiplies
 * and xor-shifts, so neighbours land anywhere (a lone multiply by the
 * golden ratio spreads any 8 neighbours over the whole range, and a vector
 * of them never holds only large or only small values). */
static uint64_t mix(uint64_t k, uint64_t mask)
{
	uint64_t h = (k * 40503u) & mask;
	h ^= h >> 5;
	h = (h * 0x9e3779b1u) & mask;
	h ^= h >> 7;
	return (h * 2654435761u) & mask;
}

static void elem_at(const layout *l, uint64_t i, int64_t *v, int *c)
{
	uint64_t run = i / l->inner, kth = run / (uint64_t)l->nchan * l->inner + i % l->inner;
	*c = (int)(run % (uint64_t)l->nchan);
	*v = l->vmin + (int64_t)mix(kth + (uint64_t)*c * 977u, (uint64_t)l->nvals - 1);
}

static void put(dsv_dtype S, unsigned char *p, uint64_t i, int64_t v)
{
	if (S == DSV_I16) {
		int16_t h = (int16_t)v;
		memcpy(p + 2 * i, &h, 2);
	} else {
		p[i] = (unsigned char)(int8_t)v;
	}
}

/* Runs the plan over [0, n) in pieces, each one's output at an odd
 * address: sizes in turn, or with first, a piece of first elements and then
 * pieces of 700. */
static void run_split(const dsv_xform *x, size_t os, size_t es, unsigned char *out,
		      const unsigned char *src, uint64_t n, unsigned char *bounce, uint64_t first)
{
	static const uint64_t sizes[] = { 1, 5, 63, 64, 65, 2, 129, 1000, 47, 4096, 3, 17, 700 };
	uint64_t e = 0;
	for (size_t k = 0; e < n; k = (k + 1) % (sizeof(sizes) / sizeof(sizes[0]))) {
		uint64_t want = !first ? sizes[k] : e == 0 ? first : 700;
		uint64_t len = want < n - e ? want : n - e;
		memcpy(bounce + 1, src + e * es, len * es);
		dsv_xform_run(x, bounce + 1 + len * es + 3, bounce + 1, len, e);
		memcpy(out + e * os, bounce + 1 + len * es + 3, len * os);
		e += len;
	}
}

static void check_case(dsv_dtype S, dsv_dtype D, const kind *k)
{
	int64_t vmin = S == DSV_U8 ? 0 : S == DSV_I8 ? -128 : -32768;
	int64_t nvals = S == DSV_I16 ? 65536 : 256;
	int nchan = k->nchan ? k->nchan : 1;
	layout l = { (uint64_t)nvals * (uint64_t)nchan,
		     k->chan_inner ? k->chan_inner : (uint64_t)nvals, nchan, vmin, nvals };
	size_t es = dsv_dtype_size(S), os = dsv_dtype_size(D);
	unsigned char *src = malloc(l.n * es + 1), *got = malloc(l.n * os + 3),
		      *bounce = malloc(4096 * (es + os) + 8);
	uint32_t *want = malloc(l.n * sizeof(uint32_t));
	dsv_xform_params p;
	dsv_xform *x;
	dsv_errbuf eb;
	assert_non_null(src);
	assert_non_null(got);
	assert_non_null(bounce);
	assert_non_null(want);
	for (uint64_t i = 0; i < l.n; i++) {
		int64_t v;
		int c;
		elem_at(&l, i, &v, &c);
		put(S, src + 1, i, v);
		want[i] = expect(k, D, (double)v, c);
	}
	dsv_xform_params_init(&p);
	p.scale = k->scale;
	p.offset = k->offset;
	if (k->nchan) {
		p.nchan = k->nchan;
		p.mean = means;
		p.std = stds;
		p.chan_inner = l.inner;
	}
	p.has_clip = k->clip;
	p.clip_lo = k->lo;
	p.clip_hi = k->hi;
	if (dsv_xform_create(&x, S, D, &p, &eb))
		fail_msg("create: %s", eb.msg);
	for (size_t lv = 0; dsv_xform_kernel_at(lv); lv++) {
		const char *name = dsv_xform_kernel_at(lv);
		if (dsv_xform_force_kernel(name))
			continue; /* this processor lacks it */
		/* whole; split in odd sizes; split after a first piece of 1 or
		 * 2 elements, so long pieces start at every channel of a pixel */
		for (int split = 0; split < 4; split++) {
			memset(got, 0xa5, l.n * os + 3);
			if (split)
				run_split(x, os, es, got + 3, src + 1, l.n, bounce,
					  (uint64_t)split - 1);
			else
				dsv_xform_run(x, got + 3, src + 1, l.n, 0);
			for (uint64_t i = 0; i < l.n; i++) {
				uint32_t g = 0;
				memcpy(&g, got + 3 + i * os, os);
				if (g != want[i]) {
					int64_t v;
					int c;
					elem_at(&l, i, &v, &c);
					fail_msg("%s, %s %s->%s%s: element %llu (value %lld, "
						 "channel %d): got 0x%x, want 0x%x",
						 name, k->name, dsv_dtype_name(S),
						 dsv_dtype_name(D), split ? ", split" : "",
						 (unsigned long long)i, (long long)v, c, g,
						 want[i]);
				}
			}
		}
	}
	assert_int_equal(dsv_xform_force_kernel("scalar"), 0);
	dsv_xform_destroy(x);
	free(src);
	free(got);
	free(bounce);
	free(want);
}

static void check_source(dsv_dtype S)
{
	static const dsv_dtype outs[] = { DSV_F32, DSV_BF16, DSV_F16 };
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		for (size_t o = 0; o < 3; o++)
			check_case(S, outs[o], &kinds[k]);
}

static void test_u8_every_value(void **state)
{
	(void)state;
	check_source(DSV_U8);
}

static void test_i8_every_value(void **state)
{
	(void)state;
	check_source(DSV_I8);
}

static void test_i16_every_value(void **state)
{
	(void)state;
	check_source(DSV_I16);
}

#if defined(__x86_64__)
/* The avx512 direct kernels' float32 -> float16/bfloat16 conversions
 * (vcvtps2ph; the integer rounding; vcvtneps2bf16, which reads subnormals
 * as zero, with its fallback) against dsv_f32_to_f16/bf16 on every high
 * half of a float (every sign, exponent and top mantissa) with low halves
 * at and around the rounding ties, in order and shuffled (vectors mixing
 * subnormal and normal lanes). */
static void test_half_conversions(void **state)
{
	static const uint16_t lows[] = { 0x0000, 0x0001, 0x0002, 0x3fff, 0x4000, 0x7ffe,
					 0x7fff, 0x8000, 0x8001, 0x8002, 0xbfff, 0xc000,
					 0xfffe, 0xffff, 0x1234, 0x9abc };
	size_t nl = sizeof(lows) / sizeof(lows[0]), n = 65536 * nl;
	float *f = malloc(n * sizeof(float));
	uint16_t *got = malloc(n * sizeof(uint16_t));
	unsigned seed = 7;
	(void)state;
	assert_non_null(f);
	assert_non_null(got);
	for (size_t i = 0; i < n; i++)
		f[i] = f32((uint32_t)(i / nl) << 16 | lows[i % nl]);
	for (int pass = 0; pass < 2; pass++) {
		if (pass) /* shuffled */
			for (size_t i = n - 1; i > 0; i--) {
				seed = seed * 1103515245u + 12345u;
				size_t j = (seed >> 4) % (i + 1);
				float t = f[i];
				f[i] = f[j];
				f[j] = t;
			}
		for (int how = 0; how < 3; how++) {
			if (dsv_xform_force_kernel(how < 2 ? "avx512" : "avx512bf16"))
				continue; /* this processor lacks it */
			dsv_xform_halves_avx512(got, f, n, how);
			for (size_t i = 0; i < n; i++) {
				uint16_t want = how ? dsv_f32_to_bf16(f[i]) : dsv_f32_to_f16(f[i]);
				if (got[i] != want)
					fail_msg("conversion %d of 0x%08x: got 0x%04x, want 0x%04x",
						 how, bits(f[i]), got[i], want);
			}
		}
	}
	assert_int_equal(dsv_xform_force_kernel("scalar"), 0);
	free(f);
	free(got);
}
#endif

/* The variants the tests above force: scalar always, and every name is
 * one dsv_xform_force_kernel knows. */
static void test_variant_list(void **state)
{
	size_t n = 0;
	(void)state;
	assert_string_equal(dsv_xform_kernel_at(0), "scalar");
	for (; dsv_xform_kernel_at(n); n++) {
		int err = dsv_xform_force_kernel(dsv_xform_kernel_at(n));
		assert_true(err == 0 || err == DSV_ERR_UNSUPPORTED);
	}
	assert_true(n >= 1);
	assert_int_equal(dsv_xform_force_kernel("scalar"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_variant_list),
		cmocka_unit_test(test_u8_every_value),
		cmocka_unit_test(test_i8_every_value),
		cmocka_unit_test(test_i16_every_value),
#if defined(__x86_64__)
		cmocka_unit_test(test_half_conversions),
#endif
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
