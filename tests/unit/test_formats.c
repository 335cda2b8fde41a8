/* The registry of formats (src/formats/registry.c): which format a name,
 * a directory's metadata or a file's first bytes says; source specs split
 * into file and dataset; the list of formats that messages give. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture.h"
#include "formats/formats.h"

static char dir[] = "/tmp/dsv-test-formats-XXXXXX";

static void check_split(const char *spec, const char *file, const char *dataset)
{
	char *f = (char *)1, *d = (char *)1;
	assert_int_equal(dsv_spec_split(spec, &f, &d), 0);
	assert_string_equal(f, file);
	if (dataset)
		assert_string_equal(d, dataset);
	else
		assert_null(d);
	free(f);
	free(d);
}

static void test_spec_split(void **state)
{
	(void)state;
	check_split("x.h5:/betas", "x.h5", "/betas");
	check_split("/data/x.h5:/g/h/betas", "/data/x.h5", "/g/h/betas");
	check_split("x.h5", "x.h5", NULL);
	check_split("x.npy", "x.npy", NULL);
	/* as h5py users write it: after an HDF5 file name, ':' alone splits */
	check_split("x.h5:betas", "x.h5", "/betas");
	check_split("/d/X.HDF5:g/betas", "/d/X.HDF5", "/g/betas");
	check_split("a:b/x.h5:betas", "a:b/x.h5", "/betas");
	check_split("x.npy:betas", "x.npy:betas", NULL); /* not a file of datasets */
	check_split("x.h5:", "x.h5:", NULL);
	check_split("x:y", "x:y", NULL);
	/* the last ":/" splits: a directory may hold a colon */
	check_split("/mnt/a:/b/x.h5:/d", "/mnt/a:/b/x.h5", "/d");
	check_split("x.h5:/", "x.h5", "/");
	check_split(":/d", "", "/d");
	/* a URL's scheme is never the split */
	check_split("s3://b/x.h5:/d", "s3://b/x.h5", "/d");
	check_split("s3://b/x.npy", "s3://b/x.npy", NULL);
}

/* name is claimed by format want (NULL: by none), ext bytes of it */
static void expect_name(const char *name, const char *want, size_t ext)
{
	size_t got = 99;
	const dsv_format *f = dsv_format_by_name(name, &got);
	if (!want) {
		assert_null(f);
		assert_int_equal(got, 0);
		return;
	}
	assert_non_null(f);
	assert_string_equal(f->name, want);
	assert_int_equal(got, ext);
}

static void test_by_name(void **state)
{
	(void)state;
	expect_name("a.npy", "npy", 4);
	expect_name("a.NPY", "npy", 4);
	expect_name("/d/b.nii", "nifti", 4);
	expect_name("b.Nii.GZ", "nifti", 7);
	expect_name("a.H5", "hdf5", 3);
	expect_name("a.hdf5", "hdf5", 5);
	expect_name("a.nc", "hdf5", 3);
	expect_name("x.zarr", "zarr", 5);
	expect_name("s3://b/k/a.npy?X-Amz-Signature=1", "npy", 4);
	expect_name("a.h5x", NULL, 0);
	expect_name("a.npy.bak", NULL, 0);
	expect_name("data.bin", NULL, 0);
	assert_string_equal(dsv_format_named("hdf5")->name, "hdf5");
	assert_null(dsv_format_named("tiff"));
}

static void put_file(const char *name, const void *data, size_t n)
{
	scratch_write(dir, name, data, n);
}

/* path (in dir) is told as format want (NULL: none), dir kind kind */
static void expect_detect(const char *name, unsigned how, const char *want, int kind)
{
	char path[600];
	int got = -1;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	const dsv_format *f = dsv_format_detect(path, how, &got);
	if (!want)
		assert_null(f);
	else {
		if (!f)
			fail_msg("%s: no format, want %s", name, want);
		assert_string_equal(f->name, want);
	}
	assert_int_equal(got, kind);
}

