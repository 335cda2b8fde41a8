/*
 * An LZ4 store's block table (its format: codec/lz4_table.h; written by
 * `dsview pack`, where dsview/h5info.h says): found at open, its shape and
 * storage checked against that format, and its file offset kept, so that
 * lz4_part.c preads a chunk's row of it without the library (a store in
 * object storage reads it whole at open instead). A dataset without one
 * (written by others, or by an older pack) has its chunks decoded whole.
 */
#ifndef H5_USE_110_API
#define H5_USE_110_API
#endif
#include <hdf5.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/lz4_table.h"
#include "dsview/h5info.h"
#include "formats/h5/h5_src.h"

/* Blocks per chunk beyond which a table is not used (a row of it would be
 * megabytes): chunks are then decoded whole. */
#define TABLE_MAX_BLOCKS (1u << 16)
/* The most of a table a source in object storage keeps in memory. */
#define TABLE_MEM_MAX (64u << 20)

/* A store in object storage keeps its whole table in memory, read by one
 * GET now: a shuffled row then costs one GET (its blocks), not two in a
 * row (its table row, then its blocks). A table too large to keep, or
 * whose GET fails, is read row by row as from a file. */
static void keep_remote_table(dsv_source *s, uint64_t bytes)
{
	void *mem;

	if (!s->net || bytes > TABLE_MEM_MAX || !(mem = malloc((size_t)bytes)))
		return;
	if (dsv_source_pread(s, mem, (size_t)bytes, s->more->table_off)) {
		free(mem);
		return;
	}
	s->more->table_mem = mem;
}

void dsv_h5_open_block_table(dsv_source *s, hid_t file, hid_t lapl)
{
	uint64_t bs = s->info.lz4_block, nb, bytes;
	char path[512];
	hid_t t = -1, type = -1, space = -1, dcpl = -1;
	hsize_t dims[2];
	dsv_errbuf eb;

	s->more->table_off = 0;
	s->more->table_blocks = 0;
	if (!bs || bs >= s->more->chunk_raw_size || s->info.nchunks == 0 || !s->dataset ||
	    strchr(s->dataset + 1, '/'))
		return; /* pack writes tables of datasets at the root only */
	nb = dsv_lz4_table_blocks(s->more->chunk_raw_size, bs);
	if (nb > TABLE_MAX_BLOCKS ||
	    snprintf(path, sizeof(path), "%s%s", DSV_STORE_BLOCKS, s->dataset) >= (int)sizeof(path))
		return;
	/* the store's own group and dataset, by hard links only */
	if (H5Lexists(file, DSV_STORE_BLOCKS, lapl) <= 0 || H5Lexists(file, path, lapl) <= 0 ||
	    dsv_h5_check_links(file, lapl, s->path, path, &eb))
		return;
	if ((t = H5Oopen(file, path, lapl)) < 0 || H5Iget_type(t) != H5I_DATASET)
		goto out;
	bytes = s->info.nchunks * dsv_lz4_table_row_bytes(nb);
	if ((type = H5Dget_type(t)) < 0 || H5Tequal(type, H5T_STD_U32LE) <= 0 ||
	    (space = H5Dget_space(t)) < 0 || H5Sget_simple_extent_ndims(space) != 2 ||
	    H5Sget_simple_extent_dims(space, dims, NULL) != 2 || dims[0] != s->info.nchunks ||
	    dims[1] != nb * DSV_LZ4_TABLE_WORDS || (dcpl = H5Dget_create_plist(t)) < 0 ||
	    H5Pget_layout(dcpl) != H5D_CONTIGUOUS || H5Pget_external_count(dcpl) != 0 ||
	    H5Dget_storage_size(t) != bytes)
		goto out;
	haddr_t off = H5Dget_offset(t);
	if (off == HADDR_UNDEF || off > s->file_size || s->file_size - off < bytes)
		goto out;
	s->more->table_off = off;
	s->more->table_blocks = nb;
	s->info.lz4_table = 1;
	keep_remote_table(s, bytes);
out:
	if (dcpl >= 0)
		H5Pclose(dcpl);
	if (space >= 0)
		H5Sclose(space);
	if (type >= 0)
		H5Tclose(type);
	if (t >= 0)
		H5Oclose(t);
}
