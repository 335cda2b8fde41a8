/*
 * The transform and output cast of one element (docs/transform.md), written once for
 * the device and the host (DSV_HD): the CUDA kernels run it, the unit tests
 * build it as plain C and compare it with dsv_xform_run for every source
 * and output dtype. The plan comes as plain data (dsv_xform_describe), so
 * the element takes the path the CPU's kernels take: the plain cast
 * (numpy's astype) for an identity channel, else the formula in float64
 * rounded once to float32 (dsv_elem_apply), then bfloat16/float16 by the
 * bit-exact roundings of xform_elem.h; integer outputs by exact integer
 * casts and clamps.
 *
 * NaN never enters a floating-point operation here: the CPU's results for
 * NaN follow x86's rules (a NaN operand comes out quiet with its payload;
 * infinity times zero gives the negative "default" NaN) while a GPU gives
 * one canonical NaN, so NaNs are made from their bits. Everything else is
 * IEEE arithmetic that rounds the same on both, given nvcc's --fmad=false
 * (no fused multiply-add) and IEEE division and denormals (the Makefile's
 * NVCCFLAGS).
 */
#ifndef DSV_GPU_DEV_XFORM_H
#define DSV_GPU_DEV_XFORM_H

#include <stdint.h>
#include <string.h>

#include "dsview/dsview.h"
#include "xform/xform_elem.h"

/* The values of xform_int's modes (src/xform/xform_i.h). */
enum { DSV_DEV_XI_CAST, DSV_DEV_XI_CLAMP, DSV_DEV_XI_FILL };

static inline DSV_HD double dsv_dev_bits_f64(uint64_t u)
{
	double d;
	memcpy(&d, &u, sizeof(d));
	return d;
}

/* float -> double as x86's cvtss2sd: a NaN comes out quiet, payload kept. */
static inline DSV_HD double dsv_dev_f32_to_f64(float f)
{
	uint32_t x = dsv_f32_bits(f);
	if ((x & 0x7fffffffu) > 0x7f800000u)
		return dsv_dev_bits_f64((uint64_t)(x & 0x80000000u) << 32 | 0x7ff8000000000000ull |
					(uint64_t)(x & 0x7fffffu) << 29);
	return (double)f;
}

/* A NaN double as float, as x86's cvtsd2ss: quiet, top payload bits kept. */
static inline DSV_HD float dsv_dev_nan_f32(uint64_t b)
{
	return dsv_bits_f32(((uint32_t)(b >> 32) & 0x80000000u) | 0x7fc00000u |
			    ((uint32_t)(b >> 29) & 0x3fffffu));
}

static inline DSV_HD float dsv_dev_f64_to_f32(double d)
{
	uint64_t b = dsv_f64_bits(d);
	if ((b & 0x7fffffffffffffffull) > 0x7ff0000000000000ull)
		return dsv_dev_nan_f32(b);
	return (float)d;
}

/* Element i of s, little-endian, any alignment: its bits, zero-extended. */
static inline DSV_HD uint64_t dsv_dev_load_bits(const uint8_t *s, size_t es, uint64_t i)
{
	uint64_t v = 0;
	memcpy(&v, s + i * es, es);
	return v;
}

/* Element i of an integer dtype as a signed 64-bit value (unsigned 64-bit
 * ones as their bits). */
static inline DSV_HD int64_t dsv_dev_load_int(int t, const uint8_t *s, uint64_t i)
{
	switch (t) {
	case DSV_I8: return (int8_t)s[i];
	case DSV_I16: return (int16_t)dsv_dev_load_bits(s, 2, i);
	case DSV_I32: return (int32_t)dsv_dev_load_bits(s, 4, i);
	case DSV_U8: return s[i];
	case DSV_U16: return (int64_t)dsv_dev_load_bits(s, 2, i);
	case DSV_U32: return (int64_t)dsv_dev_load_bits(s, 4, i);
	default: return (int64_t)dsv_dev_load_bits(s, 8, i);
	}
}

/* The transform's input: element i as float64 (load_elem of xform.c). */
static inline DSV_HD double dsv_dev_load_f64(int t, const uint8_t *s, uint64_t i)
{
	switch (t) {
	case DSV_U64: return (double)dsv_dev_load_bits(s, 8, i);
	case DSV_I64: return (double)(int64_t)dsv_dev_load_bits(s, 8, i);
	case DSV_F16:
		return dsv_dev_f32_to_f64(
			dsv_elem_f16_to_f32((uint16_t)dsv_dev_load_bits(s, 2, i)));
	case DSV_F32: return dsv_dev_f32_to_f64(dsv_bits_f32((uint32_t)dsv_dev_load_bits(s, 4, i)));
	case DSV_F64: return dsv_dev_bits_f64(dsv_dev_load_bits(s, 8, i));
	default: return (double)dsv_dev_load_int(t, s, i);
	}
}

