/*
 * Single-core transform speeds, per kernel variant, for the read benchmark:
 * how fast one core turns source elements into output elements when the
 * source is already in memory (no I/O, no FUSE), against memcpy of the same
 * output size per call measured in the same rounds. Each case runs ROUNDS
 * rounds, each timing the case and then memcpy over MB_OUT MB of output,
 * in the thread's CPU time (the machine may be shared: time spent
 * descheduled counts for neither); reported are the medians of the case's
 * GB/s, memcpy's and the rounds' ratios (case / memcpy).
 * One JSON object per line on stdout (memcpy rows have kernel "memcpy"), a
 * table on stderr.
 *
 *   xform_bench [MB_OUT [ROUNDS [KERNEL]]]   (default 128 MB per round, 5 rounds,
 *                                             every kernel this processor runs)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dsview/xform.h"
#include "xform/kernel_test.h"

#define MAX_ROUNDS 64

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct bench_case {
	const char *name;
	dsv_dtype src, dst;
	int nchan; /* -1: plain cast (no transform), 0: affine scale 1/255,
		    * > 3: per-element mean/std over rows of nchan elements */
} bench_case;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* GB/s of memcpy of bytes per call, calls times. */
static double memcpy_gbps(void *dst, const void *src, size_t bytes, size_t calls)
{
	double t = now();
	for (size_t i = 0; i < calls; i++) {
		memcpy(dst, src, bytes);
		__asm__ volatile("" : : "r"(dst) : "memory"); /* each copy happens */
	}
	return (double)(calls * bytes) / (now() - t) / 1e9;
}

/* GB/s of output of the plan, calls calls of block elements. */
static double xform_gbps(const dsv_xform *x, void *dst, const void *src, size_t block, size_t osize,
			 size_t calls)
{
	double t = now();
	for (size_t i = 0; i < calls; i++)
		dsv_xform_run(x, dst, src, block, i * block);
	return (double)(calls * block * osize) / (now() - t) / 1e9;
}

