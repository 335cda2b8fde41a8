/* The CUDA backend's per-element transform (src/gpu/dev_xform.h), built
 * for the host, against dsv_xform_run, byte for byte: every source dtype
 * to float32, bfloat16 and float16 under plain casts, scale/offset,
 * mean/std per channel (runs of channels, one channel per element, a mix
 * of identity and other channels), clip, a zero scale (infinity times
 * zero) and overflow; every integer source to every integer output
 * (casts, clamps, fills). The inputs are edge values (zeros of both signs,
 * extremes, infinities, NaNs quiet and signalling with payloads, float32
 * and float16 subnormals, rounding ties) and random bit patterns. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsview/xform.h"
#include "gpu/dev_xform.h"

#define N 4096
#define E0 7 /* the view index of the first element */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* N elements of dtype t: edge values first, then random bits. */
static void make_input(dsv_dtype t, uint8_t *buf)
{
	size_t es = dsv_dtype_size(t);
	static const uint64_t f32s[] = { 0,           0x80000000u, 0x3f800000u, 0xbf800000u,
					 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u,
					 0x7f800001u, 0xff812345u, 0x00000001u, 0x807fffffu,
					 0x7f7fffffu, 0x3f808000u, 0x3f818000u, 0x477fe000u,
					 0x477ff000u, 0x38800000u, 0x33800000u, 0x33000000u,
					 0x4b800001u, 0xcb7fffffu };
	static const uint64_t f64s[] = { 0,
					 0x8000000000000000ull,
					 0x3ff0000000000000ull,
					 0x7ff0000000000000ull,
					 0xfff0000000000000ull,
					 0x7ff8000000000000ull,
					 0x7ff0000000000001ull,
					 0xfff4000012345678ull,
					 0x0000000000000001ull,
					 0x3ff0000010000000ull,
					 0x3ff0080000000001ull,
					 0x47efffffe0000000ull,
					 0x40effe0000000000ull,
					 0x3e60000000000000ull,
					 0x3e70000000000001ull,
					 0x7fefffffffffffffull,
					 0x36a0000000000000ull };
	static const uint64_t f16s[] = { 0,      0x8000, 0x3c00, 0x7c00, 0xfc00, 0x7e00,
					 0x7c01, 0xfd23, 0x0001, 0x83ff, 0x7bff, 0x0400 };
	static const uint64_t ints[] = { 0,
					 1,
					 2,
					 127,
					 128,
					 255,
					 256,
					 32767,
					 32768,
					 65535,
					 16777217,
					 0x7fffffffu,
					 0x80000000u,
					 0xffffffffu,
					 0x20000000000001ull,
					 0x7fffffffffffffffull,
					 0x8000000000000000ull,
					 0xffffffffffffffffull,
					 0xfffffffffffffffeull,
					 0xffffff80ull,
					 0xffffffffff000001ull };
	const uint64_t *edge = t == DSV_F32   ? f32s
			       : t == DSV_F64 ? f64s
			       : t == DSV_F16 ? f16s
					      : ints;
	size_t nedge = t == DSV_F32   ? sizeof(f32s) / 8
		       : t == DSV_F64 ? sizeof(f64s) / 8
		       : t == DSV_F16 ? sizeof(f16s) / 8
				      : sizeof(ints) / 8;
	for (size_t i = 0; i < N; i++) {
		uint64_t v = i < nedge ? edge[i] : rnd();
		if (i >= nedge && i < 2 * nedge && dsv_dtype_is_int(t))
			v = (uint64_t)0 - edge[i - nedge]; /* negatives of the edges */
		if (i >= 3000 && i < 3256)
			v = i - 3000; /* every byte, in order (8-bit tables) */
		memcpy(buf + i * es, &v, es);
	}
}

