/*
 * Private to src/gpu: the CUDA runtime half of the backend (gpu.cu), behind
 * a C interface for gpu_host.c. A slot is one CUDA stream with its own
 * pinned host and device buffers, each of the slot's capacity, made when
 * the slot is: one chunk (or batch) at a time runs in it, and the
 * backend's slots let callers' copies and kernels overlap. The tier is
 * one allocation of device memory that every slot reads and fills.
 */
#ifndef DSV_GPU_CUDA_I_H
#define DSV_GPU_CUDA_I_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/lz4_plan.h"
#include "xform/xform_elem.h"

#ifdef __cplusplus
extern "C" {
#endif

#include "dsview/dsview.h"

/* Every call here that fails says why in eb (may be NULL): a CUDA error
 * is DSV_ERR_INTERNAL with "CUDA <what>: <CUDA's words>", and the device
 * is not to be trusted again. */

/* Picks device (-1: the first), sets it for this thread, fills name.
 * @return the device (>= 0), or DSV_ERR_UNSUPPORTED ("no CUDA device",
 * "CUDA driver not found (libcuda.so.1)", ...) or DSV_ERR_INTERNAL. */
int dsv_cuda_open(int device, char *name, size_t name_cap, dsv_errbuf *eb);
/* Gives back device's context and all its memory (after a refusal, or a
 * device that opened but could not get its buffers). */
void dsv_cuda_release(int device);

typedef struct dsv_cuda_slot dsv_cuda_slot;

/* *out: a slot whose stored bytes in, decoded bytes and output each fit
 * in cap bytes. @return 0, DSV_ERR_NOMEM or DSV_ERR_INTERNAL. */
int dsv_cuda_slot_new(int device, size_t cap, dsv_cuda_slot **out, dsv_errbuf *eb);
void dsv_cuda_slot_free(dsv_cuda_slot *s); /* accepts NULL */

/* The slot's pinned staging for n input bytes and njobs jobs (the jobs'
 * buffer grows as needed). @return 0, DSV_ERR_OVERFLOW when n exceeds
 * the slot's capacity, or DSV_ERR_INTERNAL (a CUDA error). */
int dsv_cuda_slot_stage(dsv_cuda_slot *s, size_t n, size_t njobs, void **in, dsv_gpu_job **jobs,
			dsv_errbuf *eb);

/* A run of decoded elements to transform: src_off into the decoded bytes
 * (into the tier when from_tier), out_off into the output, e0 the view
 * index of the first. */
typedef struct dsv_cuda_item {
	uint64_t src_off, out_off, nelems, e0, from_tier;
} dsv_cuda_item;

/* n decoded bytes at raw_off copied into the tier at tier_at. */
typedef struct dsv_cuda_admit {
	uint64_t raw_off, tier_at, n;
} dsv_cuda_admit;

typedef struct dsv_gpu_times {
	double h2d_s, kernel_s, d2h_s; /* CUDA events: copy in, decode + transform, copy out */
} dsv_gpu_times;

/* Runs the staged jobs over the staged n input bytes into raw decoded
 * bytes on the device; copies the admits' decoded bytes into the tier
 * (device memory, NULL for none); then, with x, transforms items (nitems
 * of them, the source dtype x->src) into the output dtype; and copies
 * out_n bytes (of the decoded bytes without x, of the output with it) to
 * the slot's pinned output (dsv_cuda_slot_out) and, unless dst is NULL,
 * to dst. times may be NULL. @return 0, DSV_ERR_CORRUPT when a block
 * failed to decode (nothing trusted in the output or the admits),
 * DSV_ERR_OVERFLOW when raw or out_n exceeds the slot's capacity, or
 * DSV_ERR_INTERNAL (a CUDA error). */
int dsv_cuda_slot_run(dsv_cuda_slot *s, size_t n, size_t njobs, uint64_t raw,
		      const dsv_xform_desc *x, const dsv_cuda_item *items, size_t nitems,
		      uint8_t *tier, const dsv_cuda_admit *admits, size_t nadmits, void *dst,
		      size_t out_n, dsv_gpu_times *times, dsv_errbuf *eb);

/* Copies n bytes at offset at of the tier to dst, through the slot.
 * @return 0, DSV_ERR_OVERFLOW when n exceeds the slot's capacity, or
 * DSV_ERR_INTERNAL (a CUDA error). */
int dsv_cuda_slot_fetch(dsv_cuda_slot *s, const uint8_t *tier, uint64_t at, size_t n, void *dst,
			dsv_errbuf *eb);

/* The tier: *out, n bytes of device memory. @return 0 or DSV_ERR_NOMEM. */
int dsv_cuda_tier_new(int device, size_t n, uint8_t **out, dsv_errbuf *eb);
void dsv_cuda_tier_free(int device, uint8_t *tier); /* accepts NULL */

/* The last run's output, in pinned host memory, until the slot runs again. */
const void *dsv_cuda_slot_out(const dsv_cuda_slot *s);

#ifdef __cplusplus
}
#endif

#endif
