/*
 * The 8-bit sources' lookup tables (xform.c decides which plans have
 * them): every output of a channel is one of 256 values, computed here
 * once per plan by dsv_elem_apply in float64, rounded once to float32 and
 * then to the output's bits, so a lookup gives exactly what the formula
 * gives. The same bytes are kept a second time as byte planes for the
 * VBMI permutes (lut_vbmi.c).
 */
#include <stdlib.h>

#include "xform/xform_elem.h"
#include "xform/xform_i.h"

/* x->lut's bytes as planes (xform_i.h): int8's tables are indexed by
 * x + 128, the planes by the raw byte. */
static int make_planes(dsv_xform *x)
{
	size_t os = dsv_dtype_size(x->dst);
	unsigned flip = x->src == DSV_I8 ? 0x80u : 0u;
	x->planes = malloc((size_t)x->nchan * os * 256);
	if (!x->planes)
		return -1;
	for (size_t c = 0; c < (size_t)x->nchan; c++)
		for (size_t b = 0; b < os; b++)
			for (unsigned v = 0; v < 256; v++)
				x->planes[(c * os + b) * 256 + v] =
					((const uint8_t *)x->lut)[(c * 256 + (v ^ flip)) * os + b];
	return 0;
}

int dsv_xform_make_tables(dsv_xform *x)
{
	size_t os = dsv_dtype_size(x->dst);
	x->lut = malloc((size_t)x->nchan * 256 * os);
	if (!x->lut)
		return -1;
	for (int c = 0; c < x->nchan; c++) {
		for (int v = 0; v < 256; v++) {
			double xv = x->src == DSV_I8 ? (double)(v - 128) : (double)v;
			float f = dsv_elem_apply(xv, x->scale, x->offset, x->mean[c], x->std[c],
						 x->has_clip, x->lo, x->hi);
			size_t k = (size_t)c * 256 + (size_t)v;
			if (x->dst == DSV_F32)
				((float *)x->lut)[k] = f;
			else if (x->dst == DSV_BF16)
				((uint16_t *)x->lut)[k] = dsv_elem_f32_to_bf16(f);
			else
				((uint16_t *)x->lut)[k] = dsv_elem_f32_to_f16(f);
		}
	}
	return make_planes(x);
}