int main(int argc, char **argv)
{
	static const bench_case cases[] = {
		{ "u8->f32 plain cast", DSV_U8, DSV_F32, -1 },
		{ "u8->bf16 plain cast", DSV_U8, DSV_BF16, -1 },
		{ "u8->f32 affine, 1 channel", DSV_U8, DSV_F32, 0 },
		{ "u8->f32 mean/std, 3 channels HWC", DSV_U8, DSV_F32, 3 },
		{ "u8->bf16 mean/std, 3 channels HWC", DSV_U8, DSV_BF16, 3 },
		{ "i16->f32 plain cast", DSV_I16, DSV_F32, -1 },
		{ "i16->f32 affine", DSV_I16, DSV_F32, 0 },
		{ "i16->bf16 affine", DSV_I16, DSV_BF16, 0 },
		{ "i16->f32 mean/std per element, 100k rows", DSV_I16, DSV_F32, 100000 },
		{ "u8->f32 mean/std per element, 100k rows", DSV_U8, DSV_F32, 100000 },
		{ "u16->i64 plain cast", DSV_U16, DSV_I64, -1 },
		{ "i32->i16 clip", DSV_I32, DSV_I16, -2 },
	};
	static const double mean[3] = { 0.485, 0.456, 0.406 }, sd[3] = { 0.229, 0.224, 0.225 };
	size_t mb = argc > 1 ? strtoull(argv[1], NULL, 10) : 128;
	size_t rounds = argc > 2 ? strtoull(argv[2], NULL, 10) : 5;
	const char *only = argc > 3 ? argv[3] : NULL;
	size_t block = 1u << 18; /* elements per call: 1 MiB of float32, like one request */
	unsigned char *src = malloc(block * 8), *msrc = malloc(block * 8);
	double *dst = malloc(block * 8);
	/* every memcpy round, by output element size, for the memcpy rows */
	static double msamples[9][64 * MAX_ROUNDS];
	size_t nsamples[9] = { 0 };
	double *emean = malloc(100000 * sizeof(double)), *esd = malloc(100000 * sizeof(double));

	if (!src || !msrc || !dst || !emean || !esd || !mb || !rounds || rounds > MAX_ROUNDS)
		return 1;
	memset(msrc, 0x3c, block * 8);
	for (size_t i = 0; i < 100000; i++) {
		emean[i] = (double)(i % 1000) * 0.01;
		esd[i] = 1.0 + (double)(i % 7);
	}
	for (size_t i = 0; i < block * 4; i++)
		src[i] = (unsigned char)(i * 2654435761u >> 13);
	fprintf(stderr, "%-10s %-42s %8s %8s %7s\n", "kernel", "case", "out GB/s", "memcpy",
		"ratio");
	for (size_t k = 0; dsv_xform_kernel_at(k); k++) {
		const char *kname = dsv_xform_kernel_at(k);
		if ((only && strcmp(kname, only) != 0) || dsv_xform_force_kernel(kname))
			continue; /* not asked for, or not on this processor */
		for (size_t c = 0; c < sizeof(cases) / sizeof(*cases); c++) {
			const bench_case *bc = &cases[c];
			dsv_xform_params p;
			dsv_xform *x;
			dsv_errbuf eb;
			dsv_xform_params_init(&p);
			if (bc->nchan >= 0)
				p.scale = 1.0 / 255;
			if (bc->nchan > 0) {
				p.nchan = bc->nchan;
				p.mean = bc->nchan > 3 ? emean : mean;
				p.std = bc->nchan > 3 ? esd : sd;
				p.chan_inner = 1;
			}
			if (bc->nchan == -2) {
				p.has_clip = 1;
				p.clip_lo = -1000;
				p.clip_hi = 1000;
			}
			if (dsv_xform_create(&x, bc->src, bc->dst, &p, &eb))
				return 1;
			size_t osize = dsv_dtype_size(bc->dst);
			size_t calls = mb * 1000000 / (block * osize) + 1;
			double gx[MAX_ROUNDS], gm[MAX_ROUNDS], ratio[MAX_ROUNDS];
			xform_gbps(x, dst, src, block, osize, calls / 4 + 1); /* warm-up */
			for (size_t r = 0; r < rounds; r++) {
				gx[r] = xform_gbps(x, dst, src, block, osize, calls);
				gm[r] = memcpy_gbps(dst, msrc, block * osize, calls);
				ratio[r] = gx[r] / gm[r];
			}
			for (size_t r = 0; r < rounds && nsamples[osize] < 64 * MAX_ROUNDS; r++)
				msamples[osize][nsamples[osize]++] = gm[r];
			double mx = median(gx, rounds), mm = median(gm, rounds);
			double mr = median(ratio, rounds);
			printf("{\"kernel\": \"%s\", \"case\": \"%s\", \"out_GBps\": %.2f, "
			       "\"memcpy_GBps\": %.2f, \"ratio\": %.3f, \"rounds\": %zu}\n",
			       kname, bc->name, mx, mm, mr, rounds);
			fprintf(stderr, "%-10s %-42s %8.2f %8.2f %6.2fx\n", kname, bc->name, mx, mm,
				mr);
			fflush(stdout);
			dsv_xform_destroy(x);
		}
	}
	for (size_t os = 1; os <= 8; os *= 2) {
		if (!nsamples[os])
			continue;
		double mm = median(msamples[os], nsamples[os]);
		printf("{\"kernel\": \"memcpy\", \"case\": \"memcpy %zu KiB\", \"out_GBps\": "
		       "%.2f, \"memcpy_GBps\": %.2f, \"ratio\": 1.000, \"rounds\": %zu}\n",
		       block * os >> 10, mm, mm, nsamples[os]);
		fprintf(stderr, "%-10s %4zu KiB per call %-25s %8.2f  (median of all %zu rounds)\n",
			"memcpy", block * os >> 10, "", mm, nsamples[os]);
	}
	free(src);
	free(msrc);
	free(dst);
	free(emean);
	free(esd);
	return 0;
}
