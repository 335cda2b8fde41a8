/*
 * The CUDA runtime half of the GPU backend (cuda_i.h): the device is
 * chosen and checked here, and a slot stages a chunk's stored bytes in
 * pinned host memory, copies them in, decodes every LZ4 block with one
 * warp per block (dev_lz4.h), copies decoded chunks into the tier when
 * asked, optionally transforms the elements (dev_xform.h), from the
 * decoded bytes or the tier, and copies the result out, all in the
 * slot's own stream.
 *
 * Built by nvcc with --fmad=false and IEEE division and denormals (the
 * Makefile's NVCCFLAGS), so the transform rounds as the CPU's kernels do.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "gpu/cuda_i.h"
#include "gpu/dev_lz4.h"
#include "gpu/dev_xform.h"

#define THREADS 256 /* per CUDA block: 8 warps, 8 LZ4 blocks */

struct dsv_cuda_slot {
	int device;
	size_t cap; /* of h_in, h_out, d_in, d_raw, d_out: made with the slot */
	cudaStream_t stream;
	cudaEvent_t ev[4];
	int nev;
	/* pinned host staging */
	void *h_in, *h_out;
	dsv_gpu_job *h_jobs;
	int *h_status;
	size_t h_jobs_cap; /* grown as needed, as are the other small ones */
	/* device */
	uint8_t *d_in, *d_raw, *d_out;
	dsv_gpu_job *d_jobs;
	dsv_cuda_item *d_items;
	double *d_chan; /* mean then std */
	int *d_status;
	size_t d_jobs_cap, d_items_cap, d_chan_cap;
};

static int fail(dsv_errbuf *eb, const char *what, cudaError_t e)
{
	return dsv_errf(eb, DSV_ERR_INTERNAL, "CUDA %s: %s (%s)", what, cudaGetErrorString(e),
			cudaGetErrorName(e));
}

#define CK(call, what)                             \
	do {                                       \
		cudaError_t e_ = (call);           \
		if (e_ != cudaSuccess)             \
			return fail(eb, what, e_); \
	} while (0)

/* As CK, in a slot's run: on an error, the copies and kernels queued
 * before it are waited for, so none is still reading the caller's memory
 * or writing the slot's when the call returns. */
#define CKS(call, what)                                \
	do {                                           \
		cudaError_t e_ = (call);               \
		if (e_ != cudaSuccess)                 \
			return drain(s, eb, what, e_); \
	} while (0)

/* A CUDA error in slot s's run: its stream drained first. */
static int drain(dsv_cuda_slot *s, dsv_errbuf *eb, const char *what, cudaError_t e)
{
	cudaStreamSynchronize(s->stream);
	(void)cudaGetLastError();
	return fail(eb, what, e);
}

__global__ void dsv_lz4_kernel(const uint8_t *in, const dsv_gpu_job *jobs, size_t njobs,
			       uint8_t *raw, int *status)
{
	/* every lane of a warp has the same job: a warp leaves or stays whole,
	 * as the __syncwarp of the copies needs */
	size_t w = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
	unsigned lane = threadIdx.x % 32;
	if (w >= njobs)
		return;
	dsv_gpu_job j = jobs[w];
	if (dsv_dev_lz4_frame_block(in + j.src, j.stored, raw + j.dst, j.want, lane, 32) &&
	    lane == 0)
		atomicExch(status, 1);
}

/* Items [first, first + gridDim.y): one row of the grid each. */
__global__ void dsv_xform_kernel(dsv_xform_desc x, const uint8_t *raw, const uint8_t *tier,
				 const dsv_cuda_item *items, size_t first, uint8_t *out)
{
	dsv_cuda_item it = items[first + blockIdx.y];
	const uint8_t *src = (it.from_tier ? tier : raw) + it.src_off;
	uint64_t step = (uint64_t)gridDim.x * blockDim.x;
	for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < it.nelems; i += step)
		dsv_dev_xform_elem(&x, src, i, it.e0 + i, out + it.out_off);
}

/* Why cudaGetDeviceCount failed, in words a user can act on.
 * @return DSV_ERR_UNSUPPORTED */
static int say_no_device(cudaError_t e, dsv_errbuf *eb)
{
	const int U = DSV_ERR_UNSUPPORTED;
	if (e == cudaErrorNoDevice)
		return dsv_errf(eb, U, "no CUDA device");
	if (e == cudaErrorInsufficientDriver) {
		/* cudart (linked statically) loads the driver's libcuda.so.1
		 * itself: say whether it is missing or too old */
		void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
		int rt = 0;
		cudaRuntimeGetVersion(&rt);
		if (!h)
			return dsv_errf(eb, U, "CUDA driver not found (libcuda.so.1)");
		dlclose(h);
		return dsv_errf(eb, U, "CUDA driver too old for this build (CUDA %d.%d)", rt / 1000,
				rt % 1000 / 10);
	}
	return dsv_errf(eb, U, "no usable CUDA device: %s", cudaGetErrorString(e));
}

