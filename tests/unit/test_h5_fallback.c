/*
 * HDF5 sources read through the library (the fallback): library filter
 * pipelines, chunks that split rows, big-endian data, compact layout,
 * never-written chunks, many threads behind the one lock, and a file that
 * shrank.
 */
#include "h5_test.h"
#include "formats/h5/h5.h"
#include "source/source.h"

/* A 32004 filter registered just for this test, built on our codec, so
 * that the library itself runs the pipeline: LZ4 then HDF5's own
 * Fletcher32 over the frame. */
static size_t test_lz4_filter(unsigned flags, size_t ncd, const unsigned cd[], size_t nbytes,
			      size_t *buf_size, void **buf)
{
	size_t cap;
	uint8_t *out;
	int64_t got;
	if (flags & H5Z_FLAG_REVERSE) {
		uint64_t raw;
		if (dsv_lz4_raw_size(*buf, nbytes, &raw))
			return 0;
		cap = (size_t)raw;
		out = malloc(cap ? cap : 1);
		got = out ? dsv_lz4_decode(out, cap, *buf, nbytes) : -1;
	} else {
		size_t block = ncd > 0 ? cd[0] : 0;
		cap = dsv_lz4_bound(nbytes, block);
		out = malloc(cap);
		got = out ? dsv_lz4_encode(out, cap, *buf, nbytes, block, 0) : -1;
	}
	if (got < 0) {
		free(out);
		return 0;
	}
	free(*buf);
	*buf = out;
	*buf_size = cap ? cap : 1;
	return (size_t)got;
}

static void test_library_pipeline(void **state)
{
	static uint8_t a[50][7][9];
	hsize_t dims[] = { 50, 7, 9 }, cd[] = { 16, 7, 9 };
	unsigned cdv[1] = { 128 };
	const H5Z_class2_t cls = {
		H5Z_CLASS_T_VERS, DSV_H5Z_FILTER_LZ4, 1, 1, "dsview test lz4", NULL, NULL,
		test_lz4_filter
	};
	(void)state;
	/* dsview's own 32004 filter is registered at its first HDF5 call;
	 * make that happen now, so that the unregister below removes it and
	 * /shuffled meets a library without LZ4 (in test_h5.c's order,
	 * earlier tests did this). */
	(void)dsv_h5_lock();
	dsv_h5_unlock();
	for (int i = 0; i < 50 * 63; i++)
		(&a[0][0][0])[i] = (uint8_t)(i % 1000 < 500 ? (unsigned)i % 5
							    : ((unsigned)i * 2654435761u) >> 24);
	assert_int_equal(H5Zregister(&cls), 0);
	hid_t f = new_file("pipeline.h5", 1);
	hid_t p = chunk_dcpl(3, cd);
	H5Pset_filter(p, DSV_H5Z_FILTER_LZ4, H5Z_FLAG_MANDATORY, 1, cdv);
	H5Pset_fletcher32(p);
	hid_t d = mkds(f, "a", H5T_STD_U8LE, 3, dims, NULL, p);
	assert_int_equal(H5Dwrite(d, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, a), 0);
	H5Dclose(d);
	/* Shuffle in front of LZ4 is ours to decode too; shuffle after it
	 * is not, and the library cannot decode it without the plugin. */
	H5Premove_filter(p, H5Z_FILTER_ALL);
	H5Pset_shuffle(p);
	H5Pset_filter(p, DSV_H5Z_FILTER_LZ4, H5Z_FLAG_MANDATORY, 1, cdv);
	d = mkds(f, "shuf_lz4", H5T_STD_U8LE, 3, dims, NULL, p);
	assert_int_equal(H5Dwrite(d, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, a), 0);
	H5Dclose(d);
	H5Premove_filter(p, H5Z_FILTER_ALL);
	H5Pset_filter(p, DSV_H5Z_FILTER_LZ4, H5Z_FLAG_MANDATORY, 1, cdv);
	H5Pset_shuffle(p);
	d = mkds(f, "shuffled", H5T_STD_U8LE, 3, dims, NULL, p);
	assert_int_equal(H5Dwrite(d, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, a), 0);
	H5Dclose(d);
	H5Pclose(p);
	H5Fclose(f);
	assert_int_equal(H5Zunregister(DSV_H5Z_FILTER_LZ4), 0);

	dsv_source *s = open_ok("pipeline.h5", "/a");
	check_info(s, DSV_SRC_H5_CHUNKED, DSV_U8, 3, (uint64_t[]){ 50, 7, 9 }, 4);
	dsv_chunk_ref r;
	dsv_source_chunk(s, 0, &r);
	assert_int_equal(r.codec, DSV_CODEC_LZ4);
	assert_true(r.fletcher32);
	assert_true(r.stored_size < r.raw_size); /* it did compress */
	read_check(s, a, sizeof(a));
	dsv_source_close(s);

	s = open_ok("pipeline.h5", "/shuf_lz4");
	check_info(s, DSV_SRC_H5_CHUNKED, DSV_U8, 3, (uint64_t[]){ 50, 7, 9 }, 4);
	dsv_source_chunk(s, 0, &r);
	assert_int_equal(r.codec, DSV_CODEC_LZ4);
	assert_int_equal(r.shuffle, 0); /* of 1-byte elements: nothing to undo */
	read_check(s, a, sizeof(a));
	dsv_source_close(s);

	assert_int_equal(open_err("pipeline.h5", "/shuffled", "32004"), DSV_ERR_UNSUPPORTED);
}

