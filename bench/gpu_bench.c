/* make bench-gpu: LZ4 (32004) chunks of uint8 images, 256 KiB to 4 MiB
 * (64 KiB blocks), decoded and transformed (scale 1/255) to float32 and
 * bfloat16: GB/s of output on the GPU, kernel only (CUDA events) and end
 * to end (staging, both PCIe copies), against the CPU (dsv_lz4_decode then
 * dsv_xform_run) on every core, every chunk's bytes compared between the
 * two. Without a usable GPU it prints one line saying why and exits 0.
 * GPU_BENCH_MB (default 256) sets the output of each configuration. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dsview/codec.h"
#include "dsview/xform.h"
#include "gpu/gpu.h"

#define BLOCK (64u << 10)
#define BATCH_RAW (64ull << 20) /* raw bytes per GPU batch */

typedef struct chunk {
	uint8_t *enc;
	size_t n;
	uint8_t *out; /* the GPU's output */
	uint8_t *cpu; /* the CPU's */
} chunk;

typedef struct cpu_job {
	chunk *c;
	size_t nchunks, raw, os;
	const dsv_xform *x;
	int t, nt;
} cpu_job;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *cpu_worker(void *arg)
{
	cpu_job *j = arg;
	uint8_t *raw = malloc(j->raw);
	for (size_t i = (size_t)j->t; raw && i < j->nchunks; i += (size_t)j->nt) {
		if (dsv_lz4_decode(raw, j->raw, j->c[i].enc, j->c[i].n) != (int64_t)j->raw)
			abort();
		dsv_xform_run(j->x, j->c[i].cpu, raw, j->raw, i * j->raw);
	}
	free(raw);
	return NULL;
}

static double cpu_run(chunk *c, size_t nchunks, size_t raw, const dsv_xform *x, int nt)
{
	pthread_t th[256];
	cpu_job jobs[256];
	double t0 = now();
	for (int t = 0; t < nt; t++) {
		jobs[t] = (cpu_job){ c, nchunks, raw, 0, x, t, nt };
		pthread_create(&th[t], NULL, cpu_worker, &jobs[t]);
	}
	for (int t = 0; t < nt; t++)
		pthread_join(th[t], NULL);
	return now() - t0;
}

/* @return end-to-end seconds; *kernel the sum of the kernels' seconds. */
static double gpu_run(dsv_gpu *g, chunk *c, size_t nchunks, size_t raw, const dsv_xform_desc *d,
		      double *kernel)
{
	size_t per = BATCH_RAW / raw ? BATCH_RAW / raw : 1;
	dsv_gpu_item *items = calloc(per, sizeof(*items));
	double t0 = now();
	*kernel = 0;
	for (size_t i = 0; i < nchunks; i += per) {
		size_t k = nchunks - i < per ? nchunks - i : per;
		dsv_gpu_timing tm;
		for (size_t j = 0; j < k; j++)
			items[j] = (dsv_gpu_item){ c[i + j].enc, c[i + j].n, raw, (i + j) * raw,
						   c[i + j].out, -1,         -1 };
		if (dsv_gpu_decode_xform(g, d, items, k, &tm)) {
			fprintf(stderr, "gpu_bench: the batch failed\n");
			exit(1);
		}
		*kernel += tm.kernel_s;
	}
	free(items);
	return now() - t0;
}

