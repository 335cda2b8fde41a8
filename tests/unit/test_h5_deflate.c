/* HDF5's deflate and shuffle filters decoded by dsview (codec/deflate.c):
 * streams zlib writes inflate exactly and every wrong one is refused;
 * dsv_unshuffle against the layout worked out by hand and element by
 * element for every element size and leftover; and datasets the library
 * writes with deflate, shuffle and Fletcher32 in the orders h5py writes
 * open on the fast path and read back as written, while the orders
 * dsview does not take stay with the library. */
#include "h5_test.h"

#include <zlib.h>

#include "codec/codec.h"

/* Bytes of a test pattern: runs and a ramp, so that zlib compresses. */
static void pattern(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i % 997 < 400 ? (i / 16 + seed) % 7
					       : (i * 2654435761u + seed) >> 24);
}

static size_t zdeflate(uint8_t *dst, size_t cap, const uint8_t *src, size_t n, int level)
{
	uLongf len = cap;
	assert_int_equal(compress2(dst, &len, src, n, level), Z_OK);
	return len;
}

static void test_deflate_decodes_zlib_streams(void **state)
{
	enum { N = 70000 };
	static uint8_t raw[N], z[N + 1024], out[N + 64];
	(void)state;
	pattern(raw, N, 3);
	for (int level = 0; level <= 9; level += 3) {
		size_t zn = zdeflate(z, sizeof(z), raw, N, level);
		memset(out, 0xee, sizeof(out));
		assert_int_equal(dsv_deflate_decode(out, N, z, zn), N);
		assert_memory_equal(out, raw, N);
		assert_int_equal(out[N], 0xee); /* nothing past dst_size */
		/* bytes after the stream are not read, as the library's filter
		 * does not read them */
		z[zn] = 0x42;
		assert_int_equal(dsv_deflate_decode(out, N, z, zn + 1), N);
	}
	/* the empty chunk */
	size_t zn = zdeflate(z, sizeof(z), raw, 0, 4);
	assert_int_equal(dsv_deflate_decode(out, 0, z, zn), 0);
}

