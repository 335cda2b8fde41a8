/*
 * CUDA backend seam. Built without CUDA (the only build so far), dsv_gpu_open
 * always says why no device is used and the CPU backend decodes every chunk.
 * A CUDA build will implement these in gpu.cu (LZ4 decode of batches of
 * chunks), so both backends give identical bytes.
 */
#ifndef DSV_GPU_H
#define DSV_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "dsview/view.h"

typedef struct dsv_gpu dsv_gpu;

/* device -1: first available. @return NULL with why filled if none. */
dsv_gpu *dsv_gpu_open(int device, char *why, size_t why_cap);
void dsv_gpu_close(dsv_gpu *g);
int dsv_gpu_decode(dsv_gpu *g, const dsv_view *v, uint64_t chunk, void *out, size_t size);

#endif
