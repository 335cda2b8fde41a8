/*
 * For tests and benchmarks only, not the library's interface: choosing
 * the transform's CPU kernel variant by hand (xform.c). A mount chooses it
 * once, or takes DSVIEW_KERNEL (common/knobs.h).
 */
#ifndef DSV_XFORM_KERNEL_TEST_H
#define DSV_XFORM_KERNEL_TEST_H

/* Forces a variant ("scalar", "avx2", "avx512": tests compare them);
 * returns 0, or DSV_ERR_UNSUPPORTED when the processor lacks it or there
 * is none of that name. Not thread-safe: call before any run. */
int dsv_xform_force_kernel(const char *name);

#endif
