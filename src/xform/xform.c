/*
 * Transform plans and kernels (docs/transform.md).
 *
 * Strategies, chosen per plan at create:
 *  - integer outputs: exact integer casts and clamps (xform_int.c).
 *  - 8-bit sources where channels come in runs or are at most 3 (RGB),
 *    but for a plain cast to float32: a table per channel (tables.c), one
 *    load per element, or 64 at a time through VBMI permutes (lut_vbmi.c).
 *  - chan_inner == 1 otherwise (per-element mean/std, HWC channels):
 *    dsv_elem_apply over stretches of consecutive channels, the mean/std
 *    arrays indexed with the element (run_elems), so the loop vectorises.
 *  - everything else: dsv_elem_apply per element, over runs of elements that
 *    share a channel, so the loop body has constant coefficients (16- and
 *    32-bit integers: intrinsics in the AVX-512 variants, direct_avx512.c).
 * DEFINE_KERNELS stamps the kernels out for the generic target, AVX2 and
 * AVX-512; the variant is chosen once per process. All do the same IEEE
 * operations in the same order (-ffp-contract=off) or read the same tables:
 * identical bytes (the unit tests compare them, exhaustively for 8- and
 * 16-bit sources). A plan's checks and tables are made in plan.c. */
#include <pthread.h>
#include <string.h>

#include "common/knobs.h"
#include "common/log.h"
#include "dsview/xform.h"
#include "xform/kernel_test.h"
#include "xform/xform_elem.h"
#include "xform/xform_i.h"

/* ---- kernels ---- */

typedef void (*run_fn)(const dsv_xform *x, void *dst, const void *src, uint64_t n, uint64_t e0);

static inline __attribute__((always_inline)) double load_elem(dsv_dtype t, const void *s,
							      uint64_t i)
{
	switch (t) {
	case DSV_U8: return ((const uint8_t *)s)[i];
	case DSV_I8: return ((const int8_t *)s)[i];
	case DSV_U16: return ((const u16_u *)s)[i];
	case DSV_I16: return ((const i16_u *)s)[i];
	case DSV_U32: return ((const u32_u *)s)[i];
	case DSV_I32: return ((const i32_u *)s)[i];
	/* 64-bit integers are rounded to float64 first (a transform's
	 * input); plain casts use load_f32, which rounds them once. */
	case DSV_U64: return (double)((const u64_u *)s)[i];
	case DSV_I64: return (double)((const i64_u *)s)[i];
	case DSV_F16: return dsv_elem_f16_to_f32(((const u16_u *)s)[i]);
	case DSV_F32: return ((const f32_u *)s)[i];
	case DSV_F64: return ((const f64_u *)s)[i];
	default: return 0;
	}
}

/* An element converted to float32 as numpy's astype does: rounded once
 * (the C conversions from any integer type round to nearest even), -0.0,
 * infinities and subnormals kept, NaN quiet with its payload's top bits. */
static inline __attribute__((always_inline)) float load_f32(dsv_dtype t, const void *s, uint64_t i)
{
	switch (t) {
	case DSV_U8: return ((const uint8_t *)s)[i];
	case DSV_I8: return ((const int8_t *)s)[i];
	case DSV_U16: return ((const u16_u *)s)[i];
	case DSV_I16: return ((const i16_u *)s)[i];
	case DSV_U32: return (float)((const u32_u *)s)[i];
	case DSV_I32: return (float)((const i32_u *)s)[i];
	case DSV_U64: return (float)((const u64_u *)s)[i];
	case DSV_I64: return (float)((const i64_u *)s)[i];
	case DSV_F16: return dsv_elem_f16_to_f32(((const u16_u *)s)[i]);
	case DSV_F32: return dsv_elem_quiet_f32(((const f32_u *)s)[i]);
	case DSV_F64: return (float)((const f64_u *)s)[i];
	default: return 0;
	}
}

/* One run of n elements sharing channel c: src type S, output type D. The
 * switch on constants folds away where this is inlined. */
