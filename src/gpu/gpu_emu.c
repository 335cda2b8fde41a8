/*
 * The device's batch (dsv_gpu_decode_xform) computed on the CPU by the
 * host build of the device code: each frame through the LZ4 plan and
 * dev_lz4.h's block decoder (dsv_gpu_lz4_decode_host), each element
 * through dev_xform.h's dsv_dev_xform_elem, as the kernels compute them.
 * DSVIEW_GPU_EMULATE=1 routes the mount's device readahead here on a
 * machine without a GPU (backend/make.c), so that the tests cover that
 * path, from the staging of stored bytes to the pages stored, with the
 * device's own arithmetic. One lane, element by element: slow, and never
 * a fallback for a real device.
 */
#include <stdlib.h>

#include "gpu/dev_xform.h"
#include "gpu/gpu.h"
#include "gpu/lz4_plan.h"

int dsv_gpu_emu_decode_xform(const dsv_xform_desc *x, const dsv_gpu_item *items, size_t nitems)
{
	size_t es = dsv_dtype_size((dsv_dtype)x->src);
	int err = 0;

	for (size_t i = 0; i < nitems && !err; i++) {
		const dsv_gpu_item *it = &items[i];
		void *raw = es && it->raw % es == 0 ? malloc(it->raw ? it->raw : 1) : NULL;
		if (!raw)
			return es && it->raw % es == 0 ? DSV_ERR_NOMEM : DSV_ERR_CORRUPT;
		int64_t got = dsv_gpu_lz4_decode_host(raw, it->raw, it->src, it->n);
		if (got != (int64_t)it->raw)
			err = got == DSV_ERR_NOMEM ? DSV_ERR_NOMEM : DSV_ERR_CORRUPT;
		for (uint64_t e = 0; !err && e < it->raw / es; e++)
			dsv_dev_xform_elem(x, raw, e, it->e0 + e, it->out);
		free(raw);
	}
	return err;
}