static void test_library_filters_fallback(void **state)
{
	int32_t a[20][6];
	hsize_t dims[] = { 20, 6 }, cd[] = { 7, 6 };
	(void)state;
	if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) <= 0 || H5Zfilter_avail(H5Z_FILTER_NBIT) <= 0)
		skip();
	for (int i = 0; i < 120; i++)
		(&a[0][0])[i] = i * 100003 - 5000000;
	/* nbit (at full precision), and shuffle after deflate: filters only
	 * the library decodes (deflate, shuffle in front: test_h5_deflate.c) */
	hid_t f = new_file("gzip.h5", 0);
	hid_t p = chunk_dcpl(2, cd);
	H5Pset_nbit(p);
	H5Dclose(mkds(f, "gz", H5T_STD_I32LE, 2, dims, NULL, p));
	H5Premove_filter(p, H5Z_FILTER_ALL);
	H5Pset_deflate(p, 1);
	H5Pset_shuffle(p);
	H5Dclose(mkds(f, "shuf", H5T_STD_I32LE, 2, dims, NULL, p));
	H5Pclose(p);
	for (int k = 0; k < 2; k++) {
		hid_t d = H5Dopen2(f, k ? "shuf" : "gz", H5P_DEFAULT);
		H5Dwrite(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, a);
		H5Dclose(d);
	}
	H5Fclose(f);

	dsv_source *s = open_ok("gzip.h5", "/gz");
	check_info(s, DSV_SRC_H5_FALLBACK, DSV_I32, 2, (uint64_t[]){ 20, 6 }, UINT64_MAX);
	assert_string_equal(dsv_source_get_info(s)->why, "filter nbit");
	/* aligned to the file's 7-row chunks */
	assert_int_equal(dsv_source_get_info(s)->chunk_elems % (7 * 6), 0);
	assert_int_equal(dsv_source_fallback_band(s), 7 * 6);
	dsv_chunk_ref r;
	dsv_source_chunk(s, 0, &r);
	assert_true(r.fallback);
	read_check(s, a, sizeof(a));
	dsv_source_close(s);

	s = open_ok("gzip.h5", "/shuf");
	assert_string_equal(dsv_source_get_info(s)->why, "filters deflate+shuffle");
	read_check(s, a, sizeof(a));
	dsv_source_close(s);
}

/* Arbitrary element ranges through the fallback: every box shape of the
 * C-order range decomposition. */
