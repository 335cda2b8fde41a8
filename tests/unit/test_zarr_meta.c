/* Zarr metadata (src/formats/zarr/zarr_meta.c): the .zarray texts zarr-python 2.13
 * writes, v3 zarr.json from the specification's examples, chunk keys of
 * both encodings, and hostile metadata refused with its reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/zarr/zarr.h"

static int parse(const char *text, int version, dsv_zarr_meta *m, dsv_errbuf *eb)
{
	return dsv_zarr_parse(text, strlen(text), version, m, eb);
}

/* A .zarray as zarr 2.13 writes it for zarr.open(..., dtype=">i2",
 * compressor=numcodecs.LZ4(), fill_value=None). */
static void test_v2_as_written(void **state)
{
	(void)state;
	dsv_zarr_meta m;
	dsv_errbuf eb;
	const char *t =
		"{\"chunks\": [4, 3], \"compressor\": {\"acceleration\": 1, \"id\": \"lz4\"},"
		"\"dtype\": \">i2\", \"fill_value\": null, \"filters\": null, \"order\": \"C\","
		"\"shape\": [10, 7], \"zarr_format\": 2}";
	assert_int_equal(parse(t, 2, &m, &eb), 0);
	assert_int_equal(m.ndim, 2);
	assert_int_equal(m.shape[0], 10);
	assert_int_equal(m.chunks[1], 3);
	assert_int_equal(m.grid[0], 3);
	assert_int_equal(m.grid[1], 3);
	assert_int_equal(m.nchunks, 9);
	assert_int_equal(m.chunk_elems, 12);
	assert_int_equal(m.dtype, DSV_I16);
	assert_true(m.big_endian);
	assert_false(m.fortran);
	assert_int_equal(m.codec, DSV_ZC_LZ4);
	assert_string_equal(m.compressor, "lz4");
	assert_false(m.has_fill);
	assert_int_equal(m.sep, '.');
	char key[64];
	uint64_t idx[2] = { 2, 1 };
	assert_int_equal(dsv_zarr_chunk_key(&m, idx, key, sizeof(key)), 0);
	assert_string_equal(key, "2.1");
	idx[0] = 3; /* outside the grid */
	assert_int_equal(dsv_zarr_chunk_key(&m, idx, key, sizeof(key)), DSV_ERR_INVALID);
	idx[0] = 2;
	assert_int_equal(dsv_zarr_chunk_key(&m, idx, key, 3), DSV_ERR_INVALID); /* no room */
	/* the names a count of the chunk files takes (grid 3 x 3) */
	static const char *const keys[] = { "0.0", "2.2", "1.0" };
	static const char *const not_keys[] = { "3.0",
						"0.3",
						"01.0",
						"0.0.0",
						"0",
						"0/0",
						"0.",
						".zarray",
						"+1.0",
						" 1.0",
						"1.0 ",
						"c.0.0",
						"99999999999999999999999.0",
						"" };
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		assert_true(dsv_zarr_is_chunk_key(&m, keys[i]));
	for (size_t i = 0; i < sizeof(not_keys) / sizeof(not_keys[0]); i++)
		assert_false(dsv_zarr_is_chunk_key(&m, not_keys[i]));
}