/* Device's context checked: its compute capability, both kernels loaded.
 * @return 0, or a dsv_err with eb. */
static int make_context(int device, dsv_errbuf *eb)
{
	cudaDeviceProp p;
	cudaFuncAttributes fa;

	CK(cudaGetDeviceProperties(&p, device), "device properties");
	if (p.major < 8)
		return dsv_errf(
			eb, DSV_ERR_UNSUPPORTED,
			"CUDA device %d (%s) has compute capability %d.%d; dsview needs 8.0",
			device, p.name, p.major, p.minor);
	/* the context, and both kernels loaded now (CUDA loads modules
	 * lazily): a device whose image is missing is refused here, not at a
	 * first launch, and the first batch pays no load */
	CK(cudaFree(0), "context");
	CK(cudaFuncGetAttributes(&fa, dsv_lz4_kernel), "kernel image");
	CK(cudaFuncGetAttributes(&fa, dsv_xform_kernel), "kernel image");
	return 0;
}

int dsv_cuda_open(int device, char *name, size_t name_cap, dsv_errbuf *eb)
{
	int n = 0, err;
	cudaError_t e = cudaGetDeviceCount(&n);
	cudaDeviceProp p;

	name[0] = '\0';
	if (e != cudaSuccess || n == 0)
		return say_no_device(e == cudaSuccess ? cudaErrorNoDevice : e, eb);
	if (device >= n)
		return dsv_errf(eb, DSV_ERR_UNSUPPORTED, "no CUDA device %d (%d found)", device, n);
	if (device < 0)
		device = 0;
	if (cudaGetDeviceProperties(&p, device) == cudaSuccess)
		snprintf(name, name_cap, "%s", p.name);
	/* the context made with these flags: a thread waiting on its stream
	 * sleeps rather than spins a core, so the daemon's CPU per GB counts
	 * only work. Refused when this process made the context already,
	 * which then keeps its flags. */
	e = cudaInitDevice(device, cudaDeviceScheduleBlockingSync, 0);
	if (e != cudaSuccess && e != cudaErrorSetOnActiveProcess)
		return fail(eb, "device flags", e);
	(void)cudaGetLastError();
	CK(cudaSetDevice(device), "set device");
	/* a device refused gives its context back: nothing of it is kept */
	if ((err = make_context(device, eb))) {
		dsv_cuda_release(device);
		return err;
	}
	return device;
}

void dsv_cuda_release(int device)
{
	/* the primary context: the device's memory and the driver's threads
	 * go back with it */
	if (cudaSetDevice(device) == cudaSuccess)
		cudaDeviceReset();
}

int dsv_cuda_slot_new(int device, size_t cap, dsv_cuda_slot **out, dsv_errbuf *eb)
{
	dsv_cuda_slot *s = (dsv_cuda_slot *)calloc(1, sizeof(*s));
	cudaError_t e;
	const char *what = "slot";
	*out = NULL;
	if (!s)
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	s->device = device;
	s->cap = cap;
	if ((e = cudaSetDevice(device)) != cudaSuccess ||
	    (e = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking)) != cudaSuccess ||
	    (e = cudaHostAlloc((void **)&s->h_status, sizeof(int), cudaHostAllocDefault)) !=
		    cudaSuccess ||
	    (e = cudaMalloc((void **)&s->d_status, sizeof(int))) != cudaSuccess ||
	    (what = "pinned buffers",
	     (e = cudaHostAlloc(&s->h_in, cap, cudaHostAllocDefault)) != cudaSuccess ||
		     (e = cudaHostAlloc(&s->h_out, cap, cudaHostAllocDefault)) != cudaSuccess) ||
	    (what = "device buffers",
	     (e = cudaMalloc((void **)&s->d_in, cap)) != cudaSuccess ||
		     (e = cudaMalloc((void **)&s->d_raw, cap)) != cudaSuccess ||
		     (e = cudaMalloc((void **)&s->d_out, cap)) != cudaSuccess)) {
		dsv_cuda_slot_free(s);
		return fail(eb, what, e);
	}
	for (; s->nev < 4; s->nev++) {
		if ((e = cudaEventCreate(&s->ev[s->nev])) != cudaSuccess) {
			dsv_cuda_slot_free(s);
			return fail(eb, "event", e);
		}
	}
	*out = s;
	return 0;
}