static inline __attribute__((always_inline)) void run_direct(const dsv_xform *x, dsv_dtype S,
							     dsv_dtype D, void *dst,
							     const void *src, uint64_t n, int c)
{
	const double sc = x->scale, of = x->offset, m = x->mean[c], sd = x->std[c];
	const double lo = x->lo, hi = x->hi;
	const int clip = x->has_clip;
	if (sc == 1.0 && of == 0.0 && m == 0.0 && sd == 1.0 && !clip) {
		/* A plain cast: numpy's astype, not the formula (x * 1 + 0
		 * would turn -0.0 into +0.0, and rounding int64 to float64 or
		 * float64 to float32 before float16 would round twice).
		 * bfloat16 is the RNE of the float32 (docs/transform.md). */
		if (D == DSV_F32) {
			f32_u *o = dst;
			VEC_FOR(i, n, o[i] = load_f32(S, src, i));
		} else if (D == DSV_BF16) {
			u16_u *o = dst;
			VEC_FOR(i, n, o[i] = dsv_elem_f32_to_bf16(load_f32(S, src, i)));
		} else if (S == DSV_F64) {
			u16_u *o = dst;
			VEC_FOR(i, n, o[i] = dsv_elem_f64_to_f16(((const f64_u *)src)[i]));
		} else {
			/* integers: exact in float32 wherever float16 is finite,
			 * so rounding through float32 is rounding once */
			u16_u *o = dst;
			VEC_FOR(i, n, o[i] = dsv_elem_f32_to_f16(load_f32(S, src, i)));
		}
		return;
	}
	if (m == 0.0 && sd == 1.0 && !clip) {
		/* No mean/std: (v - 0) / 1 is v exactly (also -0, inf, NaN), so
		 * this loop gives the same bytes without a division per element. */
		if (D == DSV_F32) {
			f32_u *o = dst;
			VEC_FOR(i, n, o[i] = (float)(load_elem(S, src, i) * sc + of));
		} else if (D == DSV_BF16) {
			u16_u *o = dst;
			VEC_FOR(i, n,
				o[i] = dsv_elem_f32_to_bf16(
					(float)(load_elem(S, src, i) * sc + of)));
		} else {
			u16_u *o = dst;
			VEC_FOR(i, n,
				o[i] = dsv_elem_f32_to_f16(
					(float)(load_elem(S, src, i) * sc + of)));
		}
		return;
	}
	if (D == DSV_F32) {
		f32_u *o = dst;
		VEC_FOR(i, n,
			o[i] = dsv_elem_apply(load_elem(S, src, i), sc, of, m, sd, clip, lo, hi));
	} else if (D == DSV_BF16) {
		u16_u *o = dst;
		VEC_FOR(i, n,
			o[i] = dsv_elem_f32_to_bf16(
				dsv_elem_apply(load_elem(S, src, i), sc, of, m, sd, clip, lo, hi)));
	} else {
		u16_u *o = dst;
		VEC_FOR(i, n,
			o[i] = dsv_elem_f32_to_f16(
				dsv_elem_apply(load_elem(S, src, i), sc, of, m, sd, clip, lo, hi)));
	}
}

/* n elements whose channels are consecutive: element i has mean[i] and
 * std[i] (indexed directly, so the loop vectorises). The formula is
 * dsv_elem_apply's, division included, with clip a constant. */
static inline __attribute__((always_inline)) void elem_stretch(const dsv_xform *x, dsv_dtype S,
							       dsv_dtype D, void *dst,
							       const void *src, uint64_t n,
							       const double *restrict mean,
							       const double *restrict sd)
{
	const double sc = x->scale, of = x->offset, lo = x->lo, hi = x->hi;
#define ELEM(CLIP) dsv_elem_apply(load_elem(S, src, i), sc, of, mean[i], sd[i], CLIP, lo, hi)
	if (D == DSV_F32) {
		f32_u *o = dst;
		if (x->has_clip)
			VEC_FOR(i, n, o[i] = ELEM(1));
		else
			VEC_FOR(i, n, o[i] = ELEM(0));
	} else if (D == DSV_BF16) {
		u16_u *o = dst;
		if (x->has_clip)
			VEC_FOR(i, n, o[i] = dsv_elem_f32_to_bf16(ELEM(1)));
		else
			VEC_FOR(i, n, o[i] = dsv_elem_f32_to_bf16(ELEM(0)));
	} else {
		u16_u *o = dst;
		if (x->has_clip)
			VEC_FOR(i, n, o[i] = dsv_elem_f32_to_f16(ELEM(1)));
		else
			VEC_FOR(i, n, o[i] = dsv_elem_f32_to_f16(ELEM(0)));
	}
#undef ELEM
}