static void test_v2_fill_order_separator(void **state)
{
	(void)state;
	dsv_zarr_meta m;
	dsv_errbuf eb;
	const char *t =
		"{\"chunks\": [4, 3], \"compressor\": {\"blocksize\": 0, \"clevel\": 5,"
		"\"cname\": \"zstd\", \"id\": \"blosc\", \"shuffle\": 2},"
		"\"dimension_separator\": \"/\", \"dtype\": \"<f4\", \"fill_value\": \"NaN\","
		"\"filters\": [], \"order\": \"F\", \"shape\": [10, 7], \"zarr_format\": 2}";
	assert_int_equal(parse(t, 2, &m, &eb), 0);
	assert_true(m.fortran);
	assert_int_equal(m.codec, DSV_ZC_BLOSC);
	assert_true(m.has_fill);
	float f;
	memcpy(&f, m.fill, 4);
	assert_true(isnan(f));
	char key[64];
	uint64_t idx[2] = { 1, 2 };
	assert_int_equal(dsv_zarr_chunk_key(&m, idx, key, sizeof(key)), 0);
	assert_string_equal(key, "1/2");
	assert_true(dsv_zarr_is_chunk_key(&m, "1/2"));
	assert_false(dsv_zarr_is_chunk_key(&m, "1.2"));
	assert_false(dsv_zarr_is_chunk_key(&m, "1/2/"));

	static const struct {
		const char *dtype, *fill;
		dsv_dtype t;
		uint64_t bits;
	} fills[] = {
		{ "|u1", "255", DSV_U8, 255 },
		{ "<i2", "-2", DSV_I16, 0xfffe },
		{ "<u8", "7", DSV_U64, 7 },
		{ "<i8", "-1", DSV_I64, UINT64_MAX },
		{ "<f8", "-Infinity", DSV_F64, 0xfff0000000000000ull },
		{ "<f2", "1.0", DSV_F16, 0x3c00 },
		{ "<f2", "65520.0", DSV_F16, 0x7c00 }, /* rounds to infinity, as numpy */
		{ "<f4", "0.5", DSV_F32, 0x3f000000 },
		{ "<i4", "3.0", DSV_I32, 3 }, /* an integral real */
		{ "|i1", "true", DSV_I8, 1 },
	};
	for (size_t i = 0; i < sizeof(fills) / sizeof(fills[0]); i++) {
		char text[512];
		snprintf(text, sizeof(text),
			 "{\"chunks\": [2], \"compressor\": null, \"dtype\": \"%s\","
			 "\"fill_value\": %s, \"filters\": null, \"order\": \"C\", \"shape\": [5],"
			 "\"zarr_format\": 2}",
			 fills[i].dtype,
			 fills[i].fill[0] == '-' && fills[i].fill[1] == 'I' ? "\"-Infinity\""
									    : fills[i].fill);
		assert_int_equal(parse(text, 2, &m, &eb), 0);
		assert_int_equal(m.dtype, fills[i].t);
		assert_int_equal(m.codec, DSV_ZC_NONE);
		assert_string_equal(m.compressor, "none");
		uint64_t got = 0;
		memcpy(&got, m.fill, dsv_dtype_size(m.dtype));
		assert_int_equal(got, fills[i].bits);
	}
}

static void test_v3_spec_example(void **state)
{
	(void)state;
	dsv_zarr_meta m;
	dsv_errbuf eb;
	const char *t =
		"{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [10000, 1000],"
		"\"dimension_names\": [\"rows\", \"columns\"], \"data_type\": \"float64\","
		"\"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": "
		"[1000, 100]}},"
		"\"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": "
		"{\"separator\": \"/\"}},"
		"\"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}},"
		"{\"name\": \"gzip\", \"configuration\": {\"level\": 1}}],"
		"\"fill_value\": \"NaN\", \"attributes\": {\"foo\": 42, \"bar\": \"apples\"}}";
	assert_int_equal(parse(t, 3, &m, &eb), 0);
	assert_int_equal(m.dtype, DSV_F64);
	assert_true(m.big_endian);
	assert_int_equal(m.codec, DSV_ZC_GZIP);
	assert_int_equal(m.nchunks, 100);
	char key[64];
	uint64_t idx[2] = { 9, 0 };
	assert_int_equal(dsv_zarr_chunk_key(&m, idx, key, sizeof(key)), 0);
	assert_string_equal(key, "c/9/0");
	assert_true(dsv_zarr_is_chunk_key(&m, "c/9/0"));
	assert_false(dsv_zarr_is_chunk_key(&m, "9/0"));
	assert_false(dsv_zarr_is_chunk_key(&m, "c/10/0"));
	assert_false(dsv_zarr_is_chunk_key(&m, "d/9/0"));
	char *attrs, *dims;
	assert_int_equal(dsv_zarr_attrs(t, strlen(t), 3, 2, &attrs, &dims, &eb), 0);
	assert_string_equal(attrs, "{\"bar\":\"apples\",\"foo\":42}");
	assert_string_equal(dims, "[\"rows\",\"columns\"]");
	free(attrs);
	free(dims);

	/* the v2 key encoding, a reversing transpose (F order), raw-bits fill */
	const char *u =
		"{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [5, 6, 7],"
		"\"data_type\": \"uint16\", \"chunk_grid\": {\"name\": \"regular\","
		"\"configuration\": {\"chunk_shape\": [2, 6, 7]}}, \"chunk_key_encoding\": "
		"{\"name\": \"v2\","
		"\"configuration\": {\"separator\": \".\"}}, \"codecs\": [{\"name\": \"transpose\","
		"\"configuration\": {\"order\": [2, 1, 0]}}, {\"name\": \"bytes\", "
		"\"configuration\":"
		"{\"endian\": \"little\"}}, {\"name\": \"zstd\", \"configuration\": {\"level\": "
		"3}}],"
		"\"fill_value\": 9}";
	assert_int_equal(parse(u, 3, &m, &eb), 0);
	assert_true(m.fortran);
	assert_false(m.big_endian);
	assert_int_equal(m.codec, DSV_ZC_ZSTD);
	uint64_t idx3[3] = { 2, 0, 0 };
	assert_int_equal(dsv_zarr_chunk_key(&m, idx3, key, sizeof(key)), 0);
	assert_string_equal(key, "2.0.0");
	assert_int_equal(m.fill[0], 9);
	assert_int_equal(dsv_zarr_attrs(u, strlen(u), 3, 3, &attrs, &dims, &eb), 0);
	assert_null(attrs);
	assert_null(dims);

	/* 0-d arrays: one chunk, "c" and "0" */
	const char *z =
		"{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [],"
		"\"data_type\": \"int8\", \"chunk_grid\": {\"name\": \"regular\","
		"\"configuration\": {\"chunk_shape\": []}}, \"chunk_key_encoding\":"
		"{\"name\": \"default\"}, \"codecs\": [{\"name\": \"bytes\"}], \"fill_value\": 0}";
	assert_int_equal(parse(z, 3, &m, &eb), 0);
	assert_int_equal(m.nchunks, 1);
	assert_int_equal(dsv_zarr_chunk_key(&m, NULL, key, sizeof(key)), 0);
	assert_string_equal(key, "c");
	assert_true(dsv_zarr_is_chunk_key(&m, "c"));
	assert_false(dsv_zarr_is_chunk_key(&m, "c/0"));
	assert_false(dsv_zarr_is_chunk_key(&m, "0"));
}

