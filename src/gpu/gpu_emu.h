/*
 * The device's work emulated on the CPU (gpu_emu.c, in every build), for
 * tests on machines without a GPU: the backend routes its device
 * readahead here when DSVIEW_GPU_EMULATE=1 and no device opened. Never a
 * fallback for a real device. Also the GPU code's test hook.
 */
#ifndef DSV_GPU_EMU_H
#define DSV_GPU_EMU_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/gpu.h"

/* The batch dsv_gpu_decode_xform would compute, computed on the CPU by
 * the host build of the device code, planned as the device plans it
 * (batch.h): what the kernels compute; tier is the tier's memory (host
 * memory here), NULL for none. @return 0, DSV_ERR_CORRUPT, DSV_ERR_INVALID
 * or DSV_ERR_NOMEM. */
int dsv_gpu_emu_decode_xform(const dsv_xform_desc *x, const dsv_gpu_item *items, size_t nitems,
			     uint8_t *tier);

/* For tests: called before each LZ4 plan takes its memory
 * (dsv_gpu_plan_lz4); non-zero makes that plan fail as out of memory.
 * NULL (the default) does nothing. Set it only while nothing plans. */
extern int (*dsv_gpu_plan_fail_hook)(void);

#endif
