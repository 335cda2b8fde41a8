/*
 * The avx512 variants' direct kernel for 16- and 32-bit integer sources
 * (int16, uint16, int32, uint32) in runs of one channel, written with
 * intrinsics so bfloat16 and float16 outputs cost about what float32
 * does: elements widened exactly to float64 (load8_pd), the formula in
 * the order dsv_elem_apply does it (multiply, add, subtract, divide, clip:
 * separate IEEE operations, no FMA), rounded once to float32 by vcvtpd2ps
 * (round to nearest even, as the C conversion), then to the output:
 *  - bfloat16: dsv_elem_f32_to_bf16's integer rounding on 16 lanes (the
 *    same adds, shifts and NaN select), narrowed by vpmovdw; in the
 *    avx512bf16 variant vcvtne(2)ps2bf16, except for vectors holding a
 *    subnormal float32, which it reads as zero;
 *  - float16: vcvtps2ph, round to nearest even.
 * test_half_conversions compares these conversions with dsv_f32_to_bf16
 * and dsv_f32_to_f16 on every high half of a float (low halves at and
 * around the ties), and test_xform_exhaustive every int16 through each
 * output and transform. A plain cast converts to float32 directly
 * (vcvtdq2ps, vcvtudq2ps: one rounding, as the C cast). Every variant
 * gives the same bytes; the unit tests compare them.
 */
#include <stdint.h>
#include <string.h>

#include "xform/kernel_test.h"
#include "xform/xform_elem.h"
#include "xform/xform_i.h"

int dsv_xform_hw_bf16; /* xform_i.h */

#if defined(__x86_64__)
#include <immintrin.h>

/* Every function here may inline the BF16 conversions, so all are built
 * for AVX512 BF16; those instructions run in the avx512bf16 variant alone
 * (hw 1: objdump shows vcvtne(2)ps2bf16 in the run_*_BF16_1 functions and
 * dsv_xform_halves_avx512 only). */
#define AVX512BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))
#define AVX512 AVX512BF16
#define INLINE static inline __attribute__((always_inline))
#define ESIZE(S) ((S) == DSV_I16 || (S) == DSV_U16 ? 2u : 4u) /* a constant where inlined */

/* The first m (<= 16) elements of S at s as 32-bit integers (signed, or
 * unsigned bits); masked loads read nothing past them. */
INLINE AVX512 __m512i load16(dsv_dtype S, const void *s, unsigned m)
{
	__mmask16 km = (__mmask16)((1u << m) - 1);
	if (m == 16) /* a constant where inlined: plain loads */
		return S == DSV_I16   ? _mm512_cvtepi16_epi32(_mm256_loadu_si256(s))
		       : S == DSV_U16 ? _mm512_cvtepu16_epi32(_mm256_loadu_si256(s))
				      : _mm512_loadu_si512(s);
	switch (S) {
	case DSV_I16: return _mm512_cvtepi16_epi32(_mm256_maskz_loadu_epi16(km, s));
	case DSV_U16: return _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(km, s));
	default: return _mm512_maskz_loadu_epi32(km, s);
	}
}

/* The first m (<= 8) elements of S at s as float64, exactly: widened to
 * 64-bit integers q (|q| < 2^51), whose sum with the bits of 2^52 + 2^51
 * are the bits of the double 2^52 + 2^51 + q, from which subtracting
 * 2^52 + 2^51 leaves q (xform_bench: faster here than vcvtdq2pd). */
INLINE AVX512 __m512d load8_pd(dsv_dtype S, const void *s, unsigned m)
{
	__mmask8 km = (__mmask8)((1u << m) - 1);
	__m512i q;
	if (m == 8) /* a constant where inlined: plain loads */
		q = S == DSV_I16   ? _mm512_cvtepi16_epi64(_mm_loadu_si128(s))
		    : S == DSV_U16 ? _mm512_cvtepu16_epi64(_mm_loadu_si128(s))
		    : S == DSV_I32 ? _mm512_cvtepi32_epi64(_mm256_loadu_si256(s))
				   : _mm512_cvtepu32_epi64(_mm256_loadu_si256(s));
	else
		switch (S) {
		case DSV_I16: q = _mm512_cvtepi16_epi64(_mm_maskz_loadu_epi16(km, s)); break;
		case DSV_U16: q = _mm512_cvtepu16_epi64(_mm_maskz_loadu_epi16(km, s)); break;
		case DSV_I32: q = _mm512_cvtepi32_epi64(_mm256_maskz_loadu_epi32(km, s)); break;
		default: q = _mm512_cvtepu32_epi64(_mm256_maskz_loadu_epi32(km, s)); break;
		}
	__m512i magic = _mm512_set1_epi64(0x4338000000000000ll);
	return _mm512_sub_pd(_mm512_castsi512_pd(_mm512_add_epi64(q, magic)),
			     _mm512_set1_pd(6755399441055744.0));
}

typedef struct coef {
	__m512d sc, of, m, sd, lo, hi;
	int mode; /* 0: plain cast, 1: affine, 2: formula, 3: formula and clip */
} coef;