static void test_detect(void **state)
{
	static const unsigned char h5sig[8] = { 0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n' };
	unsigned char block[1032] = { 0 };
	char path[600];
	(void)state;

	put_file("plain.bin", block, 100);
	put_file("a.npy", "not really", 10); /* the name decides: no bytes read */
	put_file("arr.bin", "\x93NUMPY\x01\x00", 8);
	memcpy(block + 1024, h5sig, sizeof(h5sig));
	put_file("user1k.dat", block, sizeof(block));
	snprintf(path, sizeof(path), "%s/arr.zarr", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	put_file("arr.zarr/.zarray", "{}", 2);
	snprintf(path, sizeof(path), "%s/grp", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	put_file("grp/zarr.json", "{\"node_type\": \"group\"}", 22);
	snprintf(path, sizeof(path), "%s/empty.zarr", dir);
	assert_int_equal(mkdir(path, 0755), 0);

	expect_detect("a.npy", 0, "npy", 0);
	expect_detect("arr.zarr", 0, "zarr", DSV_FMT_ARRAY);
	expect_detect("grp", 0, "zarr", DSV_FMT_GROUP);
	expect_detect("empty.zarr", 0, NULL, 0); /* the name alone is no array */
	/* magic only where asked, and only for names no format claims */
	expect_detect("arr.bin", 0, NULL, 0);
	expect_detect("arr.bin", DSV_DETECT_MAGIC, "npy", 0);
	expect_detect("user1k.dat", DSV_DETECT_MAGIC, "hdf5", 0);
	expect_detect("plain.bin", DSV_DETECT_MAGIC, NULL, 0);
	expect_detect("missing.bin", DSV_DETECT_MAGIC, NULL, 0);
}

static void test_of_spec(void **state)
{
	char *file, *dataset;
	int dir_kind, err;
	(void)state;
	/* a dataset named: a file of datasets, whatever the name */
	const dsv_format *f = dsv_format_of_spec("x.bin:/d", 0, &file, &dataset, &dir_kind, &err);
	assert_int_equal(err, 0);
	assert_string_equal(f->name, "hdf5");
	assert_string_equal(file, "x.bin");
	assert_string_equal(dataset, "/d");
	free(file);
	free(dataset);
	f = dsv_format_of_spec("y.nii", 0, &file, &dataset, &dir_kind, &err);
	assert_string_equal(f->name, "nifti");
	assert_null(dataset);
	free(file);
	f = dsv_format_of_spec("/nowhere/y.raw", 0, &file, &dataset, &dir_kind, &err);
	assert_null(f);
	assert_int_equal(err, 0);
	assert_string_equal(file, "/nowhere/y.raw");
	free(file);
}

static void test_nouns(void **state)
{
	char buf[512];
	(void)state;
	assert_string_equal(
		dsv_format_nouns(DSV_FMT_RAW, buf, sizeof(buf)),
		"a .npy, a NIfTI image (.nii), an HDF5 file (.h5), a .npz, an Arrow IPC "
		"file (.arrow), a Zarr array or group, an EDF or BDF recording (.edf, "
		".bdf), an EEGLAB dataset (.set), a BrainVision header (.vhdr), an llm.c "
		".bin, a Megatron .idx, or a LitData directory (index.json)");
	assert_string_equal(
		dsv_format_nouns(DSV_FMT_RAW | DSV_FMT_DIR | DSV_FMT_DATASETS, buf, sizeof(buf)),
		"a .npy, a NIfTI image (.nii), an EDF or BDF recording (.edf, .bdf), an "
		"EEGLAB dataset (.set), a BrainVision header (.vhdr), an llm.c .bin, or a "
		"Megatron .idx");
	/* cut short, never past the buffer */
	assert_string_equal(dsv_format_nouns(0, buf, 8), "a .npy,");
}

static void test_open_unknown(void **state)
{
	dsv_source *s = (dsv_source *)1;
	dsv_errbuf eb;
	char path[600];
	(void)state;
	snprintf(path, sizeof(path), "%s/plain.bin", dir);
	assert_int_equal(dsv_source_open(path, &s, &eb), DSV_ERR_INVALID);
	assert_null(s);
	assert_non_null(strstr(eb.msg, "unknown source type (expected a .npy, "));
	assert_non_null(strstr(eb.msg, "or a raw file with source_dtype and source_shape)"));
}

SCRATCH_GROUP_FIXTURES(dir)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec_split), cmocka_unit_test(test_by_name),
		cmocka_unit_test(test_detect),     cmocka_unit_test(test_of_spec),
		cmocka_unit_test(test_nouns),      cmocka_unit_test(test_open_unknown),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
