/*
 * Single-core transform speeds, per kernel variant, for the read benchmark:
 * how fast one core turns source elements into output elements when the
 * source is already in memory (no I/O, no FUSE). Output GB/s, one JSON
 * object per line.
 *
 *   xform_bench [MB_OUT]      (default 256 MB of output per case)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dsview/xform.h"
#include "xform/kernel_test.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct bench_case {
	const char *name;
	dsv_dtype src, dst;
	int nchan; /* -1: plain cast (no transform), 0: affine scale 1/255,
		    * > 3: per-element mean/std over rows of nchan elements */
} bench_case;

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
	static const char *kernels[] = { "scalar", "avx2", "avx512" };
	static const double mean[3] = { 0.485, 0.456, 0.406 }, sd[3] = { 0.229, 0.224, 0.225 };
	size_t mb = argc > 1 ? strtoull(argv[1], NULL, 10) : 256;
	size_t block = 1u << 18; /* elements per call: 1 MiB of float32, like one request */
	unsigned char *src = malloc(block * 4);
	double *dst = malloc(block * 8);
	double *emean = malloc(100000 * sizeof(double)), *esd = malloc(100000 * sizeof(double));

	if (!src || !dst || !emean || !esd)
		return 1;
	for (size_t i = 0; i < 100000; i++) {
		emean[i] = (double)(i % 1000) * 0.01;
		esd[i] = 1.0 + (double)(i % 7);
	}
	for (size_t i = 0; i < block * 4; i++)
		src[i] = (unsigned char)(i * 2654435761u >> 13);
	for (size_t k = 0; k < sizeof(kernels) / sizeof(*kernels); k++) {
		if (dsv_xform_force_kernel(kernels[k]))
			continue; /* not on this processor */
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
			size_t calls = mb * 1000000 / (block * osize);
			double t = now();
			for (size_t i = 0; i < calls; i++)
				dsv_xform_run(x, dst, src, block, i * block);
			t = now() - t;
			printf("{\"kernel\": \"%s\", \"case\": \"%s\", \"out_GBps\": %.2f}\n",
			       kernels[k], bc->name, (double)(calls * block * osize) / t / 1e9);
			dsv_xform_destroy(x);
		}
	}
	return 0;
}