static void test_split_rows_fallback(void **state)
{
	static float a[9][10][4];
	hsize_t dims[] = { 9, 10, 4 }, cd[] = { 2, 5, 4 };
	(void)state;
	for (int i = 0; i < 360; i++)
		(&a[0][0][0])[i] = (float)i * 1.5f;
	hid_t f = new_file("split.h5", 0);
	hid_t p = chunk_dcpl(3, cd);
	/* nbit: the library's to decode (unfiltered, or with a codec of
	 * dsview's, the N-d grid reads it: test_split_rows_grid) */
	H5Pset_nbit(p);
	hid_t d = mkds(f, "a", H5T_IEEE_F32LE, 3, dims, NULL, p);
	H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, a);
	H5Dclose(d);
	H5Pclose(p);
	H5Fclose(f);

	dsv_source *s = open_ok("split.h5", "/a");
	check_info(s, DSV_SRC_H5_FALLBACK, DSV_F32, 3, (uint64_t[]){ 9, 10, 4 }, UINT64_MAX);
	assert_string_equal(dsv_source_get_info(s)->why,
			    "chunks split rows; filters the library decodes");
	assert_int_equal(dsv_source_get_info(s)->chunk_elems % (2 * 40), 0); /* 2-row bands */
	assert_int_equal(dsv_source_fallback_band(s), 2 * 40);
	read_check(s, a, sizeof(a));
	float buf[360];
	for (uint64_t start = 0; start < 360; start += 7) {
		for (uint64_t n = 1; start + n <= 360; n += 13) {
			dsv_chunk_ref r = { .elem_start = start, .nelems = n, .fallback = 1 };
			memset(buf, 0, sizeof(buf));
			assert_int_equal(dsv_source_read_fallback(s, &r, buf, n * 4), 0);
			assert_memory_equal(buf, &a[0][0][0] + start, n * 4);
		}
	}
	dsv_chunk_ref r = { .elem_start = 350, .nelems = 11, .fallback = 1 };
	assert_int_equal(dsv_source_read_fallback(s, &r, buf, sizeof(buf)), DSV_ERR_INVALID);
	r.nelems = 10;
	assert_int_equal(dsv_source_read_fallback(s, &r, buf, 39), DSV_ERR_INVALID);
	dsv_source_close(s);
}

/* Chunks of (2, 5, 4) over (9, 10, 4), unfiltered: read through the N-d
 * grid in bands of 2 rows, each chunk pread and placed; with chunks never
 * written too, which read as the fill value (the default, zeros, or one the
 * file defines), unless the library fills them with nothing (fill time
 * never): that dataset stays with the library. */
