/* Built without CUDA: no device opens, so nothing is ever decoded here. */
#include <stdio.h>
#include <string.h>

#include "gpu/gpu.h"

int dsv_gpu_open(int device, uint64_t batch, dsv_gpu **out, dsv_errbuf *eb)
{
	(void)device, (void)batch;
	*out = NULL;
	return dsv_errf(eb, DSV_ERR_UNSUPPORTED, "built without CUDA");
}

void dsv_gpu_close(dsv_gpu *g)
{
	(void)g;
}

int dsv_gpu_decode(dsv_gpu *g, const dsv_view *v, uint64_t chunk, void *out, size_t size,
		   int64_t admit_at)
{
	(void)g, (void)v, (void)chunk, (void)out, (void)size, (void)admit_at;
	return DSV_ERR_UNSUPPORTED;
}

int dsv_gpu_tier_alloc(dsv_gpu *g, uint64_t n, dsv_errbuf *eb)
{
	(void)g, (void)n;
	return dsv_errf(eb, DSV_ERR_UNSUPPORTED, "built without CUDA");
}

int dsv_gpu_tier_read(dsv_gpu *g, uint64_t at, void *out, size_t n)
{
	(void)g, (void)at, (void)out, (void)n;
	return DSV_ERR_UNSUPPORTED;
}

const char *dsv_gpu_name(const dsv_gpu *g)
{
	(void)g;
	return "";
}

void dsv_gpu_get_stats(const dsv_gpu *g, dsv_gpu_stats *st)
{
	(void)g;
	memset(st, 0, sizeof(*st));
}

int dsv_gpu_decode_xform(dsv_gpu *g, const dsv_xform_desc *x, const dsv_gpu_item *items,
			 size_t nitems, dsv_gpu_timing *t)
{
	(void)g, (void)x, (void)items, (void)nitems, (void)t;
	return DSV_ERR_UNSUPPORTED;
}
