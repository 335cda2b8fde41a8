/* Element conversions for callers outside the kernels: an array of any
 * dtype as float64 (mean/std files), the bit-exact bfloat16/float16
 * roundings (xform_elem.h), and a plan as plain data for the GPU. */
#include <string.h>

#include "dsview/xform.h"
#include "xform/xform_elem.h"
#include "xform/xform_i.h"

void dsv_elems_to_f64(dsv_dtype t, const void *src, uint64_t n, double *out)
{
	const unsigned char *s = src;
	for (uint64_t i = 0; i < n; i++) {
		switch (t) {
		case DSV_U8: out[i] = s[i]; break;
		case DSV_I8: out[i] = (int8_t)s[i]; break;
		case DSV_U16: out[i] = ((const u16_u *)src)[i]; break;
		case DSV_I16: out[i] = ((const i16_u *)src)[i]; break;
		case DSV_U32: out[i] = ((const u32_u *)src)[i]; break;
		case DSV_I32: out[i] = ((const i32_u *)src)[i]; break;
		case DSV_U64: out[i] = (double)((const u64_u *)src)[i]; break;
		case DSV_I64: out[i] = (double)((const i64_u *)src)[i]; break;
		case DSV_F16: out[i] = dsv_elem_f16_to_f32(((const u16_u *)src)[i]); break;
		case DSV_BF16: out[i] = dsv_elem_bf16_to_f32(((const u16_u *)src)[i]); break;
		case DSV_F32: out[i] = ((const f32_u *)src)[i]; break;
		case DSV_F64: out[i] = ((const f64_u *)src)[i]; break;
		default: out[i] = 0; break;
		}
	}
}

uint16_t dsv_f32_to_bf16(float f)
{
	return dsv_elem_f32_to_bf16(f);
}

uint16_t dsv_f32_to_f16(float f)
{
	return dsv_elem_f32_to_f16(f);
}

float dsv_f16_to_f32(uint16_t h)
{
	return dsv_elem_f16_to_f32(h);
}

float dsv_bf16_to_f32(uint16_t h)
{
	return dsv_elem_bf16_to_f32(h);
}

void dsv_xform_describe(const dsv_xform *x, dsv_xform_desc *d)
{
	memset(d, 0, sizeof(*d));
	d->src = x->src;
	d->dst = x->dst;
	d->is_int = x->is_int;
	d->int_mode = x->ip.mode;
	d->int_lo = x->ip.lo;
	d->int_hi = x->ip.hi;
	d->int_fill = x->ip.fill;
	if (x->is_int)
		return;
	d->scale = x->scale;
	d->offset = x->offset;
	d->nchan = x->nchan;
	d->chan_inner = x->chan_inner;
	d->mean = x->mean;
	d->std = x->std;
	d->has_clip = x->has_clip;
	d->lo = x->lo;
	d->hi = x->hi;
	/* the lookup tables and run_elems use dsv_elem_apply throughout;
	 * run_direct takes the plain cast for an identity channel */
	d->formula_only = x->lut != NULL || (x->nchan > 1 && x->chan_inner == 1);
}