static void test_split_rows_grid(void **state)
{
	static float a[9][10][4];
	hsize_t dims[] = { 9, 10, 4 }, cd[] = { 2, 5, 4 };
	(void)state;
	for (int i = 0; i < 360; i++)
		(&a[0][0][0])[i] = (float)i * 1.5f;
	hid_t f = new_file("grid.h5", 0);
	hid_t p = chunk_dcpl(3, cd);
	hid_t d = mkds(f, "a", H5T_IEEE_F32LE, 3, dims, NULL, p);
	H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, a);
	H5Dclose(d);
	hsize_t one[] = { 2, 5, 4 }, at[] = { 2, 5, 0 };
	hid_t fs, ms = H5Screate_simple(3, one, NULL);
	static const char *const holes[] = { "holes", "holes_fill", "holes_never" };
	float fill = -2.5f;
	for (int h = 0; h < 3; h++) {
		hid_t q = H5Pcopy(p);
		if (h == 1)
			H5Pset_fill_value(q, H5T_NATIVE_FLOAT, &fill);
		if (h == 2)
			H5Pset_fill_time(q, H5D_FILL_TIME_NEVER);
		d = mkds(f, holes[h], H5T_IEEE_F32LE, 3, dims, NULL, q);
		fs = H5Dget_space(d);
		H5Sselect_hyperslab(fs, H5S_SELECT_SET, at, NULL, one, NULL);
		H5Dwrite(d, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, a);
		H5Sclose(fs);
		H5Dclose(d);
		H5Pclose(q);
	}
	H5Sclose(ms);
	H5Pclose(p);
	H5Fclose(f);

	band_kb("0"); /* one chunk-row a band (test_h5_grid.c) */
	dsv_source *s = open_ok("grid.h5", "/a");
	band_kb(NULL);
	check_info(s, DSV_SRC_H5_CHUNKED, DSV_F32, 3, (uint64_t[]){ 9, 10, 4 }, 5);
	assert_string_equal(dsv_source_get_info(s)->why, "chunks split rows: bands of 2 rows");
	assert_int_equal(dsv_source_get_info(s)->chunk_elems, 2 * 40);
	dsv_chunk_ref r;
	assert_int_equal(dsv_source_chunk(s, 4, &r), 0);
	assert_true(r.grid);
	assert_false(dsv_chunk_is_plain(&r));
	assert_int_equal(r.nelems, 40); /* the last band: one row */
	read_check(s, a, sizeof(a));
	dsv_source_close(s);

	/* rows 2-3, columns 5-9 written (a's first 40 values), the rest fill */
	static float want[9][10][4];
	for (int h = 0; h < 2; h++) {
		for (int i = 0; i < 360; i++)
			(&want[0][0][0])[i] = h ? fill : 0.0f;
		for (int y = 0; y < 2; y++)
			for (int x = 0; x < 5; x++)
				memcpy(want[2 + y][5 + x], (&a[0][0][0]) + (y * 5 + x) * 4, 16);
		band_kb("0");
		s = open_ok("grid.h5", holes[h]);
		band_kb(NULL);
		check_info(s, DSV_SRC_H5_CHUNKED, DSV_F32, 3, (uint64_t[]){ 9, 10, 4 }, 5);
		assert_string_equal(dsv_source_get_info(s)->why,
				    "chunks split rows: bands of 2 rows; "
				    "9 of 10 chunks never written (fill value)");
		assert_int_equal(dsv_source_get_info(s)->stored_bytes, 2 * 5 * 4 * 4);
		read_check(s, want, sizeof(want));
		dsv_source_close(s);
	}
	s = open_ok("grid.h5", "/holes_never");
	check_info(s, DSV_SRC_H5_FALLBACK, DSV_F32, 3, (uint64_t[]){ 9, 10, 4 }, UINT64_MAX);
	assert_string_equal(
		dsv_source_get_info(s)->why,
		"chunks split rows; some never written, and HDF5 fills them with no value");
	dsv_source_close(s);
}

typedef struct reader_arg {
	const dsv_source *s;
	const float *want;
	int bad;
} reader_arg;

static void *reader(void *p)
{
	reader_arg *ra = p;
	const dsv_source_info *in = dsv_source_get_info(ra->s);
	float *buf = malloc(in->chunk_elems * 4);
	for (int it = 0; it < 50 && buf; it++) {
		for (uint64_t c = 0; c < in->nchunks; c++) {
			dsv_chunk_ref r;
			dsv_source_chunk(ra->s, c, &r);
			if (dsv_source_read_chunk(ra->s, &r, buf, r.nelems * 4, NULL, 0, NULL) ||
			    memcmp(buf, ra->want + r.elem_start, r.nelems * 4))
				ra->bad++;
		}
	}
	free(buf);
	return NULL;
}

