/*
 * The guards on chunks the HDF5 library decodes (src/formats/h5/guard.c and
 * decode.c): stored chunks of the wrong size, filter parameters that do
 * not fit the chunk.
 */
#include "h5_test.h"
#include "formats/h5/h5.h"
#include "source/source.h"

#include <zlib.h>

/* One dataset (12, 8) int16 in (3, 4) chunks with dcpl's filters; chunk
 * (3, 4) is then rewritten as `len` bytes of junk with filter mask `mask`
 * (len 0: left as written). */
static void wrong_size_ds(hid_t f, const char *name, hid_t dcpl, hid_t ftype, const int16_t *a,
			  size_t len, uint32_t mask)
{
	hsize_t dims[] = { 12, 8 }, off[] = { 3, 4 };
	uint8_t junk[256];
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 7 + 1);
	hid_t d = mkds(f, name, ftype, 2, dims, NULL, dcpl);
	assert_true(H5Dwrite(d, H5T_NATIVE_INT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, a) >= 0);
	if (len)
		assert_true(H5Dwrite_chunk(d, H5P_DEFAULT, mask, off, len, junk) >= 0);
	H5Dclose(d);
}

/* Reads rows [r0, r1) of a (12, 8) int16 source through the library. */
static int read_rows(const dsv_source *s, uint64_t r0, uint64_t r1, int16_t *out)
{
	dsv_chunk_ref r = { .elem_start = r0 * 8, .nelems = (r1 - r0) * 8, .fallback = 1 };
	return dsv_source_read_fallback(s, &r, out, (size_t)(r1 - r0) * 16);
}

/* Chunks the library would copy out of a buffer shorter than a chunk, or
 * decode from too little input (found by make fuzz; see h5_source.c): the rows of
 * that chunk fail, every other band reads right. */
static void test_library_chunks_of_the_wrong_size(void **state)
{
	int16_t a[12][8], got[12 * 8];
	hsize_t cd[] = { 3, 4 };
	(void)state;
	for (int i = 0; i < 96; i++)
		(&a[0][0])[i] = (int16_t)(i * 37 % 2000);
	hid_t f = new_file("wrongsize.h5", 0);
	hid_t p = chunk_dcpl(2, cd);
	wrong_size_ds(f, "plain", p, H5T_STD_I16LE, &a[0][0], 8, 0);
	wrong_size_ds(f, "plain_ok", p, H5T_STD_I16LE, &a[0][0], 0, 0);
	wrong_size_ds(f, "plain_long", p, H5T_STD_I16LE, &a[0][0], 40, 0);
	H5Pset_shuffle(p);
	wrong_size_ds(f, "shuffle", p, H5T_STD_I16LE, &a[0][0], 7, 0);
	H5Pset_fletcher32(p);
	wrong_size_ds(f, "shuf_fl32", p, H5T_STD_I16LE, &a[0][0], 24, 0); /* 24 + 4 wanted */
	H5Pclose(p);
	p = chunk_dcpl(2, cd);
	H5Pset_deflate(p, 1);
	wrong_size_ds(f, "gzip_masked", p, H5T_STD_I16LE, &a[0][0], 8, 1); /* stored as is */
	H5Pclose(p);
	p = chunk_dcpl(2, cd);
	H5Pset_scaleoffset(p, H5Z_SO_INT, H5Z_SO_INT_MINBITS_DEFAULT);
	wrong_size_ds(f, "scaleoffset", p, H5T_STD_I16LE, &a[0][0], 6, 0);
	wrong_size_ds(f, "scaleoffset_ok", p, H5T_STD_I16LE, &a[0][0], 0, 0);
	H5Pclose(p);
	hid_t t12 = H5Tcopy(H5T_STD_I16LE);
	H5Tset_precision(t12, 12);
	p = chunk_dcpl(2, cd);
	H5Pset_nbit(p);
	wrong_size_ds(f, "nbit", p, t12, &a[0][0], 3, 0);
	wrong_size_ds(f, "nbit_ok", p, t12, &a[0][0], 0, 0);
	H5Pclose(p);
	H5Tclose(t12);
	H5Fclose(f);

	static const char *bad[] = { "/plain",       "/plain_long",  "/shuffle", "/shuf_fl32",
				     "/gzip_masked", "/scaleoffset", "/nbit" };
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		dsv_source *s = open_ok("wrongsize.h5", bad[k]);
		assert_int_equal(dsv_source_fallback_band(s), 3 * 8);
		if (read_rows(s, 3, 6, got) != DSV_ERR_CORRUPT)
			fail_msg("%s: the chunk of the wrong size was read", bad[k]);
		assert_int_equal(read_rows(s, 0, 3, got), 0);
		assert_memory_equal(got, a[0], 3 * 16);
		assert_int_equal(read_rows(s, 6, 12, got), 0);
		assert_memory_equal(got, a[6], 6 * 16);
		/* still refused the second time (a failed chunk is never marked) */
		assert_int_equal(read_rows(s, 4, 5, got), DSV_ERR_CORRUPT);
		dsv_source_close(s);
	}
	static const char *good[] = { "/plain_ok", "/scaleoffset_ok", "/nbit_ok" };
	for (size_t k = 0; k < sizeof(good) / sizeof(good[0]); k++) {
		dsv_source *s = open_ok("wrongsize.h5", good[k]);
		read_check(s, a, sizeof(a));
		dsv_source_close(s);
	}
}

