/*
 * Shared by the HDF5 unit tests (test_h5*.c, one executable each): a
 * scratch directory, builders of HDF5 files through the C API, and
 * helpers that open a source and read every chunk back.
 */
#ifndef DSV_TEST_H5_TEST_H
#define DSV_TEST_H5_TEST_H
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hdf5.h>

#include "common/knobs.h"
#include "dsview/codec.h"
#include "dsview/source.h"
#include "fixture.h"

static char dir[] = "/tmp/dsv-test-h5-XXXXXX";

static inline const char *tpath(char *buf, size_t cap, const char *name)
{
	snprintf(buf, cap, "%s/%s", dir, name);
	return buf;
}

static inline hid_t new_file(const char *name, int latest)
{
	char p[256];
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
	if (latest)
		H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
	hid_t f = H5Fcreate(tpath(p, sizeof(p), name), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
	H5Pclose(fapl);
	assert_true(f >= 0);
	return f;
}

/* Creates a dataset; dcpl may be H5P_DEFAULT; maxdims may be NULL. */
static inline hid_t mkds(hid_t loc, const char *name, hid_t ftype, int ndim, const hsize_t *dims,
			 const hsize_t *maxdims, hid_t dcpl)
{
	hid_t sp = H5Screate_simple(ndim, dims, maxdims);
	assert_true(sp >= 0);
	hid_t d = H5Dcreate2(loc, name, ftype, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
	H5Sclose(sp);
	assert_true(d >= 0);
	return d;
}

static inline hid_t chunk_dcpl(int ndim, const hsize_t *cdims)
{
	hid_t p = H5Pcreate(H5P_DATASET_CREATE);
	assert_int_equal(H5Pset_chunk(p, ndim, cdims), 0);
	return p;
}

static inline dsv_source *open_ok(const char *file, const char *dset)
{
	char p[256];
	dsv_source *s = NULL;
	dsv_errbuf eb = { 0 };
	int err = dsv_source_open_h5(tpath(p, sizeof(p), file), dset, &s, &eb);
	if (err)
		fail_msg("open %s:%s: %d %s", file, dset, err, eb.msg);
	return s;
}

static inline int open_err(const char *file, const char *dset, const char *want_msg)
{
	char p[256];
	dsv_source *s = NULL;
	dsv_errbuf eb = { 0 };
	int err = dsv_source_open_h5(tpath(p, sizeof(p), file), dset, &s, &eb);
	assert_null(s);
	assert_true(err < 0);
	if (want_msg && !strstr(eb.msg, want_msg))
		fail_msg("message '%s' lacks '%s'", eb.msg, want_msg);
	/* Every message names the file, and is composed of the error's
	 * fields: the file, the dataset (if any) and the reason alone. */
	assert_non_null(strstr(eb.msg, file));
	assert_string_equal(eb.file, p);
	char want[sizeof(eb.file) + sizeof(eb.where) + sizeof(eb.reason) + 4];
	snprintf(want, sizeof(want), "%s%s%s: %s", eb.file, eb.where[0] ? ":" : "", eb.where,
		 eb.reason);
	assert_string_equal(eb.msg, want);
	assert_null(strstr(eb.reason, p));
	return err;
}

static inline void check_info(const dsv_source *s, dsv_source_kind kind, dsv_dtype dt, int ndim,
			      const uint64_t *shape, uint64_t nchunks)
{
	const dsv_source_info *in = dsv_source_get_info(s);
	assert_int_equal(in->kind, kind);
	assert_int_equal(in->dtype, dt);
	assert_int_equal(in->ndim, ndim);
	for (int k = 0; k < ndim; k++)
		assert_int_equal(in->shape[k], shape[k]);
	if (nchunks != UINT64_MAX)
		assert_int_equal(in->nchunks, nchunks);
	assert_non_null(in->why);
}

/*
 * Reads every chunk into out (nelems elements), each into a buffer of
 * exactly its size so an overrun shows under ASan. errs[i] gets each
 * chunk's result; NULL means every chunk must succeed.
 */
static inline void read_all(const dsv_source *s, void *out, int *errs)
{
	const dsv_source_info *in = dsv_source_get_info(s);
	size_t es = dsv_dtype_size(in->dtype), sc = dsv_source_scratch_size(s);
	uint64_t next = 0;

	/* See test_scratch_size_fletcher_only: size the scratch from the
	 * refs so the other tests check reading, not that helper. */
	for (uint64_t i = 0; i < in->nchunks; i++) {
		dsv_chunk_ref r;
		assert_int_equal(dsv_source_chunk(s, i, &r), 0);
		if (!r.fallback && (r.codec != DSV_CODEC_NONE || r.fletcher32) &&
		    r.stored_size > sc)
			sc = (size_t)r.stored_size;
	}
	uint8_t *scratch = malloc(sc + 1);
	assert_non_null(scratch);
	for (uint64_t i = 0; i < in->nchunks; i++) {
		dsv_chunk_ref r;
		assert_int_equal(dsv_source_chunk(s, i, &r), 0);
		assert_int_equal(r.elem_start, next);
		assert_true(r.nelems > 0 && r.nelems <= in->chunk_elems);
		next += r.nelems;
		size_t n = (size_t)r.nelems * es;
		uint8_t *tmp = malloc(n);
		assert_non_null(tmp);
		int err = dsv_source_read_chunk(s, &r, tmp, n, scratch, sc, NULL);
		if (errs)
			errs[i] = err;
		else if (err)
			fail_msg("chunk %llu: %s", (unsigned long long)i, dsv_strerror(err));
		if (!err)
			memcpy((uint8_t *)out + r.elem_start * es, tmp, n);
		free(tmp);
	}
	assert_int_equal(next, in->nelems);
	assert_int_equal(dsv_source_chunk(s, in->nchunks, &(dsv_chunk_ref){ 0 }), DSV_ERR_INVALID);
	free(scratch);
}

static inline void read_check(const dsv_source *s, const void *want, size_t nbytes)
{
	uint8_t *got = malloc(nbytes + 1);
	assert_non_null(got);
	assert_int_equal(dsv_source_get_info(s)->nelems *
				 dsv_dtype_size(dsv_source_get_info(s)->dtype),
			 nbytes);
	memset(got, 0xa5, nbytes);
	read_all(s, got, NULL);
	assert_memory_equal(got, want, nbytes);
	free(got);
}

static inline int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static inline int teardown(void **state)
{
	char cmd[300];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

/* DSVIEW_GRID_BAND_KB set to kb (NULL: unset) for the sources opened
 * next: the knobs are read again. */
static inline void band_kb(const char *kb)
{
	if (kb)
		setenv("DSVIEW_GRID_BAND_KB", kb, 1);
	else
		unsetenv("DSVIEW_GRID_BAND_KB");
	dsv_knobs_reload();
}

#endif
