/*
 * HDF5 chunks that split rows, read through the N-d grid (grid.c,
 * h5_grid.c): chunk-rows grouped into bands, a band's file-adjacent chunks
 * read with one pread (and runs cut at 4 MiB or where the file is not in
 * grid order), a damaged chunk inside such a read failing its band alone
 * and named by its grid position.
 */
#include "h5_test.h"

/* (40, 6, 6) int16 in chunks of (1, 4, 4), edge chunks on both inner
 * axes, Fletcher32: value i at element i. */
static void write_volumes(const char *name, int16_t (*a)[6][6])
{
	hsize_t dims[] = { 40, 6, 6 }, cd[] = { 1, 4, 4 };
	for (int i = 0; i < 40 * 36; i++)
		(&a[0][0][0])[i] = (int16_t)(i * 7 - 3000);
	hid_t f = new_file(name, 0);
	hid_t p = chunk_dcpl(3, cd);
	H5Pset_fletcher32(p);
	hid_t d = mkds(f, "v", H5T_STD_I16LE, 3, dims, NULL, p);
	H5Dwrite(d, H5T_NATIVE_INT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, a);
	H5Dclose(d);
	H5Pclose(p);
	H5Fclose(f);
}

/* Bands of 14 rows (1 KiB asked for, 72 bytes a row): three, the last
 * 12 rows; every band made of 4 chunks a row, read as one run. */
static void test_grouped_bands(void **state)
{
	static int16_t a[40][6][6];
	(void)state;
	write_volumes("bands.h5", a);
	band_kb("1");
	dsv_source *s = open_ok("bands.h5", "/v");
	band_kb(NULL);
	check_info(s, DSV_SRC_H5_CHUNKED, DSV_I16, 3, (uint64_t[]){ 40, 6, 6 }, 3);
	assert_string_equal(dsv_source_get_info(s)->why, "chunks split rows: bands of 14 rows");
	dsv_chunk_ref r;
	assert_int_equal(dsv_source_chunk(s, 2, &r), 0);
	assert_true(r.grid);
	assert_int_equal(r.elem_start, 28 * 36);
	assert_int_equal(r.nelems, 12 * 36);
	read_check(s, a, sizeof(a));
	dsv_source_close(s);

	/* the default: 256 KiB, more than the whole array: one band */
	s = open_ok("bands.h5", "/v");
	check_info(s, DSV_SRC_H5_CHUNKED, DSV_I16, 3, (uint64_t[]){ 40, 6, 6 }, 1);
	assert_string_equal(dsv_source_get_info(s)->why, "chunks split rows: bands of 40 rows");
	read_check(s, a, sizeof(a));
	dsv_source_close(s);
}

/* One byte of chunk (20, 1, 0), in the middle of band 1's single read,
 * flipped: band 1 fails its checksum, naming that chunk; bands 0 and 2
 * read right. */
static void test_damaged_chunk_in_a_run(void **state)
{
	static int16_t a[40][6][6], got[40][6][6];
	char p[256];
	(void)state;
	write_volumes("damaged.h5", a);
	hid_t f = H5Fopen(tpath(p, sizeof(p), "damaged.h5"), H5F_ACC_RDONLY, H5P_DEFAULT);
	hid_t d = H5Dopen2(f, "v", H5P_DEFAULT);
	hsize_t at[] = { 20, 4, 0 }, size = 0;
	haddr_t addr = HADDR_UNDEF;
	unsigned mask = 0;
	assert_true(H5Dget_chunk_info_by_coord(d, at, &mask, &addr, &size) >= 0);
	H5Dclose(d);
	H5Fclose(f);
	int fd = open(p, O_RDWR);
	assert_true(fd >= 0);
	unsigned char byte;
	assert_int_equal(pread(fd, &byte, 1, (off_t)addr + 5), 1);
	byte ^= 0x40;
	assert_int_equal(pwrite(fd, &byte, 1, (off_t)addr + 5), 1);
	close(fd);

	band_kb("1");
	dsv_source *s = open_ok("damaged.h5", "/v");
	band_kb(NULL);
	int errs[3];
	read_all(s, got, errs);
	assert_int_equal(errs[0], 0);
	assert_int_equal(errs[1], DSV_ERR_CHECKSUM);
	assert_int_equal(errs[2], 0);
	/* the read that fails says which chunk; one that succeeds, nothing */
	static dsv_errbuf eb;
	dsv_chunk_ref r;
	assert_int_equal(dsv_source_chunk(s, 1, &r), 0);
	assert_int_equal(dsv_source_decode_chunk(s, &r, got, sizeof(got), &eb), DSV_ERR_CHECKSUM);
	assert_int_equal(eb.code, DSV_ERR_CHECKSUM);
	assert_string_equal(eb.where, "chunk (20, 1, 0)");
	assert_non_null(strstr(eb.msg, "chunk (20, 1, 0), "));
	assert_non_null(strstr(eb.msg, " bytes at offset "));
	/* the hot path's way: no errbuf, the code alone */
	assert_int_equal(dsv_source_decode_chunk(s, &r, got, sizeof(got), NULL), DSV_ERR_CHECKSUM);
	assert_int_equal(dsv_source_chunk(s, 0, &r), 0);
	assert_int_equal(dsv_source_decode_chunk(s, &r, got, sizeof(got), &eb), 0);
	assert_memory_equal(got[0], a[0], 14 * sizeof(a[0]));
	assert_memory_equal(got[28], a[28], 12 * sizeof(a[0]));
	dsv_source_close(s);
}

