/* .npy and raw sources: header parsing, hostile headers, chunk arithmetic. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dsview/source.h"
#include "fixture.h"
#include "formats/formats.h"
#include "source/source_i.h" /* white-box: a source's more part */

static char dir[] = "/tmp/dsv-test-npy-XXXXXX";

static const char *write_file(const char *name, const void *data, size_t n)
{
	return scratch_write(dir, name, data, n);
}

/* Builds a version-1 .npy with the given header dict and data bytes. */
static const char *write_npy(const char *name, int version, const char *dict, const void *data,
			     size_t n)
{
	unsigned char buf[4096];
	size_t hl = strlen(dict), pre = version == 1 ? 10 : 12, total = pre + hl + 1;
	size_t pad = (64 - total % 64) % 64;
	memcpy(buf, "\x93NUMPY", 6);
	buf[6] = (unsigned char)version;
	buf[7] = 0;
	size_t len = hl + pad + 1;
	if (version == 1) {
		buf[8] = len & 0xff;
		buf[9] = (len >> 8) & 0xff;
	} else {
		for (int i = 0; i < 4; i++)
			buf[8 + i] = (len >> (8 * i)) & 0xff;
	}
	memcpy(buf + pre, dict, hl);
	memset(buf + pre + hl, ' ', pad);
	buf[pre + hl + pad] = '\n';
	size_t h = pre + len;
	assert_true(h + n <= sizeof(buf));
	memcpy(buf + h, data, n);
	return write_file(name, buf, h + n);
}

SCRATCH_GROUP_FIXTURES(dir)

static void test_npy_ok(void **state)
{
	int16_t data[12];
	dsv_source *s;
	dsv_errbuf eb;
	(void)state;
	for (int i = 0; i < 12; i++)
		data[i] = (int16_t)(i * 100 - 600);
	for (int v = 1; v <= 3; v++) {
		const char *p = write_npy(
			"a.npy", v, "{'descr': '<i2', 'fortran_order': False, 'shape': (3, 4), }",
			data, sizeof(data));
		assert_int_equal(dsv_source_open(p, &s, &eb), 0);
		const dsv_source_info *in = dsv_source_get_info(s);
		assert_int_equal(in->dtype, DSV_I16);
		assert_int_equal(in->ndim, 2);
		assert_int_equal(in->shape[0], 3);
		assert_int_equal(in->shape[1], 4);
		assert_int_equal(in->row_elems, 4);
		assert_int_equal(in->nelems, 12);
		assert_int_equal(in->nchunks, 1);
		dsv_chunk_ref r;
		int16_t out[12];
		assert_int_equal(dsv_source_chunk(s, 0, &r), 0);
		assert_int_equal(r.nelems, 12);
		assert_int_equal(dsv_source_read_chunk(s, &r, out, sizeof(out), NULL, 0, NULL), 0);
		assert_memory_equal(out, data, sizeof(data));
		assert_int_equal(dsv_source_chunk(s, 1, &r), DSV_ERR_INVALID);
		dsv_source_close(s);
	}
}

static void test_npy_int64(void **state)
{
	static const int64_t i64[3] = { INT64_MIN, -1, INT64_MAX };
	static const uint64_t u64[3] = { 0, (1ull << 53) + 1, UINT64_MAX };
	static const char *descr[2] = { "<i8", "<u8" };
	(void)state;
	for (int k = 0; k < 2; k++) {
		char dict[96];
		dsv_source *s;
		dsv_errbuf eb;
		dsv_chunk_ref r;
		uint64_t out[3];
		snprintf(dict, sizeof(dict),
			 "{'descr': '%s', 'fortran_order': False, 'shape': (3,), }", descr[k]);
		const char *p = write_npy("i8.npy", 1, dict, k ? (const void *)u64 : i64, 24);
		assert_int_equal(dsv_source_open_npy(p, &s, &eb), 0);
		assert_int_equal(dsv_source_get_info(s)->dtype, k ? DSV_U64 : DSV_I64);
		assert_int_equal(dsv_source_chunk(s, 0, &r), 0);
		assert_int_equal(dsv_source_read_chunk(s, &r, out, sizeof(out), NULL, 0, NULL), 0);
		assert_memory_equal(out, k ? (const void *)u64 : i64, 24);
		dsv_source_close(s);
	}
}

