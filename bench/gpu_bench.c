/* The GPU backend's decode and transform (python3 -m bench run gpu): LZ4
 * (32004) chunks of uint8 images, 256 KiB to 4 MiB (64 KiB blocks),
 * decoded and transformed (scale 1/255) to float32 and bfloat16: GB/s of
 * output on the GPU, kernel only (CUDA events) and end to end (staging,
 * both PCIe copies), against the CPU (dsv_lz4_decode then dsv_xform_run)
 * on THREADS threads, every chunk's bytes compared between the two.
 *
 *   gpu_bench [MB [PEER [THREADS]]]   MB of output a configuration (256);
 *                                     PEER gpu (the device, then the CPU to
 *                                     compare) or cpu (the CPU only);
 *                                     THREADS the CPU's (every core)
 *
 * One JSON object per configuration on stdout, a table on stderr. Without
 * a usable GPU, PEER gpu prints one object with "device": null and "why"
 * (and says so on stderr), measures nothing and exits 0. */
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
#define MAX_THREADS 256

typedef struct chunk {
	uint8_t *enc;
	size_t n;
	uint8_t *out; /* the GPU's output */
	uint8_t *cpu; /* the CPU's */
} chunk;

typedef struct cpu_job {
	chunk *c;
	size_t nchunks, raw;
	const dsv_xform *x;
	int t, nt;
} cpu_job;

/* One configuration: chunk size, output type, its chunks and plan. */
typedef struct config {
	size_t raw, os, nchunks;
	dsv_dtype out;
	chunk *c;
	dsv_xform *x;
} config;

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

static double cpu_run(const config *cf, int nt)
{
	pthread_t th[MAX_THREADS];
	cpu_job jobs[MAX_THREADS];
	double t0 = now();
	for (int t = 0; t < nt; t++) {
		jobs[t] = (cpu_job){ cf->c, cf->nchunks, cf->raw, cf->x, t, nt };
		pthread_create(&th[t], NULL, cpu_worker, &jobs[t]);
	}
	for (int t = 0; t < nt; t++)
		pthread_join(th[t], NULL);
	return now() - t0;
}

/* @return end-to-end seconds; *kernel the sum of the kernels' seconds. */
static double gpu_run(dsv_gpu *g, const config *cf, const dsv_xform_desc *d, double *kernel)
{
	size_t raw = cf->raw, per = BATCH_RAW / raw ? BATCH_RAW / raw : 1;
	dsv_gpu_item *items = calloc(per, sizeof(*items));
	double t0 = now();
	*kernel = 0;
	for (size_t i = 0; i < cf->nchunks; i += per) {
		size_t k = cf->nchunks - i < per ? cf->nchunks - i : per;
		dsv_gpu_timing tm;
		for (size_t j = 0; j < k; j++)
			items[j] = (dsv_gpu_item){ cf->c[i + j].enc,
						   cf->c[i + j].n,
						   raw,
						   (i + j) * raw,
						   cf->c[i + j].out,
						   -1,
						   -1 };
		if (dsv_gpu_decode_xform(g, d, items, k, &tm)) {
			fprintf(stderr, "gpu_bench: the batch failed\n");
			exit(1);
		}
		*kernel += tm.kernel_s;
	}
	free(items);
	return now() - t0;
}

/* Image rows (gradients with noisy dots), LZ4-encoded, and the plan. */
static void config_make(config *cf, size_t raw, dsv_dtype out, size_t total_out)
{
	dsv_xform_params p;
	dsv_errbuf eb;
	uint8_t *src = malloc(raw);
	cf->raw = raw;
	cf->out = out;
	cf->os = dsv_dtype_size(out);
	cf->nchunks = total_out / (raw * cf->os) ? total_out / (raw * cf->os) : 1;
	cf->c = calloc(cf->nchunks, sizeof(*cf->c));
	if (!src || !cf->c)
		abort();
	for (size_t i = 0; i < cf->nchunks; i++) {
		chunk *c = &cf->c[i];
		for (size_t b = 0; b < raw; b++)
			src[b] = (uint8_t)((b % 96) * (i % 7 + 1) + b / 3072 +
					   (b % 5 == 0 ? (b * 2654435761u) >> 24 : 0));
		size_t cap = dsv_lz4_bound(raw, BLOCK);
		c->enc = malloc(cap);
		int64_t n = c->enc ? dsv_lz4_encode(c->enc, cap, src, raw, BLOCK, 0) : -1;
		c->n = (size_t)n;
		c->out = malloc(raw * cf->os);
		c->cpu = malloc(raw * cf->os);
		if (n < 0 || !c->out || !c->cpu)
			abort();
	}
	free(src);
	dsv_xform_params_init(&p);
	p.scale = 1.0 / 255;
	if (dsv_xform_create(&cf->x, DSV_U8, out, &p, &eb))
		abort();
}

static void config_free(config *cf)
{
	for (size_t i = 0; i < cf->nchunks; i++) {
		free(cf->c[i].enc);
		free(cf->c[i].out);
		free(cf->c[i].cpu);
	}
	free(cf->c);
	dsv_xform_destroy(cf->x);
}

/* Best of 3 CPU passes, in seconds. */
static double cpu_best(const config *cf, int nt)
{
	double best = 1e30;
	for (int r = 0; r < 3; r++) {
		double t = cpu_run(cf, nt);
		best = t < best ? t : best;
	}
	return best;
}

/* Best of 2 GPU passes after a warm-up: end to end, *kbest the kernels'. */
static double gpu_best(dsv_gpu *g, const config *cf, double *kbest)
{
	dsv_xform_desc d;
	double kernel, e2e = 1e30;
	dsv_xform_describe(cf->x, &d);
	*kbest = 1e30;
	for (int r = 0; r < 3; r++) {
		double t = gpu_run(g, cf, &d, &kernel);
		if (r) {
			e2e = t < e2e ? t : e2e;
			*kbest = kernel < *kbest ? kernel : *kbest;
		}
	}
	return e2e;
}