static void test_deflate_refuses_wrong_streams(void **state)
{
	enum { N = 5000 };
	static uint8_t raw[N], z[N + 1024], out[2 * N];
	(void)state;
	pattern(raw, N, 5);
	size_t zn = zdeflate(z, sizeof(z), raw, N, 6);
	/* a stream that makes fewer or more bytes than the chunk */
	assert_int_equal(dsv_deflate_decode(out, N + 1, z, zn), DSV_ERR_CORRUPT);
	assert_int_equal(dsv_deflate_decode(out, N - 1, z, zn), DSV_ERR_CORRUPT);
	/* truncated, at every length */
	for (size_t k = 0; k < zn; k += 97)
		assert_int_equal(dsv_deflate_decode(out, N, z, k), DSV_ERR_CORRUPT);
	/* a damaged Adler-32, a damaged header, a damaged body */
	for (size_t at = 0; at < zn; at++) {
		uint8_t save = z[at];
		z[at] ^= 0x5a;
		int64_t got = dsv_deflate_decode(out, N, z, zn);
		/* refused, unless only the padding bits after the last
		 * block's end changed: then it is the same stream */
		if (got != DSV_ERR_CORRUPT && (got != N || memcmp(out, raw, N)))
			fail_msg("byte %zu of %zu flipped: %lld", at, zn, (long long)got);
		z[at] = save;
	}
	/* raw deflate and gzip framing are not the filter's */
	uint8_t gz[N + 64];
	z_stream s = { 0 };
	assert_int_equal(deflateInit2(&s, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
	s.next_in = raw;
	s.avail_in = N;
	s.next_out = gz;
	s.avail_out = sizeof(gz);
	assert_int_equal(deflate(&s, Z_FINISH), Z_STREAM_END);
	size_t gn = s.total_out;
	deflateEnd(&s);
	assert_int_equal(dsv_deflate_decode(out, N, gz, gn), DSV_ERR_CORRUPT);
	assert_int_equal(dsv_deflate_decode(out, N, z + 2, zn - 6), DSV_ERR_CORRUPT);
	assert_int_equal(dsv_deflate_decode(out, N, "", 0), DSV_ERR_CORRUPT);
}

/* HDF5's shuffle, written out element by element. */
static void shuffle_ref(uint8_t *dst, const uint8_t *src, size_t n, size_t es)
{
	size_t ne = n / es;
	memcpy(dst, src, n);
	if (es <= 1 || ne <= 1)
		return;
	for (size_t i = 0; i < ne; i++)
		for (size_t k = 0; k < es; k++)
			dst[k * ne + i] = src[i * es + k];
}

static void test_unshuffle(void **state)
{
	enum { N = 20000 };
	static uint8_t raw[N], shuf[N], out[N + 16];
	(void)state;
	/* worked by hand: three 2-byte elements and a byte left over */
	const uint8_t s7[7] = { 1, 3, 5, 2, 4, 6, 9 }, want7[7] = { 1, 2, 3, 4, 5, 6, 9 };
	assert_int_equal(dsv_unshuffle(out, 7, s7, 7, 2), 0);
	assert_memory_equal(out, want7, 7);
	pattern(raw, N, 11);
	size_t sizes[] = { 1, 2, 3, 4, 5, 8, 12, 16 };
	size_t lens[] = { 0, 1, 7, 8, 9, 100, 4097, 12289, N };
	for (size_t a = 0; a < sizeof(sizes) / sizeof(sizes[0]); a++) {
		for (size_t b = 0; b < sizeof(lens) / sizeof(lens[0]); b++) {
			size_t es = sizes[a], n = lens[b];
			shuffle_ref(shuf, raw, n, es);
			/* the whole chunk, and the first part of it an edge chunk
			 * keeps (whole elements, part of one, into the leftover) */
			size_t keep[] = { n, n / 2, n ? n - 1 : 0, es + 1 <= n ? es + 1 : n, 0 };
			for (size_t c = 0; c < sizeof(keep) / sizeof(keep[0]); c++) {
				memset(out, 0xee, sizeof(out));
				assert_int_equal(dsv_unshuffle(out, keep[c], shuf, n, es), 0);
				assert_memory_equal(out, raw, keep[c]);
				assert_int_equal(out[keep[c]], 0xee);
			}
		}
	}
	assert_int_equal(dsv_unshuffle(out, 8, shuf, 8, 0), DSV_ERR_INVALID);
	assert_int_equal(dsv_unshuffle(out, 9, shuf, 8, 4), DSV_ERR_INVALID);
}

/* A dataset of elements of type t in chunks of cd, with the filters in
 * order ("s" shuffle, "d" deflate 4, "f" Fletcher32), written from a. */
static void write_ds(hid_t f, const char *name, hid_t t, hid_t mt, int nd, const hsize_t *dims,
		     const hsize_t *cd, const char *filters, const void *a)
{
	hid_t p = chunk_dcpl(nd, cd);
	for (const char *c = filters; *c; c++) {
		if (*c == 's')
			H5Pset_shuffle(p);
		else if (*c == 'd')
			H5Pset_deflate(p, 4);
		else
			H5Pset_fletcher32(p);
	}
	hid_t d = mkds(f, name, t, nd, dims, NULL, p);
	assert_int_equal(H5Dwrite(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, a), 0);
	H5Dclose(d);
	H5Pclose(p);
}

static void test_deflate_shuffle_fast_path(void **state)
{
	static int16_t a[45][6][5];
	static double b[30][7];
	hsize_t da[] = { 45, 6, 5 }, ca[] = { 8, 6, 5 }, split[] = { 8, 3, 2 };
	hsize_t db[] = { 30, 7 }, cb[] = { 4, 7 };
	(void)state;
	if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) <= 0)
		skip();
	for (int i = 0; i < 45 * 30; i++)
		(&a[0][0][0])[i] = (int16_t)(i % 300 < 150 ? i / 9 : i * 40503);
	for (int i = 0; i < 30 * 7; i++)
		(&b[0][0])[i] = i % 5 ? (double)i / 3.0 : -1e300 * i;
	hid_t f = new_file("deflate.h5", 0);
	write_ds(f, "d", H5T_STD_I16LE, H5T_NATIVE_INT16, 3, da, ca, "d", a);
	write_ds(f, "sd", H5T_STD_I16LE, H5T_NATIVE_INT16, 3, da, ca, "sd", a);
	write_ds(f, "sdf", H5T_STD_I16LE, H5T_NATIVE_INT16, 3, da, ca, "sdf", a);
	write_ds(f, "sf", H5T_STD_I16LE, H5T_NATIVE_INT16, 3, da, ca, "sf", a);
	write_ds(f, "grid", H5T_STD_I16LE, H5T_NATIVE_INT16, 3, da, split, "sd", a);
	write_ds(f, "f64", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 2, db, cb, "sdf", b);
	write_ds(f, "ds", H5T_STD_I16LE, H5T_NATIVE_INT16, 3, da, ca, "ds", a);
	write_ds(f, "dd", H5T_STD_I16LE, H5T_NATIVE_INT16, 3, da, ca, "dd", a);
	H5Fclose(f);

	struct {
		const char *name;
		dsv_codec codec;
		unsigned shuffle;
		int fl32;
	} fast[] = {
		{ "/d", DSV_CODEC_DEFLATE, 0, 0 },   { "/sd", DSV_CODEC_DEFLATE, 2, 0 },
		{ "/sdf", DSV_CODEC_DEFLATE, 2, 1 }, { "/sf", DSV_CODEC_NONE, 2, 1 },
		{ "/grid", DSV_CODEC_NONE, 0, 0 },
	};
	for (size_t i = 0; i < sizeof(fast) / sizeof(fast[0]); i++) {
		dsv_source *s = open_ok("deflate.h5", fast[i].name);
		int grid = !strcmp(fast[i].name, "/grid");
		check_info(s, DSV_SRC_H5_CHUNKED, DSV_I16, 3, (uint64_t[]){ 45, 6, 5 },
			   grid ? UINT64_MAX : 6);
		dsv_chunk_ref r;
		/* the edge chunk: 5 of its 8 rows (the grid: its first band) */
		assert_int_equal(dsv_source_chunk(s, grid ? 0 : 5, &r), 0);
		assert_int_equal(r.grid, grid);
		if (!grid) {
			assert_int_equal(r.codec, fast[i].codec);
			assert_int_equal(r.shuffle, fast[i].shuffle);
			assert_int_equal(r.fletcher32, fast[i].fl32);
			assert_int_equal(r.nelems, 5 * 30);
			assert_false(dsv_chunk_is_plain(&r));
		}
		read_check(s, a, sizeof(a));
		dsv_source_close(s);
	}
	dsv_source *s = open_ok("deflate.h5", "/f64");
	check_info(s, DSV_SRC_H5_CHUNKED, DSV_F64, 2, (uint64_t[]){ 30, 7 }, 8);
	read_check(s, b, sizeof(b));
	dsv_source_close(s);
	/* shuffle after deflate, and deflate twice: the library's */
	for (int k = 0; k < 2; k++) {
		s = open_ok("deflate.h5", k ? "/dd" : "/ds");
		check_info(s, DSV_SRC_H5_FALLBACK, DSV_I16, 3, (uint64_t[]){ 45, 6, 5 },
			   UINT64_MAX);
		assert_string_equal(dsv_source_get_info(s)->why,
				    k ? "filters deflate+deflate" : "filters deflate+shuffle");
		read_check(s, a, sizeof(a));
		dsv_source_close(s);
	}
}