static void test_npy_key_order_and_1d(void **state)
{
	uint8_t data[5] = { 1, 2, 3, 4, 5 };
	dsv_source *s;
	dsv_errbuf eb;
	(void)state;
	const char *p = write_npy(
		"b.npy", 1, "{'shape': (5,), 'fortran_order': False, 'descr': '|u1'}", data, 5);
	assert_int_equal(dsv_source_open_npy(p, &s, &eb), 0);
	assert_int_equal(dsv_source_get_info(s)->dtype, DSV_U8);
	assert_int_equal(dsv_source_get_info(s)->ndim, 1);
	assert_int_equal(dsv_source_get_info(s)->row_elems, 1);
	dsv_raw_layout l;
	assert_int_equal(dsv_source_raw_layout_of(s, &l), -1); /* a .npy is no raw source */
	dsv_source_close(s);
}

static void expect_fail(const char *dict, const void *data, size_t n, int err, const char *needle)
{
	dsv_source *s = (dsv_source *)0x1;
	dsv_errbuf eb = { 0 };
	const char *p = write_npy("bad.npy", 1, dict, data, n);
	assert_int_equal(dsv_source_open_npy(p, &s, &eb), err);
	assert_null(s);
	if (!strstr(eb.msg, needle))
		fail_msg("message '%s' lacks '%s'", eb.msg, needle);
	assert_non_null(strstr(eb.msg, "bad.npy"));
	/* the parts are fields: msg is exactly "file: reason" */
	char want[sizeof(eb.msg)];
	assert_string_equal(eb.file, p);
	assert_string_equal(eb.where, "");
	assert_int_equal(eb.code, err);
	assert_null(strstr(eb.reason, "bad.npy"));
	snprintf(want, sizeof(want), "%s: %s", p, eb.reason);
	assert_string_equal(eb.msg, want);
}

static void test_npy_hostile(void **state)
{
	char data[64] = { 0 };
	(void)state;
	expect_fail("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", data, 16,
		    DSV_ERR_UNSUPPORTED, "Fortran");
	expect_fail("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }", data, 16,
		    DSV_ERR_UNSUPPORTED, "big-endian");
	expect_fail("{'descr': '<f4', 'fortran_order': False, 'shape': "
		    "(1000000000000000000000000000000,), }",
		    data, 16, DSV_ERR_OVERFLOW, "too large");
	expect_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }",
		    data, 16, DSV_ERR_OVERFLOW, "overflow");
	expect_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (100, 100), }", data, 16,
		    DSV_ERR_TRUNCATED, "declares");
	expect_fail("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", data, 8,
		    DSV_ERR_UNSUPPORTED, "structured");
	expect_fail("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", data, 16,
		    DSV_ERR_UNSUPPORTED, "dtype");
	expect_fail("{'descr': '<f16', 'fortran_order': False, 'shape': (1,), }", data, 16,
		    DSV_ERR_UNSUPPORTED, "dtype"); /* long double */
	expect_fail("{'descr': '>i8', 'fortran_order': False, 'shape': (2,), }", data, 16,
		    DSV_ERR_UNSUPPORTED, "big-endian");
	expect_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", data, 4,
		    DSV_ERR_UNSUPPORTED, "0-d");
	expect_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -1), }", data, 16,
		    DSV_ERR_FORMAT, "malformed");
	expect_fail("{'descr': '<f4', 'fortran_order': False, }", data, 16, DSV_ERR_FORMAT,
		    "malformed");
	expect_fail("garbage", data, 16, DSV_ERR_FORMAT, "malformed");
	expect_fail("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }", data, 8,
		    DSV_ERR_FORMAT, "malformed");
	expect_fail("{'descr': '<f4', 'fortran_order': False, 'shape': "
		    "(1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,"
		    "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1), }",
		    data, 4, DSV_ERR_OVERFLOW, "dimensions");
}

