/*
 * Shared by the HDF5 source files (h5.c opens, h5_type.c classifies element
 * types, h5_read.c reads, h5_list.c lists, h5_grid.c maps chunks that split
 * rows) and h5_info.c. Not thread-safe by itself: as every HDF5 call,
 * these run under the global HDF5 lock unless said otherwise.
 */
#ifndef DSV_SOURCE_H5_SRC_H
#define DSV_SOURCE_H5_SRC_H

#include <hdf5.h>

#include "h5/h5.h"
#include "source/source_i.h"

/* The fork probe's work for every HDF5 file dsview reads (src/h5/probe.c):
 * lists the file's datasets, opens and describes each as a mount or `info`
 * would. Runs in the probe's child process, without the lock. */
void dsv_h5_probe_all(const char *path);

/* Keeps an open source's file and dataset handles and its chunk check
 * (cc, may be NULL) for fallback reads, with the memory type of its
 * dtype, and sets s->h5 and s->h5_close. @return 0 with *file, *dset and
 * *cc taken (-1, -1, NULL); DSV_ERR_NOMEM with nothing taken; or
 * DSV_ERR_INTERNAL (no memory type) with all three taken and closed. */
int dsv_h5_keep(dsv_source *s, hid_t *file, hid_t *dset, dsv_h5_chunk_check **cc);

/* Maps an HDF5 element type to a dsv_dtype (h5_type.c). *conv is set when
 * the stored layout is not plain little-endian (the library must convert:
 * fallback), and why names it. @return 0, or DSV_ERR_UNSUPPORTED with the
 * type named in why. */
int dsv_h5_classify_type(hid_t t, dsv_dtype *dt, int *conv, char *why, size_t why_cap);

/* Opens a chunked dataset whose chunks split rows through the N-d grid
 * (h5_grid.c), with s->codec and the filter bits already set. @return 0;
 * DSV_ERR_UNSUPPORTED with why set when it must stay on the library path
 * (nothing kept); or another error with eb set. */
int dsv_h5_open_grid(dsv_source *s, hid_t dset, hid_t dcpl, hid_t ftype, hid_t space,
		     const hsize_t *cdims, int codec, int fl32, char *why, size_t why_cap,
		     dsv_errbuf *eb);

/* Finds and checks the block table `dsview pack` wrote for an LZ4 store
 * (h5_table.c) once info.lz4_block is known, and keeps its offset; a
 * missing or unfit table leaves the source without one. */
void dsv_h5_open_block_table(dsv_source *s, hid_t file, hid_t lapl);

#endif