/* The serial HDF5 library behind the global lock, from many threads. */
static void test_fallback_threads(void **state)
{
	static float a[400][30];
	hsize_t dims[] = { 400, 30 }, cd[] = { 16, 30 };
	(void)state;
	if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) <= 0)
		skip();
	for (int i = 0; i < 12000; i++)
		(&a[0][0])[i] = (float)(i % 97);
	hid_t f = new_file("threads.h5", 0);
	hid_t p = chunk_dcpl(2, cd);
	H5Pset_deflate(p, 1);
	/* big-endian: the library converts it, so it decodes the chunks */
	hid_t d = mkds(f, "a", H5T_IEEE_F32BE, 2, dims, NULL, p);
	H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, a);
	H5Dclose(d);
	H5Pclose(p);
	H5Fclose(f);

	dsv_source *s = open_ok("threads.h5", "/a");
	pthread_t th[6];
	reader_arg ra[6];
	for (int i = 0; i < 6; i++) {
		ra[i] = (reader_arg){ s, &a[0][0], 0 };
		assert_int_equal(pthread_create(&th[i], NULL, reader, &ra[i]), 0);
	}
	for (int i = 0; i < 6; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(ra[i].bad, 0);
	}
	dsv_source_close(s);
}

static void test_big_endian_fallback(void **state)
{
	int16_t a[5][7];
	uint16_t h[6] = { 0x3c00, 0xc000, 0x7bff, 0x0001, 0x7c00, 0x8000 };
	hsize_t dims[] = { 5, 7 }, cd[] = { 2, 7 }, hd[] = { 6 };
	(void)state;
	for (int i = 0; i < 35; i++)
		(&a[0][0])[i] = (int16_t)(i * 1001 - 17000);
	hid_t f = new_file("be.h5", 0);
	hid_t d = mkds(f, "contig", H5T_STD_I16BE, 2, dims, NULL, H5P_DEFAULT);
	H5Dwrite(d, H5T_NATIVE_INT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, a);
	H5Dclose(d);
	hid_t p = chunk_dcpl(2, cd);
	d = mkds(f, "chunked", H5T_STD_I16BE, 2, dims, NULL, p);
	H5Dwrite(d, H5T_NATIVE_INT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, a);
	H5Dclose(d);
	H5Pclose(p);
	/* IEEE half, big-endian in the file, written from little-endian. */
	hid_t le = H5Tcopy(H5T_IEEE_F32LE);
	H5Tset_fields(le, 15, 10, 5, 0, 10);
	H5Tset_precision(le, 16);
	H5Tset_size(le, 2);
	H5Tset_ebias(le, 15);
	hid_t be = H5Tcopy(le);
	H5Tset_order(be, H5T_ORDER_BE);
	d = mkds(f, "half", be, 1, hd, NULL, H5P_DEFAULT);
	assert_int_equal(H5Dwrite(d, le, H5S_ALL, H5S_ALL, H5P_DEFAULT, h), 0);
	H5Dclose(d);
	d = mkds(f, "half_le", le, 1, hd, NULL, H5P_DEFAULT);
	assert_int_equal(H5Dwrite(d, le, H5S_ALL, H5S_ALL, H5P_DEFAULT, h), 0);
	H5Dclose(d);
	H5Tclose(be);
	H5Tclose(le);
	H5Fclose(f);

	for (int k = 0; k < 2; k++) {
		dsv_source *s = open_ok("be.h5", k ? "/chunked" : "/contig");
		check_info(s, DSV_SRC_H5_FALLBACK, DSV_I16, 2, (uint64_t[]){ 5, 7 }, UINT64_MAX);
		assert_string_equal(dsv_source_get_info(s)->why, "big-endian int16");
		read_check(s, a, sizeof(a));
		dsv_source_close(s);
	}
	dsv_source *s = open_ok("be.h5", "/half");
	check_info(s, DSV_SRC_H5_FALLBACK, DSV_F16, 1, (uint64_t[]){ 6 }, UINT64_MAX);
	uint8_t hb[12];
	for (int i = 0; i < 6; i++)
		hb[2 * i] = (uint8_t)h[i], hb[2 * i + 1] = (uint8_t)(h[i] >> 8);
	read_check(s, hb, sizeof(hb));
	dsv_source_close(s);
	s = open_ok("be.h5", "/half_le");
	check_info(s, DSV_SRC_H5_CONTIGUOUS, DSV_F16, 1, (uint64_t[]){ 6 }, 1);
	read_check(s, hb, sizeof(hb));
	dsv_source_close(s);
}

