/*
 * A batch of dsv_gpu_decode_xform planned on the host: its sizes, the
 * stored bytes staged one after another, one job per LZ4 block, where
 * each item's decoded bytes and output go, and the decoded chunks copied
 * into the tier. The device (gpu_host.c) and its emulation (gpu_emu.c)
 * plan through these same calls, so the tests run the planning the device
 * runs, its failures included.
 *
 * Thread safety: reentrant; no global state but the test hook of
 * gpu_emu.h.
 */
#ifndef DSV_GPU_BATCH_H
#define DSV_GPU_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/cuda_i.h"
#include "gpu/gpu.h"

typedef struct dsv_gpu_batch {
	size_t n;       /* stored bytes staged */
	size_t njobs;   /* LZ4 blocks: one job each */
	uint64_t raw;   /* decoded bytes */
	size_t out_n;   /* output bytes */
	size_t nadmits; /* decoded chunks copied into the tier */
} dsv_gpu_batch;

/* Sizes the batch of items[0..nitems) under plan x; tier: whether there is
 * a tier to read from and admit to. @return 0 with *b, DSV_ERR_CORRUPT (a
 * frame refused, or a raw size not of whole source elements),
 * DSV_ERR_INVALID (an item from the tier and no tier) or DSV_ERR_NOMEM. */
int dsv_gpu_batch_size(const dsv_xform_desc *x, const dsv_gpu_item *items, size_t nitems, int tier,
		       dsv_gpu_batch *b);

/* Stages the batch b sized: the stored bytes into in (b->n bytes), the
 * jobs into jobs (b->njobs), each item's offsets into ci (nitems) and the
 * admits into ad (b->nadmits). @return 0, or DSV_ERR_NOMEM or
 * DSV_ERR_CORRUPT when a frame's plan fails or gives other jobs than
 * sized: then nothing staged may run. */
int dsv_gpu_batch_plan(const dsv_xform_desc *x, const dsv_gpu_item *items, size_t nitems, int tier,
		       const dsv_gpu_batch *b, uint8_t *in, dsv_gpu_job *jobs, dsv_cuda_item *ci,
		       dsv_cuda_admit *ad);

/* Copies each item's output from the batch's output outs to its out. */
void dsv_gpu_batch_deliver(const dsv_xform_desc *x, const dsv_gpu_item *items, size_t nitems,
			   const dsv_cuda_item *ci, const uint8_t *outs);

#endif
