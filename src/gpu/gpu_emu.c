/*
 * The device's batch (dsv_gpu_decode_xform) computed on the CPU by the
 * host build of the device code: each frame through the LZ4 plan and
 * dev_lz4.h's block decoder (dsv_gpu_lz4_decode_host), each element
 * through dev_xform.h's dsv_dev_xform_elem, as the kernels compute them.
 * DSVIEW_GPU_EMULATE=1 routes the mount's device readahead here on a
 * machine without a GPU (backend/make.c), so that the tests cover that
 * path, from the staging of stored bytes to the pages stored, with the
 * device's own arithmetic, and the tier (host memory standing in for the
 * device's). One lane, element by element: slow, and never a fallback for
 * a real device.
 */
#include <stdlib.h>
#include <string.h>

#include "gpu/dev_xform.h"
#include "gpu/gpu_emu.h"
#include "gpu/lz4_plan.h"

int dsv_gpu_emu_decode_xform(const dsv_xform_desc *x, const dsv_gpu_item *items, size_t nitems,
			     uint8_t *tier)
{
	size_t es = dsv_dtype_size((dsv_dtype)x->src);
	int err = 0;

	for (size_t i = 0; i < nitems && !err; i++) {
		const dsv_gpu_item *it = &items[i];
		if (!es || it->raw % es)
			return DSV_ERR_CORRUPT;
		if (it->tier_at >= 0) { /* decoded on an earlier pass */
			if (!tier)
				return DSV_ERR_INVALID;
			for (uint64_t e = 0; e < it->raw / es; e++)
				dsv_dev_xform_elem(x, tier + it->tier_at, e, it->e0 + e, it->out);
			continue;
		}
		void *raw = malloc(it->raw ? it->raw : 1);
		if (!raw)
			return DSV_ERR_NOMEM;
		int64_t got = dsv_gpu_lz4_decode_host(raw, it->raw, it->src, it->n);
		if (got != (int64_t)it->raw)
			err = got == DSV_ERR_NOMEM ? DSV_ERR_NOMEM : DSV_ERR_CORRUPT;
		for (uint64_t e = 0; !err && e < it->raw / es; e++)
			dsv_dev_xform_elem(x, raw, e, it->e0 + e, it->out);
		if (!err && it->admit_at >= 0 && tier)
			memcpy(tier + it->admit_at, raw, (size_t)it->raw);
		free(raw);
	}
	return err;
}
