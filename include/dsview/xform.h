/*
 * Transform: y = (x * scale + offset - mean[c]) / std[c], then clip, then the
 * cast to float32, bfloat16 or float16 (docs/transform.md), where c is the
 * element's index along the channel axis.
 *
 * Integer outputs (uint8 ... int64) take integer sources and no
 * arithmetic: scale 1, offset 0, no mean/std. The plan is a plain cast when
 * every source value fits the output type; otherwise clip is required, its
 * bounds whole numbers inside the output range, and values are clamped to
 * [LOW, HIGH] then converted, in exact integer arithmetic (64-bit values
 * never pass through float64).
 *
 * Accuracy: every element is evaluated in float64 (or through a lookup table
 * built in float64 for 8-bit sources) and rounded once to float32; bfloat16
 * and float16 are the round-to-nearest-even of that float32. Every kernel
 * variant (scalar, AVX2, AVX-512) produces identical bytes.
 *
 * Channel of element e (its index in C order within the whole view):
 *   c = (e / chan_inner) % nchan
 * where chan_inner is the product of the view's dims after the channel axis.
 *
 * Thread safety: a plan is immutable after dsv_xform_create; dsv_xform_run
 * may be called on one plan from any number of threads at once. The kernel
 * variant is chosen once per process (pthread_once).
 */
#ifndef DSVIEW_XFORM_H
#define DSVIEW_XFORM_H

#include <stdint.h>

#include "dsview/dsview.h"

typedef struct dsv_xform dsv_xform;

typedef struct dsv_xform_params {
	double scale;        /* default 1 */
	double offset;       /* default 0 */
	int nchan;           /* 0: no mean/std */
	const double *mean;  /* nchan values (copied by create) */
	const double *std;   /* nchan values, none zero */
	uint64_t chan_inner; /* >= 1 when nchan > 0 */
	int has_clip;
	double clip_lo, clip_hi; /* clip_lo <= clip_hi */
} dsv_xform_params;

/* Fills p with the defaults (plain cast). */
void dsv_xform_params_init(dsv_xform_params *p);

/* src: any source dtype but BF16; dst: DSV_F32, DSV_BF16, DSV_F16, or an
 * integer dtype (then src is an integer dtype too, see above).
 * @return 0, DSV_ERR_INVALID (with a message, and eb->key naming the
 * setting at fault: "dtype", "clip", "mean", ...) or DSV_ERR_NOMEM. */
int dsv_xform_create(dsv_xform **out, dsv_dtype src, dsv_dtype dst, const dsv_xform_params *p,
		     dsv_errbuf *eb);
void dsv_xform_destroy(dsv_xform *x); /* accepts NULL */

/* Transforms n elements from src (source dtype, native little-endian) into
 * dst (output dtype). elem_start is the index of src[0] in the view, used
 * only to find channels. dst and src must not overlap. */
void dsv_xform_run(const dsv_xform *x, void *dst, const void *src, uint64_t n, uint64_t elem_start);

/* n elements of dtype t (any, bfloat16 included; little-endian, src may be
 * unaligned) as float64: exact but for 64-bit integers above 2^53, which
 * round to nearest. For mean/std arrays read from files. */
void dsv_elems_to_f64(dsv_dtype t, const void *src, uint64_t n, double *out);

/* "avx512bf16", "avx512vbmi", "avx512", "avx2" or "scalar": the kernel variant this
 * process uses. */
const char *dsv_xform_kernel_name(void);

/* Bit-exact conversions (round to nearest even; NaN stays quiet NaN). */
uint16_t dsv_f32_to_bf16(float f);
uint16_t dsv_f32_to_f16(float f);
float dsv_f16_to_f32(uint16_t h);
float dsv_bf16_to_f32(uint16_t h);

#endif
