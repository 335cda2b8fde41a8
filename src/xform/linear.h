/*
 * A plan's map where it is linear to a float output: what a source that
 * decodes its samples to float64 needs to write the view's output itself,
 * skipping the float64 buffer and the transform's pass over it, with the
 * same bytes the plan's run gives for that buffer.
 */
#ifndef DSV_XFORM_LINEAR_H
#define DSV_XFORM_LINEAR_H

#include "dsview/xform.h"

typedef struct dsv_xform_lin {
	dsv_dtype dst; /* DSV_F32 or DSV_BF16 (DSV_F64: the values themselves) */
	/* 1: each output is the float64 value v rounded to float32 (then to
	 * bfloat16 by RNE), as numpy's astype (-0.0 kept); 0: v * scale +
	 * offset in float64, rounded the same way */
	int cast;
	double scale, offset;
} dsv_xform_lin;

/* 1 and *out filled where x, run on float64 elements, is such a map
 * (float32 or bfloat16 output, no mean/std, no clip); 0 otherwise. */
int dsv_xform_linear(const dsv_xform *x, dsv_xform_lin *out);

/* Integer samples d[0 .. m) scaled as gain * (off + d) in float64 (a
 * recording's channel: its physical units), each stored through o into
 * out (m outputs of o->dst, any alignment): a vector loop, the same bytes
 * as one sample at a time, on every processor. */
void dsv_xform_lin_put(const dsv_xform_lin *o, double gain, double off, const int32_t *d,
		       uint64_t m, void *out);

#endif