/* nbit sizes its output from the elements per chunk stored in the file:
 * a file whose parameters disagree with the chunk is refused at open. */
static void test_nbit_parameters_must_fit_the_chunk(void **state)
{
	int16_t a[12][8];
	hsize_t cd[] = { 3, 4 };
	char path[256];
	(void)state;
	for (int i = 0; i < 96; i++)
		(&a[0][0])[i] = (int16_t)(i % 1000);
	hid_t f = new_file("nbitparm.h5", 0);
	hid_t t12 = H5Tcopy(H5T_STD_I16LE);
	H5Tset_precision(t12, 12);
	hid_t p = chunk_dcpl(2, cd);
	H5Pset_nbit(p);
	wrong_size_ds(f, "n", p, t12, &a[0][0], 0, 0);
	H5Pclose(p);
	H5Tclose(t12);
	H5Fclose(f);
	dsv_source_close(open_ok("nbitparm.h5", "/n"));

	/* The pipeline message keeps the parameters as 4-byte words: nbit's
	 * are 8 (count), 0, 12 (elements per chunk), 1 (atomic), 2 (size),
	 * 0 (order), 12 (precision), 0 (offset). Make it claim 6 elements. */
	static const uint32_t parms[] = { 8, 0, 12, 1, 2, 0, 12, 0 };
	FILE *fp = fopen(tpath(path, sizeof(path), "nbitparm.h5"), "r+b");
	assert_non_null(fp);
	static uint8_t buf[1 << 16];
	size_t n = fread(buf, 1, sizeof(buf), fp), hits = 0, at = 0;
	for (size_t i = 0; i + sizeof(parms) <= n; i++) {
		if (!memcmp(buf + i, parms, sizeof(parms))) {
			hits++;
			at = i;
		}
	}
	assert_int_equal(hits, 1);
	uint32_t six = 6;
	fseek(fp, (long)(at + 8), SEEK_SET);
	assert_int_equal(fwrite(&six, 4, 1, fp), 1);
	fclose(fp);
	assert_int_equal(
		open_err("nbitparm.h5", "/n", "filter nbit parameters do not match the chunk"),
		DSV_ERR_FORMAT);
}

/* zlib's inflate is interposed for the library (src/formats/h5/decode.c); any
 * other inflate in the process must be zlib's own: from a thread that
 * does not hold the HDF5 lock, before the library was ever set up, and
 * while another thread holds the lock with size checks armed. */
typedef struct unz_arg {
	const Bytef *z;
	uLong zlen;
	const uint8_t *want;
	size_t n;
	int rc;
} unz_arg;

static void *uncompress_thread(void *p)
{
	unz_arg *u = p;
	static uint8_t out[4096];
	uLongf olen = sizeof(out);
	u->rc = uncompress(out, &olen, u->z, u->zlen);
	if (u->rc == Z_OK && (olen != u->n || memcmp(out, u->want, u->n) != 0))
		u->rc = Z_DATA_ERROR;
	return NULL;
}

static int uncompress_in_thread(unz_arg *u)
{
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, uncompress_thread, u), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	return u->rc;
}

static void test_inflate_outside_the_lock_is_zlibs(void **state)
{
	static uint8_t raw[1000];
	static Bytef z[2048];
	uLongf zlen = sizeof(z);
	(void)state;
	for (size_t i = 0; i < sizeof(raw); i++)
		raw[i] = (uint8_t)(i * 7 % 13);
	assert_int_equal(compress(z, &zlen, raw, sizeof(raw)), Z_OK);
	unz_arg u = { z, zlen, raw, sizeof(raw), -1 };

	/* First: no HDF5 call yet in this process (this test runs first). */
	assert_int_equal(uncompress_in_thread(&u), Z_OK);

	/* Another thread holds the lock, a fallback read's sizes armed. */
	(void)dsv_h5_lock();
	size_t want[DSV_H5_NDEC] = { [DSV_H5_DEC_DEFLATE] = 24 };
	dsv_h5_decode_arm(want);
	assert_int_equal(uncompress_in_thread(&u), Z_OK);
	/* The lock holder itself is still held to the size. */
	u.rc = -1;
	uncompress_thread(&u);
	assert_int_equal(u.rc, Z_DATA_ERROR);
	dsv_h5_decode_disarm();
	dsv_h5_unlock();
	assert_int_equal(uncompress_in_thread(&u), Z_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inflate_outside_the_lock_is_zlibs), /* first */
		cmocka_unit_test(test_library_chunks_of_the_wrong_size),
		cmocka_unit_test(test_nbit_parameters_must_fit_the_chunk),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