static void test_npy_bad_magic_and_lengths(void **state)
{
	unsigned char buf[32] = "\x93NUMPX\x01\x00\x10\x00";
	dsv_source *s;
	dsv_errbuf eb;
	(void)state;
	assert_int_equal(dsv_source_open_npy(write_file("m.npy", buf, 32), &s, &eb),
			 DSV_ERR_FORMAT);
	memcpy(buf, "\x93NUMPY\x01\x00\xff\xff", 10); /* header longer than the file */
	assert_int_equal(dsv_source_open_npy(write_file("m.npy", buf, 32), &s, &eb),
			 DSV_ERR_FORMAT);
	memcpy(buf, "\x93NUMPY\x02\x00\xff\xff\xff\x7f", 12); /* 2 GiB header */
	assert_int_equal(dsv_source_open_npy(write_file("m.npy", buf, 32), &s, &eb),
			 DSV_ERR_FORMAT);
	memcpy(buf, "\x93NUMPY\x09\x00", 8);
	assert_int_equal(dsv_source_open_npy(write_file("m.npy", buf, 32), &s, &eb),
			 DSV_ERR_UNSUPPORTED);
	assert_int_equal(dsv_source_open_npy(write_file("m.npy", buf, 5), &s, &eb), DSV_ERR_FORMAT);
	assert_int_equal(dsv_source_open_npy("/nonexistent/x.npy", &s, &eb), DSV_ERR_NOTFOUND);
}

static void test_flat_chunks_and_truncation(void **state)
{
	/* 3000 rows of 1000 uint8: chunks of 1048 rows (whole rows, ~1 MiB) */
	size_t n = 3000 * 1000;
	unsigned char *data = malloc(n);
	dsv_source *s;
	dsv_errbuf eb;
	dsv_chunk_ref r;
	(void)state;
	for (size_t i = 0; i < n; i++)
		data[i] = (unsigned char)(i * 7);
	const char *p = write_file("raw.bin", data, n);
	int64_t shape[2] = { -1, 1000 };
	assert_int_equal(dsv_source_open_raw(p, DSV_U8, 2, shape, &s, &eb), 0);
	const dsv_source_info *in = dsv_source_get_info(s);
	assert_int_equal(in->nrows, 3000);
	assert_int_equal(in->chunk_elems % 1000, 0);
	assert_true(in->chunk_elems <= (1u << 20));
	assert_int_equal(in->nchunks, (n + in->chunk_elems - 1) / in->chunk_elems);
	assert_int_equal(dsv_source_chunk(s, in->nchunks - 1, &r), 0);
	assert_int_equal(r.elem_start + r.nelems, n);
	unsigned char *out = malloc(in->chunk_elems);
	assert_int_equal(dsv_source_read_chunk(s, &r, out, in->chunk_elems, NULL, 0, NULL), 0);
	assert_memory_equal(out, data + r.elem_start, r.nelems);
	/* truncate under the open source: the last chunk is gone, never zeros */
	assert_int_equal(truncate(p, (off_t)(n - 10)), 0);
	assert_int_equal(dsv_source_read_chunk(s, &r, out, in->chunk_elems, NULL, 0, NULL),
			 DSV_ERR_TRUNCATED);
	assert_int_equal(dsv_source_chunk(s, 0, &r), 0);
	assert_int_equal(dsv_source_read_chunk(s, &r, out, in->chunk_elems, NULL, 0, NULL), 0);
	dsv_source_close(s);

	/* raw errors: not a whole number of rows, more rows than the file holds */
	shape[1] = 13; /* 2999990 bytes are not whole rows of 13 */
	assert_int_equal(dsv_source_open_raw(p, DSV_U8, 2, shape, &s, &eb), DSV_ERR_INVALID);
	assert_non_null(strstr(eb.msg, "whole number of rows"));
	shape[0] = 10000;
	shape[1] = 1000;
	assert_int_equal(truncate(p, 3000000), 0);
	assert_int_equal(dsv_source_open_raw(p, DSV_U8, 2, shape, &s, &eb), DSV_ERR_TRUNCATED);
	shape[0] = -1;
	shape[1] = 0;
	assert_int_equal(dsv_source_open_raw(p, DSV_U8, 2, shape, &s, &eb), DSV_ERR_INVALID);
	free(out);
	free(data);
}