/* @return 0, or 1 (said on stderr) where a chunk's bytes differ. */
static int compare(const config *cf)
{
	for (size_t i = 0; i < cf->nchunks; i++) {
		if (memcmp(cf->c[i].out, cf->c[i].cpu, cf->raw * cf->os)) {
			fprintf(stderr,
				"gpu_bench: GPU and CPU bytes differ in chunk %zu of %zu KiB to "
				"%s\n",
				i, cf->raw >> 10, dsv_dtype_name(cf->out));
			return 1;
		}
	}
	return 0;
}

/* Measures one configuration (g NULL: the CPU only) and prints its row.
 * @return 0, or 1 where the GPU's bytes differ from the CPU's. */
static int measure(dsv_gpu *g, size_t raw, dsv_dtype out, size_t total_out, int nt)
{
	config cf;
	double kernel = 0, e2e = 0, cpu;
	config_make(&cf, raw, out, total_out);
	if (g)
		e2e = gpu_best(g, &cf, &kernel);
	cpu = cpu_best(&cf, nt);
	if (g && compare(&cf)) {
		config_free(&cf);
		return 1;
	}
	double gb = (double)(cf.nchunks * raw * cf.os) / 1e9;
	printf("{\"peer\": \"%s\", \"chunk_KiB\": %zu, \"output\": \"%s\", \"chunks\": %zu, "
	       "\"cpu_threads\": %d, \"cpu_GBps\": %.3f",
	       g ? "gpu" : "cpu", raw >> 10, dsv_dtype_name(out), cf.nchunks, nt, gb / cpu);
	if (g)
		printf(", \"device\": \"%s\", \"kernel_GBps\": %.3f, \"e2e_GBps\": %.3f, "
		       "\"checked\": true",
		       dsv_gpu_name(g), gb / kernel, gb / e2e);
	printf("}\n");
	fflush(stdout);
	if (g)
		fprintf(stderr, "%-8zu %-9s %7zu %14.1f %14.1f %10.1f %7.2fx\n", raw >> 10,
			dsv_dtype_name(out), cf.nchunks, gb / kernel, gb / e2e, gb / cpu,
			cpu / e2e);
	else
		fprintf(stderr, "%-8zu %-9s %7zu %10.1f\n", raw >> 10, dsv_dtype_name(out),
			cf.nchunks, gb / cpu);
	config_free(&cf);
	return 0;
}

static int threads_of(const char *arg)
{
	long nt = arg ? atol(arg) : 0;
	if (nt < 1)
		nt = sysconf(_SC_NPROCESSORS_ONLN);
	return nt < 1 ? 1 : nt > MAX_THREADS ? MAX_THREADS : (int)nt;
}

/* The GPU for PEER gpu; NULL (said on stdout and stderr) where none is usable. */
static dsv_gpu *gpu_or_why(void)
{
	dsv_errbuf why;
	dsv_gpu *g;
	/* each buffer holds a batch's float32 output */
	if (dsv_gpu_open(-1, BATCH_RAW * 4, &g, &why) == 0)
		return g;
	fprintf(stderr, "gpu_bench: no GPU to measure (%s); nothing measured\n", why.msg);
	printf("{\"peer\": \"gpu\", \"device\": null, \"why\": \"");
	for (const char *s = why.msg; *s; s++) { /* a JSON string */
		if (*s == '"' || *s == '\\')
			putchar('\\');
		putchar((unsigned char)*s < 0x20 ? ' ' : *s);
	}
	printf("\"}\n");
	return NULL;
}

int main(int argc, char **argv)
{
	size_t total_out = (size_t)(argc > 1 && atol(argv[1]) > 0 ? atol(argv[1]) : 256) << 20;
	int on_gpu = !(argc > 2 && strcmp(argv[2], "cpu") == 0);
	int nt = threads_of(argc > 3 ? argv[3] : NULL);
	dsv_gpu *g = NULL;
	if (argc > 2 && strcmp(argv[2], "cpu") && strcmp(argv[2], "gpu")) {
		fprintf(stderr, "gpu_bench: PEER '%s': gpu or cpu\n", argv[2]);
		return 2;
	}
	if (on_gpu && !(g = gpu_or_why()))
		return 0;
	fprintf(stderr, "device: %s; CPU: %d threads (%s kernels)\n", g ? dsv_gpu_name(g) : "none",
		nt, dsv_xform_kernel_name());
	if (g)
		fprintf(stderr, "%-8s %-9s %7s %14s %14s %10s %8s\n", "chunk", "output", "chunks",
			"gpu kernel GB/s", "gpu e2e GB/s", "cpu GB/s", "e2e/cpu");
	else
		fprintf(stderr, "%-8s %-9s %7s %10s\n", "chunk", "output", "chunks", "cpu GB/s");
	static const size_t sizes[] = { 256u << 10, 1u << 20, 4u << 20 };
	static const dsv_dtype outs[] = { DSV_F32, DSV_BF16 };
	int bad = 0;
	for (size_t si = 0; si < 3 && !bad; si++)
		for (size_t oi = 0; oi < 2 && !bad; oi++)
			bad = measure(g, sizes[si], outs[oi], total_out, nt);
	if (g)
		fprintf(stderr, "(chunk in KiB; GB/s of output bytes; best of 2 runs after a "
				"warm-up; e2e includes staging in pinned memory and both PCIe "
				"copies)\n");
	dsv_gpu_close(g);
	return bad;
}
