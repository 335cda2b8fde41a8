/*
 * HDF5 dataset descriptions (h5_info.c): layout, chunk shape, filter
 * pipeline, storage size, the dsview store attribute, links that lead out
 * of the file, and files the library will not open. Fixtures are made
 * here with the HDF5 C API.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>

#include "dsview/codec.h"
#include "dsview/h5info.h"
#include "dsview/pack.h"

static char dir[] = "/tmp/dsv-test-info-XXXXXX";

static const char *tpath(char *buf, size_t cap, const char *name)
{
	snprintf(buf, cap, "%s/%s", dir, name);
	return buf;
}

static hid_t new_file(const char *name)
{
	char p[256];
	hid_t f = H5Fcreate(tpath(p, sizeof(p), name), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	assert_true(f >= 0);
	return f;
}

static hid_t mkds(hid_t loc, const char *name, hid_t ftype, int ndim, const hsize_t *dims,
		  hid_t dcpl)
{
	hid_t sp = ndim ? H5Screate_simple(ndim, dims, NULL) : H5Screate(H5S_SCALAR);
	assert_true(sp >= 0);
	hid_t d = H5Dcreate2(loc, name, ftype, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
	H5Sclose(sp);
	assert_true(d >= 0);
	return d;
}

static void describe_ok(const char *file, const char *dset, dsv_h5_desc *d)
{
	char p[256];
	dsv_errbuf eb = { 0 };
	int err = dsv_h5_describe(tpath(p, sizeof(p), file), dset, d, &eb);
	if (err)
		fail_msg("describe %s:%s: %d %s", file, dset, err, eb.msg);
}

static int describe_err(const char *file, const char *dset, const char *want_msg)
{
	char p[256];
	dsv_h5_desc d;
	dsv_errbuf eb = { 0 };
	int err = dsv_h5_describe(tpath(p, sizeof(p), file), dset, &d, &eb);
	assert_true(err < 0);
	assert_null(d.store_attr);
	if (want_msg && !strstr(eb.msg, want_msg))
		fail_msg("message '%s' lacks '%s'", eb.msg, want_msg);
	assert_non_null(strstr(eb.msg, file)); /* every message names the file */
	return err;
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[300];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