/* chan_inner == 1 (per-element mean/std, or HWC channels): the channel
 * advances with every element, so walk stretches of the period-long
 * mean/std arrays instead of runs of one element. */
typedef void (*stretch_fn)(const dsv_xform *x, void *dst, const void *src, uint64_t n,
			   const double *restrict mean, const double *restrict sd);

static inline __attribute__((always_inline)) void run_elems(const dsv_xform *x, size_t es,
							    size_t os, stretch_fn stretch,
							    void *dst, const void *src, uint64_t n,
							    uint64_t e0)
{
	const char *s = src;
	char *d = dst;
	uint64_t c = e0 % x->period;
	while (n) {
		uint64_t m = x->period - c;
		if (m > n)
			m = n;
		stretch(x, d, s, m, x->mean + c, x->std + c);
		s += m * es;
		d += m * os;
		n -= m;
		c = 0;
	}
}

static inline __attribute__((always_inline)) void run_lut(const dsv_xform *x, dsv_dtype S,
							  size_t osize, void *dst, const void *src,
							  uint64_t n, int c)
{
	const uint8_t *s = src;
	unsigned flip = S == DSV_I8 ? 0x80u : 0u; /* int8 tables are indexed by x + 128 */
	if (osize == 4) {
		const float *t = (const float *)x->lut + (size_t)c * 256;
		f32_u *o = dst;
		for (uint64_t i = 0; i < n; i++)
			o[i] = t[s[i] ^ flip];
	} else {
		const uint16_t *t = (const uint16_t *)x->lut + (size_t)c * 256;
		u16_u *o = dst;
		for (uint64_t i = 0; i < n; i++)
			o[i] = t[s[i] ^ flip];
	}
}

/* Walks [e0, e0 + n) in runs of one channel and runs BODY, a statement that
 * uses d_ and s_ (the run's output and input), len_ and c_ (its length and
 * channel). */
#define FOR_CHANNEL_RUNS(x, dst, src, n, e0, esize_in, esize_out, BODY) \
	do {                                                            \
		const char *s_ = (const char *)(src);                   \
		char *d_ = (char *)(dst);                               \
		uint64_t left_ = (n), len_ = (n);                       \
		int c_ = 0;                                             \
		if ((x)->nchan == 1) {                                  \
			BODY;                                           \
			break;                                          \
		}                                                       \
		uint64_t q_ = (e0) / (x)->chan_inner;                   \
		uint64_t into_ = (e0)-q_ * (x)->chan_inner;             \
		c_ = (int)(q_ % (uint64_t)(x)->nchan);                  \
		while (left_) {                                         \
			len_ = (x)->chan_inner - into_;                 \
			if (len_ > left_)                               \
				len_ = left_;                           \
			BODY;                                           \
			s_ += len_ * (esize_in);                        \
			d_ += len_ * (esize_out);                       \
			left_ -= len_;                                  \
			into_ = 0;                                      \
			if (++c_ == (x)->nchan)                         \
				c_ = 0;                                 \
		}                                                       \
	} while (0)

/* HWC-style layouts (chan_inner == 1) have runs of one element; walk them
 * with a channel counter instead of calling a loop per element. */