/* Chunks written last to first (each later in the file than the next in
 * grid order): every chunk is its own read, the band still right. And a
 * chunk-row of 5 MiB in four chunks of 1.25 MiB: read as a run of three
 * (at most 4 MiB) and the fourth alone. */
static void test_runs_out_of_order_and_long(void **state)
{
	hsize_t dims[] = { 6, 8, 8 }, cd[] = { 2, 4, 4 };
	static uint16_t a[6][8][8];
	(void)state;
	for (int i = 0; i < 6 * 64; i++)
		(&a[0][0][0])[i] = (uint16_t)(i * 3 + 1);
	hid_t f = new_file("runs.h5", 0);
	hid_t p = chunk_dcpl(3, cd);
	hid_t d = mkds(f, "back", H5T_STD_U16LE, 3, dims, NULL, p);
	for (int c = 3 * 2 * 2 - 1; c >= 0; c--) {
		hsize_t off[] = { (hsize_t)(c / 4) * 2, (hsize_t)(c / 2 % 2) * 4,
				  (hsize_t)(c % 2) * 4 };
		uint16_t chunk[2][4][4];
		for (int i = 0; i < 2; i++)
			for (int j = 0; j < 4; j++)
				memcpy(chunk[i][j], &a[off[0] + i][off[1] + j][off[2]], 8);
		assert_true(H5Dwrite_chunk(d, H5P_DEFAULT, 0, off, sizeof(chunk), chunk) >= 0);
	}
	H5Dclose(d);
	H5Pclose(p);

	hsize_t ldims[] = { 5, 1024, 1024 }, lcd[] = { 5, 256, 1024 };
	size_t n = 5u << 20;
	uint8_t *big = malloc(n);
	assert_non_null(big);
	for (size_t i = 0; i < n; i++)
		big[i] = (uint8_t)(i * 131 >> 7);
	p = chunk_dcpl(3, lcd);
	d = mkds(f, "long", H5T_STD_U8LE, 3, ldims, NULL, p);
	H5Dwrite(d, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, big);
	H5Dclose(d);
	H5Pclose(p);
	H5Fclose(f);

	band_kb("0");
	dsv_source *s = open_ok("runs.h5", "/back");
	check_info(s, DSV_SRC_H5_CHUNKED, DSV_U16, 3, (uint64_t[]){ 6, 8, 8 }, 3);
	read_check(s, a, sizeof(a));
	dsv_source_close(s);
	band_kb(NULL);

	s = open_ok("runs.h5", "/long");
	check_info(s, DSV_SRC_H5_CHUNKED, DSV_U8, 3, (uint64_t[]){ 5, 1024, 1024 }, 1);
	read_check(s, big, n);
	dsv_source_close(s);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grouped_bands),
		cmocka_unit_test(test_damaged_chunk_in_a_run),
		cmocka_unit_test(test_runs_out_of_order_and_long),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