static void test_contiguous_and_types(void **state)
{
	static uint8_t a[300][7];
	hsize_t da[] = { 300, 7 }, d1[] = { 5 };
	dsv_h5_desc d;
	(void)state;
	for (int i = 0; i < 300 * 7; i++)
		(&a[0][0])[i] = (uint8_t)i;
	hid_t f = new_file("types.h5");
	hid_t ds = mkds(f, "u8", H5T_STD_U8LE, 2, da, H5P_DEFAULT);
	H5Dwrite(ds, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, a);
	H5Dclose(ds);
	H5Dclose(mkds(f, "be16", H5T_STD_I16BE, 1, d1, H5P_DEFAULT));
	H5Dclose(mkds(f, "f32", H5T_IEEE_F32LE, 1, d1, H5P_DEFAULT));
	H5Dclose(mkds(f, "f64be", H5T_IEEE_F64BE, 1, d1, H5P_DEFAULT));
	H5Dclose(mkds(f, "u32", H5T_STD_U32LE, 1, d1, H5P_DEFAULT));
	H5Dclose(mkds(f, "scalar", H5T_STD_I64LE, 0, NULL, H5P_DEFAULT));
	hid_t str = H5Tcopy(H5T_C_S1);
	H5Tset_size(str, 8);
	H5Dclose(mkds(f, "str", str, 1, d1, H5P_DEFAULT));
	H5Tset_size(str, H5T_VARIABLE);
	H5Dclose(mkds(f, "vstr", str, 1, d1, H5P_DEFAULT));
	H5Tclose(str);
	hid_t cmp = H5Tcreate(H5T_COMPOUND, 8);
	H5Tinsert(cmp, "a", 0, H5T_STD_I32LE);
	H5Tinsert(cmp, "b", 4, H5T_IEEE_F32LE);
	H5Dclose(mkds(f, "cmp", cmp, 1, d1, H5P_DEFAULT));
	H5Tclose(cmp);
	/* bfloat16 as a custom 2-byte float: float32's exponent, 7 bits of mantissa */
	hid_t bf = H5Tcopy(H5T_IEEE_F32LE);
	H5Tset_fields(bf, 15, 7, 8, 0, 7);
	H5Tset_offset(bf, 0);
	H5Tset_precision(bf, 16);
	H5Tset_size(bf, 2);
	H5Dclose(mkds(f, "bf16", bf, 1, d1, H5P_DEFAULT));
	H5Tclose(bf);
	H5Fclose(f);

	describe_ok("types.h5", "/u8", &d);
	assert_string_equal(d.type, "uint8");
	assert_int_equal(d.type_size, 1);
	assert_int_equal(d.ndim, 2);
	assert_int_equal(d.shape[0], 300);
	assert_int_equal(d.shape[1], 7);
	assert_int_equal(d.nelems, 2100);
	assert_int_equal(d.raw_bytes, 2100);
	assert_int_equal(d.layout, DSV_H5_LAYOUT_CONTIGUOUS);
	assert_string_equal(dsv_h5_layout_name(d.layout), "contiguous");
	assert_int_equal(d.stored_bytes, 2100);
	assert_int_equal(d.nfilters, 0);
	assert_int_equal(d.chunks_written, -1);
	assert_int_equal(d.external_files, 0);
	assert_null(d.store_attr);
	assert_false(d.store_attr_bad);
	dsv_h5_desc_free(&d);

	/* Relative names work too. */
	static const struct {
		const char *name, *type;
		size_t size;
	} types[] = {
		{ "be16", "big-endian int16", 2 },
		{ "f32", "float32", 4 },
		{ "f64be", "big-endian float64", 8 },
		{ "u32", "uint32", 4 },
		{ "scalar", "int64", 8 },
		{ "str", "string (8 bytes)", 8 },
		{ "vstr", "string (variable length)", 0 },
		{ "cmp", "compound (8 bytes)", 8 },
		{ "bf16", "bfloat16", 2 },
	};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		describe_ok("types.h5", types[i].name, &d);
		if (strcmp(d.type, types[i].type))
			fail_msg("%s: type '%s', want '%s'", types[i].name, d.type, types[i].type);
		if (types[i].size)
			assert_int_equal(d.type_size, types[i].size);
		dsv_h5_desc_free(&d);
	}
	/* Never written: no storage yet. */
	describe_ok("types.h5", "/f32", &d);
	assert_int_equal(d.stored_bytes, 0);
	assert_int_equal(d.raw_bytes, 20);
	dsv_h5_desc_free(&d);
	describe_ok("types.h5", "/scalar", &d);
	assert_int_equal(d.ndim, 0);
	assert_int_equal(d.nelems, 1);
	assert_int_equal(d.raw_bytes, 8);
	dsv_h5_desc_free(&d);
}

