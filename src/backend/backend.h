/*
 * Backends: the one interface through which a chunk that must be decoded
 * whole (LZ4, Fletcher32, HDF5-library filters) is read and decoded into
 * its elements, in the source dtype, for the chunk cache (read/read.h
 * transforms from there). "cpu" runs in the calling thread (FUSE workers
 * and readahead threads are the parallelism); "cuda" (built when nvcc is
 * found, src/gpu) decodes LZ4 chunks on a GPU, and hands every other chunk,
 * and every chunk after a CUDA error, to "cpu". Both produce identical
 * bytes.
 *
 * Thread safety: dsv_backend_decode may be called from any number of threads
 * at once; create/destroy are not concurrent with anything. Create after
 * daemonising (CUDA must not see a fork).
 */
#ifndef DSV_BACKEND_BACKEND_H
#define DSV_BACKEND_BACKEND_H

#include "dsview/view.h"

typedef struct dsv_backend dsv_backend;

/* gpu: "auto", "off", or a device number. gpu_cache: bytes of the
 * device-memory tier (--gpu-cache), 0 for none. budget: the mount's cache
 * budget (--cache-size), which with the views to serve (views[0..n), may
 * be none) sizes the device's buffers (dsv_backend_batch_bytes). @return
 * 0; DSV_ERR_UNSUPPORTED when a device was named that this build or
 * machine cannot use, or a device opened without room for its buffers or
 * the tier (eb says why). */
int dsv_backend_create(const char *gpu, uint64_t gpu_cache, uint64_t budget, dsv_view *const *views,
		       size_t n, dsv_backend **out, dsv_errbuf *eb);
void dsv_backend_destroy(dsv_backend *b);
const char *dsv_backend_name(const dsv_backend *b); /* "cpu" or "cuda" */
/* Bytes each device buffer holds for a cache budget and views[0..n): a
 * 32nd of the budget, between 1 MiB and 128 MiB, or what the views' largest
 * LZ4 chunk needs (its stored bytes at worst, decoded, or made) if more, up
 * to 1 GiB and to an 8th of a budget that is not 0 (the 4 pinned buffers
 * then take half the budget at most); whole MiB. A batch that needs more in any one buffer is cut,
 * and a chunk that does is left to the CPU. */
uint64_t dsv_backend_batch_bytes(uint64_t budget, dsv_view *const *views, size_t n);
/* Pinned host memory the device's buffers hold (0 on the CPU): the mount
 * takes it out of the chunk cache's budget. */
uint64_t dsv_backend_pinned(const dsv_backend *b);

/* For .stats.json: the device and what it did, or why there is none. */
typedef struct dsv_backend_stats {
	const char *device;  /* the GPU's name, "" on the CPU */
	const char *why_cpu; /* why no GPU is used ("--gpu off", "no CUDA device", ...), "" */
	uint64_t gpu_chunks, gpu_bytes, gpu_batches, gpu_fallbacks;
	uint64_t gpu_busy; /* chunks decoded on the CPU because the device's slots were busy */
	int gpu_failed;    /* a CUDA error turned the GPU off: chunks decode on the CPU */
	int gpu_emulated;  /* DSVIEW_GPU_EMULATE: the device path runs on the CPU */
	uint64_t made_bytes, made_fallbacks; /* dsv_backend_make's */
	uint64_t batch_bytes, pinned_bytes;  /* each device buffer; pinned host memory */
	/* the tier (--gpu-cache): bytes, bytes used, chunks held, and the
	 * answers of its lookups */
	uint64_t tier_bytes, tier_used, tier_chunks, tier_hits, tier_misses;
} dsv_backend_stats;
void dsv_backend_get_stats(const dsv_backend *b, dsv_backend_stats *st);

/* Decodes global chunk g of view v into out: its elements in the source
 * dtype, native little-endian (size must be the chunk's elements times the
 * source element size); from the tier when it holds the chunk. flags: the
 * read's request's (DSV_READ_*, source/source.h), handed on to the source.
 * Logs the source, chunk and reason on failure.
 * @return 0 or a negative dsv_err (the read fails with EIO). */
int dsv_backend_decode(dsv_backend *b, const dsv_view *v, uint64_t g, void *out, size_t size,
		       unsigned flags);

/* The readahead's device path (make.c): output elements [e0, e0 + n) of
 * view v, in the view's dtype as dsv_read makes them, into out, decoded
 * and transformed on the device from the chunks' stored bytes, which the
 * CPU only reads and checks (pread, Fletcher32). For a view whose output
 * is its sources' elements in order, one per-element transform each (no
 * rows, windows or layout), of LZ4 (32004) chunks; chunks the tier holds
 * are transformed from there, and others admitted to it while it has
 * room. @return 0, or non-zero
 * with nothing promised in out: DSV_ERR_UNSUPPORTED where the device path
 * does not apply (no device, another view or codec, a CUDA error), any
 * other error where a chunk failed a check. Either way the caller makes
 * the bytes on the CPU path, which reports what is wrong. */
int dsv_backend_make(dsv_backend *b, const dsv_view *v, uint64_t e0, uint64_t n, void *out);
/* Whether dsv_backend_make may make any of view v (a device not turned
 * off by a CUDA error, or its emulation, and a view of the kind it makes,
 * of LZ4 sources). */
int dsv_backend_makes(const dsv_backend *b, const dsv_view *v);

/* The CPU path: every chunk the GPU does not take. */
int dsv_cpu_decode(const dsv_view *v, uint64_t g, void *out, size_t size, unsigned flags);

#endif