/* The plain cast to float32: element i rounded once (load_f32 of xform.c). */
static inline DSV_HD float dsv_dev_load_f32(int t, const uint8_t *s, uint64_t i)
{
	switch (t) {
	case DSV_U64: return (float)dsv_dev_load_bits(s, 8, i);
	case DSV_I64: return (float)(int64_t)dsv_dev_load_bits(s, 8, i);
	case DSV_U32: return (float)(uint32_t)dsv_dev_load_bits(s, 4, i);
	case DSV_I32: return (float)(int32_t)dsv_dev_load_bits(s, 4, i);
	case DSV_F16: return dsv_elem_f16_to_f32((uint16_t)dsv_dev_load_bits(s, 2, i));
	case DSV_F32: return dsv_elem_quiet_f32(dsv_bits_f32((uint32_t)dsv_dev_load_bits(s, 4, i)));
	case DSV_F64: return dsv_dev_f64_to_f32(dsv_dev_bits_f64(dsv_dev_load_bits(s, 8, i)));
	default: return (float)dsv_dev_load_int(t, s, i);
	}
}

/* dsv_elem_apply with its NaNs made from bits: a NaN input passes through
 * quiet; infinity times a zero scale is x86's default NaN. */
static inline DSV_HD float dsv_dev_apply(double x, double sc, double of, double m, double sd,
					 int clip, double lo, double hi)
{
	uint64_t b = dsv_f64_bits(x), ab = b & 0x7fffffffffffffffull;
	if (ab > 0x7ff0000000000000ull)
		return dsv_dev_nan_f32(b);
	if (ab == 0x7ff0000000000000ull && sc == 0.0)
		return dsv_bits_f32(0xffc00000u);
	return dsv_elem_apply(x, sc, of, m, sd, clip, lo, hi);
}

/* Integer outputs (xform_int.c): cast, clamp in the source's type, or fill;
 * the output is the low bytes of the two's complement value. */
static inline DSV_HD uint64_t dsv_dev_xform_int(const dsv_xform_desc *d, const uint8_t *s,
						uint64_t i)
{
	int64_t v = dsv_dev_load_int(d->src, s, i);
	int is_signed = d->src == DSV_I8 || d->src == DSV_I16 || d->src == DSV_I32 ||
			d->src == DSV_I64;
	if (d->int_mode == DSV_DEV_XI_FILL)
		return d->int_fill;
	if (d->int_mode == DSV_DEV_XI_CLAMP) {
		if (is_signed) {
			int64_t lo = (int64_t)d->int_lo, hi = (int64_t)d->int_hi;
			v = v < lo ? lo : v > hi ? hi : v;
		} else {
			uint64_t u = (uint64_t)v;
			u = u < d->int_lo ? d->int_lo : u > d->int_hi ? d->int_hi : u;
			v = (int64_t)u;
		}
	}
	return (uint64_t)v;
}

/* Output element i (dst) of source element i (src), e the element's index
 * in the view (it picks the channel). */
static inline DSV_HD void dsv_dev_xform_elem(const dsv_xform_desc *d, const void *src, uint64_t i,
					     uint64_t e, void *dst)
{
	const uint8_t *s = (const uint8_t *)src;
	uint8_t *o = (uint8_t *)dst;
	float f;
	if (d->is_int) {
		uint64_t v = dsv_dev_xform_int(d, s, i);
		size_t os = d->dst == DSV_U8 || d->dst == DSV_I8     ? 1
			    : d->dst == DSV_U16 || d->dst == DSV_I16 ? 2
			    : d->dst == DSV_U32 || d->dst == DSV_I32 ? 4
								     : 8;
		memcpy(o + i * os, &v, os); /* little-endian: the low bytes */
		return;
	}
	uint64_t c = d->nchan > 1 ? e / d->chan_inner % (uint64_t)d->nchan : 0;
	double m = d->mean ? d->mean[c] : 0.0, sd = d->std ? d->std[c] : 1.0;
	if (!d->formula_only && d->scale == 1.0 && d->offset == 0.0 && m == 0.0 && sd == 1.0 &&
	    !d->has_clip) {
		if (d->dst == DSV_F16 && d->src == DSV_F64) {
			uint16_t h = dsv_elem_f64_to_f16(
				dsv_dev_bits_f64(dsv_dev_load_bits(s, 8, i)));
			memcpy(o + i * 2, &h, 2);
			return;
		}
		f = dsv_dev_load_f32(d->src, s, i);
	} else {
		f = dsv_dev_apply(dsv_dev_load_f64(d->src, s, i), d->scale, d->offset, m, sd,
				  d->has_clip, d->lo, d->hi);
	}
	if (d->dst == DSV_F32) {
		memcpy(o + i * 4, &f, 4);
	} else {
		uint16_t h = d->dst == DSV_BF16 ? dsv_elem_f32_to_bf16(f) : dsv_elem_f32_to_f16(f);
		memcpy(o + i * 2, &h, 2);
	}
}

#endif
