/*
 * The CUDA backend, below src/backend (docs/gpu.md). A CUDA
 * build (nvcc found) decodes LZ4 (32004) chunks on the device, one warp per
 * LZ4 block, with the same bytes as the CPU; a build without CUDA
 * (gpu_stub.c) opens no device, so the backend decodes every chunk on the
 * CPU. The gpu never calls back into the backend: a chunk it does not take
 * (DSV_ERR_UNSUPPORTED) is the backend's to decode, and that includes
 * every chunk after a CUDA error, and every chunk whose bytes fail a check
 * (the CPU reads it again and reports it as it reports any bad chunk).
 *
 * Thread safety: dsv_gpu_decode, dsv_gpu_decode_xform and dsv_gpu_get_stats
 * may be called from any number of threads; open and close are not
 * concurrent with anything. Open after daemonising (CUDA must not see a
 * fork).
 */
#ifndef DSV_GPU_H
#define DSV_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "dsview/view.h"
#include "xform/xform_elem.h"

typedef struct dsv_gpu dsv_gpu;

/* device -1: first available. Each of the two slots gets its buffers of
 * batch bytes now (pinned host memory for the stored bytes in and the
 * output back, device memory for those and the decoded chunks): no batch
 * or chunk needing more runs on the device. @return 0 and *out, or
 * DSV_ERR_UNSUPPORTED (no device opens: eb says why, "no CUDA device",
 * "built without CUDA", ...), DSV_ERR_NOMEM or DSV_ERR_INTERNAL (its
 * buffers cannot be had). */
int dsv_gpu_open(int device, uint64_t batch, dsv_gpu **out, dsv_errbuf *eb);
/* Device memory for the tier (gpu_tier.h): n bytes. @return 0, or
 * DSV_ERR_NOMEM or DSV_ERR_UNSUPPORTED with eb (the device keeps working
 * without one). */
int dsv_gpu_tier_alloc(dsv_gpu *g, uint64_t n, dsv_errbuf *eb);
void dsv_gpu_close(dsv_gpu *g); /* accepts NULL */
/* Decodes global chunk g of view v into out, as dsv_backend_decode, and
 * with admit_at >= 0 copies the whole decoded chunk into the tier there.
 * The stored bytes are read (and checked) before a slot is taken, and a
 * chunk that finds both slots busy, or has fewer LZ4 blocks than
 * DSVIEW_GPU_MIN_BLOCKS, is left to the CPU.
 * @return 0, or DSV_ERR_UNSUPPORTED for a chunk the device does not
 * decode (the caller decodes it on the CPU). */
int dsv_gpu_decode(dsv_gpu *g, const dsv_view *v, uint64_t chunk, void *out, size_t size,
		   int64_t admit_at);

/* Copies n bytes at offset at of the tier to out. @return 0, or
 * DSV_ERR_UNSUPPORTED on a CUDA error (the device is off from then on). */
int dsv_gpu_tier_read(dsv_gpu *g, uint64_t at, void *out, size_t n);

/* The device's name ("NVIDIA H100 80GB HBM3"). */
const char *dsv_gpu_name(const dsv_gpu *g);

typedef struct dsv_gpu_stats {
	uint64_t chunks;    /* decoded on the device */
	uint64_t bytes;     /* their decoded bytes */
	uint64_t batches;   /* kernel runs */
	uint64_t fallbacks; /* LZ4 chunks handed to the CPU: a CUDA error, a failed check */
	uint64_t busy;      /* chunks read alone decoded on the CPU: both slots were busy */
	int failed;         /* a CUDA error turned the device off */
} dsv_gpu_stats;
void dsv_gpu_get_stats(const dsv_gpu *g, dsv_gpu_stats *st);

/* A batch: LZ4 frames (n stored bytes at src, no Fletcher32 trailer, raw
 * decoded bytes) decoded and transformed on the device by plan x (source
 * dtype x->src) into out (raw / source size elements of x->dst; e0 the
 * view index of the first). For benchmarks, and the readahead when it
 * hands the device whole batches. With a tier: an item whose decoded
 * bytes the tier holds (tier_at >= 0) is transformed from there (src and
 * n unused), and one with admit_at >= 0 is copied into the tier there
 * once decoded; -1 for neither. */
typedef struct dsv_gpu_item {
	const void *src;
	size_t n;
	uint64_t raw, e0;
	void *out;
	int64_t tier_at, admit_at;
} dsv_gpu_item;
/* Seconds of the last batch, from CUDA events in its stream. */
typedef struct dsv_gpu_timing {
	double h2d_s, kernel_s, d2h_s;
} dsv_gpu_timing;
/* @return 0, DSV_ERR_CORRUPT (a frame or block failed), DSV_ERR_NOMEM, or
 * DSV_ERR_UNSUPPORTED (a CUDA error: the device is off from then on; or
 * a batch larger than the slots' buffers). */
int dsv_gpu_decode_xform(dsv_gpu *g, const dsv_xform_desc *x, const dsv_gpu_item *items,
			 size_t nitems, dsv_gpu_timing *t);

#endif
