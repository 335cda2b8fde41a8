/* A plan's map where it is linear to a float output (linear.h): the
 * cases run_direct (xform.c) computes as a cast or as v * scale + offset. */
#include "xform/linear.h"
#include "xform/xform_i.h"

int dsv_xform_linear(const dsv_xform *x, dsv_xform_lin *out)
{
	if (!x || x->is_int || x->lut || x->src != DSV_F64 || x->has_clip || x->nchan != 1 ||
	    x->mean[0] != 0.0 || x->std[0] != 1.0 || (x->dst != DSV_F32 && x->dst != DSV_BF16))
		return 0;
	out->dst = x->dst;
	out->cast = x->scale == 1.0 && x->offset == 0.0;
	out->scale = x->scale;
	out->offset = x->offset;
	return 1;
}
