/*
 * For tests and benchmarks only, not the library's interface: choosing
 * the transform's CPU kernel variant by hand (xform.c). A mount chooses it
 * once, or takes DSVIEW_KERNEL (common/knobs.h).
 */
#ifndef DSV_XFORM_KERNEL_TEST_H
#define DSV_XFORM_KERNEL_TEST_H

#include <stddef.h>

/* Forces a variant ("scalar", "avx2", "avx512", "avx512vbmi": tests compare them);
 * returns 0, or DSV_ERR_UNSUPPORTED when the processor lacks it or there
 * is none of that name. Not thread-safe: call before any run. */
int dsv_xform_force_kernel(const char *name);

/* The i-th variant's name, narrowest first (whether or not this processor
 * has it), or NULL past the last. */
const char *dsv_xform_kernel_at(size_t i);

#endif