#define DEFINE_KERNELS(SUF, ATTR, FAST)                                                        \
	ATTR static void lut_##SUF(const dsv_xform *x, void *dst, const void *src, uint64_t n, \
				   uint64_t e0)                                                \
	{                                                                                      \
		size_t os = dsv_dtype_size(x->dst);                                            \
		if (x->nchan > 1 && x->chan_inner == 1) {                                      \
			const uint8_t *s = src;                                                \
			unsigned flip = x->src == DSV_I8 ? 0x80u : 0u;                         \
			int c = (int)(e0 % (uint64_t)x->nchan);                                \
			if (os == 4 && x->nchan == 3) {                                        \
				/* RGB pixels: align to a pixel, then whole pixels */          \
				const float *t = x->lut;                                       \
				f32_u *o = dst;                                                \
				uint64_t i = 0;                                                \
				for (; i < n && c != 0; i++, c = c == 2 ? 0 : c + 1)           \
					o[i] = t[(size_t)c * 256 + (s[i] ^ flip)];             \
				for (; i + 3 <= n; i += 3) {                                   \
					o[i] = t[s[i] ^ flip];                                 \
					o[i + 1] = t[256 + (s[i + 1] ^ flip)];                 \
					o[i + 2] = t[512 + (s[i + 2] ^ flip)];                 \
				}                                                              \
				for (c = 0; i < n; i++, c++)                                   \
					o[i] = t[(size_t)c * 256 + (s[i] ^ flip)];             \
			} else if (os == 4) {                                                  \
				const float *t = x->lut;                                       \
				f32_u *o = dst;                                                \
				for (uint64_t i = 0; i < n; i++) {                             \
					o[i] = t[(size_t)c * 256 + (s[i] ^ flip)];             \
					if (++c == x->nchan)                                   \
						c = 0;                                         \
				}                                                              \
			} else if (x->nchan == 3) {                                            \
				/* RGB pixels to bfloat16/float16, as above */                 \
				const uint16_t *t = x->lut;                                    \
				u16_u *o = dst;                                                \
				uint64_t i = 0;                                                \
				for (; i < n && c != 0; i++, c = c == 2 ? 0 : c + 1)           \
					o[i] = t[(size_t)c * 256 + (s[i] ^ flip)];             \
				for (; i + 3 <= n; i += 3) {                                   \
					o[i] = t[s[i] ^ flip];                                 \
					o[i + 1] = t[256 + (s[i + 1] ^ flip)];                 \
					o[i + 2] = t[512 + (s[i + 2] ^ flip)];                 \
				}                                                              \
				for (c = 0; i < n; i++, c++)                                   \
					o[i] = t[(size_t)c * 256 + (s[i] ^ flip)];             \
			} else {                                                               \
				const uint16_t *t = x->lut;                                    \
				u16_u *o = dst;                                                \
				for (uint64_t i = 0; i < n; i++) {                             \
					o[i] = t[(size_t)c * 256 + (s[i] ^ flip)];             \
					if (++c == x->nchan)                                   \
						c = 0;                                         \
				}                                                              \
			}                                                                      \
			return;                                                                \
		}                                                                              \
		FOR_CHANNEL_RUNS(x, dst, src, n, e0, 1, os,                                    \
				 run_lut(x, x->src, os, d_, s_, len_, c_));                    \
	}                                                                                      \
	DEFINE_DIRECT(SUF, ATTR, DSV_U8, u8, FAST)                                             \
	DEFINE_DIRECT(SUF, ATTR, DSV_I8, i8, FAST)                                             \
	DEFINE_DIRECT(SUF, ATTR, DSV_U16, u16, FAST)                                           \
	DEFINE_DIRECT(SUF, ATTR, DSV_I16, i16, FAST)                                           \
	DEFINE_DIRECT(SUF, ATTR, DSV_U32, u32, FAST)                                           \
	DEFINE_DIRECT(SUF, ATTR, DSV_I32, i32, FAST)                                           \
	DEFINE_DIRECT(SUF, ATTR, DSV_U64, u64, FAST)                                           \
	DEFINE_DIRECT(SUF, ATTR, DSV_I64, i64, FAST)                                           \
	DEFINE_DIRECT(SUF, ATTR, DSV_F16, f16, FAST)                                           \
	DEFINE_DIRECT(SUF, ATTR, DSV_F32, f32, FAST)                                           \
	DEFINE_DIRECT(SUF, ATTR, DSV_F64, f64, FAST)                                           \
	static const run_fn direct_##SUF[DSV_DTYPE__COUNT][3] = {                              \
		[DSV_U8] = { d_u8_f32_##SUF, d_u8_bf16_##SUF, d_u8_f16_##SUF },                \
		[DSV_I8] = { d_i8_f32_##SUF, d_i8_bf16_##SUF, d_i8_f16_##SUF },                \
		[DSV_U16] = { d_u16_f32_##SUF, d_u16_bf16_##SUF, d_u16_f16_##SUF },            \
		[DSV_I16] = { d_i16_f32_##SUF, d_i16_bf16_##SUF, d_i16_f16_##SUF },            \
		[DSV_U32] = { d_u32_f32_##SUF, d_u32_bf16_##SUF, d_u32_f16_##SUF },            \
		[DSV_I32] = { d_i32_f32_##SUF, d_i32_bf16_##SUF, d_i32_f16_##SUF },            \
		[DSV_U64] = { d_u64_f32_##SUF, d_u64_bf16_##SUF, d_u64_f16_##SUF },            \
		[DSV_I64] = { d_i64_f32_##SUF, d_i64_bf16_##SUF, d_i64_f16_##SUF },            \
		[DSV_F16] = { d_f16_f32_##SUF, d_f16_bf16_##SUF, d_f16_f16_##SUF },            \
		[DSV_F32] = { d_f32_f32_##SUF, d_f32_bf16_##SUF, d_f32_f16_##SUF },            \
		[DSV_F64] = { d_f64_f32_##SUF, d_f64_bf16_##SUF, d_f64_f16_##SUF },            \
	};

#define DEFINE_DIRECT(SUF, ATTR, S, sname, FAST)                  \
	DEFINE_DIRECT1(SUF, ATTR, S, sname, DSV_F32, f32, FAST)   \
	DEFINE_DIRECT1(SUF, ATTR, S, sname, DSV_BF16, bf16, FAST) \
	DEFINE_DIRECT1(SUF, ATTR, S, sname, DSV_F16, f16, FAST)

/* The stretch loops (e_ per element, r_ per channel run) are functions of
 * their own: inlined into the walk that calls them, GCC 12 no longer
 * vectorises them. FAST(x, S, D, dst, src, n, c) runs a channel run with
 * hand-written vectors and returns 1, or returns 0 for run_direct. */
#define DEFINE_DIRECT1(SUF, ATTR, S, sname, D, dname, FAST)                                    \
	ATTR DSV_VECTORISE __attribute__((noinline)) static void e_##sname##_##dname##_##SUF(  \
		const dsv_xform *x, void *dst, const void *src, uint64_t n,                    \
		const double *restrict mean, const double *restrict sd)                        \
	{                                                                                      \
		elem_stretch(x, S, D, dst, src, n, mean, sd);                                  \
	}                                                                                      \
	ATTR DSV_VECTORISE __attribute__((noinline)) static void r_##sname##_##dname##_##SUF(  \
		const dsv_xform *x, void *dst, const void *src, uint64_t n, int c)             \
	{                                                                                      \
		if (!FAST(x, S, D, dst, src, n, c))                                            \
			run_direct(x, S, D, dst, src, n, c);                                   \
	}                                                                                      \
	ATTR static void d_##sname##_##dname##_##SUF(const dsv_xform *x, void *dst,            \
						     const void *src, uint64_t n, uint64_t e0) \
	{                                                                                      \
		if (x->nchan > 1 && x->chan_inner == 1) {                                      \
			run_elems(x, dsv_dtype_size(S), dsv_dtype_size(D),                     \
				  e_##sname##_##dname##_##SUF, dst, src, n, e0);               \
			return;                                                                \
		}                                                                              \
		FOR_CHANNEL_RUNS(x, dst, src, n, e0, dsv_dtype_size(S), dsv_dtype_size(D),     \
				 r_##sname##_##dname##_##SUF(x, d_, s_, len_, c_));            \
	}

#define NO_FAST(x, S, D, dst, src, n, c) 0
DEFINE_KERNELS(scalar, , NO_FAST)
#if defined(__x86_64__)
DEFINE_KERNELS(avx2, __attribute__((target("avx2"))), NO_FAST)
DEFINE_KERNELS(avx512, __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))),
	       dsv_xform_run16_avx512)
#endif

typedef struct kernel_set {
	const char *name;
	run_fn lut;
	const run_fn (*direct)[3];
	const xform_int_fn (*ints)[XI_NTYPES]; /* xform_int.c */
	int hw_bf16;                           /* dsv_xform_hw_bf16 */
} kernel_set;

static const kernel_set kernel_sets[] = {
	{ "scalar", lut_scalar, direct_scalar, dsv_xform_int_scalar },
#if defined(__x86_64__)
	{ "avx2", lut_avx2, direct_avx2, dsv_xform_int_avx2 },
	{ "avx512", lut_avx512, direct_avx512, dsv_xform_int_avx512 },
	{ "avx512vbmi", dsv_xform_lut_vbmi, direct_avx512, dsv_xform_int_avx512 },
	{ "avx512bf16", dsv_xform_lut_vbmi, direct_avx512, dsv_xform_int_avx512, 1 },
#endif
};

#define N_SETS (sizeof(kernel_sets) / sizeof(kernel_sets[0]))
static const kernel_set *active;
static pthread_once_t active_once = PTHREAD_ONCE_INIT;

static int cpu_has(const char *name)
{
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (!strcmp(name, "avx2"))
		return __builtin_cpu_supports("avx2");
	if (!strcmp(name, "avx512"))
		return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
		       __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
	if (!strcmp(name, "avx512vbmi"))
		return cpu_has("avx512") && __builtin_cpu_supports("avx512vbmi");
	if (!strcmp(name, "avx512bf16"))
		return cpu_has("avx512vbmi") && __builtin_cpu_supports("avx512bf16");
#endif
	return !strcmp(name, "scalar");
}

static void choose_kernels(void)
{
	const char *force = dsv_knob_name(DSV_KNOB_KERNEL);
	active = &kernel_sets[0];
	for (size_t i = 0; i < N_SETS; i++) {
		if (force) {
			if (!strcmp(force, kernel_sets[i].name) && cpu_has(kernel_sets[i].name))
				active = &kernel_sets[i];
		} else if (cpu_has(kernel_sets[i].name)) {
			active = &kernel_sets[i]; /* the last supported is the widest */
		}
	}
	dsv_xform_hw_bf16 = active->hw_bf16;
	if (force && strcmp(force, active->name))
		dsv_log_warn("DSVIEW_KERNEL='%s': this processor lacks it: %s used", force,
			     active->name);
}

const char *dsv_xform_kernel_name(void)
{
	pthread_once(&active_once, choose_kernels);
	return active->name;
}

int dsv_xform_kernel_vector(void)
{
	pthread_once(&active_once, choose_kernels);
	return active != &kernel_sets[0];
}

int dsv_xform_force_kernel(const char *name)
{
	pthread_once(&active_once, choose_kernels);
	for (size_t i = 0; i < N_SETS; i++) {
		if (!strcmp(name, kernel_sets[i].name)) {
			if (!cpu_has(name))
				return DSV_ERR_UNSUPPORTED;
			active = &kernel_sets[i];
			dsv_xform_hw_bf16 = active->hw_bf16;
			return 0;
		}
	}
	return DSV_ERR_UNSUPPORTED;
}

const char *dsv_xform_kernel_at(size_t i)
{
	return i < N_SETS ? kernel_sets[i].name : NULL;
}

/* ---- dispatch ---- */

static int out_index(dsv_dtype d)
{
	return d == DSV_F32 ? 0 : d == DSV_BF16 ? 1 : 2;
}

void dsv_xform_run(const dsv_xform *x, void *dst, const void *src, uint64_t n, uint64_t e0)
{
	pthread_once(&active_once, choose_kernels);
	if (x->is_int)
		active->ints[x->src][x->dst](&x->ip, dst, src, n);
	else if (x->lut)
		active->lut(x, dst, src, n, e0);
	else
		active->direct[x->src][out_index(x->dst)](x, dst, src, n, e0);
}