/* A header skipped by source_offset; the shape from the bytes after it. */
static void test_raw_offset(void **state)
{
	unsigned char data[37 + 60];
	dsv_raw_layout l = { .dtype = DSV_U16, .ndim = 2, .shape = { -1, 5 }, .offset = 37 };
	dsv_source *s;
	dsv_errbuf eb;
	dsv_chunk_ref r;
	uint16_t out[30];
	(void)state;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 13 + 1);
	const char *p = write_file("hdr.bin", data, sizeof(data));
	assert_int_equal(dsv_source_open_raw_layout(p, &l, &s, &eb), 0);
	assert_int_equal(dsv_source_get_info(s)->nrows, 6);
	assert_int_equal(dsv_source_chunk(s, 0, &r), 0);
	assert_int_equal(r.nelems, 30);
	assert_int_equal(dsv_source_read_chunk(s, &r, out, sizeof(out), NULL, 0, NULL), 0);
	assert_memory_equal(out, data + 37, 60);
	dsv_source_close(s);
	/* 59 bytes after a 38-byte header: no whole rows, the offset named */
	l.offset = 38;
	assert_int_equal(dsv_source_open_raw_layout(p, &l, &s, &eb), DSV_ERR_INVALID);
	assert_non_null(strstr(eb.msg, "size 59 after source_offset"));
	l.shape[0] = 7;
	l.offset = 37;
	assert_int_equal(dsv_source_open_raw_layout(p, &l, &s, &eb), DSV_ERR_TRUNCATED);
	assert_non_null(strstr(eb.msg, "declares 70 bytes but the file holds 60 after"));
	l.shape[0] = 5;
	assert_int_equal(dsv_source_open_raw_layout(p, &l, &s, &eb), DSV_ERR_INVALID);
	assert_non_null(strstr(eb.msg, "covers 50 of the file's 60 bytes after source_offset"));
	l.offset = 98;
	assert_int_equal(dsv_source_open_raw_layout(p, &l, &s, &eb), DSV_ERR_TRUNCATED);
	assert_non_null(strstr(eb.msg, "source_offset 98 is past the end of the file's 97"));
}

/* int24: 3-byte little-endian samples, sign-extended to int32. */
static void test_raw_int24(void **state)
{
	static const int32_t want[8] = { 0, 1, -1, 8388607, -8388608, 123456, -654321, 256 };
	unsigned char data[4 + 24];
	dsv_raw_layout l = { .ndim = 2, .shape = { 2, -1 }, .offset = 4 };
	dsv_source *s;
	dsv_errbuf eb;
	dsv_chunk_ref r;
	int32_t out[8];
	(void)state;
	memcpy(data, "HDR!", 4);
	for (int i = 0; i < 8; i++) {
		uint32_t u = (uint32_t)want[i];
		data[4 + 3 * i] = (unsigned char)u;
		data[5 + 3 * i] = (unsigned char)(u >> 8);
		data[6 + 3 * i] = (unsigned char)(u >> 16);
	}
	assert_int_equal(dsv_raw_dtype_parse("int23", &l), -1);
	assert_int_equal(dsv_raw_dtype_parse("bfloat16", &l), -1);
	assert_int_equal(dsv_raw_dtype_parse("<i2", &l), 0);
	assert_int_equal(l.dtype, DSV_I16);
	assert_int_equal(dsv_raw_dtype_parse("int24", &l), 0);
	assert_true(l.int24 && l.dtype == DSV_I32);
	const char *p = write_file("s.i24", data, sizeof(data));
	assert_int_equal(dsv_source_open_raw_layout(p, &l, &s, &eb), 0);
	const dsv_source_info *in = dsv_source_get_info(s);
	assert_int_equal(in->dtype, DSV_I32);
	assert_int_equal(in->nrows, 2);
	assert_int_equal(in->row_elems, 4);
	assert_int_equal(in->stored_bytes, 24);
	assert_int_equal(dsv_source_chunk(s, 0, &r), 0);
	assert_int_equal(r.nelems, 8);
	assert_int_equal(dsv_source_read_chunk(s, &r, out, sizeof(out), NULL, 0, NULL), 0);
	assert_memory_equal(out, want, sizeof(want));
	/* the layout given back as opened, its -1 resolved */
	dsv_raw_layout got;
	assert_int_equal(dsv_source_raw_layout_of(s, &got), 0);
	assert_true(got.int24 && got.dtype == DSV_I32);
	assert_int_equal(got.offset, 4);
	assert_int_equal(got.ndim, 2);
	assert_int_equal(got.shape[0], 2);
	assert_int_equal(got.shape[1], 4);
	dsv_source_close(s);
	/* the same bytes as plain int16 after the header: not int24 */
	dsv_raw_layout l16 = { .dtype = DSV_I16, .ndim = 1, .shape = { -1 }, .offset = 4 };
	assert_int_equal(dsv_source_open_raw_layout(p, &l16, &s, &eb), 0);
	assert_int_equal(dsv_source_raw_layout_of(s, &got), 0);
	assert_true(!got.int24 && got.dtype == DSV_I16 && got.offset == 4 && got.shape[0] == 12);
	dsv_source_close(s);
	/* the 21 bytes after a 7-byte header are no whole rows of 3 samples */
	l.shape[1] = 3;
	l.shape[0] = -1;
	l.offset = 7;
	assert_int_equal(dsv_source_open_raw_layout(p, &l, &s, &eb), DSV_ERR_INVALID);
	assert_non_null(strstr(eb.msg, "rows of 9 bytes"));
}

