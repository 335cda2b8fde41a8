/*
 * The device's work emulated on the CPU (gpu_emu.c, in every build), for
 * tests on machines without a GPU: the backend routes its device
 * readahead here when DSVIEW_GPU_EMULATE=1 and no device opened. Never a
 * fallback for a real device.
 */
#ifndef DSV_GPU_EMU_H
#define DSV_GPU_EMU_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/gpu.h"

/* The batch dsv_gpu_decode_xform would compute, computed on the CPU by
 * the host build of the device code: what the kernels compute; tier is
 * the tier's memory (host memory here), NULL for none. @return 0,
 * DSV_ERR_CORRUPT or DSV_ERR_NOMEM. */
int dsv_gpu_emu_decode_xform(const dsv_xform_desc *x, const dsv_gpu_item *items, size_t nitems,
			     uint8_t *tier);

#endif
