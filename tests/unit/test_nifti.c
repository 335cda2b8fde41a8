/* NIfTI headers: both versions in both byte orders, each malformation
 * with its code and reason, and the source's shape, offset and reads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dsview/source.h"
#include "fixture.h"
#include "formats/nifti/nifti.h"

static char dir[] = "/tmp/dsv-test-nifti-XXXXXX";

/* Stores v in n bytes at p, in the given byte order. */
static void put(uint8_t *p, int n, uint64_t v, int be)
{
	for (int i = 0; i < n; i++)
		p[be ? n - 1 - i : i] = (uint8_t)(v >> (8 * i));
}

static void put_f32(uint8_t *p, float f, int be)
{
	uint32_t w;
	memcpy(&w, &f, 4);
	put(p, 4, w, be);
}

static void put_f64(uint8_t *p, double d, int be)
{
	uint64_t w;
	memcpy(&w, &d, 8);
	put(p, 8, w, be);
}

/* A header of version 1 or 2: int16 (X, Y, Z, T) = (4, 3, 2, 5), data at
 * 352 (544), slope and inter as given. */
static size_t make_hdr(uint8_t *b, int version, int be, double slope, double inter)
{
	static const int64_t dims[] = { 4, 4, 3, 2, 5 };
	memset(b, 0, 1024);
	if (version == 1) {
		put(b, 4, 348, be);
		memcpy(b + 344, "n+1", 4);
		for (int i = 0; i < 5; i++)
			put(b + 40 + 2 * i, 2, (uint64_t)dims[i], be);
		put(b + 70, 2, 4, be);
		put(b + 72, 2, 16, be);
		put_f32(b + 108, 352, be);
		put_f32(b + 112, (float)slope, be);
		put_f32(b + 116, (float)inter, be);
		return 352;
	}
	put(b, 4, 540, be);
	memcpy(b + 4, "n+2\0\r\n\032\n", 8);
	for (int i = 0; i < 5; i++)
		put(b + 16 + 8 * i, 8, (uint64_t)dims[i], be);
	put(b + 12, 2, 4, be);
	put(b + 14, 2, 16, be);
	put(b + 168, 8, 544, be);
	put_f64(b + 176, slope, be);
	put_f64(b + 184, inter, be);
	return 544;
}

static void test_parse_versions_and_orders(void **state)
{
	uint8_t b[1024];
	dsv_nifti_hdr h;
	dsv_errbuf eb;
	(void)state;
	for (int version = 1; version <= 2; version++)
		for (int be = 0; be < 2; be++) {
			size_t off = make_hdr(b, version, be, 0.5, -3);
			assert_int_equal(dsv_nifti_parse(b, off, &h, &eb), 0);
			assert_int_equal(h.version, version);
			assert_int_equal(h.big_endian, be);
			assert_int_equal(h.dtype, DSV_I16);
			assert_int_equal(h.ndim, 4);
			assert_int_equal(h.dim[0], 4);
			assert_int_equal(h.dim[3], 5);
			assert_int_equal(h.vox_offset, off);
			assert_int_equal(h.has_scale, 1);
			assert_true(h.slope == 0.5 && h.inter == -3);
		}
}

static void test_parse_scaling(void **state)
{
	uint8_t b[1024];
	dsv_nifti_hdr h;
	dsv_errbuf eb;
	(void)state;
	/* slope 0, NaN or infinite: none; 1 and 0: none */
	const double none[] = { 0, NAN, INFINITY, 1 };
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		make_hdr(b, 2, 0, none[i], 0);
		assert_int_equal(dsv_nifti_parse(b, 544, &h, &eb), 0);
		assert_int_equal(h.has_scale, 0);
		assert_true(h.slope == 1 && h.inter == 0);
	}
	make_hdr(b, 1, 0, 1, 2); /* slope 1 with an intercept scales */
	assert_int_equal(dsv_nifti_parse(b, 352, &h, &eb), 0);
	assert_int_equal(h.has_scale, 1);
	make_hdr(b, 1, 0, 2, NAN); /* a slope with a bad intercept: malformed */
	assert_int_equal(dsv_nifti_parse(b, 352, &h, &eb), DSV_ERR_FORMAT);
	assert_non_null(strstr(eb.reason, "scl_inter"));
}

/* Patches a NIfTI-1 header (little-endian) and expects err with want in
 * the reason. */
static void expect_bad(size_t at, int n, uint64_t v, size_t len, int err, const char *want)
{
	uint8_t b[1024];
	dsv_nifti_hdr h;
	dsv_errbuf eb;
	make_hdr(b, 1, 0, 0, 0);
	if (n)
		put(b + at, n, v, 0);
	assert_int_equal(dsv_nifti_parse(b, len, &h, &eb), err);
	if (!strstr(eb.reason, want))
		fail_msg("want '%s' in '%s'", want, eb.reason);
}

