/* Private to src/backend: the backend's state, shared by backend.c and
 * make.c. */
#ifndef DSV_BACKEND_BACKEND_I_H
#define DSV_BACKEND_BACKEND_I_H

#include <stdatomic.h>
#include <stdint.h>

#include "backend/backend.h"
#include "gpu/gpu.h"
#include "gpu/gpu_tier.h"

struct dsv_backend {
	dsv_gpu *gpu;       /* NULL: CPU */
	char why[256];      /* why the CPU, when gpu is NULL */
	uint64_t batch;     /* dsv_backend_batch_bytes: a device batch's limit */
	dsv_gpu_tier *tier; /* --gpu-cache's index, or NULL */
	/* For tests (DSVIEW_GPU_EMULATE=1, --gpu auto and no device): the
	 * readahead's device path runs the host build of the device code
	 * (gpu/gpu_emu.h), the tier's memory in host memory. */
	struct {
		int on;
		uint8_t *tier; /* or NULL */
	} emu;
	atomic_uint_fast64_t made_bytes;     /* readahead output made on the device path */
	atomic_uint_fast64_t made_fallbacks; /* ranges it handed back to the CPU */
};

#endif
