/*
 * Private to src/xform: what xform.c (plans, float kernels, dispatch) shares
 * with xform_int.c (integer outputs).
 */
#ifndef DSV_XFORM_I_H
#define DSV_XFORM_I_H

#include <stdint.h>

#include "dsview/xform.h"

/* Callers may pass unaligned buffers: access elements through 1-aligned
 * types (plain moves on x86, still vectorised). */
typedef uint16_t __attribute__((aligned(1))) u16_u;
typedef int16_t __attribute__((aligned(1))) i16_u;
typedef uint32_t __attribute__((aligned(1))) u32_u;
typedef int32_t __attribute__((aligned(1))) i32_u;
typedef uint64_t __attribute__((aligned(1))) u64_u;
typedef int64_t __attribute__((aligned(1))) i64_u;
typedef float __attribute__((aligned(1))) f32_u;
typedef double __attribute__((aligned(1))) f64_u;

/* GCC's -O2 cost model ("very cheap") vectorises no loop that needs a
 * scalar prologue or epilogue, which is every kernel loop here (unknown n,
 * unaligned buffers): the kernels ask for the dynamic model, -O3's. Clang
 * vectorises at -O2 already. */
#if defined(__GNUC__) && !defined(__clang__)
#define DSV_VECTORISE __attribute__((optimize("vect-cost-model=dynamic")))
#else
#define DSV_VECTORISE
#endif

/* for (i = 0; i < n; i++) BODY, split so GCC vectorises it at -O2: its
 * default cost model there ("very cheap") vectorises only loops whose trip
 * count is a known multiple of the vector length, so the first loop runs a
 * multiple of 64 iterations and the second the rest. The same iterations in
 * the same order: the bytes do not change. */
#define VEC_FOR(i, n, BODY)                                         \
	do {                                                        \
		uint64_t n_ = (n), nb_ = n_ & ~(uint64_t)63, i = 0; \
		for (; i < nb_; i++) {                              \
			BODY;                                       \
		}                                                   \
		for (; i < n_; i++) {                               \
			BODY;                                       \
		}                                                   \
	} while (0)

/* An integer-output plan: every output is the source value converted
 * (XI_CAST), clamped in the source's own type to [lo, hi] then converted
 * (XI_CLAMP), or one constant (XI_FILL: the clip interval lies wholly
 * above or below the source's range). */
enum { XI_CAST, XI_CLAMP, XI_FILL };
typedef struct xform_int {
	int mode;
	uint64_t lo, hi; /* XI_CLAMP: bounds, two's complement bits in the source type */
	uint64_t fill;   /* XI_FILL: the value, two's complement bits in the output type */
} xform_int;

/* Checks an integer output's request (src integral, p a plain cast, the
 * range fits or clip is given and valid) and fills ip.
 * @return 0 or DSV_ERR_INVALID with the key ("dtype" or "clip") set. */
int dsv_xform_int_plan(xform_int *ip, dsv_dtype src, dsv_dtype dst, const dsv_xform_params *p,
		       dsv_errbuf *eb);

typedef void (*xform_int_fn)(const xform_int *ip, void *dst, const void *src, uint64_t n);

/* [source][output], both integer dtypes (DSV_U8 .. DSV_I64), per variant. */
#define XI_NTYPES (DSV_I64 + 1)
extern const xform_int_fn dsv_xform_int_scalar[XI_NTYPES][XI_NTYPES];
#if defined(__x86_64__)
extern const xform_int_fn dsv_xform_int_avx2[XI_NTYPES][XI_NTYPES];
extern const xform_int_fn dsv_xform_int_avx512[XI_NTYPES][XI_NTYPES];
#endif

/* Fills x->lut and x->planes for an 8-bit source x (tables.c).
 * @return 0 or -1 (out of memory; the plan's destroy frees what was made). */
struct dsv_xform;
int dsv_xform_make_tables(struct dsv_xform *x);

/* 1 when the kernel variant in use (xform.c) is a vector one: every
 * variant past "scalar" has AVX2. */
int dsv_xform_kernel_vector(void);

/* Set by the dispatch (xform.c): the avx512bf16 variant runs, so
 * dsv_xform_run16_avx512's bfloat16 outputs use vcvtne(2)ps2bf16
 * (direct_avx512.c; 0 on other processors). */
extern int dsv_xform_hw_bf16;

#if defined(__x86_64__)
/* The 8-bit table lookups with AVX-512 VBMI permutes (lut_vbmi.c): the
 * same bytes as the table, read 64 elements at a time. */
struct dsv_xform;
void dsv_xform_lut_vbmi(const struct dsv_xform *x, void *dst, const void *src, uint64_t n,
			uint64_t e0);
/* A run of n elements of channel c from a 16- or 32-bit integer source S
 * to D (direct_avx512.c): 1, or 0 (another source) for run_direct. */
int dsv_xform_run16_avx512(const struct dsv_xform *x, dsv_dtype S, dsv_dtype D, void *dst,
			   const void *src, uint64_t n, int c);
#endif

/* A plan (xform.c). */
struct dsv_xform {
	dsv_dtype src, dst;
	double scale, offset;
	int nchan; /* >= 1 (a plan without mean/std has one channel 0 / 1) */
	uint64_t chan_inner;
	/* period entries (a multiple of nchan: see make_period), the first
	 * nchan of them the channels' */
	double *mean, *std;
	uint64_t period;
	int has_clip;
	double lo, hi;
	void *lut; /* nchan * 256 entries of the output type, or NULL */
	/* with lut: its bytes as planes, per channel and output byte 256
	 * bytes, indexed by the raw source byte (lut_vbmi.c) */
	uint8_t *planes;
	int is_int; /* an integer output: ip is the plan, nothing else is used */
	xform_int ip;
};

#endif