/* A deflated chunk whose stream is damaged fails that chunk's read with
 * DSV_ERR_CORRUPT; the chunks around it still read. */
static void test_damaged_deflate_chunk(void **state)
{
	static float a[40][64];
	hsize_t dims[] = { 40, 64 }, cd[] = { 8, 64 }, at[] = { 16, 0 };
	haddr_t addr;
	hsize_t size;
	unsigned mask;
	char p[256];
	(void)state;
	for (int i = 0; i < 40 * 64; i++)
		(&a[0][0])[i] = (float)(i % 37);
	hid_t f = new_file("baddeflate.h5", 0);
	write_ds(f, "x", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, dims, cd, "sd", a);
	hid_t d = H5Dopen2(f, "x", H5P_DEFAULT);
	assert_true(H5Dget_chunk_info_by_coord(d, at, &mask, &addr, &size) >= 0);
	H5Dclose(d);
	H5Fclose(f);
	FILE *fp = fopen(tpath(p, sizeof(p), "baddeflate.h5"), "r+b");
	assert_non_null(fp);
	assert_int_equal(fseek(fp, (long)(addr + size / 2), SEEK_SET), 0);
	int c = fgetc(fp);
	assert_int_equal(fseek(fp, (long)(addr + size / 2), SEEK_SET), 0);
	fputc(c ^ 0x5a, fp);
	fclose(fp);

	dsv_source *s = open_ok("baddeflate.h5", "/x");
	size_t scap = dsv_source_scratch_size(s);
	void *scratch = malloc(scap);
	float out[8 * 64];
	for (uint64_t i = 0; i < 5; i++) {
		dsv_chunk_ref r;
		dsv_errbuf eb = { 0 };
		assert_int_equal(dsv_source_chunk(s, i, &r), 0);
		int err = dsv_source_read_chunk(s, &r, out, sizeof(out), scratch, scap, &eb);
		assert_int_equal(err, i == 2 ? DSV_ERR_CORRUPT : 0);
		if (!err)
			assert_memory_equal(out, a[i * 8], sizeof(out));
	}
	free(scratch);
	dsv_source_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deflate_decodes_zlib_streams),
		cmocka_unit_test(test_deflate_refuses_wrong_streams),
		cmocka_unit_test(test_unshuffle),
		cmocka_unit_test(test_deflate_shuffle_fast_path),
		cmocka_unit_test(test_damaged_deflate_chunk),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