static void test_chunked_filters(void **state)
{
	static uint16_t a[1000][8];
	hsize_t dims[] = { 1000, 8 }, cd[] = { 64, 8 }, half[] = { 100, 4 };
	dsv_h5_desc d;
	(void)state;
	for (int i = 0; i < 8000; i++)
		(&a[0][0])[i] = (uint16_t)(i % 13);
	hid_t f = new_file("filters.h5");
	hid_t p = H5Pcreate(H5P_DATASET_CREATE);
	H5Pset_chunk(p, 2, cd);
	H5Pset_shuffle(p);
	H5Pset_deflate(p, 6);
	H5Pset_fletcher32(p);
	hid_t ds = mkds(f, "gz", H5T_STD_U16LE, 2, dims, p);
	H5Dwrite(ds, H5T_NATIVE_UINT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, a);
	H5Dclose(ds);
	H5Pclose(p);

	/* Chunks that split rows, only the first band written. */
	p = H5Pcreate(H5P_DATASET_CREATE);
	H5Pset_chunk(p, 2, half);
	ds = mkds(f, "split", H5T_STD_U16LE, 2, dims, p);
	hsize_t start[] = { 0, 0 }, cnt[] = { 100, 8 };
	hid_t fs = H5Dget_space(ds), ms = H5Screate_simple(2, cnt, NULL);
	H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, cnt, NULL);
	H5Dwrite(ds, H5T_NATIVE_UINT16, ms, fs, H5P_DEFAULT, a);
	H5Sclose(ms);
	H5Sclose(fs);
	H5Dclose(ds);
	H5Pclose(p);

	/* A filter nobody here knows, optional so the library writes it. */
	p = H5Pcreate(H5P_DATASET_CREATE);
	H5Pset_chunk(p, 2, cd);
	unsigned cdv[2] = { 7, 9 };
	assert_int_equal(H5Pset_filter(p, 40000, H5Z_FLAG_OPTIONAL, 2, cdv), 0);
	H5Dclose(mkds(f, "odd", H5T_STD_U16LE, 2, dims, p));
	H5Pclose(p);
	H5Fclose(f);

	describe_ok("filters.h5", "/gz", &d);
	assert_int_equal(d.layout, DSV_H5_LAYOUT_CHUNKED);
	assert_int_equal(d.chunk[0], 64);
	assert_int_equal(d.chunk[1], 8);
	assert_int_equal(d.chunks_written, 16); /* ceil(1000 / 64) */
	assert_int_equal(d.nfilters, 3);
	assert_int_equal(d.filters[0].id, H5Z_FILTER_SHUFFLE);
	assert_string_equal(d.filters[0].name, "shuffle");
	assert_int_equal(d.filters[1].id, H5Z_FILTER_DEFLATE);
	assert_string_equal(d.filters[1].name, "deflate");
	assert_true(d.filters[1].ncd >= 1);
	assert_int_equal(d.filters[1].cd[0], 6);
	assert_int_equal(d.filters[2].id, H5Z_FILTER_FLETCHER32);
	assert_string_equal(d.filters[2].name, "fletcher32");
	assert_int_equal(d.raw_bytes, sizeof(a));
	/* Highly compressible: the storage size is the compressed one. */
	assert_true(d.stored_bytes > 0 && d.stored_bytes < sizeof(a) / 4);
	dsv_h5_desc_free(&d);

	describe_ok("filters.h5", "/split", &d);
	assert_int_equal(d.chunk[0], 100);
	assert_int_equal(d.chunk[1], 4);
	assert_int_equal(d.chunks_written, 2);
	assert_int_equal(d.stored_bytes, 2 * 100 * 4 * 2);
	assert_int_equal(d.nfilters, 0);
	dsv_h5_desc_free(&d);

	describe_ok("filters.h5", "/odd", &d);
	assert_int_equal(d.nfilters, 1);
	assert_int_equal(d.filters[0].id, 40000);
	assert_string_equal(d.filters[0].name, "filter-40000");
	assert_true(d.filters[0].flags & H5Z_FLAG_OPTIONAL);
	assert_int_equal(d.filters[0].ncd, 2);
	assert_int_equal(d.filters[0].cd[1], 9);
	assert_int_equal(d.chunks_written, 0);
	assert_int_equal(d.stored_bytes, 0);
	dsv_h5_desc_free(&d);

	assert_string_equal(dsv_h5_filter_name(DSV_H5Z_FILTER_LZ4), "lz4");
	assert_string_equal(dsv_h5_filter_name(H5Z_FILTER_DEFLATE), "deflate");
	assert_null(dsv_h5_filter_name(40000));
}

/* A store as pack writes it: LZ4 then Fletcher32 by direct chunk writes,
 * the JSON attribute as a variable-length string. */
