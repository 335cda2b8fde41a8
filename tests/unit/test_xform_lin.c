/* Transform: the linear map a recording's decode applies itself
 * (xform/linear.h), which must give the bytes the plan gives when run on
 * the float64 values: compared with dsv_xform_run on every kernel
 * variant, every length up to 300 and an unaligned output, with int24
 * and int16 extremes among the samples; the plans that are not such a
 * map refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "dsview/xform.h"
#include "xform/kernel_test.h"
#include "xform/linear.h"

#define MAXN 300

static dsv_xform *plan(dsv_dtype dst, double scale, double offset)
{
	dsv_xform_params p;
	dsv_xform *x = NULL;
	dsv_errbuf eb;
	dsv_xform_params_init(&p);
	p.scale = scale;
	p.offset = offset;
	assert_int_equal(dsv_xform_create(&x, DSV_F64, dst, &p, &eb), 0);
	return x;
}

static void fill(int32_t *d, size_t n, unsigned seed)
{
	static const int32_t special[] = { -8388608, 8388607, 0, -1, 1, -32768, 32767 };
	srand(seed);
	for (size_t i = 0; i < n; i++)
		d[i] = i % 4 == 0 ? special[(i / 4) % 7] : (rand() % 16777216) - 8388608;
}

/* lin_put through plan x's map against x run on the float64 values. */
static void check_plan(dsv_xform *x, double gain, double off)
{
	static int32_t d[MAXN];
	static double v[MAXN];
	static unsigned char want[MAXN * 4], got[MAXN * 4 + 1];
	dsv_xform_lin o;
	assert_int_equal(dsv_xform_linear(x, &o), 1);
	size_t os = dsv_dtype_size(o.dst);
	fill(d, MAXN, 3);
	for (size_t i = 0; i < MAXN; i++)
		v[i] = gain * (off + (double)d[i]);
	for (size_t k = 0; dsv_xform_kernel_at(k); k++) {
		if (dsv_xform_force_kernel(dsv_xform_kernel_at(k)))
			continue; /* this processor lacks it */
		for (size_t n = 0; n <= MAXN; n += n < 40 ? 1 : 37) {
			dsv_xform_run(x, want, v, n, 0);
			memset(got, 0xa5, sizeof(got));
			dsv_xform_lin_put(&o, gain, off, d, n, got + 1); /* unaligned */
			assert_memory_equal(got + 1, want, n * os);
			assert_int_equal(got[1 + n * os], 0xa5); /* nothing past n */
		}
	}
	for (size_t k = 0; dsv_xform_kernel_at(k); k++) /* the widest again */
		(void)dsv_xform_force_kernel(dsv_xform_kernel_at(k));
}

static void test_maps(void **state)
{
	(void)state;
	/* a BDF channel's scale (EDFlib's gain and offset) and an EDF one's */
	const double gains[] = { 1.0 / 8388607.5 * 400.0, 0.1 / 3.0 };
	const double offs[] = { 0.5, -12.25 };
	const struct {
		dsv_dtype dst;
		double scale, offset;
	} maps[] = { { DSV_F32, 1, 0 },
		     { DSV_F32, 0.001, 2.5 },
		     { DSV_BF16, 1, 0 },
		     { DSV_BF16, 0.001, 2.5 },
		     { DSV_F32, -3, 0 } };
	for (size_t g = 0; g < 2; g++) {
		for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
			dsv_xform *x = plan(maps[i].dst, maps[i].scale, maps[i].offset);
			check_plan(x, gains[g], offs[g]);
			dsv_xform_destroy(x);
		}
	}
}

/* DSV_F64: the float64 values themselves, bit for bit. */
static void test_f64(void **state)
{
	(void)state;
	int32_t d[MAXN];
	double got[MAXN];
	dsv_xform_lin o = { .dst = DSV_F64, .cast = 1, .scale = 1.0 };
	fill(d, MAXN, 5);
	dsv_xform_lin_put(&o, 0.03, -7.5, d, MAXN, got);
	for (size_t i = 0; i < MAXN; i++) {
		double v = 0.03 * (-7.5 + (double)d[i]);
		assert_memory_equal(&got[i], &v, sizeof(v));
	}
}

/* Plans that are not a linear map of float64 to float32 or bfloat16. */
static void test_refused(void **state)
{
	(void)state;
	dsv_xform_params p;
	dsv_xform *x;
	dsv_errbuf eb;
	dsv_xform_lin o;
	double mean[1] = { 0.5 }, sd[1] = { 2.0 };

	x = plan(DSV_F16, 1, 0);
	assert_int_equal(dsv_xform_linear(x, &o), 0);
	dsv_xform_destroy(x);

	dsv_xform_params_init(&p);
	p.has_clip = 1, p.clip_lo = -1, p.clip_hi = 1;
	assert_int_equal(dsv_xform_create(&x, DSV_F64, DSV_F32, &p, &eb), 0);
	assert_int_equal(dsv_xform_linear(x, &o), 0);
	dsv_xform_destroy(x);

	dsv_xform_params_init(&p);
	p.nchan = 1, p.mean = mean, p.std = sd;
	assert_int_equal(dsv_xform_create(&x, DSV_F64, DSV_F32, &p, &eb), 0);
	assert_int_equal(dsv_xform_linear(x, &o), 0);
	dsv_xform_destroy(x);

	dsv_xform_params_init(&p);
	assert_int_equal(dsv_xform_create(&x, DSV_F32, DSV_F32, &p, &eb), 0);
	assert_int_equal(dsv_xform_linear(x, &o), 0); /* a float32 source */
	dsv_xform_destroy(x);

	assert_int_equal(dsv_xform_linear(NULL, &o), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_maps),
		cmocka_unit_test(test_f64),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
