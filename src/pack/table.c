/*
 * dsview pack, the block table of an LZ4 store (its format:
 * codec/lz4_table.h; where it lives: dsview/h5info.h, DSV_STORE_BLOCKS):
 * per chunk, each block's stored size and its own Fletcher32, so that a
 * reader of a few rows reads and checks only their blocks. Written row by
 * row as chunks reach the writer, so memory stays flat. A contiguous
 * dataset: its rows lie at one known offset in the file, which readers
 * pread without the HDF5 library.
 */
#ifndef H5_USE_110_API
#define H5_USE_110_API
#endif
#include <hdf5.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/lz4_table.h"
#include "dsview/h5info.h"
#include "formats/h5/h5.h"
#include "pack/pack_i.h"

int dsv_pack_table_create(dsv_pack_table *t, hid_t file, const char *name, uint64_t nchunks,
			  uint64_t nblocks, dsv_errbuf *eb)
{
	char path[512];
	hsize_t dims[2] = { nchunks, DSV_LZ4_TABLE_WORDS * nblocks };
	hid_t space = -1, lcpl = -1, dcpl = -1;

	memset(t, 0, sizeof(*t));
	t->dset = -1;
	t->nblocks = nblocks;
	if (snprintf(path, sizeof(path), "%s/%s", DSV_STORE_BLOCKS, name) >= (int)sizeof(path))
		return dsv_errf(eb, DSV_ERR_INVALID, "dataset name too long: %s", name);
	t->at = malloc((nblocks + 1) * sizeof(*t->at));
	t->row = malloc((size_t)dsv_lz4_table_row_bytes(nblocks));
	if (!t->at || !t->row)
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	/* early allocation: the offset exists before any row is written */
	if ((space = H5Screate_simple(2, dims, NULL)) >= 0 &&
	    (lcpl = H5Pcreate(H5P_LINK_CREATE)) >= 0 &&
	    H5Pset_create_intermediate_group(lcpl, 1) >= 0 &&
	    (dcpl = H5Pcreate(H5P_DATASET_CREATE)) >= 0 &&
	    H5Pset_layout(dcpl, H5D_CONTIGUOUS) >= 0 &&
	    H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY) >= 0)
		t->dset = H5Dcreate2(file, path, H5T_STD_U32LE, space, lcpl, dcpl, H5P_DEFAULT);
	if (dcpl >= 0)
		H5Pclose(dcpl);
	if (lcpl >= 0)
		H5Pclose(lcpl);
	if (space >= 0)
		H5Sclose(space);
	return t->dset < 0 ? dsv_errf(eb, DSV_ERR_IO, "HDF5 cannot create %s", path) : 0;
}

int dsv_pack_table_write(dsv_pack_table *t, uint64_t w, const void *frame, size_t size,
			 dsv_errbuf *eb)
{
	hsize_t start[2] = { w, 0 }, count[2] = { 1, DSV_LZ4_TABLE_WORDS * t->nblocks };
	hid_t fspace = -1, mspace = -1;
	herr_t rc = -1;

	/* the frame pack just made: a failure here is pack's own bug */
	if (dsv_lz4_table_row(frame, size, t->nblocks, t->at, t->row))
		return dsv_errf(eb, DSV_ERR_INTERNAL, "chunk %llu: not the frame expected",
				(unsigned long long)w);
	errno = 0;
	dsv_h5_lock();
	if ((fspace = H5Dget_space(t->dset)) >= 0 &&
	    H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL) >= 0 &&
	    (mspace = H5Screate_simple(2, count, NULL)) >= 0)
		rc = H5Dwrite(t->dset, H5T_NATIVE_UINT32, mspace, fspace, H5P_DEFAULT, t->row);
	if (mspace >= 0)
		H5Sclose(mspace);
	if (fspace >= 0)
		H5Sclose(fspace);
	dsv_h5_unlock();
	if (rc < 0) {
		int e = errno;
		return dsv_errf(eb, DSV_ERR_IO, "writing the block table of chunk %llu failed: %s",
				(unsigned long long)w, e ? strerror(e) : "HDF5 write error");
	}
	return 0;
}

void dsv_pack_table_close(dsv_pack_table *t)
{
	if (t->dset >= 0) {
		dsv_h5_lock();
		H5Dclose(t->dset);
		dsv_h5_unlock();
	}
	t->dset = -1;
	free(t->at);
	free(t->row);
	t->at = NULL;
	t->row = NULL;
}
