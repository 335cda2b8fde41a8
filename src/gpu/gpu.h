/*
 * CUDA backend seam, below src/backend. Built without CUDA (the only build
 * so far), dsv_gpu_open always says why no device is used, so the backend
 * decodes every chunk on the CPU. A CUDA build will implement these in
 * gpu.cu (LZ4 decode and transform of batches of chunks) with the same
 * bytes as the CPU. The gpu never calls back into the backend: a chunk it
 * does not take (DSV_ERR_UNSUPPORTED) is the backend's to decode.
 */
#ifndef DSV_GPU_H
#define DSV_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "dsview/view.h"

typedef struct dsv_gpu dsv_gpu;

/* device -1: first available. @return NULL with why filled if none. */
dsv_gpu *dsv_gpu_open(int device, char *why, size_t why_cap);
void dsv_gpu_close(dsv_gpu *g); /* accepts NULL */
/* Decodes global chunk g of view v into out, as dsv_backend_decode.
 * @return 0, a negative dsv_err, or DSV_ERR_UNSUPPORTED for a chunk the
 * device does not decode (the caller decodes it on the CPU). */
int dsv_gpu_decode(dsv_gpu *g, const dsv_view *v, uint64_t chunk, void *out, size_t size);

#endif
