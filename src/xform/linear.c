/* A plan's map where it is linear to a float output (linear.h): the
 * cases run_direct (xform.c) computes as a cast or as v * scale + offset,
 * and the store of scaled integer samples through such a map. */
#include "xform/linear.h"
#include "xform/xform_elem.h"
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

/* The stores, one loop per output and map so that each vectorises; the
 * same operations in the same order in every variant. */
static inline __attribute__((always_inline)) void put(const dsv_xform_lin *o, double gain,
						      double off, const int32_t *restrict d,
						      uint64_t m, void *out)
{
	const double sc = o->scale, of = o->offset;
#define V(i) (gain * (off + (double)d[i]))
	if (o->dst == DSV_F64) {
		f64_u *q = out;
		VEC_FOR(i, m, q[i] = V(i));
	} else if (o->dst == DSV_F32) {
		f32_u *q = out;
		if (o->cast)
			VEC_FOR(i, m, q[i] = (float)V(i));
		else
			VEC_FOR(i, m, q[i] = (float)(V(i) * sc + of));
	} else {
		u16_u *q = out;
		if (o->cast)
			VEC_FOR(i, m, q[i] = dsv_elem_f32_to_bf16((float)V(i)));
		else
			VEC_FOR(i, m, q[i] = dsv_elem_f32_to_bf16((float)(V(i) * sc + of)));
	}
#undef V
}

DSV_VECTORISE static void put_scalar(const dsv_xform_lin *o, double gain, double off,
				     const int32_t *d, uint64_t m, void *out)
{
	put(o, gain, off, d, m, out);
}

#if defined(__x86_64__)
DSV_VECTORISE __attribute__((target("avx2"))) static void put_avx2(const dsv_xform_lin *o,
								   double gain, double off,
								   const int32_t *d, uint64_t m,
								   void *out)
{
	put(o, gain, off, d, m, out);
}
#endif

void dsv_xform_lin_put(const dsv_xform_lin *o, double gain, double off, const int32_t *d,
		       uint64_t m, void *out)
{
#if defined(__x86_64__)
	if (dsv_xform_kernel_vector()) {
		put_avx2(o, gain, off, d, m, out);
		return;
	}
#endif
	put_scalar(o, gain, off, d, m, out);
}