static void test_store_attr(void **state)
{
	static uint8_t rows[100][32];
	hsize_t dims[] = { 100, 32 }, cd[] = { 40, 32 }, one[] = { 2 };
	unsigned cdv[1] = { 0 };
	uint64_t stored = 0;
	const char *json = "{\"format\": \"dsview-store\", \"codec\": \"lz4\", \"chunk_rows\": 40}";
	dsv_h5_desc d;
	(void)state;
	for (int i = 0; i < 3200; i++)
		(&rows[0][0])[i] = (uint8_t)(i / 50);
	hid_t f = new_file("store.h5");
	hid_t p = H5Pcreate(H5P_DATASET_CREATE);
	H5Pset_chunk(p, 2, cd);
	assert_int_equal(H5Pset_filter(p, DSV_H5Z_FILTER_LZ4, H5Z_FLAG_OPTIONAL, 1, cdv), 0);
	H5Pset_fletcher32(p);
	hid_t ds = mkds(f, "x", H5T_STD_U8LE, 2, dims, p);
	for (int c = 0; c < 3; c++) {
		uint8_t raw[40 * 32] = { 0 }, enc[4096];
		size_t n = c < 2 ? sizeof(raw) : 20 * 32;
		memcpy(raw, rows[c * 40], n);
		int64_t e = dsv_lz4_encode(enc, sizeof(enc) - 4, raw, sizeof(raw),
					   DSV_LZ4_DEFAULT_BLOCK, 0);
		assert_true(e > 0);
		dsv_fletcher32_append(enc, (size_t)e);
		hsize_t off[] = { (hsize_t)c * 40, 0 };
		assert_int_equal(H5Dwrite_chunk(ds, H5P_DEFAULT, 0, off, (size_t)e + 4, enc), 0);
		stored += (uint64_t)e + 4;
	}
	hid_t vs = H5Tcopy(H5T_C_S1);
	H5Tset_size(vs, H5T_VARIABLE);
	H5Tset_cset(vs, H5T_CSET_UTF8); /* as h5py writes str */
	hid_t sc = H5Screate(H5S_SCALAR);
	hid_t at = H5Acreate2(ds, DSV_STORE_ATTR, vs, sc, H5P_DEFAULT, H5P_DEFAULT);
	assert_int_equal(H5Awrite(at, vs, &json), 0);
	H5Aclose(at);
	/* Another attribute is no business of ours. */
	at = H5Acreate2(ds, "other", H5T_STD_I32LE, sc, H5P_DEFAULT, H5P_DEFAULT);
	H5Aclose(at);
	H5Dclose(ds);
	H5Pclose(p);

	/* Fixed-length string, as h5py writes np.bytes_. */
	hid_t fx = H5Tcopy(H5T_C_S1);
	H5Tset_size(fx, strlen(json));
	H5Tset_strpad(fx, H5T_STR_NULLPAD);
	ds = mkds(f, "fixed", H5T_STD_U8LE, 2, dims, H5P_DEFAULT);
	at = H5Acreate2(ds, DSV_STORE_ATTR, fx, sc, H5P_DEFAULT, H5P_DEFAULT);
	assert_int_equal(H5Awrite(at, fx, json), 0);
	H5Aclose(at);
	H5Dclose(ds);
	H5Tclose(fx);

	/* Not a single string: an integer, an array of two strings, one
	 * longer than any store attribute. */
	ds = mkds(f, "int_attr", H5T_STD_U8LE, 2, dims, H5P_DEFAULT);
	H5Aclose(H5Acreate2(ds, DSV_STORE_ATTR, H5T_STD_I32LE, sc, H5P_DEFAULT, H5P_DEFAULT));
	H5Dclose(ds);
	ds = mkds(f, "two", H5T_STD_U8LE, 2, dims, H5P_DEFAULT);
	hid_t sp2 = H5Screate_simple(1, one, NULL);
	const char *two[2] = { json, json };
	at = H5Acreate2(ds, DSV_STORE_ATTR, vs, sp2, H5P_DEFAULT, H5P_DEFAULT);
	H5Awrite(at, vs, two);
	H5Aclose(at);
	H5Sclose(sp2);
	H5Dclose(ds);
	ds = mkds(f, "huge", H5T_STD_U8LE, 2, dims, H5P_DEFAULT);
	char *big = malloc(DSV_H5_MAX_ATTR + 2);
	assert_non_null(big);
	memset(big, 'x', DSV_H5_MAX_ATTR + 1);
	big[DSV_H5_MAX_ATTR + 1] = '\0';
	at = H5Acreate2(ds, DSV_STORE_ATTR, vs, sc, H5P_DEFAULT, H5P_DEFAULT);
	H5Awrite(at, vs, &big);
	H5Aclose(at);
	H5Dclose(ds);
	free(big);
	H5Sclose(sc);
	H5Tclose(vs);
	H5Fclose(f);

	describe_ok("store.h5", "/x", &d);
	assert_non_null(d.store_attr);
	assert_string_equal(d.store_attr, json);
	assert_false(d.store_attr_bad);
	assert_int_equal(d.nfilters, 2);
	assert_string_equal(d.filters[0].name, "lz4");
	assert_string_equal(d.filters[1].name, "fletcher32");
	assert_int_equal(d.chunks_written, 3);
	assert_int_equal(d.stored_bytes, stored);
	assert_int_equal(d.raw_bytes, sizeof(rows));
	dsv_h5_desc_free(&d);
	assert_null(d.store_attr);
	dsv_h5_desc_free(&d); /* twice is harmless */
	dsv_h5_desc_free(NULL);

	describe_ok("store.h5", "/fixed", &d);
	assert_non_null(d.store_attr);
	assert_string_equal(d.store_attr, json);
	dsv_h5_desc_free(&d);

	static const char *bad[] = { "/int_attr", "/two", "/huge" };
	for (int i = 0; i < 3; i++) {
		describe_ok("store.h5", bad[i], &d);
		assert_null(d.store_attr);
		if (!d.store_attr_bad)
			fail_msg("%s: store_attr_bad not set", bad[i]);
		dsv_h5_desc_free(&d);
	}
}