static void test_compact_and_unwritten_fallback(void **state)
{
	int8_t a[4][4];
	int32_t fill = -3, want[6][5];
	hsize_t dims[] = { 4, 4 }, d2[] = { 6, 5 };
	(void)state;
	for (int i = 0; i < 16; i++)
		(&a[0][0])[i] = (int8_t)(i * 9 - 70);
	for (int i = 0; i < 30; i++)
		(&want[0][0])[i] = fill;
	hid_t f = new_file("compact.h5", 0);
	hid_t p = H5Pcreate(H5P_DATASET_CREATE);
	H5Pset_layout(p, H5D_COMPACT);
	hid_t d = mkds(f, "c", H5T_STD_I8LE, 2, dims, NULL, p);
	H5Dwrite(d, H5T_NATIVE_INT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, a);
	H5Dclose(d);
	H5Pclose(p);
	p = H5Pcreate(H5P_DATASET_CREATE);
	H5Pset_fill_value(p, H5T_NATIVE_INT32, &fill);
	H5Pset_alloc_time(p, H5D_ALLOC_TIME_LATE);
	H5Dclose(mkds(f, "never", H5T_STD_I32LE, 2, d2, NULL, p));
	H5Pclose(p);
	H5Fclose(f);

	dsv_source *s = open_ok("compact.h5", "/c");
	check_info(s, DSV_SRC_H5_FALLBACK, DSV_I8, 2, (uint64_t[]){ 4, 4 }, 1);
	assert_string_equal(dsv_source_get_info(s)->why, "compact layout");
	read_check(s, a, sizeof(a));
	dsv_source_close(s);

	s = open_ok("compact.h5", "/never");
	check_info(s, DSV_SRC_H5_FALLBACK, DSV_I32, 2, (uint64_t[]){ 6, 5 }, 1);
	assert_string_equal(dsv_source_get_info(s)->why, "never written");
	read_check(s, want, sizeof(want));
	dsv_source_close(s);
}

/* A library-read source whose file shrank: EIO, never zeros. */
static void test_fallback_truncated(void **state)
{
	int16_t a[64][64];
	hsize_t dims[] = { 64, 64 };
	char p[256];
	(void)state;
	for (int i = 0; i < 64 * 64; i++)
		(&a[0][0])[i] = (int16_t)(i + 1);
	hid_t f = new_file("betrunc.h5", 0);
	hid_t d = mkds(f, "a", H5T_STD_I16BE, 2, dims, NULL, H5P_DEFAULT);
	H5Dwrite(d, H5T_NATIVE_INT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, a);
	H5Dclose(d);
	H5Fclose(f);

	dsv_source *s = open_ok("betrunc.h5", "/a");
	check_info(s, DSV_SRC_H5_FALLBACK, DSV_I16, 2, (uint64_t[]){ 64, 64 }, 1);
	/* Not read before the cut: HDF5's sieve buffer would keep serving
	 * what it read, which the spec allows. The data is the last thing in
	 * this file: cut half of it. */
	struct stat st;
	assert_int_equal(stat(tpath(p, sizeof(p), "betrunc.h5"), &st), 0);
	assert_int_equal(truncate(p, st.st_size - (off_t)sizeof(a) / 2), 0);
	int err;
	int16_t got[64][64];
	read_all(s, got, &err);
	assert_int_equal(err, DSV_ERR_IO);
	dsv_source_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_library_pipeline),
		cmocka_unit_test(test_library_filters_fallback),
		cmocka_unit_test(test_split_rows_fallback),
		cmocka_unit_test(test_split_rows_grid),
		cmocka_unit_test(test_fallback_threads),
		cmocka_unit_test(test_big_endian_fallback),
		cmocka_unit_test(test_compact_and_unwritten_fallback),
		cmocka_unit_test(test_fallback_truncated),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
