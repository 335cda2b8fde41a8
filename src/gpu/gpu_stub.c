/* Built without CUDA: no device opens, so nothing is ever decoded here. */
#include <stdio.h>

#include "gpu/gpu.h"

dsv_gpu *dsv_gpu_open(int device, char *why, size_t why_cap)
{
	(void)device;
	snprintf(why, why_cap, "built without CUDA");
	return NULL;
}

void dsv_gpu_close(dsv_gpu *g)
{
	(void)g;
}

int dsv_gpu_decode(dsv_gpu *g, const dsv_view *v, uint64_t chunk, void *out, size_t size)
{
	(void)g, (void)v, (void)chunk, (void)out, (void)size;
	return DSV_ERR_UNSUPPORTED;
}
