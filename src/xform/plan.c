/* A transform plan: its parameters checked, its mean/std period and,
 * for 8-bit sources, its tables made (xform.c runs it). */
#include <stdlib.h>
#include <string.h>

#include "dsview/xform.h"
#include "xform/xform_i.h"

#define LUT_MAX_ENTRIES (1u << 22) /* nchan * 256 above this: compute directly */

void dsv_xform_params_init(dsv_xform_params *p)
{
	memset(p, 0, sizeof(*p));
	p->scale = 1.0;
	p->chan_inner = 1;
}

static int finite(double v)
{
	return v == v && v - v == 0.0;
}

/* How many entries the mean/std arrays hold. With chan_inner == 1 the
 * channel advances every element and the direct kernels walk stretches of
 * consecutive channels (run_elems); a few channels (HWC pixels) would make
 * those stretches a few elements long, so they are repeated up to a period
 * of at least PERIOD_MIN elements, a multiple of nchan. */
#define PERIOD_MIN 4096u
static uint64_t make_period(int nchan, uint64_t chan_inner)
{
	uint64_t nc = (uint64_t)nchan;
	if (nchan <= 1 || chan_inner != 1 || nc >= PERIOD_MIN)
		return nc;
	return nc * ((PERIOD_MIN + nc - 1) / nc);
}

int dsv_xform_create(dsv_xform **out, dsv_dtype src, dsv_dtype dst, const dsv_xform_params *p,
		     dsv_errbuf *eb)
{
	dsv_xform *x;
	*out = NULL;
	if ((unsigned)src >= DSV_DTYPE__COUNT || src == DSV_BF16)
		return dsv_errf(eb, DSV_ERR_INVALID, "unsupported source dtype %s",
				dsv_dtype_name(src));
	if (!dsv_dtype_is_output(dst))
		return dsv_errf(
			eb, DSV_ERR_INVALID,
			"output dtype must be float32, bfloat16, float16 or an integer type");
	if (dsv_dtype_is_int(dst)) {
		xform_int ip;
		int err = dsv_xform_int_plan(&ip, src, dst, p, eb);
		if (err)
			return err;
		x = calloc(1, sizeof(*x));
		if (!x)
			return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
		x->src = src;
		x->dst = dst;
		x->is_int = 1;
		x->ip = ip;
		*out = x;
		return 0;
	}
	if (!finite(p->scale) || !finite(p->offset))
		return dsv_errf_key(eb, DSV_ERR_INVALID, "scale",
				    "scale and offset must be finite");
	if (p->nchan < 0 || (p->nchan > 0 && (!p->mean || !p->std || p->chan_inner < 1)))
		return dsv_errf_key(eb, DSV_ERR_INVALID, "mean",
				    "mean/std need values and a channel axis");
	for (int c = 0; c < p->nchan; c++) {
		if (!finite(p->mean[c]))
			return dsv_errf_key(eb, DSV_ERR_INVALID, "mean", "mean[%d] is not finite",
					    c);
		if (!finite(p->std[c]) || p->std[c] == 0)
			return dsv_errf_key(eb, DSV_ERR_INVALID, "std", "std[%d] is %g", c,
					    p->std[c]);
	}
	if (p->has_clip && !(p->clip_lo <= p->clip_hi))
		return dsv_errf_key(eb, DSV_ERR_INVALID, "clip", "clip needs LOW <= HIGH");

	x = calloc(1, sizeof(*x));
	if (!x)
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	x->src = src;
	x->dst = dst;
	x->scale = p->scale;
	x->offset = p->offset;
	x->nchan = p->nchan > 0 ? p->nchan : 1;
	x->chan_inner = p->nchan > 0 ? p->chan_inner : 1;
	x->has_clip = p->has_clip;
	x->lo = p->clip_lo;
	x->hi = p->clip_hi;
	x->period = make_period(x->nchan, x->chan_inner);
	x->mean = calloc((size_t)x->period, sizeof(double));
	x->std = calloc((size_t)x->period, sizeof(double));
	if (!x->mean || !x->std)
		goto nomem;
	for (uint64_t k = 0; k < x->period; k++) {
		int c = (int)(k % (uint64_t)x->nchan);
		x->mean[k] = p->nchan ? p->mean[c] : 0.0;
		x->std[k] = p->nchan ? p->std[c] : 1.0;
	}
	/* A table per channel is one load per element, but with chan_inner 1
	 * and more than 3 channels those loads scatter and run_elems' formula
	 * is faster (xform_bench: 4.5 against 12 GB/s, 8 channels and up); a
	 * plain cast to float32 is one exact conversion, faster than a table. */
	int cast_f32 = dst == DSV_F32 && p->scale == 1.0 && p->offset == 0.0 && !p->nchan &&
		       !p->has_clip;
	if ((src == DSV_U8 || src == DSV_I8) && (uint64_t)x->nchan * 256 <= LUT_MAX_ENTRIES &&
	    (x->chan_inner > 1 || x->nchan <= 3) && !cast_f32 && dsv_xform_make_tables(x))
		goto nomem;
	*out = x;
	return 0;
nomem:
	dsv_xform_destroy(x);
	return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
}

void dsv_xform_destroy(dsv_xform *x)
{
	if (!x)
		return;
	free(x->mean);
	free(x->std);
	free(x->lut);
	free(x->planes);
	free(x);
}