static void test_compact_and_external_storage(void **state)
{
	uint8_t a[10] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
	hsize_t dims[] = { 10 }, big[] = { 100 };
	dsv_h5_desc d;
	(void)state;
	hid_t f = new_file("layouts.h5");
	hid_t p = H5Pcreate(H5P_DATASET_CREATE);
	H5Pset_layout(p, H5D_COMPACT);
	hid_t ds = mkds(f, "compact", H5T_STD_U8LE, 1, dims, p);
	H5Dwrite(ds, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, a);
	H5Dclose(ds);
	H5Pclose(p);
	p = H5Pcreate(H5P_DATASET_CREATE);
	/* Described from the header only: the file it names is never opened. */
	assert_int_equal(H5Pset_external(p, "/nonexistent/part1", 0, 60), 0);
	assert_int_equal(H5Pset_external(p, "/nonexistent/part2", 0, 40), 0);
	H5Dclose(mkds(f, "ext", H5T_STD_U8LE, 1, big, p));
	H5Pclose(p);
	H5Fclose(f);

	describe_ok("layouts.h5", "/compact", &d);
	assert_int_equal(d.layout, DSV_H5_LAYOUT_COMPACT);
	assert_string_equal(dsv_h5_layout_name(d.layout), "compact");
	assert_int_equal(d.stored_bytes, 10);
	assert_int_equal(d.chunks_written, -1);
	dsv_h5_desc_free(&d);

	describe_ok("layouts.h5", "/ext", &d);
	assert_int_equal(d.layout, DSV_H5_LAYOUT_CONTIGUOUS);
	assert_int_equal(d.external_files, 2);
	assert_int_equal(d.raw_bytes, 100);
	dsv_h5_desc_free(&d);
}

