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

/* gpu: "auto", "off", or a device number. @return 0, or DSV_ERR_UNSUPPORTED
 * when a device was named that this build or machine cannot use. */
int dsv_backend_create(const char *gpu, dsv_backend **out, dsv_errbuf *eb);
void dsv_backend_destroy(dsv_backend *b);
const char *dsv_backend_name(const dsv_backend *b); /* "cpu" or "cuda" */

/* For .stats.json: the device and what it did, or why there is none. */
typedef struct dsv_backend_stats {
	const char *device;  /* the GPU's name, "" on the CPU */
	const char *why_cpu; /* why no GPU is used ("--gpu off", "no CUDA device", ...), "" */
	uint64_t gpu_chunks, gpu_bytes, gpu_batches, gpu_fallbacks;
	int gpu_failed; /* a CUDA error turned the GPU off: chunks decode on the CPU */
	int gpu_emulated; /* DSVIEW_GPU_EMULATE: the device path runs on the CPU */
	uint64_t made_bytes, made_fallbacks; /* dsv_backend_make's */
} dsv_backend_stats;
void dsv_backend_get_stats(const dsv_backend *b, dsv_backend_stats *st);

/* Decodes global chunk g of view v into out: its elements in the source
 * dtype, native little-endian (size must be the chunk's elements times the
 * source element size). Logs the source, chunk and reason on failure.
 * @return 0 or a negative dsv_err (the read fails with EIO). */
int dsv_backend_decode(dsv_backend *b, const dsv_view *v, uint64_t g, void *out, size_t size);

/* The readahead's device path (make.c): output elements [e0, e0 + n) of
 * view v, in the view's dtype as dsv_read makes them, into out, decoded
 * and transformed on the device from the chunks' stored bytes, which the
 * CPU only reads and checks (pread, Fletcher32). For a view whose output
 * is its sources' elements in order, one per-element transform each (no
 * rows, windows or layout), of LZ4 (32004) chunks. @return 0, or non-zero
 * with nothing promised in out: DSV_ERR_UNSUPPORTED where the device path
 * does not apply (no device, another view or codec, a CUDA error), any
 * other error where a chunk failed a check. Either way the caller makes
 * the bytes on the CPU path, which reports what is wrong. */
int dsv_backend_make(dsv_backend *b, const dsv_view *v, uint64_t e0, uint64_t n, void *out);
/* Whether dsv_backend_make may make any of view v (a device, or its
 * emulation, and a view of the kind it makes, of LZ4 sources). */
int dsv_backend_makes(const dsv_backend *b, const dsv_view *v);

/* The CPU path: every chunk the GPU does not take. */
int dsv_cpu_decode(const dsv_view *v, uint64_t g, void *out, size_t size);

#endif
