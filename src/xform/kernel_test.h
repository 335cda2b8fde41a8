/*
 * For tests and benchmarks only, not the library's interface: choosing
 * the transform's CPU kernel variant by hand (xform.c). A mount chooses it
 * once, or takes DSVIEW_KERNEL (common/knobs.h).
 */
#ifndef DSV_XFORM_KERNEL_TEST_H
#define DSV_XFORM_KERNEL_TEST_H

#include <stddef.h>

/* Forces a variant ("scalar", "avx2", "avx512", "avx512vbmi", "avx512bf16": tests
 * compare them);
 * returns 0, or DSV_ERR_UNSUPPORTED when the processor lacks it or there
 * is none of that name. Not thread-safe: call before any run. */
int dsv_xform_force_kernel(const char *name);

/* The i-th variant's name, narrowest first (whether or not this processor
 * has it), or NULL past the last. */
const char *dsv_xform_kernel_at(size_t i);

#if defined(__x86_64__)
#include <stdint.h>
/* n floats through the avx512 direct kernels' conversions: how 0 to
 * float16, 1 to bfloat16, 2 to bfloat16 with vcvtneps2bf16 (only where the
 * "avx512" variant, and for 2 the "avx512bf16" one, can be forced). */
void dsv_xform_halves_avx512(uint16_t *o, const float *f, uint64_t n, int how);
#endif

#endif