static void test_links_refused(void **state)
{
	hsize_t dims[] = { 3 };
	dsv_h5_desc d;
	char p[256];
	(void)state;
	hid_t o = new_file("other.h5");
	H5Dclose(mkds(o, "d", H5T_STD_U8LE, 1, dims, H5P_DEFAULT));
	hid_t g = H5Gcreate2(o, "g", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	H5Dclose(mkds(g, "d", H5T_STD_U8LE, 1, dims, H5P_DEFAULT));
	H5Gclose(g);
	H5Fclose(o);

	hid_t f = new_file("links.h5");
	H5Dclose(mkds(f, "real", H5T_STD_U8LE, 1, dims, H5P_DEFAULT));
	g = H5Gcreate2(f, "grp", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	H5Dclose(mkds(g, "inner", H5T_STD_I16LE, 1, dims, H5P_DEFAULT));
	H5Lcreate_soft("inner", g, "rel", H5P_DEFAULT, H5P_DEFAULT);
	H5Gclose(g);
	H5Lcreate_external("other.h5", "/d", f, "ext", H5P_DEFAULT, H5P_DEFAULT);
	H5Lcreate_external("other.h5", "/g", f, "extg", H5P_DEFAULT, H5P_DEFAULT);
	H5Lcreate_soft("/ext", f, "soft_ext", H5P_DEFAULT, H5P_DEFAULT);
	H5Lcreate_soft("/extg", f, "soft_extg", H5P_DEFAULT, H5P_DEFAULT);
	H5Lcreate_soft("/real", f, "soft_ok", H5P_DEFAULT, H5P_DEFAULT);
	H5Lcreate_soft("/loop2", f, "loop1", H5P_DEFAULT, H5P_DEFAULT);
	H5Lcreate_soft("/loop1", f, "loop2", H5P_DEFAULT, H5P_DEFAULT);
	H5Fclose(f);

	assert_int_equal(describe_err("links.h5", "/ext", "external link refused"),
			 DSV_ERR_UNSUPPORTED);
	assert_int_equal(describe_err("links.h5", "/extg/d", "external link refused"),
			 DSV_ERR_UNSUPPORTED);
	assert_int_equal(describe_err("links.h5", "/soft_ext", "external link refused"),
			 DSV_ERR_UNSUPPORTED);
	assert_int_equal(describe_err("links.h5", "soft_extg/d", "external link refused"),
			 DSV_ERR_UNSUPPORTED);
	assert_true(describe_err("links.h5", "/loop1", NULL) < 0);
	assert_int_equal(describe_err("links.h5", "/nope", "no such dataset"), DSV_ERR_NOTFOUND);
	assert_int_equal(describe_err("links.h5", "/grp/nope", "no such dataset"),
			 DSV_ERR_NOTFOUND);
	assert_int_equal(describe_err("links.h5", "/grp", "not a dataset"), DSV_ERR_INVALID);
	assert_int_equal(describe_err("links.h5", "", "no dataset"), DSV_ERR_INVALID);

	describe_ok("links.h5", "/soft_ok", &d);
	assert_string_equal(d.type, "uint8");
	dsv_h5_desc_free(&d);
	describe_ok("links.h5", "/grp/rel", &d);
	assert_string_equal(d.type, "int16");
	dsv_h5_desc_free(&d);

	/* With the target gone, a refusal still names the link, not a
	 * missing file: the walk never tried to open it. */
	assert_int_equal(unlink(tpath(p, sizeof(p), "other.h5")), 0);
	assert_int_equal(describe_err("links.h5", "/ext", "external link refused"),
			 DSV_ERR_UNSUPPORTED);
}

static void test_bad_files(void **state)
{
	uint8_t a[4096];
	hsize_t dims[] = { sizeof(a) };
	dsv_errbuf eb;
	dsv_h5_desc d;
	char p[256];
	struct stat st;
	(void)state;

	assert_int_equal(dsv_h5_check_file(tpath(p, sizeof(p), "missing.h5"), &eb),
			 DSV_ERR_NOTFOUND);
	assert_non_null(strstr(eb.msg, "missing.h5"));
	assert_int_equal(describe_err("missing.h5", "/x", "No such file"), DSV_ERR_NOTFOUND);
	assert_int_equal(dsv_h5_check_file(dir, &eb), DSV_ERR_INVALID);

	FILE *fp = fopen(tpath(p, sizeof(p), "garbage.h5"), "w");
	assert_non_null(fp);
	fputs("this is not an HDF5 file\n", fp);
	fclose(fp);
	assert_int_equal(dsv_h5_check_file(p, &eb), DSV_ERR_FORMAT);
	assert_non_null(strstr(eb.msg, "not an HDF5 file"));
	assert_int_equal(describe_err("garbage.h5", "/x", "not an HDF5 file"), DSV_ERR_FORMAT);

	/* A cut copy: the library refuses it, and says why. */
	memset(a, 7, sizeof(a));
	hid_t f = new_file("cut.h5");
	hid_t ds = mkds(f, "x", H5T_STD_U8LE, 1, dims, H5P_DEFAULT);
	H5Dwrite(ds, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, a);
	H5Dclose(ds);
	H5Fclose(f);
	tpath(p, sizeof(p), "cut.h5");
	assert_int_equal(dsv_h5_check_file(p, &eb), 0);
	describe_ok("cut.h5", "/x", &d);
	dsv_h5_desc_free(&d);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(truncate(p, st.st_size - 100), 0);
	assert_int_equal(dsv_h5_check_file(p, &eb), DSV_ERR_TRUNCATED);
	assert_non_null(strstr(eb.msg, "truncated"));
	assert_non_null(strstr(eb.msg, "cut.h5"));
	assert_int_equal(describe_err("cut.h5", "/x", "truncated"), DSV_ERR_TRUNCATED);
}

/* Every call takes the HDF5 lock: describing from several threads at
 * once must give every thread the right answer. */
static void *describe_many(void *arg)
{
	char p[256];
	dsv_h5_desc d;
	dsv_errbuf eb;
	intptr_t bad = 0;
	(void)arg;
	for (int i = 0; i < 50; i++) {
		const char *name = i % 2 ? "/gz" : "/split";
		if (dsv_h5_describe(tpath(p, sizeof(p), "filters.h5"), name, &d, &eb)) {
			bad++;
			continue;
		}
		if (d.nfilters != (i % 2 ? 3 : 0) || d.chunk[0] != (i % 2 ? 64u : 100u))
			bad++;
		dsv_h5_desc_free(&d);
	}
	return (void *)bad;
}

static void test_threads(void **state)
{
	pthread_t t[4];
	(void)state;
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, describe_many, NULL), 0);
	for (int i = 0; i < 4; i++) {
		void *bad;
		pthread_join(t[i], &bad);
		assert_int_equal((intptr_t)bad, 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_contiguous_and_types),
		cmocka_unit_test(test_chunked_filters),
		cmocka_unit_test(test_store_attr),
		cmocka_unit_test(test_compact_and_external_storage),
		cmocka_unit_test(test_links_refused),
		cmocka_unit_test(test_bad_files),
		cmocka_unit_test(test_threads), /* after test_chunked_filters: uses its file */
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