int main(void)
{
	dsv_errbuf why;
	dsv_gpu *g;
	/* each buffer holds a batch's float32 output */
	if (dsv_gpu_open(-1, BATCH_RAW * 4, &g, &why)) {
		printf("gpu_bench: no GPU to measure (%s); nothing measured\n", why.msg);
		return 0;
	}
	const char *env = getenv("GPU_BENCH_MB");
	size_t total_out = (size_t)(env && *env ? atol(env) : 256) << 20;
	int nt = (int)sysconf(_SC_NPROCESSORS_ONLN);
	nt = nt < 1 ? 1 : nt > 256 ? 256 : nt;
	printf("device: %s; CPU: %d threads (%s kernels)\n", dsv_gpu_name(g), nt,
	       dsv_xform_kernel_name());
	printf("%-8s %-9s %7s %14s %14s %10s %8s\n", "chunk", "output", "chunks", "gpu kernel GB/s",
	       "gpu e2e GB/s", "cpu GB/s", "e2e/cpu");
	size_t sizes[] = { 256u << 10, 1u << 20, 4u << 20 };
	dsv_dtype outs[] = { DSV_F32, DSV_BF16 };
	for (size_t si = 0; si < 3; si++) {
		size_t raw = sizes[si];
		for (size_t oi = 0; oi < 2; oi++) {
			size_t os = dsv_dtype_size(outs[oi]);
			size_t nchunks = total_out / (raw * os);
			nchunks = nchunks ? nchunks : 1;
			chunk *c = calloc(nchunks, sizeof(*c));
			uint8_t *src = malloc(raw);
			for (size_t i = 0; i < nchunks; i++) {
				/* image rows: gradients with noisy dots */
				for (size_t b = 0; b < raw; b++)
					src[b] = (uint8_t)((b % 96) * (i % 7 + 1) + b / 3072 +
							   (b % 5 == 0 ? (b * 2654435761u) >> 24
								       : 0));
				size_t cap = dsv_lz4_bound(raw, BLOCK);
				c[i].enc = malloc(cap);
				int64_t n = dsv_lz4_encode(c[i].enc, cap, src, raw, BLOCK, 0);
				if (n < 0)
					abort();
				c[i].n = (size_t)n;
				c[i].out = malloc(raw * os);
				c[i].cpu = malloc(raw * os);
				if (!c[i].enc || !c[i].out || !c[i].cpu)
					abort();
			}
			dsv_xform_params p;
			dsv_xform *x;
			dsv_errbuf eb;
			dsv_xform_desc d;
			dsv_xform_params_init(&p);
			p.scale = 1.0 / 255;
			if (dsv_xform_create(&x, DSV_U8, outs[oi], &p, &eb))
				abort();
			dsv_xform_describe(x, &d);
			double kernel, e2e = 1e30, kbest = 1e30, cpu = 1e30;
			for (int r = 0; r < 3; r++) { /* the first run warms up */
				double t = gpu_run(g, c, nchunks, raw, &d, &kernel);
				if (r) {
					e2e = t < e2e ? t : e2e;
					kbest = kernel < kbest ? kernel : kbest;
				}
			}
			for (int r = 0; r < 3; r++) {
				double t = cpu_run(c, nchunks, raw, x, nt);
				cpu = t < cpu ? t : cpu;
			}
			for (size_t i = 0; i < nchunks; i++) {
				if (memcmp(c[i].out, c[i].cpu, raw * os)) {
					fprintf(stderr,
						"gpu_bench: GPU and CPU bytes differ in chunk %zu "
						"of %zu KiB to %s\n",
						i, raw >> 10, dsv_dtype_name(outs[oi]));
					return 1;
				}
			}
			double gb = (double)(nchunks * raw * os) / 1e9;
			printf("%-8zu %-9s %7zu %14.1f %14.1f %10.1f %7.2fx\n", raw >> 10,
			       dsv_dtype_name(outs[oi]), nchunks, gb / kbest, gb / e2e, gb / cpu,
			       cpu / e2e);
			for (size_t i = 0; i < nchunks; i++) {
				free(c[i].enc);
				free(c[i].out);
				free(c[i].cpu);
			}
			free(c);
			free(src);
			dsv_xform_destroy(x);
		}
	}
	printf("(chunk in KiB; GB/s of output bytes; best of 2 runs after a warm-up; e2e includes "
	       "staging in pinned memory and both PCIe copies)\n");
	dsv_gpu_close(g);
	return 0;
}