INLINE AVX512 __m512d formula(const coef *k, __m512d d)
{
	d = _mm512_add_pd(_mm512_mul_pd(d, k->sc), k->of);
	if (k->mode == 1)
		return d;
	d = _mm512_div_pd(_mm512_sub_pd(d, k->m), k->sd);
	if (k->mode == 3) {
		/* y < lo ? lo : (y > hi ? hi : y); NaN compares false */
		__mmask8 below = _mm512_cmp_pd_mask(d, k->lo, _CMP_LT_OQ);
		__mmask8 above = _mm512_cmp_pd_mask(d, k->hi, _CMP_GT_OQ);
		d = _mm512_mask_blend_pd(above, d, k->hi);
		d = _mm512_mask_blend_pd(below, d, k->lo);
	}
	return d;
}

/* The first m (<= 16) elements of S at s, formula applied (mode >= 1), as
 * float32 rounded once: elements 0-7 in *lo, 8-15 in *hi. */
INLINE AVX512 void halves(dsv_dtype S, const coef *k, const void *s, unsigned m, __m256 *lo,
			  __m256 *hi)
{
	*lo = _mm512_cvtpd_ps(formula(k, load8_pd(S, s, m < 8 ? m : 8)));
	*hi = _mm256_setzero_ps();
	if (m > 8)
		*hi = _mm512_cvtpd_ps(
			formula(k, load8_pd(S, (const char *)s + 8 * ESIZE(S), m - 8)));
}

/* The first m (<= 16) elements of S at s as float32, rounded once. */
INLINE AVX512 __m512 to_f32(dsv_dtype S, const coef *k, const void *s, unsigned m)
{
	__m256 lo, hi;
	if (k->mode == 0) {
		__m512i v = load16(S, s, m);
		return S == DSV_U32 ? _mm512_cvtepu32_ps(v) : _mm512_cvtepi32_ps(v);
	}
	halves(S, k, s, m, &lo, &hi);
	return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
}

/* dsv_elem_f32_to_bf16 on 16 lanes. */
INLINE AVX512 __m256i bf16_16(__m512 f)
{
	__m512i x = _mm512_castps_si512(f);
	__m512i top = _mm512_srli_epi32(x, 16);
	__m512i rne = _mm512_srli_epi32(
		_mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)),
				 _mm512_and_si512(top, _mm512_set1_epi32(1))),
		16);
	__m512i nan = _mm512_or_si512(top, _mm512_set1_epi32(0x40));
	__mmask16 isnan = _mm512_cmpgt_epu32_mask(
		_mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
	return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(isnan, rne, nan));
}

/* The same with vcvtneps2bf16, which rounds to nearest even and quiets
 * NaNs as dsv_elem_f32_to_bf16 does, but reads a subnormal float32 as
 * zero: vectors holding one take the integer rounding (test_xform_exhaustive
 * compares the two on floats of every class). */
INLINE AVX512BF16 __m256i bf16_16_hw(__m512 f)
{
	if (_mm512_fpclass_ps_mask(f, 0x20)) /* 0x20: subnormal */
		return bf16_16(f);
	return (__m256i)_mm512_cvtneps_pbh(f);
}

INLINE AVX512 __m256i f16_16(__m512 f)
{
	return _mm512_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

/* 16 (or the first m < 16) elements of S at s to D at o; hw: bfloat16 by
 * bf16_16_hw. */
INLINE AVX512BF16 void one_block(dsv_dtype S, dsv_dtype D, int hw, const coef *k, void *o,
				 const void *s, unsigned m)
{
	__m512 f = to_f32(S, k, s, m);
	if (D == DSV_F32) {
		if (m == 16)
			_mm512_storeu_ps(o, f);
		else
			_mm512_mask_storeu_ps(o, (__mmask16)((1u << m) - 1), f);
		return;
	}
	__m256i h = D == DSV_F16 ? f16_16(f) : hw ? bf16_16_hw(f) : bf16_16(f);
	if (m == 16)
		_mm256_storeu_si256(o, h);
	else
		_mm256_mask_storeu_epi16(o, (__mmask16)((1u << m) - 1), h);
}

/* n elements of S from s, one channel's coefficients k, MODE k->mode. */
INLINE AVX512BF16 void run(dsv_dtype S, dsv_dtype D, int hw, int mode, const coef *k, void *o,
			   const void *s, uint64_t n)
{
	size_t es = ESIZE(S), os = D == DSV_F32 ? 4 : 2;
	coef kc = *k;
	uint64_t i = 0;
	kc.mode = mode; /* a constant where this is inlined */
	if (D == DSV_BF16 && hw && mode) {
		/* two float32 halves to 16 bfloat16 in one instruction */
		for (; i + 16 <= n; i += 16) {
			__m256 lo, hi;
			__m256i h;
			halves(S, &kc, (const char *)s + i * es, 16, &lo, &hi);
			if (_mm256_fpclass_ps_mask(lo, 0x20) | _mm256_fpclass_ps_mask(hi, 0x20))
				h = bf16_16(_mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1));
			else
				h = (__m256i)_mm256_cvtne2ps_pbh(hi, lo);
			_mm256_storeu_si256((void *)((char *)o + 2 * i), h);
		}
	}
	if (D == DSV_BF16 && hw && !mode) {
		/* a plain cast: two float32 vectors to one of bfloat16 */
		for (; i + 32 <= n; i += 32) {
			const char *si = (const char *)s + i * es;
			__m512 f0 = to_f32(S, &kc, si, 16);
			__m512 f1 = to_f32(S, &kc, si + 16 * es, 16);
			__m512i h;
			if (_mm512_fpclass_ps_mask(f0, 0x20) | _mm512_fpclass_ps_mask(f1, 0x20))
				h = _mm512_inserti64x4(_mm512_castsi256_si512(bf16_16(f0)),
						       bf16_16(f1), 1);
			else
				h = (__m512i)_mm512_cvtne2ps_pbh(f1, f0);
			_mm512_storeu_si512((char *)o + 2 * i, h);
		}
	}
	for (; i + 16 <= n; i += 16)
		one_block(S, D, hw, &kc, (char *)o + i * os, (const char *)s + i * es, 16);
	if (i < n)
		one_block(S, D, hw, &kc, (char *)o + i * os, (const char *)s + i * es,
			  (unsigned)(n - i));
}