/* Runs plan p both ways; @return 0 when not a valid plan, 1 when compared. */
static int compare(dsv_dtype src, dsv_dtype dst, const dsv_xform_params *p, const char *what)
{
	dsv_xform *x;
	dsv_errbuf eb;
	if (dsv_xform_create(&x, src, dst, p, &eb))
		return 0;
	static uint8_t in[N * 8], want[N * 8], got[N * 8];
	size_t os = dsv_dtype_size(dst);
	dsv_xform_desc d;
	make_input(src, in);
	dsv_xform_run(x, want, in, N, E0);
	dsv_xform_describe(x, &d);
	memset(got, 0xee, N * os);
	for (uint64_t i = 0; i < N; i++)
		dsv_dev_xform_elem(&d, in, i, E0 + i, got);
	for (size_t i = 0; i < N; i++) {
		if (memcmp(want + i * os, got + i * os, os)) {
			uint64_t a = 0, b = 0, v = 0;
			memcpy(&a, want + i * os, os);
			memcpy(&b, got + i * os, os);
			memcpy(&v, in + i * dsv_dtype_size(src), dsv_dtype_size(src));
			fprintf(stderr,
				"%s %s -> %s, element %zu (bits %#llx): cpu %#llx, dev %#llx\n",
				what, dsv_dtype_name(src), dsv_dtype_name(dst), i,
				(unsigned long long)v, (unsigned long long)a,
				(unsigned long long)b);
			fail();
		}
	}
	dsv_xform_destroy(x);
	return 1;
}

static void test_devxform_floats(void **state)
{
	(void)state;
	static const double m3[] = { 0.5, -2, 100 }, s3[] = { 0.25, 3, 1e-3 };
	static const double m8[] = { 1, 2, 3, 4, 5, 6, 7, 8 }, s8[] = { 2, 2, 2, 2, 3, 3, 3, 3 };
	static const double mid[] = { 0, 10 }, sid[] = { 1, 0.5 }; /* channel 0 the identity */
	static const double m1[] = { 0 }, s1[] = { 1 };
	dsv_dtype outs[] = { DSV_F32, DSV_BF16, DSV_F16 };
	int compared = 0;
	for (int src = 0; src < DSV_DTYPE__COUNT; src++) {
		if (src == DSV_BF16)
			continue;
		for (size_t oi = 0; oi < 3; oi++) {
			dsv_xform_params p;
			for (int k = 0; k < 11; k++) {
				dsv_xform_params_init(&p);
				switch (k) {
				case 0: break; /* plain cast */
				case 1: p.scale = 1.0 / 255; break;
				case 2:
					p.scale = 2.5, p.offset = -3;
					p.nchan = 3, p.mean = m3, p.std = s3, p.chan_inner = 5;
					break;
				case 3:
					p.nchan = 3, p.mean = m3, p.std = s3, p.chan_inner = 1;
					break;
				case 4:
					p.nchan = 8, p.mean = m8, p.std = s8, p.chan_inner = 1;
					break;
				case 5:
					p.scale = 0.01, p.has_clip = 1, p.clip_lo = -1,
					p.clip_hi = 1;
					break;
				case 6: p.scale = 0, p.offset = 1; break;
				case 7:
					p.nchan = 2, p.mean = mid, p.std = sid, p.chan_inner = 3;
					break;
				case 8: p.scale = 1e300; break;
				case 9:
					p.nchan = 1, p.mean = m1, p.std = s1, p.chan_inner = 4;
					break;
				default:
					p.nchan = 2, p.mean = mid, p.std = sid, p.chan_inner = 1;
					break;
				}
				char what[32];
				snprintf(what, sizeof(what), "params %d:", k);
				compared += compare((dsv_dtype)src, outs[oi], &p, what);
			}
		}
	}
	assert_int_equal(compared, 11 * 3 * 11);
}

static void test_devxform_ints(void **state)
{
	(void)state;
	static const double clips[][2] = { { 0, 100 },     { -5, 5 }, { -200, -100 },
					   { 1000, 2000 }, { 0, 0 },  { -1e18, 1e18 } };
	int compared = 0;
	for (int src = DSV_U8; src <= DSV_I64; src++) {
		for (int dst = DSV_U8; dst <= DSV_I64; dst++) {
			dsv_xform_params p;
			dsv_xform_params_init(&p);
			compared += compare((dsv_dtype)src, (dsv_dtype)dst, &p, "cast");
			for (size_t k = 0; k < sizeof(clips) / sizeof(clips[0]); k++) {
				p.has_clip = 1;
				p.clip_lo = clips[k][0];
				p.clip_hi = clips[k][1];
				compared += compare((dsv_dtype)src, (dsv_dtype)dst, &p, "clip");
			}
		}
	}
	assert_true(compared > 200);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_devxform_floats),
		cmocka_unit_test(test_devxform_ints),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