/* A contiguous .npy opened gives back the part only other sources use
 * (every such source shares one of zeros) and still reads; a raw int24
 * source, read through its own hook, keeps its part. */
static void test_small_source_settled(void **state)
{
	int16_t data[12] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 }, out[12];
	dsv_source *a, *b, *s;
	dsv_errbuf eb;
	dsv_chunk_ref r;
	(void)state;
	const char *dict = "{'descr': '<i2', 'fortran_order': False, 'shape': (3, 4), }";
	assert_int_equal(dsv_source_open(write_npy("s1.npy", 1, dict, data, 24), &a, &eb), 0);
	assert_int_equal(dsv_source_open(write_npy("s2.npy", 1, dict, data, 24), &b, &eb), 0);
	assert_ptr_equal(a->more, b->more);
	assert_null(a->more->chunk_off);
	assert_null(a->more->lib_read);
	assert_int_equal(dsv_source_chunk(b, 0, &r), 0);
	assert_int_equal(dsv_source_read_chunk(b, &r, out, sizeof(out), NULL, 0, NULL), 0);
	assert_memory_equal(out, data, 24);
	dsv_source_close(a);
	dsv_source_close(b);

	unsigned char i24[12] = { 1, 0, 0, 2, 0, 0, 0xff, 0xff, 0xff, 4, 0, 0 };
	dsv_raw_layout l = { .ndim = 2, .shape = { 2, -1 } };
	int32_t got[4];
	assert_int_equal(dsv_raw_dtype_parse("int24", &l), 0);
	assert_int_equal(dsv_format_open_raw(write_file("t.i24", i24, 12), &l, &s, &eb), 0);
	assert_non_null(s->more->lib_read);
	assert_int_equal(dsv_source_chunk(s, 0, &r), 0);
	assert_int_equal(dsv_source_read_chunk(s, &r, got, sizeof(got), NULL, 0, NULL), 0);
	assert_int_equal(got[2], -1);
	assert_int_equal(got[3], 4);
	dsv_source_close(s);
}

static void test_huge_rows_split(void **state)
{
	/* one row of 3 MiB float32 = 786432 elements: split into equal pieces */
	size_t ne = 786432 * 2;
	float *data = calloc(ne, sizeof(float));
	dsv_source *s;
	dsv_errbuf eb;
	(void)state;
	const char *p = write_file("big.bin", data, ne * sizeof(float));
	int64_t shape[2] = { 2, 786432 };
	assert_int_equal(dsv_source_open_raw(p, DSV_F32, 2, shape, &s, &eb), 0);
	const dsv_source_info *in = dsv_source_get_info(s);
	assert_true(in->chunk_elems * 4 <= (1u << 20));
	assert_int_equal(786432 % in->chunk_elems, 0);
	assert_int_equal(in->nchunks, ne / in->chunk_elems);
	dsv_source_close(s);
	free(data);
}

static void test_dispatch_errors(void **state)
{
	dsv_source *s;
	dsv_errbuf eb;
	(void)state;
	assert_int_equal(dsv_source_open("/tmp/whatever.txt", &s, &eb), DSV_ERR_INVALID);
	assert_non_null(strstr(eb.msg, "unknown source type"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_npy_ok),
		cmocka_unit_test(test_npy_key_order_and_1d),
		cmocka_unit_test(test_npy_int64),
		cmocka_unit_test(test_npy_hostile),
		cmocka_unit_test(test_npy_bad_magic_and_lengths),
		cmocka_unit_test(test_flat_chunks_and_truncation),
		cmocka_unit_test(test_raw_offset),
		cmocka_unit_test(test_raw_int24),
		cmocka_unit_test(test_small_source_settled),
		cmocka_unit_test(test_huge_rows_split),
		cmocka_unit_test(test_dispatch_errors),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