/* The avx512 variants' (hw 0: only AVX-512 F/BW/VL/DQ instructions run)
 * and the avx512bf16 variant's (hw 1). */
#define RUN_SD(S, D, HW, ATTR)                                                                   \
	ATTR static void run_##S##_##D##_##HW(const coef *k, void *o, const void *s, uint64_t n) \
	{                                                                                        \
		switch (k->mode) {                                                               \
		case 0: run(S, D, HW, 0, k, o, s, n); break;                                     \
		case 1: run(S, D, HW, 1, k, o, s, n); break;                                     \
		case 2: run(S, D, HW, 2, k, o, s, n); break;                                     \
		default: run(S, D, HW, 3, k, o, s, n); break;                                    \
		}                                                                                \
	}
#define RUN_S(S)                       \
	RUN_SD(S, DSV_F32, 0, AVX512)  \
	RUN_SD(S, DSV_BF16, 0, AVX512) \
	RUN_SD(S, DSV_F16, 0, AVX512) RUN_SD(S, DSV_BF16, 1, AVX512BF16)
RUN_S(DSV_I16)
RUN_S(DSV_U16)
RUN_S(DSV_I32)
RUN_S(DSV_U32)

typedef void (*run16_fn)(const coef *k, void *o, const void *s, uint64_t n);
#define ROW(S)                                                                  \
	{                                                                       \
		run_##S##_DSV_F32_0, run_##S##_DSV_BF16_0, run_##S##_DSV_F16_0, \
			run_##S##_DSV_BF16_1                                    \
	}
static const run16_fn runs[4][4] = { ROW(DSV_I16), ROW(DSV_U16), ROW(DSV_I32), ROW(DSV_U32) };

AVX512 int dsv_xform_run16_avx512(const dsv_xform *x, dsv_dtype S, dsv_dtype D, void *dst,
				  const void *src, uint64_t n, int c)
{
	int row = S == DSV_I16 ? 0 : S == DSV_U16 ? 1 : S == DSV_I32 ? 2 : S == DSV_U32 ? 3 : -1;
	const double sc = x->scale, of = x->offset, m = x->mean[c], sd = x->std[c];
	coef k;
	if (row < 0)
		return 0;
	k.sc = _mm512_set1_pd(sc);
	k.of = _mm512_set1_pd(of);
	k.m = _mm512_set1_pd(m);
	k.sd = _mm512_set1_pd(sd);
	k.lo = _mm512_set1_pd(x->lo);
	k.hi = _mm512_set1_pd(x->hi);
	if (sc == 1.0 && of == 0.0 && m == 0.0 && sd == 1.0 && !x->has_clip)
		k.mode = 0; /* a plain cast (run_direct) */
	else if (m == 0.0 && sd == 1.0 && !x->has_clip)
		k.mode = 1; /* (v - 0) / 1 is v */
	else
		k.mode = x->has_clip ? 3 : 2;
	runs[row][D == DSV_F32 ? 0 : D == DSV_F16 ? 2 : dsv_xform_hw_bf16 ? 3 : 1](&k, dst, src, n);
	return 1;
}

/* For the tests: floats through the kernels' own conversions. */
AVX512BF16 void dsv_xform_halves_avx512(uint16_t *o, const float *f, uint64_t n, int how)
{
	for (uint64_t i = 0; i < n; i += 16) {
		unsigned m = n - i < 16 ? (unsigned)(n - i) : 16;
		__mmask16 km = (__mmask16)((1u << m) - 1);
		__m512 v = _mm512_maskz_loadu_ps(km, f + i);
		__m256i h = how == 0 ? f16_16(v) : how == 1 ? bf16_16(v) : bf16_16_hw(v);
		_mm256_mask_storeu_epi16(o + i, km, h);
	}
}
#endif