void dsv_cuda_slot_free(dsv_cuda_slot *s)
{
	if (!s)
		return;
	cudaSetDevice(s->device);
	if (s->stream)
		cudaStreamSynchronize(s->stream);
	for (int i = 0; i < s->nev; i++)
		cudaEventDestroy(s->ev[i]);
	cudaFreeHost(s->h_in);
	cudaFreeHost(s->h_out);
	cudaFreeHost(s->h_jobs);
	cudaFreeHost(s->h_status);
	cudaFree(s->d_in);
	cudaFree(s->d_raw);
	cudaFree(s->d_out);
	cudaFree(s->d_jobs);
	cudaFree(s->d_items);
	cudaFree(s->d_chan);
	cudaFree(s->d_status);
	if (s->stream)
		cudaStreamDestroy(s->stream);
	free(s);
}

/* Room for n bytes: rounded up to 1 MiB, so a few sizes do not reallocate. */
static size_t room(size_t n)
{
	return (n + (1u << 20) - 1) & ~(size_t)((1u << 20) - 1);
}

static cudaError_t grow_host(void **p, size_t *cap, size_t n)
{
	if (n <= *cap && *p)
		return cudaSuccess;
	cudaFreeHost(*p);
	*p = NULL;
	*cap = 0;
	cudaError_t e = cudaHostAlloc(p, room(n), cudaHostAllocDefault);
	if (e == cudaSuccess)
		*cap = room(n);
	return e;
}

static cudaError_t grow_dev(void **p, size_t *cap, size_t n)
{
	if (n <= *cap && *p)
		return cudaSuccess;
	cudaFree(*p);
	*p = NULL;
	*cap = 0;
	cudaError_t e = cudaMalloc(p, room(n));
	if (e == cudaSuccess)
		*cap = room(n);
	return e;
}

int dsv_cuda_slot_stage(dsv_cuda_slot *s, size_t n, size_t njobs, void **in, dsv_gpu_job **jobs,
			dsv_errbuf *eb)
{
	if (n > s->cap)
		return DSV_ERR_OVERFLOW;
	CK(cudaSetDevice(s->device), "set device");
	CK(grow_host((void **)&s->h_jobs, &s->h_jobs_cap,
		     (njobs ? njobs : 1) * sizeof(dsv_gpu_job)),
	   "pinned jobs");
	*in = s->h_in;
	*jobs = s->h_jobs;
	return 0;
}

static float ms_between(cudaEvent_t a, cudaEvent_t b)
{
	float ms = 0;
	if (cudaEventElapsedTime(&ms, a, b) == cudaSuccess)
		return ms;
	(void)cudaGetLastError(); /* not left for a later launch's check */
	return 0;
}

/* At most this many items in one launch: gridDim.y's limit. */
#define MAX_GRID_Y 65535u

/* Launches the transform of items [0, nitems) of most elements at most,
 * in launches of at most MAX_GRID_Y items. @return cudaSuccess or the
 * launch's error. */
static cudaError_t launch_xform(const dsv_cuda_slot *s, const dsv_xform_desc &xd, uint8_t *tier,
				size_t nitems, uint64_t most)
{
	uint64_t bx = (most + THREADS - 1) / THREADS;
	for (size_t first = 0; first < nitems; first += MAX_GRID_Y) {
		size_t rows = nitems - first < MAX_GRID_Y ? nitems - first : MAX_GRID_Y;
		dim3 grid((unsigned)(bx < 4096 ? bx : 4096), (unsigned)rows);
		dsv_xform_kernel<<<grid, THREADS, 0, s->stream>>>(xd, s->d_raw, tier, s->d_items,
								  first, s->d_out);
		cudaError_t e = cudaGetLastError();
		if (e != cudaSuccess)
			return e;
	}
	return cudaSuccess;
}

