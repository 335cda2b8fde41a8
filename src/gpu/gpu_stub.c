/* Built without CUDA: no device, every chunk goes to the CPU backend. */
#include <stdio.h>

#include "dsview/backend.h"
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
	(void)g;
	return dsv_cpu_decode(v, chunk, out, size);
}