static void test_parse_malformed(void **state)
{
	(void)state;
	expect_bad(0, 4, 347, 352, DSV_ERR_FORMAT, "sizeof_hdr");
	expect_bad(0, 0, 0, 3, DSV_ERR_FORMAT, "sizeof_hdr");
	expect_bad(0, 0, 0, 347, DSV_ERR_FORMAT, "truncated NIfTI header");
	expect_bad(344, 4, 0x00322b6e, 352, DSV_ERR_FORMAT, "bad magic"); /* "n+2" in a 1 */
	expect_bad(344, 4, 0x0031696e, 352, DSV_ERR_UNSUPPORTED, "two-file");
	expect_bad(40, 2, 0, 352, DSV_ERR_FORMAT, "dim[0] is 0");
	expect_bad(40, 2, 8, 352, DSV_ERR_FORMAT, "dim[0] is 8");
	expect_bad(44, 2, 0, 352, DSV_ERR_FORMAT, "dim[2] is 0");
	expect_bad(42, 2, 0xFFFF, 352, DSV_ERR_FORMAT, "dim[1] is -1");
	expect_bad(70, 2, 32, 352, DSV_ERR_UNSUPPORTED, "complex64");
	expect_bad(70, 2, 128, 352, DSV_ERR_UNSUPPORTED, "RGB24");
	expect_bad(70, 2, 1536, 352, DSV_ERR_UNSUPPORTED, "float128");
	expect_bad(70, 2, 3, 352, DSV_ERR_FORMAT, "unknown NIfTI datatype 3");
	expect_bad(72, 2, 8, 352, DSV_ERR_FORMAT, "bitpix 8");
	uint32_t w;
	float f = 348;
	memcpy(&w, &f, 4);
	expect_bad(108, 4, w, 352, DSV_ERR_FORMAT, "vox_offset");
	f = 360.5f;
	memcpy(&w, &f, 4);
	expect_bad(108, 4, w, 352, DSV_ERR_FORMAT, "vox_offset");
	f = NAN;
	memcpy(&w, &f, 4);
	expect_bad(108, 4, w, 352, DSV_ERR_FORMAT, "vox_offset");
}

static void test_source(void **state)
{
	uint8_t b[1024 + 480];
	int16_t vox[120];
	dsv_source *s;
	dsv_errbuf eb;
	(void)state;
	for (int i = 0; i < 120; i++)
		vox[i] = (int16_t)(i * 7 - 300);
	size_t off = make_hdr(b, 2, 0, 0.25, 1);
	memcpy(b + off, vox, sizeof(vox));
	const char *path = scratch_write(dir, "x.nii", b, off + sizeof(vox));
	assert_int_equal(dsv_source_open(path, &s, &eb), 0);
	const dsv_source_info *in = dsv_source_get_info(s);
	assert_int_equal(in->kind, DSV_SRC_NIFTI);
	assert_string_equal(dsv_source_kind_name(in->kind), "nifti");
	assert_int_equal(in->ndim, 4);
	const uint64_t want[] = { 5, 2, 3, 4 }; /* dim reversed */
	for (int k = 0; k < 4; k++)
		assert_int_equal(in->shape[k], want[k]);
	assert_int_equal(in->nrows, 5);
	assert_int_equal(in->row_elems, 24);
	assert_int_equal(in->stored_bytes, sizeof(vox));
	assert_true(in->has_scale && in->scale == 0.25 && in->offset == 1);
	dsv_chunk_ref r;
	int16_t got[120];
	assert_int_equal(dsv_source_chunk(s, 0, &r), 0);
	assert_int_equal(dsv_source_decode_chunk(s, &r, got, sizeof(got), &eb), 0);
	assert_memory_equal(got, vox, sizeof(vox));
	dsv_source_close(s);

	/* one byte short of its data: truncated, named */
	path = scratch_write(dir, "short.nii", b, off + sizeof(vox) - 1);
	assert_int_equal(dsv_source_open(path, &s, &eb), DSV_ERR_TRUNCATED);
	assert_string_equal(eb.file, path);
	/* big-endian int16: refused with the reason */
	make_hdr(b, 1, 1, 0, 0);
	path = scratch_write(dir, "be.nii", b, 352 + sizeof(vox));
	assert_int_equal(dsv_source_open(path, &s, &eb), DSV_ERR_UNSUPPORTED);
	assert_non_null(strstr(eb.reason, "big-endian"));
	/* gzipped: refused, with the command that converts it */
	path = scratch_write(dir, "x.nii.gz", b, 10);
	assert_int_equal(dsv_source_open(path, &s, &eb), DSV_ERR_UNSUPPORTED);
	assert_non_null(strstr(eb.reason, "dsview pack"));
}

SCRATCH_GROUP_FIXTURES(dir)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_versions_and_orders),
		cmocka_unit_test(test_parse_scaling),
		cmocka_unit_test(test_parse_malformed),
		cmocka_unit_test(test_source),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