int dsv_cuda_slot_run(dsv_cuda_slot *s, size_t n, size_t njobs, uint64_t raw,
		      const dsv_xform_desc *x, const dsv_cuda_item *items, size_t nitems,
		      uint8_t *tier, const dsv_cuda_admit *admits, size_t nadmits, void *dst,
		      size_t out_n, dsv_gpu_times *times, dsv_errbuf *eb)
{
	cudaStream_t st = s->stream;
	dsv_xform_desc xd;
	uint64_t most = 0;

	if (n > s->cap || raw > s->cap || out_n > s->cap)
		return DSV_ERR_OVERFLOW;
	CK(cudaSetDevice(s->device), "set device");
	CK(grow_dev((void **)&s->d_jobs, &s->d_jobs_cap, (njobs ? njobs : 1) * sizeof(dsv_gpu_job)),
	   "device jobs");
	if (x) {
		xd = *x;
		size_t nchan = (size_t)(xd.nchan > 0 ? xd.nchan : 1);
		CK(grow_dev((void **)&s->d_items, &s->d_items_cap, nitems * sizeof(*items)),
		   "items");
		CK(grow_dev((void **)&s->d_chan, &s->d_chan_cap, 2 * nchan * sizeof(double)),
		   "channels");
		CKS(cudaMemcpyAsync(s->d_items, items, nitems * sizeof(*items),
				    cudaMemcpyHostToDevice, st),
		    "copy items");
		if (xd.mean && xd.std) {
			CKS(cudaMemcpyAsync(s->d_chan, xd.mean, nchan * sizeof(double),
					    cudaMemcpyHostToDevice, st),
			    "copy means");
			CKS(cudaMemcpyAsync(s->d_chan + nchan, xd.std, nchan * sizeof(double),
					    cudaMemcpyHostToDevice, st),
			    "copy stds");
			xd.mean = s->d_chan;
			xd.std = s->d_chan + nchan;
		}
		for (size_t k = 0; k < nitems; k++)
			most = items[k].nelems > most ? items[k].nelems : most;
	}
	CKS(cudaEventRecord(s->ev[0], st), "event");
	CKS(cudaMemcpyAsync(s->d_in, s->h_in, n, cudaMemcpyHostToDevice, st), "copy in");
	CKS(cudaMemcpyAsync(s->d_jobs, s->h_jobs, njobs * sizeof(dsv_gpu_job),
			    cudaMemcpyHostToDevice, st),
	    "copy jobs");
	CKS(cudaMemsetAsync(s->d_status, 0, sizeof(int), st), "status");
	CKS(cudaEventRecord(s->ev[1], st), "event");
	if (njobs) {
		size_t blocks = (njobs * 32 + THREADS - 1) / THREADS;
		(void)cudaGetLastError(); /* an earlier call's error is not this launch's */
		dsv_lz4_kernel<<<(unsigned)blocks, THREADS, 0, st>>>(s->d_in, s->d_jobs, njobs,
								     s->d_raw, s->d_status);
		CKS(cudaGetLastError(), "decode kernel");
	}
	for (size_t k = 0; k < nadmits && tier; k++)
		CKS(cudaMemcpyAsync(tier + admits[k].tier_at, s->d_raw + admits[k].raw_off,
				    admits[k].n, cudaMemcpyDeviceToDevice, st),
		    "copy into the tier");
	if (x && nitems && most) {
		(void)cudaGetLastError();
		CKS(launch_xform(s, xd, tier, nitems, most), "transform kernel");
	}
	CKS(cudaEventRecord(s->ev[2], st), "event");
	CKS(cudaMemcpyAsync(s->h_out, x ? s->d_out : s->d_raw, out_n, cudaMemcpyDeviceToHost, st),
	    "copy out");
	CKS(cudaMemcpyAsync(s->h_status, s->d_status, sizeof(int), cudaMemcpyDeviceToHost, st),
	    "copy status");
	CKS(cudaEventRecord(s->ev[3], st), "event");
	CKS(cudaStreamSynchronize(st), "run");
	if (times) {
		times->h2d_s = ms_between(s->ev[0], s->ev[1]) / 1e3;
		times->kernel_s = ms_between(s->ev[1], s->ev[2]) / 1e3;
		times->d2h_s = ms_between(s->ev[2], s->ev[3]) / 1e3;
	}
	if (*s->h_status)
		return DSV_ERR_CORRUPT;
	if (dst)
		memcpy(dst, s->h_out, out_n);
	return 0;
}

const void *dsv_cuda_slot_out(const dsv_cuda_slot *s)
{
	return s->h_out;
}

int dsv_cuda_slot_fetch(dsv_cuda_slot *s, const uint8_t *tier, uint64_t at, size_t n, void *dst,
			dsv_errbuf *eb)
{
	if (n > s->cap)
		return DSV_ERR_OVERFLOW;
	CK(cudaSetDevice(s->device), "set device");
	CKS(cudaMemcpyAsync(s->h_out, tier + at, n, cudaMemcpyDeviceToHost, s->stream),
	    "copy from the tier");
	CKS(cudaStreamSynchronize(s->stream), "copy from the tier");
	memcpy(dst, s->h_out, n);
	return 0;
}

int dsv_cuda_tier_new(int device, size_t n, uint8_t **out, dsv_errbuf *eb)
{
	uint8_t *p = NULL;
	cudaError_t e = cudaSetDevice(device);
	*out = NULL;
	if (e == cudaSuccess)
		e = cudaMalloc((void **)&p, n);
	if (e != cudaSuccess) {
		size_t free_b = 0, total = 0;
		cudaMemGetInfo(&free_b, &total);
		return dsv_errf(eb, DSV_ERR_NOMEM,
				"%zu MiB of device memory: CUDA %s (%zu MiB free)", n >> 20,
				cudaGetErrorString(e), free_b >> 20);
	}
	*out = p;
	return 0;
}

void dsv_cuda_tier_free(int device, uint8_t *tier)
{
	if (!tier)
		return;
	cudaSetDevice(device);
	cudaFree(tier);
}
