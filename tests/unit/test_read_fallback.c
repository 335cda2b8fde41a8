/* The read path over a chunk the HDF5 library decodes (gzip of big-endian
 * data, which the library converts) when one of
 * the file's own chunks in it is damaged: reads of good rows succeed, reads
 * of the bad rows fail, and once the whole chunk has failed, small reads of
 * it go band by band instead of decoding the whole chunk again, under the
 * library's lock, for every one of them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dsview/view.h"
#include "engine/engine_i.h" /* white-box: the engine's cache */

#define ROWS 64
#define COLS 40
#define BAD_ROW 10 /* its file chunk (rows 10-11) is damaged */

static char dir[] = "/tmp/dsv-test-readfb-XXXXXX";

typedef struct fixture {
	dsv_manifest *m; /* the engine's */
	dsv_engine *e;
	uint64_t fills0; /* the cache's fills when the test last looked */
} fixture;

/* Chunks the engine's cache filled since the last call of mark_fills. */
static uint64_t fills(fixture *fx)
{
	dsv_cache_stats cs;
	dsv_cache_get_stats(fx->e->cache, &cs);
	return cs.fills - fx->fills0;
}

static void mark_fills(fixture *fx)
{
	fx->fills0 += fills(fx);
}

/* gzip.h5:/x, big-endian int16 (ROWS, COLS) in chunks of 2 rows,
 * x[r][c] = r * 100 + c;
 * then the stored bytes of the chunk holding BAD_ROW are overwritten. */
static int make_file(const char *path)
{
	static int16_t x[ROWS][COLS];
	hsize_t dims[2] = { ROWS, COLS }, cdims[2] = { 2, COLS }, off[2] = { BAD_ROW, 0 };
	haddr_t addr;
	hsize_t size;
	unsigned mask;

	for (int r = 0; r < ROWS; r++)
		for (int c = 0; c < COLS; c++)
			x[r][c] = (int16_t)(r * 100 + c);
	hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	hid_t sp = H5Screate_simple(2, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
	H5Pset_chunk(dcpl, 2, cdims);
	H5Pset_deflate(dcpl, 6);
	hid_t d = H5Dcreate2(f, "x", H5T_STD_I16BE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
	if (d < 0 || H5Dwrite(d, H5T_NATIVE_INT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, x) < 0)
		return -1;
	H5Fflush(f, H5F_SCOPE_GLOBAL);
	if (H5Dget_chunk_info_by_coord(d, off, &mask, &addr, &size) < 0)
		return -1;
	H5Dclose(d);
	H5Pclose(dcpl);
	H5Sclose(sp);
	H5Fclose(f);

	char junk[64];
	memset(junk, 0x5a, sizeof(junk));
	FILE *fp = fopen(path, "r+b");
	if (!fp || fseek(fp, (long)addr, SEEK_SET) ||
	    fwrite(junk, 1, size < sizeof(junk) ? size : sizeof(junk), fp) == 0)
		return -1;
	fclose(fp);
	return 0;
}

static int setup(void **state)
{
	fixture *fx = calloc(1, sizeof(*fx));
	char h5[256], ini[256];
	dsv_errbuf eb;

	if (!fx || !mkdtemp(dir))
		return -1;
	snprintf(h5, sizeof(h5), "%s/gzip.h5", dir);
	snprintf(ini, sizeof(ini), "%s/m.ini", dir);
	if (make_file(h5))
		return -1;
	FILE *f = fopen(ini, "w");
	fprintf(f, "[x]\nsource = gzip.h5:/x\n");
	fclose(f);
	if (dsv_manifest_load(ini, &fx->m, &eb)) {
		fprintf(stderr, "manifest: %s\n", eb.msg);
		return -1;
	}
	dsv_engine_opts eo = { .cache_size = 1 << 20, .gpu = "off" };
	if (dsv_engine_new(fx->m, &eo, &fx->e, &eb) || dsv_engine_start(fx->e, NULL, &eb))
		return -1;
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	fixture *fx = *state;
	char cmd[300];
	dsv_engine_free(fx->e); /* and its manifest */
	free(fx);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

/* Rows [r0, r1) of view x as float32, checked against r * 100 + c. */
static int read_rows(fixture *fx, int r0, int r1)
{
	static float out[ROWS * COLS];
	dsv_read_req req = { .off = (uint64_t)r0 * COLS * 4, .len = (size_t)(r1 - r0) * COLS * 4 };
	dsv_read_info info;
	int err = dsv_engine_make(fx->e, DSV_ENGINE_FILE(0, 0), &req, (char *)out, &info);
	for (int r = r0; !err && r < r1; r++)
		for (int c = 0; c < COLS; c++)
			assert_true(out[(r - r0) * COLS + c] == (float)(r * 100 + c));
	return err;
}

static void test_damaged_band_fails_alone(void **state)
{
	fixture *fx = *state;
	dsv_view_info v;

	dsv_view_get_info(fx->m->views[0], &v);
	assert_int_equal(v.nchunks, 1); /* one library-decoded chunk: all of it */
	assert_int_equal(read_rows(fx, 0, 2), 0);
	assert_int_equal(read_rows(fx, 12, ROWS), 0);
	assert_int_not_equal(read_rows(fx, BAD_ROW, BAD_ROW + 1), 0);
	assert_int_not_equal(read_rows(fx, 0, ROWS), 0); /* the whole chunk fails */
}

static void test_failed_chunk_not_decoded_whole_per_read(void **state)
{
	fixture *fx = *state;

	/* the first small read tries the whole chunk once, then its band */
	mark_fills(fx);
	usleep(1100 * 1000); /* past the hint left by the test before */
	assert_int_equal(read_rows(fx, 0, 2), 0);
	assert_int_equal(fills(fx), 1);
	/* the next small reads of it go band by band straight away */
	for (int r = 2; r < ROWS; r += 4)
		if (r / 2 != BAD_ROW / 2 && (r + 2) / 2 != BAD_ROW / 2)
			assert_int_equal(read_rows(fx, r, r + 2), 0);
	assert_int_not_equal(read_rows(fx, BAD_ROW, BAD_ROW + 2), 0);
	assert_int_equal(fills(fx), 1);
	/* a read of the whole chunk still tries it whole (a fault may be gone) */
	assert_int_not_equal(read_rows(fx, 0, ROWS), 0);
	assert_int_equal(fills(fx), 2);
	/* and once the hint is old, a small read tries the whole chunk again */
	usleep(1100 * 1000);
	assert_int_equal(read_rows(fx, 0, 2), 0);
	assert_int_equal(fills(fx), 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_damaged_band_fails_alone),
		cmocka_unit_test(test_failed_chunk_not_decoded_whole_per_read),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