/* Axis names: v3 dimension_names (strings or null, one an axis, else
 * refused with the reason), v2 xarray's _ARRAY_DIMENSIONS (strings, one an
 * axis, else passed over and left in the attributes). */
/* A bytes codec without an endian on a multi-byte type: zarr-python
 * writes and reads it in the host's order, little on every host dsview
 * runs on; so does dsview. */
static void test_v3_bytes_without_endian(void **state)
{
	(void)state;
	dsv_zarr_meta m;
	dsv_errbuf eb;
	const char *t =
		"{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [4], \"data_type\":"
		"\"int32\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\":"
		"{\"chunk_shape\": [2]}}, \"chunk_key_encoding\": {\"name\": \"default\"},"
		"\"codecs\": [{\"name\": \"bytes\"}], \"fill_value\": 0}";
	assert_int_equal(parse(t, 3, &m, &eb), 0);
	assert_int_equal(m.dtype, DSV_I32);
	assert_false(m.big_endian);
}

static void test_dimension_names(void **state)
{
	(void)state;
	static const struct {
		int version, ndim;
		const char *text, *dims, *reason; /* reason: refused */
	} cases[] = {
		{ 3, 3, "{\"dimension_names\": [\"t\", null, \"\\u00e9\"]}",
		  "[\"t\",null,\"\xc3\xa9\"]" },
		{ 3, 2, "{\"dimension_names\": null}", NULL },
		{ 3, 0, "{\"dimension_names\": []}", "[]" },
		{ 3, 2, "{}", NULL },
		{ 3, 2, "{\"dimension_names\": [\"t\"]}", NULL, "has 1 names for 2 dimensions" },
		{ 3, 1, "{\"dimension_names\": [\"t\", \"c\"]}", NULL, "has 2 names for 1" },
		{ 3, 2, "{\"dimension_names\": [\"t\", 3]}", NULL,
		  "dimension_names[1] is not a string" },
		{ 3, 1, "{\"dimension_names\": [[\"t\"]]}", NULL, "dimension_names[0]" },
		{ 3, 1, "{\"dimension_names\": \"t\"}", NULL, "dimension_names is not an array" },
		{ 3, 1, "{\"dimension_names\": [\"t\"], \"attributes\": 5}", NULL,
		  "attributes are not a JSON object" },
		{ 2, 2, "{\"_ARRAY_DIMENSIONS\": [\"time\", \"channel\"]}",
		  "[\"time\",\"channel\"]" },
		{ 2, 2, "{\"_ARRAY_DIMENSIONS\": [\"time\"]}", NULL },
		{ 2, 2, "{\"_ARRAY_DIMENSIONS\": [\"time\", null]}", NULL },
		{ 2, 1, "{\"_ARRAY_DIMENSIONS\": [7]}", NULL },
		{ 2, 1, "{\"_ARRAY_DIMENSIONS\": {\"a\": 1}}", NULL },
		{ 2, 1, "{\"units\": \"mV\"}", NULL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *attrs = (char *)1, *dims = (char *)1;
		dsv_errbuf eb;
		int rc = dsv_zarr_attrs(cases[i].text, strlen(cases[i].text), cases[i].version,
					cases[i].ndim, &attrs, &dims, &eb);
		if (cases[i].reason) {
			if (rc != DSV_ERR_FORMAT || !strstr(eb.msg, cases[i].reason) || attrs ||
			    dims)
				fail_msg("case %zu: rc %d, message '%s'", i, rc, eb.msg);
			continue;
		}
		if (rc || (cases[i].dims ? !dims || strcmp(dims, cases[i].dims) : dims != NULL))
			fail_msg("case %zu: rc %d, dims %s", i, rc, dims ? dims : "NULL");
		/* v2: the attribute stays among the attributes, taken or not */
		if (cases[i].version == 2 &&
		    (!attrs ||
		     !strstr(attrs, cases[i].text[2] == '_' ? "_ARRAY_DIMENSIONS" : "units")))
			fail_msg("case %zu: attrs %s", i, attrs ? attrs : "NULL");
		free(attrs);
		free(dims);
	}
}

/* Each refused with its code and a reason naming what is wrong. */
static void test_hostile(void **state)
{
	(void)state;
	static const struct {
		int version;
		const char *text, *reason;
		int code;
	} cases[] = {
		{ 2, "[1, 2]", "not a JSON object", DSV_ERR_FORMAT },
		{ 2, "{\"zarr_format\": 2, \"zarr_format\": 2}", "not JSON", DSV_ERR_FORMAT },
		{ 2, "{\"zarr_format\": 3}", "zarr_format is not 2", DSV_ERR_FORMAT },
		{ 2, "{\"zarr_format\": 2, \"shape\": [-1], \"chunks\": [1]}", "shape[0]",
		  DSV_ERR_FORMAT },
		{ 2, "{\"zarr_format\": 2, \"shape\": [4], \"chunks\": [0]}", "chunks[0]",
		  DSV_ERR_FORMAT },
		{ 2, "{\"zarr_format\": 2, \"shape\": [4, 4], \"chunks\": [2]}", "dimensions",
		  DSV_ERR_FORMAT },
		{ 2, "{\"zarr_format\": 2, \"shape\": [4], \"chunks\": [2], \"dtype\": \"<U10\"}",
		  "not served", DSV_ERR_UNSUPPORTED },
		{ 2,
		  "{\"zarr_format\": 2, \"shape\": [4], \"chunks\": [2], \"dtype\": [[\"a\", "
		  "\"<i4\"]]}",
		  "structured", DSV_ERR_UNSUPPORTED },
		{ 2,
		  "{\"zarr_format\": 2, \"shape\": [4], \"chunks\": [2], \"dtype\": \"|f4\","
		  "\"order\": \"C\"}",
		  "not served", DSV_ERR_UNSUPPORTED },
		{ 2,
		  "{\"zarr_format\": 2, \"shape\": [4], \"chunks\": [2], \"dtype\": \"<f4\","
		  "\"order\": \"K\"}",
		  "order", DSV_ERR_FORMAT },
		{ 2,
		  "{\"zarr_format\": 2, \"shape\": [4], \"chunks\": [2], \"dtype\": \"<i4\","
		  "\"order\": \"C\", \"filters\": [{\"id\": \"delta\", \"dtype\": \"<i4\"}]}",
		  "filter 'delta'", DSV_ERR_UNSUPPORTED },
		{ 2,
		  "{\"zarr_format\": 2, \"shape\": [4], \"chunks\": [2], \"dtype\": \"<i4\","
		  "\"order\": \"C\", \"compressor\": {\"id\": \"bz2\"}}",
		  "compressor 'bz2'", DSV_ERR_UNSUPPORTED },
		{ 2,
		  "{\"zarr_format\": 2, \"shape\": [4], \"chunks\": [2], \"dtype\": \"|u1\","
		  "\"order\": \"C\", \"compressor\": null, \"fill_value\": 256}",
		  "out of range", DSV_ERR_FORMAT },
		{ 2,
		  "{\"zarr_format\": 2, \"shape\": [4], \"chunks\": [2], \"dtype\": \"<i4\","
		  "\"order\": \"C\", \"compressor\": null, \"fill_value\": \"AAAAAAAAAAAAAAAAAAAAA"
		  "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"}",
		  "integer dtype", DSV_ERR_FORMAT },
		{ 2,
		  "{\"zarr_format\": 2, \"shape\": [4], \"chunks\": [2], \"dtype\": \"<f4\","
		  "\"order\": \"C\", \"compressor\": null}",
		  "fill_value is missing", DSV_ERR_FORMAT },
		{ 2,
		  "{\"zarr_format\": 2, \"shape\": [4000000000, 4000000000, 4000000000],"
		  "\"chunks\": [1, 1, 1], \"dtype\": \"<f4\", \"order\": \"C\", \"compressor\": "
		  "null,"
		  "\"fill_value\": 0}",
		  "the array is too large", DSV_ERR_OVERFLOW },
		{ 2,
		  "{\"zarr_format\": 2, \"shape\": [100000], \"chunks\": [1000000000],"
		  "\"dtype\": \"<f8\", \"order\": \"C\", \"compressor\": null, \"fill_value\": 0}",
		  "a chunk is too large", DSV_ERR_OVERFLOW },
		{ 3, "{\"zarr_format\": 3, \"node_type\": \"group\"}", "node_type",
		  DSV_ERR_FORMAT },
		{ 3,
		  "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [4], \"data_type\":"
		  "\"uint8\", \"chunk_grid\": {\"name\": \"rectilinear\"}}",
		  "chunk_grid 'rectilinear'", DSV_ERR_UNSUPPORTED },
		{ 3,
		  "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [4], \"data_type\":"
		  "\"uint8\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\":"
		  "{\"chunk_shape\": [2]}}, \"chunk_key_encoding\": {\"name\": \"default\"},"
		  "\"codecs\": [{\"name\": \"sharding_indexed\"}], \"fill_value\": 0}",
		  "sharding chunk_shape is missing", DSV_ERR_FORMAT },
		{ 3,
		  "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [4, 4], \"data_type\":"
		  "\"uint8\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\":"
		  "{\"chunk_shape\": [2, 2]}}, \"chunk_key_encoding\": {\"name\": \"default\"},"
		  "\"codecs\": [{\"name\": \"transpose\", \"configuration\": {\"order\": [0, 0]}},"
		  "{\"name\": \"bytes\"}], \"fill_value\": 0}",
		  "transpose", DSV_ERR_UNSUPPORTED },
		{ 3,
		  "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [4], \"data_type\":"
		  "\"uint8\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\":"
		  "{\"chunk_shape\": [2]}}, \"chunk_key_encoding\": {\"name\": \"default\"},"
		  "\"codecs\": [{\"name\": \"bytes\"}, {\"name\": \"zstd\"}, {\"name\": \"gzip\"}],"
		  "\"fill_value\": 0}",
		  "a second compressor ('gzip' after 'zstd')", DSV_ERR_UNSUPPORTED },
		{ 3,
		  "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [4], \"data_type\":"
		  "\"uint8\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\":"
		  "{\"chunk_shape\": [2]}}, \"chunk_key_encoding\": {\"name\": \"default\"},"
		  "\"codecs\": [{\"name\": \"bytes\"}], \"fill_value\": null}",
		  "v3 requires", DSV_ERR_FORMAT },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		dsv_zarr_meta m;
		dsv_errbuf eb;
		int rc = parse(cases[i].text, cases[i].version, &m, &eb);
		if (rc != cases[i].code || !strstr(eb.msg, cases[i].reason))
			fail_msg("case %zu: rc %d, message '%s'", i, rc, eb.msg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v2_as_written),
		cmocka_unit_test(test_v2_fill_order_separator),
		cmocka_unit_test(test_v3_spec_example),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_v3_bytes_without_endian),
		cmocka_unit_test(test_dimension_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
